//! md features beyond the data path: the write-intent bitmap, the initial resync and the
//! raid5/6 stripe cache's size.
//! Each test compares the same case with and without the feature, so it fails if the
//! feature costs nothing (or, for sequential writes with a bitmap, far too much).

mod common;

use raidlab_core::Case;

/// A one-case plan: `arrays` and `workload` are TOML lines for `[arrays]` / `[workloads]`.
fn case(disks: u32, arrays: &str, workload: &str) -> Case {
    common::one_case(
        &format!("count = {disks}\nmodel = \"hdd-7200-500g-2010\""),
        &format!("write_cache = \"off\"\n{arrays}"),
        workload,
    )
}

/// (write IOPS, write MB/s, member writes per host write)
fn writes(c: &Case) -> (f64, f64, f64) {
    let (_, f) = common::simulate(c);
    let w = f.write.as_ref().unwrap();
    let host = f.disk_util[0].write_ios as f64;
    let members: u64 = f.disk_util[1..].iter().map(|d| d.write_ios).sum();
    (w.iops, w.bw_bytes_s / 1e6, members as f64 / host)
}

const RANDOM_WIDE: &str =
    "rw = \"randwrite\"\nbs = \"4k\"\niodepth = 4\nsize = \"400g\"\nruntime = \"30s\"";
const SEQUENTIAL: &str =
    "rw = \"write\"\nbs = \"1m\"\niodepth = 4\nsize = \"100g\"\nruntime = \"30s\"";

#[test]
fn bitmap_slows_random_writes_over_a_wide_span() {
    for (level, disks) in [("raid5", 6), ("raid10", 6), ("raid1", 2)] {
        let arrays = format!("level = \"{level}\"\nresync = \"assume-clean\"");
        let (plain, _, plain_w) = writes(&case(disks, &arrays, RANDOM_WIDE));
        let (with, _, with_w) = writes(&case(
            disks,
            &format!("{arrays}\nbitmap = \"internal\""),
            RANDOM_WIDE,
        ));
        assert!(
            with < plain * 0.9,
            "{level}: randwrite over 400 GB {with:.1} IOPS with a bitmap, {plain:.1} without"
        );
        // The cost is the bitmap page written to every member before new chunks' data.
        assert!(
            with_w > plain_w + 0.5,
            "{level}: {with_w:.2} member writes per host write with a bitmap, {plain_w:.2} without"
        );
    }
}

/// One page write per 64 MiB chunk: at most a few % (the disks idle while the page is
/// written; on raid5/6 raid5d's work on the stripes already handed to it can cover it).
/// The page writes themselves are there.
#[test]
fn bitmap_barely_costs_sequential_writes() {
    for (level, disks) in [("raid5", 6), ("raid10", 4)] {
        let arrays = format!("level = \"{level}\"\nresync = \"assume-clean\"");
        let (_, plain, plain_w) = writes(&case(disks, &arrays, SEQUENTIAL));
        let (_, with, with_w) = writes(&case(
            disks,
            &format!("{arrays}\nbitmap = \"internal\""),
            SEQUENTIAL,
        ));
        assert!(
            with < plain * 1.01 && with > plain * 0.92,
            "{level}: sequential write {with:.0} MB/s with a bitmap, {plain:.0} without: expected at most 8 % less"
        );
        assert!(
            with_w > plain_w,
            "{level}: {with_w:.3} member writes per host write with a bitmap, {plain_w:.3} without"
        );
    }
}

const RANDOM_FILE: &str =
    "rw = \"randwrite\"\nbs = \"4k\"\niodepth = 4\nsize = \"10g\"\nruntime = \"60s\"";

/// (write IOPS, member reads, member writes, host writes)
fn member_ios(c: &Case) -> (f64, u64, u64, u64) {
    let (_, f) = common::simulate(c);
    let m = &f.disk_util[1..];
    (
        f.write.as_ref().unwrap().iops,
        m.iter().map(|d| d.read_ios).sum(),
        m.iter().map(|d| d.write_ios).sum(),
        f.disk_util[0].write_ios,
    )
}

/// Since Linux 4.1 a resync under load does not fall back to `speed_limit_min`: it runs
/// one window at a time, continuously, and the workload pays for every window's seeks.
#[test]
fn resync_during_the_workload_costs_random_write_iops() {
    for level in ["raid5", "raid6", "raid10"] {
        let arrays = |resync: &str| format!("level = \"{level}\"\nresync = \"{resync}\"");
        let clean = member_ios(&case(6, &arrays("assume-clean"), RANDOM_FILE)).0;
        let during = member_ios(&case(6, &arrays("during"), RANDOM_FILE)).0;
        assert!(
            during < clean * 0.9,
            "{level}: randwrite {during:.1} IOPS during resync, {clean:.1} without"
        );
    }
}

/// Under load md waits for its own requests between 128 KiB windows and goes on (Linux
/// 4.1 to 6.15, the regime the initial resync keeps), so over 60 s a 6-disk raid5's
/// recovery (5 members read, 1 written per window) gets well past the ≈ 470 windows that
/// `speed_limit_min` (1000 KiB/s) allows — the pre-4.1 kernels' pace. Host writes cost 2
/// reads each (md-exact rmw) where the last member is rebuilt, and 2⅔ on average beyond
/// the sync point, where md plans around the member it cannot read yet (rcw when it holds
/// the parity or the block written: 4 reads).
#[test]
fn resync_under_load_keeps_going_past_speed_limit_min() {
    let c = case(6, "level = \"raid5\"\nresync = \"during\"", RANDOM_FILE);
    let (_, reads, _, host) = member_ios(&c);
    let sync = raidlab_sim::engine_run(&c, 1).sync.expect("a resync ran");
    let windows = ((sync.done - sync.from) / raidlab_sim::resync::STEP) as f64;
    let at_min = 60.0 * 1000.0 / 128.0;
    assert!(
        windows > 3.0 * at_min,
        "resync did {windows} windows in 60 s; at speed_limit_min it would be ≈ {at_min:.0}"
    );
    let per_write = (reads as f64 - 5.0 * windows) / host as f64;
    println!("{windows} windows, {per_write:.2} member reads per host write");
    assert!(
        (2.0..2.7).contains(&per_write),
        "{per_write:.2} member reads per host write besides five per window"
    );
}

/// raid5 is created degraded and recovers its last member: until the recovery passes a
/// block, md reads that member's blocks back from the five others. A sixth of random reads
/// land there, so over a region the recovery has not reached a read costs ≈ 1 + 4/6
/// member reads instead of one.
#[test]
fn recovering_raid5_reads_the_missing_member_back_from_the_others() {
    let c = case(
        6,
        "level = \"raid5\"\nresync = \"during\"",
        &RANDOM_FILE.replace("randwrite", "randread"),
    );
    let (_, f) = common::simulate(&c);
    let host = f.disk_util[0].read_ios as f64;
    let reads: u64 = f.disk_util[1..].iter().map(|d| d.read_ios).sum();
    let windows: u64 = f.disk_util[1..].iter().map(|d| d.write_ios).sum();
    // Each recovery window reads five members and writes the sixth.
    let per_read = (reads - 5 * windows) as f64 / host;
    assert!(
        (1.4..1.7).contains(&per_read),
        "{per_read:.2} member reads per host read while recovering (clean: 1)"
    );
}

#[test]
fn bitmap_and_resync_replay_identically() {
    let c = case(
        6,
        "level = \"raid5\"\nbitmap = \"internal\"\nresync = \"during\"",
        "rw = \"randrw\"\nbs = \"16k\"\niodepth = 8\nsize = \"200g\"\nruntime = \"20s\"",
    );
    let a = raidlab_sim::simulate(&c, 3).unwrap().fio_json;
    assert_eq!(a, raidlab_sim::simulate(&c, 3).unwrap().fio_json);
    assert_ne!(a, raidlab_sim::simulate(&c, 4).unwrap().fio_json);
}

/// The per-second logs agree with fio's summary: IOPS per second sum to the I/O count,
/// and the IOPS-weighted mean of the per-second latencies is the mean latency.
#[test]
fn per_second_logs_agree_with_the_summary() {
    let c = case(6, "level = \"raid5\"", RANDOM_WIDE);
    let (out, f) = common::simulate(&c);
    let w = f.write.unwrap();
    let field = |line: &str, i: usize| {
        line.split(',')
            .nth(i)
            .unwrap()
            .trim()
            .parse::<f64>()
            .unwrap()
    };
    let iops: Vec<f64> = out.iops_log.lines().map(|l| field(l, 1)).collect();
    let lat: Vec<f64> = out.lat_log.lines().map(|l| field(l, 1)).collect();
    assert_eq!(iops.len(), 30);
    assert_eq!(lat.len(), 30, "a latency for every second with completions");
    assert_eq!(iops.iter().sum::<f64>() as u64, w.ios);
    let weighted =
        iops.iter().zip(&lat).map(|(n, l)| n * l).sum::<f64>() / iops.iter().sum::<f64>();
    assert!(
        (weighted / w.lat_mean_ns - 1.0).abs() < 0.01,
        "per-second {weighted} ns vs summary {} ns",
        w.lat_mean_ns
    );
}

/// md takes a stripe head per 4 KiB row, one at a time: a cache smaller than a chunk row
/// (128 heads at 512 KiB chunks) still makes progress, by writing partial rows with
/// pre-reads. And since Linux 4.1 md grows its cache by a head whenever it runs short
/// (`R5_ALLOC_MORE`), from whatever `stripe_cache_size` says: sequential writes that keep
/// it short grow it, a cache that starts small stays behind one that starts large enough,
/// and one that never runs short keeps its size. Buffered writes fill the page cache, and
/// reclaim's shrinker takes the stripe cache back as fast as it grows: it stays put.
#[test]
fn a_short_stripe_cache_moves_and_grows() {
    let run_with = |rows: u32, workload: &str| {
        let arrays = format!("level = \"raid5\"\nstripe_cache = {rows}");
        let (out, f) = common::simulate(&case(4, &arrays, workload));
        let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
        let heads = doc["raidlab"]["stripe_cache_heads"].as_u64().unwrap();
        (f.write.unwrap().bw_bytes_s / 1e6, heads)
    };
    let run = |rows: u32| run_with(rows, SEQUENTIAL);
    let (tiny, tiny_heads) = run(17);
    let (default, default_heads) = run(256);
    let (large, large_heads) = run(4096);
    assert!(
        tiny > 1.0,
        "stripe_cache 17: {tiny:.1} MB/s, md still writes"
    );
    assert!(
        tiny_heads > 17 * 4 && default_heads > 256,
        "a cache that runs short grows: 17 → {tiny_heads} heads, 256 → {default_heads}"
    );
    assert_eq!(
        large_heads, 4096,
        "a cache that never ran short keeps its size"
    );
    let (buffered, buffered_heads) = run_with(17, &format!("{SEQUENTIAL}\ndirect = false"));
    assert!(
        buffered > 1.0,
        "buffered, stripe_cache 17: {buffered:.1} MB/s"
    );
    assert_eq!(
        buffered_heads, 17,
        "buffered writes: the shrinker keeps the cache"
    );
    assert!(
        tiny < default && default < large,
        "sequential writes by the cache they started from: 17 → {tiny:.1}, 256 → {default:.1}, 4096 → {large:.1} MB/s"
    );
}

/// O_DIRECT writes carry REQ_SYNC, and `raid5_make_request` marks their stripes
/// pre-read-active at once; writes without it wait on md's delayed list, which is released
/// only when no pre-reading stripe is left, so at a small queue depth they go in batches.
#[test]
fn sync_writes_skip_the_delayed_list() {
    let random = "rw = \"randwrite\"\nbs = \"4k\"\niodepth = 4\nsize = \"10g\"\nruntime = \"30s\"";
    for level in ["raid5", "raid6"] {
        let arrays = format!("level = \"{level}\"\nresync = \"assume-clean\"");
        let (sync, _, sync_w) = writes(&case(6, &arrays, &format!("{random}\ndirect = true")));
        let (batched, _, batched_w) =
            writes(&case(6, &arrays, &format!("{random}\ndirect = false")));
        assert!(
            sync > batched * 1.2,
            "{level}: {sync:.1} IOPS with sync writes, {batched:.1} through the delayed list"
        );
        assert!(
            (sync_w - batched_w).abs() < 0.05,
            "the same md cost per write: {sync_w:.2} vs {batched_w:.2} member writes"
        );
    }
}

/// The real kernel (6.1, `examples/vm-seqwrite.toml` in the VM lab) pre-reads during
/// 1 MiB sequential O_DIRECT writes to raid5: 1 685 member reads for 1 484 host writes.
/// fio's job submits one write at a time and sleeps in md while the stripe cache is full,
/// and md handles the stripe a write leaves part-filled as soon as the write is in (the
/// unplug), so the next write finds it pre-reading and joins it. Buffered writes are held
/// by the plug and fill whole stripes: no reads.
#[test]
fn sequential_direct_writes_to_raid5_pre_read_part_filled_stripes() {
    let reads_per_write = |direct: bool| {
        let c = common::one_case(
            "count = 4\nmodel = \"hdd-7200-16t-2019\"\nspan = \"30g\"",
            "level = \"raid5\"\nwrite_cache = \"keep\"",
            &format!(
                "rw = \"write\"\nbs = \"1m\"\niodepth = 32\nsize = \"20g\"\nruntime = \"10s\"\n\
                 direct = {direct}"
            ),
        );
        let (_, reads, _, host) = member_ios(&c);
        reads as f64 / host as f64
    };
    let sync = reads_per_write(true);
    assert!(
        (0.5..2.0).contains(&sync),
        "{sync:.3} member reads per 1 MiB direct write (the kernel: ≈ 1.1)"
    );
    let buffered = reads_per_write(false);
    assert!(
        buffered < 0.01,
        "{buffered:.3} member reads per 1 MiB buffered write (expected ≈ 0)"
    );
}

/// One raid5 case of four `hdd-7200` at saturation (4 jobs × QD64 of 4 KiB random reads
/// over 1 TB): (read IOPS, member I/Os per read, per-member read counts).
fn saturated_reads(level: &str, state: &str) -> (f64, f64, Vec<u64>) {
    let c = common::one_case(
        "count = 4\nmodel = \"hdd-7200\"",
        &format!("level = \"{level}\"\nstate = \"{state}\""),
        "rw = \"randread\"\niodepth = 64\nnumjobs = 4\nsize = \"1t\"\nruntime = \"30s\"",
    );
    let (_, f) = common::simulate(&c);
    let r = f.read.unwrap();
    // fio's disk_util lists the md device (with its members' sums) and each member.
    let members: Vec<u64> = f
        .disk_util
        .iter()
        .filter(|d| d.aggr_read_ios.is_none())
        .map(|d| d.read_ios)
        .collect();
    (
        r.iops,
        members.iter().sum::<u64>() as f64 / r.ios as f64,
        members,
    )
}

/// A degraded raid5 computes a lost chunk from every other member: 1 of n reads costs n − 1
/// member reads, so at saturation it does n·D/2 reads a second, half the healthy n·D.
#[test]
fn degraded_raid5_reads_saturate_at_half() {
    let (healthy, _, _) = saturated_reads("raid5", "healthy");
    let (degraded, cost, members) = saturated_reads("raid5", "degraded");
    let ratio = degraded / healthy;
    assert!(
        (ratio - 0.5).abs() <= 0.5 * 0.15,
        "degraded {degraded:.1} / healthy {healthy:.1} = {ratio:.3}, theory 0.5"
    );
    assert!(
        (cost - 1.5).abs() < 0.05,
        "member reads per read {cost:.3}, theory 2(n−1)/n = 1.5"
    );
    assert_eq!(members[3], 0, "the lost member reads nothing: {members:?}");
}

/// A read md must compute from the other members goes through the stripe cache, and md
/// walks it a stripe at a time, so a read over more rows than the cache holds goes on as
/// heads come back. raid5's initial resync is a recovery of its last member (mdadm builds
/// it degraded), so during it a 4 MiB read of three members with 512 KiB chunks covers
/// 512 rows of a 256-head cache; taken whole they never came free and the case completed
/// no read at all.
#[test]
fn a_read_over_more_rows_than_the_cache_goes_on() {
    let c = common::one_case(
        "count = 3\nmodel = \"hdd-7200\"",
        "level = \"raid5\"\nchunk = \"512k\"\nresync = \"during\"",
        "rw = \"read\"\nbs = \"4m\"\nsize = \"1g\"\nruntime = \"5s\"",
    );
    let (out, f) = common::simulate(&c);
    let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
    assert!(
        doc["raidlab"]["stripe_cache_heads"].as_u64().unwrap() < 512,
        "the cache grew to the read's 512 rows, so this case no longer tests a read larger \
         than the cache"
    );
    let reads = f.read.map_or(0, |r| r.ios);
    // Without the resync (`assume-clean`) the same reads come to 299 in 5 s; beside it,
    // and computing the last member's chunks, 181: at least a third of the first.
    assert!(
        reads >= 100,
        "{reads} reads of 4 MiB in 5 s during the resync"
    );
}

/// Mirrors read the surviving copies only.
#[test]
fn degraded_mirrors_never_read_the_lost_member() {
    for level in ["raid1", "raid10"] {
        let (healthy, _, _) = saturated_reads(level, "healthy");
        let (degraded, cost, members) = saturated_reads(level, "degraded");
        assert_eq!(members[3], 0, "{level}: {members:?}");
        assert!(members[..3].iter().all(|&m| m > 0), "{level}: {members:?}");
        assert!(
            (cost - 1.0).abs() < 1e-9,
            "{level}: one member read per read"
        );
        assert!(
            degraded < healthy * 0.85,
            "{level}: {degraded:.1} vs {healthy:.1}"
        );
    }
}

/// raid1 keeps a sequential read stream on the member it started on (`raid1.c`
/// `read_balance`: a read beginning at a member's `next_seq_sect`, where the last read
/// sent to it ended, stays there), whatever the queue depth: 4 KiB sequential reads at
/// QD 16 go as fast as at QD 1, from one member. Before, the reads in flight were spread
/// over the mirrors, each member saw a stream with holes, and QD 4 on two disks gave 550
/// IOPS against 46,070 at QD 1.
#[test]
fn raid1_sequential_reads_stay_on_one_mirror() {
    for disks in [2, 4] {
        let run = |qd: u32| {
            let c = case(
                disks,
                "level = \"raid1\"\nresync = \"assume-clean\"",
                &format!(
                    "rw = \"read\"\nbs = \"4k\"\niodepth = {qd}\nsize = \"10g\"\nruntime = \"5s\""
                ),
            );
            common::simulate(&c).1
        };
        let (one, deep) = (run(1), run(16));
        let iops = |f: &raidlab_core::Figures| f.read.as_ref().unwrap().iops;
        assert!(
            iops(&deep) >= iops(&one) * 0.9,
            "raid1 × {disks}: {:.0} IOPS at QD16, {:.0} at QD1",
            iops(&deep),
            iops(&one)
        );
        let reads: Vec<u64> = deep.disk_util[1..].iter().map(|d| d.read_ios).collect();
        let total: u64 = reads.iter().sum();
        assert!(
            reads.iter().any(|&r| r * 100 >= total * 99),
            "raid1 × {disks}: reads per member {reads:?}"
        );
    }
}

/// raid5d sends the stripes of a multi-stripe write under its block plug, and the block
/// layer merges what is contiguous on a member: a 1 MiB write to a raid6 of four (two data
/// chunks of 64 KiB a stripe: eight whole stripes) reaches each member as one command of
/// 512 KiB, not eight of 64 KiB. Small writes, each within one chunk, are not held back.
#[test]
fn a_multi_stripe_write_reaches_each_member_as_one_command() {
    let arrays =
        "level = \"raid6\"\nchunk = \"64k\"\nresync = \"assume-clean\"\nstripe_cache = 4096";
    let seq = "rw = \"write\"\nbs = \"1m\"\niodepth = 1\nsize = \"1g\"\nruntime = \"10s\"";
    let (_, _, per_write) = writes(&case(4, arrays, seq));
    assert!(
        (per_write - 4.0).abs() < 0.1,
        "{per_write:.2} member writes per 1 MiB write (eight stripes × four members unmerged: 32)"
    );
    // Sixteen in flight: raid5d handles the stripes of the writes that reach it while it
    // works under one plug, so a member's command carries more than one host write's part
    // (up to `max_sectors_kb`'s 1,280 KiB); a SATA port's 168 segments (`max_segments =
    // 168`: 672 KiB of stripe pages) take one part of 512 KiB, not two.
    let deep = seq.replace("iodepth = 1", "iodepth = 16");
    let (_, _, per_deep) = writes(&case(4, arrays, &deep));
    assert!(
        per_deep < 3.0,
        "{per_deep:.2} member writes per 1 MiB write at QD16 (one host write's: 4)"
    );
    let sata_port = common::one_case(
        "count = 4\nmodel = \"hdd-7200-500g-2010\"\n[disks.params]\nmax_segments = 168",
        &format!("write_cache = \"off\"\n{arrays}"),
        &deep,
    );
    let (_, _, per_sata) = writes(&sata_port);
    assert!(
        (per_sata - 4.0).abs() < 0.1,
        "{per_sata:.2} member writes per 1 MiB write at QD16 on a SATA port"
    );
    // A 4 KiB random write: its data and both parities, read first (3 + 3).
    let small = "rw = \"randwrite\"\nbs = \"4k\"\niodepth = 1\nsize = \"1g\"\nruntime = \"10s\"";
    let (_, _, per_small) = writes(&case(4, arrays, small));
    assert!(
        (per_small - 3.0).abs() < 0.1,
        "{per_small:.2} member writes per 4 KiB write"
    );
}

/// With the drives' write caches on, the commands raid5d's plug merged are acknowledged
/// from the cache like any other write, and the host's writes complete. (The cache's
/// acknowledgement once carried the command's tag in its wake token, with a flag in the
/// tag's top bit — the bit that marks a merged command — so every merged write was lost
/// and a raid5 or raid6 under 1 MiB writes completed none.)
#[test]
fn merged_stripe_writes_are_acknowledged_from_the_drives_cache() {
    let seq = "rw = \"write\"\nbs = \"1m\"\niodepth = 4\nsize = \"1g\"\nruntime = \"10s\"";
    for level in ["raid5", "raid6"] {
        let arrays = format!("level = \"{level}\"\nchunk = \"64k\"\nresync = \"assume-clean\"");
        let on = common::one_case(
            "count = 4\nmodel = \"hdd-7200-500g-2010\"",
            &format!("write_cache = \"on\"\n{arrays}"),
            seq,
        );
        let (cached, _, per_write) = writes(&on);
        let (uncached, _, _) = writes(&case(4, &arrays, seq));
        // Every 1 MiB write ends in whole stripes' member writes, merged: a few a write.
        assert!(
            per_write > 1.0 && per_write < 8.0,
            "{level}: {per_write:.2} member writes per 1 MiB write with the caches on"
        );
        assert!(
            cached > uncached * 0.9,
            "{level}: 1 MiB sequential writes {cached:.1} IOPS with the drives' caches on, \
             {uncached:.1} with them off"
        );
    }
}

/// A write over several chunks that finds the stripe cache short takes whole rows (md since
/// Linux 6.0 walks it row by row, each head taking the write's pages in its row from every
/// chunk), so none is left part-written to pre-read; and the heads of the rows it takes
/// later go out beside the write of the rows before them, each row being a head of its
/// own. The VM lab's guest wrote this raid6 at 90.9 MiB/s and read nothing; taken in
/// address order, the first chunk's pages first, the simulator pre-read 439 times and
/// wrote 35.5 MiB/s.
#[test]
fn a_write_short_of_stripe_heads_takes_whole_rows() {
    let c = common::one_case(
        "count = 4\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        "level = \"raid6\"\nchunk = \"64k\"\nwrite_cache = \"keep\"\nresync = \"assume-clean\"",
        "rw = \"write\"\nbs = \"1m\"\niodepth = 16\nsize = \"128m\"\nruntime = \"10s\"",
    );
    let (out, f) = common::simulate(&c);
    let doc: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
    let heads = doc["raidlab"]["stripe_cache_heads"].as_u64().unwrap();
    assert!(
        heads > 256,
        "the cache ran short (and grew: {heads} heads), so the rule was at work"
    );
    let reads: u64 = f.disk_util[1..].iter().map(|d| d.read_ios).sum();
    assert_eq!(reads, 0, "member reads: whole rows need none");
    let mib_s = f.write.unwrap().bw_bytes_s / (1 << 20) as f64;
    assert!(
        mib_s > 70.0,
        "{mib_s:.1} MiB/s (guest 90.9; 35.5 when a write's later rows waited for its first)"
    );
}

/// raid5d sends a stripe's pages a page a bio, so a member's request holds no more pages
/// than its driver's segments: on the VM lab's virtio-blk (254, the `throttle` models) a
/// 1 MiB chunk goes as 1,016 KiB and 8 KiB, as the guest's healthy raid5 of 1 MiB chunks
/// did under 1 MiB random writes (2,032- and 16-sector requests, docs/simulator.md, "The
/// layout pass"). The simulator sent one command of 1 MiB, and its IOPS ran 25 % above the
/// guest's 32.4 (40.4; now 36.0). Each member command counts against the member's 75 a
/// second, so the host writes a member command carries fall with the split.
#[test]
fn a_stripe_chunk_beyond_the_segments_goes_as_two_requests() {
    let c = common::one_case(
        "count = 4\nmodel = \"throttle-75\"\ncapacity = \"1g\"",
        "level = \"raid5\"\nchunk = \"1m\"\nwrite_cache = \"keep\"\nresync = \"assume-clean\"",
        "rw = \"randwrite\"\nbs = \"1m\"\niodepth = 4\nsize = \"128m\"\nruntime = \"5s\"",
    );
    let out = raidlab_sim::simulate_traced(&c, 1, raidlab_sim::Start::InService).expect("simulate");
    let mut sizes = std::collections::BTreeMap::<u64, u64>::new();
    for cmd in out.trace.expect("a trace") {
        *sizes.entry(cmd.len).or_default() += 1;
    }
    let largest = *sizes.keys().last().unwrap();
    assert_eq!(
        largest,
        1016 << 10,
        "the largest member command is 254 pages (sizes and counts: {sizes:?})"
    );
    let tails = sizes.get(&(8 << 10)).copied().unwrap_or(0);
    let whole = sizes[&(1016 << 10)];
    assert!(
        tails * 2 >= whole,
        "{tails} commands of 8 KiB beside {whole} of 1,016 KiB: a chunk's last two pages go on their own"
    );
}

/// raid5d is one thread and handles every stripe of the array ([`RAID5D_PAGE`] a member
/// page), so on members that cost nothing sequential writes go no faster than it: a row of
/// data per `disks` pages' time. The old engine, without raid5d's time, wrote such members
/// at memory speed (161 GB/s).
///
/// [`RAID5D_PAGE`]: raidlab_sim::engine::RAID5D_PAGE
#[test]
fn raid5d_bounds_writes_to_members_that_cost_nothing() {
    for (level, disks, bs) in [("raid5", 4, "1m"), ("raid6", 12, "10m")] {
        let c = common::one_case(
            &format!(
                "count = {disks}\nmodel = \"throttle-75\"\ncapacity = \"2g\"\n[disks.params]\niops_total = 0"
            ),
            &format!(
                "level = \"{level}\"\nchunk = \"512k\"\nwrite_cache = \"keep\"\nresync = \"assume-clean\""
            ),
            &format!("rw = \"write\"\nbs = \"{bs}\"\niodepth = 32\nsize = \"1g\"\nruntime = \"5s\""),
        );
        let (_, mb_s, _) = writes(&c);
        let data = (disks - if level == "raid5" { 1 } else { 2 }) as f64 * 4096.0;
        let row_s = disks as f64 * raidlab_sim::engine::RAID5D_PAGE.0 as f64 * 1e-9;
        let ceiling = data / row_s / 1e6;
        assert!(
            mb_s <= ceiling && mb_s > 0.8 * ceiling,
            "{level} on {disks}: {mb_s:.0} MB/s, raid5d's ceiling {ceiling:.0}"
        );
    }
}

/// qemu's `throttling.iops-size` on the VM lab's members: a request larger than it counts
/// as its size over it, so a raid0's 1 MiB writes (two 512 KiB chunks, one a member) move
/// 75 × 64 KiB a second a member rather than 75 whole requests, and 4 KiB reads still count
/// once each.
#[test]
fn iops_size_counts_a_large_request_as_its_share() {
    let raid0 = |params: &str, rw: &str, bs: &str| {
        let c = common::one_case(
            &format!("count = 2\nmodel = \"throttle-75\"\ncapacity = \"2g\"\n{params}"),
            "level = \"raid0\"\nchunk = \"512k\"\nwrite_cache = \"keep\"\nresync = \"assume-clean\"",
            &format!("rw = \"{rw}\"\nbs = \"{bs}\"\niodepth = 8\nsize = \"1g\"\nruntime = \"10s\""),
        );
        common::simulate(&c).1
    };
    let sized = "[disks.params]\niops_size = \"64k\"";
    let whole = raid0("", "write", "1m").write.unwrap().bw_bytes_s;
    let shared = raid0(sized, "write", "1m").write.unwrap().bw_bytes_s;
    // Two members at 75 requests of 512 KiB: 75 MiB/s; at 75 × 64 KiB: 9.4 MiB/s.
    let mib = |b: f64| b / 1_048_576.0;
    assert!(
        (mib(whole) - 75.0).abs() < 75.0 * 0.05,
        "{:.1} MiB/s",
        mib(whole)
    );
    assert!(
        (mib(shared) - 9.375).abs() < 9.375 * 0.05,
        "{:.2} MiB/s",
        mib(shared)
    );
    let small = raid0(sized, "randread", "4k").read.unwrap().iops;
    assert!((small - 150.0).abs() < 150.0 * 0.05, "{small:.1} IOPS");
}
