//! md's initial resync running under the workload (`resync = "during"`).
//!
//! `md_do_sync` walks the members from the start; every 128 KiB of progress (its check
//! window) it measures its speed over the last marks (one every 3 s, ten kept) and, when
//! that speed is above `speed_limit_min` and either above `speed_limit_max` or the array is
//! not idle (other I/O reached the members), sleeps 500 ms. So with a benchmark running,
//! the resync crawls at about `speed_limit_min` (1000 KiB/s), and its reads and writes
//! still cost the disks seeks away from the workload.
//!
//! What one step reads and writes follows how mdadm builds each level: raid5 is created
//! degraded and *recovers* its last member (read the others, write that one); raid6 resyncs
//! (read every member, write P and Q); raid1 and raid10 read the first copy and write the
//! others. Not modelled: md's many parallel sync requests (one step is in flight at a time),
//! raid1/10 barriers that make host I/O wait for the region being synced, and raid5/6's
//! degraded or forced-rcw writes beyond the resync point.

use raidlab_core::Nanos;
use std::collections::VecDeque;

/// Resync progress between speed checks (`md_do_sync`'s window: 32 pages).
pub const STEP: u64 = 128 << 10;
/// `speed_limit_min` / `speed_limit_max` defaults, KiB/s.
pub const SPEED_MIN: u64 = 1_000;
pub const SPEED_MAX: u64 = 200_000;
/// How long md sleeps when resync is over its limit.
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
    /// Host I/Os issued when last checked (md's `is_mddev_idle`).
    host_ios_seen: u64,
}

impl Resync {
    pub fn new(size: u64) -> Resync {
        Resync {
            done: 0,
            size,
            marks: VecDeque::from([(Nanos(0), 0)]),
            host_ios_seen: 0,
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

    /// Whether md would sleep before the next step, given the host I/Os issued so far.
    pub fn should_wait(&mut self, now: Nanos, host_ios: u64) -> bool {
        if now - self.marks.back().expect("a mark").0 >= MARK_EVERY {
            self.marks.push_back((now, self.done));
            if self.marks.len() > MARKS {
                self.marks.pop_front();
            }
        }
        let idle = host_ios == self.host_ios_seen;
        self.host_ios_seen = host_ios;
        let speed = self.speed(now);
        speed > SPEED_MIN && (speed > SPEED_MAX || !idle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_off_above_min_only_when_the_array_is_busy() {
        let mut r = Resync::new(1 << 40);
        // 5 MB done in the first second: above min.
        r.done = 5 << 20;
        assert!(r.should_wait(Nanos(1_000_000_000), 10), "busy: sleep");
        assert!(!r.should_wait(Nanos(1_100_000_000), 10), "idle: go on");
        r.done = 1 << 20;
        assert!(
            !r.should_wait(Nanos(1_200_000_000), 20),
            "below min: go on even when busy"
        );
    }
}
