//! Timed members under qemu's own NBD client (`qemu-io`, `qemu-img bench` from
//! qemu-utils): the client the VM lab's qemu uses.

use raidlab_core::disk::DiskModel;
use raidlab_core::Scheduler;
use raidlab_timed::{MemberStats, Spec, TimedMember, Transport};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn have_qemu_utils() -> bool {
    raidlab_testkit::require(raidlab_testkit::runs("qemu-img", &["--version"]), || {
        "qemu-img is not installed (apt-get install qemu-utils)".into()
    })
}

fn member(dir: &Path, size: u64, model: &str, write_cache: bool) -> (TimedMember, String) {
    let socket = dir.join("m.sock");
    let m = TimedMember::start(&Spec {
        socket: socket.clone(),
        file: dir.join("m.img"),
        size,
        model: DiskModel::preset(model).expect("preset"),
        write_cache,
        scheduler: Scheduler::None,
        seed: 7,
        transport: Transport::Nbd,
    })
    .expect("the member starts");
    (m, format!("nbd+unix:///?socket={}", socket.display()))
}

fn qemu(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().expect("runs");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{program} {args:?}: {text}");
    text
}

#[test]
fn qemu_reads_back_what_it_wrote_and_every_command_is_counted() {
    if !have_qemu_utils() {
        return;
    }
    for write_cache in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let size = 1u64 << 30;
        let (m, url) = member(dir.path(), size, "hdd-7200", write_cache);
        let last = (size - 4096).to_string();
        let out = qemu(
            "qemu-io",
            &[
                // Write back: qemu-io's default writes through, as forced-unit-access
                // writes that no drive takes into its cache (`write_through_is_fua…`).
                "-t",
                "writeback",
                "-f",
                "raw",
                "-c",
                "write -P 0xab 0 64k",
                "-c",
                &format!("write -P 0x5c {last} 4k"),
                "-c",
                "flush",
                "-c",
                "read -P 0xab 0 64k",
                "-c",
                &format!("read -P 0x5c {last} 4k"),
                "-c",
                "read -P 0 1M 4k",
                &url,
            ],
        );
        assert!(!out.contains("Pattern verification failed"), "{out}");
        let s: MemberStats = m.finish();
        assert_eq!((s.reads, s.writes), (3, 2), "{s:?}");
        assert_eq!(s.read_bytes, 64 * 1024 + 2 * 4096);
        assert!(s.flushes >= 1, "{s:?}");
        // Both writes go to the cache when it is on, none when it is off.
        assert_eq!(s.cache_hits, if write_cache { 2 } else { 0 }, "{s:?}");
        // The data is in the file, sparse: only what was written takes space.
        let f = std::fs::metadata(dir.path().join("m.img")).unwrap();
        assert_eq!(f.len(), size);
        use std::os::unix::fs::MetadataExt;
        assert!(
            f.blocks() * 512 < 1 << 20,
            "{} bytes allocated",
            f.blocks() * 512
        );
    }
}

/// Reads `count` × 4 KiB at `depth` outstanding, each 1.9 GB past the last, on a 2 TB
/// member: what the member did, and the wall time.
fn bench(depth: u32, count: u32) -> (MemberStats, f64) {
    let dir = tempfile::tempdir().unwrap();
    let (m, url) = member(dir.path(), 2_000_000_000_000, "hdd-7200", false);
    let t0 = Instant::now();
    let (c, d) = (count.to_string(), depth.to_string());
    qemu(
        "qemu-img",
        &[
            "bench",
            "-f",
            "raw",
            "-c",
            &c,
            "-d",
            &d,
            "-s",
            "4096",
            "-S",
            "1999999488",
            &url,
        ],
    );
    let wall = t0.elapsed().as_secs_f64();
    (m.finish(), wall)
}

/// The answers wait for the model: one command at a time, the wall time holds all the
/// model's media time; with 16 outstanding the model reorders (less media time per
/// command) and holds all 16 that qemu's client sends.
#[test]
fn answers_come_when_the_model_completes_them() {
    if !have_qemu_utils() {
        return;
    }
    let _machine = raidlab_testkit::shared();
    let (one, wall) = bench(1, 200);
    assert_eq!(one.reads, 200);
    assert_eq!(one.max_outstanding, 1);
    // Each read lands 1.9 GB past the last: every one is positioned for.
    assert!(one.seeks >= 199, "{one:?}");
    assert!(
        one.mean_outstanding > 0.5 && one.mean_outstanding <= 1.0,
        "{one:?}"
    );
    assert!(
        wall >= one.busy_s,
        "200 reads took {wall} s, the model's media time {} s",
        one.busy_s
    );
    let per = one.busy_s / 200.0 * 1e3;
    assert!(
        (2.0..20.0).contains(&per),
        "{per} ms per random read on hdd-7200"
    );
    let (deep, _) = bench(16, 400);
    assert_eq!(deep.max_outstanding, 16);
    assert!(
        deep.mean_outstanding > 8.0 && deep.mean_outstanding <= 16.0,
        "{deep:?}"
    );
    let per_deep = deep.busy_s / 400.0 * 1e3;
    assert!(
        per_deep < per * 0.9,
        "QD16 {per_deep} ms per read, QD1 {per} ms"
    );
}
