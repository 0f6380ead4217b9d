//! Locks that make concurrent commands on the same results directory or the same disks
//! exclude each other, across processes and across results directories.
//!
//! A run holds, for its whole life, `flock` on its results directory (`.host/lock`) and on
//! each of its devices' kernel nodes (`/dev/NAME`, found by device number, so another
//! path or a node made with `mknod` locks the same thing — the convention systemd-udevd
//! and the partitioning tools follow for block devices). A second run, a `--resume` or a
//! `raidlab cleanup` of a live run finds the lock taken and refuses before it touches
//! anything; the kernel drops the locks when the process ends, even by `kill -9`.

use crate::devices;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// Held locks; dropping them releases.
#[derive(Debug)]
pub struct Held(#[allow(dead_code)] Vec<File>);

fn try_lock(file: File) -> Result<Option<File>, std::io::Error> {
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// The results directory's lock: refused while another raidlab process runs in it.
pub fn directory(out: &Path) -> Result<Held, String> {
    let dir = out.join(".host");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let path = dir.join("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    match try_lock(file) {
        Ok(Some(f)) => Ok(Held(vec![f])),
        Ok(None) => Err(format!(
            "a raidlab run is live in {} (another process holds {}): nothing was touched; wait for it to end, or stop it with Ctrl-C in its terminal (or `kill -INT` its pid), then run `raidlab cleanup {}` if it did not clean up",
            out.display(),
            path.display(),
            out.display()
        )),
        Err(e) => Err(format!("cannot lock {}: {e}", path.display())),
    }
}

/// The node the kernel made for the device at `path`: every path to one device locks
/// the same file.
fn kernel_node(path: &str) -> Result<PathBuf, String> {
    let node = Path::new("/dev").join(devices::kernel_name(path)?);
    if devices::device_number(&node.to_string_lossy()) == devices::device_number(path) {
        Ok(node)
    } else {
        Ok(PathBuf::from(path))
    }
}

/// Lock every device, or none: a device another raidlab run holds is named in the error.
/// Paths that are not block devices, and second mentions of one, are left to the
/// guards, which refuse them.
pub fn devices(paths: &[String]) -> Result<Held, String> {
    let mut held = Vec::new();
    let mut seen = Vec::new();
    for p in paths {
        // A device named twice is the guards' to refuse, with a clearer word.
        match devices::device_number(p) {
            Ok(n) if !seen.contains(&n) => seen.push(n),
            _ => continue,
        }
        let node = kernel_node(p)?;
        let file = File::open(&node).map_err(|e| format!("{p}: cannot open: {e}"))?;
        match try_lock(file) {
            Ok(Some(f)) => held.push(f),
            Ok(None) => {
                return Err(format!(
                    "{p} ({}) is locked by another process — another raidlab run on this disk, or a partitioning tool: nothing was touched; wait for it to end",
                    node.display()
                ))
            }
            Err(e) => return Err(format!("cannot lock {p}: {e}")),
        }
    }
    Ok(Held(held))
}
