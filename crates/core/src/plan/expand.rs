//! The plan's cases: every array of every `[arrays]` matrix against every workload of
//! every `[workloads]` matrix, in plan order, without repetitions — and a test region
//! each array can hold.

use super::*;

/// The arrays and the workloads a plan's tables expand to, with where each was written.
type Matrices = (Vec<At<ArraySpec>>, Vec<At<Workload>>);

impl<'a> Cx<'a> {
    /// Expand the `[arrays]` and `[workloads]` tables into the plan's cases.
    /// Every `[[arrays]]` and `[[workloads]]` table expanded, each table's first mistake
    /// reported (arrays only when the disk count is known: they are checked against it).
    pub(super) fn matrices(
        &self,
        root: &'a Table,
        disk_count: Option<u32>,
    ) -> Result<Matrices, PlanError> {
        let mut errors = Vec::new();
        let mut array_specs = Vec::new();
        match (self.tables(root, "arrays"), disk_count) {
            (Ok(arrays), Some(count)) => {
                for (i, t) in arrays.iter().enumerate() {
                    let prefix = indexed("arrays", i, arrays.len());
                    match self.array_matrix(t, &prefix, count) {
                        Ok(specs) => array_specs.extend(specs),
                        Err(e) => errors.push(e),
                    }
                }
            }
            (Ok(_), None) => {}
            (Err(e), _) => errors.push(e),
        }
        let mut workload_list = Vec::new();
        match self.tables(root, "workloads") {
            Ok(workloads) => {
                for (i, t) in workloads.iter().enumerate() {
                    let prefix = indexed("workloads", i, workloads.len());
                    match self.workload_matrix(t, &prefix) {
                        Ok(w) => workload_list.extend(w),
                        Err(e) => errors.push(e),
                    }
                }
            }
            Err(e) => errors.push(e),
        }
        match PlanError::all(errors) {
            Some(e) => Err(e),
            None => Ok((array_specs, workload_list)),
        }
    }

    /// The cases: every array with every workload, each once.
    pub(super) fn cases(
        &self,
        array_specs: &[At<ArraySpec>],
        workload_list: &[At<Workload>],
        disks: &DiskSet,
        member_size: Option<Bytes>,
    ) -> Result<Vec<Case>, PlanError> {
        let mut cases = Vec::new();
        let mut seen = BTreeSet::new();
        for (array, array_span) in array_specs {
            // Devices of unknown size (host target): the target checks when it probes them.
            let sizes = member_size.map(|m| (m, usable_bytes(array, m)));
            for (w, w_span) in workload_list {
                if let Some((member, usable)) = sizes.filter(|(_, u)| w.offset + w.size > *u) {
                    return Err(self.err(
                        w_span.clone().or(array_span.clone()),
                        "workloads.size",
                        Some(format!("\"{}\"", w.size.to_fio())),
                        format!(
                            "{} on {} × {} holds only {} (members of {}); make size + offset smaller or the disks (or span) larger",
                            array.label(),
                            array.disks,
                            disks.model.as_deref().unwrap_or("disks"),
                            usable,
                            member
                        ),
                    ));
                }
                let case = Case::new(array.clone(), disks.without_count(array.disks), w.clone());
                if seen.insert(case.id.clone()) {
                    cases.push(case);
                }
            }
        }
        Ok(cases)
    }
}

/// Usable bytes of the array given each member's usable size.
pub fn usable_bytes(a: &ArraySpec, member: Bytes) -> Bytes {
    let frac = a.capacity_fraction();
    Bytes(((member.0 as f64) * a.disks as f64 * frac) as u64)
}
