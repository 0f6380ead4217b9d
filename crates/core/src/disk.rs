//! Disk models and their presets: the figures that describe a drive.
//!
//! The simulator turns these into behaviour, the analytic model reads their headline
//! figures when an experiment has no per-disk baseline, and the VM lab maps a `throttle`
//! model onto qemu's `throttling.*` options. They live in `core` because all three need
//! the same numbers. Each preset says where its figures come from (`docs/simulator.md`
//! has the longer story); the presets are model files (`crate::model_file`).

use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Overrides of a preset's figures — `[disks.params]` in a plan, `--disk-param` on the
/// command line: parameter name → value as written (`"9ms"`, `"1"`, `"64m"`, `"0.4"`).
pub type DiskParams = BTreeMap<String, String>;

/// A disk parameter override that does not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} = {value:?}: {why}")]
pub struct ParamError {
    pub key: String,
    pub value: String,
    pub why: String,
}

/// A mechanical disk (Ruemmler & Wilkes model, as DiskSim implements it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HddParams {
    pub capacity: Bytes,
    pub rpm: u32,
    /// Cylinders (seek distance unit). Only ratios matter; real drives have 100k–500k.
    pub cylinders: u32,
    /// Recording zones, outer to inner, equal in cylinders.
    pub zones: u32,
    /// Media transfer rate at the outer edge (MB/s, 10^6 bytes).
    pub outer_mb_s: f64,
    /// … and at the inner edge.
    pub inner_mb_s: f64,
    /// Seek across one cylinder (includes settle).
    pub track_to_track: Nanos,
    /// Seek across a third of the stroke: the datasheet's "average seek".
    pub avg_seek: Nanos,
    /// Seek across the whole stroke.
    pub full_stroke: Nanos,
    /// Extra settle time before a write may start.
    pub write_settle: Nanos,
    /// Controller time per command (decode, cache lookup, completion).
    pub overhead: Nanos,
    /// Native command queue depth (SATA NCQ: 32).
    pub queue_depth: u32,
    /// Interface rate for cache transfers (MB/s): SATA 3 Gb/s = 300, 6 Gb/s = 600.
    pub interface_mb_s: f64,
    /// Volatile write cache in bytes (used when the plan leaves the cache on).
    pub cache: Bytes,
    /// … and in commands: the dirty writes the cache holds at most, whatever their size.
    /// Drives keep cached writes in a table of segments, so small random writes fill it
    /// long before its bytes (docs/simulator.md, "Write cache").
    #[serde(default = "default_cache_commands")]
    pub cache_commands: u32,
    /// Dirty writes the firmware chooses among when it destages (shortest positioning
    /// time first over the oldest this many; 1 = first in, first out).
    #[serde(default = "default_destage_window")]
    pub destage_window: u32,
    /// How far the firmware's estimate of a queued command's positioning time may be
    /// over, as a share of that time (the estimate is the time × (1 + u × this), u uniform
    /// in [0, 1)): 0 orders the queue perfectly; larger values make reordering gain less,
    /// as real drives do (docs/simulator.md, "Reordering").
    #[serde(default = "default_reorder_noise")]
    pub reorder_noise: f64,
    /// Scatter-gather segments the port's driver takes in one command (its
    /// `sg_tablesize`: a SATA port's AHCI driver 168, `AHCI_MAX_SG` in
    /// `drivers/ata/ahci.h`). md's stripe and sync buffers are separate 4 KiB pages, one
    /// segment each, so this bounds the requests the block layer merges of them below
    /// `max_sectors_kb` (168 pages: 672 KiB). 0: no bound but `max_sectors_kb`.
    #[serde(default)]
    pub max_segments: u32,
}

fn default_cache_commands() -> u32 {
    HDD_CACHE_COMMANDS
}
fn default_destage_window() -> u32 {
    HDD_DESTAGE_WINDOW
}
fn default_reorder_noise() -> f64 {
    HDD_REORDER_NOISE
}

// Models recorded by versions before these parameters existed (a stored result's
// environment) read back as what those versions simulated: a cache limited only in bytes,
// a 64-command destage window, a perfect positioning estimate.
const HDD_CACHE_COMMANDS: u32 = u32::MAX;
const HDD_DESTAGE_WINDOW: u32 = 64;
const HDD_REORDER_NOISE: f64 = 0.0;

/// A flash device: latency + parallel units + bandwidth caps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SsdParams {
    pub capacity: Bytes,
    pub read_latency: Nanos,
    pub write_latency: Nanos,
    /// Requests served at once (channels × dies that can work in parallel).
    pub parallel_units: u32,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub queue_depth: u32,
    /// Scatter-gather segments the port's driver takes in one command (its
    /// `sg_tablesize`: a SATA port's AHCI driver 168, `AHCI_MAX_SG` in
    /// `drivers/ata/ahci.h`). md's stripe and sync buffers are separate 4 KiB pages, one
    /// segment each, so this bounds the requests the block layer merges of them below
    /// `max_sectors_kb` (168 pages: 672 KiB). 0: no bound but `max_sectors_kb`.
    #[serde(default)]
    pub max_segments: u32,
}

/// A token bucket with the semantics of qemu's `throttling.*` drive options, in front of
/// a fast backing store: the VM lab's disks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThrottleParams {
    pub capacity: Bytes,
    /// `throttling.iops-total` (0 = unlimited).
    pub iops_total: u32,
    /// `throttling.iops-read` / `iops-write` (0 = unlimited).
    pub iops_read: u32,
    pub iops_write: u32,
    /// `throttling.bps-total` in bytes per second (0 = unlimited).
    pub bps_total: u64,
    /// `throttling.iops-size`: a request larger than this counts as its size over this
    /// many operations (a 1 MiB request as 16 of 64 KiB), so that the operations a
    /// member moves a second do not depend on how the guest merged them (0 = every
    /// request counts once).
    #[serde(default)]
    pub iops_size: Bytes,
    /// Service time of the backing store per request, under the throttle.
    pub latency: Nanos,
    pub queue_depth: u32,
}

impl ThrottleParams {
    /// How many operations a request of `bytes` adds to the operation buckets: one, or its
    /// size over `iops_size` where it is larger (qemu's `throttle_account`).
    pub fn operations(&self, bytes: f64) -> f64 {
        let size = self.iops_size.0 as f64;
        if size > 0.0 && bytes > size {
            bytes / size
        } else {
            1.0
        }
    }
}

/// Segments qemu's virtio-blk takes in one request (`seg_max`: its queue of 256
/// descriptors less the header's and the status's).
pub const VIRTIO_SEGMENTS: u32 = 254;

/// The kinds of disk model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DiskKind {
    Hdd(HddParams),
    Ssd(SsdParams),
    Throttle(ThrottleParams),
}

/// A named disk model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskModel {
    pub name: String,
    /// What it stands for, and where its figures come from.
    pub source: String,
    pub kind: DiskKind,
}

// A model's figures are finite numbers (a plan or model file cannot write NaN), so equal
// models are equal; a model is hashed by its serialised form, which equal models share.
impl Eq for DiskModel {}

impl std::hash::Hash for DiskModel {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        serde_json::to_string(self)
            .expect("plain data serialises")
            .hash(state)
    }
}

impl DiskModel {
    pub fn capacity(&self) -> Bytes {
        match &self.kind {
            DiskKind::Hdd(p) => p.capacity,
            DiskKind::Ssd(p) => p.capacity,
            DiskKind::Throttle(p) => p.capacity,
        }
    }

    /// The same model with another capacity (plans and `--disk-capacity` may override).
    /// For a disk, a larger capacity at the same platter count means denser tracks: the
    /// seek curve and transfer rates stay the datasheet's.
    pub fn with_capacity(mut self, capacity: Bytes) -> Self {
        match &mut self.kind {
            DiskKind::Hdd(p) => p.capacity = capacity,
            DiskKind::Ssd(p) => p.capacity = capacity,
            DiskKind::Throttle(p) => p.capacity = capacity,
        }
        self
    }

    /// The model's parameters by name, with their values as a plan would write them.
    pub fn params(&self) -> Vec<(String, String)> {
        let value = serde_json::to_value(&self.kind).expect("plain data serialises");
        let obj = value.as_object().expect("a model's kind is a struct");
        obj.iter()
            .filter(|(k, _)| k.as_str() != "kind")
            .map(|(k, v)| (k.clone(), param_text(v)))
            .collect()
    }

    /// This model with some of its figures replaced. A parameter must exist for the
    /// model's kind and its value must parse as the preset's does (a duration such as
    /// `9ms`, a size such as `64m`, a whole number, a number); the result must still be
    /// a disk ([`DiskModel::check`]). Capacity has its own field (`disks.capacity`).
    pub fn with_params(self, params: &DiskParams) -> Result<DiskModel, ParamError> {
        if params.is_empty() {
            return Ok(self);
        }
        let mut value = serde_json::to_value(&self.kind).expect("plain data serialises");
        let mut kind = self.kind.clone();
        for (key, raw) in params {
            let err = |why: String| ParamError {
                key: key.clone(),
                value: raw.clone(),
                why,
            };
            if key == "capacity" {
                return Err(err(
                    "set the capacity with disks.capacity (--disk-capacity)".into(),
                ));
            }
            let obj = value.as_object_mut().expect("a model's kind is a struct");
            let Some(old) = obj.get(key).cloned().filter(|_| key != "kind") else {
                let names: Vec<String> = self
                    .params()
                    .into_iter()
                    .map(|(k, _)| k)
                    .filter(|k| k != "capacity")
                    .collect();
                return Err(err(format!(
                    "{} has no such parameter; its parameters are: {}",
                    self.name,
                    names.join(", ")
                )));
            };
            obj.insert(key.clone(), param_json(raw));
            kind = serde_json::from_value(value.clone()).map_err(|_| {
                // A size of 0 (a limit that is off) shows no unit: say what one looks like.
                let size = matches!(&old, serde_json::Value::String(s) if s.parse::<u64>().is_ok());
                err(format!(
                    "expects a value like {}'s {}{}",
                    self.name,
                    param_text(&old),
                    if size { " (a size such as 128k)" } else { "" }
                ))
            })?;
        }
        let model = DiskModel { kind, ..self };
        model.check().map_err(|why| {
            let (key, value) = params
                .iter()
                .find(|(k, _)| why.contains(k.as_str()))
                .or_else(|| params.iter().next())
                .expect("not empty");
            ParamError {
                key: key.clone(),
                value: value.clone(),
                why,
            }
        })?;
        Ok(model)
    }

    /// Whether the figures describe a disk the simulator can run: positive rates and
    /// counts, seek times in order, at least one queue slot.
    pub fn check(&self) -> Result<(), String> {
        let positive = |what: &str, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(format!("{what} must be above zero"))
            }
        };
        match &self.kind {
            DiskKind::Hdd(p) => {
                positive("rpm", p.rpm > 0)?;
                positive("cylinders", p.cylinders > 0)?;
                positive("zones", p.zones > 0)?;
                positive("queue_depth", p.queue_depth > 0)?;
                positive(
                    "every transfer rate",
                    p.outer_mb_s > 0.0 && p.inner_mb_s > 0.0 && p.interface_mb_s > 0.0,
                )?;
                if p.zones > p.cylinders {
                    return Err(format!(
                        "zones ({}) cannot outnumber cylinders ({})",
                        p.zones, p.cylinders
                    ));
                }
                if p.inner_mb_s > p.outer_mb_s {
                    return Err(format!(
                        "inner_mb_s ({}) is above outer_mb_s ({}): outer tracks are the fast ones",
                        p.inner_mb_s, p.outer_mb_s
                    ));
                }
                if !(p.track_to_track <= p.avg_seek && p.avg_seek <= p.full_stroke) {
                    return Err(format!(
                        "seek times must grow with distance: track_to_track {} ≤ avg_seek {} ≤ full_stroke {}",
                        p.track_to_track, p.avg_seek, p.full_stroke
                    ));
                }
                Ok(())
            }
            DiskKind::Ssd(p) => {
                positive("parallel_units", p.parallel_units > 0)?;
                positive("queue_depth", p.queue_depth > 0)?;
                positive(
                    "read_mb_s and write_mb_s",
                    p.read_mb_s > 0.0 && p.write_mb_s > 0.0,
                )
            }
            DiskKind::Throttle(p) => positive("queue_depth", p.queue_depth > 0),
        }
    }

    /// The segments a member command takes at most, where the model bounds them
    /// (`max_segments`; a `throttle` model is a VM lab disk, qemu's virtio-blk: 254).
    pub fn max_segments(&self) -> Option<u32> {
        match &self.kind {
            DiskKind::Hdd(p) => (p.max_segments > 0).then_some(p.max_segments),
            DiskKind::Ssd(p) => (p.max_segments > 0).then_some(p.max_segments),
            DiskKind::Throttle(_) => Some(VIRTIO_SEGMENTS),
        }
    }

    pub fn is_rotational(&self) -> bool {
        matches!(self.kind, DiskKind::Hdd(_))
    }

    /// Look a preset up by name.
    pub fn preset(name: &str) -> Option<DiskModel> {
        crate::model_file::presets()
            .iter()
            .find(|m| m.name == name)
            .cloned()
    }

    pub fn preset_names() -> Vec<String> {
        crate::model_file::presets()
            .iter()
            .map(|m| m.name.clone())
            .collect()
    }
}

/// A parameter's value as a plan writes it: strings (durations, sizes) without quotes.
fn param_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A parameter's text as JSON: numbers stay numbers, the rest (durations, sizes) strings.
fn param_json(raw: &str) -> serde_json::Value {
    let t = raw.trim();
    if let Ok(n) = t.parse::<u64>() {
        return n.into();
    }
    match t.parse::<f64>() {
        Ok(x) if x.is_finite() => x.into(),
        _ => t.into(),
    }
}

/// Every built-in preset (their files are `crates/core/presets/*.toml`).
pub fn presets() -> Vec<DiskModel> {
    crate::model_file::presets().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_unique_and_named_in_the_issue() {
        let names = DiskModel::preset_names();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for n in [
            "hdd-7200-500g-2010",
            "hdd-7200-16t-2019",
            "hdd-7200",
            "hdd-10k-sas",
            "ssd-sata",
            "nvme",
        ] {
            assert!(DiskModel::preset(n).is_some(), "{n}");
        }
    }

    #[test]
    fn presets_pass_their_own_check() {
        for m in presets() {
            assert_eq!(m.check(), Ok(()), "{}", m.name);
        }
    }

    fn set(pairs: &[(&str, &str)]) -> DiskParams {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn params_override_figures_by_type() {
        let m = DiskModel::preset("hdd-7200-500g-2010").unwrap();
        let m = m
            .with_params(&set(&[
                ("queue_depth", "1"),
                ("avg_seek", "9ms"),
                ("outer_mb_s", "130.5"),
                ("cache", "8m"),
            ]))
            .unwrap();
        let DiskKind::Hdd(p) = &m.kind else {
            panic!("an hdd")
        };
        assert_eq!(p.queue_depth, 1);
        assert_eq!(p.avg_seek, Nanos::from_millis(9));
        assert_eq!(p.outer_mb_s, 130.5);
        assert_eq!(p.cache, Bytes::mib(8));
        assert_eq!(p.rpm, 7200, "the rest stays the preset's");
    }

    #[test]
    fn bad_params_say_what_to_write() {
        let m = || DiskModel::preset("hdd-7200").unwrap();
        let e = m().with_params(&set(&[("seek", "9ms")])).unwrap_err();
        assert!(
            e.why.contains("avg_seek") && e.why.contains("queue_depth"),
            "{e}"
        );
        let e = m().with_params(&set(&[("avg_seek", "fast")])).unwrap_err();
        assert!(e.why.contains("like hdd-7200's 8200us"), "{e}");
        let t = DiskModel::preset("throttle-75").unwrap();
        let e = t.with_params(&set(&[("iops_size", "big")])).unwrap_err();
        assert!(e.why.contains("a size such as 128k"), "{e}");
        let e = m().with_params(&set(&[("queue_depth", "0")])).unwrap_err();
        assert!(e.why.contains("queue_depth must be above zero"), "{e}");
        let e = m().with_params(&set(&[("avg_seek", "30ms")])).unwrap_err();
        assert!(e.why.contains("full_stroke"), "{e}");
        let e = m().with_params(&set(&[("capacity", "1t")])).unwrap_err();
        assert!(e.why.contains("disks.capacity"), "{e}");
        let e = m().with_params(&set(&[("kind", "ssd")])).unwrap_err();
        assert!(e.why.contains("no such parameter"), "{e}");
        let ssd = DiskModel::preset("nvme").unwrap();
        let e = ssd.with_params(&set(&[("rpm", "7200")])).unwrap_err();
        assert!(e.why.contains("parallel_units"), "{e}");
    }
}
