//! The `sim` target: a discrete-event simulator of disks, md RAID and fio workloads.
//!
//! It answers "what would this array do?" for disks the user does not own, in seconds,
//! without root. Output is fio's own JSON format, so everything downstream treats
//! simulated and measured results alike. How each part is modelled, with sources and
//! limits: `docs/simulator.md`.

pub mod bitmap;
pub mod btrfs;
pub mod device;
pub mod engine;
pub mod fiojson;
pub mod hist;
pub mod md;
mod queue;
pub mod resync;
mod slab;

use device::{Hdd, Ssd, Throttle};
use engine::{Engine, SimRun};
use raidlab_core::disk::{DiskKind, DiskModel};
use raidlab_core::{
    ArrayState, Bytes, Case, Environment, Nanos, RebuildFigures, Scheduler, WriteCache,
};

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
    /// md's initial resync or a recovery ran alongside the workload (`resync = "during"`
    /// on a level that has one, or `state = "rebuilding"`).
    pub resync_ran: bool,
    /// A rebuilding case's recovery.
    pub rebuild: Option<RebuildFigures>,
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
            rebuild: self.rebuild.clone(),
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

/// How to run the engine beyond the case itself: the member size, where a recovery
/// starts, and whether fio jobs run.
#[derive(Debug, Clone, Copy)]
struct Runs {
    member: u64,
    /// Sample a whole member's recovery from this member offset.
    rebuild_from: Option<u64>,
    idle: bool,
}

/// Run the engine on the case's disk model.
fn run_engine(case: &Case, model: &DiskModel, seed: u64, how: Runs) -> SimRun {
    let write_cache = case.array.write_cache == WriteCache::On;
    macro_rules! go {
        ($make:expr) => {{
            let mut e = Engine::new(case, how.member, seed, $make);
            // virtio-blk's segments bound the requests md's merged page buffers make on
            // the VM lab's members: raid5/6's stripe pages one page a bio, raid1/10's sync
            // buffers 16 (other members: `max_sectors_kb` alone).
            if matches!(model.kind, DiskKind::Throttle(_)) {
                let bio_pages = match case.array.level {
                    raidlab_core::Level::Raid1 | raidlab_core::Level::Raid10 => {
                        resync::MIRROR_BUFFER / 4096
                    }
                    _ => 1,
                };
                e = e.merge_max(engine::segment_merge_max(
                    engine::VIRTIO_SEGMENTS,
                    bio_pages,
                ));
            }
            if let Some(at) = how.rebuild_from {
                e = e.rebuild_from(at);
            }
            if how.idle {
                e.idle().run()
            } else {
                e.run()
            }
        }};
    }
    match &model.kind {
        DiskKind::Hdd(p) => {
            let scheduler = case.disks.scheduler.unwrap_or(Scheduler::MqDeadline);
            go!(|rng: &mut _| Hdd::new(p, write_cache, scheduler, rng))
        }
        DiskKind::Ssd(p) => go!(|_: &mut _| Ssd::new(p)),
        DiskKind::Throttle(p) => go!(|_: &mut _| Throttle::new(p)),
    }
}

/// The engine's raw run of a case (what `simulate` renders): for tests that look at what
/// fio's output does not carry, such as how far md's sync got.
pub fn engine_run(case: &Case, seed: u64) -> SimRun {
    let model = resolve_model(case).expect("the case has a disk model");
    let member = case.disks.span.unwrap_or(model.capacity()).0;
    run_engine(
        case,
        &model,
        seed,
        Runs {
            member,
            rebuild_from: None,
            idle: false,
        },
    )
}

/// Points across the member where a full rebuild's speed is sampled: the middles of
/// this many equal parts.
pub const REBUILD_SAMPLES: u32 = 8;
/// Each sample's run: a ramp (md's speed marks and the drives' queues settle), then the
/// window measured.
const SAMPLE_RAMP: Nanos = Nanos(1_000_000_000);
const SAMPLE_WINDOW: Nanos = Nanos(5_000_000_000);
/// The longest a sample window grows when nothing of the sync completed in a shorter one.
const SAMPLE_LONGEST: Nanos = Nanos(80_000_000_000);

/// How long the recovery of a whole member (the model's capacity) takes, loaded (`idle`
/// false: the case's workload runs throughout) or idle: md's speed measured in a short run
/// started at the middle of each of `REBUILD_SAMPLES` equal parts of the member, each part
/// taking its bytes over that speed. A member's media rate falls from its outer to its
/// inner zones, and the workload's seeks cost more or less at each point, so one sample
/// would not do.
/// `None` when some sample made no progress at all.
pub fn full_rebuild_seconds(case: &Case, seed: u64, idle: bool) -> Result<Option<f64>, SimError> {
    let model = resolve_model(case)?;
    let capacity = model.capacity().0;
    let mut sample = case.clone();
    sample.workload.ramp = SAMPLE_RAMP;
    let part = capacity / REBUILD_SAMPLES as u64;
    let mut seconds = 0.0;
    for k in 0..REBUILD_SAMPLES as u64 {
        // Under heavy load a window may pass before the first sync request completes
        // (an elevator's write deadline is 5 s): sample longer then (×4 each time, up to
        // `SAMPLE_LONGEST`).
        let mut window = SAMPLE_WINDOW;
        let rate = loop {
            sample.workload.runtime = window;
            let run = run_engine(
                &sample,
                &model,
                seed ^ (k + 1).wrapping_mul(0x2545_F491_4F6C_DD1D),
                Runs {
                    member: capacity,
                    rebuild_from: Some(k * part + part / 2),
                    idle,
                },
            );
            let sync = run.sync.expect("a rebuilding case recovers");
            let rate = sync.rate();
            if rate > 0.0 || window >= SAMPLE_LONGEST {
                break rate;
            }
            window = Nanos(window.0 * 4);
        };
        if rate <= 0.0 {
            return Ok(None);
        }
        seconds += part as f64 / rate;
    }
    Ok(Some(seconds))
}

/// Simulate one case with a seed.
pub fn simulate(case: &Case, seed: u64) -> Result<SimOutput, SimError> {
    let model = resolve_model(case)?;
    let member: Bytes = case.disks.span.unwrap_or(model.capacity());
    let run = run_engine(
        case,
        &model,
        seed,
        Runs {
            member: member.0,
            rebuild_from: None,
            idle: false,
        },
    );
    // A re-added member's rebuild is what its bitmap flagged, not the whole member: its
    // own time (extrapolated at the run's speed when it outlasts the run); no idle figure.
    let readd = case.array.re_adds();
    let rebuild = match (case.array.state, &run.sync) {
        (ArrayState::Rebuilding, Some(sync)) => {
            let rate = sync.rate();
            Some(RebuildFigures {
                mib_s: rate / 1_048_576.0,
                seconds: sync.finished_at.map(|t| t.as_secs_f64()),
                seconds_full: if readd {
                    sync.finished_at
                        .map(|t| t.as_secs_f64())
                        .or_else(|| (rate > 0.0).then(|| (sync.size - sync.from) as f64 / rate))
                } else {
                    full_rebuild_seconds(case, seed, false)?
                },
                seconds_idle: if readd {
                    None
                } else {
                    full_rebuild_seconds(case, seed, true)?
                },
                mib_s_per_second: sync
                    .per_sec
                    .iter()
                    .map(|&b| b as f64 / 1_048_576.0)
                    .collect(),
            })
        }
        _ => None,
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
        rebuild,
    })
}
