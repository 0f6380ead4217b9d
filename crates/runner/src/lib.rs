//! The run loop: every unfinished (case, repetition) of a plan on one target, each result
//! committed the moment it ends.
//!
//! Workers run cases (the simulator: one per core; real disks: one at a time); the thread
//! that calls [`Runner::run`] alone writes the store, so a result is committed as soon as
//! it arrives and an interrupt loses at most the cases in flight. What happens is told
//! through [`Event`]s, so the command line draws progress bars from them and a fleet
//! controller could forward them; nothing here prints.

use raidlab_backend::{CaseOutput, RunContext, Target, TargetError};
use raidlab_core::{Case, Plan, TargetKind};
use raidlab_store::{NewResult, Store, StoreError};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Estimated seconds of array creation, mkfs and teardown per case, for the ETA.
const SETUP_SECS: u64 = 5;

/// What the loop reports while it runs.
#[derive(Debug, Clone)]
pub enum Event {
    /// What is happening now (`case 2/8 · raid5 … · mkfs`, `… done`, `teardown`).
    Message(String),
    /// Work done so far, in the units of [`total`].
    Position(u64),
    /// A signal arrived: no new case starts; what is in flight ends and is torn down.
    Stopping,
    /// A result the store has just committed (a fleet host sends it to its controller).
    Committed(Box<NewResult>),
}

/// Why the loop stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("case {case}: the target's fio output does not parse: {why}")]
    Output { case: String, why: String },
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// How the run ended.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Results committed by this run.
    pub committed: usize,
    /// One line per case that failed (the others are stored).
    pub failures: Vec<String>,
}

/// Every (case, repetition) of the plan that the store does not hold yet, in run order.
pub fn pending<'p>(plan: &'p Plan, store: &Store) -> Result<Vec<(&'p Case, u32)>, StoreError> {
    let finished = store.finished()?;
    Ok((1..=plan.run.repeat)
        .flat_map(|rep| plan.cases().iter().map(move |c| (c, rep)))
        .filter(|(c, rep)| !finished.contains(&(c.id.clone(), *rep)))
        .collect())
}

/// A flag that SIGINT, SIGTERM and SIGHUP (a closed ssh session) all set alike: take no
/// new case, finish or stop the ones in flight, tear down, commit. On the simulator a
/// second signal ends the process at once (nothing stands, results committed stay); on a
/// target that builds arrays it does not, so the teardown always runs to its end.
pub fn stop_on_signals(kind: TargetKind) -> std::io::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        if kind == TargetKind::Sim {
            signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
        }
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// One run of a list of (case, repetition) on a target.
pub struct Runner<'a> {
    pub target: &'a dyn Target,
    /// Set by a signal (or the caller): no new case starts, the ones in flight end.
    pub stop: &'a AtomicBool,
    /// Where progress goes.
    pub events: &'a (dyn Fn(Event) + Sync),
}

/// What one worker hands the committing thread.
struct Finished<'c> {
    case: &'c Case,
    rep: u32,
    started: i64,
    wall: Duration,
    out: Result<CaseOutput, TargetError>,
}

/// A case's share of the work: its seconds on a real-time target, else 1.
pub fn weight(kind: TargetKind, case: &Case) -> u64 {
    if kind.capabilities().real_time {
        (case.workload.runtime + case.workload.ramp).get() / 1_000_000_000 + SETUP_SECS
    } else {
        1
    }
}

/// All the work of `todo` on `kind`, in the units of [`Event::Position`]: seconds on a
/// real-time target (so the ETA is one of time), else cases.
pub fn total(kind: TargetKind, todo: &[(&Case, u32)]) -> u64 {
    todo.iter().map(|(c, _)| weight(kind, c)).sum()
}

impl Runner<'_> {
    fn real_time(&self) -> bool {
        self.target.kind().capabilities().real_time
    }

    fn weight(&self, case: &Case) -> u64 {
        weight(self.target.kind(), case)
    }

    /// Run every entry of `todo`, committing each result into `store` as it ends. The
    /// target's `finish` runs whatever happened, so nothing is left standing.
    pub fn run(&self, store: &mut Store, todo: &[(&Case, u32)]) -> Result<Outcome, RunError> {
        self.target.prepare(todo);
        let ran = self.run_workers(store, todo);
        (self.events)(Event::Message("teardown".into()));
        let finished = self.target.finish();
        let outcome = ran?;
        finished?;
        Ok(outcome)
    }

    fn run_workers(&self, store: &mut Store, todo: &[(&Case, u32)]) -> Result<Outcome, RunError> {
        let next = AtomicUsize::new(0);
        let (tx, rx) = mpsc::channel();
        // For the timed bar: when the case in flight started (seconds into the run) and
        // its weight, so the bar moves while a long case runs.
        let run_t0 = Instant::now();
        let in_flight = (AtomicU64::new(u64::MAX), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..self.target.parallel().min(todo.len().max(1)) {
                let tx = tx.clone();
                let (next, in_flight) = (&next, &in_flight);
                s.spawn(move || self.worker(todo, next, in_flight, run_t0, tx));
            }
            drop(tx);
            self.commit_all(store, &rx, &in_flight, run_t0)
        })
    }

    fn worker<'c>(
        &self,
        todo: &[(&'c Case, u32)],
        next: &AtomicUsize,
        in_flight: &(AtomicU64, AtomicU64),
        run_t0: Instant,
        tx: mpsc::Sender<Finished<'c>>,
    ) {
        while !self.stop.load(Ordering::SeqCst) {
            let i = next.fetch_add(1, Ordering::SeqCst);
            let Some(&(case, rep)) = todo.get(i) else {
                break;
            };
            let started = unix_now();
            let t0 = Instant::now();
            in_flight.1.store(self.weight(case), Ordering::SeqCst);
            in_flight
                .0
                .store(run_t0.elapsed().as_secs(), Ordering::SeqCst);
            let label = format!("case {}/{} · {}", i + 1, todo.len(), case.label());
            let phase = |p: &str| (self.events)(Event::Message(format!("{label} · {p}")));
            let cx = RunContext {
                stop: self.stop,
                phase: &phase,
                next: todo.get(i + 1).map(|(c, _)| *c),
            };
            let out = self.target.run_case(case, rep, &cx);
            let done = Finished {
                case,
                rep,
                started,
                wall: t0.elapsed(),
                out,
            };
            if tx.send(done).is_err() {
                break;
            }
        }
    }

    fn commit_all(
        &self,
        store: &mut Store,
        rx: &mpsc::Receiver<Finished<'_>>,
        in_flight: &(AtomicU64, AtomicU64),
        run_t0: Instant,
    ) -> Result<Outcome, RunError> {
        let mut outcome = Outcome::default();
        let mut done = 0;
        let mut told = false;
        loop {
            if !told && self.stop.load(Ordering::SeqCst) {
                told = true;
                (self.events)(Event::Stopping);
            }
            let f = match rx.recv_timeout(Duration::from_millis(500)) {
                Ok(f) => f,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let since = in_flight.0.load(Ordering::SeqCst);
                    if self.real_time() && since != u64::MAX {
                        let into = run_t0.elapsed().as_secs().saturating_sub(since);
                        let w = in_flight.1.load(Ordering::SeqCst);
                        (self.events)(Event::Position(done + into.min(w.saturating_sub(1))));
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let (case, rep) = (f.case, f.rep);
            match f.out {
                Ok(o) => {
                    self.commit(store, case, rep, f.started, f.wall, o)?;
                    outcome.committed += 1;
                    (self.events)(Event::Message(format!("{} done", case.label())));
                }
                Err(TargetError::Interrupted) => {}
                Err(e) => outcome.failures.push(format!(
                    "case {} ({}) repetition {rep}: {e}",
                    case.id,
                    case.label()
                )),
            }
            done += self.weight(case);
            (self.events)(Event::Position(done));
        }
        Ok(outcome)
    }

    fn commit(
        &self,
        store: &mut Store,
        case: &Case,
        rep: u32,
        started: i64,
        wall: Duration,
        o: CaseOutput,
    ) -> Result<(), RunError> {
        let text = String::from_utf8_lossy(&o.fio_json);
        let parsed = raidlab_fio::parse_output(&text).map_err(|e| RunError::Output {
            case: case.id.0.clone(),
            why: e.to_string(),
        })?;
        let result = NewResult {
            case_id: case.id.clone(),
            repetition: rep,
            target: self.target.kind().name().into(),
            figures: parsed.figures,
            raw_json: o.fio_json,
            logs: o.logs,
            environment: o.environment,
            started_unix: started,
            wall_ns: wall.as_nanos() as u64,
            source: None,
        };
        store.commit_result(&result)?;
        (self.events)(Event::Committed(Box::new(result)));
        Ok(())
    }
}
