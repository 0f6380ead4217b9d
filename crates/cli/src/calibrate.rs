//! `raidlab calibrate`: read one drive's measurements (raidlab results or fio JSON), fit a
//! disk model to them (`raidlab-calibrate`) and write it as a model file whose header holds
//! the fit, point by point.

use crate::args::CalibrateArgs;
use anyhow::{anyhow, bail, Context, Result};
use raidlab_calibrate::Point;
use raidlab_core::{Bytes, DiskModel, Figures, Workload};
use std::path::Path;

pub fn calibrate(a: CalibrateArgs) -> Result<()> {
    let mut base = DiskModel::preset(&a.base).ok_or_else(|| {
        anyhow!(
            "--base {}: no such preset; use one of: {}",
            a.base,
            DiskModel::preset_names().join(", ")
        )
    })?;
    if let Some(c) = &a.capacity {
        let c: Bytes = c.parse().map_err(|e| anyhow!("--capacity {c}: {e}"))?;
        base = base.with_capacity(c);
    }
    let mut points = Vec::new();
    for input in &a.inputs {
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
        bail!("no measurements found in {:?}: point at a raidlab results directory or at fio's JSON output (fio --output-format=json)", a.inputs);
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
    let header = format!(
        "A raidlab disk model, fitted by `raidlab calibrate` to {} measurements ({}).\n\
         Fitted: the seek curve, reorder_noise{}; the rest is the base preset's.\n\
         How far to trust it, point by point:\n\n{table}",
        points.len(),
        a.inputs
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
    if a.out.exists() {
        bail!(
            "{} exists: raidlab does not overwrite a model file; choose another --out",
            a.out.display()
        );
    }
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
        match crate::import::read_one(&f, rel) {
            Ok(((_, _, w), result)) => {
                out.push(point(&w, &result.figures, f.display().to_string()))
            }
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
