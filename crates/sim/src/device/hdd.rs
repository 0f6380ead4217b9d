//! A mechanical disk, as its firmware runs it, and the host's queue above it.
//!
//! The mechanics follow Ruemmler & Wilkes / DiskSim: a seek curve (square root for short
//! seeks, linear beyond a third of the stroke), the platter's rotation tracked through
//! time (so an I/O waits for its sector to come round, not for a random draw), zoned
//! transfer rates and a per-command controller overhead. The firmware (docs/simulator.md
//! has each mechanism with its source):
//! - holds at most `queue_depth` commands (NCQ tags, the one it serves included) and
//!   serves the one it estimates quickest to reach, shortest positioning time first; its
//!   estimate of a command's positioning time is the true time times 1 + u ×
//!   `reorder_noise` (u uniform in [0, 1), drawn per choice), so reordering gains less
//!   than a perfect scheduler would;
//! - with its volatile write cache on, acknowledges a write once the data is in the cache
//!   while the cache holds fewer than `cache_commands` dirty writes (and fewer bytes than
//!   `cache`), and destages them between host commands, shortest positioning time first
//!   over the oldest `destage_window`; a nearly full cache competes with host commands;
//! - reads on past a host read while it has nothing else to do (its read look-ahead, one
//!   revolution's worth: [`READ_AHEAD_REVS`]), so a read that continues it after a pause
//!   takes what was read meanwhile from the cache, at the interface's rate;
//! - takes a write with PREFLUSH + FUA (md's bitmap and superblock writes) as a
//!   non-queued command: the queue drains, every dirty write goes to the media, then the
//!   write itself, and nothing else enters the drive meanwhile.
//!
//! Commands beyond the drive's queue wait above it in the host's I/O scheduler
//! ([`Elevator`]).

use super::elevator::Elevator;
use super::{count, to_f64, DeviceStats, Member, MemberOp, Out, Wakes};
use crate::slab::Slab;
use raidlab_core::disk::HddParams;
use raidlab_core::{Nanos, Scheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

// `floor`, `fract` and `ceil` of non-negative values, exact, without a libm call (the
// disk model's hot path takes several per command).

fn floor_pos(x: f64) -> f64 {
    debug_assert!((0.0..9.2e18).contains(&x));
    // The signed conversion is one instruction; the values here are far below 2^63.
    (x as i64) as f64
}

fn fract_pos(x: f64) -> f64 {
    x - floor_pos(x)
}

fn ceil_pos(x: f64) -> u64 {
    debug_assert!((0.0..9.2e18).contains(&x));
    let t = x as i64;
    if (t as f64) < x {
        t as u64 + 1
    } else {
        t as u64
    }
}

/// A zone's figures, as reciprocals: the hot path multiplies, it never divides.
#[derive(Debug, Clone, Copy)]
struct Zone {
    start: u64,
    /// Cylinders per byte.
    cyl_per_byte: f64,
    /// Revolutions per byte (1 / bytes passing under the head in one revolution).
    revs_per_byte: f64,
    /// Nanoseconds per byte of media transfer.
    ns_per_byte: f64,
}

/// The seek curve's constants, worked out once instead of per call.
#[derive(Debug, Clone, Copy)]
struct SeekCurve {
    third: f64,
    /// 1 / (third - 1).
    inv_third_m1: f64,
    t1: f64,
    ta: f64,
    ta_t1: f64,
    /// Slope of the linear part: (full stroke - average) / (cylinders - third).
    long_slope: f64,
}

/// A command in the drive, or waiting above it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Queued {
    pub(super) op: MemberOp,
    pub(super) arrival: Nanos,
    /// When the drive took it into its queue (for its aging rule).
    accepted: Nanos,
    /// Internal destage of cached write data (no host completion).
    destage: bool,
    /// Where the command's data lies (cylinder, angle in its track) and its media transfer
    /// time: fixed per command, so worked out once, not at every queue scan.
    cyl: f64,
    angle: f64,
    transfer: f64,
    /// Cylinder of the last byte: where the head ends up.
    end_cyl: f64,
}

impl Queued {
    /// A command that arrived at `arrival`, its position not worked out yet.
    pub(super) fn new(op: MemberOp, arrival: Nanos) -> Queued {
        Queued {
            op,
            arrival,
            accepted: arrival,
            destage: false,
            cyl: 0.0,
            angle: 0.0,
            transfer: 0.0,
            end_cyl: 0.0,
        }
    }
}

/// The command the firmware has chosen so far while it scans its queue and its cache.
#[derive(Clone, Copy)]
struct Choice {
    /// From the dirty writes (else from the host commands).
    destage: bool,
    index: usize,
    /// Its true positioning and transfer times, and the firmware's estimate it was chosen by.
    pos: f64,
    xfer: f64,
    estimate: f64,
}

/// A wake token that acknowledges a cached write: above it, the write's slot in
/// `Hdd::acks`. (Not the write's tag: a tag may use every bit, the engine's merged
/// commands the top one.)
const ACK: u64 = 1 << 63;
const SERVICE_DONE: u64 = 0;
/// How many queued commands the firmware scans when choosing the next one.
const SPTF_WINDOW: usize = 64;
/// A command the drive has held this long goes next, oldest first: firmware bounds how
/// long its reordering may pass a command over (a stream of commands that continue one
/// another would otherwise hold a far one back forever). Vendors publish no figure; at 1 s
/// it trims only the tail of a random workload at NCQ depth (one `hdd-7200`, QD32 over
/// the whole disk: the longest read 2,099 → 1,026 ms, IOPS 142.2 → 142.4), far below the
/// kernel's 30 s command timeout.
const AGE_LIMIT: Nanos = Nanos(1_000_000_000);
/// Revolutions a drive reads on past a host read while it is idle (its read look-ahead:
/// at least the rest of the track, here one revolution's worth), so that a read which
/// continues it after a pause finds that much in the cache and takes it at the
/// interface's rate.
const READ_AHEAD_REVS: f64 = 1.0;

pub struct Hdd {
    p: HddParams,
    /// The zones, outer to inner, and a sentinel starting at `u64::MAX`.
    zones: Vec<Zone>,
    /// A copy of the outer zone, and where the next starts.
    outer: Zone,
    outer_end: u64,
    /// For each `1 << lut_shift` bytes of the disk, the zone its first byte lies in: a
    /// zone lookup is one load and at most a step or two, not a binary search.
    zone_lut: Vec<u16>,
    lut_shift: u32,
    cyl_per_zone: f64,
    curve: SeekCurve,
    /// `overhead` and `write_settle` as `f64`.
    overhead: f64,
    write_settle: f64,
    period: f64,
    inv_period: f64,
    /// Angle (fraction of a revolution) at time zero.
    phase: f64,
    write_cache: bool,
    /// The drive's command queue: what it holds besides the command it serves.
    queue: Vec<Queued>,
    /// Above the drive: the host's I/O scheduler.
    elevator: Elevator,
    /// Cached writes not yet on the media, oldest first, and their bytes.
    destage: VecDeque<Queued>,
    /// Dirty writes in the cache (those being destaged included), and their bytes.
    dirty: usize,
    dirty_bytes: u64,
    /// A PREFLUSH + FUA write the drive is making room for.
    barrier: Option<Queued>,
    /// A command is being served: `current`; it holds a queue slot (a host command).
    busy: bool,
    current: Queued,
    current_holds_slot: bool,
    head_cyl: f64,
    head_offset: u64,
    /// End of the last media transfer: a command starting there streams on.
    last_end: u64,
    /// When the last media transfer ended, if it was a host read: the drive reads on
    /// from there while it has nothing else to do ([`READ_AHEAD_REVS`]).
    read_ahead_from: Option<f64>,
    pending: usize,
    /// The tags of cached writes whose acknowledgement is on its way, by the slot their
    /// wake token carries.
    acks: Slab<u64>,
    stats: DeviceStats,
    /// The firmware's estimate error (a share of the true time, at most) and its draws.
    noise: f64,
    rng: ChaCha8Rng,
}

impl Hdd {
    /// A disk with `p`'s figures, its cache on or off, under `scheduler`; `rng` gives its
    /// platter's starting angle and its firmware's estimate errors.
    pub fn new(
        p: &HddParams,
        write_cache: bool,
        scheduler: Scheduler,
        rng: &mut ChaCha8Rng,
    ) -> Hdd {
        let phase: f64 = rng.gen();
        let zones_n = p.zones.max(1) as usize;
        let cyl_per_zone = p.cylinders as f64 / zones_n as f64;
        let rates: Vec<f64> = (0..zones_n)
            .map(|z| {
                let f = if zones_n == 1 {
                    0.0
                } else {
                    z as f64 / (zones_n - 1) as f64
                };
                (p.outer_mb_s + (p.inner_mb_s - p.outer_mb_s) * f) * 1e6 / 1e9
            })
            .collect();
        let rate_sum: f64 = rates.iter().sum();
        let period = 60e9 / p.rpm as f64;
        let mut start = 0u64;
        let zones: Vec<Zone> = rates
            .iter()
            .map(|&r| {
                let zone_bytes = p.capacity.0 as f64 * r / rate_sum;
                let z = Zone {
                    start,
                    cyl_per_byte: cyl_per_zone / zone_bytes,
                    revs_per_byte: 1.0 / (r * period),
                    ns_per_byte: 1.0 / r,
                };
                start += zone_bytes as u64;
                z
            })
            .collect();
        // Buckets no larger than the smallest zone / 4, so a bucket spans at most two zones.
        let smallest = zones
            .windows(2)
            .map(|w| w[1].start - w[0].start)
            .min()
            .unwrap_or(p.capacity.0)
            .max(1);
        let lut_shift = (smallest / 4).max(1).ilog2();
        let zone_lut = (0..=(p.capacity.0 >> lut_shift))
            .map(|b| {
                let at = b << lut_shift;
                zones.partition_point(|z| z.start <= at).saturating_sub(1) as u16
            })
            .collect();
        // A sentinel after the last zone, so `zone` needs no bounds test.
        let mut zones = zones;
        zones.push(Zone {
            start: u64::MAX,
            ..zones[zones.len() - 1]
        });
        let n = p.cylinders as f64;
        let third = n / 3.0;
        let t1 = p.track_to_track.0 as f64;
        let ta = p.avg_seek.0 as f64;
        let tf = p.full_stroke.0 as f64;
        let curve = SeekCurve {
            third,
            inv_third_m1: 1.0 / (third - 1.0),
            t1,
            ta,
            ta_t1: ta - t1,
            long_slope: (tf - ta) / (n - third),
        };
        Hdd {
            p: p.clone(),
            curve,
            overhead: p.overhead.0 as f64,
            write_settle: p.write_settle.0 as f64,
            zone_lut,
            lut_shift,
            outer: zones[0],
            outer_end: zones[1].start,
            zones,
            cyl_per_zone,
            period,
            inv_period: 1.0 / period,
            phase,
            write_cache,
            queue: Vec::new(),
            elevator: Elevator::new(scheduler),
            acks: Slab::new(),
            destage: VecDeque::new(),
            dirty: 0,
            dirty_bytes: 0,
            barrier: None,
            busy: false,
            current: Queued::new(
                MemberOp {
                    write: false,
                    flush: false,
                    offset: 0,
                    len: 0,
                    tag: 0,
                    stream: 0,
                },
                Nanos(0),
            ),
            current_holds_slot: false,
            head_cyl: 0.0,
            head_offset: 0,
            last_end: u64::MAX,
            read_ahead_from: None,
            pending: 0,
            stats: DeviceStats::default(),
            noise: p.reorder_noise.max(0.0),
            rng: ChaCha8Rng::seed_from_u64(rng.gen()),
        }
    }

    /// The zone holding `offset`: the last whose start is ≤ it (the first zone for none).
    #[inline]
    fn zone(&self, offset: u64) -> (usize, &Zone) {
        if offset < self.outer_end {
            // The outer zone, where a benchmark's file lies on most disks: no table walk.
            return (0, &self.outer);
        }
        let b = ((offset >> self.lut_shift) as usize).min(self.zone_lut.len() - 1);
        let mut i = self.zone_lut[b] as usize;
        // A bucket spans at most two zones: one step at most (the last zone has a sentinel
        // successor starting at u64::MAX).
        if self.zones[i + 1].start <= offset {
            i += 1;
        }
        debug_assert!(self.zones[i + 1].start > offset);
        (i, &self.zones[i])
    }

    fn cylinder(&self, offset: u64) -> f64 {
        let (i, z) = self.zone(offset);
        self.cylinder_in(i, z, offset)
    }

    /// `cylinder` for an offset already known to lie in zone `i`.
    fn cylinder_in(&self, i: usize, z: &Zone, offset: u64) -> f64 {
        i as f64 * self.cyl_per_zone + floor_pos(to_f64(offset - z.start) * z.cyl_per_byte)
    }

    /// Seek time over `d` cylinders: sqrt-shaped up to a third of the stroke, then linear,
    /// fitted through the datasheet's track-to-track, average and full-stroke times.
    fn seek(&self, d: f64) -> f64 {
        if d < 1.0 {
            return 0.0;
        }
        let c = &self.curve;
        if d <= c.third {
            c.t1 + c.ta_t1 * ((d - 1.0) * c.inv_third_m1).sqrt()
        } else {
            c.ta + (d - c.third) * c.long_slope
        }
    }

    /// Angle of an offset within its track, as a fraction of a revolution.
    fn angle_in(z: &Zone, offset: u64) -> f64 {
        fract_pos(to_f64(offset - z.start) * z.revs_per_byte)
    }

    /// The platter's position at `now`, in revolutions since time zero (plus the phase):
    /// worked out once per queue scan.
    fn revs_at(&self, now: Nanos) -> f64 {
        to_f64(now.0) * self.inv_period + self.phase
    }

    /// Time from `now` until the data transfer of `q` can start, and its transfer time.
    #[inline]
    fn positioning(&self, revs: f64, q: &Queued) -> (f64, f64) {
        if q.op.offset == self.last_end {
            // Streaming on from the previous transfer: the firmware overlaps the command;
            // a read after a pause finds what the drive read ahead meanwhile in its cache.
            return match self.read_ahead_from {
                Some(ended) if !q.op.write => {
                    let now = (revs - self.phase) * self.period;
                    let ahead = (now - ended).clamp(0.0, READ_AHEAD_REVS * self.period);
                    let cached = (ahead / q.transfer).min(1.0);
                    let interface = to_f64(q.op.len) / (self.p.interface_mb_s * 1e-3);
                    (0.0, q.transfer * (1.0 - cached) + interface * cached)
                }
                _ => (0.0, q.transfer),
            };
        }
        let mut t = self.overhead;
        t += self.seek((q.cyl - self.head_cyl).abs());
        if q.op.write {
            t += self.write_settle;
        }
        let here = fract_pos(revs + t * self.inv_period);
        // (q.angle - here).rem_euclid(1.0), both in [0, 1): the same value without fmod.
        let ahead = q.angle - here;
        let wait = if ahead < 0.0 { ahead + 1.0 } else { ahead } * self.period;
        (t + wait, q.transfer)
    }

    /// `op` with where its data lies worked out.
    fn locate(&self, op: MemberOp, now: Nanos) -> Queued {
        let (i, z) = self.zone(op.offset);
        let last = op.offset + op.len.saturating_sub(1);
        let end_cyl = match self.zones.get(i + 1) {
            Some(next) if next.start <= last => self.cylinder(last),
            _ => self.cylinder_in(i, z, last),
        };
        Queued {
            end_cyl,
            op,
            arrival: now,
            accepted: now,
            destage: false,
            cyl: self.cylinder_in(i, z, op.offset),
            angle: Self::angle_in(z, op.offset),
            transfer: to_f64(op.len) * z.ns_per_byte,
        }
    }

    fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>) {
        self.pending += 1;
        let q = self.locate(op, now);
        let cached = op.write && self.write_cache;
        if !self.busy
            && !cached
            && self.queue.is_empty()
            && self.destage.is_empty()
            && self.barrier.is_none()
            && self.elevator.is_empty()
        {
            // The drive is idle and this is the only command it could choose: serve it.
            let (pos, xfer) = self.positioning(self.revs_at(now), &q);
            self.serve(now, q, pos, xfer, true, out);
            return;
        }
        // Nothing overtakes what already waits above the drive.
        if self.barrier.is_some() || !self.elevator.is_empty() || !self.has_slot() {
            self.elevator.push(q);
        } else {
            self.accept(now, q, out);
        }
        if !self.busy {
            self.start_next(now, out);
        }
    }

    /// The drive has a free queue slot.
    fn has_slot(&self) -> bool {
        self.queue.len() + (self.current_holds_slot as usize) < self.p.queue_depth as usize
    }

    /// The drive takes `q`: as the barrier (PREFLUSH + FUA with the cache on), into its
    /// cache (acknowledged after the transfer), or into its queue.
    fn accept<W: Wakes>(&mut self, now: Nanos, mut q: Queued, out: &mut Out<W>) {
        q.accepted = now;
        if !self.write_cache || !q.op.write {
            self.queue.push(q);
        } else if q.op.flush {
            self.barrier = Some(q);
        } else if self.dirty < self.p.cache_commands as usize
            && self.dirty_bytes + q.op.len <= self.p.cache.0
        {
            let ack = self.overhead + q.op.len as f64 / (self.p.interface_mb_s * 1e-3);
            let slot = self.acks.insert(q.op.tag);
            out.wakes
                .push((Nanos(now.0 + ack as u64), ACK | u64::from(slot)));
            self.dirty += 1;
            self.dirty_bytes += q.op.len;
            self.destage.push_back(Queued { destage: true, ..q });
        } else {
            // The cache is full: the write waits in the queue for the media.
            self.queue.push(q);
        }
    }

    /// Send down what waits above the drive while it has room.
    fn refill<W: Wakes>(&mut self, now: Nanos, out: &mut Out<W>) {
        while !self.elevator.is_empty() && self.barrier.is_none() && self.has_slot() {
            match self.elevator.pop(now) {
                Some(q) => self.accept(now, q, out),
                None => break,
            }
        }
    }

    fn cache_pressure(&self) -> bool {
        self.dirty * 4 > self.p.cache_commands as usize * 3
            || self.dirty_bytes * 4 > self.p.cache.0 * 3
    }

    /// The firmware's estimate of a positioning time: over by a uniform share of it, up to
    /// `reorder_noise` (so a command that continues where the last transfer ended,
    /// positioning 0, is known exactly and streams stay streams; a short move stays short).
    #[inline]
    fn estimate(&mut self, pos: f64) -> f64 {
        if self.noise == 0.0 || pos == 0.0 {
            pos
        } else {
            pos * (1.0 + self.noise * self.rng.gen::<f64>())
        }
    }

    fn start_next<W: Wakes>(&mut self, now: Nanos, out: &mut Out<W>) {
        // Host commands first; destage when none waits, when the cache is nearly full, or
        // to empty it for a flush; the flush's own write last.
        let cache_pressure = self.cache_pressure();
        let mut best: Option<Choice> = None;
        let revs = self.revs_at(now);
        // The oldest command past the age limit, if any, goes first. (Driven by the wall
        // clock, `crates/timed`, a wake's model time may precede a later arrival.)
        let aged = (0..self.queue.len())
            .filter(|&i| now.saturating_sub(self.queue[i].accepted) >= AGE_LIMIT)
            .min_by_key(|&i| self.queue[i].accepted);
        for i in 0..self.queue.len().min(SPTF_WINDOW) {
            if aged.is_some_and(|a| a != i) {
                continue;
            }
            let (pos, xfer) = self.positioning(revs, &self.queue[i]);
            let est = self.estimate(pos);
            if best.is_none_or(|b| est < b.estimate) {
                best = Some(Choice {
                    destage: false,
                    index: i,
                    pos,
                    xfer,
                    estimate: est,
                });
            }
        }
        if (best.is_none() || cache_pressure) && !self.destage.is_empty() {
            let window = self
                .destage
                .len()
                .min(self.p.destage_window.max(1) as usize);
            for i in 0..window {
                let (pos, xfer) = self.positioning(revs, &self.destage[i]);
                let est = self.estimate(pos);
                if best.is_none_or(|b| est < b.estimate) {
                    best = Some(Choice {
                        destage: true,
                        index: i,
                        pos,
                        xfer,
                        estimate: est,
                    });
                }
            }
        }
        let (q, pos, xfer, holds_slot) = match best {
            Some(c) if c.destage => (
                self.destage.remove(c.index).expect("index from scan"),
                c.pos,
                c.xfer,
                false,
            ),
            Some(c) => (self.queue.swap_remove(c.index), c.pos, c.xfer, true),
            None => match self.barrier.take() {
                // Queue and cache are empty: the flush is done, its write goes to the media.
                Some(b) => {
                    let (pos, xfer) = self.positioning(revs, &b);
                    (b, pos, xfer, false)
                }
                None => return,
            },
        };
        self.serve(now, q, pos, xfer, holds_slot, out);
    }

    /// Start serving `q`, positioned in `pos` and transferred in `xfer` nanoseconds.
    #[inline]
    fn serve<W: Wakes>(
        &mut self,
        now: Nanos,
        q: Queued,
        pos: f64,
        xfer: f64,
        holds_slot: bool,
        out: &mut Out<W>,
    ) {
        let service = Nanos(ceil_pos(pos + xfer));
        self.stats.busy += service;
        self.stats.seeks += (pos > 0.0) as u64;
        self.busy = true;
        self.current = q;
        self.current_holds_slot = holds_slot;
        out.wakes.push((now + service, SERVICE_DONE));
    }

    fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>) {
        if token & ACK != 0 {
            let tag = self.acks.remove((token & !ACK) as u32);
            self.pending -= 1;
            // Counted as the host sees it: acknowledged from cache.
            let op = MemberOp {
                write: true,
                flush: false,
                offset: 0,
                len: 0,
                tag,
                stream: 0,
            };
            count(&mut self.stats, &op, Nanos(0));
            self.stats.cache_acks += 1;
            out.done.push(tag);
            return;
        }
        assert!(self.busy, "service done while busy");
        self.busy = false;
        self.current_holds_slot = false;
        let q = self.current;
        self.head_cyl = q.end_cyl;
        self.head_offset = q.op.offset + q.op.len;
        self.last_end = self.head_offset;
        self.read_ahead_from = (!q.op.write && !q.destage).then_some(to_f64(now.0));
        if q.destage {
            self.dirty -= 1;
            self.dirty_bytes -= q.op.len;
        } else {
            self.pending -= 1;
            count(&mut self.stats, &q.op, now - q.arrival);
            out.done.push(q.op.tag);
        }
        self.refill(now, out);
        self.start_next(now, out);
    }
}

impl Member for Hdd {
    #[inline]
    fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>) {
        Hdd::submit(self, now, op, out)
    }
    #[inline]
    fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>) {
        Hdd::wake(self, now, token, out)
    }
    fn pending(&self) -> usize {
        self.pending
    }
    fn head(&self) -> u64 {
        self.head_offset
    }
    fn rotational(&self) -> bool {
        true
    }
    fn stats(&self) -> &DeviceStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::{DiskKind, DiskModel};

    struct Wakeups(Vec<(Nanos, u64)>);
    impl Wakes for &mut Wakeups {
        fn push(&mut self, wake: (Nanos, u64)) {
            self.0.push(wake);
        }
    }

    fn disk(write_cache: bool) -> Hdd {
        let Some(DiskModel {
            kind: DiskKind::Hdd(p),
            ..
        }) = DiskModel::preset("hdd-7200")
        else {
            panic!("hdd-7200 is a disk")
        };
        Hdd::new(
            &p,
            write_cache,
            Scheduler::MqDeadline,
            &mut ChaCha8Rng::seed_from_u64(1),
        )
    }

    fn op(tag: u64, offset: u64, flush: bool) -> MemberOp {
        MemberOp {
            write: true,
            flush,
            offset,
            len: 4096,
            tag,
            stream: 0,
        }
    }

    /// Submit `ops` at time 0 and run the disk until all complete: each tag's completion time.
    fn run(d: &mut Hdd, ops: &[MemberOp]) -> Vec<(u64, Nanos)> {
        let mut wakes = Wakeups(Vec::new());
        let mut done = Vec::new();
        let mut finished = Vec::new();
        for o in ops {
            d.submit(
                Nanos(0),
                *o,
                &mut Out {
                    wakes: &mut wakes,
                    done: &mut done,
                },
            );
            finished.extend(done.drain(..).map(|t| (t, Nanos(0))));
        }
        while let Some(i) = (0..wakes.0.len()).min_by_key(|&i| wakes.0[i].0) {
            let (at, token) = wakes.0.swap_remove(i);
            d.wake(
                at,
                token,
                &mut Out {
                    wakes: &mut wakes,
                    done: &mut done,
                },
            );
            finished.extend(done.drain(..).map(|t| (t, at)));
        }
        finished
    }

    /// Submit `o` at `at` to a disk with nothing else to do and run it: when it completed.
    fn one(d: &mut Hdd, at: Nanos, o: MemberOp) -> Nanos {
        let mut wakes = Wakeups(Vec::new());
        let mut done = Vec::new();
        let mut out = Out {
            wakes: &mut wakes,
            done: &mut done,
        };
        d.submit(at, o, &mut out);
        loop {
            let w = &mut out.wakes.0;
            let i = (0..w.len()).min_by_key(|&i| w[i].0).expect("a wake");
            let (t, token) = w.swap_remove(i);
            d.wake(t, token, &mut out);
            if !out.done.is_empty() {
                return t;
            }
        }
    }

    /// A read that continues the last one after a pause finds what the drive read on
    /// meanwhile in its cache (its look-ahead): after a revolution's pause, a 1 MiB read
    /// takes under half its media time. Back to back it takes the media time, and a write
    /// after the same pause gains nothing.
    #[test]
    fn a_read_after_a_pause_takes_the_look_ahead_from_the_cache() {
        let mib = 1u64 << 20;
        let read = |tag, offset| MemberOp {
            write: false,
            flush: false,
            offset,
            len: mib,
            tag,
            stream: 0,
        };
        let mut d = disk(false);
        let pause = Nanos(d.period as u64);
        let first = one(&mut d, Nanos(0), read(1, 0));
        let media = one(&mut d, first, read(2, mib)) - first;
        let at = first + media + pause;
        let ahead = one(&mut d, at, read(3, 2 * mib)) - at;
        assert!(
            ahead.0 * 2 < media.0,
            "after a pause: {ahead}, back to back: {media}"
        );
        let at = at + ahead + pause;
        let write = MemberOp {
            write: true,
            ..read(4, 3 * mib)
        };
        let written = one(&mut d, at, write) - at;
        assert!(
            written.0 * 10 > media.0 * 9,
            "a write after a pause: {written}, a read back to back: {media}"
        );
    }

    /// md's bitmap write (PREFLUSH + FUA) on a disk holding cached writes completes only
    /// once they are all on the media: it pays for every dirty write, as on a real drive.
    #[test]
    fn a_flush_waits_for_every_dirty_write() {
        let gib = 1u64 << 30;
        let mut ops: Vec<MemberOp> = (0..16)
            .map(|i| op(i, (i * 37 % 16) * 50 * gib, false))
            .collect();
        ops.push(op(99, 0, true));
        let cached = run(&mut disk(true), &ops);
        let flush_at = |r: &[(u64, Nanos)]| r.iter().find(|(t, _)| *t == 99).unwrap().1;
        let acked: Vec<Nanos> = cached
            .iter()
            .filter(|(t, _)| *t < 16)
            .map(|c| c.1)
            .collect();
        assert!(
            acked.iter().all(|a| a.0 < 1_000_000),
            "cached writes are acknowledged within a millisecond: {acked:?}"
        );
        let flushed = flush_at(&cached);
        // 16 scattered writes take at least 16 × (overhead + a short seek) on the media.
        assert!(
            flushed.0 > 16 * 2_000_000,
            "the flush completed after {flushed}, before 16 media writes could"
        );
        let alone = flush_at(&run(&mut disk(true), &[op(99, 0, true)]));
        assert!(alone.0 < 20_000_000, "a flush on a clean cache: {alone}");
    }

    /// The drive holds `cache_commands` dirty writes at most: the next waits for the media.
    #[test]
    fn the_cache_holds_cache_commands_writes() {
        let mut d = disk(true);
        let n = d.p.cache_commands as u64;
        let ops: Vec<MemberOp> = (0..n + 8).map(|i| op(i, i * (1 << 30), false)).collect();
        let r = run(&mut d, &ops);
        let fast = r.iter().filter(|(_, at)| at.0 < 1_000_000).count() as u64;
        assert_eq!(
            fast, n,
            "{n} acknowledged from the cache, the rest from the media"
        );
    }
}
