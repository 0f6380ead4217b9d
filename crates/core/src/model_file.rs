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
use crate::plan::{line_of, read_file, PlanError};
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

/// Parameters a model file may leave out without a `base`: they came after files were
/// written, and leaving one out means what those files meant (`max_segments`: no bound
/// but `max_sectors_kb`).
const OPTIONAL: &[&str] = &["max_segments"];

/// Whether a `model` value names a file rather than a preset.
pub fn is_model_file(model: &str) -> bool {
    model.ends_with(".toml")
}

impl DiskModel {
    /// Read a model file.
    pub fn load(path: &Path) -> Result<DiskModel, PlanError> {
        DiskModel::from_toml(&read_file(path, "the disk model file")?, path)
    }

    /// A model from a model file's text; `file` is what errors name.
    pub fn from_toml(text: &str, file: &Path) -> Result<DiskModel, PlanError> {
        let r = Reader { text, file };
        let doc = ImDocument::parse(text).map_err(|e| {
            r.err(
                e.span(),
                "(syntax)",
                None,
                format!("{} (a model file is TOML)", e.message().trim()),
            )
        })?;
        let root = doc.as_table();
        let Some((name, _)) = r.text_of(root, "name")? else {
            return Err(r.err(None, "name", None, "add name = \"my-disk\"".into()));
        };
        let source = r.text_of(root, "source")?.map(|s| s.0).unwrap_or_default();
        let (kind, template, has_base) = r.template(root)?;
        let (params, spans, capacity) = r.params(root, &kind, &template, has_base)?;
        let mut model = DiskModel {
            name,
            source,
            kind: template.kind.clone(),
        };
        if let Some(c) = capacity {
            model = model.with_capacity(c);
        }
        model.with_params(&params).map_err(|mut e| {
            if !has_base && e.why.starts_with("expects a value like") {
                e.why = "expects a value of the kind the presets have (`raidlab disks --models`): \
                         a duration such as 8500us, a size such as 64m, or a number"
                    .into();
            }
            let span = spans
                .iter()
                .find(|(k, _)| *k == e.key)
                .and_then(|(_, s)| s.clone());
            r.err(span, &e.key, Some(e.value.clone()), e.why.clone())
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

/// A model file being read: its text and name, for errors with a line.
struct Reader<'a> {
    text: &'a str,
    file: &'a Path,
}

/// Parameters as written, where each stands, and the capacity.
type Params = (
    DiskParams,
    Vec<(String, Option<Range<usize>>)>,
    Option<Bytes>,
);

impl Reader<'_> {
    fn err(
        &self,
        span: Option<Range<usize>>,
        field: &str,
        value: Option<String>,
        message: String,
    ) -> PlanError {
        PlanError {
            file: self.file.to_path_buf(),
            line: span.map(|s| line_of(self.text, s.start)),
            field: field.to_string(),
            value,
            message,
            also: Box::default(),
        }
    }

    /// A quoted text value, if the key is there.
    fn text_of(&self, root: &toml_edit::Table, key: &str) -> Result<Option<Spanned>, PlanError> {
        match root.get(key) {
            None => Ok(None),
            Some(Item::Value(Value::String(s))) => Ok(Some((s.value().clone(), s.span()))),
            Some(other) => Err(self.err(
                other.span(),
                key,
                Some(other.to_string().trim().to_string()),
                format!("must be text in quotes: {key} = \"…\""),
            )),
        }
    }

    /// `kind`, and the model the parameters start from: `base`'s preset, or a blank one of
    /// the kind (whose every parameter the file must then set); whether there is a base.
    fn template(&self, root: &toml_edit::Table) -> Result<(String, DiskModel, bool), PlanError> {
        let (kind, kind_span) = self.text_of(root, "kind")?.ok_or_else(|| {
            self.err(
                None,
                "kind",
                None,
                "add kind = \"hdd\" (or \"ssd\", \"throttle\")".into(),
            )
        })?;
        if let Some((b, span)) = self.text_of(root, "base")? {
            let base = presets()
                .iter()
                .find(|p| p.name == b)
                .cloned()
                .ok_or_else(|| {
                    self.err(
                        span,
                        "base",
                        Some(b.clone()),
                        format!("no such preset; use one of: {}", preset_names().join(", ")),
                    )
                })?;
            if kind_word(&base.kind) != kind {
                return Err(self.err(
                    kind_span,
                    "kind",
                    Some(kind.clone()),
                    format!(
                        "the base preset `{}` is a {} model",
                        base.name,
                        kind_word(&base.kind)
                    ),
                ));
            }
            return Ok((kind, base, true));
        }
        // Not a preset: the presets themselves are read with this function.
        let blank = match kind.as_str() {
            "hdd" => DiskKind::Hdd(Default::default()),
            "ssd" => DiskKind::Ssd(Default::default()),
            "throttle" => DiskKind::Throttle(Default::default()),
            _ => {
                return Err(self.err(
                    kind_span,
                    "kind",
                    Some(kind.clone()),
                    "use one of: hdd, ssd, throttle".into(),
                ))
            }
        };
        let template = DiskModel {
            name: String::new(),
            source: String::new(),
            kind: blank,
        };
        Ok((kind, template, false))
    }

    /// Every parameter the file sets, as text; without a base, all of the kind's.
    fn params(
        &self,
        root: &toml_edit::Table,
        kind: &str,
        template: &DiskModel,
        has_base: bool,
    ) -> Result<Params, PlanError> {
        let names: Vec<String> = template.params().into_iter().map(|(k, _)| k).collect();
        let (mut params, mut spans, mut capacity) = (DiskParams::new(), Vec::new(), None);
        for (key, item) in root.iter() {
            if HEADER_KEYS.contains(&key) {
                continue;
            }
            let span = root.key(key).and_then(|k| k.span()).or_else(|| item.span());
            if !names.iter().any(|n| n == key) {
                return Err(self.err(
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
                    return Err(self.err(
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
                    .map_err(|e| self.err(span.clone(), key, Some(raw.clone()), e.to_string()))?;
                capacity = Some(c);
            } else {
                params.insert(key.to_string(), raw);
                spans.push((key.to_string(), span));
            }
        }
        let missing: Vec<&str> = names
            .iter()
            .filter(|n| root.get(n).is_none() && !OPTIONAL.contains(&n.as_str()))
            .map(String::as_str)
            .collect();
        if !has_base && !missing.is_empty() {
            return Err(self.err(
                None,
                missing[0],
                None,
                format!(
                    "a {kind} model file sets every parameter; missing: {} (or add base = \"PRESET\" to take the rest from a preset)",
                    missing.join(", ")
                ),
            ));
        }
        Ok((params, spans, capacity))
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
        let line = bad.lines().position(|l| l.starts_with("avg_seek")).unwrap() as u32 + 1;
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

    /// `max_segments` came after model files were written: a file without it still reads,
    /// as a port bound by `max_sectors_kb` alone (the presets too); a file may set a SATA
    /// port's 168; a throttle model (the VM lab's virtio-blk) takes 254.
    #[test]
    fn a_model_file_may_leave_max_segments_out() {
        let preset = DiskModel::preset("hdd-7200").unwrap();
        assert_eq!(preset.max_segments(), None);
        let text = preset.to_toml("");
        let old: String = text
            .lines()
            .filter(|l| !l.starts_with("max_segments"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(!old.contains("max_segments"), "{old}");
        let m = DiskModel::from_toml(&old, Path::new("old.toml")).unwrap();
        assert_eq!(m.max_segments(), None);
        let sata = DiskModel::from_toml(
            &format!("{old}max_segments = 168\n"),
            Path::new("sata.toml"),
        )
        .unwrap();
        assert_eq!(sata.max_segments(), Some(168));
        assert_eq!(
            DiskModel::preset("throttle-75").unwrap().max_segments(),
            Some(crate::disk::VIRTIO_SEGMENTS)
        );
    }
}
