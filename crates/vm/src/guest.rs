//! The guest side of the VM lab: `raidlab guest JOB OUT`, run by the initramfs's `/init`.
//! It finds the member disks by their virtio serial (`d0`, `d1`, …), then runs the
//! boot's cases with the host target — the same guards, journal and md/btrfs engines as
//! on a real machine, here against the guest's kernel md — and writes each case's fio
//! JSON (as fio wrote it), environment and log, or its error, to `OUT/<case>-r<rep>/`.
//! The members are the lab's own files, so the host target discards them whole before
//! each array it builds ([`raidlab_host::blank`]): no case meets what an earlier one wrote.

use raidlab_backend::{RunContext, Target};
use raidlab_core::Case;
use raidlab_host::{HostConfig, HostTarget};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// One case of a boot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestCase {
    pub case: Case,
    pub repetition: u32,
}

/// What the host hands the guest (`/job/cases.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Job {
    /// Member disks attached, serials `d0` … `d{n-1}`.
    pub disks: usize,
    pub cases: Vec<GuestCase>,
    /// Record the kernel's trace of each case (`$RAIDLAB_VM_TRACE`, [`Trace`]).
    #[serde(default)]
    pub trace: bool,
}

/// The guest kernel's own account of a case, for holding the simulator's md against it
/// event by event: every bio queued on and every request completed by a block device
/// (`block:block_bio_queue`, `block:block_rq_complete`, with the submitting thread), every
/// answer of md's idle test (a return probe on `md_mod`'s `is_mddev_idle`, `raidlab_idle`,
/// `ret=0x0` busy), and every head raid5 added to its stripe cache (`raidlab_grow`, on
/// `grow_one_stripe`, `ret=0x1` grown). Written as ftrace's text to `trace.txt` in the
/// case's directory; a 15 s recovery under load takes about 23 MB.
pub struct Trace;

const TRACING: &str = "/sys/kernel/tracing";

impl Trace {
    /// Mount tracefs, set the probe and the events up, and start from an empty buffer.
    pub fn start() -> Result<Trace, String> {
        let t = Path::new(TRACING);
        if !t.join("trace").exists() {
            let o = std::process::Command::new("mount")
                .args(["-t", "tracefs", "nodev", TRACING])
                .output()
                .map_err(|e| format!("mount tracefs: {e}"))?;
            if !o.status.success() {
                return Err(format!(
                    "mount tracefs: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
        }
        let put = |file: &str, what: &str| {
            std::fs::write(t.join(file), what).map_err(|e| format!("{TRACING}/{file}: {e}"))
        };
        put("tracing_on", "0")?;
        put("buffer_size_kb", "32768")?;
        if !t.join("events/kprobes/raidlab_idle").exists() {
            put(
                "kprobe_events",
                "r:raidlab_idle md_mod:is_mddev_idle ret=$retval\n",
            )?;
            // Appended (a plain write would drop the probe above).
            std::fs::OpenOptions::new()
                .append(true)
                .open(t.join("kprobe_events"))
                .and_then(|mut f| {
                    std::io::Write::write_all(
                        &mut f,
                        b"r:raidlab_grow raid456:grow_one_stripe ret=$retval\n",
                    )
                })
                .map_err(|e| format!("{TRACING}/kprobe_events: {e}"))?;
        }
        for e in [
            "kprobes/raidlab_idle",
            "kprobes/raidlab_grow",
            "block/block_bio_queue",
            "block/block_rq_complete",
        ] {
            put(&format!("events/{e}/enable"), "1")?;
        }
        put("trace", "")?;
        put("tracing_on", "1")?;
        Ok(Trace)
    }

    /// Stop, and write what was traced to `dest`.
    pub fn finish(self, dest: &Path) -> Result<(), String> {
        let t = Path::new(TRACING);
        std::fs::write(t.join("tracing_on"), "0").map_err(|e| format!("tracing_on: {e}"))?;
        std::fs::copy(t.join("trace"), dest)
            .map(|_| ())
            .map_err(|e| format!("{}: {e}", dest.display()))
    }
}

/// A case's directory name in the results.
pub fn case_dir(case: &Case, rep: u32) -> String {
    format!("{}-r{rep}", case.id)
}

/// The guest's block devices by virtio serial.
fn member_devices(n: usize) -> Result<Vec<String>, String> {
    let mut found = vec![None; n];
    for e in std::fs::read_dir("/sys/block").map_err(|e| format!("/sys/block: {e}"))? {
        let e = e.map_err(|e| e.to_string())?;
        let name = e.file_name().to_string_lossy().into_owned();
        let serial = std::fs::read_to_string(e.path().join("serial")).unwrap_or_default();
        if let Some(i) = serial
            .trim()
            .strip_prefix('d')
            .and_then(|s| s.parse::<usize>().ok())
        {
            if i < n {
                found[i] = Some(format!("/dev/{name}"));
            }
        }
    }
    found
        .into_iter()
        .enumerate()
        .map(|(i, d)| d.ok_or_else(|| format!("member disk d{i} not found in the guest")))
        .collect()
}

/// Run the job; per-case failures are written next to the results, not returned.
pub fn run(job_dir: &Path, out: &Path) -> Result<(), String> {
    let job: Job = serde_json::from_slice(
        &std::fs::read(job_dir.join("cases.json")).map_err(|e| format!("cases.json: {e}"))?,
    )
    .map_err(|e| format!("cases.json: {e}"))?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let fail_all = |msg: &str| {
        for gc in &job.cases {
            let d = out.join(case_dir(&gc.case, gc.repetition));
            let _ = std::fs::create_dir_all(&d);
            let _ = std::fs::write(d.join("error.txt"), msg);
        }
    };
    let devices = match member_devices(job.disks) {
        Ok(d) => d,
        Err(e) => {
            fail_all(&e);
            return Err(e);
        }
    };
    println!("raidlab-lab: members {}", devices.join(" "));
    let host = match HostTarget::new(HostConfig {
        devices,
        out: Path::new("/tmp/raidlab-host").to_path_buf(),
        destroy: Default::default(),
        fio_by: None,
        // The members are the lab's own files: every array starts on zeroed members.
        blank: true,
    }) {
        Ok(h) => h,
        Err(e) => {
            fail_all(&e.to_string());
            return Err(e.to_string());
        }
    };
    let stop = AtomicBool::new(false);
    let phase = |p: &str| println!("raidlab-lab: phase {p}");
    for (i, gc) in job.cases.iter().enumerate() {
        let d = out.join(case_dir(&gc.case, gc.repetition));
        std::fs::create_dir_all(&d).map_err(|e| e.to_string())?;
        println!("raidlab-lab: case {} {}", gc.case.id, gc.case.label());
        let cx = RunContext {
            stop: &stop,
            phase: &phase,
            next: job.cases.get(i + 1).map(|n| &n.case),
        };
        let trace = match job.trace.then(Trace::start) {
            Some(Err(e)) => {
                println!("raidlab-lab: case {} not traced: {e}", gc.case.id);
                None
            }
            Some(Ok(t)) => Some(t),
            None => None,
        };
        let ran = host.run_case(&gc.case, gc.repetition, &cx);
        if let Some(t) = trace {
            if let Err(e) = t.finish(&d.join("trace.txt")) {
                println!("raidlab-lab: case {} trace: {e}", gc.case.id);
            }
        }
        match ran {
            Ok(o) => {
                std::fs::write(d.join("fio.json"), &o.fio_json).map_err(|e| e.to_string())?;
                std::fs::write(
                    d.join("environment.json"),
                    serde_json::to_vec(&o.environment).expect("json"),
                )
                .map_err(|e| e.to_string())?;
                for (name, bytes) in &o.logs {
                    std::fs::write(d.join(format!("log-{name}")), bytes)
                        .map_err(|e| e.to_string())?;
                }
                println!("raidlab-lab: case {} ok", gc.case.id);
            }
            Err(e) => {
                println!("raidlab-lab: case {} failed: {e}", gc.case.id);
                std::fs::write(d.join("error.txt"), e.to_string()).map_err(|e| e.to_string())?;
            }
        }
    }
    if let Err(e) = host.finish() {
        println!("raidlab-lab: teardown: {e}");
    }
    Ok(())
}
