//! `raidlab sim`: one simulated case from flags. The flags are turned into a one-case
//! plan and parsed by the plan parser, so they are validated exactly like a plan file.

use crate::args::SimArgs;
use anyhow::{anyhow, bail, Result};
use raidlab_core::Plan;
use std::io::Write;
use std::path::Path;

fn quoted(s: &str) -> String {
    format!("{s:?}")
}

pub fn sim(a: SimArgs) -> Result<()> {
    let mut text = format!(
        "name = \"sim\"\n[disks]\ncount = {}\nmodel = {}\n",
        a.disks,
        quoted(&a.disk)
    );
    if let Some(c) = &a.disk_capacity {
        text += &format!("capacity = {}\n", quoted(c));
    }
    if let Some(s) = &a.span {
        text += &format!("span = {}\n", quoted(s));
    }
    if let Some(n) = a.host_queue {
        text += &format!("host_queue = {n}\n");
    }
    if !a.disk_param.is_empty() {
        text += "[disks.params]\n";
        for p in &a.disk_param {
            let Some((k, v)) = p.split_once('=') else {
                bail!("--disk-param {p:?}: write NAME=VALUE, e.g. --disk-param queue_depth=1");
            };
            text += &format!("{} = {}\n", quoted(k.trim()), quoted(v.trim()));
        }
    }
    text += &format!(
        "[arrays]\nlevel = {}\nfilesystem = \"none\"\nwrite_cache = {}\n",
        quoted(&a.level),
        quoted(&a.write_cache)
    );
    let level: raidlab_core::Level = a
        .level
        .parse()
        .map_err(|e| anyhow!("--level {}: {e}", a.level))?;
    if level.has_chunk() {
        text += &format!("chunk = {}\n", quoted(&a.chunk));
    }
    if let Some(rows) = a.stripe_cache {
        text += &format!("stripe_cache = {rows}\n");
    }
    if a.bitmap != "none" {
        text += &format!("bitmap = {}\n", quoted(&a.bitmap));
    }
    if a.resync != "wait" {
        text += &format!("resync = {}\n", quoted(&a.resync));
    }
    if let Some(l) = &a.layout {
        text += &format!("layout = {}\n", quoted(l));
    }
    text += &format!(
        "[workloads]\nrw = {}\nbs = {}\niodepth = {}\nnumjobs = {}\nsize = {}\nruntime = {}\nrwmixread = {}\n",
        quoted(&a.rw),
        quoted(&a.bs),
        a.iodepth,
        a.numjobs,
        quoted(&a.size),
        quoted(&a.runtime),
        a.rwmixread
    );
    // Errors name the plan field; the flag has the same name with dashes, but for the
    // disk fields whose flags are named after the disk.
    let plan = Plan::parse(&text, Path::new("<command line>")).map_err(|e| {
        let flag = match e.field.as_str() {
            f if f.starts_with("disks.params") => "disk-param".to_string(),
            "disks.count" => "disks".to_string(),
            "disks.model" => "disk".to_string(),
            "disks.capacity" => "disk-capacity".to_string(),
            f => f.rsplit('.').next().unwrap_or("").replace('_', "-"),
        };
        let value = e.value.map(|v| format!(" = {v}")).unwrap_or_default();
        anyhow!("{}{value}: {} (from --{flag})", e.field, e.message)
    })?;
    let case = &plan.cases()[0];
    let out = raidlab_sim::simulate(case, a.seed)?;
    let mut stdout = std::io::stdout().lock();
    match a.format.as_str() {
        "fio-json" => stdout.write_all(out.fio_json.as_bytes())?,
        "csv" | "json" => {
            let parsed = raidlab_fio::parse_output(&out.fio_json)?;
            let mut row = raidlab_report::Row::new(
                &case.id.0,
                Some(case),
                &case.workload,
                "sim",
                std::slice::from_ref(&parsed.figures),
            );
            // Held against the model from the simulated disk (no baseline here).
            let e = raidlab_model::expectation(case, Some(&out.model), None);
            let log = raidlab_model::iops_per_second(&out.iops_log);
            let environment = out.environment(a.seed);
            row.judge(
                case,
                e.as_ref(),
                [(&parsed.figures, &environment, log.as_slice())],
            );
            let format = a.format.parse().map_err(|e: String| anyhow!(e))?;
            stdout.write_all(&raidlab_report::export(&[row], format, "sim"))?;
        }
        other => bail!("--format {other}: use csv, json or fio-json"),
    }
    Ok(())
}
