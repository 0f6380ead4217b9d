//! The plan's cases: every array of every `[arrays]` matrix against every workload of
//! every `[workloads]` matrix, in plan order, without repetitions — and a test region
//! each array can hold.

use super::*;

impl<'a> Cx<'a> {
    /// Expand the `[arrays]` and `[workloads]` tables into the plan's cases.
    pub(super) fn cases(
        &self,
        root: &'a Table,
        disks: &DiskSet,
        member_size: Option<Bytes>,
    ) -> Result<Vec<Case>, PlanError> {
        let arrays = self.tables(root, "arrays")?;
        let workloads = self.tables(root, "workloads")?;

        let mut array_specs = Vec::new();
        for (i, t) in arrays.iter().enumerate() {
            let prefix = indexed("arrays", i, arrays.len());
            array_specs.extend(self.array_matrix(t, &prefix, disks.count)?);
        }
        let mut workload_list = Vec::new();
        for (i, t) in workloads.iter().enumerate() {
            let prefix = indexed("workloads", i, workloads.len());
            workload_list.extend(self.workload_matrix(t, &prefix)?);
        }

        let mut cases = Vec::new();
        let mut seen = BTreeSet::new();
        for (array, array_span) in &array_specs {
            // Devices of unknown size (host target): the target checks when it probes them.
            let sizes = member_size.map(|m| (m, usable_bytes(array, m)));
            for (w, w_span) in &workload_list {
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
