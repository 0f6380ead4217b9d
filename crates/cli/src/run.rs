//! `raidlab run`: expand the plan, run every unfinished case on the target, commit each
//! result the moment it ends, write the report.
//!
//! Workers run cases (the simulator: one per core); the main thread alone writes the
//! store, so a result is committed as soon as it arrives and an interrupted run loses at
//! most the cases in flight. `--resume` skips every (case, repetition) already stored.

use crate::args::RunArgs;
use anyhow::{bail, Context, Result};
use raidlab_core::{Case, Plan};
use raidlab_store::{ExperimentMeta, NewResult, Store};
use raidlab_target::Target;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub fn run(a: RunArgs) -> Result<()> {
    let plan = Plan::load(&a.plan)?;
    let target_name = a
        .target
        .clone()
        .or_else(|| plan.run.target.clone())
        .unwrap_or_else(|| "sim".into());
    let threads = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let target = raidlab_target::by_name(&target_name, a.seed.unwrap_or(plan.run.seed), threads)?;
    let out: PathBuf = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&plan.name));

    let exists = out.join("raidlab.sqlite").exists();
    if exists && !a.resume {
        bail!(
            "{} already holds the results of a run; nothing there is ever overwritten.\n  To continue that run: raidlab run {} --resume --out {}\n  To start a new one:    raidlab run {} --out NEW_DIR",
            out.display(),
            a.plan.display(),
            out.display(),
            a.plan.display()
        );
    }
    let meta = ExperimentMeta {
        name: plan.name.clone(),
        plan_path: Some(a.plan.display().to_string()),
        plan_text: std::fs::read_to_string(&a.plan).ok(),
        target: target_name.clone(),
        created_unix: unix_now(),
        raidlab_version: env!("CARGO_PKG_VERSION").into(),
    };
    let mut store = if exists {
        Store::open(&out)?
    } else {
        Store::create(&out, &meta)?
    };
    store.add_cases(plan.cases())?;
    let finished = store.finished()?;
    let todo: Vec<(&Case, u32)> = (1..=plan.run.repeat)
        .flat_map(|rep| plan.cases().iter().map(move |c| (c, rep)))
        .filter(|(c, rep)| !finished.contains(&(c.id.clone(), *rep)))
        .collect();
    let skipped = plan.cases().len() * plan.run.repeat as usize - todo.len();
    if skipped > 0 {
        eprintln!(
            "resuming: {skipped} result(s) already stored, {} to run",
            todo.len()
        );
    }

    // Ctrl-C / SIGTERM: take no new case, commit the ones in flight, write the report.
    // A second signal ends the process at once (results already committed stay).
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
        signal_hook::flag::register(sig, Arc::clone(&stop))?;
    }

    let pb = crate::progress::bar(todo.len() as u64, a.quiet);
    pb.set_message(format!("target {target_name}"));
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let mut failures = Vec::new();
    std::thread::scope(|s| -> Result<()> {
        for _ in 0..target.parallel().min(todo.len().max(1)) {
            let tx = tx.clone();
            let (todo, next, target, stop) = (&todo, &next, &target, &stop);
            s.spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(case, rep)) = todo.get(i) else {
                    break;
                };
                let started = unix_now();
                let t0 = Instant::now();
                let out = target.run_case(case, rep);
                if tx.send((case, rep, started, t0.elapsed(), out)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (case, rep, started, wall, out) in rx {
            match out {
                Ok(o) => {
                    commit(
                        &mut store,
                        target.as_ref(),
                        case,
                        rep,
                        started,
                        wall.as_nanos() as u64,
                        o,
                    )?;
                    pb.set_message(format!("{} done", case.label()));
                }
                Err(e) => failures.push(format!(
                    "case {} ({}) repetition {rep}: {e}",
                    case.id,
                    case.label()
                )),
            }
            pb.inc(1);
        }
        Ok(())
    })?;
    pb.finish_and_clear();

    let built = crate::rows::build(&store)?;
    let rows = built.rows;
    let html = raidlab_report::html::render_report(&raidlab_report::Report {
        title: &plan.name,
        rows: &rows,
        details: &built.details,
        axes: None,
    });
    let report = out.join("report.html");
    std::fs::write(&report, html).with_context(|| format!("cannot write {}", report.display()))?;
    print!(
        "{}",
        String::from_utf8_lossy(&raidlab_report::export(
            &rows,
            raidlab_report::Format::Markdown,
            &plan.name
        ))
    );
    eprintln!(
        "\nresults: {}\nreport:  {}",
        out.display(),
        report.display()
    );
    if stop.load(Ordering::SeqCst) {
        bail!(
            "interrupted: the results finished so far are stored in {}; continue with\n  raidlab run {} --resume --out {}",
            out.display(),
            a.plan.display(),
            out.display()
        );
    }
    if !failures.is_empty() {
        bail!(
            "{} case(s) failed (the others are stored; fix and rerun with --resume):\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    }
    Ok(())
}

fn commit(
    store: &mut Store,
    target: &dyn Target,
    case: &Case,
    rep: u32,
    started: i64,
    wall_ns: u64,
    o: raidlab_target::CaseOutput,
) -> Result<()> {
    let text = String::from_utf8_lossy(&o.fio_json);
    let parsed = raidlab_fio::parse_output(&text)
        .with_context(|| format!("case {}: the target's fio output does not parse", case.id))?;
    store.commit_result(&NewResult {
        case_id: case.id.clone(),
        repetition: rep,
        target: target.name().into(),
        figures: parsed.figures,
        raw_json: o.fio_json,
        logs: o.logs,
        environment: o.environment,
        started_unix: started,
        wall_ns,
        source: None,
    })?;
    Ok(())
}
