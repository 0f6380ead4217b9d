//! Importing what fio-plot users have (issue 19, item 2): a bench-fio tree measured with
//! real fio in bench-fio's layout — two devices named to sort wrongly as text, a queue-depth
//! sweep of two jobs with per-job logs, two read mixes, a preconditioning run and a
//! repeated run in `run-N/` folders — imported, exported and charted.

use crate::geometry;
use predicates::prelude::*;
use raidlab_testkit::{raidlab, require_fio};
use std::path::Path;

/// fio on `image` with `args`, its JSON (json+, with latency bins) written to `json`.
fn fio(image: &Path, json: &Path, args: &[&str]) {
    std::fs::create_dir_all(json.parent().unwrap()).unwrap();
    let out = std::process::Command::new("fio")
        .args(["--ioengine=psync", "--size=16m", "--bs=4k"])
        .args(args)
        .arg(format!("--filename={}", image.display()))
        .arg("--output-format=json+")
        .arg(format!("--output={}", json.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The tree bench-fio writes for `devices`: `<dev>/4k/randread-<qd>-2.json` with its logs,
/// `<dev>/randrw<mix>/4k/randrw-4-1.json`, `<dev>/1m/run-1/write-64-1.json` (its
/// preconditioning run) and, on the first device, a second run of qd 1 in `4k/run-2/`.
fn bench_fio_tree(root: &Path, devices: &[&str]) {
    for (i, dev) in devices.iter().enumerate() {
        let image = root.join(format!("{dev}.img"));
        std::fs::File::create(&image)
            .unwrap()
            .set_len(16 << 20)
            .unwrap();
        let tree = root.join("tree").join(dev);
        for qd in [1, 2, 16] {
            let leaf = tree.join("4k");
            let log = leaf.join(format!("randread-iodepth-{qd}-numjobs-2"));
            fio(
                &image,
                &leaf.join(format!("randread-{qd}-2.json")),
                &[
                    "--name=iotest",
                    "--rw=randread",
                    &format!("--iodepth={qd}"),
                    "--numjobs=2",
                    "--runtime=2",
                    "--time_based",
                    "--log_avg_msec=500",
                    &format!("--write_iops_log={}", log.display()),
                    &format!("--write_lat_log={}", log.display()),
                ],
            );
        }
        for mix in ["75", "90"] {
            fio(
                &image,
                &tree.join(format!("randrw{mix}/4k/randrw-4-1.json")),
                &[
                    "--name=iotest",
                    "--rw=randrw",
                    &format!("--rwmixread={mix}"),
                    "--iodepth=4",
                    "--runtime=1",
                    "--time_based",
                ],
            );
        }
        // bench-fio's precondition.fio: the whole device written sequentially.
        fio(
            &image,
            &tree.join("1m/run-1/write-64-1.json"),
            &["--name=1m", "--rw=write", "--bs=1m", "--size=100%"],
        );
        if i == 0 {
            fio(
                &image,
                &tree.join("4k/run-2/randread-1-2.json"),
                &[
                    "--name=iotest",
                    "--rw=randread",
                    "--numjobs=2",
                    "--runtime=1",
                    "--time_based",
                ],
            );
        }
    }
}

/// `raidlab report DIR --format csv` as (header, rows).
fn csv(store: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let out = raidlab()
        .args(["report", store.to_str().unwrap(), "--format", "csv"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text
        .lines()
        .map(|l| l.split(',').map(String::from).collect::<Vec<_>>());
    (lines.next().unwrap(), lines.collect())
}

#[test]
fn a_bench_fio_tree_keeps_its_sources_mixes_runs_logs_and_percentiles() {
    let _machine = raidlab_testkit::shared();
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    bench_fio_tree(dir.path(), &["dev13", "dev2"]);
    let tree = dir.path().join("tree");
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
        // 2 × (3 sweeps + 2 mixes + 1 precondition) + 1 repeated run.
        .stderr(predicate::str::contains("imported 11 of 13 file(s)"))
        .stderr(predicate::str::contains("left out 2 preconditioning runs"))
        // Two jobs × (iops + fio's lat, clat and slat) × 3 depths × 2 devices.
        .stderr(predicate::str::contains("48 of 48 .log file(s) kept"));

    let (head, rows) = csv(&store);
    let col = |name: &str| {
        head.iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("column {name} in {head:?}"))
    };
    assert_eq!(rows.len(), 10, "3 depths and 2 mixes per device: {rows:?}");
    let sources: Vec<&str> = rows.iter().map(|r| r[col("source")].as_str()).collect();
    assert_eq!(
        sources.iter().position(|s| *s == "dev13"),
        Some(5),
        "dev2 sorts before dev13: {sources:?}"
    );
    assert!(
        sources.iter().all(|s| *s == "dev2" || *s == "dev13"),
        "{sources:?}"
    );
    let depths: Vec<&str> = rows[..3]
        .iter()
        .map(|r| r[col("iodepth")].as_str())
        .collect();
    assert_eq!(depths, ["1", "2", "16"], "numeric order");
    let mixes: Vec<&str> = rows.iter().map(|r| r[col("rwmixread")].as_str()).collect();
    assert_eq!(mixes.iter().filter(|m| **m == "75").count(), 2, "{mixes:?}");
    assert_eq!(mixes.iter().filter(|m| **m == "90").count(), 2, "{mixes:?}");
    let reps: Vec<&str> = rows
        .iter()
        .map(|r| r[col("repetitions")].as_str())
        .collect();
    assert_eq!(
        reps.iter().filter(|r| **r == "2").count(),
        1,
        "run-2 pooled: {reps:?}"
    );
    for r in &rows {
        assert!(r[col("fio_version")].starts_with("fio-"), "{r:?}");
        let p = |c: &str| {
            r[col(c)]
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("{c} in {r:?}"))
        };
        let ladder = [
            "read_lat_p50_ms",
            "read_lat_p90_ms",
            "read_lat_p95_ms",
            "read_lat_p99_ms",
        ];
        for w in ladder.windows(2) {
            assert!(p(w[0]) <= p(w[1]), "{w:?} in {r:?}");
        }
        assert!(p("read_lat_p99_ms") <= p("read_lat_p9999_ms"), "{r:?}");
        assert!(
            p("read_lat_p9999_ms") <= p("read_lat_max_ms") * 1.02,
            "{r:?}"
        );
    }

    let html = dir.path().join("r.html");
    raidlab()
        .args(["report", store.to_str().unwrap(), "-o"])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains(">imported<"),
        "rows are named by their source"
    );
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} in the report"));
    assert!(at("<h2>randread 4k qd2×2</h2>") < at("<h2>randread 4k qd16×2</h2>"));
    assert!(
        page.contains("<h2>randrw75 4k qd4×1</h2>") && page.contains("<h2>randrw90 4k qd4×1</h2>")
    );
    // Per sweep case: IOPS and latency over time from the merged per-job logs.
    assert_eq!(page.matches(": IOPS over time</text>").count(), 6);
    assert_eq!(page.matches(": mean latency over time</text>").count(), 6);
    assert!(page.matches("read latency histogram</text>").count() >= 10);
    assert!(page.matches("read latency percentiles</text>").count() >= 5);
    assert!(page.contains("Queue-depth curves"));
    geometry::check_alone(
        &page,
        "bench-fio import",
        &["bar", "percentiles", "histogram", "over-time", "sweep"],
    );

    // As a browser renders it, with a screenshot among the test artifacts.
    if let Some(bin) = crate::report_chromium::chromium() {
        let dom = crate::report_chromium::dom(bin, &html, dir.path());
        assert!(dom.contains("<h2>Queue-depth curves</h2>"), "rendered");
        assert_eq!(dom.matches("<svg class=\"chart over-time\"").count(), 12);
        crate::report_chromium::screenshot(bin, &html, "report-import-bench-fio.png", dir.path());
    }

    // Preconditioning kept on request, as cases of their own; one label for everything.
    let kept = dir.path().join("kept");
    raidlab()
        .args([
            "import",
            tree.to_str().unwrap(),
            "--include-precondition",
            "--label",
            "lab",
        ])
        .args(["--out", kept.to_str().unwrap()])
        .assert()
        .success()
        .stderr(predicate::str::contains("imported 13 of 13 file(s)"));
    let (head, rows) = csv(&kept);
    let source = head.iter().position(|c| c == "source").unwrap();
    let labels: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r[source].as_str()).collect();
    assert_eq!(labels, ["lab", "lab precondition"].into(), "{rows:?}");
}
