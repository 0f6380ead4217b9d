//! The parser against output the installed fio writes during the test — never hand-typed.
//! Without fio: skipped with the reason printed; in CI (`CI=true`) a missing fio fails.

use raidlab_core::{Bytes, Nanos, Rw, Workload};
use raidlab_fio::{parse_output, render_job};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn require_fio() -> bool {
    if Command::new("fio").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("fio is required in CI: apt-get install fio");
    }
    eprintln!("skipping: fio is not installed (apt-get install fio)");
    false
}

fn fio(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("fio")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("fio runs");
    assert!(
        out.status.success(),
        "fio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn null_job(dir: &Path, rw: &str, extra: &[&str]) -> String {
    let rw_arg = format!("--rw={rw}");
    let mut args = vec![
        "--name=t",
        "--ioengine=null",
        "--size=64m",
        "--bs=4k",
        "--runtime=1",
        "--time_based",
        &rw_arg,
        "--output-format=json",
    ];
    args.extend_from_slice(extra);
    fio(dir, &args)
}

#[test]
fn iops_are_fios_own_to_the_last_digit() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for rw in ["read", "randwrite", "randrw"] {
        let text = null_job(dir.path(), rw, &[]);
        let raw: Value = serde_json::from_str(&text).unwrap();
        let run = parse_output(&text).unwrap();
        let job = &raw["jobs"][0];
        if rw != "randwrite" {
            let r = run.figures.read.as_ref().expect("reads");
            assert_eq!(r.iops, job["read"]["iops"].as_f64().unwrap());
            assert!(r.iops > 0.0);
        } else {
            assert!(
                run.figures.read.is_none(),
                "a write job has no read figures"
            );
        }
        if rw != "read" {
            let w = run.figures.write.as_ref().expect("writes");
            assert_eq!(w.iops, job["write"]["iops"].as_f64().unwrap());
            assert_eq!(w.bw_bytes_s, job["write"]["bw_bytes"].as_f64().unwrap());
        } else {
            assert!(run.figures.write.is_none());
        }
        assert_eq!(run.jobs[0].rw, Some(rw.parse().unwrap()));
    }
}

#[test]
fn real_file_has_latency_percentiles() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = fio(
        dir.path(),
        &[
            "--name=f",
            "--filename=data",
            "--ioengine=psync",
            "--size=8m",
            "--bs=4k",
            "--rw=randread",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
        ],
    );
    let r = parse_output(&text).unwrap().figures.read.unwrap();
    assert!(r.ios > 0 && r.lat_mean_ns > 0.0);
    let p99 = r.clat_p99_ns.expect("p99");
    assert!(p99 >= r.clat_p50_ns.unwrap());
}

#[test]
fn json_plus_and_warning_lines_parse() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "randread", &["--output-format=json+"]);
    assert!(text.contains("\"bins\""), "json+ output has latency bins");
    let plain = parse_output(&text).unwrap();
    let noisy = format!("fio: this platform does not support X\nnote: both iodepth >= 1 and synchronous I/O engine\n{text}fio: file hash not empty on exit\n");
    assert_eq!(parse_output(&noisy).unwrap(), plain);
}

#[test]
fn status_interval_keeps_the_last_document() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = fio(
        dir.path(),
        &[
            "--name=s",
            "--ioengine=null",
            "--size=64m",
            "--rw=read",
            "--runtime=3",
            "--time_based",
            "--status-interval=1",
            "--output-format=json",
        ],
    );
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .filter_map(Result::ok)
        .collect();
    assert!(docs.len() >= 2, "fio wrote {} documents", docs.len());
    let last = docs.last().unwrap()["jobs"][0]["read"]["total_ios"]
        .as_u64()
        .unwrap();
    let first = docs[0]["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    let parsed = parse_output(&text).unwrap().figures.read.unwrap();
    assert_eq!(parsed.ios, last);
    assert!(last > first);
}

#[test]
fn jobs_without_group_reporting_are_summed() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "read", &["--numjobs=2"]);
    let raw: Value = serde_json::from_str(&text).unwrap();
    let jobs = raw["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let sum: f64 = jobs
        .iter()
        .map(|j| j["read"]["iops"].as_f64().unwrap())
        .sum();
    let got = parse_output(&text).unwrap().figures.read.unwrap().iops;
    assert!((got - sum).abs() <= sum * 1e-12, "{got} vs {sum}");
}

#[test]
fn rendered_job_runs_and_options_come_back() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let w = Workload {
        rw: Rw::RandWrite,
        bs: Bytes::kib(8),
        iodepth: 4,
        numjobs: 2,
        size: Bytes::mib(32),
        offset: Bytes(0),
        runtime: Nanos::from_secs(1),
        ramp: Nanos::ZERO,
        rwmixread: 0,
        ioengine: "null".into(),
        direct: false,
    };
    std::fs::write(dir.path().join("job.fio"), render_job(&w, "data", "case")).unwrap();
    let text = fio(dir.path(), &["--output-format=json", "job.fio"]);
    let run = parse_output(&text).unwrap();
    let job = &run.jobs[0];
    assert_eq!(
        (job.rw, job.bs, job.iodepth, job.numjobs),
        (Some(Rw::RandWrite), Some(Bytes::kib(8)), Some(4), Some(2))
    );
    assert!(run.figures.write.unwrap().iops > 0.0);
}

#[test]
fn truncated_real_output_is_an_error_not_a_panic() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "read", &[]);
    for cut in (0..text.len()).step_by(97) {
        let _ = parse_output(&text[..cut]);
    }
    assert!(parse_output(&text[..text.len() / 2]).is_err());
    assert!(parse_output("fio: no such file\n").is_err());
}
