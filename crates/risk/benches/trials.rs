//! Speed of the Monte Carlo: 10⁶ trials per layout, against issue 17's goal of 5 s.
//! `cargo bench -p raidlab-risk`.

use raidlab_core::{ArraySpec, Level};
use raidlab_risk::{simulate, Array, Lifetime, Mission, Rebuild};
use std::time::Instant;

fn main() {
    for level in [Level::Raid5, Level::Raid6, Level::Raid10] {
        let spec = ArraySpec::md(level, 8);
        let mission = Mission {
            years: 5.0,
            lifetime: Lifetime {
                afr: 0.0157,
                shape: 1.12,
            },
            rebuild: Rebuild::Constant(22.0),
            ure_per_bit: 1e-15,
            trials: 1_000_000,
            seed: 1,
        };
        let array = Array::from_spec(&spec, 16e12);
        let t = Instant::now();
        let r = simulate(&array, &mission);
        let s = t.elapsed().as_secs_f64();
        println!(
            "{level} × 8, 10⁶ trials: {s:.2} s (goal 5 s: ratio {:.1}), P(loss) {:.4} %",
            5.0 / s,
            r.probability() * 100.0
        );
    }
}
