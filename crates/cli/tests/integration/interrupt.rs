//! An interrupted run loses nothing: SIGINT (sent to the raidlab process this test started,
//! by its pid) stops it after committing what finished; `--resume` completes the plan with
//! every case present exactly once.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const PLAN: &str = include_str!("plans/slow.toml");

fn results(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("raw")).map_or(0, |d| {
        d.filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().ends_with("-sim.json"))
        })
        .count()
    })
}

#[test]
fn sigint_stops_cleanly_and_resume_completes() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("slow.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = dir.path().join("r");
    let mut run = Command::new(env!("CARGO_BIN_EXE_raidlab"));
    run.arg("run").arg(&plan).args(["--jobs", "1"]);
    let child = super::spawn_quietly(run, &out);
    let t0 = Instant::now();
    while results(&out) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no result within 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(!done.status.success());
    assert!(
        stderr.contains("interrupted") && stderr.contains("--resume"),
        "{stderr}"
    );
    let stored = results(&out);
    assert!(
        (1..6).contains(&stored),
        "{stored} results stored before the interrupt took effect"
    );

    let resumed = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args([
            "run",
            plan.to_str().unwrap(),
            "--resume",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(String::from_utf8_lossy(&resumed.stderr).contains(&format!(
        "{stored} result(s) already stored, {} to run",
        6 - stored
    )));
    assert_eq!(results(&out), 6, "every case exactly once");
}
