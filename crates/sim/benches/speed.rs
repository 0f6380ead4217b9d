//! Simulated host I/Os per wall-clock second on one core, for the two configurations the
//! simulator issue names. Goal: ≥ 2 million per second each. Run: `cargo bench -p raidlab-sim`.

use raidlab_core::Plan;
use std::path::Path;
use std::time::Instant;

fn case(text: &str) -> raidlab_core::Case {
    Plan::parse(text, Path::new("bench.toml")).unwrap().cases()[0].clone()
}

fn main() {
    let configs = [
        (
            "raid5, 6 × hdd-7200, 4 KiB randwrite QD4",
            "name = \"a\"\n[disks]\ncount = 6\nmodel = \"hdd-7200\"\n[arrays]\nlevel = \"raid5\"\nwrite_cache = \"off\"\n[workloads]\nrw = \"randwrite\"\niodepth = 4\nsize = \"100g\"\nruntime = \"20m\"\n",
        ),
        (
            "raid0, 8 × nvme, 4 KiB randread QD128",
            "name = \"b\"\n[disks]\ncount = 8\nmodel = \"nvme\"\n[arrays]\nlevel = \"raid0\"\n[workloads]\nrw = \"randread\"\niodepth = 128\nsize = \"100g\"\nruntime = \"10s\"\n",
        ),
    ];
    for (name, text) in configs {
        let c = case(text);
        let t = Instant::now();
        let out = raidlab_sim::simulate(&c, 1).unwrap();
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{name}: {} host I/Os in {secs:.2} s = {:.2} million host I/Os per second ({:.2} million events/s); goal 2.00: ratio {:.2}",
            out.host_ios,
            out.host_ios as f64 / secs / 1e6,
            out.events as f64 / secs / 1e6,
            out.host_ios as f64 / secs / 2e6
        );
    }
}
