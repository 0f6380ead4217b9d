//! The `raidlab` binary: parse the command line, dispatch, print errors as a user can act
//! on them. Each subcommand lives in its own module; the crates below do the work.

mod advise;
mod args;
mod calibrate;
mod compare;
mod fleet;
mod host;
mod import;
mod lab;
mod progress;
mod risk;
mod run;
mod sim;

use anyhow::{Context, Result};
use args::{Cli, Command};
use clap::{CommandFactory, Parser};
use raidlab_core::Plan;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run_cli() {
        Ok(()) => ExitCode::SUCCESS,
        // `raidlab … | head`: the reader has what it wanted.
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            raidlab_backend::note!("error: {e}");
            for cause in e.chain().skip(1) {
                raidlab_backend::note!("  caused by: {cause}");
            }
            ExitCode::from(1)
        }
    }
}

fn run_cli() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(a) => run::run(a),
        Command::Plan(a) => plan(a),
        Command::Sim(a) => sim::sim(*a),
        Command::Report(a) => report(a),
        Command::Import(a) => import::import(a),
        Command::Calibrate(a) => calibrate::calibrate(a),
        Command::Risk(a) => risk::risk(a),
        Command::Advise(a) => advise::advise(a),
        Command::Compare(a) => compare::compare(a),
        Command::Disks(a) => host::disks(a),
        Command::Cleanup(a) => match &a.hosts {
            Some(h) => fleet::cleanup(h),
            None => host::cleanup(a),
        },
        Command::FleetReplay { dir } => fleet::replay(&dir),
        Command::Lab(c) => lab::lab(c),
        Command::Guest { job, out } => {
            raidlab_vm::guest::run(&job, &out).map_err(anyhow::Error::msg)
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "raidlab",
                &mut std::io::stdout(),
            );
            Ok(())
        }
        Command::Man => {
            clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?;
            Ok(())
        }
    }
}

fn plan(a: args::PlanArgs) -> Result<()> {
    let plan = Plan::load(&a.plan)?;
    let mut out = std::io::stdout().lock();
    if a.script {
        write!(out, "{}", raidlab_backend::script::plan_script(&plan))?;
        return Ok(());
    }
    writeln!(
        out,
        "plan `{}`: {} × {}",
        plan.name,
        raidlab_core::plural(plan.cases().len(), "case", "cases"),
        raidlab_core::plural(plan.run.repeat as usize, "repetition", "repetitions")
    )?;
    if let Some(d) = &plan.description {
        writeln!(out, "{d}")?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "{:<18} {:<28} {:>6} {:<8} {:<26} {:>8}",
        "case", "array", "disks", "fs", "workload", "runtime"
    )?;
    for c in plan.cases() {
        writeln!(
            out,
            "{:<18} {:<28} {:>6} {:<8} {:<26} {:>8}",
            c.id.0,
            format!("{} {}", c.array.engine, c.array.label()),
            c.array.disks,
            c.array.filesystem.to_string(),
            c.workload.label(),
            (c.workload.runtime + c.workload.ramp).to_string()
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "expected run time: {} of fio on real disks (plus array creation, mkfs and layout per case); the sim target takes seconds",
        plan.expected_runtime()
    )?;
    Ok(())
}

/// `report DIR --format svg -o CHARTS/` without axes: every chart of the report as an SVG
/// file of its own in the directory CHARTS.
fn every_chart(a: &args::ReportArgs) -> Result<()> {
    let Some(dir) = a.output.as_ref().filter(|p| p.as_os_str() != "-") else {
        anyhow::bail!(
            "--format svg writes every chart of the report into a directory (-o charts/), or one chart with --x DIM --y METRIC (-o chart.svg)"
        );
    };
    let store = raidlab_store::Store::open(&a.dir)?;
    let title = store.meta()?.name;
    let built = raidlab_report::build(&store)?;
    let page = raidlab_report::html::render_report(&raidlab_report::Report {
        title: &title,
        rows: &built.rows,
        details: &built.details,
        axes: None,
    });
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let charts = raidlab_report::page_charts(&page);
    for (name, svg) in &charts {
        let path = dir.join(name);
        std::fs::write(&path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    }
    raidlab_backend::note!("wrote {} SVG charts into {}", charts.len(), dir.display());
    Ok(())
}

fn report(a: args::ReportArgs) -> Result<()> {
    let format = a.format;
    let axes = match (a.x, a.y) {
        (None, None) => None,
        (Some(x), y) => Some((x, y.unwrap_or(raidlab_report::Metric::Iops))),
        (None, Some(_)) => anyhow::bail!(
            "--y needs --x: name the dimension to spread over the x axis (level, layout, chunk, bs, iodepth, numjobs, disks, rw)"
        ),
    };
    use raidlab_report::Format;
    match (axes, format) {
        (Some(_), Format::Html | Format::Svg) | (None, Format::Csv | Format::Json | Format::Markdown | Format::Html) => {}
        (Some(_), _) => anyhow::bail!(
            "--x/--y draw a chart: into the HTML report (drop --format) or alone (--format svg -o chart.svg)"
        ),
        (None, _) => return every_chart(&a),
    }
    let store = raidlab_store::Store::open(&a.dir)?;
    let title = store.meta()?.name;
    let built = raidlab_report::build(&store)?;
    let bytes = match format {
        raidlab_report::Format::Html => {
            raidlab_report::html::render_report(&raidlab_report::Report {
                title: &title,
                rows: &built.rows,
                details: &built.details,
                axes,
            })
            .into_bytes()
        }
        raidlab_report::Format::Svg => {
            let (x, y) = axes.expect("checked above");
            raidlab_report::chart_svg(&built.rows, x, y).into_bytes()
        }
        _ => raidlab_report::export(&built.rows, format, &title),
    };
    let default = (format == raidlab_report::Format::Html).then(|| a.dir.join("report.html"));
    match a.output.or(default) {
        Some(p) if p.as_os_str() != "-" && format == raidlab_report::Format::Html => {
            run::write_html(&p, &String::from_utf8_lossy(&bytes))?;
            raidlab_backend::note!(
                "wrote {} (and its charts as SVG files beside it)",
                p.display()
            );
        }
        Some(p) if p.as_os_str() != "-" => {
            std::fs::write(&p, bytes).with_context(|| format!("cannot write {}", p.display()))?;
            raidlab_backend::note!("wrote {}", p.display());
        }
        _ => std::io::stdout().write_all(&bytes)?,
    }
    Ok(())
}
