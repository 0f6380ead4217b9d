//! `raidlab run`: check the plan against the target, open the target and the store, drive
//! the run loop ([`raidlab_runner::Runner`]) with a progress bar, write the report.

use crate::args::RunArgs;
use anyhow::{bail, Context, Result};
use raidlab_backend::{script, RunContext, SimTarget, Target};
use raidlab_core::{Check, Plan, TargetKind};
use raidlab_host::{HostConfig, HostTarget};
use raidlab_runner::{Event, Runner};
use raidlab_store::{ExperimentMeta, Store};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The plan's `[workloads.fio]` options, judged by the installed fio before anything
/// runs (`fio --parse-only` on each distinct job): a misspelt or invalid option is refused
/// in fio's words, not after the arrays are built.
fn check_fio_options(plan: &Plan) -> Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for case in plan.cases() {
        let w = &case.workload;
        let job = raidlab_fio::render_job(w, "/dev/null", "check");
        if w.fio.extra.is_empty() || !seen.insert(job.clone()) {
            continue;
        }
        let options: Vec<String> = w
            .fio
            .extra
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        match raidlab_fio::parse_only(&job) {
            Ok(true) => {}
            Ok(false) => raidlab_backend::note!(
                "note: fio is not installed here, so the plan's workloads.fio options ({}) are checked when fio runs",
                options.join(", ")
            ),
            Err(said) => bail!(
                "{}: workloads.fio ({}): fio refuses the job: {said}. Fix or remove the option (`fio --cmdhelp=NAME` explains one)",
                plan.source.display(),
                options.join(", ")
            ),
        }
    }
    Ok(())
}

pub fn run(a: RunArgs) -> Result<()> {
    if a.hosts.is_some() {
        return crate::fleet::run(a);
    }
    let plan = Plan::load(&a.plan)?;
    let kind = a.target.or(plan.run.target).unwrap_or_default();
    for note in plan.target_notes(kind) {
        raidlab_backend::note!("note: {}", note.0);
    }
    plan.check_target(
        kind,
        if a.dry_run {
            Check::Preview
        } else {
            Check::Run
        },
    )?;
    if kind != TargetKind::Sim {
        check_fio_options(&plan)?;
    }
    let out: PathBuf = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&plan.name));
    if a.dry_run {
        return dry_run(&plan, kind, &a, &out);
    }
    let exists = out.join("raidlab.sqlite").exists();
    let again = |out: &dyn std::fmt::Display| {
        let target = if kind == TargetKind::Sim {
            String::new()
        } else {
            format!(" --target {kind}")
        };
        format!(
            "raidlab run {}{target} --resume --out {out}",
            a.plan.display()
        )
    };
    if exists && !a.resume {
        bail!(
            "{} already holds the results of a run; nothing there is ever overwritten.\n  To continue that run: {}\n  To start a new one:    raidlab run {} --out NEW_DIR",
            out.display(),
            again(&out.display()),
            a.plan.display()
        );
    }
    if exists {
        // One directory never mixes targets: a resume goes on where the run was.
        let stored = Store::open(&out)?.meta()?.target;
        if stored != kind.name() {
            bail!(
                "{} holds results of the {stored} target and this run is on {kind}; one results directory never mixes targets.\n  To continue that run: raidlab run {} --target {stored} --resume --out {}\n  To run on {kind}:       raidlab run {} --target {kind} --out NEW_DIR",
                out.display(),
                a.plan.display(),
                out.display(),
                a.plan.display()
            );
        }
    }
    // Before the target opens: a signal during the host's baseline stops it in order too.
    let stop = raidlab_runner::stop_on_signals(kind)?;
    let target = open_target(kind, &plan, &a, &out, &stop)?;
    // The store is made once the target is ready: a target that cannot start (no
    // devices, no lab) leaves no empty results directory that would ask for --resume.
    let mut store = if exists {
        Store::open(&out)?
    } else {
        Store::create(&out, &meta(&plan, &a.plan, kind))?
    };
    store.lock()?;
    store.add_cases(plan.cases())?;
    let todo = raidlab_runner::pending(&plan, &store)?;
    let skipped = plan.cases().len() * plan.run.repeat as usize - todo.len();
    if skipped > 0 {
        raidlab_backend::note!(
            "resuming: {skipped} result(s) already stored, {} to run",
            todo.len()
        );
    }
    let quiet = a.quiet || a.events;
    let pb = if kind.capabilities().real_time {
        crate::progress::timed(raidlab_runner::total(kind, &todo), quiet)
    } else {
        crate::progress::bar(todo.len() as u64, quiet)
    };
    pb.set_message(format!("target {kind}"));
    let wire = |w: raidlab_fleet::Wire| w.emit();
    if a.events {
        wire(raidlab_fleet::Wire::Started {
            pid: std::process::id(),
            total: raidlab_runner::total(kind, &todo),
            pending: todo.len(),
        });
    }
    let events = |e: Event| {
        if a.events {
            match e {
                Event::Message(text) => wire(raidlab_fleet::Wire::Message { text }),
                Event::Position(value) => wire(raidlab_fleet::Wire::Position { value }),
                Event::Stopping => wire(raidlab_fleet::Wire::Message {
                    text: "stopping".into(),
                }),
                Event::Committed(r) => wire(raidlab_fleet::Wire::Result(Box::new(
                    raidlab_fleet::WireResult::from_new(&r),
                ))),
            }
            return;
        }
        match e {
        Event::Message(m) => pb.set_message(m),
        Event::Position(p) => pb.set_position(p),
        Event::Stopping if kind.capabilities().real_time => pb.suspend(|| {
            raidlab_backend::note!(
                "stopping: no new case starts; the case in flight is stopped and torn down (its array, mounts and write caches), then the results so far are kept. Another Ctrl-C does not skip the teardown; `kill -9` would, leaving it to `raidlab cleanup`."
            )
        }),
        Event::Stopping => pb.set_message("stopping"),
        Event::Committed(_) => {}
    }
    };
    let runner = Runner {
        target: target.as_ref(),
        stop: &stop,
        events: &events,
    };
    let outcome = runner.run(&mut store, &todo);
    pb.finish_and_clear();
    if a.events {
        let error = match &outcome {
            Err(e) => Some(e.to_string()),
            Ok(_) if stop.load(Ordering::SeqCst) => Some("interrupted".into()),
            Ok(o) if !o.failures.is_empty() => Some(o.failures.join("; ")),
            Ok(_) => None,
        };
        wire(raidlab_fleet::Wire::Finished { error });
    }
    let outcome = outcome?;
    write_report(&store, &plan.name, &out, !a.events)?;
    if stop.load(Ordering::SeqCst) {
        bail!(
            "interrupted: the results finished so far are stored in {}; continue with\n  {}",
            out.display(),
            again(&out.display())
        );
    }
    if !outcome.failures.is_empty() {
        bail!(
            "{} case(s) failed (the others are stored; fix and rerun with --resume):\n  {}",
            outcome.failures.len(),
            outcome.failures.join("\n  ")
        );
    }
    Ok(())
}

/// What the results directory records about the run that made it.
pub(crate) fn meta(plan: &Plan, path: &Path, kind: TargetKind) -> ExperimentMeta {
    ExperimentMeta {
        name: plan.name.clone(),
        plan_path: Some(path.display().to_string()),
        plan_text: std::fs::read_to_string(path).ok(),
        target: kind.name().into(),
        created_unix: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0),
        raidlab_version: env!("CARGO_PKG_VERSION").into(),
    }
}

/// The target the run asked for, ready for its first case (the host target after its
/// per-disk baseline).
fn open_target(
    kind: TargetKind,
    plan: &Plan,
    a: &RunArgs,
    out: &Path,
    stop: &AtomicBool,
) -> Result<Box<dyn Target>> {
    Ok(match kind {
        TargetKind::Sim => Box::new(SimTarget {
            seed: a.seed.unwrap_or(plan.run.seed),
            threads: a.jobs.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get())
                    .unwrap_or(1)
            }),
        }),
        TargetKind::Vm => Box::new(raidlab_vm::VmTarget::new(raidlab_vm::VmConfig {
            disks: plan.disks.clone(),
            out: out.to_path_buf(),
        })?),
        TargetKind::Host => {
            let host = HostTarget::new(HostConfig {
                devices: plan.disks.devices.clone(),
                out: out.to_path_buf(),
                destroy: a.destroy_data_on.iter().cloned().collect(),
                fio_by: a.fio_from_controller.then(|| {
                    std::sync::Arc::new(raidlab_fleet::together::FromController::from_stdin())
                        as std::sync::Arc<dyn raidlab_host::FioBy>
                }),
                blank: false,
            })?;
            let secs = a.baseline.get() / 1_000_000_000;
            if secs > 0 {
                baseline(&host, secs, a.quiet, stop)?;
            }
            Box::new(host)
        }
    })
}

/// `report.html` into the results directory, the Markdown table on standard output.
/// A report page at `path`, with every chart also as an SVG file in `STEM-charts/` beside
/// it, linked from the chart's corner (the page stays whole without them).
pub(crate) fn write_html(path: &Path, html: &str) -> Result<()> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let dir_name = format!("{stem}-charts");
    let (page, charts) = raidlab_report::with_chart_files(html, Some(&dir_name));
    std::fs::write(path, page).with_context(|| format!("cannot write {}", path.display()))?;
    let dir = path.with_file_name(&dir_name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // An earlier report's charts go (only files named as charts are: `NNN-….svg`).
    for e in std::fs::read_dir(&dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let numbered = name.len() > 4 && name.as_bytes()[..3].iter().all(u8::is_ascii_digit);
        if numbered && name[3..].starts_with('-') && name.ends_with(".svg") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    for (name, svg) in charts {
        let f = dir.join(name);
        std::fs::write(&f, svg).with_context(|| format!("cannot write {}", f.display()))?;
    }
    Ok(())
}

pub(crate) fn write_report(store: &Store, title: &str, out: &Path, table: bool) -> Result<()> {
    let built = raidlab_report::build(store)?;
    let html = raidlab_report::html::render_report(&raidlab_report::Report {
        title,
        rows: &built.rows,
        details: &built.details,
        axes: None,
    });
    let report = out.join("report.html");
    write_html(&report, &html)?;
    if table {
        let table = raidlab_report::export(&built.rows, raidlab_report::Format::Markdown, title);
        std::io::stdout().lock().write_all(&table)?;
    }
    raidlab_backend::note!(
        "\nresults: {}\nreport:  {}",
        out.display(),
        report.display()
    );
    Ok(())
}

/// `--dry-run`: every command each case would run, with the real device paths, and (for
/// the host target) each device's verdict. Nothing is run, nothing is written.
fn dry_run(plan: &Plan, kind: TargetKind, a: &RunArgs, out: &Path) -> Result<()> {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# dry run of plan `{}` on target {kind}: nothing below is executed",
        plan.name
    );
    let _ = writeln!(
        s,
        "# wcache_set DEV 0|1: hdparm -W (ATA), sdparm WCE (SCSI/SAS) or the kernel's flag in\n\
         # /sys/block/X/queue/write_cache, whichever the device answers to (`plan --script`\n\
         # defines it as a bash function)"
    );
    if kind == TargetKind::Host && !plan.disks.devices.is_empty() {
        // The same checks as a run: a plan the guards refuse shows no command to run.
        let destroy = a.destroy_data_on.iter().cloned().collect();
        let verdicts =
            raidlab_host::guard::check_plan(&plan.disks.devices, &destroy).map_err(|e| {
                anyhow::anyhow!(
                    "{e}\n(the dry run shows commands only for devices a run would use)"
                )
            })?;
        for v in verdicts {
            let _ = writeln!(s, "# {}: {}", v.path, v.reason(&destroy));
        }
    }
    let devices = script::devices_or_placeholders(&plan.disks.devices, plan.disks.count as usize);
    // The same order and the same reuse of arrays across consecutive cases as a run.
    for (case, rep, reuse) in script::run_order(plan) {
        let _ = writeln!(
            s,
            "\n# case {} · {} · repetition {rep}",
            case.id,
            case.label()
        );
        let members = script::members(case, &devices);
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
fn baseline(host: &HostTarget, secs: u64, quiet: bool, stop: &AtomicBool) -> Result<()> {
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
                stop,
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
        raidlab_backend::note!(
            "baseline {}: {:.0} IOPS 4k random read, {:.0} MiB/s sequential read",
            m.device,
            m.randread_iops,
            m.read_mib_s
        );
    }
    for w in &b.warnings {
        raidlab_backend::note!("warning: {w}");
    }
    Ok(())
}
