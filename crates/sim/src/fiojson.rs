//! Writes a run as fio's JSON output (the `--output-format=json` shape of fio 3.x).
//!
//! The simulator speaks fio's format so the parser, store, exports and report treat
//! simulated and measured results alike. `disk_util` has the md device first with md's
//! `aggr_*` fields — which fio computes as per-member averages (sum / slave count) —
//! then one entry per member.

use crate::engine::{DirStats, SimRun};
use raidlab_core::{Case, Level};
use serde_json::{json, Map, Value};

const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

fn direction(d: &DirStats, runtime_ms: u64) -> Value {
    let secs = runtime_ms as f64 / 1000.0;
    let iops = if secs > 0.0 { d.ios as f64 / secs } else { 0.0 };
    let bw_bytes = if secs > 0.0 {
        (d.bytes as f64 / secs) as u64
    } else {
        0
    };
    let stat = |with_pct: bool| {
        let mut m = Map::new();
        m.insert("min".into(), json!(d.lat.min()));
        m.insert("max".into(), json!(d.lat.max()));
        m.insert("mean".into(), json!(d.lat.mean()));
        m.insert("stddev".into(), json!(d.lat.stddev()));
        m.insert("N".into(), json!(d.lat.count()));
        if with_pct && d.ios > 0 {
            let pct: Map<String, Value> = PERCENTILES
                .iter()
                .map(|p| {
                    (
                        format!("{p:.6}"),
                        json!(d.lat.percentile(*p).round() as u64),
                    )
                })
                .collect();
            m.insert("percentile".into(), Value::Object(pct));
            // As fio's json+ output: the histogram's bins.
            let bins: Map<String, Value> = d
                .lat
                .bins()
                .map(|(v, n)| (v.to_string(), json!(n)))
                .collect();
            m.insert("bins".into(), Value::Object(bins));
        }
        Value::Object(m)
    };
    json!({
        "io_bytes": d.bytes,
        "io_kbytes": d.bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": iops,
        "runtime": if d.ios > 0 { runtime_ms } else { 0 },
        "total_ios": d.ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": {
            "min": d.slat.min(),
            "max": d.slat.max(),
            "mean": d.slat.mean(),
            "stddev": d.slat.stddev(),
            "N": d.slat.count(),
        },
        "clat_ns": stat(true),
        "lat_ns": stat(false),
    })
}

/// The run as fio JSON text. `model` describes the simulated disks (name + parameters).
pub fn render(case: &Case, run: &SimRun, seed: u64, model: &Value) -> String {
    let w = &case.workload;
    let runtime_ms = run.runtime.0 / 1_000_000;
    let runtime_ns = run.runtime.0.max(1) as f64;
    let mut job_options = Map::new();
    job_options.insert("rw".into(), json!(w.rw.fio_name()));
    job_options.insert("bs".into(), json!(w.bs.to_fio()));
    job_options.insert("iodepth".into(), json!(w.iodepth.to_string()));
    job_options.insert("numjobs".into(), json!(w.numjobs.to_string()));
    job_options.insert("size".into(), json!(w.size.to_fio()));
    job_options.insert("runtime".into(), json!(w.runtime.to_fio()));
    if w.rw.reads() && w.rw.writes() {
        job_options.insert("rwmixread".into(), json!(w.rwmixread.to_string()));
    }
    let member_entry = |i: usize| {
        let s = &run.members[i];
        json!({
            "name": format!("sd{}", (b'a' + (i % 26) as u8) as char),
            "read_ios": s.read_ios,
            "write_ios": s.write_ios,
            "read_merges": 0,
            "write_merges": 0,
            "read_ticks": s.read_ticks.0 / 1_000_000,
            "write_ticks": s.write_ticks.0 / 1_000_000,
            "in_queue": (s.read_ticks.0 + s.write_ticks.0) / 1_000_000,
            "util": (s.busy.0 as f64 / runtime_ns * 100.0).min(100.0),
        })
    };
    let n = run.members.len().max(1) as u64;
    let mut disk_util = Vec::new();
    if case.array.level != Level::Single {
        let sum = |f: &dyn Fn(&crate::device::DeviceStats) -> u64| -> u64 {
            run.members.iter().map(f).sum::<u64>()
        };
        let util: f64 = run
            .members
            .iter()
            .map(|s| (s.busy.0 as f64 / runtime_ns * 100.0).min(100.0))
            .sum::<f64>()
            / n as f64;
        disk_util.push(json!({
            "name": "md0",
            "read_ios": run.array_ios[0],
            "write_ios": run.array_ios[1],
            "read_merges": 0, "write_merges": 0, "read_ticks": 0, "write_ticks": 0, "in_queue": 0,
            "util": 0.0,
            "aggr_read_ios": sum(&|s| s.read_ios) / n,
            "aggr_write_ios": sum(&|s| s.write_ios) / n,
            "aggr_read_merges": 0,
            "aggr_write_merge": 0,
            "aggr_read_ticks": sum(&|s| s.read_ticks.0 / 1_000_000) / n,
            "aggr_write_ticks": sum(&|s| s.write_ticks.0 / 1_000_000) / n,
            "aggr_in_queue": sum(&|s| (s.read_ticks.0 + s.write_ticks.0) / 1_000_000) / n,
            "aggr_util": util,
        }));
    }
    disk_util.extend((0..run.members.len()).map(member_entry));
    let doc = json!({
        "fio version": format!("raidlab-sim-{}", env!("CARGO_PKG_VERSION")),
        "timestamp": 0,
        "time": "simulated",
        "global options": {
            "ioengine": "raidlab-sim",
            "direct": "1",
            "time_based": "1",
            "group_reporting": "1",
        },
        "jobs": [{
            "jobname": case.id.0,
            "groupid": 0,
            "error": 0,
            "eta": 0,
            "elapsed": (w.ramp.0 + w.runtime.0) / 1_000_000_000,
            "job options": job_options,
            "read": direction(&run.read, runtime_ms),
            "write": direction(&run.write, runtime_ms),
            "trim": direction(&DirStats::default(), runtime_ms),
            "job_runtime": runtime_ms,
        }],
        "disk_util": disk_util,
        "raidlab": {
            "target": "sim",
            "seed": seed,
            "disk_model": model,
            "case": case,
            "events": run.events,
            "stripe_cache_heads": run.stripe_heads,
            "stripe_cache_heads_at_start": run.stripe_heads_at_start,
        },
    });
    let mut text = serde_json::to_string_pretty(&doc).expect("json");
    text.push('\n');
    text
}

/// fio's `write_iops_log` format: `time_ms, iops, direction (0 read, 1 write), bs, offset`
/// — one line per direction per second.
pub fn iops_log(case: &Case, run: &SimRun) -> String {
    let mut s = String::new();
    for (i, [r, w]) in run.iops_per_sec.iter().enumerate() {
        let t = (i as u64 + 1) * 1000;
        if case.workload.rw.reads() {
            s.push_str(&format!("{t}, {r}, 0, {}, 0\n", case.workload.bs.0));
        }
        if case.workload.rw.writes() {
            s.push_str(&format!("{t}, {w}, 1, {}, 0\n", case.workload.bs.0));
        }
    }
    s
}

/// fio's `write_lat_log` format with `log_avg_msec=1000`: `time_ms, mean latency (ns),
/// direction, bs, offset` — one line per direction per second with completions.
pub fn lat_log(case: &Case, run: &SimRun) -> String {
    let mut s = String::new();
    for (i, (n, sum)) in run
        .iops_per_sec
        .iter()
        .zip(&run.lat_sum_per_sec)
        .enumerate()
    {
        let t = (i as u64 + 1) * 1000;
        for dir in 0..2 {
            let wanted = if dir == 0 {
                case.workload.rw.reads()
            } else {
                case.workload.rw.writes()
            };
            if wanted && n[dir] > 0 {
                s.push_str(&format!(
                    "{t}, {}, {dir}, {}, 0\n",
                    sum[dir] / n[dir],
                    case.workload.bs.0
                ));
            }
        }
    }
    s
}
