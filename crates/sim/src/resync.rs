//! md's initial resync running under the workload (`resync = "during"`).
//!
//! `md_do_sync` walks the members from the start and, every 128 KiB of requests issued (its
//! check window), measures its speed over the last marks (one every 3 s, ten kept). Above
//! `speed_limit_max` it sleeps 500 ms. Above `speed_limit_min` with other I/O reaching the
//! members, it waits until its own requests have completed and goes on (Linux 4.1, commit
//! ac8fa4196d20 "md: allow resync to go faster when there is competing IO"; before that it
//! slept 500 ms and so crawled at `speed_limit_min`). Under a benchmark the resync
//! therefore runs one window at a time, continuously, and every window costs the members
//! seeks away from the workload and back.
//!
//! What one step reads and writes follows how mdadm builds each level: raid5 is created
//! degraded and *recovers* its last member (read the others, write that one); raid6 resyncs
//! (read every member, write P and Q); raid1 and raid10 read the first copy and write the
//! others. Until the recovery passes a block, raid5 reads its missing member's blocks back
//! from the others (the engine's `dispatch`). Not modelled: md's pipelining of windows on
//! an idle array (one step is in flight at a time), raid1/10 barriers that make host I/O
//! wait for the region being synced (the VM lab's kernel shows no such stall), and raid5/6's
//! degraded or forced-rcw writes beyond the resync point.

use raidlab_core::Nanos;
use std::collections::VecDeque;

/// Resync progress between speed checks (`md_do_sync`'s window: 32 pages).
pub const STEP: u64 = 128 << 10;
/// `speed_limit_min` / `speed_limit_max` defaults, KiB/s.
pub const SPEED_MIN: u64 = 1_000;
pub const SPEED_MAX: u64 = 200_000;
/// How long md sleeps when resync is over `speed_limit_max`.
pub const BACKOFF: Nanos = Nanos(500_000_000);
const MARK_EVERY: Nanos = Nanos(3_000_000_000);
const MARKS: usize = 10;

/// Where the resync is and how fast it has gone.
#[derive(Debug)]
pub struct Resync {
    /// Member bytes synced.
    pub done: u64,
    /// Member bytes to sync.
    pub size: u64,
    /// (time, bytes done) every `MARK_EVERY`; speed is measured from the oldest.
    marks: VecDeque<(Nanos, u64)>,
}

impl Resync {
    pub fn new(size: u64) -> Resync {
        Resync {
            done: 0,
            size,
            marks: VecDeque::from([(Nanos(0), 0)]),
        }
    }

    pub fn finished(&self) -> bool {
        self.done >= self.size
    }

    /// The next step's member range.
    pub fn next_range(&self) -> (u64, u64) {
        (self.done, STEP.min(self.size - self.done))
    }

    /// Speed over the marks, KiB/s, as md computes it (whole seconds, plus one).
    fn speed(&self, now: Nanos) -> u64 {
        let (t, bytes) = *self.marks.front().expect("a mark");
        ((self.done - bytes) / 1024) / ((now - t).0 / 1_000_000_000 + 1)
    }

    /// Whether md sleeps before the next step: only above `speed_limit_max`. (Busy and
    /// above `speed_limit_min`, md waits for its in-flight requests; with one step in
    /// flight at a time they have completed when this is asked.)
    pub fn should_wait(&mut self, now: Nanos) -> bool {
        if now - self.marks.back().expect("a mark").0 >= MARK_EVERY {
            self.marks.push_back((now, self.done));
            if self.marks.len() > MARKS {
                self.marks.pop_front();
            }
        }
        self.speed(now) > SPEED_MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleeps_only_above_speed_limit_max() {
        let mut r = Resync::new(1 << 40);
        r.done = 5 << 20; // 5 MB in the first second: above min, below max
        assert!(!r.should_wait(Nanos(1_000_000_000)));
        r.done = 500 << 20; // 500 MB in under two seconds: above max
        assert!(r.should_wait(Nanos(1_100_000_000)));
    }
}
