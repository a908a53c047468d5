//! The load tool's console log: read for the requests it sent outside its timed run (a
//! test request, warm-ups) and for the settings the engines' clients print
//! (`Namespace(...)`), which complete an account whose result file left them out. Never a
//! panic, whatever counts or settings the lines claim.

#![no_main]

use inferlint_core::model::client::{ClientAccount, LoadTool};
use inferlint_engines::files::untimed_requests;
use inferlint_engines::loadtools::console::complete_from_console;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = untimed_requests(&text);
    let mut account = ClientAccount::new(LoadTool::VllmBench);
    complete_from_console(&mut account, &text);
    if let Some(sent) = account.sent {
        assert!(text.contains("num_prompts"), "{sent} requests from nowhere");
    }
});
