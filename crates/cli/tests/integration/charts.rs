//! Charts that are right by construction (issue 19, item 1): every chart of the reports of
//! the example plans, parsed as SVG; each mark — bar, point, model tick, over-time point —
//! must sit where its value falls on the chart's own axis, within half a pixel. The axis
//! is read from the tick labels the reader sees, not from the code that drew them.

use raidlab_testkit::raidlab;
use std::path::Path;

/// A value axis as the ticks draw it: pixel y = `zero` − `scale` × value.
struct Axis {
    zero: f64,
    scale: f64,
    top: f64,
}

fn attr(n: roxmltree::Node, name: &str) -> f64 {
    n.attribute(name)
        .unwrap_or_else(|| panic!("<{}> without {name}", n.tag_name().name()))
        .parse()
        .unwrap_or_else(|e| panic!("<{}> {name}: {e}", n.tag_name().name()))
}

fn has_class(n: roxmltree::Node, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|w| w == class))
}

/// The axis of one chart from its tick labels (a label sits 4 px below its grid line),
/// checked: ticks start at 0 labelled "0", are evenly spaced by 1, 2 or 5 × 10ⁿ.
fn axis(svg: roxmltree::Node, title: &str) -> Option<Axis> {
    let ticks: Vec<(f64, f64, String)> = svg
        .descendants()
        .filter(|n| has_class(*n, "tick") && n.attribute("y").is_some())
        .filter_map(|n| {
            let label = n.text().unwrap_or("").to_string();
            // The value a tick stands for; its label where it carries none.
            let v = match n.attribute("data-value") {
                Some(_) => attr(n, "data-value"),
                None => label.parse().ok()?,
            };
            Some((v, attr(n, "y") - 4.0, label))
        })
        .collect();
    if ticks.is_empty() {
        return None;
    }
    assert!(ticks.len() >= 3, "{title}: {} ticks", ticks.len());
    assert_eq!(ticks[0].0, 0.0, "{title}: the axis starts at 0");
    assert_eq!(ticks[0].2, "0", "{title}: zero is written 0");
    let step = ticks[1].0;
    let mag = 10f64.powf(step.log10().floor());
    let m = step / mag;
    assert!(
        [1.0, 2.0, 5.0, 10.0].iter().any(|n| (m - n).abs() < 1e-9),
        "{title}: tick step {step} is not 1, 2 or 5 × 10ⁿ"
    );
    let (v0, y0, _) = &ticks[0];
    let (v1, y1, _) = ticks.last().unwrap();
    let scale = (y0 - y1) / (v1 - v0);
    for (i, (v, y, label)) in ticks.iter().enumerate() {
        assert!(
            (v - step * i as f64).abs() < step * 1e-9,
            "{title}: ticks not evenly spaced"
        );
        assert!(
            (y0 - scale * v - y).abs() < 0.02,
            "{title}: tick {label} off its line"
        );
        let shown: f64 = label.parse().unwrap_or(f64::NAN);
        assert!(
            (shown - v).abs() <= step * 1e-6,
            "{title}: tick label {label} for {v}"
        );
    }
    Some(Axis {
        zero: *y0,
        scale,
        top: *v1,
    })
}

/// Marks checked per kind, across every chart.
#[derive(Default, Debug)]
struct Checked {
    bars: usize,
    points: usize,
    model_ticks: usize,
    over_time: usize,
}

fn check_svg(svg: roxmltree::Node, checked: &mut Checked) {
    let title = svg.attribute("aria-label").unwrap_or("?").to_string();
    let Some(ax) = axis(svg, &title) else {
        return; // member shares: horizontal, no value axis
    };
    let at = |v: f64| ax.zero - ax.scale * v;
    let near = |what: &str, got: f64, want: f64| {
        assert!(
            (got - want).abs() <= 0.5,
            "{title}: {what} drawn at y = {got:.2}, its value is at y = {want:.2}"
        )
    };
    for n in svg.descendants().filter(|n| n.is_element()) {
        if has_class(n, "bar") {
            let v = attr(n, "data-value");
            assert!(
                v <= ax.top,
                "{title}: bar {v} above the axis top {}",
                ax.top
            );
            near("a bar's top", attr(n, "y"), at(v));
            near("a bar's foot", attr(n, "y") + attr(n, "height"), at(0.0));
            checked.bars += 1;
        } else if has_class(n, "pt") {
            let v = attr(n, "data-value");
            assert!(
                v <= ax.top,
                "{title}: point {v} above the axis top {}",
                ax.top
            );
            near("a point", attr(n, "cy"), at(v));
            checked.points += 1;
        } else if has_class(n, "model") {
            near("a model tick", attr(n, "y1"), at(attr(n, "data-expected")));
            checked.model_ticks += 1;
        } else if has_class(n, "series") {
            let values: Vec<f64> = n
                .attribute("data-values")
                .expect("an over-time line carries its values")
                .split_whitespace()
                .map(|v| v.parse().unwrap())
                .collect();
            let ys: Vec<f64> = n
                .attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| p.split(',').nth(1).unwrap().parse().unwrap())
                .collect();
            assert_eq!(values.len(), ys.len(), "{title}");
            for (v, y) in values.iter().zip(ys) {
                near("an over-time point", y, at(*v));
                checked.over_time += 1;
            }
        }
    }
}

/// Every `<svg>` of a report, checked.
fn check_report(html: &str, checked: &mut Checked) {
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let end = rest[i..].find("</svg>").expect("a closed svg") + i + "</svg>".len();
        let doc = roxmltree::Document::parse(&rest[i..end]).expect("each chart is well-formed SVG");
        check_svg(doc.root_element(), checked);
        rest = &rest[end..];
    }
}

fn run(plan: &str, out: &Path, extra: &[&str]) -> String {
    raidlab()
        .args(["run", plan, "--quiet", "--out"])
        .arg(out)
        .assert()
        .success();
    if !extra.is_empty() {
        raidlab()
            .args(["report", out.to_str().unwrap()])
            .args(extra)
            .assert()
            .success();
    }
    std::fs::read_to_string(out.join("report.html")).unwrap()
}

#[test]
fn every_mark_of_every_chart_sits_at_its_value() {
    let _machine = raidlab_testkit::shared();
    let dir = tempfile::tempdir().unwrap();
    let mut checked = Checked::default();
    for (plan, extra) in [
        ("examples/seed-2013.toml", &[][..]),
        ("examples/seed-2019.toml", &[][..]),
        ("examples/quick.toml", &[][..]),
        // Chunk sweeps draw line charts; --x/--y adds one with several series.
        (
            "examples/seed-2013-chunks.toml",
            &["--x", "chunk", "--y", "write_iops"][..],
        ),
    ] {
        let name = Path::new(plan).file_stem().unwrap();
        let html = run(plan, &dir.path().join(name), extra);
        check_report(&html, &mut checked);
    }
    assert!(checked.bars > 50, "{checked:?}");
    assert!(checked.points > 10, "{checked:?}");
    assert!(checked.model_ticks > 10, "{checked:?}");
    assert!(checked.over_time > 100, "{checked:?}");
}
