//! `raidlab run PLAN --hosts HOSTS.toml`: the fleet controller. Each host runs the plan
//! with its own raidlab over ssh (`raidlab_fleet::session`); this gathers their events —
//! one progress bar per host and one overall — and commits every result as it arrives
//! into one local results directory, under the target `host.NAME`. A host lost on the way
//! does not stop the others; `--resume` picks it up, `cleanup --hosts` tidies after it.
//! Also `raidlab fleet-replay DIR` (what a host answers on `--resume`) and `cleanup
//! --hosts`.

use crate::args::RunArgs;
use anyhow::{bail, Context, Result};
use indicatif::{MultiProgress, ProgressBar};
use raidlab_core::{FleetMode, Plan, TargetKind};
use raidlab_fleet::session::{self, Update};
use raidlab_fleet::together::{self, Order, Part, Server};
use raidlab_fleet::{HostsFile, Ssh, Wire, WireResult};
use raidlab_store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

pub fn run(a: RunArgs) -> Result<()> {
    let hosts_path = a.hosts.clone().expect("called with --hosts");
    let plan_text = std::fs::read_to_string(&a.plan)
        .with_context(|| format!("cannot read {}", a.plan.display()))?;
    // The plan may leave its devices to the hosts file (and then need not name a count).
    let named: Vec<String> = match Plan::load(&a.plan) {
        Ok(p) => p.disks.devices.clone(),
        // Hosts named on the command line use the plan's devices: its mistakes come first.
        Err(e) if !hosts_path.exists() => return Err(e.into()),
        Err(_) => Vec::new(),
    };
    let hosts = HostsFile::from_arg(&hosts_path, &named)?;
    if let Some(h) = hosts.hosts.iter().find(|h| h.devices.is_empty()) {
        bail!(
            "host {} has no devices: the plan names none ([disks] devices), so give each host its own in a hosts file (docs/fleet.md)",
            h.name
        );
    }
    if a.events {
        bail!("--events is what each host of a fleet answers with; the controller shows bars");
    }
    // Each host's plan, checked here first: a mistake is found before any host is reached.
    let mut plans = Vec::new();
    let mut cases = Vec::new();
    for h in &hosts.hosts {
        let text = session::plan_for(&plan_text, h).map_err(anyhow::Error::msg)?;
        let p = Plan::parse(&text, &a.plan)
            .with_context(|| format!("the plan with host {}'s devices", h.name))?;
        p.check_target(TargetKind::Host, raidlab_core::Check::Preview)
            .with_context(|| format!("host {}", h.name))?;
        // A host with more or fewer devices has arrays of another width: its own cases.
        cases.extend(p.cases().iter().cloned());
        plans.push((text, p));
    }
    // The first host's plan stands for the run (its name, its [run] options).
    let plan = plans[0].1.clone();
    if plan.run.fleet == FleetMode::Together {
        check_together(&plan, &plans)?;
    }
    let plans: Vec<String> = plans.into_iter().map(|(text, _)| text).collect();
    if let Some(kind) = a
        .target
        .or(plan.run.target)
        .filter(|k| *k != TargetKind::Host)
    {
        bail!("--hosts runs the plan on each host's own disks (the host target), not on {kind}: drop --target or use --target host");
    }
    let out: PathBuf = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&plan.name));
    let exists = out.join("raidlab.sqlite").exists();
    if exists && !a.resume {
        bail!(
            "{} already holds the results of a run; nothing there is ever overwritten.\n  To continue that run: raidlab run {} --hosts {} --resume --out {}",
            out.display(),
            a.plan.display(),
            hosts_path.display(),
            out.display()
        );
    }
    let mut store = if exists {
        Store::open(&out)?
    } else {
        Store::create(&out, &crate::run::meta(&plan, &a.plan, TargetKind::Host))?
    };
    store.lock()?;
    store.add_cases(&cases)?;
    let together = plan.run.fleet == FleetMode::Together;
    let binary = std::env::current_exe().context("cannot find this raidlab binary to copy")?;
    let opts = session::RunOptions {
        resume: a.resume,
        baseline: format!("{}s", a.baseline.get() / 1_000_000_000),
        run: raidlab_fleet::run_id(&out, &plan.name),
        tools: tools(&plan),
        together,
    };

    let multi = MultiProgress::new();
    if a.quiet {
        multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let bars: Vec<ProgressBar> = hosts
        .hosts
        .iter()
        .map(|h| {
            let pb = multi.add(crate::progress::timed(0, a.quiet));
            pb.set_prefix(h.name.clone());
            pb.set_message(format!("{}: connecting", h.name));
            pb
        })
        .collect();
    // The whole fleet: every host's work together, for one ETA.
    let overall = multi.add(crate::progress::timed(0, a.quiet));
    overall.set_message(format!("fleet of {}", hosts.hosts.len()));
    let (mut totals, mut positions) = (vec![0u64; bars.len()], vec![0u64; bars.len()]);
    let (tx, rx) = mpsc::channel::<(usize, Update)>();
    let mut lost: Vec<(String, String)> = Vec::new();
    let mut received = 0usize;
    let mut unstored: Vec<String> = Vec::new();
    let mut conductor = Conductor::new(&plan, &out, hosts.hosts.len());
    std::thread::scope(|s| -> Result<()> {
        for (i, (h, text)) in hosts.hosts.iter().zip(&plans).enumerate() {
            let tx = tx.clone();
            let ssh = Ssh::new(&h.ssh, hosts.ssh_config.clone());
            let (binary, opts) = (&binary, &opts);
            s.spawn(move || {
                let send = |u: Update| {
                    let _ = tx.send((i, u));
                };
                session::run_host(&ssh, h, binary, text, opts, &send);
            });
        }
        drop(tx);
        for (i, update) in rx {
            let name = &hosts.hosts[i].name;
            let pb = &bars[i];
            match update {
                Update::Wire(Wire::Started { total, pending, .. }) => {
                    pb.set_length(total);
                    pb.set_message(format!("{name}: {pending} to run"));
                    totals[i] = total;
                    overall.set_length(totals.iter().sum());
                }
                Update::Wire(Wire::Message { text }) => pb.set_message(format!("{name}: {text}")),
                Update::Wire(Wire::Position { value }) => {
                    pb.set_position(value);
                    positions[i] = value;
                    overall.set_position(positions.iter().sum());
                }
                Update::Wire(Wire::Result(r)) => match commit(&mut store, name, *r) {
                    Ok(true) => received += 1,
                    Ok(false) => {}
                    // One host's bad result is that host's problem, not the fleet's.
                    Err(e) => unstored.push(format!("{name}: {e:#}")),
                },
                Update::Wire(Wire::Finished { .. }) => {}
                Update::Wire(Wire::Ready {
                    case_id,
                    repetition,
                    job,
                }) => {
                    pb.set_message(format!("{name}: ready, waiting for the fleet"));
                    conductor.ready[i] = Some((case_id, repetition, job));
                }
                Update::Server(server) => conductor.servers[i] = Some(server),
                Update::Orders(stdin) => conductor.orders[i] = Some(stdin),
                Update::Done => {
                    conductor.gone(i);
                    pb.finish_with_message(format!("{name}: done"));
                }
                Update::Lost(why) => {
                    conductor.gone(i);
                    pb.abandon_with_message(format!("{name}: lost — {why}"));
                    lost.push((name.clone(), why));
                }
            }
            if together {
                conductor.conduct(&hosts.hosts, &bars, &mut store, &mut unstored);
            }
        }
        Ok(())
    })?;
    overall.finish_and_clear();
    if together {
        for (h, started) in hosts.hosts.iter().zip(&conductor.servers) {
            if started.is_some() {
                let ssh = Ssh::new(&h.ssh, hosts.ssh_config.clone());
                if let Err(e) = session::stop_server(&ssh, h, &opts.run) {
                    raidlab_backend::note!("{}: its fio --server was not stopped: {e} (raidlab cleanup --hosts stops it)", h.name);
                }
            }
        }
    }
    crate::run::write_report(&store, &plan.name, &out, true)?;
    raidlab_backend::note!(
        "{received} result(s) received from {} host(s)",
        hosts.hosts.len()
    );
    let mut problems = Vec::new();
    if !unstored.is_empty() {
        problems.push(format!(
            "{} result(s) could not be stored (the others are):\n  {}",
            unstored.len(),
            unstored.join("\n  ")
        ));
    }
    if !lost.is_empty() {
        let list: Vec<String> = lost.iter().map(|(h, why)| format!("{h}: {why}")).collect();
        problems.push(format!(
            "{} of {} host(s) did not finish; what they finished is stored in {}:\n  {}\nOnce they are back: raidlab cleanup --hosts {h}, then raidlab run {} --hosts {h} --resume --out {}",
            lost.len(),
            hosts.hosts.len(),
            out.display(),
            list.join("\n  "),
            a.plan.display(),
            out.display(),
            h = hosts_path.display(),
        ));
    }
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(())
}

/// What together runs need of the plan: the same cases on every host, and none that
/// needs the host's own fio (a rebuilding array's recovery is watched while fio runs).
fn check_together(plan: &Plan, plans: &[(String, Plan)]) -> Result<()> {
    let ids = |p: &Plan| p.cases().iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    if plans.iter().any(|(_, p)| ids(p) != ids(&plans[0].1)) {
        bail!("[run] fleet = \"together\" runs each case on every host at once, so every host needs the same cases: give each host as many devices as the plan's arrays use (their count makes the arrays' widths), or run the fleet independently");
    }
    if let Some(c) = plan
        .cases()
        .iter()
        .find(|c| c.array.state == raidlab_core::ArrayState::Rebuilding)
    {
        bail!(
            "[run] fleet = \"together\" cannot run case {} ({}): a rebuilding array's recovery is watched by the host while its own fio runs. Run the rebuilding cases with the fleet independent (remove fleet = \"together\"), or leave \"rebuilding\" out of [arrays] state",
            c.id,
            c.label()
        );
    }
    if raidlab_fio::fio_version().is_none() {
        bail!("[run] fleet = \"together\" runs fio's client on this machine: install fio here (the same version as on the hosts)");
    }
    Ok(())
}

/// A together run's state on the controller: which host waits with which case, and how
/// to reach its fio server and its raidlab.
struct Conductor<'p> {
    plan: &'p Plan,
    out: &'p Path,
    servers: Vec<Option<Server>>,
    orders: Vec<Option<std::process::ChildStdin>>,
    /// The case each host waits with: (case id, repetition, its job file).
    ready: Vec<Option<(String, u32, String)>>,
    live: Vec<bool>,
}

impl<'p> Conductor<'p> {
    fn new(plan: &'p Plan, out: &'p Path, hosts: usize) -> Self {
        Conductor {
            plan,
            out,
            servers: vec![None; hosts],
            orders: (0..hosts).map(|_| None).collect(),
            ready: vec![None; hosts],
            live: vec![true; hosts],
        }
    }

    /// A host's session ended: nobody waits for it any more.
    fn gone(&mut self, i: usize) {
        self.live[i] = false;
        self.ready[i] = None;
        self.orders[i] = None;
    }

    /// Where a case stands in the run order (repetition, then the plan's case order).
    fn rank(&self, case: &str, rep: u32) -> (u32, usize) {
        let i = self.plan.cases().iter().position(|c| c.id.0 == case);
        (rep, i.unwrap_or(usize::MAX))
    }

    /// Once every host still running waits, run the earliest case they wait with on all
    /// hosts that wait with it, at once; repeat while that holds.
    fn conduct(
        &mut self,
        hosts: &[raidlab_fleet::Host],
        bars: &[ProgressBar],
        store: &mut Store,
        unstored: &mut Vec<String>,
    ) {
        loop {
            let live: Vec<usize> = (0..hosts.len()).filter(|&i| self.live[i]).collect();
            if live.is_empty() || live.iter().any(|&i| self.ready[i].is_none()) {
                return;
            }
            let first = live
                .iter()
                .filter_map(|&i| self.ready[i].as_ref())
                .map(|(c, r, _)| (self.rank(c, *r), c.clone(), *r))
                .min()
                .expect("every live host is ready");
            let (_, case, rep) = first;
            let group: Vec<usize> = live
                .into_iter()
                .filter(|&i| {
                    self.ready[i]
                        .as_ref()
                        .is_some_and(|(c, r, _)| *c == case && *r == rep)
                })
                .collect();
            for &i in &group {
                bars[i].set_message(format!(
                    "{}: fio on {} host(s) together",
                    hosts[i].name,
                    group.len()
                ));
            }
            let orders = match self.run_case(hosts, &group, &case, rep, store) {
                Ok(o) => o,
                Err(e) => {
                    let why = format!("{e:#}");
                    group
                        .iter()
                        .map(|_| Order::Abort { why: why.clone() })
                        .collect()
                }
            };
            for (&i, order) in group.iter().zip(orders) {
                self.ready[i] = None;
                let sent = self.orders[i].as_mut().map(|stdin| {
                    use std::io::Write;
                    writeln!(stdin, "{}", order.line()).and_then(|_| stdin.flush())
                });
                if !matches!(sent, Some(Ok(()))) {
                    unstored.push(format!(
                        "{}: case {case} repetition {rep}: its session took no order (it is ending)",
                        hosts[i].name
                    ));
                }
            }
        }
    }

    /// One case on `group` through fio's client/server; the order for each host, and the
    /// fleet's aggregate committed under the target `fleet`.
    fn run_case(
        &self,
        hosts: &[raidlab_fleet::Host],
        group: &[usize],
        case: &str,
        rep: u32,
        store: &mut Store,
    ) -> Result<Vec<Order>> {
        let dir = std::path::absolute(self.out.join(".fleet").join(format!("{case}-r{rep}")))?;
        let _ = std::fs::remove_dir_all(&dir);
        let mut parts = Vec::new();
        for &i in group {
            let (Some(server), Some((_, _, job))) = (&self.servers[i], &self.ready[i]) else {
                bail!("host {} has no fio server", hosts[i].name);
            };
            let log_dir = dir.join(&hosts[i].name);
            std::fs::create_dir_all(&log_dir)
                .with_context(|| format!("cannot create {}", log_dir.display()))?;
            let path = dir.join(format!("{}.fio", hosts[i].name));
            std::fs::write(&path, together::client_job(job, &log_dir))
                .with_context(|| format!("cannot write {}", path.display()))?;
            parts.push(Part {
                server: server.clone(),
                job: path,
                log_dir,
            });
        }
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let ran =
            together::run_clients(&parts, &dir.join("client.json")).map_err(anyhow::Error::msg)?;
        if let Some(agg) = &ran.aggregate {
            let r = aggregate(case, rep, agg, &ran, &parts, started)?;
            match store.commit_result(&r) {
                Ok(_) | Err(StoreError::ResultExists { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(ran.orders)
    }
}

/// The fleet's aggregate of a case run together: fio's sums with percentiles from the
/// hosts' merged histograms, the client command, and each host's server and clock.
fn aggregate(
    case: &str,
    rep: u32,
    json: &str,
    ran: &together::Together,
    parts: &[Part],
    started: i64,
) -> Result<raidlab_store::NewResult> {
    let mut details = serde_json::Map::new();
    details.insert(
        "fleet".into(),
        serde_json::json!({
            "mode": "together",
            "hosts": parts.iter().map(|p| serde_json::json!({
                "name": p.server.host,
                "fio_server": p.server.client_arg,
                "clock_offset_ms": (p.server.clock_offset_ms * 1000.0).round() / 1000.0,
                "clock_rtt_ms": (p.server.clock_rtt_ms * 1000.0).round() / 1000.0,
            })).collect::<Vec<_>>(),
            "percentiles": "merged from every host's json+ latency histogram",
        }),
    );
    let environment = raidlab_core::Environment {
        target: Some(raidlab_core::FLEET_AGGREGATE.into()),
        commands: vec![raidlab_core::CommandRun {
            phase: "fio".into(),
            command: ran.command.clone(),
            seconds: (ran.seconds * 1000.0).round() / 1000.0,
        }],
        details,
        ..Default::default()
    };
    // As a host's result arrives: fio's JSON parsed into figures on the way in.
    WireResult {
        case_id: case.to_string(),
        repetition: rep,
        raw_json: json.to_string(),
        logs: Vec::new(),
        environment: serde_json::to_value(&environment)?,
        started_unix: started,
        wall_ns: (ran.seconds * 1e9) as u64,
    }
    .into_new(raidlab_core::FLEET_AGGREGATE)
    .map_err(|e| anyhow::anyhow!("the fleet's aggregate: {e}"))
}

/// The programs the plan's cases run on a host besides fio.
fn tools(plan: &Plan) -> Vec<String> {
    use raidlab_core::{Engine, Filesystem, Level};
    let mut tools = std::collections::BTreeSet::new();
    for c in plan.cases() {
        let a = &c.array;
        if a.engine == Engine::Md && a.level != Level::Single {
            tools.insert("mdadm");
        }
        tools.insert(match (a.engine, a.filesystem) {
            (Engine::Btrfs, _) | (_, Filesystem::Btrfs) => "mkfs.btrfs",
            (_, Filesystem::Xfs) => "mkfs.xfs",
            (_, Filesystem::Ext4) => "mkfs.ext4",
            (_, Filesystem::None) => "wipefs",
        });
        tools.insert("wipefs");
    }
    tools.into_iter().map(String::from).collect()
}

/// Commit a host's result under `host.NAME`; `false` when the store already has it (a
/// replay on `--resume`).
fn commit(store: &mut Store, host: &str, r: WireResult) -> Result<bool> {
    let result = r
        .into_new(&raidlab_fleet::target_of(host))
        .map_err(|e| anyhow::anyhow!("host {host}: {e}"))?;
    match store.commit_result(&result) {
        Ok(_) => Ok(true),
        Err(StoreError::ResultExists { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `raidlab fleet-replay DIR`: every result a results directory holds, as wire events (a
/// fleet host's answer to `--resume`), then `finished`.
pub fn replay(dir: &Path) -> Result<()> {
    use std::io::Write;
    let store = Store::open(dir)?;
    let mut out = std::io::stdout().lock();
    for r in store.results()? {
        let raw = std::fs::read_to_string(store.raw_path(&r))
            .with_context(|| format!("cannot read {}", store.raw_path(&r).display()))?;
        let stem = r.raw_file.trim_end_matches(".json");
        let mut logs = Vec::new();
        let raw_dir = store
            .raw_path(&r)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        for e in std::fs::read_dir(&raw_dir)? {
            let name = e?.file_name().to_string_lossy().into_owned();
            if let Some(log) = name.strip_prefix(&format!("{stem}-")) {
                let text = std::fs::read_to_string(raw_dir.join(&name))?;
                logs.push((log.to_string(), text));
            }
        }
        let w = Wire::Result(Box::new(WireResult {
            case_id: r.case_id.0.clone(),
            repetition: r.repetition,
            raw_json: raw,
            logs,
            environment: serde_json::to_value(&r.environment)?,
            started_unix: r.started_unix,
            wall_ns: r.wall_ns,
        }));
        writeln!(out, "{}", w.line())?;
    }
    writeln!(out, "{}", Wire::Finished { error: None }.line())?;
    Ok(())
}

/// `raidlab cleanup --hosts HOSTS.toml`: each host's own `raidlab cleanup`, over ssh.
pub fn cleanup(path: &Path) -> Result<()> {
    let hosts = HostsFile::from_arg(path, &[])?;
    let mut failed = Vec::new();
    for h in &hosts.hosts {
        let ssh = Ssh::new(&h.ssh, hosts.ssh_config.clone());
        match session::cleanup(&ssh, h) {
            Ok(said) => {
                for line in said.lines() {
                    raidlab_backend::note!("{}: {line}", h.name);
                }
            }
            Err(e) => {
                raidlab_backend::note!("{}: {e}", h.name);
                failed.push(h.name.clone());
            }
        }
    }
    if !failed.is_empty() {
        bail!(
            "cleanup did not run on {}: reach them, then run raidlab cleanup --hosts {} again",
            failed.join(", "),
            path.display()
        );
    }
    Ok(())
}
