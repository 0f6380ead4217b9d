//! `raidlab import`: bring fio JSON written elsewhere into a store.
//!
//! Plain fio output and bench-fio trees (`<target>/<mode>/<bs>/<mode>-<iodepth>-<numjobs>.json`)
//! both work: rw, bs, iodepth and numjobs come from the job options fio recorded, and from
//! the bench-fio path where an option is missing. A file that cannot be read is listed with
//! the reason; the rest still import. Re-importing a file is refused by the store (nothing
//! is overwritten) and reported as already present.

use crate::args::ImportArgs;
use anyhow::{bail, Result};
use raidlab_core::{natural, Bytes, CaseId, Nanos, Rw, Workload};
use raidlab_fio::JobInfo;
use raidlab_store::{ExperimentMeta, NewResult, Store};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The `.json` regular files under `root`, in natural name order (`qd2` before `qd16`).
/// Symbolic links are not followed (a link loop would import a tree again and again) and
/// anything but a regular file (a FIFO would block the read forever) is left out: both
/// are listed in `skipped`.
pub(crate) fn json_files(
    root: &Path,
    out: &mut Vec<PathBuf>,
    skipped: &mut Vec<String>,
) -> std::io::Result<()> {
    files(root, "json", out, skipped)
}

/// The regular files with extension `ext` under `root` (see [`json_files`]).
fn files(
    root: &Path,
    ext: &str,
    out: &mut Vec<PathBuf>,
    skipped: &mut Vec<String>,
) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(root)?;
    if !meta.is_dir() {
        if meta.is_file() {
            out.push(root.to_path_buf());
        } else {
            skipped.push(format!(
                "{}: {}",
                root.display(),
                not_imported(&meta.file_type())
            ));
        }
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(root)?.collect::<Result<_, _>>()?;
    entries.sort_by(|a, b| natural::cmp(&a.path().to_string_lossy(), &b.path().to_string_lossy()));
    for e in entries {
        let (p, kind) = (e.path(), e.file_type()?);
        if kind.is_dir() {
            files(&p, ext, out, skipped)?;
        } else if p.extension().is_some_and(|x| x == ext) {
            if kind.is_file() {
                out.push(p);
            } else {
                skipped.push(format!("{}: {}", p.display(), not_imported(&kind)));
            }
        }
    }
    Ok(())
}

/// Why an entry that is not a regular file or directory is left out.
fn not_imported(kind: &std::fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "a symbolic link, not followed: import the tree it points into by its own path"
    } else {
        "not a regular file (a FIFO, socket or device): copy fio's output into a file"
    }
}

/// Where a file sits in an imported tree. bench-fio writes
/// `<device>/[<mode><rwmixread>/]<bs>/[run-N/]<mode>-<iodepth>-<numjobs>.json`; any other
/// layout is plain fio output, named by its folder.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Place {
    /// The folders above bench-fio's own (the device's name), or a plain file's folder;
    /// empty at the top of the tree.
    pub source: String,
    pub rw: Option<Rw>,
    pub bs: Option<Bytes>,
    pub iodepth: Option<u32>,
    pub numjobs: Option<u32>,
    /// From a `<mode><rwmixread>` folder (`randrw75`).
    pub rwmixread: Option<u8>,
    /// bench-fio's `run-N` folder.
    pub run: Option<u32>,
    /// The case's key: the path without its `run-N` folder, so the runs of one benchmark
    /// are repetitions of one case.
    pub key: String,
}

impl Place {
    pub(crate) fn of(rel: &Path) -> Place {
        let stem = rel.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let parts: Vec<&str> = stem.rsplitn(3, '-').collect();
        let named = match parts.as_slice() {
            [jobs, qd, mode] => match (mode.parse(), qd.parse(), jobs.parse()) {
                (Ok(rw), Ok(qd), Ok(jobs)) => Some((rw, qd, jobs)),
                _ => None,
            },
            _ => None,
        };
        let mut dirs: Vec<String> = rel
            .parent()
            .into_iter()
            .flat_map(|p| p.components())
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let mut place = Place::default();
        if let Some((rw, qd, jobs)) = named {
            (place.rw, place.iodepth, place.numjobs) = (Some(rw), Some(qd), Some(jobs));
            place.run = dirs
                .last()
                .and_then(|d| d.strip_prefix("run-")?.parse().ok());
            let above_run = dirs.len() - usize::from(place.run.is_some());
            place.bs = above_run
                .checked_sub(1)
                .and_then(|i| dirs[i].parse::<Bytes>().ok());
            if place.bs.is_some() {
                if place.run.is_some() {
                    dirs.pop();
                    let base = rel.parent().and_then(Path::parent).unwrap_or(Path::new(""));
                    place.key = base
                        .join(rel.file_name().unwrap_or_default())
                        .to_string_lossy()
                        .into_owned();
                }
                dirs.pop();
                if let Some((mode, mix)) = dirs.last().and_then(|d| mode_and_mix(d)) {
                    (place.rw, place.rwmixread) = (Some(mode), Some(mix));
                    dirs.pop();
                }
            } else {
                place.run = None;
            }
        }
        if place.key.is_empty() {
            place.key = rel.to_string_lossy().into_owned();
        }
        place.source = dirs.join("/");
        place
    }
}

/// bench-fio's folder of a mixed workload: `randrw75` is (randrw, 75).
fn mode_and_mix(dir: &str) -> Option<(Rw, u8)> {
    let digits = dir.len() - dir.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (mode, mix) = dir.split_at(dir.len() - digits);
    let mix: u8 = mix.parse().ok().filter(|m| *m <= 100)?;
    let rw: Rw = mode.parse().ok()?;
    (rw.reads() && rw.writes()).then_some((rw, mix))
}

/// bench-fio's preconditioning job (its `precondition.fio`): a sequential write over the
/// whole device, written into a `run-N` folder.
fn is_precondition(job: &JobInfo, place: &Place) -> bool {
    let opt = |k: &str| job.options.get(k).map(|v| v.trim().to_string());
    place.run.is_some()
        && (job.name == "precondition"
            || (job.rw == Some(Rw::Write) && opt("size").as_deref() == Some("100%")))
}

fn workload(job: &JobInfo, place: &Place) -> Option<Workload> {
    let opt = |k: &str| job.options.get(k).cloned();
    Some(Workload {
        rw: job.rw.or(place.rw)?,
        bs: job.bs.or(place.bs).unwrap_or(Bytes::kib(4)),
        iodepth: job.iodepth.or(place.iodepth).unwrap_or(1),
        numjobs: job.numjobs.or(place.numjobs).unwrap_or(1),
        size: opt("size").and_then(|s| s.parse().ok()).unwrap_or(Bytes(0)),
        offset: Bytes(0),
        runtime: opt("runtime")
            .and_then(|s| s.parse().ok())
            .unwrap_or(Nanos(0)),
        ramp: Nanos(0),
        rwmixread: opt("rwmixread")
            .and_then(|s| s.trim().parse().ok())
            .or(place.rwmixread)
            .unwrap_or(50),
        ioengine: opt("ioengine").unwrap_or_default(),
        direct: opt("direct").is_some_and(|d| d == "1"),
        fio: Default::default(),
    })
}

/// One imported file: its case (id, source label, workload) and its result; `None` for a
/// preconditioning run left out.
pub(crate) type Imported = Option<((CaseId, String, Workload), NewResult)>;

/// How one file is imported: the label of its source, its repetition, its logs, and
/// whether preconditioning runs are kept.
pub(crate) struct How {
    pub label: String,
    pub repetition: u32,
    /// Each log's name as stored (`iops.log`) and fio's per-job files behind it.
    pub logs: Vec<(String, Vec<PathBuf>)>,
    pub include_precondition: bool,
}

/// Parse one file into an imported case and its result.
pub(crate) fn read_one(path: &Path, rel: &Path, how: &How) -> Result<Imported> {
    let bytes = std::fs::read(path)?;
    let parsed = raidlab_fio::parse_output(&String::from_utf8_lossy(&bytes))?;
    if let Some(what) = parsed.figures.impossible() {
        bail!("impossible figure {what}: the file is damaged or not fio's measurement");
    }
    let job = parsed.jobs.first().cloned().unwrap_or_default();
    let mut place = Place::of(rel);
    let mut label = how.label.clone();
    let mut repetition = how.repetition;
    if is_precondition(&job, &place) {
        if !how.include_precondition {
            return Ok(None);
        }
        // Kept as a case of its own, never pooled with the benchmark it prepared.
        place.key = rel.to_string_lossy().into_owned();
        label = format!("{label} precondition");
        repetition = 1;
    }
    let Some(w) = workload(&job, &place) else {
        bail!("its job options name no rw, and the path is not bench-fio's <mode>-<iodepth>-<numjobs>.json");
    };
    let logs = how
        .logs
        .iter()
        .map(|(name, files)| Ok((name.clone(), merge_job_logs(name, files)?)))
        .collect::<Result<Vec<_>>>()?;
    let result = NewResult {
        case_id: CaseId::from_key(&place.key),
        repetition,
        target: "import".into(),
        figures: parsed.figures,
        raw_json: bytes,
        logs,
        environment: raidlab_core::Environment::with_details([
            (
                "imported_from".to_string(),
                path.display().to_string().into(),
            ),
            ("fio_job".to_string(), job.name.clone().into()),
        ]),
        started_unix: parsed.timestamp.unwrap_or(0),
        wall_ns: 0,
        source: Some(rel.display().to_string()),
    };
    Ok(Some(((result.case_id.clone(), label, w), result)))
}

/// fio's per-job logs of one kind (`x_iops.1.log`, `x_iops.2.log`, …) as one log with a
/// line per second: each job's samples within a second averaged, then summed over jobs
/// for rates (IOPS, bandwidth) and averaged for latencies, which is what the report's
/// over-time charts and the `erratic` rule read.
fn merge_job_logs(name: &str, files: &[PathBuf]) -> Result<Vec<u8>> {
    let rate = matches!(name, "iops.log" | "bw.log");
    let mut seconds: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| anyhow::anyhow!("cannot read its log {}: {e}", f.display()))?;
        let mut job: BTreeMap<u64, (f64, u32)> = BTreeMap::new();
        for line in text.lines() {
            let mut cells = line.split(',').map(str::trim);
            let (Some(Ok(ms)), Some(Ok(v))) = (
                cells.next().map(str::parse::<u64>),
                cells.next().map(str::parse::<f64>),
            ) else {
                continue;
            };
            let e = job.entry(ms.div_ceil(1000).max(1)).or_default();
            (e.0, e.1) = (e.0 + v, e.1 + 1);
        }
        for (sec, (sum, n)) in job {
            let e = seconds.entry(sec).or_default();
            (e.0, e.1) = (e.0 + sum / f64::from(n), e.1 + 1);
        }
    }
    let mut out = String::new();
    for (sec, (sum, jobs)) in seconds {
        let v = if rate { sum } else { sum / f64::from(jobs) };
        let _ = writeln!(out, "{}, {v}, 0, 0, 0", sec * 1000);
    }
    Ok(out.into_bytes())
}

/// The kinds of fio log kept, by fio's name for them, and the name results keep them under.
const LOG_KINDS: [(&str, &str); 5] = [
    ("iops", "iops.log"),
    ("lat", "lat.log"),
    ("bw", "bw.log"),
    ("clat", "clat.log"),
    ("slat", "slat.log"),
];

/// fio's logs by (folder, prefix, kind): `<prefix>_<kind>[.<job>].log`, each name read once.
type Logs = BTreeMap<(PathBuf, String, &'static str), Vec<PathBuf>>;

fn index_logs(files: &[PathBuf]) -> Logs {
    let mut out = Logs::new();
    for f in files {
        let Some(name) = f.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(base) = name.strip_suffix(".log") else {
            continue;
        };
        // `.3` after the kind: a per-job log.
        let base = match base.rsplit_once('.') {
            Some((b, job)) if !job.is_empty() && job.bytes().all(|c| c.is_ascii_digit()) => b,
            _ => base,
        };
        let Some((prefix, kind)) = base.rsplit_once('_') else {
            continue;
        };
        if let Some((kind, _)) = LOG_KINDS.iter().find(|(k, _)| *k == kind) {
            let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
            out.entry((dir, prefix.to_string(), kind))
                .or_default()
                .push(f.clone());
        }
    }
    out
}

/// The logs fio wrote beside a result: `<prefix>_<kind>[.<job>].log` where the prefix is
/// the JSON's name or bench-fio's `<mode>-iodepth-<qd>-numjobs-<jobs>`; by the names
/// results keep them under (`iops.log`, `lat.log`, `bw.log`, `clat.log`, `slat.log`).
fn logs_of(json: &Path, logs: &Logs) -> Vec<(String, Vec<PathBuf>)> {
    let (Some(dir), Some(stem)) = (json.parent(), json.file_stem().and_then(|s| s.to_str())) else {
        return Vec::new();
    };
    let mut prefixes = vec![stem.to_string()];
    if let [jobs, qd, mode] = stem.rsplitn(3, '-').collect::<Vec<_>>().as_slice() {
        prefixes.push(format!("{mode}-iodepth-{qd}-numjobs-{jobs}"));
    }
    LOG_KINDS
        .iter()
        .filter_map(|(kind, name)| {
            let files: Vec<PathBuf> = prefixes
                .iter()
                .filter_map(|p| logs.get(&(dir.to_path_buf(), p.clone(), *kind)))
                .flatten()
                .cloned()
                .collect();
            (!files.is_empty()).then(|| (name.to_string(), files))
        })
        .collect()
}

pub fn import(a: ImportArgs) -> Result<()> {
    let name = a
        .source
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "import".into());
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(format!("import-{name}")));
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    json_files(&a.source, &mut files, &mut skipped)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", a.source.display()))?;
    let mut log_files = Vec::new();
    self::files(&a.source, "log", &mut log_files, &mut skipped)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", a.source.display()))?;
    for s in &skipped {
        raidlab_backend::note!("skipped {s}");
    }
    if files.is_empty() {
        bail!(
            "no .json files under {}: point at fio's JSON output (fio --output-format=json)",
            a.source.display()
        );
    }
    let logs_by_dir = index_logs(&log_files);
    // Each file's source label, repetition (the runs of one benchmark numbered in
    // order) and logs.
    let mut runs: BTreeMap<String, u32> = BTreeMap::new();
    let plan: Vec<(&PathBuf, PathBuf, How)> = files
        .iter()
        .map(|path| {
            let rel = path.strip_prefix(&a.source).unwrap_or(path).to_path_buf();
            let place = Place::of(&rel);
            let label = a.label.clone().unwrap_or_else(|| {
                if place.source.is_empty() {
                    name.clone()
                } else {
                    place.source.clone()
                }
            });
            let n = runs.entry(place.key).or_default();
            *n += 1;
            let how = How {
                label,
                repetition: *n,
                logs: logs_of(path, &logs_by_dir),
                include_precondition: a.include_precondition,
            };
            (path, rel, how)
        })
        .collect();
    let matched: std::collections::HashSet<&PathBuf> = plan
        .iter()
        .flat_map(|p| p.2.logs.iter().flat_map(|(_, f)| f))
        .collect();
    let unmatched: Vec<&PathBuf> = log_files.iter().filter(|l| !matched.contains(l)).collect();
    let meta = ExperimentMeta {
        name: format!("import of {name}"),
        plan_path: None,
        plan_text: None,
        target: "import".into(),
        created_unix: 0,
        raidlab_version: env!("CARGO_PKG_VERSION").into(),
    };
    let mut store = Store::open_or_create(&out, &meta)?;
    store.lock()?;
    let (mut ok, mut preconditions, mut bad) = (0usize, 0usize, Vec::new());
    // Batches: one file-system sync and one transaction per thousand files.
    for chunk in plan.chunks(1000) {
        let (mut cases, mut results, mut paths) = (Vec::new(), Vec::new(), Vec::new());
        // Reading and parsing are independent per file: spread them over the cores.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let parsed: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .chunks(chunk.len().div_ceil(threads))
                .map(|part| {
                    s.spawn(|| {
                        part.iter()
                            .map(|(path, rel, how)| read_one(path, rel, how))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("reader thread"))
                .collect()
        });
        for ((path, ..), one) in chunk.iter().zip(parsed) {
            let path = *path;
            match one {
                Ok(Some((case, result))) => {
                    cases.push(case);
                    results.push(result);
                    paths.push(path);
                }
                Ok(None) => preconditions += 1,
                Err(e) => bad.push(format!("{}: {e}", path.display())),
            }
        }
        store.add_imported_cases(&cases)?;
        for (path, outcome) in paths.into_iter().zip(store.commit_batch(&results)?) {
            match outcome {
                Ok(_) => ok += 1,
                Err(e) => bad.push(format!("{}: {e}", path.display())),
            }
        }
    }
    raidlab_backend::note!(
        "imported {ok} of {} file(s) into {}",
        files.len(),
        out.display()
    );
    if preconditions > 0 {
        raidlab_backend::note!(
            "left out {}: they prepare the device and are not results (--include-precondition keeps them)",
            raidlab_core::plural(preconditions, "preconditioning run", "preconditioning runs")
        );
    }
    if !log_files.is_empty() {
        raidlab_backend::note!(
            "{} of {} .log file(s) kept as time series beside their results",
            log_files.len() - unmatched.len(),
            log_files.len()
        );
    }
    if !unmatched.is_empty() {
        raidlab_backend::note!(
            "{} .log file(s) match no JSON result (fio's <json name>_iops.N.log or bench-fio's <mode>-iodepth-<qd>-numjobs-<jobs>_iops.N.log), not imported, among them:",
            unmatched.len()
        );
        for l in unmatched.iter().take(5) {
            raidlab_backend::note!("  {}", l.display());
        }
    }
    if !bad.is_empty() {
        raidlab_backend::note!("not imported:");
        for b in &bad {
            raidlab_backend::note!("  {b}");
        }
    }
    if ok == 0 {
        bail!("nothing imported");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_fio_places() {
        let p = Place::of(Path::new("nvme0n1/randrw75/4k/randrw-16-2.json"));
        assert_eq!(p.source, "nvme0n1");
        assert_eq!((p.rw, p.rwmixread), (Some(Rw::RandRw), Some(75)));
        assert_eq!(
            (p.bs, p.iodepth, p.numjobs),
            (Some(Bytes::kib(4)), Some(16), Some(2))
        );
        assert_eq!(
            (p.run, p.key.as_str()),
            (None, "nvme0n1/randrw75/4k/randrw-16-2.json")
        );
        let p = Place::of(Path::new("lab/sdb/1m/run-3/randread-1-1.json"));
        assert_eq!((p.source.as_str(), p.run), ("lab/sdb", Some(3)));
        assert_eq!(p.key, "lab/sdb/1m/randread-1-1.json");
        let p = Place::of(Path::new("today/fio-out.json"));
        assert_eq!((p.source.as_str(), p.rw, p.run), ("today", None, None));
        let p = Place::of(Path::new("run-2/x.json"));
        assert_eq!(
            (p.source.as_str(), p.run),
            ("run-2", None),
            "run-N only in bench-fio trees"
        );
        assert_eq!(
            mode_and_mix("randread75"),
            None,
            "only mixed modes carry a mix"
        );
    }

    #[test]
    fn job_logs_merge_per_second() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (
            dir.path().join("x_iops.1.log"),
            dir.path().join("x_iops.2.log"),
        );
        // Job 1 logs every 500 ms, job 2 every second.
        std::fs::write(&a, "500, 100, 0, 4096, 0\n1000, 300, 0, 4096, 0\n1500, 200, 0, 4096, 0\n2000, 200, 0, 4096, 0\n").unwrap();
        std::fs::write(&b, "1000, 50, 0, 4096, 0\n2001, 70, 0, 4096, 0\n").unwrap();
        let iops = String::from_utf8(merge_job_logs("iops.log", &[a.clone(), b.clone()]).unwrap())
            .unwrap();
        assert_eq!(
            raidlab_model::iops_per_second(&iops),
            vec![250.0, 200.0, 70.0]
        );
        let lat = String::from_utf8(merge_job_logs("lat.log", &[a, b]).unwrap()).unwrap();
        assert_eq!(
            raidlab_model::lat_ms_per_second(&lat),
            vec![125e-6, 200e-6, 70e-6]
        );
        let names = [
            "randread-4-1.json",
            "randread-iodepth-4-numjobs-1_iops.1.log",
            "randread-4-1_lat.log",
            "randread-4-10_iops.1.log",
            "randread-4-1_iops.x.log",
            "randread-4-1_clat.2.log",
        ];
        let files: Vec<PathBuf> = names[1..].iter().map(|n| dir.path().join(n)).collect();
        let found = logs_of(&dir.path().join(names[0]), &index_logs(&files));
        let found: Vec<(&str, usize)> = found.iter().map(|(n, f)| (n.as_str(), f.len())).collect();
        assert_eq!(
            found,
            vec![("iops.log", 1), ("lat.log", 1), ("clat.log", 1)]
        );
    }
}
