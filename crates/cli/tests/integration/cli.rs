//! The `raidlab` binary as a user runs it.

use predicates::prelude::*;
use raidlab_testkit::{raidlab, repo_root as root, require_fio};
use serde_json::Value;
use std::path::Path;

/// Run `raidlab ARGS`, which must succeed; its standard output, as JSON.
fn json_out(args: &[&str]) -> Value {
    let out = raidlab().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn csv(dir: &Path) -> Vec<Vec<String>> {
    let out = raidlab()
        .args(["report", dir.to_str().unwrap(), "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(String::from).collect())
        .collect()
}

#[test]
fn plan_lists_the_2013_experiment_as_eight_cases() {
    let _machine = raidlab_testkit::shared();
    raidlab()
        .args(["plan", "examples/seed-2013.toml"])
        .assert()
        .success()
        .stdout(predicate::str::contains("8 cases"))
        .stdout(predicate::str::contains("raid10 n2 512k"))
        .stdout(predicate::str::contains("expected run time: 8m"));
}

#[test]
fn plan_script_is_valid_bash_with_every_step() {
    let _machine = raidlab_testkit::shared();
    let out = raidlab()
        .args(["plan", "examples/seed-2013.toml", "--script"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let script = String::from_utf8(out.stdout).unwrap();
    // Four levels × two workloads: each array is built once and runs both workloads.
    assert_eq!(script.matches("mdadm --create").count(), 4);
    assert_eq!(script.matches("fio --output-format=json").count(), 8);
    for needle in [
        "wcache_set \"${DISK[0]}\" 0",
        "mkfs.xfs -f -K -d su=512k,sw=6",
        "mount /dev/md/raidlab",
        "fio --output-format=json",
        "mdadm --zero-superblock",
        "# restore",
    ] {
        assert!(script.contains(needle), "script lacks {needle}");
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sh");
    std::fs::write(&path, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn run_stores_every_case_and_resume_runs_none_twice() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let out_s = out.to_str().unwrap();
    raidlab()
        .args(["run", "examples/quick.toml", "--out", out_s, "--quiet"])
        .assert()
        .success()
        .stdout(predicate::str::contains("raid10 f2"));
    assert!(out.join("report.html").exists());
    let rows = csv(&out);
    assert_eq!(rows[0][..4], ["case_id", "target", "engine", "level"]);
    assert_eq!(rows.len(), 1 + 16, "header + 16 cases");
    let read_iops = rows[0].iter().position(|c| c == "read_iops").unwrap();
    let write_iops = read_iops + 1;
    for r in &rows[1..] {
        let v: f64 = if r[8].contains("read") {
            r[read_iops].parse().unwrap()
        } else {
            r[write_iops].parse().unwrap()
        };
        assert!(v > 0.0, "{r:?}");
        assert_eq!(r[1], "sim");
    }
    let raw = std::fs::read_dir(out.join("raw"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(raw, 16);

    raidlab()
        .args(["run", "examples/quick.toml", "--out", out_s])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--resume"));
    raidlab()
        .args([
            "run",
            "examples/quick.toml",
            "--out",
            out_s,
            "--resume",
            "--quiet",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "16 result(s) already stored, 0 to run",
        ));
    assert_eq!(csv(&out), rows, "resume changed nothing");

    // While another writer holds the directory, a resume is refused, not interleaved.
    let held = std::fs::File::create(out.join(".lock")).unwrap();
    held.try_lock().unwrap();
    raidlab()
        .args(["run", "examples/quick.toml", "--out", out_s, "--resume"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("being written by another raidlab"));
    drop(held);
}

#[test]
fn bad_plans_name_file_line_field_and_fix() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("examples/seed-2013.toml"))
        .unwrap()
        .replace("count = 6", "count = 3");
    let line = 1 + text
        .lines()
        .position(|l| l.starts_with("level = "))
        .unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, text).unwrap();
    raidlab()
        .args(["plan", path.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "bad.toml:{line}: arrays.level = \"raid6\": raid6 needs at least 4 disks"
        )));
}

/// `raidlab sim --trace FILE`: every command the members were handed, as CSV with a header;
/// a rebuilding raid5's trace holds the workload's reads and md's sync (reads of the
/// survivors, writes of the fresh member), each completed after it was queued. A path
/// that cannot be written is an error naming the flag, and no result is printed.
#[test]
fn sim_writes_the_members_trace() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trace.csv");
    let args = [
        "sim",
        "--disks",
        "4",
        "--level",
        "raid5",
        "--state",
        "rebuilding",
        "--iodepth",
        "4",
        "--runtime",
        "3s",
        "--trace",
    ];
    raidlab()
        .args(args)
        .arg(&file)
        .assert()
        .success()
        .stdout(predicate::str::contains(",sim,md,raid5,"));
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("queued_s,done_s,member,op,offset,bytes,source")
    );
    let mut seen = std::collections::BTreeSet::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 7, "{line}");
        let queued: f64 = f[0].parse().unwrap();
        if !f[1].is_empty() {
            assert!(f[1].parse::<f64>().unwrap() >= queued, "{line}");
        }
        let member: u32 = f[2].parse().unwrap();
        assert!(member < 4, "{line}");
        assert!(f[5].parse::<u64>().unwrap() > 0, "{line}");
        if f[6] == "sync" {
            // md recovers the last member: it alone is written, the survivors read.
            assert_eq!(f[3] == "W", member == 3, "{line}");
        }
        seen.insert((f[3].to_string(), f[6].to_string()));
    }
    for want in [("R", "host"), ("R", "sync"), ("W", "sync")] {
        assert!(
            seen.contains(&(want.0.to_string(), want.1.to_string())),
            "no {want:?} in the trace"
        );
    }
    raidlab()
        .args(args)
        .arg(dir.path().join("no/such/dir/trace.csv"))
        .assert()
        .failure()
        .stdout(predicate::str::is_empty())
        .stderr(
            predicate::str::contains("--trace").and(predicate::str::contains("cannot create it")),
        );
}

#[test]
fn sim_prints_one_csv_row() {
    let _machine = raidlab_testkit::shared();
    let out = raidlab()
        .args([
            "sim",
            "--disks",
            "4",
            "--level",
            "raid5",
            "--rw",
            "randwrite",
            "--iodepth",
            "4",
            "--runtime",
            "5s",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[1].contains(",sim,md,raid5,left-symmetric,512,4,none,randwrite,4096,4,1,"),
        "{}",
        lines[1]
    );
    raidlab()
        .args(["sim", "--level", "raid6", "--disks", "3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("raid6 needs at least 4 disks"));
    // An error names the flag the bad value came from, also where flag and field differ:
    // a value of the wrong type at parsing (clap), a rule of the plan's after.
    for (args, flag) in [
        (["--disk", "nope"], "(from --disk)"),
        (
            ["--disk-capacity", "lots"],
            "for '--disk-capacity <DISK_CAPACITY>'",
        ),
        (["--chunk", "96k"], "(from --chunk)"),
        (
            ["--level", "raid7"],
            "for '--level <LEVEL>': use one of single",
        ),
    ] {
        raidlab()
            .arg("sim")
            .args(args)
            .assert()
            .failure()
            .stderr(predicate::str::contains(flag));
    }
    // A simulated resync is flagged like a measured one.
    let flagged = |resync: &str| {
        let v = json_out(&[
            "sim",
            "--level",
            "raid5",
            "--rw",
            "randwrite",
            "--iodepth",
            "4",
            "--runtime",
            "5s",
            "--resync",
            resync,
            "--format",
            "json",
        ]);
        v[0]["anomalies"].as_str().unwrap().contains("resync")
    };
    assert!(flagged("during"));
    assert!(!flagged("assume-clean"));
}

/// A flag's value reaches the plan as text whatever it holds: a control character is the
/// flag's bad value, not a TOML syntax error from text written for the parser.
#[test]
fn sim_flag_values_are_never_toml_text() {
    raidlab()
        .args(["sim", "--disk", "a\u{1b}b\"\n[run]"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "disks.model = \"a\\u{1b}b\\\"\\n[run]\": unknown disk model",
        ))
        .stderr(predicate::str::contains("(from --disk)"));
    raidlab()
        .args(["sim", "--disk-param", "queue_depth=\u{1}"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("(from --disk-param)"));
}

/// `--disk-param` overrides a preset's figure; the model the run used is in the fio JSON,
/// and `disks --models` lists the names it takes.
#[test]
fn sim_disk_params_change_the_disk_and_are_listed() {
    let _machine = raidlab_testkit::shared();
    let fio_json = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            "--disks",
            "1",
            "--level",
            "single",
            "--iodepth",
            "16",
            "--runtime",
            "5s",
            "--format",
            "fio-json",
        ];
        args.extend(extra);
        let v = json_out(&args);
        let iops = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
        (iops, v)
    };
    let (ncq, _) = fio_json(&[]);
    let (fifo, v) = fio_json(&["--disk-param", "queue_depth=1"]);
    assert!(
        ncq > fifo * 1.3,
        "NCQ at QD16 ({ncq:.0} IOPS) should beat a disk without it ({fifo:.0})"
    );
    let recorded = v.to_string();
    assert!(
        recorded.contains("\"queue_depth\":1"),
        "the overridden model is recorded: {recorded:.400}"
    );
    raidlab()
        .args(["sim", "--disk-param", "seek_time=9ms"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "disks.params.seek_time = \"9ms\": hdd-7200 has no such parameter",
        ))
        .stderr(predicate::str::contains("avg_seek"));
    let listed = raidlab().args(["disks", "--models"]).output().unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    for name in ["hdd-7200-500g-2010", "nvme", "throttle-75"] {
        assert!(listed.contains(name), "{name} listed");
    }
    assert!(listed.contains("queue_depth") && listed.contains("parallel_units"));
    // A preset with no port's segment count says what its 0 means.
    assert!(
        listed.contains("max_segments     0   (none: requests held to max_sectors_kb alone"),
        "{listed}"
    );
}

#[test]
fn import_a_bench_fio_tree_keeps_fios_iops_to_the_last_digit() {
    let _machine = raidlab_testkit::shared();
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let mut expected = Vec::new();
    for (mode, qd, jobs) in [("randread", 1, 1), ("randwrite", 4, 2), ("read", 8, 1)] {
        let leaf = tree.join("dev-null").join(mode).join("4k");
        std::fs::create_dir_all(&leaf).unwrap();
        let out = std::process::Command::new("fio")
            .args([
                "--name=b",
                "--ioengine=null",
                "--size=32m",
                "--bs=4k",
                "--runtime=1",
                "--time_based",
                "--group_reporting",
                "--output-format=json",
            ])
            .arg(format!("--rw={mode}"))
            .arg(format!("--iodepth={qd}"))
            .arg(format!("--numjobs={jobs}"))
            .output()
            .unwrap();
        assert!(out.status.success());
        let mut text = String::from_utf8(out.stdout).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let dir_key = if mode.contains("write") {
            "write"
        } else {
            "read"
        };
        expected.push((mode, v["jobs"][0][dir_key]["iops"].as_f64().unwrap()));
        if mode == "read" {
            text = format!("fio: this platform does not support ioscheduler switching\n{text}note: trailing line\n");
        }
        std::fs::write(leaf.join(format!("{mode}-{qd}-{jobs}.json")), text).unwrap();
    }
    std::fs::write(tree.join("dev-null").join("broken.json"), "{ not json").unwrap();
    let store = dir.path().join("store");
    raidlab()
        .args([
            "import",
            tree.to_str().unwrap(),
            "--out",
            store.to_str().unwrap(),
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("imported 3 of 4"))
        .stderr(predicate::str::contains("broken.json: no fio JSON found"));
    let rows = csv(&store);
    let col = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    for (mode, iops) in expected {
        let r = rows.iter().find(|r| r[col("rw")] == mode).unwrap();
        let c = if mode.contains("write") {
            col("write_iops")
        } else {
            col("read_iops")
        };
        assert_eq!(r[c].parse::<f64>().unwrap(), iops, "{mode}");
        assert_eq!(
            r[col("level")],
            "",
            "imported cases leave array columns empty"
        );
    }
    let r = rows.iter().find(|r| r[col("rw")] == "randwrite").unwrap();
    assert_eq!(
        (r[col("iodepth")].as_str(), r[col("numjobs")].as_str()),
        ("4", "2")
    );
}

#[test]
fn completions_and_man_page_come_from_the_clap_definition() {
    let _machine = raidlab_testkit::shared();
    // Completions offer the values of word flags (issue 19, item 6), not files.
    raidlab()
        .args(["completions", "bash"])
        .assert()
        .success()
        .stdout(predicate::str::contains("raidlab"))
        .stdout(predicate::str::contains("html csv json md"))
        .stdout(predicate::str::contains(
            "level layout chunk bs iodepth numjobs disks rw",
        ))
        .stdout(predicate::str::contains("csv json fio-json"));
    raidlab()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::contains(".TH raidlab"));
    raidlab()
        .arg("--help")
        .assert()
        .success()
        .stdout(predicate::str::contains("Run every case of a plan"));
}

fn run_plan(plan: &str, out: &Path, seed: &str) {
    raidlab()
        .args(["run", plan, "--quiet", "--seed", seed, "--out"])
        .arg(out)
        .assert()
        .success();
}

/// Issue 6: `report --x DIM --y METRIC` adds a chart with a point per x value; unknown
/// names fail with the list of valid ones.
#[test]
fn report_x_y_chart_and_unknown_names() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    run_plan("examples/seed-2013.toml", &out, "1");
    let html = dir.path().join("xy.html");
    raidlab()
        .args([
            "report",
            out.to_str().unwrap(),
            "--x",
            "level",
            "--y",
            "write_iops",
            "-o",
        ])
        .arg(&html)
        .assert()
        .success();
    let text = std::fs::read_to_string(&html).unwrap();
    // Each chart links to itself as an SVG file beside the page.
    let files = std::fs::read_dir(dir.path().join("xy-charts"))
        .unwrap()
        .count();
    assert_eq!(files, text.matches("<svg ").count());
    assert_eq!(
        text.matches("<a class=\"dl\" href=\"xy-charts/").count(),
        files
    );
    assert!(text.contains("href=\"xy-charts/001-"), "numbered from 001");
    let chart = text
        .split("<svg class=\"chart custom\"")
        .nth(1)
        .expect("custom chart");
    let chart = &chart[..chart.find("</svg>").unwrap()];
    for level in ["raid0", "raid10", "raid5", "raid6"] {
        assert_eq!(
            chart.matches(&format!("data-x=\"{level}\"")).count(),
            1,
            "{level}: one series (layout follows level), one point"
        );
    }
    raidlab()
        .args(["report", out.to_str().unwrap(), "--x", "colour"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("unknown dimension `colour`").and(
            predicate::str::contains("level, layout, chunk, bs, iodepth, numjobs, disks, rw"),
        ));
    raidlab()
        .args([
            "report",
            out.to_str().unwrap(),
            "--x",
            "chunk",
            "--y",
            "speed",
        ])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("unknown metric `speed`")
                .and(predicate::str::contains("iops, read_iops, write_iops, bw")),
        );
    // The chart alone, as a standalone SVG whose marks sit at their values.
    let svg = dir.path().join("chart.svg");
    raidlab()
        .args([
            "report",
            out.to_str().unwrap(),
            "--x",
            "level",
            "--y",
            "write_iops",
        ])
        .args(["--format", "svg", "-o"])
        .arg(&svg)
        .assert()
        .success();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{text}"
    );
    assert!(text.contains("<style>") && text.trim_end().ends_with("</svg>"));
    crate::geometry::check_alone(&text, "chart.svg", &["custom"]);
    raidlab()
        .args(["report", out.to_str().unwrap(), "--format", "svg"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("into a directory (-o charts/)"));
    // Every chart of the report, each a file of its own.
    let charts = dir.path().join("charts");
    raidlab()
        .args(["report", out.to_str().unwrap(), "--format", "svg", "-o"])
        .arg(&charts)
        .assert()
        .success();
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    let mut files: Vec<_> = std::fs::read_dir(&charts)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), page.matches("<svg ").count());
    assert!(files[0]
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("001-"));
    for f in &files {
        let svg = std::fs::read_to_string(f).unwrap();
        assert!(
            svg.starts_with("<svg xmlns=") && svg.ends_with("</svg>"),
            "{f:?}"
        );
    }
}

/// Issue 6: `compare` says a single run cannot be tested, and runs Mann–Whitney U on
/// repetitions.
#[test]
fn compare_one_run_and_repetitions() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    run_plan("examples/seed-2013.toml", &a, "1");
    run_plan("examples/seed-2013.toml", &b, "2");
    let out = raidlab()
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Mann–Whitney U"), "{text}");
    assert!(text.contains("8 case(s) in both"), "{text}");
    assert_eq!(
        text.matches("not testable, 1 run").count(),
        8 * 4,
        "8 cases × (IOPS, MiB/s, mean, p99) of their one direction: {text}"
    );

    let plan = dir.path().join("rep.toml");
    std::fs::write(
        &plan,
        "name = \"rep\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"raid5\"\n\
         chunk = \"512k\"\nfilesystem = \"xfs\"\nwrite_cache = \"off\"\n[workloads]\nrw = \"randwrite\"\n\
         bs = \"4k\"\niodepth = 8\nsize = \"10g\"\nruntime = \"5s\"\n[run]\nrepeat = 4\n",
    )
    .unwrap();
    let c = dir.path().join("c");
    run_plan(plan.to_str().unwrap(), &c, "1");
    let html = std::fs::read_to_string(c.join("report.html")).unwrap();
    assert_eq!(
        html.matches("<line class=\"spread\" data-label=\"raid5 512k\"")
            .count(),
        1,
        "the write IOPS chart shows the 4 repetitions' range"
    );
    let out = raidlab()
        .args(["compare", c.to_str().unwrap(), c.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.matches("not significant (p = 1.000, Holm 1.000) (A 4 run(s), B 4)")
            .count(),
        4,
        "identical runs: {text}"
    );
    raidlab()
        .args(["compare", a.to_str().unwrap(), c.to_str().unwrap()])
        .assert()
        .failure()
        .stderr(predicate::str::contains("no case id is in both"))
        .stderr(predicate::str::contains("--match level,rw,bs,iodepth"));
    // Paired by dimensions instead: the seed's raid5 random writes against the 4-disk
    // plan's, which differ in disks, model and more.
    let out = raidlab()
        .args(["compare", a.to_str().unwrap(), c.to_str().unwrap()])
        .args(["--match", "level,rw", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = lines.as_array().unwrap();
    assert_eq!(lines.len(), 4, "write IOPS, MiB/s, mean and p99: {lines:?}");
    assert!(lines[0]["differs"]
        .as_str()
        .unwrap()
        .contains("disks.count 6 → 4"));
    raidlab()
        .args([
            "compare",
            a.to_str().unwrap(),
            c.to_str().unwrap(),
            "--match",
            "rw",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "A has 4 results with workload.rw=randread: they differ in layout, level",
        ));
}

/// Issue 19, item 4: `compare DIR --by bitmap` pairs the cases that differ only in their
/// bitmap, with medians, change, interval and Holm-adjusted verdicts, in every format.
#[test]
fn compare_by_a_dimension_within_one_directory() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    run_plan(
        root()
            .join("crates/cli/tests/integration/plans/bitmap-cost.toml")
            .to_str()
            .unwrap(),
        &out,
        "1",
    );
    let r = out.to_str().unwrap();
    let csv_out = raidlab()
        .args([
            "compare",
            r,
            "--by",
            "bitmap",
            "--baseline",
            "none",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    assert!(
        csv_out.status.success(),
        "{}",
        String::from_utf8_lossy(&csv_out.stderr)
    );
    let text = String::from_utf8(csv_out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][4], "metric");
    assert_eq!(rows.len(), 1 + 4, "one pair × the write metrics: {text}");
    for row in &rows[1..] {
        assert_eq!(row[3], "array.bitmap none → internal", "{row:?}");
        let (lo, change, hi): (f64, f64, f64) = (
            row[8].parse().unwrap(),
            row[7].parse().unwrap(),
            row[9].parse().unwrap(),
        );
        assert!(lo <= change && change <= hi, "{row:?}");
        let (p, adjusted): (f64, f64) = (row[12].parse().unwrap(), row[13].parse().unwrap());
        assert!(
            adjusted >= p && adjusted <= (4.0 * p).min(1.0) + 1e-12,
            "Holm: {row:?}"
        );
    }
    let iops = rows.iter().find(|r| r[4] == "write IOPS").unwrap();
    assert!(
        iops[7].parse::<f64>().unwrap() < 0.0,
        "the bitmap costs writes: {iops:?}"
    );
    assert_eq!(iops[14], "significant", "5 runs a side: {iops:?}");

    let html = dir.path().join("c.html");
    raidlab()
        .args(["compare", r, "--by", "bitmap", "--format", "html", "-o"])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(
        page.matches("<svg class=\"chart vs-model compare\"")
            .count(),
        4
    );
    crate::geometry::check_alone(&page, "compare", &["vs-model"]);

    raidlab()
        .args(["compare", r, "--by", "speed"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("unknown dimension `speed`: use one of")
                .and(predicate::str::contains("bitmap")),
        );
    raidlab()
        .args(["compare", r])
        .assert()
        .failure()
        .stderr(predicate::str::contains("or one with --by DIM"));
    raidlab()
        .args(["compare", r, "--by", "level"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "no two cases differ only in array.level",
        ));
}

/// Issue 6: the anomaly rules reach the exports and the report through the store: a
/// repetition recorded with a resync and a write cache left on is flagged, with the
/// sentences in the HTML; per case the report shows the environment and the commands.
#[test]
fn recorded_environment_flags_anomalies_in_the_report() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    run_plan("examples/seed-2013.toml", &out, "1");
    let mut store = raidlab_store::Store::open(&out).unwrap();
    let first = store
        .results()
        .unwrap()
        .into_iter()
        .find(|r| r.figures.write.is_some())
        .unwrap();
    let raw = std::fs::read(store.raw_path(&first)).unwrap();
    store
        .commit_result(&raidlab_store::NewResult {
            case_id: first.case_id.clone(),
            repetition: 2,
            target: first.target.clone(),
            figures: first.figures.clone(),
            raw_json: raw,
            logs: vec![],
            environment: serde_json::from_value(serde_json::json!({
                "resync_during_fio": true,
                "write_cache_after": {"/dev/sda": false, "/dev/sdb": true},
            }))
            .unwrap(),
            started_unix: 0,
            wall_ns: 1,
            source: None,
        })
        .unwrap();
    drop(store);

    let rows = csv(&out);
    let col = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    let flagged: Vec<&Vec<String>> = rows[1..]
        .iter()
        .filter(|r| !r[col("anomalies")].is_empty())
        .collect();
    assert_eq!(flagged.len(), 1, "{rows:?}");
    assert_eq!(flagged[0][col("case_id")], first.case_id.0);
    assert_eq!(flagged[0][col("anomalies")], "resync write-cache");
    assert_eq!(flagged[0][col("repetitions")], "2");

    raidlab()
        .args(["report", out.to_str().unwrap()])
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("Repetition 2: An md resync or recovery ran during the test"));
    assert!(
        html.contains("the cache was on for /dev/sdb:"),
        "only the member with it on"
    );
    assert!(!html.contains("No anomaly rule fired"));
    assert!(html.contains("mdadm --create"), "the case's commands");
    assert!(html.contains("\"disk_model\""), "the environment");
}

/// Issue 6: with `single` cases in the plan (the 2019 write-up), every array case is held
/// against the measured per-disk baseline of its workload and the baselines against the
/// disk model; sequential raid5 and raid10 f2 reads land where (N − 1) and N baseline disks
/// put them.
#[test]
fn arrays_are_held_against_the_plans_single_disk_baseline() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    run_plan("examples/seed-2019.toml", &out, "1");
    let rows = csv(&out);
    let col = |name: &str| rows[0].iter().position(|c| c == name).unwrap();
    assert_eq!(rows.len(), 17);
    for r in &rows[1..] {
        let expected = if r[col("level")] == "single" {
            "disk-model"
        } else {
            "baseline"
        };
        assert_eq!(r[col("model_basis")], expected, "{r:?}");
    }
    let dev = |level: &str, layout: &str, rw: &str| -> f64 {
        let r = rows[1..]
            .iter()
            .find(|r| r[col("level")] == level && r[col("layout")] == layout && r[col("rw")] == rw)
            .unwrap();
        r[col("deviation")].parse().unwrap()
    };
    assert!(dev("raid5", "left-symmetric", "read").abs() < 0.05);
    assert!(dev("raid10", "f2", "read").abs() < 0.05);
    assert!(dev("raid10", "n2", "randwrite").abs() < 0.1);
}

#[test]
fn a_target_that_cannot_start_leaves_no_results_directory() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    raidlab()
        .args([
            "run",
            "examples/seed-2013.toml",
            "--target",
            "host",
            "--out",
        ])
        .arg(&out)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "the host target needs real devices",
        ));
    assert!(
        !out.join("raidlab.sqlite").exists(),
        "a rerun would ask for --resume of a run that never started"
    );
}

/// `--host-queue` reaches the simulator (raid10's second copy waits for a slot), a zero
/// is refused by the flag's name, and a real target says it runs on the adapter it has.
#[test]
fn host_queue_limits_the_sim_and_is_refused_elsewhere() {
    let _machine = raidlab_testkit::shared();
    let iops = |extra: &[&str]| {
        let mut args = vec![
            "sim",
            "--disks",
            "6",
            "--disk",
            "hdd-7200-500g-2010",
            "--level",
            "raid10",
            "--rw",
            "randwrite",
            "--iodepth",
            "4",
            "--size",
            "10g",
            "--runtime",
            "10s",
            "--format",
            "fio-json",
        ];
        args.extend(extra);
        let v = json_out(&args);
        v["jobs"][0]["write"]["iops"].as_f64().unwrap()
    };
    let (free, capped) = (iops(&[]), iops(&["--host-queue", "4"]));
    assert!(
        capped < free * 0.85,
        "{capped:.1} IOPS behind 4 slots, {free:.1} without"
    );
    raidlab()
        .args(["sim", "--host-queue", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("disks.host_queue = 0"))
        .stderr(predicate::str::contains("(from --host-queue)"));
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    let text = std::fs::read_to_string(root().join("examples/seed-2013.toml")).unwrap();
    let text = text.replace("host_queue = 3\n", "");
    std::fs::write(&plan, text.replace("[arrays]", "host_queue = 4\n[arrays]")).unwrap();
    raidlab()
        .args(["run", "--target", "host", "--out"])
        .arg(dir.path().join("r"))
        .arg(&plan)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "host_queue = 4 is for the sim target; the host target runs on the adapter it has",
        ))
        .stderr(predicate::str::contains(
            "the host target needs real devices",
        ));
    // The preview of such a run says so too.
    raidlab()
        .args(["run", "--dry-run", "--target", "host", "--out"])
        .arg(dir.path().join("r"))
        .arg(&plan)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "host_queue = 4 is for the sim target; the host target runs on the adapter it has",
        ));
}

/// The report's commands for a case name the devices its array uses — the plan's first n —
/// not every device of the plan.
#[test]
fn report_commands_name_only_the_arrays_devices() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    std::fs::write(
        &plan,
        "name = \"devices\"\n[disks]\ncount = 3\nmodel = \"hdd-7200\"\n\
         devices = [\"/dev/fake-a\", \"/dev/fake-b\", \"/dev/fake-c\"]\n\
         [[arrays]]\nlevel = \"single\"\nfilesystem = \"none\"\nwrite_cache = \"off\"\n\
         [[arrays]]\nlevel = \"raid5\"\nfilesystem = \"none\"\nwrite_cache = \"off\"\n\
         [workloads]\nrw = \"randread\"\nbs = \"4k\"\niodepth = 1\nsize = \"1g\"\nruntime = \"2s\"\n",
    )
    .unwrap();
    let out = dir.path().join("r");
    raidlab()
        .args(["run", "-q", "--out"])
        .arg(&out)
        .arg(&plan)
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let detail = |label: &str| -> String {
        html.split("<details>")
            .find(|d| d.contains(&format!("<summary><b>{label}")))
            .unwrap_or_else(|| panic!("a details section for {label}"))
            .to_string()
    };
    let single = detail("single");
    assert!(single.contains("wcache_set /dev/fake-a"), "{single:.2000}");
    assert!(!single.contains("fake-b") && !single.contains("fake-c"));
    let raid5 = detail("raid5");
    for d in ["fake-a", "fake-b", "fake-c"] {
        assert!(raid5.contains(&format!("wcache_set /dev/{d}")), "{d}");
    }
}

/// Issue 15, item 11: with standard output and error closed (`raidlab run … 2>&1 | head
/// -3` once head has exited), a run does not panic: it finishes and stores every result.
#[test]
fn a_closed_stderr_does_not_stop_a_run() {
    let _machine = raidlab_testkit::shared();
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let mut child = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .current_dir(root())
        .args(["run", "examples/quick.toml", "--out"])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before raidlab writes a line.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_ne!(status.code(), Some(101), "raidlab panicked: {status}");
    let v = json_out(&["report", out.to_str().unwrap(), "--format", "json"]);
    assert_eq!(v.as_array().map(Vec::len), Some(16), "{v}");
}

/// Issue 15, item 8: the hints name the target, and `--resume` on another target than the
/// directory's is refused — one results directory never mixes targets.
#[test]
fn resume_keeps_to_the_directorys_target_and_hints_name_it() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    raidlab()
        .args(["run", "examples/quick.toml", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    raidlab()
        .args([
            "run",
            "examples/quick.toml",
            "--target",
            "vm",
            "--resume",
            "--out",
        ])
        .arg(&out)
        .assert()
        .failure()
        .stderr(predicate::str::contains("holds results of the sim target"))
        .stderr(predicate::str::contains("never mixes targets"));
    // A plan with devices passes the host target's plan check; the hint names the target.
    let plan = dir.path().join("p.toml");
    let text = std::fs::read_to_string(root().join("examples/quick.toml")).unwrap();
    let devices = "devices = [\"/dev/raidlab-a\", \"/dev/raidlab-b\", \"/dev/raidlab-c\", \"/dev/raidlab-d\"]";
    std::fs::write(&plan, text.replace("model = \"hdd-7200\"", devices)).unwrap();
    raidlab()
        .args(["run", "--target", "host", "--out"])
        .arg(&out)
        .arg(&plan)
        .assert()
        .failure()
        .stderr(predicate::str::contains("--target host --resume --out"));
}

/// Issue 15, item 9: `import` of a hostile tree — a symbolic-link loop, a FIFO named
/// `*.json`, impossible figures — ends, imports the good file once, names each file it
/// left out, and leaves a store whose report works.
#[test]
fn import_survives_link_loops_fifos_and_impossible_figures() {
    let _machine = raidlab_testkit::shared();
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let leaf = tree.join("randread").join("4k");
    std::fs::create_dir_all(&leaf).unwrap();
    let out = std::process::Command::new("fio")
        .args([
            "--name=b",
            "--ioengine=null",
            "--size=16m",
            "--rw=randread",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let good = String::from_utf8(out.stdout).unwrap();
    std::fs::write(leaf.join("randread-1-1.json"), &good).unwrap();
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["jobs"][0]["read"]["lat_ns"]["mean"] = serde_json::json!(1e308);
    std::fs::write(leaf.join("randread-2-1.json"), v.to_string()).unwrap();
    let mut v: Value = serde_json::from_str(&good).unwrap();
    v["jobs"][0]["read"]["iops"] = serde_json::json!(-5.0);
    std::fs::write(leaf.join("randread-4-1.json"), v.to_string()).unwrap();
    std::os::unix::fs::symlink(&tree, leaf.join("loop")).unwrap();
    std::os::unix::fs::symlink(leaf.join("randread-1-1.json"), leaf.join("again.json")).unwrap();
    let fifo = leaf.join("pipe.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let store = dir.path().join("store");
    raidlab()
        .args([
            "import",
            tree.to_str().unwrap(),
            "--out",
            store.to_str().unwrap(),
        ])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success()
        .stderr(predicate::str::contains("imported 1 of 3"))
        .stderr(predicate::str::contains(
            "again.json: a symbolic link, not followed",
        ))
        .stderr(predicate::str::contains("pipe.json: not a regular file"))
        .stderr(predicate::str::contains(
            "randread-2-1.json: impossible figure read lat mean",
        ))
        .stderr(predicate::str::contains(
            "randread-4-1.json: impossible figure read iops = -5e0",
        ));
    assert_eq!(csv(&store).len(), 2, "a header and the one good result");
    raidlab()
        .args(["report", store.to_str().unwrap()])
        .assert()
        .success();
}

/// Issue 19, item 6: counts agree with their nouns ("1 case", not "1 cases"), and `--out`
/// and `--output` name the same thing in every command that writes somewhere.
#[test]
fn one_case_is_one_case_and_out_is_output() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("one.toml");
    std::fs::write(
        &plan,
        "name = \"one\"\n[disks]\ncount = 1\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"single\"\nfilesystem = \"none\"\n[workloads]\nrw = \"randread\"\nruntime = \"2s\"\n",
    )
    .unwrap();
    raidlab()
        .args(["plan", plan.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "plan `one`: 1 case × 1 repetition",
        ));
    let out = dir.path().join("r");
    raidlab()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--output"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(">1 case · target sim"), "the report's note");
    let csv_file = dir.path().join("rows.csv");
    raidlab()
        .args(["report", out.to_str().unwrap(), "--format", "csv", "--out"])
        .arg(&csv_file)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&csv_file)
        .unwrap()
        .starts_with("case_id,"));
}

/// Issue 19, item 6: a finding shared by several repetitions is one sentence naming them,
/// not the same sentence once per repetition.
#[test]
fn an_anomaly_of_every_repetition_is_said_once() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("resync.toml");
    std::fs::write(
        &plan,
        "name = \"resync\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"raid5\"\nfilesystem = \"none\"\nresync = \"during\"\n[workloads]\nrw = \"randread\"\nruntime = \"3s\"\n[run]\nrepeat = 2\n",
    )
    .unwrap();
    let out = dir.path().join("r");
    raidlab()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let sentence = "Repetitions 1, 2: An md resync or recovery ran during the test";
    assert_eq!(
        html.matches(sentence).count(),
        2,
        "once in the list, once in the case's details"
    );
    assert!(
        !html.contains("Repetition 1: An md resync"),
        "no per-repetition copies"
    );
}

/// `raidlab sim --state degraded` and `rebuilding`: degraded reads and writes run and are
/// labelled so; a rebuilding case adds its recovery's figures (loaded and idle, the idle
/// one well under the loaded one); a level without redundancy is refused with the reason.
#[test]
fn sim_runs_degraded_and_rebuilding_arrays() {
    let _machine = raidlab_testkit::shared();
    let csv = |extra: &[&str]| {
        let out = raidlab()
            .args(["sim", "--runtime", "5s"])
            .args(extra)
            .assert()
            .success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let mut lines = text.lines();
        let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        let row: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        move |column: &str| row[head.iter().position(|h| h == column).unwrap()].clone()
    };
    let reads = csv(&["--state", "degraded"]);
    assert_eq!(
        (reads("state"), reads("failed")),
        ("degraded".into(), "1".into())
    );
    let writes = csv(&["--state", "degraded", "--rw", "randwrite"]);
    assert!(writes("write_iops").parse::<f64>().unwrap() > 0.0);
    let rebuilding = csv(&["--state", "rebuilding", "--kernel", "6.15"]);
    assert_eq!(rebuilding("state"), "rebuilding");
    let loaded: f64 = rebuilding("rebuild_s_full").parse().unwrap();
    let idle: f64 = rebuilding("rebuild_s_idle").parse().unwrap();
    assert!(rebuilding("rebuild_mib_s").parse::<f64>().unwrap() > 0.0);
    // fio's slat: how long md held a read before taking it (stripe heads the recovery
    // holds); nothing holds a degraded array's reads.
    let ms = |v: String| v.parse::<f64>().unwrap();
    let slat = ms(rebuilding("read_slat_mean_ms"));
    let lat = ms(rebuilding("read_lat_mean_ms"));
    assert!(slat > 0.0 && slat < lat, "slat {slat} ms, lat {lat} ms");
    assert_eq!(ms(reads("read_slat_mean_ms")), 0.0);
    assert!(
        idle > 3600.0 && idle < loaded,
        "idle {idle:.0} s, loaded {loaded:.0} s"
    );
    // A light workload beside the rebuild: fio's rate_iops, as a plan's [workloads.fio] has it.
    // In service (md's 256 heads): from the cache a layout pass grows, `raidlab run`'s
    // start, this raid5's recovery runs at its members' speed, and md, seeing too little
    // of the workload to call the array busy, lets it starve the reads (4.2 a second over
    // 5 s; from 256 heads the cache grows as far within a minute: 11.3 over 60 s).
    let light = csv(&[
        "--state",
        "rebuilding",
        "--kernel",
        "6.15",
        "--rate-iops",
        "30",
        "--in-service",
    ]);
    let iops = ms(light("read_iops"));
    assert!(iops > 25.0 && iops <= 30.5, "{iops} IOPS capped at 30");
    // It leaves the recovery more than the saturating workload does, from the same start.
    let saturated = csv(&["--state", "rebuilding", "--kernel", "6.15", "--in-service"]);
    assert!(ms(light("rebuild_mib_s")) > ms(saturated("rebuild_mib_s")));
    raidlab()
        .args([
            "sim",
            "--runtime",
            "1s",
            "--level",
            "raid10",
            "--layout-pass",
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "--layout-pass changes nothing here",
        ));
    raidlab()
        .args(["sim", "--runtime", "1s", "--layout-pass"])
        .assert()
        .success()
        .stderr(predicate::str::contains("changes nothing").not());
    // A rebuilding raid5 starts from the cache its layout pass grew, as `raidlab run`
    // starts it; `--in-service` from md's 256 heads.
    let heads = |extra: &[&str]| {
        let out = raidlab()
            .args(["sim", "--runtime", "1s", "--level", "raid5", "--disks", "4"])
            .args(["--size", "64m", "--format", "fio-json"])
            .args(extra)
            .assert()
            .success();
        let doc: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        doc["raidlab"]["stripe_cache_heads_at_start"]
            .as_u64()
            .unwrap()
    };
    let rebuilding = ["--state", "rebuilding", "--kernel", "6.15"];
    let run = heads(&rebuilding);
    assert!(run > 256, "the layout pass grew the cache: {run} heads");
    assert_eq!(heads(&[&rebuilding[..], &["--layout-pass"]].concat()), run);
    let service = heads(&[&rebuilding[..], &["--in-service"]].concat());
    assert_eq!(service, 256, "md's stripe_cache_size");
    assert_eq!(heads(&[]), 256, "a healthy array is simulated in service");
    assert_eq!(heads(&["--layout-pass"]), run, "unless asked for the pass");
    raidlab()
        .args(["sim", "--layout-pass", "--in-service"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("cannot be used with"));
    raidlab()
        .args(["sim", "--rate-iops", "1.5k"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("(from --rate-iops)"));
    raidlab()
        .args(["sim", "--level", "raid0", "--state", "degraded"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("raid0 has no redundancy"))
        .stderr(predicate::str::contains("(from --state)"));
    raidlab()
        .args([
            "sim", "--level", "raid5", "--state", "degraded", "--failed", "2",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "raid5 survives at most 1 failed member",
        ))
        .stderr(predicate::str::contains("(from --failed)"));
}

/// The report's probability of losing data is for what follows a disk failure: a fresh
/// member recovered whole. A re-add (`rejoin = "re-add"`, what the bitmap flagged while a
/// member was away) has its rebuild figures and no probability.
#[test]
fn a_re_add_has_no_probability_of_loss() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("readd.toml");
    let array = "level = \"raid1\"\ndisks = 2\nfilesystem = \"none\"\nbitmap = \"internal\"\nstate = \"rebuilding\"\n";
    std::fs::write(
        &plan,
        format!("name = \"readd\"\n[disks]\ncount = 2\nmodel = \"hdd-7200\"\n[[arrays]]\n{array}[[arrays]]\n{array}rejoin = \"re-add\"\n[[workloads]]\nrw = \"randread\"\nsize = \"1g\"\nruntime = \"5s\"\n"),
    )
    .unwrap();
    let out = dir.path().join("out");
    raidlab()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let json = raidlab()
        .args(["report", out.to_str().unwrap(), "--format", "json"])
        .assert()
        .success();
    let doc: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let rows = doc.as_array().expect("one object per case");
    assert_eq!(rows.len(), 2);
    for row in rows {
        let label = row["array_label"].as_str().unwrap();
        assert!(
            row["rebuild_s_full"].as_f64().is_some(),
            "{label}: a rebuild time"
        );
        let loss = &row["loss_5y"];
        if label.ends_with("re-add") {
            assert!(loss.is_null(), "{label}: {loss}");
        } else {
            let p = loss.as_f64().unwrap();
            assert!(p > 0.0 && p < 1.0, "{label}: {p}");
        }
    }
}

/// Issue 19, item 5: the sim target runs a plan with `[workloads.fio]` and says which of
/// those options it does not model; `rate_iops` it models (fio's linear rate, per job) for
/// a workload of one direction, and notes for a mix.
#[test]
fn the_simulator_notes_the_fio_options_it_does_not_model() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("fsync.toml");
    std::fs::write(
        &plan,
        "name = \"fsync\"\n[disks]\ncount = 1\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"single\"\nfilesystem = \"none\"\n[workloads]\nrw = \"randwrite\"\nruntime = \"1s\"\n[workloads.fio]\nfsync = 1\nrate_iops = 50\n",
    )
    .unwrap();
    raidlab()
        .args(["run", plan.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.path().join("r"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "workloads.fio (fsync) is passed to fio on the host and vm targets; the simulator does not model it",
        ));
    // One 7200 RPM disk writes 4 KiB at random far faster with its cache on: held to 50.
    let store = raidlab_store::Store::open(&dir.path().join("r")).unwrap();
    let results = store.results().unwrap();
    let iops = results[0].figures.write.as_ref().unwrap().iops;
    assert!((iops - 50.0).abs() < 1.0, "rate_iops = 50: {iops:.1} IOPS");
    let mix = dir.path().join("mix.toml");
    std::fs::write(
        &mix,
        std::fs::read_to_string(&plan)
            .unwrap()
            .replace("\"randwrite\"", "\"randrw\""),
    )
    .unwrap();
    raidlab()
        .args(["run", mix.to_str().unwrap(), "--quiet", "--out"])
        .arg(dir.path().join("m"))
        .assert()
        .success()
        .stderr(predicate::str::contains("workloads.fio (fsync, rate_iops)"));
}

/// `[run] fleet = "together"` refuses what it cannot run before any host is reached (the
/// destination's port 1 on 127.0.0.1 is never dialled): a misspelt mode, with its line,
/// and a rebuilding case, whose recovery needs the host's own fio.
#[test]
fn together_fleets_refuse_what_they_cannot_run_before_reaching_a_host() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("p.toml");
    let text = "name = \"tg\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\ndevices = [\"/dev/sdx\", \"/dev/sdy\", \"/dev/sdz\", \"/dev/sdw\"]\n[arrays]\nlevel = \"raid5\"\nstate = [\"healthy\", \"rebuilding\"]\n[workloads]\nrw = \"randread\"\nruntime = \"2s\"\n[run]\nfleet = \"together\"\n";
    for (body, says) in [
        (
            text.replace("\"together\"", "\"togther\""),
            vec!["p.toml:13", "run.fleet", "\"independent\"", "\"together\""],
        ),
        (
            text.to_string(),
            vec!["rebuilding", "fleet = \"together\"", "independent"],
        ),
    ] {
        std::fs::write(&plan, body).unwrap();
        let out = raidlab()
            .args(["run", plan.to_str().unwrap(), "--hosts", "root@127.0.0.1:1"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        for s in says {
            assert!(err.contains(s), "{s:?} in {err}");
        }
        assert!(!err.contains("unreachable"), "no host was reached: {err}");
    }
}
