//! The array model: a case's expected IOPS and bandwidth from per-disk figures, md's
//! exact I/O cost per write, read scaling over members and the sequential rules of
//! `md-and-disks.md`.
//!
//! Held against every measurement, it turns a table of numbers into a statement: "this is
//! what the geometry predicts; the result is N % off". It is deliberately simple — one
//! formula per level, written out in `docs/design.md` — so a deviation points at the
//! system, not at the model.

use crate::disk::PerDisk;
use raidlab_core::{ArraySpec, Case, Headline, Layout, Level, Rw};
use serde::Serialize;

/// Bytes in a MiB: the report speaks MiB/s throughout.
const MIB: f64 = 1_048_576.0;

/// Where the per-disk figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The experiment's `single` case with the same workload.
    Baseline,
    /// The disk model's parameters.
    DiskModel,
}

impl Basis {
    pub fn name(self) -> &'static str {
        match self {
            Basis::Baseline => "baseline",
            Basis::DiskModel => "disk-model",
        }
    }
}

/// What the model expects of one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expectation {
    /// fio I/Os per second, reads and writes together.
    pub iops: f64,
    /// Bytes per second, reads and writes together.
    pub bw_bytes_s: f64,
    pub basis: Basis,
    /// The figure the workload is judged by (deviation, the off-model sentence).
    pub judged_by: Headline,
    /// The formula with its numbers, for the report.
    pub formula: String,
    /// IOPS with every member busy all the time (`iops` = this × `utilisation`).
    pub saturated_iops: f64,
    /// Expected share of time a member is busy given the outstanding I/Os (1 for
    /// sequential workloads), see [`utilisation`].
    pub utilisation: f64,
}

/// Share of members busy when `q` member I/Os are outstanding at random over `n`
/// members: the expected share of bins a ball lands in, 1 − (1 − 1/n)^q. The 2013 seed's
/// QD4 on six disks keeps only 52 % of the members busy for reads (42 % behind its
/// three-command host queue).
pub fn utilisation(n: u32, q: f64) -> f64 {
    if n <= 1 {
        return 1.0;
    }
    1.0 - (1.0 - 1.0 / n as f64).powf(q.max(1.0))
}

impl Expectation {
    /// The same expectation with members busy only `u` of the time.
    pub fn with_utilisation(mut self, u: f64) -> Expectation {
        if u < 1.0 {
            self.iops = self.saturated_iops * u;
            self.bw_bytes_s *= u;
            self.utilisation = u;
            self.formula = format!(
                "{} × {:.2} members busy = {:.1} IOPS",
                self.formula, u, self.iops
            );
        }
        self
    }

    /// measured / expected − 1, on the figure the workload is judged by.
    pub fn deviation(&self, measured_iops: f64, measured_bw_bytes_s: f64) -> Option<f64> {
        let (m, e) = if self.judged_by == Headline::Bandwidth {
            (measured_bw_bytes_s, self.bw_bytes_s)
        } else {
            (measured_iops, self.iops)
        };
        (e > 0.0 && e.is_finite()).then(|| m / e - 1.0)
    }
}

/// Member reads and writes md issues for one random write smaller than a chunk
/// (md-and-disks.md, "md-exact"): raid0 1W; raid1/raid10 one write per copy; raid5 on 3
/// disks 1R+2W (reconstruct-write reads the other data block), on ≥ 4 disks 2R+2W
/// (read-modify-write); raid6 (reconstruct-write) on 4 disks 1R+3W, on 5 disks 2R+3W — N I/Os up
/// to 6 members, then 3R+3W.
pub fn write_cost(a: &ArraySpec) -> (u32, u32) {
    let n = a.disks;
    match a.level {
        Level::Single | Level::Raid0 => (0, 1),
        Level::Raid5 if n <= 3 => (1, 2),
        Level::Raid5 => (2, 2),
        // rcw on raid6: read the N-3 data blocks not written, write data + P + Q.
        Level::Raid6 if n < 6 => (n - 3, 3),
        Level::Raid6 => (3, 3),
        _ => (0, a.copies()),
    }
}

/// Members whose bandwidth adds up for a sequential stream, reading and writing.
fn sequential_streams(a: &ArraySpec, numjobs: u32) -> (f64, f64) {
    let n = a.disks as f64;
    let copies = a.copies() as f64;
    let jobs = numjobs.max(1) as f64;
    match (a.level, a.layout) {
        (Level::Single, _) => (1.0, 1.0),
        (Level::Raid0, _) => (n, n),
        // far: reads use the first band of every member, like raid0.
        (Level::Raid10, Some(Layout::Far(_))) => (n, n / copies),
        // near/offset: one reader gets N/copies members, more readers up to N.
        (Level::Raid10, _) => ((jobs * n / copies).min(n), n / copies),
        (Level::Raid5 | Level::Raid6, _) => {
            let data = a.data_disks() as f64;
            (data, data)
        }
        // raid1 and btrfs copies: one stream per reader, every copy written.
        _ => (jobs.min(n), n / copies),
    }
}

/// The expectation for a case given its per-disk figures.
pub fn expect(case: &Case, d: &PerDisk, basis: Basis) -> Expectation {
    let a = &case.array;
    let w = &case.workload;
    let bs = w.bs.0 as f64;
    let n = if a.level == Level::Single { 1 } else { a.disks };
    let rf = w.rw.read_fraction(w.rwmixread);
    let wf = 1.0 - rf;
    if w.rw.is_random() {
        let (wr, ww) = write_cost(a);
        // Member-seconds one fio I/O costs, spread over n members.
        let per_io = rf / d.read_iops + wf * (wr as f64 / d.read_iops + ww as f64 / d.write_iops);
        let iops = n as f64 / per_io;
        let formula = format!(
            "{n} members / ({rf:.2} × 1/{r:.1} + {wf:.2} × ({wr}R/{r:.1} + {ww}W/{wi:.1})) = {iops:.1} IOPS",
            r = d.read_iops,
            wi = d.write_iops
        );
        Expectation {
            iops,
            bw_bytes_s: iops * bs,
            basis,
            judged_by: Headline::of(w.bs),
            formula,
            saturated_iops: iops,
            utilisation: 1.0,
        }
    } else {
        let (sr, sw) = sequential_streams(a, w.numjobs);
        let (rb, wb) = (sr * d.read_bw, sw * d.write_bw);
        let bw = 1.0 / (rf / rb + wf / wb);
        let formula = match w.rw {
            // MiB/s, as every table and chart of the report.
            Rw::Read => format!(
                "{sr} × {:.1} MiB/s = {:.1} MiB/s",
                d.read_bw / MIB,
                bw / MIB
            ),
            Rw::Write => format!(
                "{sw} × {:.1} MiB/s = {:.1} MiB/s",
                d.write_bw / MIB,
                bw / MIB
            ),
            _ => format!(
                "1 / ({rf:.2}/({sr} × {:.1}) + {wf:.2}/({sw} × {:.1})) = {:.1} MiB/s",
                d.read_bw / MIB,
                d.write_bw / MIB,
                bw / MIB
            ),
        };
        Expectation {
            iops: bw / bs,
            bw_bytes_s: bw,
            basis,
            judged_by: Headline::of(w.bs),
            formula,
            saturated_iops: bw / bs,
            utilisation: 1.0,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Equal to 1e-9 relative: the formulas divide, so 450 may come out as 449.99999999999994.
    macro_rules! assert_close {
        ($a:expr, $b:expr) => {
            assert_close!($a, $b, "")
        };
        ($a:expr, $b:expr, $($msg:tt)+) => {{
            let (a, b): (f64, f64) = ($a, $b);
            assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} != {b}: {}", format!($($msg)+));
        }};
    }
    use raidlab_core::{Bitmap, Bytes, DiskSet, Engine, Filesystem, Resync, WriteCache};

    pub(crate) fn spec(level: Level, layout: Option<Layout>, disks: u32) -> ArraySpec {
        ArraySpec {
            engine: Engine::Md,
            level,
            layout: layout.or(level.default_layout()),
            chunk: level.has_chunk().then_some(Bytes::kib(512)),
            disks,
            filesystem: Filesystem::Xfs,
            write_cache: WriteCache::Off,
            bitmap: Bitmap::None,
            resync: Resync::AssumeClean,
            stripe_cache: None,
            state: Default::default(),
            failed: None,
            rebuild: None,
        }
    }

    pub(crate) fn case(level: Level, layout: Option<Layout>, disks: u32, rw: Rw, bs: u64) -> Case {
        let w = crate::disk::tests::workload(rw, bs, 4);
        let disks_set = DiskSet {
            count: disks,
            model: Some("hdd-7200-500g-2010".into()),
            model_file: None,
            capacity: None,
            span: None,
            devices: vec![],
            params: Default::default(),
            host_queue: None,
            scheduler: None,
        };
        Case::new(spec(level, layout, disks), disks_set, w)
    }

    const FLAT75: PerDisk = PerDisk {
        read_iops: 75.0,
        write_iops: 75.0,
        read_bw: 75.0 * 4096.0,
        write_bw: 75.0 * 4096.0,
    };

    fn iops(level: Level, disks: u32, rw: Rw) -> f64 {
        expect(
            &case(level, None, disks, rw, 4096),
            &FLAT75,
            Basis::Baseline,
        )
        .iops
    }

    #[test]
    fn the_2013_seed_six_disks_at_75_iops_random_writes() {
        assert_close!(iops(Level::Raid0, 6, Rw::RandWrite), 450.0);
        assert_close!(iops(Level::Raid10, 6, Rw::RandWrite), 225.0);
        assert_close!(iops(Level::Raid5, 6, Rw::RandWrite), 112.5);
        assert_close!(iops(Level::Raid6, 6, Rw::RandWrite), 75.0);
    }

    #[test]
    fn random_reads_scale_with_every_member() {
        for l in [
            Level::Raid0,
            Level::Raid10,
            Level::Raid5,
            Level::Raid6,
            Level::Raid1,
        ] {
            assert_close!(iops(l, 6, Rw::RandRead), 450.0, "{l}");
        }
        assert_close!(iops(Level::Single, 1, Rw::RandRead), 75.0);
    }

    #[test]
    fn md_exact_costs_of_small_arrays() {
        // raid5 on 3 disks: 1R+2W = 3 I/Os → 3 × 75 / 3.
        assert_close!(iops(Level::Raid5, 3, Rw::RandWrite), 75.0);
        // raid6 on 4 disks: 4 I/Os; on 5 disks: 5 I/Os.
        assert_close!(iops(Level::Raid6, 4, Rw::RandWrite), 75.0);
        assert_close!(iops(Level::Raid6, 5, Rw::RandWrite), 75.0);
        assert_eq!(write_cost(&spec(Level::Raid6, None, 5)), (2, 3));
        // raid1 on 2 disks: every write to both.
        assert_close!(iops(Level::Raid1, 2, Rw::RandWrite), 75.0);
        // A 50/50 random mix on raid5 × 6: 6 / (0.5/75 + 0.5 × 4/75) = 180.
        assert!((iops(Level::Raid5, 6, Rw::RandRw) - 180.0).abs() < 1e-9);
    }

    #[test]
    fn sequential_rules() {
        let d = PerDisk {
            read_bw: 268e6,
            write_bw: 268e6,
            read_iops: 268e6 / 1048576.0,
            write_iops: 268e6 / 1048576.0,
        };
        let bw = |l, lay, rw| {
            expect(&case(l, lay, 4, rw, 1 << 20), &d, Basis::Baseline).bw_bytes_s / 1e6
        };
        assert_close!(bw(Level::Raid0, None, Rw::Read), 4.0 * 268.0);
        assert_close!(bw(Level::Raid5, None, Rw::Read), 3.0 * 268.0);
        assert_close!(
            bw(Level::Raid5, None, Rw::Write),
            3.0 * 268.0,
            "full stripe: n/(n-p) cost"
        );
        assert_close!(bw(Level::Raid6, None, Rw::Write), 2.0 * 268.0);
        assert_close!(
            bw(Level::Raid10, Some(Layout::Near(2)), Rw::Read),
            2.0 * 268.0
        );
        assert_close!(
            bw(Level::Raid10, Some(Layout::Far(2)), Rw::Read),
            4.0 * 268.0
        );
        assert_close!(
            bw(Level::Raid10, Some(Layout::Far(2)), Rw::Write),
            2.0 * 268.0
        );
        assert_close!(
            bw(Level::Raid1, None, Rw::Read),
            268.0,
            "one stream is not accelerated"
        );
        // The formula speaks MiB/s, as the report's tables and charts do (issue 19).
        let f = expect(
            &case(Level::Raid0, None, 4, Rw::Read, 1 << 20),
            &d,
            Basis::Baseline,
        )
        .formula;
        assert_eq!(f, "4 × 255.6 MiB/s = 1022.3 MiB/s");
    }

    #[test]
    fn utilisation_of_outstanding_ios() {
        assert_eq!(utilisation(1, 1.0), 1.0);
        assert!((utilisation(6, 4.0) - (1.0 - (5.0f64 / 6.0).powi(4))).abs() < 1e-12);
        assert!(utilisation(4, 64.0) > 0.999);
        let e = expect(
            &case(Level::Raid0, None, 6, Rw::RandRead, 4096),
            &FLAT75,
            Basis::Baseline,
        )
        .with_utilisation(0.5);
        assert_close!(e.iops, 225.0);
        assert_close!(e.saturated_iops, 450.0);
    }

    #[test]
    fn deviation_is_measured_over_expected_minus_one() {
        let e = expect(
            &case(Level::Raid5, None, 6, Rw::RandWrite, 4096),
            &FLAT75,
            Basis::Baseline,
        );
        assert!(e.deviation(112.5, 0.0).unwrap().abs() < 1e-12);
        assert!((e.deviation(90.0, 0.0).unwrap() + 0.2).abs() < 1e-12);
        assert!(e.formula.contains("2R/75.0 + 2W/75.0"), "{}", e.formula);
    }
}
