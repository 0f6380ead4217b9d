//! The workload: one fio job shape (rw, bs, iodepth, numjobs, size, runtime …).
//!
//! fio is the I/O engine on the real targets and the simulator imitates its semantics, so
//! the fields and their meanings are fio's own; the fio crate renders them into a job file.

use crate::spec::words;
use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The figure a workload is judged by, everywhere: the report's summary and charts, and
/// the model's deviation. Bandwidth for blocks of 128 KiB and more (what a streaming or
/// large-block user watches), IOPS below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Headline {
    Iops,
    Bandwidth,
}

impl Headline {
    /// The smallest block size judged by bandwidth.
    pub const BANDWIDTH_FROM: Bytes = Bytes(128 * 1024);

    /// The headline of a workload with blocks of `bs`.
    pub fn of(bs: Bytes) -> Headline {
        if bs >= Headline::BANDWIDTH_FROM {
            Headline::Bandwidth
        } else {
            Headline::Iops
        }
    }
}

/// fio's `rw=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// Mixed random; the share of reads is the workload's `rwmixread`.
    RandRw,
    /// Mixed sequential.
    Rw,
}

impl Rw {
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// Fraction of I/Os that are reads, given fio's `rwmixread`.
    pub fn read_fraction(self, rwmixread: u8) -> f64 {
        match self {
            Rw::Read | Rw::RandRead => 1.0,
            Rw::Write | Rw::RandWrite => 0.0,
            Rw::RandRw | Rw::Rw => rwmixread as f64 / 100.0,
        }
    }
    pub fn reads(self) -> bool {
        !matches!(self, Rw::Write | Rw::RandWrite)
    }
    pub fn writes(self) -> bool {
        !matches!(self, Rw::Read | Rw::RandRead)
    }
    /// fio's `rw=` word (the plan's word too).
    pub fn fio_name(self) -> &'static str {
        self.word()
    }
}

words!(Rw, "use read, write, randread, randwrite, randrw or rw", {
    Rw::Read => "read" | "seqread",
    Rw::Write => "write" | "seqwrite",
    Rw::RandRead => "randread",
    Rw::RandWrite => "randwrite",
    Rw::RandRw => "randrw",
    Rw::Rw => "rw" | "readwrite",
});

/// One fio job shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Workload {
    pub rw: Rw,
    pub bs: Bytes,
    /// Outstanding I/Os per job.
    pub iodepth: u32,
    pub numjobs: u32,
    /// Size of the test file (or region of the raw array).
    pub size: Bytes,
    /// Where the region starts on the array.
    pub offset: Bytes,
    pub runtime: Nanos,
    /// Time run before measuring starts (fio's `ramp_time`).
    pub ramp: Nanos,
    /// Percentage of reads for mixed workloads.
    pub rwmixread: u8,
    /// fio's `ioengine` on real targets (libaio, io_uring, …).
    pub ioengine: String,
    /// O_DIRECT: bypass the page cache (the seeds did).
    pub direct: bool,
    /// Buffer options and fio options passed through (`[workloads.fio]`); left out of the
    /// case's identity when at their defaults, so plans without them keep their case ids.
    #[serde(default, skip_serializing_if = "FioOptions::is_default")]
    pub fio: FioOptions,
}

/// What a plan adds to the fio job beyond raidlab's own fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct FioOptions {
    /// fio's `refill_buffers`: fresh data for every write, so no layer can compress or
    /// deduplicate it (on by default). Off saves the CPU it costs on fast devices.
    pub refill_buffers: bool,
    /// fio's `buffer_pattern` (`"0xdeadbeef"`, `"'text'"`): what every write contains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_pattern: Option<String>,
    /// `[workloads.fio]`: fio options written verbatim after raidlab's own, in name order.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, String>,
    /// `[run] precondition`: sequential write passes over the test region before the
    /// measured run (fio's `loops` on the layout pass); 0 for none.
    #[serde(skip_serializing_if = "is_zero")]
    pub precondition: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Default for FioOptions {
    fn default() -> Self {
        FioOptions {
            refill_buffers: true,
            buffer_pattern: None,
            extra: BTreeMap::new(),
            precondition: 0,
        }
    }
}

impl FioOptions {
    pub fn is_default(&self) -> bool {
        *self == FioOptions::default()
    }
}

impl Workload {
    /// fio's `rate_iops` from `[workloads.fio]`: the I/Os per second each job may issue,
    /// for a workload of one direction (fio reads `N` as every direction's cap, `R,W` as
    /// the reads' and the writes', an empty value or 0 as none). `None` without it, for a
    /// mix of reads and writes, or for a value [`rate_iops_caps`] refuses (the plan does).
    pub fn rate_iops(&self) -> Option<u32> {
        let caps = rate_iops_caps(self.fio.extra.get("rate_iops")?).ok()?;
        match self.rw {
            Rw::Read | Rw::RandRead => caps[0],
            Rw::Write | Rw::RandWrite => caps[1],
            _ => None,
        }
    }

    /// Short label such as `randwrite 4k qd4×1`.
    pub fn label(&self) -> String {
        format!(
            "{} {} qd{}×{}",
            self.rw,
            self.bs.to_fio(),
            self.iodepth,
            self.numjobs
        )
    }
}

/// fio's `rate_iops` as fio reads it: one cap for every direction, or up to three
/// comma-separated (reads, writes, trims), each a whole number with an optional `k`, `m`
/// or `g` (×1024, as fio multiplies), empty or 0 for no cap. Returns the reads' and
/// the writes' caps; what fio would read some other way (`1.5k` is 1 to fio) or refuse
/// is an error saying why.
pub fn rate_iops_caps(value: &str) -> Result<[Option<u32>; 2], String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err("at most three caps: reads, writes, trims".into());
    }
    let mut caps = [None; 3];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() {
            continue;
        }
        let (digits, mult) = match p.as_bytes()[p.len() - 1].to_ascii_lowercase() {
            b'k' => (&p[..p.len() - 1], 1u64 << 10),
            b'm' => (&p[..p.len() - 1], 1 << 20),
            b'g' => (&p[..p.len() - 1], 1 << 30),
            _ => (*p, 1),
        };
        let n = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
            .and_then(|n| n.checked_mul(mult))
            .ok_or_else(|| {
                format!("`{p}` is not a whole number of I/Os per second (e.g. 100 or 2k)")
            })?;
        caps[i] = (n > 0).then(|| u32::try_from(n).unwrap_or(u32::MAX));
    }
    // One cap is every direction's; with more, each its own.
    let writes = if parts.len() > 1 { caps[1] } else { caps[0] };
    Ok([caps[0], writes])
}
