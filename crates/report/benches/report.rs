//! How long the HTML report of 1,000 cases takes (goal: under 3 s), model and anomaly
//! rules included: `cargo bench -p raidlab-report --bench report`. The cases come from a
//! plan (4 levels × 5 chunks × 5 queue depths × 2 block sizes × 5 rw modes, as
//! `examples/bench-1000.toml`); figures, 60-second IOPS logs and six members' disk_util are
//! generated and committed to a real store first, then timed is the path `raidlab report`
//! takes: `raidlab_report::build` (SQLite, logs, model, anomaly rules, host commands) and
//! the renderer — not the simulator.

use raidlab_core::{DirectionFigures, DiskUtil, Figures, Plan};
use raidlab_report::{build, export, html, Built, Dim, Format, Metric, Report};
use raidlab_store::{ExperimentMeta, NewResult, Store};
use std::path::Path;
use std::time::Instant;

const PLAN: &str = include_str!("plans/bench.toml");

fn direction(iops: f64, bs: f64) -> DirectionFigures {
    DirectionFigures {
        ios: (iops * 60.0) as u64,
        bytes: (iops * 60.0 * bs) as u64,
        iops,
        bw_bytes_s: iops * bs,
        lat_mean_ns: 8e6,
        clat_p50_ns: Some(7e6),
        clat_p99_ns: Some(25e6),
        ..Default::default()
    }
}

/// Per-second IOPS in fio's log format (`msec, value, direction, bs, offset`).
fn fio_log(per_second: &[f64]) -> String {
    per_second
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{}, {}, 0, 4096, 0\n", (i + 1) * 1000, *v as u64))
        .collect()
}

fn main() {
    let plan = Plan::parse(PLAN, Path::new("bench.toml")).expect("bench plan parses");
    let cases = plan.cases();
    assert_eq!(cases.len(), 1000);
    let env: raidlab_core::Environment = serde_json::from_value(
        serde_json::json!({"target": "sim", "write_cache_after": {"sda": false}}),
    )
    .expect("an environment");
    let inputs: Vec<(Figures, Vec<f64>)> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let bs = c.workload.bs.0 as f64;
            let iops = 100.0 + (i % 97) as f64 * 7.0;
            let f = Figures {
                fio_version: Some("fio-3.33".into()),
                read: c.workload.rw.reads().then(|| direction(iops, bs)),
                write: c.workload.rw.writes().then(|| direction(iops / 2.0, bs)),
                disk_util: (0..6)
                    .map(|m| DiskUtil {
                        name: format!("sd{}", (b'a' + m) as char),
                        read_ios: 1000 + i as u64,
                        write_ios: 500 + m as u64 * 10,
                        ..Default::default()
                    })
                    .collect(),
            };
            let log = (0..60).map(|s| iops + (s % 7) as f64).collect();
            (f, log)
        })
        .collect();

    let dir = tempfile::tempdir().expect("a temporary directory");
    let meta = ExperimentMeta {
        name: "bench".into(),
        plan_path: None,
        plan_text: Some(PLAN.into()),
        target: "sim".into(),
        created_unix: 0,
        raidlab_version: "bench".into(),
    };
    let mut store = Store::create(&dir.path().join("r"), &meta).expect("a store");
    store.add_cases(cases).expect("cases stored");
    let results: Vec<NewResult> = cases
        .iter()
        .zip(&inputs)
        .map(|(c, (f, log))| NewResult {
            case_id: c.id.clone(),
            repetition: 1,
            target: "sim".into(),
            figures: f.clone(),
            raw_json: b"{}".to_vec(),
            logs: vec![("iops.log".into(), fio_log(log).into_bytes())],
            environment: env.clone(),
            started_unix: 0,
            wall_ns: 0,
            source: None,
        })
        .collect();
    for r in store.commit_batch(&results).expect("results stored") {
        r.expect("a result stored");
    }
    let start = Instant::now();
    let Built { rows, details } = build(&store).expect("rows from the store");
    let model_time = start.elapsed();
    let html = html::render_report(&Report {
        title: "bench",
        rows: &rows,
        details: &details,
        axes: Some((Dim::Chunk, Metric::Iops)),
    });
    let csv = export(&rows, Format::Csv, "bench");
    let total = start.elapsed();
    println!(
        "report of {} cases: {:.3} s (rows from the store, model, anomalies {:.3} s; HTML {:.1} MB, CSV {:.1} kB; goal < 3 s)",
        rows.len(),
        total.as_secs_f64(),
        model_time.as_secs_f64(),
        html.len() as f64 / 1e6,
        csv.len() as f64 / 1e3
    );
}
