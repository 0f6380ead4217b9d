//! `raidlab risk` as a user runs it.

use predicates::prelude::*;
use raidlab_testkit::raidlab;

/// `raidlab risk`: a layout's probability of losing data, its causes, MTTDL beside it for
/// single parity, the rebuild time simulated (idle, and slower under load with the old
/// kernel's governor, which raises the risk), and a clear error for an impossible failure
/// rate.
#[test]
fn risk_prints_the_probability_its_causes_and_mttdl() {
    let _machine = raidlab_testkit::shared();
    let run = |level: &str, extra: &[&str]| {
        // assert_cmd shows standard error when the command fails.
        let out = raidlab()
            .args([
                "risk", "--level", level, "--disks", "6", "--trials", "20000",
            ])
            .args(extra)
            .assert()
            .success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let at = text.find("probability of losing data: ").unwrap() + 28;
        let value: f64 = text[at..].split(' ').next().unwrap().parse().unwrap();
        let at = text.find("rebuild: ").unwrap() + 9;
        let hours: f64 = text[at..].split(' ').next().unwrap().parse().unwrap();
        (value, hours, text)
    };
    let (raid5, idle, text) = run("raid5", &[]);
    let (raid6, _, _) = run("raid6", &[]);
    assert!(raid5 > raid6, "raid5 {raid5} % vs raid6 {raid6} %");
    assert!(text.contains("MTTDL"), "{text}");
    assert!(
        (20.0..30.0).contains(&idle) && text.contains("simulated on an idle array"),
        "16 TB at md's 200 MB/s cap where the disk is faster, its media rate elsewhere: {text}"
    );
    let (loaded, hours, text) = run(
        "raid5",
        &["--rebuild-load", "4", "--kernel", "4.0", "--ure", "0"],
    );
    let (idle_no_ure, _, _) = run("raid5", &["--ure", "0"]);
    assert!(hours > 100.0 * idle, "held at sync_speed_min: {text}");
    assert!(text.contains("QD4 and Linux 4.0's governor"), "{text}");
    assert!(
        loaded > idle_no_ure,
        "{loaded} % loaded vs {idle_no_ure} % idle"
    );
    raidlab()
        .args(["risk", "--years", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--years 0: must be a number above 0",
        ));
    raidlab()
        .args(["risk", "--afr", "1.5"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--afr 1.5"));
    // Not numbers a mission or a drive can have (an endless mission ran for ever).
    for (flag, value) in [
        ("--years", "inf"),
        ("--shape", "inf"),
        ("--ure", "inf"),
        ("--ure", "2"),
    ] {
        raidlab()
            .args(["risk", flag, value])
            .timeout(std::time::Duration::from_secs(60))
            .assert()
            .failure()
            .stderr(
                predicate::str::contains(format!("{flag} "))
                    .and(predicate::str::contains("must be")),
            );
    }
}
