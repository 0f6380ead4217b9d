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
use crate::device::{DeviceStats, Member, MemberOp, Out, Wakes};
use crate::hist::Histogram;
use crate::md::{
    needs_reads, plan_one_row, plan_stripe_into, row_words, Geometry, Piece, PlanScratch, ROW,
};
use crate::queue::{EventQueue, Key};
use crate::resync::{self, Resync};
use crate::slab::{Pool, Slab};
use raidlab_core::Bitmap as BitmapSetting;
use raidlab_core::Resync as ResyncSetting;
use raidlab_core::{Case, Layout, Level, Nanos, Rw, DEFAULT_STRIPE_CACHE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// How long md holds a partial-stripe write hoping the rest of the stripe arrives
/// (the block layer's unplug, roughly), unless full-stripe writes are in flight.
const PLUG_DELAY: Nanos = Nanos(100_000);

/// Events kept in the event queue. md's plug timers all fire a fixed delay after they are
/// set, so they arrive in time order and wait in a FIFO instead (`Timer`); the run loop
/// takes whichever of queue and FIFO is first by (time, sequence number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Issue {
        slot: u32,
    },
    Dev {
        disk: u32,
        token: u64,
    },
    /// md's bitmap daemon pass.
    BitmapDaemon,
    /// The resync thread wakes (after its back-off sleep).
    ResyncStep,
    /// A job's submitter takes its next waiting I/O (sync raid5/6 writes: see `Submitter`).
    Resume {
        job: u32,
    },
}

/// A fio job's submitting thread, for sync writes to raid5/6: fio submits each I/O with its
/// own `io_submit`, and `raid5_make_request` runs in that thread and sleeps while the
/// stripe cache has no free heads, so while one of the job's writes waits for stripe
/// heads the job submits nothing else. Its further I/Os wait here, in order, and go in one
/// per event once the write is admitted.
#[derive(Default)]
struct Submitter {
    /// Slots whose next I/O waits for the submitter.
    queue: VecDeque<u32>,
    /// Entries of the job's writes in md's blocked queue.
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
    pub lat: Histogram,
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
    /// md's initial resync ran alongside the workload.
    pub resync_ran: bool,
}

struct HostIo {
    slot: u32,
    submit: Nanos,
    write: bool,
    offset: u64,
    len: u64,
    remaining: u32,
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
    job: Job,
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
    /// Stripe heads held by the write in flight, whether it was a full-stripe write, and
    /// whether it counts as a pre-reading stripe.
    flying: Option<(u64, bool, bool)>,
    /// Sync writes: the rows the write in flight writes (laid out as `written`) and its
    /// part, so that a write completing the stripe while it pre-reads can join it.
    fly_written: Vec<u64>,
    fly_part: u32,
}

pub struct Engine<D> {
    now: Nanos,
    seq: u64,
    heap: EventQueue<Ev>,
    timers: VecDeque<Timer>,
    devices: Vec<D>,
    geo: Geometry,
    rw: Rw,
    rwmixread: u8,
    bs: u64,
    region: (u64, u64),
    /// Blocks of `bs` in the region: where random I/Os may start.
    blocks: u64,
    /// Per job: RNG and sequential cursor.
    jobs: Vec<(ChaCha8Rng, u64)>,
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
    rows_in_use: u64,
    cache_rows: u64,
    cache_blocked: bool,
    blocked: VecDeque<(u32, u64, u64, u64)>,
    full_writes_flying: u32,
    /// md's `preread_active_stripes` and `delayed_list`.
    preread_active: u32,
    /// Host writes carry `REQ_SYNC` (fio's `direct=1`: O_DIRECT writes are sync), so
    /// `raid5_make_request` marks their stripes pre-read-active at once: they skip the
    /// delayed list and are not held back by full-stripe writes.
    sync_writes: bool,
    delayed: Vec<u32>,
    /// Per job, its submitting thread (used for sync writes to raid5/6 only).
    submitters: Vec<Submitter>,
    /// Jobs whose blocked writes were just admitted (`stripe_done`'s scratch).
    unblocked_jobs: Vec<u32>,
    /// `plan_stripe_into`'s read output when only the writes are wanted.
    spare_reads: Vec<Piece>,
    /// md's write-intent bitmap, when the array has one; host writes waiting for a flush
    /// (flush number, host, offset, length).
    bitmap: Option<Bitmap>,
    bitmap_waiting: Vec<(u64, u32, u64, u64)>,
    /// md's initial resync, when it runs during the workload.
    resync: Option<Resync>,
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

/// The (data unit, row) pairs a write to `[s, e)` of one stripe's data covers, in order.
fn touched(g: &Geometry, s: u64, e: u64) -> impl Iterator<Item = (usize, usize)> {
    let (shift, mask) = (g.chunk_shift, g.chunk - 1);
    (s / ROW..e.div_ceil(ROW)).map(move |r| {
        let at = r * ROW;
        ((at >> shift) as usize, ((at & mask) / ROW) as usize)
    })
}

/// What md's bitmap covers: each member's data for raid1/5/6, the array for raid10.
fn bitmap_space(g: &Geometry) -> u64 {
    match g.level {
        Level::Raid10 => g.member * g.disks as u64 / g.copies() as u64,
        _ => g.member,
    }
}

fn stream(seed: u64, component: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ component.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

impl<D: Member> Engine<D> {
    /// `member` is the bytes of each member the array uses (span or capacity); `device`
    /// makes a member from its platters' angle at time zero (a fraction of a revolution,
    /// drawn per member from the seed).
    pub fn new(case: &Case, member: u64, seed: u64, device: impl Fn(f64) -> D) -> Engine<D> {
        let spec = &case.array;
        let w = &case.workload;
        let devices = (0..spec.disks)
            .map(|d| device(stream(seed, 1_000 + d as u64).gen::<f64>()))
            .collect();
        let geo = Geometry::new(spec, member);
        let bitmap = (spec.bitmap == BitmapSetting::Internal
            && !matches!(spec.level, Level::Single | Level::Raid0))
        .then(|| Bitmap::new(bitmap_space(&geo)));
        let resync = (spec.resync == ResyncSetting::During
            && matches!(
                spec.level,
                Level::Raid1
                    | Level::Raid1c3
                    | Level::Raid1c4
                    | Level::Raid10
                    | Level::Raid5
                    | Level::Raid6
            ))
        .then(|| Resync::new(geo.member));
        let jobs = (0..w.numjobs)
            .map(|j| (stream(seed, j as u64), w.offset.0))
            .collect();
        let slots = w.numjobs * w.iodepth;
        let measure_from = w.ramp;
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
            blocked: VecDeque::new(),
            full_writes_flying: 0,
            preread_active: 0,
            sync_writes: w.direct,
            delayed: Vec::new(),
            submitters: (0..w.numjobs).map(|_| Submitter::default()).collect(),
            unblocked_jobs: Vec::new(),
            spare_reads: Vec::new(),
            bitmap,
            bitmap_waiting: Vec::new(),
            resync,
            measure_from,
            end: measure_from + w.runtime,
            read: DirStats::default(),
            write: DirStats::default(),
            per_sec: vec![[0, 0]; w.runtime.0.div_ceil(1_000_000_000) as usize],
            lat_per_sec: vec![[0, 0]; w.runtime.0.div_ceil(1_000_000_000) as usize],
            array_ios: [0, 0],
            events: 0,
            done: Vec::new(),
            adapter: Adapter {
                slots: case.disks.host_queue.unwrap_or(u32::MAX),
                busy: 0,
                waiting: VecDeque::new(),
            },
            geo,
        }
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
        for slot in 0..self.slot_job.len() as u32 {
            self.schedule(Nanos(0), Ev::Issue { slot });
        }
        if self.bitmap.is_some() {
            self.schedule(bitmap::DAEMON, Ev::BitmapDaemon);
        }
        if self.resync.is_some() {
            self.schedule(Nanos(0), Ev::ResyncStep);
        }
        loop {
            let timer_first = match (self.heap.peek(), self.timers.front()) {
                (Some(first), Some(t)) => Key::new(t.at, t.seq) < first,
                (None, Some(_)) => true,
                (Some(_), None) => false,
                (None, None) => break,
            };
            if timer_first {
                let t = self.timers.pop_front().expect("peeked");
                if t.at > self.end {
                    break;
                }
                self.now = t.at;
                self.events += 1;
                self.flush_timer(t.stripe, t.gen);
                continue;
            }
            let (at, _, ev) = self.heap.pop().expect("peeked");
            if at > self.end {
                break;
            }
            self.now = at;
            self.events += 1;
            match ev {
                Ev::Issue { slot } => self.issue(slot),
                Ev::Dev { disk, token } => {
                    let (base, now) = (self.done.len(), self.now);
                    let (device, mut out) = self.member(disk);
                    device.wake(now, token, &mut out);
                    self.complete_from(base);
                }
                Ev::BitmapDaemon => self.bitmap_daemon(),
                Ev::ResyncStep => self.resync_step(),
                Ev::Resume { job } => self.resume(job),
            }
        }
        SimRun {
            read: self.read,
            write: self.write,
            runtime: self.end - self.measure_from,
            iops_per_sec: self.per_sec,
            lat_sum_per_sec: self.lat_per_sec,
            members: self.devices.iter().map(|d| d.stats().clone()).collect(),
            array_ios: self.array_ios,
            events: self.events,
            resync_ran: self.resync.is_some(),
        }
    }

    /// Handle, in order, the member commands device calls completed since the `done`
    /// stack was `base` long (their wake-ups are already in the event queue). Handlers
    /// nested inside leave the stack as they found it, so the entries stay put.
    fn complete_from(&mut self, base: usize) {
        let end = self.done.len();
        for i in base..end {
            let tag = self.done[i];
            if self.adapter.limited() {
                self.adapter_release();
            }
            self.op_done(tag as u32);
        }
        debug_assert_eq!(self.done.len(), end);
        self.done.truncate(base);
    }

    /// Member `disk`, and where what it asks for goes: its wake-ups into the event queue,
    /// what it completes onto the `done` stack.
    #[inline(always)]
    fn member(&mut self, disk: u32) -> (&mut D, Out<'_, Sched<'_>>) {
        let out = Out {
            wakes: Sched {
                heap: &mut self.heap,
                seq: &mut self.seq,
                disk,
            },
            done: &mut self.done,
        };
        (&mut self.devices[disk as usize], out)
    }

    /// Hand a command to member `disk` now.
    #[inline]
    fn device_submit(&mut self, disk: u32, op: MemberOp) {
        let now = self.now;
        let (device, mut out) = self.member(disk);
        device.submit(now, op, &mut out);
    }

    /// Hand a command to a member, through the host adapter when the plan has one.
    #[inline]
    fn member_submit(&mut self, disk: u32, op: MemberOp) {
        if self.adapter.limited() {
            self.adapter_submit(disk, op);
        } else {
            self.device_submit(disk, op);
        }
    }

    /// `member_submit` behind a host adapter: queue the command while all the adapter's
    /// slots are taken. Out of line: only plans with `host_queue` come here.
    #[inline(never)]
    fn adapter_submit(&mut self, disk: u32, op: MemberOp) {
        if self.adapter.busy == self.adapter.slots {
            self.adapter.waiting.push_back((disk, op));
            return;
        }
        self.adapter.busy += 1;
        self.device_submit(disk, op);
    }

    /// A member completed a command: its slot goes to the longest-waiting command.
    #[inline(never)]
    fn adapter_release(&mut self) {
        self.adapter.busy -= 1;
        if let Some((disk, op)) = self.adapter.waiting.pop_front() {
            let base = self.done.len();
            self.adapter_submit(disk, op);
            self.complete_from(base);
        }
    }

    /// Whether writes go through the jobs' submitters (sync writes to raid5/6).
    fn gated(&self) -> bool {
        self.sync_writes && matches!(self.geo.level, Level::Raid5 | Level::Raid6)
    }

    fn issue(&mut self, slot: u32) {
        if self.now >= self.end {
            return;
        }
        if self.gated() {
            let job = self.slot_job[slot as usize] as usize;
            let sub = &mut self.submitters[job];
            if sub.blocked > 0 || sub.resume || !sub.queue.is_empty() {
                sub.queue.push_back(slot);
                return;
            }
        }
        self.issue_now(slot);
    }

    /// A job's submitter is free again: its next waiting I/O goes in, and the one after it
    /// in a later event (after md has handled what this one left), unless it blocks.
    fn resume(&mut self, job: u32) {
        let sub = &mut self.submitters[job as usize];
        sub.resume = false;
        if sub.blocked > 0 || self.now >= self.end {
            return;
        }
        let Some(slot) = sub.queue.pop_front() else {
            return;
        };
        self.issue_now(slot);
        self.schedule_resume(job);
    }

    fn schedule_resume(&mut self, job: u32) {
        let sub = &mut self.submitters[job as usize];
        if sub.blocked == 0 && !sub.resume && !sub.queue.is_empty() {
            sub.resume = true;
            self.schedule(self.now, Ev::Resume { job });
        }
    }

    fn issue_now(&mut self, slot: u32) {
        let job = self.slot_job[slot as usize] as usize;
        let (start, size) = self.region;
        let blocks = self.blocks;
        let (rng, cursor) = &mut self.jobs[job];
        let write = match self.rw {
            Rw::Read | Rw::RandRead => false,
            Rw::Write | Rw::RandWrite => true,
            Rw::RandRw | Rw::Rw => rng.gen_range(0..100u32) >= self.rwmixread as u32,
        };
        let offset = if self.rw.is_random() {
            start + rng.gen_range(0..blocks) * self.bs
        } else {
            let at = *cursor;
            *cursor = if at + 2 * self.bs > start + size {
                start
            } else {
                at + self.bs
            };
            at
        };
        let host = self.hosts.insert(HostIo {
            slot,
            submit: self.now,
            write,
            offset,
            len: self.bs,
            remaining: 0,
        });
        self.array_ios[write as usize] += 1;
        if write && self.bitmap.is_some() {
            self.bitmap_write(host, offset, self.bs);
            return;
        }
        self.dispatch(host, write, offset, self.bs);
    }

    // ------------------------------------------------------------ initial resync

    /// After a step: md's speed check decides between the next step now and a sleep.
    fn resync_next(&mut self) {
        let r = self.resync.as_mut().expect("resync");
        if r.finished() {
            return;
        }
        if r.should_wait(self.now) {
            self.schedule(self.now + resync::BACKOFF, Ev::ResyncStep);
        } else {
            self.resync_step();
        }
    }

    /// One step: read the members that hold the source copy or the data, then write the
    /// members being made consistent (see `resync.rs` for each level).
    fn resync_step(&mut self) {
        let r = self.resync.as_ref().expect("resync");
        if r.finished() {
            return;
        }
        let (offset, len) = r.next_range();
        let g = &self.geo;
        let n = g.disks;
        let written: Vec<u32> = match g.level {
            Level::Raid5 => vec![n - 1],
            Level::Raid6 => {
                let p = g.parity_map(offset / g.chunk * g.data_disks() as u64);
                vec![p.parity, p.q.expect("raid6 has Q")]
            }
            Level::Raid10 => (0..n).filter(|d| d % g.copies() != 0).collect(),
            _ => (1..n).collect(),
        };
        let reads: Vec<u32> = match g.level {
            Level::Raid6 => (0..n).collect(),
            _ => (0..n).filter(|d| !written.contains(d)).collect(),
        };
        let part = self.alloc_part();
        let p = self.parts.get(part);
        p.job = Job::Resync;
        p.phases[0].0 = false;
        p.phases[0]
            .1
            .extend(reads.iter().map(|&disk| Piece { disk, offset, len }));
        p.phases[1].0 = true;
        p.phases[1]
            .1
            .extend(written.iter().map(|&disk| Piece { disk, offset, len }));
        p.phase_count = 2;
        self.start_phase(part);
    }

    // ------------------------------------------------------------ write-intent bitmap

    /// Bytes of the bitmap's space a host write covers: raid5/6 bitmaps count member
    /// sectors (whole stripes: a chunk divides the bitmap chunk), raid1/10 array sectors.
    fn bitmap_range(&self, offset: u64, len: u64) -> (u64, u64) {
        let g = &self.geo;
        if matches!(g.level, Level::Raid5 | Level::Raid6) {
            let sd = g.stripe_data();
            (
                offset / sd * g.chunk,
                ((offset + len - 1) / sd + 1) * g.chunk - 1,
            )
        } else {
            (offset, offset + len - 1)
        }
    }

    /// `md_bitmap_startwrite`: a write to a clean chunk waits until the bitmap page with
    /// its bit is on every member; one to a chunk already dirty on disk goes straight on.
    fn bitmap_write(&mut self, host: u32, offset: u64, len: u64) {
        let (first, last) = self.bitmap_range(offset, len);
        let bm = self.bitmap.as_mut().expect("bitmap");
        match bm.start_write(first, last) {
            None => self.dispatch(host, true, offset, len),
            Some(flush) => {
                self.bitmap_waiting.push((flush, host, offset, len));
                self.bitmap_flush();
            }
        }
    }

    /// `md_bitmap_unplug`: write the dirty page to every member (at the start of each, where
    /// the internal bitmap lives before the data), if bits wait and no flush is under way.
    fn bitmap_flush(&mut self) {
        let bm = self.bitmap.as_mut().expect("bitmap");
        if !bm.wants_flush() {
            return;
        }
        bm.begin_flush();
        self.bitmap_page_write(Job::BitmapFlush);
    }

    fn bitmap_page_write(&mut self, job: Job) {
        let len = self.bitmap.as_ref().expect("bitmap").page_bytes();
        let part = self.alloc_part();
        let disks = self.geo.disks;
        let p = self.parts.get(part);
        p.job = job;
        p.phases[0].0 = true;
        p.phases[0].1.extend((0..disks).map(|disk| Piece {
            disk,
            offset: 0,
            len,
        }));
        p.phase_count = 1;
        self.start_phase(part);
    }

    /// A flush is on disk: the writes it covered go to the array; start the next flush if
    /// bits were set meanwhile.
    fn bitmap_flushed(&mut self) {
        let bm = self.bitmap.as_mut().expect("bitmap");
        let done = bm.end_flush();
        let mut waiting = std::mem::take(&mut self.bitmap_waiting);
        for &(flush, host, offset, len) in waiting.iter().filter(|w| w.0 <= done) {
            debug_assert!(flush <= done);
            self.dispatch(host, true, offset, len);
        }
        waiting.retain(|w| w.0 > done);
        waiting.append(&mut self.bitmap_waiting);
        self.bitmap_waiting = waiting;
        self.bitmap_flush();
    }

    /// The daemon's pass every `daemon_sleep`; cleared bits are written lazily.
    fn bitmap_daemon(&mut self) {
        if self.bitmap.as_mut().expect("bitmap").daemon() {
            self.bitmap_page_write(Job::BitmapClear);
        }
        self.schedule(self.now + bitmap::DAEMON, Ev::BitmapDaemon);
    }

    fn dispatch(&mut self, host: u32, write: bool, offset: u64, len: u64) {
        if matches!(self.geo.level, Level::Raid5 | Level::Raid6) && write {
            let sd = self.geo.stripe_data();
            let end = offset + len;
            let first = offset / sd;
            if end <= (first + 1) * sd {
                // Within one stripe (every small write): no further division. (The loop below
                // does the same, but costs 0.8 % more instructions per raid5 host I/O.)
                self.hosts.get(host).remaining = 1;
                self.stripe_write(host, first, offset - first * sd, end - first * sd);
                return;
            }
            let segments = end.div_ceil(sd) - first;
            self.hosts.get(host).remaining = segments as u32;
            let mut at = offset;
            while at < end {
                let stripe = at / sd;
                let seg_end = ((stripe + 1) * sd).min(end);
                self.stripe_write(host, stripe, at - stripe * sd, seg_end - stripe * sd);
                at = seg_end;
            }
            return;
        }
        let part = self.alloc_part();
        let mut pieces = std::mem::take(&mut self.parts.get(part).phases[0].1);
        let g = &self.geo;
        match g.level {
            Level::Single => pieces.push(Piece {
                disk: 0,
                offset,
                len,
            }),
            Level::Raid0 => {
                for (off, l) in g.chunks(offset, len) {
                    let (disk, m) = g.raid0(off);
                    pieces.push(Piece {
                        disk,
                        offset: m,
                        len: l,
                    });
                }
            }
            Level::Raid1 | Level::Raid1c3 | Level::Raid1c4 => {
                let mut copies = std::mem::take(&mut self.copies);
                copies.clear();
                copies.extend((0..g.disks).map(|d| (d, offset)));
                self.copies_to_pieces(write, &copies, len, &mut pieces);
                self.copies = copies;
            }
            Level::Raid10 => {
                let mut copies = std::mem::take(&mut self.copies);
                let mut at = offset;
                let end = offset + len;
                while at < end {
                    let next = ((self.geo.chunk_of(at) + 1) * self.geo.chunk).min(end);
                    copies.clear();
                    self.geo.raid10_into(at, &mut copies);
                    self.copies_to_pieces(write, &copies, next - at, &mut pieces);
                    at = next;
                }
                self.copies = copies;
            }
            Level::Raid5 | Level::Raid6 => {
                // A raid5 recovering its last member has not rebuilt it past the resync
                // point yet: md reads those blocks back from every other member.
                let missing = match (&self.resync, g.level) {
                    (Some(r), Level::Raid5) if !r.finished() => Some((g.disks - 1, r.done)),
                    _ => None,
                };
                for (off, l) in g.chunks(offset, len) {
                    let p = g.parity_map(g.chunk_of(off));
                    let at = p.stripe * g.chunk + g.in_chunk(off);
                    match missing {
                        Some((m, done)) if p.data_disk == m && at + l > done => {
                            pieces.extend((0..g.disks).filter(|&d| d != m).map(|disk| Piece {
                                disk,
                                offset: at,
                                len: l,
                            }));
                        }
                        _ => pieces.push(Piece {
                            disk: p.data_disk,
                            offset: at,
                            len: l,
                        }),
                    }
                }
            }
        }
        self.hosts.get(host).remaining = 1;
        let p = self.parts.get(part);
        p.hosts.push(host);
        p.phases[0] = (write, pieces);
        p.phase_count = 1;
        self.start_phase(part);
    }

    /// A part with empty buffers, ready to fill.
    fn alloc_part(&mut self) -> u32 {
        let id = self.parts.alloc();
        let p = self.parts.get(id);
        p.hosts.clear();
        p.phases[0].1.clear();
        p.phases[1].1.clear();
        p.phase_count = 0;
        p.phase = 0;
        p.pending = 0;
        p.stripe = None;
        p.job = Job::Host;
        id
    }

    /// Writes go to every copy; a read goes to one, chosen by md's read balancing.
    fn copies_to_pieces(&self, write: bool, copies: &[(u32, u64)], len: u64, out: &mut Vec<Piece>) {
        if write {
            out.extend(
                copies
                    .iter()
                    .map(|&(disk, offset)| Piece { disk, offset, len }),
            );
            return;
        }
        let (disk, offset) = self.read_balance(copies);
        out.push(Piece { disk, offset, len });
    }

    /// md's choice of copy: far/offset layouts read the lowest address (the first band);
    /// otherwise a copy whose head is already there (sequential), then on flash the least
    /// busy, then an idle disk, then the nearest head.
    fn read_balance(&self, copies: &[(u32, u64)]) -> (u32, u64) {
        if matches!(self.geo.layout, Some(Layout::Far(_) | Layout::Offset(_))) {
            return *copies.iter().min_by_key(|c| c.1).expect("copies");
        }
        let dev = |d: u32| &self.devices[d as usize];
        if let Some(c) = copies.iter().find(|c| dev(c.0).head() == c.1) {
            return *c;
        }
        if !dev(copies[0].0).rotational() {
            return *copies
                .iter()
                .min_by_key(|c| dev(c.0).pending())
                .expect("copies");
        }
        let distance = |c: &&(u32, u64)| dev(c.0).head().abs_diff(c.1);
        let idle = copies.iter().filter(|c| dev(c.0).pending() == 0);
        if let Some(c) = idle.min_by_key(distance) {
            return *c;
        }
        *copies.iter().min_by_key(distance).expect("copies")
    }

    /// Submit a part's current phase, member by member; a submit that completed something
    /// at once has it handled on the spot, before the next member's.
    fn start_phase(&mut self, part_id: u32) {
        let part = self.parts.get(part_id);
        let phase = part.phase;
        let (write, ref pieces) = part.phases[phase];
        let n = pieces.len();
        part.pending = n as u32;
        let base = self.done.len();
        for i in 0..n {
            let p = self.parts.get(part_id).phases[phase].1[i];
            let op = MemberOp {
                write,
                offset: p.offset,
                len: p.len,
                tag: part_id as u64,
            };
            self.member_submit(p.disk, op);
            if self.done.len() > base {
                self.complete_from(base);
            }
        }
    }

    /// A member command of a part completed.
    #[inline]
    fn op_done(&mut self, part_id: u32) {
        let part = self.parts.get(part_id);
        part.pending -= 1;
        if part.pending == 0 {
            self.phase_done(part_id);
        }
    }

    /// Every member command of a part's phase completed: its next phase starts, or it is
    /// done. Out of line, so the commands before the last return at once.
    #[inline(never)]
    fn phase_done(&mut self, part_id: u32) {
        let part = self.parts.get(part_id);
        part.phase += 1;
        if part.phase < part.phase_count {
            self.start_phase(part_id);
            return;
        }
        match part.job {
            Job::Host => {}
            Job::BitmapFlush => {
                self.parts.release(part_id);
                self.bitmap_flushed();
                return;
            }
            Job::BitmapClear => {
                self.parts.release(part_id);
                return;
            }
            Job::Resync => {
                self.parts.release(part_id);
                let r = self.resync.as_mut().expect("resync");
                r.done += r.next_range().1;
                self.resync_next();
                return;
            }
        }
        if let Some(stripe) = part.stripe {
            self.stripe_done(stripe);
        }
        // The part stays allocated until its hosts are done, so its buffer is not reused
        // by the I/Os they issue.
        for i in 0..self.parts.get(part_id).hosts.len() {
            let h = self.parts.get(part_id).hosts[i];
            let host = self.hosts.get(h);
            host.remaining -= 1;
            if host.remaining == 0 {
                self.host_done(h);
            }
        }
        self.parts.release(part_id);
    }

    fn host_done(&mut self, h: u32) {
        let host = self.hosts.remove(h);
        if host.write && self.bitmap.is_some() {
            let (first, last) = self.bitmap_range(host.offset, host.len);
            if let Some(bm) = self.bitmap.as_mut() {
                bm.end_write(first, last);
            }
        }
        if self.now >= self.measure_from && self.now <= self.end {
            let d = if host.write {
                &mut self.write
            } else {
                &mut self.read
            };
            d.ios += 1;
            d.bytes += host.len;
            let lat = (self.now - host.submit).0;
            d.lat.record(lat);
            let sec = ((self.now - self.measure_from).0 / 1_000_000_000) as usize;
            if let Some(s) = self.per_sec.get_mut(sec) {
                s[host.write as usize] += 1;
            }
            if let Some(s) = self.lat_per_sec.get_mut(sec) {
                s[host.write as usize] += lat;
            }
        }
        self.issue(host.slot);
    }

    // ------------------------------------------------------------ raid5/6 stripe cache

    /// The pool index of a stripe, if md holds it.
    fn stripe_slot(&self, stripe: u64) -> Option<u32> {
        self.stripe_index.get(stripe)
    }

    /// A write to `[s, e)` of one stripe's data. Each 4 KiB row needs a stripe head, taken
    /// one at a time as md's `raid5_make_request` does: when the cache runs out part way,
    /// the rows that fit go in and the rest of the write waits, first in line, until a
    /// quarter of the cache is free again (md's `R5_INACTIVE_BLOCKED` hysteresis). Later
    /// writes queue behind it.
    fn stripe_write(&mut self, host: u32, stripe: u64, s: u64, e: u64) {
        self.stripe_write_at(host, stripe, s, e, false);
    }

    /// [`Engine::stripe_write`]; `resumed` for the head of the blocked queue, which goes
    /// back to the front if it still does not fit.
    fn stripe_write_at(&mut self, host: u32, stripe: u64, s: u64, e: u64, resumed: bool) {
        let slot = self.stripe_slot(stripe);
        if self.sync_writes {
            if let Some(id) = slot {
                if self.join_preread(host, id, s, e) {
                    return;
                }
            }
        }
        let rows_needed = self.new_rows_in(slot, s, e);
        if self.cache_blocked || self.rows_in_use + rows_needed > self.cache_rows {
            let free = self.cache_rows.saturating_sub(self.rows_in_use);
            let (cut, rows) = if self.cache_blocked || free == 0 {
                (s, 0)
            } else {
                self.fitting_end(slot, s, e, free)
            };
            self.cache_blocked = true;
            if self.gated() {
                let job = self.slot_job[self.hosts.get(host).slot as usize];
                self.submitters[job as usize].blocked += 1;
            }
            if cut == s {
                if resumed {
                    self.blocked.push_front((host, stripe, s, e));
                } else {
                    self.blocked.push_back((host, stripe, s, e));
                }
                return;
            }
            // The write now has one more piece on this stripe to wait for.
            self.hosts.get(host).remaining += 1;
            self.blocked.push_front((host, stripe, cut, e));
            self.admit(host, stripe, slot, s, cut, rows);
            return;
        }
        self.admit(host, stripe, slot, s, e, rows_needed);
    }

    /// The furthest row boundary `m` in `(s, e]` such that `[s, m)` needs at most `free`
    /// new stripe heads of the stripe at `slot`, with that count; `(s, 0)` when not even
    /// the first row fits.
    fn fitting_end(&mut self, slot: Option<u32>, s: u64, e: u64, free: u64) -> (u64, u64) {
        let first = s / ROW;
        let end_of = |k: u64| ((first + k) * ROW).min(e);
        // Row boundaries after s: k = 1 ..= rows; k = 0 is s itself (nothing fits).
        let (mut lo, mut hi, mut rows) = (0, e.div_ceil(ROW) - first, 0);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let n = self.new_rows_in(slot, s, end_of(mid));
            if n <= free {
                (lo, rows) = (mid, n);
            } else {
                hi = mid - 1;
            }
        }
        if lo == 0 {
            (s, 0)
        } else {
            (end_of(lo), rows)
        }
    }

    /// Take the `rows_needed` stripe heads `[s, e)` needs and add the write to the open set
    /// of the stripe (held at `slot`, if md holds it).
    fn admit(
        &mut self,
        host: u32,
        stripe: u64,
        slot: Option<u32>,
        s: u64,
        e: u64,
        rows_needed: u64,
    ) {
        self.rows_in_use += rows_needed;
        let chunk = self.geo.chunk;
        let words = row_words(&self.geo);
        let dds = self.geo.data_disks() as usize;
        let id = match slot {
            Some(id) => id,
            None => {
                let id = self.stripes.alloc();
                let st = self.stripes.get(id);
                st.number = stripe;
                st.open = false;
                st.flying = None;
                self.stripe_index.insert(stripe, id);
                id
            }
        };
        let st = self.stripes.get(id);
        if !st.open {
            st.open = true;
            st.written.clear();
            st.written.resize(words * dds, 0);
            st.set_bits = 0;
            st.full_bits = ((chunk / ROW) as usize * dds) as u64;
            st.rows = 0;
            st.hosts.clear();
            st.gen = 0;
            st.armed = false;
            st.delayed = false;
        }
        st.rows += rows_needed;
        for (dd, row) in touched(&self.geo, s, e) {
            let word = &mut st.written[dd * words + row / 64];
            if *word >> (row % 64) & 1 == 0 {
                *word |= 1 << (row % 64);
                if st.set_bits == 0 {
                    st.first_bit = (dd as u32, row as u32);
                }
                st.set_bits += 1;
            }
        }
        st.hosts.push(host);
        self.settle(id);
    }

    /// What an open stripe set does next: nothing while it waits on the delayed list; go out
    /// now when no write of the stripe is in flight and the set is full or its writes are
    /// sync (the submitter's unplug: md handles the stripe as soon as the write is in;
    /// `stripe_done` settles it again after a write in flight); else wait (one timer per
    /// set, tagged with a fresh generation) for the rest of its data.
    fn settle(&mut self, id: u32) {
        let sync = self.sync_writes;
        let st = self.stripes.get(id);
        if !st.open || st.delayed {
            return;
        }
        if st.flying.is_none() && (sync || st.set_bits == st.full_bits) {
            self.flush(id);
        } else if !sync && !st.armed {
            st.armed = true;
            self.stripe_gen += 1;
            st.gen = self.stripe_gen;
            let gen = st.gen;
            self.schedule_timer(id, gen);
        }
    }

    /// Stripe heads a write to `[s, e)` adds: rows not yet held by the open set of the
    /// stripe held at `slot` (if md holds it).
    fn new_rows_in(&mut self, slot: Option<u32>, s: u64, e: u64) -> u64 {
        let words = row_words(&self.geo);
        if e.div_ceil(ROW) - s / ROW == 1 {
            // One row: new unless some data unit of the open set has it.
            let row = (self.geo.in_chunk(s) / ROW) as usize;
            let held = slot.is_some_and(|id| {
                let st = self.stripes.get(id);
                st.open
                    && st
                        .written
                        .chunks(words)
                        .any(|unit| unit[row / 64] >> (row % 64) & 1 == 1)
            });
            return !held as u64;
        }
        let mut mask = std::mem::take(&mut self.row_mask);
        mask.clear();
        mask.resize(words, 0);
        for (_, row) in touched(&self.geo, s, e) {
            mask[row / 64] |= 1 << (row % 64);
        }
        if let Some(id) = slot {
            let st = self.stripes.get(id);
            if st.open {
                for unit in st.written.chunks(words) {
                    for (m, w) in mask.iter_mut().zip(unit) {
                        *m &= !w;
                    }
                }
            }
        }
        let rows = mask.iter().map(|m| m.count_ones() as u64).sum();
        self.row_mask = mask;
        rows
    }

    fn flush_timer(&mut self, id: u32, gen: u64) {
        let full_writes_flying = self.full_writes_flying;
        let st = self.stripes.get(id);
        if !st.open || st.gen != gen {
            return;
        }
        if st.flying.is_some() {
            st.armed = false;
            return;
        }
        if full_writes_flying > 0 {
            // md keeps partial stripes back while full-stripe writes proceed (plug timers
            // are armed for writes that are not sync only: those skip it, see `settle`).
            self.schedule_timer(id, gen);
            return;
        }
        self.flush(id);
    }

    /// A stripe is ready: a full-stripe write goes out now; one that needs pre-reads
    /// starts them now if its writes are sync, else joins md's delayed list
    /// (`handle_stripe_dirtying` sets `STRIPE_DELAYED`).
    fn flush(&mut self, id: u32) {
        let dds = self.geo.data_disks() as u64;
        let st = self.stripes.get(id);
        // Some written row is not fully overwritten: `st.rows` rows are written, in
        // `set_bits` (data unit, row) pairs, so every row is full exactly when there are
        // `dds` pairs per row (plan_stripe counts at most 64 data units per row).
        let reads = if dds > 64 {
            st.rows != 0
        } else {
            st.set_bits != dds * st.rows
        };
        debug_assert_eq!(reads, needs_reads(&self.geo, &st.written));
        if !reads {
            self.launch(id, false);
        } else if self.sync_writes {
            self.preread_active += 1;
            self.launch(id, true);
        } else {
            st.delayed = true;
            self.delayed.push(id);
            self.activate_delayed();
        }
    }

    /// `raid5_activate_delayed`: the delayed stripes are released together, and only when
    /// no pre-reading stripe is active (`IO_THRESHOLD` = 1) and no full-stripe write is
    /// being handled. Random writes to raid5/6 therefore proceed in batches.
    fn activate_delayed(&mut self) {
        if self.preread_active > 0 || self.full_writes_flying > 0 || self.delayed.is_empty() {
            return;
        }
        let mut delayed = std::mem::take(&mut self.delayed);
        for &id in &delayed {
            self.preread_active += 1;
            self.launch(id, true);
        }
        delayed.clear();
        if self.delayed.is_empty() {
            self.delayed = delayed;
        }
    }

    /// Send a stripe's open write set to the members; the stripe's buffers move to a part
    /// and come back empty.
    fn launch(&mut self, id: u32, preread: bool) {
        let part_id = self.alloc_part();
        let part = self.parts.get(part_id);
        let st = self.stripes.get(id);
        let [(r_write, reads), (w_write, writes)] = &mut part.phases;
        if st.set_bits == 1 && self.geo.disks <= 64 {
            // One block written (a small random write): no need to scan the row bitmaps.
            let (dd, row) = st.first_bit;
            plan_one_row(&self.geo, st.number, row as u64, 1 << dd, reads, writes);
        } else {
            plan_stripe_into(
                &self.geo,
                st.number,
                &st.written,
                reads,
                writes,
                &mut self.plan_scratch,
            );
        }
        (*r_write, *w_write) = (false, true);
        let full = reads.is_empty();
        if full {
            part.phases.swap(0, 1);
            part.phase_count = 1;
        } else {
            part.phase_count = 2;
        }
        part.stripe = Some(id);
        std::mem::swap(&mut part.hosts, &mut st.hosts);
        if self.sync_writes && !full {
            std::mem::swap(&mut st.fly_written, &mut st.written);
            st.fly_part = part_id;
        } else {
            st.fly_written.clear();
        }
        st.open = false;
        st.flying = Some((st.rows, full, preread));
        if full {
            self.full_writes_flying += 1;
        }
        self.start_phase(part_id);
    }

    fn stripe_done(&mut self, id: u32) {
        let st = self.stripes.get(id);
        let (rows, full, preread) = st.flying.take().expect("flying stripe");
        let open = st.open;
        let number = st.number;
        self.rows_in_use -= rows;
        if full {
            self.full_writes_flying -= 1;
        }
        if preread {
            self.preread_active -= 1;
        }
        if open {
            self.settle(id);
        } else {
            self.stripe_index.remove(number);
            self.stripes.release(id);
        }
        self.activate_delayed();
        if self.cache_blocked && self.rows_in_use * 4 <= self.cache_rows * 3 {
            self.cache_blocked = false;
            while !self.cache_blocked {
                let Some((host, st, s, e)) = self.blocked.pop_front() else {
                    break;
                };
                if self.gated() {
                    let job = self.slot_job[self.hosts.get(host).slot as usize];
                    self.submitters[job as usize].blocked -= 1;
                    self.unblocked_jobs.push(job);
                }
                self.stripe_write_at(host, st, s, e, true);
            }
            let mut jobs = std::mem::take(&mut self.unblocked_jobs);
            for &job in &jobs {
                self.schedule_resume(job);
            }
            jobs.clear();
            self.unblocked_jobs = jobs;
        }
    }

    /// `add_stripe_bio` on a stripe whose sync write is still pre-reading: when the new
    /// write leaves every row it touches fully written, and needs no row the stripe does
    /// not already hold, its data joins the write in flight. The pre-reads then find every
    /// block of those rows written or up to date, and the part writes the union (the read
    /// of a block now overwritten was wasted, but nothing is read again). The host write
    /// completes with the part. Otherwise (or once the part writes) the write waits for a
    /// new set, as before.
    fn join_preread(&mut self, host: u32, id: u32, s: u64, e: u64) -> bool {
        let words = row_words(&self.geo);
        let dds = self.geo.data_disks() as usize;
        let st = self.stripes.get(id);
        if st.open || st.flying.is_none() || st.fly_written.len() != words * dds {
            return false;
        }
        let part = self.parts.get(st.fly_part);
        if part.phase_count != 2 || part.phase != 0 || part.stripe != Some(id) {
            return false;
        }
        let mut union = std::mem::take(&mut self.row_mask);
        union.clear();
        union.extend_from_slice(&st.fly_written);
        for (dd, row) in touched(&self.geo, s, e) {
            union[dd * words + row / 64] |= 1 << (row % 64);
        }
        let held_and_full = touched(&self.geo, s, e).all(|(_, row)| {
            let bit = |w: &[u64], dd: usize| w[dd * words + row / 64] >> (row % 64) & 1 == 1;
            (0..dds).any(|dd| bit(&st.fly_written, dd)) && (0..dds).all(|dd| bit(&union, dd))
        });
        if !held_and_full {
            self.row_mask = union;
            return false;
        }
        std::mem::swap(&mut st.fly_written, &mut union);
        self.row_mask = union;
        let (number, part_id) = (st.number, st.fly_part);
        let part = self.parts.get(part_id);
        let mut reads = std::mem::take(&mut self.spare_reads);
        reads.clear();
        part.phases[1].1.clear();
        plan_stripe_into(
            &self.geo,
            number,
            &self.stripes.get(id).fly_written,
            &mut reads,
            &mut part.phases[1].1,
            &mut self.plan_scratch,
        );
        reads.clear();
        self.spare_reads = reads;
        part.hosts.push(host);
        true
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
