//! md's write-intent bitmap (`drivers/md/md-bitmap.c`), as bookkeeping the engine consults.
//!
//! One bit covers a *bitmap chunk* of the array (64 MiB: mdadm's default for internal
//! bitmaps, `add_internal_bitmap1`). Per chunk md keeps a counter: 0 = clean on disk; 2 +
//! writes in flight once a write has set the bit; 1 = idle, seen once by the daemon.
//! - `md_bitmap_startwrite` on a clean chunk sets the bit in the bitmap page and marks the
//!   page dirty; the write may not reach the members until the page is on disk
//!   (`md_bitmap_unplug` writes it synchronously to every member, then the data goes).
//!   A write to a chunk whose bit is already on disk pays nothing.
//! - The bitmap daemon runs every `daemon_sleep` (5 s, mdadm's `--delay`): an idle chunk
//!   (no write in flight) drops 2 → 1, and 1 → 0 on the next pass, which clears the bit
//!   and writes the page lazily (nobody waits for that write).
//!
//! So random writes over a span of many chunks keep paying a synchronous page write on all
//! members (a seek to the bitmap at the start of each disk and back), while sequential
//! writes pay once per 64 MiB.

use raidlab_core::Nanos;

/// Bytes of the array one bit stands for: mdadm 4.x's default for internal bitmaps.
pub const CHUNK: u64 = 64 << 20;
/// The bitmap daemon's period (`daemon_sleep`, mdadm `--delay` default).
pub const DAEMON: Nanos = Nanos(5_000_000_000);
/// `bitmap_super_t` in front of the bits in the first bitmap page.
const SUPER_BYTES: u64 = 256;

#[derive(Debug, Clone, Copy, Default)]
struct Counter {
    /// Writes started and not yet ended.
    writes: u32,
    /// 0 clean, 1 idle once, 2 set (md's counter without the in-flight count).
    level: u8,
    /// The flush (by number) that puts this chunk's bit on disk.
    durable_at: u64,
}

/// The bitmap's state: counters per chunk and the page flushes md has started and finished.
#[derive(Debug)]
pub struct Bitmap {
    counters: Vec<Counter>,
    /// Bytes md writes to each member per page write (superblock + bits, whole sectors).
    page_bytes: u64,
    started: u64,
    done: u64,
    in_flight: bool,
    /// A bit was set after the last flush started: another flush is needed.
    unflushed: bool,
}

impl Bitmap {
    /// A bitmap over `space` bytes (what md's bitmap covers: a member for raid1/5/6, the
    /// array for raid10), all clean: a freshly built or `--assume-clean` array.
    pub fn new(space: u64) -> Bitmap {
        let bits = space.div_ceil(CHUNK).max(1);
        let bytes = (SUPER_BYTES + bits.div_ceil(8)).div_ceil(512) * 512;
        Bitmap {
            counters: vec![Counter::default(); bits as usize],
            page_bytes: bytes.min(4096),
            started: 0,
            done: 0,
            in_flight: false,
            unflushed: false,
        }
    }

    pub fn page_bytes(&self) -> u64 {
        self.page_bytes
    }

    fn chunks(&self, first: u64, last: u64) -> std::ops::RangeInclusive<usize> {
        let top = self.counters.len() - 1;
        (first / CHUNK).min(top as u64) as usize..=(last / CHUNK).min(top as u64) as usize
    }

    /// A write to bytes `first..=last` of the bitmap's space begins. `None`: its bits are on
    /// disk, go ahead; `Some(n)`: wait until flush `n` has completed.
    pub fn start_write(&mut self, first: u64, last: u64) -> Option<u64> {
        let mut wait = None;
        for i in self.chunks(first, last) {
            let c = &mut self.counters[i];
            if c.level == 0 {
                c.durable_at = self.started + 1;
                self.unflushed = true;
            }
            c.level = 2;
            c.writes += 1;
            if c.durable_at > self.done {
                wait = wait.max(Some(c.durable_at));
            }
        }
        wait
    }

    /// The write to `first..=last` has completed on the members.
    pub fn end_write(&mut self, first: u64, last: u64) {
        for i in self.chunks(first, last) {
            self.counters[i].writes -= 1;
        }
    }

    /// Whether a page flush should start now (bits wait and none is under way).
    pub fn wants_flush(&self) -> bool {
        self.unflushed && !self.in_flight
    }

    pub fn begin_flush(&mut self) {
        self.started += 1;
        self.in_flight = true;
        self.unflushed = false;
    }

    /// The flush finished on every member; returns its number.
    pub fn end_flush(&mut self) -> u64 {
        self.done += 1;
        self.in_flight = false;
        self.done
    }

    /// One daemon pass; true when bits were cleared (the page must be written).
    pub fn daemon(&mut self) -> bool {
        let mut cleared = false;
        for c in self.counters.iter_mut().filter(|c| c.writes == 0) {
            match c.level {
                2 => c.level = 1,
                1 => {
                    c.level = 0;
                    cleared = true;
                }
                _ => {}
            }
        }
        cleared
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_write_waits_for_a_flush_later_ones_do_not() {
        let mut b = Bitmap::new(10 * CHUNK);
        assert_eq!(b.start_write(0, 4095), Some(1));
        assert!(b.wants_flush());
        b.begin_flush();
        // Same chunk while the flush is under way: waits for the same flush.
        assert_eq!(b.start_write(4096, 8191), Some(1));
        assert!(!b.wants_flush());
        assert_eq!(b.end_flush(), 1);
        b.end_write(0, 4095);
        b.end_write(4096, 8191);
        assert_eq!(b.start_write(CHUNK - 1, CHUNK - 1), None);
        b.end_write(CHUNK - 1, CHUNK - 1);
    }

    #[test]
    fn daemon_clears_an_idle_chunk_on_its_second_pass() {
        let mut b = Bitmap::new(10 * CHUNK);
        b.start_write(0, 0);
        b.begin_flush();
        b.end_flush();
        assert!(!b.daemon(), "a write in flight keeps the bit");
        b.end_write(0, 0);
        assert!(!b.daemon(), "first idle pass only marks it");
        assert!(b.daemon(), "second idle pass clears it");
        assert_eq!(
            b.start_write(0, 0),
            Some(2),
            "clean again: the next write pays"
        );
    }

    #[test]
    fn page_size_follows_the_bit_count() {
        assert_eq!(Bitmap::new(500_000_000_000).page_bytes(), 1536);
        assert_eq!(Bitmap::new(16_000_000_000_000).page_bytes(), 4096);
    }
}
