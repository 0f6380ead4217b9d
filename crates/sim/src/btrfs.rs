//! btrfs's RAID profiles, as the md-shaped geometry the engine runs.
//!
//! btrfs places data in block groups ("chunks") of up to 1 GiB of logical space, each
//! allocated on the devices with the most free space (`fs/btrfs/volumes.c`,
//! `btrfs_create_chunk`, devices sorted by free space; on equal devices that is a round
//! over them in device order), and maps a block group as its profile says
//! (`btrfs_map_block`): striped in 64 KiB units (`BTRFS_STRIPE_LEN`) for raid0, raid10 and
//! raid5/6, whole on each device for the mirrored profiles. On members of equal size that
//! is exactly an md layout:
//!
//! | btrfs profile | md shape the engine runs |
//! |---|---|
//! | raid0 | raid0, 64 KiB chunk |
//! | raid1 / raid1c3 / raid1c4 | raid10 near 2 / 3 / 4 with a 1 GiB chunk (a block group on the next two, three, four devices in turn) |
//! | raid10 | raid10 near 2, 64 KiB chunk (`sub_stripes` = 2) |
//! | raid5 / raid6 | raid5 / raid6, 64 KiB chunk, writes always reconstruct |
//!
//! Two behaviours differ from md and are modelled:
//! - **Reads of mirrored profiles pick their copy by the reading thread's id**
//!   (`btrfs_read_policy` "pid", the default: `current->pid % num_copies`), not by md's
//!   head distance and load: one fio job reads one copy only. The model gives job j copy
//!   j mod copies (fio's job threads have consecutive ids; which parity comes first is
//!   the system's).
//! - **RAID56 writes never read old parity**: btrfs's read-modify-write reads the rest of
//!   the full stripe and computes parity from it (`raid56.c`, `rmw_rbio`) — md's
//!   reconstruct-write. (Since Linux 6.2 it also reads the data being overwritten, to
//!   check its checksum, and it reads whole 64 KiB units where md reads 4 KiB rows: the
//!   model's transfers are the smaller ones.)
//!
//! Not modelled: btrfs's metadata (checksum tree writes, copy-on-write of extents), its
//! own RAID56 stripe cache, and block groups smaller than 1 GiB on small file systems.

use crate::resync::Pace;
use raidlab_core::{ArraySpec, Bitmap, Bytes, Engine, Layout, Level};

/// btrfs's stripe unit (`BTRFS_STRIPE_LEN`).
pub const STRIPE_LEN: u64 = 64 << 10;
/// A data block group's size on file systems above 10 GiB.
pub const BLOCK_GROUP: u64 = 1 << 30;
/// A replace's reads in Linux 6.1 (`fs/btrfs/scrub.c`): bios of up to
/// `SCRUB_SECTORS_PER_BIO` (32) sectors of 4 KiB, up to `SCRUB_BIOS_PER_SCTX` (64) of them
/// in flight, each written to the new device as it completes.
pub const REPLACE_UNIT: u64 = 128 << 10;
pub const REPLACE_WINDOWS: u32 = 64;

/// The md-shaped spec of a btrfs array (an md spec is returned as it is).
pub fn md_equivalent(spec: &ArraySpec) -> ArraySpec {
    if spec.engine != Engine::Btrfs {
        return spec.clone();
    }
    let (level, layout, chunk) = match spec.level {
        Level::Raid0 => (Level::Raid0, None, STRIPE_LEN),
        Level::Raid1 => (Level::Raid10, Some(Layout::Near(2)), BLOCK_GROUP),
        Level::Raid1c3 => (Level::Raid10, Some(Layout::Near(3)), BLOCK_GROUP),
        Level::Raid1c4 => (Level::Raid10, Some(Layout::Near(4)), BLOCK_GROUP),
        Level::Raid10 => (Level::Raid10, Some(Layout::Near(2)), STRIPE_LEN),
        Level::Raid5 => (Level::Raid5, Some(Layout::LeftSymmetric), STRIPE_LEN),
        Level::Raid6 => (Level::Raid6, Some(Layout::LeftSymmetric), STRIPE_LEN),
        other => (other, spec.layout, spec.chunk.map_or(STRIPE_LEN, |c| c.0)),
    };
    ArraySpec {
        engine: Engine::Md,
        level,
        layout,
        chunk: (level != Level::Single).then_some(Bytes(chunk)),
        bitmap: Bitmap::None,
        ..spec.clone()
    }
}

/// The bytes at the start of each member that hold data when the file system's first
/// `end` bytes are written: btrfs allocates block groups as data arrives, each device
/// extent from the lowest free offset of its device, so a member's used space is a
/// prefix, in whole device extents (1 GiB for data).
pub fn allocated_per_member(spec: &ArraySpec, end: u64) -> u64 {
    let raw = end as f64 / spec.capacity_fraction() / spec.disks as f64;
    (raw.ceil() as u64).div_ceil(BLOCK_GROUP) * BLOCK_GROUP
}

/// How a `btrfs replace` proceeds (Linux 6.1): in reads of [`REPLACE_UNIT`],
/// [`REPLACE_WINDOWS`] of them in flight, never paced by load (btrfs has no sync speed
/// limit by default, and does not yield to other I/O).
pub fn replace_pace() -> Pace {
    Pace {
        governor: None,
        min: 0,
        max: u32::MAX,
        depth_bytes: u64::MAX,
        windows: REPLACE_WINDOWS,
        unit: REPLACE_UNIT,
    }
}

/// Reads pick their copy by the reading thread (a mirrored btrfs profile).
pub fn reads_by_thread(spec: &ArraySpec) -> bool {
    spec.engine == Engine::Btrfs
        && matches!(
            spec.level,
            Level::Raid1 | Level::Raid1c3 | Level::Raid1c4 | Level::Raid10
        )
}

/// Stripe writes always reconstruct (btrfs RAID56).
pub fn reconstruct_only(spec: &ArraySpec) -> bool {
    spec.engine == Engine::Btrfs && matches!(spec.level, Level::Raid5 | Level::Raid6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::md::Geometry;

    fn btrfs(level: Level, disks: u32) -> ArraySpec {
        ArraySpec {
            engine: Engine::Btrfs,
            chunk: None,
            layout: None,
            ..ArraySpec::md(level, disks)
        }
    }

    /// btrfs raid1 on four devices keeps two copies, a block group on devices 0 and 1,
    /// the next on 2 and 3; md's raid1 would have kept four.
    #[test]
    fn mirrored_profiles_keep_their_copies_per_block_group() {
        let g = Geometry::new(&md_equivalent(&btrfs(Level::Raid1, 4)), 100 << 30);
        assert_eq!(g.copies(), 2);
        let disks = |at: u64| -> Vec<u32> { g.raid10(at).iter().map(|c| c.0).collect() };
        assert_eq!(disks(0), [0, 1]);
        assert_eq!(disks(BLOCK_GROUP - 4096), [0, 1]);
        assert_eq!(disks(BLOCK_GROUP), [2, 3]);
        assert_eq!(disks(2 * BLOCK_GROUP), [0, 1]);
        let c3 = Geometry::new(&md_equivalent(&btrfs(Level::Raid1c3, 4)), 100 << 30);
        assert_eq!(c3.copies(), 3);
        // raid10: pairs in 64 KiB units.
        let r10 = Geometry::new(&md_equivalent(&btrfs(Level::Raid10, 4)), 100 << 30);
        let d10 = |at: u64| -> Vec<u32> { r10.raid10(at).iter().map(|c| c.0).collect() };
        assert_eq!((d10(0), d10(STRIPE_LEN)), (vec![0, 1], vec![2, 3]));
        // Parity profiles stripe in 64 KiB units and reconstruct.
        let r5 = btrfs(Level::Raid5, 4);
        let m = md_equivalent(&r5);
        assert_eq!(
            (m.level, m.chunk, m.engine),
            (Level::Raid5, Some(Bytes(STRIPE_LEN)), Engine::Md)
        );
        assert!(reconstruct_only(&r5) && !reads_by_thread(&r5));
        assert!(reads_by_thread(&btrfs(Level::Raid1, 2)));
        // md arrays pass through.
        let md = ArraySpec::md(Level::Raid1, 4);
        assert_eq!(md_equivalent(&md), md);
        assert!(!reads_by_thread(&md));
    }
}
