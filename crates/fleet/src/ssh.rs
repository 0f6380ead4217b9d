//! Reaching a host: OpenSSH's `ssh`, with the user's config, keys, agent and known_hosts.
//!
//! Host keys are always checked (`BatchMode=yes` makes an unknown key an error instead of
//! a question nobody is there to answer); a session that stops answering is given up
//! after 15 s of keep-alives, so a lost host ends its session instead of hanging it.

use std::path::PathBuf;
use std::process::Command;

/// How to reach one host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ssh {
    /// `user@host` or a `Host` of the ssh config.
    pub dest: String,
    pub port: Option<u16>,
    /// `ssh -F`.
    pub config: Option<PathBuf>,
}

impl Ssh {
    /// From a hosts file's `ssh = "user@host[:port]"`.
    pub fn new(ssh: &str, config: Option<PathBuf>) -> Ssh {
        let (dest, port) = match ssh.rsplit_once(':') {
            Some((d, p)) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
                (d.to_string(), p.parse().ok())
            }
            _ => (ssh.to_string(), None),
        };
        Ssh { dest, port, config }
    }

    /// `ssh … DEST -- REMOTE`: `remote` is one shell command line on the host.
    pub fn command(&self, remote: &str) -> Command {
        let mut c = Command::new("ssh");
        if let Some(cfg) = &self.config {
            c.arg("-F").arg(cfg);
        }
        if let Some(p) = self.port {
            c.arg("-p").arg(p.to_string());
        }
        c.args([
            "-o",
            "BatchMode=yes",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-T",
        ]);
        c.arg(&self.dest).arg("--").arg(remote);
        c
    }
}

/// `s` as one word for a POSIX shell.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_and_quoting() {
        let s = Ssh::new("root@127.0.0.1:2201", None);
        assert_eq!((s.dest.as_str(), s.port), ("root@127.0.0.1", Some(2201)));
        assert_eq!(Ssh::new("fleet-a", None).port, None);
        let args: Vec<String> = s
            .command("true")
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(args.contains(&"BatchMode=yes".to_string()), "{args:?}");
        assert!(
            !args.iter().any(|a| a.contains("StrictHostKeyChecking")),
            "host keys are checked"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
