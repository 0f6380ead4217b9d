//! Plan files: parse, validate and expand a TOML plan into cases.
//!
//! A plan is what a user writes; every mistake in it must come back as
//! `file:line: field = value: what is wrong — what to do`. That is why the parser walks a
//! `toml_edit` document (which keeps every item's position) instead of deserialising
//! blindly: semantic errors such as "raid6 on 3 disks" point at the line that says so.
//!
//! `[arrays]` and `[workloads]` may each be a table or an array of tables (`[[arrays]]`):
//! each table is a matrix whose lists expand into a cross product, and the plan's cases
//! are the union of (array matrix × workload matrix) over all pairs. That lets a plan say
//! "raid5, and raid10 in n2 and f2" without asking for the meaningless raid5 f2.
//! The field-by-field reference is `docs/plan.md`.

use crate::case::{Case, DiskSet};
use crate::disk::{DiskModel, DiskParams};
use crate::spec::{
    ArraySpec, ArrayState, Bitmap, Engine, Filesystem, Governor, Layout, Level, Rebuild, Rejoin,
    Resync, Scheduler, WriteCache, DEFAULT_STRIPE_CACHE,
};
use crate::target::TargetKind;
use crate::units::{Bytes, Nanos};
use crate::workload::{Rw, Workload};
use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml_edit::{ImDocument, Item, Table, Value};

/// A parsed value and where it was written.
type At<T> = (T, Option<Range<usize>>);

/// A plan that failed to load: where, which field, which value, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<u32>,
    /// Dotted path such as `arrays.level` or `workloads[1].bs`.
    pub field: String,
    /// The offending value as written, if any.
    pub value: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
    /// Other mistakes found in the same plan (in other tables), so that a plan with four
    /// mistakes takes one run to see them all, not four. Boxed: an error stays small.
    pub also: Box<Vec<PlanError>>,
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        write!(f, ": {}", self.field)?;
        if let Some(v) = &self.value {
            write!(f, " = {v}")?;
        }
        write!(f, ": {}", self.message)?;
        for e in self.also.iter() {
            write!(f, "\n{e}")?;
        }
        Ok(())
    }
}

impl PlanError {
    /// The first of `errors`, carrying the others (`None` when there are none).
    pub(crate) fn all(mut errors: Vec<PlanError>) -> Option<PlanError> {
        if errors.is_empty() {
            return None;
        }
        let mut first = errors.remove(0);
        first.also = Box::new(errors);
        Some(first)
    }
}

impl std::error::Error for PlanError {}

/// Options for how the plan runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// Results per case.
    pub repeat: u32,
    /// Seed for the simulator's random streams.
    pub seed: u64,
    /// Default target when the command line names none.
    pub target: Option<TargetKind>,
    /// Sequential write passes over each case's test region before it is measured
    /// (`[run] precondition`; 0: none). Copied into every workload, as it changes what
    /// is measured.
    pub precondition: u32,
    /// How a fleet (`run --hosts`) runs the plan (`[run] fleet`).
    pub fleet: FleetMode,
}

/// How the hosts of a fleet run a plan together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FleetMode {
    /// Each host runs the plan at its own pace (`"independent"`, the default).
    #[default]
    Independent,
    /// Every host runs each case at the same moment, its fio started by the controller
    /// through fio's client/server (`"together"`).
    Together,
}

impl std::str::FromStr for FleetMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "independent" => Ok(FleetMode::Independent),
            "together" => Ok(FleetMode::Together),
            _ => Err("use \"independent\" (each host at its own pace) or \"together\" (every host runs each case at the same moment)".into()),
        }
    }
}

/// Without a `[run]` table: one result per case, seed 1, the command line's target.
impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            repeat: 1,
            seed: 1,
            target: None,
            precondition: 0,
            fleet: FleetMode::Independent,
        }
    }
}

/// A loaded, validated plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub description: Option<String>,
    pub source: PathBuf,
    pub disks: DiskSet,
    pub run: RunOptions,
    cases: Vec<Case>,
    /// The plan's text, to point later checks (the target's) at a line.
    text: String,
}

impl Plan {
    /// Read and validate a plan file.
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        Plan::parse(&read_file(path, "the plan")?, path)
    }

    /// Parse plan text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Plan, PlanError> {
        let doc = ImDocument::parse(text.to_string()).map_err(|e| PlanError {
            file: path.to_path_buf(),
            line: e.span().map(|s| line_of(text, s.start)),
            field: "(syntax)".into(),
            value: None,
            message: e.message().trim().to_string() + " — the file is not valid TOML",
            also: Box::default(),
        })?;
        let cx = Cx { text, path };
        cx.plan(doc.as_table())
    }

    /// A plan built in code rather than read from a file: see [`PlanBuilder`].
    pub fn builder(name: &str) -> PlanBuilder {
        PlanBuilder::new(name)
    }

    /// Every case, in plan order, without repetitions.
    pub fn cases(&self) -> &[Case] {
        &self.cases
    }

    /// Expected run time of every case × repetition (runtime + ramp), the sum a target
    /// needs at least.
    pub fn expected_runtime(&self) -> Nanos {
        let per: u64 = self
            .cases
            .iter()
            .map(|c| (c.workload.runtime + c.workload.ramp).get())
            .sum();
        Nanos(per * self.run.repeat as u64)
    }

    /// An error about `key` of the `[section]` table, or of the first `[[section]]`
    /// entry whose `key` mentions `value` (or has the key at all, for an empty `value`),
    /// pointing at its line as the parser's errors do.
    pub(crate) fn error_at(
        &self,
        section: &str,
        key: &str,
        value: String,
        message: String,
    ) -> PlanError {
        let doc = ImDocument::parse(self.text.clone()).ok();
        let item = doc.as_ref().and_then(|d| d.as_table().get(section));
        let (field, span) = match item {
            Some(Item::ArrayOfTables(entries)) => entries
                .iter()
                .enumerate()
                .find_map(|(i, t)| {
                    let it = t.get(key)?;
                    show(it).contains(value.as_str()).then(|| {
                        (
                            format!("{}.{key}", indexed(section, i, entries.len())),
                            it.span().or_else(|| t.span()),
                        )
                    })
                })
                .unwrap_or((format!("{section}.{key}"), None)),
            Some(Item::Table(t)) => (
                format!("{section}.{key}"),
                t.get(key).and_then(|i| i.span()).or_else(|| t.span()),
            ),
            _ => (format!("{section}.{key}"), None),
        };
        PlanError {
            file: self.source.clone(),
            line: span.map(|s| line_of(&self.text, s.start)),
            field,
            value: (!value.is_empty()).then(|| format!("{value:?}")),
            message,
            also: Box::default(),
        }
    }
}

/// A plan or model file's text, or the error that says it cannot be read.
pub(crate) fn read_file(path: &Path, what: &str) -> Result<String, PlanError> {
    std::fs::read_to_string(path).map_err(|e| PlanError {
        file: path.to_path_buf(),
        line: None,
        field: "(file)".into(),
        value: None,
        message: format!("cannot read {what}: {e}"),
        also: Box::default(),
    })
}

/// The 1-based line of a byte offset (a plan of more than 4 billion lines is no plan).
pub(crate) fn line_of(text: &str, byte: usize) -> u32 {
    let n = text[..byte.min(text.len())].matches('\n').count() + 1;
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Parsing context: the text (for line numbers) and the file name.
struct Cx<'a> {
    text: &'a str,
    path: &'a Path,
}

/// A field being read: its path, its span and its item.
#[derive(Clone, Copy)]
struct Field<'a> {
    path: &'a str,
    item: &'a Item,
}

mod arrays;
mod build;
mod expand;
mod read;
mod sections;
mod workloads;

use read::Key;

pub use build::{FieldValue, PlanBuilder};
pub use expand::usable_bytes;

impl<'a> Cx<'a> {
    pub(super) fn err(
        &self,
        span: Option<Range<usize>>,
        field: &str,
        value: Option<String>,
        msg: impl Into<String>,
    ) -> PlanError {
        PlanError {
            file: self.path.to_path_buf(),
            line: span.map(|s| line_of(self.text, s.start)),
            field: field.to_string(),
            value,
            message: msg.into(),
            also: Box::default(),
        }
    }
}

fn indexed(name: &str, i: usize, n: usize) -> String {
    if n > 1 {
        format!("{name}[{i}]")
    } else {
        name.to_string()
    }
}

fn show(item: &Item) -> String {
    item.to_string().trim().to_string()
}

#[cfg(test)]
mod tests;
