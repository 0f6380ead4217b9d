//! `raidlab calibrate` as a user runs it: from fio JSON (the simulator's, and real fio's),
//! to a model file that `raidlab sim` takes, refusing what it cannot fit.

use predicates::prelude::*;
use raidlab_testkit::{raidlab, require_fio};
use std::path::Path;

/// `raidlab sim --disks 1 --level single --disk DISK`: one disk of a model.
fn one_disk(disk: &str) -> assert_cmd::Command {
    let mut c = raidlab();
    c.args(["sim", "--disks", "1", "--level", "single", "--disk", disk]);
    c
}

/// The drive of these tests, unlike the preset: longer seeks, a worse-ordering firmware.
const THE_DRIVE: [&str; 4] = [
    "--disk-param",
    "avg_seek=11ms",
    "--disk-param",
    "reorder_noise=1",
];

/// 60 s of random reads at `qd` over the whole drive.
fn randread(qd: u32) -> Vec<String> {
    [
        "--size",
        "3600g",
        "--rw",
        "randread",
        "--iodepth",
        &qd.to_string(),
        "--runtime",
        "60s",
    ]
    .map(String::from)
    .to_vec()
}

/// `raidlab sim … --format fio-json` of the drive: the "measurements".
fn measure(dir: &Path, qd: u32) {
    let out = one_disk("hdd-7200")
        .args(THE_DRIVE)
        .args(randread(qd))
        .args(["--seed", "9", "--format", "fio-json"])
        .assert()
        .success();
    let json = &out.get_output().stdout;
    std::fs::write(dir.join(format!("randread-qd{qd}.json")), json).unwrap();
}

/// `raidlab calibrate RUNS -o MODEL`.
fn calibrate(runs: &Path, model: &Path) -> assert_cmd::assert::Assert {
    raidlab()
        .arg("calibrate")
        .arg(runs)
        .arg("-o")
        .arg(model)
        .assert()
}

/// Read IOPS of `raidlab sim` (one row of `--format json`).
fn iops(mut sim: assert_cmd::Command) -> f64 {
    let out = sim.args(["--format", "json"]).assert().success();
    let rows: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
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
    calibrate(&runs, &model)
        .failure()
        .stderr(predicate::str::contains("iodepth=1"))
        .stderr(predicate::str::contains("fio --name=randread-qd1"));
    assert!(!model.exists());
    measure(&runs, 1);
    measure(&runs, 4);
    calibrate(&runs, &model)
        .success()
        .stdout(predicate::str::contains("median error"));
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(
        text.starts_with("# A raidlab disk model, fitted by `raidlab calibrate`"),
        "{text}"
    );
    // The file stands in for the preset, and predicts a depth it was not fitted on.
    let mut fitted = one_disk(model.to_str().unwrap());
    fitted.args(randread(8));
    let mut truth = one_disk("hdd-7200");
    truth.args(THE_DRIVE).args(randread(8));
    let (fitted, truth) = (iops(fitted), iops(truth));
    assert!(
        (fitted / truth - 1.0).abs() < 0.10,
        "QD8: fitted model {fitted:.1}, the drive {truth:.1}"
    );
    // It never overwrites a model file.
    calibrate(&runs, &model)
        .failure()
        .stderr(predicate::str::contains("does not overwrite"));
    // A bad value in a model file is refused with its file, line and field.
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, text.replace("rpm = 7200", "rpm = \"fast\"")).unwrap();
    let line = text.lines().position(|l| l == "rpm = 7200").unwrap() + 1;
    one_disk(bad.to_str().unwrap())
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
    calibrate(&runs, &model)
        .success()
        .stdout(predicate::str::contains("randread 4k qd1×1 over 16m"))
        .stdout(predicate::str::contains("randread 4k qd8×1 over 16m"));
    assert!(std::fs::read_to_string(&model)
        .unwrap()
        .contains("kind = \"hdd\""));
}

/// `--device`: the read-only sweep on a loop device (its figures are no disk's: the test
/// is of the flow, the guards and the model file), refused while anything else has the
/// device open, and for a path that is no block device.
#[test]
fn device_sweep_measures_under_the_guards() {
    let _machine = raidlab_testkit::shared();
    if !super::host::can_run() {
        return;
    }
    let lab = super::host::Lab::new(1);
    let dev = lab.devs[0].clone();
    let model = lab.path().join("loop.toml");
    let run = |extra: &[&str]| {
        let mut args = vec!["calibrate", "--device", &dev, "-o", model.to_str().unwrap()];
        args.extend_from_slice(extra);
        lab.raidlab(&args, &[])
    };
    // Another process holds the device open: refused, nothing measured.
    let holder = std::fs::File::open(&dev).unwrap();
    let o = run(&["--seconds", "1", "--quiet"]);
    assert!(!o.status.success());
    assert!(
        super::host::text(&o).contains("open by pid"),
        "{}",
        super::host::text(&o)
    );
    assert!(!model.with_extension("runs").exists());
    drop(holder);
    let o = run(&["--seconds", "1", "--quiet"]);
    assert!(o.status.success(), "{}", super::host::text(&o));
    let runs = std::fs::read_dir(model.with_extension("runs"))
        .unwrap()
        .count();
    assert_eq!(runs, 7, "one fio JSON per point of the sweep");
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(
        text.contains("capacity = \"1g\""),
        "the device's size: {text}"
    );
    simulates_one_disk(&lab, &model, &[]);
    // Nothing is rewritten: the model file and the measurements stay as they are.
    let o = run(&["--seconds", "1", "--quiet"]);
    assert!(super::host::text(&o).contains("does not overwrite"));
    assert_eq!(std::fs::read_to_string(&model).unwrap(), text);
    // A regular file is no disk.
    let img = lab.path().join("disk0.img");
    let o = lab.raidlab(
        &[
            "calibrate",
            "--device",
            img.to_str().unwrap(),
            "-o",
            lab.path().join("f.toml").to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        super::host::text(&o).contains("not a block device"),
        "{}",
        super::host::text(&o)
    );
}

/// The write half of `calibrate --device`: refused unless `--destroy-data-on` names the
/// drive's serial; with it, the three write runs are made with the cache as their names
/// say, the write cache is put back as it was, the drive (formatted before) is left
/// without signatures, the journal is closed, and the model file says it fitted the
/// cache's depth and runs through `raidlab sim` with the cache on.
#[test]
fn device_sweep_writes_only_on_the_named_drive_and_puts_it_back() {
    let _machine = raidlab_testkit::shared();
    if !super::host::can_run() {
        return;
    }
    let lab = super::host::Lab::new(1);
    let dev = lab.devs[0].clone();
    let out = super::host::sh(&format!("mkfs.ext4 -q -F {dev}"));
    assert!(out.status.success(), "{}", super::host::text(&out));
    let before = lab.cache(0);
    let model = lab.path().join("w.toml");
    let run = |serial: &str| {
        lab.raidlab(
            &[
                "calibrate",
                "--device",
                &dev,
                "-o",
                model.to_str().unwrap(),
                "--seconds",
                "2",
                "--quiet",
                "--destroy-data-on",
                serial,
            ],
            &[],
        )
    };
    let o = run("loop:/not/this/one");
    assert!(!o.status.success());
    let said = super::host::text(&o);
    assert!(
        said.contains("--destroy-data-on loop:/not/this/one") && said.contains(&lab.serial(0)),
        "{said}"
    );
    assert!(!model.with_extension("runs").exists(), "nothing measured");
    assert!(lab.signatures(0).contains("ext4"), "nothing written");

    let o = run(&lab.serial(0));
    assert!(o.status.success(), "{}", super::host::text(&o));
    let runs = model.with_extension("runs");
    let mut names: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 10, "{names:?}");
    for w in [
        "randwrite-qd1-cache-off.json",
        "randwrite-qd1-cache-on.json",
        "randwrite-qd32-cache-on.json",
    ] {
        assert!(names.contains(&w.to_string()), "{names:?}");
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(runs.join(w)).unwrap()).unwrap();
        assert!(
            json["jobs"][0]["write"]["io_bytes"].as_u64().unwrap() > 0,
            "{w} wrote"
        );
    }
    assert_eq!(lab.cache(0), before, "the write cache is back as it was");
    assert!(lab.signatures(0).trim().is_empty(), "{}", lab.signatures(0));
    let o = lab.raidlab(&["cleanup", runs.to_str().unwrap()], &[]);
    assert!(o.status.success(), "{}", super::host::text(&o));
    let said = super::host::text(&o);
    assert!(
        !said.contains("erased signatures") && !said.contains("write cache of"),
        "nothing left to undo: {said}"
    );
    let text = std::fs::read_to_string(&model).unwrap();
    assert!(
        text.contains("the write cache's depth") && text.contains("cache_commands = "),
        "{text}"
    );
    assert!(
        text.contains("randwrite 4k qd32×1 whole disk, cache on"),
        "{text}"
    );
    simulates_one_disk(&lab, &model, &["--rw", "randwrite", "--write-cache", "on"]);
}

/// `raidlab sim` of one disk of `model` over 512 MiB, with `extra` flags, succeeds: the
/// model file stands in for a preset.
fn simulates_one_disk(lab: &super::host::Lab, model: &std::path::Path, extra: &[&str]) {
    let mut args = vec![
        "sim",
        "--disks",
        "1",
        "--level",
        "single",
        "--disk",
        model.to_str().unwrap(),
        "--size",
        "512m",
    ];
    args.extend_from_slice(extra);
    let o = lab.raidlab(&args, &[]);
    assert!(o.status.success(), "{}", super::host::text(&o));
}
