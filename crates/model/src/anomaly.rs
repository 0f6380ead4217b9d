//! Anomaly rules: recorded system state and the result's own shape turned into sentences
//! a user understands ("a resync ran during the test"), flagged per result.
//!
//! A benchmark number is only useful with its caveats. Each rule reads either the case's
//! array spec, the environment a target recorded (keys listed in `docs/exports.md`), the
//! per-second IOPS log, or the model's expectation. Thresholds are constants here and in
//! `docs/design.md`.

use crate::expect::{Basis, Expectation};
use raidlab_core::Headline;
use raidlab_core::{
    stats, Bitmap, Case, DiskKind, Environment, Figures, Level, WriteCache, DEFAULT_STRIPE_CACHE,
};
use serde::Serialize;

/// Members whose baseline differs from the members' median by more than this share are
/// "not uniform".
pub const NON_UNIFORM: f64 = 0.15;
/// Coefficient of variation of the per-second IOPS log above which a run is erratic.
pub const ERRATIC_CV: f64 = 0.25;
/// p99 / median completion latency above which a run is erratic.
pub const ERRATIC_TAIL: f64 = 10.0;
/// The tail rule only judges runs with at most this many outstanding I/Os per member:
/// deeper queues stretch the tail by design (a drive sorting its queue serves some
/// requests late), so a long tail there is expected, not erratic.
pub const ERRATIC_TAIL_MAX_QD: f64 = 8.0;
/// Per-second samples needed before the CV rule judges a log.
pub const ERRATIC_MIN_SAMPLES: usize = 5;
/// |measured / expected − 1| above which a result is "far off the model".
pub const OFF_MODEL: f64 = 0.5;
/// Sequential writes below this share of the full-stripe expectation, with a small
/// stripe cache, are blamed on the cache.
pub const STRIPE_SHORTFALL: f64 = 0.5;
/// `stripe_cache_size` (4 KiB pages per member) at or below which the cache counts as
/// small (published: 256 → 50 MB/s, 4096 → 123 MB/s on one 3-disk raid5).
pub const SMALL_STRIPE_CACHE: u64 = 1024;

/// A fleet host whose figure differs from the median of the hosts that ran the same case
/// by more than this share is an outlier (with at least [`FLEET_MIN_HOSTS`] hosts).
pub const FLEET_OUTLIER: f64 = 0.20;
/// Hosts needed before a median says what the fleet does.
pub const FLEET_MIN_HOSTS: usize = 3;
/// Timed members (VM lab) whose p99 lateness exceeds this share of the model's mean time
/// per command answered too late for the figures to be the model's.
pub const TIMED_LATE: f64 = 0.10;

/// Which rule fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    Resync,
    RebuildAtMin,
    Bitmap,
    WriteCache,
    NonUniform,
    StripeCache,
    PartialStripe,
    Erratic,
    OffModel,
    FleetOutlier,
    TimedLate,
}

impl Rule {
    /// Short code used in exports (`anomalies` column).
    pub fn code(self) -> &'static str {
        match self {
            Rule::Resync => "resync",
            Rule::RebuildAtMin => "rebuild-at-min",
            Rule::Bitmap => "bitmap",
            Rule::WriteCache => "write-cache",
            Rule::NonUniform => "non-uniform",
            Rule::StripeCache => "stripe-cache",
            Rule::PartialStripe => "partial-stripe",
            Rule::Erratic => "erratic",
            Rule::OffModel => "off-model",
            Rule::FleetOutlier => "fleet-outlier",
            Rule::TimedLate => "timed-late",
        }
    }
}

/// One flagged anomaly: the rule and a sentence with this result's numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Anomaly {
    pub rule: Rule,
    pub message: String,
}

/// Everything the rules look at for one result.
#[derive(Debug, Clone, Copy)]
pub struct Observation<'a> {
    pub case: &'a Case,
    pub figures: &'a Figures,
    pub environment: &'a Environment,
    /// Per-second IOPS (reads and writes summed), from the result's `iops.log`.
    pub iops_per_second: &'a [f64],
    pub expectation: Option<&'a Expectation>,
}

/// Every rule, in a fixed order; "off the model" only when no other rule explains it.
pub fn anomalies(o: &Observation) -> Vec<Anomaly> {
    let mut out: Vec<Anomaly> = [
        resync,
        rebuild_at_min,
        bitmap,
        write_cache,
        non_uniform,
        stripe_cache,
        timed_late,
        erratic,
    ]
    .iter()
    .filter_map(|rule| rule(o))
    .collect();
    if out.iter().all(|a| a.rule == Rule::Erratic) {
        out.extend(off_model(o));
    }
    out
}

/// The hosts of a fleet that ran one case, as (host, headline figure, unit): those more
/// than [`FLEET_OUTLIER`] from the hosts' median, by index, with a sentence each. Nothing
/// below [`FLEET_MIN_HOSTS`] hosts: two hosts have no majority to differ from.
pub fn fleet_outliers(hosts: &[(String, f64, &str)]) -> Vec<(usize, Anomaly)> {
    if hosts.len() < FLEET_MIN_HOSTS {
        return Vec::new();
    }
    let values: Vec<f64> = hosts.iter().map(|h| h.1).collect();
    let Some(median) = stats::median(&values).filter(|m| *m > 0.0) else {
        return Vec::new();
    };
    hosts
        .iter()
        .enumerate()
        .filter_map(|(i, (host, v, unit))| {
            let off = v / median - 1.0;
            (off.abs() > FLEET_OUTLIER).then(|| {
                let a = Anomaly {
                    rule: Rule::FleetOutlier,
                    message: format!(
                        "Host {host}: {v:.1} {unit}, {:.0} % {} the fleet's median of {median:.1} {unit} over {} hosts (threshold {:.0} %). Look for what differs on this host: a disk, controller, firmware, cabling or cache setting, or another load.",
                        off.abs() * 100.0,
                        if off < 0.0 { "below" } else { "above" },
                        hosts.len(),
                        FLEET_OUTLIER * 100.0
                    ),
                };
                (i, a)
            })
        })
        .collect()
}

fn flag(rule: Rule, message: String) -> Option<Anomaly> {
    Some(Anomaly { rule, message })
}

fn writes(o: &Observation) -> bool {
    o.case.workload.rw.writes()
}

/// A rebuilding array's recovery (`environment.rebuild`) ran within 10 % above md's
/// `sync_speed_min` (or no more than half below it: md's speed is a mean over whole
/// seconds, and a recovery that starts under load starts slow) and did not finish: the
/// governor held it at the floor. Further below, md never held it back — md throttles
/// only above the minimum — and what paced it was the members (a recovery with
/// `sync_speed_min` raised to md's maximum, 200,000 KiB/s, runs at what the disks give).
fn rebuild_at_min(o: &Observation) -> Option<Anomaly> {
    let r = o.environment.rebuild.as_ref()?;
    let min = o.case.array.rebuild.unwrap_or_default().sync_speed_min as f64;
    let kib_s = r.mib_s * 1024.0;
    if r.seconds.is_some() || kib_s > min * 1.1 || kib_s < min * 0.5 {
        return None;
    }
    let full = r
        .seconds_full
        .map(|s| {
            format!(
                " (a whole member at this pace: about {:.0} days)",
                s / 86_400.0
            )
        })
        .unwrap_or_default();
    flag(
        Rule::RebuildAtMin,
        format!(
            "The recovery ran at {kib_s:.0} KiB/s, md's sync_speed_min ({min:.0} KiB/s): under \
             this load md held it at the floor{full}. Raise sync_speed_min \
             (/sys/block/mdX/md/sync_speed_min; plan field sync_speed_min) to shorten the \
             window in which another failure loses data, at the workload's expense."
        ),
    )
}

/// The VM lab's timed members (`vm.timed_members.during_fio`, one entry per member)
/// answered late against their model's schedule: their worst p99 lateness is more than
/// [`TIMED_LATE`] of the model's mean media time per command over the case's fio.
fn timed_late(o: &Observation) -> Option<Anomaly> {
    let members = o
        .environment
        .details
        .get("vm")?
        .get("timed_members")?
        .get("during_fio")?
        .as_array()?;
    let num = |m: &serde_json::Value, k: &str| m.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let commands: f64 = members
        .iter()
        .map(|m| num(m, "reads") + num(m, "writes"))
        .sum();
    let busy: f64 = members.iter().map(|m| num(m, "busy_s")).sum();
    let p99 = members
        .iter()
        .map(|m| num(m, "lateness_p99_us"))
        .fold(0.0, f64::max);
    if commands == 0.0 {
        return None;
    }
    let per_command_us = busy / commands * 1e6;
    if p99 <= TIMED_LATE * per_command_us {
        return None;
    }
    flag(
        Rule::TimedLate,
        format!(
            "The timed members answered up to {p99:.0} µs late (p99) against their model's \
             schedule, {:.0} % of the model's {:.2} ms per command: part of this figure is \
             the machine's, not the model's. Run it where qemu and raidlab have idle cores \
             (KVM rather than TCG), or with fewer members.",
            p99 / per_command_us * 100.0,
            per_command_us / 1e3
        ),
    )
}

/// `environment.resync_during_fio == true`, on an array not meant to be rebuilding.
fn resync(o: &Observation) -> Option<Anomaly> {
    if o.environment.resync_during_fio != Some(true)
        || o.case.array.state == raidlab_core::ArrayState::Rebuilding
    {
        return None;
    }
    flag(
        Rule::Resync,
        "An md resync or recovery ran during the test, and the result measures both: since \
         Linux 4.1 md keeps resyncing under other I/O (it only waits for its own requests \
         between windows). Wait for the resync (resync = \"wait\") or create the array with \
         --assume-clean (resync = \"assume-clean\") and run again."
            .into(),
    )
}

/// Plan's `bitmap = "internal"`, or `environment.md_bitmap` naming one, on a write test.
fn bitmap(o: &Observation) -> Option<Anomaly> {
    let env = o
        .environment
        .md_bitmap
        .as_deref()
        .filter(|b| !b.is_empty() && *b != "none");
    let spec = o.case.array.bitmap == Bitmap::Internal;
    if !writes(o) || !(spec || env.is_some()) {
        return None;
    }
    flag(
        Rule::Bitmap,
        format!(
            "A write-intent bitmap ({}) was active during a write test: md writes bitmap \
             metadata synchronously before data (published: a 4-disk raid5 fell from 115 to \
             22 MiB/s). Use bitmap = \"none\" to measure the array alone.",
            env.unwrap_or("internal")
        ),
    )
}

/// `environment.write_cache_after` (member → cache enabled) shows a cache on where the
/// plan said `write_cache = "off"`.
fn write_cache(o: &Observation) -> Option<Anomaly> {
    if o.case.array.write_cache != WriteCache::Off {
        return None;
    }
    let on: Vec<&str> = o
        .environment
        .write_cache_after
        .as_ref()?
        .iter()
        .filter(|(_, on)| **on)
        .map(|(k, _)| k.as_str())
        .collect();
    if on.is_empty() {
        return None;
    }
    flag(
        Rule::WriteCache,
        format!(
            "The plan asked for write caches off, but after the test the cache was on for {}: \
             writes completed in the drive's RAM. Check that the drive accepts `hdparm -W 0` \
             (some USB bridges and RAID controllers ignore it).",
            on.join(", ")
        ),
    )
}

/// `environment.member_baseline_iops` (member → a quick per-member figure): a member
/// more than 15 % from the members' median.
fn non_uniform(o: &Observation) -> Option<Anomaly> {
    let members: Vec<(&str, f64)> = o
        .environment
        .member_baseline_iops
        .as_ref()?
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    let values: Vec<f64> = members.iter().map(|m| m.1).collect();
    let med = stats::median(&values)?;
    if med <= 0.0 {
        return None;
    }
    let odd: Vec<String> = members
        .iter()
        .filter(|(_, v)| (v / med - 1.0).abs() > NON_UNIFORM)
        .map(|(k, v)| format!("{k} {v:.0} ({:+.0} %)", (v / med - 1.0) * 100.0))
        .collect();
    if odd.is_empty() {
        return None;
    }
    flag(
        Rule::NonUniform,
        format!(
            "Members are not uniform: against the median of {med:.0} IOPS, {}. An array runs \
             at the pace of its slowest member; replace or test that disk.",
            odd.join(", ")
        ),
    )
}

/// Sequential writes on raid5/6 far below the full-stripe expectation: with less than a
/// stripe in flight, or direct writes that do not cover whole stripes, blamed on the
/// partial stripes; otherwise on a small `stripe_cache_size` (the plan's `stripe_cache`,
/// else `environment.stripe_cache_size`, else md's default 256) when it is one.
fn stripe_cache(o: &Observation) -> Option<Anomaly> {
    let a = &o.case.array;
    let w = &o.case.workload;
    if !matches!(a.level, Level::Raid5 | Level::Raid6) || w.rw.is_random() || !w.rw.writes() {
        return None;
    }
    let e = o.expectation?;
    let measured = o.figures.write.as_ref()?.bw_bytes_s
        + o.figures.read.as_ref().map_or(0.0, |d| d.bw_bytes_s);
    let share = measured / e.bw_bytes_s;
    let size = a
        .stripe_cache
        .map(u64::from)
        .or(o.environment.stripe_cache_size)
        .unwrap_or(DEFAULT_STRIPE_CACHE.into());
    if share >= STRIPE_SHORTFALL {
        return None;
    }
    // Less than a stripe in flight: no cache can make full stripes of it.
    let in_flight = w.bs.0 * (w.iodepth * w.numjobs) as u64;
    let stripe = a.chunk.map_or(0, |c| c.0) * a.data_disks() as u64;
    if in_flight < stripe {
        return flag(
            Rule::PartialStripe,
            format!(
                "Sequential writes reached {:.0} % of the full-stripe expectation with only \
                 {} KiB in flight (bs × iodepth × numjobs), less than one stripe of {} KiB: \
                 with direct I/O md must read old data or parity for every write instead of \
                 writing whole stripes. Raise iodepth, numjobs or bs to cover a stripe, or use a \
                 smaller chunk.",
                share * 100.0,
                in_flight / 1024,
                stripe / 1024
            ),
        );
    }
    // O_DIRECT writes carry REQ_SYNC: md starts on the stripe each one leaves part-filled
    // as soon as it is submitted, pre-reading the rest before the next write arrives.
    if w.direct && stripe > 0 && !w.bs.0.is_multiple_of(stripe) {
        return flag(
            Rule::PartialStripe,
            format!(
                "Sequential writes reached {:.0} % of the full-stripe expectation: each direct \
                 write of {} KiB leaves part of a {} KiB stripe, and md pre-reads the rest as \
                 soon as the write is submitted (O_DIRECT writes are sync), before the next \
                 write could complete the stripe. Use a block size that is a multiple of the \
                 stripe, or a smaller chunk.",
                share * 100.0,
                w.bs.0 / 1024,
                stripe / 1024
            ),
        );
    }
    if size > SMALL_STRIPE_CACHE {
        return None;
    }
    flag(
        Rule::StripeCache,
        format!(
            "Sequential writes reached {:.0} % of the full-stripe expectation with \
             stripe_cache_size = {size} pages: md cannot gather whole stripes and reads old data \
             for parity. Try stripe_cache = 4096 (echo 4096 > /sys/block/mdX/md/stripe_cache_size).",
            share * 100.0
        ),
    )
}

/// CV of the per-second IOPS above 0.25, or p99 / median completion latency above 10
/// (at most 8 outstanding I/Os per member, and not on throttled disks: qemu's leaky
/// bucket lets a burst through at once and holds the rest, so their latency is bimodal
/// by design).
fn erratic(o: &Observation) -> Option<Anomaly> {
    let c = o.case;
    let members = if c.array.level == Level::Single {
        1
    } else {
        c.array.disks.max(1)
    };
    let per_member = (c.workload.iodepth * c.workload.numjobs) as f64 / members as f64;
    let throttled = matches!(
        c.disks.resolved_model(),
        Ok(Some(m)) if matches!(m.kind, DiskKind::Throttle(_))
    );
    let tail_judged = per_member <= ERRATIC_TAIL_MAX_QD && !throttled;
    erratic_of(o.figures, o.iops_per_second, tail_judged)
}

/// The `erratic` rule on an imported result, which has no array: its latency tail is
/// judged when at most 8 I/Os were outstanding (`outstanding` = iodepth × numjobs), as
/// on one member of a plan's array.
pub fn erratic_imported(
    figures: &Figures,
    iops_per_second: &[f64],
    outstanding: u32,
) -> Option<Anomaly> {
    erratic_of(
        figures,
        iops_per_second,
        f64::from(outstanding) <= ERRATIC_TAIL_MAX_QD,
    )
}

fn erratic_of(figures: &Figures, iops_per_second: &[f64], tail_judged: bool) -> Option<Anomaly> {
    let mut why = Vec::new();
    if iops_per_second.len() >= ERRATIC_MIN_SAMPLES {
        if let Some(cv) = stats::cv(iops_per_second) {
            if cv > ERRATIC_CV {
                why.push(format!(
                    "IOPS varied from second to second with a coefficient of variation of {cv:.2} (threshold {ERRATIC_CV})"
                ));
            }
        }
    }
    for (name, d) in [("read", &figures.read), ("write", &figures.write)] {
        if !tail_judged {
            break;
        }
        let Some(d) = d else { continue };
        if let (Some(p50), Some(p99)) = (d.clat_p50_ns, d.clat_p99_ns) {
            if p50 > 0.0 && p99 / p50 > ERRATIC_TAIL {
                why.push(format!(
                    "{name} p99 latency was {:.0}× the median ({:.2} ms vs {:.2} ms, threshold {ERRATIC_TAIL}×)",
                    p99 / p50,
                    p99 / 1e6,
                    p50 / 1e6
                ));
            }
        }
    }
    if why.is_empty() {
        return None;
    }
    flag(
        Rule::Erratic,
        format!(
            "Erratic performance: {}. On real disks look for other users of the disks \
             (background jobs, a resync, SMR garbage collection, thermal throttling); repeat \
             the case (repeat = 3) and compare.",
            why.join("; ")
        ),
    )
}

/// |deviation| above 50 % with no other explanation.
fn off_model(o: &Observation) -> Option<Anomaly> {
    let e = o.expectation?;
    let iops = o.figures.total_iops();
    let bw = o.figures.read.as_ref().map_or(0.0, |d| d.bw_bytes_s)
        + o.figures.write.as_ref().map_or(0.0, |d| d.bw_bytes_s);
    let dev = e.deviation(iops, bw)?;
    if dev.abs() <= OFF_MODEL {
        return None;
    }
    let (m, x, unit) = if e.judged_by == Headline::Bandwidth {
        (bw / 1_048_576.0, e.bw_bytes_s / 1_048_576.0, "MiB/s")
    } else {
        (iops, e.iops, "IOPS")
    };
    flag(
        Rule::OffModel,
        format!(
            "Measured {m:.1} {unit} is {:.0} % {} the model's {x:.1} {unit} ({} basis) with no \
             recorded cause. {}",
            dev.abs() * 100.0,
            if dev > 0.0 { "above" } else { "below" },
            e.basis.name(),
            match e.basis {
                Basis::DiskModel =>
                    "Add a level = \"single\" case with this workload: a measured \
                                     per-disk baseline replaces the datasheet figures.",
                Basis::Baseline =>
                    "The array's layout or md's request path behaves otherwise \
                                    than the model's rule for this level (docs/design.md); \
                                    check the member I/O share and the environment.",
            }
        ),
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_fleet_host_far_from_the_median_is_an_outlier() {
        let hosts: Vec<(String, f64, &str)> =
            [("a", 500.0), ("b", 480.0), ("c", 310.0), ("d", 520.0)]
                .iter()
                .map(|(h, v)| (h.to_string(), *v, "IOPS"))
                .collect();
        let found = fleet_outliers(&hosts);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].0, found[0].1.rule), (2, Rule::FleetOutlier));
        assert!(
            found[0].1.message.contains(
                "Host c: 310.0 IOPS, 37 % below the fleet's median of 490.0 IOPS over 4 hosts"
            ),
            "{}",
            found[0].1.message
        );
        assert!(
            fleet_outliers(&hosts[..2]).is_empty(),
            "two hosts have no median to differ from"
        );
    }

    use super::*;
    use crate::expect::{Basis, Expectation};
    use crate::tests::case;
    use raidlab_core::{DirectionFigures, Layout, Rw};
    use serde_json::{json, Value};

    fn figures(read_iops: f64, write_iops: f64, bs: f64) -> Figures {
        let d = |iops: f64| {
            (iops > 0.0).then(|| DirectionFigures {
                iops,
                bw_bytes_s: iops * bs,
                clat_p50_ns: Some(10e6),
                clat_p99_ns: Some(30e6),
                ..Default::default()
            })
        };
        Figures {
            read: d(read_iops),
            write: d(write_iops),
            ..Default::default()
        }
    }

    fn expectation(iops: f64, bs: f64, sequential: bool) -> Expectation {
        let judged_by = if sequential {
            Headline::Bandwidth
        } else {
            Headline::Iops
        };
        Expectation {
            iops,
            bw_bytes_s: iops * bs,
            basis: Basis::Baseline,
            judged_by,
            formula: String::new(),
            saturated_iops: iops,
            utilisation: 1.0,
        }
    }

    /// An environment as a target stores it (JSON), read back as the rules see it.
    fn recorded(json: Value) -> Environment {
        serde_json::from_value(json).expect("an environment")
    }

    fn rules(c: &Case, f: &Figures, env: Value, log: &[f64], e: Option<&Expectation>) -> Vec<Rule> {
        anomalies(&Observation {
            case: c,
            figures: f,
            environment: &recorded(env),
            iops_per_second: log,
            expectation: e,
        })
        .into_iter()
        .map(|a| a.rule)
        .collect()
    }

    const STEADY: [f64; 6] = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0];

    #[test]
    fn a_clean_result_near_the_model_has_no_anomaly() {
        let c = case(Level::Raid5, None, 6, Rw::RandWrite, 4096);
        let e = expectation(112.5, 4096.0, false);
        let env = json!({"resync_during_fio": false, "write_cache_after": {"sda": false},
                         "member_baseline_iops": {"sda": 75, "sdb": 80, "sdc": 70}});
        assert!(rules(&c, &figures(0.0, 105.0, 4096.0), env, &STEADY, Some(&e)).is_empty());
    }

    /// Timed members that answered late, against the model's time per command.
    #[test]
    fn timed_members_that_answered_late() {
        let c = case(Level::Raid0, None, 2, Rw::RandRead, 4096);
        let f = figures(300.0, 0.0, 4096.0);
        let env = |p99: u32, busy_s: f64| {
            let m = json!({"reads": 1000, "writes": 0, "busy_s": busy_s, "lateness_p99_us": p99});
            json!({"vm": {"timed_members": {"during_fio": [m.clone(), m]}}})
        };
        // 6 ms per command: 300 µs late is 5 %, 900 µs is 15 %.
        assert!(rules(&c, &f, env(300, 6.0), &[], None).is_empty());
        assert_eq!(rules(&c, &f, env(900, 6.0), &[], None), [Rule::TimedLate]);
        // Streaming at 0.5 ms per command, 300 µs is 60 %.
        assert_eq!(rules(&c, &f, env(300, 0.5), &[], None), [Rule::TimedLate]);
        let none = json!({"vm": {"timed_members": null}});
        assert!(rules(&c, &f, none, &[], None).is_empty());
    }

    #[test]
    fn resync_during_fio() {
        let c = case(Level::Raid5, None, 6, Rw::RandRead, 4096);
        let f = figures(450.0, 0.0, 4096.0);
        assert_eq!(
            rules(&c, &f, json!({"resync_during_fio": true}), &[], None),
            [Rule::Resync]
        );
        assert!(rules(&c, &f, json!({"resync_during_fio": false}), &[], None).is_empty());
    }

    /// A rebuilding array's recovery is what was asked for, not an anomaly; held at md's
    /// floor it is, and the message names the knob.
    #[test]
    fn rebuild_held_at_sync_speed_min() {
        let mut c = case(Level::Raid5, None, 6, Rw::RandRead, 4096);
        c.array.state = raidlab_core::ArrayState::Rebuilding;
        c.array.rebuild = Some(Default::default());
        let f = figures(450.0, 0.0, 4096.0);
        let env = |mib_s: f64, seconds: Option<f64>| {
            json!({"resync_during_fio": true,
                   "rebuild": {"mib_s": mib_s, "seconds": seconds, "seconds_full": 1.6e7}})
        };
        assert_eq!(
            rules(&c, &f, env(0.98, None), &[], None),
            [Rule::RebuildAtMin]
        );
        assert!(rules(&c, &f, env(8.0, None), &[], None).is_empty());
        assert!(
            rules(&c, &f, env(0.98, Some(20.0)), &[], None).is_empty(),
            "it finished"
        );
        let message = &anomalies(&Observation {
            case: &c,
            figures: &f,
            environment: &recorded(env(0.98, None)),
            iops_per_second: &[],
            expectation: None,
        })[0]
            .message;
        assert!(
            message.contains("1004 KiB/s")
                && message.contains("185 days")
                && message.contains("sync_speed_min"),
            "{message}"
        );
        // With the minimum raised to md's maximum the governor never holds a recovery
        // back: 23 MiB/s is what the members gave.
        c.array.rebuild = Some(raidlab_core::Rebuild {
            sync_speed_min: 200_000,
            ..Default::default()
        });
        assert!(
            rules(&c, &f, env(23.0, None), &[], None).is_empty(),
            "far below a raised minimum is the members' pace"
        );
        assert_eq!(
            rules(&c, &f, env(200.0, None), &[], None),
            [Rule::RebuildAtMin]
        );
    }

    #[test]
    fn bitmap_on_writes_only() {
        let mut c = case(Level::Raid5, None, 6, Rw::RandWrite, 4096);
        c.array.bitmap = Bitmap::Internal;
        let f = figures(0.0, 100.0, 4096.0);
        assert_eq!(rules(&c, &f, json!({}), &[], None), [Rule::Bitmap]);
        let mut r = case(Level::Raid5, None, 6, Rw::RandRead, 4096);
        r.array.bitmap = Bitmap::Internal;
        assert!(rules(&r, &figures(400.0, 0.0, 4096.0), json!({}), &[], None).is_empty());
        let plain = case(Level::Raid5, None, 6, Rw::RandWrite, 4096);
        assert_eq!(
            rules(&plain, &f, json!({"md_bitmap": "internal"}), &[], None),
            [Rule::Bitmap]
        );
        assert!(rules(&plain, &f, json!({"md_bitmap": "none"}), &[], None).is_empty());
    }

    #[test]
    fn write_cache_on_where_the_plan_said_off() {
        let c = case(Level::Raid0, None, 2, Rw::RandWrite, 4096);
        let f = figures(0.0, 150.0, 4096.0);
        let on = json!({"write_cache_after": {"sda": false, "sdb": true}});
        let a = anomalies(&Observation {
            case: &c,
            figures: &f,
            environment: &recorded(on.clone()),
            iops_per_second: &[],
            expectation: None,
        });
        assert_eq!(a.len(), 1);
        assert!(
            a[0].message.contains("sdb") && !a[0].message.contains("sda"),
            "{}",
            a[0].message
        );
        let mut keep = c.clone();
        keep.array.write_cache = WriteCache::Keep;
        assert!(rules(&keep, &f, on, &[], None).is_empty());
    }

    #[test]
    fn members_more_than_15_percent_from_the_median() {
        let c = case(Level::Raid0, None, 3, Rw::RandRead, 4096);
        let f = figures(225.0, 0.0, 4096.0);
        let odd = json!({"member_baseline_iops": {"sda": 75, "sdb": 76, "sdc": 60}});
        assert_eq!(rules(&c, &f, odd, &[], None), [Rule::NonUniform]);
        let fine = json!({"member_baseline_iops": {"sda": 75, "sdb": 76, "sdc": 66}});
        assert!(rules(&c, &f, fine, &[], None).is_empty());
    }

    /// Direct writes that do not cover whole stripes: md pre-reads each part-filled stripe
    /// as soon as the write is submitted, however much is in flight.
    #[test]
    fn direct_writes_smaller_than_a_stripe_are_partial() {
        let mb = 1048576.0;
        let mut c = case(Level::Raid5, None, 4, Rw::Write, 1 << 20);
        c.workload.iodepth = 32;
        let e = expectation(300.0, mb, true);
        let slow = figures(0.0, 50.0, mb);
        let found = anomalies(&Observation {
            case: &c,
            figures: &slow,
            environment: &Environment::default(),
            iops_per_second: &STEADY,
            expectation: Some(&e),
        });
        assert_eq!(
            found.iter().map(|a| a.rule).collect::<Vec<_>>(),
            [Rule::PartialStripe]
        );
        assert!(found[0]
            .message
            .contains("1024 KiB leaves part of a 1536 KiB stripe"));
        c.workload.direct = false;
        assert!(!rules(&c, &slow, json!({}), &STEADY, Some(&e)).contains(&Rule::PartialStripe));
    }

    #[test]
    fn small_stripe_cache_on_slow_sequential_writes() {
        let mb = 1048576.0;
        let c = case(Level::Raid5, None, 3, Rw::Write, 1 << 20);
        let e = expectation(300.0, mb, true);
        let slow = figures(0.0, 50.0, mb);
        assert_eq!(
            rules(&c, &slow, json!({}), &STEADY, Some(&e)),
            [Rule::StripeCache]
        );
        let mut big = c.clone();
        big.array.stripe_cache = Some(4096);
        assert_eq!(
            rules(&big, &slow, json!({}), &STEADY, Some(&e)),
            [Rule::OffModel]
        );
        assert!(rules(&c, &figures(0.0, 200.0, mb), json!({}), &STEADY, Some(&e)).is_empty());
        let mut qd1 = c.clone();
        qd1.workload.bs = raidlab_core::Bytes::kib(64);
        qd1.workload.iodepth = 1;
        let slow64 = figures(0.0, 50.0 * 16.0, 65536.0);
        let e64 = expectation(300.0 * 16.0, 65536.0, true);
        assert_eq!(
            rules(&qd1, &slow64, json!({}), &STEADY, Some(&e64)),
            [Rule::PartialStripe],
            "64 KiB in flight < 1 MiB stripe: not the cache's fault"
        );
        let r10 = case(Level::Raid10, Some(Layout::Near(2)), 4, Rw::Write, 1 << 20);
        assert_eq!(
            rules(&r10, &slow, json!({}), &STEADY, Some(&e)),
            [Rule::OffModel]
        );
    }

    #[test]
    fn erratic_by_iops_log_or_latency_tail() {
        let c = case(Level::Raid0, None, 2, Rw::RandRead, 4096);
        let f = figures(150.0, 0.0, 4096.0);
        let jumpy = [150.0, 20.0, 300.0, 140.0, 10.0, 280.0];
        assert_eq!(rules(&c, &f, json!({}), &jumpy, None), [Rule::Erratic]);
        assert!(rules(&c, &f, json!({}), &STEADY, None).is_empty());
        assert!(
            rules(&c, &f, json!({}), &jumpy[..4], None).is_empty(),
            "too few samples"
        );
        let mut tail = f.clone();
        tail.read.as_mut().unwrap().clat_p99_ns = Some(150e6);
        assert_eq!(rules(&c, &tail, json!({}), &STEADY, None), [Rule::Erratic]);
        let mut deep = c.clone();
        deep.workload.iodepth = 32; // 16 per member: a sorted queue's tail is expected
        assert!(rules(&deep, &tail, json!({}), &STEADY, None).is_empty());
        let mut throttled = c.clone();
        throttled.disks.model = Some("throttle-75".into());
        assert!(
            rules(&throttled, &tail, json!({}), &STEADY, None).is_empty(),
            "a token bucket's bimodal latency is not erratic"
        );
        assert_eq!(
            rules(&throttled, &f, json!({}), &jumpy, None),
            [Rule::Erratic],
            "jumpy IOPS still are"
        );
    }

    #[test]
    fn off_the_model_only_without_a_known_cause() {
        let c = case(Level::Raid10, None, 6, Rw::RandWrite, 4096);
        let e = expectation(225.0, 4096.0, false);
        let f = figures(0.0, 400.0, 4096.0);
        assert_eq!(
            rules(&c, &f, json!({}), &STEADY, Some(&e)),
            [Rule::OffModel]
        );
        assert!(rules(
            &c,
            &figures(0.0, 300.0, 4096.0),
            json!({}),
            &STEADY,
            Some(&e)
        )
        .is_empty());
        assert_eq!(
            rules(
                &c,
                &f,
                json!({"resync_during_fio": true}),
                &STEADY,
                Some(&e)
            ),
            [Rule::Resync],
            "a known cause replaces the vague one"
        );
    }
}
