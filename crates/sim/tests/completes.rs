//! Every case completes its I/O: a sweep over levels, array states, the drives' write
//! caches, directions, block sizes and queue depths, on a rotating and a solid-state
//! model. A completion the simulator loses leaves fio's job waiting for it, and a case
//! that loses enough of them reports no I/O at all — which a figure-by-figure test of one
//! case does not notice for the others. A run whose waits outlast every event is an error
//! of its own (`SimError::Stalled`), which fails the sweep too. It caught three faults:
//! the drive's cache acknowledged a write by a wake token that flagged the write's tag
//! with its top bit, the bit the engine marks merged commands with, so raid5/6 under 1 MiB
//! writes with the caches on completed nothing; and a raid5/6 read and raid6's resync
//! window each waited for ever for more stripe heads than a small cache holds. Beside the
//! sweep, a proptest draws random cases of every kind a plan accepts and holds that none
//! stalls or panics (docs/fuzzing.md).

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

/// One random case's plan: any model, level, width, chunk, layout, state, cache, bitmap,
/// resync, stripe cache, kernel, scheduler and workload the plan accepts (combinations it
/// refuses are skipped), short (300 ms), so that many run on every `cargo test`.
#[allow(clippy::too_many_arguments)]
fn random_plan(
    model: &str,
    scheduler: &str,
    level: &str,
    disks: u32,
    chunk: &str,
    layout: &str,
    state: &str,
    failed: u32,
    cache: &str,
    bitmap: &str,
    resync: &str,
    stripe_cache: u32,
    kernel: &str,
    rw: &str,
    bs: &str,
    iodepth: u32,
    numjobs: u32,
) -> String {
    let mut arrays =
        format!("level = \"{level}\"\nfilesystem = \"none\"\nwrite_cache = \"{cache}\"\n");
    if matches!(level, "raid0" | "raid10" | "raid5" | "raid6") {
        arrays += &format!("chunk = \"{chunk}\"\n");
    }
    if !layout.is_empty() {
        arrays += &format!("layout = \"{layout}\"\n");
    }
    if !matches!(level, "single" | "raid0") {
        arrays += &format!("bitmap = \"{bitmap}\"\nresync = \"{resync}\"\nstate = \"{state}\"\n");
        if state != "healthy" {
            arrays += &format!("failed = {failed}\n");
        }
        if state == "rebuilding" {
            arrays += &format!("kernel = \"{kernel}\"\n");
        }
    }
    if matches!(level, "raid5" | "raid6") {
        arrays += &format!("stripe_cache = {stripe_cache}\n");
    }
    format!(
        "name = \"p\"\n[disks]\ncount = {disks}\nmodel = \"{model}\"\ncapacity = \"2g\"\n\
         scheduler = \"{scheduler}\"\n[arrays]\n{arrays}[workloads]\nrw = \"{rw}\"\n\
         bs = \"{bs}\"\niodepth = {iodepth}\nnumjobs = {numjobs}\nsize = \"256m\"\n\
         runtime = \"300ms\"\n"
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// No case the plan accepts stalls the simulator or panics it.
    #[test]
    fn any_case_simulates_without_stalling(
        model in proptest::sample::select(vec!["hdd-7200", "hdd-7200-500g-2010", "ssd-sata", "nvme"]),
        scheduler in proptest::sample::select(vec!["mq-deadline", "bfq", "none"]),
        level in proptest::sample::select(vec!["single", "raid0", "raid1", "raid10", "raid5", "raid6"]),
        disks in 2u32..9,
        chunk in proptest::sample::select(vec!["4k", "16k", "64k", "512k"]),
        layout in proptest::sample::select(vec!["", "", "f2", "o2", "left-asymmetric", "right-symmetric"]),
        state in proptest::sample::select(vec!["healthy", "degraded", "rebuilding"]),
        failed in 1u32..3,
        cache in proptest::sample::select(vec!["on", "off"]),
        bitmap in proptest::sample::select(vec!["none", "internal"]),
        resync in proptest::sample::select(vec!["assume-clean", "during"]),
        stripe_cache in proptest::sample::select(vec![17u32, 32, 256]),
        kernel in proptest::sample::select(vec!["6.16", "6.15", "4.0"]),
        rw in proptest::sample::select(vec!["read", "write", "randread", "randwrite", "randrw"]),
        bs in proptest::sample::select(vec!["4k", "64k", "1m", "4m"]),
        iodepth in proptest::sample::select(vec![1u32, 4, 32]),
        numjobs in 1u32..3,
        seed in 1u64..10,
    ) {
        let disks = if level == "single" { 1 } else { disks };
        let text = random_plan(
            model, scheduler, level, disks, chunk, layout, state, failed, cache, bitmap,
            resync, stripe_cache, kernel, rw, bs, iodepth, numjobs,
        );
        let Ok(plan) = Plan::parse(&text, Path::new("p.toml")) else {
            return Ok(());
        };
        for case in plan.cases() {
            if let Err(e) = raidlab_sim::simulate(case, seed) {
                proptest::prop_assert!(false, "{e}\n{text}");
            }
        }
    }
}
