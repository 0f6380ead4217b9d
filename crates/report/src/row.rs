//! The row: one case with its figures (the median over repetitions), its spread, and
//! the model's expectation, as exported.

use raidlab_core::{stats, Case, DirectionFigures, Environment, Figures, RebuildFigures, Workload};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write;

/// The two directions of a result's figures.
const R: fn(&Figures) -> Option<&DirectionFigures> = |f| f.read.as_ref();
const W: fn(&Figures) -> Option<&DirectionFigures> = |f| f.write.as_ref();

/// One case's exported figures. Array fields are `None` for imported results.
///
/// The struct is the CSV contract (docs/exports.md): its fields, in this order, are the
/// columns (all but `array_label`, which only the JSON export and the charts carry). New
/// fields are only ever appended before `array_label`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Row {
    pub case_id: String,
    pub target: String,
    pub engine: Option<String>,
    pub level: Option<String>,
    pub layout: Option<String>,
    pub chunk_kib: Option<u64>,
    pub disks: Option<u32>,
    pub filesystem: Option<String>,
    pub rw: String,
    /// Block size in bytes.
    pub bs: u64,
    pub iodepth: u32,
    pub numjobs: u32,
    pub read_iops: Option<f64>,
    pub write_iops: Option<f64>,
    pub read_bw_mib_s: Option<f64>,
    pub write_bw_mib_s: Option<f64>,
    pub read_lat_mean_ms: Option<f64>,
    pub write_lat_mean_ms: Option<f64>,
    pub read_lat_p99_ms: Option<f64>,
    pub write_lat_p99_ms: Option<f64>,
    pub repetitions: usize,
    pub disk_model: Option<String>,
    pub usable_fraction: Option<f64>,
    pub fault_tolerance: Option<u32>,
    /// Lowest and highest total (read + write) IOPS over the repetitions.
    pub iops_min: Option<f64>,
    pub iops_max: Option<f64>,
    /// The model's expectation (reads and writes together) and measured / expected − 1.
    pub expected_iops: Option<f64>,
    pub expected_bw_mib_s: Option<f64>,
    pub deviation: Option<f64>,
    /// `baseline` or `disk-model`.
    pub model_basis: Option<String>,
    /// Codes of the anomaly rules that fired on any repetition, space-separated.
    pub anomalies: String,
    /// I/Os the members served (fio's `disk_util` of each member) per I/O fio completed:
    /// md's cost made visible (raid10 writes ≈ 2, raid5 small writes ≈ 4).
    pub member_ios_per_io: Option<f64>,
    /// The array's state: `healthy`, `degraded` (members gone) or `rebuilding`; empty for
    /// imports.
    pub state: Option<String>,
    /// Members failed (degraded) or being recovered (rebuilding); 0 when healthy.
    pub failed: Option<u32>,
    /// A rebuilding array's recovery speed per member over the measured window, MiB/s.
    pub rebuild_mib_s: Option<f64>,
    /// Seconds until the recovery ended, when it ended within the run.
    pub rebuild_s: Option<f64>,
    /// Seconds a whole member's recovery takes under the workload (extrapolated from the
    /// speed sampled across the member), and on an idle array.
    pub rebuild_s_full: Option<f64>,
    pub rebuild_s_idle: Option<f64>,
    /// A rebuilding array's probability of losing data over 5 years with its rebuilds
    /// taking `rebuild_s_full` (loaded) or `rebuild_s_idle`: `raidlab risk`'s Monte Carlo
    /// and defaults (docs/risk.md), 10⁵ trials.
    pub loss_5y: Option<f64>,
    pub loss_5y_idle: Option<f64>,
    /// Completion-latency percentiles and maximum, ms (fio's `clat_ns`; p99 is above).
    pub read_lat_p50_ms: Option<f64>,
    pub read_lat_p90_ms: Option<f64>,
    pub read_lat_p95_ms: Option<f64>,
    pub read_lat_p999_ms: Option<f64>,
    pub read_lat_p9999_ms: Option<f64>,
    pub read_lat_max_ms: Option<f64>,
    pub write_lat_p50_ms: Option<f64>,
    pub write_lat_p90_ms: Option<f64>,
    pub write_lat_p95_ms: Option<f64>,
    pub write_lat_p999_ms: Option<f64>,
    pub write_lat_p9999_ms: Option<f64>,
    pub write_lat_max_ms: Option<f64>,
    /// Percentage of reads in a mixed workload (`randrw` 75 = 75 % reads); empty otherwise.
    pub rwmixread: Option<u32>,
    /// Where an imported result came from: the folder (or device, for bench-fio trees)
    /// under the imported directory, or `import --label`; empty for plan cases.
    pub source: Option<String>,
    /// The fio version that measured the result (`fio-3.33`; `raidlab-sim-…` when simulated).
    pub fio_version: Option<String>,
    /// The fleet host the result came from (its target is `host.NAME`); empty otherwise.
    pub host: Option<String>,
    /// A measured case with a disk model (the VM lab's members, a plan's `[disks] model`)
    /// simulated on that model at report time: its IOPS and MiB/s (reads and writes
    /// together), and the headline figure measured / simulated − 1.
    pub sim_iops: Option<f64>,
    pub sim_bw_mib_s: Option<f64>,
    pub vs_sim: Option<f64>,
    /// Submission latency mean, ms (fio's `slat_ns`): how long submitting an I/O held
    /// fio's thread — on md, while the I/O waited for stripe heads or raid1/10's barrier.
    pub read_slat_mean_ms: Option<f64>,
    pub write_slat_mean_ms: Option<f64>,
    /// Short label for charts (`raid10 f2 512k`; an import's source).
    pub array_label: String,
}

/// The median over repetitions of one latency figure of one direction, in ms.
fn lat_ms(
    figures: &[Figures],
    dir: fn(&Figures) -> Option<&DirectionFigures>,
    get: fn(&DirectionFigures) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = figures
        .iter()
        .filter_map(|f| dir(f).and_then(get))
        .map(|ns| ns / 1e6)
        .collect();
    stats::median(&v)
}

impl Row {
    /// A row from a case (or an imported workload) and the figures of its repetitions.
    pub fn new(
        case_id: &str,
        case: Option<&Case>,
        workload: &Workload,
        target: &str,
        figures: &[Figures],
    ) -> Row {
        let med = |f: &dyn Fn(&Figures) -> Option<f64>| {
            let v: Vec<f64> = figures.iter().filter_map(f).collect();
            stats::median(&v)
        };
        let a = case.map(|c| &c.array);
        Row {
            case_id: case_id.to_string(),
            target: target.to_string(),
            engine: a.map(|a| a.engine.to_string()),
            level: a.map(|a| a.level.to_string()),
            layout: a.and_then(|a| a.layout.map(|l| l.to_string())),
            chunk_kib: a.and_then(|a| a.chunk.map(|c| c.as_kib())),
            disks: a.map(|a| a.disks),
            filesystem: a.map(|a| a.filesystem.to_string()),
            rw: workload.rw.to_string(),
            bs: workload.bs.0,
            iodepth: workload.iodepth,
            numjobs: workload.numjobs,
            read_iops: med(&|f| f.read.as_ref().map(|d| d.iops)),
            write_iops: med(&|f| f.write.as_ref().map(|d| d.iops)),
            read_bw_mib_s: med(&|f| f.read.as_ref().map(|d| d.bw_bytes_s / 1048576.0)),
            write_bw_mib_s: med(&|f| f.write.as_ref().map(|d| d.bw_bytes_s / 1048576.0)),
            read_lat_mean_ms: med(&|f| f.read.as_ref().map(|d| d.lat_mean_ns / 1e6)),
            write_lat_mean_ms: med(&|f| f.write.as_ref().map(|d| d.lat_mean_ns / 1e6)),
            read_lat_p99_ms: lat_ms(figures, R, |d| d.clat_p99_ns),
            write_lat_p99_ms: lat_ms(figures, W, |d| d.clat_p99_ns),
            repetitions: figures.len(),
            disk_model: case.and_then(|c| c.disks.model.clone()),
            usable_fraction: a.map(|a| a.capacity_fraction()),
            fault_tolerance: a.map(|a| a.fault_tolerance()),
            iops_min: figures.iter().map(Figures::total_iops).reduce(f64::min),
            iops_max: figures.iter().map(Figures::total_iops).reduce(f64::max),
            expected_iops: None,
            expected_bw_mib_s: None,
            deviation: None,
            model_basis: None,
            anomalies: String::new(),
            member_ios_per_io: med(&member_ios_per_io),
            state: a.map(|a| a.state.to_string()),
            failed: a.map(|a| a.failed_members()),
            rebuild_mib_s: None,
            rebuild_s: None,
            rebuild_s_full: None,
            rebuild_s_idle: None,
            loss_5y: None,
            loss_5y_idle: None,
            read_lat_p50_ms: lat_ms(figures, R, |d| d.clat_p50_ns),
            read_lat_p90_ms: lat_ms(figures, R, |d| d.clat_p90_ns),
            read_lat_p95_ms: lat_ms(figures, R, |d| d.clat_p95_ns),
            read_lat_p999_ms: lat_ms(figures, R, |d| d.clat_p999_ns),
            read_lat_p9999_ms: lat_ms(figures, R, |d| d.clat_p9999_ns),
            read_lat_max_ms: lat_ms(figures, R, |d| d.clat_max_ns),
            write_lat_p50_ms: lat_ms(figures, W, |d| d.clat_p50_ns),
            write_lat_p90_ms: lat_ms(figures, W, |d| d.clat_p90_ns),
            write_lat_p95_ms: lat_ms(figures, W, |d| d.clat_p95_ns),
            write_lat_p999_ms: lat_ms(figures, W, |d| d.clat_p999_ns),
            write_lat_p9999_ms: lat_ms(figures, W, |d| d.clat_p9999_ns),
            write_lat_max_ms: lat_ms(figures, W, |d| d.clat_max_ns),
            rwmixread: (workload.rw.reads() && workload.rw.writes())
                .then_some(u32::from(workload.rwmixread)),
            source: None,
            fio_version: figures.iter().find_map(|f| f.fio_version.clone()),
            host: target.strip_prefix("host.").map(String::from),
            sim_iops: None,
            sim_bw_mib_s: None,
            vs_sim: None,
            read_slat_mean_ms: med(&|f| f.read.as_ref().map(|d| d.slat_mean_ns / 1e6)),
            write_slat_mean_ms: med(&|f| f.write.as_ref().map(|d| d.slat_mean_ns / 1e6)),
            array_label: case
                .map(|c| c.array.label())
                .unwrap_or_else(|| "imported".into()),
        }
    }

    /// A rebuilding case's recovery figures: the median of each over the repetitions'
    /// recorded environments.
    pub fn rebuild<'a>(&mut self, environments: impl IntoIterator<Item = &'a Environment>) {
        let figures: Vec<RebuildFigures> = environments
            .into_iter()
            .filter_map(|e| e.rebuild.clone())
            .collect();
        let med = |f: &dyn Fn(&RebuildFigures) -> Option<f64>| {
            let v: Vec<f64> = figures.iter().filter_map(f).collect();
            stats::median(&v)
        };
        self.rebuild_mib_s = med(&|r| Some(r.mib_s));
        self.rebuild_s = med(&|r| r.seconds);
        self.rebuild_s_full = med(&|r| r.seconds_full);
        self.rebuild_s_idle = med(&|r| r.seconds_idle);
    }

    /// The probability of losing data over 5 years for the case's array, with rebuilds as
    /// long as this row's: `member_bytes` is the capacity of a member. None for a re-add
    /// (`rejoin = "re-add"`): its rebuild is what the bitmap flagged while a member was
    /// away, and a member that failed comes back as a fresh disk, recovered whole.
    pub fn risk(&mut self, case: &Case, member_bytes: f64) {
        if case.array.re_adds() {
            self.loss_5y = None;
            self.loss_5y_idle = None;
            return;
        }
        let array = raidlab_risk::Array::from_spec(&case.array, member_bytes);
        let p = |seconds: Option<f64>| {
            let hours = seconds? / 3600.0;
            let mission =
                raidlab_risk::Mission::typical(raidlab_risk::Rebuild::Constant(hours), RISK_TRIALS);
            Some(raidlab_risk::simulate(&array, &mission).probability())
        };
        self.loss_5y = p(self.rebuild_s_full);
        self.loss_5y_idle = p(self.rebuild_s_idle);
    }

    /// Hold this row's results against the model: `e` is the case's expectation, `runs`
    /// each repetition's figures, recorded environment and IOPS per second. Sets the
    /// expected figures, the deviation and the anomaly codes; returns what was found, as
    /// (index of the run, anomaly).
    pub fn judge<'a>(
        &mut self,
        case: &Case,
        e: Option<&raidlab_model::Expectation>,
        runs: impl IntoIterator<Item = (&'a Figures, &'a raidlab_core::Environment, &'a [f64])>,
    ) -> Vec<(usize, raidlab_model::Anomaly)> {
        let mut found = Vec::new();
        for (i, (figures, environment, iops_per_second)) in runs.into_iter().enumerate() {
            let observation = raidlab_model::Observation {
                case,
                figures,
                environment,
                iops_per_second,
                expectation: e,
            };
            found.extend(
                raidlab_model::anomalies(&observation)
                    .into_iter()
                    .map(|a| (i, a)),
            );
        }
        let rules: Vec<raidlab_model::Rule> = found.iter().map(|(_, a)| a.rule).collect();
        self.set_model(e, &rules);
        found
    }

    /// Attach the model's expectation and the anomaly codes of this row's results.
    fn set_model(
        &mut self,
        e: Option<&raidlab_model::Expectation>,
        anomalies: &[raidlab_model::Rule],
    ) {
        if let Some(e) = e {
            self.expected_iops = Some(e.iops);
            self.expected_bw_mib_s = Some(e.bw_bytes_s / 1048576.0);
            let measured_bw = (self.read_bw_mib_s.unwrap_or(0.0)
                + self.write_bw_mib_s.unwrap_or(0.0))
                * 1048576.0;
            self.deviation = e.deviation(self.total_iops(), measured_bw);
            self.model_basis = Some(e.basis.name().to_string());
        }
        self.anomalies.clear();
        self.add_anomalies(anomalies.iter().map(|r| r.code()));
    }

    /// Add rule codes to the row's `anomalies`: each once, in name order.
    pub fn add_anomalies(&mut self, codes: impl IntoIterator<Item = &'static str>) {
        let mut all: Vec<String> = self
            .anomalies
            .split_whitespace()
            .map(String::from)
            .collect();
        all.extend(codes.into_iter().map(String::from));
        all.sort();
        all.dedup();
        self.anomalies = all.join(" ");
    }

    /// The figure the row's workload is judged by, with its unit: MiB/s for large blocks,
    /// IOPS for small ones (`Headline`), reads and writes together.
    pub fn headline(&self) -> (f64, &'static str) {
        let mib_s = self.read_bw_mib_s.unwrap_or(0.0) + self.write_bw_mib_s.unwrap_or(0.0);
        self.headline_of(self.total_iops(), mib_s)
    }

    /// Of an IOPS and a MiB/s figure of this row's workload, the one it is judged by.
    fn headline_of(&self, iops: f64, mib_s: f64) -> (f64, &'static str) {
        match raidlab_core::Headline::of(raidlab_core::Bytes(self.bs)) {
            raidlab_core::Headline::Bandwidth => (mib_s, "MiB/s"),
            raidlab_core::Headline::Iops => (iops, "IOPS"),
        }
    }

    /// Median read + write IOPS.
    pub fn total_iops(&self) -> f64 {
        self.read_iops.unwrap_or(0.0) + self.write_iops.unwrap_or(0.0)
    }

    /// Simulate a measured case on its disk model (`sim_iops`, `sim_bw_mib_s`, `vs_sim`):
    /// on the VM lab's targets and the host's when the plan names a model; never for the
    /// simulator's own rows, a fleet's aggregate, or a case the simulator refuses.
    pub fn simulated(&mut self, case: &Case, target: &str, seed: u64) {
        if target == "sim" || target == raidlab_core::FLEET_AGGREGATE {
            return;
        }
        if !matches!(case.disks.resolved_model(), Ok(Some(_))) {
            return;
        }
        let Ok(out) = raidlab_sim::simulate(case, seed) else {
            return;
        };
        let Ok(parsed) = raidlab_fio::parse_output(&out.fio_json) else {
            return;
        };
        let f = &parsed.figures;
        let both = |g: fn(&DirectionFigures) -> f64| {
            f.read.as_ref().map_or(0.0, g) + f.write.as_ref().map_or(0.0, g)
        };
        let iops = both(|d| d.iops);
        let mib_s = both(|d| d.bw_bytes_s) / 1_048_576.0;
        (self.sim_iops, self.sim_bw_mib_s) = (Some(iops), Some(mib_s));
        let (simulated, measured) = (self.headline_of(iops, mib_s).0, self.headline().0);
        self.vs_sim = (simulated > 0.0).then(|| measured / simulated - 1.0);
    }

    /// The row as (column, cell) pairs of the CSV contract: each field in declaration
    /// order but the chart label; figures as Rust prints them (the shortest form that
    /// reads back to the same number, no rounding), absent values empty.
    fn csv_cells(&self) -> Vec<(String, String)> {
        let Value::Object(fields) = serde_json::to_value(self).expect("a row serialises") else {
            unreachable!("a struct serialises to an object")
        };
        fields
            .into_iter()
            .filter(|(column, _)| column != "array_label")
            .map(|(column, v)| {
                let cell = match v {
                    Value::Null => String::new(),
                    Value::String(s) => s,
                    Value::Number(n) if n.is_f64() => n.as_f64().unwrap_or(f64::NAN).to_string(),
                    other => other.to_string(),
                };
                (column, cell)
            })
            .collect()
    }
}

/// Trials of the report's risk figures: 10⁵ take about 30 ms per array and give a 95 %
/// interval of ±0.06 points around 1 %.
pub const RISK_TRIALS: u64 = 100_000;

/// The CSV contract's columns, in order (the fields of [`Row`] but `array_label`).
pub fn csv_columns() -> Vec<String> {
    Row::default()
        .csv_cells()
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// Member I/Os per fio I/O in one run; `None` without per-member `disk_util` (md
/// devices, whose `aggr_*` fields are set, are not members).
fn member_ios_per_io(f: &Figures) -> Option<f64> {
    let members: u64 = f
        .disk_util
        .iter()
        .filter(|d| d.aggr_read_ios.is_none() && d.aggr_write_ios.is_none())
        .map(|d| d.read_ios + d.write_ios)
        .sum();
    let fio = f.read.as_ref().map_or(0, |d| d.ios) + f.write.as_ref().map_or(0, |d| d.ios);
    (members > 0 && fio > 0).then(|| members as f64 / fio as f64)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(crate) fn csv(rows: &[Row]) -> String {
    let mut out = csv_columns().join(",");
    out.push('\n');
    for r in rows {
        let cells: Vec<String> = r.csv_cells().iter().map(|(_, c)| csv_field(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// The table's headings for these rows: [`TABLE_HEADINGS`], and `vs sim` before the
/// last (`anomalies`) when some row was simulated beside its measurement.
pub(crate) fn table_headings(rows: &[Row]) -> Vec<&'static str> {
    let mut h = TABLE_HEADINGS.to_vec();
    if with_sim(rows) {
        h.insert(h.len() - 1, "vs sim");
    }
    h
}

fn with_sim(rows: &[Row]) -> bool {
    rows.iter().any(|r| r.vs_sim.is_some())
}

/// Headings of the human-readable table (Markdown and HTML).
pub(crate) const TABLE_HEADINGS: [&str; 16] = [
    "case",
    "array",
    "workload",
    "target",
    "read IOPS",
    "write IOPS",
    "read MiB/s",
    "write MiB/s",
    "read lat ms",
    "write lat ms",
    "read p99 ms",
    "write p99 ms",
    "usable",
    "IOPS range",
    "vs model",
    "anomalies",
];

/// A deviation as `+16 %`, `-42 %`, or `±0 %` (never `-0 %`).
pub(crate) fn signed_pct(d: f64) -> String {
    match (d * 100.0).round() {
        0.0 => "±0 %".to_string(),
        p => format!("{p:+.0} %"),
    }
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "–".into())
}

impl Row {
    /// `randwrite 4k qd4×1`; a mixed workload names its read share, as bench-fio does
    /// (`randrw75 4k qd4×1`), so mixes of 75 % and 90 % reads stay apart.
    pub fn workload_label(&self) -> String {
        format!(
            "{}{} {} qd{}×{}",
            self.rw,
            self.rwmixread.map(|m| m.to_string()).unwrap_or_default(),
            raidlab_core::Bytes(self.bs).to_fio(),
            self.iodepth,
            self.numjobs
        )
    }

    /// The cells under [`table_headings`] of `rows` (this row among them), rounded for
    /// reading (exports keep full precision).
    pub(crate) fn table_cells_among(&self, rows: &[Row]) -> Vec<String> {
        let mut c = self.table_cells();
        if with_sim(rows) {
            let vs_sim = self.vs_sim.map(signed_pct).unwrap_or_else(|| "–".into());
            c.insert(c.len() - 1, vs_sim);
        }
        c
    }

    /// The cells under [`TABLE_HEADINGS`], rounded for reading (exports keep full precision).
    pub(crate) fn table_cells(&self) -> Vec<String> {
        vec![
            self.case_id.clone(),
            self.array_label.clone(),
            self.workload_label(),
            self.target.clone(),
            fmt(self.read_iops, 1),
            fmt(self.write_iops, 1),
            fmt(self.read_bw_mib_s, 1),
            fmt(self.write_bw_mib_s, 1),
            fmt(self.read_lat_mean_ms, 2),
            fmt(self.write_lat_mean_ms, 2),
            fmt(self.read_lat_p99_ms, 2),
            fmt(self.write_lat_p99_ms, 2),
            self.usable_fraction
                .map(|u| format!("{:.0} %", u * 100.0))
                .unwrap_or_else(|| "–".into()),
            match (self.iops_min, self.iops_max) {
                (Some(lo), Some(hi)) if self.repetitions > 1 => format!("{lo:.1}–{hi:.1}"),
                _ => "–".into(),
            },
            self.deviation.map(signed_pct).unwrap_or_else(|| "–".into()),
            if self.anomalies.is_empty() {
                "–".into()
            } else {
                self.anomalies.clone()
            },
        ]
    }
}

pub(crate) fn markdown(rows: &[Row], title: &str) -> String {
    let headings = table_headings(rows);
    let mut s = format!("# {title}\n\n| {} |\n", headings.join(" | "));
    s.push_str("|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    s.push_str(if headings.len() > 16 {
        "--:|---|\n"
    } else {
        "---|\n"
    });
    for r in rows {
        let mut cells = r.table_cells_among(rows);
        cells[0] = format!("`{}`", cells[0]);
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `vs sim` column shows only where a row was simulated beside its measurement,
    /// before `anomalies`, with an alignment cell of its own.
    #[test]
    fn the_vs_sim_column_appears_with_a_simulated_row() {
        let row = |vs_sim: Option<f64>| Row {
            case_id: "c".into(),
            target: "vm".into(),
            rw: "randread".into(),
            bs: 4096,
            read_iops: Some(90.0),
            vs_sim,
            ..Row::default()
        };
        let cells = |md: &str, line: usize| md.lines().nth(line).unwrap().matches('|').count() - 1;
        let plain = markdown(&[row(None)], "t");
        assert!(!plain.contains("vs sim"));
        assert_eq!(
            (cells(&plain, 2), cells(&plain, 3), cells(&plain, 4)),
            (16, 16, 16)
        );
        let md = markdown(&[row(Some(-0.12)), row(None)], "t");
        assert_eq!((cells(&md, 2), cells(&md, 3), cells(&md, 4)), (17, 17, 17));
        assert!(md
            .lines()
            .nth(2)
            .unwrap()
            .ends_with("| vs model | vs sim | anomalies |"));
        assert!(
            md.lines().nth(4).unwrap().ends_with("| -12 % | – |"),
            "{md}"
        );
        assert!(md.lines().nth(5).unwrap().ends_with("| – | – |"), "{md}");
    }
}
