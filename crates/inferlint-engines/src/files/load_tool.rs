//! What the load tool leaves in a run folder: its result file (read by [`crate::loadtools`],
//! whichever tool wrote it) and the untimed requests its console log announces.

use std::path::Path;

use inferlint_core::model::client::ClientAccount;

use crate::input::{for_each_log_line, open_input, FileError};

/// Reads the load tool's result file, whichever tool wrote it, with the files the tool
/// writes beside it ([`crate::loadtools`]).
pub fn read_bench_result(path: &Path) -> Result<ClientAccount, FileError> {
    crate::loadtools::read_result(path)
}

/// [`read_bench_result`], its request records kept as `keep` says
/// ([`crate::loadtools::read_result_kept`]).
pub fn read_bench_result_kept(
    path: &Path,
    keep: inferlint_core::model::client::Keep,
) -> Result<ClientAccount, FileError> {
    crate::loadtools::read_result_kept(path, keep)
}

/// Reads a result file's contents alone: any load tool's, recognised by what it holds.
pub fn parse_bench_result(text: &str) -> Result<ClientAccount, String> {
    crate::loadtools::read_bytes_named("result", text.as_bytes()).map_err(|e| match e {
        FileError::Invalid { message, .. } => message,
        other => other.to_string(),
    })
}

/// Requests the load tool sent outside its timed run (a test request, warm-up), as its
/// console output announces them. The server finished these too, so T15 expects them.
pub fn untimed_requests(load_log: &str) -> u64 {
    // Saturating: a log that claims more warm-ups than a u64 holds says nothing a larger
    // count would not, and must not wrap to a small one (nor panic in a debug build).
    load_log
        .lines()
        .map(untimed_in_line)
        .fold(0, u64::saturating_add)
}

/// [`untimed_requests`] of a console log file, read line by line.
pub fn untimed_requests_in(path: &Path) -> Result<u64, FileError> {
    let (file, _) = open_input(path)?;
    let mut extra = 0u64;
    for_each_log_line(path, file, |line| {
        extra = extra.saturating_add(untimed_in_line(line));
    })?;
    Ok(extra)
}

/// The untimed requests one console line announces.
fn untimed_in_line(line: &str) -> u64 {
    let mut extra = 0u64;
    if line.contains("Initial test run completed.") {
        extra += 1;
    }
    if let Some(n) = number_after(line, "Warming up with ") {
        extra = extra.saturating_add(n);
    }
    if let Some(rest) = line.split("Warmup completed with ").nth(1) {
        extra = extra.saturating_add(leading_number(rest).unwrap_or(1));
    }
    extra
}

fn number_after(line: &str, anchor: &str) -> Option<u64> {
    leading_number(line.split(anchor).nth(1)?)
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
