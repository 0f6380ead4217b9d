//! Job files: one workload as an fio INI job, the exact file the host target runs and
//! `plan --script` prints.
//!
//! raidlab never drives I/O itself; a workload becomes fio options here, in one place, so
//! the job that runs, the job a user reads in a script, and the options the parser later
//! recovers from fio's JSON (`job options`/`global options`) are the same.

use raidlab_core::Workload;
use std::fmt::Write;

/// Render `w` as an fio job named `name` on `filename`.
///
/// Every workload option goes in `[global]`, so fio echoes it under `global options`
/// in its JSON and an importer recovers rw, bs, iodepth and numjobs from it.
pub fn render_job(w: &Workload, filename: &str, name: &str) -> String {
    render_job_with(w, filename, name, &[])
}

/// fio splits `filename=` at `:` (several files per job); a literal colon is `\:`.
fn escape_filename(filename: &str) -> String {
    let mut out = String::with_capacity(filename.len());
    let mut chars = filename.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // Already escaped: keep the pair as written.
            '\\' if chars.peek() == Some(&':') => {
                out.push('\\');
                out.push(':');
                chars.next();
            }
            ':' => out.push_str("\\:"),
            c => out.push(c),
        }
    }
    out
}

/// As [`render_job`], with extra `key=value` options (such as `write_iops_log`) appended
/// to the job section, after the workload's, so they can refine it.
pub fn render_job_with(
    w: &Workload,
    filename: &str,
    name: &str,
    extra: &[(&str, String)],
) -> String {
    let mut s = String::new();
    // `writeln!` into a String cannot fail; the results are ignored.
    let _ = writeln!(s, "[global]");
    // The engine the plan asked for (libaio, io_uring, psync; null in tests).
    let _ = writeln!(s, "ioengine={}", w.ioengine);
    // direct=1: O_DIRECT, so the array is measured and not the page cache (the seeds did).
    let _ = writeln!(s, "direct={}", u8::from(w.direct));
    let _ = writeln!(s, "rw={}", w.rw.fio_name());
    // rwmixread only means something for mixed workloads; fio ignores it otherwise, and
    // leaving it out keeps `global options` free of a misleading value.
    if w.rw.reads() && w.rw.writes() {
        let _ = writeln!(s, "rwmixread={}", w.rwmixread);
    }
    // Sizes in fio's own spelling (`4k`, `10g`, kb_base=1024), exact and round-tripping.
    let _ = writeln!(s, "bs={}", w.bs.to_fio());
    let _ = writeln!(s, "iodepth={}", w.iodepth);
    let _ = writeln!(s, "numjobs={}", w.numjobs);
    let _ = writeln!(s, "size={}", w.size.to_fio());
    // offset only when the region does not start at 0 (fio's default).
    if w.offset.0 > 0 {
        let _ = writeln!(s, "offset={}", w.offset.to_fio());
    }
    let _ = writeln!(s, "runtime={}", w.runtime.to_fio());
    // ramp_time only when asked for: I/O in the ramp is run but not counted.
    if w.ramp.0 > 0 {
        let _ = writeln!(s, "ramp_time={}", w.ramp.to_fio());
    }
    // time_based: honour runtime even when `size` is covered sooner (fio loops over the
    // region), so every case measures for the same time.
    let _ = writeln!(s, "time_based=1");
    // group_reporting: one aggregate over all numjobs, as the seeds reported, and the
    // shape the parser's figures are (it also sums separate jobs when this is off).
    let _ = writeln!(s, "group_reporting=1");
    // refill_buffers: fresh data per write, so no layer can compress or deduplicate it
    // (the plan may turn it off: it costs CPU per write on fast devices).
    if w.fio.refill_buffers {
        let _ = writeln!(s, "refill_buffers=1");
    }
    if let Some(p) = &w.fio.buffer_pattern {
        let _ = writeln!(s, "buffer_pattern={p}");
    }
    // norandommap: uniform random offsets without fio's coverage map (no bias towards
    // untouched blocks late in the run, no map memory for large arrays).
    let _ = writeln!(s, "norandommap=1");
    // randrepeat=0: a new random sequence per run, so repetitions are independent samples.
    let _ = writeln!(s, "randrepeat=0");
    // `[workloads.fio]`: the plan's own fio options, after raidlab's so they can refine
    // them (the plan refuses those that would break what raidlab reads back).
    for (k, v) in &w.fio.extra {
        let _ = writeln!(s, "{k}={v}");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "[{name}]");
    let _ = writeln!(s, "filename={}", escape_filename(filename));
    for (k, v) in extra {
        let _ = writeln!(s, "{k}={v}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::{Bytes, Nanos, Rw};

    fn workload(rw: Rw) -> Workload {
        Workload {
            rw,
            bs: Bytes::kib(4),
            iodepth: 8,
            numjobs: 2,
            size: Bytes::gib(1),
            offset: Bytes(0),
            runtime: Nanos::from_secs(60),
            ramp: Nanos::ZERO,
            rwmixread: 70,
            ioengine: "libaio".into(),
            direct: true,
            fio: Default::default(),
        }
    }

    fn lines(job: &str) -> Vec<&str> {
        job.lines().collect()
    }

    #[test]
    fn options_are_fios_spelling() {
        let job = render_job(&workload(Rw::RandWrite), "/dev/md0", "case");
        let l = lines(&job);
        for want in [
            "[global]",
            "ioengine=libaio",
            "direct=1",
            "rw=randwrite",
            "bs=4k",
            "iodepth=8",
            "numjobs=2",
            "size=1g",
            "runtime=60s",
            "time_based=1",
            "group_reporting=1",
            "refill_buffers=1",
            "norandommap=1",
            "randrepeat=0",
            "[case]",
            "filename=/dev/md0",
        ] {
            assert!(l.contains(&want), "{want} missing from\n{job}");
        }
        assert!(!job.contains("rwmixread"), "not a mixed workload");
        assert!(!job.contains("offset="), "offset 0 is fio's default");
        assert!(!job.contains("ramp_time"), "no ramp asked for");
    }

    #[test]
    fn mixed_offset_ramp_and_extra_options() {
        let mut w = workload(Rw::RandRw);
        w.offset = Bytes::mib(512);
        w.ramp = Nanos::from_secs(5);
        w.direct = false;
        let job = render_job_with(&w, "f", "j", &[("write_iops_log", "x".into())]);
        let l = lines(&job);
        for want in [
            "rwmixread=70",
            "offset=512m",
            "ramp_time=5s",
            "direct=0",
            "write_iops_log=x",
        ] {
            assert!(l.contains(&want), "{want} missing from\n{job}");
        }
        assert!(job.ends_with("write_iops_log=x\n"), "extras come last");
        let seq = render_job(&workload(Rw::Rw), "f", "j");
        assert!(seq.contains("rwmixread=70"));
    }

    #[test]
    fn plan_fio_options_follow_raidlabs_and_buffers_are_fields() {
        let mut w = workload(Rw::RandWrite);
        w.fio.refill_buffers = false;
        w.fio.buffer_pattern = Some("0xdeadbeef".into());
        w.fio.extra.insert("fsync".into(), "1".into());
        w.fio.extra.insert("rate_iops".into(), "500".into());
        let job = render_job(&w, "f", "j");
        assert!(!job.contains("refill_buffers"), "{job}");
        let at = |s: &str| job.find(s).unwrap_or_else(|| panic!("{s} in {job}"));
        assert!(at("buffer_pattern=0xdeadbeef") < at("fsync=1"));
        assert!(at("randrepeat=0") < at("fsync=1") && at("fsync=1") < at("rate_iops=500"));
        assert!(
            at("rate_iops=500") < at("[j]"),
            "in [global], where fio echoes them"
        );
    }

    #[test]
    fn colons_in_filenames_are_escaped_once() {
        assert_eq!(
            escape_filename("/dev/disk/by-id/a:b"),
            "/dev/disk/by-id/a\\:b"
        );
        assert_eq!(escape_filename("a\\:b"), "a\\:b");
        assert_eq!(escape_filename("plain"), "plain");
    }
}
