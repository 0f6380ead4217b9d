//! What the kernel says about block devices: size, model, serial, rotational, read-only,
//! partitions, holders, mounts, swaps — read from sysfs and /proc, never guessed.
//!
//! The guards decide on these facts, `raidlab disks` prints them, and the environment
//! capture records them, so all three see the same device the same way.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// One block device as the kernel shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BlockDev {
    /// The path the user named (or `/dev/NAME` when listing).
    pub path: String,
    /// Kernel name: `sdb`, `nvme0n1`, `loop3`.
    pub name: String,
    /// `major:minor`.
    pub dev: String,
    pub size_bytes: u64,
    pub model: Option<String>,
    /// The drive's serial, or for a loop device `loop:` + its backing file (loop devices
    /// have no serial; the backing file is their identity).
    pub serial: Option<String>,
    pub rotational: bool,
    pub read_only: bool,
    pub scheduler: Option<String>,
    /// Partitions (kernel names) and their `major:minor`.
    pub partitions: Vec<(String, String)>,
    /// Devices stacked on this one or its partitions (md, dm, bcache): kernel names.
    pub holders: Vec<String>,
}

fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn sys(name: &str) -> PathBuf {
    Path::new("/sys/class/block").join(name)
}

/// The `major:minor` of the block device at `path` (symlinks followed), from the node
/// itself: the number is the device's identity, whatever the node is called.
pub fn device_number(path: &str) -> Result<(u32, u32), String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = fs::metadata(path).map_err(|e| format!("{path}: {e}"))?;
    if !meta.file_type().is_block_device() {
        return Err(format!("{path} is not a block device"));
    }
    let rdev = meta.rdev();
    Ok((libc::major(rdev), libc::minor(rdev)))
}

/// The kernel name of a device path (`/dev/disk/by-id/x` → `sdb`), found by the node's
/// device number — never by the node's file name, which anyone can choose with `mknod`.
/// Partitions are refused: raidlab uses whole devices.
pub fn kernel_name(path: &str) -> Result<String, String> {
    let (major, minor) = device_number(path)?;
    let link = Path::new("/sys/dev/block").join(format!("{major}:{minor}"));
    let name = fs::read_link(&link)
        .ok()
        .and_then(|l| l.file_name().and_then(|n| n.to_str()).map(str::to_string))
        .ok_or_else(|| {
            format!("{path} ({major}:{minor}) is not a block device the kernel knows")
        })?;
    if sys(&name).join("partition").exists() {
        return Err(format!(
            "{path} ({name}) is a partition: name the whole disk; raidlab builds arrays on whole devices"
        ));
    }
    Ok(name)
}

/// The most a single discard may cover on the whole device at `path`
/// (`queue/discard_max_bytes`): 0 when it takes no discard.
pub fn discard_max_bytes(path: &str) -> Result<u64, String> {
    let name = kernel_name(path)?;
    Ok(read(sys(&name).join("queue/discard_max_bytes"))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0))
}

/// A whole device's block-layer counters (`/sys/class/block/NAME/stat`, in the kernel's
/// order: reads, read merges, read sectors, read ticks, writes, write merges, write
/// sectors, …), as they stand now; None where unreadable.
pub fn io_counters(path: &str) -> Option<Vec<u64>> {
    let text = read(sys(&kernel_name(path).ok()?).join("stat"))?;
    Some(
        text.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect(),
    )
}

fn holders_of(dir: &Path) -> Vec<String> {
    fs::read_dir(dir.join("holders"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Read everything about the device at `path`.
pub fn inspect(path: &str) -> Result<BlockDev, String> {
    let name = kernel_name(path)?;
    let dir = sys(&name);
    let mut partitions = Vec::new();
    let mut holders = holders_of(&dir);
    if let Ok(rd) = fs::read_dir(&dir) {
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.join("partition").exists() {
                let pname = e.file_name().to_string_lossy().into_owned();
                partitions.push((pname, read(p.join("dev")).unwrap_or_default()));
                holders.extend(holders_of(&p));
            }
        }
    }
    partitions.sort();
    let serial = read(dir.join("loop/backing_file"))
        .map(|f| format!("loop:{f}"))
        .or_else(|| read(dir.join("device/serial")))
        .or_else(|| read(dir.join("serial")))
        .or_else(|| udev_serial(&read(dir.join("dev")).unwrap_or_default()));
    let scheduler = read(dir.join("queue/scheduler")).map(|s| {
        s.split_whitespace()
            .find(|w| w.starts_with('['))
            .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
            .unwrap_or(s)
    });
    Ok(BlockDev {
        path: path.to_string(),
        dev: read(dir.join("dev")).unwrap_or_default(),
        size_bytes: read(dir.join("size"))
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0)
            * 512,
        model: read(dir.join("device/model")),
        serial,
        rotational: read(dir.join("queue/rotational")).as_deref() == Some("1"),
        read_only: read(dir.join("ro")).as_deref() == Some("1"),
        scheduler,
        partitions,
        holders,
        name,
    })
}

/// udev's short serial (SATA/SAS disks keep theirs there, not in sysfs).
fn udev_serial(dev: &str) -> Option<String> {
    let text = fs::read_to_string(format!("/run/udev/data/b{dev}")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("E:ID_SERIAL_SHORT="))
        .or_else(|| text.lines().find_map(|l| l.strip_prefix("E:ID_SERIAL=")))
        .map(str::to_string)
}

/// Every whole block device, `/dev/NAME`, sorted (ram and zero-sized devices left out).
pub fn all() -> Vec<BlockDev> {
    let mut names: Vec<String> = fs::read_dir("/sys/block")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .into_iter()
        .filter(|n| !n.starts_with("ram"))
        .filter_map(|n| inspect(&format!("/dev/{n}")).ok())
        .filter(|d| d.size_bytes > 0)
        .collect()
}

/// `major:minor` → mount points, from /proc/self/mountinfo; plus the sources named by
/// path (btrfs shows one member only — the guards also ask btrfs itself).
pub fn mounts() -> Vec<(String, String, String)> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let sep = f.iter().position(|x| *x == "-")?;
            Some((
                f.get(2)?.to_string(),
                unescape(f.get(4)?),
                f.get(sep + 2).map(|s| unescape(s)).unwrap_or_default(),
            ))
        })
        .collect()
}

/// mountinfo escapes spaces and the like as `\040`.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| c.is_ascii_digit()) {
            let v = u8::from_str_radix(&s[i + 1..i + 4], 8).unwrap_or(b'?');
            out.push(v as char);
            i += 4;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Kernel names of devices in a mounted btrfs (btrfs mounts list only one member).
pub fn btrfs_members() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    if let Ok(rd) = fs::read_dir("/sys/fs/btrfs") {
        for fsdir in rd.filter_map(|e| e.ok()) {
            if let Ok(devs) = fs::read_dir(fsdir.path().join("devices")) {
                out.extend(
                    devs.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned()),
                );
            }
        }
    }
    out
}

/// Kernel names of active swap devices.
pub fn swaps() -> BTreeSet<String> {
    fs::read_to_string("/proc/swaps")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| fs::canonicalize(p).ok())
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect()
}

/// Whether a mount point is mounted now.
pub fn is_mountpoint(dir: &str) -> bool {
    mounts().iter().any(|(_, m, _)| m == dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/plain"), "/plain");
    }

    #[test]
    fn partitions_and_missing_devices_are_refused() {
        let e = kernel_name("/dev/raidlab-no-such-device").unwrap_err();
        assert!(e.contains("raidlab-no-such-device"), "{e}");
    }
}
