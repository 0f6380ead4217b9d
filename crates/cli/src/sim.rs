//! `raidlab sim`: one simulated case from flags. The flags are set on a one-case plan
//! (`Plan::builder`) that the plan reader validates exactly like a plan file.

use crate::args::{SimArgs, SimFormat};
use anyhow::{anyhow, bail, Result};
use raidlab_core::{Check, Plan, TargetKind};
use std::io::Write;
use std::path::Path;

pub fn sim(a: SimArgs) -> Result<()> {
    let plan = plan(&a)?;
    let case = &plan.cases()[0];
    if a.layout_pass && !raidlab_sim::layout_pass_grows_the_cache(case) {
        eprintln!(
            "note: --layout-pass changes nothing here: the layout grows the stripe cache of \
             md raid5/6 only, under direct I/O and not with --kernel 4.0, and the targets \
             lay a raw region out only for a workload that reads it"
        );
    }
    let start = if a.layout_pass {
        raidlab_sim::Start::LaidOut
    } else if a.in_service {
        raidlab_sim::Start::InService
    } else {
        raidlab_sim::Start::as_the_targets_run(case)
    };
    let out = match &a.trace {
        Some(_) => raidlab_sim::simulate_traced(case, a.seed, start)?,
        None => raidlab_sim::simulate_from(case, a.seed, start)?,
    };
    if let (Some(path), Some(commands)) = (&a.trace, &out.trace) {
        write_trace(path, commands)?;
    }
    let mut stdout = std::io::stdout().lock();
    match a.format {
        SimFormat::FioJson => stdout.write_all(out.fio_json.as_bytes())?,
        SimFormat::Csv | SimFormat::Json => {
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
            row.rebuild([&environment]);
            row.risk(case, out.model.capacity().0 as f64);
            row.judge(
                case,
                e.as_ref(),
                [(&parsed.figures, &environment, log.as_slice())],
            );
            let format = match a.format {
                SimFormat::Csv => raidlab_report::Format::Csv,
                _ => raidlab_report::Format::Json,
            };
            stdout.write_all(&raidlab_report::export(&[row], format, "sim"))?;
        }
    }
    Ok(())
}

/// Write the members' commands to `path` as CSV (`--trace`).
fn write_trace(path: &Path, commands: &[raidlab_sim::engine::MemberCommand]) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| {
        anyhow!(
            "--trace {}: cannot create it ({e}); give a path in a directory you can write",
            path.display()
        )
    })?;
    let mut w = std::io::BufWriter::new(file);
    raidlab_sim::engine::write_trace_csv(commands, &mut w)
        .and_then(|()| w.flush())
        .map_err(|e| anyhow!("--trace {}: writing failed ({e})", path.display()))?;
    Ok(())
}

/// The one-case plan of the flags; an error names the flag its value came from.
fn plan(a: &SimArgs) -> Result<Plan> {
    let mut b = Plan::builder("sim");
    b.disks("count", a.disks).disks("model", &a.disk);
    if let Some(c) = a.disk_capacity {
        b.disks("capacity", c.to_fio());
    }
    if let Some(s) = a.span {
        b.disks("span", s.to_fio());
    }
    if let Some(n) = a.host_queue {
        b.disks("host_queue", n);
    }
    if let Some(s) = a.scheduler {
        b.disks("scheduler", s.word());
    }
    for p in &a.disk_param {
        let Some((k, v)) = p.split_once('=') else {
            bail!("--disk-param {p:?}: write NAME=VALUE, e.g. --disk-param queue_depth=1");
        };
        b.disk_param(k.trim(), v.trim());
    }
    b.array("level", a.level.word())
        .array("filesystem", "none")
        .array("write_cache", a.write_cache.word());
    if a.level.has_chunk() {
        b.array("chunk", a.chunk.to_fio());
    }
    if let Some(rows) = a.stripe_cache {
        b.array("stripe_cache", rows);
    }
    b.array("bitmap", a.bitmap.word())
        .array("resync", a.resync.word())
        .array("state", a.state.word());
    if let Some(l) = a.layout {
        b.array("layout", l.to_string());
    }
    if let Some(n) = a.failed {
        b.array("failed", n);
    }
    if let Some(k) = a.kernel {
        b.array("kernel", k.word());
    }
    for (key, value) in [
        ("sync_speed_min", a.sync_speed_min),
        ("sync_speed_max", a.sync_speed_max),
        ("sync_io_depth", a.sync_io_depth),
    ] {
        if let Some(v) = value {
            b.array(key, v);
        }
    }
    b.workload("rw", a.rw.word())
        .workload("bs", a.bs.to_fio())
        .workload("iodepth", a.iodepth)
        .workload("numjobs", a.numjobs)
        .workload("size", a.size.to_fio())
        .workload("runtime", a.runtime.to_fio())
        .workload("ramp", a.ramp.to_fio())
        .workload("rwmixread", a.rwmixread);
    if let Some(r) = &a.rate_iops {
        b.workload_fio("rate_iops", r.as_str());
    }
    // Errors name the plan field; the flag has the same name with dashes, but for the
    // disk fields whose flags are named after the disk.
    // Checked like a plan file, and against what the simulator can do.
    b.build(Path::new("<command line>"))
        .and_then(|p| {
            p.check_target(TargetKind::Sim, Check::Run)?;
            Ok(p)
        })
        .map_err(|e| {
            let flag = match e.field.as_str() {
                f if f.starts_with("disks.params") => "disk-param".to_string(),
                "disks.count" => "disks".to_string(),
                "disks.model" => "disk".to_string(),
                "disks.capacity" => "disk-capacity".to_string(),
                f => f.rsplit('.').next().unwrap_or("").replace('_', "-"),
            };
            let value = e.value.map(|v| format!(" = {v}")).unwrap_or_default();
            anyhow!("{}{value}: {} (from --{flag})", e.field, e.message)
        })
}
