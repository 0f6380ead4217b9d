//! `[workloads]`: one table (or each of `[[workloads]]`) read, checked and expanded into
//! fio workloads.

use super::*;

impl<'a> Cx<'a> {
    pub(super) fn workload_matrix(
        &self,
        t: &'a Table,
        prefix: &str,
    ) -> Result<Vec<At<Workload>>, PlanError> {
        self.known_keys(
            t,
            prefix,
            &[
                "rw",
                "bs",
                "iodepth",
                "numjobs",
                "size",
                "offset",
                "runtime",
                "ramp",
                "rwmixread",
                "ioengine",
                "direct",
            ],
        )?;
        let rws = self.many::<Rw>(t, prefix, "rw", "fio rw mode")?;
        if rws.is_empty() {
            return Err(self.err(
                t.span(),
                &format!("{prefix}.rw"),
                None,
                "name at least one, e.g. rw = [\"randread\", \"randwrite\"]",
            ));
        }
        let or_default = |v: Vec<At<u32>>, d: u32| {
            if v.is_empty() {
                vec![(d, None)]
            } else {
                v
            }
        };
        let mut bss = self.many::<Bytes>(t, prefix, "bs", "block size")?;
        if bss.is_empty() {
            bss.push((Bytes::kib(4), None));
        }
        let depths = or_default(self.many::<u32>(t, prefix, "iodepth", "queue depth")?, 1);
        let jobs = or_default(self.many::<u32>(t, prefix, "numjobs", "job count")?, 1);
        let size = self.single::<Bytes>(t, prefix, "size", "size")?;
        let (size, size_span) = size.unwrap_or((Bytes::gib(1), None));
        let (offset, _) = self
            .single::<Bytes>(t, prefix, "offset", "size")?
            .unwrap_or((Bytes(0), None));
        let (runtime, rt_span) = self
            .single::<Nanos>(t, prefix, "runtime", "duration")?
            .unwrap_or((Nanos::from_secs(60), None));
        let (ramp, _) = self
            .single::<Nanos>(t, prefix, "ramp", "duration")?
            .unwrap_or((Nanos::ZERO, None));
        let (rwmix, mix_span) = self
            .single::<u8>(t, prefix, "rwmixread", "percentage")?
            .unwrap_or((50, None));
        let (ioengine, _) = self
            .single::<String>(t, prefix, "ioengine", "fio ioengine")?
            .unwrap_or(("libaio".into(), None));
        let (direct, _) = self
            .single::<bool>(t, prefix, "direct", "true or false")?
            .unwrap_or((true, None));

        if runtime.0 < Nanos::from_millis(100).0 {
            return Err(self.err(
                rt_span,
                &format!("{prefix}.runtime"),
                Some(format!("\"{runtime}\"")),
                "use at least 100ms, e.g. \"60s\"",
            ));
        }
        if rwmix > 100 {
            return Err(self.err(
                mix_span,
                &format!("{prefix}.rwmixread"),
                Some(rwmix.to_string()),
                "a percentage: 0 to 100",
            ));
        }
        self.check_block_sizes(prefix, &bss, size, &size_span)?;
        self.check_count(prefix, "iodepth", &depths, 65536)?;
        self.check_count(prefix, "numjobs", &jobs, 1024)?;
        let mut out = Vec::new();
        for (rw, rw_span) in &rws {
            for (bs, _) in &bss {
                for (iodepth, _) in &depths {
                    for (numjobs, _) in &jobs {
                        out.push((
                            Workload {
                                rw: *rw,
                                bs: *bs,
                                iodepth: *iodepth,
                                numjobs: *numjobs,
                                size,
                                offset,
                                runtime,
                                ramp,
                                rwmixread: if matches!(rw, Rw::RandRw | Rw::Rw) {
                                    rwmix
                                } else {
                                    rw.read_fraction(0) as u8 * 100
                                },
                                ioengine: ioengine.clone(),
                                direct,
                            },
                            size_span.clone().or(rw_span.clone()),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Block sizes fio takes (multiples of 512 bytes) that fit in the test region.
    fn check_block_sizes(
        &self,
        prefix: &str,
        bss: &[At<Bytes>],
        size: Bytes,
        size_span: &Option<Range<usize>>,
    ) -> Result<(), PlanError> {
        for (bs, span) in bss {
            if bs.0 < 512 || !bs.0.is_multiple_of(512) {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.bs"),
                    Some(format!("\"{}\"", bs.to_fio())),
                    "use a multiple of 512 bytes, e.g. 4k or 1m",
                ));
            }
            if *bs > size {
                return Err(self.err(
                    size_span.clone(),
                    &format!("{prefix}.size"),
                    Some(format!("\"{}\"", size.to_fio())),
                    format!(
                        "smaller than the block size {}; make size larger",
                        bs.to_fio()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A count field (`iodepth`, `numjobs`) from 1 to `max`.
    fn check_count(
        &self,
        prefix: &str,
        key: &str,
        values: &[At<u32>],
        max: u32,
    ) -> Result<(), PlanError> {
        for (v, span) in values {
            if *v == 0 || *v > max {
                return Err(self.err(
                    span.clone(),
                    &format!("{prefix}.{key}"),
                    Some(v.to_string()),
                    format!("use 1 to {max}"),
                ));
            }
        }
        Ok(())
    }
}
