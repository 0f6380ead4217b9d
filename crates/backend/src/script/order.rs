//! The order a run takes its cases in, and what a case may skip when the one before left
//! its array up; the bash script of a whole plan that `plan --script` prints.

use super::{case_steps, placeholder, Paths, Phase, Step, CACHE_FUNCTIONS};
use raidlab_core::{ArrayState, Case, Engine, Filesystem, Plan};
use std::fmt::Write;

/// Which parts of a case's steps run when consecutive cases share one array, as the
/// seeds ran every workload on an array before building the next: building (and, on real
/// disks, resyncing) an array per workload would cost hours and measure nothing new.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reuse {
    /// The array is already built, its caches set, its file system mounted.
    pub array_up: bool,
    /// The test region is already laid out (written) by an earlier case.
    pub laid_out: bool,
    /// The next case uses the same array: leave it up.
    pub keep_up: bool,
}

/// Drop the steps `reuse` makes unnecessary.
pub fn select(steps: Vec<Step>, reuse: Reuse) -> Vec<Step> {
    steps
        .into_iter()
        .filter(|s| match s.phase {
            Phase::Cache | Phase::Create | Phase::Resync | Phase::Mkfs | Phase::Mount => {
                !reuse.array_up
            }
            Phase::Layout => !reuse.laid_out,
            Phase::Teardown => !reuse.keep_up,
            Phase::Fio => true,
        })
        .collect()
}

/// Whether two cases run on the same array (same spec, same disks). A rebuilding array
/// is never shared: each case starts its recovery from the degraded array. Nor is a
/// degraded btrfs: it loses its members after its test data is laid out, so a case that
/// needs more data laid out starts again from a whole file system.
pub fn same_array(a: &Case, b: &Case) -> bool {
    a.array == b.array
        && a.disks == b.disks
        && a.array.state != ArrayState::Rebuilding
        && (a.array.engine != Engine::Btrfs || a.array.state.is_healthy())
}

/// The reuse each case of a sequence gets when nothing fails: what `plan --script` and
/// `run --dry-run` print, and what the host target does.
pub fn reuse_sequence(cases: &[&Case]) -> Vec<Reuse> {
    let mut laid: Option<(u64, u64)> = None;
    let mut out = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let w = &case.workload;
        let region = (w.offset.0, w.offset.0 + w.size.0);
        let array_up = i > 0 && same_array(cases[i - 1], case);
        if !array_up {
            laid = None;
        }
        let reuse = Reuse {
            array_up,
            laid_out: laid.is_some_and(|(a, b)| a <= region.0 && region.1 <= b),
            keep_up: cases.get(i + 1).is_some_and(|n| same_array(n, case)),
        };
        let lays_out = case.array.filesystem != Filesystem::None || w.rw.reads();
        if lays_out && !reuse.laid_out {
            laid = Some(region);
        }
        out.push(reuse);
    }
    out
}

/// Every case and repetition of a plan in the order a run takes them, with what each may
/// skip because the case before left its array up: the walk `plan --script` and `run
/// --dry-run` print (the host target decides the same as it goes, with `same_array`).
pub fn run_order(plan: &Plan) -> Vec<(&Case, u32, Reuse)> {
    let todo: Vec<(&Case, u32)> = (1..=plan.run.repeat)
        .flat_map(|rep| plan.cases().iter().map(move |c| (c, rep)))
        .collect();
    let cases: Vec<&Case> = todo.iter().map(|(c, _)| *c).collect();
    todo.iter()
        .zip(reuse_sequence(&cases))
        .map(|(&(case, rep), reuse)| (case, rep, reuse))
        .collect()
}

/// A bash script of every case and repetition of a plan, for a person to read and run.
pub fn plan_script(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "#!/usr/bin/env bash");
    let _ = writeln!(
        s,
        "# raidlab plan `{}`: the commands `raidlab run --target host` runs, in order.",
        plan.name
    );
    let _ = writeln!(
        s,
        "# THIS DESTROYS ALL DATA ON THE DISKS BELOW. raidlab itself checks every disk first"
    );
    let _ = writeln!(
        s,
        "# (not mounted, no signatures, not in use); this script does not."
    );
    let _ = writeln!(s, "set -euo pipefail\n");
    let count = plan.disks.count as usize;
    if plan.disks.devices.is_empty() {
        let _ = writeln!(
            s,
            "# The plan names no devices: list yours here (/dev/disk/by-id/… recommended)."
        );
        let names: Vec<String> = (0..count)
            .map(|i| format!("/dev/disk/by-id/CHANGE-ME-{}", i + 1))
            .collect();
        let _ = writeln!(s, "DISK=({})", names.join(" "));
    } else {
        let _ = writeln!(s, "DISK=({})", plan.disks.devices.join(" "));
    }
    s.push_str(CACHE_FUNCTIONS);
    let _ = writeln!(
        s,
        "# Each disk's write-cache setting now, to restore afterwards."
    );
    let _ = writeln!(
        s,
        "CACHE=()\nfor d in \"${{DISK[@]}}\"; do CACHE+=(\"$(wcache_get \"$d\")\"); done\n"
    );
    for (case, rep, reuse) in run_order(plan) {
        let members: Vec<String> = (0..case.array.disks as usize).map(placeholder).collect();
        let _ = writeln!(
            s,
            "# ── case {} · {} · repetition {rep}",
            case.id,
            case.label()
        );
        if reuse.array_up {
            let _ = writeln!(s, "# (the array of the previous case is still up)");
        }
        let result = format!("{}-r{rep}.json", case.id);
        let mut last = None;
        for st in select(case_steps(case, &members, &Paths::script(&result)), reuse) {
            if last != Some(st.phase) {
                let _ = writeln!(s, "# {}", st.phase.name());
                last = Some(st.phase);
            }
            let _ = writeln!(s, "{}", st.shell());
        }
        if reuse.keep_up {
            let _ = writeln!(s, "# (the array stays up for the next case)");
        }
        s.push('\n');
    }
    s
}
