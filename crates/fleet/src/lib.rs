//! Fleets: one plan run on many hosts, each by its own raidlab over OpenSSH.
//!
//! raidlab brings no agent of its own: the controller copies its own binary to each host
//! over `ssh` (the user's ssh config, keys, agent and known_hosts; host keys are always
//! checked), runs the plan there on the host target — under that host's guards, journal
//! and cleanup, exactly as a local host run — and reads JSON-lines events from the
//! session's standard output ([`wire`]): progress, and each result as soon as the remote
//! store committed it, which the controller commits into its own store with the host in
//! the target's name (`host.NAME`). A host lost mid-run does not stop the others; what it
//! finished is kept, and `--resume` asks it to replay its results before it goes on.

pub mod hosts;
pub mod session;
pub mod ssh;
pub mod together;
pub mod wire;

pub use hosts::{Host, HostsError, HostsFile};
pub use ssh::Ssh;
pub use wire::{Wire, WireResult};

/// The target name a host's results are stored under: `host.NAME`.
pub fn target_of(host: &str) -> String {
    format!("host.{host}")
}

/// The name a host keeps a controller's run under: the plan's name and a hash of the
/// controller's absolute results directory, so two runs never share a host's results and
/// `--resume` finds its own.
pub fn run_id(out: &std::path::Path, plan: &str) -> String {
    use sha2::Digest;
    let abs = std::path::absolute(out).unwrap_or_else(|_| out.to_path_buf());
    let digest = sha2::Sha256::digest(abs.to_string_lossy().as_bytes());
    let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
    let safe: String = plan
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    format!("{safe}-{hex}")
}

/// The host a stored target names (`host.a` → `a`), if it is a fleet host's.
pub fn host_of(target: &str) -> Option<&str> {
    target.strip_prefix("host.")
}
