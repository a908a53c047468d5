//! Writing to stdout without panicking on a closed pipe (`inferlint … | head`).

use std::io::{self, Write};

use inferlint_core::contract;
use inferlint_core::status::CheckResult;

/// Writes text to stdout. A broken pipe is not an error: the reader has what it wanted.
pub fn print(text: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// The results as terminal lines (each verdict with its advice under it), or as the
/// `--json` array.
pub fn results_text(results: &[CheckResult], json: bool) -> String {
    if json {
        return contract::results_json(results);
    }
    results.iter().map(CheckResult::terminal_block).collect()
}
