//! Running one command of a case: in its own process group (a Ctrl-C at the terminal
//! reaches raidlab, which decides what to stop), killed with raidlab (PR_SET_PDEATHSIG),
//! its output kept in a file whose tail goes into the error when it fails.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Start `argv` with its stdout and stderr appended to `log`.
pub fn spawn(argv: &[String], log: &Path) -> Result<Child, String> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; it only sets a flag of the child.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| {
        format!(
            "cannot run {}: {e} — is it installed? (Debian: fio, mdadm, btrfs-progs, xfsprogs, e2fsprogs, util-linux)",
            argv[0]
        )
    })
}

/// Wait for a child. When `stop` turns true and `interruptible`, send it SIGTERM (it is
/// ours: we started it and hold its handle) and keep waiting. Returns the status and
/// whether it was stopped.
pub fn wait(
    child: &mut Child,
    stop: &AtomicBool,
    interruptible: bool,
) -> Result<(ExitStatus, bool), String> {
    wait_with(child, stop, interruptible, &mut || {})
}

/// As [`wait`], calling `tick` about once a second (for a progress line).
pub fn wait_with(
    child: &mut Child,
    stop: &AtomicBool,
    interruptible: bool,
    tick: &mut dyn FnMut(),
) -> Result<(ExitStatus, bool), String> {
    let mut stopped = false;
    let mut n = 0u32;
    loop {
        n += 1;
        if n.is_multiple_of(50) {
            tick();
        }
        match child.try_wait() {
            Ok(Some(status)) => return Ok((status, stopped)),
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for a command: {e}")),
        }
        if interruptible && !stopped && stop.load(Ordering::SeqCst) {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            stopped = true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first three and the last lines of a log, `lines` in all, for an error message (a
/// tool's own error often comes first, before a usage text: mkfs.xfs).
pub fn tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let v: Vec<&str> = text.lines().collect();
    if v.len() <= lines || lines < 6 {
        return v[v.len().saturating_sub(lines)..].join("\n    ");
    }
    let mut out: Vec<&str> = v[..3].to_vec();
    out.push("…");
    out.extend(&v[v.len() - (lines - 3)..]);
    out.join("\n    ")
}
