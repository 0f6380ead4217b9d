//! Hand-made SVG charts (bars, lines, over time, member shares): no script, no fonts from
//! the network, readable in print. Every chart draws its grid, its tick labels and its
//! marks from one `Plot`, and marks carry their values (`data-value`), so a test can check
//! that each is drawn where its value says.

use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value axis from 0 that fits `v`: ticks every 1, 2 or 5 × 10ⁿ, three to six
/// intervals, the top the first tick at or above `v` (a 63k peak gets an 80k axis in
/// 20k steps, not 100k). Returns (top, step).
fn axis(v: f64) -> (f64, f64) {
    if v <= 0.0 || !v.is_finite() {
        return (1.0, 0.25);
    }
    let raw = v / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * (1.0 - 1e-12))
        .unwrap_or(10.0 * mag);
    let top = (v / step - 1e-9).ceil().max(1.0) * step;
    (top, step)
}

/// A tick's label: as many decimals as the step needs, none for zero.
fn tick_label(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10()).ceil() as usize
    };
    format!("{v:.decimals$}")
}

/// One bar: label, value, and the (lowest, highest) value over repetitions.
pub type Bar = (String, f64, Option<(f64, f64)>);

/// A vertical bar chart. Each bar is (label, value, spread); the value is printed above
/// it and a spread (lowest, highest over repetitions) is drawn as a whisker.
/// `class="chart"` and one `<rect class="bar" data-label=…>` per bar let tests count points.
pub fn bar_chart(class: &str, title: &str, unit: &str, bars: &[Bar]) -> String {
    let peak = bars
        .iter()
        .map(|b| b.1.max(b.2.map_or(0.0, |s| s.1)))
        .fold(0.0, f64::max);
    let (
        mut s,
        Plot {
            left,
            top,
            w: plot_w,
            h: plot_h,
            max,
        },
    ) = frame(class, title, unit, peak, 300.0, 0.0);
    let slot = plot_w / bars.len().max(1) as f64;
    let tilt = label_tilt(bars.iter().map(|b| b.0.as_str()), slot);
    for (i, (label, v, spread)) in bars.iter().enumerate() {
        let bw = (slot * 0.7).min(60.0);
        let x = left + slot * i as f64 + (slot - bw) / 2.0;
        let bh = if max > 0.0 { plot_h * v / max } else { 0.0 };
        let mut y = top + plot_h - bh;
        if let Some((lo, hi)) = spread {
            let (ylo, yhi) = (
                top + plot_h - plot_h * lo / max,
                top + plot_h - plot_h * hi / max,
            );
            let _ = write!(
                s,
                r#"<line class="spread" data-label="{l}" data-min="{lo}" data-max="{hi}" x1="{cx:.1}" x2="{cx:.1}" y1="{ylo:.1}" y2="{yhi:.1}" stroke="black" stroke-width="1.5"><title>{l}: {los}–{his} over repetitions</title></line>"#,
                l = esc(label),
                cx = x + bw / 2.0,
                los = short(*lo),
                his = short(*hi),
            );
            y = y.min(yhi);
        }
        let _ = write!(
            s,
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{by:.2}" width="{bw:.1}" height="{bh:.2}"><title>{l}: {vs} {u}</title></rect><text x="{cx:.1}" y="{vy:.1}" class="val">{vs}</text><text x="{cx:.1}" y="{ly:.1}" class="lbl x"{tilt}>{l}</text>"#,
            c = i % 8,
            tilt = tilt(x + bw / 2.0, top + plot_h + 16.0),
            by = top + plot_h - bh,
            l = esc(label),
            u = esc(unit),
            vs = short(*v),
            cx = x + bw / 2.0,
            vy = y - 4.0,
            ly = top + plot_h + 16.0,
        );
    }
    s.push_str("</svg>");
    s
}

fn short(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

const PALETTE: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
];

/// Where a chart's values are drawn: the plot's left and top edge, its size, and the
/// value at its top.
struct Plot {
    left: f64,
    top: f64,
    w: f64,
    h: f64,
    max: f64,
}

/// Frame of a chart: `<svg>` with title, value grid and unit label, for values up to
/// `peak`; a legend of `legend_h` pixels sits above the plot. The grid, its tick labels
/// and every mark share one [`Plot`], so a mark is drawn at its value by construction.
fn frame(class: &str, title: &str, unit: &str, peak: f64, h: f64, legend_h: f64) -> (String, Plot) {
    let (w, left, bottom) = (640.0, 64.0, 70.0);
    let top = 36.0 + legend_h;
    let plot_h = h - bottom - top;
    let (max, step) = axis(peak);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="{class}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{x}" y="20" class="ct">{t}</text>"#,
        t = esc(title),
        x = w / 2.0
    );
    let intervals = (max / step).round() as usize;
    for i in 0..=intervals {
        let v = step * i as f64;
        let y = top + plot_h - plot_h * v / max;
        let _ = write!(
            s,
            r#"<line x1="{left}" x2="{x2}" y1="{y:.2}" y2="{y:.2}" class="grid"/><text x="{tx}" y="{ty:.2}" class="tick" data-value="{v}">{l}</text>"#,
            x2 = w - 8.0,
            tx = left - 6.0,
            ty = y + 4.0,
            l = tick_label(v, step)
        );
    }
    let _ = write!(
        s,
        r#"<text x="14" y="{c}" class="unit" transform="rotate(-90 14 {c})">{u}</text>"#,
        c = top + plot_h / 2.0,
        u = esc(unit)
    );
    let plot = Plot {
        left,
        top,
        w: w - left - 16.0,
        h: plot_h,
        max,
    };
    (s, plot)
}

/// Category labels under the x axis stay horizontal when the longest fits its slot
/// (about 6 px a character), else they lean 30° to stay readable. Returns the attribute
/// to put on each label, given its anchor point.
fn label_tilt<'a>(labels: impl Iterator<Item = &'a str>, slot: f64) -> impl Fn(f64, f64) -> String {
    let longest = labels.map(|l| l.chars().count()).max().unwrap_or(0);
    let fits = longest as f64 * 6.0 <= slot;
    move |x, y| {
        if fits {
            String::new()
        } else {
            format!(r#" transform="rotate(30 {x:.1} {y:.1})" style="text-anchor:start""#)
        }
    }
}

/// Measured bars with the model's expectation drawn as a black tick over each bar.
/// Bars carry `data-label`/`data-value`, ticks `class="model"` and `data-expected`.
pub fn model_chart(title: &str, unit: &str, items: &[(String, f64, Option<f64>)]) -> String {
    let top_value = items
        .iter()
        .map(|i| i.1.max(i.2.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let (
        mut s,
        Plot {
            left,
            top,
            w: plot_w,
            h: plot_h,
            max,
        },
    ) = frame("chart vs-model", title, unit, top_value, 300.0, 0.0);
    let slot = plot_w / items.len().max(1) as f64;
    let tilt = label_tilt(items.iter().map(|i| i.0.as_str()), slot);
    let y_of = |v: f64| top + plot_h - plot_h * v / max;
    for (i, (label, v, e)) in items.iter().enumerate() {
        let bw = (slot * 0.7).min(60.0);
        let x = left + slot * i as f64 + (slot - bw) / 2.0;
        let y = y_of(*v);
        let cx = x + bw / 2.0;
        let ly = top + plot_h + 16.0;
        let _ = write!(
            s,
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{y:.2}" width="{bw:.1}" height="{bh:.2}"><title>{l}: measured {vs} {u}</title></rect><text x="{cx:.1}" y="{ly:.1}" class="lbl x"{tilt}>{l}</text>"#,
            c = i % 8,
            tilt = tilt(cx, ly),
            l = esc(label),
            u = esc(unit),
            vs = short(*v),
            bh = top + plot_h - y,
        );
        if let Some(e) = e {
            let ey = y_of(*e);
            let _ = write!(
                s,
                r#"<line class="model" data-label="{l}" data-expected="{e}" x1="{x1:.1}" x2="{x2:.1}" y1="{ey:.2}" y2="{ey:.2}"><title>{l}: model {es} {u}</title></line><text x="{cx:.1}" y="{ty:.1}" class="val">{es}</text>"#,
                l = esc(label),
                u = esc(unit),
                es = short(*e),
                x1 = x - 4.0,
                x2 = x + bw + 4.0,
                ty = ey.min(y) - 4.0,
            );
        }
    }
    let _ = write!(
        s,
        r#"<text x="{left}" y="{y:.1}" class="lbl">bars: measured · black tick and figure: the model's expectation</text></svg>"#,
        y = top + plot_h + 56.0
    );
    s
}

/// One line per series over categorical x values (`None`: no point there). Points are
/// `<circle class="pt" data-series data-x data-value>`.
pub fn line_chart(
    class: &str,
    title: &str,
    unit: &str,
    xs: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let top_value = series
        .iter()
        .flat_map(|s| s.1.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let legend_h = 16.0 * series.len() as f64;
    let (
        mut s,
        Plot {
            left,
            top,
            w: plot_w,
            h: plot_h,
            max,
        },
    ) = frame(
        &format!("chart {class}"),
        title,
        unit,
        top_value,
        300.0 + legend_h,
        legend_h,
    );
    let step = plot_w / xs.len().max(1) as f64;
    let x_of = |i: usize| left + step * (i as f64 + 0.5);
    let y_of = |v: f64| top + plot_h - plot_h * v / max;
    let tilt = label_tilt(xs.iter().map(String::as_str), step);
    for (i, x) in xs.iter().enumerate() {
        let (cx, y) = (x_of(i), top + plot_h + 16.0);
        let _ = write!(
            s,
            r#"<text x="{cx:.1}" y="{y:.1}" class="val x"{t}>{l}</text>"#,
            t = tilt(cx, y),
            l = esc(x)
        );
    }
    for (k, (name, values)) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let pts: Vec<String> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x_of(i), y_of(v))))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/><text x="{lx}" y="{ly:.1}" class="lbl" fill="{color}">● {n}</text>"#,
            pts.join(" "),
            lx = left + 4.0,
            ly = 48.0 + 16.0 * k as f64,
            n = esc(name)
        );
        for (i, v) in values.iter().enumerate() {
            if let Some(v) = v {
                let _ = write!(
                    s,
                    r#"<circle class="pt" data-series="{n}" data-x="{x}" data-value="{v}" cx="{cx:.1}" cy="{cy:.2}" r="3.5" fill="{color}"><title>{n} @ {x}: {vs} {u}</title></circle>"#,
                    n = esc(name),
                    x = esc(&xs[i]),
                    u = esc(unit),
                    vs = short(*v),
                    cx = x_of(i),
                    cy = y_of(*v),
                );
            }
        }
    }
    s.push_str("</svg>");
    s
}

/// Per-member I/O counts as horizontal stacked bars (reads, writes), with each member's
/// share of all member I/O: parity and copy load shows as uneven or doubled shares.
pub fn share_chart(title: &str, members: &[(String, u64, u64)]) -> String {
    let total: u64 = members.iter().map(|m| m.1 + m.2).sum();
    let max = members.iter().map(|m| m.1 + m.2).max().unwrap_or(0).max(1) as f64;
    let (w, left, row) = (640.0, 90.0, 20.0);
    let h = 44.0 + row * members.len() as f64;
    let plot_w = w - left - 90.0;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart share" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{x}" y="18" class="ct">{t}</text>"#,
        t = esc(title),
        x = w / 2.0
    );
    for (i, (name, r, wr)) in members.iter().enumerate() {
        let y = 30.0 + row * i as f64;
        let rw_ = plot_w * *r as f64 / max;
        let ww = plot_w * *wr as f64 / max;
        let share = if total > 0 {
            (r + wr) as f64 / total as f64
        } else {
            0.0
        };
        let _ = write!(
            s,
            r#"<text x="{tx}" y="{ty:.1}" class="tick">{n}</text><rect class="member" data-member="{n}" data-share="{share}" x="{left}" y="{y:.1}" width="{rw_:.1}" height="14" fill="{c0}"><title>{n}: {r} reads</title></rect><rect x="{wx:.1}" y="{y:.1}" width="{ww:.1}" height="14" fill="{c1}"><title>{n}: {wr} writes</title></rect><text x="{px:.1}" y="{ty:.1}" class="lbl">{pct:.1} %</text>"#,
            tx = left - 6.0,
            ty = y + 11.0,
            n = esc(name),
            c0 = PALETTE[0],
            c1 = PALETTE[1],
            wx = left + rw_,
            px = left + rw_ + ww + 6.0,
            pct = share * 100.0,
        );
    }
    let _ = write!(
        s,
        r#"<text x="{left}" y="{y:.1}" class="lbl"><tspan fill="{c0}">■ reads</tspan> <tspan fill="{c1}">■ writes</tspan> (I/Os each member served, fio disk_util)</text></svg>"#,
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

/// A per-second line chart of `values` in `unit`.
pub fn time_chart_unit(title: &str, unit: &str, values: &[f64]) -> String {
    let peak = values.iter().copied().fold(0.0, f64::max);
    let (
        mut s,
        Plot {
            left,
            top,
            w: plot_w,
            h: plot_h,
            max,
        },
    ) = frame("chart over-time", title, unit, peak, 220.0, 0.0);
    let n = values.len().max(2) - 1;
    let pts: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.2}",
                left + plot_w * i as f64 / n as f64,
                top + plot_h - plot_h * v / max
            )
        })
        .collect();
    let _ = write!(
        s,
        r#"<polyline class="series" data-points="{}" data-values="{vals}" fill="none" stroke="{c}" stroke-width="1.5" points="{}"/><text x="{cx}" y="{y:.1}" class="unit">seconds 1–{}</text></svg>"#,
        values.len(),
        pts.join(" "),
        values.len(),
        vals = values
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        c = PALETTE[0],
        cx = left + plot_w / 2.0,
        y = top + plot_h + 24.0,
    );
    s
}
