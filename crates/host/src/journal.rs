//! The journal: every system-changing step is written down (and fsynced) *before* it
//! runs, with how to undo it; every teardown that succeeds closes its entry.
//!
//! After Ctrl-C the host target tears down by itself. After SIGKILL or a power cut the
//! journal is all that is left: `raidlab cleanup` (and the next `raidlab run` on the same
//! results) replays it — stops the fio raidlab started (by pid, checked against its start
//! time), unmounts, stops arrays, zeroes the superblocks it wrote, restores write caches —
//! in reverse order, touching only devices whose serial is still the one journalled.
//!
//! The file is append-only JSON lines (`host-journal.jsonl` in the results directory); a
//! registry of results directories with open entries (`$RAIDLAB_STATE_DIR/active`, by
//! default `/var/lib/raidlab/active`) lets `raidlab cleanup` find them without arguments.

use crate::{cache, devices};
use raidlab_backend::script::{Phase, Undo};
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const FILE: &str = "host-journal.jsonl";

/// A device as journalled: its path and the serial it had.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DeviceId {
    pub path: String,
    pub serial: Option<String>,
}

/// One journal line.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Entry {
    /// About to change the system; `undo` reverts it.
    Open {
        at: i64,
        case: String,
        phase: Phase,
        undo: Undo,
        devices: Vec<DeviceId>,
    },
    /// The change was reverted.
    Close { at: i64, undo: Undo },
    /// A process raidlab started (fio), identified by pid and start time.
    Started { at: i64, pid: u32, start: u64 },
    /// That process ended.
    Ended { at: i64, pid: u32 },
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The registry of results directories with open journal entries.
pub fn state_dir() -> PathBuf {
    std::env::var_os("RAIDLAB_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/lib/raidlab"))
        .join("active")
}

fn registry_entry(out: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let h = Sha256::digest(abs.as_os_str().as_encoded_bytes());
    let hex: String = h[..8].iter().map(|b| format!("{b:02x}")).collect();
    state_dir().join(hex)
}

/// Results directories the registry says may hold open entries.
pub fn registered() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(state_dir())
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_to_string(e.path()).ok())
                .map(|s| PathBuf::from(s.trim()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// An open journal.
pub struct Journal {
    out: PathBuf,
    file: File,
    key: Vec<u8>,
}

/// The directory as seals name it (absolute, so a relative `--out` seals alike).
fn sealed_name(out: &Path) -> PathBuf {
    std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf())
}

impl Journal {
    /// Open (append) the journal of results directory `out` and register it.
    pub fn open(out: &Path) -> Result<Journal, String> {
        let path = out.join(FILE);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| format!("cannot open the journal {}: {e}", path.display()))?;
        let j = Journal {
            out: out.to_path_buf(),
            file,
            key: crate::seal::key()?,
        };
        j.register()?;
        Ok(j)
    }

    /// Put this results directory in the registry `raidlab cleanup` reads.
    fn register(&self) -> Result<(), String> {
        let reg = registry_entry(&self.out);
        let abs = std::fs::canonicalize(&self.out).unwrap_or_else(|_| self.out.clone());
        std::fs::create_dir_all(state_dir())
            .and_then(|_| std::fs::write(&reg, abs.as_os_str().as_encoded_bytes()))
            .map_err(|e| {
                format!(
                    "cannot register the journal in {} ({e}); set RAIDLAB_STATE_DIR to a writable directory",
                    state_dir().display()
                )
            })
    }

    /// Append an entry and make it durable before returning.
    pub fn write(&mut self, e: &Entry) -> Result<(), String> {
        let entry = serde_json::to_vec(e).expect("journal entries serialise");
        let mac = crate::seal::seal(&self.key, &sealed_name(&self.out), &entry);
        let mut line = serde_json::to_vec(&serde_json::json!({ "entry": e, "mac": mac }))
            .expect("journal lines serialise");
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| format!("cannot write the journal in {}: {e}", self.out.display()))
    }

    pub fn open_entry(
        &mut self,
        case: &str,
        phase: Phase,
        undo: &Undo,
        devices: Vec<DeviceId>,
    ) -> Result<(), String> {
        // Registered for as long as anything is open: a crash in any case stays findable.
        self.register()?;
        self.write(&Entry::Open {
            at: now(),
            case: case.into(),
            phase,
            undo: undo.clone(),
            devices,
        })
    }

    pub fn close_entry(&mut self, undo: &Undo) -> Result<(), String> {
        self.write(&Entry::Close {
            at: now(),
            undo: undo.clone(),
        })
    }

    pub fn started(&mut self, pid: u32) -> Result<(), String> {
        let start = start_time(pid).unwrap_or(0);
        self.write(&Entry::Started {
            at: now(),
            pid,
            start,
        })
    }

    pub fn ended(&mut self, pid: u32) -> Result<(), String> {
        self.write(&Entry::Ended { at: now(), pid })
    }

    /// Drop the registry entry when nothing is open any more.
    pub fn deregister_if_clean(&self) {
        if pending(&self.out).map(|p| p.is_clean()).unwrap_or(false) {
            let _ = std::fs::remove_file(registry_entry(&self.out));
        }
    }
}

/// What a journal leaves undone.
#[derive(Debug, Default)]
pub struct Pending {
    /// Open entries, oldest first.
    pub open: Vec<(Undo, Vec<DeviceId>)>,
    /// Processes started and not seen ending: (pid, start time).
    pub processes: Vec<(u32, u64)>,
    /// Lines whose seal does not match (written or edited by someone else): never acted on.
    pub forged: Vec<String>,
}

impl Pending {
    pub fn is_clean(&self) -> bool {
        self.open.is_empty() && self.processes.is_empty() && self.forged.is_empty()
    }
}

/// A journal line: the entry and its seal ([`crate::seal`]).
#[derive(serde::Deserialize)]
struct Sealed {
    entry: Entry,
    mac: String,
}

/// Replay a results directory's journal.
pub fn pending(out: &Path) -> Result<Pending, String> {
    let path = out.join(FILE);
    let f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pending::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut p = Pending::default();
    let key = crate::seal::key()?;
    let name = sealed_name(out);
    for (i, line) in std::io::BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        // A line cut short by a crash is the last one and was never acted on.
        let Ok(sealed) = serde_json::from_str::<Sealed>(&line) else {
            raidlab_backend::note!(
                "warning: {}:{}: unreadable journal line skipped",
                path.display(),
                i + 1
            );
            continue;
        };
        let entry = serde_json::to_vec(&sealed.entry).expect("journal entries serialise");
        if !crate::seal::verify(&key, &name, &entry, &sealed.mac) {
            p.forged.push(format!(
                "{}:{}: this line's seal does not match: raidlab did not write it as it stands, so it is not carried out",
                path.display(),
                i + 1
            ));
            continue;
        }
        let e = sealed.entry;
        match e {
            Entry::Open { undo, devices, .. } => p.open.push((undo, devices)),
            Entry::Close { undo, .. } => {
                if let Some(i) = p.open.iter().rposition(|(u, _)| *u == undo) {
                    p.open.remove(i);
                }
            }
            Entry::Started { pid, start, .. } => p.processes.push((pid, start)),
            Entry::Ended { pid, .. } => p.processes.retain(|(q, _)| *q != pid),
        }
    }
    Ok(p)
}

/// A process's start time (clock ticks since boot, field 22 of /proc/PID/stat).
pub fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    rest.split(' ').nth(19)?.parse().ok()
}

fn run(argv: &[&str]) -> Result<(), String> {
    let o = Command::new(argv[0])
        .args(&argv[1..])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// Stop a process raidlab started, if it is still that process.
fn stop_process(pid: u32, start: u64, log: &mut dyn FnMut(String)) {
    if start_time(pid) != Some(start) {
        return; // gone, or the pid now belongs to someone else: not ours to stop
    }
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() != "fio" {
        log(format!(
            "not stopping pid {pid} ({}): raidlab only ever starts fio",
            comm.trim()
        ));
        return;
    }
    log(format!("stopping fio (pid {pid}) that raidlab started"));
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    for _ in 0..100 {
        if start_time(pid) != Some(start) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    for _ in 0..50 {
        if start_time(pid) != Some(start) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Whether an undo stays where raidlab works: it mounts only below the results
/// directory's `.host/`, so an unmount anywhere else is not its own.
fn within(out: &Path, u: &Undo) -> Result<(), String> {
    let (Undo::Unmount { dir } | Undo::CancelReplace { dir }) = u else {
        return Ok(());
    };
    let base = std::path::absolute(out.join(".host")).unwrap_or_else(|_| out.join(".host"));
    let canonical = std::fs::canonicalize(&base).unwrap_or(base.clone());
    let d = Path::new(dir);
    if d.starts_with(&base) || d.starts_with(&canonical) {
        Ok(())
    } else {
        Err(format!(
            "not touching the mount at {dir}: raidlab mounts only below {}",
            base.display()
        ))
    }
}

/// Whether every journalled device is still the same device (same serial).
fn same_devices(devs: &[DeviceId]) -> Result<(), String> {
    for d in devs {
        let now = devices::inspect(&d.path).ok().and_then(|b| b.serial);
        if now != d.serial {
            return Err(format!(
                "{} is no longer the device raidlab used (serial {:?}, journalled {:?}); not touching it",
                d.path, now, d.serial
            ));
        }
    }
    Ok(())
}

/// Carry out one undo. Idempotent: what is already undone is skipped.
pub fn undo(u: &Undo) -> Result<(), String> {
    match u {
        Undo::Unmount { dir } => {
            let mut last = Ok(());
            for _ in 0..10 {
                if !devices::is_mountpoint(dir) {
                    return Ok(());
                }
                last = run(&["umount", dir]);
                if last.is_ok() {
                    return Ok(());
                }
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            last
        }
        Undo::StopArray { array, members } => {
            if Path::new(array).exists() {
                run(&["mdadm", "--stop", array])?;
            }
            let mut argv = vec!["mdadm", "--zero-superblock"];
            argv.extend(members.iter().map(String::as_str));
            // Fails when a member carries no superblock (mdadm died before writing it).
            let _ = run(&argv);
            Ok(())
        }
        Undo::Wipe { devices } => {
            let mut argv = vec!["wipefs", "-a", "-q"];
            argv.extend(devices.iter().map(String::as_str));
            run(&argv)
        }
        Undo::RestoreCache { device, was } => {
            cache::restore(device, &devices::kernel_name(device)?, *was).map(drop)
        }
        Undo::CancelReplace { dir } => {
            // `cancel` fails when no replace runs (it ended, or never started): nothing to
            // stop. The `btrfs replace start -B` that waited on it returns by itself.
            if devices::is_mountpoint(dir) {
                let _ = run(&["btrfs", "replace", "cancel", dir]);
            }
            Ok(())
        }
    }
}

/// Undo everything a results directory's journal leaves open, newest first. Returns
/// what was done, one line each.
pub fn cleanup(out: &Path) -> Result<Vec<String>, String> {
    if !out.is_dir() {
        return Err(format!(
            "{}: no such results directory (see `raidlab cleanup` without arguments for the registered ones)",
            out.display()
        ));
    }
    // A live run holds this lock: its journal is its own business, not a leftover.
    let _live = crate::lock::directory(out)?;
    cleanup_locked(out, &[])
}

/// [`cleanup`] by the process that holds the results directory's lock already, and the
/// locks of the devices `ours` (the others are locked here before they are touched).
pub fn cleanup_locked(out: &Path, ours: &[String]) -> Result<Vec<String>, String> {
    let p = pending(out)?;
    if p.is_clean() {
        // Nothing to undo: write nothing, and forget a stale registration.
        let _ = std::fs::remove_file(registry_entry(out));
        return Ok(Vec::new());
    }
    let mut done = Vec::new();
    let mut log = |s: String| done.push(s);
    for (pid, start) in &p.processes {
        stop_process(*pid, *start, &mut log);
    }
    let mut j = Journal::open(out)?;
    for (pid, _) in &p.processes {
        j.ended(*pid)?;
    }
    let mut errors: Vec<String> = p
        .forged
        .iter()
        .map(|f| format!("{f}; check by hand, then remove the line"))
        .collect();
    for (u, devs) in p.open.iter().rev() {
        if let Err(e) = within(out, u) {
            errors.push(e);
            continue;
        }
        if let Err(e) = same_devices(devs) {
            errors.push(e);
            continue;
        }
        // A disk another live run holds is that run's: leave it alone.
        let paths: Vec<String> = devs.iter().map(|d| d.path.clone()).collect();
        let mine: Vec<(u32, u32)> = ours
            .iter()
            .filter_map(|p| devices::device_number(p).ok())
            .collect();
        let present: Vec<String> = paths
            .into_iter()
            .filter(|p| devices::device_number(p).is_ok_and(|n| !mine.contains(&n)))
            .collect();
        let _held = match crate::lock::devices(&present) {
            Ok(h) => h,
            Err(e) => {
                errors.push(format!("{}: not undone: {e}", describe(u)));
                continue;
            }
        };
        match undo(u) {
            Ok(()) => {
                j.close_entry(u)?;
                log(describe(u));
            }
            Err(e) => errors.push(e),
        }
    }
    j.deregister_if_clean();
    if errors.is_empty() {
        Ok(done)
    } else {
        Err(format!(
            "cleanup of {} left work undone:\n  {}",
            out.display(),
            errors.join("\n  ")
        ))
    }
}

/// A past-tense line for what an undo did.
pub fn describe(u: &Undo) -> String {
    match u {
        Undo::Unmount { dir } => format!("unmounted {dir}"),
        Undo::StopArray { array, members } => {
            format!(
                "stopped {array}, zeroed superblocks on {}",
                members.join(" ")
            )
        }
        Undo::Wipe { devices } => format!("erased signatures on {}", devices.join(" ")),
        Undo::RestoreCache { device, was } => format!(
            "write cache of {device} back {}",
            if *was { "on" } else { "off" }
        ),
        Undo::CancelReplace { dir } => format!("stopped any btrfs replace in {dir}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_closes_the_newest_equal_entry_and_tracks_processes() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("RAIDLAB_STATE_DIR", dir.path().join("state"));
        let mut j = Journal::open(dir.path()).unwrap();
        let m = Undo::Unmount {
            dir: "/mnt/x".into(),
        };
        let w = Undo::Wipe {
            devices: vec!["/dev/a".into()],
        };
        j.open_entry("c1", Phase::Mkfs, &w, vec![]).unwrap();
        j.open_entry("c1", Phase::Mount, &m, vec![]).unwrap();
        j.started(4242).unwrap();
        let p = pending(dir.path()).unwrap();
        assert_eq!(p.open.len(), 2);
        assert_eq!(p.processes.len(), 1);
        j.ended(4242).unwrap();
        j.close_entry(&m).unwrap();
        let p = pending(dir.path()).unwrap();
        assert_eq!(p.open, vec![(w.clone(), vec![])]);
        assert!(p.processes.is_empty());
        assert_eq!(registered().len(), 1);
        j.close_entry(&w).unwrap();
        // A torn last line (a crash mid-write) is skipped, not fatal.
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(FILE))
            .unwrap()
            .write_all(b"{\"op\":\"open\",\"at\"")
            .unwrap();
        assert!(pending(dir.path()).unwrap().is_clean());
        j.deregister_if_clean();
        assert!(registered().is_empty());
    }

    #[test]
    fn start_time_of_this_process_is_read() {
        let me = std::process::id();
        assert!(start_time(me).is_some());
        assert_eq!(start_time(me), start_time(me));
    }
}
