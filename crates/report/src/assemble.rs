//! Turn a store's cases and results into export rows (one per case and target), held
//! against the model, with the per-case material the HTML report shows (environment,
//! commands, member I/O, IOPS log, anomaly sentences). `raidlab run`, `raidlab report`
//! and the report benchmark all go through [`build`], so what is timed is what ships.

use crate::{Detail, MemberCounts, Row};
use raidlab_core::{stats, Case, DirectionFigures, DiskModel, Figures, Level};
use raidlab_model::{baseline_key, expectation, iops_per_second};
use raidlab_store::{Store, StoredResult};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Why a store's rows could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    #[error(transparent)]
    Store(#[from] raidlab_store::StoreError),
    #[error("cannot read {path}: {source}; check the results directory's permissions")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("a stored environment does not serialise: {0}")]
    Environment(#[from] serde_json::Error),
}

type Result<T> = std::result::Result<T, AssembleError>;

/// Rows and their details, aligned by index.
pub struct Built {
    pub rows: Vec<Row>,
    pub details: Vec<Detail>,
}

/// Medians of IOPS and bandwidth per direction: what a baseline contributes.
fn median_figures(figures: &[&Figures]) -> Figures {
    let dir = |get: fn(&Figures) -> Option<&DirectionFigures>| {
        let ds: Vec<&DirectionFigures> = figures.iter().filter_map(|f| get(f)).collect();
        let iops: Vec<f64> = ds.iter().map(|d| d.iops).collect();
        let bw: Vec<f64> = ds.iter().map(|d| d.bw_bytes_s).collect();
        Some(DirectionFigures {
            iops: stats::median(&iops)?,
            bw_bytes_s: stats::median(&bw)?,
            ..Default::default()
        })
    };
    Figures {
        read: dir(|f| f.read.as_ref()),
        write: dir(|f| f.write.as_ref()),
        ..Default::default()
    }
}

/// The disk model a result ran on: the one its environment recorded, else the case's preset.
fn disk_model(case: &Case, results: &[&StoredResult]) -> Option<DiskModel> {
    results
        .iter()
        .find_map(|r| r.environment.disk_model.clone())
        .or_else(|| case.disks.resolved_model().ok().flatten())
}

/// The result's per-second IOPS from its `iops.log`, beside the raw JSON.
fn iops_log(store: &Store, r: &StoredResult) -> Result<Vec<f64>> {
    read_log(store, r, "iops.log", iops_per_second)
}

/// A log stored beside the result's raw JSON, parsed per second.
fn read_log(
    store: &Store,
    r: &StoredResult,
    name: &str,
    parse: fn(&str) -> Vec<f64>,
) -> Result<Vec<f64>> {
    let log = store.log_path(r, name);
    match std::fs::read_to_string(&log) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(AssembleError::Log { path: log, source }),
    }
}

/// The seed a `--target sim` run of the store's plan would use for its first repetition:
/// the plan's `[run] seed` when the store keeps a plan that still reads, else the default.
fn sim_seed(store: &Store) -> u64 {
    let plan = store.meta().ok().and_then(|m| {
        let text = m.plan_text?;
        let path = std::path::PathBuf::from(m.plan_path.unwrap_or_default());
        raidlab_core::Plan::parse(&text, &path).ok()
    });
    let seed = plan
        .map(|p| p.run.seed)
        .unwrap_or(raidlab_core::plan::RunOptions::default().seed);
    raidlab_backend::SimTarget::seed_of(seed, 1)
}

/// Every case and target of the store as a row, with its details.
pub fn build(store: &Store) -> Result<Built> {
    // case id → target → results of each repetition.
    let mut by_case: BTreeMap<String, BTreeMap<String, Vec<StoredResult>>> = BTreeMap::new();
    for r in store.results()? {
        by_case
            .entry(r.case_id.0.clone())
            .or_default()
            .entry(r.target.clone())
            .or_default()
            .push(r);
    }
    let cases = store.all_case_rows()?;
    // (baseline key, target) → median figures of the `single` case.
    let mut baselines: BTreeMap<(String, String), Figures> = BTreeMap::new();
    for c in &cases {
        let Some(case) = c.case.as_ref().filter(|c| c.array.level == Level::Single) else {
            continue;
        };
        for (target, rs) in by_case.get(&c.id.0).into_iter().flatten() {
            let figs: Vec<&Figures> = rs.iter().map(|r| &r.figures).collect();
            baselines.insert((baseline_key(case), target.clone()), median_figures(&figs));
        }
    }
    let mut built = Built {
        rows: Vec::new(),
        details: Vec::new(),
    };
    let seed = sim_seed(store);
    for c in &cases {
        for (target, results) in by_case.get(&c.id.0).into_iter().flatten() {
            let figures: Vec<Figures> = results.iter().map(|r| r.figures.clone()).collect();
            let mut row = Row::new(&c.id.0, c.case.as_ref(), &c.workload, target, &figures);
            if c.case.is_none() {
                // An import: its source names it in tables and charts.
                row.source = Some(c.label.clone());
                row.array_label = c.label.clone();
            }
            row.rebuild(results.iter().map(|r| &r.environment));
            if let Some(case) = c.case.as_ref() {
                // On the host, the scheduler the members had, where the plan names none.
                let had = results
                    .first()
                    .and_then(|r| r.environment.members_scheduler());
                match had.filter(|_| target == "host" && case.disks.scheduler.is_none()) {
                    Some(s) => {
                        let mut case = case.clone();
                        case.disks.scheduler = Some(s);
                        row.simulated(&case, target, seed);
                    }
                    None => row.simulated(case, target, seed),
                }
            }
            let rebuilt = row.rebuild_s_full.is_some() || row.rebuild_s_idle.is_some();
            if let Some(case) = c.case.as_ref().filter(|_| rebuilt) {
                if let Ok(Some(model)) = case.disks.resolved_model() {
                    row.risk(case, model.capacity().0 as f64);
                }
            }
            // Each member's I/O: the block layer's counts where the target recorded them
            // (a member being rebuilt included), else fio's disk_util.
            let (members, members_counted) = results
                .first()
                .map(|r| match r.environment.members_io() {
                    Some(io) => (io, MemberCounts::BlockLayer),
                    None => (
                        r.figures
                            .disk_util
                            .iter()
                            .filter(|d| d.aggr_read_ios.is_none() && d.aggr_write_ios.is_none())
                            .map(|d| (d.name.clone(), d.read_ios, d.write_ios))
                            .collect(),
                        MemberCounts::FioDiskUtil,
                    ),
                })
                .unwrap_or_default();
            let mut detail = Detail {
                environment: results
                    .first()
                    .map(|r| serde_json::to_string_pretty(&r.environment))
                    .transpose()?
                    .unwrap_or_default(),
                members,
                members_counted,
                rebuild_mib_s_per_second: results
                    .first()
                    .and_then(|r| r.environment.rebuild.as_ref())
                    .map(|r| r.mib_s_per_second.clone())
                    .unwrap_or_default(),
                histograms: results
                    .first()
                    .map(|r| {
                        [&r.figures.read, &r.figures.write].map(|d| {
                            d.as_ref()
                                .map(|d| d.clat_histogram.clone())
                                .unwrap_or_default()
                        })
                    })
                    .unwrap_or_default(),
                ..Default::default()
            };
            // The model's expectation of a plan's case (imports have no array to model).
            let mut e = None;
            if let Some(case) = &c.case {
                let refs: Vec<&StoredResult> = results.iter().collect();
                let model = disk_model(case, &refs);
                let base = baselines.get(&(baseline_key(case), target.clone()));
                e = expectation(case, model.as_ref(), base);
                detail.formula = e.as_ref().map(|e| e.formula.clone());
                // An array of n disks uses the plan's first n devices.
                let members = raidlab_backend::script::case_members(case);
                // What really ran (the host target records it), else what would run.
                let ran: Vec<String> = results
                    .first()
                    .map(|r| {
                        r.environment
                            .commands
                            .iter()
                            .map(|c| c.command.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                detail.commands = if ran.is_empty() {
                    let paths = raidlab_backend::script::Paths::script(&format!("{}.json", c.id));
                    raidlab_backend::script::case_steps(case, &members, &paths)
                        .iter()
                        .map(|s| s.shell())
                        .collect()
                } else {
                    ran
                };
            }
            let logs = results
                .iter()
                .map(|r| iops_log(store, r))
                .collect::<Result<Vec<_>>>()?;
            if let (Some(r), Some(log)) = (results.first(), logs.first()) {
                detail.iops_per_second = log.clone();
                detail.lat_ms_per_second =
                    read_log(store, r, "lat.log", raidlab_model::lat_ms_per_second)?;
            }
            // What each repetition was found to do, as (repetition index, anomaly).
            let judged: Vec<(usize, raidlab_model::Anomaly)> = match &c.case {
                Some(case) => {
                    let runs = results
                        .iter()
                        .zip(&logs)
                        .map(|(r, log)| (&r.figures, &r.environment, log.as_slice()));
                    row.judge(case, e.as_ref(), runs)
                }
                None => {
                    let outstanding = c.workload.iodepth * c.workload.numjobs;
                    let found: Vec<_> = results
                        .iter()
                        .zip(&logs)
                        .enumerate()
                        .filter_map(|(i, (r, log))| {
                            let a = raidlab_model::erratic_imported(&r.figures, log, outstanding)?;
                            Some((i, a))
                        })
                        .collect();
                    row.add_anomalies(found.iter().map(|(_, a)| a.rule.code()));
                    found
                }
            };
            // One sentence per finding, with the repetitions it was found in.
            let mut found: Vec<(String, Vec<u32>)> = Vec::new();
            for (i, a) in judged {
                let rep = results[i].repetition;
                match found.iter_mut().find(|(m, _)| *m == a.message) {
                    Some((_, reps)) => reps.push(rep),
                    None => found.push((a.message, vec![rep])),
                }
            }
            detail.anomalies = found
                .into_iter()
                .map(|(message, reps)| match (results.len(), reps.as_slice()) {
                    (1, _) => message,
                    (_, [one]) => format!("Repetition {one}: {message}"),
                    (_, many) => format!(
                        "Repetitions {}: {message}",
                        many.iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })
                .collect();
            built.rows.push(row);
            built.details.push(detail);
        }
    }
    fleet(&mut built);
    Ok(built)
}

/// A fleet's hosts held against each other: per case, a host whose headline figure is far
/// from the hosts' median gets the `fleet-outlier` code and its sentence.
fn fleet(built: &mut Built) {
    let mut by_case: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in built.rows.iter().enumerate() {
        if r.host.is_some() {
            by_case.entry(r.case_id.clone()).or_default().push(i);
        }
    }
    for rows in by_case.values() {
        let hosts: Vec<(String, f64, &str)> = rows
            .iter()
            .map(|&i| {
                let r = &built.rows[i];
                let (v, unit) = r.headline();
                (r.host.clone().unwrap_or_default(), v, unit)
            })
            .collect();
        for (k, a) in raidlab_model::fleet_outliers(&hosts) {
            let i = rows[k];
            built.rows[i].add_anomalies([a.rule.code()]);
            built.details[i].anomalies.push(a.message);
        }
    }
}
