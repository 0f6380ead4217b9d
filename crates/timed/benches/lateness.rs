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
//!
//! Then how qemu's client answers when two commands are in flight (`qemu-io` on a member
//! slowed to 10 → 5 MB/s, so a 960 KiB command takes about 0.1 s): the time qemu-io
//! reports for the first of two against the same command alone. About 1 means qemu
//! answered it when the member did; about 2, that it held the answer until the second's
//! (qemu's NBD client does for writes, and for reads whose payload it finds already
//! there — small ones, or any when its thread waited for a CPU: 7.2 and 10.0 alike,
//! docs/vm-lab.md, "Rebuilding on timed members"). The version measured is printed first.

use raidlab_core::disk::DiskModel;
use raidlab_core::Scheduler;
use raidlab_timed::{Spec, TimedMember, Transport};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A member of `model` and `size` bytes, write cache off, serving on a socket in `dir`.
fn member(dir: &Path, model: DiskModel, size: u64) -> (TimedMember, PathBuf) {
    let socket = dir.join("m.sock");
    let m = TimedMember::start(&Spec {
        socket: socket.clone(),
        file: dir.join("m.img"),
        size,
        model,
        write_cache: false,
        scheduler: Scheduler::None,
        seed: 1,
        transport: Transport::Nbd,
    })
    .expect("member starts");
    (m, socket)
}

fn run(what: &str, model: &str, step: &str, count: u32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = DiskModel::preset(model).expect("preset");
    let (m, socket) = member(dir.path(), model, 2_000_000_000_000);
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

/// The seconds qemu-io reports for each `aio_*` command of `cmds`, in completion order.
fn qemu_io(cmds: &[&str]) -> Vec<f64> {
    let dir = tempfile::tempdir().expect("tempdir");
    let params = [("outer_mb_s", "10.0"), ("inner_mb_s", "5.0")]
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .into();
    let model = DiskModel::preset("hdd-7200")
        .expect("preset")
        .with_params(&params)
        .expect("hdd parameters");
    let (m, socket) = member(dir.path(), model, 4 << 30);
    let mut c = Command::new("qemu-io");
    c.args(["-t", "writeback", "--image-opts"]).arg(format!(
        "driver=nbd,server.type=unix,server.path={}",
        socket.display()
    ));
    for cmd in cmds.iter().chain(&["aio_flush"]) {
        c.args(["-c", cmd]);
    }
    let out = c.output().expect("qemu-io runs");
    m.finish();
    // "960 KiB, 1 ops; 00.21 sec (…)"
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("; ").nth(1)?.split(" sec").next()?.parse().ok())
        .collect()
}

fn held(what: &str, alone: &str, second: &str) {
    let one = qemu_io(&[alone]);
    let two = qemu_io(&[alone, second]);
    let (Some(a), Some(b)) = (one.first(), two.iter().copied().reduce(f64::min)) else {
        println!("{what:<44} qemu-io reported no times");
        return;
    };
    println!(
        "{what:<44} first answer {b:.2} s, alone {a:.2} s: ×{:.1}",
        b / a
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
    let Ok(version) = Command::new("qemu-io").arg("--version").output() else {
        println!("skipped: qemu-io is not installed (apt-get install qemu-utils)");
        return;
    };
    // "qemu-io version 7.2.… (Debian …)": the hold is the client's, so say whose.
    let version = String::from_utf8_lossy(&version.stdout);
    let first = version.lines().next();
    println!("{}", first.unwrap_or("qemu-io (version unknown)"));
    held(
        "two 960 KiB writes in flight",
        "aio_write 0 960k",
        "aio_write 960k 960k",
    );
    held(
        "two 960 KiB reads in flight",
        "aio_read 0 960k",
        "aio_read 960k 960k",
    );
}
