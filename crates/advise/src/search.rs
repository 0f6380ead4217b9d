//! The search space: every md layout a user could build on the disk counts asked, with
//! the chunk sizes asked where the level has chunks, the bitmaps asked where it is
//! redundant and the stripe cache sizes asked where it has parity; every btrfs profile
//! (its stripe unit and block groups are fixed: no chunk, bitmap or cache to choose); and
//! each case of a candidate as the plan reader would make it (so a candidate is exactly
//! what a plan file would run).

use crate::{AdviseError, Need, WorkloadSpec};
use raidlab_core::spec::DEFAULT_STRIPE_CACHE;
use raidlab_core::{ArrayState, Case, Check, Plan, PlanBuilder, TargetKind};
use std::path::Path;

/// One layout: md level, its layout (raid10's copies, raid5/6's parity algorithm), chunk
/// and write-intent bitmap, on `disks` members; or a btrfs profile on `disks` devices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Candidate {
    /// Who builds it: `md` or `btrfs`.
    pub engine: String,
    pub disks: u32,
    pub level: String,
    pub layout: Option<String>,
    pub chunk: Option<String>,
    /// md's write-intent bitmap: `none` or `internal` (raid0 has none).
    pub bitmap: String,
    /// raid5/6's `stripe_cache_size` (4 KiB pages per member); `None` on other levels.
    pub stripe_cache: Option<u32>,
}

/// raid10's layouts: two copies near, far and offset, and three near.
const RAID10_LAYOUTS: [&str; 4] = ["n2", "f2", "o2", "n3"];
/// raid5/6's parity algorithms (md's default first).
const PARITY_LAYOUTS: [&str; 4] = [
    "left-symmetric",
    "left-asymmetric",
    "right-symmetric",
    "right-asymmetric",
];

/// btrfs's profiles and the fewest devices each takes (`btrfs_raid_array`'s
/// `devs_min`; raid10 and raid5/6 at the counts that keep their redundancy on equal disks).
const BTRFS_PROFILES: [(&str, u32); 7] = [
    ("raid0", 2),
    ("raid1", 2),
    ("raid1c3", 3),
    ("raid1c4", 4),
    ("raid10", 4),
    ("raid5", 3),
    ("raid6", 4),
];

/// Every candidate for `need`, disk count by disk count.
pub fn candidates(need: &Need) -> Vec<Candidate> {
    let mut out = Vec::new();
    for &n in &need.disks {
        if need.engines.iter().any(|e| e == "btrfs") {
            for (level, min) in BTRFS_PROFILES {
                if n >= min {
                    out.push(Candidate {
                        engine: "btrfs".into(),
                        disks: n,
                        level: level.into(),
                        layout: None,
                        chunk: None,
                        bitmap: "none".into(),
                        stripe_cache: None,
                    });
                }
            }
        }
        if !need.engines.iter().any(|e| e == "md") {
            continue;
        }
        let first = out.len();
        let c = |level: &str, layout: Option<&str>, chunk: Option<&String>| Candidate {
            engine: "md".into(),
            disks: n,
            level: level.to_string(),
            layout: layout.map(str::to_string),
            chunk: chunk.cloned(),
            bitmap: "none".into(),
            stripe_cache: None,
        };
        for chunk in &need.chunks {
            out.push(c("raid0", None, Some(chunk)));
        }
        out.push(c("raid1", None, None));
        for layout in RAID10_LAYOUTS {
            let copies: u32 = layout[1..].parse().expect("a copy count");
            if n >= copies {
                for chunk in &need.chunks {
                    out.push(c("raid10", Some(layout), Some(chunk)));
                }
            }
        }
        for (level, min) in [("raid5", 3), ("raid6", 4)] {
            if n >= min {
                for layout in PARITY_LAYOUTS {
                    for chunk in &need.chunks {
                        out.push(c(level, Some(layout), Some(chunk)));
                    }
                }
            }
        }
        // Each redundant layout once per bitmap asked (md refuses one on raid0), each
        // parity layout once per stripe cache size asked.
        let base: Vec<Candidate> = out.drain(first..).collect();
        for cand in base {
            let bitmaps: Vec<String> = if cand.redundant() {
                need.bitmaps.clone()
            } else {
                vec![cand.bitmap.clone()]
            };
            let caches: Vec<Option<u32>> = if cand.parity() {
                need.stripe_caches.iter().copied().map(Some).collect()
            } else {
                vec![None]
            };
            for b in &bitmaps {
                for sc in &caches {
                    out.push(Candidate {
                        bitmap: b.clone(),
                        stripe_cache: *sc,
                        ..cand.clone()
                    });
                }
            }
        }
    }
    out
}

impl Candidate {
    /// `raid10 f2 512k × 8`, `btrfs raid1 × 8`.
    pub fn label(&self) -> String {
        let mut s = self.level.clone();
        if self.btrfs() {
            s.insert_str(0, "btrfs ");
        }
        if let Some(l) = self.layout.as_deref().filter(|l| *l != "left-symmetric") {
            s.push(' ');
            s.push_str(l);
        }
        if let Some(c) = &self.chunk {
            s.push(' ');
            s.push_str(c);
        }
        if self.bitmap != "none" {
            s.push_str(" bitmap");
        }
        if let Some(sc) = self.stripe_cache.filter(|&n| n != DEFAULT_STRIPE_CACHE) {
            s.push_str(&format!(" stripe_cache={sc}"));
        }
        format!("{s} × {}", self.disks)
    }

    /// md's raid5/6: parity, and md's stripe cache.
    pub fn parity(&self) -> bool {
        !self.btrfs() && matches!(self.level.as_str(), "raid5" | "raid6")
    }

    /// A btrfs profile (else an md array).
    pub fn btrfs(&self) -> bool {
        self.engine == "btrfs"
    }

    /// The file system the candidate is measured with: btrfs is its own; an md array gets
    /// `md_filesystem`.
    pub fn filesystem<'a>(&self, md_filesystem: &'a str) -> &'a str {
        if self.btrfs() {
            "btrfs"
        } else {
            md_filesystem
        }
    }

    /// Whether the level keeps working with a member gone (degraded and rebuilding
    /// states exist for it).
    pub fn redundant(&self) -> bool {
        self.level != "raid0"
    }

    /// The plan of this candidate under `w` in `state` (one case), as a plan file would
    /// write it.
    pub fn plan(
        &self,
        need: &Need,
        w: &WorkloadSpec,
        state: ArrayState,
        filesystem: &str,
    ) -> PlanBuilder {
        let mut b = Plan::builder("advise");
        b.disks("count", self.disks)
            .disks("model", need.disk.as_str());
        b.array("engine", self.engine.as_str())
            .array("level", self.level.as_str())
            .array("filesystem", self.filesystem(filesystem))
            .array("state", state.to_string());
        if let Some(l) = &self.layout {
            b.array("layout", l.as_str());
        }
        if let Some(c) = &self.chunk {
            b.array("chunk", c.as_str());
        }
        if !self.btrfs() {
            b.array("bitmap", self.bitmap.as_str());
        }
        if let Some(sc) = self.stripe_cache {
            b.array("stripe_cache", sc);
        }
        // md's rebuild governor; btrfs replace has none.
        if state == ArrayState::Rebuilding && !self.btrfs() {
            b.array("kernel", need.kernel.as_str());
        }
        b.workload("rw", w.rw.as_str())
            .workload("bs", w.bs.as_str())
            .workload("iodepth", w.iodepth)
            .workload("size", need.size.as_str())
            .workload("runtime", need.runtime.as_str());
        if let Some(m) = w.rwmixread {
            b.workload("rwmixread", m as u32);
        }
        b
    }

    /// The one case of [`Candidate::plan`], checked as the simulator would check a plan.
    pub fn case(
        &self,
        need: &Need,
        w: &WorkloadSpec,
        state: ArrayState,
    ) -> Result<Case, AdviseError> {
        let plan = self
            .plan(need, w, state, "none")
            .build(Path::new("<advise>"))
            .and_then(|p| {
                p.check_target(TargetKind::Sim, Check::Run)?;
                Ok(p)
            })
            .map_err(|e| {
                // Name the flag the field came from, with its value.
                let field = e.field.rsplit('.').next().unwrap_or("");
                let flag = match field {
                    "model" | "capacity" => "--disk",
                    "chunk" => "--chunks",
                    "bitmap" => "--bitmaps",
                    "stripe_cache" => "--stripe-caches",
                    "size" => "--size",
                    "runtime" => "--runtime",
                    "kernel" => "--kernel",
                    "rw" | "bs" | "iodepth" | "rwmixread" => "--workload",
                    _ => "",
                };
                let value = e.value.clone().unwrap_or_default();
                AdviseError::Plan(if flag.is_empty() {
                    format!("{}: {}: {}", self.label(), e.field, e.message)
                } else {
                    format!("{flag} {}: {}", value, e.message)
                })
            })?;
        Ok(plan.cases()[0].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_space_has_every_level_layout_and_chunk_that_fits() {
        let w: WorkloadSpec = "randwrite:4k:qd4".parse().unwrap();
        let need = Need::new(vec![3, 8], "hdd-7200", vec![w.clone()]);
        let c = candidates(&need);
        let count = |n: u32, level: &str| {
            c.iter()
                .filter(|c| c.disks == n && c.level == level && !c.btrfs())
                .count()
        };
        // btrfs's profiles, once each where the devices suffice: no chunk, bitmap or
        // cache to choose.
        let btrfs = |n: u32| -> Vec<String> {
            c.iter()
                .filter(|c| c.disks == n && c.btrfs())
                .map(|c| c.label())
                .collect()
        };
        assert_eq!(
            btrfs(3),
            [
                "btrfs raid0 × 3",
                "btrfs raid1 × 3",
                "btrfs raid1c3 × 3",
                "btrfs raid5 × 3"
            ]
        );
        assert_eq!(btrfs(8).len(), 7);
        let md_only = Need {
            engines: vec!["md".into()],
            ..need.clone()
        };
        assert!(candidates(&md_only).iter().all(|c| !c.btrfs()));
        // 3 chunks each: raid0 3, raid1 1, raid10 n2/f2/o2/n3 12, raid5 4 × 3, raid6 4 × 3.
        assert_eq!(
            [
                count(8, "raid0"),
                count(8, "raid1"),
                count(8, "raid10"),
                count(8, "raid5"),
                count(8, "raid6")
            ],
            [3, 1, 12, 12, 12]
        );
        // Three disks: no raid6, raid10 n3 fits.
        assert_eq!(count(3, "raid6"), 0);
        assert_eq!(count(3, "raid10"), 12);
        // Both bitmaps: every redundant layout twice, raid0 once.
        let mut both = need.clone();
        both.bitmaps = vec!["none".into(), "internal".into()];
        let c2 = candidates(&both);
        let btrfs_count = btrfs(3).len() + btrfs(8).len();
        assert_eq!(
            c2.len(),
            2 * (c.len() - btrfs_count) - 3 * 2 + btrfs_count,
            "raid0's 3 chunks × 2 disk counts once, btrfs profiles once"
        );
        assert!(c2.iter().any(|c| c.label() == "raid6 512k bitmap × 8"));
        // Stripe cache sizes: every raid5/6 layout once per size, nothing else.
        let mut sc = need.clone();
        sc.stripe_caches = vec![256, 4096];
        let c3 = candidates(&sc);
        let parity = c.iter().filter(|c| c.parity()).count();
        assert_eq!(c3.len(), c.len() + parity);
        assert!(c3
            .iter()
            .any(|c| c.label() == "raid5 512k stripe_cache=4096 × 8"));
        assert!(c3
            .iter()
            .filter(|c| !c.parity())
            .all(|c| c.stripe_cache.is_none()));
        // Every candidate is a valid plan for the simulator, in every state it has.
        for cand in c.iter().chain(&c3) {
            for state in [
                ArrayState::Healthy,
                ArrayState::Degraded,
                ArrayState::Rebuilding,
            ] {
                if state != ArrayState::Healthy && !cand.redundant() {
                    continue;
                }
                cand.case(&need, &w, state)
                    .unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}
