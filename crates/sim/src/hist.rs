//! A log-linear latency histogram, like fio's own: constant memory, ~1.6 % resolution.
//!
//! A simulated NVMe array completes millions of I/Os per simulated minute; keeping every
//! latency would cost gigabytes, and fio itself reports percentiles from bins.

/// Sub-buckets per power of two (2^6 = 64: relative error ≤ 1/64).
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;

#[derive(Debug, Clone)]
pub struct Histogram {
    bins: Vec<u64>,
    count: u64,
    sum: f64,
    sum_sq: f64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            bins: vec![0; 64 * SUB],
            count: 0,
            sum: 0.0,
            sum_sq: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }
}

fn bin_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros();
    let shift = msb - SUB_BITS;
    let sub = (v >> shift) as usize & (SUB - 1);
    ((shift as usize + 1) << SUB_BITS) + sub
}

/// Midpoint of a bin's value range.
fn value_of(bin: usize) -> f64 {
    if bin < SUB {
        return bin as f64;
    }
    let shift = (bin >> SUB_BITS) - 1;
    let sub = bin & (SUB - 1);
    let lo = ((SUB + sub) as u64) << shift;
    lo as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl Histogram {
    pub fn record(&mut self, v: u64) {
        self.bins[bin_of(v)] += 1;
        self.count += 1;
        let f = v as f64;
        self.sum += f;
        self.sum_sq += f * f;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        ((self.sum_sq - self.sum * self.sum / n) / (n - 1.0))
            .max(0.0)
            .sqrt()
    }
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// Each non-empty bin as (its value, completions), ascending: fio's json+ `bins`.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.bins
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (value_of(i).round() as u64, *c))
    }

    /// The value at percentile `p` (0–100).
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &c) in self.bins.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value_of(i).clamp(self.min as f64, self.max as f64);
            }
        }
        self.max as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_within_resolution() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for p in [50.0, 90.0, 99.0, 99.9] {
            let exact = p / 100.0 * 100_000.0 * 1000.0;
            let got = h.percentile(p);
            assert!((got - exact).abs() / exact < 0.02, "p{p}: {got} vs {exact}");
        }
        assert!((h.mean() - 50_000_500.0).abs() < 1.0);
    }
}
