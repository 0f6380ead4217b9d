//! Every SVG chart the report draws is right by construction: each example plan (and one
//! plan with repetitions and a queue-depth sweep) is simulated into a real store, its
//! report rendered as `raidlab report` renders it (with `--x/--y` charts), and every
//! chart parsed back. From each chart's tick labels and their pixel positions the test
//! derives the axis (the ticks must be nice — 1, 2 or 5 × 10ⁿ, 3 to 8 of them, from 0
//! to the smallest tick ≥ the data's maximum — and evenly placed), then checks every
//! mark against its value (`data-value`, `data-min`/`data-max`, `data-expected`,
//! `data-values`) within half a pixel: bars (with whiskers), measured-vs-model bars and
//! model ticks, member-cost bars, latency histograms, sweep, latency-percentile and
//! `--x/--y` line charts (points and
//! polylines, several series with a legend outside the plot), per-second over-time
//! charts (both axes) and per-member I/O bars (horizontal value axis).

use raidlab_backend::{RunContext, SimTarget, Target};
use raidlab_core::Plan;
use raidlab_report::{build, html, Built, Dim, Metric, Report};
use raidlab_store::{ExperimentMeta, NewResult, Store};
use std::path::Path;
use std::sync::atomic::AtomicBool;

mod geometry;

/// A plan with repetitions (whiskers) and two queue depths (queue-depth curves).
const REPEATED: &str = include_str!("plans/repeated.toml");

/// Simulate every case and repetition of `plan` into a store and build its rows.
fn simulate(plan: &Plan) -> Built {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let meta = ExperimentMeta {
        name: plan.name.clone(),
        plan_path: None,
        plan_text: None,
        target: "sim".into(),
        created_unix: 0,
        raidlab_version: "test".into(),
    };
    let mut store = Store::create(&dir.path().join("r"), &meta).expect("a store");
    store.add_cases(plan.cases()).expect("cases stored");
    let target = SimTarget {
        seed: plan.run.seed,
        threads: 1,
    };
    let stop = AtomicBool::new(false);
    let phase = |_: &str| {};
    let cx = RunContext {
        stop: &stop,
        phase: &phase,
        next: None,
    };
    let mut results = Vec::new();
    for case in plan.cases() {
        for rep in 1..=plan.run.repeat.max(1) {
            let out = target.run_case(case, rep, &cx).expect("the simulator runs");
            let text = String::from_utf8(out.fio_json.clone()).expect("UTF-8 JSON");
            let parsed = raidlab_fio::parse_output(&text).expect("the simulator's JSON parses");
            results.push(NewResult {
                case_id: case.id.clone(),
                repetition: rep,
                target: "sim".into(),
                figures: parsed.figures,
                raw_json: out.fio_json,
                logs: out.logs,
                environment: out.environment,
                started_unix: 0,
                wall_ns: 0,
                source: None,
            });
        }
    }
    for r in store.commit_batch(&results).expect("results stored") {
        r.expect("a result stored");
    }
    build(&store).expect("rows from the store")
}

#[test]
fn every_mark_sits_at_its_value() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut plans = Vec::new();
    for entry in std::fs::read_dir(root.join("examples")).expect("examples/") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            plans.push(Plan::load(&path).expect("an example plan loads"));
        }
    }
    plans.sort_by(|a, b| a.name.cmp(&b.name));
    plans.push(Plan::parse(REPEATED, Path::new("repeated.toml")).unwrap());

    let mut tally = geometry::Tally::new();
    let mut errors = Vec::new();
    for plan in &plans {
        let Built { rows, details } = simulate(plan);
        // The README's `--x chunk --y write_iops`, and on the smaller plans two more.
        let all = [
            (Dim::Chunk, Metric::WriteIops),
            (Dim::Iodepth, Metric::Iops),
            (Dim::Level, Metric::Lat),
        ];
        let many = plan.cases().len() > 200;
        for axes in if many { &all[..1] } else { &all[..] } {
            let page = html::render_report(&Report {
                title: &plan.name,
                rows: &rows,
                details: &details,
                axes: Some(*axes),
            });
            geometry::check_page(&page, &plan.name, &mut tally, &mut errors);
        }
    }
    geometry::conclude(
        &tally,
        &[
            "bar",
            "member-cost",
            "vs-model",
            "sweep",
            "custom",
            "percentiles",
            "histogram",
            "over-time",
            "share",
        ],
        errors,
    );
}
