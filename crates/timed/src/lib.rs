//! Timed members: a member disk for the VM lab whose every command takes the time a
//! raidlab disk model says it takes, so that the real kernel md in the guest meets disks
//! that seek, rotate, queue and cache as the simulator's do.
//!
//! Each member is a sparse file served on a unix socket, over NBD ([`nbd`]: qemu's NBD
//! client, `qemu-io`, `qemu-img bench`) or as a vhost-user block device ([`vhost_blk`]: the VM
//! lab's guest sees a virtio disk whose queues this process serves). Data goes to the file at once;
//! the answer goes back when the model, driven by the wall clock ([`clock`]), completes
//! the command. The model is the simulator's own device (`raidlab_sim::device`), not a
//! copy. Each member counts its commands and how late it answered against the model's
//! schedule, so a result says how faithful its timing was.

pub mod clock;
pub mod nbd;
pub mod vhost_blk;

use clock::{Command, Kind, Live};
use raidlab_core::disk::{DiskKind, DiskModel};
use raidlab_core::Scheduler;
use raidlab_sim::device::{Hdd, Ssd, Throttle};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One timed member to serve.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The unix socket qemu connects to (created; an old socket there is replaced, any
    /// other file refused).
    pub socket: PathBuf,
    /// The sparse file that holds the member's data (created at `size` if absent).
    pub file: PathBuf,
    /// The member's size as the guest sees it: the first `size` bytes of the model's
    /// surface (its outer zones), as `span` keeps a test region at a disk's start.
    pub size: u64,
    pub model: DiskModel,
    pub write_cache: bool,
    /// The scheduler above the drive's own queue in the model. The guest has its own;
    /// qemu's NBD client keeps at most 16 commands in flight, below any preset's queue.
    pub scheduler: Scheduler,
    /// Seeds the platter's starting angle and the firmware's estimate errors.
    pub seed: u64,
    pub transport: Transport,
}

/// How the member is served on its socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// An NBD server, for any number of connections one after another.
    Nbd,
    /// A vhost-user block device for one qemu (`-device vhost-user-blk-pci`), whose guest
    /// reads `serial` as the disk's ID.
    VhostUser { serial: String },
}

/// A member being served; [`TimedMember::finish`] stops it.
pub struct TimedMember {
    stop: Arc<AtomicBool>,
    /// The vhost-user device, whose hold on the clock `finish` lets go of.
    vhost: Option<vhost_blk::Blk>,
    live: Arc<Mutex<Live>>,
    acceptor: Option<JoinHandle<()>>,
    clock: Option<JoinHandle<()>>,
    socket: PathBuf,
}

/// What a member did over a stretch of time, as a result stores it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemberStats {
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// The model's media time (positioning and transfer), seconds.
    pub busy_s: f64,
    /// Most commands held at once, since the member started.
    pub max_outstanding: usize,
    /// Commands held on average over the stretch: the member's queue depth.
    pub mean_outstanding: f64,
    /// Commands the model positioned for (a seek, a rotational wait, or both) rather than
    /// streaming on from the last transfer.
    pub seeks: u64,
    /// Writes the model acknowledged from its volatile cache.
    pub cache_hits: u64,
    /// How late answers were against the model's schedule, µs.
    pub lateness_p50_us: u32,
    pub lateness_p99_us: u32,
    pub lateness_max_us: u32,
}

/// A point in a member's life, to count from ([`TimedMember::since`]).
#[derive(Debug, Clone, Default)]
pub struct Mark(Live);

/// Why a member cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum TimedError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

fn at(path: &Path) -> impl FnOnce(io::Error) -> TimedError + '_ {
    move |source| TimedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl TimedMember {
    /// Bind the socket and start the member's clock; qemu may connect from now on.
    pub fn start(spec: &Spec) -> Result<TimedMember, TimedError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&spec.file)
            .map_err(at(&spec.file))?;
        if file.metadata().map_err(at(&spec.file))?.len() < spec.size {
            file.set_len(spec.size).map_err(at(&spec.file))?;
        }
        // A socket left by an earlier member is replaced; anything else there is not ours.
        use std::os::unix::fs::FileTypeExt;
        if std::fs::symlink_metadata(&spec.socket).is_ok_and(|m| m.file_type().is_socket()) {
            let _ = std::fs::remove_file(&spec.socket);
        }
        // Bound here, before qemu is started, whichever the transport.
        let listener = UnixListener::bind(&spec.socket).map_err(at(&spec.socket))?;

        let live = Arc::new(Mutex::new(Live::default()));
        let (tx, rx) = channel::<Command>();
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let l = live.clone();
        let clock = match &spec.model.kind {
            DiskKind::Hdd(p) => {
                let m = Hdd::new(p, spec.write_cache, spec.scheduler, &mut rng);
                std::thread::spawn(move || clock::run(m, rx, l))
            }
            DiskKind::Ssd(p) => {
                let m = Ssd::new(p);
                std::thread::spawn(move || clock::run(m, rx, l))
            }
            DiskKind::Throttle(p) => {
                let m = Throttle::new(p);
                std::thread::spawn(move || clock::run(m, rx, l))
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let file = Arc::new(file);
        let size = spec.size;
        let s = stop.clone();
        let (acceptor, vhost) = match &spec.transport {
            Transport::Nbd => {
                // The acceptor polls, so that it sees `stop` between connections.
                listener.set_nonblocking(true).map_err(at(&spec.socket))?;
                (
                    std::thread::spawn(move || accept(listener, file, size, tx, s)),
                    None,
                )
            }
            Transport::VhostUser { serial } => {
                let seg_max = spec.model.max_segments().unwrap_or(vhost_blk::SEG_MAX);
                let blk = vhost_blk::Blk::new(file, size, serial.clone(), seg_max, tx);
                let b = blk.clone();
                (
                    std::thread::spawn(move || vhost_serve(listener, b)),
                    Some(blk),
                )
            }
        };
        Ok(TimedMember {
            stop,
            vhost,
            live,
            acceptor: Some(acceptor),
            clock: Some(clock),
            socket: spec.socket.clone(),
        })
    }

    /// Where the member stands now.
    pub fn mark(&self) -> Mark {
        Mark(self.live.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// What the member did since `mark` (since it started, for `Mark::default()`).
    pub fn since(&self, mark: &Mark) -> MemberStats {
        let now = self.mark();
        stats_between(&mark.0, &now.0)
    }

    /// Stop accepting, wait until the client closed its connection and every command it
    /// sent is answered, and say what the member did in all.
    pub fn finish(mut self) -> MemberStats {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(b) = self.vhost.take() {
            // A frontend that never came is stood in for by a connection that closes at
            // once, which ends the device's wait for one.
            if self.acceptor.as_ref().is_some_and(|a| !a.is_finished()) {
                let _ = UnixStream::connect(&self.socket);
            }
            b.close();
        }
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
        if let Some(c) = self.clock.take() {
            let _ = c.join();
        }
        let _ = std::fs::remove_file(&self.socket);
        self.since(&Mark::default())
    }
}

impl Drop for TimedMember {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn stats_between(a: &Live, b: &Live) -> MemberStats {
    let mut late: Vec<u32> = b.lateness_us[a.lateness_us.len().min(b.lateness_us.len())..].to_vec();
    late.sort_unstable();
    let pct = |p: f64| -> u32 {
        if late.is_empty() {
            0
        } else {
            late[((late.len() - 1) as f64 * p).round() as usize]
        }
    };
    MemberStats {
        reads: b.reads - a.reads,
        writes: b.writes - a.writes,
        flushes: b.flushes - a.flushes,
        read_bytes: b.read_bytes - a.read_bytes,
        write_bytes: b.write_bytes - a.write_bytes,
        busy_s: (b.busy.0 - a.busy.0) as f64 / 1e9,
        max_outstanding: b.max_outstanding,
        mean_outstanding: if b.at > a.at {
            (b.held_ns - a.held_ns) as f64 / (b.at.0 - a.at.0) as f64
        } else {
            0.0
        },
        seeks: b.seeks - a.seeks,
        cache_hits: b.cache_acks - a.cache_acks,
        lateness_p50_us: pct(0.5),
        lateness_p99_us: pct(0.99),
        lateness_max_us: late.last().copied().unwrap_or(0),
    }
}

/// Accept connections until told to stop; each is served by its own reader and writer.
/// Returns once every connection has closed.
fn accept(
    listener: UnixListener,
    file: Arc<File>,
    size: u64,
    commands: Sender<Command>,
    stop: Arc<AtomicBool>,
) {
    let mut sessions = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                let (f, c) = (file.clone(), commands.clone());
                sessions.push(std::thread::spawn(move || {
                    let _ = serve(stream, &f, size, c);
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => break,
        }
    }
    drop(commands);
    for s in sessions {
        let _ = s.join();
    }
}

/// Serve one vhost-user frontend on `listener` until it disconnects, then stop the
/// device's queue threads.
fn vhost_serve(listener: UnixListener, blk: vhost_blk::Blk) {
    use vhost_user_backend::VhostUserDaemon;
    use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};
    let mem = GuestMemoryAtomic::new(GuestMemoryMmap::new());
    let Ok(mut daemon) = VhostUserDaemon::new("raidlab-timed".into(), blk.clone(), mem) else {
        return;
    };
    let mut l = ::vhost::vhost_user::Listener::from(listener);
    if daemon.start(&mut l).is_ok() {
        let _ = daemon.wait();
    }
    for h in daemon.get_epoll_handlers() {
        h.send_exit_event();
    }
    blk.close();
}

/// A reply on its way to the client.
struct Reply {
    cookie: u64,
    error: u32,
    data: Vec<u8>,
}

/// One connection: negotiate, then read requests, do their I/O on the file, and hand them
/// to the clock, whose answers a writer thread sends back in completion order.
fn serve(
    mut stream: UnixStream,
    file: &File,
    size: u64,
    commands: Sender<Command>,
) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    if !nbd::handshake(&mut stream, size)? {
        return Ok(());
    }
    let (wtx, wrx) = channel::<Reply>();
    let out = stream.try_clone()?;
    let writer = std::thread::spawn(move || {
        let mut w = BufWriter::new(out);
        while let Ok(r) = wrx.recv() {
            if nbd::write_reply(&mut w, r.cookie, r.error, &r.data).is_err() {
                break;
            }
            // Replies ready at the same moment leave together.
            let mut ok = true;
            while let Ok(r) = wrx.try_recv() {
                ok &= nbd::write_reply(&mut w, r.cookie, r.error, &r.data).is_ok();
            }
            if !ok || w.flush().is_err() {
                break;
            }
        }
    });
    let mut input = io::BufReader::new(stream);
    let result = (|| -> io::Result<()> {
        while let Some(req) = nbd::read_request(&mut input)? {
            let len = req.len as u64;
            let inside = req.offset.checked_add(len).is_some_and(|end| end <= size);
            let reply_now = |error: u32| {
                let _ = wtx.send(Reply {
                    cookie: req.cookie,
                    error,
                    data: Vec::new(),
                });
            };
            let (kind, data) = match req.kind {
                nbd::CMD_READ => {
                    if !inside {
                        reply_now(nbd::EINVAL);
                        continue;
                    }
                    let mut buf = vec![0u8; req.len as usize];
                    if file.read_exact_at(&mut buf, req.offset).is_err() {
                        reply_now(nbd::EIO);
                        continue;
                    }
                    (Kind::Read, buf)
                }
                nbd::CMD_WRITE => {
                    let mut buf = vec![0u8; req.len as usize];
                    input.read_exact(&mut buf)?;
                    if !inside {
                        reply_now(nbd::EINVAL);
                        continue;
                    }
                    if file.write_all_at(&buf, req.offset).is_err() {
                        reply_now(nbd::EIO);
                        continue;
                    }
                    let fua = req.flags & nbd::CMD_FLAG_FUA != 0;
                    (if fua { Kind::WriteFua } else { Kind::Write }, Vec::new())
                }
                nbd::CMD_FLUSH => (Kind::Flush, Vec::new()),
                // The VM lab blanks the members between cases (`raidlab guest`): the range
                // is punched out of the file and reads as zeros. Not a command of the
                // model's, so not timed nor counted.
                nbd::CMD_TRIM => {
                    reply_now(if !inside {
                        nbd::EINVAL
                    } else if punch(file, req.offset, len).is_err() {
                        nbd::EIO
                    } else {
                        0
                    });
                    continue;
                }
                nbd::CMD_DISC => return Ok(()),
                _ => {
                    reply_now(nbd::EINVAL);
                    continue;
                }
            };
            let w = wtx.clone();
            let cookie = req.cookie;
            let sent = commands.send(Command {
                kind,
                offset: req.offset,
                len,
                reply: Box::new(move || {
                    let _ = w.send(Reply {
                        cookie,
                        error: 0,
                        data,
                    });
                }),
            });
            if sent.is_err() {
                return Err(io::Error::other("the member's clock stopped"));
            }
        }
        Ok(())
    })();
    drop(wtx);
    let _ = writer.join();
    result
}

/// Deallocate `len` bytes of `file` at `offset`, keeping its size: they read as zeros.
pub(crate) fn punch(file: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain system call on an open descriptor; no memory is passed.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path) -> Spec {
        Spec {
            socket: dir.join("m.sock"),
            file: dir.join("m.img"),
            size: 1 << 20,
            model: DiskModel::preset("hdd-7200").unwrap(),
            write_cache: false,
            scheduler: Scheduler::None,
            seed: 1,
            transport: Transport::Nbd,
        }
    }

    /// A socket left behind is replaced; a file that is not a socket is never removed.
    #[test]
    fn only_a_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let s = spec(dir.path());
        let first = TimedMember::start(&s).unwrap();
        drop(first);
        let again = TimedMember::start(&s).expect("the old socket is replaced");
        assert_eq!(again.finish().reads, 0);
        std::fs::write(&s.socket, b"not a socket").unwrap();
        let e = TimedMember::start(&s)
            .err()
            .expect("a regular file is refused");
        assert!(e.to_string().contains("m.sock"), "{e}");
        assert_eq!(std::fs::read(&s.socket).unwrap(), b"not a socket");
    }

    /// A vhost-user member whose qemu never came (it failed to start) still stops, and
    /// its socket goes with it; one whose frontend connects and goes away without a
    /// word stops too.
    #[test]
    fn a_vhost_user_member_stops_without_a_frontend() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.transport = Transport::VhostUser {
            serial: "d0".into(),
        };
        let never = TimedMember::start(&s).unwrap();
        assert!(s.socket.exists(), "the socket is bound before qemu starts");
        assert_eq!(never.finish().reads, 0);
        assert!(!s.socket.exists(), "the socket is removed");
        let gone = TimedMember::start(&s).unwrap();
        drop(UnixStream::connect(&s.socket).unwrap());
        assert_eq!(gone.finish().writes, 0);
    }

    /// qemu's own NBD client (`qemu-io`) writes, discards and reads back: the discarded
    /// range reads as zeros and the file no longer holds it, the rest is kept.
    #[test]
    fn trim_punches_the_file() {
        if !raidlab_testkit::require(raidlab_testkit::on_path("qemu-io"), || {
            "qemu-io is not installed (Debian: qemu-utils)".into()
        }) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(dir.path());
        s.model = DiskModel::preset("nvme").unwrap();
        let m = TimedMember::start(&s).unwrap();
        let o = std::process::Command::new("qemu-io")
            .arg("--image-opts")
            .arg(format!(
                "driver=nbd,server.type=unix,server.path={},discard=unmap",
                s.socket.display()
            ))
            .args([
                "-c",
                "write -P 0x55 0 512k",
                "-c",
                "discard 0 256k",
                "-c",
                "read -P 0 0 256k",
                "-c",
                "read -P 0x55 256k 256k",
            ])
            .output()
            .unwrap();
        let out =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{out}");
        assert!(!out.contains("failed"), "{out}");
        use std::os::unix::fs::MetadataExt;
        let held = std::fs::metadata(&s.file).unwrap().blocks() * 512;
        assert!(
            (256 << 10..512 << 10).contains(&held),
            "the file holds {held} bytes: the discard did not punch it"
        );
        let stats = m.finish();
        assert_eq!(
            stats.writes, 1,
            "the write is the model's, the discard is not"
        );
    }

    /// A client that writes through (qemu-io's default; a qemu disk whose write cache is
    /// off) sends forced-unit-access writes, not a write and a flush each: the model sees
    /// two writes and only the flush qemu-io sends as it closes the image (three flushes
    /// without FUA), so neither write's answer waits behind the other's flush; and a model
    /// with its write cache on does not take them into it.
    #[test]
    fn write_through_is_fua_writes_not_flushes() {
        if !raidlab_testkit::require(raidlab_testkit::on_path("qemu-io"), || {
            "qemu-io is not installed (Debian: qemu-utils)".into()
        }) {
            return;
        }
        for write_cache in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let mut s = spec(dir.path());
            s.size = 4 << 20;
            s.write_cache = write_cache;
            let m = TimedMember::start(&s).unwrap();
            let o = std::process::Command::new("qemu-io")
                .args(["-t", "writethrough", "--image-opts"])
                .arg(format!(
                    "driver=nbd,server.type=unix,server.path={}",
                    s.socket.display()
                ))
                .args(["-c", "aio_write 0 960k", "-c", "aio_write 960k 960k"])
                .output()
                .unwrap();
            let out = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{out}");
            assert_eq!(out.matches("wrote 983040/983040").count(), 2, "{out}");
            let stats = m.finish();
            assert_eq!(
                (stats.writes, stats.flushes, stats.cache_hits),
                (2, 1, 0),
                "write cache {write_cache}: {out}"
            );
        }
    }
}
