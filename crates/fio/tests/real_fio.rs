//! The parser against output the installed fio writes during the test — never hand-typed.
//! Where a shape cannot be produced by fio 3.33 itself (fio 2.x units, `global options`
//! as an array, a `nan` value), real output is restructured and the result compared with
//! the parse of the original.
//!
//! Without fio: skipped with the reason printed; in CI (`CI=true`) a missing fio fails.

use raidlab_core::{Bytes, Nanos, Rw, Workload};
use raidlab_fio::{fio_version, parse_output, render_job, ParseError};
use raidlab_testkit::require_fio;
use serde_json::Value;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn fio(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("fio")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("fio runs");
    assert!(
        out.status.success(),
        "fio {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A 1 s time-based job on the null engine (no I/O at all: fast and deterministic).
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

/// The first JSON document in fio's output (read with serde_json alone, as a reference).
fn json(text: &str) -> Value {
    let start = text.find("\n{").map_or(0, |i| i + 1);
    serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .next()
        .expect("a JSON document")
        .expect("fio's JSON")
}

/// The number literal fio printed for `"key" : …` in the `dir` object of the first job.
fn literal<'a>(text: &'a str, dir: &str, key: &str) -> &'a str {
    let from = text.find(&format!("\"{dir}\" : {{")).expect("direction");
    let at = from + text[from..].find(&format!("\"{key}\" : ")).expect("key") + key.len() + 5;
    let end = at + text[at..].find([',', '\n']).expect("end of value");
    &text[at..end]
}

#[test]
fn iops_are_fios_own_to_the_last_digit() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for rw in ["read", "randwrite", "randrw"] {
        let text = null_job(dir.path(), rw, &[]);
        let raw = json(&text);
        let run = parse_output(&text).unwrap();
        let job = &raw["jobs"][0];
        for (name, got, expected) in [
            ("read", &run.figures.read, rw != "randwrite"),
            ("write", &run.figures.write, rw != "read"),
        ] {
            if !expected {
                assert!(got.is_none(), "{rw}: no {name} figures expected");
                continue;
            }
            let d = got
                .as_ref()
                .unwrap_or_else(|| panic!("{rw}: {name} figures"));
            assert!(d.iops > 0.0);
            assert_eq!(d.iops, job[name]["iops"].as_f64().unwrap(), "{rw} {name}");
            assert_eq!(d.ios, job[name]["total_ios"].as_u64().unwrap());
            assert_eq!(d.bytes, job[name]["io_bytes"].as_u64().unwrap());
            assert_eq!(d.bw_bytes_s, job[name]["bw_bytes"].as_f64().unwrap());
            // fio prints floats with %f: six decimals reproduce its text exactly.
            assert_eq!(format!("{:.6}", d.iops), literal(&text, name, "iops"));
        }
        assert_eq!(run.jobs.len(), 1);
        assert_eq!(run.jobs[0].rw, Some(rw.parse().unwrap()));
        assert_eq!(run.jobs[0].bs, Some(Bytes::kib(4)));
        assert_eq!(run.figures.fio_version, fio_version());
    }
}

#[test]
fn fio_version_is_reported() {
    if !require_fio() {
        return;
    }
    let v = fio_version().expect("fio answers --version");
    assert!(v.starts_with("fio-"), "{v}");
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
            "--direct=0",
            "--size=8m",
            "--bs=4k",
            "--rw=randread",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
        ],
    );
    let raw = json(&text);
    let run = parse_output(&text).unwrap();
    assert!(run.figures.write.is_none());
    let r = run.figures.read.unwrap();
    assert!(r.ios > 0 && r.iops > 0.0 && r.lat_mean_ns > 0.0 && r.clat_mean_ns > 0.0);
    assert_eq!(r.iops, raw["jobs"][0]["read"]["iops"].as_f64().unwrap());
    let pct = &raw["jobs"][0]["read"]["clat_ns"]["percentile"];
    let p99 = r.clat_p99_ns.expect("p99");
    assert_eq!(p99, pct["99.000000"].as_f64().unwrap());
    assert_eq!(r.clat_p999_ns, pct["99.900000"].as_f64());
    assert!(r.clat_p50_ns.unwrap() <= r.clat_p90_ns.unwrap());
    assert!(r.clat_p90_ns.unwrap() <= p99 && p99 <= r.clat_p999_ns.unwrap());
    assert_eq!(r.clat_p95_ns, pct["95.000000"].as_f64());
    assert_eq!(r.clat_p9999_ns, pct["99.990000"].as_f64());
    assert_eq!(
        r.clat_max_ns,
        raw["jobs"][0]["read"]["clat_ns"]["max"].as_f64()
    );
    // Every percentile fio wrote, in order.
    let written = pct.as_object().unwrap();
    assert_eq!(r.clat_percentiles.len(), written.len());
    assert!(r
        .clat_percentiles
        .windows(2)
        .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    assert!(r.clat_histogram.is_empty(), "plain json has no bins");
}

#[test]
fn json_plus_parses() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "randrw", &["--output-format=json+"]);
    let raw = json(&text);
    assert!(
        raw["jobs"][0]["read"]["clat_ns"]["bins"].is_object(),
        "json+ output has latency bins"
    );
    let run = parse_output(&text).unwrap();
    assert_eq!(
        run.figures.read.as_ref().unwrap().iops,
        raw["jobs"][0]["read"]["iops"].as_f64().unwrap()
    );
    assert!(run.figures.write.as_ref().unwrap().clat_p99_ns.is_some());
    // The bins folded into power-of-two buckets keep every completion.
    let r = run.figures.read.unwrap();
    let bins: u64 = raw["jobs"][0]["read"]["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(r.clat_histogram.iter().map(|b| b.1).sum::<u64>(), bins);
    assert!(r
        .clat_histogram
        .windows(2)
        .all(|w| w[1].0 == 2.0 * w[0].0 || w[1].0 > w[0].0));
    assert!(
        r.clat_histogram.iter().all(|b| b.0.log2().fract() == 0.0),
        "powers of two"
    );
}

#[test]
fn warning_lines_around_real_output_change_nothing() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "randrw", &[]);
    let plain = parse_output(&text).unwrap();
    let noisy = format!(
        "fio: this platform does not support X\n\
         note: both iodepth >= 1 and synchronous I/O engine are selected\n\
         {text}fio: file hash not empty on exit\n{{ not json\n"
    );
    assert_eq!(parse_output(&noisy).unwrap(), plain);
    // And with the JSON glued to the end of the text (no trailing newline).
    let glued = format!("fio: warning\n{}", text.trim_end());
    assert_eq!(parse_output(&glued).unwrap(), plain);
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
        .map_while(Result::ok)
        .collect();
    assert!(docs.len() >= 2, "fio wrote {} documents", docs.len());
    let ios = |d: &Value| d["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    let (first, last) = (ios(&docs[0]), ios(docs.last().unwrap()));
    let parsed = parse_output(&text).unwrap().figures.read.unwrap();
    assert_eq!(parsed.ios, last);
    assert_eq!(
        parsed.iops,
        docs.last().unwrap()["jobs"][0]["read"]["iops"]
            .as_f64()
            .unwrap()
    );
    assert!(last >= first, "{last} < {first}");
    // Cut inside the last document: the last complete one before it is used.
    let cut = text.rfind("\"jobs\"").unwrap();
    let earlier = parse_output(&text[..cut]).unwrap().figures.read.unwrap();
    assert_eq!(earlier.ios, ios(&docs[docs.len() - 2]));
}

#[test]
fn jobs_without_group_reporting_are_summed() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "randrw", &["--numjobs=2"]);
    let raw = json(&text);
    let jobs = raw["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let run = parse_output(&text).unwrap();
    assert_eq!(run.jobs.len(), 2);
    for dir in ["read", "write"] {
        let sum = |k: &str| -> f64 { jobs.iter().map(|j| j[dir][k].as_f64().unwrap()).sum() };
        let d = match dir {
            "read" => run.figures.read.as_ref(),
            _ => run.figures.write.as_ref(),
        }
        .unwrap();
        let iops = sum("iops");
        assert!((d.iops - iops).abs() <= iops * 1e-6, "{} vs {iops}", d.iops);
        assert_eq!(d.ios as f64, sum("total_ios"));
        // Means weighted by each job's I/O count.
        let weighted: f64 = jobs
            .iter()
            .map(|j| {
                j[dir]["lat_ns"]["mean"].as_f64().unwrap() * j[dir]["total_ios"].as_f64().unwrap()
            })
            .sum::<f64>()
            / sum("total_ios");
        assert!((d.lat_mean_ns - weighted).abs() <= weighted * 1e-9);
        // Percentiles: those of the job with the most I/Os.
        let busiest = jobs
            .iter()
            .max_by_key(|j| j[dir]["total_ios"].as_u64().unwrap())
            .unwrap();
        assert_eq!(
            d.clat_p99_ns,
            busiest[dir]["clat_ns"]["percentile"]["99.000000"].as_f64()
        );
    }
}

#[test]
fn rendered_job_runs_and_options_come_back() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (rw, bs, iodepth, numjobs) in [
        (Rw::RandWrite, Bytes::kib(8), 4, 2),
        (Rw::RandRw, Bytes::kib(64), 16, 1),
        (Rw::Read, Bytes::mib(1), 1, 3),
    ] {
        let w = Workload {
            rw,
            bs,
            iodepth,
            numjobs,
            size: Bytes::mib(32),
            offset: Bytes::mib(1),
            runtime: Nanos::from_secs(1),
            ramp: Nanos::ZERO,
            rwmixread: 70,
            ioengine: "null".into(),
            direct: false,
            fio: Default::default(),
        };
        std::fs::write(dir.path().join("job.fio"), render_job(&w, "data", "case")).unwrap();
        let text = fio(dir.path(), &["--output-format=json", "job.fio"]);
        let run = parse_output(&text).unwrap();
        assert_eq!(run.jobs.len(), 1, "group_reporting: one aggregate");
        let job = &run.jobs[0];
        assert_eq!(job.name, "case");
        assert_eq!(
            (job.rw, job.bs, job.iodepth, job.numjobs),
            (Some(rw), Some(bs), Some(iodepth), Some(numjobs))
        );
        assert_eq!(
            job.options.get("ioengine").map(String::as_str),
            Some("null")
        );
        assert_eq!(
            job.options.get("filename").map(String::as_str),
            Some("data")
        );
        assert_eq!(run.figures.read.is_some(), rw.reads());
        assert_eq!(run.figures.write.is_some(), rw.writes());
        assert!(run.figures.total_iops() > 0.0);
    }
}

#[test]
fn disk_util_of_a_real_device_is_parsed() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--name=d",
        "--filename=data",
        "--ioengine=psync",
        "--size=8m",
        "--bs=4k",
        "--rw=randwrite",
        "--runtime=1",
        "--time_based",
        "--output-format=json",
    ];
    // O_DIRECT where the filesystem supports it (tmpfs does not).
    let probe = Command::new("fio")
        .current_dir(dir.path())
        .args(&args)
        .arg("--direct=1")
        .output()
        .unwrap();
    let text = if probe.status.success() {
        String::from_utf8(probe.stdout).unwrap()
    } else {
        args.push("--direct=0");
        fio(dir.path(), &args)
    };
    let raw = json(&text);
    let run = parse_output(&text).unwrap();
    let du = raw["disk_util"].as_array().cloned().unwrap_or_default();
    assert_eq!(run.figures.disk_util.len(), du.len());
    if du.is_empty() {
        eprintln!("fio reported no disk_util here (a container?): nothing more to check");
    }
    for (got, want) in run.figures.disk_util.iter().zip(&du) {
        assert_eq!(got.name, want["name"].as_str().unwrap());
        assert!(!got.name.is_empty());
        assert_eq!(got.write_ios, want["write_ios"].as_u64().unwrap());
        assert_eq!(got.util, want["util"].as_f64().unwrap());
        assert_eq!(got.aggr_util, want["aggr_util"].as_f64());
        assert_eq!(got.aggr_read_ios, want["aggr_read_ios"].as_u64());
    }
}

/// A `fio --server` on a free loopback port, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("fio")
            .current_dir(dir)
            .arg(format!("--server=ip:127.0.0.1,{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("fio --server starts");
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Entries in `client_stats` that belong to one server each (not the "All clients" sum).
fn server_entries(text: &str) -> usize {
    json(text)["client_stats"].as_array().map_or(0, |a| {
        a.iter().filter(|c| c["jobname"] != "All clients").count()
    })
}

/// Run `job` on every server in `--client` mode, retrying while the servers start: a run
/// counts only when every server answered (fio still succeeds when one is not listening
/// yet, with that server's stats missing).
fn fio_clients(dir: &Path, servers: &[Server], job: &str) -> String {
    fio_clients_with(dir, servers, job, "--output-format=json")
}

fn fio_clients_with(dir: &Path, servers: &[Server], job: &str, format: &str) -> String {
    let mut args = vec![format.to_string()];
    for s in servers {
        args.push(format!("--client=ip:127.0.0.1,{}", s.port));
        args.push(job.to_string());
    }
    let mut last_err = String::new();
    for _ in 0..20 {
        let out = Command::new("fio")
            .current_dir(dir)
            .args(&args)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        if out.status.success()
            && text.contains("client_stats")
            && server_entries(&text) == servers.len()
        {
            return text;
        }
        last_err = String::from_utf8_lossy(&out.stderr).into_owned();
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("fio --client failed: {last_err}");
}

#[test]
fn client_mode_uses_all_clients_or_the_sum() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.fio"),
        "[global]\nioengine=null\nsize=64m\nbs=4k\nruntime=1\ntime_based=1\nrw=randrw\n[a]\n",
    )
    .unwrap();

    // One server: client_stats has the job's entry only.
    let one = fio_clients(dir.path(), &[Server::start(dir.path())], "job.fio");
    let raw = json(&one);
    let clients = raw["client_stats"].as_array().unwrap();
    let run = parse_output(&one).unwrap();
    let sum: f64 = clients
        .iter()
        .map(|c| c["read"]["iops"].as_f64().unwrap())
        .sum();
    assert!((run.figures.read.unwrap().iops - sum).abs() <= sum * 1e-6);
    assert_eq!(run.jobs[0].rw, Some(Rw::RandRw), "from global options");

    // Two servers: fio adds an "All clients" entry, which is used as is.
    let servers = [Server::start(dir.path()), Server::start(dir.path())];
    let two = fio_clients(dir.path(), &servers, "job.fio");
    let raw = json(&two);
    let all = raw["client_stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["jobname"] == "All clients")
        .expect("fio writes an All clients entry for several clients");
    let run = parse_output(&two).unwrap();
    assert_eq!(run.jobs.len(), 1);
    assert_eq!(run.jobs[0].name, "All clients");
    assert_eq!(
        run.figures.read.unwrap().iops,
        all["read"]["iops"].as_f64().unwrap()
    );
    assert_eq!(
        run.figures.write.unwrap().ios,
        all["write"]["total_ios"].as_u64().unwrap()
    );
}

#[test]
fn global_options_as_an_array_are_read_alike() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.fio"),
        "[global]\nioengine=null\nsize=64m\nbs=16k\niodepth=8\nruntime=1\ntime_based=1\nrw=randread\n[a]\n",
    )
    .unwrap();
    let text = fio(dir.path(), &["--output-format=json", "job.fio"]);
    let mut raw = json(&text);
    assert!(
        raw["global options"].is_object(),
        "fio 3.33 writes an object"
    );
    let object = parse_output(&text).unwrap();
    let global = raw["global options"].take();
    raw["global options"] = Value::Array(vec![global]);
    let array = parse_output(&serde_json::to_string_pretty(&raw).unwrap()).unwrap();
    assert_eq!(array, object);
    assert_eq!(array.jobs[0].bs, Some(Bytes::kib(16)));
    assert_eq!(array.jobs[0].iodepth, Some(8));
}

#[test]
fn fio2_units_are_converted() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "randrw", &["--bs=8k"]);
    let fio3 = parse_output(&text).unwrap().figures;
    // Rewrite as fio 2.x wrote it: latencies in µs under clat/lat/slat, io_bytes in KiB,
    // bandwidth only as `bw` (KiB/s).
    let mut raw = json(&text);
    for dir in ["read", "write"] {
        let d = raw["jobs"][0][dir].as_object_mut().unwrap();
        for name in ["slat", "clat", "lat"] {
            let mut l = d.remove(&format!("{name}_ns")).unwrap();
            for k in ["min", "max", "mean", "stddev"] {
                l[k] = (l[k].as_f64().unwrap() / 1000.0).into();
            }
            if let Some(p) = l.get_mut("percentile").and_then(Value::as_object_mut) {
                for v in p.values_mut() {
                    *v = (v.as_f64().unwrap() / 1000.0).into();
                }
            }
            d.insert(name.into(), l);
        }
        let kib = d["io_bytes"].as_u64().unwrap() / 1024;
        d.insert("io_bytes".into(), kib.into());
        d.remove("io_kbytes");
        d.remove("bw_bytes");
    }
    let fio2 = parse_output(&raw.to_string()).unwrap().figures;
    let close = |a: f64, b: f64| (a - b).abs() <= b.abs() * 1e-9 + 1e-6;
    for (a, b) in [(&fio2.read, &fio3.read), (&fio2.write, &fio3.write)] {
        let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
        assert_eq!(a.iops, b.iops);
        assert_eq!(a.ios, b.ios);
        assert_eq!(a.bytes, b.bytes, "8k blocks: whole KiB");
        assert!(a.bw_bytes_s <= b.bw_bytes_s && a.bw_bytes_s > b.bw_bytes_s - 1024.0);
        assert!(
            close(a.lat_mean_ns, b.lat_mean_ns),
            "{} {}",
            a.lat_mean_ns,
            b.lat_mean_ns
        );
        assert!(close(a.clat_mean_ns, b.clat_mean_ns));
        assert!(close(a.clat_p99_ns.unwrap(), b.clat_p99_ns.unwrap()));
    }
}

#[test]
fn nan_values_read_as_null() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "read", &[]);
    let plain = parse_output(&text).unwrap();
    // fio prints floats with %f: a NaN standard deviation comes out as `-nan`.
    let mut replaced = 0;
    let mutated: String = text
        .split_inclusive('\n')
        .map(|line| {
            if line.trim_start().starts_with("\"iops_stddev\" : ") {
                replaced += 1;
                let indent = &line[..line.len() - line.trim_start().len()];
                format!("{indent}\"iops_stddev\" : -nan,\n")
            } else {
                line.to_string()
            }
        })
        .collect();
    assert!(replaced > 0, "fio 3.x writes iops_stddev");
    assert!(
        serde_json::from_str::<Value>(&mutated).is_err(),
        "not JSON as is"
    );
    assert_eq!(parse_output(&mutated).unwrap(), plain);
}

#[test]
fn truncated_real_output_is_an_error_not_a_panic() {
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = null_job(dir.path(), "randrw", &["--output-format=json+"]);
    let end = text.rfind('}').unwrap();
    let mut cut = 0;
    while cut < end {
        if text.is_char_boundary(cut) {
            assert!(parse_output(&text[..cut]).is_err(), "cut at {cut}");
        }
        cut += 41;
    }
    assert_eq!(
        parse_output(&text[..text.len() / 2]),
        Err(ParseError::Truncated)
    );
    assert_eq!(parse_output("fio: no such file\n"), Err(ParseError::NoJson));
    assert!(parse_output(&text).is_ok());
}

/// The fleet's half of client mode: each server's jobs become a run of its own, whose
/// percentiles recomputed from its json+ bins are exactly fio's; the aggregate's come from
/// the servers' bins summed, which fio itself leaves out of "All clients".
#[test]
fn client_runs_split_per_host_and_merge_histograms_for_the_fleet() {
    use raidlab_fio::clients::{percentiles_of, split};
    use std::collections::BTreeMap;
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.fio"),
        "[global]\nioengine=null\nsize=64m\nbs=4k\nruntime=1\ntime_based=1\nrw=randread\n[a]\n",
    )
    .unwrap();
    let servers = [Server::start(dir.path()), Server::start(dir.path())];
    let text = fio_clients_with(dir.path(), &servers, "job.fio", "--output-format=json+");
    let all = json(&text)["client_stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["jobname"] == "All clients")
        .cloned()
        .unwrap();
    // What fio 3.33 leaves out, and this module exists to fill in.
    assert!(all["read"]["clat_ns"].get("percentile").is_none());

    let s = split(&text).unwrap();
    assert_eq!(s.hosts.len(), 2);
    let bins_of = |lat: &Value| -> BTreeMap<u64, u64> {
        lat["bins"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
            .collect()
    };
    let ladder = |lat: &Value| -> Vec<(f64, u64)> {
        let mut v: Vec<(f64, u64)> = lat["percentile"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    };
    let (mut iops, mut ios) = (0.0, 0u64);
    let mut per_host = Vec::new();
    for (c, doc) in &s.hosts {
        assert_eq!(c.hostname, "127.0.0.1");
        let run = parse_output(&doc.to_string()).unwrap();
        assert_eq!(run.jobs.len(), 1, "one job per host");
        iops += run.figures.read.as_ref().unwrap().iops;
        ios += run.figures.read.as_ref().unwrap().ios;
        let clat = &doc["jobs"][0]["read"]["clat_ns"];
        let (bins, fio_says) = (bins_of(clat), ladder(clat));
        let n: u64 = bins.values().sum();
        let ps: Vec<f64> = fio_says.iter().map(|p| p.0).collect();
        let ours = percentiles_of(&bins, &ps);
        for ((p, want), got) in fio_says.iter().zip(&ours) {
            // fio compares in long double: where p % of the count is a whole number the
            // two roundings may pick neighbouring bins, so those points are not compared.
            let share = p / 100.0 * n as f64;
            if (share - share.round()).abs() > 1e-6 {
                assert_eq!(got, want, "p{p} of {n} samples");
            }
        }
        per_host.push(fio_says);
    }
    let agg = s.aggregate.expect("two servers have an aggregate");
    let run = parse_output(&agg.to_string()).unwrap();
    let r = run.figures.read.unwrap();
    // fio's "All clients": every completion of both hosts, over the longest host's
    // runtime (so its IOPS is the hosts' sum only to within their runtimes' difference:
    // 0.5 % apart once in CI on this 1 s null-engine job).
    assert_eq!(r.ios, ios);
    assert!((r.iops - iops).abs() <= iops * 0.05, "{} vs {iops}", r.iops);
    let clat = &agg["jobs"][0]["read"]["clat_ns"];
    assert_eq!(
        bins_of(clat).values().sum::<u64>(),
        all["read"]["clat_ns"]["N"].as_u64().unwrap(),
        "every completion of both hosts is in the merged histogram"
    );
    // A percentile of the union lies between the hosts' own.
    for (i, (p, v)) in ladder(clat).iter().enumerate() {
        let lo = per_host.iter().map(|h| h[i].1).min().unwrap();
        let hi = per_host.iter().map(|h| h[i].1).max().unwrap();
        assert!(lo <= *v && *v <= hi, "p{p}: {v} outside [{lo}, {hi}]");
    }
    assert_eq!(r.clat_p99_ns, clat["percentile"]["99.000000"].as_f64());
}
