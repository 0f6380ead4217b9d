//! md's block mapping and write planning, following `drivers/md/raid0.c`, `raid10.c`
//! (`__raid10_find_phys`) and `raid5.c` (`raid5_compute_sector`, `handle_stripe_dirtying`).
//!
//! Pure functions from an array address to member addresses; the request path (queues,
//! stripe cache, read balancing against live device state) lives in `engine/` (dispatch, stripes, background work).

use raidlab_core::{ArraySpec, Layout, Level};

/// 4 KiB: md's stripe-head unit (`STRIPE_SIZE`).
pub const ROW: u64 = 4096;

/// One piece of a host request on one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub disk: u32,
    pub offset: u64,
    pub len: u64,
}

/// The array's shape, resolved to numbers.
#[derive(Debug, Clone)]
pub struct Geometry {
    pub level: Level,
    pub layout: Option<Layout>,
    pub chunk: u64,
    /// `chunk` is a power of two (md requires it; plans are checked): its log2, so
    /// splitting an address at chunks is a shift and a mask, not a division.
    pub chunk_shift: u32,
    pub disks: u32,
    /// Bytes of each member the array uses.
    pub member: u64,
    near: u32,
    far: u32,
    offset_layout: bool,
    /// raid10 far/offset: distance between copies on a member.
    stride: u64,
    /// raid5/6 writes always reconstruct (read the data they do not write), never
    /// read-modify-write: btrfs's RAID56 (`crate::btrfs`).
    pub rcw_only: bool,
}

impl Geometry {
    pub fn new(spec: &ArraySpec, member: u64) -> Geometry {
        let chunk = spec.chunk.map(|c| c.0).unwrap_or(ROW * 16);
        let (near, far, offset_layout) = match spec.layout {
            Some(Layout::Near(n)) => (n as u32, 1, false),
            Some(Layout::Far(n)) => (1, n as u32, false),
            Some(Layout::Offset(n)) => (1, n as u32, true),
            _ => (1, 1, false),
        };
        let stride = if offset_layout {
            chunk
        } else {
            (member / far as u64) / chunk * chunk
        };
        assert!(
            chunk.is_power_of_two(),
            "chunk {chunk} is not a power of two"
        );
        Geometry {
            level: spec.level,
            layout: spec.layout,
            chunk,
            chunk_shift: chunk.trailing_zeros(),
            disks: spec.disks,
            member,
            near,
            far,
            offset_layout,
            stride,
            rcw_only: false,
        }
    }

    pub fn data_disks(&self) -> u32 {
        match self.level {
            Level::Raid5 => self.disks - 1,
            Level::Raid6 => self.disks - 2,
            _ => self.disks,
        }
    }

    /// Copies of each block raid10 keeps (1 elsewhere).
    pub fn copies(&self) -> u32 {
        match self.level {
            Level::Raid10 => self.near * self.far,
            _ => 1,
        }
    }

    pub fn parity_count(&self) -> u32 {
        match self.level {
            Level::Raid5 => 1,
            Level::Raid6 => 2,
            _ => 0,
        }
    }

    /// `x / chunk`.
    #[inline]
    pub fn chunk_of(&self, x: u64) -> u64 {
        x >> self.chunk_shift
    }

    /// `x % chunk`.
    #[inline]
    pub fn in_chunk(&self, x: u64) -> u64 {
        x & (self.chunk - 1)
    }

    /// Array bytes of one full stripe of data (raid5/6).
    pub fn stripe_data(&self) -> u64 {
        self.chunk * self.data_disks() as u64
    }

    /// Split `[offset, offset+len)` at chunk boundaries.
    pub fn chunks(&self, offset: u64, len: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let end = offset + len;
        let mut at = offset;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let next = (self.chunk_of(at) + 1) * self.chunk;
            let piece = (at, next.min(end) - at);
            at = next.min(end);
            Some(piece)
        })
    }

    /// raid0: the one member holding an in-chunk range (members of equal size: one zone).
    pub fn raid0(&self, offset: u64) -> (u32, u64) {
        let chunk_no = self.chunk_of(offset);
        let disk = (chunk_no % self.disks as u64) as u32;
        let member_chunk = chunk_no / self.disks as u64;
        (disk, member_chunk * self.chunk + self.in_chunk(offset))
    }

    /// raid10: every copy of an in-chunk range, in md's slot order.
    pub fn raid10(&self, offset: u64) -> Vec<(u32, u64)> {
        let mut out = Vec::with_capacity((self.near * self.far) as usize);
        self.raid10_into(offset, &mut out);
        out
    }

    /// `raid10` appending to a caller's buffer (no allocation per I/O).
    pub fn raid10_into(&self, offset: u64, out: &mut Vec<(u32, u64)>) {
        let n = self.disks as u64;
        let in_chunk = self.in_chunk(offset);
        let chunk = self.chunk_of(offset) * self.near as u64;
        let mut stripe = chunk / n;
        let mut dev = chunk % n;
        if self.offset_layout {
            stripe *= self.far as u64;
        }
        let mut sector = stripe * self.chunk + in_chunk;
        for _ in 0..self.near {
            out.push((dev as u32, sector));
            let (mut d, mut s) = (dev, sector);
            for _ in 1..self.far {
                d = (d + self.near as u64) % n;
                s += self.stride;
                out.push((d as u32, s));
            }
            dev += 1;
            if dev >= n {
                dev = 0;
                sector += self.chunk;
            }
        }
    }

    /// raid5/6: (data disk, parity disk, q disk) of a data chunk, and the member offset of
    /// its stripe.
    pub fn parity_map(&self, chunk_no: u64) -> ParityPos {
        let n = self.disks as u64;
        let dd_count = self.data_disks() as u64;
        let stripe = chunk_no / dd_count;
        let dd = chunk_no % dd_count;
        let (pd, data) = self.parity_disk(stripe, dd);
        let qd = if self.level == Level::Raid6 {
            Some(((pd + 1) % n) as u32)
        } else {
            None
        };
        ParityPos {
            stripe,
            data_disk: data as u32,
            parity: pd as u32,
            q: qd,
        }
    }

    /// Parity disk of a stripe, and the member holding data unit `dd`.
    fn parity_disk(&self, stripe: u64, dd: u64) -> (u64, u64) {
        self.parity_disk_mod(stripe % self.disks as u64, dd)
    }

    /// `parity_disk` given `stripe % disks` (all a layout depends on): no division.
    #[inline]
    fn parity_disk_mod(&self, sm: u64, dd: u64) -> (u64, u64) {
        let n = self.disks as u64;
        let dds = self.data_disks() as u64;
        let raid6 = self.level == Level::Raid6;
        let gap = if raid6 { 2 } else { 1 };
        match self.layout.unwrap_or(Layout::LeftSymmetric) {
            Layout::LeftAsymmetric | Layout::RightAsymmetric => {
                let pd = if self.layout == Some(Layout::LeftAsymmetric) {
                    if raid6 {
                        n - 1 - sm
                    } else {
                        dds - sm
                    }
                } else {
                    sm
                };
                // Data fills the members in order, skipping P (and Q after it).
                let mut d = dd;
                for p in [pd, wrap(pd + 1, n)].into_iter().take(gap as usize) {
                    if d >= p {
                        d += 1;
                    }
                }
                (pd, wrap(d, n))
            }
            Layout::RightSymmetric => {
                let pd = sm;
                (pd, wrap(pd + gap + dd, n))
            }
            Layout::ParityFirst => (0, dd + gap),
            Layout::ParityLast => (dds, dd),
            // left-symmetric, md's default.
            _ => {
                let pd = if raid6 { n - 1 - sm } else { dds - sm };
                (pd, wrap(pd + gap + dd, n))
            }
        }
    }

    /// A stripe's parity disk, and in `members` the member of each data unit in order.
    pub fn stripe_members(&self, stripe: u64, members: &mut Vec<u32>) -> u32 {
        let sm = stripe % self.disks as u64;
        let (pd, first) = self.parity_disk_mod(sm, 0);
        members.clear();
        members
            .extend((0..self.data_disks() as u64).map(|dd| self.data_member(sm, first, dd) as u32));
        pd as u32
    }

    /// `parity_disk_mod(sm, dd).1`, given `first = parity_disk_mod(sm, 0).1`: every layout
    /// but the asymmetric ones puts data unit dd + 1 on the member after dd's (wrapping).
    #[inline]
    fn data_member(&self, sm: u64, first: u64, dd: u64) -> u64 {
        let m = match self.layout.unwrap_or(Layout::LeftSymmetric) {
            Layout::LeftAsymmetric | Layout::RightAsymmetric => self.parity_disk_mod(sm, dd).1,
            _ => wrap(first + dd, self.disks as u64),
        };
        debug_assert_eq!(m, self.parity_disk_mod(sm, dd).1);
        m
    }
}

/// `x % n` for `x < 2n`, without a division.
#[inline]
fn wrap(x: u64, n: u64) -> u64 {
    debug_assert!(x < 2 * n);
    if x >= n {
        x - n
    } else {
        x
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParityPos {
    pub stripe: u64,
    pub data_disk: u32,
    pub parity: u32,
    pub q: Option<u32>,
}

/// Members md cannot use at a stripe, a bit each (arrays of at most 64 members): those it
/// cannot read (lost, or being recovered and not yet rebuilt there) and those it does not
/// write (lost; a member being recovered is written wherever a write lands).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    pub unreadable: u64,
    pub unwritable: u64,
}

/// How md pre-reads one row (`handle_stripe_dirtying`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Preread {
    /// Read-modify-write: the blocks being written, and parity.
    Rmw,
    /// Reconstruct-write: the data blocks not being written.
    Rcw,
    /// Neither is possible without a member md cannot read: it reads every member it can
    /// and computes the missing block first.
    All,
}

/// The cheaper of rmw and rcw for a row (`rmw` reads when it reads strictly less), or the
/// one possible without the members in `unreadable`: md counts a block on a member it
/// cannot read as costing 2·disks, so the other way wins. `written`, `unwritten` and
/// `parity` are member bits.
fn preread(
    rmw_cheaper: bool,
    written: u64,
    unwritten: u64,
    parity: u64,
    unreadable: u64,
) -> Preread {
    let rmw_ok = (written | parity) & unreadable == 0;
    let rcw_ok = unwritten & unreadable == 0;
    match (rmw_ok, rcw_ok) {
        (true, true) if rmw_cheaper => Preread::Rmw,
        (true, true) => Preread::Rcw,
        (true, false) => Preread::Rmw,
        (false, true) => Preread::Rcw,
        (false, false) => Preread::All,
    }
}

/// Reads and writes one stripe needs for the rows its pending writes cover.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct StripePlan {
    pub reads: Vec<Piece>,
    pub writes: Vec<Piece>,
}

/// Plan a stripe write as md does per 4 KiB row (`handle_stripe_dirtying`): rmw reads the
/// blocks being written plus parity, rcw reads the data blocks not being written; rmw is
/// chosen only when it reads strictly less (ties go to rcw), or the one that avoids the
/// members md cannot read (`lost`). A row fully overwritten needs no reads.
/// `written[dd]` holds a bit per row for each data unit.
pub fn plan_stripe(g: &Geometry, stripe: u64, written: &[Vec<u64>], lost: Lost) -> StripePlan {
    let words = row_words(g);
    let flat: Vec<u64> = written
        .iter()
        .flat_map(|w| w.iter().copied().chain(std::iter::repeat(0)).take(words))
        .collect();
    let mut plan = StripePlan::default();
    plan_stripe_into(
        g,
        stripe,
        &flat,
        lost,
        &mut plan.reads,
        &mut plan.writes,
        &mut PlanScratch::default(),
    );
    plan
}

/// 64-bit words of a per-row bitmap of one chunk.
pub fn row_words(g: &Geometry) -> usize {
    ((g.chunk / ROW) as usize).div_ceil(64)
}

/// Buffers `plan_stripe_into` reuses between calls (the simulator plans a stripe per write).
#[derive(Debug, Default)]
pub struct PlanScratch {
    reads: Vec<u64>,
    writes: Vec<u64>,
    disks: Vec<u32>,
}

/// Whether a stripe's pending writes need pre-reads (some written row is not fully
/// overwritten): exactly when `plan_stripe` would plan reads, without planning.
pub fn needs_reads(g: &Geometry, written: &[u64]) -> bool {
    let words = row_words(g);
    let dds = g.data_disks() as usize;
    (0..words).any(|word| {
        let union = (0..dds).fold(0u64, |acc, d| acc | written[d * words + word]);
        if dds > 64 {
            // plan_stripe counts at most 64 data units per row: every row reads.
            return union != 0;
        }
        let all = (0..dds).fold(!0u64, |acc, d| acc & written[d * words + word]);
        union != all
    })
}

/// `plan_stripe` into caller-owned buffers. `written` is flat: data unit `dd`'s row bitmap
/// is `written[dd * row_words(g)..][..row_words(g)]`. Pieces come out by member, then by
/// offset.
#[allow(clippy::too_many_arguments)]
pub fn plan_stripe_into(
    g: &Geometry,
    stripe: u64,
    written: &[u64],
    lost: Lost,
    reads_out: &mut Vec<Piece>,
    writes_out: &mut Vec<Piece>,
    scratch: &mut PlanScratch,
) {
    let words = row_words(g);
    let dds = g.data_disks() as usize;
    // Rows written, and a word holding one of them.
    debug_assert_eq!(written.len(), dds * words);
    let (mut rows, mut word, mut word_union) = (0u32, 0, 0u64);
    for w in 0..words {
        let u = written
            .chunks_exact(words)
            .fold(0u64, |acc, unit| acc | unit[w]);
        if u != 0 {
            (word, word_union) = (w, u);
        }
        rows += u.count_ones();
    }
    if rows == 1 && g.disks <= 64 {
        // One row (a small random write): its members directly, no row bitmaps; a member
        // is a bit, so the pieces come out by member without sorting.
        let bit = word_union.trailing_zeros();
        let row = (word * 64) as u64 + bit as u64;
        let mut w_mask = 0u64;
        for (d, unit) in written.chunks_exact(words).enumerate().take(64) {
            w_mask |= (unit[word] >> bit & 1) << d;
        }
        plan_one_row(g, stripe, row, w_mask, lost, reads_out, writes_out);
        return;
    }
    debug_assert!(
        g.disks <= 64 || lost == Lost::default(),
        "lost members of a wide array"
    );
    // P (and Q after it), as `parity_map` places them, and each data unit's member.
    let mut members = std::mem::take(&mut scratch.disks);
    let pd = g.stripe_members(stripe, &mut members);
    let parity = [pd, wrap(pd as u64 + 1, g.disks as u64) as u32];
    let parity = &parity[..g.parity_count() as usize];
    let member_of = |dd: usize| members[dd] as usize;
    // Per member: a bitmap of rows to read and to write, merged into ranges afterwards.
    let union = |word: usize| (0..dds).fold(0u64, |acc, d| acc | written[d * words + word]);
    // The buffers are all zero between calls: only the members used are cleared afterwards.
    let cells = g.disks as usize * words;
    let (reads, writes) = (&mut scratch.reads, &mut scratch.writes);
    if reads.len() != cells {
        reads.clear();
        reads.resize(cells, 0);
        writes.clear();
        writes.resize(cells, 0);
    }
    // Members with any row set, a bit each (all members when there are more than 64).
    let (mut read_disks, mut write_disks) = (0u64, 0u64);
    let bit_of = |disk: usize| if disk < 64 { 1u64 << disk } else { !0 };
    // Rows any write touches: the union of the data units' bitmaps, one word at a time.
    for word in 0..words {
        let mut union = union(word);
        while union != 0 {
            let bit = union.trailing_zeros();
            union &= union - 1;
            // Data units written in this row, as a bit per unit (md arrays have ≤ 64 data disks
            // in any sane layout; larger ones are clamped to the first 64 here).
            let mut w_mask = 0u64;
            for d in 0..dds.min(64) {
                w_mask |= (written[d * words + word] >> bit & 1) << d;
            }
            let n_written = w_mask.count_ones() as usize;
            let rmw = n_written + parity.len();
            let rcw = dds - n_written;
            let readable = |m: usize| m >= 64 || lost.unreadable >> m & 1 == 0;
            let writable = |m: usize| m >= 64 || lost.unwritable >> m & 1 == 0;
            if rcw > 0 {
                let mode = if lost.unreadable == 0 {
                    if rmw < rcw && !g.rcw_only {
                        Preread::Rmw
                    } else {
                        Preread::Rcw
                    }
                } else {
                    let (mut w_bits, mut u_bits) = (0u64, 0u64);
                    for d in 0..dds {
                        if w_mask >> d & 1 == 1 {
                            w_bits |= bit_of(member_of(d));
                        } else {
                            u_bits |= bit_of(member_of(d));
                        }
                    }
                    let p_bits = parity.iter().fold(0, |acc, &p| acc | bit_of(p as usize));
                    preread(
                        rmw < rcw && !g.rcw_only,
                        w_bits,
                        u_bits,
                        p_bits,
                        lost.unreadable,
                    )
                };
                for d in 0..dds {
                    let is_written = w_mask >> d & 1 == 1;
                    let wanted = match mode {
                        Preread::Rmw => is_written,
                        Preread::Rcw => !is_written,
                        Preread::All => true,
                    };
                    let m = member_of(d);
                    if wanted && readable(m) {
                        reads[m * words + word] |= 1 << bit;
                        read_disks |= bit_of(m);
                    }
                }
                if mode != Preread::Rcw {
                    for &p in parity.iter().filter(|&&p| readable(p as usize)) {
                        reads[p as usize * words + word] |= 1 << bit;
                        read_disks |= bit_of(p as usize);
                    }
                }
            }
            for d in (0..dds).filter(|d| w_mask >> d & 1 == 1) {
                let m = member_of(d);
                if writable(m) {
                    writes[m * words + word] |= 1 << bit;
                    write_disks |= bit_of(m);
                }
            }
            for &p in parity.iter().filter(|&&p| writable(p as usize)) {
                writes[p as usize * words + word] |= 1 << bit;
                write_disks |= bit_of(p as usize);
            }
        }
    }
    let base = stripe * g.chunk;
    merge_rows(reads, words, read_disks, base, reads_out);
    merge_rows(writes, words, write_disks, base, writes_out);
    scratch.disks = members;
}

/// `plan_stripe_into` for writes to a single 4 KiB row `row` of a stripe of an array of at
/// most 64 members: `w_mask` has a bit per data unit written in that row. The members
/// come straight from bit masks, so the pieces come out by member without sorting. The
/// simulator calls it directly for a stripe holding one written block (a small random
/// write), which it knows without scanning the row bitmaps.
pub fn plan_one_row(
    g: &Geometry,
    stripe: u64,
    row: u64,
    w_mask: u64,
    lost: Lost,
    reads_out: &mut Vec<Piece>,
    writes_out: &mut Vec<Piece>,
) {
    debug_assert!(g.disks <= 64 && w_mask != 0);
    let dds = g.data_disks() as usize;
    let n_written = w_mask.count_ones() as usize;
    let rmw = n_written + g.parity_count() as usize;
    let rcw = dds - n_written;
    let read_written = rmw < rcw && !g.rcw_only;
    let at = stripe * g.chunk + row * ROW;
    let n = g.disks as u64;
    let sm = stripe % n;
    let (pd, first) = g.parity_disk_mod(sm, 0);
    let mut parity_bits = 1u64 << pd;
    if g.parity_count() == 2 {
        parity_bits |= 1 << wrap(pd + 1, n);
    }
    // Data units' members: all members but P (and Q); those written, one by one.
    let all = if n == 64 { !0 } else { (1u64 << n) - 1 };
    let data_bits = all & !parity_bits;
    let mut written_bits = 0u64;
    let mut rest = w_mask;
    while rest != 0 {
        let d = rest.trailing_zeros() as u64;
        rest &= rest - 1;
        written_bits |= 1 << g.data_member(sm, first, d);
    }
    let write_bits = (written_bits | parity_bits) & !lost.unwritable;
    let unwritten = data_bits & !written_bits;
    let read_bits = if rcw == 0 {
        0
    } else {
        let bits = match preread(
            read_written,
            written_bits,
            unwritten,
            parity_bits,
            lost.unreadable,
        ) {
            Preread::Rmw => written_bits | parity_bits,
            Preread::Rcw => unwritten,
            Preread::All => data_bits | parity_bits,
        };
        bits & !lost.unreadable
    };
    let emit = |mut bits: u64, out: &mut Vec<Piece>| {
        out.clear();
        while bits != 0 {
            let disk = bits.trailing_zeros();
            bits &= bits - 1;
            out.push(Piece {
                disk,
                offset: at,
                len: ROW,
            });
        }
    };
    emit(read_bits, reads_out);
    emit(write_bits, writes_out);
}

/// Contiguous rows on one member become one I/O, as the block layer merges them.
/// `bits` holds `words` words of row bitmap per member.
/// Members outside `disks` (a bit per member, the first 64) are known to be empty; the
/// rows of those inside are cleared after use.
fn merge_rows(bits: &mut [u64], words: usize, disks: u64, base: u64, out: &mut Vec<Piece>) {
    out.clear();
    for (disk, b) in bits.chunks_mut(words).enumerate() {
        if disk < 64 && disks >> disk & 1 == 0 {
            continue;
        }
        for_each_run(b, |start, end| {
            out.push(Piece {
                disk: disk as u32,
                offset: base + start as u64 * ROW,
                len: (end - start) as u64 * ROW,
            })
        });
        b.fill(0);
    }
}

/// Calls `f(start, end)` for each run of set bits in `bits`, in ascending order.
fn for_each_run(bits: &[u64], mut f: impl FnMut(usize, usize)) {
    let total = bits.len() * 64;
    let mut r = 0;
    while r < total {
        let ones = bits[r / 64] >> (r % 64);
        if ones == 0 {
            r = (r / 64 + 1) * 64;
            continue;
        }
        r += ones.trailing_zeros() as usize;
        let start = r;
        while r < total {
            let zeros = !bits[r / 64] >> (r % 64);
            if zeros == 0 {
                r = (r / 64 + 1) * 64;
                continue;
            }
            r += zeros.trailing_zeros() as usize;
            break;
        }
        f(start, r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raidlab_core::{Bitmap, Bytes, Engine, Filesystem, Resync, WriteCache};

    fn spec(level: Level, layout: Option<Layout>, disks: u32) -> ArraySpec {
        ArraySpec {
            engine: Engine::Md,
            level,
            layout,
            chunk: Some(Bytes::kib(64)),
            disks,
            filesystem: Filesystem::None,
            write_cache: WriteCache::Off,
            bitmap: Bitmap::None,
            resync: Resync::AssumeClean,
            stripe_cache: Some(256),
            state: Default::default(),
            failed: None,
            rebuild: None,
        }
    }

    fn one_row(g: &Geometry, dd: usize) -> Vec<Vec<u64>> {
        let words = (g.chunk / ROW) as usize / 64 + 1;
        let mut w = vec![vec![0u64; words]; g.data_disks() as usize];
        w[dd][0] = 1;
        w
    }

    #[test]
    fn raid5_left_symmetric_rotates_parity_like_md() {
        let g = Geometry::new(&spec(Level::Raid5, Some(Layout::LeftSymmetric), 4), 1 << 30);
        // Stripe 0: parity on disk 3, data on 0,1,2; stripe 1: parity on 2, data 3,0,1.
        assert_eq!(
            g.parity_map(0),
            ParityPos {
                stripe: 0,
                data_disk: 0,
                parity: 3,
                q: None
            }
        );
        assert_eq!(g.parity_map(3).parity, 2);
        assert_eq!(g.parity_map(3).data_disk, 3);
        assert_eq!(g.parity_map(4).data_disk, 0);
    }

    #[test]
    fn raid6_left_symmetric_puts_q_after_p() {
        let g = Geometry::new(&spec(Level::Raid6, Some(Layout::LeftSymmetric), 6), 1 << 30);
        let p = g.parity_map(0);
        assert_eq!((p.parity, p.q, p.data_disk), (5, Some(0), 1));
    }

    #[test]
    fn md_exact_small_write_costs() {
        // (level, disks) -> (member reads, member writes) for one 4 KiB write.
        for (level, n, want) in [
            (Level::Raid5, 3, (1, 2)),
            (Level::Raid5, 4, (2, 2)),
            (Level::Raid5, 6, (2, 2)),
            (Level::Raid6, 4, (1, 3)),
            (Level::Raid6, 5, (2, 3)),
            (Level::Raid6, 6, (3, 3)),
            (Level::Raid6, 8, (3, 3)),
        ] {
            let g = Geometry::new(&spec(level, Some(Layout::LeftSymmetric), n), 1 << 30);
            let p = plan_stripe(&g, 0, &one_row(&g, 0), Lost::default());
            assert_eq!((p.reads.len(), p.writes.len()), want, "{level} on {n}");
        }
    }

    /// Members of a plan's pieces, in order.
    fn members(pieces: &[Piece]) -> Vec<u32> {
        pieces.iter().map(|p| p.disk).collect()
    }

    /// md plans a degraded write around the members it has lost (`handle_stripe_dirtying`
    /// counts a block it cannot read as 2·disks): the one of rmw and rcw that avoids them,
    /// else every member it can read; it writes no lost member, but does write one being
    /// recovered. The same through the one-row fast path and the general one (two rows).
    #[test]
    fn degraded_writes_avoid_lost_members() {
        let gone = |bits: &[u32]| bits.iter().fold(0u64, |m, d| m | 1 << d);
        let lost = |bits: &[u32]| Lost {
            unreadable: gone(bits),
            unwritable: gone(bits),
        };
        // raid5 on 6, stripe 0: parity on member 5, the block written on member 0.
        let r5 = Geometry::new(&spec(Level::Raid5, Some(Layout::LeftSymmetric), 6), 1 << 30);
        // raid6 on 6, stripe 0: P on 5, Q on 0, the block written on member 1.
        let r6 = Geometry::new(&spec(Level::Raid6, Some(Layout::LeftSymmetric), 6), 1 << 30);
        for (g, what, l, reads, writes) in [
            (
                &r5,
                "parity lost: rcw",
                lost(&[5]),
                vec![1, 2, 3, 4],
                vec![0],
            ),
            (
                &r5,
                "written block lost: rcw, parity only",
                lost(&[0]),
                vec![1, 2, 3, 4],
                vec![5],
            ),
            (
                &r5,
                "another block lost: rmw",
                lost(&[3]),
                vec![0, 5],
                vec![0, 5],
            ),
            (
                &r6,
                "P and Q lost: rcw",
                lost(&[0, 5]),
                vec![2, 3, 4],
                vec![1],
            ),
            (
                &r6,
                "written and unwritten lost: read all",
                lost(&[1, 2]),
                vec![0, 3, 4, 5],
                vec![0, 5],
            ),
            (
                &r5,
                "parity being recovered: rcw, written",
                Lost {
                    unreadable: gone(&[5]),
                    unwritable: 0,
                },
                vec![1, 2, 3, 4],
                vec![0, 5],
            ),
        ] {
            let p = plan_stripe(g, 0, &one_row(g, 0), l);
            assert_eq!(
                (members(&p.reads), members(&p.writes)),
                (reads.clone(), writes.clone()),
                "{what}"
            );
            let mut two = one_row(g, 0);
            two[0][0] = 0b11;
            let p = plan_stripe(g, 0, &two, l);
            assert_eq!(
                (members(&p.reads), members(&p.writes)),
                (reads, writes),
                "{what}, two rows"
            );
            assert!(
                p.reads.iter().chain(&p.writes).all(|x| x.len == 2 * ROW),
                "{what}: {p:?}"
            );
        }
    }

    #[test]
    fn full_stripe_write_reads_nothing() {
        let g = Geometry::new(&spec(Level::Raid5, Some(Layout::LeftSymmetric), 4), 1 << 30);
        let rows = (g.chunk / ROW) as usize;
        let mut w = vec![vec![0u64; rows / 64 + 1]; 3];
        for d in w.iter_mut() {
            for r in 0..rows {
                d[r / 64] |= 1 << (r % 64);
            }
        }
        let p = plan_stripe(&g, 7, &w, Lost::default());
        assert!(p.reads.is_empty());
        assert_eq!(
            p.writes.len(),
            4,
            "3 data chunks + parity, each merged into one I/O"
        );
        assert!(p
            .writes
            .iter()
            .all(|w| w.len == g.chunk && w.offset == 7 * g.chunk));
    }

    #[test]
    fn raid10_layouts_place_copies_like_md() {
        let n2 = Geometry::new(&spec(Level::Raid10, Some(Layout::Near(2)), 4), 1 << 30);
        assert_eq!(n2.raid10(0), vec![(0, 0), (1, 0)]);
        assert_eq!(n2.raid10(64 << 10), vec![(2, 0), (3, 0)]);
        assert_eq!(n2.raid10(128 << 10), vec![(0, 64 << 10), (1, 64 << 10)]);
        let f2 = Geometry::new(&spec(Level::Raid10, Some(Layout::Far(2)), 4), 1 << 30);
        assert_eq!(f2.raid10(0), vec![(0, 0), (1, 512 << 20)]);
        assert_eq!(f2.raid10(3 * (64 << 10)), vec![(3, 0), (0, 512 << 20)]);
        let o2 = Geometry::new(&spec(Level::Raid10, Some(Layout::Offset(2)), 4), 1 << 30);
        assert_eq!(o2.raid10(0), vec![(0, 0), (1, 64 << 10)]);
        assert_eq!(
            o2.raid10(4 * (64 << 10)),
            vec![(0, 128 << 10), (1, 192 << 10)]
        );
    }
}
