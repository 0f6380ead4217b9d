//! md's background work on the members: the initial resync, and the write-intent
//! bitmap's page writes (set before a write, cleared by the daemon after).

use super::*;

impl<D: Member> Engine<D> {
    /// md's sync thread: issue windows while its governor and buffers allow, checking its
    /// speed after each as `md_do_sync` does (see `resync.rs`).
    pub(super) fn resync_pump(&mut self) {
        let busy = self.foreground;
        loop {
            let r = self.resync.as_mut().expect("resync");
            // The sync thread sleeps in raise_barrier while host I/O drains.
            if !r.can_issue() || self.barrier.window.is_some() {
                return;
            }
            let (offset, len) = r.issue();
            self.raise_barrier(offset, len);
            let now = self.now;
            let r = self.resync.as_mut().expect("resync");
            match r.check(now, busy) {
                Next::Go => {}
                // (A window may have completed at once, from a drive's cache.)
                Next::Drain if r.in_flight == 0 => {}
                Next::Drain => {
                    r.draining = true;
                    return;
                }
                Next::Sleep => {
                    r.sleeping = true;
                    self.schedule(now + resync::BACKOFF, Ev::ResyncWake);
                    return;
                }
            }
        }
    }

    /// Whether sync windows raise raid10's barrier: during md's recovery (btrfs has no
    /// such barrier). md raises it for
    /// the initial resync too, but the VM lab's kernel loses a fifth of its IOPS to a
    /// raid10 resync (as the model without it predicts) and half to a recovery (as it
    /// does with it); docs/simulator.md has the figures.
    #[inline]
    pub(super) fn barrier_applies(&self) -> bool {
        self.geo.level == Level::Raid10 && self.recovering && !self.replacing
    }

    /// raid10: a sync window raises the barrier, then goes to the members once the host
    /// I/O inside md has drained (at once when none is). Other levels: at once.
    fn raise_barrier(&mut self, offset: u64, len: u64) {
        if !self.barrier_applies() {
            self.resync_window(offset, len);
            return;
        }
        self.barrier.raised += 1;
        if self.barrier.pending > 0 {
            self.barrier.window = Some((offset, len));
        } else {
            self.resync_window(offset, len);
        }
    }

    /// raid10: a host I/O inside md completed; the last one lets a waiting window go.
    pub(super) fn barrier_host_done(&mut self) {
        self.barrier.pending -= 1;
        if self.barrier.pending == 0 {
            if let Some((offset, len)) = self.barrier.window.take() {
                self.resync_window(offset, len);
                self.resync_pump();
            }
        }
    }

    /// raid10: a sync window completed; when none holds the barrier any more, the host
    /// I/Os held at it enter md (before the sync thread raises it again).
    pub(super) fn lower_barrier(&mut self) {
        if !self.barrier_applies() {
            return;
        }
        self.barrier.raised -= 1;
        if self.barrier.raised > 0 {
            return;
        }
        // All of them: fio's thread, woken from `wait_barrier`, submits what it holds
        // before md's sync thread, woken by the same completion, raises the barrier again.
        while let Some(host) = self.barrier.held.pop_front() {
            self.barrier.pending += 1;
            self.enter_md(host);
        }
    }

    /// The sync thread wakes from its sleep.
    pub(super) fn resync_wake(&mut self) {
        self.resync.as_mut().expect("resync").sleeping = false;
        self.resync_pump();
    }

    /// One window: read the members that hold the source copy or the data, then write the
    /// members being made consistent (see `resync.rs` for each level).
    fn resync_window(&mut self, offset: u64, len: u64) {
        let g = &self.geo;
        let n = g.disks;
        let failed = |d: &u32| self.failed >> d & 1 == 1;
        let (reads, written): (Vec<u32>, Vec<u32>) = if self.recovering {
            // Recovery of fresh members: read the survivors (raid5/6) or a surviving copy
            // (mirrors: the first member that has one; raid10: the neighbour before, which
            // holds the copy in near layouts), write the fresh members.
            let written: Vec<u32> = (0..n).filter(failed).collect();
            let mut reads: Vec<u32> = match g.level {
                Level::Raid5 | Level::Raid6 => (0..n).filter(|d| !failed(d)).collect(),
                Level::Raid10 => written
                    .iter()
                    .filter_map(|&d| (1..n).map(|k| (d + n - k) % n).find(|s| !failed(s)))
                    .collect(),
                _ => (0..n).find(|d| !failed(d)).into_iter().collect(),
            };
            reads.sort_unstable();
            reads.dedup();
            (reads, written)
        } else {
            let written: Vec<u32> = match g.level {
                Level::Raid5 => vec![n - 1],
                Level::Raid6 => {
                    let p = g.parity_map(offset / g.chunk * g.data_disks() as u64);
                    vec![p.parity, p.q.expect("raid6 has Q")]
                }
                Level::Raid10 => (0..n).filter(|d| d % g.copies() != 0).collect(),
                _ => (1..n).collect(),
            };
            let reads = match g.level {
                Level::Raid6 => (0..n).collect(),
                _ => (0..n).filter(|d| !written.contains(d)).collect(),
            };
            (reads, written)
        };
        let part = self.alloc_part();
        let p = self.parts.get(part);
        p.job = Job::Resync;
        p.phases[0].0 = false;
        p.phases[0]
            .1
            .extend(reads.iter().map(|&disk| Piece { disk, offset, len }));
        p.phases[1].0 = true;
        p.phases[1]
            .1
            .extend(written.iter().map(|&disk| Piece { disk, offset, len }));
        p.phase_count = 2;
        self.start_phase(part);
    }

    // ------------------------------------------------------------ write-intent bitmap

    /// Bytes of the bitmap's space a host write covers: raid5/6 bitmaps count member
    /// sectors (whole stripes: a chunk divides the bitmap chunk), raid1/10 array sectors.
    pub(super) fn bitmap_range(&self, offset: u64, len: u64) -> (u64, u64) {
        let g = &self.geo;
        if matches!(g.level, Level::Raid5 | Level::Raid6) {
            let sd = g.stripe_data();
            (
                offset / sd * g.chunk,
                ((offset + len - 1) / sd + 1) * g.chunk - 1,
            )
        } else {
            (offset, offset + len - 1)
        }
    }

    /// `md_bitmap_startwrite`: a write to a clean chunk waits until the bitmap page with
    /// its bit is on every member; one to a chunk already dirty on disk goes straight on.
    pub(super) fn bitmap_write(&mut self, host: u32, offset: u64, len: u64) {
        let (first, last) = self.bitmap_range(offset, len);
        let bm = self.bitmap.as_mut().expect("bitmap");
        match bm.start_write(first, last) {
            None => self.dispatch(host, true, offset, len),
            Some(flush) => {
                self.bitmap_waiting.push(BitmapWait {
                    flush,
                    host,
                    offset,
                    len,
                });
                self.bitmap_flush();
            }
        }
    }

    /// `md_bitmap_unplug`: write the dirty page to every member (at the start of each, where
    /// the internal bitmap lives before the data), if bits wait and no flush is under way.
    pub(super) fn bitmap_flush(&mut self) {
        let bm = self.bitmap.as_mut().expect("bitmap");
        if !bm.wants_flush() {
            return;
        }
        bm.begin_flush();
        self.bitmap_page_write(Job::BitmapFlush);
    }

    pub(super) fn bitmap_page_write(&mut self, job: Job) {
        let len = self.bitmap.as_ref().expect("bitmap").page_bytes();
        let part = self.alloc_part();
        let disks = self.geo.disks;
        let p = self.parts.get(part);
        p.job = job;
        p.phases[0].0 = true;
        p.phases[0].1.extend((0..disks).map(|disk| Piece {
            disk,
            offset: 0,
            len,
        }));
        p.phase_count = 1;
        self.start_phase(part);
    }

    /// A flush is on disk: the writes it covered go to the array; start the next flush if
    /// bits were set meanwhile.
    pub(super) fn bitmap_flushed(&mut self) {
        let bm = self.bitmap.as_mut().expect("bitmap");
        let done = bm.end_flush();
        let mut waiting = std::mem::take(&mut self.bitmap_waiting);
        for w in waiting.iter().filter(|w| w.flush <= done) {
            self.dispatch(w.host, true, w.offset, w.len);
        }
        waiting.retain(|w| w.flush > done);
        waiting.append(&mut self.bitmap_waiting);
        self.bitmap_waiting = waiting;
        self.bitmap_flush();
    }

    /// The daemon's pass every `daemon_sleep`; cleared bits are written lazily.
    pub(super) fn bitmap_daemon(&mut self) {
        if self.bitmap.as_mut().expect("bitmap").daemon() {
            self.bitmap_page_write(Job::BitmapClear);
        }
        self.schedule(self.now + bitmap::DAEMON, Ev::BitmapDaemon);
    }
}
