//! `raidlab risk`: one layout's probability of losing data over a mission
//! (`raidlab-risk`), with the textbook MTTDL beside it for comparison.

use crate::args::RiskArgs;
use anyhow::{anyhow, bail, Result};
use raidlab_core::{DiskSet, Level, Plan};
use raidlab_risk::{Array, Lifetime, Mission, Rebuild, HOURS_PER_YEAR};
use std::path::Path;

/// Seeds of the simulated rebuild: its time varies a little with the drives' random
/// state, and the Monte Carlo draws from the spread.
const REBUILD_SEEDS: u64 = 5;

pub fn risk(a: RiskArgs) -> Result<()> {
    if !(0.0..1.0).contains(&a.afr) || a.afr == 0.0 {
        bail!(
            "--afr {}: a share of drives failing in a year, above 0 and below 1 (e.g. 0.0157)",
            a.afr
        );
    }
    for (flag, value, ok, what) in [
        (
            "--shape",
            a.shape,
            a.shape > 0.0 && a.shape.is_finite(),
            "a number above 0 (1 is exponential)",
        ),
        // An endless mission never ends its Monte Carlo.
        (
            "--years",
            a.years,
            a.years > 0.0 && a.years.is_finite(),
            "a number above 0",
        ),
        ("--trials", a.trials as f64, a.trials > 0, "at least 1"),
        (
            "--ure",
            a.ure,
            (0.0..=1.0).contains(&a.ure),
            "a share of bits read, 0 (no read errors) to 1, e.g. 1e-15",
        ),
    ] {
        if !ok {
            bail!("{flag} {value}: must be {what}");
        }
    }
    // The array as a plan would have it (layout resolved, checked like a plan's).
    let mut b = Plan::builder("risk");
    b.disks("count", a.disks).disks("model", &a.disk);
    b.array("level", a.level.word()).array("filesystem", "none");
    if let Some(l) = a.layout {
        b.array("layout", l.to_string());
    }
    b.workload("rw", "randread")
        .workload("iodepth", a.rebuild_load.max(1))
        .workload("size", "100g")
        .workload("runtime", "30s");
    if !matches!(a.level, Level::Single | Level::Raid0) {
        b.array("state", "rebuilding")
            .array("kernel", a.kernel.word());
    }
    let plan = b
        .build(Path::new("<command line>"))
        .map_err(|e| anyhow!("{}: {}", e.field, e.message))?;
    let case = &plan.cases()[0];
    let model = DiskSet::resolved_model(&case.disks)
        .map_err(|e| anyhow!(e))?
        .ok_or_else(|| anyhow!("--disk names no model"))?;
    let member = model.capacity().0 as f64;
    let (rebuild, rebuild_h, how) = match a.rebuild {
        Some(r) => {
            let h = r.0 as f64 / 3.6e12;
            (Rebuild::Constant(h), h, "as given".to_string())
        }
        None if case.array.fault_tolerance() == 0 => (
            Rebuild::Constant(0.0),
            0.0,
            "none: no redundancy to rebuild".to_string(),
        ),
        None => {
            let idle = a.rebuild_load == 0;
            let hours = (1..=REBUILD_SEEDS)
                .map(|seed| {
                    raidlab_sim::full_rebuild_seconds(case, seed, idle)?
                        .map(|s| s / 3600.0)
                        .ok_or_else(|| anyhow!("the simulated rebuild made no progress under this load: give --rebuild"))
                })
                .collect::<Result<Vec<f64>>>()?;
            let mean = hours.iter().sum::<f64>() / hours.len() as f64;
            let (lo, hi) = hours
                .iter()
                .fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            let under = if idle {
                "an idle array".to_string()
            } else {
                format!(
                    "4 KiB random reads at QD{} and Linux {}'s governor",
                    a.rebuild_load, a.kernel
                )
            };
            (
                Rebuild::Samples(hours),
                mean,
                format!(
                    "md's recovery of a whole {} member, simulated on {under}: {lo:.1}–{hi:.1} h over {REBUILD_SEEDS} seeds",
                    model.name
                ),
            )
        }
    };
    let array = Array::from_spec(&case.array, member);
    let mission = Mission {
        years: a.years,
        lifetime: Lifetime {
            afr: a.afr,
            shape: a.shape,
        },
        rebuild,
        ure_per_bit: a.ure,
        trials: a.trials,
        seed: a.seed,
    };
    let r = raidlab_risk::simulate(&array, &mission);
    let (lo, hi) = r.interval();
    println!(
        "{} on {} × {} ({:.1} TB each), {} years",
        case.array.label(),
        a.disks,
        model.name,
        member / 1e12,
        a.years
    );
    println!(
        "  members: AFR {:.2} %, Weibull shape {}",
        a.afr * 100.0,
        a.shape
    );
    println!("  rebuild: {rebuild_h:.1} h ({how})");
    println!(
        "  probability of losing data: {:.4} % (95 %: {:.4}–{:.4} %), over {} trials",
        r.probability() * 100.0,
        lo * 100.0,
        hi * 100.0,
        r.trials
    );
    println!(
        "    from members failing together: {:.4} %; from read errors in a rebuild (URE {:e}/bit): {:.4} %",
        r.lost_to_failures as f64 / r.trials as f64 * 100.0,
        a.ure,
        r.lost_to_read_errors as f64 / r.trials as f64 * 100.0
    );
    if let [g] = array.groups.as_slice() {
        if g.tolerance == 1 {
            let lambda = -(1.0 - a.afr).ln() / HOURS_PER_YEAR;
            let mttdl =
                raidlab_risk::mttdl_single_parity(g.members.len() as u32, lambda, 1.0 / rebuild_h);
            println!(
                "  MTTDL (textbook: exponential lives and repairs, no read errors): {:.0} years. It \
                 averages over lives far longer than a mission and leaves out wear-out and read \
                 errors, so it does not give the probability above.",
                mttdl / HOURS_PER_YEAR
            );
        }
    }
    Ok(())
}
