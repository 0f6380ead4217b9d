//! The host adapter's shared queue (`[disks] host_queue`): commands beyond it wait, so
//! levels that turn one host I/O into several member commands lose what the extra disks
//! would have given them, and levels that do not are untouched.

mod common;

use raidlab_core::Case;

fn case(level: &str, rw: &str, host_queue: Option<u32>) -> Case {
    let queue = host_queue
        .map(|n| format!("host_queue = {n}"))
        .unwrap_or_default();
    common::one_case(
        &format!("count = 6\nmodel = \"hdd-7200-500g-2010\"\n{queue}"),
        &format!("level = \"{level}\"\nwrite_cache = \"off\""),
        &format!("rw = \"{rw}\"\nbs = \"4k\"\niodepth = 4\nsize = \"10g\"\nruntime = \"30s\""),
    )
}

/// (host IOPS, member commands per second, fio's figures and disk_util as JSON)
fn run(c: &Case) -> (f64, f64, String) {
    let (out, f) = common::simulate(c);
    let d = f.read.as_ref().or(f.write.as_ref()).unwrap();
    let members: u64 = f.disk_util[1..]
        .iter()
        .map(|m| m.read_ios + m.write_ios)
        .sum();
    let v: serde_json::Value = serde_json::from_str(&out.fio_json).unwrap();
    let figures = format!("{} {}", v["jobs"][0]["write"], v["disk_util"]);
    (d.iops, members as f64 / 30.0, figures)
}

#[test]
fn a_shared_queue_caps_member_commands_not_host_queue_depth() {
    // raid0 at QD4 never has more than four commands out: a queue of four changes nothing.
    let (free, _, free_json) = run(&case("raid0", "randwrite", None));
    let (capped, _, capped_json) = run(&case("raid0", "randwrite", Some(4)));
    assert_eq!(free, capped, "raid0 QD4 under a 4-command adapter");
    assert_eq!(free_json, capped_json, "every member's figures the same");
    // raid10 writes twice per host write: eight commands want out, four get through.
    let (r10_free, r10_free_cmds, _) = run(&case("raid10", "randwrite", None));
    let (r10, r10_cmds, _) = run(&case("raid10", "randwrite", Some(4)));
    assert!(
        r10 < r10_free * 0.85,
        "raid10 randwrite {r10:.1} IOPS with host_queue = 4, {r10_free:.1} without"
    );
    // What is left is raid0's rate of member commands, halved by the mirror.
    let (_, r0_cmds, _) = run(&case("raid0", "randwrite", Some(4)));
    assert!(
        (r10_cmds - r0_cmds).abs() < r0_cmds * 0.10,
        "member commands/s: raid10 {r10_cmds:.0}, raid0 {r0_cmds:.0} behind the same adapter"
    );
    assert!(
        r10_free_cmds > r0_cmds * 1.2,
        "without the cap raid10 keeps more disks busy"
    );
}

#[test]
fn a_single_command_adapter_serialises_the_disks() {
    // One command at a time: six disks do what one does at queue depth one.
    let (one, _, _) = run(&case("raid0", "randread", Some(1)));
    let (four, _, _) = run(&case("raid0", "randread", Some(4)));
    assert!(
        one < four * 0.4,
        "raid0 randread {one:.1} IOPS through one slot, {four:.1} through four"
    );
}
