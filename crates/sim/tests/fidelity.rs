//! Fidelity gates: the simulator against the seeds' measurements and md's exact costs.
//! A failure here means the model drifted; fix the model, not the figure.

mod common;

use raidlab_core::{Case, Level, Plan, Rw};
use std::path::Path;

fn plan(name: &str) -> Plan {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    Plan::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

fn run(case: &Case) -> (f64, f64, f64, Vec<raidlab_core::DiskUtil>) {
    let (_, f) = common::simulate(case);
    let d = f.read.as_ref().or(f.write.as_ref()).unwrap();
    (d.iops, d.bw_bytes_s / 1e6, d.lat_mean_ns / 1e6, f.disk_util)
}

fn find(p: &Plan, level: Level, rw: Rw) -> &Case {
    p.cases()
        .iter()
        .find(|c| c.array.level == level && c.workload.rw == rw)
        .unwrap()
}

fn within(got: f64, want: f64, tol: f64) -> bool {
    (got - want).abs() <= want * tol
}

#[test]
fn seed_2013_raid5_random_write_matches_the_article() {
    let p = plan("seed-2013.toml");
    let (iops, _, lat, _) = run(find(&p, Level::Raid5, Rw::RandWrite));
    assert!(
        within(iops, 112.0, 0.10),
        "raid5 randwrite {iops:.1} IOPS, article ≈ 112"
    );
    assert!(
        (30.0..=50.0).contains(&lat),
        "raid5 write latency {lat:.1} ms, article ≈ 40"
    );
}

#[test]
fn seed_2013_raid0_random_write_matches_the_article() {
    let p = plan("seed-2013.toml");
    let (iops, _, _, _) = run(find(&p, Level::Raid0, Rw::RandWrite));
    assert!(
        within(iops, 450.0, 0.10),
        "raid0 randwrite {iops:.1} IOPS, article ≈ 450"
    );
}

#[test]
fn seed_2013_mirror_and_double_parity_writes_match_the_article() {
    let p = plan("seed-2013.toml");
    for (level, article) in [(Level::Raid10, 225.0), (Level::Raid6, 75.0)] {
        let (iops, _, _, _) = run(find(&p, level, Rw::RandWrite));
        assert!(
            within(iops, article, 0.10),
            "{level} randwrite {iops:.1} IOPS, article ≈ {article}"
        );
    }
}

#[test]
fn seed_2013_reads_are_level_independent_and_raid10_not_below() {
    let p = plan("seed-2013.toml");
    let reads: Vec<(Level, f64)> = [Level::Raid0, Level::Raid10, Level::Raid5, Level::Raid6]
        .into_iter()
        .map(|l| (l, run(find(&p, l, Rw::RandRead)).0))
        .collect();
    let r0 = reads[0].1;
    for (l, iops) in &reads {
        assert!(
            within(*iops, 450.0, 0.10),
            "{l} randread {iops:.1} IOPS, article ≈ 450"
        );
        assert!(
            *iops >= r0 * 0.95,
            "{l} randread {iops:.1} below raid0's {r0:.1}"
        );
    }
    assert!(
        reads[1].1 >= reads.iter().map(|r| r.1).fold(0.0, f64::max) - 1e-9,
        "raid10 reads highest: {reads:?}"
    );
}

#[test]
fn parity_writes_cost_md_exact_member_ios() {
    let p = plan("seed-2013.toml");
    for (level, reads, writes) in [(Level::Raid5, 2.0, 2.0), (Level::Raid6, 3.0, 3.0)] {
        let (_, _, _, util) = run(find(&p, level, Rw::RandWrite));
        let md = &util[0];
        assert_eq!(md.name, "md0");
        let members = &util[1..];
        let r: u64 = members.iter().map(|d| d.read_ios).sum();
        let w: u64 = members.iter().map(|d| d.write_ios).sum();
        let host = md.write_ios as f64;
        // In-flight I/Os at the end of the run blur the last few; 2 % is a few of thousands.
        assert!(
            within(r as f64 / host, reads, 0.02),
            "{level}: {r} member reads for {host} writes"
        );
        assert!(
            within(w as f64 / host, writes, 0.02),
            "{level}: {w} member writes for {host} writes"
        );
        // fio's aggr_* are per-member averages.
        assert_eq!(md.aggr_write_ios, Some(w / members.len() as u64));
    }
}

#[test]
fn chunk_size_does_not_move_random_iops() {
    let p = plan("seed-2013-chunks.toml");
    for rw in [Rw::RandRead, Rw::RandWrite] {
        let iops: Vec<f64> = p
            .cases()
            .iter()
            .filter(|c| c.workload.rw == rw)
            .map(|c| run(c).0)
            .collect();
        assert_eq!(iops.len(), 5);
        let (lo, hi) = (
            iops.iter().cloned().fold(f64::MAX, f64::min),
            iops.iter().cloned().fold(0.0, f64::max),
        );
        assert!(hi <= lo * 1.10, "{rw}: chunk sweep moved IOPS {iops:?}");
    }
}

#[test]
fn seed_2019_single_disk_matches_the_article() {
    let p = plan("seed-2019.toml");
    let (_, mb_s, _, _) = run(find(&p, Level::Single, Rw::Read));
    assert!(
        within(mb_s, 268.0, 0.15),
        "sequential read {mb_s:.0} MB/s, article 268"
    );
    let (_, mb_s, _, _) = run(find(&p, Level::Single, Rw::Write));
    assert!(
        within(mb_s, 268.0, 0.15),
        "sequential write {mb_s:.0} MB/s, article 268"
    );
    let (iops, _, _, _) = run(find(&p, Level::Single, Rw::RandWrite));
    assert!(
        within(iops, 480.0, 0.15),
        "random write {iops:.0} IOPS, article 480"
    );
}

#[test]
fn seed_2019_far_layout_reads_ahead_of_near() {
    let p = plan("seed-2019.toml");
    let get = |layout: &str| {
        let c = p
            .cases()
            .iter()
            .find(|c| {
                c.workload.rw == Rw::Read
                    && c.array.layout.map(|l| l.to_string()).as_deref() == Some(layout)
            })
            .unwrap();
        run(c).1
    };
    let (n2, f2) = (get("n2"), get("f2"));
    assert!(
        f2 > n2 * 1.05,
        "f2 sequential read {f2:.0} MB/s should be clearly ahead of n2 {n2:.0}"
    );
}

/// "The classic raid10 shows the best write speed, while the far2 and raid5 are each a
/// step-down": raid5's sequential 1 MiB direct writes pre-read the stripes they leave
/// part-filled (see `docs/simulator.md`, "The 2019 sequential-write gap").
#[test]
fn seed_2019_near_layout_writes_sequentially_ahead_of_raid5() {
    let p = plan("seed-2019.toml");
    let write = |level: Level, layout: Option<&str>| {
        let c = p
            .cases()
            .iter()
            .find(|c| {
                c.workload.rw == Rw::Write
                    && c.array.level == level
                    && (layout.is_none()
                        || c.array.layout.map(|l| l.to_string()).as_deref() == layout)
            })
            .unwrap();
        run(c).1
    };
    let (raid5, n2) = (write(Level::Raid5, None), write(Level::Raid10, Some("n2")));
    assert!(
        raid5 < n2,
        "raid5 sequential write {raid5:.0} MB/s should be below raid10 n2's {n2:.0}"
    );
}

/// Random-read IOPS over one whole `hdd-7200` at queue depth `qd`; `disks` adds lines to
/// the plan's `[disks]` (a `[disks.params]` table).
fn single_disk_with(disks: &str, qd: u32) -> f64 {
    let c = common::one_case(
        &format!("count = 1\nmodel = \"hdd-7200\"\n{disks}"),
        "level = \"single\"",
        &format!("rw = \"randread\"\niodepth = {qd}\nsize = \"3600g\"\nruntime = \"30s\""),
    );
    run(&c).0
}

fn single_disk(qd: u32) -> f64 {
    single_disk_with("", qd)
}

#[test]
fn random_reads_rise_with_queue_depth() {
    let qd1 = single_disk(1);
    let qd32 = single_disk(32);
    assert!(
        within(qd1, 75.0, 0.15),
        "QD1 whole-disk random read {qd1:.1} IOPS, expected ≈ 75"
    );
    assert!(
        qd32 > qd1 * 1.5,
        "QD32 {qd32:.1} should be clearly above QD1 {qd1:.1}"
    );
}

#[test]
fn same_seed_same_bytes() {
    let p = plan("seed-2013.toml");
    let c = find(&p, Level::Raid6, Rw::RandWrite);
    assert_eq!(
        raidlab_sim::simulate(c, 7).unwrap().fio_json,
        raidlab_sim::simulate(c, 7).unwrap().fio_json
    );
    assert_ne!(
        raidlab_sim::simulate(c, 7).unwrap().fio_json,
        raidlab_sim::simulate(c, 8).unwrap().fio_json
    );
}

/// Without command queueing (`queue_depth = 1`: NCQ off, or a controller in IDE mode) a
/// disk serves in the order it is sent: with the host's scheduler `none` (arrival order)
/// a deeper host queue buys nothing; mq-deadline's sorted batches still buy some, less
/// than the drive's own reordering.
#[test]
fn without_ncq_only_the_hosts_scheduler_reorders() {
    let no_ncq = "[disks.params]\nqueue_depth = 1";
    let fifo = "scheduler = \"none\"\n[disks.params]\nqueue_depth = 1";
    let (qd1, qd32) = (single_disk_with(fifo, 1), single_disk_with(fifo, 32));
    assert!(
        within(qd32, qd1, 0.05),
        "without NCQ or a sorting scheduler, QD32 {qd32:.1} IOPS should equal QD1 {qd1:.1}"
    );
    let sorted = single_disk_with(no_ncq, 32);
    assert!(
        sorted > qd1 * 1.15,
        "mq-deadline's sorting should gain: QD32 {sorted:.1} vs QD1 {qd1:.1}"
    );
    assert!(
        single_disk(32) > sorted * 1.05,
        "NCQ on should beat NCQ off at QD32 ({:.1} vs {sorted:.1})",
        single_disk(32)
    );
}

/// Little's law: with N commands outstanding the disk completes N / latency of them per
/// second, however far N lies beyond the drive's own queue (a command that waits above
/// the drive must not be overtaken for ever by newer ones, nor one job's by another's).
#[test]
fn littles_law_holds_far_beyond_the_drives_queue() {
    for scheduler in ["none", "mq-deadline", "bfq"] {
        for (qd, jobs) in [(64u32, 1u32), (256, 1), (1024, 1), (64, 4)] {
            let c = common::one_case(
                &format!("count = 1\nmodel = \"hdd-7200\"\nscheduler = \"{scheduler}\""),
                "level = \"single\"",
                &format!("rw = \"randread\"\niodepth = {qd}\nnumjobs = {jobs}\nsize = \"1t\"\nruntime = \"120s\""),
            );
            let (iops, _, lat_ms, _) = run(&c);
            let in_flight = iops * lat_ms / 1e3;
            let outstanding = (qd * jobs) as f64;
            assert!(
                within(in_flight, outstanding, 0.05),
                "{scheduler}, {jobs} × {qd} outstanding: {iops:.1} IOPS × {lat_ms:.1} ms = {in_flight:.1} in flight"
            );
        }
    }
}
