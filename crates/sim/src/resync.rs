//! md's background sync running under the workload: the initial resync of a new array
//! (`resync = "during"`) and the recovery of fresh members (`state = "rebuilding"`).
//!
//! `md_do_sync` (`drivers/md/md.c`) walks the members from the start and, after every
//! 128 KiB of requests issued (its check window), measures its speed over the last marks
//! (one every 3 s, ten kept). Above `sync_speed_max` it sleeps 500 ms; below
//! `sync_speed_min` it goes on. Between the two, on an array other I/O also reaches
//! (`is_mddev_idle` false), what it does depends on the kernel ([`Governor`]):
//! - before Linux 4.1 it sleeps 500 ms, so steady foreground load holds it near the
//!   minimum;
//! - from 4.1 (commit ac8fa4196d20 "md: allow resync to go faster when there is
//!   competing IO") to 6.15 it waits until every request it has in flight completed, then
//!   goes on;
//! - from 6.16 (commit 03720d82d730, `sync_io_depth`) it waits so only while more than
//!   `sync_io_depth` units are in flight (a unit is a 4 KiB stripe on raid4/5/6 and
//!   64 KiB elsewhere: `sync_io_within_limit`), so it keeps a deeper queue.
//!
//! Whether the array is busy is `is_mddev_idle`'s answer, and that changed with the same
//! kernels ([`IdleTest`]): from 6.16 any I/O the array itself serves makes it busy; before,
//! md counted sectors per member, so that its own sync I/O in flight hides the workload's
//! and a recovery keeps going most of the time under light load.
//!
//! On an idle array nothing holds it back but md's own buffers: the stripe cache on
//! raid5/6 (`stripe_cache_size` stripe heads of 4 KiB per member) and raid1/10's sync
//! buffers of 64 KiB (`RESYNC_PAGES`), one per window ([`MIRROR_BUFFER`]; md looks at its
//! speed every second one), as many in flight as the resync barrier lets pass: a buffer
//! raises it before it waits for it to be below `RESYNC_DEPTH`, so raid1 has 31 (its depth
//! is 32; the VM lab's raid1 sends 31 after each drain) and raid10 511 (32 MiB of them,
//! "memory permitting": the VM lab's raid10 held up to 391).
//!
//! What one window reads and writes follows how md builds or repairs each level. The
//! initial resync: raid5 is created degraded and *recovers* its last member (read the
//! others, write that one); raid6 resyncs (read every member, write P and Q); raid1 and
//! raid10 read the first copy and write the others. A recovery reads the survivors (raid5/6)
//! or a surviving copy (raid1/10) and writes the fresh members. Until the sync passes a
//! block, a member being recovered is not read there: md rebuilds its blocks from the
//! others (the engine's `dispatch`) and plans writes around it (`md.rs`). md reads a
//! member being recovered only below its `recovery_offset`, which moves at md's
//! checkpoints, not with every window ([`Resync::readable`]).
//!
//! What the sync thread issues without sleeping in between reaches each member as few
//! requests: `md_do_sync` and raid5d hold a block plug, under which contiguous bios merge up
//! to the member's largest request (`max_sectors_kb`, 1280 KiB, or fewer segments than
//! that: on the VM lab's virtio-blk 1,016 KiB of raid5/6's stripe pages and 960 KiB of
//! raid1/10's buffers, `Engine::merge_max`). raid1/10's sync thread sends every buffer it
//! finds free, split at that limit (the VM lab's raid1: 31 buffers as 15 + 15 + 1 or
//! 20 + 11); raid5/6's sends as many stripes as the cache has heads free — after the first
//! fill, what the last writes to the fresh member gave back — so behind a slow fresh member
//! it moves the cache in lumps, read, then written, then read again (the VM lab's raid5 on
//! slow timed members: an idle recovery at half the members' rate).
//!
//! md's resync barrier makes a recovery and the workload take turns (the engine's
//! `Barrier`, applied to recoveries): raid10 has one for the whole array, raid1 one per
//! 64 MiB bucket (since Linux 4.11). Each sync request raises it once no host I/O waits at
//! it (`nr_waiting`), then waits until the host I/O inside md (in its bucket) has completed;
//! host I/O then waits until the sync requests holding it complete — raid10's reads and
//! writes, raid1's writes only. While host I/O waits, the sync thread sleeps a jiffy
//! before it raises the barrier again, and when the barrier drops, fio's thread and the
//! sync thread race (`Engine::lower_barrier`). Not modelled: the same barrier during the initial resync
//! (the VM lab's kernel lost a fifth of the IOPS there, as the model without it predicts;
//! with it, the model lost more than half); the initial resync keeps one window in flight
//! at a time, as the 4.1–6.15 kernels the seeds ran on did under load.

use raidlab_core::{Governor, Nanos};
use std::collections::VecDeque;

/// Sync progress between speed checks (`md_do_sync`'s window: 32 pages).
pub const STEP: u64 = 128 << 10;
/// raid1/10's sync buffer (`RESYNC_BLOCK_SIZE`, 16 pages): one `r1bio`/`r10bio` a window.
pub const MIRROR_BUFFER: u64 = 64 << 10;
/// `speed_limit_min` / `speed_limit_max` defaults, KiB/s.
pub const SPEED_MIN: u32 = 1_000;
pub const SPEED_MAX: u32 = 200_000;
/// How long md sleeps when the sync is over `sync_speed_max` (or, before 4.1, busy).
pub const BACKOFF: Nanos = Nanos(500_000_000);
const MARK_EVERY: Nanos = Nanos(3_000_000_000);
const MARKS: usize = 10;

/// What md does after a window: go on, wait for its requests in flight, or sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Go,
    Drain,
    Sleep,
}

/// How a sync is paced: md's governor and knobs, and how many windows md's buffers let
/// it have in flight.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// md's governor; `None`: nothing paces the sync (btrfs replace).
    pub governor: Option<Governor>,
    /// `sync_speed_min` / `sync_speed_max`, KiB/s.
    pub min: u32,
    pub max: u32,
    /// Bytes in flight above which a busy 6.16 array waits (`sync_io_depth` × unit).
    pub depth_bytes: u64,
    /// Windows md's buffers allow in flight at once.
    pub windows: u32,
    /// Bytes of the member per window: md's check window ([`STEP`]), raid1/10's sync
    /// buffer ([`MIRROR_BUFFER`]: md looks every second one), or btrfs replace's read.
    pub unit: u64,
}

impl Pace {
    /// The initial resync as the engine has always modelled it: one window at a time,
    /// the 4.1–6.15 governor, md's default limits.
    pub fn initial() -> Pace {
        Pace {
            governor: Some(Governor::Drain),
            min: SPEED_MIN,
            max: SPEED_MAX,
            depth_bytes: STEP,
            windows: 1,
            unit: STEP,
        }
    }
}

/// `is_mddev_idle` as kernels before 6.16 wrote it (`drivers/md/md.c`): per member, the
/// sectors it completed (`part_stat` sectors, the sync's included) less the sync sectors md
/// submitted to it (`md_sync_acct`, counted at submission). That is the workload's sectors
/// completed less the sync's sectors in flight. The array is busy when, on some member,
/// it grew by more than 64 sectors since that member last made it busy; only then does
/// the member's mark move. So a sync that has more in flight than when it last looked
/// hides that much of the workload, and the array reads busy only "once in a while" (Yu
/// Kuai, "md: fix is_mddev_idle()", linux-raid, May 2025, whose fix — busy whenever the
/// array completed or holds any I/O of its own — the simulator takes with `sync_io_depth`
/// as its 6.16 regime).
#[derive(Debug, Clone, Default)]
pub struct IdleTest {
    /// Per member: workload sectors completed less sync sectors in flight.
    events: Vec<i64>,
    /// Per member: `events` when it last made the array busy (or the sync started).
    last: Vec<i64>,
}

/// Sectors of other I/O a member may complete between two looks and still be idle.
const IDLE_SECTORS: i64 = 64;

impl IdleTest {
    pub fn new(members: usize) -> IdleTest {
        IdleTest {
            events: vec![0; members],
            last: vec![0; members],
        }
    }

    /// The workload's command of `bytes` completed on `member`.
    #[inline]
    pub fn other_done(&mut self, member: u32, bytes: u64) {
        self.events[member as usize] += (bytes >> 9) as i64;
    }

    /// md submitted (`true`) or a member completed (`false`) a sync command of `bytes`.
    #[inline]
    pub fn sync(&mut self, member: u32, bytes: u64, submitted: bool) {
        let s = (bytes >> 9) as i64;
        self.events[member as usize] += if submitted { -s } else { s };
    }

    /// Make the next look find every member busy, as in the middle of a recovery under
    /// a workload that has been running all along.
    pub fn prime(&mut self) {
        for (e, l) in self.events.iter().zip(self.last.iter_mut()) {
            *l = e - IDLE_SECTORS - 1;
        }
    }

    /// The look `md_do_sync` takes between `sync_speed_min` and `sync_speed_max`, with
    /// `submitted[member]` sync sectors md has submitted that the simulator has not sent
    /// yet (none where the slice is short).
    pub fn busy(&mut self, submitted: &[i64]) -> bool {
        let mut busy = false;
        for (i, (e, l)) in self.events.iter().zip(self.last.iter_mut()).enumerate() {
            let e = e - submitted.get(i).copied().unwrap_or(0);
            if e - *l > IDLE_SECTORS {
                *l = e;
                busy = true;
            }
        }
        busy
    }
}

/// Where the sync is and how fast it has gone.
#[derive(Debug)]
pub struct Resync {
    /// Member offset the sync started from.
    pub start: u64,
    /// Member offset the sync has completed to (bytes; below it every member is in sync).
    pub done: u64,
    /// Member offset the next window starts at.
    issued: u64,
    /// Member bytes to sync (the sync ends here).
    pub size: u64,
    /// Windows in flight.
    pub in_flight: u32,
    /// Their bytes (a raid5/6 window may carry fewer rows than a whole one:
    /// [`Resync::issue_at_most`]).
    bytes_in_flight: u64,
    /// Waiting for every window in flight to complete, or asleep.
    pub draining: bool,
    pub sleeping: bool,
    /// The governor put the thread to sleep: on waking, md looks again before it issues
    /// anything (`msleep(500); goto repeat;`).
    pub recheck: bool,
    /// When the sync reached the end.
    pub finished_at: Option<Nanos>,
    pace: Pace,
    /// (time, bytes done) every `MARK_EVERY`; speed is measured from the oldest.
    marks: VecDeque<(Nanos, u64)>,
    /// Bytes issued since md last looked at its speed (`io_sectors - last_check`).
    since_look: u64,
    /// Where md last checkpointed (`curr_resync_completed`), and when.
    checkpoint: (u64, Nanos),
    /// Progress between two checkpoints: a sixteenth of the member.
    every: u64,
}

/// md checkpoints a sync at least this often (`UPDATE_FREQUENCY`, five minutes).
const CHECKPOINT_EVERY: Nanos = Nanos(300_000_000_000);

impl Resync {
    /// A sync from member offset `start` (0, or a later point to sample a rebuild there)
    /// to `size`.
    pub fn new(start: u64, size: u64, pace: Pace) -> Resync {
        Resync {
            start,
            done: start,
            issued: start,
            size,
            in_flight: 0,
            bytes_in_flight: 0,
            draining: false,
            sleeping: false,
            recheck: false,
            finished_at: (start >= size).then_some(Nanos(0)),
            pace,
            marks: VecDeque::from([(Nanos(0), start)]),
            since_look: 0,
            checkpoint: (start, Nanos(0)),
            every: (size >> 4).max(1),
        }
    }

    /// Checkpoint every sixteenth of a `member` of this many bytes rather than of the
    /// bytes synced (a re-add syncs a prefix of the member; md's steps are the member's).
    pub fn checkpoints_of(mut self, member: u64) -> Resync {
        self.every = (member >> 4).max(1);
        self
    }

    /// Below which member offset md reads a member being recovered: its
    /// `recovery_offset`, which `md_update_sb` sets to `curr_resync_completed`, which
    /// `md_do_sync` moves only at a checkpoint — once a sixteenth of the member
    /// (`max_sectors >> 4`) has been synced since the last, or five minutes have passed —
    /// and at the end. Between checkpoints the fresh member serves no reads, however far
    /// the sync has gone.
    pub fn readable(&self) -> u64 {
        if self.finished() {
            self.size
        } else {
            self.checkpoint.0
        }
    }

    pub fn pace(&self) -> Pace {
        self.pace
    }

    pub fn finished(&self) -> bool {
        self.done >= self.size
    }

    /// Whether md issues another window now.
    pub fn can_issue(&self) -> bool {
        self.issued < self.size
            && !self.draining
            && !self.sleeping
            && self.in_flight < self.pace.windows
    }

    /// The length of the next window.
    pub fn next_len(&self) -> u64 {
        self.pace.unit.min(self.size - self.issued)
    }

    /// Take the next window: its member range.
    pub fn issue(&mut self) -> (u64, u64) {
        self.issue_at_most(u64::MAX)
    }

    /// Take the next window, or its first `len` bytes where md has buffers for no more of
    /// it (raid5/6: `raid5_sync_request` takes a stripe head a row, so the rows whose
    /// heads are free go now and the rest starts the next window).
    pub fn issue_at_most(&mut self, len: u64) -> (u64, u64) {
        let at = self.issued;
        let len = self.next_len().min(len);
        self.issued += len;
        self.in_flight += 1;
        self.bytes_in_flight += len;
        self.since_look += len;
        (at, len)
    }

    /// Whether md looks at its speed after the window just issued: once a check window
    /// ([`STEP`]) has been issued since the last look (`md_do_sync`: `last_check + window >
    /// io_sectors` goes on), or at the end.
    pub fn look_due(&mut self) -> bool {
        if self.since_look >= STEP || self.issued >= self.size {
            self.since_look = 0;
            return true;
        }
        false
    }

    /// A whole window completed at `now`.
    pub fn complete(&mut self, now: Nanos) {
        self.complete_windows(now, 1, self.pace.unit);
    }

    /// `windows` windows of `bytes` in all completed at `now`; a draining md goes on once
    /// none is in flight.
    pub fn complete_windows(&mut self, now: Nanos, windows: u32, bytes: u64) {
        self.in_flight -= windows;
        self.bytes_in_flight = self.bytes_in_flight.saturating_sub(bytes);
        self.done = (self.done + bytes).min(self.size);
        let (at, when) = self.checkpoint;
        if self.done - at > self.every || now - when >= CHECKPOINT_EVERY {
            self.checkpoint = (self.done, now);
        }
        if self.finished() && self.finished_at.is_none() {
            self.finished_at = Some(now);
        }
        if self.in_flight == 0 {
            self.draining = false;
        }
    }

    /// Speed over the marks, KiB/s, as md computes it (whole seconds, plus one).
    fn speed(&self, now: Nanos) -> u64 {
        let (t, bytes) = *self.marks.front().expect("a mark");
        ((self.done - bytes) / 1024) / ((now - t).0 / 1_000_000_000 + 1)
    }

    /// md's check after a window is issued; `busy` says whether other I/O reaches the
    /// members, asked only where md asks it (between the two limits).
    pub fn check(&mut self, now: Nanos, busy: impl FnOnce() -> bool) -> Next {
        if now - self.marks.back().expect("a mark").0 >= MARK_EVERY {
            self.marks.push_back((now, self.done));
            if self.marks.len() > MARKS {
                self.marks.pop_front();
            }
        }
        let p = self.pace;
        let Some(governor) = p.governor else {
            return Next::Go;
        };
        let speed = self.speed(now);
        if speed <= p.min as u64 {
            return Next::Go;
        }
        if speed > p.max as u64 {
            return Next::Sleep;
        }
        if !busy() {
            return Next::Go;
        }
        match governor {
            Governor::Sleep => Next::Sleep,
            // `wait_event(recovery_wait, !recovery_active)` returns at once when nothing
            // is in flight (after a sleep above `sync_speed_max`, say): md goes on.
            Governor::Drain if self.in_flight == 0 => Next::Go,
            Governor::Drain => Next::Drain,
            Governor::Depth if self.bytes_in_flight >= p.depth_bytes => Next::Drain,
            Governor::Depth => Next::Go,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(governor: Governor) -> Pace {
        Pace {
            governor: Some(governor),
            min: SPEED_MIN,
            max: SPEED_MAX,
            depth_bytes: 2 * STEP,
            windows: 16,
            unit: STEP,
        }
    }

    /// 4.1–6.15 wait for the sync's requests in flight when the array is busy; with none
    /// in flight (the thread has just woken from a sleep above `sync_speed_max`) the wait
    /// returns at once. Before, the sync waited for a completion that never came and
    /// stopped for the rest of the run (`raidlab sim --trace`: raid1 on two
    /// `hdd-7200-16t-2019` with `max_segments = 168`, nothing synced after 0.79 s).
    #[test]
    fn a_drain_with_nothing_in_flight_goes_on() {
        let second = Nanos(1_000_000_000);
        let mut r = Resync::new(0, 1 << 40, pace(Governor::Drain));
        r.done = 5 << 20;
        assert_eq!(r.in_flight, 0);
        assert_eq!(r.check(second, || true), Next::Go);
        r.issue();
        assert_eq!(r.check(second, || true), Next::Drain);
    }

    #[test]
    fn each_kernel_regime_answers_as_md_does() {
        let second = Nanos(1_000_000_000);
        for (governor, busy_between) in [
            (Governor::Sleep, Next::Sleep),
            (Governor::Drain, Next::Drain),
            (Governor::Depth, Next::Go),
        ] {
            let mut r = Resync::new(0, 1 << 40, pace(governor));
            r.issue();
            // 5 MB in the first second: above min, below max.
            r.done = 5 << 20;
            assert_eq!(r.check(second, || true), busy_between, "{governor:?}");
            assert_eq!(r.check(second, || false), Next::Go, "{governor:?} idle");
            // 500 MB in under two seconds: above max, idle or not; md does not look.
            r.done = 500 << 20;
            assert_eq!(r.check(second, || panic!("looked")), Next::Sleep);
            // Below the minimum it never waits, nor looks.
            let mut slow = Resync::new(0, 1 << 40, pace(governor));
            slow.done = 100 << 10;
            assert_eq!(slow.check(second, || panic!("looked")), Next::Go);
        }
        // 6.16 waits once `sync_io_depth` worth is in flight.
        let mut r = Resync::new(0, 1 << 40, pace(Governor::Depth));
        r.issue();
        r.issue();
        r.done = 5 << 20;
        assert_eq!(r.check(second, || true), Next::Drain);
    }

    #[test]
    fn the_old_idle_test_hides_the_workload_behind_the_sync_in_flight() {
        let mut t = IdleTest::new(2);
        // 64 sectors of the workload on a member are still idle; 65 are busy, once.
        t.other_done(0, 64 * 512);
        assert!(!t.busy(&[]));
        t.other_done(0, 512);
        assert!(t.busy(&[]));
        assert!(!t.busy(&[]), "the member's mark moved");
        // 1 MiB of sync submitted to member 1 hides 2048 sectors of the workload there...
        t.sync(1, 1 << 20, true);
        t.other_done(1, 2000 * 512);
        assert!(!t.busy(&[]));
        // ...until it completes: then they show.
        t.sync(1, 1 << 20, false);
        assert!(t.busy(&[]));
        // A member's sync completing with no workload is what it was before: idle.
        t.sync(0, 128 << 10, true);
        t.sync(0, 128 << 10, false);
        assert!(!t.busy(&[]));
    }

    #[test]
    fn sync_md_submitted_before_its_look_hides_the_workload_there() {
        let mut t = IdleTest::new(1);
        t.other_done(0, 100 * 512);
        // md has submitted 64 sectors the simulator sends after the look: 36 show.
        assert!(!t.busy(&[64]));
        // Sent, they are in flight as md had them: the look is as it was.
        t.sync(0, 64 * 512, true);
        assert!(!t.busy(&[]));
        // Completed, the 100 sectors of workload show.
        t.sync(0, 64 * 512, false);
        assert!(t.busy(&[]));
        // Without the 64 the same look was busy.
        let mut u = IdleTest::new(1);
        u.other_done(0, 100 * 512);
        assert!(u.busy(&[]));
    }

    /// A fresh member is readable only below md's last checkpoint: a sixteenth of the
    /// member synced since the one before, five minutes, or the end.
    #[test]
    fn a_fresh_member_is_read_below_the_last_checkpoint_only() {
        let second = Nanos(1_000_000_000);
        // 16 MiB: a checkpoint after every MiB.
        let mut r = Resync::new(0, 16 << 20, pace(Governor::Drain));
        for _ in 0..8 {
            r.issue();
            r.complete(second);
        }
        assert_eq!(
            (r.done, r.readable()),
            (1 << 20, 0),
            "1 MiB is not past it yet"
        );
        r.issue();
        r.complete(second);
        assert_eq!(r.readable(), r.done, "past a sixteenth: checkpointed");
        r.issue();
        r.complete(Nanos(301 * second.0));
        assert_eq!(r.readable(), r.done, "five minutes since the last");
        let at = r.done;
        r.issue();
        r.complete(Nanos(302 * second.0));
        assert_eq!(r.readable(), at, "a second later, one window on: not yet");
        // A re-add's prefix checkpoints in steps of the whole member.
        let mut p = Resync::new(0, 4 << 20, pace(Governor::Drain)).checkpoints_of(16 << 20);
        for _ in 0..8 {
            p.issue();
            p.complete(second);
        }
        assert_eq!(
            p.readable(),
            0,
            "1 MiB of a 16 MiB member: no checkpoint yet"
        );
        while !p.finished() {
            p.issue();
            p.complete(second);
        }
        assert_eq!(p.readable(), 4 << 20, "the end: all of it");
    }
}
