//! Natural ordering of labels: `qd2` before `qd16`, `loop2` before `loop13`.
//!
//! Labels in raidlab carry numbers (queue depths, block sizes, device names, bench-fio
//! folders); sorted as text they come out as `qd16, qd2, qd32`. Everything a person reads
//! in a list (report groups, imported files, series) sorts with [`cmp`] instead.

use std::cmp::Ordering;

/// Runs of ASCII digits compare by value, everything else character by character; ties
/// (`qd02` vs `qd2`) fall back to plain text order so the order is total.
pub fn cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let (dx, rx) = digits(x);
                let (dy, ry) = digits(y);
                let (tx, ty) = (trim_zeros(dx), trim_zeros(dy));
                let by_value = tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty));
                if by_value != Ordering::Equal {
                    return by_value;
                }
                (x, y) = (rx, ry);
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    s.split_at(n)
}

fn trim_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|c| **c == b'0').count();
    &s[n..]
}

/// A string that orders naturally, as a map key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Natural(pub String);

impl Ord for Natural {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp(&self.0, &other.0)
    }
}

impl PartialOrd for Natural {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for Natural {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn numbers_by_value() {
        let mut v = vec![
            "qd16", "qd2", "qd32", "qd1", "loop13", "loop2", "loop1x", "4k", "16k",
        ];
        v.sort_by(|a, b| cmp(a, b));
        assert_eq!(
            v,
            ["4k", "16k", "loop1x", "loop2", "loop13", "qd1", "qd2", "qd16", "qd32"]
        );
        assert_eq!(cmp("run-02", "run-2"), "run-02".cmp("run-2"));
        assert_eq!(cmp("a", "a"), Ordering::Equal);
    }

    proptest! {
        /// A total order: antisymmetric and consistent with equality.
        #[test]
        fn total(a in "[a-c0-9]{0,6}", b in "[a-c0-9]{0,6}") {
            prop_assert_eq!(cmp(&a, &b), cmp(&b, &a).reverse());
            prop_assert_eq!(cmp(&a, &b) == Ordering::Equal, a == b);
        }
    }
}
