//! Overhead of the host target: a btrfs-on-loop plan of 8 cases × 10 s, run for real;
//! prints wall time ÷ the sum of fio runtime + ramp (goal ≤ 1.15; the per-disk baseline
//! is excluded with --baseline 0). Needs root and loop devices; otherwise it says why and
//! exits.
//!
//! cargo bench -p raidlab --bench host_overhead

use std::process::Command;
use std::time::Instant;

fn sh(cmd: &str) -> std::process::Output {
    Command::new("sh").args(["-c", cmd]).output().unwrap()
}

struct Loops(Vec<String>);

impl Drop for Loops {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = sh(&format!("wipefs -a -q {d}; losetup -d {d}"));
        }
    }
}

fn main() {
    if !sh("id -u").stdout.starts_with(b"0") || !std::path::Path::new("/dev/loop-control").exists()
    {
        println!("host_overhead: skipped (needs root and loop devices)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut loops = Loops(Vec::new());
    for i in 0..4 {
        let f = dir.path().join(format!("disk{i}.img"));
        std::fs::File::create(&f).unwrap().set_len(2 << 30).unwrap();
        let o = sh(&format!("losetup --find --show {}", f.display()));
        loops
            .0
            .push(String::from_utf8(o.stdout).unwrap().trim().to_string());
    }
    let list: Vec<String> = loops.0.iter().map(|d| format!("\"{d}\"")).collect();
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"overhead\"\n[disks]\ndevices = [{}]\n[arrays]\nengine = \"btrfs\"\nlevel = [\"raid0\", \"raid1\", \"raid10\", \"raid5\"]\nwrite_cache = \"off\"\n[workloads]\nrw = [\"randread\", \"randwrite\"]\nsize = \"256m\"\nruntime = \"10s\"\niodepth = 16\n",
            list.join(", ")
        ),
    )
    .unwrap();
    let fio_secs = 8.0 * 10.0;
    let t0 = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args([
            "run",
            plan.to_str().unwrap(),
            "--target",
            "host",
            "--quiet",
            "--baseline",
            "0",
            "--out",
        ])
        .arg(dir.path().join("results"))
        .env("RAIDLAB_STATE_DIR", dir.path().join("state"))
        .output()
        .unwrap();
    let wall = t0.elapsed().as_secs_f64();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    println!(
        "host_overhead: 8 cases × 10 s btrfs on 4 loop devices: wall {wall:.1} s / fio {fio_secs:.0} s = {:.3} (goal ≤ 1.15)",
        wall / fio_secs
    );
}
