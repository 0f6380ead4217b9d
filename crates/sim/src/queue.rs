//! The event queue: a 4-ary min-heap on (time, sequence number).
//!
//! Keys are unique (the sequence number never repeats), so the order events come out in is
//! fully determined by the keys, whatever the heap's shape. Four children per node halve
//! the depth of a binary heap and keep siblings in one cache line, which matters because
//! every simulated I/O passes through here several times.

use raidlab_core::Nanos;

/// An event's key, (time, sequence number), as one integer: comparing it is one 128-bit
/// comparison, not two 64-bit ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(u128);

impl Key {
    #[inline]
    pub fn new(at: Nanos, seq: u64) -> Key {
        Key((at.0 as u128) << 64 | seq as u128)
    }
    #[inline]
    pub fn at(self) -> Nanos {
        Nanos((self.0 >> 64) as u64)
    }
    #[inline]
    pub fn seq(self) -> u64 {
        self.0 as u64
    }
}

pub struct EventQueue<E> {
    items: Vec<(Key, E)>,
}

const ARITY: usize = 4;

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { items: Vec::new() }
    }

    /// The earliest event's key.
    #[inline]
    pub fn peek(&self) -> Option<Key> {
        self.items.first().map(|e| e.0)
    }

    #[inline]
    pub fn push(&mut self, at: Nanos, seq: u64, ev: E) {
        let key = Key::new(at, seq);
        let mut i = self.items.len();
        self.items.push((key, ev));
        let items = &mut self.items[..];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if items[parent].0 <= key {
                break;
            }
            items[i] = items[parent];
            i = parent;
        }
        items[i] = (key, ev);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, u64, E)> {
        let last = self.items.pop()?;
        let items = &mut self.items[..];
        let n = items.len();
        if n == 0 {
            return Some((last.0.at(), last.0.seq(), last.1));
        }
        let top = items[0];
        let key = last.0;
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let mut best = first;
            let mut best_key = items[first].0;
            for (c, item) in items
                .iter()
                .enumerate()
                .take((first + ARITY).min(n))
                .skip(first + 1)
            {
                if item.0 < best_key {
                    best = c;
                    best_key = item.0;
                }
            }
            if best_key >= key {
                break;
            }
            items[i] = items[best];
            i = best;
        }
        items[i] = last;
        Some((top.0.at(), top.0.seq(), top.1))
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
