//! What a result records about where it ran: one typed struct that every target writes
//! and the store, the anomaly rules and the report read.
//!
//! The keys something reads (the anomaly rules, the report's model and command list) are
//! fields with their types, so a target cannot misspell one and a reader cannot
//! misread one. Everything a target records only for the person reading the report (the
//! host's device states before/during/after, tool versions, the VM's kernel) goes in
//! [`Environment::details`], kept in the order it was recorded. Serialised, it is the
//! JSON object raidlab always stored (`results.environment_json`): the typed keys first,
//! in the order below, then the details; stored results of earlier versions read back.

use crate::{DiskModel, Scheduler};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A result's environment (docs/exports.md, "Environment keys the anomaly rules read").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The target that produced the result: `sim`, `host` or `vm`; imports have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The simulator's seed (sim target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The simulator and its version (sim target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulator: Option<String>,
    /// The disk model simulated, overrides applied (sim target). A model this version
    /// cannot read (an older field set) counts as not recorded: the report then uses the
    /// case's preset.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub disk_model: Option<DiskModel>,
    /// Discrete events the simulator processed (sim target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// An md resync or recovery ran while fio ran (`/proc/mdstat`; the simulator: it
    /// simulated one). Read by the `resync` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resync_during_fio: Option<bool>,
    /// The array's bitmap as md reported it (`none`, `internal`, a file). Read by the
    /// `bitmap` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub md_bitmap: Option<String>,
    /// Each member's volatile write cache after the test (member → on). Read by the
    /// `write-cache` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_cache_after: Option<BTreeMap<String, bool>>,
    /// A quick per-member random-read figure (member → IOPS), from the per-disk
    /// baseline. Read by the `non-uniform` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_baseline_iops: Option<BTreeMap<String, f64>>,
    /// md's `stripe_cache_size` during the test. Read by the `stripe-cache` rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_cache_size: Option<u64>,
    /// A rebuilding array's recovery: its speed, and how long it took or would take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<RebuildFigures>,
    /// The commands that ran, in order (host and vm targets). The report lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandRun>,
    /// Everything else recorded, for the reader of the report, in the order recorded.
    #[serde(flatten)]
    pub details: Map<String, Value>,
}

/// A recovery's figures (`state = "rebuilding"`): measured in the run, and timed over the
/// member's whole capacity, loaded and idle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RebuildFigures {
    /// Recovery speed per member over the measured window (ramp excluded), MiB/s: what
    /// `/proc/mdstat` shows as `speed=`.
    pub mib_s: f64,
    /// Seconds from the start of the run until the recovery ended, when it ended within
    /// the run (small members).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Seconds the recovery of a whole member (the disk's full capacity) takes while the
    /// workload runs: the speed sampled at points across the member, integrated over it.
    /// An extrapolation, labelled so wherever it is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_full: Option<f64>,
    /// The same with no workload (the idle array's rebuild).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_idle: Option<f64>,
    /// The recovery's speed, MiB/s, second by second of the run (the report draws it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mib_s_per_second: Vec<f64>,
}

/// One command a target ran for a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    /// The step's phase (`create`, `mkfs`, `fio`, …).
    pub phase: String,
    /// The command as a shell would show it.
    pub command: String,
    /// How long it took, in seconds (rounded to milliseconds).
    pub seconds: f64,
}

impl Environment {
    /// An environment with only `details` (what an import records).
    pub fn with_details(details: impl IntoIterator<Item = (String, Value)>) -> Self {
        Environment {
            details: details.into_iter().collect(),
            ..Environment::default()
        }
    }

    /// Each member's (device name, requests read, requests written) over the fio run from
    /// the block layer's counters (`during.members_io`: host and vm targets), the member
    /// being rebuilt included, which fio's `disk_util` leaves out. `None` where not
    /// recorded.
    pub fn members_io(&self) -> Option<Vec<(String, u64, u64)>> {
        let members = self.details.get("during")?.get("members_io")?.as_array()?;
        let io: Option<Vec<_>> = members
            .iter()
            .map(|m| {
                let dev = m.get("device")?.as_str()?;
                let name = dev.rsplit('/').next().unwrap_or(dev).to_string();
                Some((name, m.get("reads")?.as_u64()?, m.get("writes")?.as_u64()?))
            })
            .collect();
        io.filter(|v| !v.is_empty())
    }

    /// The I/O scheduler the members had during the test, when all had the same one and
    /// the simulator models it: the host target records each member's
    /// `queue/scheduler` (`during.members[].device.scheduler`).
    pub fn members_scheduler(&self) -> Option<Scheduler> {
        let members = self.details.get("during")?.get("members")?.as_array()?;
        let mut found = None;
        for m in members {
            let s: Scheduler = m.get("device")?.get("scheduler")?.as_str()?.parse().ok()?;
            if found.is_some_and(|f| f != s) {
                return None;
            }
            found = Some(s);
        }
        found
    }
}

/// A disk model that does not parse is treated as absent.
fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DiskModel>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    Ok(v.and_then(|v| serde_json::from_value(v).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_keys_come_first_and_details_keep_their_order() {
        let mut e = Environment {
            target: Some("host".into()),
            resync_during_fio: Some(false),
            ..Environment::default()
        };
        e.details.insert("zeta".into(), json!(1));
        e.details.insert("alpha".into(), json!(2));
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"target":"host","resync_during_fio":false,"zeta":1,"alpha":2}"#
        );
    }

    #[test]
    fn an_earlier_versions_environment_reads_back_whole() {
        let stored = json!({
            "write_cache_after": {"/dev/loop1": true},
            "member_baseline_iops": null,
            "md_bitmap": "internal",
            "stripe_cache_size": 256,
            "target": "host",
            "hostname": "box",
            "commands": [{"phase": "fio", "command": "fio job.fio", "seconds": 1.5}],
        });
        let e: Environment = serde_json::from_value(stored).unwrap();
        assert!(e.write_cache_after.unwrap()["/dev/loop1"]);
        assert_eq!(e.member_baseline_iops, None);
        assert_eq!(e.md_bitmap.as_deref(), Some("internal"));
        assert_eq!(e.stripe_cache_size, Some(256));
        assert_eq!(e.commands[0].command, "fio job.fio");
        assert_eq!(e.details["hostname"], "box");
    }

    #[test]
    fn the_members_scheduler_is_the_one_they_all_had() {
        let with = |names: &[&str]| {
            let members: Vec<Value> = names
                .iter()
                .map(|n| json!({"device": {"path": "/dev/sdx", "scheduler": n}, "write_cache": null}))
                .collect();
            let e: Environment =
                serde_json::from_value(json!({"target": "host", "during": {"members": members}}))
                    .unwrap();
            e.members_scheduler()
        };
        assert_eq!(with(&["bfq", "bfq"]), Some(Scheduler::Bfq));
        assert_eq!(with(&["mq-deadline"]), Some(Scheduler::MqDeadline));
        assert_eq!(with(&["bfq", "mq-deadline"]), None, "mixed");
        assert_eq!(with(&["kyber", "kyber"]), None, "not modelled");
        assert_eq!(with(&[]), None);
        assert_eq!(Environment::default().members_scheduler(), None);
    }

    #[test]
    fn members_io_names_each_member_by_its_device() {
        let e: Environment = serde_json::from_value(json!({"during": {"members_io": [
            {"device": "/dev/vda", "reads": 1135, "read_merges": 48642, "writes": 5},
            {"device": "/dev/vdd", "reads": 366, "writes": 438},
        ]}}))
        .unwrap();
        assert_eq!(
            e.members_io(),
            Some(vec![("vda".into(), 1135, 5), ("vdd".into(), 366, 438)])
        );
        let none: Environment =
            serde_json::from_value(json!({"during": {"members_io": []}})).unwrap();
        assert_eq!(none.members_io(), None, "an empty list");
        let odd: Environment =
            serde_json::from_value(json!({"during": {"members_io": [{"device": "/dev/vda"}]}}))
                .unwrap();
        assert_eq!(odd.members_io(), None, "counts missing");
        assert_eq!(Environment::default().members_io(), None);
    }

    #[test]
    fn a_disk_model_this_version_cannot_read_is_not_recorded() {
        let e: Environment =
            serde_json::from_value(json!({"target": "sim", "disk_model": {"name": 3}})).unwrap();
        assert_eq!(e.disk_model, None);
        assert_eq!(e.target.as_deref(), Some("sim"));
    }
}
