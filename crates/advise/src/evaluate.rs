//! Each candidate simulated under each workload, healthy, degraded (its last member gone)
//! and rebuilding (md recovering a fresh member while the workload runs, with the whole
//! member's rebuild time sampled loaded and idle), on every core; then its probability of
//! losing data over the mission, from the slowest loaded rebuild.

use crate::cache::Cache;
use crate::{AdviseError, Candidate, Need};
use raidlab_core::{ArrayState, Headline};
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Trials of the Monte Carlo per candidate: about 30 ms each, a 95 % interval of ±0.06
/// points around 1 %.
pub const TRIALS: u64 = 100_000;

/// What one simulated case gave: the workload's headline figure (IOPS below 128 KiB
/// blocks, MiB/s from there), and for a rebuilding case the whole member's rebuild,
/// seconds, under the workload and idle.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Simulated {
    pub figure: f64,
    pub rebuild_s: Option<f64>,
    pub rebuild_idle_s: Option<f64>,
}

/// A candidate's figures: per workload, healthy, degraded and while rebuilding (the
/// latter two absent without redundancy); capacity; rebuild; risk.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Evaluation {
    pub candidate: Candidate,
    /// Usable bytes, and the members' raw bytes.
    pub usable: u64,
    pub raw: u64,
    /// Member failures survived in the worst case.
    pub tolerance: u32,
    pub healthy: Vec<f64>,
    pub degraded: Vec<Option<f64>>,
    pub rebuilding: Vec<Option<f64>>,
    /// A whole member's rebuild under the slowest workload, and idle, hours.
    pub rebuild_h: Option<f64>,
    pub rebuild_idle_h: Option<f64>,
    /// Probability of losing data over the mission, and its 95 % interval.
    pub loss: f64,
    pub loss_interval: (f64, f64),
}

impl Evaluation {
    /// Degraded performance as a share of healthy, the worst workload's (0 without
    /// redundancy: the array is gone).
    pub fn degraded_share(&self) -> f64 {
        share(&self.healthy, &self.degraded)
    }

    /// Performance while a member rebuilds as a share of healthy, the worst workload's (0
    /// without redundancy).
    pub fn rebuilding_share(&self) -> f64 {
        share(&self.healthy, &self.rebuilding)
    }
}

/// The smallest of `other / healthy` over the workloads (0 where `other` is absent).
fn share(healthy: &[f64], other: &[Option<f64>]) -> f64 {
    healthy
        .iter()
        .zip(other)
        .map(|(h, d)| d.map_or(0.0, |d| if *h > 0.0 { d / h } else { 0.0 }))
        .fold(f64::INFINITY, f64::min)
}

/// The unit of the headline figure of a workload with blocks of `bs`.
pub fn unit(bs: &str) -> &'static str {
    match bs.parse::<raidlab_core::Bytes>().map(Headline::of) {
        Ok(Headline::Bandwidth) => "MiB/s",
        _ => "IOPS",
    }
}

/// Simulate every candidate (cached figures are read back, new ones written), calling
/// `progress(done, total)` as cases complete.
pub fn evaluate_all(
    need: &Need,
    candidates: &[Candidate],
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Evaluation>, AdviseError> {
    let cache = need.cache.as_deref().map(Cache::open).transpose()?;
    let mut units = Vec::new();
    for (c, cand) in candidates.iter().enumerate() {
        for w in 0..need.workloads.len() {
            units.push((c, w, ArrayState::Healthy));
            if cand.redundant() {
                units.push((c, w, ArrayState::Degraded));
                units.push((c, w, ArrayState::Rebuilding));
            }
        }
    }
    let done = AtomicUsize::new(0);
    let total = units.len();
    let sims: Vec<Simulated> = units
        .par_iter()
        .map(|&(c, w, state)| {
            let case = candidates[c].case(need, &need.workloads[w], state)?;
            let key = Cache::key(&case, need.seed);
            let s = match cache.as_ref().and_then(|k| k.get::<Simulated>(&key)) {
                Some(s) => s,
                None => {
                    let s = simulate(&case, need.seed)?;
                    if let Some(k) = &cache {
                        k.put(&key, &s)?;
                    }
                    s
                }
            };
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            Ok(s)
        })
        .collect::<Result<_, AdviseError>>()?;
    let mut by: std::collections::HashMap<(usize, usize, ArrayState), Simulated> =
        std::collections::HashMap::new();
    for (u, s) in units.iter().zip(sims) {
        by.insert(*u, s);
    }
    candidates
        .par_iter()
        .enumerate()
        .map(|(c, cand)| {
            let healthy_case = cand.case(need, &need.workloads[0], ArrayState::Healthy)?;
            let member = raidlab_sim::resolve_model(&healthy_case)
                .map_err(|e| AdviseError::Sim {
                    case: cand.label(),
                    why: e.to_string(),
                })?
                .capacity()
                .0;
            let spec = &healthy_case.array;
            let usable = (member as f64 * spec.disks as f64 * spec.capacity_fraction()) as u64;
            let ws = 0..need.workloads.len();
            let get = |w: usize, s: ArrayState| by.get(&(c, w, s)).copied();
            let healthy: Vec<f64> = ws
                .clone()
                .map(|w| get(w, ArrayState::Healthy).expect("simulated").figure)
                .collect();
            let degraded = ws
                .clone()
                .map(|w| get(w, ArrayState::Degraded).map(|s| s.figure))
                .collect();
            let rebuilding = ws
                .clone()
                .map(|w| get(w, ArrayState::Rebuilding).map(|s| s.figure))
                .collect();
            let hours = |f: &dyn Fn(&Simulated) -> Option<f64>| {
                ws.clone()
                    .filter_map(|w| get(w, ArrayState::Rebuilding).as_ref().and_then(f))
                    .reduce(f64::max)
                    .map(|s| s / 3600.0)
            };
            let rebuild_h = hours(&|s| s.rebuild_s);
            let rebuild_idle_h = hours(&|s| s.rebuild_idle_s);
            let (loss, loss_interval) = risk(cache.as_ref(), spec, member, rebuild_h, need)?;
            Ok(Evaluation {
                candidate: cand.clone(),
                usable,
                raw: member * spec.disks as u64,
                tolerance: spec.fault_tolerance(),
                healthy,
                degraded,
                rebuilding,
                rebuild_h,
                rebuild_idle_h,
                loss,
                loss_interval,
            })
        })
        .collect()
}

/// [`risk`] without a cache: for arrays measured rather than searched.
pub(crate) fn risk_of(
    spec: &raidlab_core::ArraySpec,
    member: u64,
    rebuild_h: Option<f64>,
    need: &Need,
) -> Result<(f64, (f64, f64)), AdviseError> {
    risk(None, spec, member, rebuild_h, need)
}

/// The probability of losing data over the mission and its 95 % interval, with each
/// rebuild as long as `rebuild_h` (cached by everything the Monte Carlo is given).
fn risk(
    cache: Option<&Cache>,
    spec: &raidlab_core::ArraySpec,
    member: u64,
    rebuild_h: Option<f64>,
    need: &Need,
) -> Result<(f64, (f64, f64)), AdviseError> {
    let array = raidlab_risk::Array::from_spec(spec, member as f64);
    let mut mission = raidlab_risk::Mission::typical(
        raidlab_risk::Rebuild::Constant(rebuild_h.unwrap_or(0.0)),
        TRIALS,
    );
    mission.years = need.years;
    mission.seed = need.seed;
    let key = Cache::key_of(&[format!("risk {array:?} {mission:?}").as_bytes()]);
    if let Some(hit) = cache.and_then(|c| c.get(&key)) {
        return Ok(hit);
    }
    let r = raidlab_risk::simulate(&array, &mission);
    let answer = (r.probability(), r.interval());
    if let Some(c) = cache {
        c.put(&key, &answer)?;
    }
    Ok(answer)
}

/// One case on the simulator, the array in service (no benchmark's layout pass has grown
/// its stripe cache): its headline figure and rebuild times.
fn simulate(case: &raidlab_core::Case, seed: u64) -> Result<Simulated, AdviseError> {
    let err = |why: String| AdviseError::Sim {
        case: case.label(),
        why,
    };
    let out = raidlab_sim::simulate_from(case, seed, raidlab_sim::Start::InService)
        .map_err(|e| err(e.to_string()))?;
    let f = raidlab_fio::parse_output(&out.fio_json)
        .map_err(|e| err(e.to_string()))?
        .figures;
    let dirs = [f.read.as_ref(), f.write.as_ref()];
    let figure = match Headline::of(case.workload.bs) {
        Headline::Iops => dirs.iter().flatten().map(|d| d.iops).sum(),
        Headline::Bandwidth => dirs.iter().flatten().map(|d| d.bw_bytes_s).sum::<f64>() / 1048576.0,
    };
    Ok(Simulated {
        figure,
        rebuild_s: out.rebuild.as_ref().and_then(|r| r.seconds_full),
        rebuild_idle_s: out.rebuild.as_ref().and_then(|r| r.seconds_idle),
    })
}
