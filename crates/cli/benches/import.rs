//! How long `raidlab import` takes (goal: under 5 s on a 2-core machine) for two trees of
//! copies of one output the installed fio writes, laid out as bench-fio lays them out:
//! 10,000 JSON files; and 3,500 JSON files with 30 per-job logs each (105,000 logs of 60
//! one-second lines: the size of fio-plot's own `benchmark_data`, 3,450 JSON and
//! 106,692 logs). Run: `cargo bench -p raidlab --bench import`.

use std::process::Command;
use std::time::Instant;

fn main() {
    let fio = Command::new("fio")
        .args([
            "--name=b",
            "--ioengine=null",
            "--size=16m",
            "--bs=4k",
            "--rw=randread",
            "--runtime=1",
            "--time_based",
            "--output-format=json",
        ])
        .output()
        .expect("fio is needed for this benchmark: apt-get install fio");
    let json = fio.stdout;
    let log: String = (1..=60)
        .map(|s| format!("{}, {}, 0, 4096, 0\n", s * 1000, 1000 + s))
        .collect();
    time("10,000 fio JSON files", 10_000, 0, &json, &log);
    time(
        "3,500 fio JSON files with 105,000 logs",
        3_500,
        30,
        &json,
        &log,
    );
}

/// Lay out `n` copies of `json`, each with `logs` per-job logs, then time the import.
fn time(what: &str, n: usize, logs: usize, json: &[u8], log: &str) {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    for i in 0..n {
        let leaf = tree
            .join(format!("host{}", i / 100))
            .join("randread")
            .join("4k");
        std::fs::create_dir_all(&leaf).unwrap();
        let qd = i % 100 + 1;
        std::fs::write(leaf.join(format!("randread-{qd}-1.json")), json).unwrap();
        let kinds = ["iops", "lat", "clat", "slat", "bw"];
        for j in 0..logs {
            let name = format!(
                "randread-iodepth-{qd}-numjobs-1_{}.{}.log",
                kinds[j % kinds.len()],
                j / kinds.len() + 1
            );
            std::fs::write(leaf.join(name), log).unwrap();
        }
    }
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args([
            "import",
            tree.to_str().unwrap(),
            "--out",
            dir.path().join("store").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "import of {what}: {secs:.2} s ({:.0} JSON files/s); goal 5.00 s: ratio {:.2}",
        n as f64 / secs,
        secs / 5.0
    );
}
