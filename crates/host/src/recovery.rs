//! A rebuilding case's recovery on the real kernel (`state = "rebuilding"`), sampled
//! every second while fio runs, so the result carries the recovery's speed, its end when
//! it ended, and the time series.
//!
//! - md: the fresh members go back into the degraded array once fio runs (`mdadm
//!   --add`); progress is `/proc/mdstat`'s `recovery = P% (DONE/TOTAL)` (member KiB: md's
//!   own `sync_completed` moves only at checkpoints minutes apart).
//! - btrfs: `btrfs replace start -B` puts a fresh device in each missing one's place, one
//!   after the other; progress is what the block layer counts written to the fresh device
//!   (`/sys/block/NAME/stat`: btrfs's own status is a percentage of the chunks, not bytes),
//!   and the end is the moment the replace command returns.

use crate::{devices, md_sysfs};
use raidlab_backend::script::{BtrfsReplace, MD};
use raidlab_core::{CommandRun, RebuildFigures};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Instant;

/// What brings the lost members back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// `mdadm --add` of these members.
    Md(Vec<String>),
    /// `mdadm --re-add` of these members (they left; md's bitmap knows what they missed).
    MdReAdd(Vec<String>),
    /// `btrfs replace` of each missing device, in the file system mounted at `mnt`.
    Btrfs {
        replaces: Vec<BtrfsReplace>,
        mnt: String,
    },
}

/// One `btrfs replace start -B` under way: its command line, when it started, the fresh
/// device's written sectors then, and where its exit (and the moment of it) arrives.
struct Replacing {
    argv: Vec<String>,
    t0: Instant,
    device: String,
    sectors_before: u64,
    done: Receiver<(Instant, std::io::Result<Output>)>,
}

/// The recovery under way during one fio run.
pub struct Recovery {
    how: How,
    /// When fio started: times are seconds from it, as the simulator's are from the run's
    /// start.
    started: Instant,
    added: bool,
    /// (seconds since fio started, member bytes recovered): for md, where its recovery
    /// stands on the member (a re-add walks past the chunks its bitmap has clean).
    pub samples: Vec<(f64, u64)>,
    /// A re-add: (seconds since fio started, bytes written to the re-added members since
    /// they came back), what md copied to them (and the workload wrote there): the
    /// speed of a re-add is this, not its walk.
    pub copied: Vec<(f64, u64)>,
    /// The re-added members' written bytes before they came back.
    written_before: u64,
    /// When the array was whole again.
    finished: Option<f64>,
    /// Member bytes to recover, from the last reading.
    total: Option<u64>,
    /// btrfs: the replace running, the next one to start, bytes of those that ended.
    replacing: Option<Replacing>,
    next: usize,
    bytes_before: u64,
    /// The commands as run, and why one failed if one did.
    pub commands: Vec<CommandRun>,
    pub error: Option<String>,
}

impl Recovery {
    pub fn new(how: How, started: Instant) -> Recovery {
        Recovery {
            how,
            started,
            added: false,
            samples: Vec::new(),
            copied: Vec::new(),
            written_before: 0,
            finished: None,
            total: None,
            replacing: None,
            next: 0,
            bytes_before: 0,
            commands: Vec::new(),
            error: None,
        }
    }

    /// Whether the members were brought back already (the first tick).
    pub fn begun(&self) -> bool {
        self.added
    }

    fn since(&self, at: Instant) -> f64 {
        at.saturating_duration_since(self.started).as_secs_f64()
    }

    /// Once a second while fio runs: bring the members back at the first call, then
    /// sample.
    pub fn tick(&mut self) {
        let t = self.since(Instant::now());
        if !self.added {
            self.added = true;
            // Every recovery starts at the member's start: one that ends before the next
            // look (a re-add whose bitmap flagged little) still has a start and an end.
            self.samples.push((t, 0));
            match self.how.clone() {
                How::Md(members) => self.md_add(&members, "--add"),
                How::MdReAdd(members) => {
                    self.written_before = written_bytes(&members);
                    self.copied.push((t, 0));
                    self.md_add(&members, "--re-add")
                }
                How::Btrfs { .. } => self.start_replace(),
            }
            return;
        }
        if self.finished.is_some() || self.error.is_some() {
            return;
        }
        match &self.how {
            How::Md(_) | How::MdReAdd(_) => {
                if let How::MdReAdd(members) = &self.how {
                    let bytes = written_bytes(members).saturating_sub(self.written_before);
                    self.copied.push((t, bytes));
                }
                let mdstat = std::fs::read_to_string("/proc/mdstat").unwrap_or_default();
                match progress(&mdstat) {
                    Some((done, total)) => {
                        self.samples.push((t, done * 1024));
                        self.total = Some(total * 1024);
                    }
                    None if md_sysfs("degraded").as_deref() == Some("0") => {
                        self.finished = Some(t);
                        // md walked the whole member (a re-add past its clean chunks).
                        if self.total.is_none() {
                            self.total = md_sysfs("component_size")
                                .and_then(|k| k.parse::<u64>().ok())
                                .map(|k| k * 1024);
                        }
                    }
                    None => {}
                }
            }
            How::Btrfs { .. } => self.btrfs_tick(t),
        }
    }

    fn md_add(&mut self, members: &[String], how: &str) {
        let mut argv = vec!["mdadm".to_string(), MD.into(), how.into()];
        argv.extend(members.iter().cloned());
        let t0 = Instant::now();
        let out = Command::new(&argv[0]).args(&argv[1..]).output();
        self.ran(&argv, t0);
        self.check(&argv, out);
    }

    /// Record a command that ran from `t0` until now.
    fn ran(&mut self, argv: &[String], t0: Instant) {
        self.ran_between(argv, t0, Instant::now());
    }

    fn check(&mut self, argv: &[String], out: std::io::Result<Output>) {
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                self.error = Some(format!(
                    "`{}` failed ({}): {}",
                    argv.join(" "),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                ))
            }
            Err(e) => self.error = Some(format!("`{}`: {e}", argv.join(" "))),
        }
    }

    /// Start the next `btrfs replace` (waited for on a thread of its own, so its end is
    /// timed to the moment, not to the next tick).
    fn start_replace(&mut self) {
        let How::Btrfs { replaces, mnt } = &self.how else {
            return;
        };
        let Some(r) = replaces.get(self.next) else {
            return;
        };
        self.next += 1;
        let argv: Vec<String> = [
            "btrfs",
            "replace",
            "start",
            "-B",
            "-f",
            &r.devid.to_string(),
            &r.device,
            mnt,
        ]
        .map(String::from)
        .to_vec();
        let sectors_before = sectors_written(&r.device).unwrap_or(0);
        let t0 = Instant::now();
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let child = match child {
            Ok(c) => c,
            Err(e) => {
                self.error = Some(format!("`{}`: {e}", argv.join(" ")));
                return;
            }
        };
        let (tx, done) = channel();
        std::thread::spawn(move || {
            let out = child.wait_with_output();
            let _ = tx.send((Instant::now(), out));
        });
        self.replacing = Some(Replacing {
            argv,
            t0,
            device: r.device.clone(),
            sectors_before,
            done,
        });
    }

    /// Bytes written to the fresh devices so far.
    fn btrfs_bytes(&self) -> u64 {
        self.bytes_before
            + self.replacing.as_ref().map_or(0, |r| {
                sectors_written(&r.device)
                    .unwrap_or(r.sectors_before)
                    .saturating_sub(r.sectors_before)
                    * 512
            })
    }

    fn btrfs_tick(&mut self, t: f64) {
        let ended = self.replacing.as_ref().and_then(|r| r.done.try_recv().ok());
        let bytes = self.btrfs_bytes();
        match ended {
            None => self.samples.push((t, bytes)),
            Some((at, out)) => {
                let r = self.replacing.take().expect("a replace ran");
                self.ran_between(&r.argv, r.t0, at);
                self.check(&r.argv, out);
                self.bytes_before = bytes;
                let at = self.since(at);
                self.samples.push((at, bytes));
                if self.error.is_none() {
                    self.start_replace();
                    if self.replacing.is_none() {
                        self.finished = Some(at);
                        self.total = Some(bytes);
                    }
                }
            }
        }
    }

    fn ran_between(&mut self, argv: &[String], t0: Instant, t1: Instant) {
        self.commands.push(CommandRun {
            phase: "fio".into(),
            command: argv.join(" "),
            seconds: (t1.saturating_duration_since(t0).as_secs_f64() * 1000.0).round() / 1000.0,
        });
    }

    /// Once fio has ended: a btrfs replace still under way is cancelled (the teardown
    /// unmounts next) and waited for; what it recovered until then stays in the samples.
    pub fn finish(&mut self) {
        if self.replacing.is_none() {
            return;
        }
        let t = self.since(Instant::now());
        self.btrfs_tick(t);
        let (Some(r), How::Btrfs { mnt, .. }) = (self.replacing.take(), &self.how) else {
            return;
        };
        let cancel: Vec<String> = ["btrfs", "replace", "cancel", mnt]
            .map(String::from)
            .to_vec();
        let t0 = Instant::now();
        let out = Command::new(&cancel[0]).args(&cancel[1..]).output();
        self.ran(&cancel, t0);
        self.check(&cancel, out);
        // The replace returns once cancelled; its exit status says so, not a failure.
        if let Ok((at, _)) = r.done.recv() {
            self.ran_between(&r.argv, r.t0, at);
        }
    }

    /// The recovery's figures once fio has ended: its speed per member over the samples,
    /// and when it ended if it did. `None` without two samples.
    pub fn figures(&self) -> Option<RebuildFigures> {
        let first = self.samples.first()?;
        let (t, bytes) = match self.finished {
            // Ended between the last sample and the next: count the member to its end.
            Some(t) => (t, self.total.unwrap_or(self.samples.last()?.1)),
            None => *self.samples.last()?,
        };
        let speed = (bytes - first.1) as f64 / (t - first.0);
        // A re-add: what was copied, over the same span (to the end when it ended).
        let copied = match (self.copied.first(), self.copied.last()) {
            (Some(a), Some(b)) if b.0 > a.0 => Some((b.1 - a.1) as f64 / (t.min(b.0) - a.0)),
            _ => None,
        };
        let series = if copied.is_some() {
            &self.copied
        } else {
            &self.samples
        };
        (t > first.0).then(|| RebuildFigures {
            mib_s: copied.unwrap_or(speed) / 1_048_576.0,
            seconds: self.finished,
            // The whole member: as measured when it ended within the run, else md's size
            // of it at the measured speed (btrfs's size is known only once it ended).
            seconds_full: self.finished.or_else(|| {
                self.total
                    .filter(|_| speed > 0.0)
                    .map(|total| total as f64 / speed)
            }),
            seconds_idle: None,
            mib_s_per_second: series
                .windows(2)
                .filter(|w| w[1].0 > w[0].0)
                .map(|w| (w[1].1 - w[0].1) as f64 / (w[1].0 - w[0].0) / 1_048_576.0)
                .collect(),
        })
    }
}

/// Bytes written to these members (paths such as `/dev/vdb`) since they appeared.
fn written_bytes(members: &[String]) -> u64 {
    members
        .iter()
        .filter_map(|m| sectors_written(m))
        .sum::<u64>()
        * 512
}

/// Sectors written to a block device since it appeared (field 7 of its `stat`).
fn sectors_written(device: &str) -> Option<u64> {
    devices::io_counters(device)?.get(6).copied()
}

/// A recovery's or resync's "(DONE/TOTAL)" in `/proc/mdstat` (KiB of a member); `None`
/// when none runs.
fn progress(mdstat: &str) -> Option<(u64, u64)> {
    let at = mdstat
        .find("recovery =")
        .or_else(|| mdstat.find("resync ="))?;
    let inner = mdstat[at..].split('(').nth(1)?.split(')').next()?;
    let (done, total) = inner.split_once('/')?;
    Some((done.trim().parse().ok()?, total.trim().parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_and_speed_from_mdstat() {
        // As the VM lab's kernel (6.1) shows a raid1 recovering under fio.
        let mdstat = "Personalities : [raid1]\nmd127 : active raid1 vdb[2] vda[0]\n      1046528 blocks super 1.2 [2/1] [U_]\n      [>....................]  recovery =  2.9% (31296/1046528) finish=7.5min speed=2235K/sec\n      \nunused devices: <none>\n";
        assert_eq!(progress(mdstat), Some((31296, 1046528)));
        assert_eq!(
            progress("md127 : active raid1 vdb[2] vda[0]\n [2/2] [UU]\n"),
            None
        );
        let mut r = Recovery::new(How::Md(vec![]), Instant::now());
        assert!(r.figures().is_none(), "no samples");
        r.samples = vec![(2.0, 0), (4.0, 20 << 20)];
        let f = r.figures().unwrap();
        assert_eq!((f.mib_s, f.seconds, f.seconds_full), (10.0, None, None));
        assert_eq!(f.mib_s_per_second, [10.0]);
        // Under way, a 100 MiB member at 10 MiB/s: 10 s for the whole of it.
        r.total = Some(100 << 20);
        assert_eq!(r.figures().unwrap().seconds_full, Some(10.0));
        // Ended at 5 s: the last second counts to the member's end.
        r.total = Some(40 << 20);
        r.finished = Some(6.0);
        let f = r.figures().unwrap();
        assert_eq!(
            (f.mib_s, f.seconds, f.seconds_full),
            (10.0, Some(6.0), Some(6.0))
        );
        // A re-add that ended before the first look: from the add (1 s) to the end (2 s),
        // md's walk over the whole 1 GiB member; without what was copied, the walk's speed.
        let mut r = Recovery::new(How::MdReAdd(vec![]), Instant::now());
        r.samples = vec![(1.0, 0)];
        r.finished = Some(2.0);
        r.total = Some(1 << 30);
        let f = r.figures().unwrap();
        assert_eq!(
            (f.mib_s, f.seconds, f.seconds_full),
            (1024.0, Some(2.0), Some(2.0))
        );
        // With the members' written bytes (64 MiB by 2 s, looked at 3 s): the copy's speed.
        r.copied = vec![(1.0, 0), (3.0, 64 << 20)];
        let f = r.figures().unwrap();
        assert_eq!(
            (f.mib_s, f.seconds, f.seconds_full),
            (64.0, Some(2.0), Some(2.0))
        );
        assert_eq!(f.mib_s_per_second, [32.0]);
    }
}
