//! Plans built in code, such as `raidlab sim`'s one case from its flags. The values are
//! set field by field on a TOML document through its API (no text is written or parsed,
//! so no value needs quoting) and read by the same reader as a plan file: every default,
//! rule and message is the plan file's. Errors carry no line; the field names the value.

use super::*;
use toml_edit::DocumentMut;

/// A value given to a [`PlanBuilder`]: text, as a plan writes it in quotes, or a whole
/// number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    Text(String),
    Number(i64),
}

impl From<&str> for FieldValue {
    fn from(s: &str) -> Self {
        FieldValue::Text(s.to_string())
    }
}

impl From<&String> for FieldValue {
    fn from(s: &String) -> Self {
        FieldValue::Text(s.clone())
    }
}

impl From<String> for FieldValue {
    fn from(s: String) -> Self {
        FieldValue::Text(s)
    }
}

impl From<u32> for FieldValue {
    fn from(n: u32) -> Self {
        FieldValue::Number(n.into())
    }
}

impl From<u8> for FieldValue {
    fn from(n: u8) -> Self {
        FieldValue::Number(n.into())
    }
}

impl From<FieldValue> for Value {
    fn from(v: FieldValue) -> Value {
        match v {
            FieldValue::Text(s) => s.into(),
            FieldValue::Number(n) => n.into(),
        }
    }
}

/// A one-table plan (one `[disks]`, one `[arrays]`, one `[workloads]`, optional `[run]`)
/// set field by field, then validated by [`PlanBuilder::build`] exactly as a plan file.
#[derive(Debug, Clone)]
pub struct PlanBuilder {
    doc: DocumentMut,
}

impl PlanBuilder {
    /// A plan named `name`, with empty `[disks]`, `[arrays]` and `[workloads]` tables.
    pub fn new(name: &str) -> PlanBuilder {
        let mut doc = DocumentMut::new();
        doc.insert("name", toml_edit::value(name));
        for section in ["disks", "arrays", "workloads"] {
            doc.insert(section, Item::Table(Table::new()));
        }
        PlanBuilder { doc }
    }

    /// `disks.KEY = value`.
    pub fn disks(&mut self, key: &str, value: impl Into<FieldValue>) -> &mut Self {
        self.set(&["disks"], key, value)
    }

    /// `disks.params.KEY = value`: an override of the disk model's figure `key`.
    pub fn disk_param(&mut self, key: &str, value: impl Into<FieldValue>) -> &mut Self {
        self.set(&["disks", "params"], key, value)
    }

    /// `arrays.KEY = value`.
    pub fn array(&mut self, key: &str, value: impl Into<FieldValue>) -> &mut Self {
        self.set(&["arrays"], key, value)
    }

    /// `workloads.KEY = value`.
    pub fn workload(&mut self, key: &str, value: impl Into<FieldValue>) -> &mut Self {
        self.set(&["workloads"], key, value)
    }

    /// `workloads.fio.KEY = value`: a fio option passed through (`rate_iops`, …).
    pub fn workload_fio(&mut self, key: &str, value: impl Into<FieldValue>) -> &mut Self {
        self.set(&["workloads", "fio"], key, value)
    }

    /// `run.KEY = value`.
    pub fn run(&mut self, key: &str, value: impl Into<FieldValue>) -> &mut Self {
        self.set(&["run"], key, value)
    }

    fn set(&mut self, tables: &[&str], key: &str, value: impl Into<FieldValue>) -> &mut Self {
        let mut table = self.doc.as_table_mut();
        for name in tables {
            let item = table
                .entry(name)
                .or_insert_with(|| Item::Table(Table::new()));
            table = item.as_table_mut().expect("the builder makes only tables");
        }
        table.insert(key, Item::Value(value.into().into()));
        self
    }

    /// Validate and expand the plan, as [`Plan::parse`] would its text; `source` names
    /// it in errors and in the plan.
    pub fn build(&self, source: &Path) -> Result<Plan, PlanError> {
        let text = self.doc.to_string();
        let cx = Cx {
            text: &text,
            path: source,
        };
        cx.plan(self.doc.as_table())
    }
}
