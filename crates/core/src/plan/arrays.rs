//! `[arrays]`: one table (or each of `[[arrays]]`) read, checked against the engine and
//! the levels, and expanded into array specs.

use super::*;

impl<'a> Cx<'a> {
    pub(super) fn array_matrix(
        &self,
        t: &'a Table,
        prefix: &str,
        plan_disks: u32,
    ) -> Result<Vec<At<ArraySpec>>, PlanError> {
        self.known_keys(
            t,
            prefix,
            &[
                "engine",
                "level",
                "layout",
                "chunk",
                "disks",
                "filesystem",
                "write_cache",
                "bitmap",
                "resync",
                "stripe_cache",
            ],
        )?;
        let (engine, _) = self
            .single::<Engine>(t, prefix, "engine", "engine")?
            .unwrap_or((Engine::Md, None));
        let levels = self.many::<Level>(t, prefix, "level", "RAID level")?;
        if levels.is_empty() {
            return Err(self.err(
                t.span(),
                &format!("{prefix}.level"),
                None,
                "name at least one level, e.g. level = [\"raid5\", \"raid10\"]",
            ));
        }
        let layouts = self.many::<Layout>(t, prefix, "layout", "layout")?;
        let chunks = self.many::<Bytes>(t, prefix, "chunk", "chunk size")?;
        let disk_counts = self.many::<u32>(t, prefix, "disks", "disk count")?;
        let filesystems = self.many::<FsName>(t, prefix, "filesystem", "file system")?;
        let (write_cache, _) = self
            .single::<WcName>(t, prefix, "write_cache", "write cache setting")?
            .unwrap_or((WcName(WriteCache::Keep), None));
        let (bitmap, _) = self
            .single::<BitmapName>(t, prefix, "bitmap", "bitmap setting")?
            .unwrap_or((BitmapName(Bitmap::None), None));
        let (resync, _) = self
            .single::<ResyncName>(t, prefix, "resync", "resync policy")?
            .unwrap_or((ResyncName(Resync::Wait), None));
        let stripe_cache = self.single::<u32>(t, prefix, "stripe_cache", "page count")?;
        if let Some((n, s)) = &stripe_cache {
            if !(17..=32768).contains(n) {
                return Err(self.err(
                    s.clone(),
                    &format!("{prefix}.stripe_cache"),
                    Some(n.to_string()),
                    "md accepts 17 to 32768 pages",
                ));
            }
        }

        for (level, span) in &levels {
            if !level.supported_by(engine) {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.level"),
                    Some(format!("\"{level}\"")),
                    format!("{engine} has no {level}; use engine = \"btrfs\" or another level"),
                ));
            }
        }
        for (layout, span) in &layouts {
            if engine == Engine::Btrfs {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.layout"),
                    Some(format!("\"{layout}\"")),
                    "btrfs profiles have no layout; remove `layout`",
                ));
            }
            for (level, _) in &levels {
                let fits = match level {
                    Level::Raid10 => layout.is_raid10(),
                    Level::Raid5 | Level::Raid6 => !layout.is_raid10(),
                    _ => false,
                };
                if !fits {
                    return Err(self.err(span.clone(), &format!("{prefix}.layout"), Some(format!("\"{layout}\"")), format!("{layout} does not apply to {level}; put {level} in its own [[arrays]] table without this layout")));
                }
            }
        }
        if engine == Engine::Btrfs {
            if let Some((c, span)) = chunks.first() {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.chunk"),
                    Some(format!("\"{}\"", c.to_fio())),
                    "btrfs has a fixed stripe size and no chunk option; remove `chunk`",
                ));
            }
        }
        if !chunks.is_empty() && !levels.iter().any(|(l, _)| l.has_chunk()) {
            let (c, span) = &chunks[0];
            return Err(self.err(
                span.clone(),
                &format!("{prefix}.chunk"),
                Some(format!("\"{}\"", c.to_fio())),
                "none of these levels stripes in chunks; remove `chunk`",
            ));
        }
        for (c, span) in &chunks {
            if !c.is_power_of_two() || c.0 < 4096 {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.chunk"),
                    Some(format!("\"{}\"", c.to_fio())),
                    "md needs a power of two of at least 4k, e.g. 64k, 512k, 1m",
                ));
            }
        }
        let mut filesystems: Vec<At<Filesystem>> =
            filesystems.into_iter().map(|(f, s)| (f.0, s)).collect();
        if filesystems.is_empty() {
            filesystems.push((
                if engine == Engine::Btrfs {
                    Filesystem::Btrfs
                } else {
                    Filesystem::Xfs
                },
                None,
            ));
        }
        for (fs, span) in &filesystems {
            let ok = match engine {
                Engine::Btrfs => *fs == Filesystem::Btrfs,
                Engine::Md => *fs != Filesystem::Btrfs,
            };
            if !ok {
                let fix = if engine == Engine::Btrfs {
                    "btrfs makes its own file system; remove `filesystem` or set it to \"btrfs\""
                } else {
                    "on md use xfs, ext4 or none; for btrfs RAID use engine = \"btrfs\""
                };
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.filesystem"),
                    Some(format!("\"{fs}\"")),
                    fix,
                ));
            }
        }
        let counts: Vec<At<u32>> = if disk_counts.is_empty() {
            vec![(plan_disks, None)]
        } else {
            disk_counts
        };
        for (n, span) in &counts {
            if *n == 0 || *n > plan_disks {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.disks"),
                    Some(n.to_string()),
                    format!("use 1 to {plan_disks} members: the plan has {plan_disks} disks"),
                ));
            }
        }

        let mut out = Vec::new();
        for (level, level_span) in &levels {
            for (n, n_span) in &counts {
                let min = level.min_disks(engine);
                if *n < min {
                    let (span, field) = if n_span.is_some() {
                        (n_span.clone(), "disks")
                    } else {
                        (level_span.clone(), "level")
                    };
                    return Err(self.err(span, &format!("{prefix}.{field}"), Some(format!("\"{level}\"")), format!("{level} needs at least {min} disks and this array has {n}; add disks or drop {level}")));
                }
                let layouts_here: Vec<Option<Layout>> = if layouts.is_empty()
                    || level.default_layout().is_none()
                    || engine == Engine::Btrfs
                {
                    vec![if engine == Engine::Md {
                        level.default_layout()
                    } else {
                        None
                    }]
                } else {
                    layouts.iter().map(|(l, _)| Some(*l)).collect()
                };
                for layout in layouts_here {
                    if let Some(copies) = layout.and_then(Layout::copies) {
                        if copies as u32 > *n {
                            let span = layouts
                                .iter()
                                .find(|(l, _)| Some(*l) == layout)
                                .and_then(|(_, s)| s.clone());
                            return Err(self.err(span, &format!("{prefix}.layout"), Some(format!("\"{}\"", layout.unwrap())), format!("{copies} copies need at least {copies} disks and this array has {n}")));
                        }
                    }
                    let chunk_list: Vec<Option<Bytes>> =
                        if engine == Engine::Btrfs || !level.has_chunk() {
                            vec![None]
                        } else if chunks.is_empty() {
                            vec![Some(Bytes::kib(512))]
                        } else {
                            chunks.iter().map(|(c, _)| Some(*c)).collect()
                        };
                    for chunk in chunk_list {
                        for (fs, _) in &filesystems {
                            out.push((
                                ArraySpec {
                                    engine,
                                    level: *level,
                                    layout,
                                    chunk,
                                    disks: if *level == Level::Single { 1 } else { *n },
                                    filesystem: *fs,
                                    write_cache: write_cache.0,
                                    bitmap: if engine == Engine::Md
                                        && (level.has_chunk() || *level == Level::Raid1)
                                    {
                                        bitmap.0
                                    } else {
                                        Bitmap::None
                                    },
                                    resync: if engine == Engine::Md
                                        && *level != Level::Single
                                        && *level != Level::Raid0
                                    {
                                        resync.0
                                    } else {
                                        Resync::AssumeClean
                                    },
                                    stripe_cache: match level {
                                        Level::Raid5 | Level::Raid6 if engine == Engine::Md => {
                                            Some(
                                                stripe_cache
                                                    .as_ref()
                                                    .map(|s| s.0)
                                                    .unwrap_or(DEFAULT_STRIPE_CACHE),
                                            )
                                        }
                                        _ => None,
                                    },
                                },
                                level_span.clone(),
                            ));
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}
