//! Every case completes its I/O: a sweep over levels, array states, the drives' write
//! caches, directions, block sizes and queue depths, on a rotating and a solid-state
//! model. A completion the simulator loses leaves fio's job waiting for it, and a case
//! that loses enough of them reports no I/O at all — which a figure-by-figure test of one
//! case does not notice for the others. A run whose waits outlast every event is an error
//! of its own (`SimError::Stalled`), which fails the sweep too. It caught three faults:
//! the drive's cache acknowledged a write by a wake token that flagged the write's tag
//! with its top bit, the bit the engine marks merged commands with, so raid5/6 under 1 MiB
//! writes with the caches on completed nothing; and a raid5/6 read and raid6's resync
//! window each waited for ever for more stripe heads than a small cache holds.

use raidlab_core::Plan;
use std::path::Path;

/// The sweep's plan on `model`: raid0 healthy, raid1/10/5/6 healthy, degraded and
/// rebuilding, raid5/6 during their initial resync with md's smallest stripe cache (17
/// heads, fewer than a sync window's or a large read's rows), each with the drives'
/// caches on and off, under sequential reads, sequential writes and a random mix, 4 KiB
/// and 1 MiB, at queue depths 1 and 16.
fn sweep(model: &str) -> Plan {
    let mut text =
        format!("name = \"sweep\"\n[disks]\ncount = 4\nmodel = \"{model}\"\ncapacity = \"2g\"\n");
    for cache in ["on", "off"] {
        text += &format!(
            "[[arrays]]\nlevel = \"raid0\"\nchunk = \"64k\"\nfilesystem = \"none\"\n\
             write_cache = \"{cache}\"\n\
             [[arrays]]\nlevel = [\"raid1\", \"raid10\", \"raid5\", \"raid6\"]\nchunk = \"64k\"\n\
             filesystem = \"none\"\nwrite_cache = \"{cache}\"\nresync = \"assume-clean\"\n\
             state = [\"healthy\", \"degraded\", \"rebuilding\"]\n\
             [[arrays]]\nlevel = [\"raid5\", \"raid6\"]\nchunk = \"64k\"\nfilesystem = \"none\"\n\
             write_cache = \"{cache}\"\nresync = \"during\"\nstripe_cache = 17\n"
        );
    }
    text += "[[workloads]]\nrw = [\"read\", \"write\", \"randrw\"]\nbs = [\"4k\", \"1m\"]\n\
             iodepth = [1, 16]\nsize = \"1g\"\nruntime = \"1s\"\n";
    Plan::parse(&text, Path::new("sweep.toml")).unwrap()
}

#[test]
fn every_case_completes_io_in_each_direction_it_asks_for() {
    for model in ["hdd-7200", "ssd-sata"] {
        let plan = sweep(model);
        let cases = plan.cases();
        assert_eq!(cases.len(), 360, "the sweep's cases");
        let mut empty = Vec::new();
        for case in cases {
            let out = raidlab_sim::simulate(case, 1).unwrap();
            let f = raidlab_fio::parse_output(&out.fio_json).unwrap().figures;
            let w = &case.workload;
            let wants = [
                ("read", w.rw.reads(), &f.read),
                ("write", w.rw.writes(), &f.write),
            ];
            for (dir, wanted, figures) in wants {
                if wanted && figures.as_ref().is_none_or(|d| d.iops <= 0.0) {
                    empty.push(format!("{model} {}: no {dir}s completed", case.label()));
                }
            }
        }
        assert!(empty.is_empty(), "{}", empty.join("\n"));
    }
}
