//! The hosts file: who is in the fleet and how to reach each one.
//!
//! ```toml
//! ssh_config = "fleet_ssh_config"   # optional: `ssh -F` (relative to this file)
//!
//! [[hosts]]
//! name = "a"                        # letters, digits, `_`: the results' `host.a`
//! ssh = "root@10.0.0.5:22"          # an ssh destination, or a Host of the ssh config
//! devices = ["/dev/sdb", "/dev/sdc"]
//! workdir = "/var/tmp/raidlab-fleet" # where the binary, the plan and the results live
//! state_dir = "/var/lib/raidlab"     # the remote RAIDLAB_STATE_DIR (optional)
//! destroy_data_on = []               # serials, as `run --destroy-data-on`
//! fio_address = "10.0.0.5"           # [run] fleet = "together": where its fio --server
//! fio_port = 8765                    # listens (default: the ssh host, fio's port)
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use toml_edit::{ImDocument, Item, Value};

/// One host of the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub name: String,
    /// `user@host[:port]` or a `Host` of the ssh config.
    pub ssh: String,
    /// The plan's `[disks] devices` on this host.
    pub devices: Vec<String>,
    pub workdir: String,
    pub state_dir: Option<String>,
    pub destroy_data_on: Vec<String>,
    /// Where the host's `fio --server` listens and the controller's `fio --client` goes
    /// (`[run] fleet = "together"`): the ssh destination's host unless given.
    pub fio_address: String,
    pub fio_port: u16,
}

/// fio's own server port.
pub const FIO_PORT: u16 = 8765;

/// The host part of an ssh destination: `root@10.0.0.5:2222` → `10.0.0.5`.
fn host_part(dest: &str) -> &str {
    let host = dest.rsplit('@').next().unwrap_or(dest);
    match host.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// A parsed hosts file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsFile {
    pub path: PathBuf,
    /// `ssh -F` for every connection, resolved against the file's directory.
    pub ssh_config: Option<PathBuf>,
    pub hosts: Vec<Host>,
}

/// A mistake in the hosts file, with where and what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}{}: {field}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct HostsError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub field: String,
    pub message: String,
}

/// The default remote directory of a host's binary, plan and results.
pub const DEFAULT_WORKDIR: &str = "/var/tmp/raidlab-fleet";

impl HostsFile {
    /// `--hosts h1,root@h2:2222`: hosts named by their ssh destinations, each with the same
    /// `devices` (the plan's) and the defaults of everything else; a host's name is its
    /// destination's host part in letters, digits and `_` (`10.0.0.5` → `10_0_0_5`).
    pub fn from_destinations(list: &str, devices: &[String]) -> Result<HostsFile, HostsError> {
        let err = |message: String| HostsError {
            file: PathBuf::from("--hosts"),
            line: None,
            field: "--hosts".into(),
            message,
        };
        let mut hosts: Vec<Host> = Vec::new();
        for dest in list.split(',').map(str::trim).filter(|d| !d.is_empty()) {
            if dest.starts_with('-') || dest.contains(char::is_whitespace) {
                return Err(err(format!(
                    "{dest:?} is no ssh destination: user@host[:port]"
                )));
            }
            let host = host_part(dest);
            let mut name: String = host
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            let base = name.clone();
            let mut n = 2;
            while hosts.iter().any(|h| h.name == name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            hosts.push(Host {
                name,
                ssh: dest.to_string(),
                devices: devices.to_vec(),
                workdir: DEFAULT_WORKDIR.into(),
                state_dir: None,
                destroy_data_on: Vec::new(),
                fio_address: host.to_string(),
                fio_port: FIO_PORT,
            });
        }
        if hosts.is_empty() {
            return Err(err(
                "name a hosts file, or ssh destinations separated by commas".into(),
            ));
        }
        Ok(HostsFile {
            path: PathBuf::from("--hosts"),
            ssh_config: None,
            hosts,
        })
    }

    /// A hosts file when `arg` names one, else a list of destinations (see
    /// [`HostsFile::from_destinations`]).
    pub fn from_arg(arg: &Path, devices: &[String]) -> Result<HostsFile, HostsError> {
        if arg.exists() || arg.extension().is_some_and(|e| e == "toml") {
            Self::load(arg)
        } else {
            Self::from_destinations(&arg.to_string_lossy(), devices)
        }
    }

    pub fn load(path: &Path) -> Result<HostsFile, HostsError> {
        let text = std::fs::read_to_string(path).map_err(|e| HostsError {
            file: path.into(),
            line: None,
            field: "(file)".into(),
            message: format!("cannot read the hosts file: {e}"),
        })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<HostsFile, HostsError> {
        let line_of = |span: Option<std::ops::Range<usize>>| {
            span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
        };
        let err = |span, field: &str, message: String| HostsError {
            file: path.into(),
            line: line_of(span),
            field: field.into(),
            message,
        };
        let doc = ImDocument::parse(text.to_string())
            .map_err(|e| err(e.span(), "(syntax)", format!("not TOML: {}", e.message())))?;
        let root = doc.as_table();
        for (k, item) in root.iter() {
            if !["ssh_config", "hosts"].contains(&k) {
                return Err(err(
                    item.span(),
                    k,
                    "unknown field; the fields here are: ssh_config, hosts".into(),
                ));
            }
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let ssh_config = match root.get("ssh_config") {
            None => None,
            Some(Item::Value(Value::String(s))) => Some(dir.join(s.value())),
            Some(other) => {
                return Err(err(
                    other.span(),
                    "ssh_config",
                    "a path in quotes (ssh -F)".into(),
                ))
            }
        };
        let tables = match root.get("hosts") {
            Some(Item::ArrayOfTables(a)) if !a.is_empty() => a,
            other => {
                return Err(err(
                    other.and_then(Item::span),
                    "hosts",
                    "add one [[hosts]] table per host: name, ssh, devices".into(),
                ))
            }
        };
        let mut hosts = Vec::new();
        let mut names = BTreeSet::new();
        for (i, t) in tables.iter().enumerate() {
            let field = |k: &str| format!("hosts[{i}].{k}");
            for (k, item) in t.iter() {
                if ![
                    "name",
                    "ssh",
                    "devices",
                    "workdir",
                    "state_dir",
                    "destroy_data_on",
                    "fio_address",
                    "fio_port",
                ]
                .contains(&k)
                {
                    return Err(err(
                        item.span(),
                        &field(k),
                        "unknown field; the fields here are: name, ssh, devices, workdir, state_dir, destroy_data_on, fio_address, fio_port".into(),
                    ));
                }
            }
            let text_of = |k: &str| -> Result<Option<String>, HostsError> {
                match t.get(k) {
                    None => Ok(None),
                    Some(Item::Value(Value::String(s))) => Ok(Some(s.value().clone())),
                    Some(other) => Err(err(other.span(), &field(k), "text in quotes".into())),
                }
            };
            let list_of = |k: &str| -> Result<Vec<String>, HostsError> {
                match t.get(k) {
                    None => Ok(Vec::new()),
                    Some(Item::Value(Value::Array(a))) => a
                        .iter()
                        .map(|v| {
                            v.as_str().map(String::from).ok_or_else(|| {
                                err(v.span(), &field(k), "a list of text in quotes".into())
                            })
                        })
                        .collect(),
                    Some(other) => Err(err(
                        other.span(),
                        &field(k),
                        "a list of text in quotes".into(),
                    )),
                }
            };
            let span = t.span();
            let Some(name) = text_of("name")? else {
                return Err(err(
                    span,
                    &field("name"),
                    "every host needs a name, e.g. name = \"a\"".into(),
                ));
            };
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(err(
                    t.get("name").and_then(Item::span),
                    &field("name"),
                    format!("{name:?}: letters, digits and `_` only (it names the results' target, host.{name})"),
                ));
            }
            if !names.insert(name.clone()) {
                return Err(err(
                    t.get("name").and_then(Item::span),
                    &field("name"),
                    format!("{name:?} names two hosts: give each its own"),
                ));
            }
            let Some(ssh) = text_of("ssh")? else {
                return Err(err(
                    span,
                    &field("ssh"),
                    "how to reach the host: user@host[:port], or a Host of the ssh config".into(),
                ));
            };
            if ssh.starts_with('-') || ssh.contains(char::is_whitespace) {
                return Err(err(
                    t.get("ssh").and_then(Item::span),
                    &field("ssh"),
                    format!("{ssh:?} is no ssh destination: user@host[:port]"),
                ));
            }
            let devices = list_of("devices")?;
            if devices.is_empty() {
                return Err(err(
                    span,
                    &field("devices"),
                    "the host's devices for the plan, e.g. devices = [\"/dev/sdb\", \"/dev/sdc\"]"
                        .into(),
                ));
            }
            if let Some(d) = devices.iter().find(|d| !d.starts_with('/')) {
                return Err(err(
                    t.get("devices").and_then(Item::span),
                    &field("devices"),
                    format!("{d:?}: an absolute device path, e.g. /dev/sdb"),
                ));
            }
            let workdir = text_of("workdir")?.unwrap_or_else(|| DEFAULT_WORKDIR.into());
            for (k, v) in [
                ("workdir", Some(&workdir)),
                ("state_dir", text_of("state_dir")?.as_ref()),
            ] {
                if let Some(v) = v.filter(|v| !v.starts_with('/') || v.contains(['\'', '\n'])) {
                    return Err(err(
                        t.get(k).and_then(Item::span),
                        &field(k),
                        format!("{v:?}: an absolute path without quotes or line breaks"),
                    ));
                }
            }
            let fio_address = text_of("fio_address")?.unwrap_or_else(|| host_part(&ssh).into());
            if fio_address.is_empty() || fio_address.contains([',', '\'', ' ', '\n']) {
                return Err(err(
                    t.get("fio_address").and_then(Item::span),
                    &field("fio_address"),
                    format!(
                        "{fio_address:?}: a host name or IP address its fio --server listens on"
                    ),
                ));
            }
            let fio_port = match t.get("fio_port") {
                None => FIO_PORT,
                Some(Item::Value(Value::Integer(n))) => u16::try_from(*n.value())
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| {
                        err(
                            n.span(),
                            &field("fio_port"),
                            format!(
                                "{}: a TCP port, 1 to 65535 (fio's own is {FIO_PORT})",
                                n.value()
                            ),
                        )
                    })?,
                Some(other) => {
                    return Err(err(
                        other.span(),
                        &field("fio_port"),
                        format!("a TCP port number, e.g. fio_port = {FIO_PORT}"),
                    ))
                }
            };
            hosts.push(Host {
                name,
                ssh,
                devices,
                workdir,
                state_dir: text_of("state_dir")?,
                destroy_data_on: list_of("destroy_data_on")?,
                fio_address,
                fio_port,
            });
        }
        Ok(HostsFile {
            path: path.into(),
            ssh_config,
            hosts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_on_the_command_line() {
        let devs = vec!["/dev/sdb".to_string()];
        let f =
            HostsFile::from_destinations("root@10.0.0.5, r2:2222,root@10.0.0.5", &devs).unwrap();
        let names: Vec<&str> = f.hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["10_0_0_5", "r2", "10_0_0_5_2"]);
        assert_eq!(f.hosts[1].ssh, "r2:2222");
        assert_eq!(f.hosts[0].devices, devs);
        assert!(HostsFile::from_destinations(" , ", &devs).is_err());
        assert!(HostsFile::from_destinations("-oProxyCommand=x", &devs).is_err());
    }

    #[test]
    fn a_hosts_file_reads_and_mistakes_name_their_line() {
        let text = "ssh_config = \"cfg\"\n[[hosts]]\nname = \"a\"\nssh = \"root@127.0.0.1:2201\"\ndevices = [\"/dev/loop1\"]\n[[hosts]]\nname = \"b\"\nssh = \"fleet-b\"\ndevices = [\"/dev/loop2\"]\nstate_dir = \"/tmp/b\"\n";
        let f = HostsFile::parse(text, Path::new("/x/hosts.toml")).unwrap();
        assert_eq!(f.ssh_config, Some(PathBuf::from("/x/cfg")));
        assert_eq!(f.hosts.len(), 2);
        assert_eq!(f.hosts[0].workdir, DEFAULT_WORKDIR);
        assert_eq!(f.hosts[1].state_dir.as_deref(), Some("/tmp/b"));
        // fio's server: the ssh host and fio's port unless given.
        assert_eq!(
            (f.hosts[0].fio_address.as_str(), f.hosts[0].fio_port),
            ("127.0.0.1", FIO_PORT)
        );
        assert_eq!(f.hosts[1].fio_address, "fleet-b");
        let given = text.replace(
            "state_dir",
            "fio_address = \"10.1.1.2\"\nfio_port = 9000\nstate_dir",
        );
        let g = HostsFile::parse(&given, Path::new("h.toml")).unwrap();
        assert_eq!(
            (g.hosts[1].fio_address.as_str(), g.hosts[1].fio_port),
            ("10.1.1.2", 9000)
        );
        for (bad, field, why) in [
            (
                text.replace("state_dir", "fio_port = 70000\nstate_dir"),
                "hosts[1].fio_port",
                "a TCP port",
            ),
            (
                text.replace("name = \"b\"", "name = \"a\""),
                "hosts[1].name",
                "names two hosts",
            ),
            (
                text.replace("name = \"b\"", "name = \"b-1\""),
                "hosts[1].name",
                "letters, digits",
            ),
            (
                text.replace("\"/dev/loop2\"", "\"loop2\""),
                "hosts[1].devices",
                "absolute",
            ),
            (
                text.replace("ssh = \"fleet-b\"", "ssh = \"-oProxyCommand=x\""),
                "hosts[1].ssh",
                "no ssh destination",
            ),
            (
                text.replace("state_dir", "statedir"),
                "hosts[1].statedir",
                "unknown field",
            ),
        ] {
            let e = HostsFile::parse(&bad, Path::new("h.toml")).unwrap_err();
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.contains(why), "{e}");
            assert!(e.line.is_some(), "{e}");
        }
    }
}
