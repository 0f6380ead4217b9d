//! The host target: real arrays on this machine's devices — the seeds' workflow,
//! unattended and guarded.
//!
//! For each case it checks the members again ([`guard`]), reads their write caches,
//! then executes the case's [`Step`]s: every step that changes the system is journalled
//! with its undo before it runs ([`journal`]); a failure or Ctrl-C tears down what was
//! built; a SIGKILL leaves a journal that `raidlab cleanup` replays.

pub mod baseline;
pub mod blank;
pub mod cache;
pub mod devices;
pub mod exec;
pub mod guard;
pub mod journal;
pub mod lock;
pub mod recovery;
pub mod seal;

use journal::{DeviceId, Journal};
use raidlab_backend::script::{self, Action, Phase, Step, Undo};
use raidlab_backend::{CaseOutput, RunContext, Target, TargetError};
use raidlab_core::{Case, CommandRun, Engine, Environment, Level, RebuildFigures};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

/// Environment variable for fault-injection tests: `RAIDLAB_FAULT_KILL_IN=mkfs` makes
/// raidlab SIGKILL itself while the first command of that phase runs, as a power cut
/// would — so the tests can prove that `raidlab cleanup` undoes every phase;
/// `mkfs:2` does it in the phase's second command (with one mkfs per array: a later case's);
/// in a rebuilding case, `fio:2` does it just after the recovery started (`mdadm --add`,
/// `btrfs replace start`).
pub const FAULT_ENV: &str = "RAIDLAB_FAULT_KILL_IN";

/// What the host target needs from the plan and the command line.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The plan's `[disks] devices`.
    pub devices: Vec<String>,
    /// The results directory (journal, scratch files, mount point).
    pub out: PathBuf,
    /// Serials whose data may be destroyed (`--destroy-data-on`).
    pub destroy: BTreeSet<String>,
    /// Who runs each case's measured fio: `None`, this host (a plain `fio` process);
    /// `Some`, a fleet's controller, which starts every host's fio at once through fio's
    /// client/server and hands this host its own output back.
    pub fio_by: Option<std::sync::Arc<dyn FioBy>>,
    /// Discard the members whole before each array is built on them ([`blank`]): only
    /// for members the caller owns whole (the VM lab's files), never a user's disks.
    pub blank: bool,
}

/// A case's measured fio, run by someone else (a fleet's controller, `[run] fleet =
/// "together"`): everything before it (array, file system, layout pass) and after it
/// (teardown, journal, the result) stays this host's.
pub trait FioBy: Send + Sync + std::fmt::Debug {
    /// Have `job` (this host's job file) run and its JSON written to `result`, its logs
    /// into `work`; `Ok(false)` when the run was stopped (signal, controller gone).
    fn run(&self, fio: &Handoff<'_>, stop: &std::sync::atomic::AtomicBool) -> Result<bool, String>;
}

/// What a case hands to [`FioBy`].
#[derive(Debug)]
pub struct Handoff<'a> {
    pub case: &'a Case,
    pub repetition: u32,
    pub job: &'a Path,
    pub result: &'a Path,
    pub work: &'a Path,
}

/// An array left up for the next case.
struct Standing {
    case: Case,
    opened: Vec<Undo>,
    cache_was: Vec<Option<bool>>,
    resync_seconds: Option<f64>,
    /// The region laid out on it: (offset, end) in bytes of the test file or array.
    laid: Option<(u64, u64)>,
}

pub struct HostTarget {
    /// The results directory's and the devices' locks, held while the target lives.
    _locks: (lock::Held, lock::Held),
    cfg: HostConfig,
    standing: Mutex<Option<Standing>>,
    journal: Mutex<Journal>,
    tools: serde_json::Value,
    /// The phase to die in, and how many times it is still to be passed first.
    fault: Option<(Phase, std::sync::atomic::AtomicU32)>,
}

fn host_err(msg: impl Into<String>) -> TargetError {
    TargetError::Host(msg.into())
}

/// The text of a command's version output (first line).
fn version(argv: &[&str]) -> serde_json::Value {
    match std::process::Command::new(argv[0])
        .args(&argv[1..])
        .output()
    {
        Ok(o) => {
            let mut t = String::from_utf8_lossy(&o.stdout).into_owned();
            t.push_str(&String::from_utf8_lossy(&o.stderr));
            serde_json::Value::String(t.lines().next().unwrap_or("").trim().to_string())
        }
        Err(_) => serde_json::Value::Null,
    }
}

fn read_opt(p: &str) -> serde_json::Value {
    std::fs::read_to_string(p)
        .map(serde_json::Value::String)
        .unwrap_or(serde_json::Value::Null)
}

impl HostTarget {
    /// Undo what an earlier run left in `out`, check every device of the plan, open the
    /// journal. Nothing is written to a device here.
    pub fn new(cfg: HostConfig) -> Result<HostTarget, TargetError> {
        if cfg.devices.is_empty() {
            return Err(host_err(
                "the host target needs real devices: list them in the plan, [disks] devices = [\"/dev/disk/by-id/…\", …] (see `raidlab disks`)",
            ));
        }
        if unsafe { libc::geteuid() } != 0 {
            return Err(host_err(
                "the host target builds arrays and file systems: run it as root (sudo), or use --target sim / vm",
            ));
        }
        std::fs::create_dir_all(cfg.out.join(".host"))
            .map_err(|e| host_err(format!("cannot create {}: {e}", cfg.out.display())))?;
        // Before anything is replayed or checked: no other command may act here or on
        // these disks while this run lives.
        let dir_lock = lock::directory(&cfg.out).map_err(host_err)?;
        // Two runs started together on the same disks: only one gets them, and the
        // other has not even probed them.
        let device_locks = lock::devices(&cfg.devices).map_err(host_err)?;
        let left = journal::pending(&cfg.out).map_err(host_err)?;
        if !left.is_clean() {
            raidlab_backend::note!("an earlier run left changes behind; undoing them first:");
            for line in journal::cleanup_locked(&cfg.out, &cfg.devices).map_err(host_err)? {
                raidlab_backend::note!("  {line}");
            }
        }
        guard::check_plan(&cfg.devices, &cfg.destroy).map_err(host_err)?;
        if Path::new(script::MD).exists() {
            return Err(host_err(format!(
                "{} exists already (an array raidlab did not start, or one a crash left: stop it with `mdadm --stop {}` if it is yours)",
                script::MD,
                script::MD
            )));
        }
        let fault = std::env::var(FAULT_ENV).ok().and_then(|s| {
            let (phase, nth) = s.split_once(':').unwrap_or((&s, "1"));
            let nth: u32 = nth.parse().ok()?;
            Some((Phase::parse(phase)?, nth.saturating_sub(1).into()))
        });
        let tools = serde_json::json!({
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()).ok(),
            "fio": version(&["fio", "--version"]),
            "mdadm": version(&["mdadm", "--version"]),
            "mkfs.btrfs": version(&["mkfs.btrfs", "--version"]),
            "mkfs.xfs": version(&["mkfs.xfs", "-V"]),
            "mkfs.ext4": version(&["mkfs.ext4", "-V"]),
        });
        Ok(HostTarget {
            _locks: (dir_lock, device_locks),
            standing: Mutex::new(None),
            journal: Mutex::new(Journal::open(&cfg.out).map_err(host_err)?),
            cfg,
            tools,
            fault,
        })
    }

    /// The per-disk baseline of every plan device, measured once per results directory
    /// (`baseline.json`, never rewritten: a resumed run reads it back).
    pub fn baseline(
        &self,
        runtime_s: u64,
        cx: &RunContext,
    ) -> Result<baseline::Baseline, TargetError> {
        let path = self.cfg.out.join(baseline::FILE);
        if let Ok(text) = std::fs::read_to_string(&path) {
            return serde_json::from_str(&text).map_err(|e| {
                host_err(format!(
                    "{}: unreadable ({e}); move it away to measure again",
                    path.display()
                ))
            });
        }
        let devs: Vec<(String, Option<String>)> = self
            .ids(&self.cfg.devices)
            .into_iter()
            .map(|d| (d.path, d.serial))
            .collect();
        let work = self.cfg.out.join(".host").join("baseline");
        let b = baseline::run(&devs, runtime_s, &work, cx.stop, cx.phase).map_err(|e| {
            if e == "interrupted" {
                TargetError::Interrupted
            } else {
                host_err(e)
            }
        })?;
        let json = serde_json::to_vec_pretty(&b).expect("baseline serialises");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &json).and_then(|_| f.sync_all()))
            .map_err(|e| host_err(format!("cannot write {}: {e}", path.display())))?;
        let _ = std::fs::remove_dir_all(&work);
        Ok(b)
    }

    fn take_standing(&self) -> Option<Standing> {
        self.standing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The plan's devices.
    pub fn devices(&self) -> &[String] {
        &self.cfg.devices
    }

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn ids(&self, paths: &[String]) -> Vec<DeviceId> {
        paths
            .iter()
            .map(|p| DeviceId {
                path: p.clone(),
                serial: devices::inspect(p).ok().and_then(|d| d.serial),
            })
            .collect()
    }

    /// Undo what this case opened, newest first (after a failure or an interrupt).
    fn unwind(&self, opened: &mut Vec<Undo>, errors: &mut Vec<String>) {
        while let Some(u) = opened.pop() {
            match journal::undo(&u) {
                Ok(()) => {
                    if let Err(e) = self.journal().close_entry(&u) {
                        errors.push(e);
                    }
                }
                Err(e) => errors.push(format!("{e} (left in the journal for `raidlab cleanup`)")),
            }
        }
    }
}

/// What running a case's steps left: the state read while fio ran, and how it ended.
#[derive(Default)]
struct Executed {
    during: serde_json::Value,
    resync_during: bool,
    failure: Option<String>,
    interrupted: bool,
}

impl HostTarget {
    /// Run the steps in order until one fails or a signal stops the case; read the
    /// array's state while fio runs.
    fn execute(&self, r: &mut Running, steps: &[Step], cx: &RunContext) -> Executed {
        let mut x = Executed::default();
        for s in steps {
            // After a failure or an interrupt, the rest is skipped and everything this
            // case (and the case before it, if it left the array up) built is unwound.
            if x.failure.is_some() || x.interrupted {
                break;
            }
            if s.phase != Phase::Teardown && cx.stop.load(std::sync::atomic::Ordering::SeqCst) {
                x.interrupted = true;
                break;
            }
            (cx.phase)(s.phase.name());
            let fio_run = matches!(&s.action, Action::Run { argv, .. } if argv[0] == "fio" && s.phase == Phase::Fio);
            if fio_run && resyncing(&read_opt("/proc/mdstat")) {
                x.resync_during = true;
            }
            let io_before = fio_run.then(|| member_io(r.members));
            match self.step(r, s, cx) {
                Ok(true) => {}
                Ok(false) => x.interrupted = true,
                Err(e) => x.failure = Some(e),
            }
            if fio_run {
                let mdstat = read_opt("/proc/mdstat");
                x.resync_during |= resyncing(&mdstat);
                x.during = serde_json::json!({
                    "members": self.member_state(r.members),
                    "mdstat": mdstat,
                    "md_detail": if r.case.array.engine == Engine::Md && r.case.array.level != Level::Single {
                        command_output(&["mdadm", "--detail", script::MD])
                    } else { serde_json::Value::Null },
                    "md_bitmap": md_sysfs("bitmap/location").map(|l| if l == "none" { l } else { format!("internal ({l})") }),
                    "stripe_cache_size": md_sysfs("stripe_cache_size"),
                    // Stripe heads in use: above `stripe_cache_size` once md grew the
                    // cache (`R5_ALLOC_MORE`).
                    "stripe_cache_active": md_sysfs("stripe_cache_active"),
                    "members_io": io_before.map(|b| {
                        let after = r.io_last_look.take().unwrap_or_else(|| member_io(r.members));
                        io_delta(r.members, &b, &after)
                    }),
                });
            }
        }
        x
    }

    /// What the result records about the system (docs/host.md, "Environment recorded").
    fn environment(
        &self,
        r: &Running,
        reuse: &script::Reuse,
        before: serde_json::Value,
        during: serde_json::Value,
        resync_during: bool,
    ) -> Environment {
        // The keys the anomaly rules read (docs/exports.md), from what was recorded.
        let write_cache_after = r
            .members
            .iter()
            .zip(during["members"].as_array().into_iter().flatten())
            .filter_map(|(m, st)| Some((m.clone(), st["write_cache"]["on"].as_bool()?)))
            .collect();
        let member_baseline_iops = std::fs::read(self.cfg.out.join(baseline::FILE))
            .ok()
            .and_then(|b| serde_json::from_slice::<baseline::Baseline>(&b).ok())
            .map(|b| {
                b.members
                    .into_iter()
                    .filter(|m| r.members.contains(&m.device))
                    .map(|m| (m.device, m.randread_iops))
                    .collect()
            });
        let details = serde_json::json!({
            "hostname": std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).ok(),
            "tools": self.tools,
            "members": r.members,
            "before": before,
            "during": during,
            "after": {
                "members": self.member_state(r.members),
                "mdstat": read_opt("/proc/mdstat"),
            },
            "write_cache_before": r.cache_was,
            "resync_seconds": r.resync_seconds,
            "rebuild_progress": (!r.rebuild_progress.is_empty()).then_some(&r.rebuild_progress),
            "array_reused": reuse.array_up,
            "laid_out_by_earlier_case": reuse.laid_out,
        });
        Environment {
            target: Some("host".into()),
            resync_during_fio: Some(resync_during),
            md_bitmap: during["md_bitmap"].as_str().map(str::to_string),
            write_cache_after: Some(write_cache_after),
            member_baseline_iops,
            stripe_cache_size: during["stripe_cache_size"]
                .as_str()
                .and_then(|s| s.parse::<u64>().ok()),
            rebuild: r.rebuild.clone(),
            commands: r.commands.clone(),
            details: match details {
                serde_json::Value::Object(m) => m,
                _ => unreachable!("a json! object"),
            },
            ..Environment::default()
        }
    }
}

/// One of md's attributes of the array raidlab built, where the kernel has it.
fn set_md_attr(attr: &str, value: &str) -> Result<(), String> {
    let md = std::fs::canonicalize(script::MD).map_err(|e| format!("{}: {e}", script::MD))?;
    let name = md
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let p = format!("/sys/block/{name}/md/{attr}");
    if !Path::new(&p).exists() {
        return Ok(());
    }
    std::fs::write(&p, value).map_err(|e| format!("{p}: {e}"))
}

/// md's `stripe_cache_size` of the array raidlab built.
fn set_stripe_cache(pages: u32) -> Result<(), String> {
    let md = std::fs::canonicalize(script::MD).map_err(|e| format!("{}: {e}", script::MD))?;
    let name = md
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let p = format!("/sys/block/{name}/md/stripe_cache_size");
    std::fs::write(&p, pages.to_string()).map_err(|e| format!("{p}: {e}"))
}

/// Write a case's fio job. The job names the array by its node, not mdadm's link: fio
/// finds a device's statistics (its disk_util) with lstat(), which stops at a link.
fn write_job_file(path: &str, text: &str) -> Result<(), String> {
    let text = match std::fs::canonicalize(script::MD) {
        Ok(node) if text.contains(script::MD) => {
            text.replace(script::MD, &node.display().to_string())
        }
        _ => text.to_string(),
    };
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

/// fio's per-second logs in a case's work directory, by the names results keep them under.
fn fio_logs(work: &Path) -> Vec<(String, Vec<u8>)> {
    [
        ("raidlab_iops.log", "iops.log"),
        ("raidlab_lat.log", "lat.log"),
    ]
    .into_iter()
    .filter_map(|(file, name)| Some((name.to_string(), std::fs::read(work.join(file)).ok()?)))
    .collect()
}

/// Per-case state while its steps run.
struct Running<'a> {
    case: &'a Case,
    repetition: u32,
    members: &'a [String],
    work: PathBuf,
    opened: Vec<Undo>,
    /// Each step run: phase, shell form, seconds it took.
    commands: Vec<CommandRun>,
    cache_was: Vec<Option<bool>>,
    resync_seconds: Option<f64>,
    step_no: usize,
    /// Members to add back once fio runs (a rebuilding case), and what their recovery did.
    recover: Option<recovery::How>,
    rebuild: Option<RebuildFigures>,
    rebuild_progress: Vec<(f64, u64)>,
    /// The members' block-layer counters at the recovery's last look during fio.
    io_last_look: Option<Vec<Option<Vec<u64>>>>,
}

impl HostTarget {
    /// Run one step; `Ok(false)` when it was stopped by an interrupt.
    fn step(&self, r: &mut Running, s: &Step, cx: &RunContext) -> Result<bool, String> {
        r.step_no += 1;
        if let Some(u) = &s.opens {
            let devs = match u {
                Undo::StopArray { members, .. } => members.clone(),
                Undo::Wipe { devices } => devices.clone(),
                _ => Vec::new(),
            };
            self.journal()
                .open_entry(&r.case.id.0, s.phase, u, self.ids(&devs))?;
            r.opened.push(u.clone());
        }
        let started = Instant::now();
        // What the record says was run: the step's own line, or the cache tool the
        // device answered to.
        let mut shown = s.shell();
        match &s.action {
            Action::Run { argv, .. }
                if argv[0] == "fio" && s.phase == Phase::Fio && self.cfg.fio_by.is_some() =>
            {
                let by = self.cfg.fio_by.as_ref().expect("matched");
                let (Some(job), Some(result)) = (
                    argv.last(),
                    argv.iter().find_map(|a| a.strip_prefix("--output=")),
                ) else {
                    return Err(format!("`{}` names no job file or output", s.shell()));
                };
                let fio = Handoff {
                    case: r.case,
                    repetition: r.repetition,
                    job: Path::new(job),
                    result: Path::new(result),
                    work: &r.work,
                };
                if !by.run(&fio, cx.stop)? {
                    return Ok(false);
                }
                shown = format!(
                    "fio --client (the fleet's controller, on this host's fio --server) {job}"
                );
            }
            Action::Run { argv, may_fail } => {
                let log = r.work.join(format!("step-{:02}.log", r.step_no));
                let t0 = Instant::now();
                let mut child = exec::spawn(argv, &log)?;
                let is_fio = argv[0] == "fio";
                if is_fio {
                    self.journal().started(child.id())?;
                }
                self.fault_point(s.phase); // mid-command
                let interruptible = matches!(s.phase, Phase::Fio | Phase::Layout | Phase::Resync);
                let mut recovery = r
                    .recover
                    .take()
                    .filter(|_| is_fio && s.phase == Phase::Fio)
                    .map(|m| recovery::Recovery::new(m, t0));
                // While a member recovers, the members' counters at each look too: the
                // last look ends `members_io`'s window with the recovery's own (md speeds
                // up the recovery once fio's workload stops, before fio has exited).
                let members = r.members;
                let mut last_io = None;
                let mut tick = || {
                    if s.phase == Phase::Resync {
                        if let Some(p) = resync_percent(&read_opt("/proc/mdstat")) {
                            (cx.phase)(&format!("resync {p:.1} %"));
                        }
                    }
                    if let Some(rc) = recovery.as_mut() {
                        let begun = rc.begun();
                        rc.tick();
                        last_io = Some(member_io(members));
                        if !begun {
                            // Tests: `fio:2` dies with the recovery under way.
                            self.fault_point(s.phase);
                        }
                    }
                };
                let (status, stopped) =
                    exec::wait_with(&mut child, cx.stop, interruptible, &mut tick)?;
                if is_fio {
                    self.journal().ended(child.id())?;
                }
                r.io_last_look = last_io;
                if let Some(mut rc) = recovery {
                    rc.finish();
                    r.commands.extend(rc.commands.iter().cloned());
                    if let Some(e) = rc.error {
                        return Err(e);
                    }
                    r.rebuild = rc.figures();
                    r.rebuild_progress = rc.samples;
                }
                if s.phase == Phase::Resync {
                    r.resync_seconds = Some(t0.elapsed().as_secs_f64());
                }
                if stopped {
                    return Ok(false);
                }
                if !status.success() && !may_fail {
                    return Err(format!(
                        "`{}` failed ({status}):\n    {}",
                        s.shell(),
                        exec::tail(&log, 12)
                    ));
                }
            }
            Action::SetCache { member, on, .. } => {
                let dev = &r.members[*member];
                let name = devices::kernel_name(dev)?;
                let (was, method) = cache::get(dev, &name)?;
                shown = cache::command(dev, &name, method, *on);
                r.cache_was[*member] = Some(was);
                let u = Undo::RestoreCache {
                    device: dev.clone(),
                    was,
                };
                self.journal().open_entry(
                    &r.case.id.0,
                    s.phase,
                    &u,
                    self.ids(std::slice::from_ref(dev)),
                )?;
                r.opened.push(u);
                cache::set(dev, &name, method, *on)?;
                self.fault_point(s.phase);
            }
            Action::RestoreCache { member, .. } => {
                let dev = &r.members[*member];
                if let Some(was) = r.cache_was[*member] {
                    let u = Undo::RestoreCache {
                        device: dev.clone(),
                        was,
                    };
                    shown = cache::restore(dev, &devices::kernel_name(dev)?, was)?;
                    self.journal().close_entry(&u)?;
                    if let Some(i) = r.opened.iter().rposition(|o| *o == u) {
                        r.opened.remove(i);
                    }
                }
            }
            Action::StripeCache { pages } => set_stripe_cache(*pages)?,
            Action::MdAttr { attr, value } => set_md_attr(attr, value)?,
            Action::AddDuringFio { members, readd } => {
                r.recover = Some(if *readd {
                    recovery::How::MdReAdd(members.clone())
                } else {
                    recovery::How::Md(members.clone())
                })
            }
            Action::ReplaceDuringFio { replaces, mnt } => {
                r.recover = Some(recovery::How::Btrfs {
                    replaces: replaces.clone(),
                    mnt: mnt.clone(),
                })
            }
            Action::WriteFile { path, text } => write_job_file(path, text)?,
        }
        r.commands.push(CommandRun {
            phase: s.phase.name().to_string(),
            command: shown,
            seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        });
        if let Some(u) = &s.closes {
            self.journal().close_entry(u)?;
            if let Some(i) = r.opened.iter().rposition(|o| o == u) {
                r.opened.remove(i);
            }
        }
        Ok(true)
    }

    /// Fault injection (tests): die as a power cut would, in the phase named by
    /// [`FAULT_ENV`].
    fn fault_point(&self, phase: Phase) {
        use std::sync::atomic::Ordering;
        let Some((at, skip)) = &self.fault else {
            return;
        };
        if *at == phase && skip.fetch_sub(1, Ordering::SeqCst) == 0 {
            std::thread::sleep(std::time::Duration::from_millis(200));
            unsafe { libc::raise(libc::SIGKILL) };
        }
    }

    fn member_state(&self, members: &[String]) -> serde_json::Value {
        members
            .iter()
            .map(|m| {
                let d = devices::inspect(m).ok();
                let cache = d
                    .as_ref()
                    .and_then(|d| cache::get(m, &d.name).ok())
                    .map(|(on, method)| serde_json::json!({"on": on, "method": method}));
                serde_json::json!({"device": d, "write_cache": cache})
            })
            .collect()
    }
}

/// The first resync/recovery percentage in `/proc/mdstat` (`resync = 12.5% (…)`).
fn resync_percent(mdstat: &serde_json::Value) -> Option<f64> {
    let text = mdstat.as_str()?;
    let at = text.find("resync =").or_else(|| text.find("recovery ="))?;
    let rest = &text[at..];
    let num = rest.split('=').nth(1)?.trim_start().split('%').next()?;
    num.trim().parse().ok()
}

fn resyncing(mdstat: &serde_json::Value) -> bool {
    mdstat
        .as_str()
        .is_some_and(|s| s.contains("resync") || s.contains("recovery") || s.contains("reshape"))
}

impl Target for HostTarget {
    fn kind(&self) -> raidlab_core::TargetKind {
        raidlab_core::TargetKind::Host
    }

    fn parallel(&self) -> usize {
        1
    }

    fn finish(&self) -> Result<(), TargetError> {
        if let Some(st) = self.take_standing() {
            let mut opened = st.opened;
            let mut errors = Vec::new();
            self.unwind(&mut opened, &mut errors);
            self.journal().deregister_if_clean();
            if !errors.is_empty() {
                return Err(host_err(errors.join("\n  ")));
            }
        }
        Ok(())
    }

    fn run_case(
        &self,
        case: &Case,
        repetition: u32,
        cx: &RunContext,
    ) -> Result<CaseOutput, TargetError> {
        let n = case.array.disks as usize;
        let members = script::members(case, &self.cfg.devices);
        if members.len() < n {
            return Err(host_err(format!(
                "case {} needs {n} disks and the plan lists {}",
                case.id,
                self.cfg.devices.len()
            )));
        }
        let work = work_dir(&self.cfg.out, case, repetition);
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work)
            .map_err(|e| host_err(format!("cannot create {}: {e}", work.display())))?;
        let result = work.join("fio.json");
        let mut standing = self.take_standing();
        if let Some(st) = standing.take_if(|st| !script::same_array(&st.case, case)) {
            (cx.phase)("teardown");
            let mut opened = st.opened;
            let mut errors = Vec::new();
            self.unwind(&mut opened, &mut errors);
            if !errors.is_empty() {
                return Err(host_err(errors.join("\n  ")));
            }
        }
        // Whether the members were discarded before this case built its array: `None`
        // when it shares its predecessor's array or the caller did not ask.
        let mut blanked = None;
        if standing.is_none() {
            // Before building anything, every member again (the array left up for this
            // case is ours, and fails these checks by design).
            guard::check_plan(members, &self.cfg.destroy).map_err(host_err)?;
            if self.cfg.blank {
                (cx.phase)("blank");
                blanked = Some(match blank::blank(members) {
                    Ok(None) => serde_json::json!(true),
                    // Left as they are; the result says why.
                    Ok(Some(why)) => serde_json::json!(format!("not blanked: {why}")),
                    Err(e) => return Err(host_err(format!("blanking the members: {e}"))),
                });
            }
        }
        let w = &case.workload;
        let region = (w.offset.0, w.offset.0 + w.size.0);
        let reuse = script::Reuse {
            array_up: standing.is_some(),
            laid_out: standing
                .as_ref()
                .and_then(|s| s.laid)
                .is_some_and(|(a, b)| a <= region.0 && region.1 <= b),
            keep_up: cx.next.is_some_and(|n| script::same_array(n, case)),
        };
        let steps = script::select(steps(case, members, &self.cfg.out, repetition), reuse);
        let lays_out = steps.iter().any(|s| s.phase == Phase::Layout);
        let mut before = serde_json::json!({
            "members": self.member_state(members),
            "mdstat": read_opt("/proc/mdstat"),
        });
        if let Some(b) = blanked {
            before["blanked"] = b;
        }
        let laid_before = standing.as_ref().and_then(|s| s.laid);
        let (opened, cache_was, resync_seconds) = match standing {
            Some(st) => (st.opened, st.cache_was, st.resync_seconds),
            None => (Vec::new(), vec![None; members.len()], None),
        };
        let mut r = Running {
            case,
            repetition,
            members,
            work: work.clone(),
            opened,
            commands: Vec::new(),
            cache_was,
            resync_seconds,
            step_no: 0,
            recover: None,
            rebuild: None,
            rebuild_progress: Vec::new(),
            io_last_look: None,
        };
        let Executed {
            during,
            resync_during,
            failure,
            interrupted,
        } = self.execute(&mut r, &steps, cx);
        let mut errors = Vec::new();
        if failure.is_some() || interrupted {
            (cx.phase)("teardown");
            self.unwind(&mut r.opened, &mut errors);
        }
        self.journal().deregister_if_clean();
        if let Some(f) = failure {
            errors.insert(0, f);
            return Err(host_err(format!(
                "case {} ({}): {}",
                case.id,
                case.label(),
                errors.join("\n  ")
            )));
        }
        if interrupted {
            return Err(TargetError::Interrupted);
        }
        if !errors.is_empty() {
            return Err(host_err(errors.join("\n  ")));
        }
        let fio_json = std::fs::read(&result)
            .map_err(|e| host_err(format!("fio wrote no result {}: {e}", result.display())))?;
        if reuse.keep_up {
            let laid = if lays_out { Some(region) } else { laid_before };
            *self.standing.lock().unwrap_or_else(|e| e.into_inner()) = Some(Standing {
                case: case.clone(),
                opened: std::mem::take(&mut r.opened),
                cache_was: r.cache_was.clone(),
                resync_seconds: r.resync_seconds,
                laid,
            });
        }
        let mut logs = fio_logs(&work);
        // The job file fio ran, kept beside its result: what `[workloads.fio]` added shows.
        if let Ok(job) = std::fs::read(work.join(format!("{}.fio", case.id))) {
            logs.push(("job.fio".into(), job));
        }
        let environment = self.environment(&r, &reuse, before, during, resync_during);
        let _ = std::fs::remove_dir_all(&work);
        Ok(CaseOutput {
            fio_json,
            logs,
            environment,
        })
    }
}

/// A command's standard output, or null when it cannot run.
fn command_output(argv: &[&str]) -> serde_json::Value {
    match std::process::Command::new(argv[0])
        .args(&argv[1..])
        .output()
    {
        Ok(o) => serde_json::Value::String(String::from_utf8_lossy(&o.stdout).into_owned()),
        Err(_) => serde_json::Value::Null,
    }
}

/// The file fio works on: on the file system, or the raw array.
fn target_file(case: &Case, members: &[String], mnt: &str) -> String {
    if case.array.filesystem == raidlab_core::Filesystem::None {
        script::array_device(case, members)
    } else {
        format!("{mnt}/raidlab.test")
    }
}

/// A case's scratch directory (job file, fio output and logs) in the results directory.
pub fn work_dir(out: &Path, case: &Case, repetition: u32) -> PathBuf {
    absolute(&out.join(".host").join(format!("{}-r{repetition}", case.id)))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// The exact steps the host target runs for a case (what `run --dry-run` prints): the
/// script's steps with this run's paths, fio's job threads in one process (one pid to
/// stop) and a per-second IOPS log.
pub fn steps(case: &Case, members: &[String], out: &Path, repetition: u32) -> Vec<Step> {
    let work = work_dir(out, case, repetition);
    let paths = script::Paths {
        mnt: absolute(&out.join(".host").join("mnt"))
            .display()
            .to_string(),
        workdir: work.display().to_string(),
        result: work.join("fio.json").display().to_string(),
    };
    let mut steps = script::case_steps(case, members, &paths);
    for s in &mut steps {
        if let Action::WriteFile { text, .. } = &mut s.action {
            *text = raidlab_fio::render_job_with(
                &case.workload,
                &target_file(case, members, &paths.mnt),
                &case.id.0,
                &[
                    ("thread", "1".into()),
                    ("write_iops_log", format!("{}/raidlab", paths.workdir)),
                    ("write_lat_log", format!("{}/raidlab", paths.workdir)),
                    ("log_avg_msec", "1000".into()),
                    ("per_job_logs", "0".into()),
                ],
            );
        }
    }
    steps
}

/// Each member's block-layer counters, None where unreadable.
fn member_io(members: &[String]) -> Vec<Option<Vec<u64>>> {
    members.iter().map(|m| devices::io_counters(m)).collect()
}

/// What each member did over the fio run: requests completed, bios merged into them and
/// KiB, per direction (the member being rebuilt included, which fio's `disk_util` leaves
/// out when it joins after fio started). Average request size = KiB / requests.
fn io_delta(
    members: &[String],
    before: &[Option<Vec<u64>>],
    after: &[Option<Vec<u64>>],
) -> serde_json::Value {
    let field = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
    members
        .iter()
        .zip(before.iter().zip(after))
        .map(|(m, (b, a))| match (b, a) {
            (Some(b), Some(a)) => {
                let d = |i| field(a, i).saturating_sub(field(b, i));
                serde_json::json!({
                    "device": m,
                    "reads": d(0), "read_merges": d(1), "read_kib": d(2) / 2,
                    "writes": d(4), "write_merges": d(5), "write_kib": d(6) / 2,
                })
            }
            _ => serde_json::json!({"device": m}),
        })
        .collect()
}

/// An attribute of the array's `/sys/block/mdN/md/` directory, if the array exists.
fn md_sysfs(attr: &str) -> Option<String> {
    let md = std::fs::canonicalize(script::MD).ok()?;
    let name = md.file_name()?.to_string_lossy().into_owned();
    std::fs::read_to_string(format!("/sys/block/{name}/md/{attr}"))
        .ok()
        .map(|s| s.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resync_progress_is_read_from_mdstat() {
        let mdstat = "Personalities : [raid6] [raid5] [raid4]\nmd127 : active raid5 vdd[4] vdc[2] vdb[1] vda[0]\n      3139584 blocks super 1.2 level 5, 512k chunk, algorithm 2 [4/3] [UUU_]\n      [===>.................]  recovery = 18.3% (192512/1046528) finish=0.2min speed=64170K/sec\n";
        let v = serde_json::Value::String(mdstat.into());
        assert_eq!(resync_percent(&v), Some(18.3));
        assert!(resyncing(&v));
        let idle = serde_json::Value::String("Personalities :\nunused devices: <none>\n".into());
        assert_eq!(resync_percent(&idle), None);
        assert!(!resyncing(&idle));
    }
}
