//! Hand-made SVG charts — bars, lines, values over time, per-member I/O: no script, no
//! fonts from the network, readable in print.
//!
//! Right by construction: a chart's value axis is one [`Scale`] built from [`Ticks`]
//! (1, 2 or 5 × 10ⁿ from 0 to the first tick at or above the data), and both the grid
//! and every mark go through it, so a mark sits where its value's tick says. Each mark
//! carries its value (`data-value`, `data-min`/`data-max`, `data-expected`,
//! `data-values`) so that tests can check where it is drawn
//! (`crates/report/tests/chart_geometry.rs`).

use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `units × 10^exp` as a float, dividing for negative powers so that 3 × 10⁻¹ is 0.3.
fn scaled(units: u64, exp: i32) -> f64 {
    if exp >= 0 {
        units as f64 * 10f64.powi(exp)
    } else {
        units as f64 / 10f64.powi(-exp)
    }
}

/// `units × 10^exp` written out exactly, without trailing zeros: `0`, `0.3`, `1.5`, `2000`.
fn decimal(units: u64, exp: i32) -> String {
    if units == 0 {
        return "0".into();
    }
    if exp >= 0 {
        return format!("{units}{}", "0".repeat(exp as usize));
    }
    let d = (-exp) as usize;
    let digits = format!("{units:0>width$}", width = d + 1);
    let (int, frac) = digits.split_at(digits.len() - d);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    }
}

/// An axis's ticks: 0, step, 2 × step … `n` × step, where step is 1, 2 or 5 × 10ⁿ and
/// the last tick the smallest multiple of the step at or above the data's maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticks {
    /// The step's leading digit: 1, 2 or 5.
    mantissa: u64,
    /// The step's power of ten.
    exp: i32,
    /// Intervals: 2 to 7 (3 to 8 ticks).
    n: u64,
}

impl Ticks {
    /// Ticks for data from 0 to `data_max` (nothing positive or finite: 0 to 1). Of the
    /// nice steps giving 3 to 8 ticks, the one whose last tick is closest above the data;
    /// between equals, the one nearer 6 ticks.
    pub(crate) fn new(data_max: f64) -> Ticks {
        let m = if data_max.is_finite() && data_max > 0.0 {
            data_max
        } else {
            1.0
        };
        let e0 = m.log10().floor() as i32;
        let mut best: Option<Ticks> = None;
        for exp in e0 - 1..=e0 + 1 {
            for mantissa in [1, 2, 5] {
                let step = scaled(mantissa, exp);
                // Data on a tick (to rounding) ends there, not one step on.
                let n = ((m / step) * (1.0 - 1e-12)).ceil().max(1.0) as u64;
                if !(2..=7).contains(&n) {
                    continue;
                }
                let t = Ticks { mantissa, exp, n };
                let better = match best {
                    None => true,
                    Some(b) => {
                        let (top, btop) = (t.max(), b.max());
                        top < btop * (1.0 - 1e-12)
                            || (top <= btop * (1.0 + 1e-12) && t.n.abs_diff(5) < b.n.abs_diff(5))
                    }
                };
                if better {
                    best = Some(t);
                }
            }
        }
        // Steps 10^(e0-1) … 10^(e0+1) always give one with 3 to 8 ticks: from one nice
        // step to the next is at most × 2.5, and 10^e0 ≤ m < 10^(e0+1).
        best.expect("a nice step fits any maximum")
    }

    /// The `i`th tick's value.
    pub(crate) fn value(&self, i: u64) -> f64 {
        scaled(i * self.mantissa, self.exp)
    }

    /// The last tick: the axis's maximum.
    pub(crate) fn max(&self) -> f64 {
        self.value(self.n)
    }

    /// How many ticks (3 to 8).
    pub(crate) fn count(&self) -> u64 {
        self.n + 1
    }

    /// The `i`th tick's label: exact, without spurious digits (`0`, `0.1`, `250`), in
    /// thousands (`20k`) or millions (`5M`) from an axis of 10,000 or 10 million up.
    pub(crate) fn label(&self, i: u64) -> String {
        let units = i * self.mantissa;
        let max = self.max();
        let (exp, suffix) = if max >= 1e7 && self.exp >= 6 {
            (self.exp - 6, "M")
        } else if max >= 1e4 && self.exp >= 3 {
            (self.exp - 3, "k")
        } else {
            (self.exp, "")
        };
        if units == 0 {
            return "0".into();
        }
        format!("{}{suffix}", decimal(units, exp))
    }
}

/// A value axis on the page: value 0 at pixel `zero`, the ticks' maximum at `top`.
#[derive(Debug, Clone, Copy)]
struct Scale {
    ticks: Ticks,
    zero: f64,
    top: f64,
}

impl Scale {
    fn px(&self, v: f64) -> f64 {
        self.zero + (self.top - self.zero) * v / self.ticks.max()
    }
}

/// The plot area of a chart, in the SVG's coordinates.
#[derive(Debug, Clone, Copy)]
struct Plot {
    left: f64,
    top: f64,
    width: f64,
    height: f64,
}

impl Plot {
    fn bottom(&self) -> f64 {
        self.top + self.height
    }
    fn right(&self) -> f64 {
        self.left + self.width
    }
}

/// The width of every chart's viewBox.
const W: f64 = 640.0;
/// Left of a vertical value axis's plot: room for tick labels and the unit.
const LEFT: f64 = 72.0;
/// Top of the plot when nothing stands between it and the title.
const TOP: f64 = 36.0;
/// Height of a bar or line chart's plot.
const PLOT_H: f64 = 194.0;
/// Font size (px) of tick and x labels (the page's CSS: `.tick`, `.xtick`, `.xl`).
const LABEL_FONT: f64 = 12.0;
/// A generous average advance of one character of a label, for layout.
const CHAR_W: f64 = 0.6 * LABEL_FONT;
/// Line height of wrapped labels and of legend rows.
const LINE_H: f64 = 15.0;

/// `<svg>` with its title.
fn open(class: &str, title: &str, h: f64) -> String {
    format!(
        r#"<svg class="{class}" viewBox="0 0 {W} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{x}" y="20" class="ct">{t}</text>"#,
        t = esc(title),
        x = W / 2.0
    )
}

/// The vertical value axis: a grid line and label per tick (each `<line class="grid">`
/// followed by its `<text class="tick">`) and the unit along the left edge.
fn y_axis(s: &mut String, plot: &Plot, data_max: f64, unit: &str) -> Scale {
    let scale = Scale {
        ticks: Ticks::new(data_max),
        zero: plot.bottom(),
        top: plot.top,
    };
    for i in 0..scale.ticks.count() {
        let y = scale.px(scale.ticks.value(i));
        let _ = write!(
            s,
            r#"<line x1="{l}" x2="{r}" y1="{y:.1}" y2="{y:.1}" class="grid"/><text x="{tx}" y="{ty:.1}" class="tick">{v}</text>"#,
            l = plot.left,
            r = plot.right(),
            tx = plot.left - 6.0,
            ty = y + 4.0,
            v = scale.ticks.label(i)
        );
    }
    let _ = write!(
        s,
        r#"<text x="16" y="{c}" class="unit" transform="rotate(-90 16 {c})">{u}</text>"#,
        c = plot.top + plot.height / 2.0,
        u = esc(unit)
    );
    scale
}

/// A horizontal value axis under the plot: a grid line and label per tick (each `<line
/// class="xgrid">` followed by its `<text class="xtick">`).
fn x_axis(s: &mut String, plot: &Plot, data_max: f64) -> Scale {
    let scale = Scale {
        ticks: Ticks::new(data_max),
        zero: plot.left,
        top: plot.right(),
    };
    for i in 0..scale.ticks.count() {
        let x = scale.px(scale.ticks.value(i));
        let _ = write!(
            s,
            r#"<line x1="{x:.1}" x2="{x:.1}" y1="{t}" y2="{b}" class="xgrid"/><text x="{x:.1}" y="{ty}" class="xtick">{v}</text>"#,
            t = plot.top,
            b = plot.bottom(),
            ty = plot.bottom() + 16.0,
            v = scale.ticks.label(i)
        );
    }
    scale
}

/// How category labels sit under their slots.
enum Labels {
    /// Horizontal, each label's words on one to three lines.
    Lines(Vec<Vec<String>>),
    /// Turned 35° when some label does not fit its slot even wrapped.
    Turned(Vec<String>),
}

impl Labels {
    /// Horizontal on one line when every label fits its slot, else wrapped at spaces onto
    /// up to three lines when that fits, else turned.
    fn lay_out(labels: &[&str], slot: f64) -> Labels {
        let room = slot - 6.0;
        let width = |t: &str| t.chars().count() as f64 * CHAR_W;
        let mut wrapped = Vec::new();
        for l in labels {
            let mut lines: Vec<String> = Vec::new();
            for word in l.split(' ') {
                match lines.last_mut() {
                    Some(last) if width(last) + CHAR_W + width(word) <= room => {
                        last.push(' ');
                        last.push_str(word);
                    }
                    _ => lines.push(word.to_string()),
                }
            }
            if lines.len() > 3 || lines.iter().any(|x| width(x) > room) {
                return Labels::Turned(labels.iter().map(|l| l.to_string()).collect());
            }
            wrapped.push(lines);
        }
        Labels::Lines(wrapped)
    }

    /// The height (px) the labels take under the plot.
    fn height(&self) -> f64 {
        match self {
            Labels::Lines(ls) => {
                let lines = ls.iter().map(Vec::len).max().unwrap_or(1) as f64;
                6.0 + LINE_H * lines
            }
            Labels::Turned(ls) => {
                let longest = ls.iter().map(|l| l.chars().count()).max().unwrap_or(0);
                12.0 + longest as f64 * CHAR_W * 35f64.to_radians().sin()
            }
        }
    }

    /// Each label as `<text class="xl">`, centred on its x (`xs`), under `y`.
    fn write(&self, s: &mut String, xs: &[f64], y: f64) {
        match self {
            Labels::Lines(ls) => {
                for (lines, x) in ls.iter().zip(xs) {
                    let _ = write!(
                        s,
                        r#"<text x="{x:.1}" y="{ly:.1}" class="xl">{}"#,
                        esc(&lines[0]),
                        ly = y + 16.0
                    );
                    for l in &lines[1..] {
                        let _ = write!(s, r#"<tspan x="{x:.1}" dy="{LINE_H}">{}</tspan>"#, esc(l));
                    }
                    s.push_str("</text>");
                }
            }
            Labels::Turned(ls) => {
                for (l, x) in ls.iter().zip(xs) {
                    let _ = write!(
                        s,
                        r#"<text x="{x:.1}" y="{ly:.1}" class="xl" style="text-anchor:end" transform="rotate(-35 {x:.1} {ly:.1})">{}</text>"#,
                        esc(l),
                        ly = y + 14.0
                    );
                }
            }
        }
    }
}

/// A duration in ns printed in the unit that reads best (`512 ns`, `65.5 µs`, `1.05 ms`).
pub(crate) fn duration(ns: f64) -> String {
    match ns {
        ns if ns < 1e3 => format!("{} ns", short(ns)),
        ns if ns < 1e6 => format!("{} µs", short(ns / 1e3)),
        ns if ns < 1e9 => format!("{} ms", short(ns / 1e6)),
        ns => format!("{} s", short(ns / 1e9)),
    }
}

/// A value printed on a chart: no more digits than it needs (`0`, `8.5`, `12.3`, `240`).
fn short(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 0.1 || v == 0.0 {
        format!("{v:.2}")
    } else {
        // Small values keep three significant digits (0.00234 ms, not 0).
        let digits = (2 - v.abs().log10().floor() as i32).clamp(2, 9) as usize;
        format!("{v:.digits$}")
    };
    if s.contains('.') {
        let t = s.trim_end_matches('0').trim_end_matches('.');
        if t == "-0" {
            "0".into()
        } else {
            t.to_string()
        }
    } else {
        s
    }
}

const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
];

/// One bar: label, value, and the (lowest, highest) value over repetitions.
pub type Bar = (String, f64, Option<(f64, f64)>);

/// Bars' slots across a plot: the slot's width, and for bar i its left edge and width.
fn slots(plot: &Plot, n: usize) -> (f64, impl Fn(usize) -> (f64, f64)) {
    let slot = plot.width / n.max(1) as f64;
    let bw = (slot * 0.7).min(60.0);
    let left = plot.left;
    (slot, move |i| {
        let x = left + slot * i as f64 + (slot - bw) / 2.0;
        (x, bw)
    })
}

/// What every bar chart lays out the same way: the plot area, each bar's slot (x, width)
/// and the category labels under the bars.
fn bar_layout<'a>(
    names: impl Iterator<Item = &'a str>,
) -> (Plot, impl Fn(usize) -> (f64, f64), Labels) {
    let plot = Plot {
        left: LEFT,
        top: TOP,
        width: W - LEFT - 16.0,
        height: PLOT_H,
    };
    let names: Vec<&str> = names.collect();
    let (slot, at) = slots(&plot, names.len());
    let labels = Labels::lay_out(&names, slot);
    (plot, at, labels)
}

/// A vertical bar chart. Each bar is (label, value, spread); the value is printed above
/// it and a spread (lowest, highest over repetitions) is drawn as a whisker.
/// `class="chart"` and one `<rect class="bar" data-label=… data-value=…>` per bar let
/// tests count and place points.
pub fn bar_chart(class: &str, title: &str, unit: &str, bars: &[Bar]) -> String {
    let data_max = bars
        .iter()
        .map(|b| b.1.max(b.2.map_or(0.0, |s| s.1)))
        .fold(0.0, f64::max);
    let (plot, at, labels) = bar_layout(bars.iter().map(|b| b.0.as_str()));
    let mut s = open(class, title, plot.bottom() + labels.height() + 8.0);
    let y = y_axis(&mut s, &plot, data_max, unit);
    let mut centres = Vec::new();
    for (i, (label, v, spread)) in bars.iter().enumerate() {
        let (x, bw) = at(i);
        let cx = x + bw / 2.0;
        centres.push(cx);
        let mut above = y.px(*v);
        if let Some((lo, hi)) = spread {
            let (ylo, yhi) = (y.px(*lo), y.px(*hi));
            let _ = write!(
                s,
                r#"<line class="spread" data-label="{l}" data-min="{lo}" data-max="{hi}" x1="{cx:.1}" x2="{cx:.1}" y1="{ylo:.1}" y2="{yhi:.1}" stroke="black" stroke-width="1.5"><title>{l}: {los}–{his} over repetitions</title></line>"#,
                l = esc(label),
                los = short(*lo),
                his = short(*hi),
            );
            above = above.min(yhi);
        }
        let _ = write!(
            s,
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{by:.1}" width="{bw:.1}" height="{bh:.1}"><title>{l}: {vs} {u}</title></rect><text x="{cx:.1}" y="{vy:.1}" class="val">{vs}</text>"#,
            c = i % 8,
            by = y.px(*v),
            bh = y.px(0.0) - y.px(*v),
            l = esc(label),
            u = esc(unit),
            vs = short(*v),
            vy = above - 4.0,
        );
    }
    labels.write(&mut s, &centres, plot.bottom());
    s.push_str("</svg>");
    s
}

/// Measured bars with the model's expectation drawn as a black tick over each bar.
/// Bars carry `data-label`/`data-value`, ticks `class="model"` and `data-expected`.
pub fn model_chart(title: &str, unit: &str, items: &[(String, f64, Option<f64>)]) -> String {
    model_chart_as(title, unit, items, "model")
}

/// [`model_chart`]'s drawing with other words: `"model"` (bars measured, ticks the
/// model's expectation), `"sim"` (ticks the simulator's figure for the same case) or
/// `"compare"` (bars B, ticks A, for `raidlab compare`).
pub(crate) fn model_chart_as(
    title: &str,
    unit: &str,
    items: &[(String, f64, Option<f64>)],
    kind: &str,
) -> String {
    let (bar_word, tick_word, note) = if kind == "compare" {
        (
            "B",
            "A",
            "bars: B's median · black tick and figure: A's median",
        )
    } else if kind == "sim" {
        (
            "measured",
            "simulated",
            "bars: measured · black tick and figure: the simulator on the same case and disk model",
        )
    } else {
        (
            "measured",
            "model",
            "bars: measured · black tick and figure: the model's expectation",
        )
    };
    let data_max = items
        .iter()
        .map(|i| i.1.max(i.2.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let (plot, at, labels) = bar_layout(items.iter().map(|i| i.0.as_str()));
    let note_y = plot.bottom() + labels.height() + 16.0;
    let class = if kind == "compare" {
        "chart vs-model compare"
    } else {
        "chart vs-model"
    };
    let mut s = open(class, title, note_y + 8.0);
    let y = y_axis(&mut s, &plot, data_max, unit);
    let mut centres = Vec::new();
    for (i, (label, v, e)) in items.iter().enumerate() {
        let (x, bw) = at(i);
        let top = y.px(*v);
        let cx = x + bw / 2.0;
        centres.push(cx);
        let _ = write!(
            s,
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{top:.1}" width="{bw:.1}" height="{bh:.1}"><title>{l}: {bar_word} {vs} {u}</title></rect>"#,
            c = i % 8,
            l = esc(label),
            u = esc(unit),
            vs = short(*v),
            bh = y.px(0.0) - top,
        );
        if let Some(e) = e {
            let ey = y.px(*e);
            let _ = write!(
                s,
                r#"<line class="model" data-label="{l}" data-expected="{e}" x1="{x1:.1}" x2="{x2:.1}" y1="{ey:.1}" y2="{ey:.1}"><title>{l}: {tick_word} {es} {u}</title></line><text x="{cx:.1}" y="{ty:.1}" class="val">{es}</text>"#,
                l = esc(label),
                u = esc(unit),
                es = short(*e),
                x1 = x - 4.0,
                x2 = x + bw + 4.0,
                ty = ey.min(top) - 4.0,
            );
        }
    }
    labels.write(&mut s, &centres, plot.bottom());
    let _ = write!(
        s,
        r#"<text x="{l}" y="{note_y:.1}" class="lbl">{note}</text></svg>"#,
        l = plot.left,
    );
    s
}

/// One line per series over categorical x values (`None`: no point there). Points are
/// `<circle class="pt" data-series data-x data-value>`; the legend stands above the plot,
/// in as many columns as fit.
pub fn line_chart(
    class: &str,
    title: &str,
    unit: &str,
    xs: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let data_max = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let width = W - LEFT - 16.0;
    let longest = series
        .iter()
        .map(|s| s.0.chars().count() + 2)
        .max()
        .unwrap_or(0);
    let col_w = longest as f64 * CHAR_W + 16.0;
    let cols = ((width / col_w).floor() as usize).clamp(1, series.len().max(1));
    let rows = series.len().div_ceil(cols);
    let plot = Plot {
        left: LEFT,
        top: TOP + 8.0 + LINE_H * rows as f64,
        width,
        height: PLOT_H,
    };
    let step = plot.width / xs.len().max(1) as f64;
    let x_of = |i: usize| plot.left + step * (i as f64 + 0.5);
    let names: Vec<&str> = xs.iter().map(String::as_str).collect();
    let labels = Labels::lay_out(&names, step);
    let mut s = open(
        &format!("chart {class}"),
        title,
        plot.bottom() + labels.height() + 8.0,
    );
    let y = y_axis(&mut s, &plot, data_max, unit);
    let centres: Vec<f64> = (0..xs.len()).map(x_of).collect();
    labels.write(&mut s, &centres, plot.bottom());
    for (k, (name, values)) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let pts: Vec<String> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x_of(i), y.px(v))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline data-series="{n}" fill="none" stroke="{color}" stroke-width="2" points="{}"/><text x="{lx:.1}" y="{ly:.1}" class="lgd" fill="{color}">● {n}</text>"#,
            pts.join(" "),
            lx = plot.left + col_w * (k % cols) as f64,
            ly = TOP + 2.0 + LINE_H * (k / cols) as f64,
            n = esc(name)
        );
        for (i, v) in values.iter().enumerate() {
            if let Some(v) = v {
                let _ = write!(
                    s,
                    r#"<circle class="pt" data-series="{n}" data-x="{x}" data-value="{v}" cx="{cx:.1}" cy="{cy:.1}" r="3.5" fill="{color}"><title>{n} @ {x}: {vs} {u}</title></circle>"#,
                    n = esc(name),
                    x = esc(&xs[i]),
                    u = esc(unit),
                    vs = short(*v),
                    cx = x_of(i),
                    cy = y.px(*v),
                );
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// Per-member I/O counts as horizontal stacked bars (reads, writes) on an I/O axis, with
/// each member's share of all member I/O: parity and copy load shows as uneven or
/// doubled shares. Reads are `<rect class="member">`, writes `<rect class="member-w">`,
/// both with `data-value`; the legend names where the counts come from (`source`).
pub fn share_chart(title: &str, members: &[(String, u64, u64)], source: &str) -> String {
    let total: u64 = members.iter().map(|m| m.1 + m.2).sum();
    let most = members.iter().map(|m| m.1 + m.2).max().unwrap_or(0) as f64;
    let row = 20.0;
    let plot = Plot {
        left: 90.0,
        top: 30.0,
        width: W - 90.0 - 90.0,
        height: row * members.len() as f64,
    };
    let h = plot.bottom() + 42.0;
    let mut s = open("chart share", title, h);
    let x = x_axis(&mut s, &plot, most);
    for (i, (name, r, wr)) in members.iter().enumerate() {
        let y = plot.top + row * i as f64 + 3.0;
        let (x0, xr, xw) = (x.px(0.0), x.px(*r as f64), x.px((r + wr) as f64));
        let share = if total > 0 {
            (r + wr) as f64 / total as f64
        } else {
            0.0
        };
        let _ = write!(
            s,
            r#"<text x="{tx}" y="{ty:.1}" class="tick">{n}</text><rect class="member" data-member="{n}" data-share="{share}" data-value="{r}" x="{x0:.1}" y="{y:.1}" width="{rw_:.1}" height="14" fill="{c0}"><title>{n}: {r} reads</title></rect><rect class="member-w" data-member="{n}" data-value="{wr}" x="{xr:.1}" y="{y:.1}" width="{ww:.1}" height="14" fill="{c1}"><title>{n}: {wr} writes</title></rect><text x="{px:.1}" y="{ty:.1}" class="lbl">{pct:.1} %</text>"#,
            tx = plot.left - 6.0,
            ty = y + 11.0,
            n = esc(name),
            c0 = PALETTE[0],
            c1 = PALETTE[1],
            rw_ = xr - x0,
            ww = xw - xr,
            px = xw + 6.0,
            pct = share * 100.0,
        );
    }
    let _ = write!(
        s,
        r#"<text x="{l}" y="{y:.1}" class="lbl"><tspan fill="{c0}">■ reads</tspan> <tspan fill="{c1}">■ writes</tspan> (I/Os each member served, {src})</text></svg>"#,
        src = esc(source),
        l = plot.left,
        y = h - 4.0,
        c0 = PALETTE[0],
        c1 = PALETTE[1],
    );
    s
}

/// IOPS per second over the run, as one polyline.
pub fn time_chart(title: &str, values: &[f64]) -> String {
    time_chart_unit(title, "IOPS", values)
}

/// A per-second line chart of `values` in `unit`: the value of second i (1, 2 …) at
/// i seconds on a time axis from 0. The polyline carries `data-values`.
pub fn time_chart_unit(title: &str, unit: &str, values: &[f64]) -> String {
    let plot = Plot {
        left: LEFT,
        top: TOP,
        width: W - LEFT - 24.0,
        height: 140.0,
    };
    let mut s = open("chart over-time", title, plot.bottom() + 44.0);
    let y = y_axis(
        &mut s,
        &plot,
        values.iter().copied().fold(0.0, f64::max),
        unit,
    );
    let x = x_axis(&mut s, &plot, values.len() as f64);
    let pts: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{:.1},{:.1}", x.px((i + 1) as f64), y.px(*v)))
        .collect();
    let vals: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    let _ = write!(
        s,
        r#"<polyline class="series" data-points="{n}" data-values="{}" fill="none" stroke="{c}" stroke-width="1.5" points="{}"/><text x="{cx}" y="{ty:.1}" class="unit">seconds</text></svg>"#,
        vals.join(" "),
        pts.join(" "),
        n = values.len(),
        c = PALETTE[0],
        cx = plot.left + plot.width / 2.0,
        ty = plot.bottom() + 36.0,
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(t: &Ticks) -> Vec<String> {
        (0..t.count()).map(|i| t.label(i)).collect()
    }

    #[test]
    fn ticks_of_the_issue() {
        // A 63k peak: a 70k axis in 10k steps, not 100k.
        let t = Ticks::new(63_000.0);
        assert_eq!((t.max(), t.value(1)), (70_000.0, 10_000.0));
        assert_eq!(
            labels(&t),
            ["0", "10k", "20k", "30k", "40k", "50k", "60k", "70k"]
        );
        // 50,151 IOPS: 60k.
        assert_eq!(Ticks::new(50_151.0).max(), 60_000.0);
        // 0.38 ms: 0.1 steps to 0.4.
        let t = Ticks::new(0.38);
        assert_eq!(labels(&t), ["0", "0.1", "0.2", "0.3", "0.4"]);
        // A round maximum is the last tick.
        assert_eq!(Ticks::new(1000.0).max(), 1000.0);
        assert_eq!(Ticks::new(0.3).max(), 0.3);
        // 250 with 62.5 steps was the old way; now 50s.
        assert_eq!(
            labels(&Ticks::new(240.0)),
            ["0", "50", "100", "150", "200", "250"]
        );
        // Nothing to draw: 0 to 1.
        assert_eq!(Ticks::new(0.0).max(), 1.0);
        assert_eq!(Ticks::new(f64::NAN).max(), 1.0);
        assert_eq!(
            labels(&Ticks::new(1.2e7)),
            ["0", "2M", "4M", "6M", "8M", "10M", "12M"]
        );
    }

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal(0, -3), "0");
        assert_eq!(decimal(5, -3), "0.005");
        assert_eq!(decimal(15, -1), "1.5");
        assert_eq!(decimal(10, -1), "1");
        assert_eq!(decimal(12, 2), "1200");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(8.5), "8.5");
        assert_eq!(short(12.34), "12.3");
        assert_eq!(short(240.4), "240");
        assert_eq!(short(0.002345), "0.00234");
        assert_eq!(short(0.05), "0.05");
        assert_eq!(short(-0.0012), "-0.0012");
    }

    #[test]
    fn labels_lay_out() {
        let l = Labels::lay_out(&["raid0 512k", "raid5 512k"], 200.0);
        assert!(matches!(l, Labels::Lines(ref v) if v.iter().all(|x| x.len() == 1)));
        let l = Labels::lay_out(&["raid10 n2 512k", "raid10 f2 512k"], 80.0);
        assert!(matches!(l, Labels::Lines(ref v) if v[0] == ["raid10 n2", "512k"]));
        let l = Labels::lay_out(&["raid10 n2 512k stripe_cache=4096 bitmap"], 40.0);
        assert!(matches!(l, Labels::Turned(_)));
    }

    /// Parse a label back (`k`, `M` suffixes).
    fn read(l: &str) -> f64 {
        if let Some(n) = l.strip_suffix('k') {
            n.parse::<f64>().unwrap() * 1e3
        } else if let Some(n) = l.strip_suffix('M') {
            n.parse::<f64>().unwrap() * 1e6
        } else {
            l.parse().unwrap()
        }
    }

    proptest! {
        #[test]
        fn ticks_are_nice_and_cover_the_data(exp in -3i32..10, m in 1.0f64..10.0) {
            let v = m * 10f64.powi(exp);
            let t = Ticks::new(v);
            prop_assert!((3..=8).contains(&t.count()), "{v}: {} ticks", t.count());
            prop_assert!([1, 2, 5].contains(&t.mantissa));
            // The axis reaches the data, and one step less would not.
            prop_assert!(t.max() >= v * (1.0 - 1e-12), "{v}: axis {}", t.max());
            prop_assert!(t.max() - t.value(1) < v, "{v}: axis {} step {}", t.max(), t.value(1));
            for (i, l) in labels(&t).iter().enumerate() {
                let want = t.value(i as u64);
                prop_assert!((read(l) - want).abs() <= 1e-9 * t.max(), "{l} is not {want}");
                let digits = l.trim_end_matches(['k', 'M']);
                prop_assert!(
                    !digits.contains('.') || !digits.ends_with('0'),
                    "{l}: spurious zeros"
                );
                prop_assert!(l.len() <= 7, "{l}: too long");
            }
            prop_assert_eq!(t.label(0), "0");
        }
    }
}
