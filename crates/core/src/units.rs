//! Units as types: sizes in bytes and durations in nanoseconds.
//!
//! Plans, fio job files and the simulator all speak in sizes (`4k`, `512KiB`, `10g`) and
//! durations (`60s`, `1m30s`). Keeping them as newtypes stops a byte count from being
//! passed where a sector count or a millisecond value was meant, and gives one parser
//! for every place a user types a unit.
//!
//! Size suffixes follow fio's default (`kb_base=1024`): `k`, `K`, `KB`, `KiB` all mean
//! 1024 bytes; likewise `m`, `g`, `t`, `p`. A bare number is bytes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};
use std::str::FromStr;

/// Why a unit string was refused; the message says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("`{0}` is not a size: write a number with an optional suffix k, m, g, t or p (binary, 1k = 1024 bytes), e.g. 4k, 512KiB, 10g")]
    BadSize(String),
    #[error("`{0}` is too large a size (more than 2^64 bytes)")]
    SizeOverflow(String),
    #[error("`{0}` is not a duration: write parts like 60s, 1m30s, 500ms, 2h (units: ns, us, ms, s, m, h)")]
    BadDuration(String),
    #[error("`{0}` is too long a duration")]
    DurationOverflow(String),
}

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const KIB: u64 = 1024;
    pub const MIB: u64 = 1024 * 1024;
    pub const GIB: u64 = 1024 * 1024 * 1024;

    pub const fn kib(n: u64) -> Self {
        Bytes(n * Self::KIB)
    }
    pub const fn mib(n: u64) -> Self {
        Bytes(n * Self::MIB)
    }
    pub const fn gib(n: u64) -> Self {
        Bytes(n * Self::GIB)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
    /// Whole KiB, for fields such as `chunk_kib` in exports.
    pub const fn as_kib(self) -> u64 {
        self.0 / Self::KIB
    }
    pub fn as_mib_f64(self) -> f64 {
        self.0 as f64 / Self::MIB as f64
    }
    pub fn is_power_of_two(self) -> bool {
        self.0.is_power_of_two()
    }

    /// The shortest exact spelling in fio's syntax (`4k`, `512k`, `10g`, `1536`).
    pub fn to_fio(self) -> String {
        const UNITS: [(u64, &str); 5] = [
            (1 << 50, "p"),
            (1 << 40, "t"),
            (1 << 30, "g"),
            (1 << 20, "m"),
            (1 << 10, "k"),
        ];
        for (scale, suffix) in UNITS {
            if self.0 >= scale && self.0.is_multiple_of(scale) {
                return format!("{}{}", self.0 / scale, suffix);
            }
        }
        self.0.to_string()
    }
}

impl fmt::Display for Bytes {
    /// Human spelling with binary units: `4KiB`, `512KiB`, `10GiB`, `1.5GiB`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 5] = [
            (1 << 50, "PiB"),
            (1 << 40, "TiB"),
            (1 << 30, "GiB"),
            (1 << 20, "MiB"),
            (1 << 10, "KiB"),
        ];
        for (scale, suffix) in UNITS {
            if self.0 >= scale {
                let v = self.0 as f64 / scale as f64;
                return if self.0.is_multiple_of(scale) {
                    write!(f, "{}{}", self.0 / scale, suffix)
                } else {
                    write!(f, "{:.1}{}", v, suffix)
                };
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_bytes(s)
    }
}

fn parse_bytes(input: &str) -> Result<Bytes, UnitError> {
    let s = input.trim();
    let bad = || UnitError::BadSize(input.to_string());
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return Err(bad());
    }
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        _ => return Err(bad()),
    };
    let overflow = || UnitError::SizeOverflow(input.to_string());
    if let Some((int, frac)) = num.split_once('.') {
        // "1.5g": exact when the fraction resolves to whole bytes.
        let int: u64 = int.parse().map_err(|_| overflow())?;
        let whole = int.checked_mul(1u64 << shift).ok_or_else(overflow)?;
        let frac_val: f64 = format!("0.{frac}").parse().map_err(|_| bad())?;
        let extra = frac_val * (1u64 << shift) as f64;
        if extra.fract() != 0.0 {
            return Err(bad());
        }
        return whole
            .checked_add(extra as u64)
            .map(Bytes)
            .ok_or_else(overflow);
    }
    let n: u64 = num.parse().map_err(|_| overflow())?;
    n.checked_mul(1u64 << shift).map(Bytes).ok_or_else(overflow)
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_fio())
    }
}

/// A unit written as a bare number or as text with its unit (`4096` or `"4k"`, `60` or
/// `"60s"`), as plans and stored cases have them.
#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Int(u64),
    Str(String),
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Int(n) => Ok(Bytes(n)),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0 + o.0)
    }
}
impl Sub for Bytes {
    type Output = Bytes;
    fn sub(self, o: Bytes) -> Bytes {
        Bytes(self.0 - o.0)
    }
}
impl Mul<u64> for Bytes {
    type Output = Bytes;
    fn mul(self, k: u64) -> Bytes {
        Bytes(self.0 * k)
    }
}
impl Div<u64> for Bytes {
    type Output = Bytes;
    fn div(self, k: u64) -> Bytes {
        Bytes(self.0 / k)
    }
}

/// A duration or an instant in nanoseconds. The simulator's clock uses it too: integer
/// time means events replay identically on every machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);
    pub const fn from_secs(s: u64) -> Self {
        Nanos(s * 1_000_000_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Nanos(ms * 1_000_000)
    }
    pub const fn from_micros(us: u64) -> Self {
        Nanos(us * 1_000)
    }
    /// From fractional milliseconds, rounded to the nearest nanosecond.
    pub fn from_millis_f64(ms: f64) -> Self {
        Nanos((ms * 1e6).round().max(0.0) as u64)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Nanos((s * 1e9).round().max(0.0) as u64)
    }
    pub const fn get(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn saturating_sub(self, o: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(o.0))
    }
    /// The shortest exact spelling fio accepts (`60s`, `90s`, `500ms`).
    pub fn to_fio(self) -> String {
        if self.0.is_multiple_of(1_000_000_000) {
            format!("{}s", self.0 / 1_000_000_000)
        } else if self.0.is_multiple_of(1_000_000) {
            format!("{}ms", self.0 / 1_000_000)
        } else {
            format!("{}us", self.0.div_ceil(1_000))
        }
    }
}

impl fmt::Display for Nanos {
    /// `1m30s`, `60s`, `500ms`, `1h2m3s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return write!(f, "0s");
        }
        if !ns.is_multiple_of(1_000_000_000) {
            return if ns.is_multiple_of(1_000_000) {
                write!(f, "{}ms", ns / 1_000_000)
            } else if ns.is_multiple_of(1_000) {
                write!(f, "{}us", ns / 1_000)
            } else {
                write!(f, "{}ns", ns)
            };
        }
        let mut s = ns / 1_000_000_000;
        let h = s / 3600;
        s %= 3600;
        let m = s / 60;
        s %= 60;
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if m > 0 {
            write!(f, "{m}m")?;
        }
        if s > 0 {
            write!(f, "{s}s")?;
        }
        Ok(())
    }
}

impl FromStr for Nanos {
    type Err = UnitError;
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let s = input.trim();
        let bad = || UnitError::BadDuration(input.to_string());
        let over = || UnitError::DurationOverflow(input.to_string());
        if s.is_empty() {
            return Err(bad());
        }
        // A bare number is seconds, as in fio's runtime=.
        if s.bytes().all(|b| b.is_ascii_digit()) {
            let n: u64 = s.parse().map_err(|_| over())?;
            return n.checked_mul(1_000_000_000).map(Nanos).ok_or_else(over);
        }
        let mut total: u64 = 0;
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
            if digits == 0 {
                return Err(bad());
            }
            let n: u64 = rest[..digits].parse().map_err(|_| over())?;
            rest = &rest[digits..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(rest.len());
            let scale: u64 = match &rest[..unit_len] {
                "ns" => 1,
                "us" | "µs" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                "m" | "min" => 60_000_000_000,
                "h" => 3_600_000_000_000,
                _ => return Err(bad()),
            };
            rest = &rest[unit_len..];
            let part = n.checked_mul(scale).ok_or_else(over)?;
            total = total.checked_add(part).ok_or_else(over)?;
        }
        Ok(Nanos(total))
    }
}

impl Serialize for Nanos {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Nanos {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Raw::deserialize(d)? {
            Raw::Int(n) => n
                .checked_mul(1_000_000_000)
                .map(Nanos)
                .ok_or_else(|| serde::de::Error::custom("duration too long")),
            Raw::Str(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, o: Nanos) -> Nanos {
        Nanos(self.0 + o.0)
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, o: Nanos) {
        self.0 += o.0;
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, o: Nanos) -> Nanos {
        Nanos(self.0 - o.0)
    }
}
impl Mul<u64> for Nanos {
    type Output = Nanos;
    fn mul(self, k: u64) -> Nanos {
        Nanos(self.0 * k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_parse_like_fio() {
        assert_eq!("4k".parse::<Bytes>().unwrap(), Bytes(4096));
        assert_eq!("512KiB".parse::<Bytes>().unwrap(), Bytes(512 * 1024));
        assert_eq!("10g".parse::<Bytes>().unwrap(), Bytes(10 << 30));
        assert_eq!("1.5g".parse::<Bytes>().unwrap(), Bytes(3 << 29));
        assert_eq!("4096".parse::<Bytes>().unwrap(), Bytes(4096));
        assert_eq!("16T".parse::<Bytes>().unwrap(), Bytes(16 << 40));
        for bad in [
            "",
            "k",
            "4q",
            "-4k",
            "4..k",
            ".5k",
            "1.0000001k",
            "99999999999p",
        ] {
            assert!(bad.parse::<Bytes>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn durations_parse_with_parts() {
        assert_eq!("60s".parse::<Nanos>().unwrap(), Nanos::from_secs(60));
        assert_eq!("1m30s".parse::<Nanos>().unwrap(), Nanos::from_secs(90));
        assert_eq!("500ms".parse::<Nanos>().unwrap(), Nanos::from_millis(500));
        assert_eq!("2h".parse::<Nanos>().unwrap(), Nanos::from_secs(7200));
        assert_eq!("30".parse::<Nanos>().unwrap(), Nanos::from_secs(30));
        for bad in ["", "s", "1x", "m1", "1.5s", "-1s"] {
            assert!(bad.parse::<Nanos>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn display_is_human() {
        assert_eq!(Bytes(4096).to_string(), "4KiB");
        assert_eq!(Bytes(3 << 29).to_string(), "1.5GiB");
        assert_eq!(Nanos::from_secs(90).to_string(), "1m30s");
        assert_eq!(Nanos::from_millis(500).to_string(), "500ms");
    }

    proptest! {
        #[test]
        fn bytes_roundtrip_through_fio_spelling(n in 0u64..(1u64 << 62)) {
            let b = Bytes(n);
            prop_assert_eq!(b.to_fio().parse::<Bytes>().unwrap(), b);
        }

        #[test]
        fn nanos_roundtrip_through_display(n in 0u64..(1u64 << 60)) {
            let t = Nanos(n);
            prop_assert_eq!(t.to_string().parse::<Nanos>().unwrap(), t);
        }

        #[test]
        fn any_string_is_ok_or_error_never_panic(s in ".{0,24}") {
            let _ = s.parse::<Bytes>();
            let _ = s.parse::<Nanos>();
        }
    }
}
