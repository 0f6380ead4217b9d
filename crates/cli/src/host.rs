//! `raidlab disks` and `raidlab cleanup`: the host target's safety commands — what may be
//! touched and why, and undoing what an interrupted run left behind.

use crate::args::{CleanupArgs, DisksArgs};
use anyhow::{bail, Result};
use raidlab_core::Plan;
use raidlab_host::{devices, guard, journal};
use std::collections::BTreeSet;
use std::io::Write;

pub fn disks(a: DisksArgs) -> Result<()> {
    if a.models {
        return Ok(models()?);
    }
    let planned = match &a.plan {
        Some(p) => Some(Plan::load(p)?.disks.devices),
        None => None,
    };
    let destroy: BTreeSet<String> = a.destroy_data_on.iter().cloned().collect();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<14} {:>10} {:<4} {:<24} {:<34} verdict",
        "device", "size", "rot", "model", "serial"
    )?;
    let mut all = devices::all();
    // The plan's devices first, under the path the plan names them by.
    if let Some(p) = &planned {
        for path in p.iter().rev() {
            if let Ok(d) = devices::inspect(path) {
                all.retain(|x| x.name != d.name);
                all.insert(0, d);
            }
        }
    }
    for d in all {
        let v = guard::check(&d.path, planned.as_deref());
        let verdict = if v.usable(&destroy) {
            "usable"
        } else {
            "refused"
        };
        writeln!(
            out,
            "{:<14} {:>10} {:<4} {:<24} {:<34} {verdict}: {}",
            d.name,
            raidlab_core::Bytes(d.size_bytes).to_string(),
            if d.rotational { "yes" } else { "no" },
            d.model.as_deref().unwrap_or("-"),
            d.serial.as_deref().unwrap_or("-"),
            v.reason(&destroy)
        )?;
    }
    Ok(())
}

/// `raidlab disks --models`: each preset, what it stands for, and its parameters as a
/// plan's `[disks.params]` would write them.
fn models() -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for m in raidlab_core::disk::presets() {
        writeln!(out, "{}\n  {}", m.name, m.source)?;
        for (k, v) in m.params() {
            // 0 is a value a plan may write, but not a port's count: say what it means.
            let meaning = match (k.as_str(), v.as_str()) {
                ("max_segments", "0") => {
                    "   (none: requests held to max_sectors_kb alone; a SATA port takes 168)"
                }
                _ => "",
            };
            writeln!(out, "  {k:<16} {v}{meaning}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

pub fn cleanup(a: CleanupArgs) -> Result<()> {
    let dirs = if a.dirs.is_empty() {
        journal::registered()
    } else {
        a.dirs.clone()
    };
    if dirs.is_empty() {
        raidlab_backend::note!(
            "nothing to clean up: no interrupted host run is registered in {}",
            journal::state_dir().display()
        );
        return Ok(());
    }
    let mut failed = Vec::new();
    for d in dirs {
        match journal::cleanup(&d) {
            Ok(done) if done.is_empty() => {
                raidlab_backend::note!("{}: nothing left to undo", d.display())
            }
            Ok(done) => {
                raidlab_backend::note!("{}:", d.display());
                for l in done {
                    raidlab_backend::note!("  {l}");
                }
            }
            Err(e) => failed.push(e),
        }
    }
    if !failed.is_empty() {
        bail!("{}", failed.join("\n"));
    }
    Ok(())
}
