//! What the simulator's integration tests share.

use raidlab_core::{Case, Figures, Plan};
use raidlab_sim::SimOutput;
use std::path::Path;

/// The case of a one-case plan whose `[disks]`, `[arrays]` and `[workloads]` tables hold
/// these TOML lines; the array has no file system.
pub fn one_case(disks: &str, arrays: &str, workloads: &str) -> Case {
    let text = format!(
        "name = \"t\"\n[disks]\n{disks}\n[arrays]\nfilesystem = \"none\"\n{arrays}\n[workloads]\n{workloads}\n"
    );
    Plan::parse(&text, Path::new("t.toml")).unwrap().cases()[0].clone()
}

/// The simulator's run of `case` (seed 1) and the figures raidlab reads from its fio-shaped
/// output, as the sim target records them.
pub fn simulate(case: &Case) -> (SimOutput, Figures) {
    let out = raidlab_sim::simulate(case, 1).unwrap();
    let f = raidlab_fio::parse_output(&out.fio_json).unwrap().figures;
    (out, f)
}
