//! A timed member as a vhost-user block device: qemu hands the guest's virtio-blk queues
//! to this process (`-device vhost-user-blk-pci`), which takes each request straight from
//! the guest's ring, does its I/O on the member's file and puts it in the used ring when
//! the model completes it.
//!
//! Why not NBD for the VM lab: qemu's NBD client hands a member's answer to the guest
//! only when it reads the next one whenever two commands are in flight (its
//! `receive_mutex`; docs/vm-lab.md), so a guest behind it saw every answer late by a
//! service time. Here nothing stands between the model's completion and the guest's
//! interrupt but an eventfd.
//!
//! The device is what qemu's own virtio-blk offers the lab's guest: two queues of 256
//! descriptors (one per vCPU), 254 segments a request (or the model's `max_segments`: a
//! SATA model's 168, so the guest merges md's pages into requests no larger than on that
//! port), indirect descriptors, flushes and discards, and the serial the lab finds its
//! members by (`GET_ID`). The request format is
//! the virtio specification's (`virtio-v1.2`, 5.2 Block Device).

use crate::clock::{Command, Kind};
use crate::punch;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use vhost::vhost_user::message::{VhostUserProtocolFeatures, VhostUserVirtioFeatures};
use vhost_user_backend::{VhostUserBackend, VringRwLock, VringT};
use virtio_queue::QueueT;
use vm_memory::{Bytes, GuestAddress, GuestAddressSpace, GuestMemoryAtomic, GuestMemoryMmap};
use vmm_sys_util::epoll::EventSet;
use vmm_sys_util::event::{
    new_event_consumer_and_notifier, EventConsumer, EventFlag, EventNotifier,
};

/// Queues, and descriptors a queue: what qemu's virtio-blk gives a guest of two vCPUs.
pub const QUEUES: usize = 2;
pub const QUEUE_SIZE: usize = 256;
/// Segments a request at most: the queue size less the header's and the status's
/// descriptors (what qemu's virtio-blk offers). A member whose model bounds its segments
/// (`max_segments`: a SATA port's 168) offers that instead, so the guest's block layer
/// builds requests as large as on the port the model stands for.
pub const SEG_MAX: u32 = QUEUE_SIZE as u32 - 2;
// The simulator's figure for a virtio-blk member (a `throttle` model's, and md's requests
// on it) is this device's: one fact, held so at compile time.
const _: () = assert!(SEG_MAX == raidlab_core::disk::VIRTIO_SEGMENTS);

// Feature bits (virtio-v1.2 5.2.3, 6).
const F_SEG_MAX: u64 = 1 << 2;
const F_BLK_SIZE: u64 = 1 << 6;
const F_FLUSH: u64 = 1 << 9;
const F_MQ: u64 = 1 << 12;
const F_DISCARD: u64 = 1 << 13;
const F_INDIRECT_DESC: u64 = 1 << 28;
const F_VERSION_1: u64 = 1 << 32;

// Request types and statuses (virtio-v1.2 5.2.6).
const T_IN: u32 = 0;
const T_OUT: u32 = 1;
const T_FLUSH: u32 = 4;
const T_GET_ID: u32 = 8;
const T_DISCARD: u32 = 11;
const S_OK: u8 = 0;
const S_IOERR: u8 = 1;
const S_UNSUPP: u8 = 2;

/// The largest discard the device takes, in sectors, and in segments.
const MAX_DISCARD_SECTORS: u32 = u32::MAX >> 9;
const MAX_DISCARD_SEG: u32 = 1;

/// The device's configuration space (`struct virtio_blk_config`), little-endian, as far
/// as the offered features reach.
pub fn config(size: u64, seg_max: u32) -> Vec<u8> {
    let mut c = vec![0u8; 60];
    c[0..8].copy_from_slice(&(size >> 9).to_le_bytes());
    c[12..16].copy_from_slice(&seg_max.clamp(1, SEG_MAX).to_le_bytes());
    c[20..24].copy_from_slice(&512u32.to_le_bytes());
    c[34..36].copy_from_slice(&(QUEUES as u16).to_le_bytes());
    c[36..40].copy_from_slice(&MAX_DISCARD_SECTORS.to_le_bytes());
    c[40..44].copy_from_slice(&MAX_DISCARD_SEG.to_le_bytes());
    c[44..48].copy_from_slice(&1u32.to_le_bytes());
    c
}

/// A request's header (`struct virtio_blk_outhdr`): its type and first sector.
fn header(b: &[u8]) -> Option<(u32, u64)> {
    if b.len() < 16 {
        return None;
    }
    let kind = u32::from_le_bytes(b[0..4].try_into().ok()?);
    let sector = u64::from_le_bytes(b[8..16].try_into().ok()?);
    Some((kind, sector))
}

/// The byte range a request of `len` bytes at `sector` covers, if the member has it.
fn range(sector: u64, len: u64, size: u64) -> Option<u64> {
    let offset = sector.checked_mul(512)?;
    (offset.checked_add(len)? <= size).then_some(offset)
}

/// The ranges a discard's segments name (`struct virtio_blk_discard_write_zeroes`), in
/// bytes, if the member has them all.
fn discards(b: &[u8], size: u64) -> Option<Vec<(u64, u64)>> {
    if !b.len().is_multiple_of(16) {
        return None;
    }
    b.chunks(16)
        .map(|s| {
            let sector = u64::from_le_bytes(s[0..8].try_into().ok()?);
            let len = u64::from(u32::from_le_bytes(s[8..12].try_into().ok()?)) << 9;
            Some((range(sector, len, size)?, len))
        })
        .collect()
}

/// The serial a `GET_ID` answers: 20 bytes, padded with zeros.
fn serial_bytes(serial: &str) -> [u8; 20] {
    let mut b = [0u8; 20];
    let s = serial.as_bytes();
    let n = s.len().min(20);
    b[..n].copy_from_slice(&s[..n]);
    b
}

type Memory = GuestMemoryAtomic<GuestMemoryMmap>;

/// Hand the request at `head` back to the guest, `written` bytes of it written (its status
/// byte included), and interrupt it.
fn give_back(vring: &VringRwLock, head: u16, written: u64) {
    let _ = vring.add_used(head, written as u32);
    let _ = vring.signal_used_queue();
}

struct Inner {
    file: Arc<File>,
    size: u64,
    serial: String,
    /// Segments a request ([`SEG_MAX`] or fewer).
    seg_max: u32,
    mem: Mutex<Option<Memory>>,
    /// The member's clock; taken away when the member stops, which lets the clock end.
    commands: Mutex<Option<Sender<Command>>>,
}

/// The backend: one member, all its queues.
#[derive(Clone)]
pub struct Blk(Arc<Inner>);

impl Blk {
    pub fn new(
        file: Arc<File>,
        size: u64,
        serial: String,
        seg_max: u32,
        commands: Sender<Command>,
    ) -> Blk {
        Blk(Arc::new(Inner {
            file,
            size,
            serial,
            seg_max,
            mem: Mutex::new(None),
            commands: Mutex::new(Some(commands)),
        }))
    }

    /// Let go of the member's clock: requests that come after are failed.
    pub fn close(&self) {
        self.0
            .commands
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }

    /// Take every request the guest made available on `vring`.
    fn drain(&self, vring: &VringRwLock) -> io::Result<()> {
        let Some(mem) = self.0.mem.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
            return Ok(());
        };
        loop {
            // The guest may add requests while this thread takes them: look again after
            // asking it to notify, as a virtio device must.
            vring
                .disable_notification()
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
            loop {
                let chain = vring
                    .get_mut()
                    .get_queue_mut()
                    .pop_descriptor_chain(mem.memory());
                let Some(chain) = chain else { break };
                let head = chain.head_index();
                let segments: Vec<(GuestAddress, u32, bool)> = chain
                    .map(|d| (d.addr(), d.len(), d.is_write_only()))
                    .collect();
                self.request(&mem, vring, head, &segments);
            }
            let more = vring
                .enable_notification()
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
            if !more {
                return Ok(());
            }
        }
    }

    /// One request: its I/O on the file now, its answer when the model completes it (at
    /// once for what the model does not time: an ID, a discard, an error).
    fn request(
        &self,
        mem: &Memory,
        vring: &VringRwLock,
        head: u16,
        segments: &[(GuestAddress, u32, bool)],
    ) {
        let m = mem.memory();
        let readable: Vec<_> = segments.iter().filter(|s| !s.2).collect();
        let writable: Vec<_> = segments.iter().filter(|s| s.2).collect();
        // A request the guest's driver never makes (nowhere to put the status, a
        // descriptor outside its memory) goes back unanswered, so the ring does not leak.
        let malformed = || give_back(vring, head, 0);
        let mut input = Vec::new();
        for &&(addr, len, _) in &readable {
            let start = input.len();
            input.resize(start + len as usize, 0);
            if m.read_slice(&mut input[start..], addr).is_err() {
                return malformed();
            }
        }
        // The status is the last writable byte; what comes before it is the data.
        let Some(&&(last_addr, last_len, _)) = writable.last() else {
            return malformed();
        };
        if last_len == 0 {
            return malformed();
        }
        let status_at = GuestAddress(last_addr.0 + u64::from(last_len) - 1);
        let mut out_segments: Vec<(GuestAddress, u64)> = writable
            .iter()
            .map(|&&(a, l, _)| (a, u64::from(l)))
            .collect();
        if let Some(l) = out_segments.last_mut() {
            l.1 -= 1;
        }
        let data_in: u64 = out_segments.iter().map(|s| s.1).sum();
        let answer = |status: u8, used: u64| {
            let _ = m.write_slice(&[status], status_at);
            give_back(vring, head, used + 1);
        };
        let Some((kind, sector)) = header(&input) else {
            return answer(S_IOERR, 0);
        };
        let body = &input[16..];
        let size = self.0.size;
        let file = &self.0.file;
        let (what, offset, len, used) = match kind {
            T_IN => {
                let Some(offset) = range(sector, data_in, size) else {
                    return answer(S_IOERR, 0);
                };
                let mut buf = vec![0u8; data_in as usize];
                if file.read_exact_at(&mut buf, offset).is_err() {
                    return answer(S_IOERR, 0);
                }
                let mut at = 0usize;
                for &(addr, l) in &out_segments {
                    let end = at + l as usize;
                    if m.write_slice(&buf[at..end], addr).is_err() {
                        return answer(S_IOERR, 0);
                    }
                    at = end;
                }
                (Kind::Read, offset, data_in, data_in)
            }
            T_OUT => {
                let len = body.len() as u64;
                let Some(offset) = range(sector, len, size) else {
                    return answer(S_IOERR, 0);
                };
                if file.write_all_at(body, offset).is_err() {
                    return answer(S_IOERR, 0);
                }
                (Kind::Write, offset, len, 0)
            }
            T_FLUSH => (Kind::Flush, 0, 0, 0),
            T_GET_ID => {
                let id = serial_bytes(&self.0.serial);
                let mut at = 0usize;
                for &(addr, l) in &out_segments {
                    let n = (l as usize).min(id.len() - at);
                    let _ = m.write_slice(&id[at..at + n], addr);
                    at += n;
                }
                return answer(S_OK, at as u64);
            }
            // The VM lab blanks the members between cases (`raidlab guest`): the range is
            // punched out of the file and reads as zeros. Not a command of the model's,
            // so neither timed nor counted.
            T_DISCARD => {
                let ok = discards(body, size).is_some_and(|ranges| {
                    ranges
                        .iter()
                        .all(|&(offset, len)| punch(file, offset, len).is_ok())
                });
                return answer(if ok { S_OK } else { S_IOERR }, 0);
            }
            _ => return answer(S_UNSUPP, 0),
        };
        let _ = m.write_slice(&[S_OK], status_at);
        let v = vring.clone();
        let command = Command {
            kind: what,
            offset,
            len,
            reply: Box::new(move || give_back(&v, head, used + 1)),
        };
        let sent = self
            .0
            .commands
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|c| c.send(command));
        if !matches!(sent, Some(Ok(()))) {
            answer(S_IOERR, 0);
        }
    }
}

impl VhostUserBackend for Blk {
    type Bitmap = ();
    type Vring = VringRwLock;

    fn num_queues(&self) -> usize {
        QUEUES
    }

    fn max_queue_size(&self) -> usize {
        QUEUE_SIZE
    }

    fn features(&self) -> u64 {
        F_SEG_MAX
            | F_BLK_SIZE
            | F_FLUSH
            | F_MQ
            | F_DISCARD
            | F_INDIRECT_DESC
            | F_VERSION_1
            | VhostUserVirtioFeatures::PROTOCOL_FEATURES.bits()
    }

    fn protocol_features(&self) -> VhostUserProtocolFeatures {
        VhostUserProtocolFeatures::CONFIG | VhostUserProtocolFeatures::MQ
    }

    fn set_event_idx(&self, _enabled: bool) {}

    /// What stops the queue thread when qemu has gone (without it, nothing would).
    fn exit_event(&self, _thread_index: usize) -> Option<(EventConsumer, EventNotifier)> {
        new_event_consumer_and_notifier(EventFlag::NONBLOCK).ok()
    }

    fn get_config(&self, offset: u32, size: u32) -> Vec<u8> {
        let c = config(self.0.size, self.0.seg_max);
        let mut out = vec![0u8; size as usize];
        let from = (offset as usize).min(c.len());
        let n = (c.len() - from).min(out.len());
        out[..n].copy_from_slice(&c[from..from + n]);
        out
    }

    fn update_memory(&self, mem: Memory) -> io::Result<()> {
        *self.0.mem.lock().unwrap_or_else(|e| e.into_inner()) = Some(mem);
        Ok(())
    }

    fn handle_event(
        &self,
        device_event: u16,
        _evset: EventSet,
        vrings: &[VringRwLock],
        _thread_id: usize,
    ) -> io::Result<()> {
        match vrings.get(device_event as usize) {
            Some(v) => self.drain(v),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_space_says_what_the_guest_gets() {
        let c = config(4 << 30, SEG_MAX);
        assert_eq!(u64::from_le_bytes(c[0..8].try_into().unwrap()), 8 << 20);
        assert_eq!(u32::from_le_bytes(c[12..16].try_into().unwrap()), 254);
        // A SATA model's 168; never more than the queue holds.
        let seg = |c: Vec<u8>| u32::from_le_bytes(c[12..16].try_into().unwrap());
        assert_eq!(seg(config(4 << 30, 168)), 168);
        assert_eq!(seg(config(4 << 30, 4096)), 254);
        assert_eq!(u32::from_le_bytes(c[20..24].try_into().unwrap()), 512);
        assert_eq!(u16::from_le_bytes(c[34..36].try_into().unwrap()), 2);
    }

    #[test]
    fn requests_outside_the_member_are_refused() {
        assert_eq!(range(8, 4096, 1 << 20), Some(4096));
        assert_eq!(
            range((1 << 20) / 512 - 8, 4096, 1 << 20),
            Some((1 << 20) - 4096)
        );
        assert_eq!(range((1 << 20) / 512 - 7, 4096, 1 << 20), None);
        assert_eq!(range(u64::MAX, 1, u64::MAX), None);
        let mut seg = Vec::new();
        seg.extend_from_slice(&16u64.to_le_bytes());
        seg.extend_from_slice(&8u32.to_le_bytes());
        seg.extend_from_slice(&0u32.to_le_bytes());
        assert_eq!(discards(&seg, 1 << 20), Some(vec![(8192, 4096)]));
        assert_eq!(discards(&seg, 8192), None);
        assert_eq!(discards(&seg[..15], 1 << 20), None);
    }

    #[test]
    fn header_and_serial() {
        let mut h = vec![0u8; 16];
        h[0] = 1;
        h[8..16].copy_from_slice(&77u64.to_le_bytes());
        assert_eq!(header(&h), Some((T_OUT, 77)));
        assert_eq!(header(&h[..15]), None);
        assert_eq!(&serial_bytes("d3")[..3], b"d3\0");
        assert_eq!(
            serial_bytes("a-serial-longer-than-twenty"),
            *b"a-serial-longer-than"
        );
    }
}
