//! fio's client/server output, taken apart: one `fio --client=A job --client=B job`
//! writes every host's jobs into one `client_stats` array, plus an "All clients" entry
//! whose IOPS and bandwidth are summed but whose latency percentiles are missing (fio
//! 3.33 prints none for it, even with `json+`). A fleet run needs both halves: each host's
//! own result, shaped as if fio had run there alone, and the fleet's aggregate with
//! percentiles taken from the hosts' latency histograms merged — never averaged, which
//! would say nothing about the fleet's tail.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The client the jobs of `client_stats` name: fio's `hostname` and `port` fields, as the
/// `--client=` argument gave them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Client {
    pub hostname: String,
    pub port: u16,
}

/// One client run taken apart.
#[derive(Debug, Clone)]
pub struct Split {
    /// Each client's own fio JSON: its jobs under `jobs` and its `disk_util`, as a plain
    /// run of fio on that host would have written.
    pub hosts: BTreeMap<Client, Value>,
    /// The fleet's fio JSON: one job, fio's "All clients" sums with `clat_ns` (and `lat_ns`
    /// where fio kept bins) percentiles recomputed from every host's bins summed. `None`
    /// with a single client (its own result is the aggregate).
    pub aggregate: Option<Value>,
}

const ALL: &str = "All clients";

/// Take a `fio --client … --output-format=json+` document apart.
pub fn split(text: &str) -> Result<Split, String> {
    let doc: Value = crate::parse::documents_of(text)
        .into_iter()
        .rev()
        .find(|d| d.get("client_stats").is_some())
        .ok_or("fio's output has no client_stats: was it a --client run?")?;
    let stats = doc["client_stats"]
        .as_array()
        .ok_or("fio's client_stats is not an array")?;
    let client_of = |v: &Value| -> Option<Client> {
        Some(Client {
            hostname: v.get("hostname")?.as_str()?.to_string(),
            port: u16::try_from(v.get("port")?.as_u64()?).ok()?,
        })
    };
    let mut jobs: BTreeMap<Client, Vec<Value>> = BTreeMap::new();
    let mut all = None;
    for s in stats {
        if s.get("jobname").and_then(Value::as_str) == Some(ALL) {
            all = Some(s.clone());
            continue;
        }
        let c = client_of(s).ok_or("a client_stats entry names no hostname and port")?;
        jobs.entry(c).or_default().push(s.clone());
    }
    if jobs.is_empty() {
        return Err("fio's client_stats holds no job of any client".into());
    }
    let mut disks: BTreeMap<Client, Vec<Value>> = BTreeMap::new();
    for d in doc
        .get("disk_util")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(c) = client_of(d) {
            disks.entry(c).or_default().push(d.clone());
        }
    }
    let header = |jobs: Vec<Value>, disk_util: Vec<Value>| {
        let mut m = Map::new();
        for k in ["fio version", "timestamp", "timestamp_ms", "time"] {
            if let Some(v) = doc.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        if let Some(g) = doc.get("global options") {
            m.insert("global options".into(), g.clone());
        }
        m.insert("jobs".into(), Value::Array(jobs));
        m.insert("disk_util".into(), Value::Array(disk_util));
        Value::Object(m)
    };
    let aggregate = match all {
        Some(mut all) if jobs.len() > 1 => {
            let every: Vec<&Value> = jobs.values().flatten().collect();
            for dir in ["read", "write", "trim"] {
                for lat in ["clat_ns", "lat_ns"] {
                    merge_latency(&mut all, &every, dir, lat);
                }
            }
            let du = disks.values().flatten().cloned().collect();
            Some(header(vec![all], du))
        }
        _ => None,
    };
    let hosts = jobs
        .into_iter()
        .map(|(c, j)| {
            let du = disks.remove(&c).unwrap_or_default();
            (c, header(j, du))
        })
        .collect();
    Ok(Split { hosts, aggregate })
}

/// Put into `all[dir][lat]` the `bins` of every job summed and the percentiles fio would
/// have printed for them, at the percentile list the jobs used.
fn merge_latency(all: &mut Value, jobs: &[&Value], dir: &str, lat: &str) {
    let mut bins: BTreeMap<u64, u64> = BTreeMap::new();
    let mut list: Vec<String> = Vec::new();
    for j in jobs {
        let Some(l) = j.get(dir).and_then(|d| d.get(lat)) else {
            continue;
        };
        for (ns, n) in crate::parse::bins(l) {
            *bins.entry(ns).or_default() += n;
        }
        if list.is_empty() {
            if let Some(p) = l.get("percentile").and_then(Value::as_object) {
                list = p.keys().cloned().collect();
            }
        }
    }
    if bins.is_empty() || list.is_empty() {
        return;
    }
    let mut plist: Vec<(f64, String)> = list
        .into_iter()
        .filter_map(|k| Some((k.trim().parse::<f64>().ok()?, k)))
        .collect();
    plist.sort_by(|a, b| a.0.total_cmp(&b.0));
    let values = percentiles_of(&bins, &plist.iter().map(|p| p.0).collect::<Vec<_>>());
    let Some(target) = all.get_mut(dir).and_then(|d| d.get_mut(lat)) else {
        return;
    };
    let Some(obj) = target.as_object_mut() else {
        return;
    };
    let pct: Map<String, Value> = plist
        .into_iter()
        .zip(values)
        .map(|((_, k), v)| (k, Value::from(v)))
        .collect();
    obj.insert("percentile".into(), Value::Object(pct));
    obj.insert(
        "bins".into(),
        Value::Object(
            bins.into_iter()
                .map(|(k, v)| (k.to_string(), Value::from(v)))
                .collect(),
        ),
    );
}

/// The percentiles fio reports for a latency histogram (`stat.c`,
/// `calc_clat_percentiles`): for each percentile p in ascending order, the value of the
/// first bin at which the running count reaches p % of all samples. `bins` maps a bin's
/// value (as json+ prints it) to its count.
pub fn percentiles_of(bins: &BTreeMap<u64, u64>, ascending: &[f64]) -> Vec<u64> {
    let total: u64 = bins.values().sum();
    let mut out = Vec::with_capacity(ascending.len());
    let mut sum = 0u64;
    let mut it = bins.iter();
    let mut last = 0u64;
    for &p in ascending {
        let need = p / 100.0 * total as f64;
        while (sum as f64) < need {
            match it.next() {
                Some((&v, &n)) => {
                    sum += n;
                    last = v;
                }
                None => break,
            }
        }
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(host: &str, port: u16, iops: f64, bins: &[(u64, u64)]) -> Value {
        let b: Map<String, Value> = bins
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let plist: BTreeMap<u64, u64> = bins.iter().copied().collect();
        let p = percentiles_of(&plist, &[50.0, 99.0]);
        json!({"jobname": "j", "hostname": host, "port": port,
               "read": {"iops": iops, "clat_ns": {"N": 1, "bins": b,
                        "percentile": {"50.000000": p[0], "99.000000": p[1]}}}})
    }

    #[test]
    fn percentiles_are_the_first_bin_reaching_the_share() {
        let bins: BTreeMap<u64, u64> = [(10, 50), (20, 49), (1000, 1)].into_iter().collect();
        assert_eq!(
            percentiles_of(&bins, &[1.0, 50.0, 50.5, 99.0, 99.5, 100.0]),
            vec![10, 10, 20, 20, 1000, 1000]
        );
    }

    #[test]
    fn hosts_are_split_and_the_aggregate_merges_histograms_not_percentiles() {
        // Host a: fast and steady; host b: a slow tail. The fleet's p99 is b's tail, which
        // no average of the two hosts' p99s gives.
        let a = job("h", 1, 100.0, &[(10, 99), (20, 1)]);
        let b = job("h", 2, 100.0, &[(10, 90), (5000, 10)]);
        let all = json!({"jobname": ALL, "hostname": "h", "port": 2,
                         "read": {"iops": 200.0, "total_ios": 200, "io_bytes": 819200,
                                  "clat_ns": {"N": 200, "mean": 300.0}}});
        let doc = json!({"fio version": "fio-3.33", "client_stats": [a, b, all],
                         "disk_util": [{"name": "vda", "hostname": "h", "port": 1}]});
        let s = split(&doc.to_string()).unwrap();
        assert_eq!(s.hosts.len(), 2);
        let ha = &s.hosts[&Client {
            hostname: "h".into(),
            port: 1,
        }];
        assert_eq!(ha["jobs"][0]["read"]["iops"], 100.0);
        assert_eq!(ha["disk_util"].as_array().unwrap().len(), 1);
        let agg = s.aggregate.unwrap();
        let clat = &agg["jobs"][0]["read"]["clat_ns"];
        assert_eq!(agg["jobs"][0]["read"]["iops"], 200.0);
        assert_eq!(clat["percentile"]["50.000000"], 10);
        // 200 samples: the 99th percentile needs 198, reached at the 5000 ns bin.
        assert_eq!(clat["percentile"]["99.000000"], 5000);
        assert_eq!(clat["bins"]["10"], 189);
        // And the parser reads the aggregate as an ordinary run.
        let parsed = crate::parse_output(&agg.to_string()).unwrap();
        assert_eq!(parsed.figures.read.unwrap().clat_p99_ns, Some(5000.0));
    }

    #[test]
    fn one_client_has_no_aggregate() {
        let doc = json!({"client_stats": [job("h", 1, 5.0, &[(10, 1)])]});
        let s = split(&doc.to_string()).unwrap();
        assert_eq!(s.hosts.len(), 1);
        assert!(s.aggregate.is_none());
        assert!(split("{\"jobs\": []}").is_err());
    }
}
