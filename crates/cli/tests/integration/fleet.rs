//! Fleets (issue 20): three "hosts" are three `sshd` on 127.0.0.1, on ports of their own,
//! with host and client keys this test makes and checks (no host-key checking is turned
//! off); each host has its own loop devices, raidlab state directory and work directory.
//! Only 127.0.0.1 is ever contacted. The test stops only the processes it started — its
//! `sshd`s (children) and, to lose a host mid-run, that host's raidlab by the pid the
//! host reported — and every loop device is cleaned and detached when it ends.

use crate::host::{can_run, text, Lab};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One sshd of this test, listening on 127.0.0.1:port.
struct Sshd {
    child: Child,
    port: u16,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run_ok(c: &mut Command) -> Output {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{c:?}: {}", text(&o));
    o
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The fleet: a client key, an ssh config and known_hosts, and three hosts.
struct Fleet {
    dir: tempfile::TempDir,
    labs: Vec<Lab>,
    sshds: Vec<Option<Sshd>>,
    ports: Vec<u16>,
    /// Each host's fio server port (`[run] fleet = "together"`).
    fio_ports: Vec<u16>,
}

const NAMES: [&str; 3] = ["a", "b", "c"];

impl Fleet {
    fn new() -> Fleet {
        let dir = tempfile::Builder::new()
            .prefix("raidlab-fleet-")
            .tempdir()
            .unwrap();
        // sshd insists on its privilege-separation directory (the package makes it at boot).
        std::fs::create_dir_all("/run/sshd").unwrap();
        run_ok(
            Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(dir.path().join("id")),
        );
        let mut fleet = Fleet {
            labs: NAMES.iter().map(|_| Lab::new(2)).collect(),
            sshds: Vec::new(),
            ports: NAMES.iter().map(|_| free_port()).collect(),
            fio_ports: NAMES.iter().map(|_| free_port()).collect(),
            dir,
        };
        let mut config = String::new();
        let mut known = String::new();
        for (i, name) in NAMES.iter().enumerate() {
            let key = fleet.dir.path().join(format!("host_{name}"));
            run_ok(
                Command::new("ssh-keygen")
                    .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                    .arg(&key),
            );
            let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
            known.push_str(&format!("[127.0.0.1]:{} {public}", fleet.ports[i]));
            config.push_str(&format!(
                "Host fleet-{name}\n  HostName 127.0.0.1\n  Port {}\n  User root\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  GlobalKnownHostsFile /dev/null\n\n",
                fleet.ports[i],
                fleet.dir.path().join("id").display(),
                fleet.dir.path().join("known_hosts").display()
            ));
        }
        std::fs::write(fleet.dir.path().join("known_hosts"), known).unwrap();
        std::fs::write(fleet.dir.path().join("ssh_config"), config).unwrap();
        std::fs::copy(
            fleet.dir.path().join("id.pub"),
            fleet.dir.path().join("authorized_keys"),
        )
        .unwrap();
        for i in 0..NAMES.len() {
            let s = fleet.start(i);
            fleet.sshds.push(Some(s));
        }
        let mut hosts = format!(
            "ssh_config = \"{}\"\n",
            fleet.dir.path().join("ssh_config").display()
        );
        for (i, name) in NAMES.iter().enumerate() {
            let lab = &fleet.labs[i];
            hosts.push_str(&format!(
                "[[hosts]]\nname = \"{name}\"\nssh = \"fleet-{name}\"\ndevices = [\"{}\", \"{}\"]\nworkdir = \"{}\"\nstate_dir = \"{}\"\nfio_address = \"127.0.0.1\"\nfio_port = {}\n",
                lab.devs[0],
                lab.devs[1],
                lab.path().join("fleet").display(),
                lab.path().join("state").display(),
                fleet.fio_ports[i]
            ));
        }
        std::fs::write(fleet.hosts(), hosts).unwrap();
        fleet
    }

    /// Start host `i`'s sshd and wait until it answers.
    fn start(&self, i: usize) -> Sshd {
        let name = NAMES[i];
        let cfg = self.dir.path().join(format!("sshd_{name}"));
        std::fs::write(
            &cfg,
            format!(
                "Port {}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\nPidFile none\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPrintMotd no\n",
                self.ports[i],
                self.dir.path().join(format!("host_{name}")).display(),
                self.dir.path().join("authorized_keys").display()
            ),
        )
        .unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let sshd = Sshd {
            child,
            port: self.ports[i],
        };
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", sshd.port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "sshd {name} does not listen"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sshd
    }

    fn hosts(&self) -> PathBuf {
        self.dir.path().join("hosts.toml")
    }

    fn plan(&self, body: &str) -> PathBuf {
        let p = self.dir.path().join("plan.toml");
        std::fs::write(&p, format!("name = \"fleet\"\n[disks]\ncount = 2\n{body}")).unwrap();
        p
    }

    /// `raidlab run PLAN --hosts HOSTS --baseline 0 --quiet EXTRA… --out OUT`: the
    /// controller.
    fn run(&self, plan: &Path, extra: &[&str], out: &Path) -> Command {
        let hosts = self.hosts();
        let mut c = self.raidlab(&[
            "run",
            plan.to_str().unwrap(),
            "--hosts",
            hosts.to_str().unwrap(),
            "--baseline",
            "0",
            "--quiet",
        ]);
        c.args(extra).arg("--out").arg(out);
        c
    }

    fn raidlab(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_raidlab"));
        c.args(args)
            .env("RAIDLAB_STATE_DIR", self.dir.path().join("state"));
        c
    }

    /// The local results' CSV rows, by column name.
    fn rows(&self, out: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
        let o = run_ok(
            self.raidlab(&["report", out.to_str().unwrap(), "--format", "csv"])
                .stdin(Stdio::null()),
        );
        let text = String::from_utf8(o.stdout).unwrap();
        let mut lines = text.lines();
        let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
        lines
            .map(|l| {
                head.iter()
                    .cloned()
                    .zip(l.split(',').map(String::from))
                    .collect()
            })
            .collect()
    }

    /// Nothing left on any host: no mount below its lab, no signature on its devices, no
    /// registered journal.
    fn assert_clean(&self) {
        for (i, lab) in self.labs.iter().enumerate() {
            assert!(
                lab.mounts_below().is_empty(),
                "host {}: {:?}",
                NAMES[i],
                lab.mounts_below()
            );
            for d in 0..2 {
                assert_eq!(lab.signatures(d), "", "host {} {}", NAMES[i], lab.devs[d]);
            }
            let active = lab.path().join("state/active");
            let n = std::fs::read_dir(&active).map(|d| d.count()).unwrap_or(0);
            assert_eq!(
                n,
                0,
                "host {}: journals left in {}",
                NAMES[i],
                active.display()
            );
        }
    }
}

fn can_run_fleet() -> bool {
    can_run()
        && raidlab_testkit::require(
            Path::new("/usr/sbin/sshd").exists() && raidlab_testkit::on_path("ssh"),
            || {
                "the fleet tests need OpenSSH's server and client (apt-get install openssh-server openssh-client)".into()
            },
        )
}

const PLAN: &str = "[arrays]\nengine = \"btrfs\"\nlevel = \"raid1\"\nwrite_cache = \"keep\"\n[workloads]\nrw = [\"randread\", \"randwrite\"]\nsize = \"64m\"\nruntime = \"1s\"\n";

#[test]
fn a_plan_runs_on_three_hosts_survives_a_lost_one_resumes_and_cleans_up() {
    let _machine = raidlab_testkit::shared();
    if !can_run_fleet() {
        return;
    }
    let mut fleet = Fleet::new();
    let hosts = fleet.hosts();
    let (h, out) = (hosts.to_str().unwrap(), fleet.dir.path().join("r1"));

    // Independently on all three: each host's results, under host.NAME.
    let plan = fleet.plan(PLAN);
    let o = fleet.run(&plan, &[], &out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rows = fleet.rows(&out);
    let mut targets: Vec<&str> = rows.iter().map(|r| r["target"].as_str()).collect();
    targets.sort();
    assert_eq!(
        targets,
        ["host.a", "host.a", "host.b", "host.b", "host.c", "host.c"]
    );
    for r in &rows {
        assert_eq!(r["host"], &r["target"]["host.".len()..], "{r:?}");
        assert!(
            r["read_iops"].parse::<f64>().unwrap_or(0.0) > 0.0
                || r["write_iops"].parse::<f64>().unwrap_or(0.0) > 0.0,
            "{r:?}"
        );
    }
    // The report holds the hosts side by side.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let fleet_section = html
        .split("<h2>Fleet</h2>")
        .nth(1)
        .expect("a fleet section");
    let fleet_section = &fleet_section[..fleet_section.find("<h2>").unwrap_or(fleet_section.len())];
    for host in NAMES {
        assert_eq!(
            fleet_section.matches(&format!("<td>{host}</td>")).count(),
            2,
            "{host}"
        );
    }
    fleet.assert_clean();

    together(&fleet);

    // Host c lost mid-run: its raidlab killed by the pid it reported, its sshd stopped.
    let out2 = fleet.dir.path().join("r2");
    let plan =
        fleet.plan(&PLAN.replace("runtime = \"1s\"", "runtime = \"2s\"\niodepth = [1, 4, 16]"));
    let controller = fleet
        .run(&plan, &[], &out2)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Host c keeps each controller run apart (`workdir/runs/RUN`): wait for this one's
    // first result there.
    let runs = fleet.labs[2].path().join("fleet/runs");
    let before: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        before.len(),
        2,
        "the independent and together runs' directories"
    );
    let t = Instant::now();
    let this = loop {
        let new = std::fs::read_dir(&runs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| !before.contains(p));
        if let Some(dir) = new.filter(|d| stored(&d.join("results/raidlab.sqlite")) >= 1) {
            break dir;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "host c committed nothing"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let pid = remote_pid(&this);
    assert!(Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap()
        .success());
    fleet.sshds[2] = None;
    let o = controller.wait_with_output().unwrap();
    assert!(!o.status.success());
    let said = text(&o);
    assert!(
        said.contains("1 of 3 host(s) did not finish") && said.contains("c: "),
        "{said}"
    );
    let rows = fleet.rows(&out2);
    let count = |host: &str| {
        rows.iter()
            .filter(|r| r["target"] == format!("host.{host}"))
            .count()
    };
    assert_eq!((count("a"), count("b")), (6, 6), "the others finished");
    let lost_kept = count("c");
    assert!(
        (1..6).contains(&lost_kept),
        "host c's finished results are kept: {lost_kept}"
    );

    // Back, cleaned up, resumed: host c completes, nothing runs again on a and b.
    fleet.sshds[2] = Some(fleet.start(2));
    let o = fleet.raidlab(&["cleanup", "--hosts", h]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = fleet.run(&plan, &["--resume"], &out2).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rows = fleet.rows(&out2);
    let count = |host: &str| {
        rows.iter()
            .filter(|r| r["target"] == format!("host.{host}"))
            .count()
    };
    assert_eq!((count("a"), count("b"), count("c")), (6, 6, 6));
    let o = fleet.raidlab(&["cleanup", "--hosts", h]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    fleet.assert_clean();
}

/// `[run] fleet = "together"`: every host's fio started by one `fio --client` of the
/// controller against the fio server it started on each host; each host stores its own
/// part, the controller the fleet's aggregate with percentiles from merged histograms;
/// the servers are stopped at the end.
fn together(fleet: &Fleet) {
    let out = fleet.dir.path().join("together");
    let plan = fleet.plan(&format!("{PLAN}[run]\nfleet = \"together\"\n"));
    let o = fleet.run(&plan, &[], &out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let rows = fleet.rows(&out);
    let mut targets: Vec<&str> = rows.iter().map(|r| r["target"].as_str()).collect();
    targets.sort();
    assert_eq!(
        targets,
        ["fleet", "fleet", "host.a", "host.a", "host.b", "host.b", "host.c", "host.c"]
    );
    let num = |r: &std::collections::BTreeMap<String, String>, k: &str| -> f64 {
        r[k].parse().unwrap_or(0.0)
    };
    for agg in rows.iter().filter(|r| r["target"] == "fleet") {
        let hosts: Vec<_> = rows
            .iter()
            .filter(|r| r["target"] != "fleet" && r["case_id"] == agg["case_id"])
            .collect();
        assert_eq!(hosts.len(), 3);
        let dir = if num(agg, "read_iops") > 0.0 {
            "read"
        } else {
            "write"
        };
        // fio's sums: the fleet's IOPS is its hosts' together, over the longest host's
        // runtime (the completions add up exactly: below, from the stored JSON).
        let sum: f64 = hosts.iter().map(|r| num(r, &format!("{dir}_iops"))).sum();
        let got = num(agg, &format!("{dir}_iops"));
        assert!((got - sum).abs() <= 0.05 * sum, "{dir}: {got} vs {sum}");
        // Percentiles of the union of completions: within the hosts' own.
        let p99 =
            |r: &std::collections::BTreeMap<String, String>| num(r, &format!("{dir}_lat_p99_ms"));
        let lo = hosts.iter().map(|r| p99(r)).fold(f64::MAX, f64::min);
        let hi = hosts.iter().map(|r| p99(r)).fold(0.0, f64::max);
        assert!(
            p99(agg) > 0.0 && lo <= p99(agg) && p99(agg) <= hi,
            "p99 {} not in [{lo}, {hi}]",
            p99(agg)
        );
    }
    // Each host's stored fio JSON is its part of the client run (fio names the server it
    // came from), with fio's per-second logs sent home; the aggregate is fio's "All
    // clients" with the merged histogram.
    let raw = out.join("raw");
    let total_ios = |v: &serde_json::Value| -> u64 {
        ["read", "write"]
            .iter()
            .map(|d| v["jobs"][0][d]["total_ios"].as_u64().unwrap_or(0))
            .sum()
    };
    // Per case: the hosts' completions, and the aggregate's.
    let mut ios: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for (i, name) in NAMES.iter().enumerate() {
        let mut parts = 0;
        for e in std::fs::read_dir(&raw).unwrap() {
            let p = e.unwrap().path();
            let f = p.file_name().unwrap().to_string_lossy().into_owned();
            if f.ends_with(&format!("-host.{name}.json")) {
                let v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                assert_eq!(v["jobs"][0]["port"], fleet.fio_ports[i], "{f}");
                ios.entry(f[..16].to_string()).or_default().0 += total_ios(&v);
                let iops = p.with_file_name(f.replace(".json", "-iops.log"));
                assert!(iops.exists(), "{} has its per-second IOPS", f);
                parts += 1;
            }
            if f.ends_with("-fleet.json") {
                let v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                assert_eq!(v["jobs"][0]["jobname"], "All clients");
                if i == 0 {
                    ios.entry(f[..16].to_string()).or_default().1 = total_ios(&v);
                }
                let dir = if v["jobs"][0]["read"]["total_ios"].as_u64() > Some(0) {
                    "read"
                } else {
                    "write"
                };
                assert!(
                    v["jobs"][0][dir]["clat_ns"]["bins"]
                        .as_object()
                        .is_some_and(|b| !b.is_empty()),
                    "{f}"
                );
            }
        }
        assert_eq!(parts, 2, "host {name}");
    }
    assert_eq!(ios.len(), 2);
    for (case, (hosts, fleet)) in &ios {
        assert!(
            *hosts > 0 && hosts == fleet,
            "case {case}: hosts {hosts}, fleet {fleet}"
        );
    }
    // The report draws the hosts and the fleet's aggregate side by side, every chart's
    // marks where their axes say (a screenshot among the test artifacts).
    let html = out.join("report.html");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("(fleet)"),
        "the aggregate is a series of its own"
    );
    // The summary compares layouts: the aggregate (three arrays' sum) is not one.
    let summary = page.split("<h2>Summary</h2>").nth(1).unwrap();
    let summary = &summary[..summary.find("<h2>").unwrap()];
    for agg in rows.iter().filter(|r| r["target"] == "fleet") {
        for k in ["read_iops", "write_iops"] {
            if let Ok(v) = agg[k].parse::<f64>() {
                assert!(!summary.contains(&format!("{v:.1} IOPS")), "{summary}");
            }
        }
    }
    crate::geometry::check_alone(&page, "together fleet", &["bar"]);
    if let Some(bin) = crate::report_chromium::chromium() {
        crate::report_chromium::screenshot(
            bin,
            &html,
            "report-fleet-together.png",
            fleet.dir.path(),
        );
    }
    // No fio server is left listening, and none left its pid file.
    for (i, port) in fleet.fio_ports.iter().enumerate() {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", *port)).is_err(),
            "host {}'s fio --server still listens on {port}",
            NAMES[i]
        );
        let runs = fleet.labs[i].path().join("fleet/runs");
        for d in std::fs::read_dir(&runs).unwrap() {
            assert!(!d.unwrap().path().join("fio-server.pid").exists());
        }
    }
    fleet.assert_clean();
}

/// Results a host's store holds (its CSV export; reading never waits for the writer).
fn stored(db: &Path) -> usize {
    if !db.exists() {
        return 0;
    }
    let o = Command::new(env!("CARGO_BIN_EXE_raidlab"))
        .args([
            "report",
            db.parent().unwrap().to_str().unwrap(),
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    if !o.status.success() {
        return 0;
    }
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .count()
        .saturating_sub(1)
}

/// The pid of the host's raidlab, which its session wrote before starting it (in the
/// run's directory on the host).
fn remote_pid(run: &Path) -> u32 {
    std::fs::read_to_string(run.join("raidlab.pid"))
        .expect("the host's raidlab wrote its pid")
        .trim()
        .parse()
        .unwrap()
}
