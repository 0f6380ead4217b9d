//! Comparisons: what does a change cost? Two results directories case by case, or one
//! directory's cases paired by the dimension they differ in (`--by bitmap`), with medians,
//! the change, a bootstrap confidence interval, a rank test per metric and a correction for
//! testing many metrics and pairs at once.
//!
//! Statistics, and why: benchmark figures are rarely normal and repetitions are few, so the
//! test is the two-sided Mann–Whitney U (`raidlab_core::stats::mann_whitney`) and the
//! interval a percentile bootstrap of median(B) / median(A) − 1 (seeded: the same inputs
//! give the same interval). A comparison tests every metric of every pair; at α = 0.05,
//! 32 independent tests would show one or more false "significant" with probability 81 %,
//! so the p-values are adjusted with Holm's step-down method (as strong as Bonferroni's
//! guarantee on the family-wise error, never less powerful) and the verdict reads the
//! adjusted value.

use raidlab_core::{natural, stats, Figures};
use raidlab_store::{Store, StoreError};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Significance level of the adjusted p-values.
pub const ALPHA: f64 = 0.05;
/// Bootstrap resamples per interval.
const RESAMPLES: usize = 2000;

/// Why a comparison cannot be made; each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("unknown dimension `{name}`: use one of {known}")]
    UnknownDim { name: String, known: String },
    #[error("`{name}` names several dimensions ({matches}): write the one you mean in full")]
    AmbiguousDim { name: String, matches: String },
    #[error("{side} has {count} results with {key}: they differ in {differ}; add that to --match")]
    Ambiguous {
        side: &'static str,
        count: usize,
        key: String,
        differ: String,
    },
    #[error("no pair to compare: {0}")]
    Nothing(String),
}

/// One case on one target of a results directory, with its dimensions and the figures of
/// its repetitions.
#[derive(Debug, Clone)]
pub struct Side {
    pub case_id: String,
    pub label: String,
    /// `array.level`, `disks.model`, `workload.iodepth`, `target`, `source`, … → value.
    pub dims: BTreeMap<String, String>,
    pub figures: Vec<Figures>,
}

/// Every (case, target) of a store with its dimensions.
pub fn load(store: &Store) -> Result<Vec<Side>, CompareError> {
    let mut figures: BTreeMap<(String, String), Vec<Figures>> = BTreeMap::new();
    for r in store.results()? {
        figures
            .entry((r.case_id.0.clone(), r.target.clone()))
            .or_default()
            .push(r.figures);
    }
    let mut out = Vec::new();
    for c in store.all_case_rows()? {
        let mut dims = BTreeMap::new();
        match &c.case {
            Some(case) => flatten(
                &serde_json::to_value(case).unwrap_or_default(),
                "",
                &mut dims,
            ),
            None => {
                let w = serde_json::to_value(&c.workload).unwrap_or_default();
                flatten(&w, "workload.", &mut dims);
                dims.insert("source".into(), c.label.clone());
            }
        }
        dims.remove("id");
        for ((id, target), figs) in figures.range((c.id.0.clone(), String::new())..) {
            if *id != c.id.0 {
                break;
            }
            let mut dims = dims.clone();
            dims.insert("target".into(), target.clone());
            out.push(Side {
                case_id: id.clone(),
                label: c.label.clone(),
                dims,
                figures: figs.clone(),
            });
        }
    }
    Ok(out)
}

/// A JSON object's scalars as `section.key` → text (lists as their JSON).
fn flatten(v: &serde_json::Value, prefix: &str, out: &mut BTreeMap<String, String>) {
    use serde_json::Value;
    let Value::Object(m) = v else { return };
    for (k, v) in m {
        match v {
            Value::Object(_) => flatten(v, &format!("{prefix}{k}."), out),
            Value::String(s) => {
                out.insert(format!("{prefix}{k}"), s.clone());
            }
            Value::Null => {
                out.insert(format!("{prefix}{k}"), "–".into());
            }
            other => {
                out.insert(format!("{prefix}{k}"), other.to_string());
            }
        }
    }
}

/// The full name of dimension `name` among the sides' dimensions: itself, or the one
/// whose last part it is (`bitmap` is `array.bitmap`).
pub fn resolve(name: &str, sides: &[&Side]) -> Result<String, CompareError> {
    let known: BTreeSet<&String> = sides.iter().flat_map(|s| s.dims.keys()).collect();
    if known.contains(&name.to_string()) {
        return Ok(name.to_string());
    }
    let matches: Vec<&&String> = known
        .iter()
        .filter(|k| k.rsplit('.').next() == Some(name))
        .collect();
    match matches.as_slice() {
        [one] => Ok((**one).clone()),
        [] => Err(CompareError::UnknownDim {
            name: name.into(),
            known: known
                .iter()
                .map(|k| k.rsplit('.').next().unwrap_or(k))
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", "),
        }),
        many => Err(CompareError::AmbiguousDim {
            name: name.into(),
            matches: many
                .iter()
                .map(|k| k.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// Where two sides differ: `array.bitmap none → internal; target sim → vm`.
pub fn difference(a: &Side, b: &Side) -> String {
    let keys: BTreeSet<&String> = a.dims.keys().chain(b.dims.keys()).collect();
    let dash = "–".to_string();
    let parts: Vec<String> = keys
        .into_iter()
        .filter_map(|k| {
            let (x, y) = (
                a.dims.get(k).unwrap_or(&dash),
                b.dims.get(k).unwrap_or(&dash),
            );
            (x != y).then(|| format!("{k} {x} → {y}"))
        })
        .collect();
    if parts.is_empty() {
        "same configuration".into()
    } else {
        parts.join("; ")
    }
}

/// A pair: the baseline side and the side held against it.
pub type Pair<'a> = (&'a Side, &'a Side);

/// Pair A's sides with B's: by case id and target when `by` is empty, else by the values
/// of the named dimensions. Where each side ran on one target and the two differ (the
/// same plan with `--target vm` and on the simulator), by case id alone. Several sides
/// with one key on a side is refused, naming what tells them apart.
pub fn pair_two<'a>(
    a: &'a [Side],
    b: &'a [Side],
    by: &[String],
) -> Result<Vec<Pair<'a>>, CompareError> {
    let all: Vec<&Side> = a.iter().chain(b).collect();
    let dims = by
        .iter()
        .map(|d| resolve(d, &all))
        .collect::<Result<Vec<_>, _>>()?;
    let targets = |sides: &[Side]| -> BTreeSet<String> {
        sides.iter().map(|s| s.dims["target"].clone()).collect()
    };
    let (ta, tb) = (targets(a), targets(b));
    let across_targets = ta.len() == 1 && tb.len() == 1 && ta != tb;
    let key = |s: &Side| -> String {
        if dims.is_empty() && across_targets {
            format!("case {}", s.case_id)
        } else if dims.is_empty() {
            format!("case {} on {}", s.case_id, s.dims["target"])
        } else {
            dims.iter()
                .map(|d| format!("{d}={}", s.dims.get(d).map_or("–", String::as_str)))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    let index = |sides: &'a [Side], side: &'static str| {
        let mut m: BTreeMap<String, Vec<&'a Side>> = BTreeMap::new();
        for s in sides {
            m.entry(key(s)).or_default().push(s);
        }
        for (k, v) in &m {
            if v.len() > 1 {
                return Err(CompareError::Ambiguous {
                    side,
                    count: v.len(),
                    key: k.clone(),
                    differ: differing_dims(v),
                });
            }
        }
        Ok(m)
    };
    let (ia, ib) = (index(a, "A")?, index(b, "B")?);
    let pairs: Vec<Pair> = ia
        .iter()
        .filter_map(|(k, x)| Some((x[0], ib.get(k)?[0])))
        .collect();
    if pairs.is_empty() {
        return Err(CompareError::Nothing(if dims.is_empty() {
            "no case id is in both: compare results of the same plan (case ids hash the disks, array and workload), or pair cases by their dimensions with --match level,rw,bs,iodepth".into()
        } else {
            format!("no values of {} are in both", dims.join(", "))
        }));
    }
    Ok(pairs)
}

/// The dimensions in which `sides` do not all agree.
fn differing_dims(sides: &[&Side]) -> String {
    let keys: BTreeSet<&String> = sides.iter().flat_map(|s| s.dims.keys()).collect();
    keys.into_iter()
        .filter(|k| {
            let first = sides[0].dims.get(*k);
            sides.iter().any(|s| s.dims.get(*k) != first)
        })
        .map(|k| k.rsplit('.').next().unwrap_or(k).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Pair one directory's sides that differ only in `dim`: each value against the
/// `baseline` value (default: the first in natural order).
pub fn pair_by<'a>(
    sides: &'a [Side],
    dim: &str,
    baseline: Option<&str>,
) -> Result<Vec<Pair<'a>>, CompareError> {
    let all: Vec<&Side> = sides.iter().collect();
    let dim = resolve(dim, &all)?;
    let mut groups: BTreeMap<String, Vec<&Side>> = BTreeMap::new();
    for s in sides {
        let rest: Vec<String> = s
            .dims
            .iter()
            .filter(|(k, _)| **k != dim)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        groups.entry(rest.join(" ")).or_default().push(s);
    }
    let value = |s: &Side| s.dims.get(&dim).cloned().unwrap_or_else(|| "–".into());
    let mut pairs = Vec::new();
    for group in groups.values() {
        let mut values: Vec<String> = group.iter().map(|s| value(s)).collect();
        values.sort_by(|a, b| natural::cmp(a, b));
        values.dedup();
        let base_value = match baseline {
            Some(b) if values.iter().any(|v| v == b) => b.to_string(),
            Some(_) => continue,
            None => values[0].clone(),
        };
        let Some(base) = group.iter().find(|s| value(s) == base_value) else {
            continue;
        };
        for other in group.iter().filter(|s| value(s) != base_value) {
            pairs.push((*base, *other));
        }
    }
    if pairs.is_empty() {
        return Err(CompareError::Nothing(format!(
            "no two cases differ only in {dim}{}: run a plan that varies it (e.g. bitmap = [\"none\", \"internal\"])",
            baseline.map(|b| format!(" with {b} among its values")).unwrap_or_default()
        )));
    }
    Ok(pairs)
}

type Getter = fn(&Figures) -> Option<f64>;

/// The metrics compared: name, unit, getter.
const METRICS: [(&str, Getter); 8] = [
    ("read IOPS", |f| f.read.as_ref().map(|d| d.iops)),
    ("write IOPS", |f| f.write.as_ref().map(|d| d.iops)),
    ("read MiB/s", |f| {
        f.read.as_ref().map(|d| d.bw_bytes_s / 1048576.0)
    }),
    ("write MiB/s", |f| {
        f.write.as_ref().map(|d| d.bw_bytes_s / 1048576.0)
    }),
    ("read lat ms", |f| {
        f.read.as_ref().map(|d| d.lat_mean_ns / 1e6)
    }),
    ("write lat ms", |f| {
        f.write.as_ref().map(|d| d.lat_mean_ns / 1e6)
    }),
    ("read p99 ms", |f| {
        f.read.as_ref().and_then(|d| d.clat_p99_ns).map(|v| v / 1e6)
    }),
    ("write p99 ms", |f| {
        f.write
            .as_ref()
            .and_then(|d| d.clat_p99_ns)
            .map(|v| v / 1e6)
    }),
];

/// One metric of one pair, compared.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    pub a_case: String,
    pub b_case: String,
    /// The baseline's configuration label (`raid5 512k randwrite 4k qd8×1`).
    pub label: String,
    /// Where B differs from A.
    pub differs: String,
    pub metric: String,
    pub a_median: f64,
    pub b_median: f64,
    /// median(B) / median(A) − 1; `None` when A's median is 0.
    pub change: Option<f64>,
    /// 95 % percentile-bootstrap interval of the change (2 runs a side or more).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub a_runs: usize,
    pub b_runs: usize,
    /// Mann–Whitney U's two-sided p, and Holm's adjustment over every test of the comparison.
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    /// `significant`, `not significant`, or `not testable` (a side with one run).
    pub verdict: String,
}

/// Compare every metric of every pair, then adjust the p-values together.
pub fn lines(pairs: &[Pair]) -> Vec<Line> {
    let mut out = Vec::new();
    for (a, b) in pairs {
        for (name, get) in METRICS {
            let va: Vec<f64> = a.figures.iter().filter_map(get).collect();
            let vb: Vec<f64> = b.figures.iter().filter_map(get).collect();
            let (Some(ma), Some(mb)) = (stats::median(&va), stats::median(&vb)) else {
                continue;
            };
            let testable = va.len() >= 2 && vb.len() >= 2;
            let (ci_low, ci_high) = if testable {
                bootstrap(&va, &vb).unzip()
            } else {
                (None, None)
            };
            out.push(Line {
                a_case: a.case_id.clone(),
                b_case: b.case_id.clone(),
                label: a.label.clone(),
                differs: difference(a, b),
                metric: name.to_string(),
                a_median: ma,
                b_median: mb,
                change: (ma != 0.0).then(|| mb / ma - 1.0),
                ci_low,
                ci_high,
                a_runs: va.len(),
                b_runs: vb.len(),
                p: testable
                    .then(|| stats::mann_whitney(&va, &vb).map(|t| t.p))
                    .flatten(),
                p_adjusted: None,
                verdict: String::new(),
            });
        }
    }
    let adjusted = holm(&out.iter().map(|l| l.p).collect::<Vec<_>>());
    for (l, adj) in out.iter_mut().zip(adjusted) {
        l.p_adjusted = adj;
        l.verdict = match adj {
            Some(p) if p < ALPHA => "significant".into(),
            Some(_) => "not significant".into(),
            None => "not testable".into(),
        };
    }
    out
}

/// Holm's step-down adjustment of the p-values present: the i-th smallest (from 0) of m
/// becomes max over j ≤ i of min(1, (m − j) · p₍ⱼ₎).
pub fn holm(ps: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<(usize, f64)> = ps
        .iter()
        .enumerate()
        .filter_map(|(i, p)| Some((i, (*p)?)))
        .collect();
    order.sort_by(|a, b| a.1.total_cmp(&b.1));
    let m = order.len();
    let mut out = vec![None; ps.len()];
    let mut running = 0.0f64;
    for (j, (i, p)) in order.into_iter().enumerate() {
        running = running.max(((m - j) as f64 * p).min(1.0));
        out[i] = Some(running);
    }
    out
}

/// The 2.5th and 97.5th percentiles of median(B*) / median(A*) − 1 over resamples.
fn bootstrap(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let draw = |v: &[f64], rng: &mut rand_chacha::ChaCha8Rng| {
        let s: Vec<f64> = (0..v.len()).map(|_| v[rng.gen_range(0..v.len())]).collect();
        stats::median(&s)
    };
    let changes: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            let (ma, mb) = (draw(a, &mut rng)?, draw(b, &mut rng)?);
            (ma != 0.0).then(|| mb / ma - 1.0)
        })
        .collect();
    Some((
        stats::percentile(&changes, 2.5)?,
        stats::percentile(&changes, 97.5)?,
    ))
}

/// How the comparison is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    Table,
    Csv,
    Json,
    Markdown,
    Html,
}

impl CompareFormat {
    pub const NAMES: [&'static str; 5] = ["table", "csv", "json", "md", "html"];
}

impl std::str::FromStr for CompareFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(Self::Table),
            "csv" => Ok(Self::Csv),
            "json" => Ok(Self::Json),
            "md" | "markdown" => Ok(Self::Markdown),
            "html" => Ok(Self::Html),
            _ => Err(format!("use one of {}", Self::NAMES.join(", "))),
        }
    }
}

fn pct(v: Option<f64>) -> String {
    v.map(|c| format!("{:+.1} %", c * 100.0))
        .unwrap_or_else(|| "–".into())
}

fn interval(l: &Line) -> String {
    match (l.ci_low, l.ci_high) {
        (Some(lo), Some(hi)) => format!("[{:+.1}, {:+.1}] %", lo * 100.0, hi * 100.0),
        _ => "–".into(),
    }
}

fn p_text(l: &Line) -> String {
    match (l.p, l.p_adjusted) {
        (Some(p), Some(adj)) => format!("{} (p = {p:.3}, Holm {adj:.3})", l.verdict),
        _ => format!("{}, {} run", l.verdict, l.a_runs.min(l.b_runs)),
    }
}

/// The explanation printed above a table.
pub fn legend(tests: usize) -> String {
    format!(
        "change = median(B) / median(A) − 1, with a 95 % bootstrap interval; test: two-sided \
         Mann–Whitney U on the runs, p adjusted with Holm's method over the {tests} tests, \
         significant when the adjusted p < {ALPHA}\n(with 3 runs a side the smallest \
         possible p is 0.1: use repeat ≥ 4 to detect a change)"
    )
}

/// Render the lines; `title` says what was compared with what.
pub fn render(lines: &[Line], format: CompareFormat, title: &str) -> String {
    let tests = lines.iter().filter(|l| l.p.is_some()).count();
    let mut s = String::new();
    match format {
        CompareFormat::Table => {
            let _ = writeln!(s, "{title}\n{}\n", legend(tests));
            let _ = writeln!(
                s,
                "{:<36} {:<13} {:>12} {:>12} {:>9} {:>18}  verdict",
                "configuration", "metric", "A (median)", "B (median)", "change", "95 % interval"
            );
            let mut last = String::new();
            for l in lines {
                let pair = format!("{} → {}: {}", l.a_case, l.b_case, l.differs);
                if pair != last {
                    let _ = writeln!(s, "{pair}");
                    last = pair;
                }
                let _ = writeln!(
                    s,
                    "{:<36} {:<13} {:>12.2} {:>12.2} {:>9} {:>18}  {} (A {} run(s), B {})",
                    l.label,
                    l.metric,
                    l.a_median,
                    l.b_median,
                    pct(l.change),
                    interval(l),
                    p_text(l),
                    l.a_runs,
                    l.b_runs
                );
            }
        }
        CompareFormat::Csv => {
            s.push_str("a_case,b_case,label,differs,metric,a_median,b_median,change,ci_low,ci_high,a_runs,b_runs,p,p_adjusted,verdict\n");
            let o = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
            let q = |t: &str| {
                if t.contains([',', '"']) {
                    format!("\"{}\"", t.replace('"', "\"\""))
                } else {
                    t.to_string()
                }
            };
            for l in lines {
                let _ = writeln!(
                    s,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    l.a_case,
                    l.b_case,
                    q(&l.label),
                    q(&l.differs),
                    l.metric,
                    l.a_median,
                    l.b_median,
                    o(l.change),
                    o(l.ci_low),
                    o(l.ci_high),
                    l.a_runs,
                    l.b_runs,
                    o(l.p),
                    o(l.p_adjusted),
                    l.verdict
                );
            }
        }
        CompareFormat::Json => {
            s = serde_json::to_string_pretty(lines).expect("lines serialise");
            s.push('\n');
        }
        CompareFormat::Markdown => {
            let _ = writeln!(s, "# {title}\n\n{}\n", legend(tests).replace('\n', " "));
            s.push_str(&markdown_table(lines));
        }
        CompareFormat::Html => s = html(lines, title, tests),
    }
    s
}

fn markdown_table(lines: &[Line]) -> String {
    let mut s = String::from(
        "| A | B | B differs in | metric | A (median) | B (median) | change | 95 % interval | verdict |\n|---|---|---|---|--:|--:|--:|--:|---|\n",
    );
    for l in lines {
        let _ = writeln!(
            s,
            "| `{}` {} | `{}` | {} | {} | {:.2} | {:.2} | {} | {} | {} |",
            l.a_case,
            l.label,
            l.b_case,
            l.differs,
            l.metric,
            l.a_median,
            l.b_median,
            pct(l.change),
            interval(l),
            p_text(l)
        );
    }
    s
}

/// A self-contained page: per metric a chart of B's median (bars) against A's (ticks),
/// then the table.
fn html(lines: &[Line], title: &str, tests: usize) -> String {
    let esc = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut s = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{css}</style></head><body><h1>{t}</h1><p class=\"note\">{legend}</p><div class=\"charts\">",
        t = esc(title),
        css = crate::html::CSS,
        legend = esc(&legend(tests))
    );
    let mut metrics: Vec<&str> = lines.iter().map(|l| l.metric.as_str()).collect();
    metrics.dedup();
    let metrics: BTreeSet<&str> = metrics.into_iter().collect();
    for m in METRICS.iter().map(|m| m.0).filter(|m| metrics.contains(m)) {
        let items: Vec<(String, f64, Option<f64>)> = lines
            .iter()
            .filter(|l| l.metric == m)
            .map(|l| {
                (
                    format!("{} ({})", l.label, pct(l.change)),
                    l.b_median,
                    Some(l.a_median),
                )
            })
            .collect();
        let unit = m.rsplit(' ').next().unwrap_or("");
        s.push_str(&crate::svg::model_chart_as(
            &format!("{m}: B (bars) against A (ticks)"),
            unit,
            &items,
            "compare",
        ));
    }
    s.push_str("</div><table><tr><th>A</th><th>B</th><th>B differs in</th><th>metric</th><th>A (median)</th><th>B (median)</th><th>change</th><th>95 % interval</th><th>verdict</th></tr>");
    for l in lines {
        let _ = write!(
            s,
            "<tr><td><code>{}</code> {}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&l.a_case),
            esc(&l.label),
            esc(&l.b_case),
            esc(&l.differs),
            esc(&l.metric),
            l.a_median,
            l.b_median,
            pct(l.change),
            interval(l),
            esc(&p_text(l))
        );
    }
    s.push_str("</table></body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_adjusts_step_down() {
        // m = 4: 0.01·4, 0.02·3, 0.03·2 → max with the one before, 0.5·1.
        let adj = holm(&[Some(0.03), None, Some(0.01), Some(0.5), Some(0.02)]);
        let want = [Some(0.06), None, Some(0.04), Some(0.5), Some(0.06)];
        for (a, w) in adj.iter().zip(want) {
            assert_eq!(
                a.map(|x| (x * 1e9).round()),
                w.map(|x: f64| (x * 1e9).round())
            );
        }
        assert_eq!(holm(&[Some(0.9), Some(0.8)]), vec![Some(1.0), Some(1.0)]);
    }

    #[test]
    fn bootstrap_brackets_the_change() {
        let a = [100.0, 102.0, 98.0, 101.0];
        let b = [120.0, 118.0, 121.0, 119.0];
        let (lo, hi) = bootstrap(&a, &b).unwrap();
        let change = 119.5 / 100.5 - 1.0;
        assert!(lo <= change && change <= hi, "{lo} {change} {hi}");
        assert!(lo > 0.1 && hi < 0.25, "{lo} {hi}");
        assert_eq!(bootstrap(&a, &b), bootstrap(&a, &b), "seeded");
    }

    fn side(id: &str, dims: &[(&str, &str)], iops: &[f64]) -> Side {
        Side {
            case_id: id.into(),
            label: id.into(),
            dims: dims
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            figures: iops
                .iter()
                .map(|i| Figures {
                    write: Some(raidlab_core::DirectionFigures {
                        ios: 1,
                        iops: *i,
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
        }
    }

    /// The same plan on the VM lab and on the simulator pairs by case id; where a side
    /// holds several targets, the target is part of the key.
    #[test]
    fn one_target_against_another_pairs_by_case_id() {
        let vm = [
            side("a", &[("target", "vm")], &[10.0]),
            side("b", &[("target", "vm")], &[5.0]),
        ];
        let sim = [
            side("a", &[("target", "sim")], &[11.0]),
            side("c", &[("target", "sim")], &[5.0]),
        ];
        let pairs = pair_two(&vm, &sim, &[]).unwrap();
        let ids: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.case_id.as_str(), b.case_id.as_str()))
            .collect();
        assert_eq!(ids, [("a", "a")]);
        let both = [
            side("a", &[("target", "vm")], &[10.0]),
            side("a", &[("target", "sim")], &[11.0]),
        ];
        let pairs = pair_two(&both, &sim, &[]).unwrap();
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].0.dims["target"], "sim", "same target, same case");
    }

    #[test]
    fn by_pairs_what_differs_in_one_dimension_only() {
        let t = ("target", "sim");
        let sides = [
            side(
                "a",
                &[("array.bitmap", "none"), ("array.chunk", "64k"), t],
                &[10.0],
            ),
            side(
                "b",
                &[("array.bitmap", "internal"), ("array.chunk", "64k"), t],
                &[8.0],
            ),
            side(
                "c",
                &[("array.bitmap", "none"), ("array.chunk", "512k"), t],
                &[10.0],
            ),
            side(
                "d",
                &[("array.bitmap", "internal"), ("array.chunk", "512k"), t],
                &[9.0],
            ),
        ];
        let pairs = pair_by(&sides, "bitmap", None).unwrap();
        let ids: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(a, b)| (a.case_id.as_str(), b.case_id.as_str()))
            .collect();
        // "internal" sorts before "none": it is the baseline.
        assert_eq!(ids, [("d", "c"), ("b", "a")]);
        assert_eq!(
            difference(pairs[0].0, pairs[0].1),
            "array.bitmap internal → none"
        );
        let pairs = pair_by(&sides, "bitmap", Some("none")).unwrap();
        assert_eq!(pairs[0].0.case_id, "c");
        assert!(matches!(
            pair_by(&sides, "speed", None),
            Err(CompareError::UnknownDim { .. })
        ));
        // Matching two directories on chunk alone: two sides per chunk in each.
        let err = pair_two(&sides, &sides, &["chunk".into()]).unwrap_err();
        assert!(err.to_string().contains("they differ in bitmap"), "{err}");
        let pairs = pair_two(&sides[..2], &sides[2..], &["bitmap".into()]).unwrap();
        assert_eq!(pairs.len(), 2);
    }
}
