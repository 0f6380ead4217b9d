//! `cargo bench -p raidlab-advise`: the advice over at least 300 candidates
//! (levels × layouts × chunks × 3 disk counts × states) on this machine, cold (every case
//! simulated, on every core) and warm (a second run with a changed constraint, from the
//! cache). Goals: under 60 s cold, under 2 s warm. Prints the times and their ratio.

use raidlab_advise::{candidates, evaluate_all, rank, Need, WorkloadSpec};
use std::time::Instant;

fn main() {
    let workloads: Vec<WorkloadSpec> = ["randrw:4k:qd16:70", "read:1m:qd32"]
        .iter()
        .map(|w| w.parse().unwrap())
        .collect();
    let cache = tempfile::tempdir().unwrap();
    let mut need = Need::new(vec![6, 8, 12], "hdd-7200-16t-2019", workloads);
    need.cache = Some(cache.path().to_path_buf());
    let cands = candidates(&need);
    let states: usize = cands
        .iter()
        .map(|c| if c.redundant() { 3 } else { 1 })
        .sum();
    let none = |_: usize, _: usize| {};
    let t = Instant::now();
    need.constraints.min_failures = Some(2);
    let advice = rank(&need, evaluate_all(&need, &cands, &none).unwrap());
    let cold = t.elapsed().as_secs_f64();
    let t = Instant::now();
    need.constraints.min_usable = Some("80t".parse().unwrap());
    let again = rank(&need, evaluate_all(&need, &cands, &none).unwrap());
    let warm = t.elapsed().as_secs_f64();
    println!(
        "advise: {} layouts, {states} candidate states, {} workloads, {} cores",
        cands.len(),
        need.workloads.len(),
        rayon::current_num_threads()
    );
    println!(
        "cold {cold:.2} s (goal < 60 s), warm {warm:.3} s (goal < 2 s), cold/warm {:.0}x",
        cold / warm
    );
    println!(
        "kept {} then {} (--min-usable 80t added)",
        advice.kept().count(),
        again.kept().count()
    );
}
