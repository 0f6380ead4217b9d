//! What the simulator's integration tests share.

use raidlab_core::{Case, Plan};
use std::path::Path;

/// The case of a one-case plan whose `[disks]`, `[arrays]` and `[workloads]` tables hold
/// these TOML lines; the array has no file system.
pub fn one_case(disks: &str, arrays: &str, workloads: &str) -> Case {
    let text = format!(
        "name = \"t\"\n[disks]\n{disks}\n[arrays]\nfilesystem = \"none\"\n{arrays}\n[workloads]\n{workloads}\n"
    );
    Plan::parse(&text, Path::new("t.toml")).unwrap().cases()[0].clone()
}
