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
        if points.iter().any(|p| p.rw == raidlab_core::Rw::Read) {
            ", the media rates"
        } else {
            ""
        }
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

/// The --device sweep: (name, rw, bs, iodepth, span as a share of the disk).
const SWEEP: [(&str, &str, &str, u32, Option<f64>); 7] = [
    ("randread-qd1", "randread", "4k", 1, None),
    ("randread-qd4", "randread", "4k", 4, None),
    ("randread-qd8", "randread", "4k", 8, None),
    ("randread-qd16", "randread", "4k", 16, None),
    ("randread-qd32", "randread", "4k", 32, None),
    ("randread-qd1-short", "randread", "4k", 1, Some(0.01)),
    ("read-outer", "read", "1m", 8, Some(0.01)),
];

/// Measure `dev` read-only with fio, under the host target's guards and its device lock;
/// the fio JSON goes to a new directory beside the model file. Returns it and the size.
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
    let total = a.seconds * SWEEP.len() as u64;
    let pb = crate::progress::timed(total, a.quiet);
    for (i, (name, rw, bs, qd, share)) in SWEEP.iter().enumerate() {
        pb.set_message(format!("{name} on {dev}"));
        let mut fio = std::process::Command::new("fio");
        fio.arg(format!("--name={name}"))
            .arg(format!("--filename={dev}"))
            .args(["--readonly", "--direct=1", "--ioengine=libaio"])
            .arg(format!("--rw={rw}"))
            .arg(format!("--bs={bs}"))
            .arg(format!("--iodepth={qd}"))
            .arg(format!("--runtime={}", a.seconds))
            .arg("--time_based")
            .arg("--output-format=json")
            .arg(format!(
                "--output={}",
                dir.join(format!("{name}.json")).display()
            ));
        if let Some(share) = share {
            // Whole 1 MiB steps, at least 64 MiB.
            let span = ((size.0 as f64 * share) as u64 / (1 << 20)).max(64) << 20;
            fio.arg(format!("--size={}", span.min(size.0)));
        }
        let mut child = fio
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("starting fio (apt-get install fio)")?;
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            let done = a.seconds * i as u64 + started.elapsed().as_secs().min(a.seconds);
            pb.set_position(done);
            std::thread::sleep(std::time::Duration::from_millis(200));
        };
        if !status.success() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            bail!("fio {name} on {dev} failed: {}", err.trim());
        }
    }
    pb.finish_and_clear();
    Ok((dir, size))
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
                (c.array.disks == 1).then(|| {
                    point(
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
            Ok(Some(((_, _, w), result))) => {
                out.push(point(&w, &result.figures, f.display().to_string()))
            }
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
        source,
    }
}
