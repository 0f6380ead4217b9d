//! `raidlab risk` as a user runs it.

use predicates::prelude::*;
use raidlab_testkit::raidlab;

/// `raidlab risk`: a layout's probability of losing data, its causes, MTTDL beside it for
/// single parity, and a clear error for an impossible failure rate.
#[test]
fn risk_prints_the_probability_its_causes_and_mttdl() {
    let _machine = raidlab_testkit::shared();
    let p = |level: &str| {
        // assert_cmd shows standard error when the command fails.
        let out = raidlab()
            .args([
                "risk", "--level", level, "--disks", "6", "--trials", "20000",
            ])
            .assert()
            .success();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        let at = text.find("probability of losing data: ").unwrap() + 28;
        let value: f64 = text[at..].split(' ').next().unwrap().parse().unwrap();
        (value, text)
    };
    let (raid5, text) = p("raid5");
    let (raid6, _) = p("raid6");
    assert!(raid5 > raid6, "raid5 {raid5} % vs raid6 {raid6} %");
    assert!(text.contains("MTTDL"), "{text}");
    assert!(
        text.contains("rebuild: 22.2 h"),
        "16 TB at 200 MB/s: {text}"
    );
    raidlab()
        .args(["risk", "--years", "0"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--years 0: must be above 0"));
    raidlab()
        .args(["risk", "--afr", "1.5"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--afr 1.5"));
}
