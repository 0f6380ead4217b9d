//! How fast and how punctual a timed member is: `cargo bench -p raidlab-timed`.
//!
//! qemu's own NBD client (`qemu-img bench`, from qemu-utils) keeps 16 commands in flight
//! against one member; the member answers each when its model completes it. Printed per
//! load: commands per second, and how late the answers were against the model's schedule
//! (p50 / p99 / max, µs). The VM lab needs at least 2,000 commands/s per member with a p99
//! under 200 µs for HDD models to be timed faithfully. Sequential 4 KiB reads on
//! `hdd-7200` stream at the media rate (tens of µs each), the most demanding load a
//! mechanical model gives; random ones seek (milliseconds each). `model busy` is the
//! model's media time over the wall time: near 100 % the model is the limit, well below
//! it the emulator or the client is. An `nvme` model (tens of µs per command) shows the
//! ceiling of the emulator and qemu's client together.

use raidlab_core::disk::DiskModel;
use raidlab_core::Scheduler;
use raidlab_timed::{Spec, TimedMember};
use std::process::Command;
use std::time::Instant;

fn run(what: &str, model: &str, step: &str, count: u32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("m.sock");
    let m = TimedMember::start(&Spec {
        socket: socket.clone(),
        file: dir.path().join("m.img"),
        size: 2_000_000_000_000,
        model: DiskModel::preset(model).expect("preset"),
        write_cache: false,
        scheduler: Scheduler::None,
        seed: 1,
    })
    .expect("member starts");
    let t0 = Instant::now();
    let c = count.to_string();
    let out = Command::new("qemu-img")
        .args([
            "bench", "-f", "raw", "-c", &c, "-d", "16", "-s", "4096", "-S", step,
        ])
        .arg(format!("nbd+unix:///?socket={}", socket.display()))
        .output()
        .expect("qemu-img runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secs = t0.elapsed().as_secs_f64();
    let s = m.finish();
    println!(
        "{what:<34} {:>7.0} commands/s  model busy {:>3.0} %  lateness p50 {:>4} µs  p99 {:>5} µs  max {:>6} µs",
        count as f64 / secs,
        s.busy_s / secs * 100.0,
        s.lateness_p50_us,
        s.lateness_p99_us,
        s.lateness_max_us
    );
}

fn main() {
    if Command::new("qemu-img").arg("--version").output().is_err() {
        println!("skipped: qemu-img is not installed (apt-get install qemu-utils)");
        return;
    }
    for _ in 0..3 {
        run(
            "hdd-7200, sequential 4 KiB, QD16",
            "hdd-7200",
            "4096",
            40_000,
        );
        run(
            "hdd-7200, random 4 KiB, QD16",
            "hdd-7200",
            "1999999488",
            1_500,
        );
        // Flash answers in tens of µs: what the emulator and qemu's client manage at most.
        run("nvme, sequential 4 KiB, QD16", "nvme", "4096", 40_000);
    }
}
