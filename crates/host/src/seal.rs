//! Journal lines that raidlab can prove it wrote. `raidlab cleanup` acts on a journal as
//! root — kills processes, unmounts, wipes disks — so it must not act on lines anyone
//! else wrote or edited: each line carries an HMAC-SHA256 over its results directory and
//! its entry, keyed by a secret only root can read (`$RAIDLAB_STATE_DIR/journal.key`,
//! made on first use, mode 0600). A line whose seal does not match is reported, never
//! carried out.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn key_path() -> PathBuf {
    crate::journal::state_dir()
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join("journal.key")
}

/// The key, made on first use.
pub fn key() -> Result<Vec<u8>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = key_path();
    if let Ok(k) = std::fs::read(&path) {
        if k.len() == 32 {
            return Ok(k);
        }
    }
    let mut k = vec![0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut k))
        .map_err(|e| format!("cannot read /dev/urandom for the journal key: {e}"))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("new-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&k).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::hard_link(&tmp, &path).or_else(|e| {
            // Another raidlab made it first: use theirs.
            if e.kind() == std::io::ErrorKind::AlreadyExists { Ok(()) } else { Err(e) }
        }))
        .map_err(|e| {
            format!(
                "cannot write the journal key {} ({e}); set RAIDLAB_STATE_DIR to a directory root can write",
                path.display()
            )
        })?;
    let _ = std::fs::remove_file(&tmp);
    std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn mac(key: &[u8], out: &Path, entry: &[u8]) -> Hmac<Sha256> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(out.as_os_str().as_encoded_bytes());
    m.update(&[0]);
    m.update(entry);
    m
}

/// The seal of `entry` (its JSON) in the journal of results directory `out`.
pub fn seal(key: &[u8], out: &Path, entry: &[u8]) -> String {
    mac(key, out, entry)
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Whether `hex` is the seal of `entry` in `out`'s journal (compared in constant time).
pub fn verify(key: &[u8], out: &Path, entry: &[u8], hex: &str) -> bool {
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    bytes.is_some_and(|b| mac(key, out, entry).verify_slice(&b).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_holds_for_its_line_and_directory_only() {
        let key = [7u8; 32];
        let (out, line) = (Path::new("/r"), br#"{"op":"ended","at":1,"pid":2}"#);
        let s = seal(&key, out, line);
        assert!(verify(&key, out, line, &s));
        assert!(!verify(&key, Path::new("/other"), line, &s));
        assert!(!verify(&key, out, br#"{"op":"ended","at":1,"pid":3}"#, &s));
        assert!(!verify(&[8u8; 32], out, line, &s));
        assert!(!verify(&key, out, line, "zz"));
    }
}
