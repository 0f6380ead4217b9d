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

/// A vertical bar chart. Each bar is (label, value); the value is printed above it.
/// `class="chart"` and one `<rect class="bar" data-label=…>` per bar let tests count points.
pub fn bar_chart(title: &str, unit: &str, bars: &[(String, f64)]) -> String {
    let (w, h, left, bottom, top) = (640.0, 300.0, 64.0, 70.0, 36.0);
    let plot_h = h - bottom - top;
    let max = nice_max(bars.iter().map(|b| b.1).fold(0.0, f64::max));
    let slot = (w - left - 16.0) / bars.len().max(1) as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg class="chart" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{x}" y="20" class="ct">{t}</text>"#,
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
        r#"<text x="14" y="{}" class="unit" transform="rotate(-90 14 {})">{}</text>"#,
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        esc(unit)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let bw = (slot * 0.7).min(60.0);
        let x = left + slot * i as f64 + (slot - bw) / 2.0;
        let bh = if max > 0.0 { plot_h * v / max } else { 0.0 };
        let y = top + plot_h - bh;
        let _ = write!(
            s,
            r#"<rect class="bar c{c}" data-label="{l}" data-value="{v}" x="{x:.1}" y="{y:.1}" width="{bw:.1}" height="{bh:.1}"><title>{l}: {vs} {u}</title></rect><text x="{cx:.1}" y="{vy:.1}" class="val">{vs}</text><text x="{cx:.1}" y="{ly:.1}" class="lbl" transform="rotate(20 {cx:.1} {ly:.1})">{l}</text>"#,
            c = i % 8,
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
