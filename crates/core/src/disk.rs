//! Disk models and their presets: the figures that describe a drive.
//!
//! The simulator turns these into behaviour, the analytic model reads their headline
//! figures when an experiment has no per-disk baseline, and the VM lab maps a `throttle`
//! model onto qemu's `throttling.*` options. They live in `core` because all three need
//! the same numbers. Each preset says where its figures come from (`docs/simulator.md`
//! has the longer story).

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// A flash device: latency + parallel units + bandwidth caps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SsdParams {
    pub capacity: Bytes,
    pub read_latency: Nanos,
    pub write_latency: Nanos,
    /// Requests served at once (channels × dies that can work in parallel).
    pub parallel_units: u32,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub queue_depth: u32,
}

/// A token bucket with the semantics of qemu's `throttling.*` drive options, in front of
/// a fast backing store: the VM lab's disks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThrottleParams {
    pub capacity: Bytes,
    /// `throttling.iops-total` (0 = unlimited).
    pub iops_total: u32,
    /// `throttling.iops-read` / `iops-write` (0 = unlimited).
    pub iops_read: u32,
    pub iops_write: u32,
    /// `throttling.bps-total` in bytes per second (0 = unlimited).
    pub bps_total: u64,
    /// Service time of the backing store per request, under the throttle.
    pub latency: Nanos,
    pub queue_depth: u32,
}

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
                err(format!(
                    "expects a value like {}'s {}",
                    self.name,
                    param_text(&old)
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

    pub fn is_rotational(&self) -> bool {
        matches!(self.kind, DiskKind::Hdd(_))
    }

    /// Look a preset up by name.
    pub fn preset(name: &str) -> Option<DiskModel> {
        presets().into_iter().find(|m| m.name == name)
    }

    pub fn preset_names() -> Vec<String> {
        presets().into_iter().map(|m| m.name).collect()
    }
}

fn hdd(name: &str, source: &str, p: HddParams) -> DiskModel {
    DiskModel {
        name: name.into(),
        source: source.into(),
        kind: DiskKind::Hdd(p),
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

/// Every built-in preset.
pub fn presets() -> Vec<DiskModel> {
    let ms = Nanos::from_millis_f64;
    vec![
        hdd(
            "hdd-7200-500g-2010",
            "500 GB 7200 RPM SATA desktop disk of 2010: 8.5 ms average read seek (the usual \
             desktop figure of the time, e.g. Hitachi Deskstar 7K1000.C two-platter models; the \
             one-platter 500 GB 7K1000.C is specified at 14.0 ms read / 15.0 ms write: \
             avg_seek=14ms, write_settle=1ms), 1 ms track-to-track, 18 ms full stroke; \
             ~125 → 65 MB/s outer → inner; 0.16 ms command overhead (DiskSim's extracted \
             7200 RPM model: 0.162 ms read hit, 0.23–0.63 ms write miss; write_settle adds \
             0.3 ms to writes); SATA 3 Gb/s, NCQ 32. The 2013 seed's disks.",
            HddParams {
                capacity: Bytes(500_000_000_000),
                rpm: 7200,
                cylinders: 150_000,
                zones: 30,
                outer_mb_s: 125.0,
                inner_mb_s: 65.0,
                track_to_track: ms(1.0),
                avg_seek: ms(8.5),
                full_stroke: ms(18.0),
                write_settle: ms(0.3),
                overhead: ms(0.16),
                queue_depth: 32,
                interface_mb_s: 300.0,
                cache: Bytes::mib(16),
            },
        ),
        hdd(
            "hdd-7200-16t-2019",
            "16 TB 7200 RPM enterprise SATA disk of 2019 (Seagate Exos X16 / Toshiba MG08 \
             class): 261–268 MB/s outer (datasheet; the 2019 seed measured 268), about half \
             that inner; 8.5 ms average seek; 0.25 ms command overhead; SATA 6 Gb/s, NCQ 32, 256 MB cache.",
            HddParams {
                capacity: Bytes(16_000_000_000_000),
                rpm: 7200,
                cylinders: 500_000,
                zones: 60,
                outer_mb_s: 270.0,
                inner_mb_s: 130.0,
                track_to_track: ms(0.8),
                avg_seek: ms(8.5),
                full_stroke: ms(16.0),
                write_settle: ms(0.25),
                overhead: ms(0.25),
                queue_depth: 32,
                interface_mb_s: 600.0,
                cache: Bytes::mib(256),
            },
        ),
        hdd(
            "hdd-7200",
            "Generic modern 4 TB 7200 RPM SATA disk, from DiskSim's extracted WD 4 TB model \
             (2013): 1.4 ms short seeks, 8.2 ms at 1/3 stroke, 15.7 ms full stroke, \
             189 → 94 MB/s, queue depth 8 in DiskSim (NCQ 32 here).",
            HddParams {
                capacity: Bytes(4_000_000_000_000),
                rpm: 7200,
                cylinders: 353_181,
                zones: 60,
                outer_mb_s: 189.0,
                inner_mb_s: 94.0,
                track_to_track: ms(1.4),
                avg_seek: ms(8.2),
                full_stroke: ms(15.7),
                write_settle: ms(0.3),
                overhead: ms(0.2),
                queue_depth: 32,
                interface_mb_s: 600.0,
                cache: Bytes::mib(64),
            },
        ),
        hdd(
            "hdd-10k-sas",
            "1.2 TB 10,000 RPM 2.5\" SAS disk (Seagate Exos 10E2400 class): 3.6 ms average \
             seek, 2.9 ms average rotational latency, ~250 → 130 MB/s, queue depth 64.",
            HddParams {
                capacity: Bytes(1_200_000_000_000),
                rpm: 10_000,
                cylinders: 250_000,
                zones: 30,
                outer_mb_s: 250.0,
                inner_mb_s: 130.0,
                track_to_track: ms(0.4),
                avg_seek: ms(3.6),
                full_stroke: ms(7.5),
                write_settle: ms(0.2),
                overhead: ms(0.1),
                queue_depth: 64,
                interface_mb_s: 1200.0,
                cache: Bytes::mib(128),
            },
        ),
        DiskModel {
            name: "ssd-sata".into(),
            source: "1 TB SATA SSD (Samsung 860 EVO class): ~98k 4 KiB random read IOPS at \
                     depth, 550 / 520 MB/s, ~90 µs read latency at QD1; steady-state \
                     write latency after the SLC cache."
                .into(),
            kind: DiskKind::Ssd(SsdParams {
                capacity: Bytes(1_000_000_000_000),
                read_latency: Nanos::from_micros(85),
                write_latency: Nanos::from_micros(60),
                parallel_units: 8,
                read_mb_s: 550.0,
                write_mb_s: 520.0,
                queue_depth: 32,
            }),
        },
        DiskModel {
            name: "nvme".into(),
            source: "1 TB PCIe 3.0 NVMe SSD (Samsung 970 EVO class): ~500k 4 KiB random \
                     read IOPS at depth, 3.4 / 2.5 GB/s, ~80 µs read latency at QD1."
                .into(),
            kind: DiskKind::Ssd(SsdParams {
                capacity: Bytes(1_000_000_000_000),
                read_latency: Nanos::from_micros(80),
                write_latency: Nanos::from_micros(25),
                parallel_units: 40,
                read_mb_s: 3400.0,
                write_mb_s: 2500.0,
                queue_depth: 1024,
            }),
        },
        DiskModel {
            name: "throttle-75".into(),
            source: "A VM-lab disk: a sparse file behind qemu's throttling.iops-total=75 — a \
                     7200 RPM disk's worth of random IOPS, with none of its mechanics."
                .into(),
            kind: DiskKind::Throttle(ThrottleParams {
                capacity: Bytes::gib(1),
                iops_total: 75,
                iops_read: 0,
                iops_write: 0,
                bps_total: 0,
                latency: Nanos::from_micros(100),
                queue_depth: 128,
            }),
        },
    ]
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
