//! Parsing fio's JSON output, in every fio 3.x shape raidlab meets:
//!
//! - text before or after the JSON (fio prints warnings on stdout: `fio: …`);
//! - several documents in a row (`--status-interval`): the last complete one wins;
//! - `jobs` (one per job, or one with `group_reporting`) and `client_stats`
//!   (`--client` mode; the "All clients" entry when present, else the sum);
//! - `global options` as an object or as an array of objects;
//! - `json+` output (latency `bins`), ignored but accepted;
//! - latencies in `*_ns` objects (fio ≥ 3.0) or in µs (`clat`, `lat`: fio 2.x).
//!
//! IOPS and bandwidth are taken as fio wrote them (summed over jobs, never recomputed), so
//! an imported result shows fio's figures to the last digit. md's `aggr_*` fields in
//! `disk_util` are fio's per-member *averages* (fio divides by the member count).

use raidlab_core::{Bytes, DirectionFigures, DiskUtil, Figures, Rw};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("no fio JSON found: the text has no JSON object with `jobs` or `client_stats` (was fio run with --output-format=json?)")]
    NoJson,
    #[error("the fio JSON has no jobs (fio may have failed before running any; check its stderr)")]
    NoJobs,
}

/// A job's identity, recovered from its options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobInfo {
    pub name: String,
    pub rw: Option<Rw>,
    pub bs: Option<Bytes>,
    pub iodepth: Option<u32>,
    pub numjobs: Option<u32>,
    /// `global options` overlaid with the job's `job options`.
    pub options: BTreeMap<String, String>,
}

/// Figures and job identities of one fio run.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedRun {
    pub figures: Figures,
    pub jobs: Vec<JobInfo>,
}

/// Every top-level JSON object in `text` that starts a line, in order.
fn documents(text: &str) -> Vec<Value> {
    let mut docs = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        if text[pos..line_end].trim_start().starts_with('{') {
            let mut stream = serde_json::Deserializer::from_str(&text[pos..]).into_iter::<Value>();
            if let Some(Ok(v)) = stream.next() {
                pos += stream.byte_offset();
                if v.is_object() {
                    docs.push(v);
                }
                continue;
            }
        }
        pos = line_end;
    }
    docs
}

/// Parse fio's output (text with one or more JSON documents).
pub fn parse_output(text: &str) -> Result<ParsedRun, ParseError> {
    let doc = documents(text)
        .into_iter()
        .rev()
        .find(|d| d.get("jobs").is_some() || d.get("client_stats").is_some())
        .ok_or(ParseError::NoJson)?;
    let jobs: Vec<&Value> = match doc.get("client_stats").and_then(Value::as_array) {
        Some(clients) if !clients.is_empty() => {
            match clients
                .iter()
                .find(|c| c.get("jobname").and_then(Value::as_str) == Some("All clients"))
            {
                Some(all) => vec![all],
                None => clients.iter().collect(),
            }
        }
        _ => doc
            .get("jobs")
            .and_then(Value::as_array)
            .map(|j| j.iter().collect())
            .unwrap_or_default(),
    };
    if jobs.is_empty() {
        return Err(ParseError::NoJobs);
    }
    let global = global_options(&doc);
    let figures = Figures {
        fio_version: doc
            .get("fio version")
            .and_then(Value::as_str)
            .map(String::from),
        read: direction(&jobs, "read"),
        write: direction(&jobs, "write"),
        disk_util: doc
            .get("disk_util")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(disk_util).collect())
            .unwrap_or_default(),
    };
    let jobs = jobs.iter().map(|j| job_info(j, &global)).collect();
    Ok(ParsedRun { figures, jobs })
}

fn global_options(doc: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut add = |m: &Map<String, Value>| {
        for (k, v) in m {
            out.insert(k.clone(), scalar(v));
        }
    };
    match doc.get("global options") {
        Some(Value::Object(m)) => add(m),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_object).for_each(add),
        _ => {}
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn job_info(job: &Value, global: &BTreeMap<String, String>) -> JobInfo {
    let mut options = global.clone();
    if let Some(m) = job.get("job options").and_then(Value::as_object) {
        for (k, v) in m {
            options.insert(k.clone(), scalar(v));
        }
    }
    let get = |k: &str| options.get(k).map(|s| s.trim().to_string());
    JobInfo {
        name: job
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        rw: get("rw")
            .or_else(|| get("readwrite"))
            .and_then(|s| s.parse().ok()),
        // "4k", "4096", or a range "4k-4k"/"4k,8k": the first value.
        bs: get("bs")
            .or_else(|| get("blocksize"))
            .and_then(|s| s.split([',', '-', ':']).next().and_then(|b| b.parse().ok())),
        iodepth: get("iodepth").and_then(|s| s.parse().ok()),
        numjobs: get("numjobs").and_then(|s| s.parse().ok()),
        options,
    }
}

fn num(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

/// A latency object in ns: `<name>_ns`, or fio 2.x's `<name>` in µs.
fn latency<'a>(d: &'a Value, name: &str) -> Option<(&'a Value, f64)> {
    d.get(format!("{name}_ns"))
        .map(|v| (v, 1.0))
        .or_else(|| d.get(name).map(|v| (v, 1000.0)))
}

fn direction(jobs: &[&Value], dir: &str) -> Option<DirectionFigures> {
    let mut f = DirectionFigures::default();
    let mut weighted = [0.0f64; 3];
    let mut busiest: Option<&Value> = None;
    for job in jobs {
        let Some(d) = job.get(dir) else { continue };
        let ios = num(d.get("total_ios")) as u64;
        f.ios += ios;
        f.bytes += num(d.get("io_bytes")) as u64;
        f.iops += num(d.get("iops"));
        f.bw_bytes_s += match d.get("bw_bytes") {
            Some(v) => num(Some(v)),
            None => num(d.get("bw")) * 1024.0,
        };
        for (i, name) in ["slat", "clat", "lat"].iter().enumerate() {
            if let Some((l, scale)) = latency(d, name) {
                weighted[i] += num(l.get("mean")) * scale * ios as f64;
            }
        }
        if busiest.is_none_or(|b| num(b.get("total_ios")) < ios as f64) {
            busiest = Some(d);
        }
    }
    if f.ios == 0 {
        return None;
    }
    let n = f.ios as f64;
    f.slat_mean_ns = weighted[0] / n;
    f.clat_mean_ns = weighted[1] / n;
    f.lat_mean_ns = weighted[2] / n;
    if let Some(d) = busiest {
        if let Some((l, scale)) = latency(d, "lat") {
            f.lat_stddev_ns = num(l.get("stddev")) * scale;
        }
        if let Some((c, scale)) = latency(d, "clat") {
            let pct = |key: &str| {
                c.get("percentile")
                    .and_then(|p| p.get(key))
                    .and_then(Value::as_f64)
                    .map(|v| v * scale)
            };
            f.clat_p50_ns = pct("50.000000");
            f.clat_p90_ns = pct("90.000000");
            f.clat_p99_ns = pct("99.000000");
            f.clat_p999_ns = pct("99.900000");
        }
    }
    Some(f)
}

fn disk_util(d: &Value) -> DiskUtil {
    let u = |k: &str| d.get(k).and_then(Value::as_u64).unwrap_or(0);
    DiskUtil {
        name: d
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        read_ios: u("read_ios"),
        write_ios: u("write_ios"),
        read_merges: u("read_merges"),
        write_merges: u("write_merges"),
        read_ticks_ms: u("read_ticks"),
        write_ticks_ms: u("write_ticks"),
        in_queue_ms: u("in_queue"),
        util: num(d.get("util")),
        aggr_read_ios: d.get("aggr_read_ios").and_then(Value::as_u64),
        aggr_write_ios: d.get("aggr_write_ios").and_then(Value::as_u64),
        aggr_util: d.get("aggr_util").and_then(Value::as_f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn any_text_is_parsed_or_refused(s in ".{0,300}") {
            let _ = parse_output(&s);
        }

        #[test]
        fn any_json_shape_is_parsed_or_refused(s in "[{}\\[\\]\":,a-z0-9 \n]{0,200}") {
            let _ = parse_output(&s);
        }
    }
}
