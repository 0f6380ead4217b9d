//! `raidlab run`: expand the plan, run every unfinished case on the target, commit each
//! result the moment it ends, write the report.
//!
//! Workers run cases (the simulator: one per core); the main thread alone writes the
//! store, so a result is committed as soon as it arrives and an interrupted run loses at
//! most the cases in flight. `--resume` skips every (case, repetition) already stored.

use crate::args::RunArgs;
use anyhow::{bail, Context, Result};
use raidlab_backend::{script, RunContext, Target};
use raidlab_core::{Case, Plan};
use raidlab_host::{HostConfig, HostTarget};
use raidlab_store::{ExperimentMeta, NewResult, Store};

/// Estimated seconds of array creation, mkfs and teardown per case, for the ETA.
const SETUP_SECS: u64 = 5;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
    let out: PathBuf = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&plan.name));
    if let (Some(n), "host" | "vm") = (plan.disks.host_queue, target_name.as_str()) {
        eprintln!(
            "note: {}: disks.host_queue = {n} is for the sim target; the {target_name} target runs on the adapter it has",
            a.plan.display()
        );
    }
    if a.dry_run {
        return dry_run(&plan, &target_name, &a, &out);
    }

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
    let baseline_s = a
        .baseline
        .parse::<raidlab_core::Nanos>()
        .map_err(|e| anyhow::anyhow!("--baseline {}: {e}", a.baseline))?
        .get()
        / 1_000_000_000;
    let target: Box<dyn Target> = if target_name == "host" {
        let host = HostTarget::new(HostConfig {
            devices: plan.disks.devices.clone(),
            out: out.clone(),
            destroy: a.destroy_data_on.iter().cloned().collect(),
        })?;
        if baseline_s > 0 {
            baseline(&host, baseline_s, a.quiet)?;
        }
        Box::new(host)
    } else if target_name == "vm" {
        Box::new(raidlab_vm::VmTarget::new(raidlab_vm::VmConfig {
            disks: plan.disks.clone(),
            out: out.clone(),
        })?)
    } else {
        raidlab_backend::by_name(&target_name, a.seed.unwrap_or(plan.run.seed), threads)?
    };
    // The store is made once the target is ready: a target that cannot start (no
    // devices, no lab) leaves no empty results directory that would ask for --resume.
    let mut store = if exists {
        Store::open(&out)?
    } else {
        Store::create(&out, &meta)?
    };
    store.lock()?;
    store.add_cases(plan.cases())?;
    let finished = store.finished()?;
    let todo: Vec<(&Case, u32)> = (1..=plan.run.repeat)
        .flat_map(|rep| plan.cases().iter().map(move |c| (c, rep)))
        .filter(|(c, rep)| !finished.contains(&(c.id.clone(), *rep)))
        .collect();
    target.prepare(&todo);
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

    // Real targets: a bar over the expected seconds, so the ETA is one of time, not cases.
    let timed = target_name != "sim";
    let weight = |c: &Case| {
        if timed {
            (c.workload.runtime + c.workload.ramp).get() / 1_000_000_000 + SETUP_SECS
        } else {
            1
        }
    };
    let pb = if timed {
        crate::progress::timed(todo.iter().map(|(c, _)| weight(c)).sum(), a.quiet)
    } else {
        crate::progress::bar(todo.len() as u64, a.quiet)
    };
    pb.set_message(format!("target {target_name}"));
    let total = todo.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    let mut failures = Vec::new();
    // For the timed bar: when the case in flight started (seconds into the run) and its
    // weight, so the bar moves while a long case runs (real targets run one at a time).
    let run_t0 = Instant::now();
    let in_flight = (AtomicU64::new(u64::MAX), AtomicU64::new(0));
    let ran = std::thread::scope(|s| -> Result<()> {
        for _ in 0..target.parallel().min(todo.len().max(1)) {
            let tx = tx.clone();
            let (todo, next, target, stop, pb) = (&todo, &next, &target, &stop, &pb);
            let (in_flight, weight) = (&in_flight, &weight);
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
                in_flight.1.store(weight(case), Ordering::SeqCst);
                in_flight
                    .0
                    .store(run_t0.elapsed().as_secs(), Ordering::SeqCst);
                let label = format!("case {}/{total} · {}", i + 1, case.label());
                let phase = |p: &str| pb.set_message(format!("{label} · {p}"));
                let cx = RunContext {
                    stop: stop.as_ref(),
                    phase: &phase,
                    next: todo.get(i + 1).map(|(c, _)| *c),
                };
                let out = target.run_case(case, rep, &cx);
                if tx.send((case, rep, started, t0.elapsed(), out)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut done = 0;
        loop {
            let (case, rep, started, wall, out) =
                match rx.recv_timeout(std::time::Duration::from_millis(500)) {
                    Ok(m) => m,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        let since = in_flight.0.load(Ordering::SeqCst);
                        if timed && since != u64::MAX {
                            let into = run_t0.elapsed().as_secs().saturating_sub(since);
                            let w = in_flight.1.load(Ordering::SeqCst);
                            pb.set_position(done + into.min(w.saturating_sub(1)));
                        }
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                };
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
                Err(raidlab_backend::TargetError::Interrupted) => {}
                Err(e) => failures.push(format!(
                    "case {} ({}) repetition {rep}: {e}",
                    case.id,
                    case.label()
                )),
            }
            done += weight(case);
            pb.set_position(done);
        }
        Ok(())
    });
    // Whatever happened, release what the target still holds (an array left up).
    pb.set_message("teardown");
    let finished = target.finish();
    ran?;
    finished?;
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
    o: raidlab_backend::CaseOutput,
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

/// `--dry-run`: every command each case would run, with the real device paths, and (for
/// the host target) each device's verdict. Nothing is run, nothing is written.
fn dry_run(plan: &Plan, target_name: &str, a: &RunArgs, out: &std::path::Path) -> Result<()> {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# dry run of plan `{}` on target {target_name}: nothing below is executed",
        plan.name
    );
    let _ = writeln!(
        s,
        "# wcache_set DEV 0|1: hdparm -W (ATA), sdparm WCE (SCSI/SAS) or the kernel's flag in\n\
         # /sys/block/X/queue/write_cache, whichever the device answers to (`plan --script`\n\
         # defines it as a bash function)"
    );
    if target_name == "host" {
        let destroy = a.destroy_data_on.iter().cloned().collect();
        for d in &plan.disks.devices {
            let v = raidlab_host::guard::check(d, None);
            let _ = writeln!(s, "# {d}: {}", v.reason(&destroy));
        }
    }
    let devices: Vec<String> = if plan.disks.devices.is_empty() {
        (0..plan.disks.count).map(|i| format!("DISK{i}")).collect()
    } else {
        plan.disks.devices.clone()
    };
    // The same order and the same reuse of arrays across consecutive cases as a run.
    for (case, rep, reuse) in script::run_order(plan) {
        let _ = writeln!(
            s,
            "\n# case {} · {} · repetition {rep}",
            case.id,
            case.label()
        );
        let members = raidlab_backend::script::members(case, &devices);
        if reuse.array_up {
            let _ = writeln!(s, "# (the array of the previous case is still up)");
        }
        for st in script::select(raidlab_host::steps(case, members, out, rep), reuse) {
            let _ = writeln!(s, "{}", st.shell());
        }
        if reuse.keep_up {
            let _ = writeln!(s, "# (the array stays up for the next case)");
        }
    }
    std::io::stdout().lock().write_all(s.as_bytes())?;
    Ok(())
}

/// Measure (or read back) the per-disk baseline and warn about uneven members.
fn baseline(host: &HostTarget, secs: u64, quiet: bool) -> Result<()> {
    let stop = AtomicBool::new(false);
    let pb = crate::progress::timed(secs * 2 * host.devices().len() as u64, quiet);
    let phase = |p: &str| pb.set_message(p.to_string());
    let done = AtomicBool::new(false);
    let tick = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(250));
                pb.set_position(pb.elapsed().as_secs().min(pb.length().unwrap_or(0)));
            }
        });
        let r = host.baseline(
            secs,
            &RunContext {
                stop: &stop,
                phase: &phase,
                next: None,
            },
        );
        done.store(true, Ordering::SeqCst);
        r
    });
    pb.finish_and_clear();
    let b = tick?;
    for m in &b.members {
        eprintln!(
            "baseline {}: {:.0} IOPS 4k random read, {:.0} MiB/s sequential read",
            m.device, m.randread_iops, m.read_mib_s
        );
    }
    for w in &b.warnings {
        eprintln!("warning: {w}");
    }
    Ok(())
}
