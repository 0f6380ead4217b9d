//! Fitting a disk model to one drive's own measurements (`raidlab calibrate`).
//!
//! A preset stands for a class of drive; a user's drive is one drive. From a handful of
//! fio runs on it (random reads at queue depth 1 and deeper, optionally sequential reads)
//! this crate finds the figures under which the simulator reproduces them, starting from
//! a base model of the same class, and says how well it did: every point measured against
//! simulated, and the median and worst error. The fit runs the simulator itself, so what
//! it fits is exactly what `raidlab sim` and `raidlab run` will use.
//!
//! What is fitted, in this order, each by what moves it most:
//! - the seek curve's scale (track-to-track, average and full-stroke times together), from
//!   random reads at queue depth 1: one command at a time, its service time is overhead +
//!   seek + rotation, and rotation comes from the RPM;
//! - `reorder_noise`, from random reads with several commands outstanding: how much the
//!   drive gains from its queue;
//! - the media rates (outer and inner together), from sequential reads, when there are some;
//! - the write cache's depth in commands (`cache_commands`, with `destage_window` the same),
//!   from random writes made with the cache on, when there are some.
//!
//! Writes count only where the run says how the drive's write cache was set (a fio result
//! alone does not): `raidlab calibrate --device … --destroy-data-on SERIAL` makes them and
//! names them so (`…-cache-on.json`, `…-cache-off.json`).

pub mod public;

use raidlab_core::disk::HddParams;
use raidlab_core::{stats, Bytes, Case, DiskKind, DiskModel, Nanos, Plan, Rw, Workload};
use std::path::Path;

/// One measured run: what fio did and the IOPS it got.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub rw: Rw,
    pub bs: Bytes,
    pub iodepth: u32,
    pub numjobs: u32,
    /// The part of the drive the run covered, from its start; `None`: all of it.
    pub span: Option<Bytes>,
    /// Read + write IOPS fio measured.
    pub iops: f64,
    /// The drive's write cache during the run, where known (`None`: unknown; such writes
    /// are simulated with the cache off and not fitted).
    pub write_cache: Option<bool>,
    /// Where the point came from (a file), for the table.
    pub source: String,
}

impl Point {
    /// 4 KiB random reads by one job at queue depth `qd` over the whole drive.
    pub fn random_read(qd: u32, iops: f64, source: &str) -> Point {
        Point {
            rw: Rw::RandRead,
            bs: Bytes::kib(4),
            iodepth: qd,
            numjobs: 1,
            span: None,
            iops,
            write_cache: None,
            source: source.to_string(),
        }
    }

    /// Whether a fio output file's name says the drive's write cache state of a run
    /// (`…-cache-on.json`, `…-cache-off.json`), as `calibrate --device` names its writes.
    pub fn cache_from_name(file: &Path) -> Option<bool> {
        let stem = file.file_stem()?.to_str()?;
        if stem.ends_with("-cache-on") {
            Some(true)
        } else if stem.ends_with("-cache-off") {
            Some(false)
        } else {
            None
        }
    }

    /// Commands outstanding at once.
    pub fn outstanding(&self) -> u32 {
        self.iodepth * self.numjobs
    }

    /// A random read with one command outstanding: what the seek curve is fitted to.
    fn is_qd1_random_read(&self) -> bool {
        self.rw == Rw::RandRead && self.outstanding() == 1
    }

    fn is_deep_random_read(&self) -> bool {
        self.rw == Rw::RandRead && self.outstanding() >= 4
    }

    fn is_sequential_read(&self) -> bool {
        self.rw == Rw::Read && self.bs.0 >= 64 * 1024
    }

    /// Random writes the drive's cache absorbed (the cache known to be on): what the
    /// cache's depth is fitted to.
    pub fn is_cached_random_write(&self) -> bool {
        self.rw == Rw::RandWrite && self.write_cache == Some(true)
    }

    /// `randread 4k qd8×1 over 1t`.
    pub fn label(&self) -> String {
        let span = self
            .span
            .map_or("whole disk".to_string(), |s| format!("over {}", s.to_fio()));
        let cache = match self.write_cache {
            Some(true) => ", cache on",
            Some(false) => ", cache off",
            None => "",
        };
        format!(
            "{} {} qd{}×{} {span}{cache}",
            self.rw,
            self.bs.to_fio(),
            self.iodepth,
            self.numjobs
        )
    }
}

/// A point and what the fitted model gives for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub point: Point,
    pub simulated: f64,
}

impl Row {
    /// simulated / measured − 1.
    pub fn error(&self) -> f64 {
        self.simulated / self.point.iops - 1.0
    }
}

/// The fitted model and how well it reproduces the points.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub model: DiskModel,
    pub rows: Vec<Row>,
    /// Median and largest |simulated / measured − 1| over the rows.
    pub median: f64,
    pub worst: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrateError {
    #[error(
        "the measurements lack what the fit needs:\n  {}\nRun them with fio on the drive (read-only), e.g.\n  {}",
        .missing.join("\n  "),
        .commands.join("\n  ")
    )]
    Missing {
        missing: Vec<String>,
        commands: Vec<String>,
    },
    #[error("{0} is not a rotating disk model: calibrate fits disks (seek, rotation, queue); set a flash model's figures by hand")]
    NotADisk(String),
    #[error("the simulator failed on {point}: {why}")]
    Sim { point: String, why: String },
}

/// Fit `base` (a disk model of the drive's class, its RPM and capacity right) to `points`.
pub fn fit(base: &DiskModel, points: &[Point], name: &str) -> Result<Fit, CalibrateError> {
    let DiskKind::Hdd(start) = &base.kind else {
        return Err(CalibrateError::NotADisk(base.name.clone()));
    };
    check_points(points)?;
    let qd1: Vec<&Point> = points.iter().filter(|p| p.is_qd1_random_read()).collect();
    let deep: Vec<&Point> = points.iter().filter(|p| p.is_deep_random_read()).collect();
    let seq: Vec<&Point> = points.iter().filter(|p| p.is_sequential_read()).collect();
    let cached: Vec<&Point> = points
        .iter()
        .filter(|p| p.is_cached_random_write())
        .collect();
    let mut p = start.clone();
    // The seek scale: QD1 service time falls as seeks get shorter, so the error in log
    // space is monotone in the scale; a golden-section search finds where it is smallest.
    let seek = golden(0.2, 4.0, 24, |s| {
        let m = with_seek_scale(start, s);
        total_log_error(base, &m, &qd1)
    })?;
    p = with_seek_scale(&p, seek);
    // The reorder error: a grid, median log error over the deep points.
    let mut best = (f64::INFINITY, p.reorder_noise);
    for noise in [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 12.0] {
        let m = HddParams {
            reorder_noise: noise,
            ..p.clone()
        };
        let e = median_log_error(base, &m, &deep)?;
        if e < best.0 {
            best = (e, noise);
        }
    }
    p.reorder_noise = best.1;
    if !seq.is_empty() {
        let rate = golden(0.2, 5.0, 24, |r| {
            let m = HddParams {
                outer_mb_s: start.outer_mb_s * r,
                inner_mb_s: start.inner_mb_s * r,
                ..p.clone()
            };
            total_log_error(base, &m, &seq)
        })?;
        p.outer_mb_s = round3(start.outer_mb_s * rate);
        p.inner_mb_s = round3(start.inner_mb_s * rate);
    }
    if !cached.is_empty() {
        // The cache's depth in commands: a grid (powers of two), median log error over
        // the cached writes; the destage policy scans as many as the cache holds.
        let mut best = (f64::INFINITY, p.cache_commands);
        for commands in [1, 2, 4, 8, 16, 32, 64, 128, 256] {
            let m = HddParams {
                cache_commands: commands,
                destage_window: commands,
                ..p.clone()
            };
            let e = median_log_error(base, &m, &cached)?;
            if e < best.0 {
                best = (e, commands);
            }
        }
        p.cache_commands = best.1;
        p.destage_window = best.1;
    }
    let model = DiskModel {
        name: name.to_string(),
        source: format!(
            "Calibrated by raidlab calibrate from {} measurements, starting from {}.",
            points.len(),
            base.name
        ),
        kind: DiskKind::Hdd(p),
    };
    let rows = points
        .iter()
        .map(|pt| {
            Ok(Row {
                point: pt.clone(),
                simulated: simulate(&model, pt)?,
            })
        })
        .collect::<Result<Vec<_>, CalibrateError>>()?;
    let mut errors: Vec<f64> = rows.iter().map(|r| r.error().abs()).collect();
    errors.sort_by(f64::total_cmp);
    Ok(Fit {
        model,
        median: stats::median(&errors).unwrap_or(0.0),
        worst: errors.last().copied().unwrap_or(0.0),
        rows,
    })
}

/// Refuse, with the runs to make, when the fit has nothing to stand on.
fn check_points(points: &[Point]) -> Result<(), CalibrateError> {
    let mut missing = Vec::new();
    let mut commands = Vec::new();
    let fio = |name: &str, rw: &str, bs: &str, qd: u32| {
        format!(
            "fio --name={name} --filename=/dev/sdX --readonly --direct=1 --ioengine=libaio \
             --rw={rw} --bs={bs} --iodepth={qd} --runtime=60 --time_based \
             --output-format=json --output={name}.json"
        )
    };
    if !points.iter().any(Point::is_qd1_random_read) {
        missing.push(
            "random reads with one command outstanding (rw=randread, iodepth=1, numjobs=1)".into(),
        );
        commands.push(fio("randread-qd1", "randread", "4k", 1));
    }
    if !points.iter().any(Point::is_deep_random_read) {
        missing.push(
            "random reads with 4 or more outstanding (rw=randread, iodepth × numjobs ≥ 4)".into(),
        );
        for qd in [4, 8, 16, 32] {
            commands.push(fio(&format!("randread-qd{qd}"), "randread", "4k", qd));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CalibrateError::Missing { missing, commands })
    }
}

fn with_seek_scale(p: &HddParams, s: f64) -> HddParams {
    let scale = |t: Nanos| Nanos(((t.0 as f64 * s) / 1000.0).round() as u64 * 1000);
    HddParams {
        track_to_track: scale(p.track_to_track),
        avg_seek: scale(p.avg_seek),
        full_stroke: scale(p.full_stroke),
        ..p.clone()
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The IOPS `model` gives for `point` (20 simulated seconds, seed 1): what the fit uses.
pub fn simulate(model: &DiskModel, point: &Point) -> Result<f64, CalibrateError> {
    simulate_with(model, point, 1, Nanos::from_secs_f64(20.0))
}

/// The IOPS `model` gives for `point` over `runtime` with `seed`.
pub fn simulate_with(
    model: &DiskModel,
    point: &Point,
    seed: u64,
    runtime: Nanos,
) -> Result<f64, CalibrateError> {
    let case = case_for(model, point, runtime);
    let out = raidlab_sim::simulate(&case, seed).map_err(|e| CalibrateError::Sim {
        point: point.label(),
        why: e.to_string(),
    })?;
    let f = raidlab_fio::parse_output(&out.fio_json)
        .map_err(|e| CalibrateError::Sim {
            point: point.label(),
            why: e.to_string(),
        })?
        .figures;
    Ok(f.read.map_or(0.0, |d| d.iops) + f.write.map_or(0.0, |d| d.iops))
}

/// A one-disk case of `point` on `model`.
fn case_for(model: &DiskModel, point: &Point, runtime: Nanos) -> Case {
    let plan = Plan::parse(
        "name = \"calibrate\"\n[disks]\ncount = 1\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"single\"\nfilesystem = \"none\"\n[workloads]\nrw = \"randread\"\n",
        Path::new("calibrate.toml"),
    )
    .expect("the calibration plan parses");
    let mut case = plan.cases()[0].clone();
    case.disks.model = Some(model.name.clone());
    case.disks.model_file = Some(model.clone());
    case.array.write_cache = if point.write_cache == Some(true) {
        raidlab_core::WriteCache::On
    } else {
        raidlab_core::WriteCache::Off
    };
    let size = point.span.unwrap_or(model.capacity());
    case.workload = Workload {
        rw: point.rw,
        bs: point.bs,
        iodepth: point.iodepth,
        numjobs: point.numjobs,
        size,
        runtime,
        ..case.workload
    };
    case
}

fn log_error(base: &DiskModel, p: &HddParams, pt: &Point) -> Result<f64, CalibrateError> {
    let m = DiskModel {
        kind: DiskKind::Hdd(p.clone()),
        ..base.clone()
    };
    let sim = simulate(&m, pt)?;
    Ok((sim.max(1e-9) / pt.iops).ln().abs())
}

fn total_log_error(base: &DiskModel, p: &HddParams, pts: &[&Point]) -> Result<f64, CalibrateError> {
    pts.iter().map(|pt| log_error(base, p, pt)).sum()
}

fn median_log_error(
    base: &DiskModel,
    p: &HddParams,
    pts: &[&Point],
) -> Result<f64, CalibrateError> {
    let e = pts
        .iter()
        .map(|pt| log_error(base, p, pt))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(stats::median(&e).unwrap_or(0.0))
}

/// The `x` in `[lo, hi]` (searched in log space) where `f` is smallest, for `f` with one
/// minimum there.
fn golden(
    lo: f64,
    hi: f64,
    steps: u32,
    mut f: impl FnMut(f64) -> Result<f64, CalibrateError>,
) -> Result<f64, CalibrateError> {
    let phi = (5f64.sqrt() - 1.0) / 2.0;
    let (mut a, mut b) = (lo.ln(), hi.ln());
    let mut c = b - phi * (b - a);
    let mut d = a + phi * (b - a);
    let (mut fc, mut fd) = (f(c.exp())?, f(d.exp())?);
    for _ in 0..steps {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = f(c.exp())?;
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            fd = f(d.exp())?;
        }
    }
    Ok(((a + b) / 2.0).exp())
}

/// The fit as the comment block at the head of the model file, and as `calibrate` prints it.
pub fn report(fit: &Fit) -> String {
    let mut s = String::from("point | measured IOPS | simulated IOPS | error\n");
    for r in &fit.rows {
        s.push_str(&format!(
            "{} | {:.1} | {:.1} | {:+.1} %\n",
            r.point.label(),
            r.point.iops,
            r.simulated,
            r.error() * 100.0
        ));
    }
    s.push_str(&format!(
        "median error {:.1} %, worst {:.1} % over {} points",
        fit.median * 100.0,
        fit.worst * 100.0,
        fit.rows.len()
    ));
    s
}
