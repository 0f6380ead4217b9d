//! Turn a store's cases and results into export rows (one per case and target).

use anyhow::Result;
use raidlab_report::Row;
use raidlab_store::Store;
use std::collections::BTreeMap;

pub fn rows(store: &Store) -> Result<Vec<Row>> {
    let mut by_case: BTreeMap<(String, String), Vec<raidlab_core::Figures>> = BTreeMap::new();
    let mut targets: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in store.results()? {
        let key = (r.case_id.0.clone(), r.target.clone());
        if !by_case.contains_key(&key) {
            targets
                .entry(r.case_id.0.clone())
                .or_default()
                .push(r.target.clone());
        }
        by_case.entry(key).or_default().push(r.figures);
    }
    let mut rows = Vec::new();
    for c in store.all_case_rows()? {
        for target in targets.get(&c.id.0).into_iter().flatten() {
            let figures = &by_case[&(c.id.0.clone(), target.clone())];
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
