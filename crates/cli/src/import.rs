//! `raidlab import`: bring fio JSON written elsewhere into a store.
//!
//! Plain fio output and bench-fio trees (`<target>/<mode>/<bs>/<mode>-<iodepth>-<numjobs>.json`)
//! both work: rw, bs, iodepth and numjobs come from the job options fio recorded, and from
//! the bench-fio path where an option is missing. A file that cannot be read is listed with
//! the reason; the rest still import. Re-importing a file is refused by the store (nothing
//! is overwritten) and reported as already present.

use crate::args::ImportArgs;
use anyhow::{bail, Result};
use raidlab_core::{Bytes, CaseId, Nanos, Rw, Workload};
use raidlab_fio::JobInfo;
use raidlab_store::{ExperimentMeta, NewResult, Store};
use std::path::{Path, PathBuf};

/// The `.json` regular files under `root`, in name order. Symbolic links are not followed
/// (a link loop would import a tree again and again) and anything but a regular file (a
/// FIFO would block the read forever) is left out: both are listed in `skipped`.
pub(crate) fn json_files(
    root: &Path,
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
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let (p, kind) = (e.path(), e.file_type()?);
        if kind.is_dir() {
            json_files(&p, out, skipped)?;
        } else if p.extension().is_some_and(|x| x == "json") {
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

/// bench-fio: `<mode>-<iodepth>-<numjobs>.json` inside `<mode>/<bs>/`.
fn from_bench_fio_path(rel: &Path) -> (Option<Rw>, Option<Bytes>, Option<u32>, Option<u32>) {
    let stem = rel.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let parts: Vec<&str> = stem.rsplitn(3, '-').collect();
    let (rw, qd, jobs) = match parts.as_slice() {
        [jobs, qd, mode] => (mode.parse().ok(), qd.parse().ok(), jobs.parse().ok()),
        _ => (None, None, None),
    };
    let bs = rel
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|s| s.to_str())
        .and_then(|s| s.parse().ok());
    (rw, bs, qd, jobs)
}

fn workload(job: &JobInfo, rel: &Path) -> Option<Workload> {
    let (prw, pbs, pqd, pjobs) = from_bench_fio_path(rel);
    let opt = |k: &str| job.options.get(k).cloned();
    Some(Workload {
        rw: job.rw.or(prw)?,
        bs: job.bs.or(pbs).unwrap_or(Bytes::kib(4)),
        iodepth: job.iodepth.or(pqd).unwrap_or(1),
        numjobs: job.numjobs.or(pjobs).unwrap_or(1),
        size: opt("size").and_then(|s| s.parse().ok()).unwrap_or(Bytes(0)),
        offset: Bytes(0),
        runtime: opt("runtime")
            .and_then(|s| s.parse().ok())
            .unwrap_or(Nanos(0)),
        ramp: Nanos(0),
        rwmixread: opt("rwmixread").and_then(|s| s.parse().ok()).unwrap_or(50),
        ioengine: opt("ioengine").unwrap_or_default(),
        direct: opt("direct").is_some_and(|d| d == "1"),
    })
}

/// Parse one file into an imported case and its result.
pub(crate) fn read_one(path: &Path, rel: &Path) -> Result<((CaseId, String, Workload), NewResult)> {
    let bytes = std::fs::read(path)?;
    let parsed = raidlab_fio::parse_output(&String::from_utf8_lossy(&bytes))?;
    if let Some(what) = parsed.figures.impossible() {
        bail!("impossible figure {what}: the file is damaged or not fio's measurement");
    }
    let job = parsed.jobs.first().cloned().unwrap_or_default();
    let Some(w) = workload(&job, rel) else {
        bail!("its job options name no rw, and the path is not bench-fio's <mode>-<iodepth>-<numjobs>.json");
    };
    let id = CaseId::from_key(&rel.to_string_lossy());
    let label = rel
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let result = NewResult {
        case_id: id.clone(),
        repetition: 1,
        target: "import".into(),
        figures: parsed.figures,
        raw_json: bytes,
        logs: vec![],
        environment: raidlab_core::Environment::with_details([
            (
                "imported_from".to_string(),
                path.display().to_string().into(),
            ),
            ("fio_job".to_string(), job.name.clone().into()),
        ]),
        started_unix: 0,
        wall_ns: 0,
        source: Some(rel.display().to_string()),
    };
    Ok(((id, label, w), result))
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
    for s in &skipped {
        raidlab_backend::note!("skipped {s}");
    }
    if files.is_empty() {
        bail!(
            "no .json files under {}: point at fio's JSON output (fio --output-format=json)",
            a.source.display()
        );
    }
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
    let (mut ok, mut bad) = (0usize, Vec::new());
    // Batches: one file-system sync and one transaction per thousand files.
    for chunk in files.chunks(1000) {
        let (mut cases, mut results, mut paths) = (Vec::new(), Vec::new(), Vec::new());
        // Reading and parsing are independent per file: spread them over the cores.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let parsed: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .chunks(chunk.len().div_ceil(threads))
                .map(|part| {
                    s.spawn(|| {
                        part.iter()
                            .map(|path| {
                                read_one(path, path.strip_prefix(&a.source).unwrap_or(path))
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("reader thread"))
                .collect()
        });
        for (path, one) in chunk.iter().zip(parsed) {
            match one {
                Ok((case, result)) => {
                    cases.push(case);
                    results.push(result);
                    paths.push(path);
                }
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
