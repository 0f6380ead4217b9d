//! Guards: the checks a device must pass before raidlab writes a byte to it.
//!
//! A device is used only if it is named in the plan, and is not mounted (nor any of its
//! partitions), not held by md/dm/bcache, not in a mounted btrfs, not swap, not
//! read-only, not busy for an exclusive open, and carries no signature (partition table,
//! file system, RAID, LVM, swap). Only the last check can be waived, and only by naming
//! the device's serial in `--destroy-data-on` — the user proves they know which disk
//! they are about to erase. Nothing overrides the others.

use crate::devices::{self, BlockDev};
use std::collections::BTreeSet;
use std::process::Command;

/// Why a device may not be used.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum Problem {
    /// The path does not resolve to a whole block device.
    NotADisk(String),
    /// The plan does not list it.
    NotInPlan,
    /// It or a partition of it is mounted (where).
    Mounted(String),
    /// Part of a mounted btrfs (btrfs lists only one member as the mount's source).
    InMountedBtrfs,
    /// md, dm or another device sits on it.
    Held(Vec<String>),
    /// Active swap.
    Swap,
    /// Read-only.
    ReadOnly,
    /// The kernel refuses an exclusive open: something uses it.
    Busy,
    /// Signatures found by `wipefs -n` (type names). Waivable by serial.
    Signatures(Vec<String>),
    /// The plan names this device more than once (the other path).
    Duplicate(String),
    /// Processes have it open (`pid (command)`), even without an exclusive open.
    OpenBy(Vec<String>),
}

impl Problem {
    pub fn waivable(&self) -> bool {
        matches!(self, Problem::Signatures(_))
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::NotADisk(e) => write!(f, "{e}: name a whole disk (see `raidlab disks`)"),
            Problem::NotInPlan => write!(
                f,
                "not named in the plan's [disks] devices: add it there to use it"
            ),
            Problem::Mounted(at) => write!(f, "mounted at {at}: unmount it, or name another disk"),
            Problem::InMountedBtrfs => write!(
                f,
                "member of a mounted btrfs: unmount that file system, or name another disk"
            ),
            Problem::Held(h) => write!(
                f,
                "in use by {} (stacked on it): stop that device (`mdadm --stop`, `dmsetup remove`), or name another disk",
                h.join(", ")
            ),
            Problem::Swap => write!(f, "active swap: `swapoff` it first, or name another disk"),
            Problem::ReadOnly => write!(
                f,
                "read-only: make it writable (`blockdev --setrw`), or name another disk"
            ),
            Problem::Busy => write!(
                f,
                "busy: the kernel refuses an exclusive open (something holds it: see `lsblk`, `fuser -v` on it)"
            ),
            Problem::Signatures(s) => write!(f, "holds data: {} signature", s.join(", ")),
            Problem::Duplicate(other) => write!(
                f,
                "the same device as {other}: name each disk once"
            ),
            Problem::OpenBy(p) => write!(
                f,
                "open by {}: stop it, or name another disk",
                p.join(", ")
            ),
        }
    }
}

/// One device's verdict.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Verdict {
    pub path: String,
    pub dev: Option<BlockDev>,
    pub problems: Vec<Problem>,
}

impl Verdict {
    /// Usable, given the serials the user allowed to be erased.
    pub fn usable(&self, destroy: &BTreeSet<String>) -> bool {
        self.problems
            .iter()
            .all(|p| p.waivable() && self.serial().is_some_and(|s| destroy.contains(s)))
    }

    pub fn serial(&self) -> Option<&str> {
        self.dev.as_ref().and_then(|d| d.serial.as_deref())
    }

    /// One line: why not, or `ok`.
    pub fn reason(&self, destroy: &BTreeSet<String>) -> String {
        if self.problems.is_empty() {
            return "ok: no signature, not in use".into();
        }
        let list = self
            .problems
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ");
        if self.usable(destroy) {
            format!("ok: {list} — erasing allowed by --destroy-data-on")
        } else {
            list
        }
    }
}

/// Signature types on a device, by `wipefs --no-act --json`.
fn signatures(path: &str) -> Result<Vec<String>, String> {
    let out = Command::new("wipefs")
        .args(["--no-act", "--json", path])
        .output()
        .map_err(|e| format!("cannot run wipefs (util-linux): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "wipefs -n {path} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    if out.stdout.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(Vec::new());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("wipefs -n --json {path}: unreadable output: {e}"))?;
    let mut types: Vec<String> = v["signatures"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["type"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    types.dedup();
    Ok(types)
}

/// Whether an exclusive open fails with EBUSY (mounted, md/dm member, btrfs member).
fn busy(path: &str) -> bool {
    match open_exclusive(path, false) {
        Ok(_) => false,
        Err(e) => e.raw_os_error() == Some(libc::EBUSY),
    }
}

/// Open a block device `O_EXCL`: the kernel refuses it (EBUSY) while md, device-mapper or
/// a mount holds the device, and refuses them while the descriptor is open.
pub(crate) fn open_exclusive(path: &str, write: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(libc::O_EXCL)
        .open(path)
}

/// Processes other than this one (and udev's short-lived probes, and other raidlab
/// processes: see the comment below) with the block device
/// `major:minor` open, as `pid (command)`: an open without `O_EXCL` does not make the
/// kernel refuse an exclusive open, yet a writer there would be destroyed with the disk.
///
/// Tools that scan devices (`losetup --find`, `blkid`, `lsblk`) open them for an instant:
/// only a process seen holding the device in two looks 150 ms apart is reported.
pub fn open_by(dev: (u32, u32)) -> Vec<String> {
    let first = open_by_now(dev);
    if first.is_empty() {
        return first;
    }
    std::thread::sleep(std::time::Duration::from_millis(150));
    let again = open_by_now(dev);
    first.into_iter().filter(|p| again.contains(p)).collect()
}

/// Commands that open block devices only to look at them (see [`open_by`]).
const SCANNERS: [&str; 6] = [
    "systemd-udevd",
    "(udev-worker)",
    "raidlab",
    "losetup",
    "blkid",
    "lsblk",
];

fn open_by_now(dev: (u32, u32)) -> Vec<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    for p in procs.flatten() {
        let pid = p.file_name().to_string_lossy().into_owned();
        if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::metadata(fd.path()).is_ok_and(|m| {
                m.file_type().is_block_device()
                    && (libc::major(m.rdev()), libc::minor(m.rdev())) == dev
            })
        });
        if !holds {
            continue;
        }
        let comm = std::fs::read_to_string(p.path().join("comm"))
            .map(|c| c.trim().to_string())
            .unwrap_or_default();
        // Readers that only look: udev's and util-linux's probes (`losetup --find` opens
        // every loop device to find a free one, and waits there while a busy device
        // answers), and another raidlab's failed attempt at the device lock a run holds
        // (see `lock`). None of them writes.
        if SCANNERS.contains(&comm.as_str()) {
            continue;
        }
        found.push(format!("pid {pid} ({comm})"));
    }
    found.sort();
    found
}

/// Check one device. `planned`: the plan's device paths (`None`: do not check).
pub fn check(path: &str, planned: Option<&[String]>) -> Verdict {
    let mut problems = Vec::new();
    if let Some(list) = planned {
        let number = devices::device_number(path).ok();
        let same =
            |p: &String| p == path || number.is_some() && devices::device_number(p).ok() == number;
        if !list.iter().any(same) {
            problems.push(Problem::NotInPlan);
        }
    }
    let dev = match devices::inspect(path) {
        Ok(d) => d,
        Err(e) => {
            problems.push(Problem::NotADisk(e));
            return Verdict {
                path: path.into(),
                dev: None,
                problems,
            };
        }
    };
    let mut ids: Vec<&str> = vec![dev.dev.as_str()];
    ids.extend(dev.partitions.iter().map(|(_, d)| d.as_str()));
    let mut names: Vec<&str> = vec![dev.name.as_str()];
    names.extend(dev.partitions.iter().map(|(n, _)| n.as_str()));
    for (id, at, source) in devices::mounts() {
        let by_name = names.iter().any(|n| source == format!("/dev/{n}"));
        if ids.contains(&id.as_str()) || by_name {
            problems.push(Problem::Mounted(at));
        }
    }
    let in_btrfs = devices::btrfs_members();
    if names.iter().any(|n| in_btrfs.contains(*n)) {
        problems.push(Problem::InMountedBtrfs);
    }
    if !dev.holders.is_empty() {
        problems.push(Problem::Held(dev.holders.clone()));
    }
    let swaps = devices::swaps();
    if names.iter().any(|n| swaps.contains(*n)) {
        problems.push(Problem::Swap);
    }
    if dev.read_only {
        problems.push(Problem::ReadOnly);
    }
    if problems.iter().all(|p| *p == Problem::NotInPlan) && busy(path) {
        problems.push(Problem::Busy);
    }
    if let Ok(number) = devices::device_number(path) {
        let holders = open_by(number);
        if !holders.is_empty() {
            problems.push(Problem::OpenBy(holders));
        }
    }
    match signatures(path) {
        Ok(s) if !s.is_empty() => problems.push(Problem::Signatures(s)),
        Ok(_) => {}
        // A device in use may not open for probing; it is refused already.
        Err(_) if problems.iter().any(|p| *p != Problem::NotInPlan) => {}
        Err(e) => problems.push(Problem::NotADisk(e)),
    }
    problems.dedup();
    Verdict {
        path: path.into(),
        dev: Some(dev),
        problems,
    }
}

/// A device named twice — the same path, or two paths (a symlink, a node made with
/// `mknod`) with one device number — is refused at its second mention.
pub fn mark_duplicates(verdicts: &mut [Verdict]) {
    let numbers: Vec<Option<(u32, u32)>> = verdicts
        .iter()
        .map(|v| devices::device_number(&v.path).ok())
        .collect();
    for i in 0..verdicts.len() {
        let first = (0..i).find(|&j| {
            verdicts[j].path == verdicts[i].path || numbers[i].is_some() && numbers[j] == numbers[i]
        });
        if let Some(j) = first {
            let other = verdicts[j].path.clone();
            verdicts[i].problems.push(Problem::Duplicate(other));
        }
    }
}

/// Check every device of a plan; an error lists each refused device with its reason
/// and what to do.
pub fn check_plan(devices: &[String], destroy: &BTreeSet<String>) -> Result<Vec<Verdict>, String> {
    let mut verdicts: Vec<Verdict> = devices.iter().map(|p| check(p, None)).collect();
    mark_duplicates(&mut verdicts);
    let planned: BTreeSet<&str> = verdicts.iter().filter_map(|v| v.serial()).collect();
    if let Some(s) = destroy.iter().find(|s| !planned.contains(s.as_str())) {
        return Err(format!(
            "--destroy-data-on {s}: no device of the plan has this serial; it names a disk the plan does not use (see `raidlab disks --plan PLAN` for serials)"
        ));
    }
    let refused: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.usable(destroy))
        .map(|v| {
            let hint = if v.problems.iter().all(Problem::waivable) {
                format!(
                    " — if its data may be destroyed, add --destroy-data-on {}",
                    v.serial().unwrap_or("?")
                )
            } else {
                String::new()
            };
            format!("{}: {}{hint}", v.path, v.reason(destroy))
        })
        .collect();
    if refused.is_empty() {
        Ok(verdicts)
    } else {
        Err(format!(
            "refusing to touch {} device(s); nothing was changed:\n  {}",
            refused.len(),
            refused.join("\n  ")
        ))
    }
}
