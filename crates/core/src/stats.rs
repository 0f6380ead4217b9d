//! Small statistics used by the report and comparisons: median, spread, percentiles, and
//! the Mann–Whitney U test `raidlab compare` uses to say whether a change is significant.
//!
//! Kept here, not in the report, because the simulator's tests and the model use them too.

/// Differences smaller than this share of the larger figure are ties, never a "best": the
/// simulator's figures move by up to 2.7 % from seed to seed (docs/advise.md measures it),
/// so a smaller difference says nothing about which layout is faster. `raidlab advise` and
/// the report's summary both use it.
pub const TIE: f64 = 0.05;

/// Median of the values (NaN-free input); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

/// Linear-interpolated percentile `p` in 0..=100.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = (p / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    Some(v[lo] + (v[hi] - v[lo]) * (rank - lo as f64))
}

pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation.
pub fn stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let var = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
    Some(var.sqrt())
}

/// Coefficient of variation (stddev / mean).
pub fn cv(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    (m != 0.0).then(|| stddev(values).map(|s| s / m)).flatten()
}

/// Outcome of a two-sided Mann–Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs (a, b) with a > b, ties counting ½.
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Exact distribution (small samples without ties) or normal approximation.
    pub exact: bool,
}

/// Samples up to this size (each) without ties get the exact U distribution.
const EXACT_MAX: usize = 20;

/// Two-sided Mann–Whitney U test of `a` against `b`. Rank-based, so it assumes nothing
/// about the distribution of benchmark figures (they are rarely normal). Exact for small
/// samples without ties; otherwise the normal approximation with tie and continuity
/// correction. `None` when a sample is empty. Note the exact test's floor: with 3 runs
/// each the smallest possible p is 0.1, with 4 each 0.029.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let u: f64 = a
        .iter()
        .map(|x| {
            b.iter()
                .map(|y| match x.total_cmp(y) {
                    std::cmp::Ordering::Greater => 1.0,
                    std::cmp::Ordering::Equal => 0.5,
                    std::cmp::Ordering::Less => 0.0,
                })
                .sum::<f64>()
        })
        .sum();
    let (n1, n2) = (a.len(), b.len());
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(|x, y| x.total_cmp(y));
    let mut ties = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|v| **v == all[i]).count();
        if j > 1 {
            ties.push(j as f64);
        }
        i += j;
    }
    if ties.is_empty() && n1 <= EXACT_MAX && n2 <= EXACT_MAX {
        let counts = u_distribution(n1, n2);
        let total: f64 = counts.iter().sum();
        let k = u as usize;
        let le: f64 = counts[..=k].iter().sum();
        let ge: f64 = counts[k..].iter().sum();
        let p = (2.0 * le.min(ge) / total).min(1.0);
        return Some(MannWhitney { u, p, exact: true });
    }
    let (f1, f2) = (n1 as f64, n2 as f64);
    let n = f1 + f2;
    let tie: f64 = ties.iter().map(|t| t * t * t - t).sum();
    let var = f1 * f2 / 12.0 * ((n + 1.0) - tie / (n * (n - 1.0)));
    let mu = f1 * f2 / 2.0;
    let p = if var <= 0.0 {
        1.0
    } else {
        let z = ((u - mu).abs() - 0.5).max(0.0) / var.sqrt();
        erfc(z / std::f64::consts::SQRT_2).min(1.0)
    };
    Some(MannWhitney { u, p, exact: false })
}

/// Number of orderings of n1 + n2 distinct values giving each U = 0 ..= n1·n2, by the
/// recurrence f(n1, n2, u) = f(n1 − 1, n2, u − n2) + f(n1, n2 − 1, u).
fn u_distribution(n1: usize, n2: usize) -> Vec<f64> {
    // table[j] = distribution for (i, j) as i grows.
    let mut table: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect();
    for i in 1..=n1 {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        next.push(vec![1.0]);
        for j in 1..=n2 {
            let mut d = vec![0.0; i * j + 1];
            for (u, c) in table[j].iter().enumerate() {
                d[u + j] += c; // the largest value is from the first sample: beats all j
            }
            for (u, c) in next[j - 1].iter().enumerate() {
                d[u] += c; // the largest value is from the second sample
            }
            next.push(d);
        }
        table = next;
    }
    table.pop().expect("n2 + 1 entries")
}

/// Complementary error function (Numerical Recipes' erfcc, |error| < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398
                                    + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0, 3.0, 4.0]), Some(2.5));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 100.0), Some(5.0));
        assert_eq!(median(&[]), None);
        assert!((stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap() - 2.138).abs() < 1e-3);
    }

    // Reference p-values: the exact ones by enumerating every split of the pooled values
    // (python3 itertools.combinations), the approximate one from the normal formula with
    // math.erfc — independent of the recurrence used here.
    #[test]
    fn mann_whitney_exact_against_enumeration() {
        let t = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!((t.u, t.exact), (0.0, true));
        assert!((t.p - 0.1).abs() < 1e-12, "{}", t.p);
        let t = mann_whitney(&[5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(t.u, 16.0);
        assert!((t.p - 2.0 / 70.0).abs() < 1e-12);
        let t = mann_whitney(&[1.1, 2.2, 3.5, 4.0, 7.2], &[3.0, 5.5, 6.1, 8.0, 9.9, 10.2]).unwrap();
        assert_eq!(t.u, 5.0);
        assert!((t.p - 0.08225108225108226).abs() < 1e-12, "{}", t.p);
        let same = mann_whitney(&[1.0], &[2.0]).unwrap();
        assert_eq!(same.p, 1.0, "one run each cannot show anything");
        assert_eq!(mann_whitney(&[], &[1.0]), None);
    }

    #[test]
    fn mann_whitney_normal_approximation() {
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (0..25).map(|x| f64::from(x) + 10.5).collect();
        let t = mann_whitney(&a, &b).unwrap();
        assert!(!t.exact);
        assert_eq!(t.u, 190.0);
        assert!((t.p - 0.001817006281075087).abs() < 1e-6, "{}", t.p);
        let ties = mann_whitney(&[1.0, 1.0, 2.0], &[1.0, 2.0, 2.0]).unwrap();
        assert!(!ties.exact && ties.p > 0.3);
    }
}
