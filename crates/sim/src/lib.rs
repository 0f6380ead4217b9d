//! The `sim` target: a discrete-event simulator of disks, md RAID and fio workloads.
//!
//! It answers "what would this array do?" for disks the user does not own, in seconds,
//! without root. Output is fio's own JSON format, so everything downstream treats
//! simulated and measured results alike. How each part is modelled, with sources and
//! limits: `docs/simulator.md`.

pub mod bitmap;
pub mod device;
pub mod engine;
pub mod fiojson;
pub mod hist;
pub mod md;
mod queue;
pub mod resync;
mod slab;

use device::{Hdd, Ssd, Throttle};
use engine::Engine;
use raidlab_core::disk::{DiskKind, DiskModel};
use raidlab_core::{Bytes, Case, Environment, Scheduler, WriteCache};

/// Why a case cannot be simulated, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("case {case}: the sim target needs a disk model: add `model = \"…\"` to [disks] (one of: {known})")]
    NoModel { case: String, known: String },
    #[error("case {case}: {why}")]
    BadModel { case: String, why: String },
}

/// One simulated case: fio-format JSON plus an fio-style IOPS log.
#[derive(Debug, Clone)]
pub struct SimOutput {
    pub fio_json: String,
    pub iops_log: String,
    /// Mean completion latency per second, in fio's `write_lat_log` format.
    pub lat_log: String,
    /// Events processed (for the speed benchmark).
    pub events: u64,
    /// Host I/Os completed.
    pub host_ios: u64,
    /// The disk model simulated (the preset with the plan's overrides).
    pub model: DiskModel,
    /// md's initial resync ran alongside the workload (`resync = "during"` on a level
    /// that has one).
    pub resync_ran: bool,
}

impl SimOutput {
    /// What a simulated result records as its environment: the simulator, seed and disk
    /// model, and `resync_during_fio` — the key the host and vm targets read from
    /// `/proc/mdstat` — so the report flags a simulated resync as it flags a measured one.
    pub fn environment(&self, seed: u64) -> Environment {
        Environment {
            target: Some("sim".into()),
            seed: Some(seed),
            simulator: Some(format!("raidlab-sim {}", env!("CARGO_PKG_VERSION"))),
            disk_model: Some(self.model.clone()),
            events: Some(self.events),
            resync_during_fio: Some(self.resync_ran),
            ..Environment::default()
        }
    }
}

/// The disk model a case asks for, with the plan's capacity and parameter overrides.
pub fn resolve_model(case: &Case) -> Result<DiskModel, SimError> {
    match case.disks.resolved_model() {
        Ok(Some(model)) => Ok(model),
        Ok(None) => Err(SimError::NoModel {
            case: case.id.0.clone(),
            known: DiskModel::preset_names().join(", "),
        }),
        Err(why) => Err(SimError::BadModel {
            case: case.id.0.clone(),
            why,
        }),
    }
}

/// Simulate one case with a seed.
pub fn simulate(case: &Case, seed: u64) -> Result<SimOutput, SimError> {
    let model = resolve_model(case)?;
    let member: Bytes = case.disks.span.unwrap_or(model.capacity());
    let write_cache = case.array.write_cache == WriteCache::On;
    let run = match &model.kind {
        DiskKind::Hdd(p) => {
            let scheduler = case.disks.scheduler.unwrap_or(Scheduler::MqDeadline);
            Engine::new(case, member.0, seed, |rng| {
                Hdd::new(p, write_cache, scheduler, rng)
            })
            .run()
        }
        DiskKind::Ssd(p) => Engine::new(case, member.0, seed, |_| Ssd::new(p)).run(),
        DiskKind::Throttle(p) => Engine::new(case, member.0, seed, |_| Throttle::new(p)).run(),
    };
    let model_json = serde_json::to_value(&model).expect("model serialises");
    Ok(SimOutput {
        fio_json: fiojson::render(case, &run, seed, &model_json),
        iops_log: fiojson::iops_log(case, &run),
        lat_log: fiojson::lat_log(case, &run),
        events: run.events,
        host_ios: run.read.ios + run.write.ios,
        model,
        resync_ran: run.resync_ran,
    })
}
