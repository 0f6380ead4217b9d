//! The HTML report: one self-contained file (inline CSS and SVG, no script, nothing from
//! the network) that opens offline and prints well. It answers the plan's question first
//! (summary), then shows the evidence: charts per workload, measured against the model,
//! sweeps, anomalies, and per case the environment and the exact commands.

use crate::axis::{sweep, Dim, Metric};
use crate::row::{table_headings, Row, RISK_TRIALS};
use crate::svg::{bar_chart, line_chart, model_chart, share_chart, time_chart, Bar};
use raidlab_core::natural::Natural;
use raidlab_core::stats::TIE;
use raidlab_core::{Bytes, Headline};
use std::collections::BTreeMap;
use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub(crate) const CSS: &str = "body{font:15px/1.45 system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}table{border-collapse:collapse;font-size:13px}\
td,th{border:1px solid #ddd;padding:3px 6px;text-align:right}td:nth-child(-n+4),th:nth-child(-n+4){text-align:left}\
.charts{display:flex;flex-wrap:wrap;gap:12px}.chartbox{position:relative;width:520px;max-width:100%}.chartbox>svg{width:100%;display:block}.chartbox .dl{position:absolute;top:6px;right:8px;font-size:11px;color:#888;text-decoration:none}.chartbox .dl:hover{color:#222}@media print{.dl{display:none}}.chart{width:520px;max-width:100%;border:1px solid #eee}\
.ct{font-size:14px;text-anchor:middle;font-weight:600}.tick{font-size:12px;text-anchor:end;fill:#555}\
.xtick{font-size:12px;text-anchor:middle;fill:#555}.xl{font-size:12px;text-anchor:middle}.lgd{font-size:12px}\
.unit{font-size:12px;text-anchor:middle;fill:#444}.val{font-size:11px;text-anchor:middle}.lbl{font-size:11px}\
.grid,.xgrid{stroke:#e4e4e4}.c0{fill:#4e79a7}.c1{fill:#f28e2b}.c2{fill:#e15759}.c3{fill:#76b7b2}.c4{fill:#59a14f}\
.c5{fill:#edc948}.c6{fill:#b07aa1}.c7{fill:#ff9da7}.note{color:#555}.model{stroke:#000;stroke-width:3}\
.share,.over-time{width:520px;max-width:100%}pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px}\
.anom{color:#a33}details{margin:.4em 0}summary{cursor:pointer}@media print{.chart{width:48%}h2{break-before:auto}}";

/// A chart: title, unit, and the figure it plots.
type Series = (&'static str, &'static str, fn(&Row) -> Option<f64>);

/// Where a case's per-member I/O counts come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MemberCounts {
    /// fio's `disk_util`: the disks fio found under the array when it started, so not a
    /// member added while it ran (a rebuild's fresh member).
    #[default]
    FioDiskUtil,
    /// The block layer's counters of every member over the run (`during.members_io`).
    BlockLayer,
}

impl MemberCounts {
    /// How the chart's legend names it.
    pub fn legend(self) -> &'static str {
        match self {
            MemberCounts::FioDiskUtil => "fio disk_util",
            MemberCounts::BlockLayer => "the block layer's counters",
        }
    }
}

/// What a case brings beyond its row's figures, read from the store: aligned with the
/// rows by index (an empty list renders the report without per-case sections).
#[derive(Debug, Clone, Default)]
pub struct Detail {
    /// The model's formula with its numbers.
    pub formula: Option<String>,
    /// Anomaly sentences (each repetition's, deduplicated).
    pub anomalies: Vec<String>,
    /// The first repetition's environment, pretty-printed JSON.
    pub environment: String,
    /// The exact commands the host target runs for the case.
    pub commands: Vec<String>,
    /// Each member's (name, read I/Os, write I/Os).
    pub members: Vec<(String, u64, u64)>,
    /// Where `members` were counted.
    pub members_counted: MemberCounts,
    /// IOPS per second from the first repetition's iops log.
    pub iops_per_second: Vec<f64>,
    /// Mean latency (ms) per second from the first repetition's latency log.
    pub lat_ms_per_second: Vec<f64>,
    /// A rebuilding case's recovery speed (MiB/s) per second, from the first repetition.
    pub rebuild_mib_s_per_second: Vec<f64>,
    /// The first repetition's completion-latency histograms (reads, writes): (upper
    /// bound ns, completions) per power-of-two bucket, from fio's json+ bins.
    pub histograms: [Vec<(f64, u64)>; 2],
}

/// Everything the HTML report shows.
pub struct Report<'a> {
    pub title: &'a str,
    pub rows: &'a [Row],
    pub details: &'a [Detail],
    /// `--x DIM --y METRIC`: one more chart over every row.
    pub axes: Option<(Dim, Metric)>,
}

/// The report of rows alone (no per-case details, no custom chart).
pub fn render(rows: &[Row], title: &str) -> String {
    render_report(&Report {
        title,
        rows,
        details: &[],
        axes: None,
    })
}

/// The headline metric of a workload group (the figure its summary judges by).
fn headline_metric(r: &Row) -> Metric {
    match Headline::of(Bytes(r.bs)) {
        Headline::Bandwidth => Metric::Bw,
        Headline::Iops => Metric::Iops,
    }
}

fn distinct<T: PartialEq>(v: impl Iterator<Item = T>) -> usize {
    let mut seen: Vec<T> = Vec::new();
    for x in v {
        if !seen.contains(&x) {
            seen.push(x);
        }
    }
    seen.len()
}

/// A self-contained page with the report's styles around `body` (other commands' pages,
/// such as `raidlab advise -o`).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{CSS}</style></head><body><h1>{t}</h1>{body}</body></html>\n",
        t = esc(title)
    )
}

/// The `--x DIM --y METRIC` chart over every row (in the report, or alone as an SVG file).
pub(crate) fn custom_chart(rows: &[Row], x: Dim, y: Metric) -> String {
    let all: Vec<&Row> = rows.iter().collect();
    let sw = sweep(&all, x, y);
    line_chart(
        "custom",
        &format!("{y} by {x}"),
        y.unit(),
        &sw.xs,
        &sw.series,
    )
}

/// Rows by workload, in natural order (`qd2` before `qd16`).
type Groups<'a> = BTreeMap<Natural, Vec<&'a Row>>;

pub fn render_report(rep: &Report) -> String {
    let rows = rep.rows;
    let title = rep.title;
    let mut groups: Groups = BTreeMap::new();
    for r in rows {
        groups
            .entry(Natural(r.workload_label()))
            .or_default()
            .push(r);
    }
    let mut s = String::new();
    let _ = write!(s, "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t} — raidlab report</title><style>{CSS}</style></head><body><h1>{t}</h1>", t = esc(title));
    let targets: Vec<&str> = {
        let mut t: Vec<&str> = rows.iter().map(|r| r.target.as_str()).collect();
        t.sort();
        t.dedup();
        t
    };
    let _ = write!(
        s,
        "<p class=\"note\">{} · target {} · generated by raidlab {}</p>",
        raidlab_core::plural(rows.len(), "case", "cases"),
        esc(&targets.join(", ")),
        env!("CARGO_PKG_VERSION")
    );

    summary(&mut s, &groups);
    anomalies(&mut s, rows, rep.details);
    failures(&mut s, &groups);
    fleet(&mut s, rows);

    for (key, rs) in &groups {
        let _ = write!(s, "<h2>{}</h2><div class=\"charts\">", esc(&key.0));
        workload_charts(&mut s, &key.0, rs);
        s.push_str("</div>");
    }

    sweeps(&mut s, rows);
    if let Some((x, y)) = rep.axes {
        let _ = write!(s, "<h2>{y} by {x}</h2><div class=\"charts\">");
        s.push_str(&custom_chart(rows, x, y));
        s.push_str("</div>");
    }
    cases(&mut s, rows, rep.details);

    all_cases(&mut s, rows);
    s.push_str("</table></body></html>\n");
    s
}

/// One workload's charts: a bar chart per figure and direction, the member I/Os per fio
/// I/O, and measured against the model.
fn workload_charts(s: &mut String, key: &str, rs: &[&Row]) {
    let series: [Series; 8] = [
        ("read IOPS", "IOPS", |r| r.read_iops),
        ("write IOPS", "IOPS", |r| r.write_iops),
        ("read bandwidth", "MiB/s", |r| r.read_bw_mib_s),
        ("write bandwidth", "MiB/s", |r| r.write_bw_mib_s),
        ("read latency (mean)", "ms", |r| r.read_lat_mean_ms),
        ("write latency (mean)", "ms", |r| r.write_lat_mean_ms),
        ("read latency (p99)", "ms", |r| r.read_lat_p99_ms),
        ("write latency (p99)", "ms", |r| r.write_lat_p99_ms),
    ];
    for (name, unit, get) in series {
        // Whiskers: the repetitions' IOPS range, where it is this direction's alone.
        let spread = |r: &Row| {
            let one_direction = r.read_iops.is_none() || r.write_iops.is_none();
            (unit == "IOPS" && r.repetitions > 1 && one_direction)
                .then_some(r.iops_min.zip(r.iops_max))
                .flatten()
        };
        let bars: Vec<Bar> = rs
            .iter()
            .filter_map(|r| get(r).map(|v| (series_name(r, rs), v, spread(r))))
            .collect();
        if !bars.is_empty() {
            s.push_str(&bar_chart("chart", &format!("{key}: {name}"), unit, &bars));
        }
    }
    percentile_charts(s, key, rs);
    let cost: Vec<Bar> = rs
        .iter()
        .filter_map(|r| r.member_ios_per_io.map(|v| (series_name(r, rs), v, None)))
        .collect();
    if !cost.is_empty() {
        s.push_str(&bar_chart(
            "chart member-cost",
            &format!("{key}: member I/Os per fio I/O"),
            "I/Os",
            &cost,
        ));
    }
    // Each row's headline figure beside another figure of it in the same unit.
    let (_, unit) = rs[0].headline();
    let against = |iops: fn(&Row) -> Option<f64>, mib_s: fn(&Row) -> Option<f64>| {
        let items: Vec<(String, f64, Option<f64>)> = rs
            .iter()
            .map(|r| {
                let other = if unit == "IOPS" { iops(r) } else { mib_s(r) };
                (series_name(r, rs), r.headline().0, other)
            })
            .collect();
        items.iter().any(|i| i.2.is_some()).then_some(items)
    };
    if let Some(items) = against(|r| r.expected_iops, |r| r.expected_bw_mib_s) {
        s.push_str(&model_chart(
            &format!("{key}: measured vs model"),
            unit,
            &items,
        ));
    }
    if let Some(items) = against(|r| r.sim_iops, |r| r.sim_bw_mib_s) {
        s.push_str(&crate::svg::model_chart_as(
            &format!("{key}: measured vs simulated"),
            unit,
            &items,
            "sim",
        ));
    }
}

/// A fleet's hosts side by side: per case that ran on several hosts, each host's headline
/// figure and how far it is from the hosts' median (outliers are flagged by the
/// `fleet-outlier` rule). Nothing for a run on one machine.
fn fleet(s: &mut String, rows: &[Row]) {
    let mut by_case: BTreeMap<Natural, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.host.is_some()) {
        let key = format!("{} · {}", r.array_label, r.workload_label());
        by_case.entry(Natural(key)).or_default().push(r);
    }
    by_case.retain(|_, rs| rs.len() > 1);
    if by_case.is_empty() {
        return;
    }
    s.push_str("<h2>Fleet</h2><p class=\"note\">The same case on each host: its figure against the hosts' median. A host more than 20 % away, with three hosts or more, is flagged (fleet-outlier).</p><table><tr><th>case</th><th>host</th><th>figure</th><th>vs the fleet's median</th></tr>");
    for (key, rs) in &by_case {
        let values: Vec<f64> = rs.iter().map(|r| r.headline().0).collect();
        let median = raidlab_core::stats::median(&values).unwrap_or(0.0);
        for r in rs {
            let (v, unit) = r.headline();
            let vs = if median > 0.0 {
                crate::row::signed_pct(v / median - 1.0)
            } else {
                "–".into()
            };
            let flagged = r.anomalies.split_whitespace().any(|c| c == "fleet-outlier");
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{v:.1} {unit}</td><td{}>{vs}</td></tr>",
                esc(&key.0),
                esc(r.host.as_deref().unwrap_or("")),
                if flagged { " class=\"anom\"" } else { "" }
            );
        }
    }
    s.push_str("</table>");
}

/// The percentiles the report draws (fio writes these by default). The maximum is left
/// to the tables: one outlier would flatten every other point against the axis.
const PERCENTILES: [&str; 6] = ["p50", "p90", "p95", "p99", "p99.9", "p99.99"];

/// One workload's latency percentiles per array: a line per array over p50 … p99.99, one
/// chart per direction that has any.
fn percentile_charts(s: &mut String, key: &str, rs: &[&Row]) {
    type Get = fn(&Row) -> [Option<f64>; 6];
    let dirs: [(&str, Get); 2] = [
        ("read", |r| {
            [
                r.read_lat_p50_ms,
                r.read_lat_p90_ms,
                r.read_lat_p95_ms,
                r.read_lat_p99_ms,
                r.read_lat_p999_ms,
                r.read_lat_p9999_ms,
            ]
        }),
        ("write", |r| {
            [
                r.write_lat_p50_ms,
                r.write_lat_p90_ms,
                r.write_lat_p95_ms,
                r.write_lat_p99_ms,
                r.write_lat_p999_ms,
                r.write_lat_p9999_ms,
            ]
        }),
    ];
    let xs: Vec<String> = PERCENTILES.iter().map(|p| p.to_string()).collect();
    for (dir, get) in dirs {
        let series: Vec<(String, Vec<Option<f64>>)> = rs
            .iter()
            .map(|r| (series_name(r, rs), get(r).to_vec()))
            .filter(|(_, v)| v.iter().filter(|x| x.is_some()).count() > 1)
            .collect();
        if !series.is_empty() {
            s.push_str(&line_chart(
                "percentiles",
                &format!("{key}: {dir} latency percentiles"),
                "ms",
                &xs,
                &series,
            ));
        }
    }
}

/// A row's name in a chart of `rs`: its array (or source), with its target where the
/// same array was run on several.
fn series_name(r: &Row, rs: &[&Row]) -> String {
    let shared = rs.iter().filter(|o| o.array_label == r.array_label).count() > 1;
    if shared {
        format!("{} ({})", r.array_label, r.target)
    } else {
        r.array_label.clone()
    }
}

/// A latency histogram as bars: completions per power-of-two bucket, each labelled with
/// its upper bound.
fn histogram_chart(title: &str, buckets: &[(f64, u64)]) -> String {
    let bars: Vec<Bar> = buckets
        .iter()
        .map(|(ns, n)| (format!("≤{}", crate::svg::duration(*ns)), *n as f64, None))
        .collect();
    bar_chart("chart histogram", title, "I/Os", &bars)
}

/// Degraded and rebuilding arrays beside their healthy selves, per workload: the headline
/// figure and its share of the healthy one, how long md held an I/O before taking it
/// (fio's `slat`, reads' where there are any), the recovery's speed, and how long a whole
/// member takes to rebuild, loaded and idle (with a chart of the two), and, for simulated
/// raid5/6, the start the simulator gave them (the layout pass's stripe cache). Nothing
/// when every array is healthy.
fn failures(s: &mut String, groups: &Groups) {
    let failing = |r: &Row| r.state.as_deref().is_some_and(|st| st != "healthy");
    if !groups.values().flatten().any(|r| failing(r)) {
        return;
    }
    let _ = write!(s, "<h2>Failures and rebuilds</h2><p class=\"note\">Whole-member rebuild times are extrapolated: the recovery's speed (md's, or btrfs replace's) sampled across the member, loaded (the workload running) and idle; a re-added member's is its own resync. The probability of losing data is <code>raidlab risk</code>'s Monte Carlo ({} trials) with its defaults: AFR 1.57 % (Backblaze 2024), Weibull shape 1.12 (Elerath &amp; Pecht 2009), 1e-15 unrecoverable read errors per bit, 5 years, each rebuild as long as this case's; “&lt; {} %” where no trial lost data (the 95 % bound that leaves). A re-added member (<code>rejoin = \"re-add\"</code>) has none: its resync is what the bitmap flagged while it was away, and a member that fails for good comes back as a fresh disk, recovered whole, as in the fresh member's row.", RISK_TRIALS, 300.0 / RISK_TRIALS as f64);
    let simulated_parity = |r: &Row| {
        failing(r) && r.target == "sim" && matches!(r.level.as_deref(), Some("raid5" | "raid6"))
    };
    if groups.values().flatten().any(|r| simulated_parity(r)) {
        s.push_str(" On the sim target a raid5/6 with a member gone starts as the host and vm targets leave it before they measure: its stripe cache grown by their layout pass, which lets a recovery under a 4.1–6.15 kernel run faster than on an array long in service (<code>raidlab sim --in-service</code>; <code>raidlab risk</code> weighs that one).");
    }
    s.push_str("</p>");
    for (key, rs) in groups {
        if !rs.iter().any(|r| failing(r)) {
            continue;
        }
        let same_array = |a: &Row, b: &Row| {
            (&a.target, &a.level, &a.layout, a.chunk_kib, a.disks)
                == (&b.target, &b.level, &b.layout, b.chunk_kib, b.disks)
        };
        let _ = write!(s, "<h3>{}</h3><table><tr><th>array</th><th>state</th><th>{}</th><th>vs healthy</th><th title=\"fio's slat: how long submitting an I/O held fio's thread, on md while the I/O waited for stripe heads or the resync barrier\">held in submit, ms</th><th>rebuild MiB/s</th><th>whole member, loaded</th><th>idle</th><th>P(data loss, 5 years): loaded / idle rebuilds</th></tr>", esc(&key.0), rs[0].headline().1);
        let hours = |v: Option<f64>| v.map_or("–".to_string(), rebuild_time);
        let pct = |v: Option<f64>| v.map_or("–".to_string(), |p| esc(&loss(p)));
        let mut bars: Vec<Bar> = Vec::new();
        for r in rs.iter().filter(|r| failing(r)) {
            let healthy = rs
                .iter()
                .find(|h| h.state.as_deref() == Some("healthy") && same_array(h, r));
            let share = healthy
                .map(|h| h.headline().0)
                .filter(|&h| h > 0.0)
                .map_or("–".to_string(), |h| {
                    format!("{:.0} %", r.headline().0 / h * 100.0)
                });
            let state = match r.failed {
                Some(n) if n > 1 => format!("{} ({n} members)", r.state.as_deref().unwrap_or("")),
                _ => r.state.clone().unwrap_or_default(),
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{:.1}</td><td>{share}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.array_label),
                esc(&state),
                r.headline().0,
                r.read_slat_mean_ms
                    .or(r.write_slat_mean_ms)
                    .map_or("–".to_string(), |v| format!("{v:.2}")),
                r.rebuild_mib_s.map_or("–".to_string(), |v| format!("{v:.1}")),
                hours(r.rebuild_s_full),
                hours(r.rebuild_s_idle),
                if r.loss_5y.is_some() {
                    format!("{} / {}", pct(r.loss_5y), pct(r.loss_5y_idle))
                } else {
                    "–".to_string()
                },
            );
            for (what, v) in [("loaded", r.rebuild_s_full), ("idle", r.rebuild_s_idle)] {
                if let Some(v) = v {
                    let array = r.array_label.replacen(" rebuilding", "", 1);
                    bars.push((format!("{array} · {what}"), v, None));
                }
            }
        }
        s.push_str("</table>");
        if !bars.is_empty() {
            // One unit for the chart: the one its longest bar reads best in.
            let longest = bars.iter().map(|b| b.1).fold(0.0, f64::max);
            let (unit, per) = time_unit(longest);
            for b in &mut bars {
                b.1 /= per;
            }
            let _ = write!(
                s,
                "<div class=\"charts\">{}</div>",
                bar_chart(
                    "chart rebuild",
                    &format!("{key}: whole-member rebuild"),
                    unit,
                    &bars
                )
            );
        }
    }
}

/// The unit a span of `seconds` reads best in, and its seconds: a VM lab's 1 GiB member
/// recovers in seconds, a 16 TB disk in hours.
fn time_unit(seconds: f64) -> (&'static str, f64) {
    if seconds < 120.0 {
        ("seconds", 1.0)
    } else if seconds < 2.0 * 3600.0 {
        ("minutes", 60.0)
    } else {
        ("hours", 3600.0)
    }
}

/// A whole-member rebuild time in [`time_unit`]'s unit: `42.3 s`, `12.5 min`, `893.4 h`.
fn rebuild_time(seconds: f64) -> String {
    let (unit, per) = time_unit(seconds);
    let short = match unit {
        "seconds" => "s",
        "minutes" => "min",
        _ => "h",
    };
    format!("{:.1} {short}", seconds / per)
}

/// A probability of data loss from [`RISK_TRIALS`] trials, as a percentage with two
/// significant digits; when no trial lost data, the 95 % upper bound that leaves
/// (3 / trials, the rule of three) rather than a zero the Monte Carlo cannot show.
fn loss(p: f64) -> String {
    if p <= 0.0 {
        return format!("< {} %", 300.0 / RISK_TRIALS as f64);
    }
    let percent = p * 100.0;
    let digits = (1 - percent.log10().floor() as i32).max(0) as usize;
    format!("{percent:.digits$} %")
}

/// The table of every case, as the exports have it.
fn all_cases(s: &mut String, rows: &[Row]) {
    s.push_str("<h2>All cases</h2><table><tr>");
    for h in table_headings(rows) {
        let _ = write!(s, "<th>{h}</th>");
    }
    s.push_str("</tr>");
    for r in rows {
        s.push_str("<tr>");
        for (i, cell) in r.table_cells_among(rows).iter().enumerate() {
            if i == 0 {
                let _ = write!(s, "<td><code>{}</code></td>", esc(cell));
            } else {
                let _ = write!(s, "<td>{}</td>", esc(cell));
            }
        }
        s.push_str("</tr>");
    }
}

/// What each workload's healthy arrays trade: the fastest that survives a failed disk
/// (differences inside [`TIE`] are ties, named together, never a "best"), the layout with
/// the most capacity within 10 % of it, and a faster layout without redundancy only as what
/// it gives up. Degraded and rebuilding arrays are in the failures section, not here. The
/// report has no constraints to rank against (`raidlab advise` takes them), so this is the
/// trade-off, not a verdict.
fn summary(s: &mut String, groups: &Groups) {
    /// The highest headline among `rows`, and every row within [`TIE`] of it, fastest
    /// first.
    fn fastest<'a>(rows: &[&'a Row]) -> Option<(f64, Vec<&'a Row>)> {
        let top = rows.iter().map(|r| r.headline().0).fold(f64::NAN, f64::max);
        if top.is_nan() {
            return None;
        }
        let mut tied: Vec<&Row> = rows
            .iter()
            .copied()
            .filter(|r| r.headline().0 >= top * (1.0 - TIE))
            .collect();
        tied.sort_by(|a, b| b.headline().0.total_cmp(&a.headline().0));
        Some((top, tied))
    }
    s.push_str("<h2>Summary</h2><ul>");
    for (key, rs) in groups {
        // A together fleet's aggregate is several arrays' sum, not a layout's figure.
        let healthy: Vec<&Row> = rs
            .iter()
            .copied()
            .filter(|r| r.state.as_deref().is_none_or(|st| st == "healthy"))
            .filter(|r| r.target != raidlab_core::FLEET_AGGREGATE)
            .collect();
        let cap = |r: &Row| {
            r.usable_fraction
                .map(|f| {
                    format!(
                        ", {:.0} % of raw capacity usable, survives {} failed disk(s)",
                        f * 100.0,
                        r.fault_tolerance.unwrap_or(0)
                    )
                })
                .unwrap_or_default()
        };
        let model = |r: &Row| {
            r.deviation
                .map(|d| format!(" ({} against the model)", crate::row::signed_pct(d)))
                .unwrap_or_default()
        };
        let unit = healthy.first().map_or("", |r| r.headline().1);
        let names = |rows: &[&Row]| -> String {
            rows.iter()
                .map(|r| format!("<b>{}</b> ({:.1})", esc(&r.array_label), r.headline().0))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // Imported results know nothing of redundancy: their fastest is only the fastest.
        let known = healthy.iter().any(|r| r.fault_tolerance.is_some());
        let safe: Vec<&Row> = healthy
            .iter()
            .copied()
            .filter(|r| !known || r.fault_tolerance.unwrap_or(0) > 0)
            .collect();
        let lead = fastest(&safe);
        let _ = write!(s, "<li><b>{}</b>: ", esc(&key.0));
        if healthy.is_empty() {
            s.push_str(
                "no healthy array here to rank; the failures section compares the degraded and rebuilding ones.</li>",
            );
            continue;
        }
        match &lead {
            Some((v, tied)) if tied.len() > 1 => {
                let _ = write!(
                    s,
                    "{} {} tie within {:.0} % (the noise between runs), led by {:.1} {unit}{}.",
                    if known {
                        "surviving a failed disk,"
                    } else {
                        ""
                    },
                    names(tied),
                    TIE * 100.0,
                    v,
                    cap(tied[0])
                );
            }
            Some((v, tied)) => {
                let _ = write!(
                    s,
                    "{} <b>{}</b> with {:.1} {unit}{}{}.",
                    if known {
                        "the fastest that survives a failed disk is"
                    } else {
                        "the fastest is"
                    },
                    esc(&tied[0].array_label),
                    v,
                    cap(tied[0]),
                    model(tied[0])
                );
            }
            None => {
                let _ = write!(s, "no layout here survives a failed disk.");
            }
        }
        if let Some((v, tied)) = &lead {
            let thrifty = safe
                .iter()
                .filter(|r| r.headline().0 >= 0.9 * v && r.usable_fraction.is_some())
                .max_by(|a, b| {
                    a.usable_fraction
                        .unwrap_or(0.0)
                        .total_cmp(&b.usable_fraction.unwrap_or(0.0))
                });
            if let Some(t) =
                thrifty.filter(|t| tied.iter().all(|b| t.usable_fraction > b.usable_fraction))
            {
                let _ = write!(
                    s,
                    " Within 10 %, more capacity: <b>{}</b> ({:.1} {unit}{}).",
                    esc(&t.array_label),
                    t.headline().0,
                    cap(t)
                );
            }
        }
        // A faster array without redundancy is a trade, named with what it gives up.
        let unsafe_rows: Vec<&Row> = healthy
            .iter()
            .copied()
            .filter(|r| known && r.fault_tolerance == Some(0))
            .collect();
        if let (Some((u, fast)), best_safe) = (
            fastest(&unsafe_rows),
            lead.as_ref().map_or(0.0, |(v, _)| *v),
        ) {
            if u > best_safe * (1.0 + TIE) {
                let _ = write!(
                    s,
                    " Faster without redundancy: <b>{}</b> ({:.1} {unit}), which any failed disk destroys.",
                    esc(&fast[0].array_label),
                    u
                );
            }
        }
        s.push_str("</li>");
    }
    s.push_str("</ul>");
}

fn anomalies(s: &mut String, rows: &[Row], details: &[Detail]) {
    s.push_str("<h2>Anomalies</h2>");
    let flagged: Vec<usize> = (0..rows.len())
        .filter(|i| !rows[*i].anomalies.is_empty())
        .collect();
    if flagged.is_empty() {
        s.push_str("<p class=\"note\">No anomaly rule fired: no resync, bitmap, write cache, member, stripe-cache or stability problem was recorded, and every result is within 50 % of the model (or has no model).</p>");
        return;
    }
    s.push_str("<ul>");
    for i in flagged {
        let r = &rows[i];
        let _ = write!(
            s,
            "<li><b>{} · {}</b> (<code>{}</code>, {}):<ul>",
            esc(&r.array_label),
            esc(&r.workload_label()),
            esc(&r.case_id),
            esc(&r.target)
        );
        match details.get(i).filter(|d| !d.anomalies.is_empty()) {
            Some(d) => {
                for a in &d.anomalies {
                    let _ = write!(s, "<li class=\"anom\">{}</li>", esc(a));
                }
            }
            None => {
                let _ = write!(s, "<li class=\"anom\">{}</li>", esc(&r.anomalies));
            }
        }
        s.push_str("</ul></li>");
    }
    s.push_str("</ul>");
}

/// Chunk-size sweep and queue-depth curves, when the plan varies them (rows without a
/// value on the dimension, such as `single` for chunk, stay out).
fn sweeps(s: &mut String, rows: &[Row]) {
    for (dim, heading, fixed) in [
        (
            Dim::Chunk,
            "Chunk-size sweep",
            [Dim::Rw, Dim::Bs, Dim::Iodepth],
        ),
        (
            Dim::Iodepth,
            "Queue-depth curves",
            [Dim::Rw, Dim::Bs, Dim::Numjobs],
        ),
    ] {
        let mut groups: BTreeMap<Natural, Vec<&Row>> = BTreeMap::new();
        for r in rows.iter().filter(|r| dim.value(r).0 != "–") {
            let part = |d: &Dim| match d {
                Dim::Rw | Dim::Bs => d.value(r).0,
                _ => format!("{}={}", d.name(), d.value(r).0),
            };
            groups
                .entry(Natural(
                    fixed.iter().map(part).collect::<Vec<_>>().join(" "),
                ))
                .or_default()
                .push(r);
        }
        let mut charts = String::new();
        for (key, rs) in groups {
            if distinct(rs.iter().map(|r| dim.value(r).0)) < 2 {
                continue;
            }
            let metric = headline_metric(rs[0]);
            let sw = sweep(&rs, dim, metric);
            let title = format!("{key}: {metric} by {dim}");
            charts.push_str(&line_chart(
                "sweep",
                &title,
                metric.unit(),
                &sw.xs,
                &sw.series,
            ));
        }
        if !charts.is_empty() {
            let _ = write!(s, "<h2>{heading}</h2><div class=\"charts\">{charts}</div>");
        }
    }
}

/// Per case: model formula, anomalies, member I/O share, IOPS over time, environment and
/// the host target's commands.
fn cases(s: &mut String, rows: &[Row], details: &[Detail]) {
    if details.is_empty() {
        return;
    }
    s.push_str("<h2>Cases in detail</h2>");
    for (r, d) in rows.iter().zip(details) {
        let _ = write!(
            s,
            "<details><summary><b>{} · {}</b> <code>{}</code> {}</summary>",
            esc(&r.array_label),
            esc(&r.workload_label()),
            esc(&r.case_id),
            esc(&r.target)
        );
        if let Some(f) = &d.formula {
            let _ = write!(
                s,
                "<p>Model ({}): {}</p>",
                esc(r.model_basis.as_deref().unwrap_or("")),
                esc(f)
            );
        }
        for a in &d.anomalies {
            let _ = write!(s, "<p class=\"anom\">{}</p>", esc(a));
        }
        let label = format!("{} · {}", r.array_label, r.workload_label());
        if !d.members.is_empty() {
            s.push_str(&share_chart(
                &format!("{label}: I/O per member"),
                &d.members,
                d.members_counted.legend(),
            ));
        }
        if !d.iops_per_second.is_empty() {
            s.push_str(&time_chart(
                &format!("{label}: IOPS over time"),
                &d.iops_per_second,
            ));
        }
        if !d.lat_ms_per_second.is_empty() {
            s.push_str(&crate::svg::time_chart_unit(
                &format!("{label}: mean latency over time"),
                "ms",
                &d.lat_ms_per_second,
            ));
        }
        if !d.rebuild_mib_s_per_second.is_empty() {
            s.push_str(&crate::svg::time_chart_unit(
                &format!("{label}: recovery speed over time"),
                "MiB/s",
                &d.rebuild_mib_s_per_second,
            ));
        }
        for (dir, h) in ["read", "write"].iter().zip(&d.histograms) {
            if !h.is_empty() {
                s.push_str(&histogram_chart(
                    &format!("{label}: {dir} latency histogram"),
                    h,
                ));
            }
        }
        if !d.environment.is_empty() {
            let _ = write!(s, "<p>Environment</p><pre>{}</pre>", esc(&d.environment));
        }
        if !d.commands.is_empty() {
            let _ = write!(
                s,
                "<p>Commands (host target)</p><pre>{}</pre>",
                esc(&d.commands.join("\n"))
            );
        }
        s.push_str("</details>");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, iops: f64, tolerance: u32, usable: f64, state: &str) -> Row {
        Row {
            array_label: label.into(),
            rw: "randwrite".into(),
            bs: 4096,
            write_iops: Some(iops),
            fault_tolerance: Some(tolerance),
            usable_fraction: Some(usable),
            state: Some(state.into()),
            ..Row::default()
        }
    }

    /// Small members' rebuilds read in seconds or minutes, not as "0.0 h"; a loss no
    /// trial showed reads as the bound it leaves, not as a zero.
    #[test]
    fn rebuild_times_and_losses_keep_their_digits() {
        assert_eq!(rebuild_time(18.5), "18.5 s");
        assert_eq!(rebuild_time(600.0), "10.0 min");
        assert_eq!(rebuild_time(893.0 * 3600.0), "893.0 h");
        assert_eq!(loss(0.0), "< 0.003 %");
        assert_eq!(loss(0.00612), "0.61 %");
        assert_eq!(loss(1.2e-5), "0.0012 %");
        assert_eq!(loss(0.25), "25 %");
    }

    fn text(rows: &[Row]) -> String {
        let mut groups = BTreeMap::new();
        groups.insert(
            Natural("randwrite".to_string()),
            rows.iter().collect::<Vec<_>>(),
        );
        let mut s = String::new();
        summary(&mut s, &groups);
        s
    }

    /// raid0 is never the summary's pick: the fastest array that survives a failed disk
    /// is, and raid0 is named as the trade it is; arrays within 5 % of each other are a
    /// tie, named together; a degraded array's figure is not a candidate.
    #[test]
    fn the_summary_shows_the_trade_off_with_ties() {
        let s = text(&[
            row("raid0", 400.0, 0, 1.0, "healthy"),
            row("raid10 n2", 216.0, 1, 0.5, "healthy"),
            row("raid5", 114.0, 1, 0.83, "healthy"),
            row("raid10 n2", 900.0, 1, 0.5, "degraded"),
        ]);
        assert!(
            s.contains("the fastest that survives a failed disk is <b>raid10 n2</b> with 216.0"),
            "{s}"
        );
        assert!(
            s.contains("Faster without redundancy: <b>raid0</b> (400.0"),
            "{s}"
        );
        assert!(!s.contains("best"), "{s}");
        let s = text(&[
            row("raid6 a", 300.0, 2, 0.75, "healthy"),
            row("raid6 b", 290.0, 2, 0.75, "healthy"),
            row("raid10 n2", 200.0, 1, 0.5, "healthy"),
        ]);
        assert!(
            s.contains("<b>raid6 a</b> (300.0), <b>raid6 b</b> (290.0) tie within 5 %"),
            "{s}"
        );
        // Without a healthy array the summary ranks nothing, rather than claiming no
        // layout survives a failed disk.
        let s = text(&[
            row("raid6", 300.0, 2, 0.75, "rebuilding"),
            row("raid10 n2", 200.0, 1, 0.5, "degraded"),
        ]);
        assert!(s.contains("no healthy array here to rank"), "{s}");
        assert!(!s.contains("survives a failed disk"), "{s}");
    }
}
