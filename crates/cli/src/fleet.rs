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
use raidlab_core::{Plan, TargetKind};
use raidlab_fleet::session::{self, Update};
use raidlab_fleet::{HostsFile, Ssh, Wire, WireResult};
use raidlab_store::{Store, StoreError};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

pub fn run(a: RunArgs) -> Result<()> {
    let hosts_path = a.hosts.clone().expect("called with --hosts");
    let plan_text = std::fs::read_to_string(&a.plan)
        .with_context(|| format!("cannot read {}", a.plan.display()))?;
    // The plan may leave its devices to the hosts file (and then need not name a count).
    let named: Vec<String> = Plan::load(&a.plan)
        .map(|p| p.disks.devices.clone())
        .unwrap_or_default();
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
    let binary = std::env::current_exe().context("cannot find this raidlab binary to copy")?;
    let opts = session::RunOptions {
        resume: a.resume,
        baseline: format!("{}s", a.baseline.get() / 1_000_000_000),
        run: raidlab_fleet::run_id(&out, &plan.name),
        tools: tools(&plan),
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
                Update::Done => pb.finish_with_message(format!("{name}: done")),
                Update::Lost(why) => {
                    pb.abandon_with_message(format!("{name}: lost — {why}"));
                    lost.push((name.clone(), why));
                }
            }
        }
        Ok(())
    })?;
    overall.finish_and_clear();
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
