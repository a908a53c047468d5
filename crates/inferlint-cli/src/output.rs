//! Writing to the terminal: without panicking on a closed pipe (`inferlint … | head`),
//! and without letting text from a server, a log or a file reach the terminal raw.
//!
//! Every line the command prints goes through here. Control characters (but newline and
//! tab) and bidirectional controls are shown as escapes (`\x1b`, `\u{202e}`), so a
//! server's error body cannot set the window title or clear the screen, and a log line
//! cannot reverse what follows it. `--json` output is escaped the JSON way instead
//! (`\u001b`), so a script reading it gets the same strings back.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use inferlint_core::judging::status::CheckResult;
use inferlint_core::{story::contract, story::fmt};

/// Whether stdout gets colour: set once at the start from `--color`, `NO_COLOR`, whether
/// stdout is a terminal and `--json` (never coloured).
static COLOUR: AtomicBool = AtomicBool::new(false);

/// Decides colour for this command. `auto` colours only a terminal, and only when
/// `NO_COLOR` is unset or empty and `TERM` is not `dumb`; `always` colours a pipe too
/// (for `less -R`); `--json` is never coloured, whatever was asked.
pub fn set_colour(when: &str, json: bool) {
    use std::io::IsTerminal;
    let on = !json
        && match when {
            "always" => true,
            "never" => false,
            _ => {
                io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
            }
        };
    COLOUR.store(on, Ordering::Relaxed);
}

/// SGR codes of the words a line starts its verdict with.
const COLOURS: &[(&str, &str)] = &[
    ("TRIPWIRE-FAILED", "1;31"),
    ("WARN", "33"),
    ("????", "35"),
    ("PASS", "32"),
    ("N/A", "2"),
    ("NOT-CHECKED", "2"),
    ("DIFFERS", "1;31"),
    ("CAN'T TELL", "35"),
    ("same", "32"),
    ("not recorded", "2"),
    ("REGRESSION", "1;31"),
    ("INCONCLUSIVE", "1;33"),
];

/// Colours the status word of each line that has one: `[ T1] TRIPWIRE-FAILED  ...`,
/// compare's `  DIFFERS  ...` and the gate's `REGRESSION`. The text is already escaped, so
/// the only escape sequences in the result are these.
pub fn coloured(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let start = if line.starts_with('[') {
            line.find("] ").map(|i| i + 2)
        } else if line.starts_with("  ") && !line.starts_with("   ") {
            Some(2)
        } else {
            line.strip_prefix("gate: ").map(|_| 6)
        };
        let hit = start.and_then(|at| {
            COLOURS
                .iter()
                .find(|(word, _)| line[at..].starts_with(&format!("{word} ")))
                .map(|(word, code)| (at, *word, *code))
        });
        match hit {
            Some((at, word, code)) => {
                out.push_str(&line[..at]);
                out.push_str(&format!("\x1b[{code}m{word}\x1b[0m"));
                out.push_str(&line[at + word.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// [`print`] for a command's own output: a failed write is the command's error, with exit
/// code and message the same from every command.
pub fn emit(text: &str) -> Result<(), crate::exit::CliError> {
    print(text)
        .map_err(|e| crate::exit::CliError::cannot_write(format!("cannot write the output: {e}")))
}

/// Writes text to stdout, control characters escaped. A broken pipe is not an error: the
/// reader has what it wanted.
pub fn print(text: &str) -> io::Result<()> {
    let safe = fmt::terminal_safe(text);
    let text = if COLOUR.load(Ordering::Relaxed) {
        std::borrow::Cow::Owned(coloured(&safe))
    } else {
        safe
    };
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
    crate::junit::printed(results);
    if json {
        return json_safe(contract::results_json(results));
    }
    results.iter().map(CheckResult::terminal_block).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_status_words_are_coloured() {
        let text = "[ T1] TRIPWIRE-FAILED  22 preemptions\n      advice: PASS on\n  DIFFERS      KV pool\n";
        let c = coloured(text);
        assert!(
            c.starts_with("[ T1] \x1b[1;31mTRIPWIRE-FAILED\x1b[0m  22"),
            "{c}"
        );
        assert!(c.contains("advice: PASS on"), "{c}");
        assert!(c.contains("  \x1b[1;31mDIFFERS\x1b[0m      KV pool"), "{c}");
        assert_eq!(c.matches('\x1b').count(), 4);
    }

    #[test]
    fn json_keeps_its_meaning_and_loses_raw_controls() {
        let value = serde_json::json!({"m": "a\u{1b}[2J\u{202e}b\u{9b}\u{7f}"});
        let text = json_safe(serde_json::to_string(&value).unwrap_or_default());
        assert!(!text.chars().any(fmt::is_unsafe_for_terminal), "{text}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, value);
    }
}
