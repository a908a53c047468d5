//! The failure classifier: the root cause a boot log shows, if any.
//!
//! Rules are ranked; the first rule with any qualifying line wins, and within a rule the
//! first line. Before matching:
//! - everything from the first `[shutdown]` line on is dropped (an orderly stop prints
//!   errors of its own);
//! - tracebacks the engine itself calls harmless are blanked: `[start of ... traceback]`
//!   through `[end of ... traceback]`, and lines starting `Ignore import error`;
//! - when the log has a ready line, only lines after it count, and a line is skipped when
//!   a later line shows the server kept serving (a `"POST /... HTTP/1.1" 200` answer, or a
//!   `Prefill batch` / `Decode batch` line).

use inferlint_core::model::{Failure, Phase};

use super::lines::Line;
use super::scan::truncate_at_word;

/// Longest failure line and cause kept. Engines put their advice at the end of the line
/// that names the failure (`Try: (1) reduce --max-running-requests, ...`, `Raise
/// --mem-fraction-static above 0.790 ...`), so the line is kept whole; this bound only
/// guards against a log that holds megabytes on one line, far beyond any engine's message.
const MAX_FAILURE_CHARS: usize = 4000;

/// How far above an `AssertionError` to look for the `assert ...` source line.
const ASSERT_LOOKBACK: usize = 3;

/// How far above an exception to look for its innermost `File "...", line N, in f` frame.
const FRAME_LOOKBACK: usize = 6;

/// A failure kind and the test a line must pass to show it.
type FailureRule = (&'static str, fn(&str) -> bool);

/// The ranked rules. Earlier rules are more specific root causes.
const RULES: &[FailureRule] = &[
    ("jit_toolchain", |b| b.contains(CCCL_HEADERS)),
    ("jit_toolchain", |b| ptxas_fatal(b).is_some()),
    ("jit_toolchain", |b| nvcc_fatal(b).is_some()),
    ("jit_toolchain", |b| b.contains("ld: cannot find ")),
    ("jit_toolchain", |b| {
        b.contains("Ninja build failed") || b.contains("ninja: build stopped")
    }),
    ("out_of_memory", |b| {
        contains_word(b, "OutOfMemoryError") || b.contains("CUDA out of memory")
    }),
    ("kv_cache_too_small", |b| {
        KV_TOO_SMALL.iter().any(|p| b.contains(p))
    }),
    ("accelerator_error", |b| b.contains("AcceleratorError: ")),
    ("cuda_error", |b| b.contains("CUDA error: ")),
    ("assertion", |b| {
        exception_head(b).is_some_and(|(name, _)| name == "AssertionError")
    }),
    ("value_error", |b| {
        exception_head(b).is_some_and(|(name, message)| name == "ValueError" && message.is_some())
    }),
    ("runtime_error", |b| {
        exception_head(b).is_some_and(|(name, message)| name == "RuntimeError" && message.is_some())
    }),
    ("unclassified_exception", |b| {
        !b.contains("EngineDeadError")
            && exception_head(b).is_some_and(|(name, message)| {
                message.is_some() && (name.ends_with("Error") || name.ends_with("Exception"))
            })
    }),
    ("engine_dead", |b| {
        b.contains("EngineDeadError") || b.contains("EngineCore encountered a fatal error")
    }),
];

const CCCL_HEADERS: &str = "CUDA compiler and CUDA toolkit headers are incompatible";

const KV_TOO_SMALL: &[&str] = &[
    "No available memory for the cache blocks",
    "KV cache is needed, which is larger than the available KV cache memory",
];

/// Whether a raw log line is an answered request: `"POST /path HTTP/1.1" 200`.
pub(crate) fn is_served_request(line: &str) -> bool {
    let mut rest = line;
    while let Some(at) = rest.find("\"POST /") {
        rest = &rest[at + 1..];
        let Some(close) = rest.find('"') else {
            return false;
        };
        let request = &rest[..close];
        let after = &rest[close + 1..];
        if request.contains(" HTTP/") {
            if let Some(status) = after.strip_prefix(" 200") {
                if !status.starts_with(|c: char| c.is_ascii_digit()) {
                    return true;
                }
            }
        }
        rest = after;
    }
    false
}

fn kept_serving(body: &str) -> bool {
    body.starts_with("Prefill batch") || body.starts_with("Decode batch") || is_served_request(body)
}

/// The line (0-based index) where the log's failure shows, with the rule it matched.
pub(crate) fn classify(lines: &[Line<'_>], ready: Option<usize>) -> Option<Failure> {
    let cut = lines
        .iter()
        .position(|l| l.clean.contains("[shutdown]"))
        .unwrap_or(lines.len());
    let ignored = ignored_lines(&lines[..cut]);
    let body = |i: usize| -> &str {
        if ignored[i] {
            ""
        } else {
            lines[i].body()
        }
    };
    let start = ready.map_or(0, |r| r + 1).min(cut);
    let served_after = ServedAfter::scan(
        lines,
        start,
        cut,
        |i| kept_serving(body(i)),
        ready.is_some(),
    );

    let mut best: Option<(usize, usize)> = None;
    for (i, line) in lines.iter().enumerate().take(cut).skip(start) {
        if served_after.kept_serving_after(i, || line.stamp()) {
            continue;
        }
        let text = body(i);
        if text.is_empty() {
            continue;
        }
        let limit = best.map_or(RULES.len(), |(rule, _)| rule);
        if let Some(rule) = RULES[..limit].iter().position(|(_, test)| test(text)) {
            best = Some((rule, i));
            if rule == 0 {
                break;
            }
        }
    }
    let (rule, i) = best?;
    let text = body(i);
    let detail = detail(rule, text, |back| {
        (1..=back)
            .filter_map(|k| i.checked_sub(k))
            .map(body)
            .collect()
    });
    Some(Failure {
        kind: RULES[rule].0.to_owned(),
        phase: if ready.is_some_and(|r| i > r) {
            Phase::Serving
        } else {
            Phase::Boot
        },
        lineno: i + 1,
        line: truncate_at_word(text, MAX_FAILURE_CHARS),
        detail: detail
            .map(|d| truncate_at_word(d.trim(), MAX_FAILURE_CHARS))
            .filter(|d| !d.is_empty()),
    })
}

/// For each line, whether a later line shows the server still serving.
///
/// Several processes write a merged log through their own buffers, so a line below
/// another may have been written before it. A serving line below a failure is taken as
/// "served after it" unless both carry a time stamp and the serving line's is earlier:
/// then it was only flushed late, and the failure stands.
struct ServedAfter {
    /// Per line: whether an unstamped serving line follows it.
    unstamped: Vec<bool>,
    /// Per line: the latest stamp of a serving line after it.
    latest: Vec<Option<String>>,
    start: usize,
}

impl ServedAfter {
    fn scan(
        lines: &[Line<'_>],
        start: usize,
        cut: usize,
        serving: impl Fn(usize) -> bool,
        ready: bool,
    ) -> ServedAfter {
        let len = cut.saturating_sub(start);
        let mut unstamped = vec![false; len + 1];
        let mut latest: Vec<Option<String>> = vec![None; len + 1];
        if ready {
            for i in (start..cut).rev() {
                let k = i - start;
                unstamped[k] = unstamped[k + 1];
                latest[k] = latest[k + 1].clone();
                if i + 1 < cut && serving(i + 1) {
                    match lines[i + 1].stamp() {
                        None => unstamped[k] = true,
                        Some(stamp) => {
                            if latest[k].as_ref().is_none_or(|l| stamp > *l) {
                                latest[k] = Some(stamp);
                            }
                        }
                    }
                }
            }
        }
        ServedAfter {
            unstamped,
            latest,
            start,
        }
    }

    /// Whether the server answered after line `i`, whose stamp (`MM-DD HH:MM:SS`) `stamp`
    /// gives when it is needed.
    fn kept_serving_after(&self, i: usize, stamp: impl FnOnce() -> Option<String>) -> bool {
        let k = i - self.start;
        if self.unstamped[k] {
            return true;
        }
        match &self.latest[k] {
            None => false,
            Some(latest) => stamp().is_none_or(|at| *latest >= at),
        }
    }
}

/// Lines inside harmless tracebacks the engine announces itself.
fn ignored_lines(lines: &[Line<'_>]) -> Vec<bool> {
    let mut ignored = vec![false; lines.len()];
    let mut in_block = false;
    for (i, line) in lines.iter().enumerate() {
        let body = line.body();
        if !in_block && body.starts_with("[start of ") && body.contains("traceback]") {
            in_block = true;
        }
        if in_block {
            ignored[i] = true;
            if body.starts_with("[end of ") && body.contains("traceback]") {
                in_block = false;
            }
        } else if body.starts_with("Ignore import error") {
            ignored[i] = true;
        }
    }
    ignored
}

/// The cause in a few words, for the rule a line matched. `above(n)` gives the `n` lines
/// above it, nearest first.
fn detail<'a>(rule: usize, text: &str, above: impl Fn(usize) -> Vec<&'a str>) -> Option<String> {
    let message = || exception_head(text).and_then(|(_, m)| m).map(str::to_owned);
    let from = |phrase: &str| text.find(phrase).map(|at| text[at..].to_owned());
    match RULES[rule].0 {
        "jit_toolchain" => match rule {
            0 => Some(CCCL_HEADERS.to_owned()),
            1 => ptxas_fatal(text).map(str::to_owned),
            2 => nvcc_fatal(text).map(str::to_owned),
            3 => from("cannot find "),
            _ => None,
        },
        "out_of_memory" => message().or_else(|| from("CUDA out of memory")),
        "kv_cache_too_small" => message().or_else(|| KV_TOO_SMALL.iter().find_map(|p| from(p))),
        "accelerator_error" => text
            .find("AcceleratorError: ")
            .map(|at| text[at + "AcceleratorError: ".len()..].to_owned()),
        "cuda_error" => text
            .find("CUDA error: ")
            .map(|at| text[at + "CUDA error: ".len()..].to_owned()),
        "assertion" => message().or_else(|| {
            above(ASSERT_LOOKBACK)
                .into_iter()
                .find(|l| l.starts_with("assert "))
                .map(str::to_owned)
        }),
        "unclassified_exception" => {
            let message = message()?;
            let frame = above(FRAME_LOOKBACK).into_iter().find_map(frame);
            Some(match frame {
                Some((file, line, function)) => {
                    format!("{message} (in {function}, {file}:{line})")
                }
                None => message,
            })
        }
        _ => message(),
    }
}

/// `ptxas ... fatal   : <cause>` -> the cause.
fn ptxas_fatal(text: &str) -> Option<&str> {
    let at = text.find("ptxas")?;
    fatal_cause(&text[at..])
}

/// `nvcc fatal   : <cause>` -> the cause.
fn nvcc_fatal(text: &str) -> Option<&str> {
    let at = text.find("nvcc fatal")?;
    fatal_cause(&text[at + "nvcc ".len()..])
}

/// In `... fatal   : <cause>`, the cause.
fn fatal_cause(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(at) = rest.find("fatal") {
        let tail = rest[at + "fatal".len()..].trim_start_matches([' ', '\t']);
        if let Some(cause) = tail.strip_prefix(':') {
            let cause = cause.trim();
            if !cause.is_empty() {
                return Some(cause);
            }
        }
        rest = &rest[at + "fatal".len()..];
    }
    None
}

fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before_ok = super::scan::word_start(text, at);
        let after_ok = text[at + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        before_ok && after_ok
    })
}

/// A Python exception line, `[pkg.mod.]Name[: message]`: the name's last part and the
/// message (`None` when there is no `: message`). Anything else is not one.
fn exception_head(text: &str) -> Option<(&str, Option<&str>)> {
    let bytes = text.as_bytes();
    let mut end = 0;
    let mut last_start = 0;
    loop {
        let start = end;
        if !bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        {
            return None;
        }
        while bytes
            .get(end)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        {
            end += 1;
        }
        last_start = last_start.max(start);
        if bytes.get(end) == Some(&b'.') {
            end += 1;
            continue;
        }
        break;
    }
    let name = &text[last_start..end];
    match bytes.get(end) {
        None => Some((name, None)),
        Some(b':') => {
            let message = text[end + 1..].trim();
            Some((name, (!message.is_empty()).then_some(message)))
        }
        _ => None,
    }
}

/// `File "/path/to/file.py", line 81, in function` -> (`file.py`, `81`, `function`).
fn frame(text: &str) -> Option<(&str, &str, &str)> {
    let rest = text.strip_prefix("File \"")?;
    let (path, rest) = rest.split_once("\", line ")?;
    let (line, function) = rest.split_once(", in ")?;
    if line.is_empty() || !line.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    Some((file, line, function.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exception_heads() {
        assert_eq!(
            exception_head("torch.OutOfMemoryError: CUDA out of memory."),
            Some(("OutOfMemoryError", Some("CUDA out of memory.")))
        );
        assert_eq!(
            exception_head("AssertionError"),
            Some(("AssertionError", None))
        );
        assert_eq!(exception_head("ImportError:"), Some(("ImportError", None)));
        assert_eq!(exception_head("Traceback (most recent call last):"), None);
        assert_eq!(exception_head("a..b: x"), None);
        assert_eq!(exception_head(""), None);
    }

    #[test]
    fn frames_and_fatal_causes() {
        assert_eq!(
            frame(r#"File "/x/quant_config_utils.py", line 81, in update"#),
            Some(("quant_config_utils.py", "81", "update"))
        );
        assert_eq!(
            ptxas_fatal("ptxas /tmp/a.ptx, line 9; fatal   : Unsupported .version 9.4"),
            Some("Unsupported .version 9.4")
        );
        assert_eq!(
            nvcc_fatal("nvcc fatal   : Unsupported gpu architecture 'compute_120'"),
            Some("Unsupported gpu architecture 'compute_120'")
        );
        assert_eq!(ptxas_fatal("ptxas info: fatal errors: none"), None);
    }

    #[test]
    fn served_requests() {
        assert!(is_served_request(
            r#"INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK"#
        ));
        assert!(!is_served_request(
            r#"INFO:     127.0.0.1:1 - "POST /tokenize HTTP/1.1" 404 Not Found"#
        ));
        assert!(!is_served_request(
            r#"INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK"#
        ));
        assert!(!is_served_request(r#""POST /x HTTP/1.1" 2001"#));
        assert!(!is_served_request(r#""POST /x"#));
    }
}
