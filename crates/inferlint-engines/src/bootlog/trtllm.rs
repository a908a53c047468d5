//! TensorRT-LLM's boot-log lines (1.3). It sizes its KV cache twice (a dry run, then the
//! real pool), so those facts take the last value without calling it a conflict.

use inferlint_core::model::{LoggedPause, PyValue, Settings};

use super::lines::Line;
use super::scan::{after, f64_with_unit, u64_after, word_start};
use super::{pyliteral, LineAt, Parse, Rule, Unreadable};

/// Settings kept from the `LLM Args:` line (the first occurrence of each).
const KEPT_SETTINGS: &[&str] = &[
    "attn_backend",
    "max_batch_size",
    "max_num_tokens",
    "max_seq_len",
    "free_gpu_memory_fraction",
    "tokens_per_block",
    "capacity_scheduler_policy",
    "enable_chunked_prefill",
    "speculative_config",
    "kv_cache_dtype",
    "disable_overlap_scheduler",
];

pub(super) static RULES: &[Rule] = &[
    // `[TensorRT-LLM] TensorRT LLM version: 1.3.0rc29` (printed by every process)
    Rule {
        field: "version",
        anchor: "TensorRT LLM version: ",
        read: version,
    },
    // `[MemUsageChange] Allocated 5.19 GiB for max tokens in paged KV cache (37760).`
    Rule {
        field: "kv_pool_tokens",
        anchor: "for max tokens in paged KV cache (",
        read: kv_allocated,
    },
    // `Max KV cache blocks per sequence: 512 [window size=16384], tokens per block=32, ...`
    Rule {
        field: "page_size",
        anchor: "tokens per block=",
        read: tokens_per_block,
    },
    // `max_seq_len=16384, max_num_requests=32, max_num_tokens=8192, max_batch_size=32`
    Rule {
        field: "running_cap",
        anchor: "max_num_requests=",
        read: request_limits,
    },
    // `Memory used at after loading weights (inside torch) in memory usage profiling: 15.31 GiB`
    Rule {
        field: "model_load_gib",
        anchor: "after loading weights (inside torch) in memory usage profiling: ",
        read: weights_loaded,
    },
    // `LLM Args:` and, on the next line, every setting as `key=value`.
    Rule {
        field: "llm_args",
        anchor: "LLM Args:",
        read: llm_args,
    },
];

fn version(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let version = after(at.body, "TensorRT LLM version: ")
        .map(str::trim)
        .filter(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.contains(' '))
        .ok_or(Unreadable)?;
    p.facts.version = Some(version.to_owned());
    Ok(())
}

fn kv_allocated(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(at.body, "Allocated ", " GiB for max tokens").ok_or(Unreadable)?;
    let tokens = u64_after(at.body, "paged KV cache (").ok_or(Unreadable)?;
    p.facts.kv_pool_tokens = Some(tokens);
    p.facts.available_kv_cache_gib = Some(gib);
    Ok(())
}

fn tokens_per_block(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let tokens = u64_after(at.body, "tokens per block=").ok_or(Unreadable)?;
    p.facts.page_size = Some(tokens);
    Ok(())
}

fn request_limits(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let cap = u64_after(at.body, "max_num_requests=").ok_or(Unreadable)?;
    let batch = u64_after(at.body, "max_batch_size=").ok_or(Unreadable)?;
    p.facts.running_cap = Some(cap);
    p.facts.requested_running = Some(batch);
    Ok(())
}

fn weights_loaded(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    let gib = f64_with_unit(
        at.body,
        "after loading weights (inside torch) in memory usage profiling: ",
        " GiB",
    )
    .ok_or(Unreadable)?;
    p.set("model_load_gib", |f| &mut f.model_load_gib, gib);
    Ok(())
}

fn llm_args(p: &mut Parse, at: &LineAt) -> Result<(), Unreadable> {
    if !at.body.ends_with("LLM Args:") {
        return Ok(());
    }
    let line = at.next.map(Line::body).unwrap_or("");
    if line.is_empty() {
        return Err(Unreadable);
    }
    let mut settings = Settings::new();
    if let Some(model) = setting(line, "model") {
        if let PyValue::Str(m) | PyValue::Raw(m) = &model {
            p.facts.model = Some(m.clone());
        }
        settings.insert("model".to_owned(), model);
    }
    for key in KEPT_SETTINGS {
        if let Some(value) = setting(line, key) {
            settings.insert((*key).to_owned(), value);
        }
    }
    if settings.is_empty() {
        return Err(Unreadable);
    }
    p.set("llm_args", |f| &mut f.llm_args, line.to_owned());
    p.set("server_args", |f| &mut f.server_args, settings);
    Ok(())
}

/// The first `key=value` of `key` in an `LLM Args` line (nested settings included), read
/// as `'text'`, `<Enum.NAME: ...>` (giving `NAME`), or a bare value up to the next
/// space, comma or closing bracket outside brackets of its own.
fn setting(line: &str, key: &str) -> Option<PyValue> {
    let pattern = format!("{key}=");
    let mut from = 0;
    let start = loop {
        let at = from + line[from..].find(&pattern)?;
        if word_start(line, at) {
            break at + pattern.len();
        }
        from = at + pattern.len();
    };
    let rest = &line[start..];
    if rest.starts_with('\'') || rest.starts_with('"') {
        let quote = rest.as_bytes()[0] as char;
        let end = rest[1..].find(quote)? + 1;
        return pyliteral::parse_value(&rest[..=end]).ok();
    }
    if let Some(enum_repr) = rest.strip_prefix('<') {
        let end = enum_repr.find('>')?;
        let inner = &enum_repr[..end];
        let qualified = inner.split(':').next().unwrap_or(inner);
        let name = qualified.rsplit('.').next().unwrap_or(qualified);
        return Some(PyValue::Str(name.trim().to_owned()));
    }
    let bytes = rest.as_bytes();
    let mut depth = 0usize;
    let mut end = 0;
    while end < bytes.len() {
        match bytes[end] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' if depth > 0 => depth -= 1,
            b' ' | b',' | b')' | b']' | b'}' if depth == 0 => break,
            _ => {}
        }
        end += 1;
    }
    (end > 0).then(|| pyliteral::scalar(&rest[..end]))
}

/// Counts what the whole log says about serving: INFO lines, answered requests, pauses.
/// Also keeps the line numbers of answered requests and each pause with its request id,
/// so that T1 can place pauses inside or outside the run the snapshots bracket.
///
/// In a merged log the executor's lines and the HTTP server's access lines come from
/// different processes with their own output buffers, so a pause line can sit anywhere
/// relative to the access lines; where a chunk of one process's output lands inside
/// another's line, the pause line is cut. Such pieces are kept as fragments: a pause
/// that cannot be read must never read as no pause.
pub(super) fn on_line(p: &mut Parse, line: &Line<'_>, lineno: usize) {
    let clean = line.clean.as_ref();
    if !p.info_lines && (clean.contains("[TRT-LLM] [I]") || clean.contains("[TensorRT-LLM][INFO]"))
    {
        p.info_lines = true;
    }
    if super::classify::is_served_request(clean) {
        p.served += 1;
        p.facts.served_lines.push(lineno);
    }
    // A stamp dates a pause only when the pause is the line's own text, not a piece of
    // another process's output spliced after someone else's prefix.
    let own_stamp = line
        .body()
        .starts_with(SCHEDULER)
        .then(|| line.naive_seconds())
        .flatten();
    for request_id in pause_ids(clean) {
        p.pauses += 1;
        p.facts.pause_lines.push(LoggedPause {
            lineno,
            request_id,
            logged_at: own_stamp,
        });
    }
    if has_pause_fragment(clean) {
        p.facts.pause_fragments.push(lineno);
    }
}

/// The scheduler that pauses requests (the only one that does), as its lines start.
const SCHEDULER: &str = "MaxUtilizationScheduler";

/// The request ids of the `request ID 17 -> pause` occurrences in a line.
fn pause_ids(line: &str) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("request ID ") {
        rest = &rest[at + "request ID ".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(" -> pause") {
            if let Ok(id) = rest[..digits].parse() {
                ids.push(id);
            }
        }
    }
    ids
}

/// The shapes a `MaxUtilizationScheduler` message takes (TensorRT-LLM's capacity
/// scheduler: the pause at INFO, the rest at DEBUG). After the scheduler's name, a
/// complete line continues with one of these, where `#` stands for a number.
const SCHEDULER_SHAPES: &[&str] = &[
    ": request ID # -> pause",
    ": request ID # -> start",
    ": request ID # required blocks",
    ": request ID # cannot / should not be scheduled",
    ": request ID # required peft pages",
    ": scheduling request ID #",
    ": scheduled ",
];

/// Whether a line holds a piece of a scheduler line that cannot be read whole.
fn has_pause_fragment(line: &str) -> bool {
    let mut rest = line;
    while let Some(at) = rest.find(SCHEDULER) {
        rest = &rest[at + SCHEDULER.len()..];
        if !SCHEDULER_SHAPES
            .iter()
            .any(|shape| matches_shape(rest, shape))
        {
            return true;
        }
    }
    // The second half of a cut pause line: ` -> pause` without its request id.
    let mut rest = line;
    while let Some(at) = rest.find(" -> pause") {
        let before = &rest[..at];
        let digits = before.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits == 0 || !before[..before.len() - digits].ends_with("request ID ") {
            return true;
        }
        rest = &rest[at + " -> pause".len()..];
    }
    // The first half cut before the scheduler's name was whole: the line ends in a
    // proper prefix of it right after the logger's level tag.
    ["[I] ", "[INFO] "].iter().any(|tag| {
        line.rfind(tag).is_some_and(|at| {
            let tail = &line[at + tag.len()..];
            tail.len() >= 3 && tail.len() < SCHEDULER.len() && SCHEDULER.starts_with(tail)
        })
    })
}

/// Whether `text` starts with `shape`, where `#` matches one or more digits.
fn matches_shape(text: &str, shape: &str) -> bool {
    let (head, tail) = shape.split_once('#').unwrap_or((shape, ""));
    let Some(rest) = text.strip_prefix(head) else {
        return false;
    };
    if !shape.contains('#') {
        return true;
    }
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(tail)
}

/// Facts that follow once every line was read.
pub(super) fn finish(p: &mut Parse) {
    p.facts.served_in_log = Some(p.served);
    // Pauses are logged at INFO level only; a log without INFO lines, or one cut before
    // any request was answered, cannot tell how many there were.
    p.facts.pauses = (p.info_lines && p.served > 0).then_some(p.pauses);
    let Some(args) = &p.facts.server_args else {
        return;
    };
    if let Some(backend) = args.get("attn_backend").and_then(PyValue::as_str) {
        p.facts.selected_backends.push(backend.to_owned());
    }
    p.facts.speculative = Some(
        args.get(inferlint_core::engine::TRTLLM.speculation.setting)
            .is_some_and(|v| !v.is_none()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_in_their_printed_forms() {
        let line = "model='/m' encoder_max_batch_size=None max_batch_size=32 kv_cache_config=KvCacheConfig(tokens_per_block=32, free_gpu_memory_fraction=0.9) \
                    scheduler_config=SchedulerConfig(capacity_scheduler_policy=<CapacitySchedulerPolicy.GUARANTEED_NO_EVICT: 'GUARANTEED_NO_EVICT'>) \
                    speculative_config=Eagle(max_draft_len=3, x=[1, 2]) attn_backend='TRTLLM'";
        assert_eq!(setting(line, "model"), Some(PyValue::Str("/m".into())));
        assert_eq!(setting(line, "max_batch_size"), Some(PyValue::Int(32)));
        assert_eq!(setting(line, "tokens_per_block"), Some(PyValue::Int(32)));
        assert_eq!(
            setting(line, "free_gpu_memory_fraction"),
            Some(PyValue::Float(0.9))
        );
        assert_eq!(
            setting(line, "capacity_scheduler_policy"),
            Some(PyValue::Str("GUARANTEED_NO_EVICT".into()))
        );
        assert_eq!(
            setting(line, "speculative_config"),
            Some(PyValue::Raw("Eagle(max_draft_len=3, x=[1, 2])".into()))
        );
        assert_eq!(
            setting(line, "attn_backend"),
            Some(PyValue::Str("TRTLLM".into()))
        );
        assert_eq!(setting(line, "kv_cache_dtype"), None);
        assert_eq!(setting("model='/m", "model"), None);
    }

    #[test]
    fn pause_lines() {
        assert_eq!(
            pause_ids("MaxUtilizationScheduler: request ID 12 -> pause"),
            [12]
        );
        assert!(pause_ids("request ID x -> pause request ID 3 -> resume").is_empty());
        // Two processes' chunks spliced into one line: both pieces still read.
        assert_eq!(
            pause_ids("INFO:     127.0.0.1:1 - \"POST /v1/completions HTTP/1.1\" 200 OK[TensorRT-LLM][INFO] MaxUtilizationScheduler: request ID 40 -> pause"),
            [40]
        );
    }

    #[test]
    fn cut_pause_lines_are_fragments() {
        let whole =
            "[10/01/2026-01:44:00] [TRT-LLM] [I] MaxUtilizationScheduler: request ID 45 -> pause";
        assert!(!has_pause_fragment(whole));
        assert!(!has_pause_fragment(
            "[TensorRT-LLM][INFO] MaxUtilizationScheduler: request ID 45 -> pause"
        ));
        assert!(!has_pause_fragment(
            "[TensorRT-LLM][DEBUG] MaxUtilizationScheduler: scheduling request ID 45"
        ));
        // Cut at every point inside the scheduler's text: each piece is a fragment.
        let start = whole.find("Max").unwrap();
        for cut in start + 3..whole.len() {
            let (head, tail) = whole.split_at(cut);
            assert!(has_pause_fragment(head), "head {head:?}");
            let spliced = format!("INFO:     127.0.0.1:1 - \"GET /metrics HTTP/1.1\" 200 OK{tail}");
            if tail.contains(" -> pause") || tail.contains(SCHEDULER) {
                assert!(
                    has_pause_fragment(&spliced) || pause_ids(&spliced) == [45],
                    "tail {tail:?}"
                );
            }
        }
        assert!(!has_pause_fragment(
            "INFO:     Application startup complete."
        ));
    }
}
