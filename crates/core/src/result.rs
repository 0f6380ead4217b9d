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

impl Figures {
    pub fn total_iops(&self) -> f64 {
        self.read.as_ref().map_or(0.0, |d| d.iops) + self.write.as_ref().map_or(0.0, |d| d.iops)
    }
}
