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
    ArraySpec, Bitmap, Engine, Filesystem, Layout, Level, Resync, WriteCache, DEFAULT_STRIPE_CACHE,
};
use crate::target::TargetKind;
use crate::units::{Bytes, Nanos};
use crate::workload::{Rw, Workload};
use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use toml_edit::{ImDocument, Item, Table, Value};

/// A parsed value and where it was written.
type At<T> = (T, Option<Range<usize>>);

/// A plan that failed to load: where, which field, which value, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanError {
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// Dotted path such as `arrays.level` or `workloads[1].bs`.
    pub field: String,
    /// The offending value as written, if any.
    pub value: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
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
        write!(f, ": {}", self.message)
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
        let text = std::fs::read_to_string(path).map_err(|e| PlanError {
            file: path.to_path_buf(),
            line: None,
            field: "(file)".into(),
            value: None,
            message: format!("cannot read the plan: {e}"),
        })?;
        Plan::parse(&text, path)
    }

    /// Parse plan text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Plan, PlanError> {
        let doc = ImDocument::parse(text.to_string()).map_err(|e| PlanError {
            file: path.to_path_buf(),
            line: e.span().map(|s| line_of(text, s.start)),
            field: "(syntax)".into(),
            value: None,
            message: e.message().trim().to_string() + " — the file is not valid TOML",
        })?;
        let cx = Cx { text, path };
        cx.plan(doc.as_table())
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
        }
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
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

impl<'a> Cx<'a> {
    fn err(
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
        }
    }

    fn plan(&self, root: &Table) -> Result<Plan, PlanError> {
        self.known_keys(
            root,
            "",
            &["name", "description", "disks", "arrays", "workloads", "run"],
        )?;
        let name = match root.get("name") {
            Some(item) => self.string(Field { path: "name", item })?,
            None => {
                return Err(self.err(
                    None,
                    "name",
                    None,
                    "the plan needs a name, e.g. name = \"my-array-test\"",
                ));
            }
        };
        if name.trim().is_empty()
            || name.contains('/')
            || name.chars().any(char::is_control)
            || name == "."
            || name == ".."
        {
            return Err(self.err(
                root.get("name").and_then(|i| i.span()),
                "name",
                Some(format!("{name:?}")),
                "use a non-empty name without `/` or control characters, not `.` or `..`: it names the results directory",
            ));
        }
        let description = root
            .get("description")
            .map(|item| {
                self.string(Field {
                    path: "description",
                    item,
                })
            })
            .transpose()?;

        let disks_item = root.get("disks").ok_or_else(|| {
            self.err(
                None,
                "disks",
                None,
                "add a [disks] table, e.g. [disks] count = 4, model = \"hdd-7200\"",
            )
        })?;
        let disks_table = self.table(Field {
            path: "disks",
            item: disks_item,
        })?;
        let disks = self.disks(disks_table)?;
        let member_size = self.member_size(&disks, disks_table)?;

        let run = match root.get("run") {
            Some(item) => self.run(self.table(Field { path: "run", item })?)?,
            None => RunOptions {
                repeat: 1,
                seed: 1,
                target: None,
            },
        };

        let arrays = self.tables(root, "arrays")?;
        let workloads = self.tables(root, "workloads")?;

        let mut array_specs = Vec::new();
        for (i, t) in arrays.iter().enumerate() {
            let prefix = indexed("arrays", i, arrays.len());
            array_specs.extend(self.array_matrix(t, &prefix, disks.count)?);
        }
        let mut workload_list = Vec::new();
        for (i, t) in workloads.iter().enumerate() {
            let prefix = indexed("workloads", i, workloads.len());
            workload_list.extend(self.workload_matrix(t, &prefix)?);
        }

        let mut cases = Vec::new();
        let mut seen = BTreeSet::new();
        for (array, array_span) in &array_specs {
            // Devices of unknown size (host target): the target checks when it probes them.
            let sizes = member_size.map(|m| (m, usable_bytes(array, m)));
            for (w, w_span) in &workload_list {
                if let Some((member, usable)) = sizes.filter(|(_, u)| w.offset + w.size > *u) {
                    return Err(self.err(
                        w_span.clone().or(array_span.clone()),
                        "workloads.size",
                        Some(format!("\"{}\"", w.size.to_fio())),
                        format!(
                            "{} on {} × {} holds only {} (members of {}); make size + offset smaller or the disks (or span) larger",
                            array.label(),
                            array.disks,
                            disks.model.as_deref().unwrap_or("disks"),
                            usable,
                            member
                        ),
                    ));
                }
                let case = Case::new(array.clone(), disks.without_count(array.disks), w.clone());
                if seen.insert(case.id.clone()) {
                    cases.push(case);
                }
            }
        }
        Ok(Plan {
            name,
            description,
            source: self.path.to_path_buf(),
            disks,
            run,
            cases,
            text: self.text.to_string(),
        })
    }

    fn known_keys(&self, t: &Table, prefix: &str, known: &[&str]) -> Result<(), PlanError> {
        for (k, item) in t.iter() {
            if !known.contains(&k) {
                let field = if prefix.is_empty() {
                    k.to_string()
                } else {
                    format!("{prefix}.{k}")
                };
                let span = t.key(k).and_then(|key| key.span()).or_else(|| item.span());
                return Err(self.err(
                    span,
                    &field,
                    None,
                    format!("unknown field; the fields here are: {}", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// `[x]` or `[[x]]`: one or more tables.
    fn tables(&self, root: &'a Table, name: &str) -> Result<Vec<&'a Table>, PlanError> {
        match root.get(name) {
            None => Err(self.err(
                None,
                name,
                None,
                format!("add a [{name}] table (see docs/plan.md)"),
            )),
            Some(Item::Table(t)) => Ok(vec![t]),
            Some(Item::ArrayOfTables(a)) if !a.is_empty() => Ok(a.iter().collect()),
            Some(other) => Err(self.err(
                other.span(),
                name,
                None,
                format!("must be a table [{name}] or tables [[{name}]]"),
            )),
        }
    }

    fn table(&self, f: Field<'a>) -> Result<&'a Table, PlanError> {
        f.item.as_table().ok_or_else(|| {
            self.err(
                f.item.span(),
                f.path,
                None,
                format!("must be a table: write [{}] on its own line", f.path),
            )
        })
    }

    fn string(&self, f: Field<'_>) -> Result<String, PlanError> {
        match f.item.as_str() {
            Some(s) => Ok(s.to_string()),
            None => Err(self.err(
                f.item.span(),
                f.path,
                Some(show(f.item)),
                "must be a string in quotes",
            )),
        }
    }

    /// A scalar or a list of scalars, as (text, span) pairs. Integers are given as text,
    /// except where the field takes words or paths (`text_only`): `level = 5` is no level.
    fn list(&self, f: Field<'_>, text_only: bool) -> Result<Vec<At<String>>, PlanError> {
        let one = |v: &Value| -> Result<At<String>, PlanError> {
            match v {
                Value::String(s) => Ok((s.value().clone(), v.span())),
                Value::Integer(_) | Value::Boolean(_) if text_only => {
                    let shown = v.to_string().trim().to_string();
                    Err(self.err(
                        v.span(),
                        f.path,
                        Some(shown.clone()),
                        format!(
                            "must be text in quotes: write \"{shown}\" if that is what you mean"
                        ),
                    ))
                }
                Value::Integer(i) => Ok((i.value().to_string(), v.span())),
                Value::Boolean(b) => Ok((b.value().to_string(), v.span())),
                _ => Err(self.err(
                    v.span(),
                    f.path,
                    Some(v.to_string().trim().to_string()),
                    "must be a string, a number, or a list of them",
                )),
            }
        };
        match f.item {
            Item::Value(Value::Array(a)) => a.iter().map(one).collect(),
            Item::Value(v) => Ok(vec![one(v)?]),
            _ => Err(self.err(
                f.item.span(),
                f.path,
                None,
                "must be a value or a list, not a table",
            )),
        }
    }

    /// Parse every element of a list field with `FromStr`, reporting the bad one.
    fn parsed<T: PlanValue>(&self, f: Field<'_>, what: &str) -> Result<Vec<At<T>>, PlanError>
    where
        T::Err: fmt::Display,
    {
        let mut out = Vec::new();
        for (s, span) in self.list(f, T::TEXT_ONLY)? {
            match s.parse::<T>() {
                Ok(v) => out.push((v, span)),
                Err(e) => {
                    return Err(self.err(
                        span,
                        f.path,
                        Some(format!("{s:?}")),
                        format!("not a valid {what}: {e}"),
                    ))
                }
            }
        }
        Ok(out)
    }

    fn single<T: PlanValue>(
        &self,
        t: &'a Table,
        prefix: &str,
        key: &str,
        what: &str,
    ) -> Result<Option<At<T>>, PlanError>
    where
        T::Err: fmt::Display,
    {
        let Some(item) = t.get(key) else {
            return Ok(None);
        };
        let path = format!("{prefix}.{key}");
        let mut v = self.parsed::<T>(Field { path: &path, item }, what)?;
        if v.len() != 1 {
            return Err(self.err(
                item.span(),
                &path,
                Some(show(item)),
                "takes one value, not a list",
            ));
        }
        Ok(v.pop())
    }

    fn many<T: PlanValue>(
        &self,
        t: &'a Table,
        prefix: &str,
        key: &str,
        what: &str,
    ) -> Result<Vec<At<T>>, PlanError>
    where
        T::Err: fmt::Display,
    {
        match t.get(key) {
            None => Ok(vec![]),
            Some(item) => self.parsed(
                Field {
                    path: &format!("{prefix}.{key}"),
                    item,
                },
                what,
            ),
        }
    }

    fn disks(&self, t: &'a Table) -> Result<DiskSet, PlanError> {
        self.known_keys(
            t,
            "disks",
            &[
                "count",
                "model",
                "capacity",
                "span",
                "devices",
                "params",
                "host_queue",
            ],
        )?;
        let devices = self.many::<String>(t, "disks", "devices", "device path")?;
        if let Some((d, span)) = devices.iter().find(|(d, _)| !d.starts_with('/')) {
            return Err(self.err(
                span.clone(),
                "disks.devices",
                Some(format!("{d:?}")),
                "device paths are absolute: name each disk as /dev/disk/by-id/… (see `raidlab disks`)",
            ));
        }
        let devices: Vec<String> = devices.into_iter().map(|d| d.0).collect();
        let count = match self.single::<u32>(t, "disks", "count", "disk count")? {
            Some((c, span)) => {
                if c == 0 || c > 256 {
                    return Err(self.err(
                        span,
                        "disks.count",
                        Some(c.to_string()),
                        "use between 1 and 256 disks",
                    ));
                }
                if !devices.is_empty() && devices.len() != c as usize {
                    return Err(self.err(
                        span,
                        "disks.count",
                        Some(c.to_string()),
                        format!(
                            "{} devices are listed; make count match or drop it",
                            devices.len()
                        ),
                    ));
                }
                c
            }
            None if !devices.is_empty() => devices.len() as u32,
            None => {
                return Err(self.err(
                    t.span(),
                    "disks.count",
                    None,
                    "say how many disks, e.g. count = 4",
                ))
            }
        };
        let model = match self.single::<String>(t, "disks", "model", "disk model")? {
            Some((m, span)) => {
                if DiskModel::preset(&m).is_none() {
                    return Err(self.err(
                        span,
                        "disks.model",
                        Some(format!("{m:?}")),
                        format!(
                            "unknown disk model; use one of: {}",
                            DiskModel::preset_names().join(", ")
                        ),
                    ));
                }
                Some(m)
            }
            None => None,
        };
        let capacity = self.single::<Bytes>(t, "disks", "capacity", "size")?;
        let span = self.single::<Bytes>(t, "disks", "span", "size")?;
        if let Some((c, s)) = &capacity {
            if c.0 < Bytes::mib(64).0 {
                return Err(self.err(
                    s.clone(),
                    "disks.capacity",
                    Some(c.to_fio()),
                    "a disk must hold at least 64m",
                ));
            }
        }
        let params = self.disk_params(t, model.as_deref(), capacity.as_ref().map(|c| c.0))?;
        let host_queue = match self.single::<u32>(t, "disks", "host_queue", "command count")? {
            Some((0, span)) => {
                return Err(self.err(
                    span,
                    "disks.host_queue",
                    Some("0".into()),
                    "the host adapter takes at least one command; drop host_queue for disks on their own ports",
                ))
            }
            other => other.map(|(n, _)| n),
        };
        let set = DiskSet {
            count,
            model,
            capacity: capacity.map(|c| c.0),
            span: span.map(|s| s.0),
            devices,
            params,
            host_queue,
        };
        Ok(set)
    }

    /// `[disks.params]`: overrides of the model's figures, kept as written, checked against
    /// the model (with the plan's capacity) they override.
    fn disk_params(
        &self,
        t: &Table,
        model: Option<&str>,
        capacity: Option<Bytes>,
    ) -> Result<DiskParams, PlanError> {
        let Some(item) = t.get("params") else {
            return Ok(DiskParams::new());
        };
        let Some(table) = item.as_table_like() else {
            return Err(self.err(
                item.span(),
                "disks.params",
                None,
                "use a table, e.g. [disks.params] queue_depth = 1",
            ));
        };
        if model.is_none() && !table.is_empty() {
            return Err(self.err(
                item.span(),
                "disks.params",
                None,
                "parameters override a disk model's figures; set disks.model too",
            ));
        }
        let mut params = DiskParams::new();
        for (k, v) in table.iter() {
            let text = match v.as_value() {
                Some(Value::String(s)) => s.value().clone(),
                Some(Value::Integer(i)) => i.value().to_string(),
                Some(Value::Float(f)) => f.value().to_string(),
                _ => {
                    return Err(self.err(
                        v.span(),
                        &format!("disks.params.{k}"),
                        None,
                        "use a number or a quoted value with its unit, e.g. \"9ms\" or \"64m\"",
                    ))
                }
            };
            params.insert(k.to_string(), text);
        }
        if let Some(m) = model {
            let preset = DiskModel::preset(m).expect("disks.model was checked");
            let preset = match capacity {
                Some(c) => preset.with_capacity(c),
                None => preset,
            };
            if let Err(e) = preset.with_params(&params) {
                return Err(self.err(
                    table.key(&e.key).and_then(|k| k.span()),
                    &format!("disks.params.{}", e.key),
                    Some(format!("{:?}", e.value)),
                    e.why,
                ));
            }
        }
        Ok(params)
    }

    /// The bytes of each member an array may use: the span, else the capacity; `None`
    /// for real devices of unknown size.
    fn member_size(&self, disks: &DiskSet, t: &Table) -> Result<Option<Bytes>, PlanError> {
        let capacity = disks.capacity.or_else(|| {
            disks
                .model
                .as_deref()
                .and_then(DiskModel::preset)
                .map(|m| m.capacity())
        });
        match (disks.span, capacity) {
            (Some(s), Some(c)) if s > c => Err(self.err(
                t.get("span").and_then(|i| i.span()),
                "disks.span",
                Some(s.to_fio()),
                format!("is larger than the disk ({c}); use a span up to the capacity"),
            )),
            (Some(s), _) => Ok(Some(s)),
            (None, c) => Ok(c),
        }
    }

    fn run(&self, t: &'a Table) -> Result<RunOptions, PlanError> {
        self.known_keys(t, "run", &["repeat", "seed", "target"])?;
        let repeat = match self.single::<u32>(t, "run", "repeat", "count")? {
            Some((0, s)) => {
                return Err(self.err(s, "run.repeat", Some("0".into()), "use 1 or more"))
            }
            Some((r, _)) => r,
            None => 1,
        };
        let seed = self
            .single::<u64>(t, "run", "seed", "number")?
            .map(|s| s.0)
            .unwrap_or(1);
        let target = match self.single::<String>(t, "run", "target", "target")? {
            Some((tg, s)) => Some(
                tg.parse::<TargetKind>()
                    .map_err(|e| self.err(s, "run.target", Some(format!("{tg:?}")), e))?,
            ),
            None => None,
        };
        Ok(RunOptions {
            repeat,
            seed,
            target,
        })
    }

    fn array_matrix(
        &self,
        t: &'a Table,
        prefix: &str,
        plan_disks: u32,
    ) -> Result<Vec<At<ArraySpec>>, PlanError> {
        self.known_keys(
            t,
            prefix,
            &[
                "engine",
                "level",
                "layout",
                "chunk",
                "disks",
                "filesystem",
                "write_cache",
                "bitmap",
                "resync",
                "stripe_cache",
            ],
        )?;
        let (engine, _) = self
            .single::<Engine>(t, prefix, "engine", "engine")?
            .unwrap_or((Engine::Md, None));
        let levels = self.many::<Level>(t, prefix, "level", "RAID level")?;
        if levels.is_empty() {
            return Err(self.err(
                t.span(),
                &format!("{prefix}.level"),
                None,
                "name at least one level, e.g. level = [\"raid5\", \"raid10\"]",
            ));
        }
        let layouts = self.many::<Layout>(t, prefix, "layout", "layout")?;
        let chunks = self.many::<Bytes>(t, prefix, "chunk", "chunk size")?;
        let disk_counts = self.many::<u32>(t, prefix, "disks", "disk count")?;
        let filesystems = self.many::<FsName>(t, prefix, "filesystem", "file system")?;
        let (write_cache, _) = self
            .single::<WcName>(t, prefix, "write_cache", "write cache setting")?
            .unwrap_or((WcName(WriteCache::Keep), None));
        let (bitmap, _) = self
            .single::<BitmapName>(t, prefix, "bitmap", "bitmap setting")?
            .unwrap_or((BitmapName(Bitmap::None), None));
        let (resync, _) = self
            .single::<ResyncName>(t, prefix, "resync", "resync policy")?
            .unwrap_or((ResyncName(Resync::Wait), None));
        let stripe_cache = self.single::<u32>(t, prefix, "stripe_cache", "page count")?;
        if let Some((n, s)) = &stripe_cache {
            if !(17..=32768).contains(n) {
                return Err(self.err(
                    s.clone(),
                    &format!("{prefix}.stripe_cache"),
                    Some(n.to_string()),
                    "md accepts 17 to 32768 pages",
                ));
            }
        }

        for (level, span) in &levels {
            if !level.supported_by(engine) {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.level"),
                    Some(format!("\"{level}\"")),
                    format!("{engine} has no {level}; use engine = \"btrfs\" or another level"),
                ));
            }
        }
        for (layout, span) in &layouts {
            if engine == Engine::Btrfs {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.layout"),
                    Some(format!("\"{layout}\"")),
                    "btrfs profiles have no layout; remove `layout`",
                ));
            }
            for (level, _) in &levels {
                let fits = match level {
                    Level::Raid10 => layout.is_raid10(),
                    Level::Raid5 | Level::Raid6 => !layout.is_raid10(),
                    _ => false,
                };
                if !fits {
                    return Err(self.err(span.clone(), &format!("{prefix}.layout"), Some(format!("\"{layout}\"")), format!("{layout} does not apply to {level}; put {level} in its own [[arrays]] table without this layout")));
                }
            }
        }
        if engine == Engine::Btrfs {
            if let Some((c, span)) = chunks.first() {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.chunk"),
                    Some(format!("\"{}\"", c.to_fio())),
                    "btrfs has a fixed stripe size and no chunk option; remove `chunk`",
                ));
            }
        }
        if !chunks.is_empty() && !levels.iter().any(|(l, _)| l.has_chunk()) {
            let (c, span) = &chunks[0];
            return Err(self.err(
                span.clone(),
                &format!("{prefix}.chunk"),
                Some(format!("\"{}\"", c.to_fio())),
                "none of these levels stripes in chunks; remove `chunk`",
            ));
        }
        for (c, span) in &chunks {
            if !c.is_power_of_two() || c.0 < 4096 {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.chunk"),
                    Some(format!("\"{}\"", c.to_fio())),
                    "md needs a power of two of at least 4k, e.g. 64k, 512k, 1m",
                ));
            }
        }
        let mut filesystems: Vec<At<Filesystem>> =
            filesystems.into_iter().map(|(f, s)| (f.0, s)).collect();
        if filesystems.is_empty() {
            filesystems.push((
                if engine == Engine::Btrfs {
                    Filesystem::Btrfs
                } else {
                    Filesystem::Xfs
                },
                None,
            ));
        }
        for (fs, span) in &filesystems {
            let ok = match engine {
                Engine::Btrfs => *fs == Filesystem::Btrfs,
                Engine::Md => *fs != Filesystem::Btrfs,
            };
            if !ok {
                let fix = if engine == Engine::Btrfs {
                    "btrfs makes its own file system; remove `filesystem` or set it to \"btrfs\""
                } else {
                    "on md use xfs, ext4 or none; for btrfs RAID use engine = \"btrfs\""
                };
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.filesystem"),
                    Some(format!("\"{fs}\"")),
                    fix,
                ));
            }
        }
        let counts: Vec<At<u32>> = if disk_counts.is_empty() {
            vec![(plan_disks, None)]
        } else {
            disk_counts
        };
        for (n, span) in &counts {
            if *n == 0 || *n > plan_disks {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.disks"),
                    Some(n.to_string()),
                    format!("use 1 to {plan_disks} members: the plan has {plan_disks} disks"),
                ));
            }
        }

        let mut out = Vec::new();
        for (level, level_span) in &levels {
            for (n, n_span) in &counts {
                let min = level.min_disks(engine);
                if *n < min {
                    let (span, field) = if n_span.is_some() {
                        (n_span.clone(), "disks")
                    } else {
                        (level_span.clone(), "level")
                    };
                    return Err(self.err(span, &format!("{prefix}.{field}"), Some(format!("\"{level}\"")), format!("{level} needs at least {min} disks and this array has {n}; add disks or drop {level}")));
                }
                let layouts_here: Vec<Option<Layout>> = if layouts.is_empty()
                    || level.default_layout().is_none()
                    || engine == Engine::Btrfs
                {
                    vec![if engine == Engine::Md {
                        level.default_layout()
                    } else {
                        None
                    }]
                } else {
                    layouts.iter().map(|(l, _)| Some(*l)).collect()
                };
                for layout in layouts_here {
                    if let Some(copies) = layout.and_then(Layout::copies) {
                        if copies as u32 > *n {
                            let span = layouts
                                .iter()
                                .find(|(l, _)| Some(*l) == layout)
                                .and_then(|(_, s)| s.clone());
                            return Err(self.err(span, &format!("{prefix}.layout"), Some(format!("\"{}\"", layout.unwrap())), format!("{copies} copies need at least {copies} disks and this array has {n}")));
                        }
                    }
                    let chunk_list: Vec<Option<Bytes>> =
                        if engine == Engine::Btrfs || !level.has_chunk() {
                            vec![None]
                        } else if chunks.is_empty() {
                            vec![Some(Bytes::kib(512))]
                        } else {
                            chunks.iter().map(|(c, _)| Some(*c)).collect()
                        };
                    for chunk in chunk_list {
                        for (fs, _) in &filesystems {
                            out.push((
                                ArraySpec {
                                    engine,
                                    level: *level,
                                    layout,
                                    chunk,
                                    disks: if *level == Level::Single { 1 } else { *n },
                                    filesystem: *fs,
                                    write_cache: write_cache.0,
                                    bitmap: if engine == Engine::Md
                                        && (level.has_chunk() || *level == Level::Raid1)
                                    {
                                        bitmap.0
                                    } else {
                                        Bitmap::None
                                    },
                                    resync: if engine == Engine::Md
                                        && *level != Level::Single
                                        && *level != Level::Raid0
                                    {
                                        resync.0
                                    } else {
                                        Resync::AssumeClean
                                    },
                                    stripe_cache: match level {
                                        Level::Raid5 | Level::Raid6 if engine == Engine::Md => {
                                            Some(
                                                stripe_cache
                                                    .as_ref()
                                                    .map(|s| s.0)
                                                    .unwrap_or(DEFAULT_STRIPE_CACHE),
                                            )
                                        }
                                        _ => None,
                                    },
                                },
                                level_span.clone(),
                            ));
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    fn workload_matrix(&self, t: &'a Table, prefix: &str) -> Result<Vec<At<Workload>>, PlanError> {
        self.known_keys(
            t,
            prefix,
            &[
                "rw",
                "bs",
                "iodepth",
                "numjobs",
                "size",
                "offset",
                "runtime",
                "ramp",
                "rwmixread",
                "ioengine",
                "direct",
            ],
        )?;
        let rws = self.many::<Rw>(t, prefix, "rw", "fio rw mode")?;
        if rws.is_empty() {
            return Err(self.err(
                t.span(),
                &format!("{prefix}.rw"),
                None,
                "name at least one, e.g. rw = [\"randread\", \"randwrite\"]",
            ));
        }
        let or_default = |v: Vec<At<u32>>, d: u32| {
            if v.is_empty() {
                vec![(d, None)]
            } else {
                v
            }
        };
        let mut bss = self.many::<Bytes>(t, prefix, "bs", "block size")?;
        if bss.is_empty() {
            bss.push((Bytes::kib(4), None));
        }
        let depths = or_default(self.many::<u32>(t, prefix, "iodepth", "queue depth")?, 1);
        let jobs = or_default(self.many::<u32>(t, prefix, "numjobs", "job count")?, 1);
        let size = self.single::<Bytes>(t, prefix, "size", "size")?;
        let (size, size_span) = size.unwrap_or((Bytes::gib(1), None));
        let (offset, _) = self
            .single::<Bytes>(t, prefix, "offset", "size")?
            .unwrap_or((Bytes(0), None));
        let (runtime, rt_span) = self
            .single::<Nanos>(t, prefix, "runtime", "duration")?
            .unwrap_or((Nanos::from_secs(60), None));
        let (ramp, _) = self
            .single::<Nanos>(t, prefix, "ramp", "duration")?
            .unwrap_or((Nanos::ZERO, None));
        let (rwmix, mix_span) = self
            .single::<u8>(t, prefix, "rwmixread", "percentage")?
            .unwrap_or((50, None));
        let (ioengine, _) = self
            .single::<String>(t, prefix, "ioengine", "fio ioengine")?
            .unwrap_or(("libaio".into(), None));
        let (direct, _) = self
            .single::<bool>(t, prefix, "direct", "true or false")?
            .unwrap_or((true, None));

        if runtime.0 < Nanos::from_millis(100).0 {
            return Err(self.err(
                rt_span,
                &format!("{prefix}.runtime"),
                Some(format!("\"{runtime}\"")),
                "use at least 100ms, e.g. \"60s\"",
            ));
        }
        if rwmix > 100 {
            return Err(self.err(
                mix_span,
                &format!("{prefix}.rwmixread"),
                Some(rwmix.to_string()),
                "a percentage: 0 to 100",
            ));
        }
        for (bs, span) in &bss {
            if bs.0 < 512 || !bs.0.is_multiple_of(512) {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.bs"),
                    Some(format!("\"{}\"", bs.to_fio())),
                    "use a multiple of 512 bytes, e.g. 4k or 1m",
                ));
            }
            if *bs > size {
                return Err(self.err(
                    size_span.clone(),
                    &format!("{prefix}.size"),
                    Some(format!("\"{}\"", size.to_fio())),
                    format!(
                        "smaller than the block size {}; make size larger",
                        bs.to_fio()
                    ),
                ));
            }
        }
        for (d, span) in &depths {
            if *d == 0 || *d > 65536 {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.iodepth"),
                    Some(d.to_string()),
                    "use 1 to 65536",
                ));
            }
        }
        for (j, span) in &jobs {
            if *j == 0 || *j > 1024 {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.numjobs"),
                    Some(j.to_string()),
                    "use 1 to 1024",
                ));
            }
        }
        let mut out = Vec::new();
        for (rw, rw_span) in &rws {
            for (bs, _) in &bss {
                for (iodepth, _) in &depths {
                    for (numjobs, _) in &jobs {
                        out.push((
                            Workload {
                                rw: *rw,
                                bs: *bs,
                                iodepth: *iodepth,
                                numjobs: *numjobs,
                                size,
                                offset,
                                runtime,
                                ramp,
                                rwmixread: if matches!(rw, Rw::RandRw | Rw::Rw) {
                                    rwmix
                                } else {
                                    rw.read_fraction(0) as u8 * 100
                                },
                                ioengine: ioengine.clone(),
                                direct,
                            },
                            size_span.clone().or(rw_span.clone()),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Usable bytes of the array given each member's usable size.
pub fn usable_bytes(a: &ArraySpec, member: Bytes) -> Bytes {
    let frac = a.capacity_fraction();
    Bytes(((member.0 as f64) * a.disks as f64 * frac) as u64)
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

// Plan spellings of the enums (lowercase words), with the fix in the error.
/// What a plan field's type takes from TOML: words and paths only as quoted text, numbers
/// (counts, sizes, durations) as TOML numbers or text.
trait PlanValue: FromStr {
    const TEXT_ONLY: bool;
}

macro_rules! plan_values {
    ($text:expr => $($t:ty),+) => { $(impl PlanValue for $t { const TEXT_ONLY: bool = $text; })+ };
}
plan_values!(true => String, Engine, Level, Layout, Rw, FsName, WcName, BitmapName, ResyncName);
plan_values!(false => u8, u32, u64, bool, Bytes, Nanos);

macro_rules! word_enum {
    ($name:ident, $inner:ty, $help:expr, { $($word:expr => $val:expr),+ $(,)? }) => {
        struct $name($inner);
        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s.to_ascii_lowercase().as_str() {
                    $($word => Ok($name($val)),)+
                    _ => Err($help.to_string()),
                }
            }
        }
    };
}

word_enum!(FsName, Filesystem, "use xfs, ext4, btrfs or none", {
    "xfs" => Filesystem::Xfs, "ext4" => Filesystem::Ext4, "btrfs" => Filesystem::Btrfs, "none" => Filesystem::None, "raw" => Filesystem::None,
});
word_enum!(WcName, WriteCache, "use off, on or keep", {
    "off" => WriteCache::Off, "on" => WriteCache::On, "keep" => WriteCache::Keep,
});
word_enum!(BitmapName, Bitmap, "use none or internal", {
    "none" => Bitmap::None, "internal" => Bitmap::Internal,
});
word_enum!(ResyncName, Resync, "use wait, assume-clean or during", {
    "wait" => Resync::Wait, "assume-clean" => Resync::AssumeClean, "during" => Resync::During,
});

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_2013: &str = r#"
name = "seed-2013"
[disks]
count = 6
model = "hdd-7200-500g-2010"
[arrays]
engine = "md"
level = ["raid0", "raid10", "raid5", "raid6"]
layout = []
chunk = ["512k"]
filesystem = "xfs"
write_cache = "off"
[workloads]
rw = ["randread", "randwrite"]
bs = ["4k"]
iodepth = [4]
numjobs = [1]
size = "10g"
runtime = "60s"
[run]
repeat = 1
"#;

    fn parse(s: &str) -> Result<Plan, PlanError> {
        Plan::parse(s, Path::new("p.toml"))
    }

    /// Issue 15, item 13: a number where a word belongs, relative or non-text device
    /// paths, and control characters in the name are refused, each at its line.
    #[test]
    fn numbers_for_words_relative_devices_and_control_characters_are_refused() {
        let cases = [
            (
                SEED_2013.replace(
                    "level = [\"raid0\", \"raid10\", \"raid5\", \"raid6\"]",
                    "level = 5",
                ),
                "arrays.level",
                "must be text in quotes",
            ),
            (
                SEED_2013.replace("rw = [\"randread\", \"randwrite\"]", "rw = [1, 2]"),
                "workloads.rw",
                "must be text in quotes",
            ),
            (
                SEED_2013.replace("count = 6", "devices = [1, 2, 3]"),
                "disks.devices",
                "must be text in quotes",
            ),
            (
                SEED_2013.replace("count = 6", "devices = [\"sdb\", \"sdc\"]"),
                "disks.devices",
                "absolute",
            ),
            (
                SEED_2013.replace("name = \"seed-2013\"", "name = \"a\\u0000b\""),
                "name",
                "control characters",
            ),
            (
                SEED_2013.replace("name = \"seed-2013\"", "name = \"..\""),
                "name",
                "not `.` or `..`",
            ),
        ];
        for (text, field, why) in cases {
            let e = parse(&text).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.contains(why), "{e}");
            assert!(e.line.is_some(), "{e}");
        }
        // Numbers where numbers belong still pass, as numbers or text.
        assert!(parse(&SEED_2013.replace("iodepth = [4]", "iodepth = [\"4\", 8]")).is_ok());
    }

    #[test]
    fn issue_shape_expands_to_eight_cases() {
        let p = parse(SEED_2013).unwrap();
        assert_eq!(p.cases().len(), 8);
        assert_eq!(p.expected_runtime(), Nanos::from_secs(480));
        let r10 = p
            .cases()
            .iter()
            .find(|c| c.array.level == Level::Raid10)
            .unwrap();
        assert_eq!(r10.array.layout, Some(Layout::Near(2)));
    }

    #[test]
    fn raid6_on_three_disks_names_line_and_fix() {
        let e = parse(&SEED_2013.replace("count = 6", "count = 3")).unwrap_err();
        assert_eq!(e.line, Some(8), "{e}");
        assert_eq!(e.field, "arrays.level");
        assert!(
            e.to_string().contains("raid6 needs at least 4 disks"),
            "{e}"
        );
    }

    #[test]
    fn far_layout_on_raid5_is_refused() {
        let e = parse(&SEED_2013.replace("layout = []", "layout = [\"f2\"]")).unwrap_err();
        assert_eq!(e.field, "arrays.layout");
        assert_eq!(e.line, Some(9));
        assert!(e.message.contains("does not apply to raid0"), "{e}");
    }

    #[test]
    fn btrfs_with_chunk_is_refused() {
        let e = parse(
            &SEED_2013
                .replace("engine = \"md\"", "engine = \"btrfs\"")
                .replace("filesystem = \"xfs\"", ""),
        )
        .unwrap_err();
        assert_eq!(e.field, "arrays.chunk");
        assert!(e.message.contains("remove `chunk`"), "{e}");
    }

    #[test]
    fn unknown_field_is_named() {
        let e = parse(&SEED_2013.replace("iodepth = [4]", "io_depth = [4]")).unwrap_err();
        assert_eq!(e.field, "workloads.io_depth");
        assert!(e.message.contains("iodepth"), "{e}");
    }

    #[test]
    fn bad_unit_is_named_with_its_value() {
        let e = parse(&SEED_2013.replace("\"10g\"", "\"10 gigs\"")).unwrap_err();
        assert_eq!(e.field, "workloads.size");
        assert_eq!(e.value.as_deref(), Some("\"10 gigs\""));
        assert_eq!(e.line, Some(18));
    }

    #[test]
    fn case_ids_are_stable_and_distinct() {
        let a = parse(SEED_2013).unwrap();
        let b = parse(&SEED_2013.replace("name = \"seed-2013\"", "name = \"other\"")).unwrap();
        let ids_a: Vec<_> = a.cases().iter().map(|c| c.id.clone()).collect();
        let ids_b: Vec<_> = b.cases().iter().map(|c| c.id.clone()).collect();
        assert_eq!(
            ids_a, ids_b,
            "the plan name is not part of a case's configuration"
        );
        let set: BTreeSet<_> = ids_a.iter().collect();
        assert_eq!(set.len(), ids_a.len());
    }

    fn with_params(params: &str) -> String {
        SEED_2013.replace("[arrays]", &format!("[disks.params]\n{params}\n[arrays]"))
    }

    #[test]
    fn host_queue_is_part_of_the_case_only_when_set() {
        let plain = parse(SEED_2013).unwrap();
        assert_eq!(plain.disks.host_queue, None);
        let queued = parse(&SEED_2013.replace("[arrays]", "host_queue = 4\n[arrays]")).unwrap();
        assert_eq!(queued.cases()[0].disks.host_queue, Some(4));
        for (a, b) in plain.cases().iter().zip(queued.cases()) {
            assert_ne!(a.id, b.id, "another adapter is another experiment");
        }
        let e = parse(&SEED_2013.replace("[arrays]", "host_queue = 0\n[arrays]")).unwrap_err();
        assert_eq!(e.field, "disks.host_queue");
        assert!(e.message.contains("drop host_queue"), "{}", e.message);
    }

    #[test]
    fn disk_params_override_the_model_and_change_case_ids() {
        let plain = parse(SEED_2013).unwrap();
        let tuned = parse(&with_params("queue_depth = 1\navg_seek = \"9ms\"")).unwrap();
        let d = &tuned.cases()[0].disks;
        assert_eq!(d.params.get("queue_depth").map(String::as_str), Some("1"));
        assert_eq!(d.params.get("avg_seek").map(String::as_str), Some("9ms"));
        let model = d.resolved_model().unwrap().unwrap();
        let crate::disk::DiskKind::Hdd(h) = model.kind else {
            panic!("an hdd preset")
        };
        assert_eq!((h.queue_depth, h.avg_seek), (1, Nanos::from_millis(9)));
        for (a, b) in plain.cases().iter().zip(tuned.cases()) {
            assert_ne!(a.id, b.id, "another disk is another experiment");
        }
    }

    #[test]
    fn bad_disk_params_name_field_line_and_value() {
        let e = parse(&with_params("seek = \"9ms\"")).unwrap_err();
        assert_eq!(e.field, "disks.params.seek");
        assert_eq!(e.line, Some(7));
        assert!(e.message.contains("avg_seek"), "{}", e.message);
        let e = parse(&with_params("avg_seek = \"soon\"")).unwrap_err();
        assert_eq!(e.field, "disks.params.avg_seek");
        assert_eq!(e.value.as_deref(), Some("\"soon\""));
        assert!(e.message.contains("8500us"), "{}", e.message);
        let e = parse(&with_params("avg_seek = \"a: b\"")).unwrap_err();
        assert_eq!(e.value.as_deref(), Some("\"a: b\""));
        assert!(
            e.message.starts_with("expects a value like"),
            "{}",
            e.message
        );
        let e = parse(&with_params("queue_depth = true")).unwrap_err();
        assert_eq!(e.field, "disks.params.queue_depth");
        let e =
            parse(&with_params("queue_depth = 1").replace("model = \"hdd-7200-500g-2010\"\n", ""))
                .unwrap_err();
        assert_eq!(e.field, "disks.params");
        assert!(e.message.contains("disks.model"), "{}", e.message);
    }

    #[test]
    fn array_of_tables_union() {
        let p = parse(
            r#"
name = "s2019"
[disks]
count = 4
model = "hdd-7200-16t-2019"
span = "30g"
[[arrays]]
level = "raid5"
[[arrays]]
level = "raid10"
layout = ["n2", "f2"]
[[workloads]]
rw = ["read", "write"]
bs = "1m"
iodepth = 32
size = "20g"
[[workloads]]
rw = ["randread", "randwrite"]
iodepth = 32
numjobs = 4
size = "20g"
"#,
        )
        .unwrap();
        assert_eq!(p.cases().len(), 12);
    }

    #[test]
    fn bitmaps_only_on_md_arrays_with_redundancy_or_chunks() {
        let md =
            parse(&SEED_2013.replace("write_cache = \"off\"", "bitmap = \"internal\"")).unwrap();
        assert!(md
            .cases()
            .iter()
            .all(|c| c.array.bitmap == Bitmap::Internal));
        let btrfs = parse(
            &SEED_2013
                .replace("engine = \"md\"", "engine = \"btrfs\"")
                .replace(
                    "level = [\"raid0\", \"raid10\", \"raid5\", \"raid6\"]",
                    "level = [\"raid1\"]",
                )
                .replace(
                    "layout = []\nchunk = [\"512k\"]\nfilesystem = \"xfs\"",
                    "bitmap = \"internal\"",
                ),
        )
        .unwrap();
        assert!(
            btrfs.cases().iter().all(|c| c.array.bitmap == Bitmap::None),
            "btrfs has no md bitmap"
        );
    }

    #[test]
    fn real_devices_of_unknown_size_defer_the_size_check() {
        let p = parse(
            "name = \"h\"\n[disks]\ndevices = [\"/dev/a\", \"/dev/b\", \"/dev/c\"]\n[arrays]\nlevel = \"raid5\"\n[workloads]\nrw = \"randread\"\nsize = \"100t\"\n",
        )
        .unwrap();
        assert_eq!(p.cases().len(), 1);
        assert_eq!(p.disks.count, 3);
    }

    #[test]
    fn too_big_a_file_is_refused() {
        let e = parse(&SEED_2013.replace("\"10g\"", "\"10t\"")).unwrap_err();
        assert_eq!(e.field, "workloads.size");
        assert!(e.message.contains("holds only"), "{e}");
    }

    proptest::proptest! {
        #[test]
        fn any_text_gives_a_plan_or_an_error(s in "[\\[\\]a-z0-9=\" \n.,_-]{0,200}") {
            let _ = parse(&s);
        }

        #[test]
        fn expansion_is_the_cross_product(nl in 1usize..4, nc in 1usize..4, nr in 1usize..5, nq in 1usize..4) {
            let levels = ["raid0", "raid5", "raid6"][..nl].iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(",");
            let chunks = ["64k", "128k", "256k"][..nc].iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
            let rws = ["read", "write", "randread", "randwrite"][..nr].iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(",");
            let qds = [1, 4, 32][..nq].iter().map(|q| q.to_string()).collect::<Vec<_>>().join(",");
            let text = format!("name = \"x\"\n[disks]\ncount = 6\nmodel = \"hdd-7200\"\n[arrays]\nlevel = [{levels}]\nchunk = [{chunks}]\n[workloads]\nrw = [{rws}]\niodepth = [{qds}]\n");
            let p = parse(&text).unwrap();
            proptest::prop_assert_eq!(p.cases().len(), nl * nc * nr * nq);
        }
    }
}
