//! Raw files: fio's output and logs kept byte for byte under `DIR/raw/`, never replaced.
//!
//! The raw files are the evidence; the index is derived from them. A file's name is fixed
//! by its (case, repetition, target) — `<case>-r<rep>-<target>.json`, logs
//! `<case>-r<rep>-<target>-<name>` — and names are checked so that two results can never
//! share one. A name is claimed with `create_new`, so an existing file is never
//! overwritten. A file already at a name whose result is not indexed can only be the
//! leftover of an interrupted commit: it is moved to `raw/orphaned/` (kept, never
//! deleted) and the name claimed afresh.

use crate::error::{io, Result, StoreError};
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::Path;

/// Where leftovers of interrupted commits are moved, under `raw/`.
const ORPHANED: &str = "orphaned";

/// `<case>-r<rep>-<target>`: the stem every raw file of one result starts with.
pub(crate) fn stem(case: &str, repetition: u32, target: &str) -> String {
    format!("{case}-r{repetition}-{target}")
}

/// Case ids and targets may not contain `-`, so a stem splits back into one key only and
/// no log name of one result can equal a file name of another.
/// The one naming rule of a result's logs: beside its JSON, `<stem>-<name>`.
pub(crate) fn log_file(stem: &str, name: &str) -> String {
    format!("{stem}-{name}")
}

pub(crate) fn check_key(case: &str, target: &str) -> Result<()> {
    let plain = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    if !plain(case) {
        return Err(StoreError::BadName {
            what: "case id",
            name: case.into(),
        });
    }
    if !plain(target) {
        return Err(StoreError::BadName {
            what: "target",
            name: target.into(),
        });
    }
    Ok(())
}

/// A log's name is one path component: no separators, no `..`, no hidden files.
pub(crate) fn check_log_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadName {
            what: "log name",
            name: name.into(),
        })
    }
}

/// Claim `raw/name` with `create_new`, moving an orphan out of the way first if needed.
fn claim(raw: &Path, name: &str) -> Result<File> {
    let path = raw.join(name);
    let open = || OpenOptions::new().write(true).create_new(true).open(&path);
    match open() {
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            set_aside(raw, name)?;
            open().map_err(io(&path))
        }
        other => other.map_err(io(&path)),
    }
}

/// Move the orphan `raw/name` to `raw/orphaned/name.N`, the first N not taken.
fn set_aside(raw: &Path, name: &str) -> Result<()> {
    let dir = raw.join(ORPHANED);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let from = raw.join(name);
    for n in 1u32.. {
        let to = dir.join(format!("{name}.{n}"));
        if !to.exists() {
            return std::fs::rename(&from, &to).map_err(io(&from));
        }
    }
    unreachable!("some orphan number is free")
}

/// Write `raw/name` durably: the name is claimed, the bytes go to a temporary file that
/// is fsynced and then renamed onto the claim. The caller fsyncs `raw/` afterwards.
pub(crate) fn write_durable(raw: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    drop(claim(raw, name)?);
    let tmp = raw.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = File::create(&tmp).map_err(io(&tmp))?;
    f.write_all(bytes).map_err(io(&tmp))?;
    f.sync_all().map_err(io(&tmp))?;
    drop(f);
    std::fs::rename(&tmp, raw.join(name)).map_err(io(&tmp))
}

/// Write `raw/name` in place, unsynced: for batches, whose caller syncs the file system
/// once before indexing them (a torn file is then an orphan with no index row).
pub(crate) fn write_fast(raw: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let mut f = claim(raw, name)?;
    f.write_all(bytes).map_err(io(&raw.join(name)))
}

/// fsync a directory, so the names created in it survive a crash.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// Flush everything written under `dir` to stable storage with one `syncfs(2)`.
pub(crate) fn sync_filesystem(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(io(dir))?;
    // SAFETY: syncfs only reads the descriptor, which `f` keeps open for the call.
    let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&f)) };
    if rc != 0 {
        return Err(io(dir)(std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_collide_or_escape_are_refused() {
        assert!(check_key("0123abcd", "sim").is_ok());
        assert!(
            check_key("0123abcd", "a-b").is_err(),
            "a '-' makes stems ambiguous"
        );
        assert!(check_key("../x", "sim").is_err());
        assert!(check_key("0123", "").is_err());
        assert!(check_log_name("iops.1.log").is_ok());
        assert!(check_log_name("lat-clat.log").is_ok());
        for bad in ["", "../x", "a/b", ".hidden"] {
            assert!(check_log_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_orphan_is_kept_aside_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path();
        std::fs::write(raw.join("x.json"), b"torn").unwrap();
        write_durable(raw, "x.json", b"whole").unwrap();
        assert_eq!(std::fs::read(raw.join("x.json")).unwrap(), b"whole");
        assert_eq!(
            std::fs::read(raw.join(ORPHANED).join("x.json.1")).unwrap(),
            b"torn"
        );
        write_fast(raw, "x.json", b"third").unwrap();
        assert_eq!(
            std::fs::read(raw.join(ORPHANED).join("x.json.2")).unwrap(),
            b"whole"
        );
    }
}
