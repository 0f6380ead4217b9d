//! The host target on real block devices: loop devices over sparse files this test makes
//! (and removes, also when it fails). btrfs builds the arrays — md does not exist on the
//! machines this runs on; its command lines are checked in the target crate and its real
//! runs belong to the VM lab.
//!
//! Needs root and loop devices. Locally without them: skipped with the reason; in CI
//! (`CI=true`) their absence is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether this machine can run these tests; in CI it must.
pub(crate) fn can_run() -> bool {
    let root = unsafe { libc_geteuid() } == 0;
    let loops = Path::new("/dev/loop-control").exists();
    let tools = ["mkfs.btrfs", "fio", "wipefs", "losetup", "mkfs.ext4"]
        .iter()
        .all(|t| raidlab_testkit::on_path(t));
    raidlab_testkit::require(root && loops && tools, || {
        format!("the host-target tests need root ({root}), /dev/loop-control ({loops}), fio + btrfs-progs + e2fsprogs + util-linux ({tools})")
    })
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

pub(crate) fn sh(cmd: &str) -> Output {
    Command::new("sh").args(["-c", cmd]).output().unwrap()
}

/// Loop devices over sparse files in a temporary directory. Dropping unmounts anything
/// mounted below the directory, erases what was written and detaches the devices.
pub(crate) struct Lab {
    dir: tempfile::TempDir,
    pub(crate) devs: Vec<String>,
}

impl Lab {
    pub(crate) fn new(n: usize) -> Lab {
        let dir = tempfile::Builder::new()
            .prefix("raidlab-host-")
            .tempdir()
            .unwrap();
        let mut devs = Vec::new();
        for i in 0..n {
            let f = dir.path().join(format!("disk{i}.img"));
            std::fs::File::create(&f).unwrap().set_len(1 << 30).unwrap();
            let o = Command::new("losetup")
                .args(["--find", "--show", f.to_str().unwrap()])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "losetup: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            devs.push(String::from_utf8(o.stdout).unwrap().trim().to_string());
        }
        Lab { dir, devs }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn serial(&self, i: usize) -> String {
        format!(
            "loop:{}",
            self.path().join(format!("disk{i}.img")).display()
        )
    }

    pub(crate) fn plan(&self, n: usize, body: &str) -> PathBuf {
        let list: Vec<String> = self.devs[..n].iter().map(|d| format!("\"{d}\"")).collect();
        let p = self.path().join("plan.toml");
        std::fs::write(
            &p,
            format!(
                "name = \"host-test\"\n[disks]\ndevices = [{}]\n{body}",
                list.join(", ")
            ),
        )
        .unwrap();
        p
    }

    /// raidlab with this lab's state directory, no fault injection, and (for `run`)
    /// no per-disk baseline unless the arguments ask for one.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_raidlab"));
        c.args(args);
        if args[0] == "run" && !args.contains(&"--baseline") {
            c.args(["--baseline", "0"]);
        }
        c.env("RAIDLAB_STATE_DIR", self.path().join("state"))
            .env_remove("RAIDLAB_FAULT_KILL_IN");
        c
    }

    pub(crate) fn raidlab(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.command(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    /// `raidlab run PLAN --target host --quiet --out RESULTS EXTRA…`
    pub(crate) fn run_host(&self, plan: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let out = self.out();
        let mut args = vec![
            "run",
            plan.to_str().unwrap(),
            "--target",
            "host",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.raidlab(&args, env)
    }

    pub(crate) fn out(&self) -> PathBuf {
        self.path().join("results")
    }

    pub(crate) fn mounts_below(&self) -> Vec<String> {
        let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let base = std::fs::canonicalize(self.path()).unwrap();
        mi.lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| m.starts_with(base.to_str().unwrap()))
            .map(str::to_string)
            .collect()
    }

    pub(crate) fn signatures(&self, i: usize) -> String {
        String::from_utf8(sh(&format!("wipefs -n {}", self.devs[i])).stdout).unwrap()
    }

    pub(crate) fn cache(&self, i: usize) -> String {
        let name = self.devs[i].trim_start_matches("/dev/");
        std::fs::read_to_string(format!("/sys/block/{name}/queue/write_cache"))
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let mut m = self.mounts_below();
        m.sort_by_key(|s| std::cmp::Reverse(s.len()));
        for dir in m {
            let _ = sh(&format!("umount -l '{dir}'"));
        }
        for d in &self.devs {
            let _ = sh(&format!("wipefs -a -q {d}; losetup -d {d}"));
        }
    }
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The CSV export: (header, rows).
fn csv(lab: &Lab) -> (Vec<String>, Vec<Vec<String>>) {
    let out = lab.out();
    let o = lab.raidlab(
        &[
            "report",
            out.to_str().unwrap(),
            "--format",
            "csv",
            "-o",
            "-",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let s = String::from_utf8(o.stdout).unwrap();
    let mut lines = s
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>());
    let header = lines.next().unwrap_or_default();
    (header, lines.collect())
}

pub(crate) fn csv_rows(lab: &Lab) -> Vec<Vec<String>> {
    csv(lab).1
}

fn column(lab: &Lab, name: &str) -> usize {
    csv(lab)
        .0
        .iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn btrfs_levels_end_to_end_on_loop_devices() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(6);
    let plan = lab.plan(
        6,
        "[[arrays]]\nengine = \"btrfs\"\nlevel = [\"raid0\", \"raid1\", \"raid10\", \"raid5\", \"raid6\"]\nwrite_cache = \"off\"\n[[arrays]]\nlevel = \"single\"\nfilesystem = [\"xfs\", \"ext4\"]\ndisks = 1\n[workloads]\nrw = [\"randwrite\", \"randread\"]\nsize = \"64m\"\nruntime = \"1s\"\niodepth = 4\n",
    );
    let before: Vec<String> = (0..6).map(|i| lab.cache(i)).collect();
    let o = lab.run_host(&plan, &["--baseline", "1s"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    // The per-disk baseline came first, one entry per member, with real figures.
    let b: serde_json::Value =
        serde_json::from_slice(&std::fs::read(lab.out().join("baseline.json")).unwrap()).unwrap();
    assert_eq!(b["members"].as_array().unwrap().len(), 6);
    for m in b["members"].as_array().unwrap() {
        assert!(m["randread_iops"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["read_mib_s"].as_f64().unwrap() > 0.0, "{m}");
    }
    let mut rows = csv_rows(&lab);
    let level = column(&lab, "level");
    let fs = column(&lab, "filesystem");
    let mut singles: Vec<&str> = rows
        .iter()
        .filter(|r| r[level] == "single")
        .map(|r| r[fs].as_str())
        .collect();
    singles.sort();
    assert_eq!(
        singles,
        ["ext4", "ext4", "xfs", "xfs"],
        "single disks with xfs and ext4"
    );
    rows.retain(|r| r[level] != "single" && r[column(&lab, "rw")] == "randwrite");
    assert_eq!(rows.len(), 5, "one randwrite row per btrfs level");
    // Each array was built once and ran both workloads (the journal shows every mkfs).
    let journal = std::fs::read_to_string(lab.out().join("host-journal.jsonl")).unwrap();
    let built = journal
        .lines()
        .filter(|l| l.contains("\"op\":\"open\"") && l.contains("\"phase\":\"mkfs\""))
        .count();
    assert_eq!(built, 5 + 2, "one mkfs per array, not per case");
    let wi = column(&lab, "write_iops");
    let target = column(&lab, "target");
    let mut levels: Vec<&str> = rows.iter().map(|r| r[level].as_str()).collect();
    levels.sort();
    assert_eq!(levels, ["raid0", "raid1", "raid10", "raid5", "raid6"]);
    for r in &rows {
        assert_eq!(r[target], "host");
        let iops: f64 = r[wi].parse().unwrap();
        assert!(iops > 0.0, "{r:?}");
    }
    // Raw fio JSON kept byte for byte, and it is fio's.
    let raw: Vec<PathBuf> = std::fs::read_dir(lab.out().join("raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-host.json"))
        .collect();
    assert_eq!(raw.len(), 14, "{raw:?}");
    for p in &raw {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
        assert!(v["fio version"].as_str().unwrap().starts_with("fio-"));
        let rw = v["global options"]["rw"].as_str();
        assert!(matches!(rw, Some("randwrite" | "randread")), "{rw:?}");
    }
    // Each member's block-layer counters over the fio run: a random write wrote them.
    let store = raidlab_store::Store::open(&lab.out()).unwrap();
    let cases = store.cases().unwrap();
    for r in store.results().unwrap() {
        let case = cases.iter().find(|c| c.id == r.case_id).unwrap();
        let io = r.environment.details["during"]["members_io"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(io.len(), case.array.disks as usize, "{io:?}");
        if case.workload.rw == raidlab_core::Rw::RandWrite {
            let kib: u64 = io.iter().filter_map(|m| m["write_kib"].as_u64()).sum();
            assert!(
                kib >= 1024,
                "{}: members wrote {kib} KiB: {io:?}",
                r.case_id
            );
        }
    }
    // The report shows each case's environment, with the keys the anomaly rules read.
    let html = std::fs::read_to_string(lab.out().join("report.html")).unwrap();
    for key in [
        "members_io",
        "write_cache_after",
        "member_baseline_iops",
        "resync_during_fio",
        "mkfs.btrfs -f -d raid6",
    ] {
        assert!(html.contains(key), "report lacks {key}");
    }
    // Nothing left behind: no mount, no signature, caches as they were, journal clean.
    assert!(lab.mounts_below().is_empty());
    for (i, was) in before.iter().enumerate() {
        assert_eq!(lab.signatures(i), "", "{}", lab.devs[i]);
        assert_eq!(&lab.cache(i), was);
    }
    let state = lab.path().join("state/active");
    assert_eq!(std::fs::read_dir(&state).map(|d| d.count()).unwrap_or(0), 0);
}

/// btrfs raid1 on four loop devices, healthy, degraded and rebuilding: the degraded case
/// loses its last member once the data is laid out (mounted `-o degraded`), the
/// rebuilding one also puts a fresh device in its place with `btrfs replace` while fio
/// runs, and the result carries what the fresh device received. Nothing stays behind.
#[test]
fn btrfs_degraded_and_rebuilding_on_loop_devices() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(4);
    let plan = lab.plan(
        4,
        "[[arrays]]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = [\"healthy\", \"degraded\", \"rebuilding\"]\n[workloads]\nrw = \"randread\"\nsize = \"512m\"\nruntime = \"3s\"\niodepth = 4\n",
    );
    let o = lab.run_host(&plan, &[], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = csv_rows(&lab);
    let state = column(&lab, "state");
    let failed = column(&lab, "failed");
    let speed = column(&lab, "rebuild_mib_s");
    let took = column(&lab, "rebuild_s");
    let full = column(&lab, "rebuild_s_full");
    let reads = column(&lab, "read_iops");
    let mut states: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[state].as_str(), r[failed].as_str()))
        .collect();
    states.sort();
    assert_eq!(
        states,
        [("degraded", "1"), ("healthy", "0"), ("rebuilding", "1")]
    );
    for r in &rows {
        eprintln!(
            "btrfs raid1 {}: {} read IOPS, recovery {} MiB/s, ended at {} s",
            r[state], r[reads], r[speed], r[took]
        );
        assert!(r[reads].parse::<f64>().unwrap() > 0.0, "{r:?}");
        // A replace that ended within the run took the whole member: its own time.
        assert_eq!(r[full], r[took], "{r:?}");
        if r[state] == "rebuilding" {
            // raid1 keeps two copies: the lost member held about half of the 512 MiB
            // (and metadata); what reached the fresh device came at some speed, and
            // a recovery that ended did so within the run.
            let mib_s: f64 = r[speed].parse().expect("a recovery speed");
            assert!(mib_s > 1.0, "{r:?}");
            if let Ok(s) = r[took].parse::<f64>() {
                assert!(s > 0.0 && s < 10.0, "{r:?}");
            }
        } else {
            assert_eq!(r[speed], "", "{r:?}");
        }
    }
    let html = std::fs::read_to_string(lab.out().join("report.html")).unwrap();
    let fresh = &lab.devs[3];
    for line in [
        format!("wipefs -a -q {fresh}"),
        format!("mount -o degraded {}", lab.devs[0]),
        format!("btrfs replace start -B -f 4 {fresh}"),
    ] {
        assert!(html.contains(&line), "the report's commands lack {line}");
    }
    assert!(lab.mounts_below().is_empty());
    for i in 0..4 {
        assert_eq!(lab.signatures(i), "", "{}", lab.devs[i]);
    }
    let state = lab.path().join("state/active");
    assert_eq!(std::fs::read_dir(&state).map(|d| d.count()).unwrap_or(0), 0);
}

/// kill -9 with `btrfs replace` under way (just after it started, while fio runs), then
/// `raidlab cleanup`: the replace stopped, fio stopped, nothing mounted, no signature on
/// any member; `--resume` then runs the case whole.
#[test]
fn kill_9_mid_rebuild_then_cleanup_and_resume() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(4);
    let plan = lab.plan(
        4,
        "[[arrays]]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = \"rebuilding\"\n[workloads]\nrw = \"randread\"\nsize = \"768m\"\nruntime = \"3s\"\n",
    );
    let o = lab.run_host(&plan, &[], &[("RAIDLAB_FAULT_KILL_IN", "fio:2")]);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(o.status.signal(), Some(9), "{}", text(&o));
    let journal = std::fs::read_to_string(lab.out().join("host-journal.jsonl")).unwrap();
    assert!(journal.contains("cancel_replace"), "{journal}");
    // Processes whose command line is `btrfs replace start … <the fresh device> …`.
    let replacing = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .map(|c| {
                c.split(|b| *b == 0)
                    .map(|w| String::from_utf8_lossy(w).into_owned())
                    .collect::<Vec<_>>()
            })
            .filter(|argv| {
                argv.first().is_some_and(|a| a.ends_with("btrfs"))
                    && argv.iter().any(|w| w == "replace")
                    && argv.iter().any(|w| *w == lab.devs[3])
            })
            .map(|argv| argv.join(" "))
            .collect()
    };
    eprintln!("replace under way at the kill: {:?}", replacing());
    let o = lab.raidlab(&["cleanup"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("stopped any btrfs replace"), "{said}");
    assert!(lab.mounts_below().is_empty(), "mounts left: {said}");
    for i in 0..4 {
        assert_eq!(lab.signatures(i), "", "{}", lab.devs[i]);
    }
    // The replace returns once cancelled or unmounted: give it a moment.
    for _ in 0..50 {
        if replacing().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(
        replacing(),
        Vec::<String>::new(),
        "a btrfs replace outlived the cleanup"
    );
    let o = lab.run_host(&plan, &["--resume"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = csv_rows(&lab);
    assert_eq!(rows.len(), 1);
    assert!(lab.mounts_below().is_empty());
}

#[test]
fn guards_refuse_mounted_formatted_and_btrfs_members_and_unnamed_devices() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(5);
    let body = "[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\n[workloads]\nrw = \"randwrite\"\nsize = \"32m\"\nruntime = \"1s\"\n";
    let run = |extra: &[&str]| {
        let o = lab.run_host(&lab.path().join("plan.toml"), extra, &[]);
        let _ = std::fs::remove_dir_all(lab.out());
        o
    };

    // An ext4 signature: refused, with the way out named; the data is untouched.
    assert!(sh(&format!("mkfs.ext4 -q -F {}", lab.devs[0]))
        .status
        .success());
    lab.plan(2, body);
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success());
    assert!(err.contains("ext4 signature"), "{err}");
    assert!(
        err.contains(&format!("--destroy-data-on {}", lab.serial(0))),
        "{err}"
    );
    assert!(
        lab.signatures(0).contains("ext4"),
        "the refused disk was changed"
    );

    // Mounted: refused even when its serial is named for destruction.
    let mnt = lab.path().join("m");
    std::fs::create_dir(&mnt).unwrap();
    assert!(sh(&format!("mount {} {}", lab.devs[0], mnt.display()))
        .status
        .success());
    let o = run(&["--destroy-data-on", &lab.serial(0)]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success());
    assert!(err.contains("mounted at"), "{err}");
    assert!(lab.signatures(0).contains("ext4"));
    assert!(sh(&format!("umount {}", mnt.display())).status.success());

    // A member of a mounted two-device btrfs (mountinfo names only the other device).
    assert!(sh(&format!(
        "mkfs.btrfs -q -f -d raid1 -m raid1 {} {}",
        lab.devs[3], lab.devs[4]
    ))
    .status
    .success());
    assert!(sh(&format!("mount {} {}", lab.devs[3], mnt.display()))
        .status
        .success());
    let p = lab.plan(2, body);
    let swapped = std::fs::read_to_string(&p)
        .unwrap()
        .replace(&lab.devs[0], &lab.devs[4]);
    std::fs::write(&p, swapped).unwrap();
    let o = run(&[]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success());
    assert!(err.contains("member of a mounted btrfs"), "{err}");
    assert!(lab.signatures(4).contains("btrfs"));
    assert!(sh(&format!("umount {}", mnt.display())).status.success());

    // Not named in the plan: `disks` says so, and its serial cannot be waived.
    lab.plan(2, body);
    let o = lab.raidlab(
        &[
            "disks",
            "--plan",
            lab.path().join("plan.toml").to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let listing = String::from_utf8_lossy(&o.stdout).to_string();
    let line = listing
        .lines()
        .find(|l| l.starts_with(lab.devs[2].trim_start_matches("/dev/")))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(
        line.contains("refused") && line.contains("not named in the plan"),
        "{line}"
    );
    let o = run(&["--destroy-data-on", &lab.serial(2)]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no device of the plan has this serial"));

    // The signature case is accepted once the user names the disk's serial.
    let o = run(&["--destroy-data-on", &lab.serial(0)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(lab.signatures(0), "", "raidlab erases what it built");
}

#[test]
fn kill_9_in_every_phase_then_cleanup_and_resume() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    for phase in ["cache", "mkfs", "mount", "layout", "fio", "teardown"] {
        let lab = Lab::new(2);
        let plan = lab.plan(
            2,
            "[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nwrite_cache = \"off\"\n[workloads]\nrw = [\"randread\", \"randwrite\"]\nsize = \"32m\"\nruntime = \"2s\"\n",
        );
        let before = (lab.cache(0), lab.cache(1));
        let run = |resume: bool, env: &[(&str, &str)]| {
            let extra: &[&str] = if resume { &["--resume"] } else { &[] };
            lab.run_host(&plan, extra, env)
        };
        let o = run(false, &[("RAIDLAB_FAULT_KILL_IN", phase)]);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(o.status.signal(), Some(9), "phase {phase}: {}", text(&o));
        let journal = std::fs::read_to_string(lab.out().join("host-journal.jsonl")).unwrap();
        assert!(
            journal.contains("\"op\":\"open\""),
            "phase {phase}: {journal}"
        );

        let o = lab.raidlab(&["cleanup"], &[]);
        assert!(o.status.success(), "phase {phase}: {}", text(&o));
        assert!(lab.mounts_below().is_empty(), "phase {phase}: mounts left");
        assert_eq!(lab.signatures(0), "", "phase {phase}");
        assert_eq!(lab.signatures(1), "", "phase {phase}");
        assert_eq!(
            (lab.cache(0), lab.cache(1)),
            before,
            "phase {phase}: caches"
        );
        let again = lab.raidlab(&["cleanup"], &[]);
        assert!(
            String::from_utf8_lossy(&again.stderr).contains("nothing to clean up"),
            "{}",
            text(&again)
        );

        let o = run(true, &[]);
        assert!(o.status.success(), "phase {phase}: {}", text(&o));
        let rows = csv_rows(&lab);
        assert_eq!(rows.len(), 2, "phase {phase}: each case exactly once");
        assert!(lab.mounts_below().is_empty());
    }
}

#[test]
fn ctrl_c_stops_fio_tears_down_and_stores_nothing_half_done() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let plan = lab.plan(
        2,
        "[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nwrite_cache = \"off\"\n[workloads]\nrw = \"randwrite\"\nsize = \"32m\"\nruntime = \"8s\"\n",
    );
    let before = (lab.cache(0), lab.cache(1));
    let out = lab.out();
    let mut child = super::host_safety::spawn_run(&lab, &plan, &out);
    super::host_safety::wait_for_fio(&out, &mut child);
    std::thread::sleep(std::time::Duration::from_secs(1));
    // SIGINT to the raidlab this test started, by its pid.
    assert!(sh(&format!("kill -INT {}", child.id())).status.success());
    let signalled = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        signalled.elapsed().as_secs() < 6,
        "fio was not stopped: waited {:?}",
        signalled.elapsed()
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--resume"),
        "{}",
        text(&o)
    );
    assert!(lab.mounts_below().is_empty());
    assert_eq!(lab.signatures(0), "");
    assert_eq!((lab.cache(0), lab.cache(1)), before);
    assert_eq!(csv_rows(&lab).len(), 0, "an interrupted case is not stored");
    let o = lab.run_host(&plan, &["--resume"], &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(csv_rows(&lab).len(), 1);
}

/// `plan --script` drives write caches with the tool each device answers to; on a loop
/// device that is the kernel's flag, read and set and put back by the script's functions.
#[test]
fn plan_script_cache_functions_read_set_and_restore_a_loop_device() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(1);
    let plan = lab.plan(1, "[arrays]\nlevel = \"single\"\nfilesystem = \"none\"\nwrite_cache = \"off\"\n[workloads]\nrw = \"randread\"\nsize = \"64m\"\nruntime = \"1s\"\n");
    let script = text(&lab.raidlab(&["plan", plan.to_str().unwrap(), "--script"], &[]));
    let start = script.find("# Write caches:").expect("cache functions");
    let end = script
        .find("# Each disk's write-cache setting")
        .expect("cache loop");
    let functions = &script[start..end];
    let dev = &lab.devs[0];
    let before = lab.cache(0);
    let was = u8::from(before == "write back");
    let bash = |cmd: String| Command::new("bash").args(["-c", &cmd]).output().unwrap();
    let o = bash(format!(
        "set -eu\n{functions}\necho \"how=$(wcache_how {dev})\"\necho \"get=$(wcache_get {dev})\"\n\
         wcache_set {dev} {flip}\necho \"flipped=$(wcache_get {dev})\"\n\
         wcache_set {dev} {was}\necho \"back=$(wcache_get {dev})\"",
        flip = 1 - was
    ));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let name = dev.trim_start_matches("/dev/");
    assert!(
        out.contains(&format!("how=sysfs /sys/block/{name}/queue/write_cache")),
        "{out}"
    );
    assert!(out.contains(&format!("get={was}")), "{out}");
    assert!(out.contains(&format!("flipped={}", 1 - was)), "{out}");
    assert!(out.contains(&format!("back={was}")), "{out}");
    assert_eq!(lab.cache(0), before, "the cache is as it was");
}

/// Issue 19, item 5: `[workloads.fio]` and the buffer fields reach fio verbatim on the host
/// target — the job file kept with the result and fio's own JSON show them, and fio ran the
/// fsyncs — while a misspelt option is refused in fio's words before anything is built.
#[test]
fn fio_options_pass_through_on_the_host_target() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(1);
    let body = "[run]\nprecondition = 2\n[arrays]\nlevel = \"single\"\nfilesystem = \"xfs\"\n[workloads]\nrw = \"randwrite\"\nsize = \"64m\"\nruntime = \"1s\"\nrefill_buffers = false\nbuffer_pattern = \"0xdeadbeef\"\n[workloads.fio]\n";
    let plan = lab.plan(1, &format!("{body}fsync = 1\n"));
    let o = lab.run_host(&plan, &[], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let raw: Vec<PathBuf> = std::fs::read_dir(lab.out().join("raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let json = raw
        .iter()
        .find(|p| p.to_string_lossy().ends_with("-host.json"))
        .expect("the raw fio JSON");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
    let global = &v["global options"];
    assert_eq!(global["fsync"], "1", "{global}");
    assert_eq!(global["buffer_pattern"], "0xdeadbeef", "{global}");
    assert!(global.get("refill_buffers").is_none(), "{global}");
    assert!(
        v["jobs"][0]["sync"]["total_ios"].as_u64().unwrap_or(0) > 0,
        "fio issued fsyncs: {}",
        v["jobs"][0]["sync"]
    );
    let job = raw
        .iter()
        .find(|p| p.to_string_lossy().ends_with("job.fio"))
        .expect("the job file kept beside the result");
    let job = std::fs::read_to_string(job).unwrap();
    let at = |s: &str| job.find(s).unwrap_or_else(|| panic!("{s} in {job}"));
    assert!(
        at("randrepeat=0") < at("fsync=1"),
        "the plan's options after raidlab's"
    );
    // `[run] precondition = 2`: the region written twice before the measured run, as the
    // commands the report shows say.
    let html = std::fs::read_to_string(lab.out().join("report.html")).unwrap();
    let layout = html
        .lines()
        .find(|l| l.contains("--name=layout"))
        .expect("the layout pass in the report's commands");
    assert!(layout.contains("--loops=2"), "{layout}");

    let bad = lab.plan(1, &format!("{body}fsyncc = 1\n"));
    let before = std::fs::read_dir(lab.out().join("raw")).unwrap().count();
    let o = lab.raidlab(
        &[
            "run",
            bad.to_str().unwrap(),
            "--target",
            "host",
            "--quiet",
            "--resume",
            "--out",
            lab.out().to_str().unwrap(),
        ],
        &[],
    );
    assert!(!o.status.success());
    let said = text(&o);
    assert!(
        said.contains("workloads.fio (fsyncc = 1): fio refuses the job")
            && said.contains("Did you mean fsync?"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(lab.out().join("raw")).unwrap().count(),
        before
    );
    assert_eq!(lab.signatures(0), "", "nothing was built");
}

/// Reads per member in /sys/block/NAME/stat (its first field), for each of `devs`.
fn reads_completed(devs: &[String]) -> Vec<u64> {
    devs.iter()
        .map(|d| {
            let name = d.trim_start_matches("/dev/");
            std::fs::read_to_string(format!("/sys/block/{name}/stat"))
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

/// Members that served more than 5 % of the reads.
fn busy(reads: &[u64]) -> usize {
    let total: u64 = reads.iter().sum();
    reads.iter().filter(|&&r| r * 20 > total).count()
}

/// btrfs raid1 on four devices as the real kernel reads it, and as the simulator now
/// models it (`crates/sim/src/btrfs.rs`): a block group lives on two devices, and each
/// reading thread reads one copy (btrfs's "pid" read policy). One fio job reads from one
/// device, two jobs from one or both of a pair as their pids fall — where md's raid1 would mirror on all four
/// and balance reads over them. Kernel: reads counted on the loop devices across the run
/// (setup reads are a few hundred against tens of thousands); simulator: its members'
/// `disk_util`.
#[test]
fn btrfs_raid1_reads_one_copy_per_thread_in_the_kernel_and_the_simulator() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    for numjobs in [1, 2] {
        let lab = Lab::new(4);
        let body = format!("[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\n[workloads]\nrw = \"randread\"\nbs = \"4k\"\nsize = \"128m\"\nruntime = \"2s\"\niodepth = 4\nnumjobs = {numjobs}\n");
        let plan = lab.plan(4, &body);
        let before = reads_completed(&lab.devs);
        let o = lab.run_host(&plan, &[], &[]);
        assert!(o.status.success(), "{}", text(&o));
        let kernel: Vec<u64> = reads_completed(&lab.devs)
            .iter()
            .zip(&before)
            .map(|(a, b)| a - b)
            .collect();
        // The same array and workload on the simulator's disks.
        let sim_plan = lab.path().join("sim.toml");
        std::fs::write(
            &sim_plan,
            format!("name = \"sim\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\ncapacity = \"1g\"\n{body}"),
        )
        .unwrap();
        let sim_out = lab.path().join("sim");
        let o = lab.raidlab(
            &[
                "run",
                sim_plan.to_str().unwrap(),
                "--quiet",
                "--out",
                sim_out.to_str().unwrap(),
            ],
            &[],
        );
        assert!(o.status.success(), "{}", text(&o));
        let raw = std::fs::read_dir(sim_out.join("raw"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "json"))
            .unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(raw).unwrap()).unwrap();
        let sim: Vec<u64> = v["disk_util"].as_array().unwrap()[1..]
            .iter()
            .map(|d| d["read_ios"].as_u64().unwrap())
            .collect();
        eprintln!(
            "btrfs raid1, {numjobs} job(s): reads per member, kernel {kernel:?}, simulator {sim:?}"
        );
        assert!(kernel.iter().sum::<u64>() > 1000, "{kernel:?}");
        // The kernel picks a thread's copy by its pid (`pid % copies`): two jobs read two
        // copies when their pids differ in parity, one when they do not — never more than
        // one device per job, where md's raid1 would read all four. (The simulator gives
        // each job its own copy.)
        let read_by_kernel = busy(&kernel);
        if numjobs == 1 {
            assert_eq!(read_by_kernel, 1, "kernel: {kernel:?}");
        } else {
            assert!(
                (1..=numjobs).contains(&read_by_kernel),
                "kernel: {kernel:?}"
            );
        }
        assert_eq!(busy(&sim), numjobs, "simulator: {sim:?}");
    }
}

/// The VM lab's blanking before each array (`raidlab_host::blank::blank`), on loop devices over
/// sparse files as the lab's qemu drives are: what a case wrote reads back as zeros after
/// it, and the files give the space back (the discard punches holes, as qemu's
/// `discard=unmap` does with the lab's member files). A member in use (here a mounted
/// btrfs) is left alone, with the reason.
#[test]
fn blank_discards_members_whole() {
    let _machine = raidlab_testkit::shared();
    if !can_run() {
        return;
    }
    let lab = Lab::new(2);
    let pattern = |d: &str, at_mib: u64| {
        sh(&format!(
            "head -c 4194304 /dev/urandom | dd of={d} bs=1M seek={at_mib} iflag=fullblock oflag=direct conv=notrunc status=none"
        ))
    };
    for d in &lab.devs {
        assert!(pattern(d, 0).status.success());
        assert!(pattern(d, 700).status.success());
    }
    let allocated = |i: usize| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(lab.path().join(format!("disk{i}.img")))
            .unwrap()
            .blocks()
            * 512
    };
    assert!(allocated(0) >= 8 << 20, "the pattern was not written");
    assert_eq!(raidlab_host::blank::blank(&lab.devs), Ok(None));
    for d in &lab.devs {
        for at in [0u64, 700] {
            let o = sh(&format!(
                "dd if={d} bs=1M skip={at} count=4 iflag=direct status=none | tr -d '\\0' | wc -c"
            ));
            assert_eq!(
                String::from_utf8_lossy(&o.stdout).trim(),
                "0",
                "{d} at {at} MiB: not zeros after the discard"
            );
        }
    }
    for i in 0..2 {
        assert!(
            allocated(i) < 1 << 20,
            "disk{i}.img still holds {} bytes",
            allocated(i)
        );
    }
    // A held member: a file system mounted on it.
    let mnt = lab.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let d = &lab.devs[1];
    let o = sh(&format!(
        "mkfs.btrfs -q -f {d} && mount {d} {}",
        mnt.display()
    ));
    assert!(o.status.success(), "{}", text(&o));
    let r = raidlab_host::blank::blank(&lab.devs);
    let _ = sh(&format!("umount {}", mnt.display()));
    let why = r.unwrap().expect("a mounted member is not blanked");
    assert!(why.contains(d.as_str()), "{why}");
}
