//! The steps of one case, phase by phase: write caches, the array (mdadm or mkfs.btrfs),
//! the file system, the mount, the layout of the test data, fio, and the teardown that
//! closes each undo the build opened.

use super::{
    argv, array_device, md_level, run, Action, BtrfsReplace, Paths, Phase, Step, Undo, MD,
};
use raidlab_core::{ArrayState, Case, Engine, Filesystem, Level, Rejoin, Resync, WriteCache};

/// The commands for one case, phase by phase. `members` are the member devices (paths, or
/// `"${DISK[0]}"` references in the script).
pub fn case_steps(case: &Case, members: &[String], paths: &Paths) -> Vec<Step> {
    let a = &case.array;
    let device = array_device(case, members);
    let mut steps = Vec::new();
    if a.write_cache != WriteCache::Keep {
        steps.extend(cache_steps(members, Some(a.write_cache == WriteCache::On)));
    }
    match a.engine {
        Engine::Md if a.level != Level::Single => md_create(case, members, &mut steps),
        Engine::Btrfs => steps.push(btrfs_mkfs(case, members)),
        Engine::Md => {}
    }
    steps.extend(mkfs(case, &device));
    let on_fs = a.filesystem != Filesystem::None;
    let target_file = if on_fs {
        steps.extend(mount(&device, paths));
        format!("{}/raidlab.test", paths.mnt)
    } else {
        device.clone()
    };
    if case.lays_out() {
        steps.push(layout(case, &target_file));
    }
    if a.engine == Engine::Btrfs && !a.state.is_healthy() {
        steps.extend(btrfs_fail(case, members, &device, paths));
    }
    if a.state == ArrayState::Rebuilding && a.engine == Engine::Btrfs {
        let failed = failed_members(case, members);
        let first = members.len() - failed.len();
        steps.push(Step {
            phase: Phase::Fio,
            action: Action::ReplaceDuringFio {
                replaces: failed
                    .iter()
                    .enumerate()
                    .map(|(i, m)| BtrfsReplace {
                        devid: (first + i + 1) as u32,
                        device: m.clone(),
                    })
                    .collect(),
                mnt: paths.mnt.clone(),
            },
            opens: Some(Undo::CancelReplace {
                dir: paths.mnt.clone(),
            }),
            closes: None,
        });
    } else if a.state == ArrayState::Rebuilding {
        steps.push(Step {
            phase: Phase::Fio,
            action: Action::AddDuringFio {
                members: failed_members(case, members).to_vec(),
                readd: a.re_adds(),
            },
            opens: None,
            closes: None,
        });
    }
    steps.extend(fio(case, &target_file, paths));
    steps.extend(teardown(case, members, &device, paths));
    if a.write_cache != WriteCache::Keep {
        steps.extend(cache_steps(members, None));
    }
    steps
}

/// Set each member's write cache (`Some(on)`), or put back what it was (`None`).
fn cache_steps(members: &[String], set: Option<bool>) -> Vec<Step> {
    members
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let (phase, action) = match set {
                Some(on) => (
                    Phase::Cache,
                    Action::SetCache {
                        member: i,
                        device: m.clone(),
                        on,
                    },
                ),
                None => (
                    Phase::Teardown,
                    Action::RestoreCache {
                        member: i,
                        device: m.clone(),
                    },
                ),
            };
            // The host target journals the state it read instead.
            Step {
                phase,
                action,
                opens: None,
                closes: None,
            }
        })
        .collect()
}

/// `mdadm --create`, the stripe cache, and the wait for the initial resync.
fn md_create(case: &Case, members: &[String], steps: &mut Vec<Step>) {
    let a = &case.array;
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
    // A degraded or rebuilding array: md's last `failed` members failed and removed once
    // the array is built, before anything is written to it (the teardown's
    // --zero-superblock and the journal's undo cover them with the others).
    if !a.state.is_healthy() {
        let gone = failed_members(case, members);
        let mut c = vec!["mdadm".to_string(), MD.into()];
        for m in gone {
            c.extend(["--fail".into(), m.clone(), "--remove".into(), m.clone()]);
        }
        steps.push(Step {
            phase: Phase::Create,
            action: argv(c),
            opens: None,
            closes: None,
        });
    }
    if let (ArrayState::Rebuilding, Some(r)) = (a.state, a.rebuild) {
        // Fresh disks: without md's superblock the members come back as new ones, which
        // md recovers whole. A re-added member keeps its superblock: md's write-intent
        // bitmap lets it skip what it already holds.
        if r.rejoin == Rejoin::Fresh {
            let mut z = vec!["mdadm".to_string(), "--zero-superblock".into()];
            z.extend(failed_members(case, members).iter().cloned());
            steps.push(Step {
                phase: Phase::Create,
                action: argv(z),
                opens: None,
                closes: None,
            });
        }
        for (attr, value) in [
            ("sync_speed_min", r.sync_speed_min),
            ("sync_speed_max", r.sync_speed_max),
            ("sync_io_depth", r.sync_io_depth),
        ] {
            steps.push(Step {
                phase: Phase::Create,
                action: Action::MdAttr {
                    attr: attr.into(),
                    value: value.to_string(),
                },
                opens: None,
                closes: None,
            });
        }
    }
}

/// The members a degraded or rebuilding array has lost: md's last `failed` ones.
fn failed_members<'a>(case: &Case, members: &'a [String]) -> &'a [String] {
    &members[members.len() - case.array.failed_members() as usize..]
}

/// A degraded or rebuilding btrfs: once the test data is on every member, the last
/// `failed` members are lost as a pulled disk is: unmounted, their signatures erased and
/// forgotten by the kernel, and the file system mounted again with `-o degraded` (btrfs
/// refuses a mount with devices missing otherwise). The data laid out before stays spread
/// over all members, so reads of the lost members' copies go to the survivors.
fn btrfs_fail(case: &Case, members: &[String], device: &str, paths: &Paths) -> Vec<Step> {
    let gone = failed_members(case, members);
    let unmount = Undo::Unmount {
        dir: paths.mnt.clone(),
    };
    let mut wipe = vec!["wipefs".to_string(), "-a".into(), "-q".into()];
    wipe.extend(gone.iter().cloned());
    let mut forget = vec![
        "btrfs".to_string(),
        "device".into(),
        "scan".into(),
        "--forget".into(),
    ];
    forget.extend(gone.iter().cloned());
    vec![
        Step {
            phase: Phase::Layout,
            action: argv(["umount".into(), paths.mnt.clone()]),
            opens: None,
            closes: Some(unmount.clone()),
        },
        // The members' undo (`Wipe` of them all, opened by mkfs.btrfs) covers these too.
        Step {
            phase: Phase::Layout,
            action: argv(wipe),
            opens: None,
            closes: None,
        },
        Step {
            phase: Phase::Layout,
            action: Action::Run {
                argv: forget,
                may_fail: true,
            },
            opens: None,
            closes: None,
        },
        Step {
            phase: Phase::Layout,
            action: argv([
                "mount".into(),
                "-o".into(),
                "degraded".into(),
                device.to_string(),
                paths.mnt.clone(),
            ]),
            opens: Some(unmount),
            closes: None,
        },
    ]
}

/// The btrfs file system over the members, with the level's profile.
fn btrfs_mkfs(case: &Case, members: &[String]) -> Step {
    let a = &case.array;
    let single = a.level == Level::Single;
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
    Step {
        phase: Phase::Mkfs,
        action: argv(c),
        opens: Some(Undo::Wipe {
            devices: members.to_vec(),
        }),
        closes: None,
    }
}

/// The file system on the array (or the single disk), if the plan asks for one.
fn mkfs(case: &Case, device: &str) -> Option<Step> {
    let a = &case.array;
    let single = a.level == Level::Single;
    let chunk_kib = a.chunk.map(|c| c.as_kib()).unwrap_or(0);
    let data = a.data_disks().max(1);
    let mkfs: Option<Vec<String>> = match a.filesystem {
        Filesystem::Xfs if chunk_kib > 0 && !single => Some(vec![
            "mkfs.xfs".into(),
            "-f".into(),
            "-K".into(),
            "-d".into(),
            format!("su={chunk_kib}k,sw={data}"),
            device.to_string(),
        ]),
        Filesystem::Xfs => Some(vec![
            "mkfs.xfs".into(),
            "-f".into(),
            "-K".into(),
            device.to_string(),
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
                device.to_string(),
            ])
        }
        Filesystem::Ext4 => Some(vec![
            "mkfs.ext4".into(),
            "-F".into(),
            "-q".into(),
            "-E".into(),
            "nodiscard".into(),
            device.to_string(),
        ]),
        Filesystem::Btrfs | Filesystem::None => None,
    };
    // On an md array the array's own undo erases it; on a bare disk, wipe it.
    mkfs.map(|m| Step {
        phase: Phase::Mkfs,
        action: argv(m),
        opens: single.then(|| Undo::Wipe {
            devices: vec![device.to_string()],
        }),
        closes: None,
    })
}

/// Mount the file system where the test file will be.
fn mount(device: &str, paths: &Paths) -> [Step; 2] {
    [
        run(Phase::Mount, &["mkdir", "-p", &paths.mnt]),
        Step {
            phase: Phase::Mount,
            action: argv(["mount".into(), device.to_string(), paths.mnt.clone()]),
            opens: Some(Undo::Unmount {
                dir: paths.mnt.clone(),
            }),
            closes: None,
        },
    ]
}

/// Lay the test data out by writing it: fallocate'd extents read back as zeros without
/// touching the disks.
fn layout(case: &Case, target_file: &str) -> Step {
    let w = &case.workload;
    let mut argv_ = vec![
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
    ];
    // `[run] precondition`: that many passes (bench-fio's precondition.fio writes the
    // device twice); without it, one pass lays the region out.
    if w.fio.precondition > 0 {
        argv_.push(format!("--loops={}", w.fio.precondition));
    }
    Step {
        phase: Phase::Layout,
        action: argv(argv_),
        opens: None,
        closes: None,
    }
}

/// The job file and the fio run that measures.
fn fio(case: &Case, target_file: &str, paths: &Paths) -> [Step; 2] {
    let w = &case.workload;
    let job_file = format!("{}/{}.fio", paths.workdir, case.id);
    [
        Step {
            phase: Phase::Fio,
            action: Action::WriteFile {
                path: job_file.clone(),
                text: raidlab_fio::render_job(w, target_file, &case.id.0),
            },
            opens: None,
            closes: None,
        },
        Step {
            phase: Phase::Fio,
            action: argv([
                "fio".into(),
                // json+: fio's latency bins too, for the report's histograms.
                "--output-format=json+".into(),
                format!("--output={}", paths.result),
                job_file,
            ]),
            opens: None,
            closes: None,
        },
    ]
}

/// Unmount, stop the array, erase what was written: each closes the undo its
/// counterpart opened.
fn teardown(case: &Case, members: &[String], device: &str, paths: &Paths) -> Vec<Step> {
    let a = &case.array;
    let single = a.level == Level::Single;
    let on_fs = a.filesystem != Filesystem::None;
    let mut steps = Vec::new();
    if a.engine == Engine::Btrfs && a.state == ArrayState::Rebuilding {
        // A replace that outlived fio stops before the unmount (a no-op when it ended).
        steps.push(Step {
            phase: Phase::Teardown,
            action: Action::Run {
                argv: vec![
                    "btrfs".into(),
                    "replace".into(),
                    "cancel".into(),
                    paths.mnt.clone(),
                ],
                may_fail: true,
            },
            opens: None,
            closes: Some(Undo::CancelReplace {
                dir: paths.mnt.clone(),
            }),
        });
    }
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
        Some(vec![device.to_string()])
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
    steps
}
