//! GuideLLM's JSON report (`--output kind=json`, by default `benchmarks.json`).
//!
//! One object: `metadata` (with `guidellm_version`), `config`, and `benchmarks`, one per
//! strategy it ran (a sweep gives several). Each benchmark counts its requests in
//! `metrics.request_totals` (`successful`, `errored`, `incomplete`, `total`; older
//! releases in `run_stats.requests_made`), sums their tokens in
//! `metrics.prompt_token_count` and `output_token_count` per outcome, and keeps each
//! request under `requests.successful`, `errored` and `incomplete` with wall-clock
//! timings. Its warm-up and cool-down are left out of those lists and figures.

use std::collections::HashMap;
use std::path::Path;

use inferlint_core::model::client::{
    ClientAccount, ClientRequest, LoadTool, RequestClock, RequestOutcome,
};
use serde_json::Value;

use super::stream::{self, index_at, path_is, Seg, Sink, Source};
use super::{asked, at, body, count, int, label, num, shape, text};
use crate::input::FileError;

/// The lists of request records in each benchmark, and how each ended.
const LISTS: [(&str, RequestOutcome); 3] = [
    ("successful", RequestOutcome::Completed),
    ("errored", RequestOutcome::Failed),
    ("incomplete", RequestOutcome::Incomplete),
];

/// The keys of a request record [`request`] reads: an entry with none of them holds no
/// request.
const RECORD_KEYS: [&str; 12] = [
    "info",
    "request_start_time",
    "start_time",
    "first_token_time",
    "request_end_time",
    "end_time",
    "request_args",
    "error",
    "time_to_first_token_ms",
    "request_latency",
    "prompt_tokens",
    "output_tokens",
];

/// Each benchmark's request records, folded into the account's records as they are
/// read: by benchmark and list ([`LISTS`]); and the entries of those lists that hold no
/// request (not an object, or one with none of [`RECORD_KEYS`]), counted and not kept,
/// so that a list of `0`s or `{}`s costs nothing.
#[derive(Default)]
struct Records(HashMap<(usize, usize), Vec<ClientRequest>>, u64);

impl Records {
    fn list(path: &[Seg]) -> Option<(usize, usize)> {
        LISTS.iter().enumerate().find_map(|(l, (key, _))| {
            path_is(
                path,
                &[Some("benchmarks"), None, Some("requests"), Some(key)],
            )
            .then(|| Some((index_at(path, 1)?, l)))
            .flatten()
        })
    }
}

impl Sink for Records {
    fn streams(&self, path: &[Seg]) -> bool {
        Records::list(path).is_some()
    }

    fn begin(&mut self, path: &[Seg]) {
        if let Some(list) = Records::list(path) {
            self.0.insert(list, Vec::new());
        }
    }

    fn item(&mut self, path: &[Seg], _: usize, item: Value) {
        if !super::holds_any(&item, &RECORD_KEYS) {
            self.1 += 1;
            return;
        }
        if let Some((b, l)) = Records::list(path) {
            self.0
                .entry((b, l))
                .or_default()
                .push(request(&item, LISTS[l].1));
        }
    }
}

pub(super) fn read(path: &Path, source: Source) -> Result<ClientAccount, FileError> {
    // Read from the raw text, so that a cut-off file's error still names the version.
    let version = super::string_field(&super::head(path, source)?, "guidellm_version");
    let tool_label = label(LoadTool::GuideLlm, version.as_deref());
    let mut records = Records::default();
    let root = stream::parse(path, source, &tool_label, &mut records)?;
    let no_request = records.1;
    let Some(benchmarks) = root.get("benchmarks").and_then(Value::as_array) else {
        return Err(shape(path, &tool_label, "no 'benchmarks' list"));
    };
    if benchmarks.is_empty() {
        return Err(shape(path, &tool_label, "the 'benchmarks' list is empty"));
    }
    let mut account = ClientAccount::new(LoadTool::GuideLlm);
    account.tool_version = version;
    account.parts = benchmarks.len();
    account.clock = Some(RequestClock::Unix);
    if no_request > 0 {
        account.notes.push(format!(
            "{no_request} entries of the benchmarks' request lists hold no request (not an object, or none of a record's fields): counted, not read"
        ));
    }
    let mut concurrency: Vec<Option<i64>> = Vec::new();
    let mut rates: Vec<Option<f64>> = Vec::new();
    let mut duration = 0.0;
    let mut durations_known = true;
    for (i, bench) in benchmarks.iter().enumerate() {
        let Some(read) = read_benchmark(path, &tool_label, (i, bench), &mut records, &mut account)?
        else {
            continue;
        };
        match read.duration {
            Some(d) => duration += d,
            None => durations_known = false,
        }
        concurrency.push(read.concurrency);
        rates.push(read.rate);
        if benchmarks.len() == 1 {
            read_latencies(bench, &mut account);
        }
    }
    if durations_known {
        account.duration = Some(duration);
    }
    if benchmarks.len() > 1 {
        account.notes.push(format!(
            "{} benchmarks (a sweep) summed into one account",
            benchmarks.len()
        ));
        if let (Some(tokens), Some(d)) = (account.total_output_tokens, account.duration) {
            account.output_throughput = (d > 0.0).then(|| tokens as f64 / d);
        }
    }
    account.max_concurrency = same(&concurrency);
    account.request_rate = same(&rates);
    read_settings(&root, benchmarks, &mut account);
    Ok(account)
}

/// What one benchmark of the report says beyond its counts, which the account sums or
/// compares across benchmarks.
struct Benchmark {
    duration: Option<f64>,
    concurrency: Option<i64>,
    rate: Option<f64>,
}

/// Adds benchmark `i`'s requests, counts, tokens and span to the account. `None` when it
/// has no request totals (it is then counted from its records alone).
fn read_benchmark(
    path: &Path,
    tool_label: &str,
    (i, bench): (usize, &Value),
    kept: &mut Records,
    account: &mut ClientAccount,
) -> Result<Option<Benchmark>, FileError> {
    let where_ = |what: &str| format!("benchmarks[{i}] {what}");
    let totals = at(bench, &["metrics", "request_totals"])
        .or_else(|| at(bench, &["scheduler_metrics", "requests_made"]))
        .or_else(|| at(bench, &["run_stats", "requests_made"]))
        .filter(|t| t.is_object());
    let records = read_records(path, tool_label, (i, bench), kept, account)?;
    let n = |key: &str| totals.and_then(|t| int(t.get(key)));
    if totals.is_none() {
        if records == 0 {
            return Err(shape(
                path,
                tool_label,
                where_("has neither request totals nor request records"),
            ));
        }
        account.notes.push(format!(
            "benchmarks[{i}] has no request totals: counted from its records"
        ));
        return Ok(None);
    }
    add(&mut account.completed, n("successful"));
    add(&mut account.failed, n("errored"));
    add(&mut account.incomplete, n("incomplete"));
    let total = n("total").or_else(|| {
        Some(n("successful")? + n("errored").unwrap_or(0) + n("incomplete").unwrap_or(0))
    });
    add(&mut account.sent, total);
    if let (Some(total), true) = (total, records > 0) {
        if (records as i64) < total {
            account.notes.push(format!(
                "benchmarks[{i}] keeps {records} of its {total} requests (a sample)"
            ));
        }
    }
    let tokens = |metric: &str| int(at(bench, &["metrics", metric, "successful", "total_sum"]));
    add(
        &mut account.total_input_tokens,
        tokens("prompt_token_count"),
    );
    add(
        &mut account.total_output_tokens,
        tokens("output_token_count"),
    );
    add_f(
        &mut account.span.warmup_s,
        num(bench.get("warmup_duration")),
    );
    add_f(
        &mut account.span.cooldown_s,
        num(bench.get("cooldown_duration")),
    );
    let start = num(bench.get("start_time"));
    let end = num(bench.get("end_time"));
    account.span.start_s = min_of(account.span.start_s, start);
    account.span.end_s = max_of(account.span.end_s, end);
    // Requests the scheduler processed beyond those the benchmark counts were its
    // warm-up and cool-down.
    let processed = int(at(bench, &["scheduler_state", "processed_requests"]));
    if let (Some(processed), Some(total)) = (processed, total) {
        if processed > total {
            let untimed = account.span.untimed_requests.unwrap_or(0);
            account.span.untimed_requests = Some(untimed + (processed - total) as u64);
        }
    }
    let strategy = bench
        .get("config")
        .and_then(|c| c.get("strategy"))
        .or_else(|| at(bench, &["args", "strategy"]));
    let (c, r) = strategy.map_or((None, None), requested);
    Ok(Some(Benchmark {
        duration: num(bench.get("duration")),
        concurrency: c,
        rate: r,
    }))
}

/// Adds benchmark `i`'s request records (successful, errored, incomplete) to the account
/// and says how many it keeps.
fn read_records(
    path: &Path,
    tool_label: &str,
    (i, bench): (usize, &Value),
    kept: &mut Records,
    account: &mut ClientAccount,
) -> Result<usize, FileError> {
    let where_ = |what: &str| format!("benchmarks[{i}] {what}");
    let Some(requests) = bench.get("requests").filter(|r| r.is_object()) else {
        return Err(shape(path, tool_label, where_("has no 'requests' object")));
    };
    let mut records = 0usize;
    for (l, (key, _)) in LISTS.iter().enumerate() {
        match requests.get(*key) {
            None | Some(Value::Null) => {}
            // The list was folded as it was read; the tree holds an empty one for it.
            Some(Value::Array(_)) => {
                let list = kept.0.remove(&(i, l)).unwrap_or_default();
                records += list.len();
                account.keep_records(list, Vec::new());
            }
            Some(_) => {
                return Err(shape(
                    path,
                    tool_label,
                    where_(&format!("'requests.{key}' is not a list")),
                ))
            }
        }
    }
    Ok(records)
}

/// The latency and throughput figures of a report with one benchmark, as it states them.
fn read_latencies(bench: &Value, account: &mut ClientAccount) {
    let stat = |metric: &str, key: &[&str]| {
        let mut keys = vec!["metrics", metric, "successful"];
        keys.extend_from_slice(key);
        num(at(bench, &keys))
    };
    account.mean_ttft_ms = stat("time_to_first_token_ms", &["mean"]);
    account.median_ttft_ms = stat("time_to_first_token_ms", &["median"]);
    account.p99_ttft_ms = stat("time_to_first_token_ms", &["percentiles", "p99"]);
    account.mean_tpot_ms = stat("time_per_output_token_ms", &["mean"]);
    account.output_throughput = stat("output_tokens_per_second", &["mean"]);
}

/// The command's settings the report keeps (the backend's request format, the synthetic
/// data's token counts, whether every request ignored EOS) and what it says of the run
/// it measured.
fn read_settings(root: &Value, benchmarks: &[Value], account: &mut ClientAccount) {
    // 0.8 keeps the command's settings under `config.spec`.
    let spec = at(root, &["config", "spec"]).or_else(|| root.get("config"));
    account.backend = spec
        .and_then(|s| text(at(s, &["backend", "request_format"])))
        .or_else(|| text(at(&benchmarks[0], &["config", "backend", "request_format"])));
    if let Some(data) = spec.and_then(|s| s.get("data")).and_then(Value::as_array) {
        if let [first] = data.as_slice() {
            account.advertised.dataset = text(first.get("kind"));
            if text(first.get("kind")).as_deref() == Some("synthetic_text") {
                account.advertised.input_tokens = num(first.get("prompt_tokens"));
                account.advertised.output_tokens = num(first.get("output_tokens"));
            }
        }
    }
    let asks: Vec<Option<bool>> = account.requests.iter().map(|r| r.ignore_eos).collect();
    account.advertised.ignore_eos = same(&asks);
    read_identity(spec, benchmarks, account);
}

/// What the report says of the run it measured: the model its backend addressed
/// (`config.spec.backend.model` in 0.8, each benchmark's `config.backend.model`; `null`
/// when `--model` was not given and GuideLLM asked the server), and each benchmark's
/// `start_time` and `end_time`, Unix times from `time.time()` (in 0.8.1 its scheduler's
/// `start_requests_time`, when the first request went out, and the moment its last
/// request was processed), which the server's readings must bracket.
fn read_identity(spec: Option<&Value>, benchmarks: &[Value], account: &mut ClientAccount) {
    let models: Vec<Option<String>> = benchmarks
        .iter()
        .map(|b| text(at(b, &["config", "backend", "model"])))
        .collect();
    let model = spec
        .and_then(|s| text(at(s, &["backend", "model"])))
        .or_else(|| same_text(&models));
    account.identity.model = model.filter(|m| !m.trim().is_empty());
    let starts: Vec<f64> = benchmarks
        .iter()
        .filter_map(|b| num(b.get("start_time")))
        .collect();
    let ends: Vec<f64> = benchmarks
        .iter()
        .filter_map(|b| num(b.get("end_time")))
        .collect();
    // Only when every benchmark has both: a sweep's part without times could lie
    // anywhere.
    if starts.len() == benchmarks.len() && ends.len() == benchmarks.len() {
        account.identity.start_unix_s = starts.into_iter().reduce(f64::min);
        account.identity.end_unix_s = ends.into_iter().reduce(f64::max);
    }
}

/// The one text every entry gives, when they all give the same.
pub(super) fn same_text(values: &[Option<String>]) -> Option<String> {
    let first = values.first()?.clone()?;
    values
        .iter()
        .all(|v| v.as_deref() == Some(first.as_str()))
        .then_some(first)
}

/// The concurrency or rate a benchmark's strategy asked for.
fn requested(strategy: &Value) -> (Option<i64>, Option<f64>) {
    match text(strategy.get("type_")).as_deref() {
        Some("synchronous") => (Some(1), None),
        Some("concurrent") => (
            int(strategy.get("streams")).or_else(|| int(strategy.get("max_concurrency"))),
            None,
        ),
        Some("throughput") => (int(strategy.get("max_concurrency")), None),
        Some("constant" | "poisson" | "async_constant" | "async_poisson") => {
            (None, num(strategy.get("rate")))
        }
        _ => (None, None),
    }
}

fn request(item: &Value, outcome: RequestOutcome) -> ClientRequest {
    let timing = |key: &str| num(at(item, &["info", "timings", key]));
    let sent = timing("request_start")
        .or_else(|| num(item.get("request_start_time")))
        .or_else(|| num(item.get("start_time")));
    let first = timing("first_token_iteration").or_else(|| num(item.get("first_token_time")));
    let end = timing("request_end")
        .or_else(|| num(item.get("request_end_time")))
        .or_else(|| num(item.get("end_time")))
        .or_else(|| timing("resolve_end"));
    let (asked_output, ignore_eos) = body(item.get("request_args"))
        .and_then(|args| args.get("body").cloned())
        .map_or((None, None), |b| asked(&b));
    let error = text(at(item, &["info", "error"])).or_else(|| text(item.get("error")));
    ClientRequest {
        outcome: Some(outcome),
        error: ((outcome != RequestOutcome::Completed)
            .then(|| error.map(|e| super::console::short_error(&e)))
            .flatten())
        .map(Into::into),
        scheduled_s: timing("scheduled_at").into(),
        sent_s: sent.into(),
        first_token_s: first.into(),
        end_s: end.into(),
        ttft_s: num(item.get("time_to_first_token_ms"))
            .map(|ms| ms / 1000.0)
            .into(),
        latency_s: num(item.get("request_latency")).into(),
        prompt_tokens: count(item.get("prompt_tokens")).into(),
        output_tokens: count(item.get("output_tokens")).into(),
        server_prompt_tokens: None.into(),
        server_output_tokens: None.into(),
        asked_output_tokens: asked_output.into(),
        // Its records count tokens, not the chunks they came in.
        chunk_count: None,
        ignore_eos,
    }
}

fn add(total: &mut Option<i64>, part: Option<i64>) {
    if let Some(p) = part {
        *total = Some(total.unwrap_or(0) + p);
    }
}

fn add_f(total: &mut Option<f64>, part: Option<f64>) {
    if let Some(p) = part {
        *total = Some(total.unwrap_or(0.0) + p);
    }
}

fn min_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_of(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The one value every part shares, or `None`.
pub(super) fn same<T: PartialEq + Copy>(values: &[Option<T>]) -> Option<T> {
    let first = values.first().copied().flatten()?;
    values.iter().all(|v| *v == Some(first)).then_some(first)
}
