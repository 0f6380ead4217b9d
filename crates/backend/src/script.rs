//! The exact commands the host target runs for a case — set write caches, create the
//! array, make the file system, lay out the test file, run fio, tear down — as data.
//!
//! One source of truth: `raidlab plan --script` renders these steps as a bash script a
//! person can read and run (as the 2013 write-up published its script), `run --dry-run`
//! lists them with the real device paths, and the host target executes them one by one,
//! journalling each system-changing step (its [`Undo`]) before it runs.

use raidlab_core::{Case, Engine, Filesystem, Level, Plan, Resync, WriteCache};
use std::fmt::Write;

/// What a step is for; the progress bar and the journal show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    Cache,
    Create,
    Resync,
    Mkfs,
    Mount,
    Layout,
    Fio,
    Teardown,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Cache => "write cache",
            Phase::Create => "create",
            Phase::Resync => "resync",
            Phase::Mkfs => "mkfs",
            Phase::Mount => "mount",
            Phase::Layout => "layout",
            Phase::Fio => "fio",
            Phase::Teardown => "teardown",
        }
    }

    /// Parse the names `name()` gives and the one-word spellings (`cache`).
    pub fn parse(s: &str) -> Option<Phase> {
        [
            Phase::Cache,
            Phase::Create,
            Phase::Resync,
            Phase::Mkfs,
            Phase::Mount,
            Phase::Layout,
            Phase::Fio,
            Phase::Teardown,
        ]
        .into_iter()
        .find(|p| p.name() == s || (s == "cache" && *p == Phase::Cache))
    }
}

/// Bash functions for member write caches, as the host target drives them
/// (`host/cache.rs`): ATA disks answer to `hdparm -W`, SCSI/SAS to `sdparm WCE`, anything
/// else (loop, virtio, NVMe) only has the kernel's flag in `/sys/block/X/queue/write_cache`.
/// `wcache_get DEV` prints 1 or 0; `wcache_set DEV 1|0`.
pub const CACHE_FUNCTIONS: &str = r#"# Write caches: hdparm for ATA disks, sdparm for SCSI/SAS, else the kernel's flag.
wcache_how() {
  local n; n=$(basename "$(readlink -f "$1")")
  if [[ $n == sd* ]] && hdparm -W "$1" 2>/dev/null | grep -q write-caching; then echo hdparm
  elif [[ $n == sd* ]] && sdparm --get WCE "$1" 2>/dev/null | grep -q '^WCE'; then echo sdparm
  else echo "sysfs /sys/block/$n/queue/write_cache"; fi
}
wcache_get() {
  local how; how=$(wcache_how "$1")
  case $how in
    hdparm) hdparm -W "$1" | awk '/write-caching/ {print ($3 == 1)}' ;;
    sdparm) sdparm --get WCE "$1" | awk '$1 == "WCE" {print ($2 == 1)}' ;;
    *) [[ $(cat "${how#sysfs }") == "write back" ]] && echo 1 || echo 0 ;;
  esac
}
wcache_set() {
  local how; how=$(wcache_how "$1")
  case $how in
    hdparm) hdparm -W "$2" "$1" >/dev/null ;;
    sdparm) sdparm --set WCE="$2" "$1" >/dev/null ;;
    *) if [[ $2 == 1 ]]; then echo "write back"; else echo "write through"; fi > "${how#sysfs }" ;;
  esac
}
"#;

/// What one step does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Run a program. `may_fail`: its exit status is recorded, not fatal.
    Run { argv: Vec<String>, may_fail: bool },
    /// Turn a member's volatile write cache on or off (hdparm, sdparm or sysfs: the host
    /// target picks what the device answers to).
    SetCache {
        member: usize,
        device: String,
        on: bool,
    },
    /// Put a member's write cache back as it was before the case.
    RestoreCache { member: usize, device: String },
    /// Set md's raid5/6 `stripe_cache_size` of the array.
    StripeCache { pages: u32 },
    /// Write a text file (the fio job file).
    WriteFile { path: String, text: String },
}

/// How to undo a system change if raidlab dies before its own teardown: what the journal
/// records before the step runs, and what `raidlab cleanup` replays.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "undo", rename_all = "snake_case")]
pub enum Undo {
    /// Stop the md array and zero the superblocks written on its members.
    StopArray { array: String, members: Vec<String> },
    /// Erase the signatures raidlab wrote (mkfs.btrfs, mkfs on a single disk).
    Wipe { devices: Vec<String> },
    /// Unmount the test file system.
    Unmount { dir: String },
    /// Restore a member's write cache (`was` = its state before raidlab touched it).
    RestoreCache { device: String, was: bool },
}

/// One step: its phase, its action, the undo it opens (journalled before it runs) and
/// the undo it closes (a teardown step, journalled after it succeeds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub phase: Phase,
    pub action: Action,
    pub opens: Option<Undo>,
    pub closes: Option<Undo>,
}

impl Step {
    /// The step as one line (or a heredoc) of bash.
    pub fn shell(&self) -> String {
        match &self.action {
            Action::Run { argv, may_fail } => {
                let line = argv
                    .iter()
                    .map(|w| shell_word(w))
                    .collect::<Vec<_>>()
                    .join(" ");
                if *may_fail {
                    format!("{line} || true")
                } else {
                    line
                }
            }
            Action::SetCache { device, on, .. } => {
                format!("wcache_set {} {}", shell_word(device), u8::from(*on))
            }
            Action::RestoreCache { member, device } => {
                format!(
                    "wcache_set {} \"${{CACHE[{member}]}}\"  # restore",
                    shell_word(device)
                )
            }
            Action::StripeCache { pages } => format!(
                "echo {pages} > /sys/block/$(basename $(readlink -f {MD}))/md/stripe_cache_size"
            ),
            Action::WriteFile { path, text } if text.contains(MD) => {
                // fio looks up a device's statistics with lstat(): through the link it
                // finds none, so the job names the array's own node, resolved when it runs.
                let text = text
                    .replace('\\', "\\\\")
                    .replace('$', "\\$")
                    .replace('`', "\\`")
                    .replace(MD, &format!("$(readlink -f {MD})"));
                format!("cat > {} <<EOF\n{text}EOF", shell_word(path))
            }
            Action::WriteFile { path, text } => {
                format!("cat > {} <<'EOF'\n{text}EOF", shell_word(path))
            }
        }
    }
}

/// Quote a word for bash unless it is plain, or a `"${DISK[i]}"` reference of the script.
pub fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+%@".contains(&b));
    if plain || (w.starts_with("\"${") && w.ends_with("}\"")) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// The md array device the host target creates (mdadm makes `/dev/md/raidlab` a link to
/// `/dev/mdN`).
pub const MD: &str = "/dev/md/raidlab";

/// Where a case's commands put things.
#[derive(Debug, Clone)]
pub struct Paths {
    /// Mount point of the test file system.
    pub mnt: String,
    /// Directory for the fio job file.
    pub workdir: String,
    /// fio's JSON output.
    pub result: String,
}

impl Paths {
    /// The paths of the printed script: relative files, `/mnt/raidlab`.
    pub fn script(result: &str) -> Paths {
        Paths {
            mnt: "/mnt/raidlab".into(),
            workdir: ".".into(),
            result: result.into(),
        }
    }
}

fn run(phase: Phase, argv: &[&str]) -> Step {
    Step {
        phase,
        action: Action::Run {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            may_fail: false,
        },
        opens: None,
        closes: None,
    }
}

fn argv(words: impl IntoIterator<Item = String>) -> Action {
    Action::Run {
        argv: words.into_iter().collect(),
        may_fail: false,
    }
}

fn md_level(l: Level) -> &'static str {
    match l {
        Level::Raid0 => "0",
        Level::Raid1 => "1",
        Level::Raid10 => "10",
        Level::Raid5 => "5",
        Level::Raid6 => "6",
        _ => "?",
    }
}

/// The one way a script, a dry run and the report name member `i` when the plan lists
/// no devices: a reference into the script's `DISK` array.
pub fn placeholder(i: usize) -> String {
    format!("\"${{DISK[{i}]}}\"")
}

/// The plan's devices, or `n` [`placeholder`]s when it lists none.
pub fn devices_or_placeholders(devices: &[String], n: usize) -> Vec<String> {
    if devices.is_empty() {
        (0..n).map(placeholder).collect()
    } else {
        devices.to_vec()
    }
}

/// The members of a case's array as its commands name them: its devices, or placeholders.
pub fn case_members(case: &Case) -> Vec<String> {
    let all = devices_or_placeholders(&case.disks.devices, case.array.disks as usize);
    members(case, &all).to_vec()
}

/// The devices a case's array uses: the plan's first `disks` (all of them when the plan
/// lists fewer; the caller says whether that is enough).
pub fn members<'a>(case: &Case, devices: &'a [String]) -> &'a [String] {
    &devices[..(case.array.disks as usize).min(devices.len())]
}

/// The device fio (or mkfs) works on: the md array, or the first member (btrfs, single).
pub fn array_device(case: &Case, members: &[String]) -> String {
    if case.array.engine == Engine::Md && case.array.level != Level::Single {
        MD.to_string()
    } else {
        members[0].clone()
    }
}

/// The commands for one case. `members` are the member devices (paths, or `"${DISK[0]}"`
/// references in the script).
pub fn case_steps(case: &Case, members: &[String], paths: &Paths) -> Vec<Step> {
    let a = &case.array;
    let w = &case.workload;
    let mut steps = Vec::new();
    let single = a.level == Level::Single;
    let device = array_device(case, members);

    if a.write_cache != WriteCache::Keep {
        for (i, m) in members.iter().enumerate() {
            steps.push(Step {
                phase: Phase::Cache,
                action: Action::SetCache {
                    member: i,
                    device: m.clone(),
                    on: a.write_cache == WriteCache::On,
                },
                opens: None, // the host target journals the state it read instead
                closes: None,
            });
        }
    }
    match a.engine {
        Engine::Md if !single => {
            let mut c = vec![
                "mdadm".to_string(),
                "--create".into(),
                MD.into(),
                "--run".into(),
                "--metadata=1.2".into(),
                format!("--level={}", md_level(a.level)),
                format!("--raid-devices={}", a.disks),
            ];
            if let Some(chunk) = a.chunk {
                c.push(format!("--chunk={}K", chunk.as_kib()));
            }
            if let Some(layout) = a.layout {
                c.push(format!("--layout={}", layout.mdadm_name()));
            }
            // Real mdadm refuses any --bitmap on raid0 ("bitmaps not meaningful with level
            // raid0"), --bitmap=none included: found by the VM lab.
            if !(a.level == Level::Raid0 && a.bitmap == raidlab_core::Bitmap::None) {
                c.push(format!("--bitmap={}", a.bitmap));
            }
            if a.resync == Resync::AssumeClean && a.level != Level::Raid0 {
                c.push("--assume-clean".into());
            }
            c.extend(members.iter().cloned());
            steps.push(Step {
                phase: Phase::Create,
                action: argv(c),
                opens: Some(Undo::StopArray {
                    array: MD.into(),
                    members: members.to_vec(),
                }),
                closes: None,
            });
            if let Some(pages) = a.stripe_cache {
                steps.push(Step {
                    phase: Phase::Create,
                    action: Action::StripeCache { pages },
                    opens: None,
                    closes: None,
                });
            }
            if a.resync == Resync::Wait && a.level != Level::Raid0 {
                let mut s = run(Phase::Resync, &["mdadm", "--wait", MD]);
                // mdadm --wait exits 1 when there was nothing to wait for.
                s.action = Action::Run {
                    argv: vec!["mdadm".into(), "--wait".into(), MD.into()],
                    may_fail: true,
                };
                steps.push(s);
            }
        }
        Engine::Btrfs => {
            let profile = if single {
                "single".to_string()
            } else {
                a.level.to_string()
            };
            let mut c = vec![
                "mkfs.btrfs".to_string(),
                "-f".into(),
                "-d".into(),
                profile.clone(),
                "-m".into(),
                profile,
            ];
            c.extend(members.iter().cloned());
            steps.push(Step {
                phase: Phase::Mkfs,
                action: argv(c),
                opens: Some(Undo::Wipe {
                    devices: members.to_vec(),
                }),
                closes: None,
            });
        }
        Engine::Md => {}
    }
    let chunk_kib = a.chunk.map(|c| c.as_kib()).unwrap_or(0);
    let data = a.data_disks().max(1);
    let mkfs: Option<Vec<String>> = match a.filesystem {
        Filesystem::Xfs if chunk_kib > 0 && !single => Some(vec![
            "mkfs.xfs".into(),
            "-f".into(),
            "-K".into(),
            "-d".into(),
            format!("su={chunk_kib}k,sw={data}"),
            device.clone(),
        ]),
        Filesystem::Xfs => Some(vec![
            "mkfs.xfs".into(),
            "-f".into(),
            "-K".into(),
            device.clone(),
        ]),
        Filesystem::Ext4 if chunk_kib > 0 && !single => {
            let stride = chunk_kib / 4;
            Some(vec![
                "mkfs.ext4".into(),
                "-F".into(),
                "-q".into(),
                "-E".into(),
                format!(
                    "stride={stride},stripe_width={},nodiscard",
                    stride * data as u64
                ),
                device.clone(),
            ])
        }
        Filesystem::Ext4 => Some(vec![
            "mkfs.ext4".into(),
            "-F".into(),
            "-q".into(),
            "-E".into(),
            "nodiscard".into(),
            device.clone(),
        ]),
        Filesystem::Btrfs | Filesystem::None => None,
    };
    if let Some(m) = mkfs {
        // On an md array the array's own undo erases it; on a bare disk, wipe it.
        let opens = single.then(|| Undo::Wipe {
            devices: vec![device.clone()],
        });
        steps.push(Step {
            phase: Phase::Mkfs,
            action: argv(m),
            opens,
            closes: None,
        });
    }
    let on_fs = a.filesystem != Filesystem::None;
    let target_file = if on_fs {
        steps.push(run(Phase::Mount, &["mkdir", "-p", &paths.mnt]));
        steps.push(Step {
            phase: Phase::Mount,
            action: argv(["mount".into(), device.clone(), paths.mnt.clone()]),
            opens: Some(Undo::Unmount {
                dir: paths.mnt.clone(),
            }),
            closes: None,
        });
        format!("{}/raidlab.test", paths.mnt)
    } else {
        device.clone()
    };
    if on_fs || w.rw.reads() {
        // Lay the test data out by writing it: fallocate'd extents read back as zeros
        // without touching the disks.
        steps.push(Step {
            phase: Phase::Layout,
            action: argv([
                "fio".into(),
                "--name=layout".into(),
                format!("--filename={target_file}"),
                "--rw=write".into(),
                "--bs=1m".into(),
                // Deep enough that raid5/6 see full stripes and the layout takes seconds.
                "--iodepth=16".into(),
                "--direct=1".into(),
                format!("--ioengine={}", w.ioengine),
                format!("--size={}", w.size.to_fio()),
                format!("--offset={}", w.offset.to_fio()),
                "--fallocate=none".into(),
                "--output=/dev/null".into(),
            ]),
            opens: None,
            closes: None,
        });
    }
    let job_file = format!("{}/{}.fio", paths.workdir, case.id);
    steps.push(Step {
        phase: Phase::Fio,
        action: Action::WriteFile {
            path: job_file.clone(),
            text: raidlab_fio::render_job(w, &target_file, &case.id.0),
        },
        opens: None,
        closes: None,
    });
    steps.push(Step {
        phase: Phase::Fio,
        action: argv([
            "fio".into(),
            "--output-format=json".into(),
            format!("--output={}", paths.result),
            job_file,
        ]),
        opens: None,
        closes: None,
    });
    if on_fs {
        steps.push(Step {
            phase: Phase::Teardown,
            action: argv(["umount".into(), paths.mnt.clone()]),
            opens: None,
            closes: Some(Undo::Unmount {
                dir: paths.mnt.clone(),
            }),
        });
    }
    if a.engine == Engine::Md && !single {
        steps.push(run(Phase::Teardown, &["mdadm", "--stop", MD]));
        let mut z = vec!["mdadm".to_string(), "--zero-superblock".into()];
        z.extend(members.iter().cloned());
        steps.push(Step {
            phase: Phase::Teardown,
            action: argv(z),
            opens: None,
            closes: Some(Undo::StopArray {
                array: MD.into(),
                members: members.to_vec(),
            }),
        });
    }
    let wiped: Option<Vec<String>> = if a.engine == Engine::Btrfs {
        Some(members.to_vec())
    } else if single && a.filesystem != Filesystem::None {
        Some(vec![device.clone()])
    } else {
        None
    };
    if let Some(devices) = wiped {
        let mut c = vec!["wipefs".to_string(), "-a".into(), "-q".into()];
        c.extend(devices.iter().cloned());
        steps.push(Step {
            phase: Phase::Teardown,
            action: argv(c),
            opens: None,
            closes: Some(Undo::Wipe { devices }),
        });
    }
    if a.write_cache != WriteCache::Keep {
        for (i, m) in members.iter().enumerate() {
            steps.push(Step {
                phase: Phase::Teardown,
                action: Action::RestoreCache {
                    member: i,
                    device: m.clone(),
                },
                opens: None,
                closes: None,
            });
        }
    }
    steps
}

/// Which parts of a case's steps run when consecutive cases share one array, as the
/// seeds ran every workload on an array before building the next: building (and, on real
/// disks, resyncing) an array per workload would cost hours and measure nothing new.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reuse {
    /// The array is already built, its caches set, its file system mounted.
    pub array_up: bool,
    /// The test region is already laid out (written) by an earlier case.
    pub laid_out: bool,
    /// The next case uses the same array: leave it up.
    pub keep_up: bool,
}

/// Drop the steps `reuse` makes unnecessary.
pub fn select(steps: Vec<Step>, reuse: Reuse) -> Vec<Step> {
    steps
        .into_iter()
        .filter(|s| match s.phase {
            Phase::Cache | Phase::Create | Phase::Resync | Phase::Mkfs | Phase::Mount => {
                !reuse.array_up
            }
            Phase::Layout => !reuse.laid_out,
            Phase::Teardown => !reuse.keep_up,
            Phase::Fio => true,
        })
        .collect()
}

/// Whether two cases run on the same array (same spec, same disks).
pub fn same_array(a: &Case, b: &Case) -> bool {
    a.array == b.array && a.disks == b.disks
}

/// The reuse each case of a sequence gets when nothing fails: what `plan --script` and
/// `run --dry-run` print, and what the host target does.
pub fn reuse_sequence(cases: &[&Case]) -> Vec<Reuse> {
    let mut laid: Option<(u64, u64)> = None;
    let mut out = Vec::with_capacity(cases.len());
    for (i, case) in cases.iter().enumerate() {
        let w = &case.workload;
        let region = (w.offset.0, w.offset.0 + w.size.0);
        let array_up = i > 0 && same_array(cases[i - 1], case);
        if !array_up {
            laid = None;
        }
        let reuse = Reuse {
            array_up,
            laid_out: laid.is_some_and(|(a, b)| a <= region.0 && region.1 <= b),
            keep_up: cases.get(i + 1).is_some_and(|n| same_array(n, case)),
        };
        let lays_out = case.array.filesystem != Filesystem::None || w.rw.reads();
        if lays_out && !reuse.laid_out {
            laid = Some(region);
        }
        out.push(reuse);
    }
    out
}

/// Every case and repetition of a plan in the order a run takes them, with what each may
/// skip because the case before left its array up: the walk `plan --script` and `run
/// --dry-run` print (the host target decides the same as it goes, with `same_array`).
pub fn run_order(plan: &Plan) -> Vec<(&Case, u32, Reuse)> {
    let todo: Vec<(&Case, u32)> = (1..=plan.run.repeat)
        .flat_map(|rep| plan.cases().iter().map(move |c| (c, rep)))
        .collect();
    let cases: Vec<&Case> = todo.iter().map(|(c, _)| *c).collect();
    todo.iter()
        .zip(reuse_sequence(&cases))
        .map(|(&(case, rep), reuse)| (case, rep, reuse))
        .collect()
}

/// A bash script of every case and repetition of a plan, for a person to read and run.
pub fn plan_script(plan: &Plan) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "#!/usr/bin/env bash");
    let _ = writeln!(
        s,
        "# raidlab plan `{}`: the commands `raidlab run --target host` runs, in order.",
        plan.name
    );
    let _ = writeln!(
        s,
        "# THIS DESTROYS ALL DATA ON THE DISKS BELOW. raidlab itself checks every disk first"
    );
    let _ = writeln!(
        s,
        "# (not mounted, no signatures, not in use); this script does not."
    );
    let _ = writeln!(s, "set -euo pipefail\n");
    let count = plan.disks.count as usize;
    if plan.disks.devices.is_empty() {
        let _ = writeln!(
            s,
            "# The plan names no devices: list yours here (/dev/disk/by-id/… recommended)."
        );
        let names: Vec<String> = (0..count)
            .map(|i| format!("/dev/disk/by-id/CHANGE-ME-{}", i + 1))
            .collect();
        let _ = writeln!(s, "DISK=({})", names.join(" "));
    } else {
        let _ = writeln!(s, "DISK=({})", plan.disks.devices.join(" "));
    }
    s.push_str(CACHE_FUNCTIONS);
    let _ = writeln!(
        s,
        "# Each disk's write-cache setting now, to restore afterwards."
    );
    let _ = writeln!(
        s,
        "CACHE=()\nfor d in \"${{DISK[@]}}\"; do CACHE+=(\"$(wcache_get \"$d\")\"); done\n"
    );
    for (case, rep, reuse) in run_order(plan) {
        let members: Vec<String> = (0..case.array.disks as usize).map(placeholder).collect();
        let _ = writeln!(
            s,
            "# ── case {} · {} · repetition {rep}",
            case.id,
            case.label()
        );
        if reuse.array_up {
            let _ = writeln!(s, "# (the array of the previous case is still up)");
        }
        let result = format!("{}-r{rep}.json", case.id);
        let mut last = None;
        for st in select(case_steps(case, &members, &Paths::script(&result)), reuse) {
            if last != Some(st.phase) {
                let _ = writeln!(s, "# {}", st.phase.name());
                last = Some(st.phase);
            }
            let _ = writeln!(s, "{}", st.shell());
        }
        if reuse.keep_up {
            let _ = writeln!(s, "# (the array stays up for the next case)");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(arrays: &str) -> Plan {
        let text = format!("name = \"t\"\n[disks]\ncount = 6\nmodel = \"hdd-7200\"\n{arrays}\n[workloads]\nrw = \"randwrite\"\nsize = \"1g\"\n");
        Plan::parse(&text, Path::new("t.toml")).unwrap()
    }

    fn create_line(p: &Plan, i: usize) -> String {
        let members: Vec<String> = (0..p.cases()[i].array.disks)
            .map(|d| format!("d{d}"))
            .collect();
        case_steps(&p.cases()[i], &members, &Paths::script("r.json"))
            .into_iter()
            .find(|s| s.phase == Phase::Create)
            .unwrap()
            .shell()
    }

    /// fio finds a device's statistics with lstat(), so a job on the raw array names the
    /// node mdadm's link points to, resolved by bash when the script runs; anything else
    /// in the job stays literal.
    #[test]
    fn job_files_name_the_arrays_node_not_its_link() {
        let step = Step {
            phase: Phase::Fio,
            action: Action::WriteFile {
                path: "/tmp/j.fio".into(),
                text: format!("[x]\nfilename={MD}\nwrite_iops_log=/w/$HOME`x`\\n\n"),
            },
            opens: None,
            closes: None,
        };
        let shell = step.shell();
        assert!(
            shell.contains(&format!("filename=$(readlink -f {MD})")),
            "{shell}"
        );
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("j.fio");
        let run = std::process::Command::new("bash")
            .arg("-c")
            .arg(shell.replace("/tmp/j.fio", out.to_str().unwrap()))
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let written = std::fs::read_to_string(&out).unwrap();
        assert!(!written.contains("readlink"), "substituted: {written}");
        assert!(
            written.contains("write_iops_log=/w/$HOME`x`\\n"),
            "{written}"
        );
        // Other files keep the quoted here-document.
        let plain = Step {
            action: Action::WriteFile {
                path: "/tmp/k".into(),
                text: "a $b\n".into(),
            },
            ..step
        };
        assert!(plain.shell().contains("<<'EOF'"));
    }

    #[test]
    fn md_command_lines_for_every_level_and_layout() {
        let p = plan("[[arrays]]\nlevel = [\"raid0\", \"raid5\", \"raid6\"]\nchunk = \"64k\"\nresync = \"assume-clean\"\n[[arrays]]\nlevel = \"raid10\"\nlayout = [\"n2\", \"f2\", \"o2\", \"n3\"]\n[[arrays]]\nlevel = \"raid1\"\ndisks = 2\nbitmap = \"internal\"");
        let lines: Vec<String> = (0..p.cases().len()).map(|i| create_line(&p, i)).collect();
        assert_eq!(lines[0], "mdadm --create /dev/md/raidlab --run --metadata=1.2 --level=0 --raid-devices=6 --chunk=64K d0 d1 d2 d3 d4 d5");
        assert_eq!(lines[1], "mdadm --create /dev/md/raidlab --run --metadata=1.2 --level=5 --raid-devices=6 --chunk=64K --layout=left-symmetric --bitmap=none --assume-clean d0 d1 d2 d3 d4 d5");
        assert!(lines[2].contains("--level=6") && lines[2].contains("--layout=left-symmetric"));
        for (i, l) in ["n2", "f2", "o2", "n3"].iter().enumerate() {
            assert!(
                lines[3 + i].contains(&format!(
                    "--level=10 --raid-devices=6 --chunk=512K --layout={l} "
                )),
                "{}",
                lines[3 + i]
            );
        }
        assert_eq!(lines[7], "mdadm --create /dev/md/raidlab --run --metadata=1.2 --level=1 --raid-devices=2 --bitmap=internal d0 d1");
    }

    #[test]
    fn script_restores_caches_and_tears_down() {
        let p = plan("[arrays]\nlevel = \"raid5\"\nwrite_cache = \"off\"\nfilesystem = \"ext4\"");
        let s = plan_script(&p);
        assert!(s.contains("wcache_set \"${DISK[0]}\" 0"));
        assert!(s.contains(CACHE_FUNCTIONS));
        assert!(s.contains("mkfs.ext4 -F -q -E stride=128,stripe_width=640"));
        assert!(s.contains("mdadm --zero-superblock"));
        assert!(s.contains("wcache_set \"${DISK[5]}\" \"${CACHE[5]}\"  # restore"));
        assert!(s.find("umount").unwrap() < s.find("mdadm --stop").unwrap());
    }

    #[test]
    fn consecutive_cases_share_their_array_and_its_layout() {
        let text = "name = \"t\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n[arrays]\nlevel = [\"raid0\", \"raid5\"]\n[[workloads]]\nrw = [\"randread\", \"randwrite\"]\nsize = \"1g\"\n[[workloads]]\nrw = \"read\"\nsize = \"2g\"\n";
        let p = Plan::parse(text, Path::new("t.toml")).unwrap();
        let cases: Vec<&Case> = p.cases().iter().collect();
        assert_eq!(cases.len(), 6);
        let r = reuse_sequence(&cases);
        let flags: Vec<(bool, bool, bool)> = r
            .iter()
            .map(|r| (r.array_up, r.laid_out, r.keep_up))
            .collect();
        // raid0: build + lay out 1g; reuse both; a larger region is laid out again; teardown.
        assert_eq!(
            flags[..3],
            [
                (false, false, true),
                (true, true, true),
                (true, false, false)
            ]
        );
        assert_eq!(
            flags[3],
            (false, false, true),
            "a new array starts from scratch"
        );
        let s = plan_script(&p);
        assert_eq!(
            s.matches("mdadm --create").count(),
            2,
            "one array per level"
        );
        assert_eq!(s.matches("--name=layout").count(), 4);
    }

    #[test]
    fn btrfs_uses_profiles() {
        let p = plan("[arrays]\nengine = \"btrfs\"\nlevel = \"raid10\"");
        let s = plan_script(&p);
        assert!(s.contains("mkfs.btrfs -f -d raid10 -m raid10"), "{s}");
        assert!(!s.contains("mdadm"));
    }
}
