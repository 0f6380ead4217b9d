//! The VM lab target: the real kernel md on emulated disks. Each boot of a stock Debian
//! kernel in qemu (see [`lab`]) gets sparse member disks shaped by the plan's disk model
//! (`throttle-*` presets become qemu's `throttling.*` options per drive; any other model
//! makes them timed members, [`timed`]), a job of
//! several cases, and a results disk. Inside, `raidlab guest` runs the cases with the
//! host target ([`guest`]); the host extracts the results disk (a tar archive) and hands
//! each case's fio JSON back byte for byte. No root is needed on the host.
//!
//! qemu is started with a handle raidlab keeps: it is killed on timeout, on Ctrl-C and
//! when the handle drops, and dies with raidlab (`PR_SET_PDEATHSIG`).

pub mod cpio;
pub mod guest;
pub mod lab;
pub mod timed;

use raidlab_backend::{CaseOutput, RunContext, Target, TargetError};
use raidlab_core::disk::{DiskKind, DiskModel};
use raidlab_core::{Case, DiskSet, Environment, WriteCache};
use std::collections::HashMap;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Forces the acceleration (`kvm` or `tcg`) instead of probing.
pub const ACCEL_ENV: &str = "RAIDLAB_VM_ACCEL";
/// Set (to anything): the guest records the kernel's trace of every case
/// ([`guest::Trace`]) in `OUT/.vm/boot-N/results/<case>-r<rep>/trace.txt`.
pub const TRACE_ENV: &str = "RAIDLAB_VM_TRACE";
/// qemu's own trace events to record (patterns, comma-separated, as `-trace enable=`
/// takes them: `virtio_blk_*,vhost_user_*`), in `OUT/.vm/boot-N/qemu-trace.txt`: where a
/// member's request waits between the guest and the member's server.
pub const QEMU_TRACE_ENV: &str = "RAIDLAB_VM_QEMU_TRACE";
/// Member capacity when the plan names none.
pub const DEFAULT_CAPACITY: u64 = 1 << 30;
/// Cases per boot, at most.
pub const CASES_PER_BOOT: usize = 12;
const QEMU: &str = "qemu-system-x86_64";

fn err(msg: impl Into<String>) -> TargetError {
    TargetError::Host(msg.into())
}

/// A qemu process raidlab started; killed (by its handle) when dropped.
struct Qemu(Child);

impl Drop for Qemu {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
        }
        let _ = self.0.wait();
    }
}

fn spawn_qemu(args: &[String]) -> Result<Qemu, String> {
    let mut cmd = Command::new(QEMU);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: prctl only sets a flag of the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
    cmd.spawn()
        .map(Qemu)
        .map_err(|e| format!("cannot run {QEMU}: {e} — install qemu-system-x86 (Debian)"))
}

/// Why a boot ended.
enum Ended {
    Exited(std::process::ExitStatus, String),
    TimedOut,
    Stopped,
}

/// Wait for qemu; kill it on timeout or when `stop` turns true.
fn wait(q: &mut Qemu, timeout: Duration, stop: Option<&std::sync::atomic::AtomicBool>) -> Ended {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(st)) = q.0.try_wait() {
            let mut e = String::new();
            if let Some(mut s) = q.0.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut s, &mut e);
            }
            return Ended::Exited(st, e);
        }
        if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            let _ = q.0.kill();
            return Ended::Stopped;
        }
        if t0.elapsed() > timeout {
            let _ = q.0.kill();
            return Ended::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tail(path: &Path, lines: usize) -> String {
    let t = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    let v: Vec<&str> = t.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n    ")
}

/// The common qemu arguments of a boot.
/// How a boot ended, turned into the directory of its results (the results disk's tar
/// archive, unpacked), or an error quoting the guest's console.
fn results_of(dir: &Path, ended: Ended, budget: u64) -> Result<PathBuf, TargetError> {
    let io = |e: std::io::Error| err(format!("{}: {e}", dir.display()));
    let console = dir.join("console.log");
    let results = dir.join("results.img");
    match ended {
        Ended::Stopped => return Err(TargetError::Interrupted),
        Ended::TimedOut => {
            return Err(err(format!(
                "the VM did not finish within {budget} s (killed). Guest console ({}):\n    {}",
                console.display(),
                tail(&console, 20)
            )))
        }
        Ended::Exited(st, stderr) if !st.success() => {
            return Err(err(format!(
                "qemu failed ({st}): {}\n  guest console ({}):\n    {}",
                stderr.trim(),
                console.display(),
                tail(&console, 20)
            )))
        }
        Ended::Exited(..) => {}
    }
    let console_text = std::fs::read_to_string(&console).unwrap_or_default();
    if console_text.contains("Kernel panic") {
        return Err(err(format!(
            "the guest kernel panicked. Console ({}):\n    {}",
            console.display(),
            tail(&console, 25)
        )));
    }
    let rdir = dir.join("results");
    std::fs::create_dir_all(&rdir).map_err(io)?;
    let o = Command::new("tar")
        .arg("-xf")
        .arg(&results)
        .arg("-C")
        .arg(&rdir)
        .output()
        .map_err(|e| err(format!("cannot run tar: {e}")))?;
    if !o.status.success() {
        return Err(err(format!(
            "the guest wrote no results ({}). Console ({}):\n    {}",
            String::from_utf8_lossy(&o.stderr).trim(),
            console.display(),
            tail(&console, 20)
        )));
    }
    let _ = std::fs::remove_file(&results);
    Ok(rdir)
}

/// The guest's memory, MiB.
const MEMORY_MIB: u32 = 1536;

fn base_args(lab: &lab::Lab, accel: &str, initrd: &Path, console: &Path) -> Vec<String> {
    let (accel, cpu) = if accel == "kvm" {
        ("kvm", "host")
    } else {
        ("tcg,thread=multi", "max")
    };
    [
        "-nodefaults",
        "-no-reboot",
        "-display",
        "none",
        "-accel",
        accel,
        "-cpu",
        cpu,
        "-smp",
        "2",
        "-m",
        &MEMORY_MIB.to_string(),
        "-kernel",
        &lab.vmlinux().display().to_string(),
        "-initrd",
        &initrd.display().to_string(),
        "-append",
        "console=ttyS0 panic=-1 loglevel=4",
        "-serial",
        &format!("file:{}", console.display()),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Boot the lab's kernel with `accel` and no job: does `/init` start within `timeout`?
pub fn probe(lab: &lab::Lab, accel: &str, timeout: Duration) -> Result<Duration, String> {
    let dir = tempdir("probe")?;
    let console = dir.join("console.log");
    let t0 = Instant::now();
    let mut q = spawn_qemu(&base_args(lab, accel, &lab.initramfs(), &console))?;
    let r = match wait(&mut q, timeout, None) {
        Ended::Exited(_, stderr) => {
            let text = std::fs::read_to_string(&console).unwrap_or_default();
            if text.contains("raidlab-lab: probe ok") {
                Ok(t0.elapsed())
            } else {
                Err(format!(
                    "the guest did not start: {} {}",
                    stderr.trim(),
                    tail(&console, 5)
                ))
            }
        }
        _ => Err(format!("no /init within {} s", timeout.as_secs())),
    };
    drop(q);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn tempdir(what: &str) -> Result<PathBuf, String> {
    let d = std::env::temp_dir().join(format!(
        "raidlab-{what}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() ^ (std::ptr::addr_of!(what) as u128)
    ));
    std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    Ok(d)
}

/// The acceleration that works: `$RAIDLAB_VM_ACCEL`, else KVM if it boots the lab's
/// kernel within 20 s, else TCG. The verdict is cached in the lab's directory.
pub fn accel(lab: &lab::Lab, fresh: bool) -> Result<(String, String), String> {
    if let Ok(a) = std::env::var(ACCEL_ENV) {
        return Ok((a, format!("forced by {ACCEL_ENV}")));
    }
    let cache = lab.dir.join("accel");
    if !fresh {
        if let Ok(t) = std::fs::read_to_string(&cache) {
            if let Some((a, why)) = t.trim().split_once(' ') {
                return Ok((a.to_string(), why.to_string()));
            }
        }
    }
    let kvm = if Path::new("/dev/kvm").exists() {
        probe(lab, "kvm", Duration::from_secs(20))
    } else {
        Err("/dev/kvm is absent".into())
    };
    let (a, why) = match kvm {
        Ok(t) => (
            "kvm",
            format!("KVM boots the guest in {:.1} s", t.as_secs_f64()),
        ),
        Err(ke) => {
            let t = probe(lab, "tcg", Duration::from_secs(120))
                .map_err(|e| format!("neither KVM ({ke}) nor TCG ({e}) boots the lab"))?;
            (
                "tcg",
                format!(
                    "KVM does not work here ({}); TCG boots the guest in {:.1} s",
                    ke.lines().next().unwrap_or(""),
                    t.as_secs_f64()
                ),
            )
        }
    };
    let _ = std::fs::write(&cache, format!("{a} {why}\n"));
    Ok((a.to_string(), why))
}

/// A model whose members are timed: any but a throttle.
fn timed_model(model: Option<&DiskModel>) -> Option<&DiskModel> {
    model.filter(|m| !matches!(m.kind, DiskKind::Throttle(_)))
}

/// What a case's timed members did: during its fio (from the console's phase lines;
/// absent when the guest never reached fio) and over the whole boot.
#[derive(Debug, Clone, serde::Serialize)]
struct Timed {
    during_fio: Option<Vec<raidlab_timed::MemberStats>>,
    boot: Vec<raidlab_timed::MemberStats>,
}

/// What the VM target needs from the plan and the command line.
#[derive(Debug, Clone)]
pub struct VmConfig {
    pub disks: DiskSet,
    /// The results directory (boot scratch files go to `OUT/.vm/`).
    pub out: PathBuf,
}

pub struct VmTarget {
    cfg: VmConfig,
    lab: lab::Lab,
    accel: String,
    accel_why: String,
    model: Option<DiskModel>,
    capacity: u64,
    todo: Mutex<Vec<(Case, u32)>>,
    done: Mutex<HashMap<(String, u32), Result<CaseOutput, String>>>,
    boots: Mutex<u32>,
    qemu_version: String,
}

impl VmTarget {
    /// Find the lab and the acceleration; nothing is booted yet.
    pub fn new(cfg: VmConfig) -> Result<VmTarget, TargetError> {
        let lab = lab::current().map_err(err)?;
        let qemu_version = Command::new(QEMU).arg("--version").output().map_err(|e| {
            err(format!(
                "cannot run {QEMU}: {e} — install qemu-system-x86 (Debian)"
            ))
        })?;
        let qemu_version = String::from_utf8_lossy(&qemu_version.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        let (accel, accel_why) = accel(&lab, false).map_err(err)?;
        let model = cfg.disks.resolved_model().map_err(err)?;
        // A member is the disk's first `span` bytes (the model's surface beyond it is
        // never touched), else the whole `capacity`; the plan refuses a span larger than
        // the disk.
        let capacity = cfg
            .disks
            .span
            .or(cfg.disks.capacity)
            .map(|b| b.0)
            .unwrap_or(DEFAULT_CAPACITY);
        Ok(VmTarget {
            cfg,
            lab,
            accel,
            accel_why,
            model,
            capacity,
            todo: Mutex::new(Vec::new()),
            done: Mutex::new(HashMap::new()),
            boots: Mutex::new(0),
            qemu_version,
        })
    }

    /// The qemu options of one member drive, from the disk model.
    pub fn throttling(model: Option<&DiskModel>) -> String {
        let mut s = String::new();
        if let Some(DiskModel {
            kind: DiskKind::Throttle(p),
            ..
        }) = model
        {
            for (k, v) in [
                ("iops-total", p.iops_total as u64),
                ("iops-read", p.iops_read as u64),
                ("iops-write", p.iops_write as u64),
                ("bps-total", p.bps_total),
                ("iops-size", p.iops_size.0),
            ] {
                if v > 0 {
                    s.push_str(&format!(",throttling.{k}={v}"));
                }
            }
        }
        s
    }

    /// The model when members are timed (any model but a throttle, which is qemu's own):
    /// the guest's md then meets disks that seek and rotate ([`timed`]). Flash is timed
    /// too, with its lateness stated: its service times are the size of the lateness, so
    /// the `timed-late` rule flags what the machine could not keep up with.
    fn timed_model(&self) -> Option<&DiskModel> {
        timed_model(self.model.as_ref())
    }

    /// Boot once for `batch`; store each case's outcome in `done`.
    fn boot(&self, batch: &[(Case, u32)], cx: &RunContext) -> Result<(), TargetError> {
        let (n, dir) = self.boot_dir()?;
        let disks = batch
            .iter()
            .map(|(c, _)| c.array.disks as usize)
            .max()
            .unwrap_or(1);
        let timed = match self.timed_model() {
            Some(m) => Some(
                timed::Members::start(
                    &dir,
                    disks,
                    self.capacity,
                    m,
                    batch[0].0.array.write_cache == WriteCache::On,
                    n as u64,
                )
                .map_err(err)?,
            ),
            None => None,
        };
        let args = match &timed {
            Some(t) => {
                let mut a = t.qemu_args(MEMORY_MIB);
                a.extend(self.results_drive(&dir)?);
                a
            }
            None => self.drives(&dir, disks)?,
        };
        let initrd = self.initrd(&dir, batch, disks)?;
        let console = dir.join("console.log");
        let mut all = base_args(&self.lab, &self.accel, &initrd, &console);
        all.extend(args);
        if let Ok(events) = std::env::var(QEMU_TRACE_ENV) {
            for e in events.split(',').filter(|e| !e.is_empty()) {
                all.extend(["-trace".to_string(), format!("enable={e}")]);
            }
            all.extend([
                "-D".to_string(),
                dir.join("qemu-trace.txt").display().to_string(),
            ]);
        }
        // Boot, modules, then per case: array, mkfs, layout, fio, teardown.
        let budget: u64 = 90
            + batch
                .iter()
                .map(|(c, _)| (c.workload.runtime + c.workload.ramp).get() / 1_000_000_000 + 60)
                .sum::<u64>();
        (cx.phase)(&format!(
            "vm boot {n} ({})",
            raidlab_core::plural(batch.len(), "case", "cases")
        ));
        let t0 = Instant::now();
        let watcher = timed.as_ref().map(|t| t.watch(&console));
        let mut q = spawn_qemu(&all).map_err(err)?;
        let ended = wait(&mut q, Duration::from_secs(budget), Some(cx.stop));
        drop(q);
        let boot_seconds = t0.elapsed().as_secs_f64();
        let (per_case, totals) = match (timed, watcher) {
            (Some(t), Some(w)) => {
                let (p, t) = t.finish(w);
                (p, Some(t))
            }
            _ => (Vec::new(), None),
        };
        let _ = std::fs::remove_file(&initrd);
        for i in 0..disks {
            let _ = std::fs::remove_file(dir.join(format!("d{i}.img")));
        }
        let rdir = results_of(&dir, ended, budget)?;
        let mut done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        for (k, (c, r)) in batch.iter().enumerate() {
            let d = rdir.join(guest::case_dir(c, *r));
            let members = totals.as_ref().map(|t| Timed {
                during_fio: per_case.get(k).cloned().flatten(),
                boot: t.clone(),
            });
            let out = self.collect(&d, &console, boot_seconds, batch.len(), members);
            done.insert((c.id.0.clone(), *r), out);
        }
        Ok(())
    }

    /// A fresh directory for the next boot; those of an earlier (resumed) run are kept.
    fn boot_dir(&self) -> Result<(u32, PathBuf), TargetError> {
        let (n, dir) = {
            let mut b = self.boots.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                *b += 1;
                let d = self.cfg.out.join(".vm").join(format!("boot-{b}"));
                if !d.exists() {
                    break (*b, d);
                }
            }
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
        Ok((n, std::path::absolute(&dir).unwrap_or(dir)))
    }

    /// qemu's drives: the sparse member disks, shaped by the disk model, and the results
    /// disk the guest writes its tar archive to.
    fn drives(&self, dir: &Path, disks: usize) -> Result<Vec<String>, TargetError> {
        let io = |e: std::io::Error| err(format!("{}: {e}", dir.display()));
        let mut args = Vec::new();
        for i in 0..disks {
            let f = dir.join(format!("d{i}.img"));
            std::fs::File::create(&f)
                .and_then(|h| h.set_len(self.capacity))
                .map_err(io)?;
            args.push("-drive".to_string());
            args.push(format!(
                "if=none,id=d{i},file={},format=raw,cache=none,aio=io_uring,discard=unmap{}",
                f.display(),
                Self::throttling(self.model.as_ref())
            ));
            args.push("-device".into());
            args.push(format!("virtio-blk-pci,drive=d{i},serial=d{i}"));
        }
        args.extend(self.results_drive(dir)?);
        Ok(args)
    }

    /// The results disk the guest writes its tar archive to: a sparse file, so its size
    /// costs nothing until written. A traced boot ([`TRACE_ENV`]) gets room for the
    /// kernel's trace of every case (up to 32 MiB a CPU of ftrace's buffer each, more as
    /// text: a raid6 case of 1 MiB writes traced 63 MB), which overflowed the 64 MiB an
    /// untraced boot's results need and lost the boot's results.
    fn results_drive(&self, dir: &Path) -> Result<Vec<String>, TargetError> {
        let io = |e: std::io::Error| err(format!("{}: {e}", dir.display()));
        let mut args = Vec::new();
        let results = dir.join("results.img");
        let bytes: u64 = if std::env::var_os(TRACE_ENV).is_some() {
            8 << 30
        } else {
            64 << 20
        };
        std::fs::File::create(&results)
            .and_then(|h| h.set_len(bytes))
            .map_err(io)?;
        args.push("-drive".into());
        args.push(format!(
            "if=none,id=results,file={},format=raw",
            results.display()
        ));
        args.push("-device".into());
        args.push("virtio-blk-pci,drive=results,serial=results".into());
        Ok(args)
    }

    /// The initramfs of this boot: the lab's, then the job and this raidlab binary.
    fn initrd(
        &self,
        dir: &Path,
        batch: &[(Case, u32)],
        disks: usize,
    ) -> Result<PathBuf, TargetError> {
        let io = |e: std::io::Error| err(format!("{}: {e}", dir.display()));
        let job = guest::Job {
            trace: std::env::var_os(TRACE_ENV).is_some(),
            disks,
            cases: batch
                .iter()
                .map(|(c, r)| guest::GuestCase {
                    case: c.clone(),
                    repetition: *r,
                })
                .collect(),
        };
        let initrd = dir.join("initrd.cpio");
        {
            std::fs::copy(self.lab.initramfs(), &initrd).map_err(io)?;
            let f = std::fs::OpenOptions::new()
                .append(true)
                .open(&initrd)
                .map_err(io)?;
            let mut c = cpio::Cpio::new(std::io::BufWriter::new(f));
            let exe = std::env::current_exe().map_err(io)?;
            c.file("bin/raidlab", 0o755, &std::fs::read(&exe).map_err(io)?)
                .map_err(io)?;
            c.file(
                "job/cases.json",
                0o644,
                &serde_json::to_vec(&job).expect("json"),
            )
            .map_err(io)?;
            c.finish().map_err(io)?.flush().map_err(io)?;
        }
        Ok(initrd)
    }

    fn collect(
        &self,
        d: &Path,
        console: &Path,
        boot_seconds: f64,
        cases: usize,
        timed: Option<Timed>,
    ) -> Result<CaseOutput, String> {
        if let Ok(e) = std::fs::read_to_string(d.join("error.txt")) {
            // The console's last words, without the lines the error already quotes.
            let text =
                String::from_utf8_lossy(&std::fs::read(console).unwrap_or_default()).into_owned();
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim().is_empty() && !e.contains(l.trim()))
                .collect();
            return Err(format!(
                "in the guest: {e}\n  guest console ({}):\n    {}",
                console.display(),
                lines[lines.len().saturating_sub(8)..].join("\n    ")
            ));
        }
        let fio_json = std::fs::read(d.join("fio.json")).map_err(|e| {
            format!(
                "the guest returned no fio result ({e}). Console ({}):\n    {}",
                console.display(),
                tail(console, 20)
            )
        })?;
        let mut env: Environment = std::fs::read(d.join("environment.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        // The guest keeps fio's per-second logs as log-NAME, as the host target stores them.
        let mut logs = Vec::new();
        for name in ["iops.log", "lat.log"] {
            if let Ok(l) = std::fs::read(d.join(format!("log-{name}"))) {
                logs.push((name.to_string(), l));
            }
        }
        let throttled = matches!(
            self.model.as_ref().map(|m| &m.kind),
            Some(DiskKind::Throttle(_))
        );
        let note = if timed.is_some() {
            "members timed by the disk model in real time (raidlab-timed as vhost-user block devices): the figures are the real md on the model's disks"
        } else if throttled {
            "members throttled by qemu: the figures are the throttle's"
        } else {
            "unthrottled emulated disks: figures are bound by the emulated CPU and vary run to run; only relative figures mean anything"
        };
        env.target = Some("vm".into());
        env.details.insert(
            "vm".into(),
            serde_json::json!({
                "kernel": self.lab.kver,
                "lab": self.lab.info(),
                "qemu": self.qemu_version,
                "accel": self.accel,
                "accel_why": self.accel_why,
                "disk_model": self.model.as_ref().map(|m| m.name.clone()),
                "drive_options": Self::throttling(self.model.as_ref()),
                "member_capacity": self.capacity,
                "cpu_bound": !throttled && timed.is_none(),
                "note": note,
                "timed_members": timed,
                "boot_seconds": (boot_seconds * 10.0).round() / 10.0,
                "cases_in_boot": cases,
            }),
        );
        Ok(CaseOutput {
            fio_json,
            logs,
            environment: env,
        })
    }
}

impl Target for VmTarget {
    fn kind(&self) -> raidlab_core::TargetKind {
        raidlab_core::TargetKind::Vm
    }

    fn parallel(&self) -> usize {
        1
    }

    fn prepare(&self, todo: &[(&Case, u32)]) {
        *self.todo.lock().unwrap_or_else(|e| e.into_inner()) =
            todo.iter().map(|(c, r)| ((*c).clone(), *r)).collect();
    }

    fn run_case(
        &self,
        case: &Case,
        repetition: u32,
        cx: &RunContext,
    ) -> Result<CaseOutput, TargetError> {
        let key = (case.id.0.clone(), repetition);
        let cached = self
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        if let Some(r) = cached {
            return r.map_err(err);
        }
        if case.array.engine == raidlab_core::Engine::Btrfs && !self.lab.has_tool("mkfs.btrfs") {
            return Err(err(format!(
                "case {}: the VM lab in {} was built without btrfs (before raidlab put mkfs.btrfs in it): run `raidlab lab build` again",
                case.id,
                self.lab.dir.display()
            )));
        }
        if self.cfg.disks.count < case.array.disks {
            return Err(err(format!(
                "case {} needs {} disks and the plan has {}",
                case.id, case.array.disks, self.cfg.disks.count
            )));
        }
        // This case and the ones after it, as many as one boot takes.
        let batch: Vec<(Case, u32)> = {
            let todo = self.todo.lock().unwrap_or_else(|e| e.into_inner());
            let from = todo
                .iter()
                .position(|(c, r)| c.id == case.id && *r == repetition);
            match from {
                Some(i) => todo[i..]
                    .iter()
                    .take(CASES_PER_BOOT)
                    .take_while(|(c, _)| {
                        c.array.disks <= self.cfg.disks.count
                            // Timed members get the model's cache at start.
                            && (self.timed_model().is_none()
                                || c.array.write_cache == case.array.write_cache)
                    })
                    .cloned()
                    .collect(),
                None => vec![(case.clone(), repetition)],
            }
        };
        self.boot(&batch, cx)?;
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key)
            .unwrap_or_else(|| Err("the boot returned no outcome for this case".into()))
            .map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Throttles are qemu's; every other model's members are timed, flash included.
    #[test]
    fn every_model_but_a_throttle_times_its_members() {
        for (name, timed) in [
            ("hdd-7200", true),
            ("nvme", true),
            ("ssd-sata", true),
            ("throttle-75", false),
        ] {
            let m = DiskModel::preset(name).unwrap();
            assert_eq!(timed_model(Some(&m)).is_some(), timed, "{name}");
        }
        assert!(timed_model(None).is_none());
    }

    #[test]
    fn throttle_presets_become_qemu_drive_options() {
        let m = DiskModel::preset("throttle-75").unwrap();
        assert!(VmTarget::throttling(Some(&m)).contains(",throttling.iops-total=75"));
        let h = DiskModel::preset("hdd-7200").unwrap();
        assert_eq!(VmTarget::throttling(Some(&h)), "");
        assert_eq!(VmTarget::throttling(None), "");
    }

    /// `[disks.params]` reach the lab's disks: another rate is another qemu option.
    #[test]
    fn disk_params_change_the_qemu_throttle() {
        let disks = raidlab_core::DiskSet {
            count: 4,
            model: Some("throttle-75".into()),
            model_file: None,
            capacity: None,
            span: None,
            devices: vec![],
            params: [
                ("iops_total".to_string(), "150".to_string()),
                ("iops_size".to_string(), "128k".to_string()),
            ]
            .into(),
            host_queue: None,
            scheduler: None,
        };
        let m = disks.resolved_model().unwrap();
        let opts = VmTarget::throttling(m.as_ref());
        assert!(opts.contains(",throttling.iops-total=150"), "{opts}");
        assert!(opts.contains(",throttling.iops-size=131072"), "{opts}");
    }
}
