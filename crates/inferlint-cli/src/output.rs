//! Writing to the terminal: without panicking on a closed pipe (`inferlint … | head`),
//! and without letting text from a server, a log or a file reach the terminal raw.
//!
//! Every line the command prints goes through here. Control characters (but newline and
//! tab) and bidirectional controls are shown as escapes (`\x1b`, `\u{202e}`), so a
//! server's error body cannot set the window title or clear the screen, and a log line
//! cannot reverse what follows it. `--json` output is escaped the JSON way instead
//! (`\u001b`), so a script reading it gets the same strings back.

use std::io::{self, Write};

use inferlint_core::status::CheckResult;
use inferlint_core::{contract, fmt};

/// Writes text to stdout, control characters escaped. A broken pipe is not an error: the
/// reader has what it wanted.
pub fn print(text: &str) -> io::Result<()> {
    let text = fmt::terminal_safe(text);
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes one line to stderr, control characters escaped. A closed stderr is ignored:
/// there is nowhere left to say so.
pub fn print_err(line: &str) {
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{}", fmt::terminal_safe(line));
}

/// `eprintln!` through [`print_err`]: every note and error a command prints.
macro_rules! eprint_line {
    ($($arg:tt)*) => {
        $crate::output::print_err(&format!($($arg)*))
    };
}
pub(crate) use eprint_line;

/// JSON text with every character a terminal must not get raw written as a `\uXXXX`
/// escape: serde_json escapes the C0 controls already, but writes DEL, the C1 controls
/// and the bidirectional controls as they are. The JSON means the same either way.
pub fn json_safe(json: String) -> String {
    if !json.chars().any(fmt::is_unsafe_for_terminal) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if fmt::is_unsafe_for_terminal(c) {
            // Outside strings JSON has only spaces, tabs and line breaks, which pass.
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The results as terminal lines (each verdict with its advice under it), or as the
/// `--json` array.
pub fn results_text(results: &[CheckResult], json: bool) -> String {
    if json {
        return json_safe(contract::results_json(results));
    }
    results.iter().map(CheckResult::terminal_block).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_its_meaning_and_loses_raw_controls() {
        let value = serde_json::json!({"m": "a\u{1b}[2J\u{202e}b\u{9b}\u{7f}"});
        let text = json_safe(serde_json::to_string(&value).unwrap_or_default());
        assert!(!text.chars().any(fmt::is_unsafe_for_terminal), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, value);
    }
}
