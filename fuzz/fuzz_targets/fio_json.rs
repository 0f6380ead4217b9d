//! Any text given to the fio output parser yields figures or a `ParseError` — never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = raidlab_fio::parse_output(&String::from_utf8_lossy(data));
});
