//! `[run] fleet = "together"`: every host runs each case at the same moment.
//!
//! Each host still builds, lays out and tears down its own arrays with its own raidlab,
//! under its guards and journal; only the measured fio is started elsewhere. When a host's
//! case is ready it says so ([`Wire::Ready`], with its job file) and waits; once every
//! host still running is ready, the controller starts all their fio jobs with one
//! `fio --client=A jobA --client=B jobB …` against the `fio --server` it started on each
//! host over ssh, takes the output apart per host (`raidlab_fio::clients`) and hands each
//! host its own JSON and logs ([`Order::Fio`] on the session's standard input), which the
//! host then stores as if its fio had written them. The fleet's aggregate — IOPS and
//! bandwidth summed by fio, percentiles from the hosts' histograms merged — is stored by
//! the controller as the target `fleet`.

use crate::hosts::Host;
use crate::ssh::{quote, Ssh};
use crate::wire::Wire;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// What the controller tells a host's raidlab, one JSON object per line on its standard
/// input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "order", rename_all = "snake_case")]
pub enum Order {
    /// fio ran the ready case on this host: its JSON and logs (`raidlab_iops.log`, …),
    /// as fio on the host would have written them.
    Fio {
        fio_json: String,
        logs: Vec<(String, String)>,
    },
    /// fio could not run the case for this host: the case fails with this reason.
    Abort { why: String },
}

impl Order {
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("an order serialises")
    }
}

/// The host's side: a [`raidlab_host::FioBy`] that asks the controller (a `--events` run
/// with `--fio-from-controller`). It reads orders from standard input on a thread of its
/// own, so a case waiting for the controller still sees a stop signal.
#[derive(Debug)]
pub struct FromController {
    orders: Mutex<mpsc::Receiver<Order>>,
}

impl FromController {
    /// Start reading standard input; orders that do not parse are skipped with a message
    /// (on standard error, which the controller shows when the session fails).
    pub fn from_stdin() -> FromController {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<Order>(&line) {
                    Ok(o) => {
                        if tx.send(o).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!(
                        "raidlab: an order from the controller does not read ({e}): {line}"
                    ),
                }
            }
        });
        FromController {
            orders: Mutex::new(rx),
        }
    }
}

impl raidlab_host::FioBy for FromController {
    fn run(
        &self,
        fio: &raidlab_host::Handoff<'_>,
        stop: &std::sync::atomic::AtomicBool,
    ) -> Result<bool, String> {
        let job = std::fs::read_to_string(fio.job)
            .map_err(|e| format!("cannot read {}: {e}", fio.job.display()))?;
        Wire::Ready {
            case_id: fio.case.id.0.clone(),
            repetition: fio.repetition,
            job,
        }
        .emit();
        let orders = self.orders.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match orders.recv_timeout(Duration::from_millis(250)) {
                Ok(Order::Fio { fio_json, logs }) => {
                    std::fs::write(fio.result, fio_json)
                        .map_err(|e| format!("cannot write {}: {e}", fio.result.display()))?;
                    for (name, text) in logs {
                        if name.contains('/') || name.starts_with('.') {
                            return Err(format!("the controller sent a log named {name:?}"));
                        }
                        let p = fio.work.join(&name);
                        std::fs::write(&p, text)
                            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
                    }
                    return Ok(true);
                }
                Ok(Order::Abort { why }) => {
                    return Err(format!(
                        "the fleet's controller could not run fio here: {why}"
                    ))
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        return Ok(false);
                    }
                }
                // The controller is gone: as a stop, the case is torn down.
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(false),
            }
        }
    }
}

/// A host's fio server as the controller reaches it.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    pub host: String,
    /// `--client=` for it: `ADDRESS,PORT` (`ip6:` before an IPv6 address).
    pub client_arg: String,
    pub address: String,
    pub port: u16,
    /// The host's clock minus the controller's, ms (positive: the host is ahead), and the
    /// round trip it was measured over (the offset is within half of it).
    pub clock_offset_ms: f64,
    pub clock_rtt_ms: f64,
}

fn server_arg(address: &str, port: u16) -> String {
    if address.contains(':') {
        format!("ip6:{address},{port}")
    } else {
        format!("{address},{port}")
    }
}

/// The shell line that stops the fio server a run started on a host: by the process id
/// its pid file holds, and only while that process is still a `fio --server`.
pub fn stop_server_command(dir: &str) -> String {
    format!(
        "cd {dir} 2>/dev/null || exit 0; if [ -s fio-server.pid ]; then pid=$(cat fio-server.pid); if tr '\\0' ' ' < /proc/$pid/cmdline 2>/dev/null | grep -q -- '--server='; then kill $pid && echo \"stopped fio --server (pid $pid)\"; fi; rm -f fio-server.pid; fi"
    )
}

/// Start the host's `fio --server` on its address and port (stopping one this run left
/// there first), wait until it accepts connections, and measure the host's clock.
pub fn start_server(ssh: &Ssh, host: &Host, run: &str) -> Result<Server, String> {
    let dir = crate::session::run_dir(host, run);
    let arg = server_arg(&host.fio_address, host.fio_port);
    let start = format!(
        "{stop}; cd {dir} && fio --server={server} --daemonize=\"$PWD/fio-server.pid\" </dev/null >fio-server.log 2>&1; for i in 1 2 3 4 5 6 7 8 9 10; do [ -s fio-server.pid ] && break; sleep 0.1; done; cat fio-server.pid 2>/dev/null || (cat fio-server.log; exit 1)",
        stop = stop_server_command(&dir),
        server = quote(&arg),
    );
    crate::session::run_ssh(ssh, &start, None)
        .map_err(|e| format!("cannot start fio --server={arg} there: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr = resolve(&host.fio_address, host.fio_port)?;
    loop {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => {
                return Err(format!(
                    "its fio --server={arg} does not answer on {addr}: {e}. Open TCP port {} from this machine to it (docs/fleet.md, firewalls)",
                    host.fio_port
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
    let (clock_offset_ms, clock_rtt_ms) = clock_offset(ssh)?;
    Ok(Server {
        host: host.name.clone(),
        client_arg: arg,
        address: host.fio_address.clone(),
        port: host.fio_port,
        clock_offset_ms,
        clock_rtt_ms,
    })
}

fn resolve(address: &str, port: u16) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    (address, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve fio_address {address:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("fio_address {address:?} resolves to no address"))
}

fn unix_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// The host's clock against this one's, over one ssh session (its set-up excluded): the
/// host answers each line with `date +%s%N`; of five exchanges the one with the shortest
/// round trip counts, its reading taken to be at the middle of it.
pub fn clock_offset(ssh: &Ssh) -> Result<(f64, f64), String> {
    let mut child = ssh
        .command("while read -r _; do date +%s%N; done")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut best: Option<(f64, f64)> = None;
    for _ in 0..5 {
        let t0 = unix_ns();
        if writeln!(stdin, "t").and_then(|_| stdin.flush()).is_err() {
            break;
        }
        let Some(Ok(line)) = lines.next() else { break };
        let t1 = unix_ns();
        let Ok(remote) = line.trim().parse::<i128>() else {
            break;
        };
        let rtt = (t1 - t0) as f64 / 1e6;
        let offset = (remote - (t0 + t1) / 2) as f64 / 1e6;
        if best.is_none_or(|b| rtt < b.1) {
            best = Some((offset, rtt));
        }
    }
    drop(stdin);
    let _ = child.wait();
    best.ok_or_else(|| "cannot read its clock (date +%s%N) over ssh".into())
}

/// A host's job file for the controller's `fio --client`: the host's own, with its
/// per-second logs sent to `log_dir` on this machine (fio's client writes the logs the
/// servers send back, as `NAME.log.HOSTNAME`).
pub fn client_job(job: &str, log_dir: &Path) -> String {
    let stem = log_dir.join("raidlab");
    job.lines()
        .map(|l| {
            let key = l.split('=').next().unwrap_or("").trim();
            if matches!(key, "write_iops_log" | "write_lat_log" | "write_bw_log") {
                format!("{key}={}", stem.display())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// One host's part in a case run together.
#[derive(Debug, Clone)]
pub struct Part {
    pub server: Server,
    /// Its job file on this machine.
    pub job: PathBuf,
    /// Where fio's client writes its logs.
    pub log_dir: PathBuf,
}

/// What one `fio --client` run gave.
#[derive(Debug)]
pub struct Together {
    /// The command line, for the record.
    pub command: String,
    pub seconds: f64,
    /// Per part, in order: the order for that host.
    pub orders: Vec<Order>,
    /// The fleet's aggregate fio JSON (two hosts or more answered).
    pub aggregate: Option<String>,
}

/// Run every part's job at once with one `fio --client` run, its JSON into `output`.
pub fn run_clients(parts: &[Part], output: &Path) -> Result<Together, String> {
    let mut argv: Vec<String> = vec![
        "fio".into(),
        "--output-format=json+".into(),
        format!("--output={}", output.display()),
    ];
    for p in parts {
        argv.push(format!("--client={}", p.server.client_arg));
        argv.push(p.job.display().to_string());
    }
    let command = argv.join(" ");
    let t0 = Instant::now();
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run fio here (the controller): {e}; install fio"))?;
    let seconds = t0.elapsed().as_secs_f64();
    // What fio said on standard error, as the end of an error message.
    let said = match String::from_utf8_lossy(&out.stderr).trim() {
        "" => String::new(),
        text => format!(": {text}"),
    };
    let text = std::fs::read_to_string(output).unwrap_or_default();
    let split = raidlab_fio::clients::split(&text)
        .map_err(|e| format!("`{command}` gave no result ({}): {e}{said}", out.status))?;
    let orders = parts
        .iter()
        .map(|p| {
            let exact = split
                .hosts
                .iter()
                .find(|(c, _)| c.port == p.server.port && c.hostname == p.server.address);
            let by_port = || {
                let mut m = split.hosts.iter().filter(|(c, _)| c.port == p.server.port);
                match (m.next(), m.next()) {
                    (Some(one), None) => Some(one),
                    _ => None,
                }
            };
            match exact.or_else(by_port) {
                Some((_, doc)) => Order::Fio {
                    fio_json: serde_json::to_string_pretty(doc).expect("JSON"),
                    logs: logs_in(&p.log_dir),
                },
                None => Order::Abort {
                    why: format!(
                        "`{command}` returned nothing from {} ({}){said}",
                        p.server.client_arg, out.status
                    ),
                },
            }
        })
        .collect();
    Ok(Together {
        command,
        seconds,
        orders,
        aggregate: split
            .aggregate
            .map(|a| serde_json::to_string_pretty(&a).expect("JSON")),
    })
}

/// The logs fio's client wrote into `dir` (`raidlab_iops.log.HOST` …), by the names fio
/// on the host would have given them (`raidlab_iops.log`).
fn logs_in(dir: &Path) -> Vec<(String, String)> {
    let mut logs: Vec<(String, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let i = name.find(".log")?;
            let text = std::fs::read_to_string(e.path()).ok()?;
            Some((name[..i + 4].to_string(), text))
        })
        .collect();
    logs.sort();
    logs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_read_back_and_job_logs_are_sent_home() {
        for o in [
            Order::Fio {
                fio_json: "{\"jobs\": []}".into(),
                logs: vec![("raidlab_iops.log".into(), "1000, 5, 0, 0, 0\n".into())],
            },
            Order::Abort { why: "gone".into() },
        ] {
            assert_eq!(serde_json::from_str::<Order>(&o.line()).unwrap(), o);
        }
        let job = "[global]\nbs=4k\nwrite_iops_log=/var/tmp/r/.host/c-r1/raidlab\nwrite_lat_log=/x/raidlab\n[c]\nfilename=/mnt/t\n";
        let j = client_job(job, Path::new("/home/me/out/.fleet/c-r1/a"));
        assert!(
            j.contains("write_iops_log=/home/me/out/.fleet/c-r1/a/raidlab\n"),
            "{j}"
        );
        assert!(
            j.contains("write_lat_log=/home/me/out/.fleet/c-r1/a/raidlab\n"),
            "{j}"
        );
        assert!(
            j.contains("filename=/mnt/t\n") && !j.contains("/var/tmp"),
            "{j}"
        );
        assert_eq!(server_arg("10.0.0.5", 8765), "10.0.0.5,8765");
        assert_eq!(server_arg("fd00::5", 9000), "ip6:fd00::5,9000");
    }
}
