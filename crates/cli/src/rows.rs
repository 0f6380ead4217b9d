//! Turn a store's cases and results into export rows (one per case and target).

use anyhow::Result;
use raidlab_core::Figures;
use raidlab_report::Row;
use raidlab_store::Store;
use std::collections::BTreeMap;

pub fn rows(store: &Store) -> Result<Vec<Row>> {
    // case id → target → figures of each repetition.
    let mut by_case: BTreeMap<String, BTreeMap<String, Vec<Figures>>> = BTreeMap::new();
    for r in store.results()? {
        by_case
            .entry(r.case_id.0)
            .or_default()
            .entry(r.target)
            .or_default()
            .push(r.figures);
    }
    let mut rows = Vec::new();
    for c in store.all_case_rows()? {
        for (target, figures) in by_case.get(&c.id.0).into_iter().flatten() {
            rows.push(Row::new(
                &c.id.0,
                c.case.as_ref(),
                &c.workload,
                target,
                figures,
            ));
        }
    }
    Ok(rows)
}
