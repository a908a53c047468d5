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
    ("engine_dead", engine_died),
];

/// Whether a line says the engine process died: vLLM's engine core logs `EngineCore
/// encountered a fatal error.` above its traceback, and its front end raises
/// `EngineDeadError` for every request after.
fn engine_died(body: &str) -> bool {
    body.contains("EngineDeadError") || body.contains("EngineCore encountered a fatal error")
}

const CCCL_HEADERS: &str = "CUDA compiler and CUDA toolkit headers are incompatible";

const KV_TOO_SMALL: &[&str] = &[
    "No available memory for the cache blocks",
    "KV cache is needed, which is larger than the available KV cache memory",
];

/// Words one of which every line a rule matches holds: "rror" is in every `...Error`
/// (the exception rules want a name that ends in `Error` or `Exception`) and in
/// `CUDA error` and `fatal error`; the rest are the other rules' phrases.
const RULE_WORDS: [&str; 10] = [
    "rror",
    "Exception",
    "ptxas",
    "nvcc",
    "cannot find",
    "inja",
    "out of memory",
    "No available memory",
    "KV cache",
    "CUDA compiler",
];

/// Whether any rule could match a line: a cheap test that passes every line a rule
/// matches, so that the rules (a dozen searches each) run only on the few that might. A
/// log is read line by line, so every line of a long serving log comes through here.
fn might_match(body: &str) -> bool {
    static FINDERS: std::sync::OnceLock<Vec<memchr::memmem::Finder<'static>>> =
        std::sync::OnceLock::new();
    FINDERS
        .get_or_init(|| RULE_WORDS.iter().map(memchr::memmem::Finder::new).collect())
        .iter()
        .any(|f| f.find(body.as_bytes()).is_some())
}

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

/// The failure a log shows, found line by line in bounded memory.
///
/// The rules above pick, among the lines that count, the one whose best matching rule
/// ranks highest (the first such line on a tie). Lines up to the ready line do not count
/// (when there is one), nor does anything from the first `[shutdown]` line on. After the
/// ready line, a line showing the server still serving makes the lines above it not count,
/// unless both carry a time stamp and the serving line's is earlier: several processes
/// write a merged log through their own buffers, so such a serving line was only flushed
/// late, and the failure above it stands.
///
/// Read line by line, a candidate cannot know whether a serving line will come after it.
/// So each rule keeps a short chain of candidates in file order whose stamps rise: a later
/// candidate with an earlier (or no) stamp can never outlive the one before it, and is
/// not kept. A serving line drops, from the front of each chain, every candidate it
/// counts as served after. At the end the best rule's first candidate is the failure.
#[derive(Debug)]
pub(crate) struct Classifier {
    /// The index of the first `[shutdown]` line.
    cut: Option<usize>,
    /// Inside a traceback the engine calls harmless.
    in_block: bool,
    ready: Option<usize>,
    /// The bodies of the last [`FRAME_LOOKBACK`] lines, oldest first ("" for an ignored
    /// line), each cut at [`KEPT_BYTES`].
    window: std::collections::VecDeque<String>,
    /// Per rule, the candidates that may still win, in file order.
    chains: Vec<Vec<Candidate>>,
    /// The engine said it died after the ready line: the front end's answers after that
    /// (empty completions, each logged as a `200`) are no sign that it kept serving.
    dead: bool,
}

/// The most candidates one rule keeps: only a log of many failures of one kind, each
/// later than the last, interleaved with serving lines, could need more.
const CHAIN: usize = 8;

/// How much of a line a candidate keeps: the failure keeps at most
/// [`MAX_FAILURE_CHARS`] characters of it.
const KEPT_BYTES: usize = 16 << 10;

impl Default for Classifier {
    fn default() -> Classifier {
        Classifier {
            cut: None,
            in_block: false,
            ready: None,
            window: std::collections::VecDeque::new(),
            chains: (0..RULES.len()).map(|_| Vec::new()).collect(),
            dead: false,
        }
    }
}

/// A line that may be the failure: its index, time stamp, body and the bodies above it,
/// nearest first.
#[derive(Debug)]
struct Candidate {
    index: usize,
    stamp: Option<String>,
    text: String,
    above: Vec<String>,
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn kept(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl Classifier {
    /// The line at `index` (0-based); `ready` when it is the log's ready line.
    pub(crate) fn push(&mut self, index: usize, line: &Line<'_>, ready: bool) {
        if self.cut.is_some() {
            return;
        }
        if line.clean.contains("[shutdown]") {
            self.cut = Some(index);
            return;
        }
        let raw = line.body();
        let ignored = self.ignored(raw);
        let body = if ignored { "" } else { raw };
        if ready {
            self.ready = Some(index);
            self.chains.iter_mut().for_each(Vec::clear);
        } else {
            if self.ready.is_some() && !self.dead && kept_serving(body) {
                self.served(line.stamp());
            }
            if !body.is_empty() && might_match(body) {
                if let Some(rule) = RULES.iter().position(|(_, test)| test(body)) {
                    self.offer(rule, index, line, body);
                }
                if self.ready.is_some() && engine_died(body) {
                    self.dead = true;
                }
            }
        }
        let mut slot = if self.window.len() >= FRAME_LOOKBACK {
            self.window.pop_front().unwrap_or_default()
        } else {
            String::new()
        };
        slot.clear();
        slot.push_str(kept(body, KEPT_BYTES));
        self.window.push_back(slot);
    }

    /// A serving line stamped `stamp`: the candidates it was written after no longer count.
    fn served(&mut self, stamp: Option<String>) {
        for chain in &mut self.chains {
            let gone = chain
                .iter()
                .take_while(|c| match (&stamp, &c.stamp) {
                    (Some(serving), Some(at)) => serving >= at,
                    _ => true,
                })
                .count();
            chain.drain(..gone);
        }
    }

    /// Keeps a line that matched `rule` when it may still win.
    fn offer(&mut self, rule: usize, index: usize, line: &Line<'_>, body: &str) {
        let chain = &mut self.chains[rule];
        let stamp = line.stamp();
        let useful = match (chain.last(), &stamp) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(last), Some(at)) => last.stamp.as_ref().is_none_or(|l| at > l),
        };
        if useful && chain.len() < CHAIN {
            chain.push(Candidate {
                index,
                stamp,
                text: kept(body, KEPT_BYTES).to_owned(),
                above: self.window.iter().rev().cloned().collect(),
            });
        }
    }

    /// Whether a line is inside a harmless traceback the engine announces itself.
    fn ignored(&mut self, body: &str) -> bool {
        if !self.in_block && body.starts_with("[start of ") && body.contains("traceback]") {
            self.in_block = true;
        }
        if self.in_block {
            if body.starts_with("[end of ") && body.contains("traceback]") {
                self.in_block = false;
            }
            return true;
        }
        body.starts_with("Ignore import error")
    }

    /// The failure, given the index of the log's ready line (which may lie past the
    /// first `[shutdown]`, where nothing counts).
    pub(crate) fn finish(self, ready: Option<usize>) -> Option<Failure> {
        if let (Some(r), Some(cut)) = (ready, self.cut) {
            if r >= cut {
                return None;
            }
        }
        let (rule, candidate) = self
            .chains
            .into_iter()
            .enumerate()
            .find_map(|(rule, chain)| chain.into_iter().next().map(|c| (rule, c)))?;
        let Candidate {
            index, text, above, ..
        } = candidate;
        let detail = detail(rule, &text, |back| {
            above.iter().take(back).map(String::as_str).collect()
        });
        Some(Failure {
            kind: RULES[rule].0.to_owned(),
            phase: if ready.is_some_and(|r| index > r) {
                Phase::Serving
            } else {
                Phase::Boot
            },
            lineno: index + 1,
            line: truncate_at_word(&text, MAX_FAILURE_CHARS),
            detail: detail
                .map(|d| truncate_at_word(d.trim(), MAX_FAILURE_CHARS))
                .filter(|d| !d.is_empty()),
        })
    }
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

    /// Guards the prefilter: a line any rule matches must pass it, or its failure would
    /// go unclassified.
    #[test]
    fn every_rule_example_passes_the_prefilter() {
        let examples = [
            "nvcc error: CUDA compiler and CUDA toolkit headers are incompatible",
            "ptxas /tmp/a.ptx, line 9; fatal   : Unsupported .version 9.4",
            "nvcc fatal   : Unsupported gpu architecture 'compute_120'",
            "/usr/bin/ld: cannot find -lcudart: No such file or directory",
            "ninja: build stopped: subcommand failed.",
            "RuntimeError: Ninja build failed",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            "something CUDA out of memory",
            "No available memory for the cache blocks. Try increasing",
            "To serve at least one request 2 GiB KV cache is needed, which is larger than the available KV cache memory",
            "torch.AcceleratorError: CUDA error: an illegal memory access",
            "CUDA error: an illegal memory access was encountered",
            "AssertionError",
            "ValueError: unsupported quantization",
            "RuntimeError: something else",
            "KeyError: 'model.layers.0.weight'",
            "Exception: x",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
            "EngineCore encountered a fatal error.",
        ];
        for line in examples {
            assert!(
                RULES.iter().any(|(_, test)| test(line)),
                "no rule matches {line}"
            );
            assert!(might_match(line), "{line}");
        }
        assert!(!might_match("iteration 123: 8 requests, 32 tokens"));
        assert!(!might_match(
            "INFO:     127.0.0.1:5 - \"GET /health HTTP/1.1\" 200 OK"
        ));
    }

    /// vLLM's engine core dies at the first request after the ready line: it logs
    /// `EngineCore encountered a fatal error.` and its traceback, the front end logs
    /// `EngineDeadError` and keeps answering, each streamed request a `200` with an empty
    /// completion and `/health` a 503. Those `200` lines (uvicorn's, unstamped) made the
    /// crash above them count as served after; the engine said it was dead.
    #[test]
    fn an_engine_that_died_after_ready_fails_though_its_front_end_answers() {
        let log = r#"(APIServer pid=9658) INFO 12-02 04:03:56 [launcher.py:195] Route: /v1/completions, Methods: POST
INFO:     Started server process [9658]
INFO:     Waiting for application startup.
INFO:     Application startup complete.
INFO:     127.0.0.1:54928 - "GET /health HTTP/1.1" 200 OK
(EngineCore pid=9908) ERROR 12-02 04:04:01 [core.py:1010] EngineCore encountered a fatal error.
(EngineCore pid=9908) ERROR 12-02 04:04:01 [core.py:1010] Traceback (most recent call last):
(EngineCore pid=9908) ERROR 12-02 04:04:01 [core.py:1010]   File "/venv/lib/python3.11/site-packages/vllm/v1/engine/core.py", line 1001, in run_engine_core
(EngineCore pid=9908) ERROR 12-02 04:04:01 [core.py:1010]     engine_core.run_busy_loop()
(EngineCore pid=9908) ERROR 12-02 04:04:01 [core.py:1010] RuntimeError: shape '[1, 88, 8, 64]' is invalid for input of size 90112
(APIServer pid=9658) ERROR 12-02 04:04:01 [async_llm.py:906] AsyncLLM output_handler failed.
(APIServer pid=9658) ERROR 12-02 04:04:01 [async_llm.py:906] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.
INFO:     127.0.0.1:54930 - "POST /v1/completions HTTP/1.1" 200 OK
INFO:     127.0.0.1:54928 - "GET /health HTTP/1.1" 503 Service Unavailable
INFO:     127.0.0.1:54932 - "POST /v1/completions HTTP/1.1" 200 OK
"#;
        let facts = super::super::parse_boot_log(log, Some(inferlint_core::engine::Engine::Vllm));
        let failure = facts.failure.expect("the crash after ready is a failure");
        assert_eq!(failure.phase, Phase::Serving);
        assert_eq!(failure.kind, "runtime_error");
        assert_eq!(failure.lineno, 10);
        // A server that kept serving before any such line still clears what came before.
        let healthy = log.replace("EngineCore encountered a fatal error.", "hello").replace(
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.",
            "fine",
        );
        let facts =
            super::super::parse_boot_log(&healthy, Some(inferlint_core::engine::Engine::Vllm));
        assert!(facts.failure.is_none(), "{:?}", facts.failure);
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
