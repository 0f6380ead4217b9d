//! The event queue: a 4-ary min-heap on (time, sequence number).
//!
//! Keys are unique (the sequence number never repeats), so the order events come out in is
//! fully determined by the keys, whatever the heap's shape. Four children per node halve
//! the depth of a binary heap and keep siblings in one cache line, which matters because
//! every simulated I/O passes through here several times.

use raidlab_core::Nanos;

pub struct EventQueue<E> {
    items: Vec<(Nanos, u64, E)>,
}

const ARITY: usize = 4;

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { items: Vec::new() }
    }

    /// The earliest event's key.
    pub fn peek(&self) -> Option<(Nanos, u64)> {
        self.items.first().map(|&(t, s, _)| (t, s))
    }

    pub fn push(&mut self, at: Nanos, seq: u64, ev: E) {
        let mut i = self.items.len();
        self.items.push((at, seq, ev));
        let item = self.items[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if (self.items[parent].0, self.items[parent].1) <= (at, seq) {
                break;
            }
            self.items[i] = self.items[parent];
            i = parent;
        }
        self.items[i] = item;
    }

    pub fn pop(&mut self) -> Option<(Nanos, u64, E)> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = self.items[0];
        let n = self.items.len();
        let key = (last.0, last.1);
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            for c in first + 1..(first + ARITY).min(n) {
                if (self.items[c].0, self.items[c].1) < (self.items[best].0, self.items[best].1) {
                    best = c;
                }
            }
            if (self.items[best].0, self.items[best].1) >= key {
                break;
            }
            self.items[i] = self.items[best];
            i = best;
        }
        self.items[i] = last;
        Some(top)
    }
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        EventQueue::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_key_order() {
        let mut q = EventQueue::new();
        let mut x: u64 = 12345;
        let mut keys = Vec::new();
        for seq in 0..1000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let t = Nanos(x >> 54);
            keys.push((t, seq));
            q.push(t, seq, seq as u32);
            if seq % 3 == 0 {
                let (t, s, e) = q.pop().unwrap();
                keys.retain(|k| *k != (t, s));
                assert_eq!(e as u64, s);
                assert!(keys.iter().all(|k| *k > (t, s)));
            }
        }
        let mut last = (Nanos(0), 0);
        while let Some((t, s, _)) = q.pop() {
            assert!((t, s) > last || last == (Nanos(0), 0));
            last = (t, s);
        }
    }
}
