//! The chart-geometry checker, shared by `chart_geometry.rs` (the example plans, simulated)
//! and the CLI's import test (a bench-fio tree measured with fio): it parses every SVG
//! chart of a report page and checks each mark against the axis its ticks define.

#![allow(dead_code)]

use std::collections::BTreeMap;

/// Half a pixel: how far a mark may sit from where its value belongs.
pub const TOLERANCE: f64 = 0.5;

// ---------------------------------------------------------------------------------------
// A small reader for the SVG the report writes: elements with their attributes, and for
// `<text>` its text (tspans joined by a space).

#[derive(Debug, Clone)]
struct El {
    name: String,
    attrs: BTreeMap<String, String>,
    text: String,
}

impl El {
    fn get(&self, k: &str) -> Option<&str> {
        self.attrs.get(k).map(String::as_str)
    }
    fn num(&self, k: &str) -> f64 {
        let v = self
            .get(k)
            .unwrap_or_else(|| panic!("<{}> has no {k}: {self:?}", self.name));
        v.parse()
            .unwrap_or_else(|_| panic!("<{}> {k}={v:?} is not a number", self.name))
    }
    fn has_class(&self, c: &str) -> bool {
        self.get("class")
            .is_some_and(|cl| cl.split_whitespace().any(|x| x == c))
    }
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The start tag at the beginning of `s` (after `<`): name, attributes, the rest after `>`.
fn tag(s: &str) -> (String, BTreeMap<String, String>, &str) {
    let name_end = s
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .expect("a tag name");
    let name = s[..name_end].to_string();
    let mut rest = &s[name_end..];
    let mut attrs = BTreeMap::new();
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("/>").or_else(|| rest.strip_prefix('>')) {
            return (name, attrs, r);
        }
        let eq = rest.find('=').expect("key=\"value\"");
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].strip_prefix('"').expect("a quoted value");
        let close = after.find('"').expect("a closing quote");
        attrs.insert(key, unescape(&after[..close]));
        rest = &after[close + 1..];
    }
}

/// Every element of one `<svg>…</svg>`, in document order.
fn elements(svg: &str) -> Vec<El> {
    let mut out = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if rest.starts_with('/') {
            continue;
        }
        let (name, attrs, after) = tag(rest);
        rest = after;
        let mut text = String::new();
        if name == "text" {
            let end = rest.find("</text>").expect("</text>");
            let inner = &rest[..end];
            let mut parts = Vec::new();
            let mut r = inner;
            loop {
                let lt = r.find('<').unwrap_or(r.len());
                let chunk = r[..lt].trim();
                if !chunk.is_empty() {
                    parts.push(unescape(chunk));
                }
                if lt == r.len() {
                    break;
                }
                r = &r[lt..];
                r = &r[r.find('>').expect("a closed tag") + 1..];
            }
            text = parts.join(" ");
            rest = &rest[end + "</text>".len()..];
        }
        out.push(El { name, attrs, text });
    }
    out
}

/// Every `<svg …>…</svg>` of a page.
pub fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg ") {
        let end = rest[i..].find("</svg>").expect("</svg>") + i + "</svg>".len();
        out.push(&rest[i..end]);
        rest = &rest[end..];
    }
    out
}

// ---------------------------------------------------------------------------------------
// Axes from ticks.

/// A tick label's value: digits with an optional decimal point and `k`/`M` suffix. A
/// label with spurious digits (`0.00`, `62.50`) is read but reported in `errs`.
fn label_value(s: &str, errs: &mut Vec<String>) -> Result<f64, String> {
    let (num, mul) = if let Some(n) = s.strip_suffix('k') {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('M') {
        (n, 1e6)
    } else {
        (s, 1.0)
    };
    let canonical = num == "0"
        || (!num.is_empty()
            && num.chars().all(|c| c.is_ascii_digit() || c == '.')
            && (!num.starts_with('0') || num.starts_with("0."))
            && !(num.contains('.') && (num.ends_with('0') || num.ends_with('.'))));
    if !canonical {
        errs.push(format!("tick label {s:?} has spurious digits"));
    }
    num.parse::<f64>()
        .map(|v| v * mul)
        .map_err(|e| format!("tick label {s:?}: {e}"))
}

/// Whether `step` is 1, 2 or 5 × 10ⁿ.
fn nice(step: f64) -> bool {
    let e = step.log10().floor();
    let m = step / 10f64.powf(e);
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|n| (m - n).abs() < 1e-6 * n)
}

/// A linear value axis: pixel = `at0` + `per` × value.
#[derive(Debug, Clone, Copy)]
struct Axis {
    at0: f64,
    per: f64,
    step: f64,
    max: f64,
}

impl Axis {
    fn px(&self, v: f64) -> f64 {
        self.at0 + self.per * v
    }
    /// The value a pixel reads as on this axis.
    fn value(&self, px: f64) -> f64 {
        (px - self.at0) / self.per
    }
}

/// The axis of ticks (value, pixel), through the first and last; what is wrong with it
/// (values not nice, evenly spaced and from 0; pixels not evenly placed) goes to `errs`.
fn axis_of(ticks: &[(f64, f64)], what: &str, errs: &mut Vec<String>) -> Result<Axis, String> {
    if ticks.len() < 2 {
        return Err(format!("{what}: {} ticks", ticks.len()));
    }
    if !(3..=8).contains(&ticks.len()) {
        errs.push(format!("{what}: {} ticks, want 3 to 8", ticks.len()));
    }
    if ticks[0].0 != 0.0 {
        errs.push(format!("{what}: the first tick is {}, not 0", ticks[0].0));
    }
    let step = ticks[1].0 - ticks[0].0;
    if !(step > 0.0 && nice(step)) {
        errs.push(format!("{what}: step {step} is not 1, 2 or 5 × 10ⁿ"));
    }
    let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
    let per = (last.1 - first.1) / (last.0 - first.0);
    let axis = Axis {
        at0: first.1 - per * first.0,
        per,
        step,
        max: last.0,
    };
    for (i, (v, px)) in ticks.iter().enumerate() {
        if (v - step * i as f64).abs() > 1e-9 * step * ticks.len() as f64 {
            errs.push(format!("{what}: tick {i} is {v}, not {}", step * i as f64));
        }
        if (axis.px(*v) - px).abs() > TOLERANCE {
            errs.push(format!(
                "{what}: tick {v} at {px}, off the line through the first and last by {:.2} px",
                axis.px(*v) - px
            ));
        }
    }
    Ok(axis)
}

/// Ticks are `<line class=LINE …/>` each followed by `<text class=TEXT>label</text>`;
/// `coord` is the line's attribute that places it.
fn ticks(
    els: &[El],
    line: &str,
    text: &str,
    coord: &str,
    errs: &mut Vec<String>,
) -> Result<Vec<(f64, f64)>, String> {
    let mut out = Vec::new();
    for (i, e) in els.iter().enumerate() {
        if e.name == "line" && e.has_class(line) {
            let t = els
                .get(i + 1)
                .filter(|t| t.name == "text" && t.has_class(text))
                .ok_or_else(|| format!("a {line} line without its {text} label"))?;
            out.push((label_value(&t.text, errs)?, e.num(coord)));
        }
    }
    Ok(out)
}

/// The axis must reach the data's maximum and end on the first tick at or above it.
fn covers(axis: &Axis, data_max: f64, what: &str, errs: &mut Vec<String>) {
    let slack = 1e-9 * axis.max.max(1e-12);
    if data_max > axis.max + slack {
        errs.push(format!(
            "{what}: data reaches {data_max}, the axis only {}",
            axis.max
        ));
    } else if data_max > 0.0 && axis.max - axis.step >= data_max - slack {
        errs.push(format!(
            "{what}: the axis runs to {} though the data ends at {data_max} (step {})",
            axis.max, axis.step
        ));
    }
}

// ---------------------------------------------------------------------------------------
// The checks per chart.

/// What one chart's check found: its kind, how many marks it checked, the worst miss
/// (px) and as a share of the plot's height, and what is wrong.
#[derive(Debug, Default)]
pub struct Found {
    kind: String,
    marks: usize,
    worst_px: f64,
    worst_share: f64,
    worst_what: String,
    errors: Vec<String>,
}

impl Found {
    /// A mark of value `v` drawn at pixel `at` on `axis`.
    fn mark_on(&mut self, what: String, at: f64, v: f64, axis: &Axis) {
        let before = self.errors.len();
        self.mark(what, at, axis.px(v), axis.per * axis.max);
        if self.errors.len() > before {
            let e = self.errors.last_mut().expect("just pushed");
            *e = format!("{e}: {v} is drawn at {:.0}", axis.value(at));
        }
    }

    fn mark(&mut self, what: String, at: f64, want: f64, plot: f64) {
        self.marks += 1;
        let miss = (at - want).abs();
        if miss > self.worst_px {
            self.worst_px = miss;
            self.worst_share = miss / plot.abs();
            self.worst_what = what.clone();
        }
        if miss > TOLERANCE {
            self.errors.push(format!(
                "{what}: drawn at {at:.2} px, belongs at {want:.2} px ({:.1} % of the plot)",
                100.0 * miss / plot.abs()
            ));
        }
    }
}

pub fn check(svg: &str) -> Found {
    let els = elements(svg);
    let class = els[0].get("class").unwrap_or("").to_string();
    let kind = if class.contains("over-time") {
        "over-time"
    } else if class.contains("share") {
        "share"
    } else if class.contains("vs-model") {
        "vs-model"
    } else if class.contains("member-cost") {
        "member-cost"
    } else if class.contains("sweep") {
        "sweep"
    } else if class.contains("custom") {
        "custom"
    } else if class.contains("percentiles") {
        "percentiles"
    } else if class.contains("histogram") {
        "histogram"
    } else {
        "bar"
    };
    let title = els
        .iter()
        .find(|e| e.name == "text" && e.has_class("ct"))
        .map(|e| e.text.clone())
        .unwrap_or_default();
    let mut f = Found {
        kind: kind.into(),
        ..Default::default()
    };
    let r = match kind {
        "over-time" => over_time(&els, &mut f),
        "share" => share(&els, &mut f),
        "sweep" | "custom" | "percentiles" => lines(&els, &mut f),
        _ => bars(&els, &mut f),
    };
    if let Err(e) = r {
        f.errors.push(e);
    }
    for e in &mut f.errors {
        *e = format!("[{kind}] {title}: {e}");
    }
    f
}

fn y_axis(els: &[El], data_max: f64, f: &mut Found) -> Result<Axis, String> {
    let t = ticks(els, "grid", "tick", "y1", &mut f.errors)?;
    let axis = axis_of(&t, "y axis", &mut f.errors)?;
    covers(&axis, data_max, "y axis", &mut f.errors);
    Ok(axis)
}

/// Every x label (`class="xl"`): its text and x.
fn x_labels(els: &[El]) -> Vec<(String, f64)> {
    els.iter()
        .filter(|e| e.name == "text" && e.has_class("xl"))
        .map(|e| (e.text.clone(), e.num("x")))
        .collect()
}

fn bars(els: &[El], f: &mut Found) -> Result<(), String> {
    let rects: Vec<&El> = els
        .iter()
        .filter(|e| e.name == "rect" && e.has_class("bar"))
        .collect();
    let spreads: Vec<&El> = els.iter().filter(|e| e.has_class("spread")).collect();
    let models: Vec<&El> = els.iter().filter(|e| e.has_class("model")).collect();
    let data_max = rects
        .iter()
        .map(|r| r.num("data-value"))
        .chain(spreads.iter().map(|s| s.num("data-max")))
        .chain(models.iter().map(|m| m.num("data-expected")))
        .fold(0.0, f64::max);
    let a = y_axis(els, data_max, f)?;
    let plot = a.per * a.max;
    let labels = x_labels(els);
    if labels.len() != rects.len() {
        f.errors
            .push(format!("{} bars, {} x labels", rects.len(), labels.len()));
    }
    for (i, r) in rects.iter().enumerate() {
        let l = r.get("data-label").unwrap_or("");
        let v = r.num("data-value");
        f.mark_on(format!("bar {l} = {v} (top)"), r.num("y"), v, &a);
        f.mark(
            format!("bar {l} (base)"),
            r.num("y") + r.num("height"),
            a.px(0.0),
            plot,
        );
        if let Some((text, lx)) = labels.get(i) {
            if text != l {
                f.errors.push(format!("bar {l} is labelled {text:?}"));
            }
            let cx = r.num("x") + r.num("width") / 2.0;
            f.mark(format!("bar {l}'s label (x)"), *lx, cx, plot);
        }
    }
    for s in spreads {
        let l = s.get("data-label").unwrap_or("");
        let (lo, hi) = (s.num("data-min"), s.num("data-max"));
        f.mark_on(format!("whisker {l} low {lo}"), s.num("y1"), lo, &a);
        f.mark_on(format!("whisker {l} high {hi}"), s.num("y2"), hi, &a);
    }
    for m in models {
        let l = m.get("data-label").unwrap_or("");
        let e = m.num("data-expected");
        f.mark_on(format!("model tick {l} = {e}"), m.num("y1"), e, &a);
        f.mark_on(format!("model tick {l} = {e} (y2)"), m.num("y2"), e, &a);
    }
    Ok(())
}

fn points(p: &str) -> Vec<(f64, f64)> {
    p.split_whitespace()
        .map(|xy| {
            let (x, y) = xy.split_once(',').expect("x,y");
            (x.parse().expect("x"), y.parse().expect("y"))
        })
        .collect()
}

fn lines(els: &[El], f: &mut Found) -> Result<(), String> {
    let pts: Vec<&El> = els
        .iter()
        .filter(|e| e.name == "circle" && e.has_class("pt"))
        .collect();
    let data_max = pts.iter().map(|p| p.num("data-value")).fold(0.0, f64::max);
    let a = y_axis(els, data_max, f)?;
    let plot = a.per * a.max;
    let labels = x_labels(els);
    for p in &pts {
        let (s, x, v) = (
            p.get("data-series").unwrap_or(""),
            p.get("data-x").unwrap_or(""),
            p.num("data-value"),
        );
        f.mark_on(format!("{s} @ {x} = {v}"), p.num("cy"), v, &a);
        match labels.iter().find(|l| l.0 == x) {
            Some((_, lx)) => f.mark(format!("{s} @ {x} (x)"), p.num("cx"), *lx, plot),
            None => f.errors.push(format!("no x label {x:?}")),
        }
    }
    // Every polyline vertex is one of the points.
    for l in els.iter().filter(|e| e.name == "polyline") {
        for (x, y) in points(l.get("points").unwrap_or("")) {
            if !pts
                .iter()
                .any(|p| (p.num("cx") - x).abs() < 0.05 && (p.num("cy") - y).abs() < 0.05)
            {
                f.errors
                    .push(format!("polyline vertex {x},{y} is no point"));
            }
        }
    }
    // The legend stays out of the plot.
    let top = a.px(a.max);
    for l in els
        .iter()
        .filter(|e| e.name == "text" && e.has_class("lgd"))
    {
        if l.num("y") + 3.0 > top {
            f.errors.push(format!(
                "legend {:?} at y {} overlaps the plot (top {top})",
                l.text,
                l.num("y")
            ));
        }
    }
    Ok(())
}

fn over_time(els: &[El], f: &mut Found) -> Result<(), String> {
    let line = els
        .iter()
        .find(|e| e.name == "polyline" && e.has_class("series"))
        .ok_or("no polyline")?;
    let values: Vec<f64> = line
        .get("data-values")
        .ok_or("the polyline has no data-values")?
        .split_whitespace()
        .map(|v| v.parse().expect("a value"))
        .collect();
    let a = y_axis(els, values.iter().copied().fold(0.0, f64::max), f)?;
    let t = ticks(els, "xgrid", "xtick", "x1", &mut f.errors)?;
    let x = axis_of(&t, "x axis (seconds)", &mut f.errors)?;
    covers(&x, values.len() as f64, "x axis (seconds)", &mut f.errors);
    let pts = points(line.get("points").unwrap_or(""));
    if pts.len() != values.len() {
        return Err(format!("{} vertices, {} values", pts.len(), values.len()));
    }
    let plot = a.per * a.max;
    for (i, ((px, py), v)) in pts.iter().zip(&values).enumerate() {
        f.mark_on(format!("second {} = {v}", i + 1), *py, *v, &a);
        f.mark(
            format!("second {} (x)", i + 1),
            *px,
            x.px((i + 1) as f64),
            plot,
        );
    }
    Ok(())
}

fn share(els: &[El], f: &mut Found) -> Result<(), String> {
    let reads: Vec<&El> = els.iter().filter(|e| e.has_class("member")).collect();
    let writes: Vec<&El> = els.iter().filter(|e| e.has_class("member-w")).collect();
    if reads.len() != writes.len() {
        return Err(format!(
            "{} read bars, {} write bars",
            reads.len(),
            writes.len()
        ));
    }
    let totals: Vec<(f64, f64)> = reads
        .iter()
        .zip(&writes)
        .map(|(r, w)| (r.num("data-value"), w.num("data-value")))
        .collect();
    let t = ticks(els, "xgrid", "xtick", "x1", &mut f.errors)?;
    let x = axis_of(&t, "x axis (I/Os)", &mut f.errors)?;
    let most = totals.iter().map(|t| t.0 + t.1).fold(0.0, f64::max);
    covers(&x, most, "x axis (I/Os)", &mut f.errors);
    let plot = x.per * x.max;
    for ((r, w), (rv, wv)) in reads.iter().zip(&writes).zip(&totals) {
        let m = r.get("data-member").unwrap_or("");
        f.mark(format!("{m} reads start"), r.num("x"), x.px(0.0), plot);
        f.mark(
            format!("{m} reads {rv}"),
            r.num("x") + r.num("width"),
            x.px(*rv),
            plot,
        );
        f.mark(format!("{m} writes start"), w.num("x"), x.px(*rv), plot);
        let end = w.num("x") + w.num("width");
        f.mark(format!("{m} writes {wv}"), end, x.px(rv + wv), plot);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------

/// A CSS rule's font size on the page, if it has one.
pub fn font_size(html: &str, class: &str) -> Option<f64> {
    let rule = &html[html.find(&format!(".{class}{{"))?..];
    let rule = &rule[..rule.find('}')?];
    let fs = rule.find("font-size:")? + "font-size:".len();
    rule[fs..fs + rule[fs..].find("px")?].parse().ok()
}

/// Per chart kind: (charts, marks, worst px, worst share of the plot, where).
pub type Tally = BTreeMap<String, (usize, usize, f64, f64, String)>;

/// Check every chart of a report page, adding to `tally` and `errors`; `name` says where
/// the worst mark was found.
pub fn check_page(page: &str, name: &str, tally: &mut Tally, errors: &mut Vec<String>) {
    // The x labels are at least as large as the y axis's tick labels.
    match (font_size(page, "tick"), font_size(page, "xl")) {
        (Some(tick), Some(xl)) if xl >= tick => {}
        (tick, xl) => errors.push(format!("x labels {xl:?} px, ticks {tick:?} px")),
    }
    for svg in svgs(page) {
        let f = check(svg);
        let k = tally.entry(f.kind.clone()).or_default();
        k.0 += 1;
        k.1 += f.marks;
        if f.worst_px > k.2 {
            k.2 = f.worst_px;
            k.3 = f.worst_share;
            k.4 = format!("{name}: {}", f.worst_what);
        }
        errors.extend(f.errors);
    }
}

/// Check one page on its own: every chart, and a checked mark of each of `kinds`.
pub fn check_alone(page: &str, name: &str, kinds: &[&str]) {
    let (mut tally, mut errors) = (Tally::new(), Vec::new());
    check_page(page, name, &mut tally, &mut errors);
    conclude(&tally, kinds, errors);
}

/// Print the tally, require a checked mark of each of `kinds`, and fail with a few
/// problems of each sort.
pub fn conclude(tally: &Tally, kinds: &[&str], mut errors: Vec<String>) {
    let per_kind = tally;
    for (kind, (charts, marks, px, share, what)) in per_kind {
        eprintln!(
            "{kind}: {charts} charts, {marks} marks; worst {px:.2} px ({:.1} % of the plot) — {what}",
            100.0 * share
        );
    }
    for kind in kinds {
        if per_kind.get(*kind).is_none_or(|k| k.1 == 0) {
            errors.push(format!("no mark of a {kind} chart was checked"));
        }
    }
    if !errors.is_empty() {
        // A few of each kind of problem: the chart kind and the problem's first words.
        let mut shown: BTreeMap<String, usize> = BTreeMap::new();
        let mut text = String::new();
        for e in &errors {
            let kind = e.split(':').next().unwrap_or("").to_string()
                + &e.split(": ")
                    .nth(1)
                    .unwrap_or("")
                    .chars()
                    .take(12)
                    .collect::<String>();
            let n = shown.entry(kind).or_default();
            *n += 1;
            if *n <= 3 {
                text.push_str(e);
                text.push('\n');
            }
        }
        panic!("{} problems, among them:\n{text}", errors.len());
    }
}
