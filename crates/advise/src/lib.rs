//! `raidlab advise`: the answer to "which layout, on these disks, for these workloads?".
//!
//! Online RAID calculators evaluate the one layout a user types in, with a fixed write
//! penalty. This crate searches: every md layout the user could build on the disk counts
//! given ([`search`]), each simulated healthy, degraded and rebuilding under each workload
//! (the simulator's md and disk models, [`evaluate`]), with the probability of losing data
//! over the mission from the rebuild time it simulated (`raidlab-risk`). Candidates that
//! break a constraint are cut and say which; the rest are ranked by the workloads'
//! figures, with differences inside the simulator's run-to-run spread reported as ties
//! and the Pareto front of performance, capacity and risk marked ([`rank()`]). Simulated
//! figures are cached by content hash ([`cache`]), so a second run with a changed
//! constraint simulates nothing.

pub mod cache;
pub mod evaluate;
pub mod measured;
pub mod rank;
pub mod search;

pub use evaluate::{evaluate_all, Evaluation};
pub use rank::{rank, Advice, Entry, Verdict};
pub use search::{candidates, Candidate};

use raidlab_core::Bytes;
use std::path::PathBuf;

/// A workload in fio's terms, written compactly as `rw:bs:qdN[:mix]`
/// (`randrw:4k:qd16:70`: random 4 KiB, 70 % reads, queue depth 16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadSpec {
    pub rw: String,
    pub bs: String,
    pub iodepth: u32,
    /// `rwmixread` of mixed workloads.
    pub rwmixread: Option<u8>,
}

impl WorkloadSpec {
    /// The compact form back, as the user wrote it.
    pub fn label(&self) -> String {
        let mut s = format!("{}:{}:qd{}", self.rw, self.bs, self.iodepth);
        if let Some(m) = self.rwmixread {
            s.push_str(&format!(":{m}"));
        }
        s
    }
}

impl std::str::FromStr for WorkloadSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage =
            "write rw:bs:qdN[:mix], e.g. randwrite:4k:qd16, read:1m:qd32 or randrw:4k:qd16:70";
        let parts: Vec<&str> = s.split(':').map(str::trim).collect();
        if !(3..=4).contains(&parts.len()) {
            return Err(format!("{s:?}: {usage}"));
        }
        let rw = parts[0].to_string();
        let known = ["read", "write", "randread", "randwrite", "rw", "randrw"];
        if !known.contains(&rw.as_str()) {
            return Err(format!(
                "{s:?}: {rw:?} is not one of fio's rw words ({}); {usage}",
                known.join(", ")
            ));
        }
        parts[1]
            .parse::<Bytes>()
            .map_err(|e| format!("{s:?}: block size {:?}: {e}; {usage}", parts[1]))?;
        let qd = parts[2].trim_start_matches("qd");
        let iodepth: u32 = qd
            .parse()
            .ok()
            .filter(|d| (1..=4096).contains(d))
            .ok_or_else(|| {
                format!(
                    "{s:?}: queue depth {:?} must be 1 to 4096; {usage}",
                    parts[2]
                )
            })?;
        let mixed = rw == "rw" || rw == "randrw";
        let rwmixread = match parts.get(3) {
            Some(m) if mixed => {
                Some(m.parse::<u8>().ok().filter(|m| *m <= 100).ok_or_else(|| {
                    format!("{s:?}: read share {m:?} must be 0 to 100 (percent); {usage}")
                })?)
            }
            Some(m) => {
                return Err(format!(
                    "{s:?}: a read share ({m}) is for mixed workloads (rw, randrw) only"
                ))
            }
            None => None,
        };
        Ok(WorkloadSpec {
            rw,
            bs: parts[1].to_string(),
            iodepth,
            rwmixread,
        })
    }
}

/// What the layout must meet; `None` is no constraint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Constraints {
    /// Usable capacity at least this.
    pub min_usable: Option<Bytes>,
    /// Member failures survived in the worst case, at least this.
    pub min_failures: Option<u32>,
    /// A whole member's rebuild under the workload (the slowest of them), hours, at most.
    pub max_rebuild_h: Option<f64>,
    /// Probability of losing data over the mission, at most (0.01 = 1 %).
    pub max_loss: Option<f64>,
    /// Degraded performance as a share of healthy (the worst workload), at least.
    pub min_degraded: Option<f64>,
    /// Performance while a member rebuilds as a share of healthy (the worst workload), at
    /// least.
    pub min_rebuilding: Option<f64>,
}

/// Everything `advise` is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// Disk counts to consider.
    pub disks: Vec<u32>,
    /// Who may build the array: `md`, `btrfs`.
    pub engines: Vec<String>,
    /// The disk model: a preset name or a model file.
    pub disk: String,
    pub workloads: Vec<WorkloadSpec>,
    /// Chunk sizes to consider (levels with chunks).
    pub chunks: Vec<String>,
    /// md write-intent bitmaps to consider on redundant levels: `none`, `internal`.
    pub bitmaps: Vec<String>,
    /// raid5/6 stripe cache sizes to consider (`stripe_cache_size`, 4 KiB pages per member).
    pub stripe_caches: Vec<u32>,
    /// The test region and the simulated time of each case.
    pub size: String,
    pub runtime: String,
    /// The runtime of each case in the plan file of the pick (a run on real disks).
    pub plan_runtime: String,
    /// The kernel whose md rebuild governor paces a loaded rebuild.
    pub kernel: String,
    pub years: f64,
    pub constraints: Constraints,
    pub seed: u64,
    /// Where simulated figures are cached; `None`: no cache.
    pub cache: Option<PathBuf>,
}

impl Need {
    /// The defaults of the command line, for `disks` and `workloads`.
    pub fn new(disks: Vec<u32>, disk: &str, workloads: Vec<WorkloadSpec>) -> Need {
        Need {
            disks,
            engines: vec!["md".into(), "btrfs".into()],
            disk: disk.to_string(),
            workloads,
            chunks: vec!["64k".into(), "128k".into(), "512k".into()],
            bitmaps: vec!["none".into()],
            stripe_caches: vec![raidlab_core::spec::DEFAULT_STRIPE_CACHE],
            size: "100g".into(),
            runtime: "10s".into(),
            plan_runtime: "60s".into(),
            kernel: "6.16".into(),
            years: raidlab_risk::DEFAULT_YEARS,
            constraints: Constraints::default(),
            seed: 1,
            cache: None,
        }
    }
}

/// Parse `--disks`: one count (`8`), a list (`6,8,12`) or a range (`6-12`).
pub fn parse_disk_counts(s: &str) -> Result<Vec<u32>, String> {
    let bad = || {
        format!("--disks {s:?}: write a count (8), a list (6,8,12) or a range (6-12), each 2 to 64")
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        if a < 2 || b > 64 || a > b {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    #[error("{0}")]
    Plan(String),
    #[error("simulating {case}: {why}")]
    Sim { case: String, why: String },
    #[error("the advice cache {path}: {why}")]
    Cache { path: String, why: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_workloads_parse_and_bad_ones_say_what_to_write() {
        let w: WorkloadSpec = "randrw:4k:qd16:70".parse().unwrap();
        assert_eq!(
            (w.rw.as_str(), w.bs.as_str(), w.iodepth, w.rwmixread),
            ("randrw", "4k", 16, Some(70))
        );
        assert_eq!(w.label(), "randrw:4k:qd16:70");
        let w: WorkloadSpec = "read:1m:32".parse().unwrap();
        assert_eq!((w.iodepth, w.rwmixread), (32, None));
        for (bad, says) in [
            ("randread:4k", "rw:bs:qdN"),
            ("random:4k:qd4", "not one of fio's rw words"),
            ("randread:4x:qd4", "block size"),
            ("randread:4k:qd0", "1 to 4096"),
            ("randrw:4k:qd4:170", "0 to 100"),
            ("randread:4k:qd4:70", "mixed workloads"),
        ] {
            let e = bad.parse::<WorkloadSpec>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn disk_counts_are_a_count_a_list_or_a_range() {
        assert_eq!(parse_disk_counts("8").unwrap(), [8]);
        assert_eq!(parse_disk_counts("6,8, 12").unwrap(), [6, 8, 12]);
        assert_eq!(parse_disk_counts("6-8").unwrap(), [6, 7, 8]);
        for bad in ["1", "8-6", "x", "4-99"] {
            assert!(parse_disk_counts(bad).unwrap_err().contains("--disks"));
        }
    }
}
