//! The target seam: where a case runs. `sim` is the simulator (here), `host` real devices of this
//! machine, `vm` the real kernel md inside qemu on emulated disks. All implement the same
//! trait, so the run loop, the store and the report never ask where a result came from —
//! except to label it.

pub mod script;

use std::sync::atomic::AtomicBool;

/// `eprintln!` that cannot panic: a line for the person at the terminal. When standard
/// error is closed (`raidlab run … 2>&1 | head`), the line is dropped and the work — a
/// run with an array up, a cleanup — goes on to its orderly end instead of panicking.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

use raidlab_core::{Case, TargetKind};

/// One finished case, as a target hands it over.
#[derive(Debug, Clone)]
pub struct CaseOutput {
    /// fio's JSON output (or the simulator's, in fio's format), byte for byte.
    pub fio_json: Vec<u8>,
    /// Extra raw files (fio logs), by name.
    pub logs: Vec<(String, Vec<u8>)>,
    /// What was recorded about the system (or the model) while the case ran.
    pub environment: raidlab_core::Environment,
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error(transparent)]
    Sim(#[from] raidlab_sim::SimError),
    #[error("{0}")]
    Host(String),
    #[error("interrupted: the case was stopped and torn down; it is not stored")]
    Interrupted,
}

/// What the run loop lends a target while a case runs.
pub struct RunContext<'a> {
    /// Set by Ctrl-C / SIGTERM: stop fio, tear down, return [`TargetError::Interrupted`].
    pub stop: &'a AtomicBool,
    /// Report the phase now running (`mkfs`, `fio`, …) for the progress line.
    pub phase: &'a (dyn Fn(&str) + Sync),
    /// The case this worker runs next, if any: a real target may leave the array up
    /// for it.
    pub next: Option<&'a Case>,
}

/// Where cases run. Implementations must be usable from several threads at once when
/// `parallel()` says so.
pub trait Target: Sync {
    /// Which target this is: its label on each result, and what it can do.
    fn kind(&self) -> TargetKind;
    /// How many cases may run at once (the simulator: one per core; real disks: one).
    fn parallel(&self) -> usize;
    /// Called once after the last case (also after an interrupt): release what is still
    /// standing.
    fn finish(&self) -> Result<(), TargetError> {
        Ok(())
    }
    /// Called once before the first case with every (case, repetition) to run, in order:
    /// the VM target runs several of them per boot.
    fn prepare(&self, _todo: &[(&Case, u32)]) {}
    /// Run one repetition of a case.
    fn run_case(
        &self,
        case: &Case,
        repetition: u32,
        cx: &RunContext,
    ) -> Result<CaseOutput, TargetError>;
}

/// The simulator target.
pub struct SimTarget {
    pub seed: u64,
    pub threads: usize,
}

impl SimTarget {
    /// The seed of one repetition: each gets its own, derived from the plan's so runs
    /// stay reproducible.
    pub fn seed_of(plan_seed: u64, repetition: u32) -> u64 {
        plan_seed.wrapping_add(repetition as u64 * 0x1000_0000_0001)
    }
}

impl Target for SimTarget {
    fn kind(&self) -> TargetKind {
        TargetKind::Sim
    }

    fn parallel(&self) -> usize {
        self.threads.max(1)
    }

    fn run_case(
        &self,
        case: &Case,
        repetition: u32,
        _cx: &RunContext,
    ) -> Result<CaseOutput, TargetError> {
        let seed = SimTarget::seed_of(self.seed, repetition);
        let out = raidlab_sim::simulate(case, seed)?;
        let environment = out.environment(seed);
        Ok(CaseOutput {
            fio_json: out.fio_json.into_bytes(),
            logs: vec![
                ("iops.log".into(), out.iops_log.into_bytes()),
                ("lat.log".into(), out.lat_log.into_bytes()),
            ],
            environment,
        })
    }
}
