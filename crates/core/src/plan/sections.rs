//! The plan's top level and its `[disks]` and `[run]` sections, field by field.

use super::*;

const NAME: Key = Key::new("name", "name");
const DESCRIPTION: Key = Key::new("description", "description");

/// The plan's top level: its name and its sections.
pub(super) const TOP_KEYS: [Key; 6] = [
    NAME,
    DESCRIPTION,
    Key::new("disks", "table"),
    Key::new("arrays", "table"),
    Key::new("workloads", "table"),
    Key::new("run", "table"),
];

const COUNT: Key = Key::new("count", "disk count").within(1, 256);
const MODEL: Key = Key::new("model", "disk model");
const CAPACITY: Key = Key::new("capacity", "size");
const SPAN: Key = Key::new("span", "size");
const DEVICES: Key = Key::new("devices", "device path");
const PARAMS: Key = Key::new("params", "table");
const HOST_QUEUE: Key = Key::new("host_queue", "command count");
const SCHEDULER: Key = Key::new("scheduler", "I/O scheduler");

/// The fields of `[disks]`.
pub(super) const DISK_KEYS: [Key; 8] = [
    COUNT, MODEL, CAPACITY, SPAN, DEVICES, PARAMS, HOST_QUEUE, SCHEDULER,
];

const REPEAT: Key = Key::new("repeat", "count");
const SEED: Key = Key::new("seed", "number");
const TARGET: Key = Key::new("target", "target");
const PRECONDITION: Key = Key::new("precondition", "write passes").within(0, 16);
const FLEET: Key = Key::new("fleet", "fleet mode");

/// The fields of `[run]`.
pub(super) const RUN_KEYS: [Key; 5] = [REPEAT, SEED, TARGET, PRECONDITION, FLEET];

impl<'a> Cx<'a> {
    pub(super) fn plan(&self, root: &'a Table) -> Result<Plan, PlanError> {
        // Independent parts are all read, and every part's first mistake reported at once.
        let mut errors = Vec::new();
        let mut keep = |r: Result<(), PlanError>| {
            if let Err(e) = r {
                errors.push(e);
            }
        };
        keep(self.known_keys(root, "", &TOP_KEYS));
        let (mut name, mut description, mut disks, mut run) = (None, None, None, None);
        keep(self.name(root).map(|n| name = Some(n)));
        keep(self.description(root).map(|d| description = Some(d)));
        keep(self.disks_section(root).map(|d| disks = Some(d)));
        keep(
            match root.get("run") {
                Some(item) => self
                    .table(Field { path: "run", item })
                    .and_then(|t| self.run(t)),
                None => Ok(RunOptions::default()),
            }
            .map(|r| run = Some(r)),
        );
        let (arrays, workloads) = match self.matrices(root, disks.as_ref().map(|d| d.0.count)) {
            Ok(m) => m,
            Err(mut e) => {
                let others = std::mem::take(&mut e.also);
                errors.push(e);
                errors.extend(*others);
                (Vec::new(), Vec::new())
            }
        };
        // In the order of the file, as a reader fixes them.
        errors.sort_by_key(|e| e.line.unwrap_or(u32::MAX));
        if let Some(e) = PlanError::all(errors) {
            return Err(e);
        }
        let (Some(name), Some(description), Some((disks, member_size)), Some(run)) =
            (name, description, disks, run)
        else {
            unreachable!("every part read without an error");
        };
        // Preconditioning changes what is measured: it is part of every case.
        let workloads: Vec<At<Workload>> = workloads
            .into_iter()
            .map(|(mut w, span)| {
                w.fio.precondition = run.precondition;
                (w, span)
            })
            .collect();
        let cases = self.cases(&arrays, &workloads, &disks, member_size)?;
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

    /// `[disks]`: the disk set and, when the disks' size is known, a member's size.
    fn disks_section(&self, root: &'a Table) -> Result<(DiskSet, Option<Bytes>), PlanError> {
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
        Ok((disks, member_size))
    }

    /// The plan's name: it names the results directory, so no `/`, no control characters,
    /// not `.` or `..`.
    fn name(&self, root: &Table) -> Result<String, PlanError> {
        let path = NAME.name;
        let Some(item) = root.get(path) else {
            return Err(self.err(
                None,
                path,
                None,
                "the plan needs a name, e.g. name = \"my-array-test\"",
            ));
        };
        let name = self.string(Field { path, item })?;
        if name.trim().is_empty()
            || name.contains('/')
            || name.chars().any(char::is_control)
            || name == "."
            || name == ".."
        {
            return Err(self.err(
                item.span(),
                path,
                Some(format!("{name:?}")),
                "use a non-empty name without `/` or control characters, not `.` or `..`: it names the results directory",
            ));
        }
        Ok(name)
    }

    /// The plan's description, printed on terminals and in reports: lines of text, without
    /// other control characters (a NUL, a terminal escape).
    fn description(&self, root: &Table) -> Result<Option<String>, PlanError> {
        let path = DESCRIPTION.name;
        let Some(item) = root.get(path) else {
            return Ok(None);
        };
        let d = self.string(Field { path, item })?;
        if d.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
            return Err(self.err(
                item.span(),
                path,
                Some(format!("{d:?}")),
                "use text without control characters (new lines and tabs are fine): it is printed on terminals and in reports",
            ));
        }
        Ok(Some(d))
    }

    pub(super) fn disks(&self, t: &'a Table) -> Result<DiskSet, PlanError> {
        self.known_keys(t, "disks", &DISK_KEYS)?;
        let devices = self.devices(t)?;
        let count = self.disk_count(t, &devices)?;
        let (model, model_file) = self.disk_model(t)?;
        let capacity = self.single::<Bytes>(t, "disks", CAPACITY)?;
        let span = self.single::<Bytes>(t, "disks", SPAN)?;
        if let Some((c, s)) = &capacity {
            if c.0 < Bytes::mib(64).0 {
                return Err(self.err(
                    s.clone(),
                    &CAPACITY.at("disks"),
                    Some(c.to_fio()),
                    "a disk must hold at least 64m",
                ));
            }
        }
        let base = model_file
            .clone()
            .or_else(|| DiskModel::preset(model.as_deref()?));
        let params = self.disk_params(t, base, capacity.as_ref().map(|c| c.0))?;
        let host_queue = match self.single::<u32>(t, "disks", HOST_QUEUE)? {
            Some((0, span)) => {
                return Err(self.err(
                    span,
                    &HOST_QUEUE.at("disks"),
                    Some("0".into()),
                    "the host adapter takes at least one command; drop host_queue for disks on their own ports",
                ))
            }
            other => other.map(|(n, _)| n),
        };
        let scheduler = self
            .single::<Scheduler>(t, "disks", SCHEDULER)?
            .map(|(s, _)| s);
        let set = DiskSet {
            count,
            model,
            model_file,
            capacity: capacity.map(|c| c.0),
            span: span.map(|s| s.0),
            devices,
            params,
            host_queue,
            scheduler,
        };
        Ok(set)
    }

    /// `devices`: absolute paths without control characters.
    fn devices(&self, t: &'a Table) -> Result<Vec<String>, PlanError> {
        let devices = self.many::<String>(t, "disks", DEVICES)?;
        if let Some((d, span)) = devices.iter().find(|(d, _)| !d.starts_with('/')) {
            return Err(self.err(
                span.clone(),
                &DEVICES.at("disks"),
                Some(format!("{d:?}")),
                "device paths are absolute: name each disk as /dev/disk/by-id/… (see `raidlab disks`)",
            ));
        }
        if let Some((d, span)) = devices
            .iter()
            .find(|(d, _)| d.chars().any(char::is_control))
        {
            return Err(self.err(
                span.clone(),
                &DEVICES.at("disks"),
                Some(format!("{d:?}")),
                "a device path has no control characters: name each disk as /dev/disk/by-id/… (see `raidlab disks`)",
            ));
        }
        Ok(devices.into_iter().map(|d| d.0).collect())
    }

    /// `count`: within its range and the number of `devices` if both are given; the number
    /// of `devices` if only they are.
    fn disk_count(&self, t: &'a Table, devices: &[String]) -> Result<u32, PlanError> {
        let Some((c, span)) = self.single::<u32>(t, "disks", COUNT)? else {
            if !devices.is_empty() {
                return Ok(devices.len() as u32);
            }
            return Err(self.err(
                t.span(),
                &COUNT.at("disks"),
                None,
                "say how many disks, e.g. count = 4",
            ));
        };
        if !COUNT.takes(c) {
            return Err(self.err(
                span,
                &COUNT.at("disks"),
                Some(c.to_string()),
                format!("use between {} and {} disks", COUNT.min(), COUNT.max()),
            ));
        }
        if !devices.is_empty() && devices.len() != c as usize {
            return Err(self.err(
                span,
                &COUNT.at("disks"),
                Some(c.to_string()),
                format!(
                    "{} devices are listed; make count match or drop it",
                    devices.len()
                ),
            ));
        }
        Ok(c)
    }

    /// `model`: one of the presets, or a model file (`*.toml`, relative to the plan), if
    /// given; with the file's model.
    fn disk_model(&self, t: &'a Table) -> Result<(Option<String>, Option<DiskModel>), PlanError> {
        let Some((m, span)) = self.single::<String>(t, "disks", MODEL)? else {
            return Ok((None, None));
        };
        if crate::model_file::is_model_file(&m) {
            let path = self.path.parent().unwrap_or(Path::new("")).join(&m);
            let model = DiskModel::load(&path).map_err(|e| {
                self.err(
                    span,
                    &MODEL.at("disks"),
                    Some(format!("{m:?}")),
                    format!("the model file does not read: {e}"),
                )
            })?;
            return Ok((Some(m), Some(model)));
        }
        if DiskModel::preset(&m).is_none() {
            return Err(self.err(
                span,
                &MODEL.at("disks"),
                Some(format!("{m:?}")),
                format!(
                    "unknown disk model; use one of: {}, or a model file (*.toml)",
                    DiskModel::preset_names().join(", ")
                ),
            ));
        }
        Ok((Some(m), None))
    }

    /// `[disks.params]`: overrides of the model's figures, kept as written, checked against
    /// the model (with the plan's capacity) they override.
    pub(super) fn disk_params(
        &self,
        t: &Table,
        model: Option<DiskModel>,
        capacity: Option<Bytes>,
    ) -> Result<DiskParams, PlanError> {
        let Some(item) = t.get("params") else {
            return Ok(DiskParams::new());
        };
        let Some(table) = item.as_table_like() else {
            return Err(self.err(
                item.span(),
                &PARAMS.at("disks"),
                None,
                "use a table, e.g. [disks.params] queue_depth = 1",
            ));
        };
        if model.is_none() && !table.is_empty() {
            return Err(self.err(
                item.span(),
                &PARAMS.at("disks"),
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
        if let Some(preset) = model {
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
    pub(super) fn member_size(
        &self,
        disks: &DiskSet,
        t: &Table,
    ) -> Result<Option<Bytes>, PlanError> {
        let capacity = disks
            .capacity
            .or_else(|| disks.base_model().map(|m| m.capacity()));
        match (disks.span, capacity) {
            (Some(s), Some(c)) if s > c => Err(self.err(
                t.get("span").and_then(|i| i.span()),
                &SPAN.at("disks"),
                Some(s.to_fio()),
                format!("is larger than the disk ({c}); use a span up to the capacity"),
            )),
            (Some(s), _) => Ok(Some(s)),
            (None, c) => Ok(c),
        }
    }

    pub(super) fn run(&self, t: &'a Table) -> Result<RunOptions, PlanError> {
        self.known_keys(t, "run", &RUN_KEYS)?;
        let repeat = match self.single::<u32>(t, "run", REPEAT)? {
            Some((0, s)) => {
                return Err(self.err(s, &REPEAT.at("run"), Some("0".into()), "use 1 or more"))
            }
            Some((r, _)) => r,
            None => RunOptions::default().repeat,
        };
        let seed = self
            .single::<u64>(t, "run", SEED)?
            .map(|s| s.0)
            .unwrap_or(RunOptions::default().seed);
        let target = match self.single::<String>(t, "run", TARGET)? {
            Some((tg, s)) => Some(
                tg.parse::<TargetKind>()
                    .map_err(|e| self.err(s, &TARGET.at("run"), Some(format!("{tg:?}")), e))?,
            ),
            None => None,
        };
        let precondition = match self.single::<u32>(t, "run", PRECONDITION)? {
            Some((n, s)) if !PRECONDITION.takes(n) => {
                return Err(self.err(
                    s,
                    &PRECONDITION.at("run"),
                    Some(n.to_string()),
                    format!(
                        "use {} to {} sequential passes over the test region",
                        PRECONDITION.min(),
                        PRECONDITION.max()
                    ),
                ))
            }
            Some((n, _)) => n,
            None => 0,
        };
        let fleet = match self.single::<String>(t, "run", FLEET)? {
            Some((f, s)) => f
                .parse::<FleetMode>()
                .map_err(|e| self.err(s, &FLEET.at("run"), Some(format!("{f:?}")), e))?,
            None => FleetMode::Independent,
        };
        Ok(RunOptions {
            repeat,
            seed,
            target,
            precondition,
            fleet,
        })
    }
}
