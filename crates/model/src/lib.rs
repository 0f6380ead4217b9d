//! raidlab's analytic model: what a case *should* do, and what is odd about a result.
//!
//! The report holds every measurement against an expectation built from per-disk
//! figures and md's geometry ([`expect()`]), and flags results whose recorded environment
//! or shape explains — or fails to explain — the number ([`anomaly`]). Pure: figures and
//! JSON in, numbers and sentences out.

pub mod anomaly;
pub mod disk;
pub mod expect;

pub use anomaly::{anomalies, erratic_imported, fleet_outliers, Anomaly, Observation, Rule};
pub use disk::PerDisk;
pub use expect::{expect, Basis, Expectation};

use raidlab_core::{Case, DiskKind, DiskModel, Figures, Level};

/// Cases share a baseline when they run the same workload on the same kind of disk: the
/// key of a case's baseline (the `single` case it is held against).
pub fn baseline_key(case: &Case) -> String {
    let d = &case.disks;
    if d.params.is_empty() {
        serde_json::json!([d.model, d.capacity, d.span, case.workload]).to_string()
    } else {
        serde_json::json!([d.model, d.capacity, d.span, d.params, case.workload]).to_string()
    }
}

/// The expectation for a case: from `baseline` (the median figures of the `single` case
/// with the same workload) when given, else from the disk model. A `single` case is held
/// against the disk model (against itself it would always match). `None` when neither
/// is known (an imported result without a disk model).
///
/// Random workloads are scaled by [`expect::utilisation`]: fio's `iodepth × numjobs`
/// I/Os, each occupying one member for a read or its write-phase members for a write,
/// land on random members and leave some idle — except on `throttle` members, whose
/// token buckets bank idle time. A host adapter's queue (`disks.host_queue`) caps the
/// member I/Os in flight.
pub fn expectation(
    case: &Case,
    model: Option<&DiskModel>,
    baseline: Option<&Figures>,
) -> Option<Expectation> {
    let mut e = unpaced(case, model, baseline)?;
    // fio's `rate_iops` holds each job to its rate: the expectation is no higher.
    let w = &case.workload;
    if let Some(rate) = w.rate_iops() {
        let cap = rate as f64 * w.numjobs as f64;
        if e.iops > cap {
            e.bw_bytes_s *= cap / e.iops;
            e.iops = cap;
            e.formula += &format!(" (fio's rate_iops: {rate} per job)");
        }
    }
    Some(e)
}

/// [`expectation`] as the array and its members allow, before fio's own rate.
fn unpaced(
    case: &Case,
    model: Option<&DiskModel>,
    baseline: Option<&Figures>,
) -> Option<Expectation> {
    let w = &case.workload;
    let a = &case.array;
    // The rules below are a healthy array's; a degraded one has no model yet (issue 17),
    // so it is neither held against one nor flagged as off it.
    if !a.state.is_healthy() {
        return None;
    }
    let members = if a.level == Level::Single {
        1
    } else {
        a.disks.max(1)
    };
    let outstanding = (w.iodepth * w.numjobs) as f64;
    let per_disk_qd = outstanding / members as f64;
    let data = if a.level == Level::Single {
        1
    } else {
        a.data_disks().max(1)
    };
    let from_model = model.map(|m| {
        let region = w.size.0 as f64 / data as f64;
        PerDisk::from_model(m, w, per_disk_qd, region / m.capacity().0.max(1) as f64)
    });
    let measured = baseline
        .filter(|_| a.level != Level::Single)
        .and_then(|b| PerDisk::from_baseline(b, w, from_model));
    let e = match (measured, from_model) {
        (Some(d), _) => expect(case, &d, Basis::Baseline),
        (None, Some(d)) => expect(case, &d, Basis::DiskModel),
        (None, None) => return None,
    };
    if !w.rw.is_random() {
        return Some(e);
    }
    // A token bucket banks the tokens of its idle time (up to its burst) and spends them
    // when I/O comes: a throttled member loses nothing to idling, a mechanical one does.
    if model.is_some_and(|m| matches!(m.kind, DiskKind::Throttle(_))) {
        return Some(e);
    }
    let rf = w.rw.read_fraction(w.rwmixread);
    let per_io = rf + (1.0 - rf) * expect::write_cost(a).1 as f64;
    let wanted = outstanding * per_io;
    let cap = case
        .disks
        .host_queue
        .filter(|&slots| (slots as f64) < wanted);
    let in_flight = cap.map_or(wanted, |slots| slots as f64);
    let mut e = e.with_utilisation(expect::utilisation(members, in_flight));
    if let Some(slots) = cap {
        // Say why so few members are busy: the report shows the formula.
        e.formula += &format!(" (host_queue: {slots} member I/Os in flight, not {wanted:.0})");
    }
    Some(e)
}

/// A fio-style per-second log (`msec, value, direction, bs, offset` per line) as
/// (msec, sum of values, lines) per time stamp, in order. Unparseable lines are skipped.
fn per_second(log: &str) -> Vec<(u64, f64, u32)> {
    let mut buckets: Vec<(u64, f64, u32)> = Vec::new();
    for line in log.lines() {
        let mut f = line.split(',').map(str::trim);
        let (Some(Ok(ms)), Some(Ok(v))) = (
            f.next().map(str::parse::<u64>),
            f.next().map(str::parse::<f64>),
        ) else {
            continue;
        };
        match buckets.last_mut() {
            Some((t, sum, n)) if *t == ms => {
                *sum += v;
                *n += 1;
            }
            _ => buckets.push((ms, v, 1)),
        }
    }
    buckets
}

/// Per-second IOPS (reads and writes summed) from a fio-style `iops.log`.
pub fn iops_per_second(log: &str) -> Vec<f64> {
    per_second(log).into_iter().map(|(_, v, _)| v).collect()
}

/// Mean latency (ms) per second from fio's `write_lat_log` with `log_avg_msec` (values in
/// ns; the directions of one second averaged).
pub fn lat_ms_per_second(log: &str) -> Vec<f64> {
    per_second(log)
        .into_iter()
        .map(|(_, v, n)| v / n as f64 / 1e6)
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    pub(crate) use crate::expect::tests::case;
    use raidlab_core::{DirectionFigures, Rw};

    #[test]
    fn lat_log_averages_directions_per_second_in_ms() {
        let log =
            "1000, 2000000, 0, 4096, 0\n1000, 4000000, 1, 4096, 0\n2000, 5000000, 0, 4096, 0\n";
        assert_eq!(lat_ms_per_second(log), vec![3.0, 5.0]);
    }

    #[test]
    fn throttled_members_lose_nothing_to_idling_mechanical_ones_do() {
        let t = DiskModel::preset("throttle-75").unwrap();
        let c = case(Level::Raid0, None, 4, Rw::RandWrite, 4096);
        let e = expectation(&c, Some(&t), None).unwrap();
        assert_eq!(e.utilisation, 1.0);
        assert!((e.iops - 300.0).abs() < 1.0, "{}", e.iops);
        let h = DiskModel::preset("hdd-7200").unwrap();
        assert!(expectation(&c, Some(&h), None).unwrap().utilisation < 1.0);
    }

    #[test]
    fn a_host_queue_caps_the_member_ios_in_flight() {
        let m = DiskModel::preset("hdd-7200-500g-2010").unwrap();
        let mut c = case(Level::Raid10, None, 6, Rw::RandWrite, 4096);
        let free = expectation(&c, Some(&m), None).unwrap();
        assert!((free.utilisation - expect::utilisation(6, 8.0)).abs() < 1e-12);
        c.disks.host_queue = Some(3);
        let capped = expectation(&c, Some(&m), None).unwrap();
        assert!((capped.utilisation - expect::utilisation(6, 3.0)).abs() < 1e-12);
        assert!(
            capped
                .formula
                .ends_with("(host_queue: 3 member I/Os in flight, not 8)"),
            "{}",
            capped.formula
        );
        c.disks.host_queue = Some(16);
        let roomy = expectation(&c, Some(&m), None).unwrap();
        assert_eq!(
            roomy.formula, free.formula,
            "a queue that does not bind is not mentioned"
        );
        assert!(
            capped.iops < free.iops * 0.7,
            "{} vs {}",
            capped.iops,
            free.iops
        );
    }

    #[test]
    fn iops_log_sums_directions_per_second() {
        let log = "1000, 476, 0, 4096, 0\n1000, 24, 1, 4096, 0\n2000, 480, 0, 4096, 0\njunk\n";
        assert_eq!(iops_per_second(log), vec![500.0, 480.0]);
    }

    #[test]
    fn baseline_wins_over_the_disk_model_except_for_the_baseline_itself() {
        let m = DiskModel::preset("hdd-7200-500g-2010").unwrap();
        let c = case(Level::Raid5, None, 6, Rw::RandWrite, 4096);
        let base = Figures {
            write: Some(DirectionFigures {
                iops: 75.0,
                bw_bytes_s: 75.0 * 4096.0,
                ..Default::default()
            }),
            ..Default::default()
        };
        let e = expectation(&c, Some(&m), Some(&base)).unwrap();
        assert_eq!(e.basis, Basis::Baseline);
        // Reads for read-modify-write come from the disk model, writes measured (75);
        // 4 writes × 2 members each land on 6 members.
        let span = c.workload.size.0 as f64 / 5.0 / 500e9;
        let r = PerDisk::from_model(&m, &c.workload, 4.0 / 6.0, span).read_iops;
        assert!((e.saturated_iops - 6.0 / (2.0 / r + 2.0 / 75.0)).abs() < 1e-9);
        assert!((e.utilisation - expect::utilisation(6, 8.0)).abs() < 1e-12);
        let e = expectation(&c, Some(&m), None).unwrap();
        assert_eq!(e.basis, Basis::DiskModel);
        let single = case(Level::Single, None, 1, Rw::RandWrite, 4096);
        assert_eq!(
            expectation(&single, Some(&m), Some(&base)).unwrap().basis,
            Basis::DiskModel
        );
        assert_eq!(expectation(&c, None, None), None);
        assert_eq!(baseline_key(&c), baseline_key(&single));
    }
}
