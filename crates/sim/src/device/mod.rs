//! Member devices: a mechanical disk ([`Hdd`]), a flash device, and a qemu-style
//! throttled disk.
//!
//! Each device takes member operations, decides when to serve them and tells the
//! simulator when it next needs to act (a *wake* at a simulated time, carrying a token).
//! The simulator owns the clock and the event queue; devices own their mechanics.

mod elevator;
mod hdd;

pub use hdd::Hdd;

use crate::slab::Slab;
use raidlab_core::disk::{SsdParams, ThrottleParams};
use raidlab_core::Nanos;
use std::collections::VecDeque;

/// One operation on one member.
#[derive(Debug, Clone, Copy)]
pub struct MemberOp {
    pub write: bool,
    /// A write with PREFLUSH and FUA: what md issues for its bitmap and superblock
    /// (`md_super_write`). Only a disk with a volatile cache treats it differently.
    pub flush: bool,
    /// Byte offset on the member.
    pub offset: u64,
    pub len: u64,
    /// The simulator's handle, returned on completion.
    pub tag: u64,
    /// Who sent it: a fio job's number, or [`MD_THREAD`] for md's own threads. A
    /// scheduler that queues per process (bfq) keeps them apart.
    pub stream: u32,
}

/// The [`MemberOp::stream`] of what md's threads send (raid5d, the sync thread, the
/// bitmap's writes), not a fio job's own context.
pub const MD_THREAD: u32 = u32::MAX;

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
    /// Commands served that did not continue where the last transfer ended (a seek, a
    /// rotational wait, or both); mechanical disks only.
    pub seeks: u64,
    /// Writes acknowledged from the volatile write cache.
    pub cache_acks: u64,
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

member!(Ssd, last_end, false);
member!(Throttle, last_end, true);

/// `x as f64` for `x < 2^63`: the same value (the same integer, rounded the same way),
/// converted as a signed integer in one instruction rather than the unsigned sequence.
#[inline]
fn to_f64(x: u64) -> f64 {
    debug_assert!(x < 1 << 63);
    (x as i64) as f64
}

fn count(stats: &mut DeviceStats, op: &MemberOp, latency: Nanos) {
    if op.write {
        stats.write_ios += 1;
        stats.write_ticks += latency;
    } else {
        stats.read_ios += 1;
        stats.read_ticks += latency;
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
/// adds one operation (its size over `iops-size` if larger), or its bytes, to the bucket,
/// which drains at the configured rate; a request may pass while the bucket holds no more
/// than its burst (rate / 10, qemu's default `*-max`). Requests pass in arrival order, then
/// take the backing store's latency.
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
            let units = self.p.operations(op.len as f64);
            let adds = [
                units,
                (!op.write) as u8 as f64 * units,
                op.write as u8 as f64 * units,
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
