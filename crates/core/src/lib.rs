//! raidlab's vocabulary: units, array specs, workloads, disk models, plans and cases.
//!
//! Pure data and parsing, no I/O beyond reading a plan file: every other crate speaks in
//! these types, so a plan means the same thing to the simulator, the host target, the
//! store and the report.

pub mod case;
pub mod disk;
pub mod environment;
pub mod model_file;
pub mod natural;
pub mod plan;
pub mod result;
pub mod spec;
pub mod stats;
pub mod target;
pub mod units;
pub mod workload;

pub use case::{Case, CaseId, DiskSet};
pub use disk::{DiskKind, DiskModel};
pub use environment::{CommandRun, Environment, RebuildFigures};
pub use plan::{FieldValue, FleetMode, Plan, PlanBuilder, PlanError};
pub use result::{DirectionFigures, DiskUtil, Figures};
pub use spec::{
    ArraySpec, ArrayState, Bitmap, Engine, Filesystem, Governor, Layout, Level, Rebuild, Rejoin,
    Resync, Scheduler, WriteCache, DEFAULT_STRIPE_CACHE,
};
pub use target::{Capabilities, Check, TargetKind, TargetNote, FLEET_AGGREGATE};
pub use units::{Bytes, Nanos, UnitError};
pub use workload::{FioOptions, Headline, Rw, Workload};

/// `1 case`, `2 cases`: a count with its noun.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}
