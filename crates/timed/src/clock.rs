//! The simulator's member model driven by the wall clock.
//!
//! The simulator's devices ([`raidlab_sim::device::Member`]) take operations at a
//! simulated time and ask to be woken at later ones. Here simulated time is the time since
//! the member started, in nanoseconds: a command that arrives is submitted at its arrival,
//! and every wake the model asked for is delivered when the clock reaches it — late by
//! however long this thread took to get there, which is measured (*lateness*) but never
//! fed back: the model's schedule is the model's, whatever the machine does. A command
//! the model completes is answered at once.

use raidlab_core::Nanos;
use raidlab_sim::device::{Member, MemberOp, Out, Wakes};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a command is, as the model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    /// A forced-unit-access write: the model takes it as md's PREFLUSH + FUA write, which
    /// with its write cache off is a plain write (what reaches the media is already there).
    WriteFua,
    /// A cache flush: the model times it as md's PREFLUSH write of nothing at the head.
    Flush,
}

/// A command for the model, with what answers it.
pub struct Command {
    pub kind: Kind,
    pub offset: u64,
    pub len: u64,
    /// Handed back, untouched, in the completion.
    pub reply: Box<dyn FnOnce() + Send>,
}

/// Counters of one member since it started.
#[derive(Debug, Clone, Default)]
pub struct Live {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// The model's busy time (media positioning and transfer).
    pub busy: Nanos,
    /// Commands the model positioned for (not streaming on), and writes it acknowledged
    /// from its cache.
    pub seeks: u64,
    pub cache_acks: u64,
    /// The clock at the last change of what the model held, and the integral of the
    /// commands held over time until then (command·ns): their mean over a stretch is the
    /// member's queue depth.
    pub at: Nanos,
    pub held_ns: u128,
    /// Commands the model held at once, at most.
    pub max_outstanding: usize,
    /// How late each completion was answered against the model's schedule, in µs, in
    /// completion order.
    pub lateness_us: Vec<u32>,
}

/// The wakes the model asked for, in time order, ties in the order asked.
#[derive(Default)]
struct Wakeups {
    heap: BinaryHeap<Reverse<(Nanos, u64, u64)>>,
    seq: u64,
}

impl Wakes for &mut Wakeups {
    fn push(&mut self, (at, token): (Nanos, u64)) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, token)));
    }
}

/// The thread's state: the model, its wakes in time order (ties in the order asked),
/// and the commands it holds.
struct Clock<M: Member> {
    member: M,
    t0: Instant,
    wakes: Wakeups,
    next_tag: u64,
    held: HashMap<u64, Box<dyn FnOnce() + Send>>,
    done: Vec<u64>,
    live: Arc<Mutex<Live>>,
}

impl<M: Member> Clock<M> {
    fn now(&self) -> Nanos {
        Nanos(self.t0.elapsed().as_nanos() as u64)
    }

    /// Deliver every wake due by now, each at its own time.
    fn catch_up(&mut self) {
        loop {
            let now = self.now();
            let Some(&Reverse((at, _, token))) = self.wakes.heap.peek() else {
                return;
            };
            if at > now {
                return;
            }
            self.wakes.heap.pop();
            let mut out = Out {
                wakes: &mut self.wakes,
                done: &mut self.done,
            };
            self.member.wake(at, token, &mut out);
            self.answer(at);
        }
    }

    /// Answer what the model completed at `at`.
    fn answer(&mut self, at: Nanos) {
        if self.done.is_empty() {
            return;
        }
        let now = self.now();
        let late = now.0.saturating_sub(at.0);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        Self::integrate(&mut live, now, self.held.len());
        for tag in self.done.drain(..) {
            if let Some(reply) = self.held.remove(&tag) {
                reply();
                live.lateness_us
                    .push((late / 1000).min(u32::MAX as u64) as u32);
            }
        }
        let st = self.member.stats();
        (live.busy, live.seeks, live.cache_acks) = (st.busy, st.seeks, st.cache_acks);
    }

    /// Add the commands held since the last change to the integral, up to `now`.
    fn integrate(live: &mut Live, now: Nanos, held: usize) {
        live.held_ns += held as u128 * now.0.saturating_sub(live.at.0) as u128;
        live.at = now;
    }

    fn submit(&mut self, c: Command) {
        self.catch_up();
        let now = self.now();
        self.next_tag += 1;
        let tag = self.next_tag;
        let op = MemberOp {
            write: c.kind != Kind::Read,
            flush: matches!(c.kind, Kind::Flush | Kind::WriteFua),
            offset: if c.kind == Kind::Flush {
                self.member.head()
            } else {
                c.offset
            },
            len: if c.kind == Kind::Flush { 0 } else { c.len },
            tag,
            // The guest's commands come through one NBD connection.
            stream: 0,
        };
        {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            Self::integrate(&mut live, now, self.held.len());
            self.held.insert(tag, c.reply);
            match c.kind {
                Kind::Read => {
                    live.reads += 1;
                    live.read_bytes += c.len;
                }
                Kind::Write | Kind::WriteFua => {
                    live.writes += 1;
                    live.write_bytes += c.len;
                }
                Kind::Flush => live.flushes += 1,
            }
            live.max_outstanding = live.max_outstanding.max(self.held.len());
        }
        let mut out = Out {
            wakes: &mut self.wakes,
            done: &mut self.done,
        };
        self.member.submit(now, op, &mut out);
        self.answer(now);
    }
}

/// Run `member` on this thread until every sender of `commands` is gone and every command
/// it held is answered.
pub fn run<M: Member>(member: M, commands: Receiver<Command>, live: Arc<Mutex<Live>>) {
    // Linux lets a sleeping thread's timer fire up to 50 µs late by default (timer
    // slack), all of it lateness here: ask for 1 µs.
    // SAFETY: prctl only sets a property of the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    let mut c = Clock {
        member,
        t0: Instant::now(),
        wakes: Wakeups::default(),
        next_tag: 0,
        held: HashMap::new(),
        done: Vec::new(),
        live,
    };
    let mut open = true;
    while open || !c.held.is_empty() {
        c.catch_up();
        let next = c.wakes.heap.peek().map(|Reverse((at, _, _))| *at);
        let got = match next {
            Some(at) => {
                let wait = Duration::from_nanos(at.0.saturating_sub(c.now().0));
                if !open {
                    std::thread::sleep(wait);
                    continue;
                }
                commands.recv_timeout(wait)
            }
            None if open => commands.recv().map_err(|_| RecvTimeoutError::Disconnected),
            // Nothing scheduled and nothing coming: what is held never completes.
            None => break,
        };
        match got {
            Ok(cmd) => c.submit(cmd),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
}

/// A sender for [`run`]'s commands.
pub type Commands = Sender<Command>;
