//! `raidlab risk`: one layout's probability of losing data over a mission
//! (`raidlab-risk`), with the textbook MTTDL beside it for comparison.

use crate::args::RiskArgs;
use anyhow::{anyhow, bail, Result};
use raidlab_core::{DiskKind, DiskSet, Plan};
use raidlab_risk::{Array, Lifetime, Mission, Rebuild, HOURS_PER_YEAR};
use std::path::Path;

/// md's default `speed_limit_max`, bytes per second (200 000 KiB/s).
const SPEED_LIMIT_MAX: f64 = 200_000.0 * 1024.0;

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
            a.shape > 0.0,
            "above 0 (1 is exponential)",
        ),
        ("--years", a.years, a.years > 0.0, "above 0"),
        ("--trials", a.trials as f64, a.trials > 0, "at least 1"),
        (
            "--ure",
            a.ure,
            a.ure >= 0.0,
            "0 (no read errors) or above, e.g. 1e-15",
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
    b.workload("rw", "randread");
    let plan = b
        .build(Path::new("<command line>"))
        .map_err(|e| anyhow!("{}: {}", e.field, e.message))?;
    let case = &plan.cases()[0];
    let model = DiskSet::resolved_model(&case.disks)
        .map_err(|e| anyhow!(e))?
        .ok_or_else(|| anyhow!("--disk names no model"))?;
    let member = model.capacity().0 as f64;
    let (rebuild_h, how) = match a.rebuild {
        Some(r) => (r.0 as f64 / 3.6e12, "as given".to_string()),
        None => {
            let rate = match &model.kind {
                DiskKind::Hdd(p) => (p.outer_mb_s + p.inner_mb_s) / 2.0 * 1e6,
                DiskKind::Ssd(p) => p.write_mb_s * 1e6,
                DiskKind::Throttle(_) => SPEED_LIMIT_MAX,
            }
            .min(SPEED_LIMIT_MAX);
            (
                member / rate / 3600.0,
                format!(
                    "{}'s whole member at {:.0} MB/s (md's ceiling or the disk's mean rate), idle array",
                    model.name,
                    rate / 1e6
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
        rebuild: Rebuild::Constant(rebuild_h),
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
