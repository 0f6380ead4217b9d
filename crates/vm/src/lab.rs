//! The VM lab's cache: a Debian kernel (unpacked, never installed), its `vmlinux` for a
//! fast PVH boot, and an uncompressed initramfs with busybox, mdadm, fio, mkfs.xfs,
//! wipefs/blkid, mkfs.btrfs/btrfs, their libraries and the md/raid/xfs/btrfs/virtio
//! modules — one directory per kernel version under [`root`]. The raidlab binary's
//! libraries are in the initramfs; the binary itself is appended at every boot (a second
//! cpio archive), so the guest always runs the raidlab that started it.

use crate::cpio::Cpio;
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Overrides the cache directory (tests, CI).
pub const DIR_ENV: &str = "RAIDLAB_LAB_DIR";

/// Modules the guest loads (with their dependencies, in `modprobe`'s order).
pub const MODULES: &[&str] = &[
    "virtio_pci",
    "virtio_blk",
    "crc32c_generic",
    "md_mod",
    "raid0",
    "raid1",
    "raid10",
    "raid456",
    "xfs",
    "ext4",
    "btrfs",
];

/// Programs copied into the initramfs with their shared libraries.
pub const TOOLS: &[&str] = &[
    "mdadm",
    "fio",
    "mkfs.xfs",
    "wipefs",
    "blkid",
    "mkfs.btrfs",
    "btrfs",
];

/// Copied too when the host has them (ext4 file systems).
pub const OPTIONAL_TOOLS: &[&str] = &["mkfs.ext4"];

/// busybox applets linked in `/bin`.
const APPLETS: &[&str] = &[
    "sh", "mount", "umount", "mkdir", "insmod", "poweroff", "sleep", "cat", "tar", "echo", "ls",
    "dmesg", "sync", "rm", "head", "tail", "grep",
];

/// `$RAIDLAB_LAB_DIR`, else `$XDG_CACHE_HOME/raidlab/lab`, else `~/.cache/raidlab/lab`.
pub fn root() -> PathBuf {
    if let Some(d) = std::env::var_os(DIR_ENV) {
        return PathBuf::from(d);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from("/var/cache"));
    cache.join("raidlab").join("lab")
}

/// One built lab: a kernel version's directory.
#[derive(Debug, Clone)]
pub struct Lab {
    pub dir: PathBuf,
    pub kver: String,
}

impl Lab {
    pub fn vmlinux(&self) -> PathBuf {
        self.dir.join("vmlinux")
    }
    pub fn initramfs(&self) -> PathBuf {
        self.dir.join("initramfs.cpio")
    }
    /// Whether the lab's initramfs has the program `name` (`lab.json`'s tools).
    pub fn has_tool(&self, name: &str) -> bool {
        self.info()["tools"].get(name).is_some()
    }

    /// What `lab build` recorded (package, modules, tools and their versions).
    pub fn info(&self) -> serde_json::Value {
        std::fs::read(self.dir.join("lab.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(serde_json::Value::Null)
    }
}

/// Every complete lab in the cache, newest kernel version last.
pub fn cached() -> Vec<Lab> {
    let mut v: Vec<Lab> = std::fs::read_dir(root())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join("lab.json").exists())
        .map(|e| Lab {
            kver: e.file_name().to_string_lossy().into_owned(),
            dir: e.path(),
        })
        .collect();
    v.sort_by_key(|l| natural(&l.kver));
    v
}

fn natural(s: &str) -> Vec<(u64, String)> {
    s.split(['.', '-'])
        .map(|p| (p.parse().unwrap_or(0), p.to_string()))
        .collect()
}

/// The lab `--target vm` uses: the newest one built.
pub fn current() -> Result<Lab, String> {
    cached().pop().ok_or_else(|| {
        format!(
            "the VM lab is not built (nothing in {}): run `raidlab lab build` (downloads a Debian kernel package with apt-get; or pass --kernel FILE.deb)",
            root().display()
        )
    })
}

fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let o = cmd
        .output()
        .map_err(|e| format!("cannot run {what}: {e} — is it installed?"))?;
    if !o.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Where a program is, searching the usual directories as well as `$PATH` (root's sbin
/// directories are not on every user's path).
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = path
        .split(':')
        .chain([
            "/usr/local/sbin",
            "/usr/local/bin",
            "/usr/sbin",
            "/usr/bin",
            "/sbin",
            "/bin",
        ])
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    found
}

/// The kernel package `linux-image-amd64` depends on (`linux-image-6.1.0-NN-amd64`).
fn kernel_package() -> Result<String, String> {
    let deps = run(
        Command::new("apt-cache").args(["depends", "linux-image-amd64"]),
        "apt-cache depends linux-image-amd64",
    )?;
    deps.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-") && p != &"linux-image-amd64")
        .map(str::to_string)
        .ok_or_else(|| {
            "apt-cache knows no linux-image-amd64 dependency: run `apt-get update`, or pass --kernel FILE.deb".to_string()
        })
}

/// Decompress the kernel inside a bzImage, as the kernel's `scripts/extract-vmlinux`
/// does: try each compressed payload's magic, keep the output that is an ELF file.
pub fn extract_vmlinux(bzimage: &[u8]) -> Result<Vec<u8>, String> {
    let formats: [(&[u8], &str); 4] = [
        (b"\xfd7zXZ\x00", "xz"),
        (b"\x1f\x8b\x08", "gzip"),
        (b"\x28\xb5\x2f\xfd", "zstd"),
        (b"\x02\x21\x4c\x18", "lz4"),
    ];
    for (magic, tool) in formats {
        let mut tried = 0;
        let mut at = 0;
        while let Some(i) = find(&bzimage[at..], magic) {
            let pos = at + i;
            at = pos + 1;
            tried += 1;
            if tried > 4 {
                break;
            }
            let Ok(mut child) = Command::new(tool)
                .arg("-dc")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
            else {
                continue;
            };
            let mut stdin = child.stdin.take().expect("piped");
            let payload = bzimage[pos..].to_vec();
            let feeder = std::thread::spawn(move || {
                let _ = stdin.write_all(&payload);
            });
            let mut out = Vec::new();
            let _ = child.stdout.take().expect("piped").read_to_end(&mut out);
            let _ = child.wait(); // trailing data makes it complain: the output counts
            let _ = feeder.join();
            if out.starts_with(b"\x7fELF") {
                return Ok(out);
            }
        }
    }
    Err("no compressed ELF kernel found in the vmlinuz (tried xz, gzip, zstd, lz4: are xz-utils/gzip/zstd installed?)".into())
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The shared libraries and loader a dynamic program needs (`ldd`); empty for a static one.
fn libraries(prog: &Path) -> Result<Vec<PathBuf>, String> {
    let o = Command::new("ldd")
        .arg(prog)
        .output()
        .map_err(|e| format!("cannot run ldd: {e}"))?;
    let text = String::from_utf8_lossy(&o.stdout);
    let mut v = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if l.contains("not found") {
            return Err(format!("{}: library {l}", prog.display()));
        }
        let p = match l.split_once("=>") {
            Some((_, r)) => r.trim().split(' ').next().unwrap_or(""),
            None => l.split(' ').next().unwrap_or(""),
        };
        if p.starts_with('/') {
            v.push(PathBuf::from(p));
        }
    }
    Ok(v)
}

/// Progress messages of a build.
pub type Say<'a> = &'a dyn Fn(&str);

/// `raidlab lab build`: download (or take) the kernel package, unpack it, extract
/// `vmlinux`, resolve the modules, build the initramfs. Returns the lab.
pub fn build(kernel: Option<&Path>, say: Say) -> Result<Lab, String> {
    let root = root();
    std::fs::create_dir_all(&root)
        .map_err(|e| format!("cannot create {}: {e} (set {DIR_ENV})", root.display()))?;
    let work = root.join(format!(".build-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let r = build_in(&root, &work, kernel, say);
    let _ = std::fs::remove_dir_all(&work);
    r
}

fn build_in(root: &Path, work: &Path, kernel: Option<&Path>, say: Say) -> Result<Lab, String> {
    let (unpacked, package) = kernel_package_unpacked(work, kernel, say)?;
    let (modroot, kver) = kernel_version(&unpacked, &package)?;
    say(&format!("kernel {kver}"));

    let vmlinuz = unpacked.join("boot").join(format!("vmlinuz-{kver}"));
    let bz = std::fs::read(&vmlinuz).map_err(|e| format!("{}: {e}", vmlinuz.display()))?;
    let vmlinux = extract_vmlinux(&bz)?;
    say(&format!("vmlinux extracted ({} MiB)", vmlinux.len() >> 20));

    let (order, builtin) = modules_in_load_order(&modroot, &kver)?;

    let dest = root.join(&kver);
    let tmp = root.join(format!(".{kver}.new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let (libs, tools) = write_initramfs(&tmp.join("initramfs.cpio"), &order)?;
    std::fs::write(tmp.join("vmlinux"), &vmlinux).map_err(|e| e.to_string())?;
    let info = serde_json::json!({
        "kernel": kver,
        "package": package,
        "modules": order.iter().map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "builtin": builtin,
        "tools": tools,
        "libraries": libs.len(),
    });
    std::fs::write(
        tmp.join("lab.json"),
        serde_json::to_vec_pretty(&info).expect("json"),
    )
    .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&tmp, &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    let size = std::fs::metadata(dest.join("initramfs.cpio"))
        .map(|m| m.len())
        .unwrap_or(0);
    say(&format!(
        "initramfs: {} modules, {} libraries, {} MiB",
        order.len(),
        libs.len(),
        size >> 20
    ));
    Ok(Lab { dir: dest, kver })
}

/// The kernel package, unpacked: the one given (a .deb or a directory), else the one
/// `apt-get download` fetches. Returns the directory and the package's name.
fn kernel_package_unpacked(
    work: &Path,
    kernel: Option<&Path>,
    say: Say,
) -> Result<(PathBuf, String), String> {
    Ok(match kernel {
        Some(k) if k.is_dir() => (k.to_path_buf(), k.display().to_string()),
        Some(deb) => (unpack(deb, work)?, deb.display().to_string()),
        None => {
            let name = kernel_package()?;
            say(&format!("downloading {name} (apt-get download)"));
            run(
                Command::new("apt-get")
                    .args(["download", "-q", &name])
                    .current_dir(work),
                &format!("apt-get download {name}"),
            )?;
            let deb = std::fs::read_dir(work)
                .map_err(|e| e.to_string())?
                .flatten()
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "deb"))
                .ok_or("apt-get download left no .deb")?;
            let file = deb
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (unpack(&deb, work)?, file)
        }
    })
}

/// The module root (the directory above `lib/modules`) and the kernel version in it.
fn kernel_version(unpacked: &Path, package: &str) -> Result<(PathBuf, String), String> {
    let moddir = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|d| unpacked.join(d))
        .find(|d| d.is_dir())
        .ok_or_else(|| format!("{}: no lib/modules: not a kernel package", package))?;
    let kver = std::fs::read_dir(&moddir)
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .next()
        .ok_or("no kernel version under lib/modules")?;
    let modroot = moddir
        .parent()
        .and_then(Path::parent)
        .expect("lib/modules has parents");
    Ok((modroot.to_path_buf(), kver))
}

/// The modules the guest needs, with their dependencies, in the order to load them; and
/// those built into this kernel.
fn modules_in_load_order(
    modroot: &Path,
    kver: &str,
) -> Result<(Vec<PathBuf>, Vec<String>), String> {
    run(
        Command::new("depmod").arg("-b").arg(modroot).arg(kver),
        "depmod",
    )?;
    let mut order: Vec<PathBuf> = Vec::new();
    let mut builtin = Vec::new();
    for m in MODULES {
        let text = run(
            Command::new("modprobe")
                .arg("-d")
                .arg(modroot)
                .args(["-S", kver, "--show-depends", m]),
            &format!("modprobe --show-depends {m}"),
        )?;
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("insmod ") {
                let p = PathBuf::from(rest.split_whitespace().next().unwrap_or(""));
                if !order.contains(&p) {
                    order.push(p);
                }
            } else if let Some(b) = l.strip_prefix("builtin ") {
                builtin.push(b.trim().to_string());
            }
        }
    }
    Ok((order, builtin))
}

/// The initramfs: directories, modules, busybox and its applets, the tools and every
/// library they and raidlab load, and `/init`. Returns the libraries and the tools' paths.
fn write_initramfs(
    path: &Path,
    order: &[PathBuf],
) -> Result<
    (
        BTreeSet<PathBuf>,
        serde_json::Map<String, serde_json::Value>,
    ),
    String,
> {
    let f = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut c = Cpio::new(std::io::BufWriter::new(f));
    let io = |e: std::io::Error| format!("writing the initramfs: {e}");
    let mut dirs = BTreeSet::new();
    let mut add_dirs = |c: &mut Cpio<_>, p: &str| -> Result<(), String> {
        let mut acc = String::new();
        for part in p.split('/').filter(|s| !s.is_empty()) {
            if !acc.is_empty() {
                acc.push('/');
            }
            acc.push_str(part);
            if dirs.insert(acc.clone()) {
                c.dir(&acc).map_err(io)?;
            }
        }
        Ok(())
    };
    for d in [
        "bin", "sbin", "etc", "proc", "sys", "dev", "tmp", "results", "job", "mnt", "run",
    ] {
        add_dirs(&mut c, d)?;
    }
    let mut guest_mods = Vec::new();
    for (i, m) in order.iter().enumerate() {
        let data = std::fs::read(m).map_err(|e| format!("{}: {e}", m.display()))?;
        let name = format!(
            "lib/modules/{i:02}-{}",
            m.file_name().unwrap_or_default().to_string_lossy()
        );
        add_dirs(&mut c, "lib/modules")?;
        c.file(&name, 0o644, &data).map_err(io)?;
        guest_mods.push(format!("/{name}"));
    }
    let mut text = guest_mods.join("\n");
    text.push('\n');
    c.file("etc/modules.order", 0o644, text.as_bytes())
        .map_err(io)?;
    c.file("etc/group", 0o644, b"root:x:0:\ndisk:x:6:\n")
        .map_err(io)?;
    c.file("etc/passwd", 0o644, b"root:x:0:0:root:/:/bin/sh\n")
        .map_err(io)?;
    let (libs, tools) = add_programs(&mut c, &mut add_dirs)?;
    c.file("init", 0o755, INIT.as_bytes()).map_err(io)?;
    c.finish().map_err(io)?.flush().map_err(io)?;
    Ok((libs, tools))
}

/// busybox (static) with its applets, the tools the guest runs, and the libraries those
/// and raidlab itself load.
fn add_programs<W: Write>(
    c: &mut Cpio<W>,
    add_dirs: &mut impl FnMut(&mut Cpio<W>, &str) -> Result<(), String>,
) -> Result<
    (
        BTreeSet<PathBuf>,
        serde_json::Map<String, serde_json::Value>,
    ),
    String,
> {
    let io = |e: std::io::Error| format!("writing the initramfs: {e}");
    let busybox = which("busybox").ok_or("busybox is not installed (Debian: busybox-static)")?;
    if !libraries(&busybox)?.is_empty() {
        return Err(format!(
            "{} is dynamically linked: install busybox-static",
            busybox.display()
        ));
    }
    c.file(
        "bin/busybox",
        0o755,
        &std::fs::read(&busybox).map_err(|e| e.to_string())?,
    )
    .map_err(io)?;
    for a in APPLETS {
        c.symlink(&format!("bin/{a}"), "busybox").map_err(io)?;
    }
    let mut libs = BTreeSet::new();
    let mut tools = serde_json::Map::new();
    let required = TOOLS.iter().map(|t| (*t, true));
    for (t, needed) in required.chain(OPTIONAL_TOOLS.iter().map(|t| (*t, false))) {
        let p = match which(t) {
            Some(p) => p,
            None if !needed => continue,
            None => {
                return Err(format!(
                    "{t} is not installed (Debian: mdadm, fio, xfsprogs, util-linux)"
                ))
            }
        };
        c.file(
            &format!("bin/{t}"),
            0o755,
            &std::fs::read(&p).map_err(|e| e.to_string())?,
        )
        .map_err(io)?;
        libs.extend(libraries(&p)?);
        tools.insert(t.to_string(), p.display().to_string().into());
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    libs.extend(libraries(&exe)?);
    for l in &libs {
        let data = std::fs::read(l).map_err(|e| format!("{}: {e}", l.display()))?;
        let name = l.to_string_lossy().trim_start_matches('/').to_string();
        if let Some(parent) = Path::new(&name).parent() {
            add_dirs(c, &parent.to_string_lossy())?;
        }
        c.file(&name, 0o755, &data).map_err(io)?;
    }
    Ok((libs, tools))
}

fn unpack(deb: &Path, work: &Path) -> Result<PathBuf, String> {
    let to = work.join("root");
    run(
        Command::new("dpkg").arg("-x").arg(deb).arg(&to),
        &format!("dpkg -x {}", deb.display()),
    )?;
    Ok(to)
}

/// The guest's `/init`: mount the pseudo file systems, load the modules, run the job (if
/// the boot carries one) or just say the probe worked, write the results disk, power off.
pub const INIT: &str = r#"#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
echo "raidlab-lab: init reached"
if [ ! -f /job/cases.json ]; then
  echo "raidlab-lab: probe ok"
  poweroff -f
fi
while read m; do
  insmod "$m" || echo "raidlab-lab: insmod $m failed"
done < /etc/modules.order
echo "raidlab-lab: modules loaded"
RAIDLAB_STATE_DIR=/tmp/raidlab-state /bin/raidlab guest /job /results
echo "raidlab-lab: guest exited $?"
R=
for d in /sys/block/vd*; do
  [ "$(cat $d/serial 2>/dev/null)" = results ] && R=/dev/${d##*/}
done
if [ -n "$R" ]; then
  tar -cf "$R" -C /results . && sync && echo "raidlab-lab: results written"
else
  echo "raidlab-lab: no results disk"
fi
poweroff -f
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vmlinux_is_found_behind_a_compressed_payload() {
        // A fake bzImage: a setup header, then a gzip'd "ELF", then trailing data.
        let mut gz = Command::new("gzip")
            .arg("-c")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("gzip");
        gz.stdin
            .take()
            .unwrap()
            .write_all(b"\x7fELF and the rest of a kernel")
            .unwrap();
        let packed = gz.wait_with_output().unwrap().stdout;
        let mut image = b"MZ setup code \x1f\x8b\x08 not really".to_vec();
        image.extend(&packed);
        image.extend(b"trailer");
        assert_eq!(
            extract_vmlinux(&image).unwrap(),
            b"\x7fELF and the rest of a kernel"
        );
        assert!(extract_vmlinux(b"no kernel here").is_err());
    }

    #[test]
    fn kernel_versions_sort_naturally() {
        let mut v = vec!["6.1.0-10-amd64", "6.1.0-9-amd64", "6.10.0-1-amd64"];
        v.sort_by_key(|s| natural(s));
        assert_eq!(v, ["6.1.0-9-amd64", "6.1.0-10-amd64", "6.10.0-1-amd64"]);
    }
}
