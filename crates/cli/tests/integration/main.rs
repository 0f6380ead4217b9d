//! The `raidlab` binary as a user runs it: one test binary (as ripgrep's), a module per
//! area. Tests run in parallel and share the machine (`raidlab_testkit::shared`), except the
//! VM boots, which measure real time and take it alone (`raidlab_testkit::exclusive`).

mod advise;
mod calibrate;
mod cli;
mod fleet;
mod host;
mod host_safety;
mod import;
mod interrupt;
mod report_chromium;
mod risk;
mod vm;

/// The report's chart-geometry checker, shared with `raidlab-report`'s own test.
#[path = "../../../report/tests/geometry/mod.rs"]
mod geometry;

use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `RUN --quiet --out OUT` (a `raidlab run …` the caller built) started in the background:
/// its output discarded, its error output kept for the test to read.
pub(crate) fn spawn_quietly(mut run: Command, out: &Path) -> Child {
    run.args(["--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("raidlab starts")
}
