//! Hand-made SVG bar charts: no script, no fonts from the network, readable in print.

use std::fmt::Write;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum ≥ `v` (1, 2, 2.5, 5 × 10^k).
fn nice_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * mag {
            return m * mag;
        }
    }
    10.0 * mag
}

/// One bar: label, value, and the (lowest, highest) value over repetitions.
pub type Bar = (String, f64, Option<(f64, f64)>);

/// A vertical bar chart. Each bar is (label, value, spread); the value is printed above
/// it and a spread (lowest, highest over repetitions) is drawn as a whisker.
/// `class="chart"` and one `<rect class="bar" data-label=…>` per bar let tests count points.
pub fn bar_chart(class: &str, title: &str, unit: &str, bars: &[Bar]) -> String {
    let max = nice_max(
        bars.iter()
            .map(|b| b.1.max(b.2.map_or(0.0, |s| s.1)))
            .fold(0.0, f64::max),
    );
    let (mut s, left, top, plot_w, plot_h) = frame(class, title, unit, max, 300.0);
    let slot = plot_w / bars.len().max(1) as f64;
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
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{by:.1}" width="{bw:.1}" height="{bh:.1}"><title>{l}: {vs} {u}</title></rect><text x="{cx:.1}" y="{vy:.1}" class="val">{vs}</text><text x="{cx:.1}" y="{ly:.1}" class="lbl" transform="rotate(20 {cx:.1} {ly:.1})">{l}</text>"#,
            c = i % 8,
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

/// Frame of a chart: `<svg>` with title, value grid and unit label. Returns the SVG so
/// far and the plot's (left, top, width, height).
fn frame(class: &str, title: &str, unit: &str, max: f64, h: f64) -> (String, f64, f64, f64, f64) {
    let (w, left, bottom, top) = (640.0, 64.0, 70.0, 36.0);
    let plot_h = h - bottom - top;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="{class}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{x}" y="20" class="ct">{t}</text>"#,
        t = esc(title),
        x = w / 2.0
    );
    for i in 0..=4 {
        let v = max * i as f64 / 4.0;
        let y = top + plot_h - plot_h * i as f64 / 4.0;
        let _ = write!(
            s,
            r#"<line x1="{left}" x2="{x2}" y1="{y:.1}" y2="{y:.1}" class="grid"/><text x="{tx}" y="{ty:.1}" class="tick">{v}</text>"#,
            x2 = w - 8.0,
            tx = left - 6.0,
            ty = y + 4.0,
            v = short(v)
        );
    }
    let _ = write!(
        s,
        r#"<text x="14" y="{c}" class="unit" transform="rotate(-90 14 {c})">{u}</text>"#,
        c = top + plot_h / 2.0,
        u = esc(unit)
    );
    (s, left, top, w - left - 16.0, plot_h)
}

/// Measured bars with the model's expectation drawn as a black tick over each bar.
/// Bars carry `data-label`/`data-value`, ticks `class="model"` and `data-expected`.
pub fn model_chart(title: &str, unit: &str, items: &[(String, f64, Option<f64>)]) -> String {
    let top_value = items
        .iter()
        .map(|i| i.1.max(i.2.unwrap_or(0.0)))
        .fold(0.0, f64::max);
    let max = nice_max(top_value);
    let (mut s, left, top, plot_w, plot_h) = frame("chart vs-model", title, unit, max, 300.0);
    let slot = plot_w / items.len().max(1) as f64;
    let y_of = |v: f64| top + plot_h - plot_h * v / max;
    for (i, (label, v, e)) in items.iter().enumerate() {
        let bw = (slot * 0.7).min(60.0);
        let x = left + slot * i as f64 + (slot - bw) / 2.0;
        let y = y_of(*v);
        let cx = x + bw / 2.0;
        let ly = top + plot_h + 16.0;
        let _ = write!(
            s,
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{bh:.1}"><title>{l}: measured {vs} {u}</title></rect><text x="{cx:.1}" y="{ly:.1}" class="lbl" transform="rotate(20 {cx:.1} {ly:.1})">{l}</text>"#,
            c = i % 8,
            l = esc(label),
            u = esc(unit),
            vs = short(*v),
            bh = top + plot_h - y,
        );
        if let Some(e) = e {
            let ey = y_of(*e);
            let _ = write!(
                s,
                r#"<line class="model" data-label="{l}" data-expected="{e}" x1="{x1:.1}" x2="{x2:.1}" y1="{ey:.1}" y2="{ey:.1}"><title>{l}: model {es} {u}</title></line><text x="{cx:.1}" y="{ty:.1}" class="val">{es}</text>"#,
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
    let max = nice_max(top_value);
    let legend_h = 16.0 * series.len() as f64;
    let (mut s, left, top, plot_w, plot_h) = frame(
        &format!("chart {class}"),
        title,
        unit,
        max,
        300.0 + legend_h,
    );
    let plot_h = plot_h - legend_h;
    let step = plot_w / xs.len().max(1) as f64;
    let x_of = |i: usize| left + step * (i as f64 + 0.5);
    let y_of = |v: f64| top + legend_h + plot_h - plot_h * v / max;
    for (i, x) in xs.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="{cx:.1}" y="{y:.1}" class="val">{l}</text>"#,
            cx = x_of(i),
            y = top + legend_h + plot_h + 16.0,
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
            ly = top + 12.0 + 16.0 * k as f64,
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
    let max = nice_max(values.iter().copied().fold(0.0, f64::max));
    let (mut s, left, top, plot_w, plot_h) = frame("chart over-time", title, unit, max, 220.0);
    let n = values.len().max(2) - 1;
    let pts: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!(
                "{:.1},{:.1}",
                left + plot_w * i as f64 / n as f64,
                top + plot_h - plot_h * v / max
            )
        })
        .collect();
    let _ = write!(
        s,
        r#"<polyline class="series" data-points="{}" fill="none" stroke="{c}" stroke-width="1.5" points="{}"/><text x="{cx}" y="{y:.1}" class="unit">seconds 1–{}</text></svg>"#,
        values.len(),
        pts.join(" "),
        values.len(),
        c = PALETTE[0],
        cx = left + plot_w / 2.0,
        y = top + plot_h + 24.0,
    );
    s
}
