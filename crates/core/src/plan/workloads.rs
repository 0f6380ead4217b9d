//! `[workloads]`: one table (or each of `[[workloads]]`) read, checked and expanded into
//! fio workloads.

use super::*;
use crate::workload::FioOptions;
use std::collections::BTreeMap;

const RW: Key = Key::new("rw", "fio rw mode");
const BS: Key = Key::new("bs", "block size");
const IODEPTH: Key = Key::new("iodepth", "queue depth").within(1, 65536);
const NUMJOBS: Key = Key::new("numjobs", "job count").within(1, 1024);
const SIZE: Key = Key::new("size", "size");
const OFFSET: Key = Key::new("offset", "size");
const RUNTIME: Key = Key::new("runtime", "duration");
const RAMP: Key = Key::new("ramp", "duration");
const RWMIXREAD: Key = Key::new("rwmixread", "percentage").within(0, 100);
const IOENGINE: Key = Key::new("ioengine", "fio ioengine");
const DIRECT: Key = Key::new("direct", "true or false");
const REFILL_BUFFERS: Key = Key::new("refill_buffers", "true or false");
const BUFFER_PATTERN: Key = Key::new("buffer_pattern", "fio buffer pattern");
const FIO: Key = Key::new("fio", "table of fio options");

/// The fields of a `[workloads]` table, in the order its errors name them.
pub(super) const WORKLOAD_KEYS: [Key; 14] = [
    RW,
    BS,
    IODEPTH,
    NUMJOBS,
    SIZE,
    OFFSET,
    RUNTIME,
    RAMP,
    RWMIXREAD,
    IOENGINE,
    DIRECT,
    REFILL_BUFFERS,
    BUFFER_PATTERN,
    FIO,
];

/// fio options `[workloads.fio]` may not set, with what to do instead: raidlab's own
/// fields, and what raidlab's contract with fio rests on (the file it names, the JSON it
/// reads, the logs it keeps, the time it measures for).
const RESERVED: [(&str, &str); 30] = [
    ("rw", "use workloads.rw"),
    ("readwrite", "use workloads.rw"),
    ("bs", "use workloads.bs"),
    ("blocksize", "use workloads.bs"),
    ("iodepth", "use workloads.iodepth"),
    ("numjobs", "use workloads.numjobs"),
    ("size", "use workloads.size"),
    ("filesize", "use workloads.size"),
    ("offset", "use workloads.offset"),
    ("runtime", "use workloads.runtime"),
    ("timeout", "use workloads.runtime"),
    ("ramp_time", "use workloads.ramp"),
    ("rwmixread", "use workloads.rwmixread"),
    ("rwmixwrite", "use workloads.rwmixread"),
    ("ioengine", "use workloads.ioengine"),
    ("direct", "use workloads.direct"),
    ("buffered", "use workloads.direct"),
    ("refill_buffers", "use workloads.refill_buffers"),
    ("buffer_pattern", "use workloads.buffer_pattern"),
    (
        "time_based",
        "raidlab always measures for the runtime (time_based=1)",
    ),
    ("filename", "raidlab names the array or its test file"),
    (
        "filename_format",
        "raidlab names the array or its test file",
    ),
    ("directory", "raidlab names the array or its test file"),
    ("name", "raidlab names the job by its case"),
    ("output", "raidlab reads fio's output where it asked for it"),
    ("output-format", "raidlab reads fio's JSON"),
    ("group_reporting", "raidlab reports all jobs together"),
    ("write_iops_log", "raidlab keeps its own per-second logs"),
    ("write_lat_log", "raidlab keeps its own per-second logs"),
    ("log_avg_msec", "raidlab keeps its own per-second logs"),
];

/// The fields of one `[workloads]` table as written (lists with their spans), with the
/// defaults of those it leaves out.
struct WorkloadFields {
    rws: Vec<At<Rw>>,
    bss: Vec<At<Bytes>>,
    depths: Vec<At<u32>>,
    jobs: Vec<At<u32>>,
    size: At<Bytes>,
    offset: Bytes,
    runtime: At<Nanos>,
    ramp: Nanos,
    rwmix: At<u8>,
    ioengine: String,
    direct: bool,
    fio: FioOptions,
}

impl<'a> Cx<'a> {
    pub(super) fn workload_matrix(
        &self,
        t: &'a Table,
        prefix: &str,
    ) -> Result<Vec<At<Workload>>, PlanError> {
        self.known_keys(t, prefix, &WORKLOAD_KEYS)?;
        let w = self.workload_fields(t, prefix)?;
        self.check_runtime_and_mix(&w, prefix)?;
        self.check_block_sizes(prefix, &w.bss, w.size.0, &w.size.1)?;
        self.check_count(prefix, IODEPTH, &w.depths)?;
        self.check_count(prefix, NUMJOBS, &w.jobs)?;
        let mut out = Vec::new();
        for (rw, rw_span) in &w.rws {
            for (bs, _) in &w.bss {
                for (iodepth, _) in &w.depths {
                    for (numjobs, _) in &w.jobs {
                        let span = w.size.1.clone().or(rw_span.clone());
                        out.push((workload(&w, *rw, *bs, *iodepth, *numjobs), span));
                    }
                }
            }
        }
        Ok(out)
    }

    /// Read every field of the table, with the defaults of those it leaves out.
    fn workload_fields(&self, t: &'a Table, prefix: &str) -> Result<WorkloadFields, PlanError> {
        let rws = self.many::<Rw>(t, prefix, RW)?;
        if rws.is_empty() {
            return Err(self.err(
                t.span(),
                &RW.at(prefix),
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
        let mut bss = self.many::<Bytes>(t, prefix, BS)?;
        if bss.is_empty() {
            bss.push((Bytes::kib(4), None));
        }
        let depths = or_default(self.many::<u32>(t, prefix, IODEPTH)?, 1);
        let jobs = or_default(self.many::<u32>(t, prefix, NUMJOBS)?, 1);
        let size = self.single::<Bytes>(t, prefix, SIZE)?;
        let size = size.unwrap_or((Bytes::gib(1), None));
        let (offset, _) = self
            .single::<Bytes>(t, prefix, OFFSET)?
            .unwrap_or((Bytes(0), None));
        let runtime = self
            .single::<Nanos>(t, prefix, RUNTIME)?
            .unwrap_or((Nanos::from_secs(60), None));
        let (ramp, _) = self
            .single::<Nanos>(t, prefix, RAMP)?
            .unwrap_or((Nanos::ZERO, None));
        let rwmix = self
            .single::<u8>(t, prefix, RWMIXREAD)?
            .unwrap_or((50, None));
        let (ioengine, _) = self
            .single::<String>(t, prefix, IOENGINE)?
            .unwrap_or(("libaio".into(), None));
        let (direct, _) = self
            .single::<bool>(t, prefix, DIRECT)?
            .unwrap_or((true, None));
        let fio = FioOptions {
            refill_buffers: self
                .single::<bool>(t, prefix, REFILL_BUFFERS)?
                .is_none_or(|v| v.0),
            buffer_pattern: self
                .single::<String>(t, prefix, BUFFER_PATTERN)?
                .map(|v| v.0),
            extra: self.fio_table(t, prefix)?,
            // `[run] precondition`, set on every workload once `[run]` is read.
            precondition: 0,
        };
        Ok(WorkloadFields {
            rws,
            bss,
            depths,
            jobs,
            size,
            offset,
            runtime,
            ramp,
            rwmix,
            ioengine,
            direct,
            fio,
        })
    }

    /// `[workloads.fio]`: option = value pairs for fio, each a name fio could have (letters,
    /// digits, `_`) with one scalar value, none of them [`RESERVED`]. fio itself checks
    /// them before a run on a real target (`fio --parse-only`).
    fn fio_table(&self, t: &'a Table, prefix: &str) -> Result<BTreeMap<String, String>, PlanError> {
        let mut out = BTreeMap::new();
        let Some(item) = t.get(FIO.name) else {
            return Ok(out);
        };
        let path = FIO.at(prefix);
        let table = self.table(Field { path: &path, item })?;
        for (k, v) in table.iter() {
            let field = format!("{path}.{k}");
            let span = table.key(k).and_then(|key| key.span()).or_else(|| v.span());
            if let Some((_, fix)) = RESERVED.iter().find(|(r, _)| *r == k) {
                return Err(self.err(span, &field, None, format!("not here: {fix}")));
            }
            if k.is_empty() || !k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(self.err(
                    span,
                    &field,
                    None,
                    "an fio option's name is letters, digits and `_` (see `fio --cmdhelp`)",
                ));
            }
            let value = match v.as_value() {
                Some(Value::String(s)) => s.value().clone(),
                Some(Value::Integer(i)) => i.value().to_string(),
                Some(Value::Float(f)) => f.value().to_string(),
                Some(Value::Boolean(b)) => u8::from(*b.value()).to_string(),
                _ => {
                    return Err(self.err(
                        v.span(),
                        &field,
                        Some(show(v)),
                        "one value: a string, a number or true/false (fio's `fsync = 1`)",
                    ))
                }
            };
            if value.contains(['\n', '\r']) {
                return Err(self.err(
                    v.span(),
                    &field,
                    Some(show(v)),
                    "one line: fio's job files take no line breaks in a value",
                ));
            }
            // raidlab reads this one itself (the simulator paces it): it must mean to
            // raidlab what it means to fio.
            if k == "rate_iops" {
                if let Err(why) = crate::workload::rate_iops_caps(&value) {
                    return Err(self.err(
                        v.span(),
                        &field,
                        Some(show(v)),
                        format!("{why}; fio caps each job's I/Os per second at it, `\"R,W\"` for reads and writes apart"),
                    ));
                }
            }
            out.insert(k.to_string(), value);
        }
        Ok(out)
    }

    /// A runtime fio can measure in; a read share that is a percentage.
    fn check_runtime_and_mix(&self, w: &WorkloadFields, prefix: &str) -> Result<(), PlanError> {
        let (runtime, rt_span) = &w.runtime;
        if runtime.0 < Nanos::from_millis(100).0 {
            return Err(self.err(
                rt_span.clone(),
                &RUNTIME.at(prefix),
                Some(format!("\"{runtime}\"")),
                "use at least 100ms, e.g. \"60s\"",
            ));
        }
        let (rwmix, mix_span) = &w.rwmix;
        if !RWMIXREAD.takes(u32::from(*rwmix)) {
            return Err(self.err(
                mix_span.clone(),
                &RWMIXREAD.at(prefix),
                Some(rwmix.to_string()),
                format!("a percentage: {} to {}", RWMIXREAD.min(), RWMIXREAD.max()),
            ));
        }
        Ok(())
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
                    &BS.at(prefix),
                    Some(format!("\"{}\"", bs.to_fio())),
                    "use a multiple of 512 bytes, e.g. 4k or 1m",
                ));
            }
            if *bs > size {
                return Err(self.err(
                    size_span.clone(),
                    &SIZE.at(prefix),
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

    /// A count field (`iodepth`, `numjobs`) within its range.
    fn check_count(&self, prefix: &str, key: Key, values: &[At<u32>]) -> Result<(), PlanError> {
        for (v, span) in values {
            if !key.takes(*v) {
                return Err(self.err(
                    span.clone(),
                    &key.at(prefix),
                    Some(v.to_string()),
                    format!("use {} to {}", key.min(), key.max()),
                ));
            }
        }
        Ok(())
    }
}

/// One workload of the matrix; `rwmixread` only for the mixed modes.
fn workload(w: &WorkloadFields, rw: Rw, bs: Bytes, iodepth: u32, numjobs: u32) -> Workload {
    Workload {
        rw,
        bs,
        iodepth,
        numjobs,
        size: w.size.0,
        offset: w.offset,
        runtime: w.runtime.0,
        ramp: w.ramp,
        rwmixread: if matches!(rw, Rw::RandRw | Rw::Rw) {
            w.rwmix.0
        } else {
            rw.read_fraction(0) as u8 * 100
        },
        ioengine: w.ioengine.clone(),
        direct: w.direct,
        fio: w.fio.clone(),
    }
}
