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

use inferlint_core::model::client::{
    ClientAccount, ClientRequest, Keep, LoadTool, RequestClock, RequestOutcome,
};
use serde_json::{Map, Value};

use super::stream::{self, Seg, Sink, Source};
use super::{count, int, label, num, shape, text};
use crate::input::FileError;

/// The per-request lists, each entry folded as it is read into what the account keeps
/// of it (a number, an error's text, a request's gaps in milliseconds): a request is the
/// `i`th entry of every list, and the lists may come in any order, so they are held as
/// these columns, not as JSON, until the file is read.
#[derive(Debug, Default)]
struct Lists {
    errors: Errors,
    input_lens: Vec<Option<u64>>,
    output_lens: Vec<Option<u64>>,
    ttfts: Vec<Option<f64>>,
    latencies: Vec<Option<f64>>,
    e2els: Vec<Option<f64>>,
    start_times: Vec<Option<f64>>,
    queue_times: Vec<Option<f64>>,
    /// Every request's gaps one after the other, and where each request's end.
    itl_gaps: Vec<f32>,
    itl_ends: Vec<usize>,
    /// Whether the records are kept whole. The replay ([`Keep::ForReplay`]) reads no
    /// gap between tokens (most of a request: 30 gaps of 4 bytes against 100 for the
    /// rest) and no queue time, so those lists are only counted, in `counted`.
    whole: bool,
    counted: Counted,
}

/// The entries of the lists a replay does not read.
#[derive(Debug, Default)]
struct Counted {
    itls: usize,
    queue_times: usize,
}

/// The `errors` list, held by what it says: its length, and the failed requests' texts
/// by their place. An empty entry (a request that succeeded) costs nothing, so a list of
/// millions of `""` holds a count.
#[derive(Debug, Default)]
struct Errors {
    len: usize,
    failed: Vec<(usize, String)>,
}

impl Errors {
    fn clear(&mut self) {
        self.len = 0;
        self.failed.clear();
    }

    fn push(&mut self, error: Option<String>) {
        if let Some(error) = error {
            self.failed.push((self.len, error));
        }
        self.len += 1;
    }

    /// Each entry in order: the error's text, or `None` for a request that succeeded.
    fn into_entries(self) -> impl Iterator<Item = Option<String>> {
        let mut failed = self.failed.into_iter().peekable();
        (0..self.len).map(move |i| match failed.peek() {
            Some((at, _)) if *at == i => failed.next().map(|(_, e)| e),
            _ => None,
        })
    }
}

/// The lists [`Lists`] keeps, by key.
const LISTS: [&str; 9] = [
    "errors",
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "latencies",
    "e2els",
    "start_times",
    "queue_times",
];

impl Lists {
    fn key(path: &[Seg]) -> Option<&str> {
        match path {
            [Seg::Key(k)] => LISTS.iter().find(|l| *l == k).copied(),
            _ => None,
        }
    }

    /// The entries read of a list.
    fn len(&self, key: &str) -> usize {
        match key {
            "errors" => self.errors.len,
            "input_lens" => self.input_lens.len(),
            "output_lens" => self.output_lens.len(),
            "ttfts" => self.ttfts.len(),
            "itls" if !self.whole => self.counted.itls,
            "queue_times" if !self.whole => self.counted.queue_times,
            "itls" => self.itl_ends.len(),
            "latencies" => self.latencies.len(),
            "e2els" => self.e2els.len(),
            "start_times" => self.start_times.len(),
            "queue_times" => self.queue_times.len(),
            _ => 0,
        }
    }

    fn floats(&mut self, key: &str) -> Option<&mut Vec<Option<f64>>> {
        Some(match key {
            "ttfts" => &mut self.ttfts,
            "latencies" => &mut self.latencies,
            "e2els" => &mut self.e2els,
            "start_times" => &mut self.start_times,
            "queue_times" => &mut self.queue_times,
            _ => return None,
        })
    }

    fn counts(&mut self, key: &str) -> Option<&mut Vec<Option<u64>>> {
        Some(match key {
            "input_lens" => &mut self.input_lens,
            "output_lens" => &mut self.output_lens,
            _ => return None,
        })
    }
}

impl Sink for Lists {
    /// Every list at the top is streamed: those of [`LISTS`] into their columns, the
    /// others (`generated_texts`, each request's whole output) read one entry at a time
    /// and dropped, as the reader asks nothing of them but that they are no number or
    /// text. `date` is kept whatever it holds: a note quotes it.
    fn streams(&self, path: &[Seg]) -> bool {
        matches!(path, [Seg::Key(k)] if k != "date")
    }

    fn begin(&mut self, path: &[Seg]) {
        match Lists::key(path) {
            Some("errors") => self.errors.clear(),
            Some("itls") => {
                self.itl_gaps.clear();
                self.itl_ends.clear();
                self.counted.itls = 0;
            }
            Some("queue_times") => {
                self.queue_times.clear();
                self.counted.queue_times = 0;
            }
            Some(key) => {
                if let Some(list) = self.floats(key) {
                    list.clear();
                } else if let Some(list) = self.counts(key) {
                    list.clear();
                }
            }
            None => {}
        }
    }

    fn item(&mut self, path: &[Seg], _: usize, item: Value) {
        let Some(key) = Lists::key(path) else {
            return;
        };
        match key {
            "itls" if !self.whole => self.counted.itls += 1,
            "queue_times" if !self.whole => self.counted.queue_times += 1,
            "errors" => {
                let error = item.as_str().unwrap_or("").trim();
                self.errors
                    .push((!error.is_empty()).then(|| super::console::short_error(error)));
            }
            "itls" => {
                if let Some(gaps) = item.as_array() {
                    super::extend_gaps(
                        &mut self.itl_gaps,
                        gaps.iter().filter_map(|g| num(Some(g))).map(|g| g * 1000.0),
                    );
                }
                self.itl_ends.push(self.itl_gaps.len());
            }
            _ => {
                if let Some(list) = self.floats(key) {
                    list.push(num(Some(&item)));
                } else if let Some(list) = self.counts(key) {
                    list.push(count(Some(&item)));
                }
            }
        }
    }
}

#[cfg(test)]
fn read(path: &Path, source: Source, tool: LoadTool) -> Result<ClientAccount, FileError> {
    read_kept(path, source, tool, Keep::Records)
}

/// The file's account, its request records kept as `keep` says.
pub(super) fn read_kept(
    path: &Path,
    source: Source,
    tool: LoadTool,
    keep: Keep,
) -> Result<ClientAccount, FileError> {
    let tool_label = label(tool, None);
    let (root, lines, lists) = parse_object_or_last_line(path, source, &tool_label, keep)?;
    let Value::Object(object) = root else {
        return Err(shape(path, &tool_label, "not a JSON object"));
    };
    let mut account = ClientAccount::new(tool);
    account.keep = keep;
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
    read_records(path, &object, &tool_label, lists, &mut account)?;
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
                inferlint_core::model::client::one_line(date, 40)
            )),
        },
        Some(other) => account.notes.push(format!(
            "its 'date' {} is not text, so when it was saved is not known",
            inferlint_core::model::client::one_line(&other.to_string(), 40)
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
/// per run), with the number of lines the file holds and its per-request lists. A line is
/// empty when it holds only ASCII whitespace.
fn parse_object_or_last_line(
    path: &Path,
    source: Source,
    tool_label: &str,
    keep: Keep,
) -> Result<(Value, usize, Lists), FileError> {
    let lists_for = || Lists {
        whole: keep == Keep::Records,
        ..Lists::default()
    };
    let mut lists = lists_for();
    let whole = stream::parse(path, source, tool_label, &mut lists);
    if let Ok(value) = whole {
        return Ok((value, 1, lists));
    }
    let mut lines = 0usize;
    let mut last = (0u64, 0u64);
    stream::for_each_line(path, source, |offset, line| {
        let blank = line
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\r' | 0x0b | 0x0c));
        if !blank {
            lines += 1;
            last = (offset, line.len() as u64);
        }
        true
    })?;
    if lines > 1 {
        let mut lists = lists_for();
        let what = format!("{tool_label}, last line");
        return stream::parse_range(path, source, last, &what, &mut lists)
            .map(|v| (v, lines, lists));
    }
    whole.map(|v| (v, 1, lists))
}

/// The per-request lists, when the tool was asked to keep them.
fn read_records(
    path: &Path,
    object: &Map<String, Value>,
    tool_label: &str,
    mut lists: Lists,
    account: &mut ClientAccount,
) -> Result<(), FileError> {
    let Some(errors) = object.get("errors") else {
        return Ok(());
    };
    if !errors.is_array() {
        return Err(shape(path, tool_label, "'errors' is not a list"));
    }
    let n = lists.errors.len;
    // Whether the file has a list, of the length of 'errors'.
    let list = |key: &str| -> Result<bool, FileError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(false),
            // Read into its column; the tree holds an empty list for it.
            Some(Value::Array(_)) if lists.len(key) == n => Ok(true),
            Some(Value::Array(_)) => Err(shape(
                path,
                tool_label,
                format!(
                    "per-request lists of different lengths: '{key}' has {}, 'errors' {n}",
                    lists.len(key)
                ),
            )),
            Some(_) => Err(shape(path, tool_label, format!("'{key}' is not a list"))),
        }
    };
    let input_lens = list("input_lens")?;
    let output_lens = list("output_lens")?;
    let ttfts = list("ttfts")?;
    let itls = list("itls")?;
    let latencies = if list("latencies")? {
        Some(true)
    } else if list("e2els")? {
        Some(false)
    } else {
        None
    };
    let start_times = list("start_times")?;
    let queue_times = list("queue_times")?;
    // Read but not kept for the replay (their lengths were checked all the same).
    let (itls_kept, queue_times_kept) = (itls && lists.whole, queue_times && lists.whole);
    if !(input_lens || output_lens || ttfts || itls || latencies.is_some() || start_times) {
        // Each record would hold its outcome alone: the counts and the failures' texts
        // are taken from the list as records would give them, and no record is kept.
        let failed = lists.errors.failed.len();
        account.completed.get_or_insert((n - failed) as i64);
        account.failed.get_or_insert(failed as i64);
        account.sent.get_or_insert(n as i64);
        if account.failure_reasons.is_empty() {
            for (_, error) in &lists.errors.failed {
                account.add_failure_reason(error, 1);
            }
        }
        account.notes.push(format!(
            "its per-request lists hold only 'errors' ({n} entries, {failed} failed): the requests are counted, not kept as records"
        ));
        return Ok(());
    }
    let latencies = latencies.map(|own| {
        std::mem::take(if own {
            &mut lists.latencies
        } else {
            &mut lists.e2els
        })
    });
    // Without a latency (a detailed result of vllm bench serve before it wrote
    // `latencies`, as 0.16's), a streamed request's end is its last chunk's arrival:
    // its send, its TTFT and every gap after the first chunk. The stream closes just
    // after it ([DONE]), so this is the end to within that close, never later.
    let ends_from_chunks = latencies.is_none() && ttfts && itls_kept && start_times;
    if ends_from_chunks {
        account.notes.push(
            "its result holds no 'latencies': each request's end is its last chunk's arrival (send + TTFT + the gaps between its chunks)".into(),
        );
    }
    let at = |present: bool, column: &[Option<f64>], i: usize| present.then(|| column[i]).flatten();
    let counted =
        |present: bool, column: &[Option<u64>], i: usize| present.then(|| column[i]).flatten();
    if account.keep == Keep::Records {
        account.requests.reserve_exact(n);
    }
    // The gaps of the completed requests, moved down in place over the others'.
    let mut kept_gaps = 0;
    let mut gaps_from = 0;
    for (i, error) in std::mem::take(&mut lists.errors).into_entries().enumerate() {
        let completed = error.is_none();
        let mut request = ClientRequest {
            outcome: Some(if completed {
                RequestOutcome::Completed
            } else {
                RequestOutcome::Failed
            }),
            error: error.map(Into::into),
            prompt_tokens: counted(input_lens, &lists.input_lens, i).into(),
            output_tokens: counted(output_lens, &lists.output_lens, i).into(),
            ..ClientRequest::default()
        };
        // A failed request's timings are zeros the tool filled in, not measurements.
        if completed {
            request.ttft_s = at(ttfts, &lists.ttfts, i).into();
            request.latency_s = latencies.as_ref().and_then(|l| l[i]).into();
            if itls_kept {
                let end = lists.itl_ends[i];
                if ends_from_chunks {
                    let sent = at(start_times, &lists.start_times, i);
                    if let (Some(sent), Some(ttft)) = (sent, request.ttft_s.get()) {
                        let gaps_ms: f64 = lists.itl_gaps[gaps_from..end]
                            .iter()
                            .map(|g| f64::from(*g))
                            .sum();
                        request.end_s = (sent + ttft + gaps_ms / 1000.0).into();
                    }
                }
                lists.itl_gaps.copy_within(gaps_from..end, kept_gaps);
                kept_gaps += end - gaps_from;
                // A gap lies between two chunks: the first chunk has none before it.
                request.set_chunks((end - gaps_from) as u64 + 1);
            }
        }
        if itls_kept {
            gaps_from = lists.itl_ends[i];
        }
        if let Some(sent) = at(start_times, &lists.start_times, i) {
            request.sent_s = sent.into();
            request.scheduled_s = at(queue_times_kept, &lists.queue_times, i)
                .map(|q| sent - q)
                .into();
            account.clock = Some(RequestClock::Monotonic);
        }
        account.keep_record(request);
    }
    if itls_kept {
        lists.itl_gaps.truncate(kept_gaps);
        if account.inter_token_ms.is_empty() {
            account.inter_token_ms = std::mem::take(&mut lists.itl_gaps);
        } else {
            account.inter_token_ms.extend_from_slice(&lists.itl_gaps);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vllm bench serve 0.16 writes `start_times`, `ttfts` and `itls` (the gaps after the
    /// first chunk, seconds) but no `latencies`: a request sent at 100 s whose first chunk
    /// came 0.5 s later and whose next two came 0.25 s and 0.125 s after that ended with
    /// its last chunk, at 100.875 s. A failed request's zeros are no end. With
    /// `latencies` present, the end is send + latency, as the tool measured it.
    #[test]
    fn without_latencies_a_request_ends_at_its_last_chunk() {
        let text = r#"{"backend": "vllm", "completed": 1, "failed": 1,
            "start_times": [100.0, 100.5], "ttfts": [0.5, 0.0],
            "itls": [[0.25, 0.125], []], "input_lens": [4, 4], "output_lens": [3, 0],
            "errors": ["", "Bad Request"]}"#;
        let account = read(
            Path::new("b.json"),
            Source::Bytes(text.as_bytes()),
            LoadTool::VllmBench,
        )
        .unwrap();
        let ends: Vec<Option<f64>> = account.requests.iter().map(|r| r.end_at()).collect();
        assert_eq!(ends, vec![Some(100.875), None]);
        assert!(account.notes.iter().any(|n| n.contains("last chunk")));

        let with = text.replace(r#""errors""#, r#""latencies": [0.9, 0.0], "errors""#);
        let account = read(
            Path::new("b.json"),
            Source::Bytes(with.as_bytes()),
            LoadTool::VllmBench,
        )
        .unwrap();
        assert_eq!(account.requests[0].end_at(), Some(100.9));
        assert!(!account.notes.iter().any(|n| n.contains("last chunk")));
    }

    /// `errors` alone, a million entries of `""` and one failure: each record would hold
    /// only its outcome, so none is kept; the counts and the failure's text are the
    /// list's, as records would have given them.
    #[test]
    fn a_list_of_errors_alone_is_counted_not_kept() {
        let mut text = String::from(r#"{"backend": "vllm", "errors": ["#);
        for _ in 0..1_000_000 {
            text.push_str(r#""", "#);
        }
        text.push_str(r#""Connection refused"]}"#);
        let account = read(
            Path::new("b.json"),
            Source::Bytes(text.as_bytes()),
            LoadTool::VllmBench,
        )
        .unwrap();
        assert!(
            account.requests.is_empty(),
            "{} kept",
            account.requests.len()
        );
        assert_eq!(
            (account.sent, account.completed, account.failed),
            (Some(1_000_001), Some(1_000_000), Some(1))
        );
        assert_eq!(account.failure_reasons.len(), 1);
        assert!(
            account
                .notes
                .iter()
                .any(|n| n.contains("hold only 'errors'")),
            "{:?}",
            account.notes
        );
    }

    #[test]
    fn the_last_line_of_appended_runs_is_the_run() {
        let text = "{\"completed\": 3, \"backend\": \"sglang\", \"request_rate\": Infinity}\n{\"completed\": 5, \"backend\": \"sglang\", \"request_rate\": Infinity}\n";
        let account = read(
            Path::new("b.jsonl"),
            Source::Bytes(text.as_bytes()),
            LoadTool::SglangBench,
        )
        .unwrap();
        assert_eq!(account.completed, Some(5));
        assert_eq!(account.request_rate, None);
        assert_eq!(account.notes.len(), 1);
    }

    /// `date` as `vllm bench serve` and TensorRT-LLM's client write it
    /// (`%Y%m%d-%H%M%S`, no zone) and `model_id` as given; a `date` in another form is no
    /// time and a note, never an error for the file.
    #[test]
    fn the_date_and_model_are_read_as_the_client_writes_them() {
        let read_text = |text: &str| {
            read(
                Path::new("b.json"),
                Source::Bytes(text.as_bytes()),
                LoadTool::VllmBench,
            )
            .unwrap()
        };
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
        let a = read(
            Path::new("b.jsonl"),
            Source::Bytes(line.as_bytes()),
            LoadTool::SglangBench,
        )
        .unwrap();
        let id = &a.identity;
        assert_eq!(id.server_model.as_deref(), Some("/models/m"));
        assert_eq!(id.server_port, Some(30000));
        assert_eq!(id.server_version.as_deref(), Some("0.5.20"));
        let far = line.replace("30000", "70000");
        let a = read(
            Path::new("b.jsonl"),
            Source::Bytes(far.as_bytes()),
            LoadTool::SglangBench,
        )
        .unwrap();
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
            let e = read(
                Path::new("b.json"),
                Source::Bytes(text.as_bytes()),
                LoadTool::VllmBench,
            )
            .unwrap_err();
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
        assert!(read(
            Path::new("b.json"),
            Source::Bytes(fine.as_bytes()),
            LoadTool::VllmBench
        )
        .is_ok());
    }

    #[test]
    fn lists_of_different_lengths_are_refused() {
        let text = r#"{"completed": 1, "errors": ["", ""], "ttfts": [0.1]}"#;
        let e = read(
            Path::new("b.json"),
            Source::Bytes(text.as_bytes()),
            LoadTool::VllmBench,
        )
        .unwrap_err();
        assert!(e.to_string().contains("'ttfts' has 1, 'errors' 2"), "{e}");
    }
}
