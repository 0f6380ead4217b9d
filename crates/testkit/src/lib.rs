//! What raidlab's tests share, so that each rule is written once: a test that needs
//! something this machine may lack (fio, Chromium, root and loop devices, qemu) skips
//! locally with the reason printed and fails in CI (`CI=true`); the `raidlab` binary as a
//! user runs it, from the repository root; tolerances as the figures' tests state them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Tests of one binary run in parallel; the ones that measure real time on the machine
/// (VMs on throttled disks) must not compete for its cores with anything else.
static MACHINE: RwLock<()> = RwLock::new(());

/// For a test that may share the machine with others (hold it for the whole test).
pub fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

/// For a test whose timings must not compete with any other test's.
pub fn exclusive() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

/// Whether this run is CI's (`CI=true`), where nothing may be skipped.
pub fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// `true` when `available`; otherwise skip — print why and return `false` — or, in CI,
/// fail with the same reason, so that a missing requirement never passes unnoticed.
pub fn require(available: bool, why: impl FnOnce() -> String) -> bool {
    if available {
        return true;
    }
    let why = why();
    if in_ci() {
        panic!("required in CI: {why}");
    }
    eprintln!("skipping: {why}");
    false
}

/// Whether `program ARG…` runs and exits 0 (`--version` is the usual probe).
pub fn runs(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `name` is a command on the PATH or in the system directories (`/usr/sbin`,
/// `/sbin`: mdadm, losetup, mkfs.* live there, and a user's PATH may lack them).
pub fn on_path(name: &str) -> bool {
    runs(
        "sh",
        &[
            "-c",
            &format!("PATH=$PATH:/usr/sbin:/sbin command -v {name}"),
        ],
    )
}

/// fio, for the tests that run it for real.
pub fn require_fio() -> bool {
    require(runs("fio", &["--version"]), || {
        "fio is not installed (apt-get install fio)".into()
    })
}

/// The repository's root (plans in `examples/` are named from there).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `raidlab` binary of this build, started in the repository's root.
pub fn raidlab() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("raidlab").expect("the raidlab binary is built");
    c.current_dir(repo_root());
    c
}

/// Whether `actual` lies within `fraction` (0.1 = ±10 %) of `expected`.
pub fn within(actual: f64, expected: f64, fraction: f64) -> bool {
    (actual - expected).abs() <= fraction * expected.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_symmetric_and_relative() {
        assert!(within(110.0, 100.0, 0.1));
        assert!(within(90.0, 100.0, 0.1));
        assert!(!within(111.0, 100.0, 0.1));
        assert!(!within(-100.0, 100.0, 0.5));
    }

    #[test]
    fn a_present_requirement_passes_and_an_absent_one_skips_or_fails() {
        assert!(require(true, || unreachable!()));
        let absent = std::panic::catch_unwind(|| require(false, || "nothing".into()));
        // In CI the absence is a failure; elsewhere a skip.
        assert_eq!(absent.is_err(), in_ci());
        assert!(runs("sh", &["-c", "true"]));
        assert!(!runs("sh", &["-c", "false"]));
    }
}
