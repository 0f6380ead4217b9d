//! How long `raidlab import` takes for 10,000 fio JSON files (goal: under 5 s on a 2-core
//! machine). The files are copies of one output the installed fio writes, laid out as a
//! bench-fio tree. Run: `cargo bench -p raidlab --bench import`.

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
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let n = 10_000;
    for i in 0..n {
        let leaf = tree
            .join(format!("host{}", i / 100))
            .join("randread")
            .join("4k");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(leaf.join(format!("randread-{}-1.json", i % 100 + 1)), &json).unwrap();
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
        "import of {n} fio JSON files: {secs:.2} s ({:.0} files/s); goal 5.00 s: ratio {:.2}",
        n as f64 / secs,
        secs / 5.0
    );
}
