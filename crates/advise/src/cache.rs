//! Simulated figures by content hash: the case's id (a hash of everything the case is:
//! array, disks and their model, workload), the seed and raidlab's version; and each
//! layout's probability of losing data by what the Monte Carlo is given. A second
//! `advise` with a changed constraint, or more disk counts, computes only what is new.
//! One small JSON file per case, written to a temporary name and renamed, so a cache
//! shared by two runs never holds half a file.

use crate::AdviseError;
use raidlab_core::Case;
use serde::de::DeserializeOwned;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

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

    /// A key from parts (raidlab's version comes first).
    pub fn key_of(parts: &[&[u8]]) -> String {
        let mut h = Sha256::new();
        h.update(env!("CARGO_PKG_VERSION"));
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

/// The default place: `$XDG_CACHE_HOME/raidlab/advise`, else `~/.cache/raidlab/advise`.
pub fn default_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("raidlab").join("advise"))
}
