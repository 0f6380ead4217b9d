//! The host's I/O scheduler above one disk: where commands wait while the drive's own
//! queue (NCQ) is full, and the order they go down in.
//!
//! A drive can only reorder what it holds (32 commands on SATA). With more outstanding,
//! the rest wait in the block layer, and there Linux's scheduler decides what the drive
//! sees next: `none` passes them on in arrival order; `mq-deadline`
//! (`block/mq-deadline.c`) keeps them sorted by sector and sends them in batches of
//! `fifo_batch` (16), each going on up from the last command sent (a one-way elevator);
//! a batch starts at the oldest command when its deadline passed (`read_expire` 500 ms,
//! `write_expire` 5 s) or when nothing lies further up. So a deep queue keeps gaining on
//! a rotating disk beyond the drive's own queue depth, and a drive without NCQ still
//! gains from a sorted stream. Simplified from mq-deadline: one queue for reads and
//! writes (no preference of reads, `writes_starved`), no priorities.

use super::hdd::Queued;
use raidlab_core::{Nanos, Scheduler};
use std::collections::{BTreeMap, VecDeque};

/// mq-deadline's `read_expire`.
const READ_EXPIRE: Nanos = Nanos(500_000_000);
/// mq-deadline's `write_expire`.
const WRITE_EXPIRE: Nanos = Nanos(5_000_000_000);
/// mq-deadline's `fifo_batch`: commands sent in sector order before deadlines are looked at.
const FIFO_BATCH: u32 = 16;

/// Commands waiting above one drive.
pub(super) enum Elevator {
    /// Arrival order.
    Fifo(VecDeque<Queued>),
    Deadline(Deadline),
}

/// mq-deadline's state: the commands by sector, their deadlines in arrival order, and
/// where the last command sent ends.
pub(super) struct Deadline {
    /// (offset, arrival number) → command.
    sorted: BTreeMap<(u64, u64), Queued>,
    /// (deadline, offset, arrival number), oldest first; entries already sent are skipped.
    expiry: VecDeque<(Nanos, u64, u64)>,
    next: u64,
    arrivals: u64,
    /// Commands sent in the current batch.
    batching: u32,
}

impl Elevator {
    pub(super) fn new(scheduler: Scheduler) -> Elevator {
        match scheduler {
            Scheduler::None => Elevator::Fifo(VecDeque::new()),
            Scheduler::MqDeadline => Elevator::Deadline(Deadline {
                sorted: BTreeMap::new(),
                expiry: VecDeque::new(),
                next: 0,
                arrivals: 0,
                batching: 0,
            }),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            Elevator::Fifo(q) => q.is_empty(),
            Elevator::Deadline(d) => d.sorted.is_empty(),
        }
    }

    pub(super) fn push(&mut self, q: Queued) {
        match self {
            Elevator::Fifo(f) => f.push_back(q),
            Elevator::Deadline(d) => {
                let n = d.arrivals;
                d.arrivals += 1;
                let expire = if q.op.write {
                    WRITE_EXPIRE
                } else {
                    READ_EXPIRE
                };
                d.expiry.push_back((q.arrival + expire, q.op.offset, n));
                d.sorted.insert((q.op.offset, n), q);
            }
        }
    }

    /// The command to send to the drive now, if any waits.
    pub(super) fn pop(&mut self, now: Nanos) -> Option<Queued> {
        match self {
            Elevator::Fifo(f) => f.pop_front(),
            Elevator::Deadline(d) => d.pop(now),
        }
    }
}

impl Deadline {
    /// mq-deadline's `dd_dispatch_request`: go on up from the last command sent for a
    /// batch of `fifo_batch`; then, or at the top, start the next batch from the oldest
    /// command if its deadline passed (or nothing lies further up), else go on up.
    fn pop(&mut self, now: Nanos) -> Option<Queued> {
        if self.sorted.is_empty() {
            return None;
        }
        let up = self.sorted.range((self.next, 0)..).next().map(|(k, _)| *k);
        let key = match up {
            Some(k) if self.batching < FIFO_BATCH => {
                self.batching += 1;
                k
            }
            _ => {
                // The oldest command still waiting (deadlines of sent ones are dropped).
                while let Some(&(_, offset, n)) = self.expiry.front() {
                    if self.sorted.contains_key(&(offset, n)) {
                        break;
                    }
                    self.expiry.pop_front();
                }
                let &(deadline, offset, n) = self.expiry.front()?;
                self.batching = 1;
                match up {
                    Some(k) if deadline > now => k,
                    _ => (offset, n),
                }
            }
        };
        let q = self.sorted.remove(&key)?;
        self.next = q.op.offset + q.op.len;
        Some(q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::MemberOp;

    fn q(offset: u64, at: u64) -> Queued {
        Queued::new(
            MemberOp {
                write: false,
                flush: false,
                offset,
                len: 4096,
                tag: offset,
            },
            Nanos(at),
        )
    }

    #[test]
    fn none_keeps_arrival_order() {
        let mut e = Elevator::new(Scheduler::None);
        for o in [300, 100, 200] {
            e.push(q(o << 20, 0));
        }
        let order: Vec<u64> = std::iter::from_fn(|| e.pop(Nanos(0)))
            .map(|q| q.op.offset >> 20)
            .collect();
        assert_eq!(order, [300, 100, 200]);
    }

    #[test]
    fn mq_deadline_sweeps_up_then_starts_again_from_the_oldest() {
        let mut e = Elevator::new(Scheduler::MqDeadline);
        for o in [300, 100, 200] {
            e.push(q(o << 20, 0));
        }
        let first = e.pop(Nanos(0)).unwrap().op.offset >> 20;
        assert_eq!(first, 100, "from sector 0 up");
        e.push(q(50 << 20, 1));
        let next: Vec<u64> = (0..3)
            .map(|_| e.pop(Nanos(2)).unwrap().op.offset >> 20)
            .collect();
        assert_eq!(next, [200, 300, 50], "on up, then from the oldest");
    }

    #[test]
    fn mq_deadline_finishes_a_batch_of_16_then_serves_the_expired_oldest() {
        let mut e = Elevator::new(Scheduler::MqDeadline);
        e.push(q(500 << 20, 0));
        assert_eq!(e.pop(Nanos(0)).unwrap().op.offset >> 20, 500);
        e.push(q(1 << 20, 0));
        for i in 0..30 {
            e.push(q((600 + i) << 20, 0));
        }
        let late = Nanos(600_000_000);
        let order: Vec<u64> = (0..16)
            .map(|_| e.pop(late).unwrap().op.offset >> 20)
            .collect();
        assert_eq!(order[..15], (600..615).collect::<Vec<u64>>()[..]);
        assert_eq!(order[15], 1, "the expired oldest starts the next batch");
        assert!(!e.is_empty());
    }
}
