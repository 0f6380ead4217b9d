//! The discrete-event engine: fio-like jobs issue host I/Os, md splits them into member
//! operations, the host adapter passes them on (all at once, or `host_queue` at a time),
//! devices serve them, completions flow back.
//!
//! Time is integer nanoseconds and events are ordered by (time, sequence number), so ties
//! replay identically; every random stream is a ChaCha8 generator seeded from the run's
//! seed and the component's number. Same case + seed ⇒ same events ⇒ same bytes out.
//!
//! md's background work shares the members with the host I/O: the write-intent bitmap's
//! page writes (`bitmap.rs` keeps its counters) and the initial resync (`resync.rs`).
//! Per-I/O bookkeeping lives in pools that keep their buffers, so the hot loop does not
//! allocate.

use crate::bitmap::{self, Bitmap};
use crate::device::{DeviceStats, Member, MemberOp, Out, Wakes, MD_THREAD};
use crate::hist::Histogram;
use crate::md::{
    needs_reads, plan_one_row, plan_stripe_into, row_words, Geometry, Lost, Piece, PlanScratch, ROW,
};
use crate::queue::{EventQueue, Key};
use crate::resync::{self, IdleTest, Next, Pace, Resync, MIRROR_BUFFER, STEP};
use crate::slab::{Pool, Slab};
use raidlab_core::Bitmap as BitmapSetting;
use raidlab_core::Resync as ResyncSetting;
use raidlab_core::{
    ArraySpec, ArrayState, Case, Engine as FsEngine, Layout, Level, Nanos, Rebuild, Rw,
    DEFAULT_STRIPE_CACHE,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{HashMap, VecDeque};

mod adapter;
mod background;
pub use background::{segment_merge_max, MERGE_MAX};
mod dispatch;
mod stripes;
mod submit;
mod trace;
pub use trace::{write_csv as write_trace_csv, MemberCommand, Source};

/// How long md holds a partial-stripe write hoping the rest of the stripe arrives
/// (the block layer's unplug, roughly), unless full-stripe writes are in flight.
const PLUG_DELAY: Nanos = Nanos(100_000);

/// raid5d's CPU time per member page of a stripe it handles (copying the host's data in,
/// computing parity, building the member bios). One raid5d thread handles every stripe of
/// an array (`group_thread_cnt` 0), so it bounds a wide array's write rate: Shaohua Li
/// measured 600 MB/s of sequential writes on a 9-disk raid5 against 1,440 MB/s for the
/// disks, raid5d the bottleneck, on an Atom (commit 765d704db1f5) — 6 µs a member page;
/// a current server core does several times that. An estimate, not measured here.
pub const RAID5D_PAGE: Nanos = Nanos(1_000);

/// Events kept in the event queue. md's plug timers all fire a fixed delay after they are
/// set, so they arrive in time order and wait in a FIFO instead (`Timer`); the run loop
/// takes whichever of queue and FIFO is first by (time, sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Issue {
        slot: u32,
    },
    /// A job's thread is free again and submits the slot's next I/O.
    IssueAfterCpu {
        slot: u32,
    },
    Dev {
        disk: u32,
        token: u64,
    },
    /// md's bitmap daemon pass.
    BitmapDaemon,
    /// md's sync thread wakes (at the start, and after a back-off sleep).
    ResyncWake,
    /// md's sync thread, which waited for stripe heads, goes on after its jiffy's sleep.
    SyncHeads,
    /// The measured window opens: the sync's position is noted.
    MeasureStart,
    /// A job's submitter takes its next waiting I/O (direct raid5/6 I/O: see `Submitter`).
    Resume {
        job: u32,
    },
    /// raid5d comes to the next stripe on its handle list ([`Engine::raid5d_pass`]).
    Raid5d,
}

/// A fio job's submitting thread, for direct I/O to raid5/6: fio submits each I/O with its
/// own `io_submit`, and `raid5_make_request` runs in that thread and sleeps while the
/// stripe cache has no free heads (for a sync write, or a read of a lost block), so while
/// one of the job's I/Os waits for stripe heads the job submits nothing else. Its further
/// I/Os wait here, in order, and go in one per event once that I/O is admitted.
#[derive(Default)]
struct Submitter {
    /// Slots whose next I/O waits for the submitter.
    queue: VecDeque<u32>,
    /// Entries of the job's I/Os in md's blocked queue.
    blocked: u32,
    /// A `Resume` event is scheduled.
    resume: bool,
}

/// A plug timer of a stripe (by pool index) for the open write set of generation `gen`.
#[derive(Debug, Clone, Copy)]
struct Timer {
    at: Nanos,
    seq: u64,
    stripe: u32,
    gen: u64,
}

/// Stripe number → pool index of the stripes md holds: open addressing with linear
/// probing and backward-shift deletion, hashed by a multiply-fold (stripe numbers are
/// already well spread). A general-purpose map (SipHash, then hashbrown) was a tenth, then
/// a twentieth of the run time.
struct StripeMap {
    /// `EMPTY` marks a free cell.
    keys: Vec<u64>,
    vals: Vec<u32>,
    len: usize,
}

const EMPTY: u64 = u64::MAX;

impl Default for StripeMap {
    fn default() -> Self {
        StripeMap {
            keys: vec![EMPTY; 64],
            vals: vec![0; 64],
            len: 0,
        }
    }
}

impl StripeMap {
    #[inline]
    fn home(&self, key: u64) -> usize {
        let m = key as u128 * 0x9E37_79B9_7F4A_7C15u128;
        ((m >> 64) as u64 ^ m as u64) as usize & (self.keys.len() - 1)
    }

    /// The cell holding `key`, or the free cell where it would go.
    #[inline]
    fn find(&self, key: u64) -> usize {
        let mask = self.keys.len() - 1;
        let mut i = self.home(key);
        loop {
            let k = self.keys[i];
            if k == key || k == EMPTY {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u32> {
        let i = self.find(key);
        (self.keys[i] == key).then(|| self.vals[i])
    }

    fn insert(&mut self, key: u64, val: u32) {
        debug_assert_ne!(key, EMPTY);
        if (self.len + 1) * 2 > self.keys.len() {
            let cells = self.keys.len() * 2;
            let old = std::mem::replace(
                self,
                StripeMap {
                    keys: vec![EMPTY; cells],
                    vals: vec![0; cells],
                    len: 0,
                },
            );
            for (&k, &v) in old.keys.iter().zip(&old.vals) {
                if k != EMPTY {
                    self.insert(k, v);
                }
            }
        }
        let i = self.find(key);
        if self.keys[i] == EMPTY {
            self.len += 1;
        }
        self.keys[i] = key;
        self.vals[i] = val;
    }

    fn remove(&mut self, key: u64) {
        let mask = self.keys.len() - 1;
        let mut hole = self.find(key);
        if self.keys[hole] != key {
            return;
        }
        self.len -= 1;
        // Move back each following entry of the run that may live in the hole (its home is
        // not cyclically within (hole, j]).
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let k = self.keys[j];
            if k == EMPTY {
                break;
            }
            let home = self.home(k);
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.keys[hole] = k;
                self.vals[hole] = self.vals[j];
                hole = j;
            }
        }
        self.keys[hole] = EMPTY;
    }
}

/// Figures of one direction, measured over the runtime (after ramp).
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    pub ios: u64,
    pub bytes: u64,
    /// From fio's submission to the completion (fio's `lat`; written as `clat` too).
    pub lat: Histogram,
    /// From fio's submission until md took the I/O (fio's `slat`: `io_submit` holds the
    /// job's thread while md keeps it waiting — for stripe heads, or at raid1/10's barrier).
    pub slat: Histogram,
}

/// Everything a run measured.
#[derive(Debug, Clone)]
pub struct SimRun {
    pub read: DirStats,
    pub write: DirStats,
    pub runtime: Nanos,
    /// Completed host I/Os per second of runtime, reads and writes.
    pub iops_per_sec: Vec<[u64; 2]>,
    /// Sum of completion latencies (ns) per measured second, [read, write].
    pub lat_sum_per_sec: Vec<[u64; 2]>,
    pub members: Vec<DeviceStats>,
    /// Host I/Os md saw (its own disk_util line).
    pub array_ios: [u64; 2],
    /// Events processed: the benchmark's unit of work.
    pub events: u64,
    /// The simulated time at which nothing was left to happen while host I/O or md's sync
    /// still waited: a simulator bug, which the run's figures would hide.
    pub stalled: Option<Nanos>,
    /// md's initial resync ran alongside the workload.
    pub resync_ran: bool,
    /// How far md's sync (initial resync or recovery) got, if one ran.
    pub sync: Option<SyncRun>,
    /// raid5/6: the stripe heads md's cache had at the end (`stripe_cache_size`, plus what
    /// shortages grew it by).
    pub stripe_heads: Option<u64>,
    /// raid5/6: the heads it started with (more than `stripe_cache_size` after a layout
    /// pass).
    pub stripe_heads_at_start: Option<u64>,
    /// Every member command, when the run was traced ([`Engine::traced`]).
    pub trace: Option<Vec<MemberCommand>>,
}

/// How far a sync got in a run.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncRun {
    /// Member offset the sync started from, and the one it completed to.
    pub from: u64,
    pub done: u64,
    /// Where it ends (the member's size, or less: a btrfs replace, a re-add).
    pub size: u64,
    /// Member bytes synced during the measured window (ramp excluded).
    pub measured: u64,
    /// When the measured window began (the workload's ramp), and its length.
    pub window_from: Nanos,
    pub window: Nanos,
    /// When the sync reached the end of the member, from the start of the run.
    pub finished_at: Option<Nanos>,
    /// Member bytes synced in each second of the measured window.
    pub per_sec: Vec<u64>,
}

impl SyncRun {
    /// The sync's speed in bytes per second while it ran, as the host and VM targets
    /// measure it: over the measured window, or up to its end when it ended within the
    /// window; a sync that ended before the window began (within the ramp: a short
    /// remainder of a member) over its whole run.
    pub fn rate(&self) -> f64 {
        let secs = |n: Nanos| n.as_secs_f64();
        match self.finished_at {
            Some(t) if t <= self.window_from => {
                (self.size - self.from) as f64 / secs(t).max(f64::MIN_POSITIVE)
            }
            Some(t) if t < self.window_from + self.window => {
                self.measured as f64 / secs(t - self.window_from)
            }
            _ => self.measured as f64 / secs(self.window),
        }
    }
}

struct HostIo {
    slot: u32,
    submit: Nanos,
    /// When md took it: `submit`, or later when it waited for stripe heads or at the
    /// barrier first.
    accepted: Nanos,
    write: bool,
    offset: u64,
    len: u64,
    remaining: u32,
}

impl HostIo {
    /// Whether the I/O covers more than one chunk: only such I/O has member commands
    /// contiguous with each other to merge.
    fn spans_chunks(&self, chunk: u64) -> bool {
        self.len > chunk || self.offset / chunk != (self.offset + self.len - 1) / chunk
    }
}

/// What a part's completion means.
#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Job {
    /// Host I/O (and, for raid5/6, a stripe's write).
    #[default]
    Host,
    /// The bitmap page written on every member before waiting writes may go.
    BitmapFlush,
    /// The daemon's lazy write of cleared bits: nobody waits for it.
    BitmapClear,
    /// One step of the initial resync.
    Resync,
}

/// Member operations for some host I/Os, in up to two phases (pre-reads, then writes);
/// pooled, so its buffers are reused.
#[derive(Default)]
struct Part {
    hosts: Vec<u32>,
    phases: [(bool, Vec<Piece>); 2],
    phase_count: usize,
    phase: usize,
    pending: u32,
    /// The stripe (pool index) whose write this is.
    stripe: Option<u32>,
    /// Stripe heads a raid5/6 read holds while md rebuilds its data from the others.
    heads: u64,
    job: Job,
    /// The stripe write this part is ([`Part::stripe`]): its heads and kind.
    flight: Option<Flying>,
    /// Its rows, a bit each (`row_words` words).
    flight_rows: Vec<u64>,
}

/// One stripe of a raid5/6 array in md's cache: an open set of writes being gathered, and
/// the write in flight. Pooled and found through `Engine::stripe_index`.
#[derive(Default)]
struct Stripe {
    number: u64,
    /// An open write set exists (the fields below describe it).
    open: bool,
    /// Per data unit, a bit per row written: `row_words` words each.
    written: Vec<u64>,
    set_bits: u64,
    /// The (data unit, row) of the first bit set: the whole set when `set_bits` is 1.
    first_bit: (u32, u32),
    /// Bits when every row of every data unit is written: a full-stripe write.
    full_bits: u64,
    rows: u64,
    hosts: Vec<u32>,
    gen: u64,
    armed: bool,
    /// Waiting on md's delayed list for pre-reads to be allowed.
    delayed: bool,
    /// On raid5d's handle list, for its current pass ([`Engine::raid5d_list`]).
    listed: bool,
    /// Writes of the stripe in flight (one, but for the row-by-row sets of sync writes
    /// over several chunks, which go out beside a flight of other rows:
    /// [`Engine::may_launch`]).
    flights: u32,
    /// The rows of the writes in flight, a bit each (`row_words` words).
    fly_rows: Vec<u64>,
    /// Sync writes: the rows the pre-reading write in flight writes (laid out as
    /// `written`) and its part, so that a write completing the stripe while it pre-reads
    /// can join it; empty when no such write flies.
    fly_written: Vec<u64>,
    fly_part: u32,
}

/// A stripe's write in flight: the stripe heads it holds, whether it writes the whole
/// stripe, and whether it counts as a pre-reading stripe.
#[derive(Debug, Clone, Copy)]
struct Flying {
    rows: u64,
    full: bool,
    preread: bool,
}

/// A host I/O waiting in md's queue for stripe heads.
#[derive(Debug, Clone, Copy)]
enum Blocked {
    /// A write's piece on `stripe`, from `start` to `end`, its rows from `rows_from` on
    /// (what of it already had heads went on: an address prefix, or whole rows below
    /// `rows_from` where md fills heads row by row).
    Write {
        host: u32,
        stripe: u64,
        start: u64,
        end: u64,
        rows_from: u64,
    },
    /// A read of a lost block: the whole host I/O.
    Read { host: u32 },
}

impl Blocked {
    fn host(&self) -> u32 {
        match *self {
            Blocked::Write { host, .. } | Blocked::Read { host } => host,
        }
    }
}

/// md's resync barrier during a recovery (`raise_barrier` / `wait_barrier` in `raid10.c`
/// and `raid1.c`): before each sync request `raise_barrier` waits until no host I/O
/// waits at the barrier (`nr_waiting`), then blocks new host I/O and waits until the host
/// I/O already inside md has completed; host I/O waits in `wait_barrier` until every sync
/// request holding the barrier completed. raid10 has one barrier for the whole array, so
/// under load the sync and the workload take turns on the whole array. raid1's is split
/// in 64 MiB buckets (since Linux 4.11): a sync request waits only for the host I/O in
/// its own bucket, only writes in that bucket wait for it, and reads never do
/// (`wait_read_barrier` waits only for a frozen array), so under reads the sync goes
/// whenever its bucket has none in flight.
#[derive(Debug, Default)]
struct Barrier {
    /// Sync requests holding the barrier (raised, not yet completed).
    raised: u32,
    /// Host I/Os inside md (`nr_pending`), per bucket (raid10: one).
    pending: HashMap<u64, u32>,
    /// raid1: log2 of its buckets' bytes, and reads pass the barrier; raid10: `None`.
    bucket_bits: Option<u32>,
    /// The bucket of the last window raised.
    raised_at: u64,
    /// Host I/Os waiting at the barrier, in arrival order (`nr_waiting`).
    held: VecDeque<u32>,
    /// A request waiting for `pending` in its bucket to reach 0 (raised), or for `held` to
    /// empty before it may raise (`unraised`).
    window: Option<(u64, u64)>,
    unraised: bool,
    /// The sync thread has had its jiffy's sleep for the host I/O waiting at the barrier
    /// and goes on to raise it (`Engine::resync_go`).
    napped: bool,
    /// Scratch for `lower_barrier`: the jobs whose thread slept at the barrier.
    woken: Vec<u32>,
}

/// raid1's barrier buckets: `BARRIER_UNIT_SECTOR_BITS` (17) of 512-byte sectors.
const RAID1_BUCKET_BITS: u32 = 26;

impl Barrier {
    fn bucket(&self, offset: u64) -> u64 {
        self.bucket_bits.map_or(0, |b| offset >> b)
    }

    /// Host I/Os inside md in the bucket of `offset`.
    fn pending_at(&self, offset: u64) -> u32 {
        self.pending.get(&self.bucket(offset)).copied().unwrap_or(0)
    }

    /// Whether a host I/O at `offset` must wait at the raised barrier: on raid10 any, on
    /// raid1 a write in the bucket the sync holds.
    fn holds(&self, write: bool, offset: u64) -> bool {
        self.raised > 0
            && (self.bucket_bits.is_none() || write && self.bucket(offset) == self.raised_at)
    }

    /// A sync window at `offset` raises the barrier.
    fn raise(&mut self, offset: u64) {
        self.raised += 1;
        self.raised_at = self.bucket(offset);
    }

    fn enter(&mut self, offset: u64) {
        *self.pending.entry(self.bucket(offset)).or_default() += 1;
    }

    /// A host I/O left md: whether the request waiting for its bucket may go now.
    fn leave(&mut self, offset: u64) -> bool {
        let b = self.bucket(offset);
        let p = self.pending.get_mut(&b).expect("a host I/O inside md");
        *p -= 1;
        !self.unraised
            && self
                .window
                .is_some_and(|(at, _)| self.bucket(at) == b && self.pending_at(at) == 0)
    }
}

/// A host write waiting for the bitmap flush that covers its bits.
#[derive(Debug, Clone, Copy)]
struct BitmapWait {
    flush: u64,
    host: u32,
    offset: u64,
    len: u64,
}

pub struct Engine<D> {
    now: Nanos,
    seq: u64,
    heap: EventQueue<Ev>,
    timers: VecDeque<Timer>,
    devices: Vec<D>,
    geo: Geometry,
    /// Members a degraded array has lost, or a rebuilding one is recovering (md's last
    /// ones; raid5's last member during its initial resync), a bit each.
    failed: u64,
    /// The sync under way is the recovery of `failed` (not the initial resync).
    recovering: bool,
    /// The recovery is a btrfs replace (no governor, no raid10 barrier).
    replacing: bool,
    /// fio jobs run (false to time a recovery on an idle array): md's sync sees a busy
    /// array while they do.
    foreground: bool,
    /// The sync's position when the measured window opened, and its bytes per measured
    /// second.
    sync_at_measure: Option<u64>,
    sync_per_sec: Vec<u64>,
    rw: Rw,
    rwmixread: u8,
    bs: u64,
    region: (u64, u64),
    /// Blocks of `bs` in the region: where random I/Os may start.
    blocks: u64,
    /// Per job: RNG and sequential cursor.
    jobs: Vec<(ChaCha8Rng, u64)>,
    /// Mirrored btrfs profiles: a read's copy is its job's (`crate::btrfs`), not md's
    /// read balance; `reader` is the job of the host I/O being dispatched.
    reads_by_job: bool,
    reader: u32,
    /// raid1: per member, where the last read sent to it ends (`next_seq_sect` in
    /// `raid1.c`): a read starting there stays on that member.
    next_seq: Vec<u64>,
    /// md raid1's per-member bookkeeping for `read_balance` (kept only for raid1:
    /// `Engine::md_mirror`): `head_position`, moved at every completion (the sync's
    /// included); the sync windows holding the member's `nr_pending` for their whole
    /// life; the sync's commands at its device.
    md_head: Vec<u64>,
    sync_hold: Vec<u32>,
    sync_at_dev: Vec<u32>,
    slot_job: Vec<u32>,
    hosts: Slab<HostIo>,
    parts: Pool<Part>,
    stripes: Pool<Stripe>,
    stripe_index: StripeMap,
    /// Scratch buffers of the request path.
    plan_scratch: PlanScratch,
    copies: Vec<(u32, u64)>,
    row_mask: Vec<u64>,
    stripe_gen: u64,
    /// raid5/6's stripe cache: heads in use (writes' and the sync's), heads md has (its
    /// `max_nr_stripes`: `stripe_cache_size` at first, grown since), and whether requests
    /// wait for a quarter of it to be free (`R5_INACTIVE_BLOCKED`).
    rows_in_use: u64,
    cache_rows: u64,
    cache_blocked: bool,
    /// md grew the cache since it last released heads (`R5_DID_ALLOC`): it grows by one
    /// head at a time, once per shortage (see [`Engine::cache_short`]).
    cache_did_alloc: bool,
    /// raid5d's work (md raid5/6, sync writes): a stripe a multi-chunk sync write makes
    /// ready waits on `handle_list`, in order, until raid5d, handling one stripe after
    /// another, comes to it (its time there: `RAID5D_PAGE` a member page); what it sends
    /// meanwhile waits under its plug (`raid5d_plugged`) until the list is empty.
    handle_list: VecDeque<(Nanos, u32)>,
    /// When raid5d is through what it has been handed.
    raid5d_due: Nanos,
    /// A `Raid5d` event is due for the front of `handle_list`.
    raid5d_armed: bool,
    raid5d_plugged: Vec<(u32, MemberOp)>,
    /// md raid5/6 (not a btrfs profile simulated as its md shape): md's stripe cache rules
    /// for reads on a degraded array, the sync's heads, and the cache's growth.
    md_parity: bool,
    /// md fills a write's stripe heads row by row (since Linux 6.0): see
    /// [`Engine::stripe_write`].
    rows_first: bool,
    /// Whether the cache may grow (md only, since Linux 4.1): with direct I/O, memory
    /// stays free. Buffered I/O fills the page cache, and reclaim's shrinker
    /// (`raid5_cache_scan`) takes the stripe cache back to `stripe_cache_size` as fast as
    /// shortages grow it.
    cache_grows: bool,
    /// md's sync thread waits for stripe heads (raid5/6).
    sync_waits_rows: bool,
    /// raid5/6's sync windows issued and not yet done: the bytes of each still to
    /// complete, by the window's member offset. Their pages reach the members in requests
    /// cut at the largest a member takes, wherever that falls in a window
    /// ([`Engine::resync_go`]), so a window may complete in two requests.
    sync_windows: std::collections::BTreeMap<u64, (u64, u64)>,
    /// A layout pass ([`Engine::lay_out`]): the host I/Os still to issue.
    issue_left: Option<u64>,
    blocked: VecDeque<Blocked>,
    full_writes_flying: u32,
    /// md's `preread_active_stripes` and `delayed_list`.
    preread_active: u32,
    /// Host writes carry `REQ_SYNC` (fio's `direct=1`: O_DIRECT writes are sync), so
    /// `raid5_make_request` marks their stripes pre-read-active at once: they skip the
    /// delayed list and are not held back by full-stripe writes.
    sync_writes: bool,
    delayed: Vec<u32>,
    /// Per job, its submitting thread (direct I/O to raid5/6 only).
    submitters: Vec<Submitter>,
    /// CPU time a job spends per I/O (submitting and reaping it), and per job when its
    /// thread is next free: one fio job issues no faster than its CPU allows.
    cpu_per_io: Nanos,
    cpu_free: Vec<Nanos>,
    /// Whether fio records `slat` for the job's engine ([`records_slat`]).
    records_slat: bool,
    /// fio's `rate_iops` ([`raidlab_core::Workload::rate_iops`]): a job's k-th I/O goes in no sooner than
    /// k of these after its start (fio's linear rate: a job that fell behind catches up).
    rate_gap: Option<Nanos>,
    /// Per job: when its next I/O is due under `rate_gap`.
    rate_due: Vec<Nanos>,
    /// Jobs whose blocked writes were just admitted (`stripe_done`'s scratch).
    unblocked_jobs: Vec<u32>,
    /// `plan_stripe_into`'s read output when only the writes are wanted.
    spare_reads: Vec<Piece>,
    /// md's write-intent bitmap, when the array has one; host writes waiting for a flush.
    bitmap: Option<Bitmap>,
    bitmap_waiting: Vec<BitmapWait>,
    /// md's initial resync or recovery, when one runs during the workload.
    resync: Option<Resync>,
    /// How md tells a busy array where the kernel counts sectors per member (before
    /// 6.16); `None` where any I/O of the workload's makes it busy.
    idle_test: Option<IdleTest>,
    /// raid1's and raid10's resync barrier during a recovery (`raise_barrier` /
    /// `wait_barrier`): sync windows holding it, host I/Os inside md, host I/Os held at
    /// the barrier, and a window waiting before it goes to the members.
    barrier: Barrier,
    /// Who wins when fio's thread and md's sync thread are woken together at the
    /// barrier (`Engine::lower_barrier`).
    race: ChaCha8Rng,
    measure_from: Nanos,
    end: Nanos,
    read: DirStats,
    write: DirStats,
    per_sec: Vec<[u64; 2]>,
    lat_per_sec: Vec<[u64; 2]>,
    array_ios: [u64; 2],
    events: u64,
    /// Member commands devices completed and the engine has yet to handle, as a stack:
    /// handling one device's completions can submit to another device, which may complete
    /// something at once, so handlers nest. Each handles the entries above the length it
    /// found and cuts the stack back to it (`complete_from`).
    done: Vec<u64>,
    adapter: Adapter,
    /// raid5d's block plug (md raid5/6): the member commands of host I/O that one event
    /// submits are held and merged where contiguous on a member ([`Engine::unplug`]).
    /// Only where a host I/O can cover more than one chunk (`plug_merges`).
    plug_merges: bool,
    /// The largest request merged bios make on a member (`max_sectors_kb`, or fewer
    /// segments than that: [`Engine::merge_max`]).
    merge_max: u64,
    plugging: bool,
    plugged: Vec<(u32, MemberOp)>,
    /// The tags each merged command completes, by the index its own tag carries.
    merged: Vec<Vec<u64>>,
    merged_free: Vec<u32>,
    /// Per member, the held command a contiguous one would join (scratch for `unplug`).
    plug_last: Vec<usize>,
    /// Every member command, when asked for ([`Engine::traced`]).
    trace: Option<Box<trace::Trace>>,
}

/// The event queue as a device sees it: its wake-ups become `Ev::Dev` events of its disk,
/// numbered in the order asked for.
struct Sched<'a> {
    heap: &'a mut EventQueue<Ev>,
    seq: &'a mut u64,
    disk: u32,
}

impl Wakes for Sched<'_> {
    #[inline(always)]
    fn push(&mut self, (at, token): (Nanos, u64)) {
        let ev = Ev::Dev {
            disk: self.disk,
            token,
        };
        enqueue(self.heap, self.seq, at, ev);
    }
}

/// Number an event and queue it: the one place sequence numbers are handed out to the
/// event queue (`Engine::schedule`, and devices' wake-ups through `Sched`).
#[inline(always)]
fn enqueue(heap: &mut EventQueue<Ev>, seq: &mut u64, at: Nanos, ev: Ev) {
    *seq += 1;
    heap.push(at, *seq, ev);
}

/// The host adapter the members hang off: at most `slots` commands in flight across all
/// of them (`DiskSet::host_queue`); the rest wait in arrival order, as the SCSI midlayer
/// holds requests when the host is busy. Unlimited when the plan sets no `host_queue`.
struct Adapter {
    /// `u32::MAX` when unlimited.
    slots: u32,
    busy: u32,
    waiting: VecDeque<(u32, MemberOp)>,
}

impl Adapter {
    #[inline]
    fn limited(&self) -> bool {
        self.slots != u32::MAX
    }
}

/// The (data unit, row) pairs of [`touched`] whose row is in `rows`.
fn touched_rows(
    g: &Geometry,
    s: u64,
    e: u64,
    rows: std::ops::Range<u64>,
) -> impl Iterator<Item = (usize, usize)> {
    touched(g, s, e).filter(move |&(_, row)| rows.contains(&(row as u64)))
}

/// The (data unit, row) pairs a write to `[s, e)` of one stripe's data covers, in order.
fn touched(g: &Geometry, s: u64, e: u64) -> impl Iterator<Item = (usize, usize)> {
    let (shift, mask) = (g.chunk_shift, g.chunk - 1);
    (s / ROW..e.div_ceil(ROW)).map(move |r| {
        let at = r * ROW;
        ((at >> shift) as usize, ((at & mask) / ROW) as usize)
    })
}

/// The start of each member a re-added member resyncs: the bitmap chunks written while
/// it was away, which the workload's region (laid out or written before it returned)
/// covers, rounded out to whole chunks in the bitmap's space (member bytes on raid5/6,
/// array bytes elsewhere). md walks past the clean chunks at once.
fn readd_span(spec: &ArraySpec, geo: &Geometry, end: u64) -> u64 {
    let share =
        |bytes: u64| (bytes as f64 / spec.capacity_fraction() / spec.disks as f64).ceil() as u64;
    let span = match geo.level {
        Level::Raid5 | Level::Raid6 => share(end).div_ceil(bitmap::CHUNK) * bitmap::CHUNK,
        _ => share(end.div_ceil(bitmap::CHUNK) * bitmap::CHUNK),
    };
    span.min(geo.member)
}

/// What md's bitmap covers: each member's data for raid1/5/6, the array for raid10.
fn bitmap_space(g: &Geometry) -> u64 {
    match g.level {
        Level::Raid10 => g.member * g.disks as u64 / g.copies() as u64,
        _ => g.member,
    }
}

/// CPU time one fio job spends per I/O with `ioengine`: one core's peak 4 KiB random-read
/// rate through each interface, measured by io_uring's author (Jens Axboe, "Efficient IO
/// with io_uring", 2019: libaio 608K IOPS, io_uring polled 1.62M per core at QD128). The
/// other engines (psync and friends) cost at least libaio's.
fn cpu_per_io(ioengine: &str) -> Nanos {
    match ioengine {
        "io_uring" => Nanos(1_000_000_000 / 1_620_000),
        _ => Nanos(1_000_000_000 / 608_000),
    }
}

/// Whether fio records a submission latency (`slat`) for `ioengine`: not for its
/// synchronous engines (`FIO_SYNCIO`), whose submission is the whole I/O (their
/// `slat_ns` has `N` 0).
fn records_slat(ioengine: &str) -> bool {
    !synchronous(ioengine)
}

/// Whether md grows a case's stripe cache when it runs short (the engine's
/// `cache_short`): md only, since Linux 4.1 (a case set in an older kernel keeps
/// its size), and under direct I/O (buffered I/O keeps reclaim busy, which takes the cache
/// back as fast).
pub fn stripe_cache_grows(case: &Case) -> bool {
    case.workload.direct && case.array.engine == FsEngine::Md && !before_linux_4_1(case)
}

/// Whether a case is set in a kernel before Linux 4.1 (`kernel = "4.0"`, which a rebuilding
/// case may name; every other case runs a newer one).
fn before_linux_4_1(case: &Case) -> bool {
    case.array
        .rebuild
        .is_some_and(|r| r.kernel == raidlab_core::Governor::Sleep)
}

/// fio's synchronous engines (`FIO_SYNCIO`): one I/O at a time per job, whatever
/// `iodepth` says.
pub fn synchronous(ioengine: &str) -> bool {
    matches!(
        ioengine,
        "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" | "mmap"
    )
}

/// A jiffy of Debian's kernels (`CONFIG_HZ=250`).
const JIFFY: Nanos = Nanos(4_000_000);

fn stream(seed: u64, component: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ component.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

impl<D: Member> Engine<D> {
    /// `member` is the bytes of each member the array uses (span or capacity); `device`
    /// makes a member from its own random stream (drawn per member from the seed: a
    /// disk's platter angle at time zero, its firmware's estimate errors).
    pub fn new(
        case: &Case,
        member: u64,
        seed: u64,
        device: impl Fn(&mut ChaCha8Rng) -> D,
    ) -> Engine<D> {
        // A btrfs array runs as the md layout of the same shape (`crate::btrfs`).
        let md_shape = crate::btrfs::md_equivalent(&case.array);
        let spec = &md_shape;
        let w = &case.workload;
        let devices = (0..spec.disks)
            .map(|d| device(&mut stream(seed, 1_000 + d as u64)))
            .collect();
        let mut geo = Geometry::new(spec, member);
        geo.rcw_only = crate::btrfs::reconstruct_only(&case.array);
        let bitmap = (spec.bitmap == BitmapSetting::Internal
            && !matches!(spec.level, Level::Single | Level::Raid0))
        .then(|| Bitmap::new(bitmap_space(&geo)));
        let initial = spec.resync == ResyncSetting::During
            && matches!(
                spec.level,
                Level::Raid1
                    | Level::Raid1c3
                    | Level::Raid1c4
                    | Level::Raid10
                    | Level::Raid5
                    | Level::Raid6
            );
        let recovering = spec.state == ArrayState::Rebuilding;
        // btrfs replace copies only the members' allocated space, unpaced.
        let replacing = recovering && case.array.engine == FsEngine::Btrfs;
        let resync = if replacing {
            let used = crate::btrfs::allocated_per_member(&case.array, w.offset.0 + w.size.0);
            Some(Resync::new(
                0,
                used.min(geo.member),
                crate::btrfs::replace_pace(),
            ))
        } else if recovering {
            let size = if spec.re_adds() {
                readd_span(spec, &geo, w.offset.0 + w.size.0)
            } else {
                geo.member
            };
            Some(Resync::new(0, size, rebuild_pace(spec)).checkpoints_of(geo.member))
        } else {
            initial.then(|| Resync::new(0, geo.member, Pace::initial()))
        };
        let idle_test = resync
            .as_ref()
            .filter(|r| {
                matches!(
                    r.pace().governor,
                    Some(raidlab_core::Governor::Drain | raidlab_core::Governor::Sleep)
                )
            })
            .map(|_| IdleTest::new(spec.disks as usize));
        // The members gone or being recovered: the last ones (raid5's initial resync
        // recovers its last member too).
        let gone = if initial && spec.level == Level::Raid5 {
            1
        } else {
            spec.failed_members()
        };
        let failed = (spec.disks - gone..spec.disks).fold(0u64, |m, d| m | 1 << d);
        let jobs = (0..w.numjobs)
            .map(|j| (stream(seed, j as u64), w.offset.0))
            .collect();
        let slots = w.numjobs * w.iodepth;
        let measure_from = w.ramp;
        // Whole seconds of the measured window (the per-second logs' lengths).
        let seconds = w.runtime.0.div_ceil(1_000_000_000) as usize;
        Engine {
            now: Nanos(0),
            seq: 0,
            heap: EventQueue::new(),
            timers: VecDeque::new(),
            devices,
            rw: w.rw,
            rwmixread: w.rwmixread,
            bs: w.bs.0,
            region: (w.offset.0, w.size.0),
            blocks: (w.size.0 / w.bs.0).max(1),
            jobs,
            reads_by_job: crate::btrfs::reads_by_thread(&case.array),
            reader: 0,
            next_seq: vec![u64::MAX; spec.disks as usize],
            md_head: vec![0; spec.disks as usize],
            sync_hold: vec![0; spec.disks as usize],
            sync_at_dev: vec![0; spec.disks as usize],
            slot_job: (0..slots).map(|s| s / w.iodepth).collect(),
            hosts: Slab::new(),
            parts: Pool::new(),
            stripes: Pool::new(),
            stripe_index: StripeMap::default(),
            plan_scratch: PlanScratch::default(),
            copies: Vec::new(),
            row_mask: Vec::new(),
            stripe_gen: 0,
            rows_in_use: 0,
            cache_rows: spec.stripe_cache.unwrap_or(DEFAULT_STRIPE_CACHE) as u64,
            cache_blocked: false,
            cache_did_alloc: false,
            handle_list: VecDeque::new(),
            raid5d_due: Nanos::ZERO,
            raid5d_armed: false,
            raid5d_plugged: Vec::new(),
            md_parity: case.array.engine == FsEngine::Md
                && matches!(spec.level, Level::Raid5 | Level::Raid6),
            cache_grows: stripe_cache_grows(case),
            rows_first: case.array.engine == FsEngine::Md && !before_linux_4_1(case),
            sync_waits_rows: false,
            sync_windows: std::collections::BTreeMap::new(),
            issue_left: None,
            blocked: VecDeque::new(),
            full_writes_flying: 0,
            preread_active: 0,
            sync_writes: w.direct,
            delayed: Vec::new(),
            submitters: (0..w.numjobs).map(|_| Submitter::default()).collect(),
            cpu_per_io: cpu_per_io(&w.ioengine),
            records_slat: records_slat(&w.ioengine),
            cpu_free: vec![Nanos(0); w.numjobs as usize],
            rate_gap: w.rate_iops().map(|n| Nanos(1_000_000_000 / n as u64)),
            rate_due: vec![Nanos(0); w.numjobs as usize],
            unblocked_jobs: Vec::new(),
            spare_reads: Vec::new(),
            bitmap,
            bitmap_waiting: Vec::new(),
            resync,
            barrier: Barrier {
                bucket_bits: (spec.level == Level::Raid1).then_some(RAID1_BUCKET_BITS),
                ..Barrier::default()
            },
            race: stream(seed, 2_000),
            measure_from,
            end: measure_from + w.runtime,
            read: DirStats::default(),
            write: DirStats::default(),
            per_sec: vec![[0, 0]; seconds],
            lat_per_sec: vec![[0, 0]; seconds],
            array_ios: [0, 0],
            events: 0,
            done: Vec::new(),
            plug_merges: case.array.engine == FsEngine::Md
                && matches!(spec.level, Level::Raid5 | Level::Raid6)
                && (w.bs.0 > geo.chunk
                    || !geo.chunk.is_multiple_of(w.bs.0)
                    || !w.offset.0.is_multiple_of(w.bs.0)),
            merge_max: background::MERGE_MAX,
            plugging: false,
            plugged: Vec::new(),
            merged: Vec::new(),
            merged_free: Vec::new(),
            plug_last: Vec::new(),
            trace: None,
            adapter: Adapter {
                slots: case.disks.host_queue.unwrap_or(u32::MAX),
                busy: 0,
                waiting: VecDeque::new(),
            },
            geo,
            failed,
            recovering,
            replacing,
            foreground: true,
            idle_test,
            sync_at_measure: None,
            sync_per_sec: vec![0; seconds],
        }
    }

    /// Recover a whole member from offset `at` (the members below it are already
    /// rebuilt, and a btrfs replace finds every byte allocated): to sample a full
    /// rebuild's speed there. The sample stands for the middle of a long recovery, under
    /// a workload that has long been running: md's first look finds the array busy (a
    /// fresh start would run unchecked until the workload completed 64 sectors on some
    /// member, and that burst would weigh in md's speed for its first 30 s).
    pub fn rebuild_from(mut self, at: u64) -> Self {
        let member = self.geo.member;
        if let Some(r) = self.resync.as_mut().filter(|_| self.recovering) {
            *r = Resync::new(at.min(member), member, r.pace());
        }
        if let Some(t) = self.idle_test.as_mut() {
            t.prime();
        }
        self
    }

    /// The largest request merged bios make on a member: `bytes` instead of
    /// `max_sectors_kb`'s 1,280 KiB (a driver with fewer segments for md's page buffers).
    pub fn merge_max(mut self, bytes: u64) -> Self {
        self.merge_max = bytes.clamp(4096, background::MERGE_MAX);
        self
    }

    /// Start with md's stripe cache at `heads` (what an earlier pass on the array grew it
    /// to) instead of `stripe_cache_size`.
    pub fn stripe_cache(mut self, heads: u64) -> Self {
        self.cache_rows = heads;
        self
    }

    /// Run a pass of `ios` host I/Os instead of a timed run: the pass ends when the last
    /// completes, as fio's size-bound layout job does (what it leaves behind is the
    /// point, such as the stripe cache: [`SimRun::stripe_heads`]).
    pub fn lay_out(mut self, ios: u64) -> Self {
        self.issue_left = Some(ios);
        self.end = Nanos(u64::MAX);
        self
    }

    /// Run no fio jobs: time the sync on an idle array.
    pub fn idle(mut self) -> Self {
        self.foreground = false;
        // Nothing runs beside the sync: no look finds the array busy (not even a sample's
        // first, which `rebuild_from` primes).
        if let Some(t) = self.idle_test.as_mut() {
            *t = IdleTest::new(self.devices.len());
        }
        self
    }

    fn schedule(&mut self, at: Nanos, ev: Ev) {
        enqueue(&mut self.heap, &mut self.seq, at, ev);
    }

    /// Arm a stripe's plug timer, `PLUG_DELAY` from now.
    fn schedule_timer(&mut self, stripe: u32, gen: u64) {
        self.seq += 1;
        let at = self.now + PLUG_DELAY;
        debug_assert!(self.timers.back().is_none_or(|t| t.at <= at));
        self.timers.push_back(Timer {
            at,
            seq: self.seq,
            stripe,
            gen,
        });
    }

    pub fn run(mut self) -> SimRun {
        let heads_at_start = self.cache_rows;
        if self.resync.is_some() {
            self.schedule(self.measure_from, Ev::MeasureStart);
        }
        if self.foreground {
            for slot in 0..self.slot_job.len() as u32 {
                self.schedule(Nanos(0), Ev::Issue { slot });
            }
        }
        if self.bitmap.is_some() {
            self.schedule(bitmap::DAEMON, Ev::BitmapDaemon);
        }
        if self.resync.is_some() {
            self.schedule(Nanos(0), Ev::ResyncWake);
        }
        // When the run ran out of events with work still waiting ([`SimRun::stalled`]).
        let mut stalled = None;
        loop {
            let timer_first = match (self.heap.peek(), self.timers.front()) {
                (Some(first), Some(t)) => Key::new(t.at, t.seq) < first,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => {
                    // Nothing is left to happen before the run's end. Right once every
                    // host I/O and the sync are done (a pass, an idle rebuild); otherwise
                    // something waits for an event that never comes.
                    let sync_waits = self.resync.as_ref().is_some_and(|r| !r.finished());
                    if self.now < self.end && (!self.hosts.is_empty() || sync_waits) {
                        stalled = Some(self.now);
                    }
                    break;
                }
            };
            if timer_first {
                let t = self.timers.pop_front().expect("peeked");
                if t.at > self.end {
                    break;
                }
                self.now = t.at;
                self.events += 1;
                self.plugging = self.plug_merges;
                self.flush_timer(t.stripe, t.gen);
                if self.plugging {
                    self.unplug();
                }
                continue;
            }
            let (at, _, ev) = self.heap.pop().expect("peeked");
            if at > self.end {
                break;
            }
            self.now = at;
            self.events += 1;
            self.plugging = self.plug_merges;
            match ev {
                Ev::Issue { slot } => self.issue(slot),
                Ev::IssueAfterCpu { slot } => self.issue_ready(slot),
                Ev::Dev { disk, token } => {
                    let (base, now) = (self.done.len(), self.now);
                    let (device, mut out) = self.member(disk);
                    device.wake(now, token, &mut out);
                    self.complete_from(base);
                }
                Ev::BitmapDaemon => self.bitmap_daemon(),
                Ev::ResyncWake => self.resync_wake(),
                Ev::SyncHeads => self.resync_pump(),
                Ev::MeasureStart => {
                    self.sync_at_measure = self.resync.as_ref().map(|r| r.done);
                }
                Ev::Resume { job } => self.resume(job),
                Ev::Raid5d => self.raid5d_pass(),
            }
            if self.plugging {
                self.unplug();
            }
        }
        let parity = matches!(self.geo.level, Level::Raid5 | Level::Raid6);
        SimRun {
            read: self.read,
            write: self.write,
            runtime: self.end - self.measure_from,
            iops_per_sec: self.per_sec,
            lat_sum_per_sec: self.lat_per_sec,
            members: self.devices.iter().map(|d| d.stats().clone()).collect(),
            array_ios: self.array_ios,
            events: self.events,
            stalled,
            resync_ran: self.resync.is_some(),
            stripe_heads: parity.then_some(self.cache_rows),
            stripe_heads_at_start: parity.then_some(heads_at_start),
            sync: self.resync.as_ref().map(|r| {
                let at_start = self.sync_at_measure.unwrap_or(r.done);
                SyncRun {
                    from: r.start,
                    done: r.done,
                    size: r.size,
                    measured: r.done - at_start,
                    window_from: self.measure_from,
                    window: self.end - self.measure_from,
                    finished_at: r.finished_at,
                    per_sec: self.sync_per_sec.clone(),
                }
            }),
            trace: self.trace.map(|t| t.commands),
        }
    }
}

/// The fastest raid5d handles a raid5/6 sync, KiB/s per member: a 4 KiB row of stripe
/// heads per `disks` member pages of [`RAID5D_PAGE`]. 500,000 on eight members (above md's
/// 200,000 cap), 166,666 on twenty-four. A twenty-disk md check measured CPU-bound at about
/// 50 MB/s a disk on an older machine (louwrentius.com, "RAID array size and rebuild
/// speed"); with `RAID5D_PAGE` at 1 µs the simulator's twenty disks go to 200,000.
pub fn raid5d_sync_ceiling(disks: u32) -> u32 {
    let per_row = u64::from(disks.max(1)) * RAID5D_PAGE.0;
    (4 * 1_000_000_000 / per_row).min(u64::from(u32::MAX)) as u32
}

/// How md paces the recovery of a rebuilding array: its knobs, the in-flight cap of a busy
/// 6.16 kernel (`sync_io_depth` units of 4 KiB on raid5/6, 64 KiB elsewhere), and the
/// windows md's barrier or buffers let it hold on an idle one (raid1/10: sync buffers of
/// 64 KiB, one `r1bio`/`r10bio` each; raid5/6: the stripe cache, which the engine keeps).
fn rebuild_pace(spec: &ArraySpec) -> Pace {
    let r: Rebuild = spec.rebuild.unwrap_or_default();
    let parity = matches!(spec.level, Level::Raid5 | Level::Raid6);
    let unit = if parity { ROW } else { MIRROR_BUFFER };
    // raid5/6: the stripe cache bounds the sync (the engine's `sync_takes_rows`), and
    // it grows. raid1/10: the resync barrier, which a sync buffer raises before it waits
    // for it to be below `RESYNC_DEPTH`, so one fewer than that depth in flight: raid1's
    // is 32 buffers (the guest's raid1 sends 31 after each drain), raid10's 32 MiB of them
    // ("memory permitting": its pool only reserves 1 MiB).
    let windows = match spec.level {
        _ if parity => u32::MAX,
        Level::Raid10 => (32 << 20) / MIRROR_BUFFER as u32 - 1,
        _ => 32 - 1,
    };
    // raid5/6: raid5d handles every stripe the sync hands it too (a member page each), so
    // its CPU bounds a wide array's recovery below md's cap: the sync goes no faster than
    // `raid5d_sync_ceiling`, and md's speed check holds it there as it holds the cap.
    let max = if parity {
        r.sync_speed_max.min(raid5d_sync_ceiling(spec.disks))
    } else {
        r.sync_speed_max
    };
    Pace {
        governor: Some(r.kernel),
        min: r.sync_speed_min,
        max,
        depth_bytes: r.sync_io_depth as u64 * unit,
        windows,
        unit: if parity { STEP } else { MIRROR_BUFFER },
    }
}

#[cfg(test)]
mod tests {
    use super::StripeMap;
    use std::collections::HashMap;

    #[test]
    fn stripe_map_agrees_with_a_hash_map() {
        let mut ours = StripeMap::default();
        let mut std_map = HashMap::new();
        let mut x: u64 = 99;
        for i in 0..20_000u32 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Few distinct keys, so inserts, hits and removals all happen often; the live
            // set grows past the initial table.
            let key = (x >> 33) % if i < 10_000 { 300 } else { 40 };
            match x >> 62 {
                0 | 1 => {
                    ours.insert(key, i);
                    std_map.insert(key, i);
                }
                2 => {
                    ours.remove(key);
                    std_map.remove(&key);
                }
                _ => {}
            }
            assert_eq!(ours.get(key), std_map.get(&key).copied());
            assert_eq!(ours.len, std_map.len());
        }
        for k in 0..300 {
            assert_eq!(ours.get(k), std_map.get(&k).copied());
        }
    }
}
