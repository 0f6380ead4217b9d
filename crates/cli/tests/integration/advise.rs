//! `raidlab advise` as a user runs it: eight 16 TB disks, random 4 KiB writes.

use raidlab_testkit::raidlab;
use serde_json::Value;
use std::path::Path;

/// `advise … --format json` with the cache in `cache`: the entries.
fn advise(cache: &Path, extra: &[&str]) -> Vec<Value> {
    let out = raidlab()
        .args([
            "advise",
            "--disks",
            "8",
            "--disk",
            "hdd-7200-16t-2019",
            "--workload",
            "randwrite:4k:qd16",
            "--chunks",
            "512k",
            "--runtime",
            "5s",
            "--format",
            "json",
            "--cache",
        ])
        .arg(cache)
        .args(extra)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    v["entries"].as_array().unwrap().clone()
}

fn kept(entries: &[Value]) -> Vec<&Value> {
    entries.iter().filter(|e| e["verdict"] == "kept").collect()
}

/// `raid10 n2`, `btrfs raid10 `.
fn label(e: &Value) -> String {
    let c = &e["candidate"];
    let engine = if c["engine"] == "btrfs" { "btrfs " } else { "" };
    format!(
        "{engine}{} {}",
        c["level"].as_str().unwrap(),
        c["layout"].as_str().unwrap_or("")
    )
}

/// The issue's test: surviving two failures never proposes raid0, raid5 or two-copy raid10
/// on 8 disks (two failures in one mirror pair lose data), and says so for each; asking
/// for more capacity than raid10 gives cuts every raid10 by that constraint. The second
/// run reads the first's simulated figures from the cache.
#[test]
fn advise_respects_failures_and_capacity_and_says_what_cut_what() {
    let _machine = raidlab_testkit::shared();
    let cache = tempfile::tempdir().unwrap();
    let entries = advise(cache.path(), &["--min-failures", "2"]);
    let first = kept(&entries);
    assert!(!first.is_empty());
    for e in &first {
        let l = label(e);
        assert!(
            !(l.starts_with("raid0")
                || l.starts_with("raid5")
                || ["raid10 n2", "raid10 f2", "raid10 o2"].contains(&l.as_str())
                || [
                    "btrfs raid0 ",
                    "btrfs raid1 ",
                    "btrfs raid10 ",
                    "btrfs raid5 "
                ]
                .contains(&l.as_str())),
            "kept {l} with --min-failures 2"
        );
        assert!(e["tolerance"].as_u64().unwrap() >= 2, "{e}");
        assert!(e["healthy"][0].as_f64().unwrap() > 0.0, "{e}");
        // A probability with its interval (an eight-way mirror may lose nothing in 10⁵
        // trials: its bound is still above 0), and a rebuild of a 16 TB member that takes
        // hours.
        let (loss, upper) = (
            e["loss"].as_f64().unwrap(),
            e["loss_interval"][1].as_f64().unwrap(),
        );
        assert!(loss < 0.5 && upper > loss, "{e}");
        assert!(e["rebuild_h"].as_f64().unwrap() > 10.0, "{e}");
    }
    let cut_n2 = entries
        .iter()
        .find(|e| label(e) == "raid10 n2")
        .expect("raid10 n2 was a candidate");
    assert_eq!(cut_n2["verdict"], "cut");
    assert!(
        cut_n2["by"]
            .as_str()
            .unwrap()
            .starts_with("--min-failures 2: survives 1"),
        "{cut_n2}"
    );
    // Ranks start at 1 and never go down the list.
    let ranks: Vec<u64> = first.iter().map(|e| e["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks[0], 1);
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");

    // 8 × 16 TB: raid10 n2 gives 58.2 TiB, raid6 87.3 TiB.
    let entries = advise(cache.path(), &["--min-usable", "60t"]);
    let raid10: Vec<&Value> = entries
        .iter()
        .filter(|e| e["candidate"]["level"] == "raid10")
        .collect();
    assert_eq!(raid10.len(), 5, "n2, f2, o2, n3, btrfs raid10");
    for e in raid10 {
        assert!(e["by"].as_str().unwrap().starts_with("--min-usable"), "{e}");
    }
    assert!(kept(&entries)
        .iter()
        .any(|e| e["candidate"]["level"] == "raid6"));

    // The same advice as a page (from the cache): a chart of the ranked layouts whose bars
    // sit at their values, the ranking, what --min-usable cut, and the top pick.
    let html = cache.path().join("advice.html");
    advise(
        cache.path(),
        &["--min-usable", "60t", "-o", html.to_str().unwrap()],
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Ranking</h2>") && page.contains("<h2>Top pick: "),
        "{page}"
    );
    assert!(
        page.contains("<b>--min-usable 60.0 TiB: "),
        "the cut, by constraint"
    );
    assert_eq!(page.matches("<svg class=\"chart advise\"").count(), 1);
    crate::geometry::check_alone(&page, "advise", &["bar"]);
}

/// The table names the top pick with the commands that build it, and the plan file it
/// writes runs as it stands (here on the simulator: healthy, degraded and rebuilding).
#[test]
fn advise_prints_the_pick_its_commands_and_a_plan_that_runs() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("pick.toml");
    let out = raidlab()
        .args([
            "advise",
            "--disks",
            "6",
            "--disk",
            "hdd-7200",
            "--workload",
            "randread:4k:qd8",
            "--workload",
            "write:1m:qd4",
            "--chunks",
            "512k",
            "--runtime",
            "5s",
            "--size",
            "10g",
            "--min-failures",
            "2",
            "--engines",
            "md",
            "--no-cache",
            "--plan-out",
        ])
        .arg(&plan)
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("randread:4k:qd8 IOPS") && text.contains("write:1m:qd4 MiB/s"),
        "{text}"
    );
    let top = text
        .lines()
        .find(|l| l.starts_with("Top pick: "))
        .expect(&text);
    assert!(
        top.contains("raid6") || top.contains("raid10 n3") || top.contains("raid1 "),
        "{top}"
    );
    assert!(text.contains("mdadm --create /dev/md/raidlab"), "{text}");
    assert!(
        text.contains("Cut (") && text.contains("--min-failures 2: survives 1"),
        "{text}"
    );
    let results = dir.path().join("results");
    raidlab()
        .args([
            "run",
            plan.to_str().unwrap(),
            "-q",
            "--out",
            results.to_str().unwrap(),
        ])
        .assert()
        .success();
    let csv = raidlab()
        .args([
            "report",
            results.to_str().unwrap(),
            "--format",
            "csv",
            "-o",
            "-",
        ])
        .assert()
        .success();
    let csv = String::from_utf8(csv.get_output().stdout.clone()).unwrap();
    for state in ["healthy", "degraded", "rebuilding"] {
        assert_eq!(
            csv.matches(&format!(",{state},")).count(),
            2,
            "{state}: {csv}"
        );
    }
}

/// Bad flags say which, with the value and what to write.
#[test]
fn advise_refuses_bad_flags_clearly() {
    let _machine = raidlab_testkit::shared();
    for (args, says) in [
        (&["--workload", "randread:4k"][..], "rw:bs:qdN"),
        (
            &["--workload", "randread:4k:qd4", "--disks", "1"],
            "--disks \"1\"",
        ),
        (
            &["--workload", "randread:4k:qd4", "--max-loss", "150%"],
            "a share from 0 to 1",
        ),
        (
            &["--workload", "randread:4k:qd4", "--disk", "no-such-disk"],
            "no-such-disk",
        ),
        (
            &["--workload", "randwrite:4k:qd4", "--stripe-caches", "256,8"],
            "--stripe-caches 8",
        ),
    ] {
        let out = raidlab()
            .arg("advise")
            .args(args)
            .args(["--no-cache"])
            .assert()
            .failure();
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `--workloads-from PLAN` takes a plan file's workloads (the 2013 seed's random 4 KiB
/// reads and writes at QD4); a plan whose workloads run several jobs is refused with the
/// way out.
#[test]
fn advise_takes_the_workloads_of_a_plan() {
    let _machine = raidlab_testkit::shared();
    let seed = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/seed-2013.toml");
    let out = raidlab()
        .args([
            "advise",
            "--disks",
            "6",
            "--disk",
            "hdd-7200",
            "--chunks",
            "512k",
            "--runtime",
            "5s",
            "--no-cache",
            "--format",
            "json",
            "--workloads-from",
            seed,
        ])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        v["workloads"],
        serde_json::json!(["randread:4k:qd4", "randwrite:4k:qd4"])
    );
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("jobs.toml");
    std::fs::write(
        &plan,
        "name = \"j\"\n[disks]\ncount = 4\n[arrays]\nlevel = \"raid5\"\n[workloads]\nrw = \"randread\"\nnumjobs = 4\n",
    )
    .unwrap();
    let out = raidlab()
        .args(["advise", "--no-cache", "--workloads-from"])
        .arg(&plan)
        .assert()
        .failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("numjobs = 4") && err.contains("set numjobs = 1"),
        "{err}"
    );
}

/// Issue 18: `advise DIR` ranks the arrays a results directory holds by their own figures —
/// here `examples/rebuild.toml` simulated: raid6, raid10 n2 and raid5 on 8 × 16 TB,
/// healthy, degraded and rebuilding — with the constraints applied, and the loaded
/// rebuild the directory measured behind the risk.
#[test]
fn advise_on_a_results_directory_uses_its_figures() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    raidlab()
        .current_dir(raidlab_testkit::repo_root())
        .args(["run", "examples/rebuild.toml", "--quiet", "--out"])
        .arg(&out)
        .assert()
        .success();
    let o = raidlab()
        .arg("advise")
        .arg(&out)
        .args(["--min-failures", "2", "--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&o.get_output().stdout).unwrap();
    assert_eq!(v["workloads"].as_array().unwrap().len(), 2, "{v}");
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "three arrays, whatever their states: {v}");
    let kept = kept(entries);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["candidate"]["level"], "raid6");
    // The rebuild the directory measured under load (hours), not md's idle ceiling (22 h).
    assert!(
        kept[0]["rebuild_h"].as_f64().unwrap() > 100.0,
        "{}",
        kept[0]
    );
    assert!(
        kept[0]["degraded"][0].as_f64().unwrap() > 0.0,
        "{}",
        kept[0]
    );
    for e in entries.iter().filter(|e| e["verdict"] == "cut") {
        assert!(
            e["by"].as_str().unwrap().starts_with("--min-failures 2"),
            "{e}"
        );
    }
}

/// `--stripe-caches`: every raid5/6 layout once per size and nothing else twice; a pick
/// with a cache of its own sets it in its commands and its plan file.
#[test]
fn advise_searches_stripe_cache_sizes() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let one = advise(dir.path(), &["--min-failures", "1"]);
    let two = advise(
        dir.path(),
        &["--min-failures", "1", "--stripe-caches", "256,4096"],
    );
    // md's parity levels (btrfs's raid5/6 have no md stripe cache).
    let parity = |e: &&Value| {
        e["candidate"]["engine"] == "md"
            && matches!(e["candidate"]["level"].as_str(), Some("raid5" | "raid6"))
    };
    let n_parity = one.iter().filter(parity).count();
    assert!(n_parity > 0);
    assert_eq!(two.len(), one.len() + n_parity);
    let big: Vec<&Value> = two
        .iter()
        .filter(|e| e["candidate"]["stripe_cache"] == 4096)
        .collect();
    assert_eq!(big.len(), n_parity);
    assert!(big.iter().all(parity));
    assert!(two
        .iter()
        .filter(|e| !parity(e))
        .all(|e| e["candidate"]["stripe_cache"].is_null()));
    // Random 4 KiB writes never fill a stripe: the cache's size does not matter to them.
    // 64 KiB writes at QD32 on six disks do gather into full stripes: the larger cache
    // changes the figure, and a parity pick with it sets it in its commands and plan file.
    let plan = dir.path().join("pick.toml");
    let args = [
        "advise",
        "--disks",
        "6",
        "--disk",
        "hdd-7200",
        "--workload",
        "randwrite:64k:qd32",
        "--chunks",
        "512k",
        "--runtime",
        "5s",
        "--stripe-caches",
        "256,4096",
        "--min-usable",
        "14t",
        "--cache",
    ];
    let out = raidlab()
        .args(args)
        .arg(dir.path())
        .args(["--format", "json"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let raid5 = |sc: u64| -> f64 {
        v["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| {
                e["candidate"]["level"] == "raid5"
                    && e["candidate"]["layout"] == "left-symmetric"
                    && e["candidate"]["stripe_cache"] == sc
            })
            .map(|e| e["healthy"][0].as_f64().unwrap())
            .expect("raid5 left-symmetric")
    };
    assert_ne!(raid5(256), raid5(4096));
    let out = raidlab()
        .args(args)
        .arg(dir.path())
        .arg("--plan-out")
        .arg(&plan)
        .assert()
        .success();
    let said = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let top = said
        .lines()
        .find(|l| l.starts_with("Top pick: "))
        .expect(&said);
    let sc = if top.contains("stripe_cache=4096") {
        4096
    } else {
        256
    };
    assert!(top.contains("raid5") || top.contains("raid6"), "{top}");
    assert!(said.contains(&format!("echo {sc} > /sys/block/")), "{said}");
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains(&format!("stripe_cache = {sc}")), "{text}");
}

/// btrfs profiles are in the search, and the pick's printed commands build it: `advise
/// --engines btrfs` on four disks, then its "Build it" lines run as printed on four loop
/// devices (`DISK` set to them, the mount point moved into the test's directory), and the
/// file system they make keeps its data in the profile advised.
#[test]
fn advise_btrfs_pick_builds_on_loop_devices() {
    let _machine = raidlab_testkit::shared();
    if !crate::host::can_run() {
        return;
    }
    let out = raidlab()
        .args([
            "advise",
            "--disks",
            "4",
            "--disk",
            "hdd-7200",
            "--workload",
            "randread:4k:qd8",
            "--engines",
            "btrfs",
            "--runtime",
            "5s",
            "--size",
            "10g",
            "--no-cache",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let top = text
        .lines()
        .find_map(|l| l.strip_prefix("Top pick: btrfs "))
        .expect(&text);
    let profile = top.split_whitespace().next().unwrap();
    assert!(
        ["raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6"].contains(&profile),
        "{top}: at least one failure survived"
    );
    let commands: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Build it"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect();
    assert!(commands[0].starts_with("mkfs.btrfs -f -d "), "{commands:?}");
    assert!(!text.contains("mdadm"), "{text}");
    let lab = crate::host::Lab::new(4);
    let mnt = lab.path().join("mnt");
    let script = format!(
        "set -e\nDISK=({})\n{}\n",
        lab.devs.join(" "),
        commands
            .join("\n")
            .replace("/mnt/raidlab", mnt.to_str().unwrap())
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(o.status.success(), "{script}\n{}", crate::host::text(&o));
    let df = crate::host::sh(&format!("btrfs filesystem df {}", mnt.display()));
    let df = String::from_utf8_lossy(&df.stdout).to_string();
    assert!(
        df.contains(&format!("Data, {}:", profile.to_uppercase())),
        "{profile}: {df}"
    );
}

/// `--min-rebuilding`: btrfs replace rebuilds eight 16 TB disks fast under random writes
/// only by taking the disks from the workload; asking to keep 30 % of the healthy figure
/// while a member rebuilds cuts those profiles, naming the share they keep, and the pick
/// is md's governed raid10 n3.
#[test]
fn advise_min_rebuilding_cuts_a_rebuild_that_starves_the_workload() {
    let _machine = raidlab_testkit::shared();
    let cache = tempfile::tempdir().unwrap();
    let entries = advise(
        cache.path(),
        &["--min-failures", "2", "--min-rebuilding", "30%"],
    );
    let c3 = entries
        .iter()
        .find(|e| label(e) == "btrfs raid1c3 ")
        .expect("btrfs raid1c3 was a candidate");
    assert_eq!(c3["verdict"], "cut", "{c3}");
    assert!(
        c3["by"]
            .as_str()
            .unwrap()
            .starts_with("--min-rebuilding 0.3: keeps "),
        "{c3}"
    );
    let share = |e: &Value| -> f64 {
        let h = e["healthy"][0].as_f64().unwrap();
        e["rebuilding"][0].as_f64().unwrap() / h
    };
    assert!(share(c3) < 0.3, "{c3}");
    for e in kept(&entries) {
        assert!(share(e) >= 0.3, "kept {}: {e}", label(e));
    }
    assert_eq!(label(kept(&entries)[0]), "raid10 n3");
}
