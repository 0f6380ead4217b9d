//! Disk model files: a disk model as TOML, for the presets raidlab ships and for the
//! models `raidlab calibrate` fits to a user's own drive.
//!
//! A model file names the model, its kind (`hdd`, `ssd`, `throttle`), where its figures
//! come from, and every parameter of that kind, one per line, written as a plan writes
//! `[disks.params]` (`avg_seek = "8.5ms"`, `rpm = 7200`). `base = "PRESET"` takes the
//! parameters the file does not set from a preset. A file is read whole and checked like a
//! plan: every error names the file, the line, the field, the value and the fix. The
//! presets are such files (`crates/core/presets/`), built into the binary.

use crate::disk::{DiskKind, DiskModel, DiskParams};
use crate::plan::PlanError;
use crate::units::Bytes;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;
use toml_edit::{ImDocument, Item, Value};

/// A text value and where it stands in the file.
type Spanned = (String, Option<Range<usize>>);

/// The keys a model file has besides its parameters.
const HEADER_KEYS: [&str; 4] = ["name", "kind", "source", "base"];

/// The presets, as their files (name, text).
const PRESET_FILES: [(&str, &str); 7] = [
    (
        "hdd-7200-500g-2010",
        include_str!("../presets/hdd-7200-500g-2010.toml"),
    ),
    (
        "hdd-7200-16t-2019",
        include_str!("../presets/hdd-7200-16t-2019.toml"),
    ),
    ("hdd-7200", include_str!("../presets/hdd-7200.toml")),
    ("hdd-10k-sas", include_str!("../presets/hdd-10k-sas.toml")),
    ("ssd-sata", include_str!("../presets/ssd-sata.toml")),
    ("nvme", include_str!("../presets/nvme.toml")),
    ("throttle-75", include_str!("../presets/throttle-75.toml")),
];

/// Every built-in preset, read once from its file.
pub fn presets() -> &'static [DiskModel] {
    static PRESETS: OnceLock<Vec<DiskModel>> = OnceLock::new();
    PRESETS.get_or_init(|| {
        PRESET_FILES
            .iter()
            .map(|(name, text)| {
                let file = format!("crates/core/presets/{name}.toml");
                DiskModel::from_toml(text, Path::new(&file))
                    .unwrap_or_else(|e| panic!("a built-in preset does not read: {e}"))
            })
            .collect()
    })
}

/// Whether a `model` value names a file rather than a preset.
pub fn is_model_file(model: &str) -> bool {
    model.ends_with(".toml")
}

impl DiskModel {
    /// Read a model file.
    pub fn load(path: &Path) -> Result<DiskModel, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|e| PlanError {
            file: path.to_path_buf(),
            line: None,
            field: "(file)".into(),
            value: None,
            message: format!("cannot read the disk model file: {e}"),
        })?;
        DiskModel::from_toml(&text, path)
    }

    /// A model from a model file's text; `file` is what errors name.
    pub fn from_toml(text: &str, file: &Path) -> Result<DiskModel, PlanError> {
        let err = |span: Option<Range<usize>>, field: &str, value: Option<String>, msg: String| {
            PlanError {
                file: file.to_path_buf(),
                line: span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1),
                field: field.to_string(),
                value,
                message: msg,
            }
        };
        let doc = ImDocument::parse(text).map_err(|e| {
            err(
                e.span(),
                "(syntax)",
                None,
                format!("{} (a model file is TOML)", e.message().trim()),
            )
        })?;
        let root = doc.as_table();
        let text_of = |key: &str| -> Result<Option<Spanned>, PlanError> {
            match root.get(key) {
                None => Ok(None),
                Some(Item::Value(Value::String(s))) => Ok(Some((s.value().clone(), s.span()))),
                Some(other) => Err(err(
                    other.span(),
                    key,
                    Some(other.to_string().trim().to_string()),
                    format!("must be text in quotes: {key} = \"…\""),
                )),
            }
        };
        let Some((name, _)) = text_of("name")? else {
            return Err(err(None, "name", None, "add name = \"my-disk\"".into()));
        };
        let kinds = ["hdd", "ssd", "throttle"];
        let (kind, kind_span) = text_of("kind")?.ok_or_else(|| {
            err(
                None,
                "kind",
                None,
                "add kind = \"hdd\" (or \"ssd\", \"throttle\")".into(),
            )
        })?;
        let source = text_of("source")?.map(|s| s.0).unwrap_or_default();
        let base = match text_of("base")? {
            None => None,
            Some((b, span)) => Some(presets().iter().find(|p| p.name == b).cloned().ok_or_else(
                || {
                    err(
                        span,
                        "base",
                        Some(b.clone()),
                        format!("no such preset; use one of: {}", preset_names().join(", ")),
                    )
                },
            )?),
        };
        // A template of the kind gives the parameter names and types.
        let template = base
            .clone()
            .or_else(|| {
                // Not a preset: the presets are read with this function.
                let kind = match kind.as_str() {
                    "hdd" => DiskKind::Hdd(Default::default()),
                    "ssd" => DiskKind::Ssd(Default::default()),
                    "throttle" => DiskKind::Throttle(Default::default()),
                    _ => return None,
                };
                Some(DiskModel {
                    name: String::new(),
                    source: String::new(),
                    kind,
                })
            })
            .ok_or_else(|| {
                err(
                    kind_span.clone(),
                    "kind",
                    Some(kind.clone()),
                    format!("use one of: {}", kinds.join(", ")),
                )
            })?;
        if kind_word(&template.kind) != kind {
            return Err(err(
                kind_span,
                "kind",
                Some(kind.clone()),
                format!(
                    "the base preset `{}` is a {} model",
                    template.name,
                    kind_word(&template.kind)
                ),
            ));
        }
        let names: Vec<String> = template.params().into_iter().map(|(k, _)| k).collect();
        let mut params = DiskParams::new();
        let mut spans = Vec::new();
        let mut capacity = None;
        for (key, item) in root.iter() {
            if HEADER_KEYS.contains(&key) {
                continue;
            }
            let span = root.key(key).and_then(|k| k.span()).or_else(|| item.span());
            if !names.iter().any(|n| n == key) {
                return Err(err(
                    span,
                    key,
                    None,
                    format!(
                        "a {kind} model has no such parameter; its parameters are: {}",
                        names.join(", ")
                    ),
                ));
            }
            let raw = match item {
                Item::Value(Value::String(s)) => s.value().clone(),
                Item::Value(Value::Integer(i)) => i.value().to_string(),
                Item::Value(Value::Float(f)) => f.value().to_string(),
                other => {
                    return Err(err(
                        span,
                        key,
                        Some(other.to_string().trim().to_string()),
                        "must be a number or a quoted size or duration".into(),
                    ))
                }
            };
            if key == "capacity" {
                let c = raw
                    .parse::<Bytes>()
                    .map_err(|e| err(span.clone(), key, Some(raw.clone()), e.to_string()))?;
                capacity = Some(c);
            } else {
                params.insert(key.to_string(), raw);
                spans.push((key.to_string(), span));
            }
        }
        if base.is_none() {
            let missing: Vec<&str> = names
                .iter()
                .filter(|n| root.get(n).is_none())
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(err(
                    None,
                    missing[0],
                    None,
                    format!(
                        "a {kind} model file sets every parameter; missing: {} (or add base = \"PRESET\" to take the rest from a preset)",
                        missing.join(", ")
                    ),
                ));
            }
        }
        let mut model = DiskModel {
            name,
            source,
            kind: template.kind.clone(),
        };
        if let Some(c) = capacity {
            model = model.with_capacity(c);
        }
        let from_template = template.name.is_empty();
        model.with_params(&params).map_err(|mut e| {
            if from_template && e.why.starts_with("expects a value like") {
                e.why = "expects a value of the kind the presets have (`raidlab disks --models`): \
                         a duration such as 8500us, a size such as 64m, or a number"
                    .into();
            }
            let span = spans
                .iter()
                .find(|(k, _)| *k == e.key)
                .and_then(|(_, s)| s.clone());
            err(span, &e.key, Some(e.value.clone()), e.why.clone())
        })
    }

    /// The model as a model file, `header` (lines of text) first as comments.
    pub fn to_toml(&self, header: &str) -> String {
        let mut out = String::new();
        for line in header.lines() {
            out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
        }
        out.push_str(&format!(
            "name = {}\n",
            toml_edit::Value::from(self.name.as_str())
        ));
        out.push_str(&format!("kind = \"{}\"\n", kind_word(&self.kind)));
        out.push_str(&format!(
            "source = {}\n",
            toml_edit::Value::from(self.source.as_str())
        ));
        let value = serde_json::to_value(&self.kind).expect("plain data serialises");
        for (k, v) in value.as_object().expect("a struct").iter() {
            if k == "kind" {
                continue;
            }
            let shown = match v {
                serde_json::Value::String(s) => format!("{:?}", s),
                serde_json::Value::Number(n) if n.is_f64() => {
                    let x = n.as_f64().unwrap_or(0.0);
                    if x.fract() == 0.0 {
                        format!("{x:.1}")
                    } else {
                        x.to_string()
                    }
                }
                other => other.to_string(),
            };
            out.push_str(&format!("{k} = {shown}\n"));
        }
        out
    }
}

fn kind_word(kind: &DiskKind) -> &'static str {
    match kind {
        DiskKind::Hdd(_) => "hdd",
        DiskKind::Ssd(_) => "ssd",
        DiskKind::Throttle(_) => "throttle",
    }
}

fn preset_names() -> Vec<String> {
    presets().iter().map(|m| m.name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_reads_and_round_trips_through_its_file_form() {
        assert_eq!(presets().len(), PRESET_FILES.len());
        for m in presets() {
            assert_eq!(m.check(), Ok(()), "{}", m.name);
            let again = DiskModel::from_toml(&m.to_toml("a test"), Path::new("t.toml")).unwrap();
            assert_eq!(&again, m);
        }
    }

    #[test]
    fn a_bad_value_names_its_file_line_and_field() {
        let good = presets()[2].to_toml("");
        let bad = good.replace("avg_seek = \"8200us\"", "avg_seek = \"fast\"");
        assert_ne!(good, bad, "the preset's avg_seek is written as 8200us");
        let e = DiskModel::from_toml(&bad, Path::new("mine.toml")).unwrap_err();
        let line = bad.lines().position(|l| l.starts_with("avg_seek")).unwrap() + 1;
        assert_eq!(
            (e.file.to_str(), e.line, e.field.as_str()),
            (Some("mine.toml"), Some(line), "avg_seek")
        );
        assert!(e.to_string().contains("a duration such as 8500us"), "{e}");
    }

    #[test]
    fn a_missing_parameter_or_unknown_key_is_refused_and_base_fills_the_rest() {
        let e = DiskModel::from_toml(
            "name = \"x\"\nkind = \"hdd\"\nrpm = 5400\n",
            Path::new("m.toml"),
        )
        .unwrap_err();
        assert!(e.message.contains("missing: capacity"), "{e}");
        let e = DiskModel::from_toml(
            "name = \"x\"\nkind = \"hdd\"\nbase = \"hdd-7200\"\nrmp = 5400\n",
            Path::new("m.toml"),
        )
        .unwrap_err();
        assert_eq!((e.line, e.field.as_str()), (Some(4), "rmp"));
        let m = DiskModel::from_toml(
            "name = \"x\"\nkind = \"hdd\"\nbase = \"hdd-7200\"\nrpm = 5400\n",
            Path::new("m.toml"),
        )
        .unwrap();
        let DiskKind::Hdd(p) = &m.kind else {
            panic!("an hdd")
        };
        assert_eq!(p.rpm, 5400);
        assert_eq!(
            m.capacity(),
            DiskModel::preset("hdd-7200").unwrap().capacity()
        );
    }
}
