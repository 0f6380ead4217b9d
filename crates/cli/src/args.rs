//! The command line as clap sees it: raw arguments, documented for `--help`, completions
//! and the man page. Resolution into actions happens in the command modules.

// These doc comments are written for the terminal (`--help`): `<plan name>` and
// `[workloads]` are what a user types, not HTML or links.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use raidlab_core::{
    ArrayState, Bitmap, Bytes, Governor, Layout, Level, Nanos, Resync, Rw, Scheduler, TargetKind,
    WriteCache,
};
use raidlab_report::compare::CompareFormat;
use std::path::PathBuf;

/// raidlab — which RAID layout, on these disks, for this workload?
///
/// Describe an experiment in a plan file (disks, arrays, workloads); raidlab expands it
/// into cases, runs each one (simulated by default), stores every result the moment it
/// ends, and writes a report with charts and CSV/JSON/Markdown exports.
///
/// Start with: raidlab run examples/seed-2013.toml
#[derive(Debug, Parser)]
#[command(
    name = "raidlab",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every case of a plan, store the results, write the report.
    Run(RunArgs),
    /// Show the cases a plan expands to, or (--script) the exact commands the host target runs.
    Plan(PlanArgs),
    /// Simulate one case from flags, without a plan file.
    Sim(Box<SimArgs>),
    /// Write the report of a results directory (HTML), or export it (--format csv|json|md).
    Report(ReportArgs),
    /// Compare two results directories case by case (or by --match dimensions), or one
    /// directory --by a dimension: medians, change, interval and a corrected significance test.
    Compare(CompareArgs),
    /// List block devices and whether the host target may use each, and why not (--models:
    /// the simulator's disk models and their parameters).
    Disks(DisksArgs),
    /// Undo what an interrupted host run left behind (mounts, arrays, signatures, caches).
    Cleanup(CleanupArgs),
    /// Prepare (build) or inspect (status) the VM lab: a Debian kernel and an initramfs with mdadm and fio.
    #[command(subcommand)]
    Lab(LabCommand),
    /// On a fleet host: every result of a results directory as JSON lines (what the
    /// controller asks for on --resume).
    #[command(hide = true)]
    FleetReplay {
        /// The results directory.
        dir: PathBuf,
    },
    /// Inside a VM-lab guest: run the boot's cases (started by the guest's /init).
    #[command(hide = true)]
    Guest {
        /// The job directory (cases.json).
        job: PathBuf,
        /// Where each case's results go.
        out: PathBuf,
    },
    /// Import fio JSON files written elsewhere (plain fio output, bench-fio trees) into a store.
    Import(ImportArgs),
    /// Fit a disk model to one drive's own fio measurements and save it as a model file
    /// that stands in for a preset (`raidlab sim --disk FILE`, `[disks] model = "FILE"`).
    Calibrate(CalibrateArgs),
    /// The probability that a layout loses data over the years: a seeded Monte Carlo over
    /// member lifetimes (Weibull), rebuilds and read errors, with MTTDL beside it.
    Risk(RiskArgs),
    /// Which layout, on these disks, for these workloads: every md layout and btrfs profile
    /// simulated healthy, degraded and rebuilding, cut by your constraints, ranked, with the
    /// commands to build the pick.
    Advise(Box<AdviseArgs>),
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) on standard output.
    Man,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The plan file (TOML; see docs/plan.md).
    pub plan: PathBuf,
    /// Where cases run: sim (simulator, the default), vm (qemu lab), host (real disks).
    #[arg(long, short, value_parser = target_kind())]
    pub target: Option<TargetKind>,
    /// Results directory [default: results/<plan name>].
    #[arg(long, short, visible_alias = "output")]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run in the existing results directory: finished cases are kept.
    #[arg(long)]
    pub resume: bool,
    /// Seed for the simulator [default: the plan's run.seed, else 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Cases run at once on the sim target [default: one per core].
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Print every command each case would run (and, for --target host, each device's
    /// verdict); run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Host target: devices with these serials may be erased although they hold data
    /// (a file system, partition table or RAID signature). Nothing overrides the other
    /// checks. Loop devices' serial is `loop:` + their backing file. See `raidlab disks`.
    #[arg(long, value_delimiter = ',', value_name = "SERIAL")]
    pub destroy_data_on: Vec<String>,
    /// Host target: time of each per-disk baseline test (random and sequential read of
    /// every member, before any array is built); 0 skips it.
    #[arg(long, default_value = "10s", value_name = "DURATION", value_parser = clap::value_parser!(Nanos))]
    pub baseline: Nanos,
    /// Host target: run the plan on every host of this hosts file over ssh (a fleet; see
    /// docs/fleet.md), each with its own devices; the results come back into --out. Or
    /// ssh destinations separated by commas (h1,root@h2:2222), whose devices are the plan's.
    #[arg(long, value_name = "HOSTS.toml|H1,H2", conflicts_with = "dry_run")]
    pub hosts: Option<PathBuf>,
    /// Report progress and every committed result as JSON lines on standard output
    /// (what a fleet controller reads from each host), instead of the bar and the table.
    #[arg(long)]
    pub events: bool,
    /// A together fleet's host: each case's measured fio is run by the controller through
    /// this host's fio server; orders come as JSON lines on standard input.
    #[arg(long, hide = true, requires = "events")]
    pub fio_from_controller: bool,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Download a Debian kernel package (apt-get download; never installed), extract vmlinux,
    /// pick the md/raid/xfs/virtio modules, build the initramfs; cached per kernel version
    /// in $RAIDLAB_LAB_DIR, else $XDG_CACHE_HOME/raidlab/lab, else ~/.cache/raidlab/lab.
    Build {
        /// Use this kernel package (.deb) or an unpacked one (a directory with boot/ and
        /// lib/modules/) instead of downloading linux-image-amd64's dependency.
        #[arg(long, value_name = "DEB|DIR")]
        kernel: Option<PathBuf>,
    },
    /// What is cached, and which acceleration works (KVM is tried first, then TCG).
    Status,
}

#[derive(Debug, Args)]
pub struct DisksArgs {
    /// List the disk models (presets) the sim and vm targets know, with every parameter
    /// `[disks.params]` and `--disk-param` can override, instead of this machine's disks.
    #[arg(long, conflicts_with_all = ["plan", "destroy_data_on"])]
    pub models: bool,
    /// Also say which devices a plan names (others are never touched).
    #[arg(long)]
    pub plan: Option<PathBuf>,
    /// Serials allowed to be erased, as for `run --destroy-data-on`.
    #[arg(long, value_delimiter = ',', value_name = "SERIAL")]
    pub destroy_data_on: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CleanupArgs {
    /// Results directories whose journal to replay [default: every one registered in
    /// $RAIDLAB_STATE_DIR/active, by default /var/lib/raidlab/active].
    pub dirs: Vec<PathBuf>,
    /// Run the cleanup on every host of this hosts file (or these ssh destinations,
    /// separated by commas) instead, over ssh.
    #[arg(long, value_name = "HOSTS.toml|H1,H2", conflicts_with = "dirs")]
    pub hosts: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Print a bash script of every command the host target would run, instead of the table.
    #[arg(long)]
    pub script: bool,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Member disks.
    #[arg(long, default_value_t = 4)]
    pub disks: u32,
    /// Disk model preset (hdd-7200, hdd-7200-16t-2019, hdd-10k-sas, ssd-sata, nvme, …).
    #[arg(long, default_value = "hdd-7200")]
    pub disk: String,
    /// Override the model's capacity, e.g. 2t.
    #[arg(long, value_parser = parsed::<Bytes>)]
    pub disk_capacity: Option<Bytes>,
    /// Override one of the model's figures, e.g. queue_depth=1 or avg_seek=9ms
    /// (repeatable; `raidlab disks --models` lists them)
    #[arg(long, value_name = "NAME=VALUE")]
    pub disk_param: Vec<String>,
    /// Use only the first SPAN bytes of each disk, e.g. 30g.
    #[arg(long, value_parser = parsed::<Bytes>)]
    pub span: Option<Bytes>,
    /// Commands the host adapter keeps in flight across all disks at once (an HBA's
    /// queue, a port multiplier) [default: no limit, each disk on its own port]
    #[arg(long, value_name = "N")]
    pub host_queue: Option<u32>,
    /// The host's I/O scheduler above each disk: mq-deadline (sorts what waits beyond the
    /// drive's own queue), bfq (a queue per fio job and one for md's threads, served in
    /// turn) or none (arrival order) [default: mq-deadline for disks, none for flash]
    #[arg(long, value_parser = parsed::<Scheduler>)]
    pub scheduler: Option<Scheduler>,
    /// RAID level: single, raid0, raid1, raid10, raid5, raid6.
    #[arg(long, default_value = "raid5", value_parser = parsed::<Level>)]
    pub level: Level,
    /// md layout (n2, f2, o2, left-symmetric …) [default: md's default for the level].
    #[arg(long, value_parser = parsed::<Layout>)]
    pub layout: Option<Layout>,
    /// Chunk size.
    #[arg(long, default_value = "512k", value_parser = parsed::<Bytes>)]
    pub chunk: Bytes,
    /// Member write caches: off or on.
    #[arg(long, default_value = "off", value_parser = parsed::<WriteCache>)]
    pub write_cache: WriteCache,
    /// md write-intent bitmap: none or internal.
    #[arg(long, default_value = "none", value_parser = parsed::<Bitmap>)]
    pub bitmap: Bitmap,
    /// raid5/6 stripe cache in 4 KiB stripe heads (md's stripe_cache_size, 17–32768): its
    /// size to start with; under direct I/O md grows it whenever it runs short
    /// [default: md's 256]
    #[arg(long)]
    pub stripe_cache: Option<u32>,
    /// The array whole (healthy), with its last members failed and removed (degraded), or
    /// with fresh members md recovers while the workload runs (rebuilding: the output adds
    /// the rebuild's speed and how long a whole member takes, loaded and idle).
    #[arg(long, default_value = "healthy", value_parser = parsed::<ArrayState>)]
    pub state: ArrayState,
    /// Members failed when degraded or rebuilding (raid6 survives 2) [default: 1]
    #[arg(long)]
    pub failed: Option<u32>,
    /// Rebuilding: the kernel's rebuild governor: 6.16 (sync_io_depth), 6.15 (Linux 4.1 to
    /// 6.15: waits for its requests in flight whenever it finds the array busy, which its
    /// per-member count rarely does under light load) or 4.0 (older: sleeps, so load holds
    /// it at sync_speed_min) [default: 6.16]
    #[arg(long, value_parser = parsed::<Governor>)]
    pub kernel: Option<Governor>,
    /// Rebuilding: md's sync_speed_min, KiB/s per member [default: 1000]
    #[arg(long)]
    pub sync_speed_min: Option<u32>,
    /// Rebuilding: md's sync_speed_max, KiB/s per member [default: 200000]
    #[arg(long)]
    pub sync_speed_max: Option<u32>,
    /// Rebuilding: md's sync_io_depth (Linux 6.16) [default: 32]
    #[arg(long)]
    pub sync_io_depth: Option<u32>,
    /// md's initial resync: wait (finished before the workload), assume-clean, or during.
    #[arg(long, default_value = "wait", value_parser = parsed::<Resync>)]
    pub resync: Resync,
    /// Run the targets' layout pass first (1 MiB sequential writes over the test region,
    /// where the host and vm targets make it) and start with the raid5/6 stripe cache it
    /// grew. As `raidlab run`, a degraded or rebuilding array starts so anyway; this asks
    /// for it on a healthy one too (docs/simulator.md, "The layout pass")
    #[arg(long, conflicts_with = "in_service")]
    pub layout_pass: bool,
    /// Start on an array in service, the raid5/6 stripe cache at its size, as `raidlab
    /// advise` and `raidlab risk` weigh arrays — a degraded or rebuilding one too, which
    /// `raidlab run` starts from the layout pass
    #[arg(long)]
    pub in_service: bool,
    /// fio rw: read, write, randread, randwrite, randrw, rw.
    #[arg(long, default_value = "randread", value_parser = parsed::<Rw>)]
    pub rw: Rw,
    /// Block size.
    #[arg(long, default_value = "4k", value_parser = parsed::<Bytes>)]
    pub bs: Bytes,
    /// Queue depth per job.
    #[arg(long, default_value_t = 1)]
    pub iodepth: u32,
    #[arg(long, default_value_t = 1)]
    pub numjobs: u32,
    /// Size of the test region (a file at the start of the array).
    #[arg(long, default_value = "10g", value_parser = parsed::<Bytes>)]
    pub size: Bytes,
    /// Simulated run time.
    #[arg(long, default_value = "30s", value_parser = parsed::<Nanos>)]
    pub runtime: Nanos,
    /// Time run before measuring starts (fio's ramp_time), e.g. to leave a rebuild's
    /// start out of its figures.
    #[arg(long, default_value = "0s", value_parser = parsed::<Nanos>)]
    pub ramp: Nanos,
    /// Read percentage for randrw / rw.
    #[arg(long, default_value_t = 50)]
    pub rwmixread: u8,
    /// fio's rate_iops: the I/Os a second each job may issue — N for every direction, or
    /// R,W for reads and writes — e.g. a light workload beside a rebuild [default: no cap]
    #[arg(long, value_name = "N|R,W")]
    pub rate_iops: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output: csv (the export columns), json (raidlab's row), fio-json (fio's own format).
    #[arg(long, value_enum, default_value_t = SimFormat::Csv)]
    pub format: SimFormat,
    /// Also write every command the simulated members were handed to FILE, as CSV: when
    /// queued and completed (seconds from the start), member, R or W, offset, bytes, and
    /// who sent it (host, sync, bitmap) — to set beside a blktrace of a real array
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

/// What `raidlab sim` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SimFormat {
    /// The export columns.
    Csv,
    /// raidlab's row.
    Json,
    /// fio's own JSON format.
    FioJson,
}

/// A typed flag value of a few words: completions and `--help` offer the words, and a
/// value is parsed by the type's own `FromStr`, whose error says what to write.
fn words<T>(words: Vec<&'static str>) -> Words<T> {
    Words {
        words,
        typed: std::marker::PhantomData,
    }
}

#[derive(Clone)]
struct Words<T> {
    words: Vec<&'static str>,
    typed: std::marker::PhantomData<fn() -> T>,
}

impl<T> TypedValueParser for Words<T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Display,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_string_lossy();
        text.parse().map_err(|e: T::Err| {
            let flag = arg.map_or(String::new(), |a| format!(" for '--{}'", a.get_id()));
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value '{text}'{flag}: {e}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.words
                .iter()
                .map(|w| clap::builder::PossibleValue::new(*w)),
        ))
    }
}

/// A typed flag value, parsed by the type's own `FromStr` (its error says what to write).
fn parsed<T: std::str::FromStr>(s: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    s.parse().map_err(|e: T::Err| e.to_string())
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A results directory (made by `raidlab run` or `raidlab import`).
    pub dir: PathBuf,
    /// The report (html), an export (csv, json, md), or charts as SVG files (svg: the
    /// --x/--y chart alone, or without --x every chart of the report into the directory -o
    /// names).
    #[arg(long, short, default_value = "html", value_parser = words::<raidlab_report::Format>(vec!["html", "csv", "json", "md", "svg"]))]
    pub format: raidlab_report::Format,
    /// Write here instead of DIR/report.html (HTML) or standard output (exports); `-` is stdout.
    #[arg(long, short, visible_alias = "out")]
    pub output: Option<PathBuf>,
    /// Add a chart with this plan dimension on the x axis.
    #[arg(long, value_parser = words::<raidlab_report::Dim>(raidlab_report::Dim::ALL.map(raidlab_report::Dim::name).to_vec()))]
    pub x: Option<raidlab_report::Dim>,
    /// … and this metric on the y axis [default: iops].
    #[arg(long, value_parser = words::<raidlab_report::Metric>(raidlab_report::Metric::ALL.map(raidlab_report::Metric::name).to_vec()))]
    pub y: Option<raidlab_report::Metric>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A file or directory tree of fio JSON output.
    pub source: PathBuf,
    /// The store to import into (created if missing) [default: results/import-<source name>].
    #[arg(long, short, visible_alias = "output")]
    pub out: Option<PathBuf>,
    /// Name every imported result's source this (a chart series and the CSV's `source`
    /// column) [default: the folder under SOURCE, or bench-fio's device folder].
    #[arg(long)]
    pub label: Option<String>,
    /// Import bench-fio's preconditioning runs too (its `run-N/` folders), each as a case
    /// of its own; left out by default, as they are not benchmark results.
    #[arg(long)]
    pub include_precondition: bool,
}

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// raidlab results directories or directories (files) of fio JSON, all of one drive:
    /// random reads at iodepth 1 and deeper, optionally sequential reads.
    #[arg(required_unless_present = "device", conflicts_with = "device")]
    pub inputs: Vec<PathBuf>,
    /// Measure this drive first (root): a read-only fio sweep — random reads at queue
    /// depth 1, 4, 8, 16, 32 over the whole disk and at depth 1 over 1 % of it, sequential
    /// reads at its start — kept as fio JSON in OUT's name with `.runs`. The drive must not
    /// be in use (mounted, held, open): the sweep times it alone.
    #[arg(long, value_name = "DEV")]
    pub device: Option<String>,
    /// Seconds per point of the --device sweep (7 points; 10 with --destroy-data-on, whose
    /// writes run a third longer first, unmeasured, so the drive's cache fills).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=600))]
    pub seconds: u64,
    /// With --device: also WRITE to the drive, destroying its data, to fit its write cache:
    /// random 4 KiB writes with the cache on at queue depth 1 and 32, and with it off at 1.
    /// Give the drive's serial (`raidlab disks`) to say you mean this drive; the write
    /// cache is put back as it was, and the drive is left without signatures (journalled:
    /// `raidlab cleanup` finishes both after a crash).
    #[arg(long, value_name = "SERIAL", requires = "device")]
    pub destroy_data_on: Option<String>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// The model file to write.
    #[arg(long, short)]
    pub out: PathBuf,
    /// The preset the fit starts from: the drive's class (its RPM, zones, queue depth).
    #[arg(long, default_value = "hdd-7200")]
    pub base: String,
    /// The drive's capacity, e.g. 2t [default: the base preset's].
    #[arg(long, value_parser = parsed::<Bytes>)]
    pub capacity: Option<Bytes>,
    /// The model's name [default: the output file's name without .toml].
    #[arg(long)]
    pub name: Option<String>,
}

#[derive(Debug, Args)]
pub struct RiskArgs {
    /// RAID level.
    #[arg(long, default_value = "raid6", value_parser = parsed::<Level>)]
    pub level: Level,
    /// Member disks.
    #[arg(long, default_value_t = 8)]
    pub disks: u32,
    /// md layout [default: md's default for the level].
    #[arg(long, value_parser = parsed::<Layout>)]
    pub layout: Option<Layout>,
    /// The disk model (a preset or a model file): its capacity, and with it the rebuild time
    /// when --rebuild is not given.
    #[arg(long, default_value = "hdd-7200-16t-2019")]
    pub disk: String,
    /// Annualised failure rate of a member (Backblaze's 2024 drive stats: 1.57 %).
    #[arg(long, default_value_t = 0.0157)]
    pub afr: f64,
    /// Weibull shape of member lifetimes: 1 is exponential; Elerath & Pecht (2009) fit 1.12
    /// to field data.
    #[arg(long, default_value_t = 1.12)]
    pub shape: f64,
    /// Rebuild time, e.g. 30h [default: md's recovery of a whole member of the disk model,
    /// simulated (idle array, or under --rebuild-load), over five seeds]
    #[arg(long, value_parser = parsed::<Nanos>)]
    pub rebuild: Option<Nanos>,
    /// Simulate the rebuild while 4 KiB random reads run at this queue depth (0: an idle
    /// array). Under load md's governor decides how fast a rebuild goes, and with it how
    /// long the array runs without redundancy.
    #[arg(long, default_value_t = 0)]
    pub rebuild_load: u32,
    /// The kernel whose rebuild governor paces a loaded rebuild: 6.16, 6.15 (Linux 4.1 to
    /// 6.15) or 4.0 (older).
    #[arg(long, default_value = "6.16", value_parser = parsed::<Governor>)]
    pub kernel: Governor,
    /// Unrecoverable read errors per bit read during a rebuild with no redundancy left
    /// (datasheets: 1e-15 enterprise, 1e-14 desktop; 0: none).
    #[arg(long, default_value_t = 1e-15)]
    pub ure: f64,
    /// Mission time in years.
    #[arg(long, default_value_t = 5.0)]
    pub years: f64,
    #[arg(long, default_value_t = 1_000_000)]
    pub trials: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  raidlab advise --disks 8 --disk hdd-7200-16t-2019 \\\n      --workload randrw:4k:qd16:70 --workload read:1m:qd32 \\\n      --min-usable 80t --min-failures 2 --years 5"
)]
pub struct AdviseArgs {
    /// Advise on the arrays of this results directory instead, from the figures it holds
    /// (measured, or simulated by a plan): its workloads, degraded and rebuilding cases
    /// where it has them. The search flags (--disks, --disk, --workload, --chunks …) do
    /// not apply; the constraints do.
    #[arg(value_name = "RESULTS_DIR")]
    pub results: Option<PathBuf>,
    /// Disk counts to consider: a count (8), a list (6,8,12) or a range (6-12).
    #[arg(long, default_value = "8")]
    pub disks: String,
    /// The disk model: a preset (`raidlab disks --models`) or a model file.
    #[arg(long, default_value = "hdd-7200-16t-2019")]
    pub disk: String,
    /// A workload as rw:bs:qdN[:read%], e.g. randwrite:4k:qd16, read:1m:qd32,
    /// randrw:4k:qd16:70 (repeatable; layouts are ranked over all of them).
    #[arg(long = "workload", required_unless_present_any = ["workloads_from", "results"], value_parser = parsed::<raidlab_advise::WorkloadSpec>)]
    pub workloads: Vec<raidlab_advise::WorkloadSpec>,
    /// Take the workloads of this plan file's [workloads] too (rw, bs, iodepth, rwmixread;
    /// every combination its lists make).
    #[arg(long, value_name = "PLAN")]
    pub workloads_from: Option<PathBuf>,
    /// Usable capacity at least this, e.g. 80t (sizes count in 1024s, as fio's: 80t = 80 TiB).
    #[arg(long, value_parser = parsed::<Bytes>)]
    pub min_usable: Option<Bytes>,
    /// Member failures the array must survive in the worst case (two in one raid10 mirror
    /// pair lose data, so raid10 n2 survives 1); 0 lets raid0 in.
    #[arg(long, default_value_t = 1)]
    pub min_failures: u32,
    /// A whole member's rebuild under the workload at most this long, e.g. 48h.
    #[arg(long, value_parser = parsed::<Nanos>)]
    pub max_rebuild: Option<Nanos>,
    /// Probability of losing data over the mission at most this, e.g. 1% or 0.01.
    #[arg(long, value_parser = share)]
    pub max_loss: Option<f64>,
    /// Performance with a member gone at least this share of healthy, e.g. 50% or 0.5.
    #[arg(long, value_parser = share)]
    pub min_degraded: Option<f64>,
    /// Performance while a member rebuilds at least this share of healthy, e.g. 30% (an
    /// unpaced rebuild, such as btrfs replace, is quick because it takes the disks from
    /// the workload).
    #[arg(long, value_parser = share)]
    pub min_rebuilding: Option<f64>,
    /// Mission time in years (for the probability of losing data).
    #[arg(long, default_value_t = 5.0)]
    pub years: f64,
    /// Who may build the array, comma-separated: md (its levels, layouts, chunks), btrfs
    /// (its profiles, simulated as their md shape, rebuilt by `btrfs replace`).
    #[arg(long, default_value = "md,btrfs", value_delimiter = ',', value_parser = parsed::<raidlab_core::Engine>)]
    pub engines: Vec<raidlab_core::Engine>,
    /// Chunk sizes to consider, comma-separated (md).
    #[arg(long, default_value = "64k,128k,512k", value_delimiter = ',')]
    pub chunks: Vec<String>,
    /// md write-intent bitmaps to consider on redundant levels, comma-separated: none,
    /// internal (both: every layout with and without; a bitmap costs writes, saves resyncs).
    #[arg(long, default_value = "none", value_delimiter = ',')]
    pub bitmaps: Vec<String>,
    /// raid5/6 stripe cache sizes to consider, comma-separated (md's stripe_cache_size,
    /// 4 KiB pages per member; md's default is 256; a larger cache gathers more writes
    /// into full stripes, at 4 KiB × members of memory per entry).
    #[arg(
        long,
        default_value = "256",
        value_delimiter = ',',
        value_name = "PAGES"
    )]
    pub stripe_caches: Vec<u32>,
    /// The test region of each workload (a file of this size on the array).
    #[arg(long, default_value = "100g")]
    pub size: String,
    /// Simulated time of each case.
    #[arg(long, default_value = "10s")]
    pub runtime: String,
    /// The kernel whose md rebuild governor paces a rebuild under load: 6.16, 6.15 or 4.0.
    #[arg(long, default_value = "6.16")]
    pub kernel: String,
    /// The file system of the printed commands and the plan file.
    #[arg(long, default_value = "xfs")]
    pub filesystem: String,
    /// Output: table, md or json (json lists every candidate with its figures).
    #[arg(long, default_value = "table", value_parser = ["table", "md", "json"])]
    pub format: String,
    /// Kept candidates shown in the table.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// The runtime of each case in the plan file (on real disks).
    #[arg(long, default_value = "60s")]
    pub plan_runtime: String,
    /// Write a plan file of the top pick here (healthy, degraded and rebuilding under the
    /// workloads), to check it with `raidlab run … --target host`.
    #[arg(long)]
    pub plan_out: Option<PathBuf>,
    /// Also write the advice as an HTML page: a chart per workload of the ranked layouts,
    /// the table, what was cut and why, and the top pick's commands.
    #[arg(long, short, visible_alias = "out", value_name = "FILE.html")]
    pub output: Option<PathBuf>,
    /// Where simulated figures are cached [default: $XDG_CACHE_HOME/raidlab/advise or
    /// ~/.cache/raidlab/advise].
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Simulate everything again, without reading or writing the cache.
    #[arg(long, conflicts_with = "cache")]
    pub no_cache: bool,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// A share: `50%` or `0.5`.
fn share(s: &str) -> Result<f64, String> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|p| p / 100.0),
        None => s.trim().parse::<f64>(),
    };
    v.ok()
        .filter(|v| (0.0..=1.0).contains(v))
        .ok_or_else(|| format!("{s:?}: write a share from 0 to 1, or a percentage (50%)"))
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline results directory (with --by: the directory whose cases are paired).
    pub a: PathBuf,
    /// The results directory compared with it (none with --by).
    pub b: Option<PathBuf>,
    /// Pair A's and B's results by these dimensions, comma-separated (level,rw,bs,iodepth),
    /// instead of by case id: results of other plans, disks, kernels or targets.
    #[arg(
        long = "match",
        value_delimiter = ',',
        value_name = "DIMS",
        requires = "b"
    )]
    pub match_dims: Vec<String>,
    /// Pair the results of one directory that differ only in this dimension (bitmap,
    /// chunk, level, write_cache, model, target, …): each value against the first.
    #[arg(long, value_name = "DIM")]
    pub by: Option<String>,
    /// With --by: the value the others are held against [default: the first in natural
    /// order].
    #[arg(long, requires = "by", value_name = "VALUE")]
    pub baseline: Option<String>,
    /// table, csv, json, md, or html (a page with a chart per metric).
    #[arg(long, default_value = "table", value_parser = compare_format())]
    pub format: CompareFormat,
    /// Write to this file instead of standard output.
    #[arg(long, short, visible_alias = "output", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `compare --format`: its words, offered to completions and `--help`.
fn compare_format() -> impl TypedValueParser<Value = CompareFormat> {
    PossibleValuesParser::new(CompareFormat::NAMES)
        .map(|s| s.parse::<CompareFormat>().expect("a possible value parses"))
}

/// `--target`: the words of [`TargetKind`], offered to completions and `--help`.
fn target_kind() -> impl TypedValueParser<Value = TargetKind> {
    PossibleValuesParser::new(TargetKind::ALL.map(TargetKind::name))
        .map(|s| s.parse::<TargetKind>().expect("a possible value parses"))
}
