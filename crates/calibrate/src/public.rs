//! Public measurements of named drives, each with its source: what the fidelity suite
//! holds the simulator and the fit to. (The fio-plot project's `benchmark_data` is kept
//! out on purpose: it is raidlab's independent check, never a calibration input.)

use raidlab_core::Bytes;

/// 4 KiB random-read IOPS of one drive by queue depth (one job), over its surface.
pub struct PublicCurve {
    pub drive: &'static str,
    pub source: &'static str,
    /// The preset of its class, and its capacity.
    pub preset: &'static str,
    pub capacity: Bytes,
    /// (queue depth, IOPS).
    pub points: &'static [(u32, f64)],
}

/// Seagate ST2000DM006 (BarraCuda, 2 TB, 7200 RPM, 64 MB cache).
pub const ST2000DM006: PublicCurve = PublicCurve {
    drive: "Seagate ST2000DM006",
    source: "ublk-disksim open measurements, github.com/lumir-sliva/ublk-disksim \
             docs/img/data/qd.tsv (fio 3.43, one job, a 4 GiB file spread over the platter \
             of a 98 %-full NTFS volume)",
    preset: "hdd-7200",
    capacity: Bytes(2_000_000_000_000),
    points: &[
        (1, 57.6),
        (2, 64.5),
        (4, 71.2),
        (8, 78.6),
        (16, 86.3),
        (32, 93.6),
    ],
};

/// Every public curve the suite knows.
pub const CURVES: [&PublicCurve; 1] = [&ST2000DM006];
