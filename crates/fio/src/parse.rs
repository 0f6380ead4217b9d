//! Parsing fio's JSON output into raidlab's [`Figures`], in every shape raidlab meets.
//!
//! Every target (host, vm, simulator, imported trees) ends in fio-format JSON, so this is
//! the one place that knows fio's output quirks; the rest of raidlab reads `Figures`.
//! Accepted:
//!
//! - text before or after the JSON (fio prints warnings on stdout, `fio: …`; `--client`
//!   mode prefixes the servers' text lines with `<host>`);
//! - several documents in a row (`--status-interval`): the last complete one wins;
//! - `jobs` (one per job, or one with `group_reporting`) and `client_stats`
//!   (`--client` mode; the "All clients" entry when present, else the sum);
//! - `global options` as an object or as an array of objects; duplicate keys (fio repeats
//!   `global options` per client, and `filename` per file): the last one wins;
//! - `json+` output (latency `bins`), ignored but accepted;
//! - latencies in `*_ns` objects (fio ≥ 3.0) or in µs (`clat`, `lat`: fio 2.x, where
//!   `io_bytes` is also KiB and `bw` KiB/s);
//! - `nan`/`inf` values: fio prints floats with `printf("%f")`, so a NaN comes out as the
//!   invalid JSON token `nan`/`-nan`; such values are read as `null`.
//!
//! IOPS and bandwidth are taken as fio wrote them (summed over jobs, never recomputed), so
//! an imported result shows fio's figures to the last digit. md's `aggr_*` fields in
//! `disk_util` are fio's per-member *averages* (fio divides by the member count).

use raidlab_core::{Bytes, DirectionFigures, DiskUtil, Figures, Rw};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Why fio's output could not be read; each message says what to do about it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("no fio JSON found: the text has no JSON object with `jobs` or `client_stats` (run fio with --output-format=json, and give raidlab fio's stdout or its --output file)")]
    NoJson,
    #[error("the fio JSON is cut off before its end (fio was killed, or its output file was copied while fio was still writing); rerun fio and wait for it to finish")]
    Truncated,
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
    /// When fio finished, as it wrote it (`timestamp`, Unix seconds).
    pub timestamp: Option<i64>,
}

/// fio's JSON printer puts every value on its own line (`"key" : value` or, in arrays,
/// `value` alone after the indentation). A `nan`, `-nan`, `inf` or `-inf` value there is
/// not JSON; rewrite it to `null`. Borrowed when there is nothing to rewrite.
fn sanitize(text: &str) -> Cow<'_, str> {
    fn is_non_finite(v: &str) -> bool {
        let v = v.trim_start_matches(['-', '+']).to_ascii_lowercase();
        matches!(v.as_str(), "nan" | "inf" | "infinity")
    }
    fn fix(line: &str) -> Option<String> {
        let body = line.trim_end_matches(['\n', '\r']);
        let (head, value) = match body.rfind(" : ") {
            Some(i) => body.split_at(i + 3),
            None => body.split_at(body.len() - body.trim_start().len()),
        };
        let trimmed = value.trim_end();
        let (bare, comma) = match trimmed.strip_suffix(',') {
            Some(b) => (b.trim_end(), ","),
            None => (trimmed, ""),
        };
        is_non_finite(bare).then(|| format!("{head}null{comma}{}", &line[body.len()..]))
    }
    if !text.contains("nan") && !text.contains("inf") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    for line in text.split_inclusive('\n') {
        match fix(line) {
            Some(fixed) => {
                changed = true;
                out.push_str(&fixed);
            }
            None => out.push_str(line),
        }
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    }
}

/// The JSON objects in `text` that start a line, in order, and whether a document that
/// starts at the beginning of a line runs into the end of the text unclosed.
fn documents(text: &str) -> (Vec<Value>, bool) {
    let mut docs = Vec::new();
    let mut truncated = false;
    let mut pos = 0;
    while pos < text.len() {
        let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let line = &text[pos..line_end];
        if line.trim_start().starts_with('{') {
            let mut stream = serde_json::Deserializer::from_str(&text[pos..]).into_iter::<Value>();
            match stream.next() {
                Some(Ok(v)) => {
                    // Past the document, which may end mid-line ("}{" between documents).
                    pos += stream.byte_offset().max(1);
                    if v.is_object() {
                        docs.push(v);
                    }
                    continue;
                }
                Some(Err(e)) if e.is_eof() && line.starts_with('{') => truncated = true,
                _ => {}
            }
        }
        pos = line_end;
    }
    (docs, truncated)
}

/// Every JSON document in fio's output, in order (what fio printed around them dropped).
pub(crate) fn documents_of(text: &str) -> Vec<Value> {
    documents(&sanitize(text)).0
}

/// Parse fio's output (text with one or more JSON documents, possibly among other lines).
pub fn parse_output(text: &str) -> Result<ParsedRun, ParseError> {
    let text = sanitize(text);
    let (docs, truncated) = documents(&text);
    let Some(doc) = docs
        .into_iter()
        .rev()
        .find(|d| d.get("jobs").is_some() || d.get("client_stats").is_some())
    else {
        return Err(if truncated {
            ParseError::Truncated
        } else {
            ParseError::NoJson
        });
    };
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
    let jobs: Vec<&Value> = jobs.into_iter().filter(|j| j.is_object()).collect();
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
            .map(|a| a.iter().filter(|d| d.is_object()).map(disk_util).collect())
            .unwrap_or_default(),
    };
    let jobs = jobs.iter().map(|j| job_info(j, &global)).collect();
    let timestamp = doc.get("timestamp").and_then(Value::as_i64);
    Ok(ParsedRun {
        figures,
        jobs,
        timestamp,
    })
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
        // "randread", or "randread:8" (fio's offset modifier).
        rw: get("rw")
            .or_else(|| get("readwrite"))
            .and_then(|s| s.split(':').next().and_then(|r| r.trim().parse().ok())),
        // "4k", "4096", or a range "4k-4k" / per-direction "4k,8k": the first value.
        bs: get("bs")
            .or_else(|| get("blocksize"))
            .and_then(|s| s.split([',', '-', ':']).next().and_then(|b| b.parse().ok())),
        iodepth: get("iodepth").and_then(|s| s.parse().ok()),
        numjobs: get("numjobs").and_then(|s| s.parse().ok()),
        options,
    }
}

/// A finite number, or 0 (absent, `null`, a string, or a non-finite value).
fn num(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64)
        .filter(|x| x.is_finite())
        .unwrap_or(0.0)
}

/// A latency object in ns: `<name>_ns`, or fio 2.x's `<name>` in µs (with its scale).
fn latency<'a>(d: &'a Value, name: &str) -> Option<(&'a Value, f64)> {
    d.get(format!("{name}_ns"))
        .map(|v| (v, 1.0))
        .or_else(|| d.get(name).map(|v| (v, 1000.0)))
        .filter(|(v, _)| v.is_object())
}

/// fio ≥ 3.0 writes `io_bytes` in bytes next to `io_kbytes`/`bw_bytes`; fio 2.x wrote
/// `io_bytes` in KiB and only `bw` (KiB/s).
fn is_fio3(d: &Value) -> bool {
    d.get("bw_bytes").is_some() || d.get("io_kbytes").is_some()
}

/// The I/O count of one direction of one job: `total_ios`, or for fio versions that did
/// not write it (early 2.x), `iops × runtime` (fio's own iops is `total_ios / runtime`).
fn ios_of(d: &Value) -> u64 {
    match d.get("total_ios") {
        Some(v) => v.as_u64().unwrap_or_else(|| num(Some(v)).max(0.0) as u64),
        None => (num(d.get("iops")) * num(d.get("runtime")) / 1000.0)
            .round()
            .max(0.0) as u64,
    }
}

/// fio's percentile `key` ("99.000000") of a latency object, in ns. Keys are matched as
/// numbers, so "99.00" (older fio) finds it too.
fn percentile(lat: &Value, scale: f64, key: f64) -> Option<f64> {
    let map = lat.get("percentile")?.as_object()?;
    let exact = format!("{key:.6}");
    let v = map.get(&exact).or_else(|| {
        map.iter()
            .find(|(k, _)| {
                k.trim()
                    .parse::<f64>()
                    .is_ok_and(|p| (p - key).abs() < 1e-9)
            })
            .map(|(_, v)| v)
    })?;
    v.as_f64().filter(|x| x.is_finite()).map(|x| x * scale)
}

fn direction(jobs: &[&Value], dir: &str) -> Option<DirectionFigures> {
    let mut f = DirectionFigures::default();
    let mut weighted = [0.0f64; 3];
    // (ios, lat mean ns, lat stddev ns) per job, for the pooled standard deviation.
    let mut lat_parts: Vec<(f64, f64, f64)> = Vec::new();
    let mut busiest: Option<(&Value, u64)> = None;
    for job in jobs {
        let Some(d) = job.get(dir).filter(|d| d.is_object()) else {
            continue;
        };
        let ios = ios_of(d);
        let fio3 = is_fio3(d);
        f.ios = f.ios.saturating_add(ios);
        let io_bytes = d.get("io_bytes").and_then(Value::as_u64).unwrap_or(0);
        f.bytes = f.bytes.saturating_add(if fio3 {
            io_bytes
        } else {
            io_bytes.saturating_mul(1024)
        });
        // As written: a sum of one term is that term, bit for bit.
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
        if let Some((l, scale)) = latency(d, "lat") {
            lat_parts.push((
                ios as f64,
                num(l.get("mean")) * scale,
                num(l.get("stddev")) * scale,
            ));
        }
        if busiest.is_none_or(|(_, b)| b < ios) {
            busiest = Some((d, ios));
        }
    }
    if f.ios == 0 {
        return None;
    }
    let n = f.ios as f64;
    f.slat_mean_ns = weighted[0] / n;
    f.clat_mean_ns = weighted[1] / n;
    f.lat_mean_ns = weighted[2] / n;
    f.lat_stddev_ns = match lat_parts.as_slice() {
        [(_, _, sd)] => *sd,
        parts => {
            // Pooled over jobs: Σ nᵢ(σᵢ² + (μᵢ − μ)²) / Σ nᵢ.
            let total: f64 = parts.iter().map(|p| p.0).sum();
            if total > 0.0 {
                let mean = f.lat_mean_ns;
                (parts
                    .iter()
                    .map(|(k, m, sd)| k * (sd * sd + (m - mean) * (m - mean)))
                    .sum::<f64>()
                    / total)
                    .sqrt()
            } else {
                0.0
            }
        }
    };
    if let Some((d, _)) = busiest {
        if let Some((c, scale)) = latency(d, "clat") {
            f.clat_p50_ns = percentile(c, scale, 50.0);
            f.clat_p90_ns = percentile(c, scale, 90.0);
            f.clat_p95_ns = percentile(c, scale, 95.0);
            f.clat_p99_ns = percentile(c, scale, 99.0);
            f.clat_p999_ns = percentile(c, scale, 99.9);
            f.clat_p9999_ns = percentile(c, scale, 99.99);
            f.clat_percentiles = percentiles(c, scale);
        }
    }
    let clats = || {
        jobs.iter()
            .filter_map(|j| latency(j.get(dir)?, "clat"))
            .filter(|(c, _)| c.get("N").is_none_or(|n| num(Some(n)) > 0.0))
    };
    f.clat_max_ns = clats()
        .filter_map(|(c, scale)| c.get("max").map(|m| num(Some(m)) * scale))
        .reduce(f64::max);
    f.clat_histogram = histogram(clats().map(|(c, _)| c));
    Some(f)
}

/// Every percentile of a latency object, as (percentile, ns) in percentile order.
fn percentiles(lat: &Value, scale: f64) -> Vec<(f64, f64)> {
    let Some(map) = lat.get("percentile").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out: Vec<(f64, f64)> = map
        .iter()
        .filter_map(|(k, v)| {
            let p = k.trim().parse::<f64>().ok()?;
            let ns = v.as_f64().filter(|x| x.is_finite())?;
            Some((p, ns * scale))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// fio's json+ `bins` ({"<ns>": completions}) of every job, summed into power-of-two
/// buckets keyed by their upper bound: the distribution's shape without fio's 1,856
/// fine buckets per job.
fn histogram<'a>(lats: impl Iterator<Item = &'a Value>) -> Vec<(f64, u64)> {
    let mut buckets: BTreeMap<u32, u64> = BTreeMap::new();
    for (ns, n) in lats.flat_map(bins) {
        let exp = 64 - ns.max(1).saturating_sub(1).leading_zeros();
        *buckets.entry(exp).or_default() += n;
    }
    buckets
        .into_iter()
        .map(|(exp, n)| (2f64.powi(exp as i32), n))
        .collect()
}

/// A latency object's json+ `bins` as (ns, completions); none without them.
pub(crate) fn bins(lat: &Value) -> impl Iterator<Item = (u64, u64)> + '_ {
    lat.get("bins")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.trim().parse::<u64>().ok()?, v.as_u64()?)))
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
        aggr_util: d
            .get("aggr_util")
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_values_become_null_and_nothing_else_changes() {
        let line = "      \"iops_stddev\" : -nan,\n";
        assert_eq!(sanitize(line), "      \"iops_stddev\" : null,\n");
        assert_eq!(sanitize("    inf\n"), "    null\n");
        assert_eq!(sanitize("\"x\" : nan"), "\"x\" : null");
        let untouched = "\"name\" : \"nanny\",\n\"info\" : 1\n";
        assert!(matches!(sanitize(untouched), Cow::Borrowed(_)));
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert_eq!(parse_output(""), Err(ParseError::NoJson));
        assert_eq!(parse_output("fio: no such file\n"), Err(ParseError::NoJson));
        assert_eq!(
            parse_output("{\n  \"jobs\" : [\n"),
            Err(ParseError::Truncated)
        );
        assert_eq!(parse_output("{\"jobs\": []}\n"), Err(ParseError::NoJobs));
        assert_eq!(
            parse_output("{\"jobs\": [1, \"x\"]}"),
            Err(ParseError::NoJobs)
        );
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_parsed_or_refused(s in "\\PC{0,300}") {
            let _ = parse_output(&s);
        }

        #[test]
        fn any_json_shape_is_parsed_or_refused(s in "[{}\\[\\]\":,a-z0-9 \n.-]{0,200}") {
            let _ = parse_output(&s);
        }

        #[test]
        fn fio_shaped_garbage_is_parsed_or_refused(
            head in "[a-z: \n]{0,20}",
            body in proptest::collection::vec(
                proptest::sample::select(vec![
                    "{", "}", "[", "]", ",", ":", "\n", "\"jobs\"", "\"client_stats\"",
                    "\"read\"", "\"write\"", "\"iops\"", "\"total_ios\"", "\"clat_ns\"",
                    "\"percentile\"", "\"99.000000\"", "\"global options\"", "\"disk_util\"",
                    "\"job options\"", "\"bs\"", "\"4k\"", "1", "-1", "1e308", "nan", "null",
                    "18446744073709551615", "\"All clients\"", "\"jobname\"",
                ]),
                0..80,
            ),
        ) {
            let text = format!("{head}{}", body.concat());
            let _ = parse_output(&text);
        }
    }
}
