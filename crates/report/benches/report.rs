//! How long the HTML report of 1,000 cases takes (goal: under 3 s), model and anomaly
//! rules included: `cargo bench -p raidlab-report --bench report`. The cases come from a
//! plan (4 levels × 5 chunks × 5 queue depths × 2 block sizes × 5 rw modes, as
//! `examples/bench-1000.toml`); figures,
//! 60-second IOPS logs and six members' disk_util are generated, so this times the model,
//! the host commands and the renderer, not the simulator or SQLite.

use raidlab_core::{DirectionFigures, DiskModel, DiskUtil, Figures, Plan};
use raidlab_model::expectation;
use raidlab_report::{export, html, Detail, Dim, Format, Metric, Report, Row};
use std::path::Path;
use std::time::Instant;

const PLAN: &str = r#"
name = "bench"
[disks]
count = 6
model = "hdd-7200"
[arrays]
level = ["raid0", "raid10", "raid5", "raid6"]
chunk = ["64k", "128k", "256k", "512k", "1m"]
filesystem = "xfs"
write_cache = "off"
[workloads]
rw = ["read", "write", "randread", "randwrite", "randrw"]
bs = ["4k", "1m"]
iodepth = [1, 2, 4, 8, 16]
size = "10g"
runtime = "60s"
"#;

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

fn main() {
    let plan = Plan::parse(PLAN, Path::new("bench.toml")).expect("bench plan parses");
    let cases = plan.cases();
    assert_eq!(cases.len(), 1000);
    let model = DiskModel::preset("hdd-7200").expect("preset");
    let env = serde_json::json!({"target": "sim", "write_cache_after": {"sda": false}});
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

    let members: Vec<String> = (0..6)
        .map(|i| format!("/dev/sd{}", (b'a' + i) as char))
        .collect();
    let start = Instant::now();
    let mut rows: Vec<Row> = Vec::with_capacity(1000);
    let mut details: Vec<Detail> = Vec::with_capacity(1000);
    for (c, (f, log)) in cases.iter().zip(&inputs) {
        let e = expectation(c, Some(&model), None);
        let mut row = Row::new(
            &c.id.0,
            Some(c),
            &c.workload,
            "sim",
            std::slice::from_ref(f),
        );
        let found = row.judge(c, e.as_ref(), [(f, &env, log.as_slice())]);
        rows.push(row);
        details.push(Detail {
            formula: e.map(|e| e.formula),
            anomalies: found.into_iter().map(|(_, a)| a.message).collect(),
            environment: serde_json::to_string_pretty(&env).expect("json"),
            commands: raidlab_backend::script::case_steps(
                c,
                &members,
                &raidlab_backend::script::Paths::script("r.json"),
            )
            .iter()
            .map(|s| s.shell())
            .collect(),
            members: f
                .disk_util
                .iter()
                .map(|d| (d.name.clone(), d.read_ios, d.write_ios))
                .collect(),
            iops_per_second: log.clone(),
            lat_ms_per_second: Vec::new(),
        });
    }
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
        "report of {} cases: {:.3} s (model + anomalies {:.3} s; HTML {:.1} MB, CSV {:.1} kB; goal < 3 s)",
        rows.len(),
        total.as_secs_f64(),
        model_time.as_secs_f64(),
        html.len() as f64 / 1e6,
        csv.len() as f64 / 1e3
    );
}
