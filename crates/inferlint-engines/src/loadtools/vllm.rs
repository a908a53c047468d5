//! The engines' own clients: `vllm bench serve`, SGLang's `bench_serving` and
//! TensorRT-LLM's `benchmark_serving`. All three write vLLM's field names (the other two
//! began as copies of vLLM's client), each with its own additions:
//!
//! - vLLM: one JSON object with `num_prompts`, `completed` and `failed`; with
//!   `--save-detailed`, arrays of one entry per request in send order (`input_lens`,
//!   `output_lens`, `ttfts`, `itls`, `latencies`, `start_times`, `queue_times`,
//!   `errors`), `start_times` read from `time.perf_counter()`;
//! - SGLang: one JSON line appended per run (the last is the run), `completed` only, no
//!   failed count; `--output-details` adds `input_lens`, `output_lens`, `ttfts`, `itls`
//!   and `errors`;
//! - TensorRT-LLM: vLLM's old object without `failed`, with `e2els` for latencies and
//!   the key `request_goodput:`.
//!
//! A failed request is the one whose `errors` entry is not empty.

use std::path::Path;

use inferlint_core::client::{
    ClientAccount, ClientRequest, LoadTool, RequestClock, RequestOutcome,
};
use serde_json::{Map, Value};

use super::{count, extend_gaps, int, label, num, parse_json, shape, text};
use crate::input::FileError;

pub(super) fn read(path: &Path, bytes: &[u8], tool: LoadTool) -> Result<ClientAccount, FileError> {
    let tool_label = label(tool, None);
    let (root, lines) = parse_object_or_last_line(path, bytes, &tool_label)?;
    let Value::Object(object) = root else {
        return Err(shape(path, &tool_label, "not a JSON object"));
    };
    let mut account = ClientAccount::new(tool);
    if lines > 1 {
        account.notes.push(format!(
            "the file holds {lines} runs, one line each; the last is read"
        ));
    }
    let get = |key: &str| object.get(key);
    impossible_counts(path, &tool_label, &object)?;
    account.sent = int(get("num_prompts"));
    account.completed = int(get("completed"));
    account.failed = int(get("failed"));
    account.total_input_tokens = int(get("total_input_tokens"));
    account.total_output_tokens = int(get("total_output_tokens"));
    account.duration = num(get("duration"));
    account.output_throughput = num(get("output_throughput"));
    account.max_concurrency = int(get("max_concurrency"));
    // `"inf"` (vLLM) and `Infinity` (SGLang) mean no rate limit: no number.
    account.request_rate = num(get("request_rate"));
    account.backend = text(get("backend"));
    account.mean_ttft_ms = num(get("mean_ttft_ms"));
    account.median_ttft_ms = num(get("median_ttft_ms"));
    account.p99_ttft_ms = num(get("p99_ttft_ms"));
    account.mean_tpot_ms = num(get("mean_tpot_ms"));
    if text(get("dataset_name")).is_some_and(|d| d.starts_with("random")) {
        account.advertised.input_tokens = num(get("random_input_len"));
        account.advertised.output_tokens = num(get("random_output_len"));
        account.advertised.range_ratio = num(get("random_range_ratio"));
        account.advertised.prefix_tokens = num(get("random_prefix_len"));
    }
    read_records(path, &object, &tool_label, &mut account)?;
    read_identity(&object, &mut account);
    Ok(account)
}

/// What the file says of the run it measured, for tying it to the server's files.
///
/// - `model_id`: `vllm bench serve` and TensorRT-LLM's `benchmark_serving` write the
///   `--model` they were given (vLLM: else the `root` of the server's first model in
///   `/v1/models`), which also names the tokenizer by default. SGLang's line has none.
/// - `date`: those two write `datetime.now().strftime("%Y%m%d-%H%M%S")`, taken when the
///   benchmark has returned, so after the timed run, in the client's local zone. A `date`
///   that is not in that form (`--metadata date=...` can replace it) is no time: a note.
/// - `server_info`: SGLang's client writes the server's own `/get_server_info` answer,
///   its launch settings with its version: `model_path`, `port` (the `--port` the server
///   was started with, as its boot log prints it) and `version`.
fn read_identity(object: &Map<String, Value>, account: &mut ClientAccount) {
    let id = &mut account.identity;
    id.model = text(object.get("model_id")).filter(|m| !m.trim().is_empty());
    match object.get("date") {
        None | Some(Value::Null) => {}
        Some(Value::String(date)) => match super::dates::compact(date) {
            Some(t) => {
                id.saved_local_s = Some(t.local_s);
                id.saved_resolution_s = t.resolution_s;
            }
            None => account.notes.push(format!(
                "its 'date' {:?} is not a time as the client writes it (%Y%m%d-%H%M%S), so when it was saved is not known",
                inferlint_core::client::one_line(date, 40)
            )),
        },
        Some(other) => account.notes.push(format!(
            "its 'date' {} is not text, so when it was saved is not known",
            inferlint_core::client::one_line(&other.to_string(), 40)
        )),
    }
    if let Some(info) = object.get("server_info").and_then(Value::as_object) {
        let id = &mut account.identity;
        id.server_model = text(info.get("model_path")).filter(|m| !m.trim().is_empty());
        id.server_port = count(info.get("port")).and_then(|p| u16::try_from(p).ok());
        id.server_version = text(info.get("version")).filter(|v| !v.trim().is_empty());
    }
}

/// Refuses a count no run can have (`"completed": -1`), naming the field: a file that
/// holds one is not what it claims, and every count beside it is in doubt. (A fraction is
/// truncated, as the established tool reads counts.)
fn impossible_counts(
    path: &Path,
    tool_label: &str,
    object: &Map<String, Value>,
) -> Result<(), FileError> {
    let counts = [
        ("num_prompts", "requests"),
        ("completed", "requests"),
        ("failed", "requests"),
        ("total_input_tokens", "tokens"),
        ("total_output_tokens", "tokens"),
    ];
    for (key, what) in counts {
        if let Some(v) = num(object.get(key)).filter(|v| *v < 0.0) {
            return Err(FileError::invalid(
                path,
                format!("{tool_label} result: '{key}' is {v}, which no count of {what} can be"),
            ));
        }
    }
    Ok(())
}

/// The whole file as one JSON value, else its last non-empty line (SGLang appends one line
/// per run), with the number of lines the file holds.
fn parse_object_or_last_line(
    path: &Path,
    bytes: &[u8],
    tool_label: &str,
) -> Result<(Value, usize), FileError> {
    let whole = parse_json(path, bytes, tool_label);
    if let Ok(value) = whole {
        return Ok((value, 1));
    }
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() > 1 {
        let last = lines.last().copied().unwrap_or("");
        if let Ok(value) = parse_json(path, last.as_bytes(), tool_label) {
            return Ok((value, lines.len()));
        }
        return parse_json(path, last.as_bytes(), &format!("{tool_label}, last line"))
            .map(|v| (v, lines.len()));
    }
    whole.map(|v| (v, 1))
}

/// The per-request arrays, when the tool was asked to keep them.
fn read_records(
    path: &Path,
    object: &Map<String, Value>,
    tool_label: &str,
    account: &mut ClientAccount,
) -> Result<(), FileError> {
    let Some(errors) = object.get("errors") else {
        return Ok(());
    };
    let Some(errors) = errors.as_array() else {
        return Err(shape(path, tool_label, "'errors' is not a list"));
    };
    let n = errors.len();
    let list = |key: &str| -> Result<Option<&Vec<Value>>, FileError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) if items.len() == n => Ok(Some(items)),
            Some(Value::Array(items)) => Err(shape(
                path,
                tool_label,
                format!(
                    "per-request lists of different lengths: '{key}' has {}, 'errors' {n}",
                    items.len()
                ),
            )),
            Some(_) => Err(shape(path, tool_label, format!("'{key}' is not a list"))),
        }
    };
    let input_lens = list("input_lens")?;
    let output_lens = list("output_lens")?;
    let ttfts = list("ttfts")?;
    let itls = list("itls")?;
    let latencies = match list("latencies")? {
        Some(l) => Some(l),
        None => list("e2els")?,
    };
    let start_times = list("start_times")?;
    let queue_times = list("queue_times")?;
    for (i, error) in errors.iter().enumerate() {
        let error = error.as_str().unwrap_or("").trim();
        let completed = error.is_empty();
        let mut request = ClientRequest {
            outcome: Some(if completed {
                RequestOutcome::Completed
            } else {
                RequestOutcome::Failed
            }),
            error: (!completed).then(|| super::console::short_error(error)),
            prompt_tokens: count(at(input_lens, i)),
            output_tokens: count(at(output_lens, i)),
            ..ClientRequest::default()
        };
        // A failed request's timings are zeros the tool filled in, not measurements.
        if completed {
            request.ttft_s = num(at(ttfts, i));
            request.latency_s = num(at(latencies, i));
            if let Some(gaps) = at(itls, i).and_then(Value::as_array) {
                extend_gaps(
                    &mut account.inter_token_ms,
                    gaps.iter().filter_map(|g| num(Some(g))).map(|g| g * 1000.0),
                );
            }
        }
        if let Some(sent) = num(at(start_times, i)) {
            request.sent_s = Some(sent);
            request.scheduled_s = num(at(queue_times, i)).map(|q| sent - q);
            account.clock = Some(RequestClock::Monotonic);
        }
        account.requests.push(request);
    }
    Ok(())
}

/// The `i`th entry of a per-request list, when the file has the list.
fn at(list: Option<&Vec<Value>>, i: usize) -> Option<&Value> {
    list.and_then(|l| l.get(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_of_appended_runs_is_the_run() {
        let text = "{\"completed\": 3, \"backend\": \"sglang\", \"request_rate\": Infinity}\n{\"completed\": 5, \"backend\": \"sglang\", \"request_rate\": Infinity}\n";
        let account = read(Path::new("b.jsonl"), text.as_bytes(), LoadTool::SglangBench).unwrap();
        assert_eq!(account.completed, Some(5));
        assert_eq!(account.request_rate, None);
        assert_eq!(account.notes.len(), 1);
    }

    /// `date` as `vllm bench serve` and TensorRT-LLM's client write it
    /// (`%Y%m%d-%H%M%S`, no zone) and `model_id` as given; a `date` in another form is no
    /// time and a note, never an error for the file.
    #[test]
    fn the_date_and_model_are_read_as_the_client_writes_them() {
        let read_text =
            |text: &str| read(Path::new("b.json"), text.as_bytes(), LoadTool::VllmBench).unwrap();
        let a = read_text(
            r#"{"completed": 1, "date": "20260930-204849", "model_id": "/models/Qwen3-8B"}"#,
        );
        // date -u -d '2026-09-30 20:48:49' +%s
        assert_eq!(a.identity.saved_local_s, Some(1_790_801_329.0));
        assert_eq!(a.identity.saved_resolution_s, 1.0);
        assert_eq!(a.identity.model.as_deref(), Some("/models/Qwen3-8B"));
        assert!(a.notes.is_empty(), "{:?}", a.notes);
        for bad in [
            r#""2026-09-30 20:48:49""#,
            r#""20260931-204849""#,
            "20260930",
        ] {
            let a = read_text(&format!(r#"{{"completed": 1, "date": {bad}}}"#));
            assert_eq!(a.identity.saved_local_s, None, "{bad}");
            assert_eq!(a.notes.len(), 1, "{bad}: {:?}", a.notes);
            assert!(a.notes[0].contains("'date'"), "{:?}", a.notes);
        }
        let none = read_text(r#"{"completed": 1, "date": null, "model_id": ""}"#);
        assert_eq!(
            (none.identity.saved_local_s, none.identity.model),
            (None, None)
        );
        assert!(none.notes.is_empty());
    }

    /// SGLang's `server_info` (the server's `/get_server_info` answer) names the server
    /// the client measured; a port no TCP port can be is none.
    #[test]
    fn sglangs_server_info_names_the_server() {
        let line = r#"{"completed": 3, "backend": "sglang", "server_info": {"model_path": "/models/m", "served_model_name": "m", "port": 30000, "version": "0.5.20"}}"#;
        let a = read(Path::new("b.jsonl"), line.as_bytes(), LoadTool::SglangBench).unwrap();
        let id = &a.identity;
        assert_eq!(id.server_model.as_deref(), Some("/models/m"));
        assert_eq!(id.server_port, Some(30000));
        assert_eq!(id.server_version.as_deref(), Some("0.5.20"));
        let far = line.replace("30000", "70000");
        let a = read(Path::new("b.jsonl"), far.as_bytes(), LoadTool::SglangBench).unwrap();
        assert_eq!(a.identity.server_port, None);
    }

    /// `"completed": -1` read as no count, and T18 passed on the rest: a count no run can
    /// have is refused, naming the field.
    #[test]
    fn impossible_counts_are_refused_naming_the_field() {
        for (field, value) in [
            ("completed", "-1"),
            ("failed", "-0.5"),
            ("num_prompts", "-32"),
        ] {
            let text = format!(
                r#"{{"backend": "openai", "num_prompts": 32, "completed": 32, "failed": 0, "{field}": {value}}}"#
            );
            let e = read(Path::new("b.json"), text.as_bytes(), LoadTool::VllmBench).unwrap_err();
            let e = e.to_string();
            assert!(
                e.contains(&format!(
                    "'{field}' is {}, which no count of requests can be",
                    value.parse::<f64>().unwrap()
                )),
                "{e}"
            );
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let fine = r#"{"backend": "openai", "num_prompts": 32, "completed": 32.0, "failed": 0}"#;
        assert!(read(Path::new("b.json"), fine.as_bytes(), LoadTool::VllmBench).is_ok());
    }

    #[test]
    fn lists_of_different_lengths_are_refused() {
        let text = r#"{"completed": 1, "errors": ["", ""], "ttfts": [0.1]}"#;
        let e = read(Path::new("b.json"), text.as_bytes(), LoadTool::VllmBench).unwrap_err();
        assert!(e.to_string().contains("'ttfts' has 1, 'errors' 2"), "{e}");
    }
}
