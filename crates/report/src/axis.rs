//! Chart axes by name: `raidlab report DIR --x chunk --y write_iops` plots any plan
//! dimension against any metric, and the report's own sweeps (chunk size, queue depth)
//! are the same machinery with fixed names.

use crate::row::Row;
use raidlab_core::natural;
use std::fmt;
use std::str::FromStr;

/// A plan dimension a chart can spread over its x axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dim {
    Level,
    Layout,
    Chunk,
    Bs,
    Iodepth,
    Numjobs,
    Disks,
    Rw,
    Rwmixread,
    Source,
}

impl Dim {
    pub const ALL: [Dim; 10] = [
        Dim::Level,
        Dim::Layout,
        Dim::Chunk,
        Dim::Bs,
        Dim::Iodepth,
        Dim::Numjobs,
        Dim::Disks,
        Dim::Rw,
        Dim::Rwmixread,
        Dim::Source,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Dim::Level => "level",
            Dim::Layout => "layout",
            Dim::Chunk => "chunk",
            Dim::Bs => "bs",
            Dim::Iodepth => "iodepth",
            Dim::Numjobs => "numjobs",
            Dim::Disks => "disks",
            Dim::Rw => "rw",
            Dim::Rwmixread => "rwmixread",
            Dim::Source => "source",
        }
    }

    /// The row's value on this dimension: a label and a sort key (numbers sort by
    /// value, levels in md's order, everything else by name in natural order).
    pub fn value(self, r: &Row) -> (String, f64) {
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "–".into());
        match self {
            Dim::Level => {
                let l = text(&r.level);
                let order = ["single", "raid0", "raid1", "raid10", "raid5", "raid6"];
                let k = order.iter().position(|o| *o == l).unwrap_or(order.len());
                (l, k as f64)
            }
            Dim::Layout => (text(&r.layout), 0.0),
            Dim::Chunk => match r.chunk_kib {
                Some(c) => (raidlab_core::Bytes::kib(c).to_fio(), c as f64),
                None => ("–".into(), -1.0),
            },
            Dim::Bs => (raidlab_core::Bytes(r.bs).to_fio(), r.bs as f64),
            Dim::Iodepth => (r.iodepth.to_string(), r.iodepth as f64),
            Dim::Numjobs => (r.numjobs.to_string(), r.numjobs as f64),
            Dim::Disks => match r.disks {
                Some(d) => (d.to_string(), d as f64),
                None => ("–".into(), -1.0),
            },
            // A mix names its read share (`randrw75`): mixes stay apart.
            Dim::Rw => (
                format!(
                    "{}{}",
                    r.rw,
                    r.rwmixread.map(|m| m.to_string()).unwrap_or_default()
                ),
                0.0,
            ),
            Dim::Rwmixread => match r.rwmixread {
                Some(m) => (m.to_string(), m as f64),
                None => ("–".into(), -1.0),
            },
            Dim::Source => (text(&r.source), 0.0),
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn names<T: Copy>(all: &[T], name: fn(T) -> &'static str) -> String {
    all.iter().map(|d| name(*d)).collect::<Vec<_>>().join(", ")
}

impl FromStr for Dim {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Dim::ALL
            .into_iter()
            .find(|d| d.name() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "unknown dimension `{s}`: use one of {}",
                    names(&Dim::ALL, Dim::name)
                )
            })
    }
}

/// A figure a chart can put on its y axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Iops,
    ReadIops,
    WriteIops,
    Bw,
    ReadBw,
    WriteBw,
    Lat,
    ReadLat,
    WriteLat,
    P99,
    ReadP99,
    WriteP99,
}

impl Metric {
    pub const ALL: [Metric; 12] = [
        Metric::Iops,
        Metric::ReadIops,
        Metric::WriteIops,
        Metric::Bw,
        Metric::ReadBw,
        Metric::WriteBw,
        Metric::Lat,
        Metric::ReadLat,
        Metric::WriteLat,
        Metric::P99,
        Metric::ReadP99,
        Metric::WriteP99,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Metric::Iops => "iops",
            Metric::ReadIops => "read_iops",
            Metric::WriteIops => "write_iops",
            Metric::Bw => "bw",
            Metric::ReadBw => "read_bw",
            Metric::WriteBw => "write_bw",
            Metric::Lat => "lat",
            Metric::ReadLat => "read_lat",
            Metric::WriteLat => "write_lat",
            Metric::P99 => "p99",
            Metric::ReadP99 => "read_p99",
            Metric::WriteP99 => "write_p99",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            Metric::Iops | Metric::ReadIops | Metric::WriteIops => "IOPS",
            Metric::Bw | Metric::ReadBw | Metric::WriteBw => "MiB/s",
            _ => "ms",
        }
    }

    /// The row's value. `iops`/`bw` add reads and writes; `lat` is the mean latency
    /// weighted by each direction's IOPS; `p99` the worse direction's 99th percentile.
    pub fn value(self, r: &Row) -> Option<f64> {
        let sum = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (None, None) => None,
            _ => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        match self {
            Metric::Iops => sum(r.read_iops, r.write_iops),
            Metric::ReadIops => r.read_iops,
            Metric::WriteIops => r.write_iops,
            Metric::Bw => sum(r.read_bw_mib_s, r.write_bw_mib_s),
            Metric::ReadBw => r.read_bw_mib_s,
            Metric::WriteBw => r.write_bw_mib_s,
            Metric::Lat => {
                let parts = [
                    (r.read_iops, r.read_lat_mean_ms),
                    (r.write_iops, r.write_lat_mean_ms),
                ];
                let (w, t) = parts
                    .iter()
                    .filter_map(|(i, l)| Some((i.unwrap_or(0.0), (*l)?)))
                    .fold((0.0, 0.0), |(w, t), (i, l)| (w + i, t + i * l));
                (w > 0.0).then(|| t / w)
            }
            Metric::ReadLat => r.read_lat_mean_ms,
            Metric::WriteLat => r.write_lat_mean_ms,
            Metric::P99 => match (r.read_lat_p99_ms, r.write_lat_p99_ms) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            Metric::ReadP99 => r.read_lat_p99_ms,
            Metric::WriteP99 => r.write_lat_p99_ms,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                format!(
                    "unknown metric `{s}`: use one of {}",
                    names(&Metric::ALL, Metric::name)
                )
            })
    }
}

/// One chart's data: x categories in order and one series per combination of the other
/// dimensions that vary, each value the median of the rows at that point.
pub struct Sweep {
    pub xs: Vec<String>,
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// Spread `rows` over `x`, plotting `y`. Series are named by the dimensions (and
/// target) that vary among the rows, apart from `x`.
pub fn sweep(rows: &[&Row], x: Dim, y: Metric) -> Sweep {
    let mut xs: Vec<(String, f64)> = rows.iter().map(|r| x.value(r)).collect();
    xs.sort_by(|a, b| a.1.total_cmp(&b.1).then(natural::cmp(&a.0, &b.0)));
    xs.dedup_by(|a, b| a.0 == b.0);
    let varying: Vec<Dim> = Dim::ALL
        .into_iter()
        .filter(|d| *d != x)
        // md's layout follows its level: spreading levels over x must not split them.
        .filter(|d| !(x == Dim::Level && *d == Dim::Layout))
        .filter(|d| {
            let first = rows.first().map(|r| d.value(r).0);
            rows.iter().any(|r| Some(d.value(r).0) != first)
        })
        .collect();
    let targets_vary = rows.iter().any(|r| r.target != rows[0].target);
    let key = |r: &Row| {
        let mut parts: Vec<String> = varying
            .iter()
            .map(|d| match d {
                Dim::Level | Dim::Layout | Dim::Rw | Dim::Source => d.value(r).0,
                _ => format!("{}={}", d.name(), d.value(r).0),
            })
            .collect();
        if targets_vary {
            parts.push(r.target.clone());
        }
        if parts.is_empty() {
            y.name().to_string()
        } else {
            parts.join(" ")
        }
    };
    let mut series: Vec<(String, Vec<Vec<f64>>)> = Vec::new();
    for r in rows {
        let Some(v) = y.value(r) else { continue };
        let k = key(r);
        let xi = xs
            .iter()
            .position(|p| p.0 == x.value(r).0)
            .expect("x collected");
        let idx = match series.iter().position(|s| s.0 == k) {
            Some(i) => i,
            None => {
                series.push((k, vec![Vec::new(); xs.len()]));
                series.len() - 1
            }
        };
        series[idx].1[xi].push(v);
    }
    Sweep {
        xs: xs.into_iter().map(|p| p.0).collect(),
        series: series
            .into_iter()
            .map(|(k, vs)| {
                (
                    k,
                    vs.iter().map(|v| raidlab_core::stats::median(v)).collect(),
                )
            })
            .collect(),
    }
}
