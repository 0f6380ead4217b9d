//! Reading TOML with positions: known keys, tables, strings, scalars or lists parsed
//! with `FromStr`, each value kept with its span so that every error names its line.
//! Also what a field is (`Key`: its name, what its values are called, its range) and what
//! each field type takes from TOML (`PlanValue`: words and paths only as quoted text).

use super::*;
use std::str::FromStr;

impl<'a> Cx<'a> {
    pub(super) fn known_keys(
        &self,
        t: &Table,
        prefix: &str,
        known: &[Key],
    ) -> Result<(), PlanError> {
        for (k, item) in t.iter() {
            if !known.iter().any(|key| key.name == k) {
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
                    format!(
                        "unknown field; the fields here are: {}",
                        known.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[x]` or `[[x]]`: one or more tables.
    pub(super) fn tables(&self, root: &'a Table, name: &str) -> Result<Vec<&'a Table>, PlanError> {
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

    pub(super) fn table(&self, f: Field<'a>) -> Result<&'a Table, PlanError> {
        f.item.as_table().ok_or_else(|| {
            self.err(
                f.item.span(),
                f.path,
                None,
                format!("must be a table: write [{}] on its own line", f.path),
            )
        })
    }

    pub(super) fn string(&self, f: Field<'_>) -> Result<String, PlanError> {
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

    /// A scalar or a list of scalars, as (text, span) pairs. Numbers and booleans are
    /// given as text, except where the field takes words or paths (`T::not_text`):
    /// `level = 5` is no level.
    pub(super) fn list<T: PlanValue>(&self, f: Field<'_>) -> Result<Vec<At<String>>, PlanError> {
        let in_list = matches!(f.item, Item::Value(Value::Array(_)));
        let key = f.path.rsplit('.').next().unwrap_or(f.path);
        let text_only = T::TEXT_ONLY;
        let one = |v: &Value| -> Result<At<String>, PlanError> {
            let shown = || v.to_string().trim().to_string();
            match v {
                Value::String(s) => Ok((s.value().clone(), v.span())),
                Value::Integer(_) | Value::Boolean(_) | Value::Float(_) if text_only => {
                    let fix = T::not_text(&shown(), key, in_list).unwrap_or_default();
                    Err(self.err(v.span(), f.path, Some(shown()), fix))
                }
                Value::Integer(i) => Ok((i.value().to_string(), v.span())),
                Value::Boolean(b) => Ok((b.value().to_string(), v.span())),
                _ if text_only => Err(self.err(
                    v.span(),
                    f.path,
                    Some(shown()),
                    "must be text in quotes, or a list of them",
                )),
                _ => Err(self.err(
                    v.span(),
                    f.path,
                    Some(shown()),
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
    pub(super) fn parsed<T: PlanValue>(
        &self,
        f: Field<'_>,
        what: &str,
    ) -> Result<Vec<At<T>>, PlanError>
    where
        T::Err: fmt::Display,
    {
        let mut out = Vec::new();
        for (s, span) in self.list::<T>(f)? {
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

    pub(super) fn single<T: PlanValue>(
        &self,
        t: &'a Table,
        prefix: &str,
        key: Key,
    ) -> Result<Option<At<T>>, PlanError>
    where
        T::Err: fmt::Display,
    {
        let Some(item) = t.get(key.name) else {
            return Ok(None);
        };
        let path = key.at(prefix);
        let mut v = self.parsed::<T>(Field { path: &path, item }, key.what)?;
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

    pub(super) fn many<T: PlanValue>(
        &self,
        t: &'a Table,
        prefix: &str,
        key: Key,
    ) -> Result<Vec<At<T>>, PlanError>
    where
        T::Err: fmt::Display,
    {
        match t.get(key.name) {
            None => Ok(vec![]),
            Some(item) => self.parsed(
                Field {
                    path: &key.at(prefix),
                    item,
                },
                key.what,
            ),
        }
    }
}

/// A field of a plan table, defined once: its key, what its values are called in errors
/// ("not a valid {what}") and, for a bounded whole number, the values it takes (which
/// docs/plan.md shows as `min–max`; a test holds the two together).
#[derive(Debug, Clone, Copy)]
pub(super) struct Key {
    pub(super) name: &'static str,
    pub(super) what: &'static str,
    pub(super) range: Option<(u32, u32)>,
}

impl Key {
    pub(super) const fn new(name: &'static str, what: &'static str) -> Key {
        Key {
            name,
            what,
            range: None,
        }
    }

    /// A whole number from `min` to `max`.
    pub(super) const fn within(self, min: u32, max: u32) -> Key {
        Key {
            range: Some((min, max)),
            ..self
        }
    }

    /// Its dotted path in the table `prefix` (`arrays[1].level`), or its name at the top.
    pub(super) fn at(self, prefix: &str) -> String {
        if prefix.is_empty() {
            self.name.to_string()
        } else {
            format!("{prefix}.{}", self.name)
        }
    }

    pub(super) fn min(self) -> u32 {
        self.range.map_or(0, |r| r.0)
    }

    pub(super) fn max(self) -> u32 {
        self.range.map_or(u32::MAX, |r| r.1)
    }

    /// Whether `n` is within the field's range.
    pub(super) fn takes(self, n: u32) -> bool {
        (self.min()..=self.max()).contains(&n)
    }
}

/// What a plan field's type takes from TOML: words and paths only as quoted text, numbers
/// (counts, sizes, durations) as TOML numbers or text.
pub(super) trait PlanValue: FromStr {
    /// Whether the field takes only quoted text (a bare number or boolean is refused).
    const TEXT_ONLY: bool = true;
    /// What is wrong with the bare number or boolean `shown` given for `key` (an element
    /// of a list if `in_list`), and the fix; `None` where the type reads it as text.
    fn not_text(shown: &str, key: &str, in_list: bool) -> Option<String>;
}

/// Counts, sizes and durations: `iodepth = 4` and `iodepth = "4"` are the same.
macro_rules! numbers {
    ($($t:ty),+) => {$(
        impl PlanValue for $t {
            const TEXT_ONLY: bool = false;
            fn not_text(_: &str, _: &str, _: bool) -> Option<String> {
                None
            }
        }
    )+};
}
numbers!(u8, u32, u64, bool, Bytes, Nanos);

/// Free text (paths, names): only in quotes.
impl PlanValue for String {
    fn not_text(shown: &str, _: &str, _: bool) -> Option<String> {
        Some(format!(
            "must be text in quotes: write \"{shown}\" if that is what you mean"
        ))
    }
}

/// Words (`spec::words!`): only in quotes, with the word a number stands for as the fix
/// (`level = 5`: write level = "raid5"), or the words the field takes.
macro_rules! words {
    ($($t:ty),+) => {$(
        impl PlanValue for $t {
            fn not_text(shown: &str, key: &str, in_list: bool) -> Option<String> {
                Some(match shown.parse::<$t>() {
                    Ok(v) if in_list => format!("must be text in quotes: write \"{v}\""),
                    Ok(v) => format!("must be text in quotes: write {key} = \"{v}\""),
                    Err(help) => format!("must be text in quotes: {help}"),
                })
            }
        }
    )+};
}
words!(
    Engine, Level, Layout, Rw, Filesystem, WriteCache, Bitmap, Resync, Scheduler, ArrayState,
    Governor, Rejoin
);
