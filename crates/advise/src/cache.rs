//! Simulated figures by content hash: the case's id (a hash of everything the case is:
//! array, disks and their model, workload), the seed and raidlab's version and build;
//! and each layout's probability of losing data by what the Monte Carlo is given. A second
//! `advise` with a changed constraint, or more disk counts, computes only what is new.
//! One small JSON file per case, written to a temporary name and renamed, so a cache
//! shared by two runs never holds half a file.

use crate::AdviseError;
use raidlab_core::Case;
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn open(dir: &Path) -> Result<Cache, AdviseError> {
        std::fs::create_dir_all(dir).map_err(|e| AdviseError::Cache {
            path: dir.display().to_string(),
            why: format!("{e}; pass --cache DIR for another place, or --no-cache"),
        })?;
        Ok(Cache {
            dir: dir.to_path_buf(),
        })
    }

    /// The key of `case` simulated with `seed`.
    pub fn key(case: &Case, seed: u64) -> String {
        Cache::key_of(&[case.id.0.as_bytes(), &seed.to_le_bytes()])
    }

    /// A key from parts (raidlab's version and build come first).
    pub fn key_of(parts: &[&[u8]]) -> String {
        let mut h = Sha256::new();
        h.update(env!("CARGO_PKG_VERSION"));
        h.update(build());
        for p in parts {
            h.update([0]);
            h.update(p);
        }
        h.finalize()[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// What is stored under `key`; `None` when absent or unreadable (then computed again
    /// and rewritten).
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        serde_json::from_slice(&std::fs::read(self.path(key)).ok()?).ok()
    }

    pub fn put<T: Serialize>(&self, key: &str, value: &T) -> Result<(), AdviseError> {
        let path = self.path(key);
        let err = |e: std::io::Error| AdviseError::Cache {
            path: path.display().to_string(),
            why: e.to_string(),
        };
        let tmp = self.dir.join(format!(".{key}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, serde_json::to_vec(value).expect("figures serialise")).map_err(err)?;
        std::fs::rename(&tmp, &path).map_err(err)
    }
}

/// Which build of raidlab this is, beyond its version: the running executable's size and
/// modification time, so a simulator rebuilt within one version (while developing) never
/// reads the figures of the build before it. Empty where the executable cannot be looked at.
fn build() -> &'static [u8] {
    static BUILD: OnceLock<Vec<u8>> = OnceLock::new();
    BUILD.get_or_init(|| {
        let Some(meta) = std::env::current_exe()
            .ok()
            .and_then(|p| std::fs::metadata(p).ok())
        else {
            return Vec::new();
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let mut b = meta.len().to_le_bytes().to_vec();
        b.extend_from_slice(&modified.to_le_bytes());
        b
    })
}

/// The default place: `$XDG_CACHE_HOME/raidlab/advise`, else `~/.cache/raidlab/advise`.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("raidlab").join("advise"))
}
