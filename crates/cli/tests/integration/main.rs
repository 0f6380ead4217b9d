//! The `raidlab` binary as a user runs it: one test binary (as ripgrep's), a module per
//! area. Tests run in parallel and share the machine (`raidlab_testkit::shared`), except the
//! VM boots, which measure real time and take it alone (`raidlab_testkit::exclusive`).

mod cli;
mod host;
mod host_safety;
mod interrupt;
mod report_chromium;
mod vm;
