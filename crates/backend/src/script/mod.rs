//! The exact commands the host target runs for a case — set write caches, create the
//! array, make the file system, lay out the test file, run fio, tear down — as data.
//!
//! One source of truth: `raidlab plan --script` renders these steps as a bash script a
//! person can read and run (as the 2013 write-up published its script), `run --dry-run`
//! lists them with the real device paths, and the host target executes them one by one,
//! journalling each system-changing step (its [`Undo`]) before it runs.

mod case;
mod order;

pub use case::case_steps;
pub use order::{plan_script, reuse_sequence, run_order, same_array, select, Reuse};

use raidlab_core::{Case, Engine, Level};

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
    /// Set one of the array's md attributes (`/sys/block/mdN/md/ATTR`), if the kernel has
    /// it (`sync_io_depth` is new in 6.16).
    MdAttr { attr: String, value: String },
    /// Add fresh members to the degraded array once the next fio run has started, so md
    /// recovers them under the workload (`state = "rebuilding"`), or re-add the members
    /// that left (`readd`: md resyncs what its bitmap flagged); the host target records
    /// the recovery's progress while fio runs.
    AddDuringFio { members: Vec<String>, readd: bool },
    /// btrfs's counterpart: once the next fio run has started, `btrfs replace` each missing
    /// device (by its devid) with a fresh one, one after the other, in the file system
    /// mounted at `mnt`; the host target records the recovery as for md.
    ReplaceDuringFio {
        replaces: Vec<BtrfsReplace>,
        mnt: String,
    },
    /// Write a text file (the fio job file).
    WriteFile { path: String, text: String },
}

/// One missing btrfs device and the fresh device that takes its place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtrfsReplace {
    /// The missing device's id in the file system (mkfs.btrfs numbers the devices from 1
    /// in the order it is given them).
    pub devid: u32,
    pub device: String,
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
    /// Stop a `btrfs replace` that may still run in the file system mounted at `dir`
    /// (before it is unmounted).
    CancelReplace { dir: String },
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
            Action::MdAttr { attr, value } => format!(
                "f=/sys/block/$(basename $(readlink -f {MD}))/md/{attr}; [[ -e $f ]] && echo {} > $f",
                shell_word(value)
            ),
            Action::AddDuringFio { members, readd } => {
                let devs: Vec<String> = members.iter().map(|m| shell_word(m)).collect();
                if *readd {
                    format!(
                        "(sleep 1; mdadm {MD} --re-add {}) &  # md resyncs what its bitmap flagged while fio runs",
                        devs.join(" ")
                    )
                } else {
                    format!(
                        "(sleep 1; mdadm {MD} --add {}) &  # md recovers them while fio runs",
                        devs.join(" ")
                    )
                }
            }
            Action::ReplaceDuringFio { replaces, mnt } => {
                let each: Vec<String> = replaces
                    .iter()
                    .map(|r| {
                        format!(
                            "btrfs replace start -B -f {} {} {}",
                            r.devid,
                            shell_word(&r.device),
                            shell_word(mnt)
                        )
                    })
                    .collect();
                format!(
                    "(sleep 1; {}) &  # btrfs rebuilds them while fio runs",
                    each.join(" && ")
                )
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::Plan;
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

    /// A degraded array has its last members failed and removed once built (after the
    /// resync, before mkfs), once per array however many workloads reuse it.
    #[test]
    fn degraded_arrays_fail_their_last_members_once() {
        let text = "name = \"t\"\n[disks]\ncount = 6\n[arrays]\nlevel = \"raid6\"\nstate = \"degraded\"\nfailed = 2\n[workloads]\nrw = [\"randread\", \"randwrite\"]\nsize = \"1g\"\n";
        let p = Plan::parse(text, Path::new("t.toml")).unwrap();
        let s = plan_script(&p);
        let fail = "mdadm /dev/md/raidlab --fail \"${DISK[4]}\" --remove \"${DISK[4]}\" --fail \"${DISK[5]}\" --remove \"${DISK[5]}\"";
        assert_eq!(s.matches(fail).count(), 1, "{s}");
        let at = s.find(fail).unwrap();
        assert!(s.find("mdadm --wait").unwrap() < at && at < s.find("mkfs.xfs").unwrap());
        // The teardown still zeroes every member's superblock, the removed ones too.
        assert!(s.contains("mdadm --zero-superblock \"${DISK[0]}\""), "{s}");
    }

    /// A degraded btrfs loses its last member after the data is laid out (unmounted,
    /// wiped, forgotten, mounted `-o degraded`); a rebuilding one then replaces it (devid 4,
    /// the fourth device given to mkfs.btrfs) while fio runs, and the teardown stops a
    /// replace still running before it unmounts. Neither is reused by a second workload.
    #[test]
    fn btrfs_loses_a_member_after_the_layout_and_replaces_it_during_fio() {
        let text = "name = \"t\"\n[disks]\ncount = 4\n[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = [\"degraded\", \"rebuilding\"]\n[workloads]\nrw = [\"randread\", \"randwrite\"]\nsize = \"1g\"\n";
        let p = Plan::parse(text, Path::new("t.toml")).unwrap();
        let s = plan_script(&p);
        assert_eq!(s.matches("mkfs.btrfs").count(), 4, "no reuse: {s}");
        assert_eq!(s.matches("mount -o degraded").count(), 4, "{s}");
        assert_eq!(s.matches("btrfs replace start").count(), 2, "{s}");
        let rebuilding = &s[s.rfind("mkfs.btrfs").unwrap()..];
        let order = [
            "--name=layout",
            "umount /mnt/raidlab",
            "wipefs -a -q \"${DISK[3]}\"",
            "btrfs device scan --forget \"${DISK[3]}\" || true",
            "mount -o degraded \"${DISK[0]}\" /mnt/raidlab",
            "(sleep 1; btrfs replace start -B -f 4 \"${DISK[3]}\" /mnt/raidlab) &",
            "fio --output-format=json",
            "btrfs replace cancel /mnt/raidlab || true",
            "umount /mnt/raidlab",
            "wipefs -a -q \"${DISK[0]}\" \"${DISK[1]}\" \"${DISK[2]}\" \"${DISK[3]}\"",
        ];
        // Each line after the one before.
        let mut from = 0;
        for l in order {
            let at = rebuilding[from..]
                .find(l)
                .unwrap_or_else(|| panic!("{l} missing after byte {from}: {rebuilding}"));
            from += at + l.len();
        }
    }

    /// A rebuilding array: failed, removed and wiped once built, md's knobs set, the member
    /// added back once fio runs; never reused, so each workload starts from the degraded
    /// array.
    #[test]
    fn rebuilding_arrays_add_a_fresh_member_while_fio_runs() {
        let text = "name = \"t\"\n[disks]\ncount = 4\n[arrays]\nlevel = \"raid5\"\nstate = \"rebuilding\"\nsync_speed_min = 50000\n[workloads]\nrw = [\"randread\", \"randwrite\"]\nsize = \"1g\"\n";
        let p = Plan::parse(text, Path::new("t.toml")).unwrap();
        let s = plan_script(&p);
        assert_eq!(s.matches("mdadm --create").count(), 2, "no reuse: {s}");
        let order = [
            "mdadm /dev/md/raidlab --fail \"${DISK[3]}\" --remove \"${DISK[3]}\"",
            "mdadm --zero-superblock \"${DISK[3]}\"",
            "md/sync_speed_min; [[ -e $f ]] && echo 50000 > $f",
            "md/sync_io_depth; [[ -e $f ]] && echo 32 > $f",
            "(sleep 1; mdadm /dev/md/raidlab --add \"${DISK[3]}\") &",
            "fio --output-format=json",
        ];
        let at: Vec<usize> = order
            .iter()
            .map(|l| s.find(l).unwrap_or_else(|| panic!("{l} missing: {s}")))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}: {s}");
    }

    /// `[run] precondition = 2`: even a raw write workload gets the layout pass, written
    /// twice; without it, a raw write workload has none.
    #[test]
    fn preconditioning_writes_the_region_before_measuring() {
        let raw = "[arrays]\nlevel = \"raid5\"\nfilesystem = \"none\"\n[workloads]\nrw = \"randwrite\"\nsize = \"1g\"\n";
        let text = |run: &str| {
            let full = format!("name = \"t\"\n[disks]\ncount = 4\n{raw}{run}");
            plan_script(&Plan::parse(&full, Path::new("t.toml")).unwrap())
        };
        assert!(!text("").contains("--name=layout"), "nothing to lay out");
        let s = text("[run]\nprecondition = 2\n");
        let layout = s
            .lines()
            .find(|l| l.contains("--name=layout"))
            .expect("a layout pass");
        assert!(layout.contains("--loops=2"), "{layout}");
        assert!(s.find("--name=layout").unwrap() < s.find("fio --output-format").unwrap());
    }

    #[test]
    fn btrfs_uses_profiles() {
        let p = plan("[arrays]\nengine = \"btrfs\"\nlevel = \"raid10\"");
        let s = plan_script(&p);
        assert!(s.contains("mkfs.btrfs -f -d raid10 -m raid10"), "{s}");
        assert!(!s.contains("mdadm"));
    }
}
