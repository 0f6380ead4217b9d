//! Per-disk figures: what one member does alone for a workload.
//!
//! The array model multiplies these by md's geometry and I/O costs. They come from the
//! experiment's own per-disk baseline (a `level = "single"` case with the same workload)
//! when there is one — a measurement beats a datasheet — or else from the disk model's
//! parameters, with the formulas below (also in `docs/design.md`).

use raidlab_core::disk::{HddParams, SsdParams, ThrottleParams};
use raidlab_core::{DiskKind, DiskModel, Figures, Workload};
use serde::Serialize;

/// One member's figures for one workload shape. IOPS count fio-sized I/Os; bandwidth is
/// bytes per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerDisk {
    pub read_iops: f64,
    pub write_iops: f64,
    pub read_bw: f64,
    pub write_bw: f64,
}

/// NCQ gain over queue depth 1 for a whole-disk random span (md-and-disks.md: ×1.2 at
/// QD8, ×1.5 at QD16, ×1.8 at QD32, ≈×2 at QD64+), interpolated linearly in log2(QD).
const NCQ: [(f64, f64); 5] = [
    (1.0, 1.0),
    (8.0, 1.2),
    (16.0, 1.5),
    (32.0, 1.8),
    (64.0, 2.0),
];

/// Random-IOPS gain of command queueing at `qd` outstanding I/Os per disk.
pub fn ncq_gain(qd: f64) -> f64 {
    let qd = qd.max(1.0);
    for pair in NCQ.windows(2) {
        let ((q0, g0), (q1, g1)) = (pair[0], pair[1]);
        if qd <= q1 {
            let t = (qd.log2() - q0.log2()) / (q1.log2() - q0.log2());
            return g0 + (g1 - g0) * t;
        }
    }
    NCQ[NCQ.len() - 1].1
}

impl PerDisk {
    /// From a disk model. `per_disk_qd` is the outstanding I/Os each member sees
    /// (fio's iodepth × numjobs spread over the members); `span` the share of the disk's
    /// capacity the test region covers on each member (short spans seek less).
    pub fn from_model(model: &DiskModel, w: &Workload, per_disk_qd: f64, span: f64) -> PerDisk {
        let bs = w.bs.0 as f64;
        let random = w.rw.is_random();
        let (read_iops, write_iops, read_bw, write_bw) = match &model.kind {
            DiskKind::Hdd(p) => hdd(p, bs, random, per_disk_qd, span),
            DiskKind::Ssd(p) => ssd(p, bs, random, per_disk_qd),
            DiskKind::Throttle(p) => throttle(p, bs, per_disk_qd),
        };
        PerDisk {
            read_iops,
            write_iops,
            read_bw,
            write_bw,
        }
    }

    /// From a measured single-disk baseline. A direction the baseline did not measure
    /// (a read-only test has no write figure) is taken from `fallback` (the disk model)
    /// when there is one, else from the measured direction.
    pub fn from_baseline(
        base: &Figures,
        w: &Workload,
        fallback: Option<PerDisk>,
    ) -> Option<PerDisk> {
        let bs = w.bs.0 as f64;
        let r = base.read.as_ref().filter(|d| d.iops > 0.0);
        let wr = base.write.as_ref().filter(|d| d.iops > 0.0);
        let (ri, rb) = r.map(|d| (d.iops, d.bw_bytes_s)).unzip();
        let (wi, wb) = wr.map(|d| (d.iops, d.bw_bytes_s)).unzip();
        let pick = |m: Option<f64>, fb: Option<f64>, other: Option<f64>| m.or(fb).or(other);
        Some(PerDisk {
            read_iops: pick(ri, fallback.map(|f| f.read_iops), wi)?,
            write_iops: pick(wi, fallback.map(|f| f.write_iops), ri)?,
            read_bw: pick(rb, fallback.map(|f| f.read_bw), wb).unwrap_or(bs * ri.or(wi)?),
            write_bw: pick(wb, fallback.map(|f| f.write_bw), rb).unwrap_or(bs * wi.or(ri)?),
        })
    }
}

/// Average seek within a region covering `span` (0..=1) of the stroke: the mean random
/// distance is a third of the region, and on the Ruemmler–Wilkes curve the simulator
/// uses (`t2t + (avg − t2t)·√(d / (N/3))`) that is `t2t + (avg − t2t)·√span`.
pub fn span_seek(p: &HddParams, span: f64) -> f64 {
    let (t2t, avg) = (p.track_to_track.as_secs_f64(), p.avg_seek.as_secs_f64());
    t2t + (avg - t2t) * span.clamp(0.0, 1.0).sqrt()
}

/// Mechanical disk. Random: one I/O costs controller overhead + seek over the region
/// ([`span_seek`]) + half a revolution + the transfer at the mean of outer and inner
/// media rates (writes add the write settle). With q queued commands the drive does the
/// better of two things: the published whole-disk NCQ gain ([`ncq_gain`]), or
/// shortest-positioning-first cutting the rotational wait to one revolution / (q + 1)
/// (what dominates on short spans). Sequential: the outer zone's media rate (the test
/// region starts at the array's start), capped by the interface.
fn hdd(p: &HddParams, bs: f64, random: bool, qd: f64, span: f64) -> (f64, f64, f64, f64) {
    let rev = 60.0 / p.rpm as f64;
    let mean_rate = (p.outer_mb_s + p.inner_mb_s) / 2.0 * 1e6;
    if random {
        let q = qd.clamp(1.0, p.queue_depth as f64);
        let fixed = p.overhead.as_secs_f64() + span_seek(p, span) + bs / mean_rate;
        let iops = |settle: f64| {
            let one = 1.0 / (fixed + settle + rev / 2.0);
            let sorted = 1.0 / (fixed + settle + rev / (q + 1.0));
            (one * ncq_gain(q)).max(sorted)
        };
        let (ri, wi) = (iops(0.0), iops(p.write_settle.as_secs_f64()));
        (ri, wi, ri * bs, wi * bs)
    } else {
        let bw = p.outer_mb_s.min(p.interface_mb_s) * 1e6;
        (bw / bs, bw / bs, bw, bw)
    }
}

/// Flash: `min(QD, parallel units)` requests in flight, each taking the device latency,
/// capped by the device's bandwidth; sequential: the bandwidth caps.
fn ssd(p: &SsdParams, bs: f64, random: bool, qd: f64) -> (f64, f64, f64, f64) {
    let (rb, wb) = (p.read_mb_s * 1e6, p.write_mb_s * 1e6);
    if random {
        let par = qd.max(1.0).min(p.parallel_units as f64);
        let ri = (par / p.read_latency.as_secs_f64()).min(rb / bs);
        let wi = (par / p.write_latency.as_secs_f64()).min(wb / bs);
        (ri, wi, ri * bs, wi * bs)
    } else {
        (rb / bs, wb / bs, rb, wb)
    }
}

/// Token bucket: the IOPS limit (per direction if set, else the total; a request above
/// `iops_size` counts as its share of operations), the byte limit, and `QD / latency` of
/// the backing store, whichever is lowest.
fn throttle(p: &ThrottleParams, bs: f64, qd: f64) -> (f64, f64, f64, f64) {
    let units = p.operations(bs);
    let lim = |x: u32| {
        if x > 0 {
            x as f64 / units
        } else {
            f64::INFINITY
        }
    };
    let total = lim(p.iops_total);
    let service = qd.max(1.0) / p.latency.as_secs_f64().max(1e-9);
    let bytes = if p.bps_total > 0 {
        p.bps_total as f64 / bs
    } else {
        f64::INFINITY
    };
    let ri = lim(p.iops_read).min(total).min(service).min(bytes);
    let wi = lim(p.iops_write).min(total).min(service).min(bytes);
    (ri, wi, ri * bs, wi * bs)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use raidlab_core::{Bytes, DirectionFigures, Nanos, Rw};

    pub(crate) fn workload(rw: Rw, bs: u64, iodepth: u32) -> Workload {
        Workload {
            rw,
            bs: Bytes(bs),
            iodepth,
            numjobs: 1,
            size: Bytes::gib(10),
            offset: Bytes(0),
            runtime: Nanos::from_secs_f64(60.0),
            ramp: Nanos(0),
            rwmixread: 50,
            ioengine: "libaio".into(),
            direct: true,
            fio: Default::default(),
        }
    }

    #[test]
    fn a_2010_7200_rpm_disk_does_about_75_random_iops() {
        // 0.16 ms overhead + 8.5 ms seek + 4.17 ms half revolution + 4096 B / 95 MB/s.
        let m = DiskModel::preset("hdd-7200-500g-2010").unwrap();
        let d = PerDisk::from_model(&m, &workload(Rw::RandRead, 4096, 1), 1.0, 1.0);
        let expected = 1.0 / (0.00016 + 0.0085 + 30.0 / 7200.0 + 4096.0 / 95e6);
        assert!((d.read_iops - expected).abs() < 1e-9);
        assert!((d.read_iops - 77.7).abs() < 0.1, "{}", d.read_iops);
        assert!(d.write_iops < d.read_iops, "writes settle longer");
        // Whole disk at QD32: the NCQ table's ×1.8 beats rotational sorting.
        let d = PerDisk::from_model(&m, &workload(Rw::RandRead, 4096, 32), 32.0, 1.0);
        assert!((d.read_iops - 1.8 * expected).abs() < 1e-9);
    }

    #[test]
    fn a_short_span_seeks_less_and_sorting_cuts_rotation() {
        let m = DiskModel::preset("hdd-7200-16t-2019").unwrap();
        let DiskKind::Hdd(p) = &m.kind else { panic!() };
        assert_eq!(span_seek(p, 1.0), 0.0085);
        assert!((span_seek(p, 0.25) - (0.0008 + 0.0077 * 0.5)).abs() < 1e-12);
        // The 2019 seed: 30 GB at the start of a 16 TB disk, QD 32 × 4 jobs; measured 550.
        let w = workload(Rw::RandRead, 4096, 32);
        let d = PerDisk::from_model(&m, &w, 128.0, 30e9 / 16e12);
        let t = 0.00025 + span_seek(p, 30e9 / 16e12) + (60.0 / 7200.0) / 33.0 + 4096.0 / 200e6;
        assert!((d.read_iops - 1.0 / t).abs() < 1e-9);
        assert!((d.read_iops - 550.0).abs() < 100.0, "{}", d.read_iops);
    }

    #[test]
    fn sequential_hdd_is_the_outer_zone_rate() {
        let m = DiskModel::preset("hdd-7200-16t-2019").unwrap();
        let d = PerDisk::from_model(&m, &workload(Rw::Read, 1 << 20, 32), 32.0, 1.0);
        assert_eq!(d.read_bw, 270e6);
        assert_eq!(d.read_iops, 270e6 / 1048576.0);
    }

    #[test]
    fn ncq_gain_follows_the_published_points() {
        assert_eq!(ncq_gain(0.5), 1.0);
        assert_eq!(ncq_gain(1.0), 1.0);
        assert!((ncq_gain(8.0) - 1.2).abs() < 1e-12);
        assert!((ncq_gain(32.0) - 1.8).abs() < 1e-12);
        assert_eq!(ncq_gain(1000.0), 2.0);
        assert!(ncq_gain(4.0) > 1.0 && ncq_gain(4.0) < 1.2);
    }

    #[test]
    fn ssd_and_throttle_limits() {
        let m = DiskModel::preset("throttle-75").unwrap();
        let d = PerDisk::from_model(&m, &workload(Rw::RandWrite, 4096, 4), 4.0, 1.0);
        assert_eq!(d.write_iops, 75.0);
        // qemu's iops-size: a 1 MiB request counts as sixteen of 64 KiB, a 4 KiB one as one.
        let sized = m
            .clone()
            .with_params(&[("iops_size".to_string(), "64k".to_string())].into())
            .unwrap();
        let d = PerDisk::from_model(&sized, &workload(Rw::Write, 1 << 20, 4), 4.0, 1.0);
        assert_eq!(d.write_iops, 75.0 / 16.0);
        let d = PerDisk::from_model(&sized, &workload(Rw::RandRead, 4096, 4), 4.0, 1.0);
        assert_eq!(d.read_iops, 75.0);
        let m = DiskModel::preset("ssd-sata").unwrap();
        let d = PerDisk::from_model(&m, &workload(Rw::RandRead, 4096, 1), 1.0, 1.0);
        assert!((d.read_iops - 1.0 / 85e-6).abs() < 1e-6);
        let d = PerDisk::from_model(&m, &workload(Rw::RandRead, 4096, 64), 64.0, 1.0);
        assert!((d.read_iops - 8.0 / 85e-6).abs() < 1e-6, "8 parallel units");
    }

    #[test]
    fn baseline_fills_a_missing_direction_from_the_fallback() {
        let f = Figures {
            write: Some(DirectionFigures {
                iops: 80.0,
                bw_bytes_s: 80.0 * 4096.0,
                ..Default::default()
            }),
            ..Default::default()
        };
        let w = workload(Rw::RandWrite, 4096, 4);
        let d = PerDisk::from_baseline(&f, &w, None).unwrap();
        assert_eq!((d.read_iops, d.write_iops), (80.0, 80.0));
        let fb = PerDisk {
            read_iops: 90.0,
            write_iops: 1.0,
            read_bw: 1.0,
            write_bw: 1.0,
        };
        let d = PerDisk::from_baseline(&f, &w, Some(fb)).unwrap();
        assert_eq!((d.read_iops, d.write_iops), (90.0, 80.0));
        assert_eq!(PerDisk::from_baseline(&Figures::default(), &w, None), None);
    }
}
