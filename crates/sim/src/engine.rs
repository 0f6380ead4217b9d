//! The discrete-event engine: fio-like jobs issue host I/Os, md splits them into member
//! operations, devices serve them, completions flow back.
//!
//! Time is integer nanoseconds and events are ordered by (time, sequence number), so ties
//! replay identically; every random stream is a ChaCha8 generator seeded from the run's
//! seed and the component's number. Same case + seed ⇒ same events ⇒ same bytes out.

use crate::device::{Device, DeviceStats, MemberOp, Out};
use crate::hist::Histogram;
use crate::md::{plan_stripe, Geometry, Piece, ROW};
use crate::slab::Slab;
use raidlab_core::disk::DiskModel;
use raidlab_core::{Case, Layout, Level, Nanos, Rw, WriteCache};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// How long md holds a partial-stripe write hoping the rest of the stripe arrives
/// (the block layer's unplug, roughly), unless full-stripe writes are in flight.
const PLUG_DELAY: Nanos = Nanos(100_000);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Issue { slot: u32 },
    Dev { disk: u32, token: u64 },
    Flush { stripe: u64, gen: u64 },
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
    pub members: Vec<DeviceStats>,
    /// Host I/Os md saw (its own disk_util line).
    pub array_ios: [u64; 2],
    /// Events processed: the benchmark's unit of work.
    pub events: u64,
}

struct HostIo {
    slot: u32,
    submit: Nanos,
    write: bool,
    len: u64,
    remaining: u32,
}

struct Part {
    hosts: Vec<u32>,
    phases: Vec<(bool, Vec<Piece>)>,
    phase: usize,
    pending: u32,
    stripe: Option<u64>,
}

struct Pending {
    written: Vec<Vec<u64>>,
    set_bits: u64,
    /// Bits when every row of every data unit is written: a full-stripe write.
    full_bits: u64,
    rows: u64,
    hosts: Vec<u32>,
    gen: u64,
    armed: bool,
    /// Waiting on md's delayed list for pre-reads to be allowed.
    delayed: bool,
}

#[derive(Default)]
struct StripeSlot {
    open: Option<Pending>,
    /// Stripe heads held by the write in flight, whether it was a full-stripe write, and
    /// whether it counts as a pre-reading stripe.
    flying: Option<(u64, bool, bool)>,
}

pub struct Engine {
    now: Nanos,
    seq: u64,
    heap: BinaryHeap<Reverse<(Nanos, u64, Ev)>>,
    devices: Vec<Device>,
    geo: Geometry,
    rw: Rw,
    rwmixread: u8,
    bs: u64,
    region: (u64, u64),
    /// Per job: RNG and sequential cursor.
    jobs: Vec<(ChaCha8Rng, u64)>,
    slot_job: Vec<u32>,
    hosts: Slab<HostIo>,
    parts: Slab<Part>,
    stripes: HashMap<u64, StripeSlot>,
    stripe_gen: u64,
    rows_in_use: u64,
    cache_rows: u64,
    cache_blocked: bool,
    blocked: VecDeque<(u32, u64, u64, u64)>,
    full_writes_flying: u32,
    /// md's `preread_active_stripes` and `delayed_list`.
    preread_active: u32,
    delayed: Vec<u64>,
    measure_from: Nanos,
    end: Nanos,
    read: DirStats,
    write: DirStats,
    per_sec: Vec<[u64; 2]>,
    array_ios: [u64; 2],
    events: u64,
    out: Out,
}

/// The (data unit, row) pairs a write to `[s, e)` of one stripe's data covers, in order.
fn touched(chunk: u64, s: u64, e: u64) -> impl Iterator<Item = (usize, usize)> {
    (s / ROW..e.div_ceil(ROW)).map(move |r| {
        let at = r * ROW;
        ((at / chunk) as usize, ((at % chunk) / ROW) as usize)
    })
}

fn stream(seed: u64, component: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ component.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

impl Engine {
    /// `member` is the bytes of each member the array uses (span or capacity).
    pub fn new(case: &Case, model: &DiskModel, member: u64, seed: u64) -> Engine {
        let spec = &case.array;
        let w = &case.workload;
        let write_cache = spec.write_cache == WriteCache::On;
        let devices = (0..spec.disks)
            .map(|d| {
                let phase = stream(seed, 1_000 + d as u64).gen::<f64>();
                Device::new(model, write_cache, phase)
            })
            .collect();
        let geo = Geometry::new(spec, member);
        let jobs = (0..w.numjobs)
            .map(|j| (stream(seed, j as u64), w.offset.0))
            .collect();
        let slots = w.numjobs * w.iodepth;
        let measure_from = w.ramp;
        Engine {
            now: Nanos(0),
            seq: 0,
            heap: BinaryHeap::new(),
            devices,
            rw: w.rw,
            rwmixread: w.rwmixread,
            bs: w.bs.0,
            region: (w.offset.0, w.size.0),
            jobs,
            slot_job: (0..slots).map(|s| s / w.iodepth).collect(),
            hosts: Slab::new(),
            parts: Slab::new(),
            stripes: HashMap::new(),
            stripe_gen: 0,
            rows_in_use: 0,
            cache_rows: spec.stripe_cache.unwrap_or(256) as u64,
            cache_blocked: false,
            blocked: VecDeque::new(),
            full_writes_flying: 0,
            preread_active: 0,
            delayed: Vec::new(),
            measure_from,
            end: measure_from + w.runtime,
            read: DirStats::default(),
            write: DirStats::default(),
            per_sec: vec![[0, 0]; w.runtime.0.div_ceil(1_000_000_000) as usize],
            array_ios: [0, 0],
            events: 0,
            out: Out::default(),
            geo,
        }
    }

    fn schedule(&mut self, at: Nanos, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    pub fn run(mut self) -> SimRun {
        for slot in 0..self.slot_job.len() as u32 {
            self.schedule(Nanos(0), Ev::Issue { slot });
        }
        while let Some(Reverse((at, _, ev))) = self.heap.pop() {
            if at > self.end {
                break;
            }
            self.now = at;
            self.events += 1;
            match ev {
                Ev::Issue { slot } => self.issue(slot),
                Ev::Dev { disk, token } => {
                    let mut out = std::mem::take(&mut self.out);
                    self.devices[disk as usize].wake(self.now, token, &mut out);
                    self.drain(disk, &mut out);
                    self.out = out;
                }
                Ev::Flush { stripe, gen } => self.flush_timer(stripe, gen),
            }
        }
        SimRun {
            read: self.read,
            write: self.write,
            runtime: self.end - self.measure_from,
            iops_per_sec: self.per_sec,
            members: self.devices.iter().map(|d| d.stats().clone()).collect(),
            array_ios: self.array_ios,
            events: self.events,
        }
    }

    /// Turn a device's requests into events; completions are handled now.
    fn drain(&mut self, disk: u32, out: &mut Out) {
        for (at, token) in out.wakes.drain(..) {
            self.schedule(at, Ev::Dev { disk, token });
        }
        for tag in out.done.drain(..) {
            self.op_done(tag as u32);
        }
    }

    fn issue(&mut self, slot: u32) {
        if self.now >= self.end {
            return;
        }
        let job = self.slot_job[slot as usize] as usize;
        let (start, size) = self.region;
        let blocks = (size / self.bs).max(1);
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
            len: self.bs,
            remaining: 0,
        });
        self.array_ios[write as usize] += 1;
        self.dispatch(host, write, offset, self.bs);
    }

    fn dispatch(&mut self, host: u32, write: bool, offset: u64, len: u64) {
        let g = &self.geo;
        let mut pieces = Vec::new();
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
                let copies: Vec<(u32, u64)> = (0..g.disks).map(|d| (d, offset)).collect();
                self.copies_to_pieces(write, &copies, len, &mut pieces);
            }
            Level::Raid10 => {
                let chunks: Vec<(u64, u64)> = g.chunks(offset, len).collect();
                for (off, l) in chunks {
                    let copies = self.geo.raid10(off);
                    self.copies_to_pieces(write, &copies, l, &mut pieces);
                }
            }
            Level::Raid5 | Level::Raid6 if !write => {
                for (off, l) in g.chunks(offset, len) {
                    let p = g.parity_map(off / g.chunk);
                    pieces.push(Piece {
                        disk: p.data_disk,
                        offset: p.stripe * g.chunk + off % g.chunk,
                        len: l,
                    });
                }
            }
            Level::Raid5 | Level::Raid6 => {
                let sd = g.stripe_data();
                let mut at = offset;
                let end = offset + len;
                let mut segments = Vec::new();
                while at < end {
                    let stripe = at / sd;
                    let seg_end = ((stripe + 1) * sd).min(end);
                    segments.push((stripe, at - stripe * sd, seg_end - stripe * sd));
                    at = seg_end;
                }
                self.hosts.get(host).remaining = segments.len() as u32;
                for (stripe, s, e) in segments {
                    self.stripe_write(host, stripe, s, e);
                }
                return;
            }
        }
        self.hosts.get(host).remaining = 1;
        let part = self.parts.insert(Part {
            hosts: vec![host],
            phases: vec![(write, pieces)],
            phase: 0,
            pending: 0,
            stripe: None,
        });
        self.start_phase(part);
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

    fn start_phase(&mut self, part_id: u32) {
        let part = self.parts.get(part_id);
        let (write, pieces) = std::mem::take(&mut part.phases[part.phase]);
        part.pending = pieces.len() as u32;
        let mut out = std::mem::take(&mut self.out);
        for p in pieces {
            let op = MemberOp {
                write,
                offset: p.offset,
                len: p.len,
                tag: part_id as u64,
            };
            self.devices[p.disk as usize].submit(self.now, op, &mut out);
            self.drain(p.disk, &mut out);
        }
        self.out = out;
    }

    fn op_done(&mut self, part_id: u32) {
        let part = self.parts.get(part_id);
        part.pending -= 1;
        if part.pending > 0 {
            return;
        }
        part.phase += 1;
        if part.phase < part.phases.len() {
            self.start_phase(part_id);
            return;
        }
        let part = self.parts.remove(part_id);
        if let Some(stripe) = part.stripe {
            self.stripe_done(stripe);
        }
        for h in part.hosts {
            let host = self.hosts.get(h);
            host.remaining -= 1;
            if host.remaining == 0 {
                self.host_done(h);
            }
        }
    }

    fn host_done(&mut self, h: u32) {
        let host = self.hosts.remove(h);
        if self.now >= self.measure_from && self.now <= self.end {
            let d = if host.write {
                &mut self.write
            } else {
                &mut self.read
            };
            d.ios += 1;
            d.bytes += host.len;
            d.lat.record((self.now - host.submit).0);
            let sec = ((self.now - self.measure_from).0 / 1_000_000_000) as usize;
            if let Some(s) = self.per_sec.get_mut(sec) {
                s[host.write as usize] += 1;
            }
        }
        self.issue(host.slot);
    }

    // ------------------------------------------------------------ raid5/6 stripe cache

    /// A write to `[s, e)` of one stripe's data. Each 4 KiB row needs a stripe head; when
    /// the cache is exhausted, writers wait until a quarter of it is free again (md's
    /// `R5_INACTIVE_BLOCKED` hysteresis).
    fn stripe_write(&mut self, host: u32, stripe: u64, s: u64, e: u64) {
        let rows_needed = self.new_rows(stripe, s, e);
        if self.cache_blocked || self.rows_in_use + rows_needed > self.cache_rows {
            self.cache_blocked = true;
            self.blocked.push_back((host, stripe, s, e));
            return;
        }
        self.rows_in_use += rows_needed;
        let chunk = self.geo.chunk;
        let rows_per_chunk = (chunk / ROW) as usize;
        let dds = self.geo.data_disks() as usize;
        let slot = self.stripes.entry(stripe).or_default();
        let pending = slot.open.get_or_insert_with(|| Pending {
            written: vec![vec![0; rows_per_chunk.div_ceil(64)]; dds],
            set_bits: 0,
            full_bits: (rows_per_chunk * dds) as u64,
            rows: 0,
            hosts: Vec::new(),
            gen: 0,
            armed: false,
            delayed: false,
        });
        pending.rows += rows_needed;
        for (dd, row) in touched(chunk, s, e) {
            let word = &mut pending.written[dd][row / 64];
            if *word >> (row % 64) & 1 == 0 {
                *word |= 1 << (row % 64);
                pending.set_bits += 1;
            }
        }
        pending.hosts.push(host);
        self.settle(stripe);
    }

    /// What an open stripe set does next: nothing while it waits on the delayed list; go out
    /// now when it is full and no write of the stripe is in flight; else wait (one timer per
    /// set, tagged with a fresh generation) for the rest of its data.
    fn settle(&mut self, stripe: u64) {
        let slot = self.stripes.get_mut(&stripe).expect("stripe slot");
        let flying = slot.flying.is_some();
        let Some(p) = slot.open.as_mut() else { return };
        if p.delayed {
            return;
        }
        if p.set_bits == p.full_bits && !flying {
            self.flush(stripe);
        } else if !p.armed {
            p.armed = true;
            self.stripe_gen += 1;
            p.gen = self.stripe_gen;
            let gen = p.gen;
            self.schedule(self.now + PLUG_DELAY, Ev::Flush { stripe, gen });
        }
    }

    /// Stripe heads a write to `[s, e)` adds: rows not yet held by the stripe's open set.
    fn new_rows(&self, stripe: u64, s: u64, e: u64) -> u64 {
        let chunk = self.geo.chunk;
        let rows_per_chunk = chunk / ROW;
        let held = |row: u64| {
            self.stripes
                .get(&stripe)
                .and_then(|st| st.open.as_ref())
                .is_some_and(|p| {
                    p.written
                        .iter()
                        .any(|w| w[(row / 64) as usize] >> (row % 64) & 1 == 1)
                })
        };
        let mut rows = vec![false; rows_per_chunk as usize];
        for (_, row) in touched(chunk, s, e) {
            rows[row] = true;
        }
        rows.iter()
            .enumerate()
            .filter(|(r, &on)| on && !held(*r as u64))
            .count() as u64
    }

    fn flush_timer(&mut self, stripe: u64, gen: u64) {
        let Some(slot) = self.stripes.get_mut(&stripe) else {
            return;
        };
        let Some(p) = slot.open.as_mut() else { return };
        if p.gen != gen {
            return;
        }
        if slot.flying.is_some() {
            p.armed = false;
            return;
        }
        if self.full_writes_flying > 0 {
            // md keeps partial stripes back while full-stripe writes proceed.
            self.schedule(self.now + PLUG_DELAY, Ev::Flush { stripe, gen });
            return;
        }
        self.flush(stripe);
    }

    /// A stripe is ready: a full-stripe write goes out now; one that needs pre-reads
    /// joins md's delayed list (`handle_stripe_dirtying` sets `STRIPE_DELAYED`).
    fn flush(&mut self, stripe: u64) {
        let slot = self.stripes.get_mut(&stripe).expect("stripe slot");
        let p = slot.open.as_mut().expect("open stripe");
        let plan = plan_stripe(&self.geo, stripe, &p.written);
        if plan.reads.is_empty() {
            self.launch(stripe, false);
        } else {
            p.delayed = true;
            self.delayed.push(stripe);
            self.activate_delayed();
        }
    }

    /// `raid5_activate_delayed`: the delayed stripes are released together, and only when
    /// no pre-reading stripe is active (`IO_THRESHOLD` = 1) and no full-stripe write is
    /// being handled. Random writes to raid5/6 therefore proceed in batches.
    fn activate_delayed(&mut self) {
        if self.preread_active > 0 || self.full_writes_flying > 0 {
            return;
        }
        for stripe in std::mem::take(&mut self.delayed) {
            self.preread_active += 1;
            self.launch(stripe, true);
        }
    }

    fn launch(&mut self, stripe: u64, preread: bool) {
        let slot = self.stripes.get_mut(&stripe).expect("stripe slot");
        let p = slot.open.take().expect("open stripe");
        let plan = plan_stripe(&self.geo, stripe, &p.written);
        let full = plan.reads.is_empty();
        slot.flying = Some((p.rows, full, preread));
        let mut phases = Vec::with_capacity(2);
        if full {
            self.full_writes_flying += 1;
        } else {
            phases.push((false, plan.reads));
        }
        phases.push((true, plan.writes));
        let part = self.parts.insert(Part {
            hosts: p.hosts,
            phases,
            phase: 0,
            pending: 0,
            stripe: Some(stripe),
        });
        self.start_phase(part);
    }

    fn stripe_done(&mut self, stripe: u64) {
        let slot = self.stripes.get_mut(&stripe).expect("stripe slot");
        let (rows, full, preread) = slot.flying.take().expect("flying stripe");
        self.rows_in_use -= rows;
        if full {
            self.full_writes_flying -= 1;
        }
        if preread {
            self.preread_active -= 1;
        }
        if slot.open.is_some() {
            self.settle(stripe);
        } else {
            self.stripes.remove(&stripe);
        }
        self.activate_delayed();
        if self.cache_blocked && self.rows_in_use * 4 <= self.cache_rows * 3 {
            self.cache_blocked = false;
            while let Some(&(host, st, s, e)) = self.blocked.front() {
                if self.rows_in_use + self.new_rows(st, s, e) > self.cache_rows {
                    self.cache_blocked = true;
                    break;
                }
                self.blocked.pop_front();
                self.stripe_write(host, st, s, e);
            }
        }
    }
}
