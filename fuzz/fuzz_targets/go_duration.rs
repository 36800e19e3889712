//! Fuzzes Go duration parsing (`parse_go_duration`), which reads the CLI's duration flags and
//! the option strings Go schedulers store: it must never panic, and what it accepts must print
//! (Go's format) to a string that parses back to the same duration.
#![no_main]

use asynq_core::time::parse_go_duration;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(d) = parse_go_duration(text) {
        let printed = asynq_core::TaskOptions::new().timeout(d).go_option_strings().remove(0);
        let inner = printed.strip_prefix("Timeout(").and_then(|s| s.strip_suffix(')')).expect("Timeout(…)");
        assert_eq!(parse_go_duration(inner), Some(d), "{text:?} printed as {inner:?}");
    }
});
