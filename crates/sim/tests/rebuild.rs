//! Degraded writes and rebuilds against what md and the disk model say they must be.

mod common;

use raidlab_core::disk::{DiskKind, DiskModel, HddParams};
use raidlab_core::RebuildFigures;

/// A rebuilding (or degraded) case of `disks` members of the 16 TB 2019 preset.
fn case(level: &str, disks: u32, arrays: &str, workloads: &str) -> raidlab_core::Case {
    common::one_case(
        &format!("count = {disks}\nmodel = \"hdd-7200-16t-2019\""),
        &format!("level = \"{level}\"\n{arrays}"),
        workloads,
    )
}

const QD4_READS: &str = "rw = \"randread\"\niodepth = 4\nsize = \"100g\"\nruntime = \"30s\"";

fn rebuild(c: &raidlab_core::Case) -> RebuildFigures {
    raidlab_sim::simulate(c, 1)
        .unwrap()
        .rebuild
        .expect("rebuild figures")
}

/// The preset's zones as the HDD model lays them out: equal cylinders, so bytes in
/// proportion to each zone's rate, falling linearly from outer to inner.
fn zones(p: &HddParams) -> Vec<(f64, f64)> {
    let n = p.zones as usize;
    let rates: Vec<f64> = (0..n)
        .map(|z| p.outer_mb_s + (p.inner_mb_s - p.outer_mb_s) * z as f64 / (n - 1) as f64)
        .collect();
    let sum: f64 = rates.iter().sum();
    rates
        .iter()
        .map(|&r| (p.capacity.0 as f64 * r / sum, r * 1e6))
        .collect()
}

fn preset() -> HddParams {
    match DiskModel::preset("hdd-7200-16t-2019").unwrap().kind {
        DiskKind::Hdd(p) => p,
        _ => unreachable!("an HDD preset"),
    }
}

/// Theory for an idle recovery: every zone at the slower of its media rate and md's
/// `sync_speed_max` (KiB/s).
fn idle_theory(p: &HddParams, max_kib_s: f64) -> f64 {
    let cap = max_kib_s * 1024.0;
    zones(p)
        .iter()
        .map(|&(bytes, rate)| bytes / rate.min(cap))
        .sum()
}

/// The idle full rebuild of a 16 TB member within 10 % of theory for the model's zone rates
/// and md's default cap (200,000 KiB/s): outer zones capped, inner ones disk-limited. With
/// the cap lowered below the inner rate it is the cap alone: 16 TB at 100,000 KiB/s.
#[test]
fn idle_rebuild_of_a_16tb_member_matches_theory() {
    let p = preset();
    for level in ["raid6", "raid1", "raid10"] {
        let disks = if level == "raid1" { 2 } else { 8 };
        let r = rebuild(&case(level, disks, "state = \"rebuilding\"", QD4_READS));
        let theory = idle_theory(&p, 200_000.0);
        let got = r.seconds_idle.unwrap();
        assert!(
            (got / theory - 1.0).abs() < 0.10,
            "{level}: idle rebuild {:.1} h, theory {:.1} h",
            got / 3600.0,
            theory / 3600.0
        );
    }
    let capped = rebuild(&case(
        "raid6",
        8,
        "state = \"rebuilding\"\nsync_speed_max = 100000",
        QD4_READS,
    ));
    let theory = p.capacity.0 as f64 / 102_400_000.0;
    let got = capped.seconds_idle.unwrap();
    assert!(
        (got / theory - 1.0).abs() < 0.05,
        "capped: {:.2} h, theory {:.2} h",
        got / 3600.0,
        theory / 3600.0
    );
    assert!(idle_theory(&p, 200_000.0) > theory * 0.5 && theory / 3600.0 > 43.0);
}

/// raid5d handles every stripe of a raid5/6 recovery, so a wide array's idle recovery is
/// bound by its CPU rather than by md's cap: 32 members of the 16 TB preset recover at
/// raid5d's 125,000 KiB/s a member where the disks and the cap would allow more (theory
/// with that ceiling in place of the cap). A mirror has no raid5d: raid10 on 32 keeps the
/// cap.
#[test]
fn a_wide_parity_arrays_recovery_is_bound_by_raid5d() {
    let p = preset();
    let ceiling = raidlab_sim::engine::raid5d_sync_ceiling(32);
    assert_eq!(ceiling, 125_000);
    let wide = rebuild(&case("raid6", 32, "state = \"rebuilding\"", QD4_READS));
    let (got, theory) = (wide.seconds_idle.unwrap(), idle_theory(&p, ceiling as f64));
    assert!(
        (got / theory - 1.0).abs() < 0.10,
        "raid6 on 32: idle rebuild {:.1} h, theory at raid5d's ceiling {:.1} h",
        got / 3600.0,
        theory / 3600.0
    );
    assert!(theory > 1.25 * idle_theory(&p, 200_000.0));
    let mirror = rebuild(&case("raid10", 32, "state = \"rebuilding\"", QD4_READS));
    let capped = idle_theory(&p, 200_000.0);
    let got = mirror.seconds_idle.unwrap();
    assert!(
        (got / capped - 1.0).abs() < 0.10,
        "raid10 on 32: idle rebuild {:.1} h, theory at md's cap {:.1} h",
        got / 3600.0,
        capped / 3600.0
    );
}

/// Under steady load each kernel regime does what its code says: before 4.1 md sleeps
/// whenever it is above `sync_speed_min` and busy, so it sits at the minimum (1,000 KiB/s);
/// from 4.1 it drains what it has in flight when the array is busy and gets well past it
/// (raid10 least: each 64 KiB sync buffer takes its turn with the workload at the barrier,
/// 4.4 times the minimum). Before 6.16, `is_mddev_idle` lets the sync's own requests in
/// flight hide the workload; 6.16 calls the array busy whenever it serves the workload and
/// caps the sync at `sync_io_depth` units in flight instead. So 6.16 rebuilds raid1 faster
/// (the 31 buffers of 64 KiB its barrier lets pass are within the cap) and the workload pays; raid6 slower (its depth is 32 × 4 KiB, one window) and
/// the workload gains; raid10 as fast as 6.15, because there its barrier paces the
/// recovery in both: each sync request waits until no host I/O waits or runs inside md.
#[test]
fn kernel_regimes_under_load() {
    let run = |level: &str, kernel: &str| {
        let c = case(
            level,
            if level == "raid1" { 2 } else { 8 },
            &format!("state = \"rebuilding\"\nkernel = \"{kernel}\""),
            QD4_READS,
        );
        let (out, f) = common::simulate(&c);
        (out.rebuild.unwrap().mib_s * 1024.0, f.read.unwrap().iops)
    };
    for level in ["raid6", "raid10", "raid1"] {
        let (old, old_iops) = run(level, "4.0");
        assert!(
            (old / 1000.0 - 1.0).abs() < 0.1,
            "{level} 4.0: {old:.0} KiB/s, md's minimum 1000"
        );
        let (drain, drain_iops) = run(level, "6.15");
        assert!(
            drain > 3.0 * old,
            "{level} 6.15: {drain:.0} vs {old:.0} KiB/s"
        );
        assert!(
            drain_iops < old_iops,
            "{level}: the faster rebuild costs IOPS"
        );
        let (depth, depth_iops) = run(level, "6.16");
        let what = format!(
            "{level} 6.16: {depth:.0} KiB/s, {depth_iops:.0} IOPS; 6.15: {drain:.0}, {drain_iops:.0}"
        );
        match level {
            "raid6" => assert!(depth < drain / 2.0 && depth_iops > drain_iops, "{what}"),
            "raid10" => assert!((depth / drain - 1.0).abs() < 0.1, "{what}"),
            _ => assert!(depth > drain && depth_iops < drain_iops, "{what}"),
        }
    }
}

/// A small member's recovery ends within the run: its time is recorded, and the fresh
/// member then serves reads (it is read only below the recovery point before).
#[test]
fn a_small_member_is_rebuilt_within_the_run_and_then_read() {
    let c = common::one_case(
        "count = 2\nmodel = \"hdd-7200-16t-2019\"\nspan = \"2g\"",
        "level = \"raid1\"\nstate = \"rebuilding\"",
        "rw = \"randread\"\niodepth = 4\nsize = \"1g\"\nruntime = \"60s\"",
    );
    let (out, f) = common::simulate(&c);
    let seconds = out.rebuild.unwrap().seconds.expect("finished within 60 s");
    assert!((5.0..60.0).contains(&seconds), "{seconds:.1} s for 2 GB");
    let fresh = f
        .disk_util
        .iter()
        .filter(|d| d.aggr_read_ios.is_none())
        .nth(1)
        .unwrap();
    assert!(
        fresh.read_ios > 1000,
        "the rebuilt member reads: {}",
        fresh.read_ios
    );
    // Degraded, it never would.
    let degraded = common::one_case(
        "count = 2\nmodel = \"hdd-7200-16t-2019\"\nspan = \"2g\"",
        "level = \"raid1\"\nstate = \"degraded\"",
        "rw = \"randread\"\niodepth = 4\nsize = \"1g\"\nruntime = \"60s\"",
    );
    let (out, f) = common::simulate(&degraded);
    assert!(out.rebuild.is_none());
    let lost = f
        .disk_util
        .iter()
        .filter(|d| d.aggr_read_ios.is_none())
        .nth(1)
        .unwrap();
    assert_eq!((lost.read_ios, lost.write_ios), (0, 0));
}

/// A recovery that ends within the run is timed to its end, as the host and VM targets
/// time it, not spread over the whole run; and a whole member's estimate holds where a
/// sample's remainder is recovered within that sample's ramp. Two 75-IOPS members of
/// 1 GiB: md's recovery reads and writes at most 1,280 KiB per request, so no faster than
/// 75 × 1,280 KiB/s (93.75 MiB/s, 10.9 s for the member).
#[test]
fn a_recovery_that_ends_within_the_run_is_timed_to_its_end() {
    let c = common::one_case(
        "count = 2\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        "level = \"raid1\"\nstate = \"rebuilding\"",
        "rw = \"randread\"\niodepth = 1\nsize = \"64m\"\nruntime = \"40s\"",
    );
    let fastest = 1024.0 / 93.75;
    let f = rebuild(&c);
    let ended = f.seconds.expect("1 GiB recovered within 40 s");
    let average = 1024.0 / ended;
    assert!(ended > fastest, "{ended:.1} s");
    // The speed while it ran: the average over the run (or above it, with a ramp), not
    // 1 GiB spread over the 40 s window.
    assert!(
        f.mib_s >= 0.99 * average && f.mib_s > 1.2 * 1024.0 / 40.0 && f.mib_s <= 93.75,
        "{:.1} MiB/s, {average:.1} on average",
        f.mib_s
    );
    let whole = |idle| {
        raidlab_sim::full_rebuild_seconds(&c, 1, idle)
            .unwrap()
            .expect("every sample made progress")
    };
    let (idle, loaded) = (whole(true), whole(false));
    assert!(idle > fastest && idle < 2.0 * fastest, "idle: {idle:.1} s");
    // The workload's reads take the survivor's requests from the recovery.
    assert!(loaded > idle, "loaded {loaded:.1} s, idle {idle:.1} s");
}

/// md's `read_balance` during a raid1 recovery: the sync holds `nr_pending` on both
/// members, so neither is idle, and the nearer `head_position` wins; md moves it at every
/// completion, the sync's writes included, so the fresh member's head sits at the sync's
/// front and the workload's reads stay on the survivor (the VM lab's guest sent 39 of 447
/// there; docs/vm-lab.md "raid1's and raid10's recoveries"). The VM lab's light-workload raid1 case.
#[test]
fn a_recovering_raid1_leaves_the_reads_on_the_survivor() {
    let c = common::one_case(
        "count = 2\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        "level = \"raid1\"\nstate = \"rebuilding\"\nkernel = \"6.15\"",
        "rw = \"randread\"\niodepth = 4\nsize = \"128m\"\nruntime = \"15s\"\n[workloads.fio]\nrate_iops = 30",
    );
    let (_, f) = common::simulate(&c);
    let members: Vec<_> = f
        .disk_util
        .iter()
        .filter(|d| d.aggr_read_ios.is_none())
        .collect();
    let (survivor, fresh) = (members[0], members[1]);
    let reads = f.read.unwrap().ios;
    assert!(fresh.write_ios > 100, "the fresh member is written");
    assert!(
        fresh.read_ios * 20 < reads,
        "the fresh member served {} of {reads} reads",
        fresh.read_ios
    );
    assert!(survivor.read_ios > reads, "the survivor reads for both");
}

/// md raid1's sync thread sends every sync buffer it finds free (31 after a drain: the
/// resync barrier lets one fewer than `RESYNC_DEPTH` pass), and the block layer splits them
/// at the member's largest request: on the VM lab's virtio-blk, 15 of md's 64 KiB buffers
/// of 16 pages (254 segments). So under the light workload the fresh member's writes
/// average between half and all of 960 KiB (the guest's: 743 of 608 KiB; 1 MiB, half of
/// md's buffers, before this was modelled).
#[test]
fn a_raid1_recovery_sends_its_free_buffers_split_at_the_members_limit() {
    let c = common::one_case(
        "count = 2\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        "level = \"raid1\"\nstate = \"rebuilding\"\nkernel = \"6.15\"",
        "rw = \"randread\"\niodepth = 4\nsize = \"128m\"\nruntime = \"15s\"\n[workloads.fio]\nrate_iops = 30",
    );
    let run = raidlab_sim::engine_run(&c, 1);
    let sync = run.sync.expect("a recovery ran");
    let written = (sync.done - sync.from) as f64;
    let writes = run.members[1].write_ios as f64;
    let kib = written / writes / 1024.0;
    assert!(
        (480.0..=960.0).contains(&kib),
        "{writes} writes of {kib:.0} KiB on average"
    );
}

/// A raid5 recovery on members behind a SATA port (`max_segments = 168`, `AHCI_MAX_SG`):
/// md's stripe pages are one segment each, so the block layer fills a sync request to
/// 672 KiB and starts the next with the rest of the window, and the lumps of the stripe
/// cache go as several requests, the fresh member writing one while the survivors read
/// the next (`raidlab sim --trace`). Behind virtio-blk (254) the requests reach 1,016 KiB,
/// and with no bound but `max_sectors_kb` (the presets) the cache's 256 heads go as one
/// 1 MiB request, read and then written in turn: the recovery is slower for each
/// (docs/vm-lab.md: the guest's requests stop at 672 and 1,016 KiB, 2026-12-07). Every traced command completes after it
/// was queued, and what the fresh member wrote is what md synced.
#[test]
fn a_parity_recovery_reaches_the_members_in_requests_their_port_takes() {
    let run = |params: &str| {
        let c = common::one_case(
            &format!(
                "count = 4\nmodel = \"hdd-7200\"\nspan = \"4g\"\n[disks.params]\nouter_mb_s = 10.0\ninner_mb_s = 5.0\n{params}"
            ),
            "level = \"raid5\"\nchunk = \"64k\"\nwrite_cache = \"off\"\nstate = \"rebuilding\"\nkernel = \"6.15\"",
            "rw = \"randread\"\niodepth = 4\nsize = \"128m\"\nruntime = \"15s\"\n[workloads.fio]\nrate_iops = 30",
        );
        raidlab_sim::simulate_traced(&c, 1, raidlab_sim::Start::InService).unwrap()
    };
    let largest = |out: &raidlab_sim::SimOutput| {
        let trace = out.trace.as_ref().expect("traced");
        let sync: Vec<_> = trace
            .iter()
            .filter(|c| c.source == raidlab_sim::engine::Source::Sync)
            .collect();
        assert!(sync.len() > 100, "{} sync commands", sync.len());
        for c in trace {
            assert!(c.done.is_none_or(|d| d >= c.queued), "{c:?}");
        }
        // Written to the fresh member (the last) against what md reports synced.
        let written: u64 = sync
            .iter()
            .filter(|c| c.write && c.done.is_some())
            .inspect(|c| assert_eq!(c.member, 3, "only the fresh member is written"))
            .map(|c| c.len)
            .sum();
        let rate = out.rebuild.as_ref().expect("rebuild figures").mib_s;
        (sync.iter().map(|c| c.len).max().unwrap(), written, rate)
    };
    let (sata, sata_written, sata_rate) = largest(&run("max_segments = 168"));
    let (virtio, _, virtio_rate) = largest(&run("max_segments = 254"));
    let (unbound, _, unbound_rate) = largest(&run(""));
    assert_eq!(sata, 672 << 10, "SATA: 168 pages");
    assert_eq!(virtio, 1016 << 10, "virtio-blk: 254 pages");
    assert!(
        (1 << 20..=1280 << 10).contains(&unbound),
        "max_sectors_kb: the cache's 256 heads and more at once, {unbound} B"
    );
    // The trace holds the whole run; md's rate is what it synced in the run's window.
    let measured = sata_rate * 1_048_576.0 * 15.0;
    assert!(
        sata_written as f64 >= measured * 0.95 && (sata_written as f64) < measured * 1.25,
        "the fresh member wrote {sata_written} B, md synced {measured:.0} in the window"
    );
    assert!(
        sata_rate > virtio_rate * 1.2 && virtio_rate > unbound_rate,
        "smaller requests overlap more: {sata_rate:.2}, {virtio_rate:.2}, {unbound_rate:.2} MiB/s"
    );
}

/// Degraded random writes cost what md's planning around the lost member says: on a
/// 6-member raid5, 1/6 of writes land where parity is lost (rcw: 4 reads, 1 write), 1/6
/// where the block written is lost (4 reads, parity written), 4/6 elsewhere (rmw: 2 + 2):
/// 2⅔ reads and 1⅔ writes per write, against 2 + 2 healthy. raid6 with two members lost
/// still writes.
#[test]
fn degraded_random_writes_cost_what_md_plans() {
    let writes = "rw = \"randwrite\"\niodepth = 8\nsize = \"100g\"\nruntime = \"20s\"";
    let cost = |arrays: &str, level: &str| {
        let c = case(level, 6, arrays, writes);
        let (_, f) = common::simulate(&c);
        let host = f.write.as_ref().unwrap().ios as f64;
        let m = f.disk_util.iter().filter(|d| d.aggr_read_ios.is_none());
        let (r, w) = m.fold((0, 0), |(r, w), d| (r + d.read_ios, w + d.write_ios));
        (r as f64 / host, w as f64 / host)
    };
    let (r, w) = cost("state = \"degraded\"", "raid5");
    assert!(
        (r - 8.0 / 3.0).abs() < 0.1 && (w - 5.0 / 3.0).abs() < 0.1,
        "raid5: {r:.2} reads, {w:.2} writes"
    );
    let (r, w) = cost("state = \"healthy\"", "raid5");
    assert!(
        (r - 2.0).abs() < 0.05 && (w - 2.0).abs() < 0.05,
        "healthy: {r:.2}, {w:.2}"
    );
    let (r, w) = cost("state = \"degraded\"\nfailed = 2", "raid6");
    assert!(
        r > 2.0 && w > 1.0 && w < 3.0,
        "raid6 two lost: {r:.2} reads, {w:.2} writes"
    );
}

/// The VM lab's rebuild case (`vm::md_rebuild_in_one_boot`): four 75-IOPS members of 1 GiB,
/// 64 KiB chunks, 4 KiB random reads at QD4 over 128 MiB for 15 s; a recovery paced as the
/// guest's 6.1 kernel paces it.
fn vm_lab_case(level: &str, state: &str) -> raidlab_core::Case {
    let kernel = if state == "rebuilding" {
        "\nkernel = \"6.15\""
    } else {
        ""
    };
    common::one_case(
        "count = 4\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        &format!("level = \"{level}\"\nchunk = \"64k\"\nstate = \"{state}\"{kernel}"),
        "rw = \"randread\"\niodepth = 4\nsize = \"128m\"\nruntime = \"15s\"",
    )
}

/// raid10's barrier: each recovery window waits until the host I/O inside md has drained,
/// and holds new host I/O back until it completes, so a recovering raid10 serves less
/// than the same array degraded (the VM lab's kernel: 76.6 IOPS recovering; without the
/// barrier the model said 162.7, above the degraded array's own figure).
#[test]
fn raid10_recovery_and_the_workload_take_turns() {
    let run = |state: &str| {
        let (_, f) = common::simulate(&vm_lab_case("raid10", state));
        f.read.unwrap().iops
    };
    let (degraded, rebuilding) = (run("degraded"), run("rebuilding"));
    assert!(
        rebuilding < 0.85 * degraded,
        "recovering {rebuilding:.1} IOPS, degraded {degraded:.1}"
    );
}

/// On members faster than a jiffy, raid10's recovery under load goes one 64 KiB buffer a
/// jiffy: `raid10_sync_request` sleeps a jiffy (4 ms at `CONFIG_HZ=250`) whenever host I/O
/// waits at the barrier, the buffer it raised completes meanwhile, and the workload has
/// the array until the thread wakes. Without that sleep the barrier's turns left NVMe
/// members under 4 KiB random reads at QD32 half a percent of their healthy IOPS.
#[test]
fn raid10_recovery_on_fast_members_sleeps_a_jiffy_for_waiting_io() {
    let run = |state: &str| {
        let kernel = if state == "rebuilding" {
            "\nkernel = \"6.16\""
        } else {
            ""
        };
        let c = common::one_case(
            "count = 4\nmodel = \"nvme\"",
            &format!("level = \"raid10\"\nstate = \"{state}\"{kernel}"),
            "rw = \"randread\"\niodepth = 32\nsize = \"10g\"\nruntime = \"5s\"",
        );
        let (out, f) = common::simulate(&c);
        (out.rebuild.map(|r| r.mib_s), f.read.unwrap().iops)
    };
    let (_, healthy) = run("healthy");
    let (rebuild, iops) = run("rebuilding");
    let rebuild = rebuild.expect("rebuild figures");
    let per_jiffy = 64.0 / 1024.0 / 0.004;
    assert!(
        (rebuild / per_jiffy - 1.0).abs() < 0.1,
        "{rebuild:.2} MiB/s, one 64 KiB buffer a jiffy is {per_jiffy:.2}"
    );
    assert!(
        iops > 0.25 * healthy,
        "the workload kept {iops:.0} of its healthy {healthy:.0} IOPS"
    );
}

/// A btrfs raid1 of four 16 TB disks, rebuilding (`btrfs replace`) under 4 KiB random
/// reads at QD4 over the first `size` of the file system.
fn btrfs_replace(size: &str) -> raidlab_core::Case {
    let text = format!(
        "name = \"t\"\n[disks]\ncount = 4\nmodel = \"hdd-7200-16t-2019\"\n[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nstate = \"rebuilding\"\n[workloads]\nrw = \"randread\"\niodepth = 4\nsize = \"{size}\"\nruntime = \"30s\"\n"
    );
    raidlab_core::Plan::parse(&text, std::path::Path::new("t.toml"))
        .unwrap()
        .cases()[0]
        .clone()
}

/// btrfs replace copies the device extents in use, not the whole member, and nothing
/// paces it: 8 GiB of data on a four-device raid1 is 4 GiB per member, copied within
/// the run; a whole idle member goes at the disk's own rate in every zone (no
/// `sync_speed_max`: faster than md's capped recovery of the same disk); and under load
/// the elevator's deadline and the disk's age limit still serve the workload's far reads
/// within about 1.5 s while the copy streams past them.
#[test]
fn btrfs_replace_copies_what_is_allocated_at_the_disks_rate() {
    let case = btrfs_replace("8g");
    let run = raidlab_sim::engine_run(&case, 1);
    let sync = run.sync.expect("a replace");
    assert_eq!(
        sync.done,
        4 << 30,
        "the allocated device extents, 1 GiB each"
    );
    let t = sync
        .finished_at
        .expect("4 GiB is copied within 30 s")
        .as_secs_f64();
    assert!(t < 30.0, "{t}");
    // Idle, the whole member at the zones' own rates.
    let r = rebuild(&case);
    let idle = r.seconds_idle.expect("idle rebuild");
    let theory = idle_theory(&preset(), f64::INFINITY);
    assert!(
        (idle / theory - 1.0).abs() < 0.10,
        "idle {idle:.0} s, theory {theory:.0} s"
    );
    let md_theory = idle_theory(&preset(), 200_000.0);
    assert!(
        idle < md_theory * 0.95,
        "{idle:.0} s against md's {md_theory:.0} s"
    );
    // Under load: the workload keeps completing reads, none waiting much longer than the
    // elevator's read deadline (500 ms) and the drive's age limit (1 s) together.
    let (_, fio) = common::simulate(&case);
    let read = fio.read.expect("reads");
    assert!(read.iops > 4.0, "{}", read.iops);
    let max_ms = read.clat_max_ns.expect("max latency") / 1e6;
    assert!(max_ms < 1_700.0, "a read waited {max_ms:.0} ms");
}

/// md re-adds a member that left with only what its write-intent bitmap flagged: the
/// workload's region, rounded out to 64 MiB bitmap chunks (raid1: array bytes = member
/// bytes, 2000 MiB → 2048; raid5 on four: a third of the region per member, 200 MiB →
/// 256), resynced within the run,
/// where a fresh member's recovery covers the whole 4 TB. Its rebuild time is its own (no
/// idle whole-member figure).
#[test]
fn a_re_added_member_resyncs_what_the_bitmap_flagged() {
    for (level, region, span) in [
        ("raid1", "2000m", 2048u64 << 20),
        ("raid5", "600m", 256 << 20),
    ] {
        let chunk = if level == "raid1" {
            ""
        } else {
            "chunk = \"512k\"\n"
        };
        let arrays =
            format!("{chunk}bitmap = \"internal\"\nstate = \"rebuilding\"\nrejoin = \"re-add\"");
        let c = common::one_case(
            "count = 4\nmodel = \"hdd-7200\"",
            &format!("level = \"{level}\"\n{arrays}"),
            &format!("rw = \"randread\"\niodepth = 4\nsize = \"{region}\"\nruntime = \"90s\""),
        );
        let run = raidlab_sim::engine_run(&c, 1);
        let sync = run.sync.expect("a recovery");
        assert_eq!((sync.size, sync.done), (span, span), "{level}");
        let r = rebuild(&c);
        let t = r.seconds.expect("the re-add ends within the run");
        assert_eq!(r.seconds_full, Some(t), "{level}");
        assert_eq!(r.seconds_idle, None, "{level}");
        let fresh = raidlab_sim::engine_run(
            &common::one_case(
                "count = 4\nmodel = \"hdd-7200\"",
                &format!(
                    "level = \"{level}\"\n{chunk}bitmap = \"internal\"\nstate = \"rebuilding\""
                ),
                &format!("rw = \"randread\"\niodepth = 4\nsize = \"{region}\"\nruntime = \"60s\""),
            ),
            1,
        );
        let whole = fresh.sync.unwrap();
        assert!(
            whole.size > 100 * span && whole.finished_at.is_none(),
            "{level}"
        );
    }
}

/// A raid5/6 recovery takes stripe heads a window at a time from the cache that reads of
/// the lost member's blocks need too, and md grows that cache by a head whenever it runs
/// short (`R5_ALLOC_MORE`): after 15 s of recovery under 4 KiB random reads at QD4 it holds
/// more than its 256 heads (the VM lab's 6.1 kernel: 354 and 440), while the same reads on
/// the degraded array never run it short. Both from md's 256 heads (an array in service).
#[test]
fn a_parity_recovery_grows_the_stripe_cache() {
    let heads = |level: &str, state: &str| {
        let case = vm_lab_case(level, state);
        let out = raidlab_sim::simulate_from(&case, 1, raidlab_sim::Start::InService).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
        doc["raidlab"]["stripe_cache_heads"].as_u64().unwrap()
    };
    for level in ["raid5", "raid6"] {
        let (degraded, rebuilding) = (heads(level, "degraded"), heads(level, "rebuilding"));
        assert_eq!(degraded, 256, "{level}: degraded reads need few heads");
        assert!(
            rebuilding > 300 && rebuilding < 1000,
            "{level}: the recovery grew the cache to {rebuilding} heads"
        );
    }
}

/// The targets lay a region out before measuring it (1 MiB sequential direct writes, 16
/// deep: `--name=layout`), and on raid5/6 those writes run md's stripe cache short all the
/// time, so it grows: the VM lab's guest grew its 256 heads by 91 over a 128 MiB region of
/// a degraded raid5 before a recovery (docs/vm-lab.md). The simulator runs the same pass
/// (`Start::LaidOut`) where the targets would: not on a raw region a write workload
/// overwrites, not on a mirror, not under buffered I/O (reclaim takes the cache back), not
/// before Linux 4.1. `raidlab run` ([`raidlab_sim::simulate`]) starts an array with a
/// member gone so and a healthy one in service, its cache at `stripe_cache_size`; so does
/// `raidlab sim`, unless told `--layout-pass` or `--in-service`.
#[test]
fn the_layout_pass_grows_the_stripe_cache_a_case_starts_with() {
    let laid_out = |case: &raidlab_core::Case| {
        let model = raidlab_sim::resolve_model(case).unwrap();
        raidlab_sim::laid_out_cache(case, &model, 1, model.capacity().0)
    };
    let reads = vm_lab_case("raid5", "rebuilding");
    let heads = laid_out(&reads).expect("a raid5 region read is laid out");
    assert!(
        (300..=500).contains(&heads),
        "the layout grew 256 heads to {heads}"
    );
    let start = |how: raidlab_sim::Start| {
        let out = raidlab_sim::simulate_from(&reads, 1, how).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
        doc["raidlab"]["stripe_cache_heads_at_start"].as_u64()
    };
    assert_eq!(start(raidlab_sim::Start::LaidOut), Some(heads));
    assert_eq!(start(raidlab_sim::Start::InService), Some(256));
    let run = |case: &raidlab_core::Case| {
        let out = raidlab_sim::simulate(case, 1).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
        doc["raidlab"]["stripe_cache_heads_at_start"].as_u64()
    };
    assert_eq!(
        run(&reads),
        Some(heads),
        "`raidlab run` lays a rebuilding array out"
    );
    let degraded = vm_lab_case("raid5", "degraded");
    assert!(run(&degraded).unwrap() > 256, "and a degraded one");
    let healthy = vm_lab_case("raid5", "healthy");
    assert!(
        laid_out(&healthy).unwrap() > 256,
        "a healthy array's region is laid out"
    );
    assert_eq!(
        run(&healthy),
        Some(256),
        "but `raidlab run` starts it in service"
    );
    let mut writes = reads.clone();
    writes.workload.rw = raidlab_core::Rw::RandWrite;
    assert_eq!(
        laid_out(&writes),
        None,
        "a raw write region is not laid out"
    );
    writes.workload.fio.precondition = 2;
    let twice = laid_out(&writes).expect("precondition lays it out");
    assert!(
        twice > heads,
        "two passes grow it further: {twice} vs {heads}"
    );
    assert_eq!(laid_out(&vm_lab_case("raid10", "rebuilding")), None);
    // On the timed members of `vm::md_rebuild_on_timed_members_against_the_simulator` the
    // guest's layout grew raid6's cache by 57 heads: md gets its heads back in lumps of
    // nearly the whole cache, raid5d having merged the member writes of every stripe it
    // handled in a row. Without raid5d's time the simulator grew 156, with it 92, and 75
    // since md's heads are taken row by row and a row's head goes out beside the rows
    // before it.
    let timed = common::one_case(
        "count = 4\nmodel = \"hdd-7200\"\nspan = \"4g\"\n[disks.params]\nouter_mb_s = 10.0\ninner_mb_s = 5.0",
        "level = \"raid6\"\nchunk = \"64k\"\nstate = \"rebuilding\"\nkernel = \"6.15\"\nresync = \"assume-clean\"",
        "rw = \"randread\"\niodepth = 4\nsize = \"128m\"\nruntime = \"15s\"",
    );
    let grown = laid_out(&timed).expect("raid6 laid out") - 256;
    assert!(
        (40..=90).contains(&grown),
        "the layout grew the timed raid6's cache by {grown} heads (guest 57)"
    );
    let mut buffered = reads.clone();
    buffered.workload.direct = false;
    assert_eq!(laid_out(&buffered), None);
    let mut old = reads.clone();
    if let Some(r) = old.array.rebuild.as_mut() {
        r.kernel = raidlab_core::Governor::Sleep;
    }
    assert_eq!(laid_out(&old), None, "Linux 4.0's cache does not grow");
    // The pass itself: every write of the region once, then it stops.
    let mut pass = reads.clone();
    pass.array.state = raidlab_core::ArrayState::Degraded;
    pass.workload.rw = raidlab_core::Rw::Write;
    pass.workload.bs = raidlab_core::Bytes(1 << 20);
    pass.workload.iodepth = 16;
    let model = raidlab_sim::resolve_model(&pass).unwrap();
    let mut e = raidlab_sim::engine::Engine::new(&pass, model.capacity().0, 1, |_: &mut _| {
        raidlab_sim::device::Throttle::new(match &model.kind {
            raidlab_core::disk::DiskKind::Throttle(p) => p,
            _ => unreachable!("throttle-75"),
        })
    });
    e = e.lay_out(128);
    let run = e.run();
    assert_eq!(run.write.ios, 128, "one pass over 128 MiB");
    assert_eq!(run.read.ios, 0);
    assert!(run.stripe_heads > Some(256), "{:?} heads", run.stripe_heads);
}

/// fio's `slat`: how long `io_submit` held the job's thread before md took a read. A
/// degraded raid5 takes every read at once (its reads of the lost member need few stripe
/// heads, and the cache has them); while a member is recovered, the reads that need heads
/// wait for the sync thread to give some back (the VM lab's guest: 2.41 ms a read on
/// average, fio's `slat` in one boot). Never more than the whole latency.
#[test]
fn reads_that_wait_for_stripe_heads_show_as_slat() {
    // The reads of a simulated case, as its fio JSON has them.
    let reads = |case: &raidlab_core::Case| -> serde_json::Value {
        let out = raidlab_sim::simulate(case, 1).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
        doc["jobs"][0]["read"].clone()
    };
    let slat = |state: &str| {
        let read = reads(&vm_lab_case("raid5", state));
        let (slat, lat) = (&read["slat_ns"], &read["lat_ns"]);
        assert_eq!(slat["N"], lat["N"], "{state}: a slat for every read");
        assert!(slat["max"].as_u64() <= lat["max"].as_u64(), "{state}");
        slat["mean"].as_f64().unwrap()
    };
    assert_eq!(slat("degraded"), 0.0, "degraded: no read waits");
    let rebuilding = slat("rebuilding");
    assert!(
        rebuilding > 0.0 && rebuilding < 10e6,
        "rebuilding: {rebuilding:.0} ns a read"
    );
    // fio records no slat for its synchronous engines, nor does the simulator.
    let mut psync = vm_lab_case("raid5", "rebuilding");
    psync.workload.ioengine = "psync".into();
    let read = reads(&psync);
    assert_eq!(read["slat_ns"]["N"], 0, "psync: {}", read["slat_ns"]);
    assert!(read["lat_ns"]["N"].as_u64().unwrap() > 0);
}

/// md's raid5 sync takes a stripe head a row (`raid5_sync_request`), so once heads come
/// back it sends what came back, not whole windows of 32. The VM lab's raid5 recovery with
/// md's governor out of the way (`sync_speed_min = 200000`) on 75-IOPS members, traced
/// (`RAIDLAB_VM_TRACE=1`, docs/vm-lab.md, 2026-12-07): a survivor read 324.5 MiB for the
/// sync in 518 requests over fio's 15 s, 641 KiB each, every size up to virtio's 1,016
/// KiB. Taking whole windows the simulator sent 601 of 549 KiB — its lumps came to 256 rows
/// and more, cut into 1,016 KiB and a remainder of 8 or 136 KiB that went alone, a throttle
/// slot each — and the workload lost those slots (117.7 IOPS that seed against the
/// guest's 132.6). Taking the free rows: 569 of 589 KiB, 128.4 IOPS.
#[test]
fn a_parity_recovery_sends_the_stripe_heads_that_came_back() {
    let c = common::one_case(
        "count = 4\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        "level = \"raid5\"\nchunk = \"64k\"\nwrite_cache = \"keep\"\nresync = \"assume-clean\"\nstate = \"rebuilding\"\nkernel = \"6.15\"\nsync_speed_min = 200000",
        "rw = \"randread\"\nbs = \"4k\"\niodepth = 4\nsize = \"128m\"\nruntime = \"15s\"",
    );
    let out = raidlab_sim::simulate_traced(&c, 2, raidlab_sim::Start::LaidOut).unwrap();
    let trace = out.trace.as_ref().expect("traced");
    let reads: Vec<u64> = trace
        .iter()
        .filter(|c| c.source == raidlab_sim::engine::Source::Sync && c.member == 0)
        .inspect(|c| assert!(!c.write, "a survivor is only read: {c:?}"))
        .map(|c| c.len)
        .collect();
    let mean_kib = reads.iter().sum::<u64>() as f64 / reads.len() as f64 / 1024.0;
    assert!(
        (mean_kib / 641.0 - 1.0).abs() <= 0.10,
        "{} sync reads of {mean_kib:.0} KiB on average, the guest's 641",
        reads.len()
    );
    // Requests of every size, not only lumps cut at the last segment and their remainders.
    let sizes: std::collections::BTreeSet<u64> = reads.iter().map(|l| l >> 12).collect();
    assert!(sizes.len() >= 30, "{} sizes: {sizes:?}", sizes.len());
}
