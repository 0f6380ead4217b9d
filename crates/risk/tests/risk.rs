//! The Monte Carlo against the answers that are known.

use raidlab_core::{ArraySpec, Layout, Level};
use raidlab_risk::{markov_single_parity, simulate, Array, Lifetime, Mission, Rebuild};

fn spec(level: Level, disks: u32, layout: Option<Layout>) -> ArraySpec {
    ArraySpec {
        layout: layout.or(level.default_layout()),
        ..ArraySpec::md(level, disks)
    }
}

/// Exponential lifetimes and repairs: the Monte Carlo agrees with the Markov chain's exact
/// absorption probability, inside its 95 % interval (widened by 1 % for the chain's
/// discretisation-free answer being a point).
#[test]
fn the_exponential_case_reproduces_the_markov_chain() {
    let n = 6;
    let afr = 0.10;
    let lambda = -(1.0f64 - afr).ln() / raidlab_risk::HOURS_PER_YEAR;
    let repair_hours = 200.0;
    let mission = Mission {
        years: 5.0,
        lifetime: Lifetime { afr, shape: 1.0 },
        rebuild: Rebuild::Exponential(repair_hours),
        ure_per_bit: 0.0,
        trials: 200_000,
        seed: 1,
    };
    let array = Array::from_spec(&spec(Level::Raid5, n, None), 1e12);
    let risk = simulate(&array, &mission);
    let exact = markov_single_parity(
        n,
        lambda,
        1.0 / repair_hours,
        5.0 * raidlab_risk::HOURS_PER_YEAR,
    );
    let (lo, hi) = risk.interval();
    assert!(
        lo <= exact && exact <= hi,
        "Monte Carlo {:.5} [{lo:.5}, {hi:.5}], Markov {exact:.5}",
        risk.probability()
    );
    assert!(exact > 0.01, "a test that can tell: {exact}");
}

/// md's raid10 near-2 on 8 disks pairs (0,1) (2,3) …: four groups of two; far-2 puts a
/// chunk's copies on neighbours, offset by one.
#[test]
fn raid10_groups_follow_mds_placement() {
    let near = Array::from_spec(&spec(Level::Raid10, 8, Some(Layout::Near(2))), 1.0);
    let pairs: Vec<Vec<u32>> = near.groups.iter().map(|g| g.members.clone()).collect();
    assert_eq!(pairs, [vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]]);
    assert!(near.groups.iter().all(|g| g.tolerance == 1));
    let raid6 = Array::from_spec(&spec(Level::Raid6, 8, None), 1.0);
    assert_eq!(raid6.groups.len(), 1);
    assert_eq!(raid6.groups[0].tolerance, 2);
}

/// Ordering that must hold: raid0 loses most, then raid5, raid10, raid6; read errors add
/// to single parity's loss on big disks.
#[test]
fn layouts_rank_as_their_redundancy_says() {
    let m = |ure: f64| Mission {
        years: 5.0,
        lifetime: Lifetime {
            afr: 0.03,
            shape: 1.2,
        },
        rebuild: Rebuild::Constant(48.0),
        ure_per_bit: ure,
        trials: 100_000,
        seed: 7,
    };
    let p = |level, layout, ure| {
        simulate(&Array::from_spec(&spec(level, 8, layout), 16e12), &m(ure)).probability()
    };
    let raid0 = p(Level::Raid0, None, 0.0);
    let raid5 = p(Level::Raid5, None, 0.0);
    let raid10 = p(Level::Raid10, Some(Layout::Near(2)), 0.0);
    let raid6 = p(Level::Raid6, None, 0.0);
    assert!(
        raid0 > raid5 && raid5 > raid10 && raid10 > raid6,
        "{raid0} {raid5} {raid10} {raid6}"
    );
    let raid5_ure = p(Level::Raid5, None, 1e-15);
    assert!(
        raid5_ure > raid5 * 2.0,
        "7 × 16 TB read at 1e-15/bit: {raid5_ure} vs {raid5}"
    );
}
