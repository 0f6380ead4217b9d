//! `raidlab advise DIR`: the same ranking over arrays that were measured (or simulated
//! by a plan) instead of searched: each array of a results directory, with its figures
//! healthy, degraded and rebuilding under each workload the directory holds.

use crate::evaluate::{risk_of, Evaluation};
use crate::search::Candidate;
use crate::{AdviseError, Need, WorkloadSpec};
use raidlab_core::{ArrayState, Case};
use std::collections::BTreeMap;

/// One result of a results directory: its case, the headline figure it measured (the
/// median over repetitions) and, rebuilding, how long a whole member took.
#[derive(Debug, Clone)]
pub struct Measured {
    pub case: Case,
    pub figure: f64,
    pub rebuild_s: Option<f64>,
}

/// md's default `sync_speed_max` (KiB/s): an idle rebuild's ceiling, for arrays whose
/// rebuild was not measured.
const SYNC_SPEED_MAX_KIB_S: f64 = 200_000.0;

/// What a results directory gives advise: its workloads, an evaluation per array, and
/// the arrays left out for lacking a healthy figure of some workload.
pub struct MeasuredAdvice {
    pub workloads: Vec<WorkloadSpec>,
    pub evaluations: Vec<Evaluation>,
    pub skipped: Vec<String>,
}

/// The workloads and the evaluations of every array of `measured`.
pub fn evaluate_measured(
    need: &Need,
    measured: &[Measured],
) -> Result<MeasuredAdvice, AdviseError> {
    let spec_of = |c: &Case| WorkloadSpec {
        rw: c.workload.rw.to_string(),
        bs: c.workload.bs.to_fio(),
        iodepth: c.workload.iodepth,
        rwmixread: (c.workload.rw.reads() && c.workload.rw.writes())
            .then_some(c.workload.rwmixread),
    };
    let mut workloads: Vec<WorkloadSpec> = Vec::new();
    for m in measured {
        let w = spec_of(&m.case);
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    // Arrays by what a user builds: level, layout, chunk, width, bitmap, stripe cache,
    // engine, file system, disks (a degraded or rebuilding case is the same array in
    // another state).
    let identity = |c: &Case| {
        let a = &c.array;
        format!(
            "{}|{}|{:?}|{:?}|{:?}|{}|{}|{}|{}",
            a.engine,
            a.level,
            a.layout,
            a.chunk,
            a.stripe_cache,
            a.disks,
            a.bitmap,
            a.filesystem,
            serde_json::to_string(&c.disks).unwrap_or_default()
        )
    };
    let mut arrays: BTreeMap<String, Vec<&Measured>> = BTreeMap::new();
    for m in measured {
        arrays.entry(identity(&m.case)).or_default().push(m);
    }
    let (mut evals, mut skipped) = (Vec::new(), Vec::new());
    for ms in arrays.values() {
        let first = &ms[0].case;
        // The healthy case's spec where there is one (a degraded one counts its failures).
        let spec = ms
            .iter()
            .find(|m| m.case.array.state == ArrayState::Healthy)
            .map_or_else(|| first.array.clone(), |m| m.case.array.clone());
        let figure = |w: &WorkloadSpec, s: ArrayState| {
            ms.iter()
                .find(|m| m.case.array.state == s && spec_of(&m.case) == *w)
                .map(|m| m.figure)
        };
        let healthy: Option<Vec<f64>> = workloads
            .iter()
            .map(|w| figure(w, ArrayState::Healthy))
            .collect();
        let Some(healthy) = healthy else {
            skipped.push(spec.label());
            continue;
        };
        let member = first
            .disks
            .resolved_model()
            .ok()
            .flatten()
            .map_or(0, |m| m.capacity().0);
        let rebuild_h = ms
            .iter()
            .filter_map(|m| m.rebuild_s)
            .reduce(f64::max)
            .map(|s| s / 3600.0)
            .or_else(|| {
                (spec.fault_tolerance() > 0 && member > 0)
                    .then(|| member as f64 / (SYNC_SPEED_MAX_KIB_S * 1024.0) / 3600.0)
            });
        let (loss, loss_interval) = risk_of(&spec, member, rebuild_h, need)?;
        evals.push(Evaluation {
            candidate: Candidate {
                engine: spec.engine.to_string(),
                disks: spec.disks,
                level: spec.level.to_string(),
                layout: spec.layout.map(|l| l.to_string()),
                chunk: spec.chunk.map(|c| c.to_fio()),
                bitmap: spec.bitmap.to_string(),
                stripe_cache: matches!(
                    spec.level,
                    raidlab_core::Level::Raid5 | raidlab_core::Level::Raid6
                )
                .then(|| {
                    spec.stripe_cache
                        .unwrap_or(raidlab_core::spec::DEFAULT_STRIPE_CACHE)
                }),
            },
            usable: (member as f64 * spec.disks as f64 * spec.capacity_fraction()) as u64,
            raw: member * spec.disks as u64,
            tolerance: spec.fault_tolerance(),
            degraded: workloads
                .iter()
                .map(|w| figure(w, ArrayState::Degraded))
                .collect(),
            rebuilding: workloads
                .iter()
                .map(|w| figure(w, ArrayState::Rebuilding))
                .collect(),
            healthy,
            rebuild_h,
            rebuild_idle_h: None,
            loss,
            loss_interval,
        });
    }
    Ok(MeasuredAdvice {
        workloads,
        evaluations: evals,
        skipped,
    })
}
