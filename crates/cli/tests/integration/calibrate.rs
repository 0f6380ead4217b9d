//! `raidlab calibrate` as a user runs it: from fio JSON (the simulator's, and real fio's),
//! to a model file that `raidlab sim` takes, refusing what it cannot fit.

use predicates::prelude::*;
use raidlab_testkit::{raidlab, require_fio};
use std::path::Path;

/// `raidlab sim … --format fio-json` of one disk unlike the preset: the "measurements".
fn measure(dir: &Path, qd: u32) {
    let out = raidlab()
        .args([
            "sim",
            "--disks",
            "1",
            "--level",
            "single",
            "--disk",
            "hdd-7200",
            "--disk-param",
            "avg_seek=11ms",
            "--disk-param",
            "reorder_noise=1",
            "--size",
            "3600g",
            "--rw",
            "randread",
            "--iodepth",
            &qd.to_string(),
            "--runtime",
            "60s",
            "--seed",
            "9",
            "--format",
            "fio-json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(dir.join(format!("randread-qd{qd}.json")), out.stdout).unwrap();
}

fn iops(args: &[&str]) -> f64 {
    let out = raidlab()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    rows[0]["read_iops"].as_f64().unwrap()
}

#[test]
fn a_model_fitted_to_fio_json_stands_in_for_a_preset() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    measure(&runs, 32);
    // Without a QD1 run it names the run to make.
    let model = dir.path().join("my-disk.toml");
    raidlab()
        .args([
            "calibrate",
            runs.to_str().unwrap(),
            "-o",
            model.to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("iodepth=1"))
        .stderr(predicate::str::contains("fio --name=randread-qd1"));
    assert!(!model.exists());
    measure(&runs, 1);
    measure(&runs, 4);
    raidlab()
        .args([
            "calibrate",
            runs.to_str().unwrap(),
            "-o",
            model.to_str().unwrap(),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("median error"));
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(
        text.starts_with("# A raidlab disk model, fitted by `raidlab calibrate`"),
        "{text}"
    );
    // The file stands in for the preset, and predicts a depth it was not fitted on.
    let sim = |disk: &str, extra: &[&str]| {
        let mut a = vec![
            "sim",
            "--disks",
            "1",
            "--level",
            "single",
            "--disk",
            disk,
            "--size",
            "3600g",
            "--rw",
            "randread",
            "--iodepth",
            "8",
            "--runtime",
            "60s",
        ];
        a.extend_from_slice(extra);
        iops(&a)
    };
    let fitted = sim(model.to_str().unwrap(), &[]);
    let truth = sim(
        "hdd-7200",
        &[
            "--disk-param",
            "avg_seek=11ms",
            "--disk-param",
            "reorder_noise=1",
        ],
    );
    assert!(
        (fitted / truth - 1.0).abs() < 0.10,
        "QD8: fitted model {fitted:.1}, the drive {truth:.1}"
    );
    // It never overwrites a model file.
    raidlab()
        .args([
            "calibrate",
            runs.to_str().unwrap(),
            "-o",
            model.to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("does not overwrite"));
    // A bad value in a model file is refused with its file, line and field.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, text.replace("rpm = 7200", "rpm = \"fast\"")).unwrap();
    let line = text.lines().position(|l| l == "rpm = 7200").unwrap() + 1;
    raidlab()
        .args([
            "sim",
            "--disks",
            "1",
            "--level",
            "single",
            "--disk",
            bad.to_str().unwrap(),
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "bad.toml:{line}: rpm = fast"
        )));
}

/// Real fio's JSON reads too (here of a file, whose figures are no drive's: the test is
/// of the flow, not of the fit).
#[test]
fn real_fio_json_is_read() {
    let _machine = raidlab_testkit::shared();
    if !require_fio() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("data");
    std::fs::write(&target, vec![7u8; 16 << 20]).unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir(&runs).unwrap();
    for qd in [1, 8] {
        let out = std::process::Command::new("fio")
            .args([
                "--name=r",
                &format!("--filename={}", target.display()),
                "--readonly",
                "--rw=randread",
                "--bs=4k",
                "--ioengine=libaio",
                &format!("--iodepth={qd}"),
                "--size=16m",
                "--runtime=1",
                "--time_based",
                "--output-format=json",
                &format!("--output={}", runs.join(format!("qd{qd}.json")).display()),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let model = dir.path().join("file.toml");
    raidlab()
        .args([
            "calibrate",
            runs.to_str().unwrap(),
            "-o",
            model.to_str().unwrap(),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("randread 4k qd1×1 over 16m"))
        .stdout(predicate::str::contains("randread 4k qd8×1 over 16m"));
    assert!(std::fs::read_to_string(&model)
        .unwrap()
        .contains("kind = \"hdd\""));
}
