//! The HTML report as a browser renders it: headless Chromium (Debian's `chromium`) loads a
//! generated report; every chart must have a bar per level. A screenshot is kept in
//! `target/test-artifacts/`. Locally without Chromium: skipped with the reason; in CI
//! (`CI=true`) a missing Chromium fails.

use assert_cmd::Command;
use std::path::Path;

pub(crate) fn chromium() -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| raidlab_testkit::runs(c, &["--version"]));
    raidlab_testkit::require(found.is_some(), || {
        "Chromium is not installed (apt-get install chromium)".into()
    })
    .then_some(found)
    .flatten()
}

pub(crate) fn headless(bin: &str, profile: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]);
    c.arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Run an example plan on the sim target into a temporary directory and load its report in
/// headless Chromium: (the directory, the report's path, the DOM Chromium built).
fn rendered(bin: &str, example: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    Command::cargo_bin("raidlab")
        .unwrap()
        .current_dir(&root)
        .args(["run", example, "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let html = out.join("report.html");
    let source = std::fs::read_to_string(&html).unwrap();
    assert!(
        !source.contains("<script") && !source.contains("http://") && !source.contains("https://"),
        "self-contained: no script, no network reference"
    );
    let dom = headless(bin, &dir.path().join("profile"))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    (dir, html, String::from_utf8(dom.stdout).unwrap())
}

#[test]
fn report_renders_with_a_bar_per_level_in_every_chart() {
    let _machine = raidlab_testkit::shared();
    let Some(bin) = chromium() else { return };
    let (dir, html, dom) = rendered(bin, "examples/seed-2013.toml");
    let charts: Vec<&str> = dom.split("<svg class=\"chart\"").skip(1).collect();
    assert_eq!(
        charts.len(),
        8,
        "read and write: IOPS, bandwidth, mean and p99 latency"
    );
    for chart in charts {
        let chart = &chart[..chart.find("</svg>").unwrap()];
        for level in ["raid0 512k", "raid10 n2 512k", "raid5 512k", "raid6 512k"] {
            assert_eq!(
                chart.matches(&format!("data-label=\"{level}\"")).count(),
                1,
                "{level} in {}",
                &chart[..200.min(chart.len())]
            );
        }
    }

    // Measured vs model: one bar and one model tick per level, per workload.
    let model: Vec<&str> = dom.split("<svg class=\"chart vs-model\"").skip(1).collect();
    assert_eq!(model.len(), 2, "randread and randwrite");
    for chart in model {
        let chart = &chart[..chart.find("</svg>").unwrap()];
        for level in ["raid0 512k", "raid10 n2 512k", "raid5 512k", "raid6 512k"] {
            let label = format!("data-label=\"{level}\"");
            assert_eq!(
                chart.matches(&label).count(),
                2,
                "{level}: bar + model tick"
            );
        }
    }
    // Member I/Os per fio I/O: a bar per level, and md's write costs visible in them.
    let cost: Vec<&str> = dom
        .split("<svg class=\"chart member-cost\"")
        .skip(1)
        .collect();
    assert_eq!(cost.len(), 2, "randread and randwrite");
    let write_cost = &cost[1][..cost[1].find("</svg>").unwrap()];
    assert!(
        write_cost.contains("randwrite"),
        "groups are sorted: randwrite second"
    );
    for (level, expected) in [
        ("raid0 512k", 1.0),
        ("raid10 n2 512k", 2.0),
        ("raid5 512k", 4.0),
        ("raid6 512k", 6.0),
    ] {
        let at = write_cost
            .find(&format!("data-label=\"{level}\" data-value=\""))
            .unwrap_or_else(|| panic!("{level}"));
        let rest = &write_cost[at..];
        let v: f64 = rest
            .split("data-value=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (v - expected).abs() < 0.05,
            "{level}: {v} member I/Os per write"
        );
    }
    // Per case: a member I/O share chart (six members) and an IOPS-over-time line.
    let shares: Vec<&str> = dom.split("<svg class=\"chart share\"").skip(1).collect();
    assert_eq!(shares.len(), 8, "one per case");
    for chart in shares {
        let chart = &chart[..chart.find("</svg>").unwrap()];
        assert_eq!(chart.matches("class=\"member\"").count(), 6);
    }
    // …and a mean-latency-over-time line from the latency log.
    assert_eq!(dom.matches("<svg class=\"chart over-time\"").count(), 16);
    let lat_charts = dom
        .split("<svg class=\"chart over-time\"")
        .skip(1)
        .map(|c| &c[..c.find("</svg>").unwrap()])
        .filter(|c| c.contains(": mean latency over time"))
        .count();
    assert_eq!(lat_charts, 8, "one latency-over-time chart per case");
    for heading in ["Summary", "Anomalies", "Cases in detail", "All cases"] {
        assert!(dom.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }

    screenshot(bin, &html, "report-seed-2013.png", dir.path());
}

/// A screenshot of `html` in `target/test-artifacts/NAME`, which must be a real picture.
pub(crate) fn screenshot(bin: &str, html: &Path, name: &str, scratch: &Path) {
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(name);
    let _ = std::fs::remove_file(&shot);
    let s = headless(bin, &scratch.join(format!("profile-{name}")))
        .arg("--window-size=1200,1800")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    assert!(
        std::fs::metadata(&shot).unwrap().len() > 10_000,
        "a real screenshot"
    );
}

/// The DOM Chromium builds from `html`.
pub(crate) fn dom(bin: &str, html: &Path, scratch: &Path) -> String {
    let out = headless(bin, &scratch.join("profile-dom"))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The 2019 seed's report (raid5 and raid10 n2/f2; sequential and random, four jobs)
/// renders: its percentile charts and queue-depth-free groups, with a screenshot.
#[test]
fn the_2019_seeds_report_renders_with_its_percentiles() {
    let _machine = raidlab_testkit::shared();
    let Some(bin) = chromium() else { return };
    let (dir, html, dom) = rendered(bin, "examples/seed-2019.toml");
    let pct = dom.matches("<svg class=\"chart percentiles\"").count();
    assert!(
        pct >= 4,
        "a latency-percentile chart per workload and direction: {pct}"
    );
    assert!(
        dom.contains("latency histogram</text>"),
        "histograms per case"
    );
    for heading in ["Summary", "Cases in detail", "All cases"] {
        assert!(dom.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }
    screenshot(bin, &html, "report-seed-2019.png", dir.path());
}

/// `examples/rebuild.toml` (healthy, degraded and rebuilding raid6, raid10 and raid5): the
/// report renders in Chromium with the failures section — a row per degraded and
/// rebuilding array with its share of the healthy figure and the time md held its I/Os
/// (fio's slat), and a chart per workload with a
/// loaded and an idle whole-member rebuild per rebuilding array, the idle one shorter.
#[test]
fn report_renders_failures_and_rebuilds() {
    let _machine = raidlab_testkit::shared();
    let Some(bin) = chromium() else { return };
    let (_dir, _, dom) = rendered(bin, "examples/rebuild.toml");
    let section = dom
        .split("<h2>Failures and rebuilds</h2>")
        .nth(1)
        .expect("a failures section")
        .split("<h2>")
        .next()
        .unwrap();
    // The simulated raid5/6 start from the cache the targets' layout pass grows, and the
    // section says so.
    assert!(section.contains("its stripe cache grown by their layout pass"));
    // Two workloads × three levels × (degraded, rebuilding).
    assert_eq!(section.matches("<td>degraded</td>").count(), 6);
    assert_eq!(section.matches("<td>rebuilding</td>").count(), 6);
    // Each row says how long md held an I/O before taking it (fio's slat), in ms.
    assert!(section.contains("held in submit, ms</th>"));
    for row in section
        .split("<tr>")
        .filter(|r| r.contains("<td>rebuilding</td>"))
    {
        let cells: Vec<&str> = row
            .split("<td>")
            .skip(1)
            .map(|c| c.split("</td>").next().unwrap())
            .collect();
        let held: f64 = cells[4]
            .parse()
            .unwrap_or_else(|_| panic!("a slat in ms: {row}"));
        assert!((0.0..1000.0).contains(&held), "{row}");
    }
    // Each rebuilding case shows its recovery's speed second by second.
    let speeds: Vec<&str> = dom
        .split("<svg class=\"chart over-time\"")
        .skip(1)
        .filter(|c| c.contains(": recovery speed over time\""))
        .collect();
    assert_eq!(speeds.len(), 6);
    for chart in speeds {
        let n: usize = chart
            .split("data-points=\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .and_then(|t| t.parse().ok())
            .expect("a recovery-speed series");
        assert!(
            n >= 5,
            "a recovery over 5 s or more has a point per second: {n}"
        );
    }
    let charts: Vec<&str> = section
        .split("<svg class=\"chart rebuild\"")
        .skip(1)
        .collect();
    assert_eq!(charts.len(), 2, "randread and randwrite");
    for chart in charts {
        for array in ["raid6 512k", "raid10 n2 512k", "raid5 512k"] {
            let value = |what: &str| -> f64 {
                let at = chart
                    .find(&format!("data-label=\"{array} · {what}\" data-value=\""))
                    .unwrap_or_else(|| panic!("{array} · {what}"));
                chart[at..]
                    .split("data-value=\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            let (loaded, idle) = (value("loaded"), value("idle"));
            assert!(
                idle > 20.0 && idle < 30.0,
                "{array}: idle {idle} h (theory 23.9)"
            );
            assert!(loaded > idle, "{array}: loaded {loaded} h, idle {idle} h");
        }
    }
}
