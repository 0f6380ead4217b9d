//! The exact commands the host target runs for a case — create the array, make the file
//! system, set write caches, lay out the test file, run fio, tear down — as data.
//!
//! One source of truth: `raidlab plan --script` prints these as a bash script a person can
//! read and run (as the 2013 write-up published its script), `run --dry-run` will list
//! them, and the host target executes them step by step, journalling each first.

use raidlab_core::{Case, Engine, Filesystem, Level, Plan, Resync, WriteCache};
use std::fmt::Write;

/// What a step is for; the progress bar and the journal show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Create,
    Resync,
    Mkfs,
    Mount,
    Cache,
    Layout,
    Fio,
    Teardown,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Create => "create",
            Phase::Resync => "resync",
            Phase::Mkfs => "mkfs",
            Phase::Mount => "mount",
            Phase::Cache => "write cache",
            Phase::Layout => "layout",
            Phase::Fio => "fio",
            Phase::Teardown => "teardown",
        }
    }
}

/// One shell command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub phase: Phase,
    pub command: String,
}

const MD: &str = "/dev/md/raidlab";
const MNT: &str = "/mnt/raidlab";

fn step(phase: Phase, command: impl Into<String>) -> Step {
    Step {
        phase,
        command: command.into(),
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

/// The commands for one case. `members` are shell words for the member devices
/// (paths, or `"${DISK[0]}"` style references in a script).
pub fn case_steps(case: &Case, members: &[String], result_file: &str) -> Vec<Step> {
    let a = &case.array;
    let w = &case.workload;
    let devs = members.join(" ");
    let mut steps = Vec::new();
    let single = a.level == Level::Single;
    let device = if single {
        members[0].clone()
    } else if a.engine == Engine::Md {
        MD.to_string()
    } else {
        members[0].clone()
    };

    if a.write_cache != WriteCache::Keep {
        let flag = if a.write_cache == WriteCache::On {
            1
        } else {
            0
        };
        for m in members {
            steps.push(step(Phase::Cache, format!("hdparm -W {flag} {m}")));
        }
    }
    match a.engine {
        Engine::Md if !single => {
            let mut c = format!(
                "mdadm --create {MD} --run --metadata=1.2 --level={} --raid-devices={}",
                md_level(a.level),
                a.disks
            );
            if let Some(chunk) = a.chunk {
                let _ = write!(c, " --chunk={}K", chunk.as_kib());
            }
            if let Some(layout) = a.layout {
                let _ = write!(c, " --layout={}", layout.mdadm_name());
            }
            let _ = write!(c, " --bitmap={}", a.bitmap);
            if a.resync == Resync::AssumeClean && a.level != Level::Raid0 {
                c.push_str(" --assume-clean");
            }
            let _ = write!(c, " {devs}");
            steps.push(step(Phase::Create, c));
            if a.resync == Resync::Wait {
                steps.push(step(Phase::Resync, format!("mdadm --wait {MD} || true")));
            }
            if let Some(pages) = a.stripe_cache {
                steps.push(step(Phase::Create, format!("echo {pages} > /sys/block/$(basename $(readlink -f {MD}))/md/stripe_cache_size")));
            }
        }
        Engine::Btrfs => {
            let profile = a.level.to_string();
            let profile = if single {
                "single".to_string()
            } else {
                profile
            };
            steps.push(step(
                Phase::Mkfs,
                format!("mkfs.btrfs -f -d {profile} -m {profile} {devs}"),
            ));
        }
        Engine::Md => {}
    }
    let chunk_kib = a.chunk.map(|c| c.as_kib()).unwrap_or(0);
    let data = a.data_disks().max(1);
    let mkfs = match a.filesystem {
        Filesystem::Xfs if chunk_kib > 0 => Some(format!(
            "mkfs.xfs -f -K -d su={chunk_kib}k,sw={data} {device}"
        )),
        Filesystem::Xfs => Some(format!("mkfs.xfs -f -K {device}")),
        Filesystem::Ext4 if chunk_kib > 0 => {
            let stride = chunk_kib / 4;
            Some(format!(
                "mkfs.ext4 -F -q -E stride={stride},stripe_width={},nodiscard {device}",
                stride * data as u64
            ))
        }
        Filesystem::Ext4 => Some(format!("mkfs.ext4 -F -q -E nodiscard {device}")),
        Filesystem::Btrfs | Filesystem::None => None,
    };
    if let Some(m) = mkfs {
        steps.push(step(Phase::Mkfs, m));
    }
    let on_fs = a.filesystem != Filesystem::None;
    let target_file = if on_fs {
        steps.push(step(
            Phase::Mount,
            format!("mkdir -p {MNT} && mount {device} {MNT}"),
        ));
        format!("{MNT}/raidlab.test")
    } else {
        device.clone()
    };
    if on_fs || w.rw.reads() {
        // Lay the test data out by writing it: fallocate'd extents read back as zeros
        // without touching the disks.
        steps.push(step(
            Phase::Layout,
            format!(
                "fio --name=layout --filename={target_file} --rw=write --bs=1m --direct=1 --ioengine={} --size={} --offset={} --fallocate=none --output=/dev/null",
                w.ioengine,
                w.size.to_fio(),
                w.offset.to_fio()
            ),
        ));
    }
    let job = raidlab_fio::render_job(w, &target_file, &case.id.0);
    steps.push(step(
        Phase::Fio,
        format!("cat > {id}.fio <<'EOF'\n{job}EOF", id = case.id),
    ));
    steps.push(step(
        Phase::Fio,
        format!(
            "fio --output-format=json --output={result_file} {}.fio",
            case.id
        ),
    ));
    if on_fs {
        steps.push(step(Phase::Teardown, format!("umount {MNT}")));
    }
    if a.engine == Engine::Md && !single {
        steps.push(step(Phase::Teardown, format!("mdadm --stop {MD}")));
        steps.push(step(
            Phase::Teardown,
            format!("mdadm --zero-superblock {devs}"),
        ));
    }
    if a.engine == Engine::Btrfs || (single && a.filesystem != Filesystem::None) {
        steps.push(step(Phase::Teardown, format!("wipefs -a {devs}")));
    }
    if a.write_cache != WriteCache::Keep {
        for (i, m) in members.iter().enumerate() {
            steps.push(step(
                Phase::Teardown,
                format!("hdparm -W \"${{CACHE[{i}]}}\" {m}  # restore"),
            ));
        }
    }
    steps
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
    let _ = writeln!(
        s,
        "# Each disk's write-cache setting now, to restore afterwards."
    );
    let _ = writeln!(s, "CACHE=()\nfor d in \"${{DISK[@]}}\"; do CACHE+=(\"$(hdparm -W \"$d\" | awk '/write-caching/ {{print ($3 == 1)}}')\"); done\n");
    for rep in 0..plan.run.repeat {
        for case in plan.cases() {
            let members: Vec<String> = (0..case.array.disks as usize)
                .map(|i| format!("\"${{DISK[{i}]}}\""))
                .collect();
            let _ = writeln!(
                s,
                "# ── case {} · {} · repetition {}",
                case.id,
                case.label(),
                rep + 1
            );
            let result = format!("{}-r{}.json", case.id, rep + 1);
            let mut last = None;
            for st in case_steps(case, &members, &result) {
                if last != Some(st.phase) {
                    let _ = writeln!(s, "# {}", st.phase.name());
                    last = Some(st.phase);
                }
                let _ = writeln!(s, "{}", st.command);
            }
            s.push('\n');
        }
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
        case_steps(&p.cases()[i], &members, "r.json")
            .into_iter()
            .find(|s| s.phase == Phase::Create)
            .unwrap()
            .command
    }

    #[test]
    fn md_command_lines_for_every_level_and_layout() {
        let p = plan("[[arrays]]\nlevel = [\"raid0\", \"raid5\", \"raid6\"]\nchunk = \"64k\"\nresync = \"assume-clean\"\n[[arrays]]\nlevel = \"raid10\"\nlayout = [\"n2\", \"f2\", \"o2\", \"n3\"]\n[[arrays]]\nlevel = \"raid1\"\ndisks = 2\nbitmap = \"internal\"");
        let lines: Vec<String> = (0..p.cases().len()).map(|i| create_line(&p, i)).collect();
        assert_eq!(lines[0], "mdadm --create /dev/md/raidlab --run --metadata=1.2 --level=0 --raid-devices=6 --chunk=64K --bitmap=none d0 d1 d2 d3 d4 d5");
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
        assert!(s.contains("hdparm -W 0 \"${DISK[0]}\""));
        assert!(s.contains("mkfs.ext4 -F -q -E stride=128,stripe_width=640"));
        assert!(s.contains("mdadm --zero-superblock"));
        assert!(s.contains("hdparm -W \"${CACHE[5]}\" \"${DISK[5]}\"  # restore"));
        assert!(s.find("umount").unwrap() < s.find("mdadm --stop").unwrap());
    }

    #[test]
    fn btrfs_uses_profiles() {
        let p = plan("[arrays]\nengine = \"btrfs\"\nlevel = \"raid10\"");
        let s = plan_script(&p);
        assert!(s.contains("mkfs.btrfs -f -d raid10 -m raid10"), "{s}");
        assert!(!s.contains("mdadm"));
    }
}
