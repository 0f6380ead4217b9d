//! The targets a plan can run on, and what each of them can do.
//!
//! Like fio's ioengines, each target declares its capabilities, and a plan is checked
//! against the chosen target before the first case runs ([`Plan::check_target`]): a plan
//! the target cannot do fully is refused up front with the file, line, field, value and
//! fix that every other plan error has — never halfway through a run, after other cases
//! were stored. The words (`sim`, `vm`, `host`) are defined here once, for the plan's
//! `run.target`, the command line and the labels stored with results.

use crate::plan::{Plan, PlanError};
use crate::spec::{ArrayState, Engine};
use crate::DiskModel;
use std::fmt;
use std::str::FromStr;

/// The target a together fleet's aggregate of a case is stored under (the hosts' sums,
/// not one array's figure; each host's own results are `host.NAME`).
pub const FLEET_AGGREGATE: &str = "fleet";

/// Where a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TargetKind {
    /// The discrete-event simulator of disks and md: seconds, no root, no disks.
    #[default]
    Sim,
    /// The real kernel md and fio inside qemu, on emulated member disks.
    Vm,
    /// Real devices of this machine: root, guarded, journalled.
    Host,
}

/// What a target can do; the plan is checked against it before anything runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The engines it can build arrays with.
    pub engines: &'static [Engine],
    /// It simulates the member disks, so `[disks] model` must name one.
    pub needs_disk_model: bool,
    /// It works on the plan's `[disks] devices`.
    pub needs_devices: bool,
    /// Cases take their run time on the wall clock (progress is shown in seconds).
    pub real_time: bool,
    /// It honours `[disks] host_queue` (the others run on the adapter they have).
    pub host_queue: bool,
    /// It honours `[disks] scheduler` (the others use the scheduler the disks have).
    pub scheduler: bool,
    /// The array states it can put an array in.
    pub states: &'static [ArrayState],
}

impl TargetKind {
    /// Every target, in the order help texts list them.
    pub const ALL: [TargetKind; 3] = [TargetKind::Sim, TargetKind::Vm, TargetKind::Host];

    /// The word for this target in plans, on the command line and in stored results.
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::Sim => "sim",
            TargetKind::Vm => "vm",
            TargetKind::Host => "host",
        }
    }

    /// What this target can do.
    pub fn capabilities(self) -> Capabilities {
        match self {
            TargetKind::Sim => Capabilities {
                engines: &[Engine::Md, Engine::Btrfs],
                needs_disk_model: true,
                needs_devices: false,
                real_time: false,
                host_queue: true,
                scheduler: true,
                states: &[
                    ArrayState::Healthy,
                    ArrayState::Degraded,
                    ArrayState::Rebuilding,
                ],
            },
            TargetKind::Vm => Capabilities {
                engines: &[Engine::Md, Engine::Btrfs],
                needs_disk_model: false,
                needs_devices: false,
                real_time: true,
                host_queue: false,
                scheduler: false,
                states: &[
                    ArrayState::Healthy,
                    ArrayState::Degraded,
                    ArrayState::Rebuilding,
                ],
            },
            TargetKind::Host => Capabilities {
                engines: &[Engine::Md, Engine::Btrfs],
                needs_disk_model: false,
                needs_devices: true,
                real_time: true,
                host_queue: false,
                scheduler: false,
                states: &[
                    ArrayState::Healthy,
                    ArrayState::Degraded,
                    ArrayState::Rebuilding,
                ],
            },
        }
    }

    /// Why this target lacks an engine, and what to do instead.
    fn without_engine(self, engine: Engine) -> String {
        format!("the {self} target cannot build {engine} arrays")
    }
}

impl fmt::Display for TargetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TargetKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TargetKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown target `{s}`: use sim, vm or host"))
    }
}

/// A remark on a plan that the target runs, but not entirely as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetNote(pub String);

/// What the plan is checked for: a run, or a preview (`--dry-run`) that may name the
/// devices it lacks by placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Run,
    Preview,
}

impl Plan {
    /// Fields of the plan that `kind` runs without honouring them.
    pub fn target_notes(&self, kind: TargetKind) -> Vec<TargetNote> {
        let mut notes = Vec::new();
        if let (Some(n), false) = (self.disks.host_queue, kind.capabilities().host_queue) {
            notes.push(TargetNote(format!(
                "{}: disks.host_queue = {n} is for the sim target; the {kind} target runs on the adapter it has",
                self.source.display()
            )));
        }
        if let (Some(s), false) = (self.disks.scheduler, kind.capabilities().scheduler) {
            notes.push(TargetNote(format!(
                "{}: disks.scheduler = \"{s}\" is for the sim target; the {kind} target uses the scheduler each disk has (raidlab records it)",
                self.source.display()
            )));
        }
        if kind == TargetKind::Sim && self.run.precondition > 0 {
            notes.push(TargetNote(format!(
                "{}: run.precondition = {} writes each test region before it is measured on the host and vm targets; the simulated disks keep no state such a pass would change, so the sim target skips it",
                self.source.display(),
                self.run.precondition
            )));
        }
        if kind == TargetKind::Sim {
            // `rate_iops` is modelled where the workload has one direction.
            let mut options: Vec<String> = self
                .cases()
                .iter()
                .flat_map(|c| {
                    let w = &c.workload;
                    w.fio
                        .extra
                        .keys()
                        .filter(move |k| !(*k == "rate_iops" && w.rate_iops().is_some()))
                        .cloned()
                })
                .collect();
            options.sort();
            options.dedup();
            if !options.is_empty() {
                notes.push(TargetNote(format!(
                    "{}: workloads.fio ({}) is passed to fio on the host and vm targets; the simulator does not model it, and its figures are those of the workload without it",
                    self.source.display(),
                    options.join(", ")
                )));
            }
        }
        notes
    }

    /// Check every case of the plan against what `kind` can do, before anything runs:
    /// the first field it cannot honour, with its line and the fix.
    pub fn check_target(&self, kind: TargetKind, check: Check) -> Result<(), PlanError> {
        let caps = kind.capabilities();
        for case in self.cases() {
            let engine = case.array.engine;
            if !caps.engines.contains(&engine) {
                return Err(self.error_at(
                    "arrays",
                    "engine",
                    engine.to_string(),
                    kind.without_engine(engine),
                ));
            }
            let state = case.array.state;
            if !caps.states.contains(&state) {
                return Err(self.error_at(
                    "arrays",
                    "state",
                    state.to_string(),
                    format!("the {kind} target cannot put an array in this state: use the sim target for \"{state}\" arrays, or drop it"),
                ));
            }
        }
        if caps.needs_disk_model && self.disks.model.is_none() {
            return Err(self.error_at(
                "disks",
                "model",
                String::new(),
                format!(
                    "the {kind} target simulates the disks and needs a disk model: add model = \"…\" to [disks] (one of: {})",
                    DiskModel::preset_names().join(", ")
                ),
            ));
        }
        // With devices listed, the plan itself holds `count` and every array to them.
        if caps.needs_devices && check == Check::Run && self.disks.devices.is_empty() {
            return Err(self.error_at(
                "disks",
                "devices",
                String::new(),
                format!("the {kind} target needs real devices: list them, devices = [\"/dev/disk/by-id/…\", …] (see `raidlab disks`)"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(text: &str) -> Plan {
        Plan::parse(text, Path::new("p.toml")).unwrap()
    }

    const BTRFS: &str = "name = \"x\"\n[disks]\ncount = 4\nmodel = \"hdd-7200\"\n\n[[arrays]]\nlevel = \"raid5\"\n\n[[arrays]]\nengine = \"btrfs\"\nlevel = \"raid1\"\n\n[[workloads]]\nrw = \"randread\"\n";

    #[test]
    fn words_parse_and_display_alike() {
        for k in TargetKind::ALL {
            assert_eq!(k.name().parse::<TargetKind>(), Ok(k));
            assert_eq!(k.to_string(), k.name());
        }
        assert!("qemu"
            .parse::<TargetKind>()
            .unwrap_err()
            .contains("sim, vm or host"));
    }

    #[test]
    fn every_target_builds_btrfs() {
        assert_eq!(plan(BTRFS).check_target(TargetKind::Vm, Check::Run), Ok(()));
        assert!(plan(BTRFS)
            .check_target(TargetKind::Sim, Check::Run)
            .is_ok());
    }

    #[test]
    fn host_needs_enough_devices() {
        let e = plan(BTRFS)
            .check_target(TargetKind::Host, Check::Run)
            .unwrap_err();
        assert_eq!(e.field, "disks.devices");
        assert!(e.message.contains("needs real devices"), "{e}");
        // A preview names the devices it lacks by placeholders.
        assert!(plan(BTRFS)
            .check_target(TargetKind::Host, Check::Preview)
            .is_ok());
    }

    #[test]
    fn sim_needs_a_model_and_notes_what_others_ignore() {
        let no_model = BTRFS.replace(
            "model = \"hdd-7200\"",
            "devices = [\"/dev/a\", \"/dev/b\", \"/dev/c\", \"/dev/d\"]",
        );
        let e = plan(&no_model)
            .check_target(TargetKind::Sim, Check::Run)
            .unwrap_err();
        assert_eq!(e.field, "disks.model");
        let queued = no_model.replace("count = 4", "count = 4\nhost_queue = 3");
        let notes = plan(&queued).target_notes(TargetKind::Host);
        assert!(plan(&queued).target_notes(TargetKind::Sim).is_empty());
        assert!(notes[0].0.contains("host_queue = 3"), "{notes:?}");
    }
}
