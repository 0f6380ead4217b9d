//! fio, raidlab's I/O engine: render job files from workloads, parse fio's JSON output.
//!
//! fio is never re-implemented; raidlab only writes what fio reads (`job.rs`) and reads
//! what fio writes (`parse.rs`). The parser accepts every fio 3.x shape seen in the wild
//! and fio 2.x's µs latencies, and carries fio's IOPS exactly as fio printed them.

pub mod clients;
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

/// Ask the installed fio whether it accepts a job file (`fio --parse-only`), as the
/// plan's `[workloads.fio]` options are fio's to judge. `Ok(false)` when fio is not
/// installed (nothing was checked); `Err` with fio's own words when it refuses.
pub fn parse_only(job: &str) -> Result<bool, String> {
    if fio_version().is_none() {
        return Ok(false);
    }
    let mut file = tempfile::Builder::new()
        .prefix("raidlab-parse-only-")
        .suffix(".fio")
        .tempfile()
        .map_err(|e| format!("cannot write a temporary job file: {e}"))?;
    std::io::Write::write_all(&mut file, job.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
    let out = std::process::Command::new("fio")
        .arg("--parse-only")
        .arg(file.path())
        .output();
    let out = out.map_err(|e| format!("cannot run fio: {e}"))?;
    if out.status.success() {
        return Ok(true);
    }
    let said: Vec<String> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .chain(String::from_utf8_lossy(&out.stdout).lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with(':') && !l.starts_with("valid values"))
        .map(String::from)
        .collect();
    Err(said.join("; "))
}
