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
    #[error(
        "case {case} ({label}): the simulation stalled at {at_s:.3} s of simulated time: \
         I/O was still waiting and nothing was left to happen. This is a bug in the \
         simulator, not a property of the array: please report it with the plan (or the \
         `raidlab sim` flags) that produced it"
    )]
    Stalled {
        case: String,
        label: String,
        at_s: f64,
    },
}

/// What the array has been through before the case: it decides md raid5/6's stripe cache,
/// which grows under direct writes and shrinks only under memory pressure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// An array long in service: its stripe cache at `stripe_cache_size` (reclaim has
    /// taken back what bursts of writes grew). What `raidlab advise` and `raidlab risk`
    /// weigh, and `raidlab run` for a healthy array (see [`Start::as_the_targets_run`]).
    InService,
    /// As the host and vm targets run a case: the test region laid out first, where they
    /// lay it out (see [`laid_out_cache`]).
    LaidOut,
}

impl Start {
    /// How `raidlab run` starts a case ([`simulate`]): from the layout pass on an array
    /// with a member gone (degraded or rebuilding), where md sends every request through
    /// the stripe cache and the pass's cache is checked against traced guests (within 4 %
    /// of their heads at a SATA port's 168 segments; docs/simulator.md, "The layout
    /// pass"); in service on a healthy array. There the pass would move large writes most
    /// (a 1 MiB raid6 write at QD4 on 1 MiB chunks ×2, `examples/bench-1000.toml`), where
    /// the simulator already runs ahead of the guest for another reason (its plug
    /// merging): on the VM lab's healthy raid5/6 under 1 MiB random writes the pass took
    /// the 1 MiB-chunk arrays from +3…+11 % to +8…+14 % of the guest's IOPS (64 KiB
    /// chunks: within 7 % either way), so it stays opt-in (`raidlab sim --layout-pass`;
    /// docs/simulator.md, "The layout pass").
    pub fn as_the_targets_run(case: &Case) -> Start {
        if case.array.state.is_healthy() {
            Start::InService
        } else {
            Start::LaidOut
        }
    }
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
    /// Every command the members were handed, in order ([`simulate_traced`]; `None`
    /// otherwise).
    pub trace: Option<Vec<engine::MemberCommand>>,
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
    /// md's stripe cache at the start (what the layout pass grew it to).
    stripe_cache: Option<u64>,
    /// Run the layout pass of this many 1 MiB writes instead of the case.
    lay_out: Option<u64>,
    /// Record every member command ([`SimOutput::trace`]).
    trace: bool,
}

/// Run the engine on the case's disk model.
fn run_engine(case: &Case, model: &DiskModel, seed: u64, how: Runs) -> SimRun {
    let write_cache = case.array.write_cache == WriteCache::On;
    macro_rules! go {
        ($make:expr) => {{
            let mut e = Engine::new(case, how.member, seed, $make);
            // The port's segments bound the requests md's merged page buffers make on a
            // member (`max_segments`: a SATA port's 168, the VM lab's virtio-blk 254):
            // raid5/6's stripe pages one page a bio, raid1/10's sync buffers 16 (other
            // members: `max_sectors_kb` alone).
            if let Some(segments) = model.max_segments() {
                let bio_pages = match case.array.level {
                    raidlab_core::Level::Raid1 | raidlab_core::Level::Raid10 => {
                        resync::MIRROR_BUFFER / 4096
                    }
                    _ => 1,
                };
                e = e.merge_max(engine::segment_merge_max(u64::from(segments), bio_pages));
            }
            if let Some(at) = how.rebuild_from {
                e = e.rebuild_from(at);
            }
            if let Some(heads) = how.stripe_cache {
                e = e.stripe_cache(heads);
            }
            if let Some(ios) = how.lay_out {
                e = e.lay_out(ios);
            }
            if how.trace {
                e = e.traced();
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
            stripe_cache: None,
            lay_out: None,
            trace: false,
        },
    )
}

/// The layout pass's writes: 1 MiB each, as `--name=layout` writes them.
const LAYOUT_BS: u64 = 1 << 20;
/// Its queue depth (one for fio's synchronous engines, which ignore `iodepth`).
const LAYOUT_DEPTH: u32 = 16;
/// The most of the pass simulated: its first TiB. Past it the cache grows by a few
/// percent for each tenfold region (four `hdd-7200` as raid5, degraded: 786 heads after
/// 1 GiB, 1,547 after 10, 1,691 after 100, 1,817 after 1 TiB), and each TiB costs about
/// 4 s to simulate, so a pass over a whole 16 TB member would take a minute a case.
const LAYOUT_MAX_IOS: u64 = (1 << 40) / LAYOUT_BS;

/// md raid5/6's stripe cache as a case finds it on the host and vm targets. md grows the
/// cache by a head each time heads run short (Linux 4.1 on; see the engine's
/// `cache_short`), and nothing shrinks it without memory pressure, which direct I/O does
/// not make. The targets' layout pass — sequential 1 MiB direct writes, 16 deep, over the
/// test region, on the array as it stands before the case (a rebuilding case's array
/// degraded) — runs the heads short all the time: a traced VM-lab run had grown the
/// 256-head cache by 91 heads over a 128 MiB region before its recovery began. This runs
/// that pass and gives the cache it grew, for a case to start with ([`Start::LaidOut`]).
/// `None` where there is no such cache or no pass: other levels, btrfs, cases the targets
/// do not lay out, kernels before 4.1 (the rebuild's `kernel = "4.0"`), and buffered
/// workloads (reclaim's shrinker takes the cache back to `stripe_cache_size` as the page
/// cache fills).
pub fn laid_out_cache(case: &Case, model: &DiskModel, seed: u64, member: u64) -> Option<u64> {
    if !layout_pass_grows_the_cache(case) {
        return None;
    }
    let mut pass = case.clone();
    if pass.array.state == ArrayState::Rebuilding {
        pass.array.state = ArrayState::Degraded;
    }
    // The pass stands for the cache alone: an initial resync running beside it is left out.
    pass.array.resync = raidlab_core::Resync::AssumeClean;
    let w = &mut pass.workload;
    w.rw = raidlab_core::Rw::Write;
    w.bs = Bytes(LAYOUT_BS);
    w.iodepth = if engine::synchronous(&w.ioengine) {
        1
    } else {
        LAYOUT_DEPTH
    };
    w.numjobs = 1;
    w.ramp = Nanos::ZERO;
    w.fio.extra.clear();
    let ios = (w.size.0.div_ceil(LAYOUT_BS).max(1) * u64::from(w.fio.precondition.max(1)))
        .min(LAYOUT_MAX_IOS);
    let run = run_engine(
        &pass,
        model,
        seed ^ 0x1A40_07C4_C4E5_0000,
        Runs {
            member,
            rebuild_from: None,
            idle: false,
            stripe_cache: None,
            lay_out: Some(ios),
            trace: false,
        },
    );
    // A stalled pass is a simulator bug too (`SimError::Stalled`); tests catch it here.
    debug_assert!(run.stalled.is_none(), "the layout pass stalled: {case:?}");
    run.stripe_heads
}

/// Whether the targets' layout pass grows a stripe cache the case then starts with (see
/// [`laid_out_cache`]): md raid5/6 whose cache grows (direct I/O, Linux 4.1 on), on a case
/// the targets lay out.
pub fn layout_pass_grows_the_cache(case: &Case) -> bool {
    matches!(
        case.array.level,
        raidlab_core::Level::Raid5 | raidlab_core::Level::Raid6
    ) && engine::stripe_cache_grows(case)
        && case.lays_out()
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
/// The array is taken as in service ([`Start::InService`]). `None` when some sample made
/// no progress at all.
pub fn full_rebuild_seconds(case: &Case, seed: u64, idle: bool) -> Result<Option<f64>, SimError> {
    let model = resolve_model(case)?;
    Ok(full_rebuild_from(case, &model, seed, idle, None))
}

/// [`full_rebuild_seconds`] with the model resolved and the stripe cache the case starts
/// with (`None`: `stripe_cache_size`; the layout pass's under [`Start::LaidOut`], so each
/// sample starts where the case would).
fn full_rebuild_from(
    case: &Case,
    model: &DiskModel,
    seed: u64,
    idle: bool,
    stripe_cache: Option<u64>,
) -> Option<f64> {
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
                model,
                seed ^ (k + 1).wrapping_mul(0x2545_F491_4F6C_DD1D),
                Runs {
                    member: capacity,
                    rebuild_from: Some(k * part + part / 2),
                    idle,
                    stripe_cache,
                    lay_out: None,
                    trace: false,
                },
            );
            debug_assert!(
                run.stalled.is_none(),
                "a rebuild sample stalled: {sample:?}"
            );
            let sync = run.sync.expect("a rebuilding case recovers");
            let rate = sync.rate();
            if rate > 0.0 || window >= SAMPLE_LONGEST {
                break rate;
            }
            window = Nanos(window.0 * 4);
        };
        if rate <= 0.0 {
            return None;
        }
        seconds += part as f64 / rate;
    }
    Some(seconds)
}

/// Simulate one case with a seed as `raidlab run` does: started as
/// [`Start::as_the_targets_run`] says.
pub fn simulate(case: &Case, seed: u64) -> Result<SimOutput, SimError> {
    simulate_from(case, seed, Start::as_the_targets_run(case))
}

/// Simulate one case with a seed, on an array that starts as `start` says.
pub fn simulate_from(case: &Case, seed: u64, start: Start) -> Result<SimOutput, SimError> {
    simulate_with(case, seed, start, false)
}

/// [`simulate_from`], recording every command the members were handed during the case's
/// run ([`SimOutput::trace`]; the runs that extrapolate a full rebuild are not traced).
pub fn simulate_traced(case: &Case, seed: u64, start: Start) -> Result<SimOutput, SimError> {
    simulate_with(case, seed, start, true)
}

fn simulate_with(case: &Case, seed: u64, start: Start, trace: bool) -> Result<SimOutput, SimError> {
    let model = resolve_model(case)?;
    let member: Bytes = case.disks.span.unwrap_or(model.capacity());
    let stripe_cache = match start {
        Start::LaidOut => laid_out_cache(case, &model, seed, member.0),
        Start::InService => None,
    };
    let run = run_engine(
        case,
        &model,
        seed,
        Runs {
            member: member.0,
            rebuild_from: None,
            idle: false,
            stripe_cache,
            lay_out: None,
            trace,
        },
    );
    if let Some(at) = run.stalled {
        return Err(SimError::Stalled {
            case: case.id.0.clone(),
            label: case.label(),
            at_s: at.as_secs_f64(),
        });
    }
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
                    full_rebuild_from(case, &model, seed, false, stripe_cache)
                },
                seconds_idle: if readd {
                    None
                } else {
                    full_rebuild_from(case, &model, seed, true, stripe_cache)
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
        trace: run.trace,
    })
}
