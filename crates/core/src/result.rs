//! Parsed figures of one result: what the fio parser extracts from fio's JSON and what
//! the store, exports and report read.
//!
//! Every target produces fio-format JSON; this is the common reduced form of it, so the
//! rest of raidlab never asks where a result came from. Latencies are nanoseconds
//! (fio's own unit in `clat_ns`/`lat_ns`), bandwidth bytes per second.

use serde::{Deserialize, Serialize};

/// One direction's figures (reads, or writes), summed over jobs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionFigures {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    /// Bytes per second.
    pub bw_bytes_s: f64,
    /// Submission latency (ns).
    pub slat_mean_ns: f64,
    /// Completion latency (ns).
    pub clat_mean_ns: f64,
    /// Total latency = slat + clat (ns), mean and standard deviation.
    pub lat_mean_ns: f64,
    pub lat_stddev_ns: f64,
    /// Completion-latency percentiles (ns) as fio reports them.
    pub clat_p50_ns: Option<f64>,
    pub clat_p90_ns: Option<f64>,
    pub clat_p99_ns: Option<f64>,
    pub clat_p999_ns: Option<f64>,
    pub clat_p95_ns: Option<f64>,
    pub clat_p9999_ns: Option<f64>,
    /// The slowest completion (ns).
    pub clat_max_ns: Option<f64>,
    /// Every (percentile, ns) pair fio wrote, in percentile order: what the report's
    /// percentile chart draws. Empty for results stored before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clat_percentiles: Vec<(f64, f64)>,
    /// fio's latency histogram (json+ output's `clat_ns.bins`) folded into power-of-two
    /// buckets: (upper bound ns, completions), ascending; empty when fio wrote no bins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clat_histogram: Vec<(f64, u64)>,
}

/// fio's `disk_util` entry for one device; md devices add the `aggr_*` fields that sum
/// their members.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks_ms: u64,
    pub write_ticks_ms: u64,
    pub in_queue_ms: u64,
    /// Percent busy.
    pub util: f64,
    pub aggr_read_ios: Option<u64>,
    pub aggr_write_ios: Option<u64>,
    pub aggr_util: Option<f64>,
}

/// The figures of one fio run (all jobs, or "All clients").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub fio_version: Option<String>,
    pub read: Option<DirectionFigures>,
    pub write: Option<DirectionFigures>,
    pub disk_util: Vec<DiskUtil>,
}

/// Latencies beyond a day are no measurement (fio's runs are minutes to hours).
const MAX_LATENCY_NS: f64 = 86_400e9;
/// Beyond any device (a billion I/Os per second).
const MAX_IOPS: f64 = 1e9;
/// Beyond any device (a petabyte per second).
const MAX_BW_BYTES_S: f64 = 1e15;

impl DirectionFigures {
    /// The first figure that no device could have produced (negative, not a number,
    /// infinite, or beyond any device), named.
    pub fn impossible(&self) -> Option<String> {
        let latencies = [
            ("slat mean", Some(self.slat_mean_ns)),
            ("clat mean", Some(self.clat_mean_ns)),
            ("lat mean", Some(self.lat_mean_ns)),
            ("lat stddev", Some(self.lat_stddev_ns)),
            ("clat p50", self.clat_p50_ns),
            ("clat p90", self.clat_p90_ns),
            ("clat p99", self.clat_p99_ns),
            ("clat p99.9", self.clat_p999_ns),
            ("clat p95", self.clat_p95_ns),
            ("clat p99.99", self.clat_p9999_ns),
            ("clat max", self.clat_max_ns),
        ];
        let checks = [
            ("iops", Some(self.iops), MAX_IOPS),
            ("bw", Some(self.bw_bytes_s), MAX_BW_BYTES_S),
        ]
        .into_iter()
        .chain(latencies.into_iter().map(|(n, v)| (n, v, MAX_LATENCY_NS)));
        for (name, value, max) in checks {
            if let Some(v) = value {
                if !(v.is_finite() && (0.0..=max).contains(&v)) {
                    return Some(format!("{name} = {v:e} (possible: 0 to {max:e})"));
                }
            }
        }
        None
    }
}

impl Figures {
    /// The first impossible figure of either direction, named (see
    /// [`DirectionFigures::impossible`]).
    pub fn impossible(&self) -> Option<String> {
        [("read", &self.read), ("write", &self.write)]
            .into_iter()
            .find_map(|(dir, d)| Some(format!("{dir} {}", d.as_ref()?.impossible()?)))
    }

    pub fn total_iops(&self) -> f64 {
        self.read.as_ref().map_or(0.0, |d| d.iops) + self.write.as_ref().map_or(0.0, |d| d.iops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_figures_are_named_and_real_ones_pass() {
        let real = DirectionFigures {
            iops: 450.0,
            bw_bytes_s: 1.8e6,
            lat_mean_ns: 8.9e6,
            clat_p99_ns: Some(2.5e7),
            ..Default::default()
        };
        let mut f = Figures {
            read: Some(real.clone()),
            ..Default::default()
        };
        assert_eq!(f.impossible(), None);
        for (bad, word) in [
            (
                DirectionFigures {
                    iops: -3.0,
                    ..real.clone()
                },
                "read iops = -3",
            ),
            (
                DirectionFigures {
                    lat_mean_ns: 1e308,
                    ..real.clone()
                },
                "read lat mean = 1e308",
            ),
            (
                DirectionFigures {
                    bw_bytes_s: f64::NAN,
                    ..real.clone()
                },
                "read bw = NaN",
            ),
            (
                DirectionFigures {
                    clat_p99_ns: Some(f64::INFINITY),
                    ..real.clone()
                },
                "read clat p99 = inf",
            ),
        ] {
            f.read = Some(bad);
            assert!(
                f.impossible().is_some_and(|m| m.starts_with(word)),
                "{:?}",
                f.impossible()
            );
        }
    }
}
