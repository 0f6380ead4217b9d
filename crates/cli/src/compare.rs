//! `raidlab compare A B`: two results directories side by side, case by case, with a
//! significance test on the repetitions — a change is only news when it is larger than
//! the runs' own spread.
//!
//! Cases are matched by case id (same configuration, any target). The test is the
//! two-sided Mann–Whitney U (`raidlab_core::stats::mann_whitney`): rank-based, so it
//! does not assume benchmark figures are normal. With fewer than 2 runs on a side nothing
//! can be tested and the output says so.

use crate::args::CompareArgs;
use anyhow::{Context, Result};
use raidlab_core::{stats, Figures};
use raidlab_store::Store;
use std::collections::BTreeMap;
use std::io::Write;

/// Significance level.
pub const ALPHA: f64 = 0.05;

type Getter = fn(&Figures) -> Option<f64>;

/// The metrics compared.
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

/// What the test says about one metric's change.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A side has fewer than 2 runs.
    NotTestable {
        runs: usize,
    },
    Significant {
        p: f64,
    },
    NotSignificant {
        p: f64,
    },
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::NotTestable { runs } => write!(f, "not testable, {runs} run"),
            Verdict::Significant { p } => write!(f, "significant (p = {p:.3})"),
            Verdict::NotSignificant { p } => write!(f, "not significant (p = {p:.3})"),
        }
    }
}

pub fn verdict(a: &[f64], b: &[f64]) -> Verdict {
    let runs = a.len().min(b.len());
    if runs < 2 {
        return Verdict::NotTestable { runs };
    }
    match stats::mann_whitney(a, b) {
        Some(t) if t.p < ALPHA => Verdict::Significant { p: t.p },
        Some(t) => Verdict::NotSignificant { p: t.p },
        None => Verdict::NotTestable { runs: 0 },
    }
}

/// case id → (label, figures of every run).
fn load(dir: &std::path::Path) -> Result<BTreeMap<String, (String, Vec<Figures>)>> {
    let store = Store::open(dir)
        .with_context(|| format!("cannot open results directory {}", dir.display()))?;
    let labels: BTreeMap<String, String> = store
        .all_case_rows()?
        .into_iter()
        .map(|c| (c.id.0, c.label))
        .collect();
    let mut out: BTreeMap<String, (String, Vec<Figures>)> = BTreeMap::new();
    for r in store.results()? {
        let label = labels.get(&r.case_id.0).cloned().unwrap_or_default();
        out.entry(r.case_id.0)
            .or_insert_with(|| (label, Vec::new()))
            .1
            .push(r.figures);
    }
    Ok(out)
}

pub fn compare(a: CompareArgs) -> Result<()> {
    let left = load(&a.a)?;
    let right = load(&a.b)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "A = {}\nB = {}\nchange = median(B) / median(A) − 1; test: two-sided Mann–Whitney U on the runs, significant when p < {ALPHA}\n(with 3 runs a side the smallest possible p is 0.1: use repeat ≥ 4 to detect a change)\n",
        a.a.display(),
        a.b.display()
    )?;
    writeln!(
        out,
        "{:<18} {:<36} {:<13} {:>12} {:>12} {:>9}  verdict",
        "case", "configuration", "metric", "A (median)", "B (median)", "change"
    )?;
    let mut matched = 0;
    for (id, (label, fa)) in &left {
        let Some((_, fb)) = right.get(id) else {
            continue;
        };
        matched += 1;
        for (name, get) in METRICS {
            let va: Vec<f64> = fa.iter().filter_map(get).collect();
            let vb: Vec<f64> = fb.iter().filter_map(get).collect();
            let (Some(ma), Some(mb)) = (stats::median(&va), stats::median(&vb)) else {
                continue;
            };
            let change = if ma != 0.0 {
                format!("{:+.1} %", (mb / ma - 1.0) * 100.0)
            } else {
                "–".into()
            };
            writeln!(
                out,
                "{:<18} {:<36} {:<13} {:>12.2} {:>12.2} {:>9}  {} (A {} run(s), B {})",
                id,
                label,
                name,
                ma,
                mb,
                change,
                verdict(&va, &vb),
                va.len(),
                vb.len()
            )?;
        }
    }
    let only = |x: &BTreeMap<String, (String, Vec<Figures>)>,
                y: &BTreeMap<String, (String, Vec<Figures>)>| {
        x.iter()
            .filter(|(k, _)| !y.contains_key(*k))
            .map(|(k, v)| format!("{k} ({})", v.0))
            .collect::<Vec<_>>()
    };
    let (oa, ob) = (only(&left, &right), only(&right, &left));
    writeln!(out, "\n{matched} case(s) in both")?;
    if !oa.is_empty() {
        writeln!(out, "only in A: {}", oa.join(", "))?;
    }
    if !ob.is_empty() {
        writeln!(out, "only in B: {}", ob.join(", "))?;
    }
    if matched == 0 {
        anyhow::bail!(
            "no case id is in both {} and {}: compare results of the same plan (case ids hash the disks, array and workload)",
            a.a.display(),
            a.b.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(verdict(&[1.0], &[2.0]), Verdict::NotTestable { runs: 1 });
        assert_eq!(verdict(&[1.0], &[2.0]).to_string(), "not testable, 1 run");
        let sep = verdict(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!(matches!(sep, Verdict::Significant { p } if (p - 2.0 / 70.0).abs() < 1e-12));
        let three = verdict(&[1.0, 2.0, 3.0], &[5.0, 6.0, 7.0]);
        assert!(matches!(three, Verdict::NotSignificant { p } if (p - 0.1).abs() < 1e-12));
    }
}
