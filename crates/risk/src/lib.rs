//! The probability that an array loses data over a mission, by a seeded Monte Carlo over
//! member lifetimes, rebuilds and unrecoverable read errors.
//!
//! Reliability calculators answer with MTTDL, a formula that assumes exponential lifetimes
//! and exponential repair and is known to be off by orders of magnitude (Greenan et al.,
//! HotStorage'10; Elerath & Pecht, 2009): drives wear out (Weibull lifetimes, Schroeder &
//! Gibson FAST'07), a rebuild takes a time that depends on the array and its load, and a
//! rebuild without redundancy left can fail on a latent sector error. This crate draws each
//! member's lifetime, replaces a failed member at once and rebuilds it for a drawn time,
//! and counts a trial as lost when some data has no copy left: more members of a
//! *redundancy group* failed at once than it tolerates, or a read error while rebuilding a
//! group with no redundancy left. The groups come from md's own layout (`raidlab-sim`'s
//! geometry), so raid10's copies are paired exactly as md places them.

use raidlab_core::{ArraySpec, Level};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Hours in a year (365.25 days).
pub const HOURS_PER_YEAR: f64 = 8766.0;

/// How long a member lives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lifetime {
    /// Annualised failure rate: the share of drives that fail within their first year.
    pub afr: f64,
    /// Weibull shape: 1 is the exponential (no wear-out); above 1, failures grow with age.
    pub shape: f64,
}

impl Lifetime {
    /// Weibull scale (hours) that gives `afr` within the first year.
    fn scale_hours(&self) -> f64 {
        HOURS_PER_YEAR / (-(1.0 - self.afr).ln()).powf(1.0 / self.shape)
    }
}

/// How long a rebuild takes, in hours.
#[derive(Debug, Clone, PartialEq)]
pub enum Rebuild {
    Constant(f64),
    /// Exponentially distributed with this mean (the textbook Markov model's repair).
    Exponential(f64),
    /// Drawn from measured or simulated rebuild times.
    Samples(Vec<f64>),
}

impl Rebuild {
    fn draw(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            Rebuild::Constant(h) => *h,
            Rebuild::Exponential(mean) => -mean * (1.0 - rng.gen::<f64>()).ln(),
            Rebuild::Samples(v) => v[rng.gen_range(0..v.len())],
        }
    }
}

/// Members whose data lose its last copy when more than `tolerance` of them are down at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub members: Vec<u32>,
    pub tolerance: u32,
}

/// An array as its failures see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub disks: u32,
    pub groups: Vec<Group>,
    /// Bytes a rebuild reads from each surviving member of the group.
    pub member_bytes: f64,
}

impl Array {
    /// md's redundancy groups for `spec`: raid0 loses data with any member, raid1 with all,
    /// raid5 / raid6 with more than one / two, raid10 with every copy of some chunk (the
    /// disks md places those copies on, per its layout).
    pub fn from_spec(spec: &ArraySpec, member_bytes: f64) -> Array {
        let n = spec.disks;
        let all = |tolerance| {
            vec![Group {
                members: (0..n).collect(),
                tolerance,
            }]
        };
        let groups = match spec.level {
            Level::Single | Level::Raid0 => all(0),
            Level::Raid5 => all(1),
            Level::Raid6 => all(2),
            Level::Raid10 => raid10_groups(spec),
            // Mirrors (md raid1 on every member; btrfs raid1/raid1c3/raid1c4 keep 2–4
            // copies, on any members: the worst case is any `copies` failing together).
            _ => all(spec.fault_tolerance()),
        };
        Array {
            disks: n,
            groups,
            member_bytes,
        }
    }
}

/// The sets of members md puts the copies of one chunk on, for every chunk position of
/// the layout's repeating pattern.
fn raid10_groups(spec: &ArraySpec) -> Vec<Group> {
    let chunk = spec.chunk.map_or(512 << 10, |c| c.0);
    let member = chunk * 4 * spec.disks as u64;
    let geo = raidlab_sim::md::Geometry::new(spec, member);
    let mut groups: Vec<Group> = Vec::new();
    let mut copies = Vec::new();
    // The pattern repeats within disks × copies chunks.
    for c in 0..(spec.disks as u64 * 4) {
        copies.clear();
        geo.raid10_into(c * chunk, &mut copies);
        let mut members: Vec<u32> = copies.iter().map(|&(d, _)| d).collect();
        members.sort_unstable();
        members.dedup();
        let tolerance = members.len() as u32 - 1;
        if !groups.iter().any(|g| g.members == members) {
            groups.push(Group { members, tolerance });
        }
    }
    groups
}

/// Annualised failure rate of a member: Backblaze's drive stats for 2024.
pub const DEFAULT_AFR: f64 = 0.0157;
/// Weibull shape of member lifetimes: Elerath & Pecht (2009)'s fit to field data.
pub const DEFAULT_SHAPE: f64 = 1.12;
/// Unrecoverable read errors per bit: enterprise datasheets.
pub const DEFAULT_URE: f64 = 1e-15;
/// Mission time, years.
pub const DEFAULT_YEARS: f64 = 5.0;

/// What the Monte Carlo is asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Mission {
    pub years: f64,
    pub lifetime: Lifetime,
    pub rebuild: Rebuild,
    /// Unrecoverable read errors per bit read (datasheets: 1e-14 desktop, 1e-15
    /// enterprise); 0 leaves them out.
    pub ure_per_bit: f64,
    pub trials: u64,
    pub seed: u64,
}

impl Mission {
    /// The defaults `raidlab risk` starts from (sources above), with this rebuild.
    pub fn typical(rebuild: Rebuild, trials: u64) -> Mission {
        Mission {
            years: DEFAULT_YEARS,
            lifetime: Lifetime {
                afr: DEFAULT_AFR,
                shape: DEFAULT_SHAPE,
            },
            rebuild,
            ure_per_bit: DEFAULT_URE,
            trials,
            seed: 1,
        }
    }
}

/// The answer, with how sure it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Risk {
    pub trials: u64,
    /// Trials that lost data: members failing together, or a read error in a rebuild.
    pub lost_to_failures: u64,
    pub lost_to_read_errors: u64,
}

impl Risk {
    pub fn probability(&self) -> f64 {
        (self.lost_to_failures + self.lost_to_read_errors) as f64 / self.trials as f64
    }

    /// The 95 % Wilson interval of the probability.
    pub fn interval(&self) -> (f64, f64) {
        let n = self.trials as f64;
        let p = self.probability();
        let z = 1.96f64;
        let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
        let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
        ((centre - half).max(0.0), (centre + half).min(1.0))
    }
}

/// The probability that `array` loses data within `m.years`.
pub fn simulate(array: &Array, m: &Mission) -> Risk {
    let mut rng = ChaCha8Rng::seed_from_u64(m.seed);
    let n = array.disks as usize;
    let horizon = m.years * HOURS_PER_YEAR;
    let (scale, inv_shape) = (m.lifetime.scale_hours(), 1.0 / m.lifetime.shape);
    let life = |rng: &mut ChaCha8Rng| scale * (-(1.0 - rng.gen::<f64>()).ln()).powf(inv_shape);
    let of_disk: Vec<Vec<usize>> = (0..n as u32)
        .map(|d| {
            (0..array.groups.len())
                .filter(|&g| array.groups[g].members.contains(&d))
                .collect()
        })
        .collect();
    let mut risk = Risk {
        trials: m.trials,
        lost_to_failures: 0,
        lost_to_read_errors: 0,
    };
    let (mut fails, mut rebuilt) = (vec![0.0; n], vec![0.0f64; n]);
    for _ in 0..m.trials {
        for f in fails.iter_mut() {
            *f = life(&mut rng);
        }
        rebuilt.iter_mut().for_each(|r| *r = 0.0);
        loop {
            let (i, t) = fails
                .iter()
                .copied()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("members");
            if t > horizon {
                break;
            }
            let down = |d: usize| d == i || rebuilt[d] > t;
            // Lost: a group has more members down than it tolerates. Exposed: a group has
            // no redundancy left, so its rebuild reads every survivor (the most of them).
            let mut lost = false;
            let mut survivors = 0.0f64;
            for &g in &of_disk[i] {
                let group = &array.groups[g];
                let failed = group.members.iter().filter(|&&d| down(d as usize)).count() as u32;
                lost |= failed > group.tolerance;
                if group.tolerance > 0 && failed == group.tolerance {
                    survivors = survivors.max((group.members.len() as u32 - failed) as f64);
                }
            }
            if lost {
                risk.lost_to_failures += 1;
                break;
            }
            if survivors > 0.0 && m.ure_per_bit > 0.0 {
                let bits = survivors * array.member_bytes * 8.0;
                if rng.gen::<f64>() < 1.0 - (-bits * m.ure_per_bit).exp() {
                    risk.lost_to_read_errors += 1;
                    break;
                }
            }
            let end = t + m.rebuild.draw(&mut rng);
            rebuilt[i] = end;
            fails[i] = end + life(&mut rng);
        }
    }
    risk
}

/// The textbook answer for a group of `n` members tolerating one failure, exponential
/// lifetimes and repairs: the probability of absorption by `hours` in the Markov chain
/// (all up) → (one down) → (lost), rates nλ, μ back, (n−1)λ.
pub fn markov_single_parity(n: u32, lambda: f64, mu: f64, hours: f64) -> f64 {
    let n = n as f64;
    // Transient generator [[-a, a], [mu, -(mu + b)]] with a = nλ, b = (n-1)λ.
    let (a, b) = (n * lambda, (n - 1.0) * lambda);
    let tr = -(a + mu + b);
    let det = a * (mu + b) - a * mu;
    let disc = (tr * tr - 4.0 * det).sqrt();
    let (r1, r2) = ((tr + disc) / 2.0, (tr - disc) / 2.0);
    // Survival from state 0: c1 e^{r1 t} + c2 e^{r2 t}, with S(0) = 1, S'(0) = 0 (state 0
    // leaves only to state 1, which still survives).
    let c1 = -r2 / (r1 - r2);
    let c2 = r1 / (r1 - r2);
    1.0 - (c1 * (r1 * hours).exp() + c2 * (r2 * hours).exp())
}

/// MTTDL (hours) of the same chain, as calculators print it.
pub fn mttdl_single_parity(n: u32, lambda: f64, mu: f64) -> f64 {
    let n = n as f64;
    ((2.0 * n - 1.0) * lambda + mu) / (n * (n - 1.0) * lambda * lambda)
}
