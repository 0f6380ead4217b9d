//! The per-disk baseline, the 2019 write-up's first step: before any array is built,
//! fio reads each member alone (4 KiB random at queue depth 32, then 1 MiB sequential),
//! read-only. Members more than 15 % from the median are named: an array is only as even
//! as its members, and a slow disk explains a slow array better than any model.

use crate::exec;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// The file in the results directory.
pub const FILE: &str = "baseline.json";

/// A member more than this far from the median is "not uniform".
pub const TOLERANCE: f64 = 0.15;

/// One member's baseline.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Member {
    pub device: String,
    pub serial: Option<String>,
    pub randread_iops: f64,
    pub read_mib_s: f64,
}

/// The baseline of every member, and the ones that stray.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Baseline {
    pub runtime_s: u64,
    pub members: Vec<Member>,
    /// Sentences naming each member off the median, with by how much.
    pub warnings: Vec<String>,
}

/// Members whose figures stray more than [`TOLERANCE`] from the median.
pub fn outliers(members: &[Member]) -> Vec<String> {
    let mut out = Vec::new();
    for (what, unit, get) in [
        (
            "random read",
            "IOPS",
            (|m: &Member| m.randread_iops) as fn(&Member) -> f64,
        ),
        ("sequential read", "MiB/s", |m: &Member| m.read_mib_s),
    ] {
        let values: Vec<f64> = members.iter().map(get).collect();
        let med = raidlab_core::stats::median(&values).unwrap_or(0.0);
        if med <= 0.0 {
            continue;
        }
        for m in members {
            let dev = get(m) / med - 1.0;
            if dev.abs() > TOLERANCE {
                out.push(format!(
                    "{} is {:+.0} % off the members' median in {what} ({:.0} vs {:.0} {unit}): members are not uniform, and the array will follow its slowest disk",
                    m.device,
                    dev * 100.0,
                    get(m),
                    med
                ));
            }
        }
    }
    out
}

/// Run fio read-only on one device and return (IOPS, MiB/s) of its reads.
fn measure(
    device: &str,
    rw: &str,
    bs: &str,
    runtime_s: u64,
    work: &Path,
    stop: &AtomicBool,
) -> Result<(f64, f64), String> {
    let out = work.join(format!("baseline-{}-{rw}.json", device.replace('/', "_")));
    let argv: Vec<String> = [
        "fio",
        "--readonly",
        "--name=baseline",
        &format!("--filename={device}"),
        &format!("--rw={rw}"),
        &format!("--bs={bs}"),
        "--iodepth=32",
        "--ioengine=libaio",
        "--direct=1",
        "--time_based=1",
        &format!("--runtime={runtime_s}"),
        "--norandommap=1",
        "--output-format=json",
        &format!("--output={}", out.display()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let log = work.join("baseline.log");
    let mut child = exec::spawn(&argv, &log)?;
    let (status, stopped) = exec::wait(&mut child, stop, true)?;
    if stopped {
        return Err("interrupted".into());
    }
    if !status.success() {
        return Err(format!(
            "baseline fio on {device} failed:\n    {}",
            exec::tail(&log, 8)
        ));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let parsed =
        raidlab_fio::parse_output(&text).map_err(|e| format!("baseline of {device}: {e}"))?;
    let r = parsed
        .figures
        .read
        .ok_or_else(|| format!("baseline of {device}: fio reported no reads"))?;
    Ok((r.iops, r.bw_bytes_s / 1_048_576.0))
}

/// Measure every device, one after the other.
pub fn run(
    devices: &[(String, Option<String>)],
    runtime_s: u64,
    work: &Path,
    stop: &AtomicBool,
    progress: &dyn Fn(&str),
) -> Result<Baseline, String> {
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let mut members = Vec::new();
    for (device, serial) in devices {
        progress(&format!("baseline {device}"));
        let (iops, _) = measure(device, "randread", "4k", runtime_s, work, stop)?;
        let (_, mib) = measure(device, "read", "1m", runtime_s, work, stop)?;
        members.push(Member {
            device: device.clone(),
            serial: serial.clone(),
            randread_iops: iops,
            read_mib_s: mib,
        });
    }
    let warnings = outliers(&members);
    Ok(Baseline {
        runtime_s,
        members,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(d: &str, iops: f64, mib: f64) -> Member {
        Member {
            device: d.into(),
            serial: None,
            randread_iops: iops,
            read_mib_s: mib,
        }
    }

    #[test]
    fn a_member_off_the_median_is_named_and_even_ones_are_not() {
        let even = [
            m("a", 100.0, 200.0),
            m("b", 110.0, 190.0),
            m("c", 95.0, 205.0),
        ];
        assert!(outliers(&even).is_empty());
        let slow = [
            m("a", 100.0, 200.0),
            m("b", 100.0, 200.0),
            m("c", 100.0, 150.0),
            m("d", 100.0, 200.0),
        ];
        let w = outliers(&slow);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("c is -25 %"), "{}", w[0]);
    }
}
