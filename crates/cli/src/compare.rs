//! `raidlab compare`: two results directories case by case (or paired by dimensions with
//! `--match`), or one directory's cases that differ in one dimension (`--by`). The pairing
//! and the statistics live in `raidlab_report::compare`; this reads the stores and writes
//! the result where it was asked.

use crate::args::CompareArgs;
use anyhow::{bail, Context, Result};
use raidlab_report::compare::{self, Side};
use raidlab_store::Store;
use std::path::Path;

fn load(dir: &Path) -> Result<Vec<Side>> {
    let store = Store::open(dir)
        .with_context(|| format!("cannot open results directory {}", dir.display()))?;
    Ok(compare::load(&store)?)
}

pub fn compare(a: CompareArgs) -> Result<()> {
    let left = load(&a.a)?;
    let (text, title) = match (&a.b, &a.by) {
        (None, None) => bail!(
            "give two results directories (raidlab compare A B), or one with --by DIM to pair its cases that differ only in DIM"
        ),
        (Some(_), Some(_)) => bail!(
            "--by pairs the cases of one directory: give one directory, or pair two with --match DIMS"
        ),
        (None, Some(by)) => {
            let pairs = compare::pair_by(&left, by, a.baseline.as_deref())?;
            let title = format!(
                "{} by {by}: {}",
                a.a.display(),
                raidlab_core::plural(pairs.len(), "pair", "pairs")
            );
            (compare::render(&compare::lines(&pairs), a.format, &title), title)
        }
        (Some(b), None) => {
            let right = load(b)?;
            let pairs = compare::pair_two(&left, &right, &a.match_dims)?;
            let title = format!("A = {}\nB = {}", a.a.display(), b.display());
            let mut text = compare::render(&compare::lines(&pairs), a.format, &title);
            if a.format == compare::CompareFormat::Table {
                let unpaired = |sides: &[Side], side: usize| {
                    sides
                        .iter()
                        .filter(|s| {
                            !pairs.iter().any(|p| {
                                std::ptr::eq(if side == 0 { p.0 } else { p.1 }, *s)
                            })
                        })
                        .map(|s| format!("{} ({})", s.case_id, s.label))
                        .collect::<Vec<_>>()
                };
                text.push_str(&format!("\n{} case(s) in both\n", pairs.len()));
                for (name, only) in [("A", unpaired(&left, 0)), ("B", unpaired(&right, 1))] {
                    if !only.is_empty() {
                        text.push_str(&format!("only in {name}: {}\n", only.join(", ")));
                    }
                }
            }
            (text, title)
        }
    };
    match &a.out {
        Some(path) => {
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            raidlab_backend::note!(
                "wrote {} ({})",
                path.display(),
                title.lines().next().unwrap_or("")
            );
        }
        None => print!("{text}"),
    }
    Ok(())
}
