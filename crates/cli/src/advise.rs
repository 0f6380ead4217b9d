//! `raidlab advise`: the flags become a [`raidlab_advise::Need`]; the candidates are
//! simulated (with a progress bar and an ETA), ranked, printed, and the top pick's
//! commands and plan file given.

use crate::args::AdviseArgs;
use anyhow::{bail, Context, Result};
use raidlab_advise::{cache, rank, Need};
use std::io::Write;

pub fn advise(a: Box<AdviseArgs>) -> Result<()> {
    let disks = raidlab_advise::parse_disk_counts(&a.disks).map_err(anyhow::Error::msg)?;
    let mut workloads = a.workloads.clone();
    if let Some(path) = &a.workloads_from {
        for w in plan_workloads(path)? {
            if !workloads.contains(&w) {
                workloads.push(w);
            }
        }
    }
    let mut need = Need::new(disks, &a.disk, workloads);
    need.engines = a.engines.iter().map(|e| e.to_string()).collect();
    need.chunks = a.chunks.iter().map(|c| c.trim().to_string()).collect();
    need.bitmaps = a.bitmaps.iter().map(|b| b.trim().to_string()).collect();
    need.stripe_caches = a.stripe_caches.clone();
    need.size = a.size.clone();
    need.runtime = a.runtime.clone();
    need.plan_runtime = a.plan_runtime.clone();
    need.kernel = a.kernel.clone();
    need.years = a.years;
    need.seed = a.seed;
    if !(a.years > 0.0 && a.years.is_finite()) {
        bail!("--years {}: must be a number above 0", a.years);
    }
    need.constraints = raidlab_advise::Constraints {
        min_usable: a.min_usable,
        min_failures: Some(a.min_failures),
        max_rebuild_h: a.max_rebuild.map(|n| n.0 as f64 / 3.6e12),
        max_loss: a.max_loss,
        min_degraded: a.min_degraded,
        min_rebuilding: a.min_rebuilding,
    };
    need.cache = if a.no_cache {
        None
    } else {
        a.cache.clone().or_else(cache::default_dir)
    };
    let evals = match &a.results {
        Some(dir) => measured(dir, &mut need, a.format == "json")?,
        None => searched(&need, &a)?,
    };
    let advice = rank::rank(&need, evals);
    // Surviving one failure is the default, not a choice the user made.
    let constrained = a.min_usable.is_some()
        || a.min_failures != 1
        || a.max_rebuild.is_some()
        || a.max_loss.is_some()
        || a.min_degraded.is_some()
        || a.min_rebuilding.is_some();
    let mut out = std::io::stdout().lock();
    match a.format.as_str() {
        "json" => {
            serde_json::to_writer_pretty(&mut out, &advice)?;
            writeln!(out)?;
        }
        "md" => write!(out, "{}", advice.markdown(a.top, constrained))?,
        _ => write!(out, "{}", advice.table(a.top, constrained))?,
    }
    if let Some(path) = &a.output {
        crate::run::write_html(path, &page(&advice, &need, &a, constrained))?;
        if a.format != "json" {
            writeln!(out, "Page: {}", path.display())?;
        }
    }
    let Some(top) = advice.top() else {
        if a.format != "json" {
            writeln!(
                out,
                "\nNo layout meets every constraint: loosen the one that cut the most (above)."
            )?;
        }
        return Ok(());
    };
    if a.format != "json" {
        writeln!(
            out,
            "\nTop pick: {} — {}",
            top.eval.candidate.label(),
            top.reason
        )?;
        writeln!(
            out,
            "Build it (DISK=(…) your {} disks, by id):",
            top.eval.candidate.disks
        )?;
        for line in rank::commands(&need, top, &a.filesystem) {
            writeln!(out, "  {line}")?;
        }
    }
    if let Some(path) = &a.plan_out {
        std::fs::write(path, rank::plan_file(&need, top, &a.filesystem))
            .with_context(|| format!("writing the plan file {}", path.display()))?;
        if a.format != "json" {
            writeln!(
                out,
                "Plan to check it: {} (add your devices, then raidlab run {} --target host)",
                path.display(),
                path.display()
            )?;
        }
    }
    Ok(())
}

/// Every layout the flags allow, simulated (with a progress bar).
fn searched(need: &Need, a: &AdviseArgs) -> Result<Vec<raidlab_advise::Evaluation>> {
    let candidates = raidlab_advise::candidates(need);
    // Every candidate must be a plan the simulator takes: the first one that is not
    // names the flag to change (a bad --disk, --chunks, --size, --kernel).
    for c in &candidates {
        for w in &need.workloads {
            c.case(need, w, raidlab_core::ArrayState::Healthy)?;
        }
    }
    let pb = crate::progress::bar(0, a.quiet || a.format == "json");
    pb.set_message(format!("{} layouts", candidates.len()));
    let progress = |done: usize, total: usize| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    };
    let evals = raidlab_advise::evaluate_all(need, &candidates, &progress)?;
    pb.finish_and_clear();
    Ok(evals)
}

/// The arrays of a results directory, from its figures; `need` takes its workloads and
/// disk counts.
fn measured(
    dir: &std::path::Path,
    need: &mut Need,
    quiet: bool,
) -> Result<Vec<raidlab_advise::Evaluation>> {
    use raidlab_advise::measured::{evaluate_measured, Measured};
    let store = raidlab_store::Store::open(dir)
        .with_context(|| format!("cannot open results directory {}", dir.display()))?;
    let cases: std::collections::BTreeMap<String, raidlab_core::Case> = store
        .all_case_rows()?
        .into_iter()
        .filter_map(|c| Some((c.id.0, c.case?)))
        .collect();
    let built = raidlab_report::build(&store)?;
    let measured: Vec<Measured> = built
        .rows
        .iter()
        .filter_map(|r| {
            Some(Measured {
                case: cases.get(&r.case_id)?.clone(),
                figure: r.headline().0,
                rebuild_s: r.rebuild_s_full,
            })
        })
        .collect();
    if measured.is_empty() {
        bail!(
            "{} holds no array results (imports have no array to advise on): run a plan into it first",
            dir.display()
        );
    }
    let m = evaluate_measured(need, &measured)?;
    if !m.skipped.is_empty() && !quiet {
        raidlab_backend::note!(
            "left out, as they lack a healthy result for a workload: {}",
            m.skipped.join(", ")
        );
    }
    let evals = m.evaluations;
    need.workloads = m.workloads;
    need.disks = evals.iter().map(|e| e.candidate.disks).collect();
    need.disks.sort();
    need.disks.dedup();
    if let Some(model) = measured.iter().find_map(|m| m.case.disks.model.clone()) {
        need.disk = model;
    }
    Ok(evals)
}

/// The advice as a self-contained page: per workload a chart of the ranked layouts'
/// figures, the ranking, what was cut and why, and the top pick's commands.
fn page(
    advice: &rank::Advice,
    need: &raidlab_advise::Need,
    a: &AdviseArgs,
    constrained: bool,
) -> String {
    let esc = |t: &str| {
        t.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut body = format!(
        "<p class=\"note\">{} disk(s) of {} · {} over {} years</p>",
        esc(&a.disks),
        esc(&a.disk),
        esc(&advice.workloads.join(", ")),
        advice.years
    );
    if !constrained {
        body.push_str("<p>No constraints given: the table is the trade-off between speed, capacity and risk, not a winner.</p>");
    }
    body.push_str("<div class=\"charts\">");
    for (w, (name, unit)) in advice.workloads.iter().zip(&advice.units).enumerate() {
        let bars: Vec<raidlab_report::Bar> = advice
            .kept()
            .take(a.top)
            .map(|e| (e.eval.candidate.label(), e.eval.healthy[w], None))
            .collect();
        if !bars.is_empty() {
            body.push_str(&raidlab_report::bar_chart(
                "chart advise",
                &format!("{name}: the kept layouts, ranked"),
                unit,
                &bars,
            ));
        }
    }
    body.push_str("</div><h2>Ranking</h2><table>");
    for (i, r) in advice.rows(a.top).iter().enumerate() {
        let cell = if i == 0 { "th" } else { "td" };
        body.push_str("<tr>");
        for c in r {
            body.push_str(&format!("<{cell}>{}</{cell}>", esc(c)));
        }
        body.push_str("</tr>");
    }
    body.push_str(&format!(
        "</table><p class=\"note\">=n: tied within {:.0} % (the simulator's run-to-run spread); ◆: on the Pareto front of speed, capacity and risk.</p>",
        raidlab_core::stats::TIE * 100.0
    ));
    let cut = advice.cut_groups();
    if !cut.is_empty() {
        body.push_str("<h2>Cut</h2><ul>");
        for (why, layouts) in cut {
            body.push_str(&format!(
                "<li><b>{}</b>: {}</li>",
                esc(&why),
                esc(&layouts.join(", "))
            ));
        }
        body.push_str("</ul>");
    }
    if let Some(top) = advice.top() {
        body.push_str(&format!(
            "<h2>Top pick: {}</h2><p>{}</p><pre>{}</pre>",
            esc(&top.eval.candidate.label()),
            esc(&top.reason),
            esc(&rank::commands(need, top, &a.filesystem).join("\n"))
        ));
    } else {
        body.push_str("<p>No layout meets every constraint: loosen the one that cut the most.</p>");
    }
    raidlab_report::html::page("raidlab advise", &body)
}

/// The distinct workloads of a plan file, as advise's compact specs. A plan whose
/// workloads run several jobs is refused: advise simulates one job per workload.
fn plan_workloads(path: &std::path::Path) -> Result<Vec<raidlab_advise::WorkloadSpec>> {
    let plan = raidlab_core::Plan::load(path)?;
    let mut out: Vec<raidlab_advise::WorkloadSpec> = Vec::new();
    for case in plan.cases() {
        let w = &case.workload;
        if w.numjobs > 1 {
            bail!(
                "--workloads-from {}: a workload runs numjobs = {}; advise simulates one job per workload with its iodepth: set numjobs = 1 there, or give the workload as --workload rw:bs:qdN",
                path.display(),
                w.numjobs
            );
        }
        let mixed = matches!(w.rw, raidlab_core::Rw::RandRw | raidlab_core::Rw::Rw);
        let spec = raidlab_advise::WorkloadSpec {
            rw: w.rw.to_string(),
            bs: w.bs.to_fio(),
            iodepth: w.iodepth,
            rwmixread: mixed.then_some(w.rwmixread),
        };
        if !out.contains(&spec) {
            out.push(spec);
        }
    }
    Ok(out)
}
