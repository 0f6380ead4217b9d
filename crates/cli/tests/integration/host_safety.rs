//! The host target's guarantees against what an admin can do on a busy machine: each test
//! is named after the item of the safety issue it pins, and failed on the code before the
//! fix. Loop devices over sparse files this test makes (and removes, also on failure);
//! processes are stopped only if the test started them, by their pid.

use super::host::{can_run, csv_rows, sh, text, Lab};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

const SLOW: &str = "[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nwrite_cache = \"off\"\n[workloads]\nrw = \"randwrite\"\nsize = \"32m\"\nruntime = \"6s\"\n";

/// A plan naming exactly these device paths.
fn plan_of(lab: &Lab, devices: &[&str], body: &str) -> PathBuf {
    let list: Vec<String> = devices.iter().map(|d| format!("\"{d}\"")).collect();
    let p = lab.path().join("plan-custom.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"host-safety\"\n[disks]\ndevices = [{}]\n{body}",
            list.join(", ")
        ),
    )
    .unwrap();
    p
}

/// `raidlab run PLAN --target host` started in the background, into `out`.
pub(crate) fn spawn_run(lab: &Lab, plan: &Path, out: &Path) -> Child {
    let run = lab.command(&["run", plan.to_str().unwrap(), "--target", "host"]);
    super::spawn_quietly(run, out)
}

/// Wait until the run in `out` has written a fio job file (fio starts right after).
pub(crate) fn wait_for_fio(out: &Path, child: &mut Child) {
    let t0 = Instant::now();
    let written = || {
        std::fs::read_dir(out.join(".host"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| {
                std::fs::read_dir(d.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|f| f.path().extension().is_some_and(|e| e == "fio"))
            })
    };
    while !written() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut why = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut why).unwrap();
            panic!("the run ended before fio started: {status}\n{why}");
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "fio never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Item 1: while a run is in fio, `run --resume`, `cleanup DIR` and a bare `cleanup`
/// refuse, and the live run goes on to store its result.
#[test]
fn item_1_a_second_command_does_not_tear_down_a_live_run() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let plan = lab.plan(2, SLOW);
    let out = lab.out();
    let mut child = spawn_run(&lab, &plan, &out);
    wait_for_fio(&out, &mut child);
    let resume = lab.run_host(&plan, &["--resume"], &[]);
    let cleanup_dir = lab.raidlab(&["cleanup", out.to_str().unwrap()], &[]);
    let cleanup_all = lab.raidlab(&["cleanup"], &[]);
    let live_mounts = lab.mounts_below();
    let o = child.wait_with_output().unwrap();
    for (what, r) in [
        ("run --resume", &resume),
        ("cleanup DIR", &cleanup_dir),
        ("cleanup", &cleanup_all),
    ] {
        assert!(!r.status.success(), "{what}: {}", text(r));
        assert!(stderr(r).contains("is live in"), "{what}: {}", text(r));
    }
    assert_eq!(live_mounts.len(), 1, "the live run's mount was torn down");
    assert!(o.status.success(), "the live run: {}", text(&o));
    assert_eq!(csv_rows(&lab).len(), 1, "the live case was lost");
    assert!(lab.mounts_below().is_empty());
}

/// Item 2: a `kill -9` in the second case (after the first case was torn down and
/// deregistered) is still found by a bare `raidlab cleanup`.
#[test]
fn item_2_a_crash_after_the_first_case_is_found_by_cleanup() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let plan = lab.plan(
        2,
        "[arrays]\nengine = \"btrfs\"\nlevel = [\"raid0\", \"raid1\"]\nwrite_cache = \"off\"\n[workloads]\nrw = \"randread\"\nsize = \"32m\"\nruntime = \"1s\"\n",
    );
    let before = (lab.cache(0), lab.cache(1));
    let o = lab.run_host(&plan, &[], &[("RAIDLAB_FAULT_KILL_IN", "mkfs:2")]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(9), "{}", text(&o));
    assert_eq!(csv_rows(&lab).len(), 1, "the first case is stored");
    let o = lab.raidlab(&["cleanup"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!stderr(&o).contains("nothing to clean up"), "{}", text(&o));
    assert!(lab.mounts_below().is_empty());
    assert_eq!(lab.signatures(0), "");
    assert_eq!((lab.cache(0), lab.cache(1)), before);
}

/// Item 3: two runs started together on the same disks (different results directories):
/// one runs, the other is refused before it changes anything.
#[test]
fn item_3_two_runs_on_the_same_disks_exclude_each_other() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let plan = lab.plan(2, SLOW);
    let (a, b) = (lab.path().join("a"), lab.path().join("b"));
    let (ca, cb) = (spawn_run(&lab, &plan, &a), spawn_run(&lab, &plan, &b));
    let (oa, ob) = (
        ca.wait_with_output().unwrap(),
        cb.wait_with_output().unwrap(),
    );
    let ok = [&oa, &ob].iter().filter(|o| o.status.success()).count();
    assert_eq!(ok, 1, "a:\n{}\nb:\n{}", text(&oa), text(&ob));
    let refused = if oa.status.success() { &ob } else { &oa };
    let why = stderr(refused);
    assert!(why.contains("locked by another process"), "{why}");
    assert!(lab.mounts_below().is_empty());
}

/// Item 4: a device listed twice — the same path, or a path and a symlink to it — is
/// refused before its write cache is touched or anything is written.
#[test]
fn item_4_a_device_listed_twice_is_refused_untouched() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let link = lab.path().join("alias");
    std::os::unix::fs::symlink(&lab.devs[0], &link).unwrap();
    let before = lab.cache(0);
    for second in [lab.devs[0].as_str(), link.to_str().unwrap()] {
        let plan = plan_of(&lab, &[&lab.devs[0], second], SLOW);
        let o = lab.run_host(&plan, &[], &[]);
        assert!(!o.status.success(), "{}", text(&o));
        assert!(stderr(&o).contains("the same device as"), "{}", text(&o));
        assert_eq!(lab.cache(0), before);
        assert_eq!(lab.signatures(0), "");
    }
}

/// Item 5: a node made with `mknod` under the name of a clean device, with the numbers of
/// a device holding data, is inspected as the device it is — and refused.
#[test]
fn item_5_identity_is_the_device_number_not_the_name() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let (data, clean) = (&lab.devs[0], &lab.devs[1]);
    assert!(sh(&format!("mkfs.ext4 -q -F {data}")).status.success());
    let numbers = String::from_utf8(sh(&format!("stat -c '%t %T' {data}")).stdout).unwrap();
    let (major, minor) = numbers.trim().split_once(' ').unwrap();
    let hex = |h: &str| u32::from_str_radix(h, 16).unwrap();
    let (major, minor) = (hex(major), hex(minor));
    let dir = lab.path().join("nodes");
    std::fs::create_dir(&dir).unwrap();
    let fake = dir.join(Path::new(clean).file_name().unwrap());
    let made = sh(&format!("mknod {} b {major} {minor}", fake.display()));
    assert!(made.status.success(), "{}", text(&made));
    let plan = plan_of(
        &lab,
        &[fake.to_str().unwrap()],
        "[arrays]\nlevel = \"single\"\nfilesystem = \"xfs\"\ndisks = 1\n[workloads]\nrw = \"randwrite\"\nsize = \"32m\"\nruntime = \"1s\"\n",
    );
    let o = lab.run_host(&plan, &["--destroy-data-on", &lab.serial(1)], &[]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        lab.signatures(0).contains("ext4"),
        "the device behind the node was erased: {}",
        text(&o)
    );
}

/// Item 6: a device another process has open (without O_EXCL, without a signature) is
/// refused, and the refusal names the process.
#[test]
fn item_6_a_device_open_by_another_process_is_refused_and_the_holder_named() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let mut holder = std::process::Command::new("sh")
        .args(["-c", &format!("exec 3<{}; exec sleep 60", lab.devs[1])])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let plan = lab.plan(2, SLOW);
    let o = lab.run_host(&plan, &[], &[]);
    // Stop the process this test started, by its pid.
    let _ = sh(&format!("kill {}", holder.id()));
    let _ = holder.wait();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!("open by pid {} (sleep)", holder.id())),
        "{}",
        text(&o)
    );
    assert_eq!(lab.signatures(0), "");
    assert_eq!(lab.signatures(1), "");
}

/// Item 7: SIGHUP (a closed ssh session) tears down like Ctrl-C, and a second signal
/// does not skip the teardown.
#[test]
fn item_7_sighup_and_a_second_signal_still_tear_down() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    for signals in [&["HUP"][..], &["INT", "INT"][..]] {
        let lab = Lab::new(2);
        let plan = lab.plan(2, SLOW);
        let before = (lab.cache(0), lab.cache(1));
        let out = lab.out();
        let mut child = spawn_run(&lab, &plan, &out);
        wait_for_fio(&out, &mut child);
        for sig in signals {
            // Signals to the raidlab this test started, by its pid.
            assert!(sh(&format!("kill -{sig} {}", child.id())).status.success());
            std::thread::sleep(Duration::from_millis(100));
        }
        let o = child.wait_with_output().unwrap();
        assert!(!o.status.success(), "{signals:?}: {}", text(&o));
        assert!(stderr(&o).contains("--resume"), "{signals:?}: {}", text(&o));
        assert!(lab.mounts_below().is_empty(), "{signals:?}: mounts left");
        assert_eq!(lab.signatures(0), "", "{signals:?}");
        assert_eq!((lab.cache(0), lab.cache(1)), before, "{signals:?}");
    }
}

/// Item 12: a dry run of a plan the guards refuse exits non-zero and prints no command.
#[test]
fn item_12_a_refused_dry_run_fails_and_prints_no_command() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    assert!(sh(&format!("mkfs.ext4 -q -F {}", lab.devs[0]))
        .status
        .success());
    let plan = lab.plan(2, SLOW);
    let out = lab.out();
    let o = lab.raidlab(
        &[
            "run",
            plan.to_str().unwrap(),
            "--target",
            "host",
            "--dry-run",
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    assert!(!o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!stdout.contains("mkfs"), "{stdout}");
    assert!(stderr(&o).contains("--destroy-data-on"), "{}", text(&o));
}

/// The start time of a process (field 22 of /proc/PID/stat), as the journal records it.
fn start_time(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    rest.split(' ').nth(19).unwrap().to_string()
}

/// Item 10: `cleanup` carries out only journal lines raidlab sealed: a hand-edited
/// journal naming an unrelated file system and an unrelated process leaves both alone.
#[test]
fn item_10_cleanup_undoes_only_what_raidlab_proved_it_did() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let plan = lab.plan(1, &SLOW.replace("raid1", "single").replace("6s", "1s"));
    let o = lab.run_host(&plan, &[], &[]);
    assert!(o.status.success(), "{}", text(&o));
    // An unrelated file system and an unrelated process.
    let victim = &lab.devs[1];
    assert!(sh(&format!("mkfs.ext4 -q -F {victim}")).status.success());
    let mut bystander = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = bystander.id();
    let journal = lab.out().join("host-journal.jsonl");
    let real = std::fs::read_to_string(&journal).unwrap();
    // A real line's seal, copied onto forged lines (none before journals were sealed).
    let copied_mac = real
        .split("\"mac\":\"")
        .nth(1)
        .and_then(|m| m.split('"').next())
        .unwrap_or("00");
    let wipe = format!(
        r#"{{"op":"open","at":1,"case":"x","phase":"mkfs","undo":{{"undo":"wipe","devices":["{victim}"]}},"devices":[{{"path":"{victim}","serial":"{}"}}]}}"#,
        lab.serial(1)
    );
    let started = format!(
        r#"{{"op":"started","at":1,"pid":{pid},"start":{}}}"#,
        start_time(pid)
    );
    let forged = format!(
        "{wipe}\n{started}\n{{\"entry\":{wipe},\"mac\":\"{copied_mac}\"}}\n{{\"entry\":{started},\"mac\":\"{copied_mac}\"}}\n"
    );
    std::fs::write(&journal, real + &forged).unwrap();
    let o = lab.raidlab(&["cleanup", lab.out().to_str().unwrap()], &[]);
    let alive = bystander.try_wait().unwrap().is_none();
    // Stop the process this test started, by its pid.
    let _ = sh(&format!("kill {pid}"));
    let _ = bystander.wait();
    assert!(alive, "cleanup stopped an unrelated process: {}", text(&o));
    assert!(
        lab.signatures(1).contains("ext4"),
        "cleanup wiped an unrelated file system: {}",
        text(&o)
    );
    assert!(!o.status.success(), "{}", text(&o));
    assert!(stderr(&o).contains("seal does not match"), "{}", text(&o));
}
