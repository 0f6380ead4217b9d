//! Member devices: a mechanical disk, a flash device, and a qemu-style throttled disk.
//!
//! Each device takes member operations, decides when to serve them and tells the
//! simulator when it next needs to act (a *wake* at a simulated time, carrying a token).
//! The simulator owns the clock and the event queue; devices own their mechanics.
//!
//! The HDD follows Ruemmler & Wilkes / DiskSim: a seek curve (square root for short
//! seeks, linear beyond a third of the stroke), the platter's rotation tracked through
//! time (so an I/O waits for its sector to come round, not for a random draw), zoned
//! transfer rates, a per-command controller overhead, a native command queue served
//! shortest-positioning-time-first, and an optional volatile write cache.

use crate::slab::Slab;
use raidlab_core::disk::{HddParams, SsdParams, ThrottleParams};
use raidlab_core::Nanos;
use std::collections::VecDeque;

/// One operation on one member.
#[derive(Debug, Clone, Copy)]
pub struct MemberOp {
    pub write: bool,
    /// Byte offset on the member.
    pub offset: u64,
    pub len: u64,
    /// The simulator's handle, returned on completion.
    pub tag: u64,
}

/// Where a device's wake-ups go: `push((at, token))` asks the simulator to wake the device
/// at `at` with `token`. The simulator's own implementation puts them straight into its
/// event queue, in the order they are asked for.
pub trait Wakes {
    fn push(&mut self, wake: (Nanos, u64));
}

/// What a device asks of the simulator during one call.
pub struct Out<'a, W: Wakes> {
    /// Wake the device at this time with this token.
    pub wakes: W,
    /// Host-visible completions, now: the simulator handles them after the call.
    pub done: &'a mut Vec<u64>,
}

/// Counters behind fio's `disk_util`.
#[derive(Debug, Default, Clone)]
pub struct DeviceStats {
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_ticks: Nanos,
    pub write_ticks: Nanos,
    pub busy: Nanos,
}

/// A member device as the simulator drives it. All members of an array are one model, so
/// the simulator is generic over it and these calls inline into its request path.
pub trait Member {
    fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>);
    fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>);
    /// Host operations submitted and not yet completed.
    fn pending(&self) -> usize;
    /// Where the head is (byte offset), for md's nearest-head read balancing.
    fn head(&self) -> u64;
    fn rotational(&self) -> bool;
    fn stats(&self) -> &DeviceStats;
}

/// `Member` for a device type whose inherent `submit` and `wake` do the work.
macro_rules! member {
    ($t:ty, $head:ident, $rotational:expr) => {
        impl Member for $t {
            #[inline]
            fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>) {
                <$t>::submit(self, now, op, out)
            }
            #[inline]
            fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>) {
                <$t>::wake(self, now, token, out)
            }
            fn pending(&self) -> usize {
                self.pending
            }
            fn head(&self) -> u64 {
                self.$head
            }
            fn rotational(&self) -> bool {
                $rotational
            }
            fn stats(&self) -> &DeviceStats {
                &self.stats
            }
        }
    };
}

member!(Hdd, head_offset, true);
member!(Ssd, last_end, false);
member!(Throttle, last_end, false);

fn count(stats: &mut DeviceStats, op: &MemberOp, latency: Nanos) {
    if op.write {
        stats.write_ios += 1;
        stats.write_ticks += latency;
    } else {
        stats.read_ios += 1;
        stats.read_ticks += latency;
    }
}

// ---------------------------------------------------------------- HDD

// `floor`, `fract` and `ceil` of non-negative values, exact, without a libm call (the
// disk model's hot path takes several per command).

fn floor_pos(x: f64) -> f64 {
    debug_assert!((0.0..9.2e18).contains(&x));
    // The signed conversion is one instruction; the values here are far below 2^63.
    (x as i64) as f64
}

/// `x as f64` for `x < 2^63`: the same value (the same integer, rounded the same way),
/// converted as a signed integer in one instruction rather than the unsigned sequence.
#[inline]
fn to_f64(x: u64) -> f64 {
    debug_assert!(x < 1 << 63);
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

#[derive(Debug, Clone, Copy)]
struct Queued {
    op: MemberOp,
    arrival: Nanos,
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

const ACK: u64 = 1 << 63;
const SERVICE_DONE: u64 = 0;
/// How many queued commands the firmware scans when choosing the next one.
const SPTF_WINDOW: usize = 64;

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
    /// Commands in the drive (NCQ) and above it (block layer), FIFO.
    queue: Vec<Queued>,
    waiting: VecDeque<Queued>,
    destage: VecDeque<Queued>,
    dirty: u64,
    /// A command is being served: `current`.
    busy: bool,
    current: Queued,
    head_cyl: f64,
    head_offset: u64,
    /// End of the last media transfer: a command starting there streams on.
    last_end: u64,
    pending: usize,
    stats: DeviceStats,
}

impl Hdd {
    pub fn new(p: &HddParams, write_cache: bool, phase: f64) -> Hdd {
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
            waiting: VecDeque::new(),
            destage: VecDeque::new(),
            dirty: 0,
            busy: false,
            current: Queued {
                op: MemberOp {
                    write: false,
                    offset: 0,
                    len: 0,
                    tag: 0,
                },
                arrival: Nanos(0),
                destage: false,
                cyl: 0.0,
                angle: 0.0,
                transfer: 0.0,
                end_cyl: 0.0,
            },
            head_cyl: 0.0,
            head_offset: 0,
            last_end: u64::MAX,
            pending: 0,
            stats: DeviceStats::default(),
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
            // Streaming on from the previous transfer: the firmware overlaps the command.
            return (0.0, q.transfer);
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

    fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>) {
        self.pending += 1;
        let (i, z) = self.zone(op.offset);
        let last = op.offset + op.len.saturating_sub(1);
        let end_cyl = match self.zones.get(i + 1) {
            Some(next) if next.start <= last => self.cylinder(last),
            _ => self.cylinder_in(i, z, last),
        };
        let q = Queued {
            end_cyl,
            op,
            arrival: now,
            destage: false,
            cyl: self.cylinder_in(i, z, op.offset),
            angle: Self::angle_in(z, op.offset),
            transfer: to_f64(op.len) * z.ns_per_byte,
        };
        if op.write && self.write_cache && self.dirty + op.len <= self.p.cache.0 {
            // Acknowledged once the data is in the drive's cache; written later.
            let ack = self.overhead + op.len as f64 / (self.p.interface_mb_s * 1e-3);
            out.wakes.push((Nanos(now.0 + ack as u64), ACK | op.tag));
            self.dirty += op.len;
            self.destage.push_back(Queued { destage: true, ..q });
        } else if !self.busy
            && self.queue.is_empty()
            && self.p.queue_depth > 0
            && (self.destage.is_empty() || !self.cache_pressure())
        {
            // The drive is idle and this is the only command `start_next` would consider:
            // serve it straight away.
            let (pos, xfer) = self.positioning(self.revs_at(now), &q);
            self.serve(now, q, pos, xfer, out);
            return;
        } else if self.queue.len() < self.p.queue_depth as usize {
            self.queue.push(q);
        } else {
            self.waiting.push_back(q);
        }
        if !self.busy {
            self.start_next(now, out);
        }
    }

    fn cache_pressure(&self) -> bool {
        self.dirty * 4 > self.p.cache.0 * 3
    }

    fn start_next<W: Wakes>(&mut self, now: Nanos, out: &mut Out<W>) {
        // Host commands first; destage when none waits or the cache is nearly full.
        let cache_pressure = self.cache_pressure();
        let (mut found, mut from_destage, mut best_i, mut best_pos, mut best_xfer) =
            (false, false, 0, 0.0, 0.0);
        let revs = self.revs_at(now);
        for (i, q) in self.queue.iter().enumerate().take(SPTF_WINDOW) {
            let (pos, xfer) = self.positioning(revs, q);
            if !found || pos < best_pos {
                (found, best_i, best_pos, best_xfer) = (true, i, pos, xfer);
            }
        }
        if (!found || cache_pressure) && !self.destage.is_empty() {
            for (i, q) in self.destage.iter().enumerate().take(SPTF_WINDOW) {
                let (pos, xfer) = self.positioning(revs, q);
                if !found || pos < best_pos {
                    (found, from_destage, best_i, best_pos, best_xfer) = (true, true, i, pos, xfer);
                }
            }
        }
        if !found {
            return;
        }
        let q = if from_destage {
            self.destage.remove(best_i).expect("index from scan")
        } else {
            self.queue.swap_remove(best_i)
        };
        self.serve(now, q, best_pos, best_xfer, out);
    }

    /// Start serving `q`, positioned in `pos` and transferred in `xfer` nanoseconds.
    #[inline]
    fn serve<W: Wakes>(&mut self, now: Nanos, q: Queued, pos: f64, xfer: f64, out: &mut Out<W>) {
        let service = Nanos(ceil_pos(pos + xfer));
        self.stats.busy += service;
        self.busy = true;
        self.current = q;
        out.wakes.push((now + service, SERVICE_DONE));
    }

    fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>) {
        if token & ACK != 0 {
            let tag = token & !ACK;
            self.pending -= 1;
            // Counted as the host sees it: acknowledged from cache.
            let op = MemberOp {
                write: true,
                offset: 0,
                len: 0,
                tag,
            };
            count(&mut self.stats, &op, Nanos(0));
            out.done.push(tag);
            return;
        }
        assert!(self.busy, "service done while busy");
        self.busy = false;
        let q = self.current;
        self.head_cyl = q.end_cyl;
        self.head_offset = q.op.offset + q.op.len;
        self.last_end = self.head_offset;
        if q.destage {
            self.dirty -= q.op.len;
        } else {
            self.pending -= 1;
            count(&mut self.stats, &q.op, now - q.arrival);
            out.done.push(q.op.tag);
        }
        while self.queue.len() < self.p.queue_depth as usize {
            match self.waiting.pop_front() {
                Some(w) => self.queue.push(w),
                None => break,
            }
        }
        if !self.queue.is_empty() || !self.destage.is_empty() {
            self.start_next(now, out);
        }
    }
}

// ---------------------------------------------------------------- SSD

/// Flash: `parallel_units` requests at once, each taking its latency plus its share of
/// the bandwidth; the rest wait in FIFO order.
pub struct Ssd {
    p: SsdParams,
    /// Bytes per nanosecond of one unit, [read, write].
    per_unit_bytes_per_ns: [f64; 2],
    busy_units: u32,
    waiting: VecDeque<(MemberOp, Nanos)>,
    in_flight: Slab<(MemberOp, Nanos)>,
    pending: usize,
    last_end: u64,
    stats: DeviceStats,
}

impl Ssd {
    pub fn new(p: &SsdParams) -> Ssd {
        let units = p.parallel_units.max(1) as f64;
        let per_unit = |mb_s: f64| mb_s * 1e6 / 1e9 / units;
        Ssd {
            p: p.clone(),
            per_unit_bytes_per_ns: [per_unit(p.read_mb_s), per_unit(p.write_mb_s)],
            busy_units: 0,
            waiting: VecDeque::new(),
            in_flight: Slab::new(),
            pending: 0,
            last_end: 0,
            stats: DeviceStats::default(),
        }
    }

    fn start<W: Wakes>(&mut self, now: Nanos, op: MemberOp, arrival: Nanos, out: &mut Out<W>) {
        let lat = if op.write {
            self.p.write_latency
        } else {
            self.p.read_latency
        };
        let per_unit_bytes_per_ns = self.per_unit_bytes_per_ns[op.write as usize];
        let service = Nanos(lat.0 + (to_f64(op.len) / per_unit_bytes_per_ns) as u64);
        self.busy_units += 1;
        self.stats.busy += service;
        let slot = self.in_flight.insert((op, arrival));
        out.wakes.push((now + service, slot as u64));
    }

    fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>) {
        self.pending += 1;
        self.last_end = op.offset + op.len;
        if self.busy_units < self.p.parallel_units {
            self.start(now, op, now, out);
        } else {
            self.waiting.push_back((op, now));
        }
    }

    fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>) {
        let (op, arrival) = self.in_flight.remove(token as u32);
        self.busy_units -= 1;
        self.pending -= 1;
        count(&mut self.stats, &op, now - arrival);
        out.done.push(op.tag);
        if let Some((next, arr)) = self.waiting.pop_front() {
            self.start(now, next, arr, out);
        }
    }
}

// ---------------------------------------------------------------- throttle

/// qemu's throttling as a leaky bucket per limit (`throttle_compute_wait`): each request
/// adds one operation (or its bytes) to the bucket, which drains at the configured rate;
/// a request may pass while the bucket holds no more than its burst (rate / 10, qemu's
/// default `*-max`). Requests pass in arrival order, then take the backing store's latency.
pub struct Throttle {
    p: ThrottleParams,
    queue: VecDeque<(MemberOp, Nanos)>,
    /// Bucket levels (operations, reads, writes, bytes) at `updated`.
    levels: [f64; 4],
    updated: Nanos,
    timer_armed: bool,
    in_flight: Slab<(MemberOp, Nanos)>,
    pending: usize,
    last_end: u64,
    stats: DeviceStats,
}

const THROTTLE_TIMER: u64 = u64::MAX;

impl Throttle {
    pub fn new(p: &ThrottleParams) -> Throttle {
        Throttle {
            p: p.clone(),
            queue: VecDeque::new(),
            levels: [0.0; 4],
            updated: Nanos(0),
            timer_armed: false,
            in_flight: Slab::new(),
            pending: 0,
            last_end: 0,
            stats: DeviceStats::default(),
        }
    }

    fn rates(&self) -> [f64; 4] {
        [
            self.p.iops_total as f64,
            self.p.iops_read as f64,
            self.p.iops_write as f64,
            self.p.bps_total as f64,
        ]
    }

    fn leak(&mut self, now: Nanos) {
        let dt = (now.0 - self.updated.0) as f64 / 1e9;
        let rates = self.rates();
        for (l, r) in self.levels.iter_mut().zip(rates) {
            *l = (*l - r * dt).max(0.0);
        }
        self.updated = now;
    }

    /// Nanoseconds until `op` may pass (0 = now).
    fn wait_for(&self, op: &MemberOp) -> f64 {
        let rates = self.rates();
        let applies = [true, !op.write, op.write, true];
        let mut wait: f64 = 0.0;
        for i in 0..4 {
            let r = rates[i];
            if r == 0.0 || !applies[i] {
                continue;
            }
            // qemu: bucket size = avg / 10 when no *-max is set; wait while above it.
            let over = self.levels[i] - r / 10.0;
            if over > 0.0 {
                wait = wait.max(over / r * 1e9);
            }
        }
        wait
    }

    fn pump<W: Wakes>(&mut self, now: Nanos, out: &mut Out<W>) {
        self.leak(now);
        while let Some(&(op, arrival)) = self.queue.front() {
            let wait = self.wait_for(&op);
            if wait > 0.0 {
                if !self.timer_armed {
                    self.timer_armed = true;
                    out.wakes
                        .push((Nanos(now.0 + wait.ceil() as u64), THROTTLE_TIMER));
                }
                return;
            }
            self.queue.pop_front();
            let adds = [
                1.0,
                (!op.write) as u8 as f64,
                op.write as u8 as f64,
                op.len as f64,
            ];
            for (l, a) in self.levels.iter_mut().zip(adds) {
                *l += a;
            }
            let slot = self.in_flight.insert((op, arrival));
            self.stats.busy += self.p.latency;
            out.wakes.push((now + self.p.latency, slot as u64));
        }
    }

    fn submit<W: Wakes>(&mut self, now: Nanos, op: MemberOp, out: &mut Out<W>) {
        self.pending += 1;
        self.last_end = op.offset + op.len;
        self.queue.push_back((op, now));
        if !self.timer_armed {
            self.pump(now, out);
        }
    }

    fn wake<W: Wakes>(&mut self, now: Nanos, token: u64, out: &mut Out<W>) {
        if token == THROTTLE_TIMER {
            self.timer_armed = false;
            self.pump(now, out);
            return;
        }
        let (op, arrival) = self.in_flight.remove(token as u32);
        self.pending -= 1;
        count(&mut self.stats, &op, now - arrival);
        out.done.push(op.tag);
    }
}
