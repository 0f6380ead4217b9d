//! Job files: one workload as an fio INI job, the exact file the host target runs and the
//! `plan --script` prints.

use raidlab_core::Workload;
use std::fmt::Write;

/// Render `w` as an fio job named `name` on `filename`.
pub fn render_job(w: &Workload, filename: &str, name: &str) -> String {
    render_job_with(w, filename, name, &[])
}

/// As [`render_job`], with extra `key=value` options appended to the job section.
pub fn render_job_with(
    w: &Workload,
    filename: &str,
    name: &str,
    extra: &[(&str, String)],
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "[global]");
    let _ = writeln!(s, "ioengine={}", w.ioengine);
    let _ = writeln!(s, "direct={}", w.direct as u8);
    let _ = writeln!(s, "rw={}", w.rw.fio_name());
    if w.rw.reads() && w.rw.writes() {
        let _ = writeln!(s, "rwmixread={}", w.rwmixread);
    }
    let _ = writeln!(s, "bs={}", w.bs.to_fio());
    let _ = writeln!(s, "iodepth={}", w.iodepth);
    let _ = writeln!(s, "numjobs={}", w.numjobs);
    let _ = writeln!(s, "size={}", w.size.to_fio());
    if w.offset.0 > 0 {
        let _ = writeln!(s, "offset={}", w.offset.to_fio());
    }
    // time_based: run the full runtime even when size is covered sooner.
    let _ = writeln!(s, "runtime={}", w.runtime.to_fio());
    let _ = writeln!(s, "time_based=1");
    if w.ramp.0 > 0 {
        let _ = writeln!(s, "ramp_time={}", w.ramp.to_fio());
    }
    // One aggregate over all jobs, as the seeds reported.
    let _ = writeln!(s, "group_reporting=1");
    // Fresh data per write, so no layer can compress or deduplicate it (the 2019 seed).
    let _ = writeln!(s, "refill_buffers=1");
    // Uniform random offsets without fio's coverage map; randrepeat=0: a new sequence per run.
    let _ = writeln!(s, "norandommap=1");
    let _ = writeln!(s, "randrepeat=0");
    let _ = writeln!(s);
    let _ = writeln!(s, "[{name}]");
    let _ = writeln!(s, "filename={filename}");
    for (k, v) in extra {
        let _ = writeln!(s, "{k}={v}");
    }
    s
}
