//! A minimal writer of the `newc` cpio format — what the Linux kernel unpacks as an
//! initramfs. Uncompressed on purpose: the guest reaches `/init` about 1.5 s sooner under
//! TCG than with a compressed archive. Archives may be concatenated: the kernel unpacks
//! them in order, later files replacing earlier ones.

use std::io::{self, Write};

/// Writes entries one by one; [`Cpio::finish`] writes the trailer.
pub struct Cpio<W: Write> {
    out: W,
    ino: u32,
    written: u64,
}

impl<W: Write> Cpio<W> {
    pub fn new(out: W) -> Self {
        Cpio {
            out,
            ino: 1,
            written: 0,
        }
    }

    fn header(&mut self, name: &str, mode: u32, size: u64) -> io::Result<()> {
        let h = format!(
            "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
            self.ino,
            mode,
            0, // uid
            0, // gid
            1, // nlink
            0, // mtime: reproducible archives
            size,
            0,
            0,
            0,
            0,
            name.len() + 1,
            0
        );
        self.ino += 1;
        self.raw(h.as_bytes())?;
        self.raw(name.as_bytes())?;
        self.raw(&[0])?;
        self.pad()
    }

    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.written += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - self.written % 4) % 4;
        self.raw(&[0u8; 3][..n as usize])
    }

    /// A directory (`name` without a leading slash, e.g. `lib/modules`).
    pub fn dir(&mut self, name: &str) -> io::Result<()> {
        self.header(name, 0o040755, 0)
    }

    /// A regular file with the given permission bits.
    pub fn file(&mut self, name: &str, perm: u32, data: &[u8]) -> io::Result<()> {
        self.header(name, 0o100000 | perm, data.len() as u64)?;
        self.raw(data)?;
        self.pad()
    }

    /// A symbolic link to `target`.
    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.header(name, 0o120777, target.len() as u64)?;
        self.raw(target.as_bytes())?;
        self.pad()
    }

    /// The trailer; returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.header("TRAILER!!!", 0, 0)?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_aligned_and_end_with_the_trailer() {
        let mut c = Cpio::new(Vec::new());
        c.dir("bin").unwrap();
        c.file("bin/x", 0o755, b"hello").unwrap();
        c.symlink("bin/sh", "busybox").unwrap();
        let v = c.finish().unwrap();
        assert_eq!(v.len() % 4, 0);
        assert!(v.starts_with(b"070701"));
        let s = String::from_utf8_lossy(&v);
        assert!(s.contains("bin/x\0"));
        assert!(s.contains("hello"));
        assert!(s.contains("TRAILER!!!"));
        // The file header says 5 bytes of data.
        let at = s.find("bin/x").unwrap() - 110;
        assert_eq!(&s[at + 54..at + 62], "00000005");
    }
}
