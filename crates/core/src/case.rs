//! Cases: one array spec × one workload, with a stable id.
//!
//! The case is the unit that runs, is stored, is resumed and is compared. Its id is a
//! hash of its full configuration (disks, array, workload) — not of the plan's name, the
//! target or the repetition — so the same configuration has the same id in every plan,
//! on every target, across releases (a canonical JSON encoding is hashed; adding a field
//! to it changes ids and is a breaking change to note in the changelog).

use crate::disk::{DiskModel, DiskParams};
use crate::spec::{ArraySpec, Scheduler};
use crate::units::Bytes;
use crate::workload::Workload;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The disks a plan uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DiskSet {
    /// Disks available to the plan (arrays may use fewer).
    pub count: u32,
    /// Disk model, for the sim and vm targets: a preset's name, or a model file's path
    /// as the plan wrote it (its model is then `model_file`).
    pub model: Option<String>,
    /// The model read from the file `model` names, when it names one: kept with the case,
    /// so a stored case runs and resumes without the file, and another file content is
    /// another case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_file: Option<DiskModel>,
    /// Capacity override for the model.
    pub capacity: Option<Bytes>,
    /// Use only the first `span` bytes of each disk (a partition at its start).
    pub span: Option<Bytes>,
    /// Real devices, for the host target.
    pub devices: Vec<String>,
    /// Overrides of the model's figures (`[disks.params]`).
    #[serde(default, skip_serializing_if = "DiskParams::is_empty")]
    pub params: DiskParams,
    /// Commands the host adapter keeps in flight across all the disks at once (a SCSI
    /// host's `can_queue`, a port multiplier, a small HBA); `None`: each disk on its own
    /// port, limited only by its own queue. Simulated only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_queue: Option<u32>,
    /// The host's I/O scheduler above each disk; `None`: the distribution's default
    /// (mq-deadline for rotational disks, none for flash); bfq is the other choice.
    /// Simulated only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<Scheduler>,
}

impl DiskSet {
    /// The disk model these disks stand for: the preset with the capacity and parameter
    /// overrides applied. `Ok(None)` without a model (real devices only).
    pub fn resolved_model(&self) -> Result<Option<DiskModel>, String> {
        let Some(name) = self.model.as_deref() else {
            return Ok(None);
        };
        let preset = self.base_model().ok_or_else(|| {
            format!(
                "unknown disk model `{name}`; use one of: {}",
                DiskModel::preset_names().join(", ")
            )
        })?;
        let model = match self.capacity {
            Some(c) => preset.with_capacity(c),
            None => preset,
        };
        model
            .with_params(&self.params)
            .map(Some)
            .map_err(|e| format!("disks.params.{e}"))
    }

    /// The model before the plan's overrides: the model file's, else the preset's.
    pub fn base_model(&self) -> Option<DiskModel> {
        self.model_file
            .clone()
            .or_else(|| DiskModel::preset(self.model.as_deref()?))
    }

    /// The same disks, as used by an array of `n` members.
    pub fn without_count(&self, n: u32) -> DiskSet {
        DiskSet {
            count: n,
            ..self.clone()
        }
    }
}

/// A stable identifier: 16 hex digits of SHA-256 over the canonical configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CaseId(pub String);

impl CaseId {
    /// An id for something identified by a key rather than a configuration, such as an
    /// imported file (its path relative to the import root).
    pub fn from_key(key: &str) -> CaseId {
        let digest = Sha256::digest(key.as_bytes());
        CaseId(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
    }
}

impl fmt::Display for CaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One array spec × one workload on a set of disks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    pub id: CaseId,
    pub array: ArraySpec,
    pub disks: DiskSet,
    pub workload: Workload,
}

#[derive(Serialize)]
struct Identity<'a> {
    model: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_file: &'a Option<DiskModel>,
    capacity: &'a Option<Bytes>,
    span: &'a Option<Bytes>,
    #[serde(skip_serializing_if = "DiskParams::is_empty")]
    params: &'a DiskParams,
    #[serde(skip_serializing_if = "Option::is_none")]
    host_queue: &'a Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scheduler: &'a Option<Scheduler>,
    array: &'a ArraySpec,
    workload: &'a Workload,
}

impl Case {
    pub fn new(array: ArraySpec, disks: DiskSet, workload: Workload) -> Case {
        let id = Self::id_of(&array, &disks, &workload);
        Case {
            id,
            array,
            disks,
            workload,
        }
    }

    fn id_of(array: &ArraySpec, disks: &DiskSet, workload: &Workload) -> CaseId {
        let identity = Identity {
            model: &disks.model,
            model_file: &disks.model_file,
            capacity: &disks.capacity,
            span: &disks.span,
            params: &disks.params,
            host_queue: &disks.host_queue,
            scheduler: &disks.scheduler,
            array,
            workload,
        };
        let json = serde_json::to_vec(&identity).expect("plain data serialises");
        let digest = Sha256::digest(&json);
        CaseId(digest[..8].iter().map(|b| format!("{b:02x}")).collect())
    }

    /// Whether the host and vm targets lay the test region out before measuring (fio
    /// `--name=layout`: sequential 1 MiB direct writes over it): a file system's test file
    /// is written so its extents are real, a raw region so reads find data, and
    /// `[run] precondition` asks for the passes on any workload.
    pub fn lays_out(&self) -> bool {
        self.array.filesystem != crate::spec::Filesystem::None
            || self.workload.rw.reads()
            || self.workload.fio.precondition > 0
    }

    /// `raid5 512k · randwrite 4k qd4×1`.
    pub fn label(&self) -> String {
        format!("{} · {}", self.array.label(), self.workload.label())
    }
}
