//! Member write caches: read the state, set it as the plan says, put it back.
//!
//! Drives answer to different tools: ATA disks to `hdparm -W`, SCSI/SAS to `sdparm WCE`;
//! others (virtio, loop, NVMe without nvme-cli) only have the kernel's view in
//! `/sys/block/X/queue/write_cache` ("write back" / "write through"), which changes how
//! the kernel flushes, not the drive. The method used is recorded with each result.

use std::process::Command;

/// How a device's cache is driven.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Hdparm,
    Sdparm,
    /// The kernel's flag only (the device itself is not told).
    Sysfs,
}

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let o = Command::new(cmd).args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Parse `hdparm -W DEV`: ` write-caching =  1 (on)`.
fn parse_hdparm(text: &str) -> Option<bool> {
    let l = text.lines().find(|l| l.contains("write-caching"))?;
    let v = l.split('=').nth(1)?.split_whitespace().next()?;
    Some(v == "1")
}

/// Parse `sdparm --get WCE DEV`: `WCE  1  [cha: y, def:  1, sav:  1]`.
fn parse_sdparm(text: &str) -> Option<bool> {
    let l = text.lines().find(|l| l.trim_start().starts_with("WCE"))?;
    let v = l.split_whitespace().nth(1)?;
    Some(v == "1")
}

fn sysfs(name: &str) -> String {
    format!("/sys/block/{name}/queue/write_cache")
}

/// The device's cache state and the method that read it.
pub fn get(path: &str, name: &str) -> Result<(bool, Method), String> {
    if name.starts_with("sd") {
        if let Some(on) = output("hdparm", &["-W", path])
            .as_deref()
            .and_then(parse_hdparm)
        {
            return Ok((on, Method::Hdparm));
        }
        if let Some(on) = output("sdparm", &["--get", "WCE", path])
            .as_deref()
            .and_then(parse_sdparm)
        {
            return Ok((on, Method::Sdparm));
        }
    }
    let text = std::fs::read_to_string(sysfs(name)).map_err(|e| {
        format!(
            "{path}: cannot read the write cache state ({}): {e}",
            sysfs(name)
        )
    })?;
    Ok((text.trim() == "write back", Method::Sysfs))
}

/// The command line that does what [`set`] does, for the record.
pub fn command(path: &str, name: &str, method: Method, on: bool) -> String {
    match method {
        Method::Hdparm => format!("hdparm -W{} {path}", u8::from(on)),
        Method::Sdparm => format!("sdparm --set WCE={} {path}", u8::from(on)),
        Method::Sysfs => format!(
            "echo '{}' > {}",
            if on { "write back" } else { "write through" },
            sysfs(name)
        ),
    }
}

/// Put the cache back as it `was` (nothing runs if it already is); returns the command
/// line that does it, for the record.
pub fn restore(path: &str, name: &str, was: bool) -> Result<String, String> {
    let (now, method) = get(path, name)?;
    if now != was {
        set(path, name, method, was)?;
    }
    Ok(command(path, name, method, was))
}

/// Turn the cache on or off with `method`.
pub fn set(path: &str, name: &str, method: Method, on: bool) -> Result<(), String> {
    let ok = match method {
        Method::Hdparm => output("hdparm", &[if on { "-W1" } else { "-W0" }, path]).is_some(),
        Method::Sdparm => output(
            "sdparm",
            &["--set", if on { "WCE=1" } else { "WCE=0" }, path],
        )
        .is_some(),
        Method::Sysfs => {
            std::fs::write(sysfs(name), if on { "write back" } else { "write through" }).is_ok()
        }
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{path}: could not turn the write cache {} ({method:?}); set it by hand or use write_cache = \"keep\"",
            if on { "on" } else { "off" }
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outputs_parse() {
        assert_eq!(
            parse_hdparm("\n/dev/sda:\n write-caching =  1 (on)\n"),
            Some(true)
        );
        assert_eq!(
            parse_hdparm("\n/dev/sda:\n write-caching =  0 (off)\n"),
            Some(false)
        );
        assert_eq!(parse_hdparm("/dev/sda:\n"), None);
        assert_eq!(
            parse_sdparm("    /dev/sdb: SEAGATE   ST4000NM0023      0004\nWCE           0  [cha: y, def:  1, sav:  1]\n"),
            Some(false)
        );
    }
}
