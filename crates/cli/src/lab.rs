//! `raidlab lab build|status`: prepare and inspect the VM lab (a Debian kernel and an
//! initramfs with mdadm, fio and mkfs.xfs, cached per kernel version).

use crate::args::LabCommand;
use anyhow::Result;
use raidlab_vm::{self as vm, lab};
use std::io::Write;
use std::time::Instant;

pub fn lab(c: LabCommand) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match c {
        LabCommand::Build { kernel } => {
            let t0 = Instant::now();
            let l = lab::build(kernel.as_deref(), &|m| raidlab_backend::note!("{m}"))
                .map_err(anyhow::Error::msg)?;
            raidlab_backend::note!(
                "lab built in {:.1} s: {}",
                t0.elapsed().as_secs_f64(),
                l.dir.display()
            );
            let (a, why) = vm::accel(&l, true).map_err(anyhow::Error::msg)?;
            writeln!(out, "acceleration: {a} ({why})")?;
            Ok(())
        }
        LabCommand::Status => {
            let labs = lab::cached();
            writeln!(out, "lab cache: {}", lab::root().display())?;
            if labs.is_empty() {
                writeln!(out, "nothing built: run `raidlab lab build`")?;
                return Ok(());
            }
            for l in &labs {
                let info = l.info();
                let size = std::fs::metadata(l.initramfs())
                    .map(|m| m.len() >> 20)
                    .unwrap_or(0);
                writeln!(
                    out,
                    "kernel {} ({}): {} modules, initramfs {} MiB",
                    l.kver,
                    info["package"].as_str().unwrap_or("?"),
                    info["modules"].as_array().map(|a| a.len()).unwrap_or(0),
                    size
                )?;
            }
            let current = labs.last().expect("not empty");
            writeln!(out, "--target vm uses kernel {}", current.kver)?;
            let (a, why) = vm::accel(current, true).map_err(anyhow::Error::msg)?;
            writeln!(out, "acceleration: {a} ({why})")?;
            Ok(())
        }
    }
}
