//! `[arrays]`: one table (or each of `[[arrays]]`) read, checked against the engine and
//! the levels, and expanded into array specs.

use super::*;

/// The fields of one `[arrays]` table as written, each value with its span.
struct ArrayFields {
    engine: Engine,
    levels: Vec<At<Level>>,
    layouts: Vec<At<Layout>>,
    chunks: Vec<At<Bytes>>,
    /// Member counts (the plan's disk count when the table names none).
    counts: Vec<At<u32>>,
    /// File systems (xfs on md, btrfs on btrfs when the table names none).
    filesystems: Vec<At<Filesystem>>,
    write_cache: WriteCache,
    bitmap: Bitmap,
    resync: Resync,
    stripe_cache: Option<u32>,
    /// Array states (healthy when the table names none).
    states: Vec<At<ArrayState>>,
    /// Members failed in degraded and rebuilding arrays, as written (1 when not).
    failed: Option<At<u32>>,
    /// md's recovery knobs for rebuilding arrays, with the first field given (to point
    /// at when the table has no rebuilding state).
    rebuild: Rebuild,
    rebuild_field: Option<(Key, Option<Range<usize>>)>,
}

const ENGINE: Key = Key::new("engine", "engine");
const LEVEL: Key = Key::new("level", "RAID level");
const LAYOUT: Key = Key::new("layout", "layout");
const CHUNK: Key = Key::new("chunk", "chunk size");
const DISKS: Key = Key::new("disks", "disk count");
const FILESYSTEM: Key = Key::new("filesystem", "file system");
const WRITE_CACHE: Key = Key::new("write_cache", "write cache setting");
const BITMAP: Key = Key::new("bitmap", "bitmap setting");
const RESYNC: Key = Key::new("resync", "resync policy");
const STRIPE_CACHE: Key = Key::new("stripe_cache", "page count").within(17, 32768);
const STATE: Key = Key::new("state", "array state");
const FAILED: Key = Key::new("failed", "member count").within(1, 64);
const KERNEL: Key = Key::new("kernel", "kernel regime");
const SYNC_SPEED_MIN: Key = Key::new("sync_speed_min", "speed in KiB/s").within(1, 100_000_000);
const SYNC_SPEED_MAX: Key = Key::new("sync_speed_max", "speed in KiB/s").within(1, 100_000_000);
const SYNC_IO_DEPTH: Key = Key::new("sync_io_depth", "depth").within(1, 4096);
const REJOIN: Key = Key::new("rejoin", "what rejoins");

/// The fields of an `[arrays]` table, in the order its errors name them.
pub(super) const ARRAY_KEYS: [Key; 17] = [
    ENGINE,
    LEVEL,
    LAYOUT,
    CHUNK,
    DISKS,
    FILESYSTEM,
    WRITE_CACHE,
    BITMAP,
    RESYNC,
    STRIPE_CACHE,
    STATE,
    FAILED,
    KERNEL,
    SYNC_SPEED_MIN,
    SYNC_SPEED_MAX,
    SYNC_IO_DEPTH,
    REJOIN,
];

impl<'a> Cx<'a> {
    pub(super) fn array_matrix(
        &self,
        t: &'a Table,
        prefix: &str,
        plan_disks: u32,
    ) -> Result<Vec<At<ArraySpec>>, PlanError> {
        self.known_keys(t, prefix, &ARRAY_KEYS)?;
        let a = self.array_fields(t, prefix, plan_disks)?;
        self.check_levels_and_layouts(&a, prefix)?;
        self.check_rebuild_fields(&a, prefix)?;
        self.check_chunks(&a, prefix)?;
        self.check_filesystems_and_counts(&a, prefix, plan_disks)?;
        let mut out = Vec::new();
        for (level, level_span) in &a.levels {
            for (n, n_span) in &a.counts {
                let min = level.min_disks(a.engine);
                if *n < min {
                    let (span, field) = if n_span.is_some() {
                        (n_span.clone(), DISKS)
                    } else {
                        (level_span.clone(), LEVEL)
                    };
                    return Err(self.err(span, &field.at(prefix), Some(format!("\"{level}\"")), format!("{level} needs at least {min} disks and this array has {n}; add disks or drop {level}")));
                }
                for layout in self.layouts_for(&a, *level, *n, prefix)? {
                    for chunk in chunks_for(&a, *level) {
                        for (fs, _) in &a.filesystems {
                            for (state, state_span) in &a.states {
                                let failed = a.failed.as_ref().map_or(1, |f| f.0);
                                let spec = ArraySpec {
                                    state: *state,
                                    failed: (!state.is_healthy() && failed > 1).then_some(failed),
                                    rebuild: (*state == ArrayState::Rebuilding
                                        && a.engine == Engine::Md)
                                        .then_some(a.rebuild),
                                    ..spec(&a, *level, layout, chunk, *n, *fs)
                                };
                                self.check_state(&spec, state_span, &a.failed, prefix)?;
                                out.push((spec, level_span.clone()));
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    /// A degraded or rebuilding array must have the redundancy to lose `failed` members,
    /// and no initial resync running.
    fn check_state(
        &self,
        spec: &ArraySpec,
        span: &Option<Range<usize>>,
        failed: &Option<At<u32>>,
        prefix: &str,
    ) -> Result<(), PlanError> {
        let state = spec.state;
        if state.is_healthy() {
            return Ok(());
        }
        let n = spec.failed_members();
        let tolerance = spec.fault_tolerance();
        if n > tolerance && tolerance > 0 {
            let (_, span) = failed.clone().expect("only an explicit count exceeds 1");
            return Err(self.err(
                span,
                &FAILED.at(prefix),
                Some(n.to_string()),
                format!(
                    "{} survives at most {}: lower `failed`, or put this level in its own [[arrays]] table",
                    spec.level,
                    crate::plural(tolerance as usize, "failed member", "failed members")
                ),
            ));
        }
        let why = if tolerance == 0 {
            format!(
                "{} has no redundancy: with a member gone the array is gone; drop \"{state}\" or use a level with redundancy",
                spec.level
            )
        } else if spec.resync == Resync::During {
            format!("a {state} array has no initial resync running; use resync = \"wait\" with \"{state}\"")
        } else {
            return Ok(());
        };
        Err(self.err(
            span.clone(),
            &STATE.at(prefix),
            Some(format!("\"{state}\"")),
            why,
        ))
    }

    /// `failed` needs a degraded or rebuilding state; md's recovery knobs need a
    /// rebuilding one, and a minimum no higher than the maximum.
    fn check_rebuild_fields(&self, a: &ArrayFields, prefix: &str) -> Result<(), PlanError> {
        let has = |s: ArrayState| a.states.iter().any(|(x, _)| *x == s);
        if let Some((n, span)) = &a.failed {
            if !has(ArrayState::Degraded) && !has(ArrayState::Rebuilding) {
                return Err(self.err(
                    span.clone(),
                    &FAILED.at(prefix),
                    Some(n.to_string()),
                    "counts failed members of degraded or rebuilding arrays: add state = [\"degraded\"] (or \"rebuilding\"), or remove `failed`",
                ));
            }
        }
        if let Some((key, span)) = &a.rebuild_field {
            if a.engine != Engine::Md {
                return Err(self.err(
                    span.clone(),
                    &key.at(prefix),
                    None,
                    "is one of md's recovery knobs, and btrfs replace has none: remove it, or use engine = \"md\"",
                ));
            }
            if !has(ArrayState::Rebuilding) {
                return Err(self.err(
                    span.clone(),
                    &key.at(prefix),
                    None,
                    "is one of md's recovery knobs, for rebuilding arrays: add \"rebuilding\" to `state`, or remove it",
                ));
            }
        }
        let r = &a.rebuild;
        if r.sync_speed_min > r.sync_speed_max {
            return Err(self.err(
                None,
                &SYNC_SPEED_MIN.at(prefix),
                Some(r.sync_speed_min.to_string()),
                format!(
                    "is above sync_speed_max ({}): md never waits below the minimum, so it must not exceed the maximum",
                    r.sync_speed_max
                ),
            ));
        }
        Ok(())
    }

    /// A whole-number field within its key's range, if given.
    fn bounded(&self, t: &'a Table, prefix: &str, key: Key) -> Result<Option<At<u32>>, PlanError> {
        let v = self.single::<u32>(t, prefix, key)?;
        if let Some((n, s)) = &v {
            if !key.takes(*n) {
                return Err(self.err(
                    s.clone(),
                    &key.at(prefix),
                    Some(n.to_string()),
                    format!("use {} to {}", key.min(), key.max()),
                ));
            }
        }
        Ok(v)
    }

    /// Read every field of the table, with the defaults of those it leaves out.
    fn array_fields(
        &self,
        t: &'a Table,
        prefix: &str,
        plan_disks: u32,
    ) -> Result<ArrayFields, PlanError> {
        let (engine, _) = self
            .single::<Engine>(t, prefix, ENGINE)?
            .unwrap_or((Engine::Md, None));
        let levels = self.many::<Level>(t, prefix, LEVEL)?;
        if levels.is_empty() {
            return Err(self.err(
                t.span(),
                &LEVEL.at(prefix),
                None,
                "name at least one level, e.g. level = [\"raid5\", \"raid10\"]",
            ));
        }
        let layouts = self.many::<Layout>(t, prefix, LAYOUT)?;
        let chunks = self.many::<Bytes>(t, prefix, CHUNK)?;
        let disk_counts = self.many::<u32>(t, prefix, DISKS)?;
        let mut filesystems = self.many::<Filesystem>(t, prefix, FILESYSTEM)?;
        let (write_cache, _) = self
            .single::<WriteCache>(t, prefix, WRITE_CACHE)?
            .unwrap_or((WriteCache::Keep, None));
        let (bitmap, _) = self
            .single::<Bitmap>(t, prefix, BITMAP)?
            .unwrap_or((Bitmap::None, None));
        let (resync, _) = self
            .single::<Resync>(t, prefix, RESYNC)?
            .unwrap_or((Resync::Wait, None));
        let stripe_cache = self.single::<u32>(t, prefix, STRIPE_CACHE)?;
        let mut states = self.many::<ArrayState>(t, prefix, STATE)?;
        if states.is_empty() {
            states.push((ArrayState::Healthy, None));
        }
        let failed = self.bounded(t, prefix, FAILED)?;
        let mut rebuild = Rebuild::default();
        let mut rebuild_field = None;
        if let Some((kernel, s)) = self.single::<Governor>(t, prefix, KERNEL)? {
            rebuild.kernel = kernel;
            rebuild_field = rebuild_field.or(Some((KERNEL, s)));
        }
        if let Some((rejoin, s)) = self.single::<Rejoin>(t, prefix, REJOIN)? {
            rebuild.rejoin = rejoin;
            rebuild_field = rebuild_field.or(Some((REJOIN, s.clone())));
            if rejoin == Rejoin::ReAdd && bitmap != Bitmap::Internal {
                return Err(self.err(
                    s,
                    &REJOIN.at(prefix),
                    Some("\"re-add\"".into()),
                    "md re-adds a member in part only with a write-intent bitmap (without one `mdadm --re-add` is refused and the member recovered whole): add bitmap = \"internal\", or use rejoin = \"fresh\"",
                ));
            }
        }
        for (key, slot) in [
            (SYNC_SPEED_MIN, &mut rebuild.sync_speed_min),
            (SYNC_SPEED_MAX, &mut rebuild.sync_speed_max),
            (SYNC_IO_DEPTH, &mut rebuild.sync_io_depth),
        ] {
            if let Some((n, s)) = self.bounded(t, prefix, key)? {
                *slot = n;
                rebuild_field = rebuild_field.or(Some((key, s)));
            }
        }
        if let Some((n, s)) = &stripe_cache {
            if !STRIPE_CACHE.takes(*n) {
                return Err(self.err(
                    s.clone(),
                    &STRIPE_CACHE.at(prefix),
                    Some(n.to_string()),
                    format!(
                        "md accepts {} to {} pages",
                        STRIPE_CACHE.min(),
                        STRIPE_CACHE.max()
                    ),
                ));
            }
        }
        if filesystems.is_empty() {
            let fs = if engine == Engine::Btrfs {
                Filesystem::Btrfs
            } else {
                Filesystem::Xfs
            };
            filesystems.push((fs, None));
        }
        let counts = if disk_counts.is_empty() {
            vec![(plan_disks, None)]
        } else {
            disk_counts
        };
        Ok(ArrayFields {
            engine,
            levels,
            layouts,
            chunks,
            counts,
            filesystems,
            write_cache,
            bitmap,
            resync,
            stripe_cache: stripe_cache.map(|s| s.0),
            states,
            failed,
            rebuild,
            rebuild_field,
        })
    }

    /// Every level exists for the engine; every layout fits every level of the table.
    fn check_levels_and_layouts(&self, a: &ArrayFields, prefix: &str) -> Result<(), PlanError> {
        let engine = a.engine;
        for (level, span) in &a.levels {
            if !level.supported_by(engine) {
                return Err(self.err(
                    span.clone(),
                    &LEVEL.at(prefix),
                    Some(format!("\"{level}\"")),
                    format!("{engine} has no {level}; use engine = \"btrfs\" or another level"),
                ));
            }
        }
        for (layout, span) in &a.layouts {
            if engine == Engine::Btrfs {
                return Err(self.err(
                    span.clone(),
                    &LAYOUT.at(prefix),
                    Some(format!("\"{layout}\"")),
                    "btrfs profiles have no layout; remove `layout`",
                ));
            }
            for (level, _) in &a.levels {
                let fits = match level {
                    Level::Raid10 => layout.is_raid10(),
                    Level::Raid5 | Level::Raid6 => !layout.is_raid10(),
                    _ => false,
                };
                if !fits {
                    return Err(self.err(span.clone(), &LAYOUT.at(prefix), Some(format!("\"{layout}\"")), format!("{layout} does not apply to {level}; put {level} in its own [[arrays]] table without this layout")));
                }
            }
        }
        Ok(())
    }

    /// Chunks only where a level stripes in chunks, as md takes them.
    fn check_chunks(&self, a: &ArrayFields, prefix: &str) -> Result<(), PlanError> {
        let chunk_err = |c: &Bytes, span: &Option<Range<usize>>, msg: &str| {
            self.err(
                span.clone(),
                &CHUNK.at(prefix),
                Some(format!("\"{}\"", c.to_fio())),
                msg,
            )
        };
        if a.engine == Engine::Btrfs {
            if let Some((c, span)) = a.chunks.first() {
                return Err(chunk_err(
                    c,
                    span,
                    "btrfs has a fixed stripe size and no chunk option; remove `chunk`",
                ));
            }
        }
        if !a.chunks.is_empty() && !a.levels.iter().any(|(l, _)| l.has_chunk()) {
            let (c, span) = &a.chunks[0];
            return Err(chunk_err(
                c,
                span,
                "none of these levels stripes in chunks; remove `chunk`",
            ));
        }
        for (c, span) in &a.chunks {
            if !c.is_power_of_two() || c.0 < 4096 {
                return Err(chunk_err(
                    c,
                    span,
                    "md needs a power of two of at least 4k, e.g. 64k, 512k, 1m",
                ));
            }
        }
        Ok(())
    }

    /// File systems that fit the engine; member counts the plan has disks for.
    fn check_filesystems_and_counts(
        &self,
        a: &ArrayFields,
        prefix: &str,
        plan_disks: u32,
    ) -> Result<(), PlanError> {
        for (fs, span) in &a.filesystems {
            let ok = match a.engine {
                Engine::Btrfs => *fs == Filesystem::Btrfs,
                Engine::Md => *fs != Filesystem::Btrfs,
            };
            if !ok {
                let fix = if a.engine == Engine::Btrfs {
                    "btrfs makes its own file system; remove `filesystem` or set it to \"btrfs\""
                } else {
                    "on md use xfs, ext4 or none; for btrfs RAID use engine = \"btrfs\""
                };
                return Err(self.err(
                    span.clone(),
                    &FILESYSTEM.at(prefix),
                    Some(format!("\"{fs}\"")),
                    fix,
                ));
            }
        }
        for (n, span) in &a.counts {
            if *n == 0 || *n > plan_disks {
                return Err(self.err(
                    span.clone(),
                    &DISKS.at(prefix),
                    Some(n.to_string()),
                    format!("use 1 to {plan_disks} members: the plan has {plan_disks} disks"),
                ));
            }
        }
        Ok(())
    }

    /// The layouts a level takes on `n` members: the table's, or md's default for the
    /// level; a layout with more copies than members is refused.
    fn layouts_for(
        &self,
        a: &ArrayFields,
        level: Level,
        n: u32,
        prefix: &str,
    ) -> Result<Vec<Option<Layout>>, PlanError> {
        let engine = a.engine;
        let layouts: Vec<Option<Layout>> = if a.layouts.is_empty()
            || level.default_layout().is_none()
            || engine == Engine::Btrfs
        {
            vec![if engine == Engine::Md {
                level.default_layout()
            } else {
                None
            }]
        } else {
            a.layouts.iter().map(|(l, _)| Some(*l)).collect()
        };
        for layout in &layouts {
            if let Some(copies) = layout.and_then(Layout::copies) {
                if copies as u32 > n {
                    let span = a
                        .layouts
                        .iter()
                        .find(|(l, _)| Some(*l) == *layout)
                        .and_then(|(_, s)| s.clone());
                    return Err(self.err(
                        span,
                        &LAYOUT.at(prefix),
                        Some(format!("\"{}\"", layout.unwrap())),
                        format!(
                            "{copies} copies need at least {copies} disks and this array has {n}"
                        ),
                    ));
                }
            }
        }
        Ok(layouts)
    }
}

/// The chunks a level takes: the table's, md's 512 KiB, or none (btrfs, unstriped levels).
fn chunks_for(a: &ArrayFields, level: Level) -> Vec<Option<Bytes>> {
    if a.engine == Engine::Btrfs || !level.has_chunk() {
        vec![None]
    } else if a.chunks.is_empty() {
        vec![Some(Bytes::kib(512))]
    } else {
        a.chunks.iter().map(|(c, _)| Some(*c)).collect()
    }
}

/// One array of the matrix, with what the level and engine make of the table's settings
/// (no bitmap where md has none, no resync without redundancy, a stripe cache on raid5/6).
fn spec(
    a: &ArrayFields,
    level: Level,
    layout: Option<Layout>,
    chunk: Option<Bytes>,
    n: u32,
    filesystem: Filesystem,
) -> ArraySpec {
    let md = a.engine == Engine::Md;
    ArraySpec {
        engine: a.engine,
        level,
        layout,
        chunk,
        disks: if level == Level::Single { 1 } else { n },
        filesystem,
        write_cache: a.write_cache,
        bitmap: if md && (level.has_chunk() || level == Level::Raid1) {
            a.bitmap
        } else {
            Bitmap::None
        },
        resync: if md && level != Level::Single && level != Level::Raid0 {
            a.resync
        } else {
            Resync::AssumeClean
        },
        stripe_cache: match level {
            Level::Raid5 | Level::Raid6 if md => {
                Some(a.stripe_cache.unwrap_or(DEFAULT_STRIPE_CACHE))
            }
            _ => None,
        },
        state: ArrayState::Healthy,
        failed: None,
        rebuild: None,
    }
}
