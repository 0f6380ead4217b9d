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
pub use html::{Detail, MemberCounts, Report};
pub use row::{csv_columns, Row};
pub use svg::{bar_chart, Bar};

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
    Markdown,
    Html,
    /// The `--x/--y` chart alone, as a standalone SVG file.
    Svg,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "md" | "markdown" => Ok(Format::Markdown),
            "html" => Ok(Format::Html),
            "svg" => Ok(Format::Svg),
            _ => Err("use csv, json, md, html or svg".into()),
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
        // Without axes named, the queue-depth curves of IOPS (`chart_svg` draws any).
        Format::Svg => chart_svg(rows, Dim::Iodepth, Metric::Iops).into_bytes(),
    }
}

/// One `--x/--y` chart as a file of its own: the SVG the report draws, with the XML
/// namespace and the report's styles inside it, so it opens in a browser or an editor
/// and drops into a document.
pub fn chart_svg(rows: &[Row], x: Dim, y: Metric) -> String {
    standalone(&html::custom_chart(rows, x, y))
}

/// Every chart of a report page as a file of its own: (a file name made of its number and
/// title, the standalone SVG), in the page's order.
pub fn page_charts(page: &str) -> Vec<(String, String)> {
    with_chart_files(page, None).1
}

/// The page with a small "SVG" link in each chart's corner to `dir/NAME` (when `dir` is
/// given), and every chart as a file: (NAME, standalone SVG). The page stays whole on its
/// own; the links work where the files sit beside it.
pub fn with_chart_files(page: &str, dir: Option<&str>) -> (String, Vec<(String, String)>) {
    let mut files = Vec::new();
    let mut linked = String::with_capacity(page.len() + page.len() / 20);
    let mut rest = page;
    while let Some(i) = rest.find("<svg ") {
        let end = rest[i..]
            .find("</svg>")
            .map_or(rest.len(), |e| i + e + "</svg>".len());
        let chart = &rest[i..end];
        let title = chart
            .split("<title>")
            .nth(1)
            .and_then(|t| t.split("</title>").next())
            .unwrap_or("chart");
        let mut slug: String = title
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        while slug.contains("--") {
            slug = slug.replace("--", "-");
        }
        let slug: String = slug.trim_matches('-').chars().take(80).collect();
        let name = format!("{:03}-{slug}.svg", files.len() + 1);
        linked.push_str(&rest[..i]);
        match dir {
            Some(d) => {
                linked.push_str("<span class=\"chartbox\">");
                linked.push_str(chart);
                linked.push_str(&format!(
                    "<a class=\"dl\" href=\"{d}/{name}\" download title=\"this chart as an SVG file\">SVG</a></span>"
                ));
            }
            None => linked.push_str(chart),
        }
        files.push((name, standalone(chart)));
        rest = &rest[end..];
    }
    linked.push_str(rest);
    (linked, files)
}

/// A chart as an SVG file: the XML namespace, a white background and the report's styles
/// inside it.
fn standalone(chart: &str) -> String {
    chart
        .replacen(
            "<svg ",
            "<svg xmlns=\"http://www.w3.org/2000/svg\" style=\"background:#fff;font:13px system-ui,sans-serif\" ",
            1,
        )
        .replacen("</title>", &format!("</title><style>{}</style>", html::CSS), 1)
}
