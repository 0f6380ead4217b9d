//! The public-data fidelity table of docs/simulator.md: each public curve against the
//! simulator, first from the preset of the drive's class alone, then calibrated from the
//! curve's two ends (QD1 and QD32). `cargo run --release -p raidlab-calibrate --example fidelity`.

use raidlab_calibrate::{fit, public, simulate, Point};
use raidlab_core::DiskModel;

fn main() {
    println!("| drive | QD | measured | preset alone | error | calibrated (QD1, QD32) | error |");
    println!("|---|---|---|---|---|---|---|");
    for c in public::CURVES {
        let preset = DiskModel::preset(c.preset)
            .expect("a preset")
            .with_capacity(c.capacity);
        let point = |qd: u32, iops: f64| Point::random_read(qd, iops, c.source);
        let ends: Vec<Point> = c
            .points
            .iter()
            .filter(|(qd, _)| *qd == 1 || *qd == 32)
            .map(|&(qd, iops)| point(qd, iops))
            .collect();
        let fitted = fit(&preset, &ends, "fitted").expect("the fit").model;
        let (mut e_preset, mut e_fit) = (Vec::new(), Vec::new());
        for &(qd, iops) in c.points {
            let p = point(qd, iops);
            let a = simulate(&preset, &p).expect("sim");
            let b = simulate(&fitted, &p).expect("sim");
            e_preset.push((a / iops - 1.0).abs());
            e_fit.push((b / iops - 1.0).abs());
            println!(
                "| {} | {qd} | {iops:.1} | {a:.1} | {:+.0} % | {b:.1} | {:+.0} % |",
                c.drive,
                (a / iops - 1.0) * 100.0,
                (b / iops - 1.0) * 100.0
            );
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2] + v[(v.len() - 1) / 2]) / 2.0 * 100.0
        };
        println!(
            "| {} | median / worst | | | {:.0} % / {:.0} % | | {:.0} % / {:.0} % |",
            c.drive,
            median(&mut e_preset),
            e_preset.last().unwrap() * 100.0,
            median(&mut e_fit),
            e_fit.last().unwrap() * 100.0
        );
    }
}
