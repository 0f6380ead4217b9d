//! fio, raidlab's I/O engine: render job files from workloads, parse fio's JSON output.
//!
//! fio is never re-implemented; raidlab only writes what fio reads (`job.rs`) and reads
//! what fio writes (`parse.rs`). The parser accepts every fio 3.x shape seen in the wild
//! and fio 2.x's µs latencies, and carries fio's IOPS exactly as fio printed them.

pub mod job;
pub mod parse;

pub use job::{render_job, render_job_with};
pub use parse::{parse_output, JobInfo, ParseError, ParsedRun};

/// The installed fio's version (`fio-3.33`), or `None` when fio is not on PATH (or does
/// not answer `--version`).
pub fn fio_version() -> Option<String> {
    let out = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !version.is_empty()).then_some(version)
}
