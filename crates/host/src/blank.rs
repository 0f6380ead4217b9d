//! Blanking: discarding the members whole before an array is built on them, so that
//! every array starts on zeroed disks, as the simulator's arrays do.
//!
//! Only for members the caller owns whole — the VM lab's sparse member files behind
//! `discard=unmap` drives, where qemu (or the timed members' NBD server) punches the range
//! out of the file and it reads back as zeros. [`HostConfig::blank`](crate::HostConfig)
//! asks for it; the CLI's host target never does: a user's disks are theirs, and the
//! guards ([`guard`](crate::guard)) are what stand between raidlab and them.
//!
//! Why it matters: an array created with `--assume-clean` takes what an earlier case
//! left on its members as consistent, and md's raid6 recovery, which checks Q on every
//! stripe it rebuilds (`handle_parity_checks6`), rewrites the parity it finds wrong —
//! 16 MiB of 4 KiB writes to two survivors in 15 s when a raid1 case ran before, a third
//! off the recovery's speed (docs/vm-lab.md).

use crate::{devices, guard};

/// `BLKGETSIZE64` and `BLKDISCARD` (`linux/fs.h`): a block device's size in bytes, and
/// discard a byte range of it.
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKDISCARD: libc::c_ulong = 0x1277;

/// Discard every device whole. `Ok(Some(why))` when it did not touch them: one takes no
/// discard, or one is in use (md, device-mapper or a mount holds it: the exclusive open
/// fails). Every device is opened exclusively before the first is discarded, and held
/// through the discard.
pub fn blank(members: &[String]) -> Result<Option<String>, String> {
    let mut open = Vec::with_capacity(members.len());
    for d in members {
        if devices::discard_max_bytes(d)? == 0 {
            return Ok(Some(format!("{d} takes no discard")));
        }
        match guard::open_exclusive(d, true) {
            Ok(f) => open.push((d, f)),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                return Ok(Some(format!("{d} is in use")))
            }
            Err(e) => return Err(format!("{d}: {e}")),
        }
    }
    for (d, f) in &open {
        let fd = std::os::fd::AsRawFd::as_raw_fd(f);
        let mut size: u64 = 0;
        // SAFETY: `fd` is open for the call; the kernel writes one u64 to `size`.
        if unsafe { libc::ioctl(fd, BLKGETSIZE64 as _, &mut size as *mut u64) } != 0 {
            return Err(format!("{d}: size: {}", std::io::Error::last_os_error()));
        }
        let range: [u64; 2] = [0, size];
        // SAFETY: as above; the kernel reads the two u64 of `range`.
        if unsafe { libc::ioctl(fd, BLKDISCARD as _, range.as_ptr()) } != 0 {
            return Err(format!("{d}: discard: {}", std::io::Error::last_os_error()));
        }
    }
    Ok(None)
}
