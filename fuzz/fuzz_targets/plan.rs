//! Any text given to the plan parser yields a plan or a `PlanError` — never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(plan) = raidlab_core::Plan::parse(text, std::path::Path::new("fuzz.toml")) {
            let _ = plan.expected_runtime();
        }
    }
});
