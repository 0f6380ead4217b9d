//! md's stripe cache for raid5/6: stripe heads admitted up to `stripe_cache_size`,
//! partial-stripe writes held by the plug or sent at once when sync, raid5d's handle list
//! (its time per member page and its one plug over the loop), pre-reads, parity writes,
//! and the delayed list.

use super::*;

impl<D: Member> Engine<D> {
    /// The pool index of a stripe, if md holds it.
    pub(super) fn stripe_slot(&self, stripe: u64) -> Option<u32> {
        self.stripe_index.get(stripe)
    }

    /// A write to `[s, e)` of one stripe's data. Each 4 KiB row needs a stripe head, taken
    /// one at a time as md's `raid5_make_request` does: when the cache runs out part way,
    /// the rows that fit go in and the rest of the write waits, first in line, until a
    /// quarter of the cache is free again (md's `R5_INACTIVE_BLOCKED` hysteresis). Later
    /// writes queue behind it. Which rows go first: since Linux 6.0 ("md/raid5: Pivot
    /// raid5_make_request()", commit 7e55c60acfbb) md walks a write row by row, adding to
    /// each head every page of the write in that row, whatever data unit it lies in
    /// (`add_all_stripe_bios`), so a write over several data units that finds the cache
    /// short takes whole rows; before, it went in address order, the first unit's pages
    /// first, leaving rows part-written (and pre-read) where the cache ran out.
    pub(super) fn stripe_write(&mut self, host: u32, stripe: u64, s: u64, e: u64) {
        self.stripe_write_at(host, stripe, s, e, 0, false);
    }

    /// [`Engine::stripe_write`] of the write's rows from `rows_from` on; `resumed` for the
    /// head of the blocked queue, which goes back to the front if it still does not fit.
    pub(super) fn stripe_write_at(
        &mut self,
        host: u32,
        stripe: u64,
        s: u64,
        e: u64,
        rows_from: u64,
        resumed: bool,
    ) {
        let slot = self.stripe_slot(stripe);
        if self.sync_writes && rows_from == 0 {
            if let Some(id) = slot {
                if self.join_preread(host, id, s, e) {
                    return;
                }
            }
        }
        let all_rows = rows_from..u64::MAX;
        let rows_needed = self.new_rows_in(slot, s, e, all_rows.clone());
        if self.heads_free(rows_needed) {
            self.admit(host, stripe, slot, s, e, all_rows, rows_needed);
            return;
        }
        let free = self.free_heads();
        let by_rows = self.rows_first && s / self.geo.chunk != (e - 1) / self.geo.chunk;
        // What goes in now (`[s, end)` in `rows`, taking `heads`) and where what waits
        // starts (`start`, its rows from `from`).
        let (now, (start, from)) = if free == 0 {
            (None, (s, rows_from))
        } else if by_rows {
            let (to, heads) = self.fitting_rows(slot, s, e, rows_from, free);
            (
                (to > rows_from).then_some((e, rows_from..to, heads)),
                (s, to),
            )
        } else {
            let (cut, heads) = self.fitting_end(slot, s, e, free);
            ((cut > s).then_some((cut, 0..u64::MAX, heads)), (cut, 0))
        };
        self.cache_short();
        self.hold_submitter(host);
        let waiting = Blocked::Write {
            host,
            stripe,
            start,
            end: e,
            rows_from: from,
        };
        let Some((end, rows, heads)) = now else {
            if resumed {
                self.blocked.push_front(waiting);
            } else {
                self.blocked.push_back(waiting);
            }
            return;
        };
        // The write now has one more piece on this stripe to wait for.
        self.hosts.get(host).remaining += 1;
        self.blocked.push_front(waiting);
        self.admit(host, stripe, slot, s, end, rows, heads);
    }

    /// The row `to` such that the write's rows of `[s, e)` from `from` up to `to` need at
    /// most `free` new stripe heads of the stripe at `slot` (its rows in ascending order,
    /// as md's row-by-row walk takes them), with that count; `(from, 0)` when not even the
    /// first row fits.
    pub(super) fn fitting_rows(
        &mut self,
        slot: Option<u32>,
        s: u64,
        e: u64,
        from: u64,
        free: u64,
    ) -> (u64, u64) {
        let mask = self.new_row_mask(slot, s, e, from..u64::MAX);
        let mut taken = 0;
        let mut to = from;
        'rows: for (w, &word) in mask.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let row = w as u64 * 64 + u64::from(bits.trailing_zeros());
                if taken == free {
                    to = row;
                    break 'rows;
                }
                taken += 1;
                to = row + 1;
                bits &= bits - 1;
            }
        }
        self.row_mask = mask;
        if taken == 0 {
            (from, 0)
        } else {
            (to, taken)
        }
    }

    /// The furthest row boundary `m` in `(s, e]` such that `[s, m)` needs at most `free`
    /// new stripe heads of the stripe at `slot`, with that count; `(s, 0)` when not even
    /// the first row fits.
    pub(super) fn fitting_end(
        &mut self,
        slot: Option<u32>,
        s: u64,
        e: u64,
        free: u64,
    ) -> (u64, u64) {
        let first = s / ROW;
        let end_of = |k: u64| ((first + k) * ROW).min(e);
        // Row boundaries after s: k = 1 ..= rows; k = 0 is s itself (nothing fits).
        let (mut lo, mut hi, mut rows) = (0, e.div_ceil(ROW) - first, 0);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let n = self.new_rows_in(slot, s, end_of(mid), 0..u64::MAX);
            if n <= free {
                (lo, rows) = (mid, n);
            } else {
                hi = mid - 1;
            }
        }
        if lo == 0 {
            (s, 0)
        } else {
            (end_of(lo), rows)
        }
    }

    /// Take the `rows_needed` stripe heads `[s, e)` needs in `rows` and add the write's
    /// pages in those rows to the open set of the stripe (held at `slot`, if md holds it).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn admit(
        &mut self,
        host: u32,
        stripe: u64,
        slot: Option<u32>,
        s: u64,
        e: u64,
        rows: std::ops::Range<u64>,
        rows_needed: u64,
    ) {
        self.rows_in_use += rows_needed;
        let chunk = self.geo.chunk;
        let words = row_words(&self.geo);
        let dds = self.geo.data_disks() as usize;
        let id = match slot {
            Some(id) => id,
            None => {
                let id = self.stripes.alloc();
                let st = self.stripes.get(id);
                st.number = stripe;
                st.open = false;
                st.flights = 0;
                st.fly_rows.clear();
                st.fly_rows.resize(words, 0);
                st.fly_written.clear();
                self.stripe_index.insert(stripe, id);
                id
            }
        };
        let st = self.stripes.get(id);
        if !st.open {
            st.open = true;
            st.written.clear();
            st.written.resize(words * dds, 0);
            st.set_bits = 0;
            st.full_bits = ((chunk / ROW) as usize * dds) as u64;
            st.rows = 0;
            st.hosts.clear();
            st.gen = 0;
            st.armed = false;
            st.delayed = false;
        }
        st.rows += rows_needed;
        if st.listed {
            // raid5d's time for the rows the stripe now has more: the stripes after it wait
            // that much longer.
            self.raid5d_due += self.raid5d_cost(rows_needed);
        }
        let st = self.stripes.get(id);
        for (dd, row) in touched_rows(&self.geo, s, e, rows) {
            let word = &mut st.written[dd * words + row / 64];
            if *word >> (row % 64) & 1 == 0 {
                *word |= 1 << (row % 64);
                if st.set_bits == 0 {
                    st.first_bit = (dd as u32, row as u32);
                }
                st.set_bits += 1;
            }
        }
        st.hosts.push(host);
        self.settle(id);
    }

    /// What an open stripe set does next: nothing while it waits on the delayed list; go out
    /// now when no write of the stripe is in flight and the set is full or its writes are
    /// sync (the submitter's unplug: md handles the stripe as soon as the write is in;
    /// `stripe_done` settles it again after a write in flight); else wait (one timer per
    /// set, tagged with a fresh generation) for the rest of its data.
    pub(super) fn settle(&mut self, id: u32) {
        let sync = self.sync_writes;
        let st = self.stripes.get(id);
        if !st.open || st.delayed {
            return;
        }
        let idle = st.flights == 0;
        let listed = st.listed;
        if sync && self.md_parity && (listed || self.multi_chunk_set(id)) && self.may_launch(id) {
            self.raid5d_list(id);
            return;
        }
        let st = self.stripes.get(id);
        if idle && (sync || st.set_bits == st.full_bits) {
            self.flush(id);
        } else if !sync && !st.armed {
            st.armed = true;
            self.stripe_gen += 1;
            st.gen = self.stripe_gen;
            let gen = st.gen;
            self.schedule_timer(id, gen);
        }
    }

    /// Stripe heads a write to `[s, e)` adds in `rows`: rows not yet held by the open set
    /// of the stripe held at `slot` (if md holds it).
    pub(super) fn new_rows_in(
        &mut self,
        slot: Option<u32>,
        s: u64,
        e: u64,
        rows: std::ops::Range<u64>,
    ) -> u64 {
        let words = row_words(&self.geo);
        if e.div_ceil(ROW) - s / ROW == 1 {
            // One row: new unless some data unit of the open set has it.
            let row = (self.geo.in_chunk(s) / ROW) as usize;
            if !rows.contains(&(row as u64)) {
                return 0;
            }
            let held = slot.is_some_and(|id| {
                let st = self.stripes.get(id);
                st.open
                    && st
                        .written
                        .chunks(words)
                        .any(|unit| unit[row / 64] >> (row % 64) & 1 == 1)
            });
            return !held as u64;
        }
        let mask = self.new_row_mask(slot, s, e, rows);
        let n = mask.iter().map(|m| m.count_ones() as u64).sum();
        self.row_mask = mask;
        n
    }

    /// The rows (a bit each) of `[s, e)` in `rows` that the open set of the stripe held at
    /// `slot` does not hold yet. The caller hands the vector back to `self.row_mask`.
    fn new_row_mask(
        &mut self,
        slot: Option<u32>,
        s: u64,
        e: u64,
        rows: std::ops::Range<u64>,
    ) -> Vec<u64> {
        let words = row_words(&self.geo);
        let mut mask = std::mem::take(&mut self.row_mask);
        mask.clear();
        mask.resize(words, 0);
        for (_, row) in touched_rows(&self.geo, s, e, rows) {
            mask[row / 64] |= 1 << (row % 64);
        }
        if let Some(id) = slot {
            let st = self.stripes.get(id);
            if st.open {
                for unit in st.written.chunks(words) {
                    for (m, w) in mask.iter_mut().zip(unit) {
                        *m &= !w;
                    }
                }
            }
        }
        mask
    }

    /// Whether a stripe's open set may go out now: when nothing of the stripe flies, or,
    /// for the sets raid5d handles (sync writes over several chunks), when none of its
    /// rows flies. Each 4 KiB row is a stripe head of its own in md, so a head whose rows
    /// a write filled while the heads of the rows before it were being written goes out
    /// at once (row by row admission leaves the rest of a write just so); a write to a
    /// row in flight waits for it, as md's head does.
    pub(super) fn may_launch(&mut self, id: u32) -> bool {
        let words = row_words(&self.geo);
        let st = self.stripes.get(id);
        if st.flights == 0 {
            return true;
        }
        !st.written
            .chunks(words)
            .any(|unit| unit.iter().zip(&st.fly_rows).any(|(w, f)| w & f != 0))
    }

    /// Hand a stripe whose sync write is in to raid5d (`raid5_release_stripe`: onto its
    /// handle list, and raid5d woken). raid5d handles its list in order, [`RAID5D_PAGE`] a
    /// member page, so a stripe is handled only when raid5d comes to it: a write arriving
    /// before then fills it further (no pre-read of what that write brings). Only for
    /// writes over more than one chunk: a 4 KiB write's stripe goes at once, as before
    /// raid5d's time was modelled.
    pub(super) fn raid5d_list(&mut self, id: u32) {
        let st = self.stripes.get(id);
        if st.listed {
            return;
        }
        st.listed = true;
        let rows = st.rows;
        self.raid5d_due = self.raid5d_due.max(self.now) + self.raid5d_cost(rows);
        self.handle_list.push_back((self.raid5d_due, id));
        if !self.raid5d_armed {
            self.raid5d_armed = true;
            self.schedule(self.raid5d_due, Ev::Raid5d);
        }
    }

    /// raid5d's CPU time for `rows` rows of stripe heads.
    pub(super) fn raid5d_cost(&self, rows: u64) -> Nanos {
        Nanos(rows * u64::from(self.geo.disks) * RAID5D_PAGE.0)
    }

    /// Whether a stripe's open set holds a write over more than one chunk.
    pub(super) fn multi_chunk_set(&mut self, id: u32) -> bool {
        let chunk = self.geo.chunk;
        let st = self.stripes.get(id);
        st.hosts
            .iter()
            .any(|&h| self.hosts.get(h).spans_chunks(chunk))
    }

    /// raid5d comes to the stripes whose turn it is and handles them: each is written
    /// whole, or pre-read. Their member commands wait under raid5d's plug while its list
    /// has more, and go out (merged, [`Engine::unplug`]) when it runs dry: raid5d holds one
    /// plug over its whole loop, so the commands of every stripe it handled in a row merge,
    /// whichever host write they came from.
    pub(super) fn raid5d_pass(&mut self) {
        self.raid5d_armed = false;
        while let Some(&(due, id)) = self.handle_list.front() {
            if due > self.now {
                break;
            }
            self.handle_list.pop_front();
            let st = self.stripes.get(id);
            st.listed = false;
            if st.open && !st.delayed && self.may_launch(id) {
                self.flush(id);
            }
        }
        if let Some(&(due, _)) = self.handle_list.front() {
            if !self.raid5d_armed {
                self.raid5d_armed = true;
                self.schedule(due, Ev::Raid5d);
            }
            self.raid5d_plugged.append(&mut self.plugged);
        } else {
            let mut held = std::mem::take(&mut self.raid5d_plugged);
            held.append(&mut self.plugged);
            self.plugged = held;
        }
    }

    pub(super) fn flush_timer(&mut self, id: u32, gen: u64) {
        let full_writes_flying = self.full_writes_flying;
        let st = self.stripes.get(id);
        if !st.open || st.gen != gen {
            return;
        }
        if st.flights > 0 {
            st.armed = false;
            return;
        }
        if full_writes_flying > 0 {
            // md keeps partial stripes back while full-stripe writes proceed (plug timers
            // are armed for writes that are not sync only: those skip it, see `settle`).
            self.schedule_timer(id, gen);
            return;
        }
        self.flush(id);
    }

    /// A stripe is ready: a full-stripe write goes out now; one that needs pre-reads
    /// starts them now if its writes are sync, else joins md's delayed list
    /// (`handle_stripe_dirtying` sets `STRIPE_DELAYED`).
    pub(super) fn flush(&mut self, id: u32) {
        let dds = self.geo.data_disks() as u64;
        let st = self.stripes.get(id);
        // Some written row is not fully overwritten: `st.rows` rows are written, in
        // `set_bits` (data unit, row) pairs, so every row is full exactly when there are
        // `dds` pairs per row (plan_stripe counts at most 64 data units per row).
        let reads = if dds > 64 {
            st.rows != 0
        } else {
            st.set_bits != dds * st.rows
        };
        debug_assert_eq!(reads, needs_reads(&self.geo, &st.written));
        if !reads {
            self.launch(id, false);
        } else if self.sync_writes {
            self.preread_active += 1;
            self.launch(id, true);
        } else {
            st.delayed = true;
            self.delayed.push(id);
            self.activate_delayed();
        }
    }

    /// `raid5_activate_delayed`: the delayed stripes are released together, and only when
    /// no pre-reading stripe is active (`IO_THRESHOLD` = 1) and no full-stripe write is
    /// being handled. Random writes to raid5/6 therefore proceed in batches.
    pub(super) fn activate_delayed(&mut self) {
        if self.preread_active > 0 || self.full_writes_flying > 0 || self.delayed.is_empty() {
            return;
        }
        let mut delayed = std::mem::take(&mut self.delayed);
        for &id in &delayed {
            self.preread_active += 1;
            self.launch(id, true);
        }
        delayed.clear();
        if self.delayed.is_empty() {
            self.delayed = delayed;
        }
    }

    /// Send a stripe's open write set to the members; the stripe's buffers move to a part
    /// and come back empty.
    pub(super) fn launch(&mut self, id: u32, preread: bool) {
        let at = self.stripes.get(id).number * self.geo.chunk;
        let lost = self.lost_at(at);
        let part_id = self.alloc_part();
        let part = self.parts.get(part_id);
        let st = self.stripes.get(id);
        let [(r_write, reads), (w_write, writes)] = &mut part.phases;
        if st.set_bits == 1 && self.geo.disks <= 64 {
            // One block written (a small random write): no need to scan the row bitmaps.
            let (dd, row) = st.first_bit;
            plan_one_row(
                &self.geo,
                st.number,
                row as u64,
                1 << dd,
                lost,
                reads,
                writes,
            );
        } else {
            plan_stripe_into(
                &self.geo,
                st.number,
                &st.written,
                lost,
                reads,
                writes,
                &mut self.plan_scratch,
            );
        }
        (*r_write, *w_write) = (false, true);
        split_at_request_max(reads, self.merge_max);
        split_at_request_max(writes, self.merge_max);
        let full = reads.is_empty();
        if full {
            part.phases.swap(0, 1);
            part.phase_count = 1;
        } else {
            part.phase_count = 2;
        }
        part.stripe = Some(id);
        std::mem::swap(&mut part.hosts, &mut st.hosts);
        let words = row_words(&self.geo);
        part.flight_rows.clear();
        part.flight_rows.resize(words, 0);
        if st.set_bits == 1 {
            let row = st.first_bit.1 as usize;
            part.flight_rows[row / 64] = 1 << (row % 64);
        } else {
            for unit in st.written.chunks(words) {
                for (f, w) in part.flight_rows.iter_mut().zip(unit) {
                    *f |= w;
                }
            }
        }
        for (f, w) in st.fly_rows.iter_mut().zip(&part.flight_rows) {
            *f |= w;
        }
        if self.sync_writes && !full {
            std::mem::swap(&mut st.fly_written, &mut st.written);
            st.fly_part = part_id;
        } else if st.flights == 0 {
            st.fly_written.clear();
        }
        st.open = false;
        st.flights += 1;
        part.flight = Some(Flying {
            rows: st.rows,
            full,
            preread,
        });
        if full {
            self.full_writes_flying += 1;
        }
        self.start_phase(part_id);
    }

    pub(super) fn stripe_done(&mut self, id: u32, part_id: u32) {
        let part = self.parts.get(part_id);
        let Flying {
            rows,
            full,
            preread,
        } = part.flight.take().expect("a stripe's write");
        let flown = std::mem::take(&mut part.flight_rows);
        let st = self.stripes.get(id);
        st.flights -= 1;
        for (f, w) in st.fly_rows.iter_mut().zip(&flown) {
            *f &= !w;
        }
        self.parts.get(part_id).flight_rows = flown;
        let st = self.stripes.get(id);
        if st.fly_part == part_id {
            st.fly_written.clear();
        }
        let (open, flights) = (st.open, st.flights);
        let number = st.number;
        self.rows_in_use -= rows;
        if full {
            self.full_writes_flying -= 1;
        }
        if preread {
            self.preread_active -= 1;
        }
        if open {
            self.settle(id);
        } else if flights == 0 {
            self.stripe_index.remove(number);
            self.stripes.release(id);
        }
        self.activate_delayed();
        self.rows_released();
    }

    /// Stripe heads a read takes: a head per 4 KiB row of the members it touches (pieces
    /// of one stripe share their rows), when it reads a block of a member md cannot read
    /// there (lost, or recovered only up to its checkpoint), which md computes in the
    /// stripe cache from the others. None otherwise.
    ///
    /// md itself sends every read of a degraded raid5/6 through the cache
    /// (`raid5_make_request` skips `chunk_aligned_read` while `mddev->degraded`, commit
    /// 9ffc8f7cb964). With that rule the simulated recovery of the VM lab's rebuild case
    /// took 25 MiB/s and left the workload 110 IOPS, where the guest's kernel gave 9.4 MiB/s
    /// and 146 IOPS: something in md that lets the workload's reads through beside a
    /// recovery is not modelled (raid5d's handling order, or the sync thread's own pace),
    /// so the simulator keeps the narrower rule, which gave 8.1 MiB/s and 139 IOPS.
    ///
    /// md walks a read through the cache a stripe at a time, taking a head for each and
    /// waiting whenever none is free, so a read over more rows than the cache holds goes
    /// on as heads come back; here it takes its heads at once, and so at most the whole
    /// cache (more, and it would wait for ever: a 4 MiB read of a raid5 of three with
    /// 512 KiB chunks during its initial recovery takes 512 rows of a 256-head cache).
    pub(super) fn read_heads(&self, offset: u64, len: u64) -> u64 {
        if !self.md_parity || self.failed == 0 {
            return 0;
        }
        let g = &self.geo;
        let (mut rows, mut lost) = (0, false);
        // Member rows of each chunk piece, in order of the array offset: pieces of the
        // same stripe cover the same rows, the next stripe's follow.
        let mut last: Option<(u64, u64)> = None;
        for (off, l) in g.chunks(offset, len) {
            let p = g.parity_map(g.chunk_of(off));
            let at = p.stripe * g.chunk + g.in_chunk(off);
            lost |= self.lost_at(at).unreadable >> p.data_disk & 1 == 1;
            let (first, end) = (at / ROW, (at + l).div_ceil(ROW));
            last = Some(match last {
                Some((f, e)) if first < e && end > f => {
                    rows += end.saturating_sub(e) + f.saturating_sub(first);
                    (f.min(first), e.max(end))
                }
                _ => {
                    rows += end - first;
                    (first, end)
                }
            });
        }
        if lost {
            rows.min(self.cache_rows)
        } else {
            0
        }
    }

    /// Whether `n` stripe heads are free for a new request (none is while requests wait
    /// for a quarter of the cache).
    pub(super) fn heads_free(&self, n: u64) -> bool {
        !self.cache_blocked && self.rows_in_use + n <= self.cache_rows
    }

    /// How many stripe heads a new request may take now (none while requests wait for a
    /// quarter of the cache).
    pub(super) fn free_heads(&self) -> u64 {
        if self.cache_blocked {
            0
        } else {
            self.cache_rows.saturating_sub(self.rows_in_use)
        }
    }

    /// A read finds too few free heads: it waits, its job's thread asleep in `io_submit`
    /// (fio's `slat`), until a quarter of the cache is free.
    pub(super) fn block_read(&mut self, host: u32) {
        self.cache_short();
        self.hold_submitter(host);
        self.blocked.push_back(Blocked::Read { host });
    }

    /// A direct I/O waits in md's blocked queue: its job's thread sleeps with it.
    fn hold_submitter(&mut self, host: u32) {
        if self.gated() {
            let job = self.job_of(host);
            self.submitters[job as usize].blocked += 1;
        }
    }

    /// A request finds too few free stripe heads, and waits until a quarter of the cache
    /// is free (`R5_INACTIVE_BLOCKED`). If the cache was not already blocked, the heads
    /// really ran out, and md asks raid5d for one more (`R5_ALLOC_MORE`, since Linux 4.1)
    /// unless it grew the cache since it last released heads (`R5_DID_ALLOC`). So a cache
    /// that keeps running short keeps growing, a head per shortage, past
    /// `stripe_cache_size` (which shows the size md started from; commit edbe83ab4c27,
    /// "md/raid5: allow the stripe_cache to grow and shrink"). Memory pressure shrinks it
    /// back: the simulator lets it grow under direct I/O only (`cache_grows`). The VM
    /// lab's kernel (6.1) had 282-440 heads in use of a 256-head cache after a 15 s
    /// recovery under direct reads (`stripe_cache_active`).
    pub(super) fn cache_short(&mut self) {
        if self.cache_grows && !self.cache_blocked && !self.cache_did_alloc {
            self.cache_rows += 1;
            self.cache_did_alloc = true;
        }
        self.cache_blocked = true;
    }

    /// `n` stripe heads held by a read or a sync window go back to the cache.
    pub(super) fn give_back_heads(&mut self, n: u64) {
        self.rows_in_use -= n;
        self.rows_released();
    }

    /// Stripe heads went back to the cache: once a quarter of it is free, what waits for
    /// heads goes on — the blocked writes and reads, in order, then (a jiffy later) md's
    /// sync thread.
    pub(super) fn rows_released(&mut self) {
        self.cache_did_alloc = false;
        if self.cache_blocked && self.rows_in_use * 4 <= self.cache_rows * 3 {
            self.cache_blocked = false;
            while !self.cache_blocked {
                let Some(b) = self.blocked.pop_front() else {
                    break;
                };
                let host = b.host();
                let (offset, len) = {
                    let h = self.hosts.get(host);
                    (h.offset, h.len)
                };
                if matches!(b, Blocked::Read { .. })
                    && !self.heads_free(self.read_heads(offset, len))
                {
                    self.blocked.push_front(b);
                    self.cache_blocked = true;
                    break;
                }
                if self.gated() {
                    let job = self.job_of(host);
                    self.submitters[job as usize].blocked -= 1;
                    self.unblocked_jobs.push(job);
                }
                self.hosts.get(host).accepted = self.now;
                match b {
                    Blocked::Read { .. } => self.dispatch(host, false, offset, len),
                    Blocked::Write {
                        stripe,
                        start,
                        end,
                        rows_from,
                        ..
                    } => self.stripe_write_at(host, stripe, start, end, rows_from, true),
                }
            }
            let mut jobs = std::mem::take(&mut self.unblocked_jobs);
            for &job in &jobs {
                self.schedule_resume(job);
            }
            jobs.clear();
            self.unblocked_jobs = jobs;
        }
        if self.sync_waits_rows && !self.cache_blocked {
            // `raid5_sync_request` sleeps a jiffy after a stripe it had to wait for, "to make
            // sure we don't swamp the stripe cache if someone else is trying to get access".
            self.sync_waits_rows = false;
            self.schedule(self.now + JIFFY, Ev::SyncHeads);
        }
    }

    /// `add_stripe_bio` on a stripe whose sync write is still pre-reading: when the new
    /// write leaves every row it touches fully written, and needs no row the stripe does
    /// not already hold, its data joins the write in flight. The pre-reads then find every
    /// block of those rows written or up to date, and the part writes the union (the read
    /// of a block now overwritten was wasted, but nothing is read again). The host write
    /// completes with the part. Otherwise (or once the part writes) the write waits for a
    /// new set, as before.
    pub(super) fn join_preread(&mut self, host: u32, id: u32, s: u64, e: u64) -> bool {
        let words = row_words(&self.geo);
        let dds = self.geo.data_disks() as usize;
        let st = self.stripes.get(id);
        if st.open || st.flights == 0 || st.fly_written.len() != words * dds {
            return false;
        }
        let part = self.parts.get(st.fly_part);
        if part.phase_count != 2 || part.phase != 0 || part.stripe != Some(id) {
            return false;
        }
        let mut union = std::mem::take(&mut self.row_mask);
        union.clear();
        union.extend_from_slice(&st.fly_written);
        for (dd, row) in touched(&self.geo, s, e) {
            union[dd * words + row / 64] |= 1 << (row % 64);
        }
        let held_and_full = touched(&self.geo, s, e).all(|(_, row)| {
            let bit = |w: &[u64], dd: usize| w[dd * words + row / 64] >> (row % 64) & 1 == 1;
            (0..dds).any(|dd| bit(&st.fly_written, dd)) && (0..dds).all(|dd| bit(&union, dd))
        });
        if !held_and_full {
            self.row_mask = union;
            return false;
        }
        std::mem::swap(&mut st.fly_written, &mut union);
        self.row_mask = union;
        let (number, part_id) = (st.number, st.fly_part);
        let lost = self.lost_at(number * self.geo.chunk);
        let part = self.parts.get(part_id);
        let mut reads = std::mem::take(&mut self.spare_reads);
        reads.clear();
        part.phases[1].1.clear();
        plan_stripe_into(
            &self.geo,
            number,
            &self.stripes.get(id).fly_written,
            lost,
            &mut reads,
            &mut part.phases[1].1,
            &mut self.plan_scratch,
        );
        split_at_request_max(&mut part.phases[1].1, self.merge_max);
        reads.clear();
        self.spare_reads = reads;
        part.hosts.push(host);
        true
    }
}

/// Cut a stripe's member pieces at the member's largest request. raid5d sends a stripe's
/// pages a page a bio, so the block layer builds a member's request from at most its
/// driver's segments of them (`Engine::merge_max`): on the VM lab's virtio-blk 254 pages,
/// 1,016 KiB, so a 1 MiB chunk goes as 1,016 KiB and 8 KiB — the guest's healthy raid5 of
/// 1 MiB chunks under 1 MiB random writes sent its members 2,032- and 16-sector requests
/// (`RAIDLAB_VM_TRACE=1`, docs/simulator.md, "The layout pass"), where the simulator sent
/// one command of 1 MiB. Pieces within the limit (every chunk up to 1,016 KiB there, up to
/// `max_sectors_kb`'s 1,280 KiB on members without a segment limit) stay as they are.
fn split_at_request_max(pieces: &mut Vec<Piece>, max: u64) {
    if pieces.iter().all(|p| p.len <= max) {
        return;
    }
    let whole = std::mem::take(pieces);
    for p in whole {
        let mut at = 0;
        while at < p.len {
            let len = (p.len - at).min(max);
            pieces.push(Piece {
                disk: p.disk,
                offset: p.offset + at,
                len,
            });
            at += len;
        }
    }
}
