//! A rebuilding case's recovery on the real kernel (`state = "rebuilding"`): the fresh
//! members go back into the degraded array once fio runs (`mdadm --add`), and md's
//! progress (`/proc/mdstat`'s `recovery = P% (DONE/TOTAL)`, member KiB: md's own
//! `sync_completed` moves only at checkpoints minutes apart) is sampled every second while
//! fio runs, so the result carries the recovery's speed, its end when it ended, and the
//! time series.

use crate::md_sysfs;
use raidlab_backend::script::MD;
use raidlab_core::{CommandRun, RebuildFigures};
use std::time::Instant;

/// The recovery under way during one fio run.
pub struct Recovery {
    members: Vec<String>,
    /// When fio started: times are seconds from it, as the simulator's are from the run's
    /// start.
    started: Instant,
    added: bool,
    /// (seconds since fio started, member bytes recovered).
    pub samples: Vec<(f64, u64)>,
    /// When md reported the array whole again.
    finished: Option<f64>,
    /// Member bytes to recover, from the last reading.
    total: Option<u64>,
    /// The `mdadm --add` as run, and why it failed if it did.
    pub command: Option<CommandRun>,
    pub error: Option<String>,
}

impl Recovery {
    pub fn new(members: Vec<String>, started: Instant) -> Recovery {
        Recovery {
            members,
            started,
            added: false,
            samples: Vec::new(),
            finished: None,
            total: None,
            command: None,
            error: None,
        }
    }

    /// Once a second while fio runs: add the members at the first call, then sample.
    pub fn tick(&mut self) {
        let t = self.started.elapsed().as_secs_f64();
        if !self.added {
            self.added = true;
            self.add();
            return;
        }
        if self.finished.is_some() || self.error.is_some() {
            return;
        }
        let mdstat = std::fs::read_to_string("/proc/mdstat").unwrap_or_default();
        match progress(&mdstat) {
            Some((done, total)) => {
                self.samples.push((t, done * 1024));
                self.total = Some(total * 1024);
            }
            None if md_sysfs("degraded").as_deref() == Some("0") => self.finished = Some(t),
            None => {}
        }
    }

    fn add(&mut self) {
        let mut argv = vec!["mdadm".to_string(), MD.into(), "--add".into()];
        argv.extend(self.members.iter().cloned());
        let t0 = Instant::now();
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .output();
        self.command = Some(CommandRun {
            phase: "fio".into(),
            command: argv.join(" "),
            seconds: (t0.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        });
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

    /// The recovery's figures once fio has ended: its speed per member over the samples,
    /// and when it ended if it did. `None` without two samples.
    pub fn figures(&self) -> Option<RebuildFigures> {
        let first = self.samples.first()?;
        let (t, bytes) = match self.finished {
            // Ended between the last sample and the next: count the member to its end.
            Some(t) => (t, self.total.unwrap_or(self.samples.last()?.1)),
            None => *self.samples.last()?,
        };
        (t > first.0).then(|| RebuildFigures {
            mib_s: (bytes - first.1) as f64 / (t - first.0) / 1_048_576.0,
            seconds: self.finished,
            seconds_full: None,
            seconds_idle: None,
            mib_s_per_second: self
                .samples
                .windows(2)
                .map(|w| (w[1].1 - w[0].1) as f64 / (w[1].0 - w[0].0) / 1_048_576.0)
                .collect(),
        })
    }
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
        let mut r = Recovery::new(vec![], Instant::now());
        assert!(r.figures().is_none(), "no samples");
        r.samples = vec![(2.0, 0), (4.0, 20 << 20)];
        let f = r.figures().unwrap();
        assert_eq!((f.mib_s, f.seconds), (10.0, None));
        assert_eq!(f.mib_s_per_second, [10.0]);
        // Ended at 5 s: the last second counts to the member's end.
        r.total = Some(40 << 20);
        r.finished = Some(6.0);
        let f = r.figures().unwrap();
        assert_eq!((f.mib_s, f.seconds), (10.0, Some(6.0)));
    }
}
