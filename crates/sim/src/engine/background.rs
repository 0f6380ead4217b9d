//! md's background work on the members: the initial resync, and the write-intent
//! bitmap's page writes (set before a write, cleared by the daemon after).

use super::*;

/// The odds that fio's thread, woken at md's barrier together with md's sync thread,
/// submits its next I/O before the sync thread raises the barrier again. Calibrated on the
/// VM lab's raid10 recovery under 4 KiB random reads at QD4 (`RAIDLAB_VM_TRACE=1`): the
/// guest's fio got 2.2 reads in between two of the sync's turns on average (530 turns),
/// and with these odds the simulator's turns carry 2.18 (1 + 0.6 + 0.6² + 0.6³). The
/// guest's races are not a fair coin each — the sync thread won the first of them in 338
/// of 451 wakes, and fio, once ahead, often stayed ahead — so this gives the mean, not the
/// spread (docs/vm-lab.md). A later trace let one of fio's reads through in 443 of 713 turns;
/// lowering the odds to match moves the governed raid10 gap from the recovery into the
/// workload, because the rest of that guest's lead is its slow CPU's own race (vm-lab.md,
/// "The same trace read turn by turn").
const FIO_WINS_THE_RACE: f64 = 0.6;

/// The largest request the block layer builds from merged bios: `max_sectors_kb`'s
/// default (`BLK_DEF_MAX_SECTORS`, 2560 sectors), unless the member's driver takes fewer
/// segments ([`segment_merge_max`]).
pub const MERGE_MAX: u64 = 1280 << 10;

/// The largest request a member whose driver takes `segments` segments builds of md's
/// merged page buffers, each 4 KiB page one segment and each bio merged whole: `bio_pages`
/// pages a bio, and never more than [`MERGE_MAX`]. raid5/6's stripe pages go one per bio:
/// on virtio-blk 254 pages, 1,016 KiB (the guest's raid5/6 recovery requests in
/// docs/vm-lab.md stop there exactly). raid1/10's sync buffers are 16 pages each: 15 of
/// them on virtio-blk, 960 KiB (the guest's raid1 recovery requests stop at 15 buffers in
/// 208 of 747, at 20 — where enough of their pages happened to be adjacent — in 75).
/// A SATA port's AHCI driver takes 168 segments: 672 KiB of stripe pages, 640 KiB of
/// sync buffers (the disk model's `max_segments`). raid5/6's sync fills each request to
/// this wherever it falls in a window ([`Engine::resync_go`]); raid1/10's goes in whole
/// windows.
pub const fn segment_merge_max(segments: u64, bio_pages: u64) -> u64 {
    let bytes = segments / bio_pages * bio_pages * 4096;
    if bytes < MERGE_MAX {
        bytes
    } else {
        MERGE_MAX
    }
}

/// Stripes of each sync window raid5d has submitted to the members when md's sync thread,
/// having handed it the window's 32, looks at the idle test. The VM lab's raid5 recovery
/// under 4 KiB random reads at QD4 (`RAIDLAB_VM_TRACE=1`, docs/vm-lab.md): of the 1,276
/// looks that followed an idle one, 708 found 4-7 more stripes submitted to a survivor
/// than the look before (mode 5, in 258), 294 none (the first look after the thread had
/// waited); after a drain, 0-6 of the new window's by its look.
pub(super) const RAID5D_AHEAD: u64 = 5;

/// Stripe heads a raid5/6 sync window holds: one per 4 KiB row of md's check window.
pub(super) const WINDOW_ROWS: u64 = resync::STEP / ROW;

impl<D: Member> Engine<D> {
    /// md's sync thread: issue windows while its governor and buffers allow, checking its
    /// speed after each as `md_do_sync` does (see `resync.rs`).
    ///
    /// What it issues without waiting in between reaches each member as one request, up
    /// to the member's largest request ([`MERGE_MAX`], `Engine::merge_max`): `md_do_sync` (and raid5d, which
    /// submits a raid5/6 sync's stripes) holds a block plug, and the block layer merges
    /// the contiguous bios under it until the thread sleeps. So a sync that goes on
    /// without waiting costs its members few, large commands; one that waits after each
    /// window, one command per window. (Not for raid6's initial resync, whose parity
    /// members change from chunk to chunk, nor for btrfs replace, which issues its own
    /// reads.)
    pub(super) fn resync_pump(&mut self) {
        self.resync_go(None);
    }

    /// `resync_pump`, after a window that waited at the barrier has passed it: md's sync
    /// thread returns from `raise_barrier`, sends that window and checks its speed, as
    /// after any other.
    pub(super) fn resync_go(&mut self, passed: Option<(u64, u64)>) {
        let merges = !self.replacing && (self.recovering || self.geo.level != Level::Raid6);
        let in_cache = self.sync_in_cache();
        // The thread sends every window its buffers let it have and the block layer
        // splits them at the member's largest request: raid5/6 as many as the stripe cache
        // has heads free (the VM lab's raid5 on slow members: its whole cache of 328 heads
        // as 1,016 + 296 KiB, read, then written, then the next), raid1/10 every buffer it
        // finds free (the guest's raid1 sends 31 after a drain, which reach the survivor
        // as 20 + 11 or 15 + 15 + 1).
        let largest = self.merge_max;
        let mut group = passed;
        let r = self.resync.as_mut().expect("resync");
        let recheck = !r.sleeping && std::mem::take(&mut r.recheck);
        let mut look = passed.is_some() || recheck;
        loop {
            if look {
                look = false;
                let now = self.now;
                let submitted = match self.idle_test {
                    Some(_) => self.submitted_by_look(group),
                    None => Vec::new(),
                };
                let r = self.resync.as_mut().expect("resync");
                let (foreground, idle_test) = (self.foreground, &mut self.idle_test);
                let busy = || match idle_test {
                    Some(t) => t.busy(&submitted),
                    None => foreground,
                };
                match r.check(now, busy) {
                    Next::Go => {}
                    Next::Drain => {
                        r.draining = true;
                        break;
                    }
                    Next::Sleep => {
                        r.sleeping = true;
                        r.recheck = true;
                        self.schedule(now + resync::BACKOFF, Ev::ResyncWake);
                        break;
                    }
                }
            }
            let r = self.resync.as_mut().expect("resync");
            // The sync thread sleeps in raise_barrier while host I/O drains.
            if !r.can_issue() || self.barrier.window.is_some() {
                break;
            }
            // A full request goes first (raid1/10: their sync buffers whole; raid5/6's
            // pages are cut below, at the request's last page).
            if let Some((at, l)) = group {
                if !merges || (!in_cache && l + r.next_len() > largest) {
                    self.resync_window(at, l);
                    group = None;
                    continue;
                }
            }
            // raid5/6 (merged): the rows whose stripe heads are free, up to a window.
            let most = if in_cache {
                match self.sync_takes_rows(merges) {
                    0 => break,
                    rows => rows * ROW,
                }
            } else {
                u64::MAX
            };
            // `raid10_sync_request` and `raid1_sync_request` start by letting host I/O that
            // waits at the barrier through: the thread sleeps a jiffy before it raises the
            // barrier again. Where a sync buffer takes less than that (SSDs), the barrier
            // drops in the meantime and the workload has the array to itself until the
            // thread wakes.
            if self.barrier_applies() && !self.barrier.held.is_empty() && !self.barrier.napped {
                self.barrier.napped = true;
                self.resync.as_mut().expect("resync").sleeping = true;
                self.schedule(self.now + JIFFY, Ev::ResyncWake);
                break;
            }
            self.barrier.napped = false;
            let r = self.resync.as_mut().expect("resync");
            let (offset, len) = r.issue_at_most(most);
            if !self.raise_barrier(offset, len) {
                // The thread sleeps at the barrier: what it issued goes now.
                break;
            }
            group = match group {
                Some((at, l)) => {
                    debug_assert_eq!(at + l, offset, "windows follow each other");
                    Some((at, l + len))
                }
                None => Some((offset, len)),
            };
            // raid5/6's stripes reach a member a page a bio, so the block layer fills a
            // request to its last segment and the rest of the window starts the next (the
            // VM lab's recovery requests: 672 KiB on 168 segments, 1,016 on virtio's 254).
            if in_cache && merges {
                self.sync_windows.insert(offset, (len, len));
                while let Some((at, l)) = group.filter(|&(_, l)| l >= largest) {
                    self.resync_window(at, largest);
                    group = (l > largest).then_some((at + largest, l - largest));
                }
            }
            look = self.resync.as_mut().expect("resync").look_due();
        }
        if let Some((at, len)) = group {
            self.resync_window(at, len);
        }
    }

    /// Sectors of the windows issued since the last request went out (`group`) that md
    /// has already submitted to each member when `md_do_sync` looks at the idle test: the
    /// simulator sends them after the look, as one request, where md submits them as it
    /// goes. raid1/10's sync thread submits a window's reads itself before it looks
    /// (`raid1_sync_request`, `raid10_sync_request`); raid5/6's hands its stripes to
    /// raid5d, which submits [`RAID5D_AHEAD`] of each window's by then. Each is sync I/O in
    /// flight that hides as much of the workload from that look.
    fn submitted_by_look(&self, group: Option<(u64, u64)>) -> Vec<i64> {
        let Some((at, len)) = group else {
            return Vec::new();
        };
        let unit = self.resync.as_ref().expect("resync").pace().unit;
        let bytes = if self.md_parity {
            (len.div_ceil(unit) * RAID5D_AHEAD * ROW).min(len)
        } else {
            len
        };
        let mut submitted = vec![0; self.devices.len()];
        for d in self.sync_members(at).0 {
            submitted[d as usize] = (bytes >> 9) as i64;
        }
        submitted
    }

    /// A raid5/6 sync request of the member range `offset`, `len` completed: the windows
    /// it finished (their last bytes were in it), and the stripe heads it gives back — a
    /// head a row it carried, as md frees a stripe when its write completes, and the
    /// head a window's part row took (the member's last).
    pub(super) fn sync_windows_done(&mut self, offset: u64, len: u64) -> (u64, u64, u64) {
        let end = offset + len;
        let first = self
            .sync_windows
            .range(..=offset)
            .next_back()
            .map_or(offset, |(&at, _)| at);
        let mut done = Vec::new();
        for (&at, (left, whole)) in self.sync_windows.range_mut(first..end) {
            let overlap = (at + *whole).min(end) - at.max(offset);
            *left -= overlap;
            if *left == 0 {
                done.push((at, *whole));
            }
        }
        let mut heads = len / ROW;
        let mut bytes = 0;
        for &(at, whole) in &done {
            self.sync_windows.remove(&at);
            // A window took a head a row, a part row too (the member's last).
            heads += whole.div_ceil(ROW) - whole / ROW;
            bytes += whole;
        }
        (done.len() as u64, bytes, heads)
    }

    /// Whether md's sync takes raid5/6 stripe heads, a head a row
    /// ([`Engine::sync_takes_rows`]), from the cache the workload's reads and writes use
    /// too (md only).
    #[inline]
    pub(super) fn sync_in_cache(&self) -> bool {
        self.md_parity
    }

    /// `raid5_sync_request` takes a stripe head a row: the rows of the next window whose
    /// heads are free (all of them where its requests go alone, `merges` false: raid6's
    /// initial resync). When the cache has none free (or requests already wait for a
    /// quarter of it to be free), md grows it by a head and the sync thread sleeps until
    /// heads come back. So what the sync sends after heads come back is what came back,
    /// not whole windows: the VM lab's raid5 recovery reads its survivors in requests of
    /// every size up to virtio's 254 pages, each about what the fresh member's last write
    /// gave back (`RAIDLAB_VM_TRACE=1`, docs/vm-lab.md); whole windows there sent 256 rows
    /// as 254 pages and 2 alone, each a request the members count.
    fn sync_takes_rows(&mut self, merges: bool) -> u64 {
        let rows = if merges {
            let r = self.resync.as_ref().expect("resync");
            r.next_len()
                .div_ceil(ROW)
                .min(WINDOW_ROWS)
                .min(self.free_heads())
        } else if self.heads_free(WINDOW_ROWS.min(self.cache_rows)) {
            // md takes a head a row and waits whenever none is free, so a window over more
            // rows than the cache holds (`stripe_cache = 17`) goes once all of it is free,
            // and holds it all (taken whole, it would wait for ever).
            WINDOW_ROWS
        } else {
            0
        };
        if rows > 0 {
            self.rows_in_use += rows;
            return rows;
        }
        self.cache_short();
        self.sync_waits_rows = true;
        0
    }

    /// Whether sync windows raise raid10's or raid1's barrier: during md's recovery (btrfs
    /// has no such barrier). md raises it for
    /// the initial resync too, but the VM lab's kernel loses a fifth of its IOPS to a
    /// raid10 resync (as the model without it predicts) and half to a recovery (as it
    /// does with it); docs/simulator.md has the figures.
    #[inline]
    pub(super) fn barrier_applies(&self) -> bool {
        matches!(self.geo.level, Level::Raid10 | Level::Raid1) && self.recovering && !self.replacing
    }

    /// md's `raise_barrier` for one window (raid1, raid10 recovering): it raises the
    /// barrier once no host I/O waits at it, and passes once the host I/O inside md (in
    /// its bucket) has drained. Whether it passed at once; if not, the window waits in
    /// `barrier.window` and goes alone when it passes. Other levels: always at once.
    fn raise_barrier(&mut self, offset: u64, len: u64) -> bool {
        if !self.barrier_applies() {
            return true;
        }
        if !self.barrier.held.is_empty() {
            self.barrier.window = Some((offset, len));
            self.barrier.unraised = true;
            return false;
        }
        self.barrier.raise(offset);
        if self.barrier.pending_at(offset) > 0 {
            self.barrier.window = Some((offset, len));
            return false;
        }
        true
    }

    /// A host I/O inside md completed; the last one in a waiting request's bucket lets
    /// it go.
    pub(super) fn barrier_host_done(&mut self, offset: u64) {
        if self.barrier.leave(offset) {
            let passed = self.barrier.window.take().expect("a waiting request");
            self.resync_go(Some(passed));
        }
    }

    /// A sync request of `windows` completed (raid1, raid10); when none holds the barrier
    /// any more, the host I/Os held at it enter md (before the sync thread raises it
    /// again). The window that waited for them, if it passes now.
    pub(super) fn lower_barrier(&mut self, windows: u32) -> Option<(u64, u64)> {
        if !self.barrier_applies() {
            return None;
        }
        self.barrier.raised -= windows;
        if self.barrier.raised > 0 {
            return None;
        }
        // Each job's thread, woken from `wait_barrier`, submits the I/O it slept on; md's
        // sync thread, woken by the same completion, waits for them (`nr_waiting`). The
        // I/Os a thread holds behind its own (completions it has yet to reap and
        // resubmit) race the sync thread's next `raise_barrier`: each wins with
        // [`FIO_WINS_THE_RACE`], and the first it loses stops them all (the rest wait for
        // the next turn). With no sync thread waiting, all go.
        let racing = self.barrier.unraised;
        let mut woken = std::mem::take(&mut self.barrier.woken);
        let mut lost = false;
        // Those that lose stay held, in their order, ahead of any that come later.
        let mut held = std::mem::take(&mut self.barrier.held);
        for host in held.drain(..) {
            let job = self.slot_job[self.hosts.get(host).slot as usize];
            let goes = if !woken.contains(&job) {
                woken.push(job);
                true
            } else {
                !racing
                    || !lost && {
                        lost = !self.race.gen_bool(FIO_WINS_THE_RACE);
                        !lost
                    }
            };
            if goes {
                let h = self.hosts.get(host);
                h.accepted = self.now;
                let offset = h.offset;
                self.barrier.enter(offset);
                self.enter_md(host);
            } else {
                self.barrier.held.push_back(host);
            }
        }
        woken.clear();
        self.barrier.woken = woken;
        // The window that waited for them to stop waiting raises the barrier now, and
        // waits for them to leave md.
        if self.barrier.unraised {
            self.barrier.unraised = false;
            if let Some((at, _)) = self.barrier.window {
                self.barrier.raise(at);
            }
            if self
                .barrier
                .window
                .is_some_and(|(at, _)| self.barrier.pending_at(at) == 0)
            {
                return self.barrier.window.take();
            }
        }
        None
    }

    /// The sync thread wakes from its sleep.
    pub(super) fn resync_wake(&mut self) {
        self.resync.as_mut().expect("resync").sleeping = false;
        self.resync_pump();
    }

    /// The members a sync window at member `offset` reads, and those it writes.
    fn sync_members(&self, offset: u64) -> (Vec<u32>, Vec<u32>) {
        let g = &self.geo;
        let n = g.disks;
        let failed = |d: &u32| self.failed >> d & 1 == 1;
        if self.recovering {
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
        }
    }

    /// One window: read the members that hold the source copy or the data, then write the
    /// members being made consistent (see `resync.rs` for each level).
    fn resync_window(&mut self, offset: u64, len: u64) {
        let (reads, written) = self.sync_members(offset);
        if self.md_mirror() {
            let unit = self.resync.as_ref().expect("resync").pace().unit;
            let windows = len.div_ceil(unit).max(1) as u32;
            for &d in reads.iter().chain(&written) {
                self.sync_hold[d as usize] += windows;
            }
        }
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
