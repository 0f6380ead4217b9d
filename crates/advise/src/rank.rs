//! From evaluations to advice: candidates that break a constraint are cut (each with the
//! constraint that cut it); the rest are ranked by the workloads' figures relative to the
//! best kept candidate (the geometric mean over workloads, so no workload dominates by its
//! unit), differences inside [`TIE`] are ties, and the Pareto front of performance,
//! usable capacity and risk is marked. The top pick comes with the commands that build it
//! and a plan file to verify it on real disks.

use crate::evaluate::{unit, Evaluation};
use crate::{Constraints, Need};
use raidlab_core::ArrayState;
use std::fmt::Write;

/// Score differences below this share are ties (the simulator's seed-to-seed spread is
/// under half of it: docs/advise.md).
pub use raidlab_core::stats::TIE;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Kept {
        /// 1 = best; tied candidates share a rank.
        rank: usize,
        tied: bool,
        /// No other kept candidate is at least as fast, as large and as safe, and better
        /// in one of them.
        pareto: bool,
        /// The workloads' figures relative to the best kept candidate's (geometric mean).
        score: f64,
    },
    Cut {
        /// The constraint, as its flag, and why.
        by: String,
    },
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Entry {
    #[serde(flatten)]
    pub eval: Evaluation,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// One line on why it wins or loses.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Advice {
    pub workloads: Vec<String>,
    pub units: Vec<String>,
    pub years: f64,
    /// Kept candidates by rank, then the cut ones.
    pub entries: Vec<Entry>,
}

/// The first constraint `e` breaks, as its flag and the figure that broke it.
fn cut_by(c: &Constraints, e: &Evaluation) -> Option<String> {
    if let Some(n) = c.min_failures.filter(|n| e.tolerance < *n) {
        return Some(format!(
            "--min-failures {n}: survives {} member failure{} in the worst case",
            e.tolerance,
            if e.tolerance == 1 { "" } else { "s" }
        ));
    }
    if let Some(b) = c.min_usable.filter(|b| e.usable < b.0) {
        return Some(format!(
            "--min-usable {}: {} usable",
            tib(b.0),
            tib(e.usable)
        ));
    }
    if let Some(h) = c.max_rebuild_h {
        match e.rebuild_h {
            None => {
                return Some(format!(
                    "--max-rebuild {h} h: no rebuild, a failure loses the array"
                ))
            }
            Some(r) if r > h => {
                return Some(format!(
                    "--max-rebuild {h} h: a member rebuilds in {r:.0} h under the workload"
                ))
            }
            _ => {}
        }
    }
    if let Some(p) = c.max_loss.filter(|p| e.loss > *p) {
        return Some(format!(
            "--max-loss {}: {} over the mission",
            percent(p),
            percent(e.loss)
        ));
    }
    if let Some(s) = c.min_degraded.filter(|s| e.degraded_share() < *s) {
        return Some(format!(
            "--min-degraded {s}: keeps {:.0} % of its healthy figure with a member gone",
            e.degraded_share() * 100.0
        ));
    }
    if let Some(s) = c.min_rebuilding.filter(|s| e.rebuilding_share() < *s) {
        return Some(format!(
            "--min-rebuilding {s}: keeps {:.0} % of its healthy figure while a member rebuilds",
            e.rebuilding_share() * 100.0
        ));
    }
    None
}

/// Rank `evals` against `need`'s constraints.
pub fn rank(need: &Need, evals: Vec<Evaluation>) -> Advice {
    let (kept, cut): (Vec<_>, Vec<_>) = evals
        .into_iter()
        .map(|e| (cut_by(&need.constraints, &e), e))
        .partition(|(c, _)| c.is_none());
    let nw = need.workloads.len();
    let best: Vec<f64> = (0..nw)
        .map(|w| kept.iter().map(|(_, e)| e.healthy[w]).fold(0.0, f64::max))
        .collect();
    let score = |e: &Evaluation| {
        let logs: f64 = (0..nw)
            .map(|w| (e.healthy[w] / best[w]).max(1e-12).ln())
            .sum();
        (logs / nw as f64).exp()
    };
    let mut kept: Vec<(f64, Evaluation)> = kept.into_iter().map(|(_, e)| (score(&e), e)).collect();
    kept.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.usable.cmp(&a.1.usable))
            .then(a.1.loss.total_cmp(&b.1.loss))
    });
    let dominated = |i: usize| {
        let (s, e) = &kept[i];
        kept.iter().enumerate().any(|(j, (s2, e2))| {
            j != i
                && *s2 >= *s
                && e2.usable >= e.usable
                && e2.loss <= e.loss
                && (*s2 > *s || e2.usable > e.usable || e2.loss < e.loss)
        })
    };
    let pareto: Vec<bool> = (0..kept.len()).map(|i| !dominated(i)).collect();
    // Ranks: a candidate within TIE of its group's leader shares the leader's rank.
    let mut ranks = Vec::with_capacity(kept.len());
    let mut leader = 0;
    for i in 0..kept.len() {
        if kept[leader].0 - kept[i].0 > TIE * kept[leader].0 {
            leader = i;
        }
        ranks.push(leader);
    }
    let tied = |i: usize| ranks.iter().filter(|&&r| r == ranks[i]).count() > 1;
    let mut entries: Vec<Entry> = Vec::new();
    for (i, (s, e)) in kept.iter().enumerate() {
        let reason = kept_reason(need, e, *s);
        entries.push(Entry {
            eval: e.clone(),
            verdict: Verdict::Kept {
                rank: ranks[i] + 1,
                tied: tied(i),
                pareto: pareto[i],
                score: *s,
            },
            reason,
        });
    }
    for (by, e) in cut {
        let by = by.expect("a cut candidate has its constraint");
        entries.push(Entry {
            reason: format!("cut by {by}"),
            eval: e,
            verdict: Verdict::Cut { by },
        });
    }
    Advice {
        workloads: need.workloads.iter().map(|w| w.label()).collect(),
        units: need
            .workloads
            .iter()
            .map(|w| unit(&w.bs).to_string())
            .collect(),
        years: need.years,
        entries,
    }
}

fn kept_reason(need: &Need, e: &Evaluation, score: f64) -> String {
    let mut s = format!(
        "{:.0} % of the best on these workloads, {} usable ({:.0} %), survives {}",
        score * 100.0,
        tib(e.usable),
        e.usable as f64 / e.raw as f64 * 100.0,
        e.tolerance
    );
    match (e.rebuild_h, e.tolerance) {
        (_, 0) => s.push_str(", no rebuild: any failure loses the array"),
        (Some(h), _) => {
            let _ = write!(
                s,
                ", keeps {:.0} % degraded, rebuild {h:.0} h under load",
                e.degraded_share() * 100.0
            );
            if let Some(i) = e.rebuild_idle_h {
                let _ = write!(s, " ({i:.0} h idle)");
            }
        }
        (None, _) => {}
    }
    let _ = write!(s, ", loss {} in {} y", loss(e), need.years);
    s
}

/// The probability of losing data, or below its 95 % bound when no trial lost any.
fn loss(e: &Evaluation) -> String {
    if e.loss == 0.0 {
        format!("< {}", percent(e.loss_interval.1))
    } else {
        percent(e.loss)
    }
}

/// Bytes as TiB (fio's and raidlab's sizes count in powers of 1024: `80t` is 80 TiB).
pub fn tib(b: u64) -> String {
    format!("{:.1} TiB", b as f64 / (1u64 << 40) as f64)
}

/// A probability as a percentage with the digits that matter.
pub fn percent(p: f64) -> String {
    if p == 0.0 {
        return "0 %".into();
    }
    let pct = p * 100.0;
    if pct >= 1.0 {
        format!("{pct:.1} %")
    } else {
        let digits = (-pct.log10()).ceil() as usize + 1;
        format!("{pct:.digits$} %")
    }
}

/// What the table is when the user gave no constraint.
const UNCONSTRAINED: &str = "No constraints given: the table is the trade-off between speed, capacity and risk, not a winner.\n\n";

impl Advice {
    /// The kept candidates, best first.
    pub fn kept(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.verdict, Verdict::Kept { .. }))
    }

    pub fn cut(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.verdict, Verdict::Cut { .. }))
    }

    /// The top pick: among the candidates tied for first, md's defaults where one is
    /// among them (nobody should run an unusual parity algorithm, a far or offset raid10,
    /// or an unusual chunk for a difference inside the noise; raid10's near copies, two or
    /// three, are its default), then the one least likely to lose data, then the largest.
    pub fn top(&self) -> Option<&Entry> {
        let unusual = |e: &Entry| {
            let c = &e.eval.candidate;
            let layout = c
                .layout
                .as_deref()
                .is_some_and(|l| l != "left-symmetric" && !l.starts_with('n'));
            let chunk = c.chunk.as_deref().is_some_and(|ch| ch != "512k");
            (layout, chunk)
        };
        self.kept()
            .filter(|e| matches!(e.verdict, Verdict::Kept { rank: 1, .. }))
            .min_by(|a, b| {
                unusual(a)
                    .cmp(&unusual(b))
                    .then(a.eval.loss.total_cmp(&b.eval.loss))
                    .then(b.eval.usable.cmp(&a.eval.usable))
            })
    }

    /// The table as rows of cells, a header first (`=n` ties, `◆` the Pareto front).
    pub fn rows(&self, limit: usize) -> Vec<Vec<String>> {
        let mut header = vec!["rank".to_string(), "layout".into()];
        for (w, u) in self.workloads.iter().zip(&self.units) {
            header.push(format!("{w} {u}"));
        }
        header.extend(
            [
                "usable",
                "survives",
                "degraded",
                "rebuild h",
                &format!("loss {} y", self.years),
            ]
            .map(String::from),
        );
        let mut rows = vec![header];
        for e in self.kept().take(limit) {
            let Verdict::Kept {
                rank, tied, pareto, ..
            } = e.verdict
            else {
                continue;
            };
            let mut r = vec![
                format!(
                    "{}{rank}{}",
                    if tied { "=" } else { "" },
                    if pareto { " ◆" } else { "" }
                ),
                e.eval.candidate.label(),
            ];
            r.extend(e.eval.healthy.iter().map(|f| format!("{f:.1}")));
            r.push(tib(e.eval.usable));
            r.push(e.eval.tolerance.to_string());
            r.push(if e.eval.tolerance == 0 {
                "–".into()
            } else {
                format!("{:.0} %", e.eval.degraded_share() * 100.0)
            });
            r.push(e.eval.rebuild_h.map_or("–".into(), |h| format!("{h:.0}")));
            r.push(loss(&e.eval));
            rows.push(r);
        }
        rows
    }

    /// A plain-text report: the ranked table (the first `limit`), the cut candidates
    /// grouped by constraint, and the top pick with its reason.
    pub fn table(&self, limit: usize, constrained: bool) -> String {
        let rows = self.rows(limit);
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut s = String::new();
        if !constrained {
            s.push_str(UNCONSTRAINED);
        }
        for (i, r) in rows.iter().enumerate() {
            let line: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    let pad = widths[c] - cell.chars().count();
                    if c < 2 {
                        format!("{cell}{}", " ".repeat(pad))
                    } else {
                        format!("{}{cell}", " ".repeat(pad))
                    }
                })
                .collect();
            let _ = writeln!(s, "{}", line.join("  ").trim_end());
            if i == 0 {
                let _ = writeln!(
                    s,
                    "{}",
                    "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
                );
            }
        }
        let kept = self.kept().count();
        if kept > limit {
            let _ = writeln!(
                s,
                "… and {} more kept (--top to see them, --format json for all)",
                kept - limit
            );
        }
        let _ = writeln!(
            s,
            "\n=n: tied within {:.0} % (inside the simulator's run-to-run spread); ◆: on the Pareto front of speed, capacity and risk.",
            TIE * 100.0
        );
        self.write_cut(&mut s);
        s
    }

    /// The cut candidates grouped by the constraint (and figure) that cut them.
    pub fn cut_groups(&self) -> Vec<(String, Vec<String>)> {
        let mut by: Vec<(String, Vec<String>)> = Vec::new();
        for e in self.cut() {
            let Verdict::Cut { by: why } = &e.verdict else {
                continue;
            };
            let label = e.eval.candidate.label();
            match by.iter_mut().find(|(w, _)| w == why) {
                Some((_, v)) => v.push(label),
                None => by.push((why.clone(), vec![label])),
            }
        }
        by
    }

    /// The cut candidates, one line per constraint and figure: the layouts it cut.
    fn write_cut(&self, s: &mut String) {
        let by = self.cut_groups();
        if !by.is_empty() {
            let _ = writeln!(s, "\nCut ({}):", self.cut().count());
        }
        for (why, v) in by {
            let _ = writeln!(s, "  {why}: {}", v.join(", "));
        }
    }

    /// The same as a Markdown table and lists.
    pub fn markdown(&self, limit: usize, constrained: bool) -> String {
        let rows = self.rows(limit);
        let mut s = String::new();
        if !constrained {
            s.push_str(UNCONSTRAINED);
        }
        let _ = writeln!(s, "| {} |", rows[0].join(" | "));
        let _ = writeln!(
            s,
            "|{}|",
            rows[0]
                .iter()
                .enumerate()
                .map(|(c, _)| if c < 2 { "---" } else { "--:" })
                .collect::<Vec<_>>()
                .join("|")
        );
        for r in &rows[1..] {
            let _ = writeln!(s, "| {} |", r.join(" | "));
        }
        let _ = writeln!(
            s,
            "\n`=n`: tied within {:.0} %; ◆: on the Pareto front of speed, capacity and risk.",
            TIE * 100.0
        );
        self.write_cut(&mut s);
        s
    }
}

/// The commands that build `e`'s array as the host target would (mdadm, its sysfs
/// knobs, mkfs), with `${DISK[i]}` for the members.
pub fn commands(need: &Need, e: &Entry, filesystem: &str) -> Vec<String> {
    use raidlab_backend::script::{case_steps, placeholder, Paths, Phase};
    let w = &need.workloads[0];
    let Ok(plan) = e
        .eval
        .candidate
        .plan(need, w, ArrayState::Healthy, filesystem)
        .build(std::path::Path::new("<advise>"))
    else {
        return Vec::new();
    };
    let case = &plan.cases()[0];
    let members: Vec<String> = (0..case.array.disks as usize).map(placeholder).collect();
    case_steps(case, &members, &Paths::script("result.json"))
        .into_iter()
        .filter(|s| {
            matches!(
                s.phase,
                Phase::Create | Phase::Resync | Phase::Mkfs | Phase::Mount
            )
        })
        .map(|s| s.shell())
        .collect()
}

/// A plan file that runs `e`'s layout healthy, degraded and rebuilding under the
/// workloads: add the devices and run it with `--target host` to check the advice on the
/// real disks (or as it stands on the simulator, or in the VM lab on emulated disks).
pub fn plan_file(need: &Need, e: &Entry, filesystem: &str) -> String {
    let c = &e.eval.candidate;
    let mut s = String::new();
    let _ = writeln!(s, "# raidlab advise's pick: {} — {}", c.label(), e.reason);
    let _ = writeln!(
        s,
        "# Check it on your disks: add devices = [\"/dev/disk/by-id/…\", …] to [disks], then"
    );
    let _ = writeln!(
        s,
        "#   raidlab run THIS.toml --target host --destroy-data-on SERIAL …"
    );
    let name: Vec<&str> = [
        c.btrfs().then_some("btrfs"),
        Some(c.level.as_str()),
        c.layout.as_deref(),
        c.chunk.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let _ = writeln!(s, "name = \"advise-{}-{}disks\"", name.join("-"), c.disks);
    let _ = writeln!(s, "[disks]\ncount = {}\nmodel = {:?}", c.disks, need.disk);
    let _ = writeln!(s, "\n[[arrays]]");
    if c.btrfs() {
        let _ = writeln!(s, "engine = \"btrfs\"");
    }
    let _ = writeln!(s, "level = {:?}", c.level);
    if let Some(l) = &c.layout {
        let _ = writeln!(s, "layout = {l:?}");
    }
    if let Some(ch) = &c.chunk {
        let _ = writeln!(s, "chunk = {ch:?}");
    }
    let _ = writeln!(s, "filesystem = {:?}", c.filesystem(filesystem));
    if c.redundant() && !c.btrfs() {
        let _ = writeln!(s, "bitmap = {:?}", c.bitmap);
    }
    if let Some(sc) = c.stripe_cache {
        let _ = writeln!(s, "stripe_cache = {sc}");
    }
    if c.redundant() {
        let _ = writeln!(s, "state = [\"healthy\", \"degraded\", \"rebuilding\"]");
    }
    for w in &need.workloads {
        let _ = writeln!(
            s,
            "\n[[workloads]]\nrw = {:?}\nbs = {:?}\niodepth = {}\nsize = {:?}\nruntime = {:?}",
            w.rw, w.bs, w.iodepth, need.size, need.plan_runtime
        );
        if let Some(m) = w.rwmixread {
            let _ = writeln!(s, "rwmixread = {m}");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Candidate, WorkloadSpec};

    fn eval(
        level: &str,
        layout: Option<&str>,
        iops: f64,
        usable: u64,
        tol: u32,
        loss: f64,
    ) -> Evaluation {
        Evaluation {
            candidate: Candidate {
                engine: "md".into(),
                disks: 8,
                level: level.into(),
                layout: layout.map(str::to_string),
                chunk: (level != "raid1").then(|| "512k".into()),
                bitmap: "none".into(),
                stripe_cache: None,
            },
            usable,
            raw: 100,
            tolerance: tol,
            healthy: vec![iops],
            degraded: vec![(tol > 0).then_some(iops / 2.0)],
            rebuilding: vec![(tol > 0).then_some(iops / 3.0)],
            rebuild_h: (tol > 0).then_some(30.0),
            rebuild_idle_h: (tol > 0).then_some(24.0),
            loss,
            loss_interval: (loss, loss),
        }
    }

    fn need() -> Need {
        Need::new(
            vec![8],
            "hdd-7200",
            vec!["randwrite:4k:qd4".parse::<WorkloadSpec>().unwrap()],
        )
    }

    /// Cuts name their constraint; ties share a rank; the Pareto front holds what no
    /// other kept candidate beats on speed, capacity and risk together; the top pick of a
    /// tie is md's default layout.
    #[test]
    fn cuts_ties_pareto_and_the_pick() {
        let mut n = need();
        n.constraints.min_failures = Some(2);
        let a = rank(
            &n,
            vec![
                eval("raid0", None, 900.0, 100, 0, 0.6),
                eval("raid10", Some("n2"), 600.0, 50, 1, 0.001),
                eval("raid6", Some("left-asymmetric"), 301.0, 75, 2, 0.02),
                eval("raid6", Some("left-symmetric"), 300.0, 75, 2, 0.03),
                eval("raid10", Some("n3"), 200.0, 33, 2, 0.0001),
                eval("raid1", None, 100.0, 12, 7, 0.0001),
            ],
        );
        let cut: Vec<String> = a.cut().map(|e| e.reason.clone()).collect();
        assert_eq!(cut.len(), 2, "{cut:?}");
        assert!(
            cut.iter()
                .all(|r| r.starts_with("cut by --min-failures 2: survives")),
            "{cut:?}"
        );
        let kept: Vec<(String, usize, bool, bool)> = a
            .kept()
            .map(|e| match e.verdict {
                Verdict::Kept {
                    rank, tied, pareto, ..
                } => (e.eval.candidate.label(), rank, tied, pareto),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            kept,
            [
                ("raid6 left-asymmetric 512k × 8".to_string(), 1, true, true),
                ("raid6 512k × 8".to_string(), 1, true, false),
                ("raid10 n3 512k × 8".to_string(), 3, false, true),
                ("raid1 × 8".to_string(), 4, false, false),
            ]
        );
        assert_eq!(a.top().unwrap().eval.candidate.label(), "raid6 512k × 8");
        // Without the constraint raid0 leads, on its own.
        let a = rank(
            &need(),
            vec![
                eval("raid0", None, 900.0, 100, 0, 0.6),
                eval("raid6", None, 300.0, 75, 2, 0.02),
            ],
        );
        assert!(matches!(
            a.kept().next().unwrap().verdict,
            Verdict::Kept {
                rank: 1,
                tied: false,
                ..
            }
        ));
    }

    #[test]
    fn percentages_keep_their_significant_digits() {
        assert_eq!(percent(0.0), "0 %");
        assert_eq!(percent(0.366), "36.6 %");
        assert_eq!(percent(0.00017), "0.017 %");
        assert_eq!(tib(3 << 40), "3.0 TiB");
    }
}
