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
//!
//! `bfq` (`block/bfq-iosched.c`) keeps a queue per process instead — per fio job, and
//! one for md's threads ([`MemberOp::stream`](super::MemberOp::stream)) — and serves one
//! queue at a time: until it has nothing waiting, or has had its budget (`bfq_timeout`
//! 125 ms, `bfq_default_max_budget` 8 MiB), then the next in turn. Within its queue it
//! sends the command nearest the last one sent, a backward seek counting double
//! (`bfq_back_penalty`) and allowed up to 16 MiB (`bfq_back_max`), except that the first
//! choice of each turn is the queue's oldest command if it waited over 125 ms
//! (`bfq_fifo_expire`, `bfq_check_fifo`). Simplified: equal weights served round-robin
//! (B-WF2Q+ with no weight-raising), no idling (bfq does not idle for seeky queues on a
//! drive with command queueing; a sequential queue's 8 ms idle is not modelled), one
//! budget for every queue.

use super::hdd::Queued;
use raidlab_core::{Nanos, Scheduler};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// mq-deadline's `read_expire`.
const READ_EXPIRE: Nanos = Nanos(500_000_000);
/// mq-deadline's `write_expire`.
const WRITE_EXPIRE: Nanos = Nanos(5_000_000_000);
/// mq-deadline's `fifo_batch`: commands sent in sector order before deadlines are looked at.
const FIFO_BATCH: u32 = 16;
/// bfq's `bfq_timeout`: the longest a queue is served in one turn.
const BFQ_TIMEOUT: Nanos = Nanos(125_000_000);
/// bfq's `bfq_default_max_budget` (16 Ki sectors): the most a queue sends in one turn.
const BFQ_BUDGET: u64 = 8 << 20;
/// bfq's `bfq_fifo_expire` for synchronous requests.
const BFQ_FIFO_EXPIRE: Nanos = Nanos(125_000_000);
/// bfq's `bfq_back_max` (16 MiB) and `bfq_back_penalty`.
const BFQ_BACK_MAX: u64 = 16 << 20;
const BFQ_BACK_PENALTY: u64 = 2;

/// Commands waiting above one drive.
pub(super) enum Elevator {
    /// Arrival order.
    Fifo(VecDeque<Queued>),
    Deadline(Deadline),
    Bfq(Bfq),
}

/// Commands by sector, and by arrival with their deadlines: mq-deadline's whole queue,
/// and each of bfq's per-process queues.
#[derive(Default)]
struct Sorted {
    /// (offset, arrival number) → command.
    sorted: BTreeMap<(u64, u64), Queued>,
    /// (deadline, offset, arrival number), oldest first; entries already sent are skipped.
    fifo: VecDeque<(Nanos, u64, u64)>,
}

impl Sorted {
    fn push(&mut self, q: Queued, arrival_number: u64, deadline: Nanos) {
        self.fifo.push_back((deadline, q.op.offset, arrival_number));
        self.sorted.insert((q.op.offset, arrival_number), q);
    }

    /// The oldest command still waiting, with its deadline (those already sent dropped).
    fn oldest(&mut self) -> Option<(Nanos, u64, u64)> {
        while let Some(&(_, offset, n)) = self.fifo.front() {
            if self.sorted.contains_key(&(offset, n)) {
                break;
            }
            self.fifo.pop_front();
        }
        self.fifo.front().copied()
    }
}

/// mq-deadline's state: the commands waiting, and where the last command sent ends.
pub(super) struct Deadline {
    waiting: Sorted,
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
                waiting: Sorted::default(),
                next: 0,
                arrivals: 0,
                batching: 0,
            }),
            Scheduler::Bfq => Elevator::Bfq(Bfq::default()),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            Elevator::Fifo(q) => q.is_empty(),
            Elevator::Deadline(d) => d.waiting.sorted.is_empty(),
            Elevator::Bfq(b) => b.waiting == 0,
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
                let deadline = q.arrival + expire;
                d.waiting.push(q, n, deadline);
            }
            Elevator::Bfq(b) => b.push(q),
        }
    }

    /// The command to send to the drive now, if any waits.
    pub(super) fn pop(&mut self, now: Nanos) -> Option<Queued> {
        match self {
            Elevator::Fifo(f) => f.pop_front(),
            Elevator::Deadline(d) => d.pop(now),
            Elevator::Bfq(b) => b.pop(now),
        }
    }
}

impl Deadline {
    /// mq-deadline's `dd_dispatch_request`: go on up from the last command sent for a
    /// batch of `fifo_batch`; then, or at the top, start the next batch from the oldest
    /// command if its deadline passed (or nothing lies further up), else go on up.
    fn pop(&mut self, now: Nanos) -> Option<Queued> {
        if self.waiting.sorted.is_empty() {
            return None;
        }
        let up = self
            .waiting
            .sorted
            .range((self.next, 0)..)
            .next()
            .map(|(k, _)| *k);
        let key = match up {
            Some(k) if self.batching < FIFO_BATCH => {
                self.batching += 1;
                k
            }
            _ => {
                let (deadline, offset, n) = self.waiting.oldest()?;
                self.batching = 1;
                match up {
                    Some(k) if deadline > now => k,
                    _ => (offset, n),
                }
            }
        };
        let q = self.waiting.sorted.remove(&key)?;
        self.next = q.op.offset + q.op.len;
        Some(q)
    }
}

/// bfq's state: a queue per stream, the streams waiting for their turn, and the turn of
/// the queue in service.
#[derive(Default)]
pub(super) struct Bfq {
    queues: HashMap<u32, Sorted>,
    /// Streams with commands waiting and no turn, in the order they get one.
    turns: VecDeque<u32>,
    serving: Option<Turn>,
    /// Where the last command sent ends (`last_position`).
    last: u64,
    arrivals: u64,
    /// Commands waiting in all queues.
    waiting: usize,
}

/// The queue in service and what it has had of its turn.
struct Turn {
    stream: u32,
    started: Nanos,
    sent: u64,
    /// Whether this turn looked at the queue's oldest command (`bfq_check_fifo`: once).
    fifo_checked: bool,
}

impl Bfq {
    fn push(&mut self, q: Queued) {
        let n = self.arrivals;
        self.arrivals += 1;
        self.waiting += 1;
        let stream = q.op.stream;
        let queue = self.queues.entry(stream).or_default();
        if queue.sorted.is_empty() && self.serving.as_ref().map(|t| t.stream) != Some(stream) {
            self.turns.push_back(stream);
        }
        let deadline = q.arrival + BFQ_FIFO_EXPIRE;
        queue.push(q, n, deadline);
    }

    /// `bfq_dispatch_request`: the queue in service sends its next command, unless its
    /// turn is over (nothing waiting, budget or time used up); then the next queue's turn.
    fn pop(&mut self, now: Nanos) -> Option<Queued> {
        if let Some(t) = &self.serving {
            let empty = self
                .queues
                .get(&t.stream)
                .is_none_or(|q| q.sorted.is_empty());
            if empty || t.sent >= BFQ_BUDGET || now.0 >= t.started.0 + BFQ_TIMEOUT.0 {
                if !empty {
                    self.turns.push_back(t.stream);
                }
                self.serving = None;
            }
        }
        if self.serving.is_none() {
            let stream = self.turns.pop_front()?;
            self.serving = Some(Turn {
                stream,
                started: now,
                sent: 0,
                fifo_checked: false,
            });
        }
        let t = self.serving.as_mut().expect("a queue in service");
        let queue = self.queues.get_mut(&t.stream).expect("its queue");
        let key = queue.bfq_next(self.last, now, &mut t.fifo_checked)?;
        let q = queue.sorted.remove(&key).expect("a waiting command");
        t.sent += q.op.len;
        self.waiting -= 1;
        self.last = q.op.offset + q.op.len;
        Some(q)
    }
}

impl Sorted {
    /// `bfq_find_next_rq` for one of bfq's queues: its oldest command if it expired and
    /// this turn has not looked yet, else the nearer of the commands just above and just
    /// below `last` (`bfq_choose_req`; with nothing above, the lowest).
    fn bfq_next(&mut self, last: u64, now: Nanos, fifo_checked: &mut bool) -> Option<(u64, u64)> {
        if !*fifo_checked {
            *fifo_checked = true;
            if let Some((deadline, offset, n)) = self.oldest() {
                if deadline <= now {
                    return Some((offset, n));
                }
            }
        }
        let above = self
            .sorted
            .range((last, 0)..)
            .next()
            .or_else(|| self.sorted.iter().next())
            .map(|(k, _)| *k);
        let below = self.sorted.range(..(last, 0)).next_back().map(|(k, _)| *k);
        match (above, below) {
            (Some(a), Some(b)) => Some(choose(a, b, last)),
            (a, b) => a.or(b),
        }
    }
}

/// `bfq_choose_req`: of two commands, the one nearer `last`, a backward distance counting
/// `BFQ_BACK_PENALTY` times and a backward seek beyond `BFQ_BACK_MAX` a last resort (of
/// two such, the one further back: only one long backward seek then).
fn choose(a: (u64, u64), b: (u64, u64), last: u64) -> (u64, u64) {
    let distance = |s: u64| {
        if s >= last {
            Some(s - last)
        } else if s + BFQ_BACK_MAX >= last {
            Some((last - s) * BFQ_BACK_PENALTY)
        } else {
            None
        }
    };
    match (distance(a.0), distance(b.0)) {
        (Some(da), Some(db)) => {
            if da < db || (da == db && a.0 >= b.0) {
                a
            } else {
                b
            }
        }
        (Some(_), None) => a,
        (None, Some(_)) => b,
        (None, None) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
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
                stream: 0,
            },
            Nanos(at),
        )
    }

    fn from(stream: u32, offset: u64, at: u64) -> Queued {
        let mut c = q(offset, at);
        c.op.stream = stream;
        c
    }

    fn drain(e: &mut Elevator, now: u64) -> Vec<u64> {
        std::iter::from_fn(|| e.pop(Nanos(now)))
            .map(|q| q.op.offset >> 20)
            .collect()
    }

    #[test]
    fn bfq_serves_one_process_at_a_time_nearest_first() {
        let mut e = Elevator::new(Scheduler::Bfq);
        // Job 0's commands, then job 1's, interleaved on the disk.
        for (stream, o) in [(0, 500), (1, 510), (0, 100), (1, 110), (0, 490), (1, 20)] {
            e.push(from(stream, o << 20, 0));
        }
        // Job 0's turn: from sector 0 up (100), then 490 is nearer than going back, then
        // 500; then job 1's: from 500 back 390 MiB is beyond bfq_back_max, so up to 510,
        // then the lowest (20) before 110.
        assert_eq!(drain(&mut e, 1), [100, 490, 500, 510, 20, 110]);
        assert!(e.is_empty());
    }

    #[test]
    fn bfq_counts_a_backward_seek_double_and_ends_a_turn_after_its_time() {
        let mut e = Elevator::new(Scheduler::Bfq);
        e.push(from(0, 100 << 20, 0));
        assert_eq!(drain(&mut e, 0), [100]);
        // From 100 MiB: 3 MiB back counts 6, 5 MiB up counts 5, so up first.
        e.push(from(0, 97 << 20, 1));
        e.push(from(0, 105 << 20, 1));
        assert_eq!(
            e.pop(Nanos(2)).unwrap().op.offset >> 20,
            105,
            "5 up before 3 back"
        );
        // Another job waits; job 0 keeps its turn until bfq_timeout.
        e.push(from(1, 300 << 20, 3));
        e.push(from(0, 108 << 20, 3));
        assert_eq!(e.pop(Nanos(4)).unwrap().op.offset >> 20, 108);
        let late = BFQ_TIMEOUT.0 + 10;
        assert_eq!(
            e.pop(Nanos(late)).unwrap().op.offset >> 20,
            300,
            "job 0's time is up"
        );
        assert_eq!(e.pop(Nanos(late)).unwrap().op.offset >> 20, 97);
    }

    #[test]
    fn bfq_sends_an_expired_command_first_in_a_turn() {
        let mut e = Elevator::new(Scheduler::Bfq);
        e.push(from(0, 900 << 20, 0));
        for o in [10, 20, 30] {
            e.push(from(0, o << 20, 200_000_000));
        }
        // At 200 ms the command from t=0 has waited past bfq_fifo_expire (125 ms).
        assert_eq!(drain(&mut e, 200_000_000), [900, 10, 20, 30]);
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
