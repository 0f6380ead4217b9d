//! Request planning: a host I/O becomes parts (per chunk, per copy, per stripe), each
//! with phases of member operations; read balancing picks a copy; completions walk the
//! phases back to the host I/O.

use super::*;

/// The tag of a command the plug merged: the index of the tags it completes.
pub(super) const MERGED: u64 = 1 << 63;

impl<D: Member> Engine<D> {
    pub(super) fn dispatch(&mut self, host: u32, write: bool, offset: u64, len: u64) {
        if matches!(self.geo.level, Level::Raid5 | Level::Raid6) && write {
            let sd = self.geo.stripe_data();
            let end = offset + len;
            let first = offset / sd;
            if end <= (first + 1) * sd {
                // Within one stripe (every small write): no further division. (The loop below
                // does the same, but costs 0.8 % more instructions per raid5 host I/O.)
                self.hosts.get(host).remaining = 1;
                self.stripe_write(host, first, offset - first * sd, end - first * sd);
                return;
            }
            let segments = end.div_ceil(sd) - first;
            self.hosts.get(host).remaining = segments as u32;
            let mut at = offset;
            while at < end {
                let stripe = at / sd;
                let seg_end = ((stripe + 1) * sd).min(end);
                self.stripe_write(host, stripe, at - stripe * sd, seg_end - stripe * sd);
                at = seg_end;
            }
            return;
        }
        if self.reads_by_job && !write {
            self.reader = self.job_of(host);
        }
        let heads = if write {
            0
        } else {
            self.read_heads(offset, len)
        };
        if heads > 0 {
            if !self.heads_free(heads) {
                self.block_read(host);
                return;
            }
            self.rows_in_use += heads;
        }
        let part = self.alloc_part();
        self.parts.get(part).heads = heads;
        let mut pieces = std::mem::take(&mut self.parts.get(part).phases[0].1);
        let g = &self.geo;
        match g.level {
            Level::Single => pieces.push(Piece {
                disk: 0,
                offset,
                len,
            }),
            Level::Raid0 => {
                for (off, l) in g.chunks(offset, len) {
                    let (disk, m) = g.raid0(off);
                    pieces.push(Piece {
                        disk,
                        offset: m,
                        len: l,
                    });
                }
            }
            Level::Raid1 | Level::Raid1c3 | Level::Raid1c4 => {
                let mut copies = std::mem::take(&mut self.copies);
                copies.clear();
                copies.extend((0..g.disks).map(|d| (d, offset)));
                self.copies_to_pieces(write, &copies, len, &mut pieces);
                if !write {
                    for p in &pieces {
                        self.next_seq[p.disk as usize] = p.offset + p.len;
                    }
                }
                self.copies = copies;
            }
            Level::Raid10 => {
                let mut copies = std::mem::take(&mut self.copies);
                let mut at = offset;
                let end = offset + len;
                while at < end {
                    let next = ((self.geo.chunk_of(at) + 1) * self.geo.chunk).min(end);
                    copies.clear();
                    self.geo.raid10_into(at, &mut copies);
                    self.copies_to_pieces(write, &copies, next - at, &mut pieces);
                    at = next;
                }
                self.copies = copies;
            }
            Level::Raid5 | Level::Raid6 => {
                // A member lost, or recovered only up to the sync point: md reads a block of
                // it back from every other member it can read (`fetch_block` reads all
                // in-sync devices to compute a missing one).
                for (off, l) in g.chunks(offset, len) {
                    let p = g.parity_map(g.chunk_of(off));
                    let at = p.stripe * g.chunk + g.in_chunk(off);
                    let lost = self.lost_at(at).unreadable;
                    if lost >> p.data_disk & 1 == 1 {
                        pieces.extend((0..g.disks).filter(|d| lost >> d & 1 == 0).map(|disk| {
                            Piece {
                                disk,
                                offset: at,
                                len: l,
                            }
                        }));
                    } else {
                        pieces.push(Piece {
                            disk: p.data_disk,
                            offset: at,
                            len: l,
                        });
                    }
                }
            }
        }
        self.hosts.get(host).remaining = 1;
        let p = self.parts.get(part);
        p.hosts.push(host);
        p.phases[0] = (write, pieces);
        p.phase_count = 1;
        self.start_phase(part);
    }

    /// A part with empty buffers, ready to fill.
    pub(super) fn alloc_part(&mut self) -> u32 {
        let id = self.parts.alloc();
        let p = self.parts.get(id);
        p.hosts.clear();
        p.phases[0].1.clear();
        p.phases[1].1.clear();
        p.phase_count = 0;
        p.phase = 0;
        p.pending = 0;
        p.stripe = None;
        p.heads = 0;
        p.job = Job::Host;
        p.flight = None;
        id
    }

    /// Members md cannot read or write at member offset `at`: a lost member nowhere; a
    /// member being recovered is read only below md's last checkpoint
    /// ([`Resync::readable`]; a btrfs replace's target not until it is done) and written
    /// everywhere.
    #[inline]
    pub(super) fn lost_at(&self, at: u64) -> Lost {
        if self.failed == 0 {
            return Lost::default();
        }
        match &self.resync {
            Some(r) if at < r.readable() && (!self.replacing || r.finished()) => Lost::default(),
            Some(_) => Lost {
                unreadable: self.failed,
                unwritable: 0,
            },
            None => Lost {
                unreadable: self.failed,
                unwritable: self.failed,
            },
        }
    }

    /// Writes go to every copy md can write; a read goes to one it can read, chosen by
    /// md's read balancing.
    pub(super) fn copies_to_pieces(
        &self,
        write: bool,
        copies: &[(u32, u64)],
        len: u64,
        out: &mut Vec<Piece>,
    ) {
        if self.failed == 0 || !copies.iter().any(|c| self.failed >> c.0 & 1 == 1) {
            if write {
                out.extend(
                    copies
                        .iter()
                        .map(|&(disk, offset)| Piece { disk, offset, len }),
                );
            } else {
                let (disk, offset) = self.read_balance(copies);
                out.push(Piece { disk, offset, len });
            }
            return;
        }
        let usable = |c: &&(u32, u64)| {
            let lost = self.lost_at(c.1);
            let mask = if write {
                lost.unwritable
            } else {
                lost.unreadable
            };
            mask >> c.0 & 1 == 0
        };
        let left: Vec<(u32, u64)> = copies.iter().filter(usable).copied().collect();
        if write {
            out.extend(
                left.iter()
                    .map(|&(disk, offset)| Piece { disk, offset, len }),
            );
        } else {
            let (disk, offset) = self.read_balance(&left);
            out.push(Piece { disk, offset, len });
        }
    }

    /// The copy a read goes to. A mirrored btrfs profile: its job's. md raid1: the member
    /// the last read ended at, if this one continues it; far/offset layouts read the
    /// lowest address (the first band); otherwise a copy whose head is already there
    /// (sequential), then on flash the least busy, then an idle disk, then the nearest head.
    pub(super) fn read_balance(&self, copies: &[(u32, u64)]) -> (u32, u64) {
        if self.reads_by_job {
            return copies[self.reader as usize % copies.len()];
        }
        // raid1.c: a read that continues the last one sent to a member goes to that
        // member, however many are in flight (`next_seq_sect`, kept by `dispatch`).
        if matches!(
            self.geo.level,
            Level::Raid1 | Level::Raid1c3 | Level::Raid1c4
        ) {
            if let Some(c) = copies.iter().find(|c| self.next_seq[c.0 as usize] == c.1) {
                return *c;
            }
        }
        if matches!(self.geo.layout, Some(Layout::Far(_) | Layout::Offset(_))) {
            return *copies.iter().min_by_key(|c| c.1).expect("copies");
        }
        let dev = |d: u32| &self.devices[d as usize];
        if !self.md_mirror() {
            return self.read_balance_near(copies);
        }
        let head = |d: u32| self.md_head[d as usize];
        if let Some(c) = copies.iter().find(|c| head(c.0) == c.1) {
            return *c;
        }
        // md's `nr_pending`: the member's commands, a sync window counted on every member
        // it holds.
        let pending = |d: u32| {
            let d = d as usize;
            self.devices[d].pending() + self.sync_hold[d] as usize - self.sync_at_dev[d] as usize
        };
        let first_least = || *copies.iter().min_by_key(|c| pending(c.0)).expect("copies");
        if !dev(copies[0].0).rotational() {
            return first_least();
        }
        // Rotational: the first idle member, else the nearest head.
        if copies.iter().any(|c| pending(c.0) == 0) {
            return first_least();
        }
        *copies
            .iter()
            .min_by_key(|c| head(c.0).abs_diff(c.1))
            .expect("copies")
    }

    /// md raid1 (any number of copies): its reads are placed by [`Engine::read_balance`]'s
    /// kernel rule, for which the engine keeps md's bookkeeping (`md_head`, `sync_hold`,
    /// `sync_at_dev`); other levels skip it.
    #[inline]
    pub(super) fn md_mirror(&self) -> bool {
        matches!(
            self.geo.level,
            Level::Raid1 | Level::Raid1c3 | Level::Raid1c4
        )
    }

    /// raid10's copies (near layouts): a copy whose member's head is where the read
    /// starts, else the least busy member on non-rotational members, else the nearest idle
    /// head, else the nearest (md's raid10 `read_balance` differs in detail: not modelled).
    fn read_balance_near(&self, copies: &[(u32, u64)]) -> (u32, u64) {
        let dev = |d: u32| &self.devices[d as usize];
        if let Some(c) = copies.iter().find(|c| dev(c.0).head() == c.1) {
            return *c;
        }
        if !dev(copies[0].0).rotational() {
            return *copies
                .iter()
                .min_by_key(|c| dev(c.0).pending())
                .expect("copies");
        }
        let distance = |c: &&(u32, u64)| dev(c.0).head().abs_diff(c.1);
        let idle = copies.iter().filter(|c| dev(c.0).pending() == 0);
        if let Some(c) = idle.min_by_key(distance) {
            return *c;
        }
        *copies.iter().min_by_key(distance).expect("copies")
    }

    /// Submit a part's current phase, member by member; a submit that completed something
    /// at once has it handled on the spot, before the next member's.
    pub(super) fn start_phase(&mut self, part_id: u32) {
        let part = self.parts.get(part_id);
        let phase = part.phase;
        let (write, ref pieces) = part.phases[phase];
        let n = pieces.len();
        // md writes its bitmap pages with PREFLUSH + FUA (`md_super_write`).
        let flush = write && matches!(part.job, Job::BitmapFlush | Job::BitmapClear);
        part.pending = n as u32;
        let sync = part.job == Job::Resync;
        let stream = self.stream_of(part_id);
        let base = self.done.len();
        let plug = self.plugging && !sync && !flush && self.spans_chunks(part_id);
        for i in 0..n {
            let p = self.parts.get(part_id).phases[phase].1[i];
            if sync {
                if let Some(t) = self.idle_test.as_mut() {
                    t.sync(p.disk, p.len, true);
                }
                if self.md_mirror() {
                    self.sync_at_dev[p.disk as usize] += 1;
                }
            }
            let op = MemberOp {
                write,
                flush,
                offset: p.offset,
                len: p.len,
                // The piece's index above the part's: what completed, for the idle test.
                tag: part_id as u64 | (i as u64) << 32,
                stream,
            };
            if plug {
                self.plugged.push((p.disk, op));
                continue;
            }
            self.member_submit(p.disk, op);
            if self.done.len() > base {
                self.complete_from(base);
            }
        }
    }

    /// Whose context a part's member commands are sent from: the fio job's, for a host
    /// I/O md maps straight onto the members (raid0/1/10 and raid5/6 reads it does not
    /// rebuild); md's own threads' for the rest (raid5d's stripe writes and rebuilt reads,
    /// the sync thread, the bitmap).
    fn stream_of(&mut self, part_id: u32) -> u32 {
        let part = self.parts.get(part_id);
        match (part.job, part.stripe, part.heads, part.hosts.first()) {
            (Job::Host, None, 0, Some(&host)) => self.job_of(host),
            _ => MD_THREAD,
        }
    }

    /// A member command of a part completed (`tag`: the part, and above it the piece).
    #[inline]
    pub(super) fn op_done(&mut self, tag: u64) {
        if tag & MERGED != 0 {
            self.merged_done(tag);
            return;
        }
        let part_id = tag as u32;
        if self.idle_test.is_some() {
            self.count_for_idle_test(part_id, (tag >> 32) as usize);
        }
        if self.md_mirror() {
            let part = self.parts.get(part_id);
            let piece = part.phases[part.phase].1[(tag >> 32) as usize];
            let sync = part.job == Job::Resync;
            self.md_head[piece.disk as usize] = piece.offset + piece.len;
            if sync {
                self.sync_at_dev[piece.disk as usize] -= 1;
            }
        }
        let part = self.parts.get(part_id);
        part.pending -= 1;
        if part.pending == 0 {
            self.phase_done(part_id);
        }
    }

    /// Whether a part serves host I/O that covers more than one chunk: only such I/O has
    /// member commands contiguous with each other to merge (a 4 KiB I/O goes out alone,
    /// at once, as before the plug was modelled).
    fn spans_chunks(&mut self, part_id: u32) -> bool {
        let chunk = self.geo.chunk;
        let part = self.parts.get(part_id);
        if part.job != Job::Host {
            return false;
        }
        part.hosts
            .iter()
            .any(|&h| self.hosts.get(h).spans_chunks(chunk))
    }

    /// A merged command completed: each command merged into it did.
    #[inline(never)]
    fn merged_done(&mut self, tag: u64) {
        let i = (tag & !MERGED) as usize;
        let mut tags = std::mem::take(&mut self.merged[i]);
        for &t in &tags {
            self.op_done(t);
        }
        // The slot, with its allocation, for the next merge.
        tags.clear();
        self.merged[i] = tags;
        self.merged_free.push(i as u32);
    }

    /// Release raid5d's plug: the member commands of host I/O held since the event began
    /// go to the members in the order they were sent, except that one contiguous with the
    /// last command held for its member (same direction and submitter) joins it, up to
    /// the member's largest request (`merge_max`), as the block layer back-merges the bios raid5d
    /// submits for consecutive stripes under its plug (`blk_attempt_plug_merge`). What
    /// completes at once is handled, and what that submits is merged in turn.
    pub(super) fn unplug(&mut self) {
        while !self.plugged.is_empty() {
            let mut ops = std::mem::take(&mut self.plugged);
            // Merge in place: the first `kept` entries are the commands that go out.
            let mut last = std::mem::take(&mut self.plug_last);
            last.clear();
            last.resize(self.devices.len(), usize::MAX);
            let mut kept = 0;
            for i in 0..ops.len() {
                let (disk, op) = ops[i];
                let l = last[disk as usize];
                if l != usize::MAX {
                    let prev = &mut ops[l].1;
                    if prev.write == op.write
                        && prev.stream == op.stream
                        && prev.offset + prev.len == op.offset
                        && prev.len + op.len <= self.merge_max
                    {
                        prev.len += op.len;
                        let k = if prev.tag & MERGED != 0 {
                            (prev.tag & !MERGED) as usize
                        } else {
                            let k = match self.merged_free.pop() {
                                Some(k) => k as usize,
                                None => {
                                    self.merged.push(Vec::new());
                                    self.merged.len() - 1
                                }
                            };
                            self.merged[k].push(prev.tag);
                            prev.tag = MERGED | k as u64;
                            k
                        };
                        self.merged[k].push(op.tag);
                        continue;
                    }
                }
                ops[kept] = (disk, op);
                last[disk as usize] = kept;
                kept += 1;
            }
            ops.truncate(kept);
            self.plug_last = last;
            let base = self.done.len();
            self.plugging = false;
            for &(disk, op) in &ops {
                self.member_submit(disk, op);
            }
            ops.clear();
            self.plugged = ops;
            self.plugging = true;
            if self.done.len() > base {
                self.complete_from(base);
            }
        }
        self.plugging = false;
    }

    /// md's idle test counts what each member completed: the sync's commands, or the
    /// workload's (its own, and md's bitmap writes for it).
    #[inline(never)]
    fn count_for_idle_test(&mut self, part_id: u32, piece: usize) {
        let part = self.parts.get(part_id);
        let p = part.phases[part.phase].1[piece];
        let sync = part.job == Job::Resync;
        let t = self.idle_test.as_mut().expect("idle test");
        if sync {
            t.sync(p.disk, p.len, false);
        } else {
            t.other_done(p.disk, p.len);
        }
    }

    /// Every member command of a part's phase completed: its next phase starts, or it is
    /// done. Out of line, so the commands before the last return at once.
    #[inline(never)]
    pub(super) fn phase_done(&mut self, part_id: u32) {
        let mirror = self.md_mirror();
        let part = self.parts.get(part_id);
        part.phase += 1;
        if part.phase < part.phase_count {
            self.start_phase(part_id);
            return;
        }
        match part.job {
            Job::Host => {}
            Job::BitmapFlush => {
                self.parts.release(part_id);
                self.bitmap_flushed();
                return;
            }
            Job::BitmapClear => {
                self.parts.release(part_id);
                return;
            }
            Job::Resync => {
                // The windows merged into this request, all done at once (raid5/6: those
                // whose last pages these were).
                let (offset, len) = part.phases[0]
                    .1
                    .first()
                    .map_or((0, 0), |p| (p.offset, p.len));
                let unit = self.resync.as_ref().expect("resync").pace().unit;
                let whole = len.div_ceil(unit).max(1);
                if mirror {
                    for ph in &part.phases[..2] {
                        for p in &ph.1 {
                            self.sync_hold[p.disk as usize] -= whole as u32;
                        }
                    }
                }
                self.parts.release(part_id);
                let (windows, bytes, heads) = if self.sync_windows.is_empty() {
                    (whole, whole * unit, whole * background::WINDOW_ROWS)
                } else {
                    self.sync_windows_done(offset, len)
                };
                let now = self.now;
                if now >= self.measure_from {
                    let sec = ((now - self.measure_from).0 / 1_000_000_000) as usize;
                    if let Some(b) = self.sync_per_sec.get_mut(sec) {
                        *b += len;
                    }
                }
                let passed = self.lower_barrier(windows as u32);
                let r = self.resync.as_mut().expect("resync");
                if windows > 0 {
                    r.complete_windows(now, windows as u32, bytes);
                }
                if self.sync_in_cache() {
                    self.give_back_heads(heads);
                }
                self.resync_go(passed);
                return;
            }
        }
        if let Some(stripe) = part.stripe {
            self.stripe_done(stripe, part_id);
        }
        let heads = self.parts.get(part_id).heads;
        // The part stays allocated until its hosts are done, so its buffer is not reused
        // by the I/Os they issue.
        for i in 0..self.parts.get(part_id).hosts.len() {
            let h = self.parts.get(part_id).hosts[i];
            let host = self.hosts.get(h);
            host.remaining -= 1;
            if host.remaining == 0 {
                self.host_done(h);
            }
        }
        self.parts.release(part_id);
        if heads > 0 {
            self.give_back_heads(heads);
        }
    }

    pub(super) fn host_done(&mut self, h: u32) {
        let host = self.hosts.remove(h);
        if host.write && self.bitmap.is_some() {
            let (first, last) = self.bitmap_range(host.offset, host.len);
            if let Some(bm) = self.bitmap.as_mut() {
                bm.end_write(first, last);
            }
        }
        if self.now >= self.measure_from && self.now <= self.end {
            let d = if host.write {
                &mut self.write
            } else {
                &mut self.read
            };
            d.ios += 1;
            d.bytes += host.len;
            let lat = (self.now - host.submit).0;
            d.lat.record(lat);
            if self.records_slat {
                d.slat.record((host.accepted - host.submit).0);
            }
            let sec = ((self.now - self.measure_from).0 / 1_000_000_000) as usize;
            if let Some(s) = self.per_sec.get_mut(sec) {
                s[host.write as usize] += 1;
            }
            if let Some(s) = self.lat_per_sec.get_mut(sec) {
                s[host.write as usize] += lat;
            }
        }
        if self.barrier_applies() {
            self.barrier_host_done(host.offset);
        }
        // A layout pass ends with its last I/O (its bitmap daemon would tick on).
        if self.issue_left == Some(0) && self.hosts.is_empty() {
            self.end = self.now;
            return;
        }
        self.issue(host.slot);
    }

    // ------------------------------------------------------------ raid5/6 stripe cache
}
