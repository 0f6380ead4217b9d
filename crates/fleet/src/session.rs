//! One host's part of a fleet run, over ssh: check that it can run this binary, install
//! the binary and the plan, replay what it already holds, run the plan, and hand every
//! event to the controller as it comes.

use crate::hosts::Host;
use crate::ssh::{quote, Ssh};
use crate::wire::Wire;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;

/// What happened on a host, for the controller.
#[derive(Debug)]
pub enum Update {
    /// A line the host's raidlab sent.
    Wire(Wire),
    /// The host cannot go on (unreachable, cannot run the binary, its run failed, its
    /// session ended); what it sent before stays.
    Lost(String),
    /// The host's part is done.
    Done,
    /// `[run] fleet = "together"`: the host's fio server is up, its clock measured.
    Server(crate::together::Server),
    /// `[run] fleet = "together"`: where the host's raidlab reads its orders.
    Orders(std::process::ChildStdin),
}

/// The options of a host's run, as the controller was given them.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub resume: bool,
    /// `--baseline` (e.g. `10s`, `0`).
    pub baseline: String,
    /// Which run this is: the host keeps each controller's results directory apart, in
    /// `workdir/runs/RUN` (the same on `--resume`).
    pub run: String,
    /// The programs the plan runs on each host besides fio (`mdadm`, `mkfs.xfs`, …).
    pub tools: Vec<String>,
    /// `[run] fleet = "together"`: start a fio server on the host and leave each case's
    /// measured fio to the controller.
    pub together: bool,
}

pub(crate) fn run_ssh(ssh: &Ssh, remote: &str, stdin: Option<&[u8]>) -> Result<String, String> {
    let mut c = ssh.command(remote);
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e} (install OpenSSH's client)"))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(bytes)
            .map_err(|e| format!("ssh stopped reading: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(tail(&String::from_utf8_lossy(&out.stderr)))
    }
}

/// The last lines of a text, for an error message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(4)..].join(" / ")
}

/// Whether the host can run this very binary — the same architecture, and a glibc when
/// the binary needs one — and has fio and the `tools` the plan needs (mdadm, mkfs.btrfs,
/// mkfs.xfs …), each named when missing; its fio's version.
pub fn probe(ssh: &Ssh, tools: &[String]) -> Result<String, String> {
    let checks: String = tools
        .iter()
        .filter(|t| {
            t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
        .map(|t| format!("; command -v {t} >/dev/null || echo missing:{t}"))
        .collect();
    let out = run_ssh(
        ssh,
        &format!("uname -m; (ldd --version 2>&1 || echo no-ldd) | head -n1; (fio --version 2>/dev/null || echo no-fio){checks}"),
        None,
    )
    .map_err(|e| format!("unreachable over ssh: {e}"))?;
    judge(&out, std::env::consts::ARCH, cfg!(target_env = "gnu"))
}

/// What the probe's answer says: the fio version, or why this binary (built for `ours`,
/// needing a glibc when `glibc`) cannot run there.
fn judge(out: &str, ours: &str, glibc: bool) -> Result<String, String> {
    let mut lines = out.lines();
    let arch = lines.next().unwrap_or("").trim();
    if arch != ours {
        return Err(format!(
            "its machine is {arch}, this raidlab is built for {ours}: build one for {arch} (cargo build --release --target {arch}-unknown-linux-musl) and run the fleet from it"
        ));
    }
    let libc = lines.next().unwrap_or("").to_ascii_lowercase();
    if glibc && (libc.contains("musl") || libc.contains("no-ldd")) {
        return Err(format!(
            "it has no glibc ({}), which this raidlab needs: run the fleet from a static build (cargo build --release --target {ours}-unknown-linux-musl)",
            libc.trim()
        ));
    }
    let fio = lines.next().unwrap_or("").trim().to_string();
    if fio.contains("no-fio") {
        return Err("it has no fio: install it there (apt-get install fio)".into());
    }
    let missing: Vec<&str> = lines
        .filter_map(|l| l.trim().strip_prefix("missing:"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the plan needs {} there, which it lacks: install them from its distribution (mdadm, btrfs-progs, xfsprogs, e2fsprogs)",
            missing.join(", ")
        ));
    }
    Ok(fio)
}

/// The plan as this host runs it: the controller's plan with the host's devices.
pub fn plan_for(plan_text: &str, host: &Host) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = plan_text
        .parse()
        .map_err(|e| format!("the plan is not TOML: {e}"))?;
    let disks = doc
        .entry("disks")
        .or_insert(toml_edit::table())
        .as_table_mut()
        .ok_or("the plan's disks is not a table")?;
    let mut devices = toml_edit::Array::new();
    for d in &host.devices {
        devices.push(d.as_str());
    }
    disks.insert("devices", toml_edit::value(devices));
    Ok(doc.to_string())
}

/// Copy this binary and the host's plan into its work directory: the binary only when the
/// host's differs (`sha256sum`), and by a rename, so a raidlab still running there keeps
/// its file.
pub fn install(ssh: &Ssh, host: &Host, binary: &Path, run: &str, plan: &str) -> Result<(), String> {
    use sha2::Digest;
    let w = quote(&host.workdir);
    let bytes =
        std::fs::read(binary).map_err(|e| format!("cannot read {}: {e}", binary.display()))?;
    let ours: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let theirs = run_ssh(
        ssh,
        &format!("sha256sum {w}/raidlab 2>/dev/null || true"),
        None,
    )
    .unwrap_or_default();
    if theirs.split_whitespace().next() != Some(ours.as_str()) {
        run_ssh(
            ssh,
            &format!("mkdir -p {w} && cat > {w}/raidlab.new && chmod 755 {w}/raidlab.new && mv -f {w}/raidlab.new {w}/raidlab"),
            Some(&bytes),
        )
        .map_err(|e| format!("cannot install raidlab in {}: {e}", host.workdir))?;
    }
    let dir = run_dir(host, run);
    run_ssh(
        ssh,
        &format!("mkdir -p {dir} && cat > {dir}/plan.toml"),
        Some(plan.as_bytes()),
    )
    .map_err(|e| format!("cannot write the plan in {}: {e}", host.workdir))?;
    Ok(())
}

/// Where a run keeps its files on a host, quoted for its shell: `workdir/runs/RUN`.
pub fn run_dir(host: &Host, run: &str) -> String {
    format!("{}/runs/{}", quote(&host.workdir), quote(run))
}

fn env_prefix(host: &Host) -> String {
    host.state_dir
        .as_ref()
        .map(|s| format!("RAIDLAB_STATE_DIR={} ", quote(s)))
        .unwrap_or_default()
}

/// Read a session's standard output line by line, handing each event on (what is not an
/// event is passed on as a message); an error unless it ended with `finished` and no error.
/// With `orders`, the session's standard input goes to the controller ([`Update::Orders`]).
fn stream(ssh: &Ssh, remote: &str, orders: bool, send: &dyn Fn(Update)) -> Result<(), String> {
    let mut child = ssh
        .command(remote)
        .stdin(if orders {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ssh: {e}"))?;
    if let Some(stdin) = child.stdin.take() {
        send(Update::Orders(stdin));
    }
    let mut stderr = child.stderr.take().expect("piped");
    let errors = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut finished: Option<Option<String>> = None;
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let Ok(line) = line else { break };
        match serde_json::from_str::<Wire>(&line) {
            Ok(Wire::Finished { error }) => finished = Some(error),
            Ok(w) => send(Update::Wire(w)),
            Err(_) if line.trim().is_empty() => {}
            Err(_) => send(Update::Wire(Wire::Message { text: line })),
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let said = tail(&errors.join().unwrap_or_default());
    match finished {
        Some(None) if status.success() => Ok(()),
        Some(Some(e)) => Err(e),
        _ => Err(format!(
            "the session ended ({status}){}",
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        )),
    }
}

/// A host's whole part: probe, install, replay (when resuming), run; every event goes to
/// `send`, ending with `Done` or `Lost`.
pub fn run_host(
    ssh: &Ssh,
    host: &Host,
    binary: &Path,
    plan: &str,
    opts: &RunOptions,
    send: &dyn Fn(Update),
) {
    let result = (|| -> Result<(), String> {
        let fio = probe(ssh, &opts.tools)?;
        if let Some(ours) = opts.together.then(raidlab_fio::fio_version).flatten() {
            // fio's client and servers speak one protocol version: the same fio everywhere.
            if fio != ours {
                return Err(format!(
                    "it has {fio} and this machine {ours}: fio's client/server (fleet = \"together\") needs the same fio version on every host and here; install one version everywhere, or run the fleet independently"
                ));
            }
        }
        install(ssh, host, binary, &opts.run, plan)?;
        let dir = run_dir(host, &opts.run);
        if opts.resume {
            // What the host holds and the controller may not have received.
            stream(
                ssh,
                &format!("cd {dir} && if [ -e results/raidlab.sqlite ]; then ../../raidlab fleet-replay results; else echo '{{\"event\":\"finished\",\"error\":null}}'; fi"),
                false,
                send,
            )?;
        }
        let destroy = if host.destroy_data_on.is_empty() {
            String::new()
        } else {
            format!(
                " --destroy-data-on {}",
                quote(&host.destroy_data_on.join(","))
            )
        };
        let resume = if opts.resume {
            "$( [ -e results/raidlab.sqlite ] && echo --resume )"
        } else {
            ""
        };
        let together = if opts.together {
            send(Update::Server(crate::together::start_server(
                ssh, host, &opts.run,
            )?));
            " --fio-from-controller"
        } else {
            ""
        };
        stream(
            ssh,
            &format!(
                "cd {dir} && echo $$ > raidlab.pid && exec env {}../../raidlab run plan.toml --target host --out results --events --baseline {} {resume}{destroy}{together}",
                env_prefix(host),
                quote(&opts.baseline)
            ),
            opts.together,
            send,
        )?;
        Ok(())
    })();
    send(match result {
        Ok(()) => Update::Done,
        Err(e) => Update::Lost(e),
    });
}

/// `raidlab cleanup` on a host (its state directory's journals), its output; first the
/// fio servers that together runs left there (each by the id in its run's pid file).
pub fn cleanup(ssh: &Ssh, host: &Host) -> Result<String, String> {
    let w = quote(&host.workdir);
    let servers = format!(
        "for d in {w}/runs/*/; do ( {} ); done",
        crate::together::stop_server_command("\"$d\"")
    );
    run_ssh(
        ssh,
        &format!("{servers}; if cd {w} 2>/dev/null && [ -x ./raidlab ]; then exec env {}./raidlab cleanup; else echo 'no raidlab installed there: nothing to clean up'; fi", env_prefix(host)),
        None,
    )
}

/// Stop the fio server a together run started on a host; what it said.
pub fn stop_server(ssh: &Ssh, host: &Host, run: &str) -> Result<String, String> {
    run_ssh(
        ssh,
        &crate::together::stop_server_command(&run_dir(host, run)),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::judge;

    /// The probe's decisions on the answers real hosts give (`uname -m`, the first line
    /// of `ldd --version`, `fio --version`, the missing tools).
    #[test]
    fn hosts_that_cannot_run_this_binary_are_refused_with_the_fix() {
        let debian = "x86_64\nldd (Debian GLIBC 2.36-9+deb12u9) 2.36\nfio-3.33\n";
        assert_eq!(judge(debian, "x86_64", true).unwrap(), "fio-3.33");
        let arm = judge(&debian.replace("x86_64", "aarch64"), "x86_64", true).unwrap_err();
        assert!(
            arm.contains("aarch64") && arm.contains("aarch64-unknown-linux-musl"),
            "{arm}"
        );
        // Alpine: ldd is musl's, which names itself on standard error.
        let alpine = "x86_64\nmusl libc (x86_64)\nfio-3.36\n";
        let e = judge(alpine, "x86_64", true).unwrap_err();
        assert!(
            e.contains("no glibc") && e.contains("x86_64-unknown-linux-musl"),
            "{e}"
        );
        assert_eq!(
            judge(alpine, "x86_64", false).unwrap(),
            "fio-3.36",
            "a static build runs"
        );
        let e = judge("x86_64\nldd (GNU libc) 2.39\nno-fio\n", "x86_64", true).unwrap_err();
        assert!(e.contains("no fio"), "{e}");
        let e = judge(
            &format!("{debian}missing:mdadm\nmissing:mkfs.xfs\n"),
            "x86_64",
            true,
        )
        .unwrap_err();
        assert!(e.contains("mdadm, mkfs.xfs"), "{e}");
    }
}
