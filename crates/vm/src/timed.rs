//! A boot's timed members: with a disk model other than a throttle, each member disk is served by
//! `raidlab-timed` (the simulator's disk model in real time, a vhost-user block device on
//! a unix socket)
//! instead of a plain file, so the guest's md meets disks that seek and rotate. While the
//! guest runs, its console is followed: between a case's `phase fio` line and the lab's
//! next line (another phase, or the case's end), each member's counters are marked, so every case gets what its members did
//! during its fio and how late their answers were.

use raidlab_core::disk::DiskModel;
use raidlab_core::Scheduler;
use raidlab_timed::{Mark, MemberStats, Spec, TimedMember, Transport};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The members of one boot, served while qemu runs.
pub struct Members {
    members: Arc<Vec<TimedMember>>,
    sockets: Vec<PathBuf>,
    /// Sockets live in a short directory of their own: a unix socket's path has at most
    /// 107 bytes, and a results directory may be deep.
    _dir: tempfile::TempDir,
}

/// Each case's member figures during its fio, in the order the guest ran the cases.
pub type PerCase = Vec<Option<Vec<MemberStats>>>;

/// Follows the console while the guest runs ([`Members::watch`]).
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<PerCase>,
}

impl Members {
    /// Start `n` members of `size` bytes each on `model`, their data in `dir/dI.img`.
    pub fn start(
        dir: &Path,
        n: usize,
        size: u64,
        model: &DiskModel,
        write_cache: bool,
        seed: u64,
    ) -> Result<Members, String> {
        let sockdir = tempfile::Builder::new()
            .prefix("raidlab-members-")
            .tempdir()
            .map_err(|e| format!("cannot create a directory for the members' sockets: {e}"))?;
        let mut members = Vec::with_capacity(n);
        let mut sockets = Vec::with_capacity(n);
        for i in 0..n {
            let socket = sockdir.path().join(format!("d{i}.sock"));
            let m = TimedMember::start(&Spec {
                socket: socket.clone(),
                file: dir.join(format!("d{i}.img")),
                size,
                model: model.clone(),
                write_cache,
                // The guest's own scheduler orders what waits above the member.
                scheduler: Scheduler::None,
                seed: seed.wrapping_mul(1000).wrapping_add(i as u64),
                transport: Transport::VhostUser {
                    serial: format!("d{i}"),
                },
            })
            .map_err(|e| e.to_string())?;
            members.push(m);
            sockets.push(socket);
        }
        Ok(Members {
            members: Arc::new(members),
            sockets,
            _dir: sockdir,
        })
    }

    /// qemu's arguments for the members: vhost-user block devices with serials `d0`…,
    /// whose queues this process serves from the guest's memory (so the guest's memory is
    /// a shared memfd of `memory_mib`, the size of `-m`). Their write cache is the guest's
    /// to turn on and off (the host target does, per case, through sysfs), and they take
    /// the guest's discards (the lab blanks the members between cases; the file is
    /// punched).
    pub fn qemu_args(&self, memory_mib: u32) -> Vec<String> {
        let mut args = vec![
            "-object".into(),
            format!("memory-backend-memfd,id=mem,size={memory_mib}M,share=on"),
            "-machine".into(),
            "memory-backend=mem".into(),
        ];
        for (i, s) in self.sockets.iter().enumerate() {
            args.push("-chardev".into());
            args.push(format!("socket,id=c{i},path={}", s.display()));
            args.push("-device".into());
            args.push(format!(
                "vhost-user-blk-pci,chardev=c{i},num-queues={},queue-size={}",
                raidlab_timed::vhost_blk::QUEUES,
                raidlab_timed::vhost_blk::QUEUE_SIZE
            ));
        }
        args
    }

    /// Follow `console` (the guest's serial log, as qemu writes it) until [`Members::finish`].
    pub fn watch(&self, console: &Path) -> Watcher {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, members, console) = (stop.clone(), self.members.clone(), console.to_path_buf());
        let thread = std::thread::spawn(move || follow(&console, &members, &s));
        Watcher { stop, thread }
    }

    /// Stop following the console and serving the members (qemu has exited): each case's
    /// figures, and each member's over the whole boot.
    pub fn finish(self, watcher: Watcher) -> (PerCase, Vec<MemberStats>) {
        watcher.stop.store(true, Ordering::SeqCst);
        let per_case = watcher.thread.join().unwrap_or_default();
        let members = Arc::try_unwrap(self.members)
            .unwrap_or_else(|_| unreachable!("the watcher, the only other holder, has ended"));
        let totals = members.into_iter().map(TimedMember::finish).collect();
        (per_case, totals)
    }
}

/// Read the console as it grows; mark the members at each case's fio and at its end.
fn follow(console: &Path, members: &[TimedMember], stop: &AtomicBool) -> PerCase {
    let mut per_case: PerCase = Vec::new();
    let mut at = 0u64;
    let mut partial = String::new();
    let mut marks: Option<Vec<Mark>> = None;
    loop {
        let last = stop.load(Ordering::SeqCst);
        if let Ok(mut f) = std::fs::File::open(console) {
            if f.seek(SeekFrom::Start(at)).is_ok() {
                let mut b = Vec::new();
                if let Ok(n) = f.read_to_end(&mut b) {
                    at += n as u64;
                    partial.push_str(&String::from_utf8_lossy(&b));
                }
            }
        }
        while let Some(nl) = partial.find('\n') {
            let line: String = partial.drain(..=nl).collect();
            let Some(rest) = line.trim().strip_prefix("raidlab-lab: ") else {
                continue;
            };
            if rest == "phase fio" {
                if marks.is_none() {
                    marks = Some(members.iter().map(TimedMember::mark).collect());
                }
                continue;
            }
            // Any other line of the lab's ends the fio: the next phase, or the case's end.
            if let Some(m) = marks.take() {
                let stats = members.iter().zip(&m).map(|(x, m)| x.since(m)).collect();
                if let Some(case) = per_case.last_mut() {
                    *case = Some(stats);
                }
            }
            let ends = rest.ends_with(" ok") || rest.contains(" failed: ");
            if rest.starts_with("case ") && !ends {
                per_case.push(None);
            }
        }
        if last {
            return per_case;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
