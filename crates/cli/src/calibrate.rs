//! `raidlab calibrate`: read one drive's measurements (raidlab results or fio JSON), fit a
//! disk model to them (`raidlab-calibrate`) and write it as a model file whose header holds
//! the fit, point by point.

use crate::args::CalibrateArgs;
use anyhow::{anyhow, bail, Context, Result};
use raidlab_calibrate::Point;
use raidlab_core::{Bytes, DiskModel, Figures, Workload};
use std::path::Path;

pub fn calibrate(a: CalibrateArgs) -> Result<()> {
    if a.out.exists() {
        bail!(
            "{} exists: raidlab does not overwrite a model file; choose another --out",
            a.out.display()
        );
    }
    let mut base = DiskModel::preset(&a.base).ok_or_else(|| {
        anyhow!(
            "--base {}: no such preset; use one of: {}",
            a.base,
            DiskModel::preset_names().join(", ")
        )
    })?;
    if let Some(c) = a.capacity {
        base = base.with_capacity(c);
    }
    let mut inputs = a.inputs.clone();
    if let Some(dev) = &a.device {
        let (dir, size) = sweep(dev, &a)?;
        if a.capacity.is_none() {
            base = base.with_capacity(size);
        }
        inputs = vec![dir];
    }
    let mut points = Vec::new();
    for input in &inputs {
        points.extend(read(input).with_context(|| format!("reading {}", input.display()))?);
    }
    points.sort_by(|x, y| {
        (x.rw.word(), x.span, x.outstanding(), x.bs).cmp(&(
            y.rw.word(),
            y.span,
            y.outstanding(),
            y.bs,
        ))
    });
    if points.is_empty() {
        bail!("no measurements found in {inputs:?}: point at a raidlab results directory or at fio's JSON output (fio --output-format=json)");
    }
    let name = a.name.clone().unwrap_or_else(|| {
        a.out
            .file_stem()
            .map_or("calibrated".into(), |s| s.to_string_lossy().into_owned())
    });
    eprintln!(
        "fitting {} from {} measurements (base {}) …",
        name,
        points.len(),
        base.name
    );
    let fit = raidlab_calibrate::fit(&base, &points, &name)?;
    let table = raidlab_calibrate::report(&fit);
    println!("{table}");
    if fit.median > 0.25 {
        raidlab_backend::note!(
            "the fit is poor (median error {:.0} %): is the drive a rotating disk of {}'s class? Try another --base (`raidlab disks --models`)",
            fit.median * 100.0,
            base.name
        );
    }
    let header = format!(
        "A raidlab disk model, fitted by `raidlab calibrate` to {} measurements ({}).\n\
         Fitted: the seek curve, reorder_noise{}; the rest is the base preset's.\n\
         How far to trust it, point by point:\n\n{table}",
        points.len(),
        inputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        [
            (
                points.iter().any(|p| p.rw == raidlab_core::Rw::Read),
                ", the media rates"
            ),
            (
                points.iter().any(Point::is_cached_random_write),
                ", the write cache's depth (cache_commands)"
            ),
        ]
        .iter()
        .filter(|(has, _)| *has)
        .map(|(_, what)| *what)
        .collect::<String>()
    );
    std::fs::write(&a.out, fit.model.to_toml(&header))
        .with_context(|| format!("writing {}", a.out.display()))?;
    eprintln!(
        "wrote {}: use it as `raidlab sim --disk {}` or `[disks] model = \"{}\"`",
        a.out.display(),
        a.out.display(),
        a.out.display()
    );
    Ok(())
}

/// One fio run of the --device sweep.
struct Run {
    name: &'static str,
    rw: &'static str,
    bs: &'static str,
    iodepth: u32,
    /// The part of the disk from its start, as a share; `None`: all of it.
    share: Option<f64>,
    /// The drive's write cache for the run (writes only); its name says so, for the fit.
    cache: Option<bool>,
}

const fn reading(
    name: &'static str,
    rw: &'static str,
    bs: &'static str,
    iodepth: u32,
    share: Option<f64>,
) -> Run {
    Run {
        name,
        rw,
        bs,
        iodepth,
        share,
        cache: None,
    }
}

const fn writing(name: &'static str, iodepth: u32, cache: bool) -> Run {
    Run {
        name,
        rw: "randwrite",
        bs: "4k",
        iodepth,
        share: None,
        cache: Some(cache),
    }
}

/// The read-only sweep.
const READS: [Run; 7] = [
    reading("randread-qd1", "randread", "4k", 1, None),
    reading("randread-qd4", "randread", "4k", 4, None),
    reading("randread-qd8", "randread", "4k", 8, None),
    reading("randread-qd16", "randread", "4k", 16, None),
    reading("randread-qd32", "randread", "4k", 32, None),
    reading("randread-qd1-short", "randread", "4k", 1, Some(0.01)),
    reading("read-outer", "read", "1m", 8, Some(0.01)),
];

/// The write half (`--destroy-data-on`): the cache on at queue depth 1 and 32 (what the
/// cache's depth is fitted to), and off at 1 (the media's own write, a check).
const WRITES: [Run; 3] = [
    writing("randwrite-qd1-cache-on", 1, true),
    writing("randwrite-qd32-cache-on", 32, true),
    writing("randwrite-qd1-cache-off", 1, false),
];

/// Measure `dev` with fio, under the host target's guards and its device lock: read-only,
/// and with `--destroy-data-on` its serial, the write half too (journalled in the runs
/// directory: the write cache restored, the drive wiped). The fio JSON goes to a new
/// directory beside the model file. Returns it and the size.
fn sweep(dev: &str, a: &CalibrateArgs) -> Result<(std::path::PathBuf, Bytes)> {
    let verdict = raidlab_host::guard::check(dev, None);
    // Reading needs no empty disk: data and a read-only device are fine; any other user
    // of the disk would be timed with it.
    let in_use: Vec<String> = verdict
        .problems
        .iter()
        .filter(|p| {
            !matches!(
                p,
                raidlab_host::guard::Problem::Signatures(_)
                    | raidlab_host::guard::Problem::ReadOnly
            )
        })
        .map(|p| p.to_string())
        .collect();
    if !in_use.is_empty() {
        bail!(
            "--device {dev}: {}. Nothing was read: calibrate times a whole disk, and nothing else may use it meanwhile",
            in_use.join("; ")
        );
    }
    if let Some(serial) = &a.destroy_data_on {
        if verdict.serial() != Some(serial.as_str()) {
            bail!(
                "--destroy-data-on {serial}: {dev}'s serial is {}; nothing was read or written. Give the serial `raidlab disks` shows for the drive whose data may go",
                verdict.serial().unwrap_or("unknown")
            );
        }
        if verdict
            .problems
            .contains(&raidlab_host::guard::Problem::ReadOnly)
        {
            bail!("--device {dev} is read-only: its writes cannot be measured; drop --destroy-data-on");
        }
    }
    let size = Bytes(verdict.dev.as_ref().map_or(0, |d| d.size_bytes));
    let _lock = raidlab_host::lock::devices(&[dev.to_string()]).map_err(|e| anyhow!(e))?;
    let dir = a.out.with_extension("runs");
    if dir.exists() {
        bail!(
            "{} exists: raidlab does not rewrite measurements; choose another --out",
            dir.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let writes: &[Run] = if a.destroy_data_on.is_some() {
        &WRITES
    } else {
        &[]
    };
    let ramp = (a.seconds / 3).max(1);
    let total = a.seconds * READS.len() as u64 + (a.seconds + ramp) * writes.len() as u64;
    let pb = crate::progress::timed(total, a.quiet);
    let mut done = 0;
    for r in &READS {
        fio(dev, r, &dir, a.seconds, 0, size, &pb, done, None)?;
        done += a.seconds;
    }
    if !writes.is_empty() {
        write_half(dev, writes, &dir, a, ramp, size, &pb, done)?;
    }
    pb.finish_and_clear();
    Ok((dir, size))
}

/// The write runs, journalled in `dir`: the drive's write cache is put back as it was
/// and the drive wiped of what the writes left, also when a run fails (and by `raidlab
/// cleanup DIR` after a crash).
#[allow(clippy::too_many_arguments)]
fn write_half(
    dev: &str,
    writes: &[Run],
    dir: &Path,
    a: &CalibrateArgs,
    ramp: u64,
    size: Bytes,
    pb: &indicatif::ProgressBar,
    mut done: u64,
) -> Result<()> {
    use raidlab_backend::script::{Phase, Undo};
    use raidlab_host::{cache, devices, journal};
    let _live = raidlab_host::lock::directory(dir).map_err(|e| anyhow!(e))?;
    let mut j = journal::Journal::open(dir).map_err(|e| anyhow!(e))?;
    let ids = vec![journal::DeviceId {
        path: dev.to_string(),
        serial: a.destroy_data_on.clone(),
    }];
    let name = devices::kernel_name(dev).map_err(|e| anyhow!(e))?;
    let (was, method) = cache::get(dev, &name).map_err(|e| anyhow!(e))?;
    let wipe = Undo::Wipe {
        devices: vec![dev.to_string()],
    };
    let restore = Undo::RestoreCache {
        device: dev.to_string(),
        was,
    };
    j.open_entry("calibrate", Phase::Fio, &wipe, ids.clone())
        .map_err(|e| anyhow!(e))?;
    j.open_entry("calibrate", Phase::Cache, &restore, ids)
        .map_err(|e| anyhow!(e))?;
    let mut runs = || -> Result<()> {
        for r in writes {
            cache::set(dev, &name, method, r.cache == Some(true)).map_err(|e| anyhow!(e))?;
            fio(dev, r, dir, a.seconds, ramp, size, pb, done, Some(&mut j))?;
            done += a.seconds + ramp;
        }
        Ok(())
    };
    let result = runs();
    let mut undone = Vec::new();
    for u in [&restore, &wipe] {
        match journal::undo(u) {
            Ok(()) => j.close_entry(u).map_err(|e| anyhow!(e))?,
            Err(e) => undone.push(e),
        }
    }
    j.deregister_if_clean();
    result?;
    if !undone.is_empty() {
        bail!(
            "{}; `raidlab cleanup {}` tries again",
            undone.join("; "),
            dir.display()
        );
    }
    Ok(())
}

/// Run one fio job of the sweep on `dev` (`ramp` seconds unmeasured first), its JSON to
/// `dir/NAME.json`, moving the bar on from `done`; a journal records fio's pid.
#[allow(clippy::too_many_arguments)]
fn fio(
    dev: &str,
    r: &Run,
    dir: &Path,
    seconds: u64,
    ramp: u64,
    size: Bytes,
    pb: &indicatif::ProgressBar,
    done: u64,
    mut journal: Option<&mut raidlab_host::journal::Journal>,
) -> Result<()> {
    pb.set_message(format!("{} on {dev}", r.name));
    let mut fio = std::process::Command::new("fio");
    fio.arg(format!("--name={}", r.name))
        .arg(format!("--filename={dev}"))
        .args(["--direct=1", "--ioengine=libaio"])
        .arg(format!("--rw={}", r.rw))
        .arg(format!("--bs={}", r.bs))
        .arg(format!("--iodepth={}", r.iodepth))
        .arg(format!("--runtime={seconds}"))
        .arg("--time_based")
        .arg("--output-format=json")
        .arg(format!(
            "--output={}",
            dir.join(format!("{}.json", r.name)).display()
        ));
    if r.cache.is_none() {
        fio.arg("--readonly");
    }
    if ramp > 0 {
        fio.arg(format!("--ramp_time={ramp}"));
    }
    if let Some(share) = r.share {
        // Whole 1 MiB steps, at least 64 MiB.
        let span = ((size.0 as f64 * share) as u64 / (1 << 20)).max(64) << 20;
        fio.arg(format!("--size={}", span.min(size.0)));
    }
    let mut child = fio
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("starting fio (apt-get install fio)")?;
    if let Some(j) = journal.as_deref_mut() {
        j.started(child.id()).map_err(|e| anyhow!(e))?;
    }
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        pb.set_position(done + started.elapsed().as_secs().min(seconds + ramp));
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    if let Some(j) = journal {
        j.ended(child.id()).map_err(|e| anyhow!(e))?;
    }
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        bail!("fio {} on {dev} failed: {}", r.name, err.trim());
    }
    Ok(())
}

/// The points in one input: a raidlab results directory, or fio JSON files.
fn read(input: &Path) -> Result<Vec<Point>> {
    if input.join("raidlab.sqlite").exists() {
        let store = raidlab_store::Store::open(input)?;
        let cases = store.cases()?;
        return Ok(store
            .results()?
            .into_iter()
            .filter_map(|r| {
                let c = cases.iter().find(|c| c.id == r.case_id)?;
                (c.array.disks == 1).then(|| Point {
                    write_cache: match c.array.write_cache {
                        raidlab_core::WriteCache::On => Some(true),
                        raidlab_core::WriteCache::Off => Some(false),
                        _ => None,
                    },
                    ..point(
                        &c.workload,
                        &r.figures,
                        format!("{}/{}", input.display(), r.raw_file),
                    )
                })
            })
            .collect());
    }
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    crate::import::json_files(input, &mut files, &mut skipped)?;
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(input).unwrap_or(&f);
        let how = crate::import::How {
            label: String::new(),
            repetition: 1,
            logs: Vec::new(),
            include_precondition: false,
        };
        match crate::import::read_one(&f, rel, &how) {
            Ok(Some(((_, _, w), result))) => out.push(Point {
                write_cache: Point::cache_from_name(&f),
                ..point(&w, &result.figures, f.display().to_string())
            }),
            Ok(None) => raidlab_backend::note!("skipped {}: a preconditioning run", f.display()),
            Err(e) => raidlab_backend::note!("skipped {}: {e}", f.display()),
        }
    }
    Ok(out)
}

fn point(w: &Workload, f: &Figures, source: String) -> Point {
    Point {
        rw: w.rw,
        bs: w.bs,
        iodepth: w.iodepth,
        numjobs: w.numjobs,
        span: (w.size.0 > 0).then_some(w.size),
        iops: f.read.as_ref().map_or(0.0, |d| d.iops) + f.write.as_ref().map_or(0.0, |d| d.iops),
        write_cache: None,
        source,
    }
}
