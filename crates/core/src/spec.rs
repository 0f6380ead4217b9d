//! The array spec: what array a case builds — engine, level, layout, chunk, members,
//! file system, write cache, bitmap and resync policy.
//!
//! One type serves every target: the simulator models it, the host and VM targets turn it
//! into mdadm / mkfs.btrfs command lines, the report prints it. Parsing lives here so a
//! layout such as `f2` means the same thing everywhere.

use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Who builds the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Linux software RAID, built with mdadm.
    Md,
    /// btrfs native RAID profiles, built with mkfs.btrfs.
    Btrfs,
}

/// A RAID level. `Single` is one disk without an array: the per-disk baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Single,
    Raid0,
    Raid1,
    Raid10,
    Raid5,
    Raid6,
    /// btrfs only: three copies.
    Raid1c3,
    /// btrfs only: four copies.
    Raid1c4,
}

/// An md layout. `Near`/`Far`/`Offset` carry the copy count (raid10); the parity
/// algorithms apply to raid5 and raid6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    Near(u8),
    Far(u8),
    Offset(u8),
    LeftSymmetric,
    LeftAsymmetric,
    RightSymmetric,
    RightAsymmetric,
    ParityFirst,
    ParityLast,
}

/// File system made on the array before fio runs, or none (fio on the raw array).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Filesystem {
    Xfs,
    Ext4,
    /// btrfs is implied by the btrfs engine.
    Btrfs,
    None,
}

/// What to do with each member's volatile write cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum WriteCache {
    Off,
    On,
    /// Leave it as found.
    Keep,
}

/// The host's I/O scheduler for each member disk (`/sys/block/DEV/queue/scheduler`): what
/// orders the commands waiting above the drive's own queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Scheduler {
    /// First come, first served (the default for NVMe and other non-rotational disks).
    None,
    /// Sorted by sector, with a deadline per request (Debian's default for rotational disks).
    MqDeadline,
    /// A queue per process, served in turn, each in the order of its sectors (Budget Fair
    /// Queueing: the default for rotational disks on Fedora, among others).
    Bfq,
}

/// md write-intent bitmap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Bitmap {
    None,
    Internal,
}

/// The state an array is measured in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum ArrayState {
    /// Every member present.
    #[default]
    Healthy,
    /// Members failed and removed (md's last ones; `failed`, default 1), nothing
    /// rebuilding: the array serves from the others.
    Degraded,
    /// The failed members replaced by fresh ones that md recovers while the workload
    /// runs, paced by md's rebuild governor ([`Rebuild`]).
    Rebuilding,
}

/// How md paces a recovery on an array that is also serving I/O (`md_do_sync` in
/// `drivers/md/md.c`). In every regime the recovery sleeps 500 ms while it runs above
/// `sync_speed_max`, and never waits below `sync_speed_min`; they differ in what it does
/// between the two when other I/O reaches the members.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum Governor {
    /// Linux 6.16 and later (commit 03720d82d730): in-flight recovery I/O is capped at
    /// `sync_io_depth` units (4 KiB stripes for raid4/5/6, 64 KiB for raid1/10); below the
    /// cap it goes on, above it waits for everything in flight.
    #[serde(rename = "6.16")]
    Depth,
    /// Linux 4.1 to 6.15 (commit ac8fa4196d20): after a 128 KiB window on an array it finds
    /// busy, it waits for everything in flight, then goes on (its idle test counts sectors
    /// per member, so its own requests in flight hide a light workload).
    #[serde(rename = "6.15")]
    Drain,
    /// Before Linux 4.1: it sleeps 500 ms, so under steady load it sinks to
    /// `sync_speed_min`.
    #[serde(rename = "4.0")]
    Sleep,
}

/// What comes back to a rebuilding md array.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, Default,
)]
pub enum Rejoin {
    /// A fresh disk (`mdadm --add`): md recovers all of it.
    #[default]
    #[serde(rename = "fresh")]
    Fresh,
    /// The member that left, back after a brief absence (`mdadm --re-add`): with a
    /// write-intent bitmap md resyncs only the bitmap chunks written while it was away.
    #[serde(rename = "re-add")]
    ReAdd,
}

impl Rejoin {
    pub fn is_fresh(&self) -> bool {
        *self == Rejoin::Fresh
    }
}

/// md's recovery knobs for a rebuilding array, as `/sys/block/mdX/md/` takes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rebuild {
    /// The kernel regime of the rebuild governor.
    pub kernel: Governor,
    /// `sync_speed_min`, KiB/s per member (md's default 1,000).
    pub sync_speed_min: u32,
    /// `sync_speed_max`, KiB/s per member (md's default 200,000).
    pub sync_speed_max: u32,
    /// `sync_io_depth` (Linux 6.16; default 32): recovery units in flight on a busy array.
    pub sync_io_depth: u32,
    /// A fresh disk or the member that left (absent from what was stored before).
    #[serde(default, skip_serializing_if = "Rejoin::is_fresh")]
    pub rejoin: Rejoin,
}

impl Default for Rebuild {
    fn default() -> Rebuild {
        Rebuild {
            kernel: Governor::Depth,
            sync_speed_min: 1_000,
            sync_speed_max: 200_000,
            sync_io_depth: 32,
            rejoin: Rejoin::Fresh,
        }
    }
}

impl ArrayState {
    pub fn is_healthy(&self) -> bool {
        *self == ArrayState::Healthy
    }
}

/// What to do about md's initial resync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Resync {
    /// Wait for it to finish before the workload (and record how long it took).
    Wait,
    /// `mdadm --assume-clean`: no resync.
    AssumeClean,
    /// Run the workload while the resync runs (to measure its cost).
    During,
}

/// md's `stripe_cache_size` when nobody sets it (4 KiB stripe heads per array).
pub const DEFAULT_STRIPE_CACHE: u32 = 256;

/// One array to build.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ArraySpec {
    pub engine: Engine,
    pub level: Level,
    /// Resolved layout: the engine's default is filled in, so the case id names it.
    pub layout: Option<Layout>,
    /// Chunk size; `None` where the level has none (raid1, single, btrfs).
    pub chunk: Option<Bytes>,
    /// Member count.
    pub disks: u32,
    pub filesystem: Filesystem,
    pub write_cache: WriteCache,
    pub bitmap: Bitmap,
    pub resync: Resync,
    /// raid5/6 `stripe_cache_size` in 4 KiB pages per member ([`DEFAULT_STRIPE_CACHE`]).
    pub stripe_cache: Option<u32>,
    /// Healthy, or degraded (a member gone). Absent from a healthy case's id, so the ids
    /// of plans without the field are those of earlier versions.
    #[serde(default, skip_serializing_if = "ArrayState::is_healthy")]
    pub state: ArrayState,
    /// Members failed (md's last ones) when degraded or rebuilding, when more than one:
    /// `None` is one, so one-failure cases keep the ids they had before the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u32>,
    /// md's recovery knobs, for a rebuilding array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebuild: Option<Rebuild>,
}

impl ArraySpec {
    /// An md array of `disks` members at `level` with md's defaults: its default layout,
    /// 512 KiB chunks where it stripes, no file system, bitmap or resync, healthy.
    pub fn md(level: Level, disks: u32) -> ArraySpec {
        ArraySpec {
            engine: Engine::Md,
            level,
            layout: level.default_layout(),
            chunk: level.has_chunk().then_some(Bytes::kib(512)),
            disks,
            filesystem: Filesystem::None,
            write_cache: WriteCache::Keep,
            bitmap: Bitmap::None,
            resync: Resync::AssumeClean,
            stripe_cache: None,
            state: ArrayState::Healthy,
            failed: None,
            rebuild: None,
        }
    }

    /// A rebuilding md array that gets back the member that left (`rejoin = "re-add"`).
    pub fn re_adds(&self) -> bool {
        self.rebuild.is_some_and(|r| r.rejoin == Rejoin::ReAdd)
    }

    /// Members missing (degraded) or being recovered (rebuilding): none when healthy.
    pub fn failed_members(&self) -> u32 {
        match self.state {
            ArrayState::Healthy => 0,
            _ => self.failed.unwrap_or(1),
        }
    }

    /// Copies of each block (1 for striping and parity levels). md raid1 mirrors on every
    /// member; btrfs raid1 and raid10 keep two copies whatever the device count.
    pub fn copies(&self) -> u32 {
        match (self.level, self.layout) {
            (Level::Raid1, _) if self.engine == Engine::Btrfs => 2,
            (Level::Raid1, _) => self.disks,
            (Level::Raid10, Some(Layout::Near(n) | Layout::Far(n) | Layout::Offset(n))) => n as u32,
            (Level::Raid10, _) => 2,
            (Level::Raid1c3, _) => 3,
            (Level::Raid1c4, _) => 4,
            _ => 1,
        }
    }

    /// Members' worth of space that hold parity.
    pub fn parity_disks(&self) -> u32 {
        match self.level {
            Level::Raid5 => 1,
            Level::Raid6 => 2,
            _ => 0,
        }
    }

    /// Members that carry distinct data in one stripe.
    pub fn data_disks(&self) -> u32 {
        match self.level {
            Level::Single => 1,
            Level::Raid0 => self.disks,
            Level::Raid5 | Level::Raid6 => self.disks - self.parity_disks(),
            _ => self.disks / self.copies().max(1),
        }
    }

    /// Usable fraction of raw capacity.
    pub fn capacity_fraction(&self) -> f64 {
        match self.level {
            Level::Single => 1.0,
            Level::Raid0 => 1.0,
            Level::Raid5 | Level::Raid6 => {
                (self.disks - self.parity_disks()) as f64 / self.disks as f64
            }
            _ => 1.0 / self.copies() as f64,
        }
    }

    /// Member failures the array survives in the worst case.
    pub fn fault_tolerance(&self) -> u32 {
        match self.level {
            Level::Single | Level::Raid0 => 0,
            Level::Raid5 => 1,
            Level::Raid6 => 2,
            _ => self.copies() - 1,
        }
    }

    /// A short label such as `raid10 f2 512k`, for tables and chart legends. md settings
    /// that are off their default and change what is measured are named too (`bitmap`,
    /// `resyncing`, `stripe_cache=4096`), so two such arrays in one plan tell apart.
    pub fn label(&self) -> String {
        let mut s = self.level.to_string();
        // left-symmetric is the default everyone expects; name only the unusual ones.
        if let Some(l) = self.layout.filter(|l| *l != Layout::LeftSymmetric) {
            s.push(' ');
            s.push_str(&l.to_string());
        }
        if let Some(c) = self.chunk {
            s.push(' ');
            s.push_str(&c.to_fio());
        }
        if let Some(n) = self.stripe_cache.filter(|&n| n != DEFAULT_STRIPE_CACHE) {
            s.push_str(&format!(" stripe_cache={n}"));
        }
        if self.bitmap == Bitmap::Internal {
            s.push_str(" bitmap");
        }
        if self.resync == Resync::During {
            s.push_str(" resyncing");
        }
        if !self.state.is_healthy() {
            s.push(' ');
            s.push_str(self.state.word());
            if let Some(n) = self.failed {
                s.push_str(&format!(" ×{n}"));
            }
        }
        if let Some(r) = self.rebuild.filter(|r| r.kernel != Governor::Depth) {
            s.push_str(&format!(" linux-{}", r.kernel));
        }
        if self.re_adds() {
            s.push_str(" re-add");
        }
        s
    }
}

/// An enum's words, written once for plans, the command line and every display: `Display`
/// writes the first word of each variant, `FromStr` takes any of them (in any case, after
/// `$norm` when given) and answers `$help` otherwise.
macro_rules! words {
    ($t:ty, $help:expr, { $($v:path => $word:literal $(| $alias:literal)*),+ $(,)? }) => {
        words!($t, |s: &str| s.to_ascii_lowercase(), $help, { $($v => $word $(| $alias)*),+ });
    };
    ($t:ty, $norm:expr, $help:expr, { $($v:path => $word:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $t {
            /// The word for this value in plans, on the command line and in results.
            pub fn word(self) -> &'static str {
                match self {
                    $($v => $word,)+
                }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.word())
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                let norm: String = ($norm)(s);
                match norm.as_str() {
                    $($word $(| $alias)* => Ok($v),)+
                    _ => {
                        // A near miss (`raid-6`, `Rand_Read`) is named, not guessed at.
                        let squash = |w: &str| w.to_ascii_lowercase().replace(['-', '_', ' '], "");
                        let near = [$($word),+].into_iter().find(|w| squash(w) == squash(s));
                        Err(match near {
                            Some(w) => format!("did you mean `{w}`? {}", $help),
                            None => $help.into(),
                        })
                    }
                }
            }
        }
    };
}
pub(crate) use words;

words!(Engine, "use `md` or `btrfs`", {
    Engine::Md => "md" | "mdadm",
    Engine::Btrfs => "btrfs",
});

words!(
    Level,
    // mdadm's words (and its numbers); case does not matter, spelling does.
    |s: &str| s.to_ascii_lowercase(),
    "use one of single, raid0, raid1, raid10, raid5, raid6 (btrfs also raid1c3, raid1c4)",
    {
        Level::Single => "single" | "disk" | "jbod1",
        Level::Raid0 => "raid0" | "0" | "stripe",
        Level::Raid1 => "raid1" | "1" | "mirror",
        Level::Raid10 => "raid10" | "10",
        Level::Raid5 => "raid5" | "5",
        Level::Raid6 => "raid6" | "6",
        Level::Raid1c3 => "raid1c3",
        Level::Raid1c4 => "raid1c4",
    }
);

words!(Filesystem, "use xfs, ext4, btrfs or none", {
    Filesystem::Xfs => "xfs",
    Filesystem::Ext4 => "ext4",
    Filesystem::Btrfs => "btrfs",
    Filesystem::None => "none" | "raw",
});

words!(WriteCache, "use off, on or keep", {
    WriteCache::Off => "off",
    WriteCache::On => "on",
    WriteCache::Keep => "keep",
});

words!(Scheduler, "use mq-deadline, bfq or none", {
    Scheduler::None => "none" | "noop",
    Scheduler::MqDeadline => "mq-deadline" | "deadline",
    Scheduler::Bfq => "bfq",
});

words!(ArrayState, "use healthy, degraded or rebuilding", {
    ArrayState::Healthy => "healthy",
    ArrayState::Degraded => "degraded",
    ArrayState::Rebuilding => "rebuilding" | "recovering",
});

words!(Governor, |s: &str| s.trim().trim_start_matches(['v', 'V']).to_string(), "use 6.16 (Linux 6.16 and later, the default), 6.15 (Linux 4.1 to 6.15) or 4.0 (before 4.1)", {
    Governor::Depth => "6.16",
    Governor::Drain => "6.15" | "6.1" | "5.15" | "5.10" | "4.19" | "4.1",
    Governor::Sleep => "4.0" | "3.10",
});

words!(Rejoin, "use fresh (a new disk, recovered whole) or re-add (the member that left, with a bitmap resynced in part)", {
    Rejoin::Fresh => "fresh" | "new" | "add",
    Rejoin::ReAdd => "re-add" | "readd",
});

words!(Bitmap, "use none or internal", {
    Bitmap::None => "none",
    Bitmap::Internal => "internal",
});

words!(Resync, "use wait, assume-clean or during", {
    Resync::Wait => "wait",
    Resync::AssumeClean => "assume-clean",
    Resync::During => "during",
});

impl Level {
    pub const ALL: [Level; 8] = [
        Level::Single,
        Level::Raid0,
        Level::Raid1,
        Level::Raid10,
        Level::Raid5,
        Level::Raid6,
        Level::Raid1c3,
        Level::Raid1c4,
    ];

    /// Smallest member count the engine accepts for this level.
    pub fn min_disks(self, engine: Engine) -> u32 {
        match (engine, self) {
            (_, Level::Single) => 1,
            (Engine::Md, Level::Raid0 | Level::Raid1 | Level::Raid10) => 2,
            (Engine::Md, Level::Raid5) => 3,
            (Engine::Md, Level::Raid6) => 4,
            (Engine::Btrfs, Level::Raid0 | Level::Raid1 | Level::Raid10 | Level::Raid5) => 2,
            (Engine::Btrfs, Level::Raid6 | Level::Raid1c3) => 3,
            (_, Level::Raid1c4) => 4,
            (Engine::Md, Level::Raid1c3) => 3,
        }
    }

    /// Whether the level stripes data in chunks (and so takes a chunk size under md).
    pub fn has_chunk(self) -> bool {
        matches!(
            self,
            Level::Raid0 | Level::Raid10 | Level::Raid5 | Level::Raid6
        )
    }

    /// md's default layout for the level, if it has layouts.
    pub fn default_layout(self) -> Option<Layout> {
        match self {
            Level::Raid10 => Some(Layout::Near(2)),
            Level::Raid5 | Level::Raid6 => Some(Layout::LeftSymmetric),
            _ => None,
        }
    }

    pub fn supported_by(self, engine: Engine) -> bool {
        match engine {
            Engine::Md => !matches!(self, Level::Raid1c3 | Level::Raid1c4),
            Engine::Btrfs => true,
        }
    }
}

impl Layout {
    /// The layout's copy count for raid10 layouts.
    pub fn copies(self) -> Option<u8> {
        match self {
            Layout::Near(n) | Layout::Far(n) | Layout::Offset(n) => Some(n),
            _ => None,
        }
    }

    pub fn is_raid10(self) -> bool {
        self.copies().is_some()
    }

    /// The spelling mdadm's `--layout=` takes.
    pub fn mdadm_name(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layout::Near(n) => write!(f, "n{n}"),
            Layout::Far(n) => write!(f, "f{n}"),
            Layout::Offset(n) => write!(f, "o{n}"),
            Layout::LeftSymmetric => f.write_str("left-symmetric"),
            Layout::LeftAsymmetric => f.write_str("left-asymmetric"),
            Layout::RightSymmetric => f.write_str("right-symmetric"),
            Layout::RightAsymmetric => f.write_str("right-asymmetric"),
            Layout::ParityFirst => f.write_str("parity-first"),
            Layout::ParityLast => f.write_str("parity-last"),
        }
    }
}

impl FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let l = s.to_ascii_lowercase();
        let help = || {
            "use n2, n3, f2, f3, o2, o3 (raid10) or left-symmetric, left-asymmetric, \
             right-symmetric, right-asymmetric, parity-first, parity-last (raid5/6)"
                .to_string()
        };
        Ok(match l.as_str() {
            "left-symmetric" | "ls" => Layout::LeftSymmetric,
            "left-asymmetric" | "la" => Layout::LeftAsymmetric,
            "right-symmetric" | "rs" => Layout::RightSymmetric,
            "right-asymmetric" | "ra" => Layout::RightAsymmetric,
            "parity-first" => Layout::ParityFirst,
            "parity-last" => Layout::ParityLast,
            _ => {
                let (kind, n) = l.split_at(1.min(l.len()));
                let n: u8 = n.parse().map_err(|_| help())?;
                if !(2..=4).contains(&n) {
                    return Err(help());
                }
                match kind {
                    "n" => Layout::Near(n),
                    "f" => Layout::Far(n),
                    "o" => Layout::Offset(n),
                    _ => return Err(help()),
                }
            }
        })
    }
}

impl Serialize for Layout {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Layout {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words are written once (`words!`); serde's names (`rename_all`) must agree, and
    /// every word reads back as its value.
    #[test]
    fn words_parse_back_and_agree_with_serde() {
        fn check<T: Copy + fmt::Display + FromStr + Serialize + PartialEq + fmt::Debug>(all: &[T]) {
            for v in all {
                let word = v.to_string();
                assert_eq!(serde_json::to_string(v).unwrap(), format!("{word:?}"));
                assert!(word.parse::<T>().ok() == Some(*v), "{word}");
            }
        }
        check(&[Engine::Md, Engine::Btrfs]);
        check(&Level::ALL);
        check(&[
            Filesystem::Xfs,
            Filesystem::Ext4,
            Filesystem::Btrfs,
            Filesystem::None,
        ]);
        check(&[WriteCache::Off, WriteCache::On, WriteCache::Keep]);
        check(&[Bitmap::None, Bitmap::Internal]);
        check(&[Resync::Wait, Resync::AssumeClean, Resync::During]);
        use crate::workload::Rw;
        check(&[
            Rw::Read,
            Rw::Write,
            Rw::RandRead,
            Rw::RandWrite,
            Rw::RandRw,
            Rw::Rw,
        ]);
    }

    #[test]
    fn labels_name_md_settings_off_their_default() {
        let a = ArraySpec {
            engine: Engine::Md,
            level: Level::Raid5,
            layout: Some(Layout::LeftSymmetric),
            chunk: Some(Bytes::kib(512)),
            disks: 4,
            filesystem: Filesystem::None,
            write_cache: WriteCache::Keep,
            bitmap: Bitmap::None,
            resync: Resync::Wait,
            stripe_cache: Some(DEFAULT_STRIPE_CACHE),
            state: Default::default(),
            failed: None,
            rebuild: None,
        };
        assert_eq!(a.label(), "raid5 512k");
        let b = ArraySpec {
            stripe_cache: Some(4096),
            bitmap: Bitmap::Internal,
            resync: Resync::During,
            ..a
        };
        assert_eq!(b.label(), "raid5 512k stripe_cache=4096 bitmap resyncing");
    }

    #[test]
    fn layouts_roundtrip() {
        for s in [
            "n2",
            "f2",
            "o2",
            "n3",
            "f3",
            "o3",
            "left-symmetric",
            "parity-last",
        ] {
            assert_eq!(s.parse::<Layout>().unwrap().to_string(), s);
        }
        assert!("x2".parse::<Layout>().is_err());
        assert!("n9".parse::<Layout>().is_err());
        assert!("".parse::<Layout>().is_err());
    }

    #[test]
    fn capacity_and_fault_tolerance_follow_the_engine() {
        let spec = |engine, level, disks| ArraySpec {
            engine,
            layout: None,
            chunk: None,
            ..ArraySpec::md(level, disks)
        };
        // md raid1 mirrors on every member; btrfs raid1 keeps two copies on any count.
        let md = spec(Engine::Md, Level::Raid1, 4);
        assert_eq!((md.capacity_fraction(), md.fault_tolerance()), (0.25, 3));
        let b = spec(Engine::Btrfs, Level::Raid1, 4);
        assert_eq!((b.capacity_fraction(), b.fault_tolerance()), (0.5, 1));
        let c3 = spec(Engine::Btrfs, Level::Raid1c3, 4);
        assert_eq!(c3.fault_tolerance(), 2);
        let r6 = spec(Engine::Btrfs, Level::Raid6, 6);
        assert_eq!(
            (r6.capacity_fraction(), r6.fault_tolerance()),
            (4.0 / 6.0, 2)
        );
    }

    #[test]
    fn levels_accept_mdadms_spellings_and_name_near_misses() {
        assert_eq!("RAID10".parse::<Level>().unwrap(), Level::Raid10);
        // mdadm has no `raid-10`: named, not guessed at (issue 19, item 6).
        let e = "RAID-10".parse::<Level>().unwrap_err();
        assert!(e.starts_with("did you mean `raid10`?"), "{e}");
        assert_eq!("5".parse::<Level>().unwrap(), Level::Raid5);
        assert!("raid7".parse::<Level>().is_err());
    }
}
