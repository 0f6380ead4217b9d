//! Exports and the HTML report: one row per case, in every format a user asks for.
//!
//! Pure: rows in, bytes out. The CSV columns are a documented, stable contract
//! (`docs/exports.md`); new columns are only ever appended.

pub mod assemble;
pub mod axis;
pub mod compare;
pub mod html;
mod row;
mod svg;

pub use assemble::{build, AssembleError, Built};
pub use axis::{Dim, Metric};
pub use html::{Detail, Report};
pub use row::{csv_columns, Row};

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
    Markdown,
    Html,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "md" | "markdown" => Ok(Format::Markdown),
            "html" => Ok(Format::Html),
            _ => Err("use csv, json, md or html".into()),
        }
    }
}

/// Render rows in a format. `title` names the experiment (HTML and Markdown).
pub fn export(rows: &[Row], format: Format, title: &str) -> Vec<u8> {
    match format {
        Format::Csv => row::csv(rows).into_bytes(),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(rows).expect("rows serialise");
            s.push('\n');
            s.into_bytes()
        }
        Format::Markdown => row::markdown(rows, title).into_bytes(),
        Format::Html => html::render(rows, title).into_bytes(),
    }
}
