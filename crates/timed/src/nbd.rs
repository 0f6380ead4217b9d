//! The NBD protocol, server side, as much of it as qemu's NBD client needs: the fixed
//! newstyle handshake (`NBD_OPT_GO`, with `NBD_OPT_EXPORT_NAME` for older clients) and
//! simple replies in the transmission phase. Structured replies, metadata contexts and
//! extended headers are declined, which every client must accept. The protocol is
//! `doc/proto.md` of the NBD project (github.com/NetworkBlockDevice/nbd).
//!
//! Why not a crate: the one on crates.io (`nbd`) answers one request at a time, and a
//! disk model needs every request the client has in flight (qemu keeps up to 16) to
//! reorder and complete them out of order.

use std::io::{self, Read, Write};

const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

const FLAG_FIXED_NEWSTYLE: u16 = 1;
const FLAG_NO_ZEROES: u16 = 2;

const OPT_EXPORT_NAME: u32 = 1;
const OPT_ABORT: u32 = 2;
const OPT_INFO: u32 = 6;
const OPT_GO: u32 = 7;

const REP_ACK: u32 = 1;
const REP_INFO: u32 = 3;
const REP_ERR_UNSUP: u32 = 0x8000_0001;
const INFO_EXPORT: u16 = 0;

/// Transmission flags: the export has flags, takes FLUSH, FUA and TRIM. FUA matters to a
/// client that writes through (qemu-io's default; a qemu disk whose write cache is off):
/// without it qemu follows every write with a FLUSH, which the model serves behind the
/// command it is busy with, so each write's answer waited for the next write.
const TRANSMISSION_FLAGS: u16 = 1 | 4 | 8 | 32;

/// A request's command flag: forced unit access (the write is on the media when answered).
pub const CMD_FLAG_FUA: u16 = 1;

/// The commands of the transmission phase.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;

/// Errors as NBD sends them (errno values).
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;

fn u16_of(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn u32_of(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().expect("4 bytes"))
}
fn u64_of(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn option_reply(s: &mut impl Write, option: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b)
}

/// Negotiate one connection to the export of `size` bytes (any export name is this one).
/// `Ok(false)` when the client aborted the negotiation.
pub fn handshake<S: Read + Write>(s: &mut S, size: u64) -> io::Result<bool> {
    let mut hello = Vec::with_capacity(18);
    hello.extend_from_slice(&NBDMAGIC.to_be_bytes());
    hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
    hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&hello)?;
    let mut b = [0u8; 4];
    s.read_exact(&mut b)?;
    let no_zeroes = u32_of(&b) & FLAG_NO_ZEROES as u32 != 0;
    loop {
        let mut h = [0u8; 16];
        s.read_exact(&mut h)?;
        if u64_of(&h) != IHAVEOPT {
            return Err(bad(format!(
                "NBD option without IHAVEOPT: {:x}",
                u64_of(&h)
            )));
        }
        let option = u32_of(&h[8..]);
        let len = u32_of(&h[12..]) as usize;
        if len > 1 << 16 {
            return Err(bad(format!("NBD option {option} of {len} bytes")));
        }
        let mut data = vec![0u8; len];
        s.read_exact(&mut data)?;
        match option {
            OPT_EXPORT_NAME => {
                // No reply header: the export's size and flags, then the transmission.
                let mut r = Vec::with_capacity(134);
                r.extend_from_slice(&size.to_be_bytes());
                r.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                if !no_zeroes {
                    r.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&r)?;
                return Ok(true);
            }
            OPT_INFO | OPT_GO => {
                let mut info = Vec::with_capacity(12);
                info.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                info.extend_from_slice(&size.to_be_bytes());
                info.extend_from_slice(&TRANSMISSION_FLAGS.to_be_bytes());
                option_reply(s, option, REP_INFO, &info)?;
                option_reply(s, option, REP_ACK, &[])?;
                if option == OPT_GO {
                    return Ok(true);
                }
            }
            OPT_ABORT => {
                let _ = option_reply(s, option, REP_ACK, &[]);
                return Ok(false);
            }
            _ => option_reply(s, option, REP_ERR_UNSUP, &[])?,
        }
    }
}

/// One request of the transmission phase; a write's payload follows it on the wire.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// Command flags ([`CMD_FLAG_FUA`]).
    pub flags: u16,
    pub kind: u16,
    pub cookie: u64,
    pub offset: u64,
    pub len: u32,
}

/// The next request, `None` when the client closed the connection between requests.
pub fn read_request(s: &mut impl Read) -> io::Result<Option<Request>> {
    let mut h = [0u8; 28];
    match s.read_exact(&mut h) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    if u32_of(&h) != REQUEST_MAGIC {
        return Err(bad(format!("NBD request magic {:x}", u32_of(&h))));
    }
    Ok(Some(Request {
        flags: u16_of(&h[4..]),
        kind: u16_of(&h[6..]),
        cookie: u64_of(&h[8..]),
        offset: u64_of(&h[16..]),
        len: u32_of(&h[24..]),
    }))
}

/// A simple reply: the cookie, an error (0 for none) and, for a read that succeeded, its
/// data.
pub fn write_reply(s: &mut impl Write, cookie: u64, error: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(16 + data.len());
    b.extend_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&error.to_be_bytes());
    b.extend_from_slice(&cookie.to_be_bytes());
    if error == 0 {
        b.extend_from_slice(data);
    }
    s.write_all(&b)
}
