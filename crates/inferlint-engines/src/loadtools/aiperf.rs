//! NVIDIA AIPerf's exports (`--artifact-dir`): `profile_export_aiperf.json`, the summary,
//! and `profile_export.jsonl`, one record per request, warm-up included.
//!
//! In the summary every metric is `{unit, avg, p50, p99, ...}`. Careful with its names:
//! `request_count` counts the successful requests, `error_request_count` the failed and
//! `completed_request_count` every request that came back; `error_summary` lists the
//! errors with counts. The warm-up phase (`input_config.phases[]` with
//! `exclude_from_results`) is left out of every figure and summarised apart in
//! `warmup_metrics`. A record carries `metadata.benchmark_phase`, nanosecond wall-clock
//! times, its metrics (`time_to_first_token`, `input_sequence_length`, the server's
//! `usage_prompt_tokens` and `usage_completion_tokens`, ...) and, for a failed request,
//! `error` with its `code`, `type` and `message`.

use std::path::Path;

use inferlint_core::model::client::{
    ClientAccount, ClientRequest, LoadTool, RequestClock, RequestOutcome,
};
use serde_json::Value;

use super::stream::{self, Source};
use super::{at, count, extend_gaps, int, label, num, parse_json, shape, text};
use crate::input::FileError;

pub(super) fn summary(path: &Path, source: Source) -> Result<ClientAccount, FileError> {
    let version = super::string_field(&super::head(path, source)?, "aiperf_version");
    let tool_label = label(LoadTool::AiPerf, version.as_deref());
    let root = parse_json(path, source, &tool_label)?;
    if !root.is_object() {
        return Err(shape(path, &tool_label, "not a JSON object"));
    }
    let avg = |metric: &str| num(at(&root, &[metric, "avg"]));
    let Some(successful) = avg("request_count") else {
        return Err(shape(path, &tool_label, "no 'request_count.avg'"));
    };
    let mut account = ClientAccount::new(LoadTool::AiPerf);
    account.tool_version = version;
    account.completed = Some(successful as i64);
    // Absent when no request failed.
    account.failed = Some(avg("error_request_count").map_or(0, |f| f as i64));
    let came_back = avg("completed_request_count").map(|c| c as i64);
    let phases = at(&root, &["input_config", "phases"]).and_then(Value::as_array);
    let profiling = phases.and_then(|p| {
        p.iter().find(|ph| {
            !ph.get("exclude_from_results")
                .and_then(Value::as_bool)
                .unwrap_or(false)
        })
    });
    let target = profiling.and_then(|p| int(p.get("requests")));
    account.sent = target.or(came_back);
    if let (Some(target), Some(back)) = (target, came_back) {
        if back < target {
            account.incomplete = Some(target - back);
        }
    }
    if root.get("was_cancelled").and_then(Value::as_bool) == Some(true) {
        account
            .notes
            .push("AIPerf says the run was cancelled before its end".into());
    }
    if let Some(errors) = root.get("error_summary").and_then(Value::as_array) {
        for e in errors {
            let details = e.get("error_details");
            let code = int(details.and_then(|d| d.get("code")));
            let kind = text(details.and_then(|d| d.get("type")));
            let reason = match (code, kind) {
                (Some(c), Some(k)) => format!("{c} {k}"),
                (Some(c), None) => format!("HTTP {c}"),
                (None, Some(k)) => k,
                (None, None) => text(details.and_then(|d| d.get("message")))
                    .unwrap_or_else(|| "unnamed error".into()),
            };
            account.add_failure_reason(&reason, count(e.get("count")).unwrap_or(1));
        }
    }
    account.total_input_tokens = avg("total_isl").map(|t| t as i64);
    account.total_output_tokens = avg("total_osl")
        .or_else(|| avg("total_output_tokens"))
        .map(|t| t as i64);
    account.duration = avg("benchmark_duration");
    account.output_throughput = avg("output_token_throughput");
    account.mean_ttft_ms = avg("time_to_first_token");
    account.median_ttft_ms = num(at(&root, &["time_to_first_token", "p50"]));
    account.p99_ttft_ms = num(at(&root, &["time_to_first_token", "p99"]));
    account.mean_tpot_ms = avg("inter_token_latency");
    if let Some(phase) = profiling {
        match text(phase.get("type")).as_deref() {
            Some("concurrency") => account.max_concurrency = int(phase.get("concurrency")),
            Some(_) => {
                account.request_rate =
                    num(phase.get("request_rate")).or_else(|| num(phase.get("rate")));
                account.max_concurrency = int(phase.get("concurrency"));
            }
            None => {}
        }
    }
    let warmup_requests = num(at(&root, &["warmup_metrics", "request_count", "avg"]))
        .map(|n| n as u64)
        .or_else(|| {
            phases?
                .iter()
                .filter(|p| p.get("exclude_from_results").and_then(Value::as_bool) == Some(true))
                .map(|p| count(p.get("requests")))
                .sum()
        });
    account.span.untimed_requests = warmup_requests;
    account.backend = text(at(&root, &["input_config", "endpoint", "type"]));
    if let Some(datasets) = at(&root, &["input_config", "datasets"]).and_then(Value::as_array) {
        if let [dataset] = datasets.as_slice() {
            account.advertised.dataset = text(dataset.get("type"));
            if text(dataset.get("type")).as_deref() == Some("synthetic") {
                account.advertised.input_tokens = num(at(dataset, &["prompts", "isl", "mean"]));
                account.advertised.output_tokens = num(at(dataset, &["prompts", "osl", "mean"]));
            }
        }
    }
    account.advertised.ignore_eos =
        at(&root, &["input_config", "endpoint", "extra", "ignore_eos"]).and_then(Value::as_bool);
    read_identity(&root, &mut account);
    Ok(account)
}

/// What the summary says of the run it measured:
///
/// - the model: `input_config.models.items[].name`, the `--model` names the requests
///   carried; only when there is one (with several, each request named one of them);
/// - the times: `start_time` and `end_time` are the profiling phase's start and end as
///   `datetime.fromtimestamp(ns / 1e9)` writes them, the client's local time without a
///   zone (`2026-12-01T02:57:16.246873`). The end is kept as a time of day without a
///   zone, which the gate places in every zone; a time written with its zone is a Unix
///   time. One that does not read is a note, and no time.
fn read_identity(root: &Value, account: &mut ClientAccount) {
    let names: Vec<String> = at(root, &["input_config", "models", "items"])
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(|i| text(i.get("name"))).collect())
        .unwrap_or_default();
    if let [one] = names.as_slice() {
        account.identity.model = Some(one.clone()).filter(|m| !m.trim().is_empty());
    }
    for key in ["start_time", "end_time"] {
        let Some(written) = root.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        let Some(time) = written.as_str().and_then(super::dates::iso) else {
            account.notes.push(format!(
                "its '{key}' {:?} is not a time as AIPerf writes it (ISO 8601), so when the run {} is not known",
                inferlint_core::model::client::one_line(&written.to_string(), 40),
                if key == "start_time" { "began" } else { "ended" }
            ));
            continue;
        };
        let id = &mut account.identity;
        match (key, time.unix_s()) {
            ("start_time", Some(unix)) => id.start_unix_s = Some(unix),
            ("end_time", Some(unix)) => id.end_unix_s = Some(unix),
            ("end_time", None) => {
                id.saved_local_s = Some(time.local_s);
                id.saved_resolution_s = time.resolution_s;
            }
            // A start without a zone says no more than the end and the duration do.
            _ => {}
        }
    }
}

/// The per-request records: JSON lines, the warm-up's counted apart. Read one line at a
/// time; a line that ends inside its JSON is held until the next line shows whether it
/// was the last (a recorder killed mid-write leaves its last line cut). As when the file
/// was read whole, a file that is not UTF-8 text anywhere is that error first.
pub(super) fn read_records(
    path: &Path,
    source: Source,
    account: &mut ClientAccount,
) -> Result<(), FileError> {
    let tool_label = &label(LoadTool::AiPerf, account.tool_version.as_deref());
    let bad_json = |i: usize, e: serde_json::Error| {
        FileError::invalid(
            path,
            format!("{tool_label} records, bad JSON on line {} ({e})", i + 1),
        )
    };
    let mut warmup = 0u64;
    account.clock = Some(RequestClock::Unix);
    let mut lines = 0usize;
    let mut not_utf8 = false;
    let mut failure: Option<FileError> = None;
    let mut cut: Option<(usize, serde_json::Error)> = None;
    stream::for_each_line(path, source, |_, bytes| {
        let Ok(line) = std::str::from_utf8(bytes) else {
            not_utf8 = true;
            return false;
        };
        if failure.is_some() || line.trim().is_empty() {
            // After an error, the rest is read only for its UTF-8.
            return true;
        }
        if let Some((i, e)) = cut.take() {
            failure = Some(bad_json(i, e));
            return true;
        }
        let i = lines;
        lines += 1;
        match crate::pyjson::from_str(line.strip_suffix('\r').unwrap_or(line)) {
            Ok(record) => {
                if let Err(e) = fold(path, tool_label, (i, record), &mut warmup, account) {
                    failure = Some(e);
                }
            }
            Err(e) if e.is_eof() => cut = Some((i, e)),
            Err(e) => failure = Some(bad_json(i, e)),
        }
        true
    })?;
    if not_utf8 {
        return Err(FileError::invalid(
            path,
            format!("{tool_label} records: not UTF-8 text"),
        ));
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if cut.is_some() {
        account
            .notes
            .push(format!("{}: the last record is cut off", path.display()));
    }
    if account.span.untimed_requests.is_none() && warmup > 0 {
        account.span.untimed_requests = Some(warmup);
    }
    Ok(())
}

/// Folds record `i` (a line of the file) into the account; a warm-up record is counted.
fn fold(
    path: &Path,
    tool_label: &str,
    (i, record): (usize, Value),
    warmup: &mut u64,
    account: &mut ClientAccount,
) -> Result<(), FileError> {
    let Some(metadata) = record.get("metadata").filter(|m| m.is_object()) else {
        return Err(shape(
            path,
            tool_label,
            format!("record {} has no 'metadata'", i + 1),
        ));
    };
    if text(metadata.get("benchmark_phase")).as_deref() == Some("warmup") {
        *warmup += 1;
        return Ok(());
    }
    let metric = |key: &str| num(at(&record, &["metrics", key, "value"]));
    let ns = |key: &str| num(metadata.get(key)).map(|n| n / 1e9);
    let error = record.get("error").filter(|e| !e.is_null());
    let cancelled = metadata.get("was_cancelled").and_then(Value::as_bool) == Some(true);
    let outcome = if error.is_some() {
        RequestOutcome::Failed
    } else if cancelled {
        RequestOutcome::Incomplete
    } else {
        RequestOutcome::Completed
    };
    let sent = ns("request_start_ns");
    let ttft_s = metric("time_to_first_token").map(|ms| ms / 1000.0);
    let reason = error.map(|e| {
        let code = int(e.get("code"));
        let kind = text(e.get("type"));
        match (code, kind) {
            (Some(c), Some(k)) => format!("{c} {k}"),
            (_, Some(k)) => k,
            _ => text(e.get("message")).unwrap_or_else(|| "unnamed error".into()),
        }
    });
    let mut chunks = None;
    if outcome == RequestOutcome::Completed {
        if let Some(gaps) =
            at(&record, &["metrics", "inter_chunk_latency", "value"]).and_then(Value::as_array)
        {
            extend_gaps(
                &mut account.inter_token_ms,
                gaps.iter().filter_map(|g| num(Some(g))),
            );
            // A gap lies between two chunks: the first chunk has none before it.
            chunks = Some(gaps.len() as u64 + 1);
        }
    }
    account.requests.push(ClientRequest {
        outcome: Some(outcome),
        error: reason.map(Into::into),
        scheduled_s: ns("credit_issued_ns").into(),
        sent_s: sent.into(),
        first_token_s: sent.zip(ttft_s).map(|(s, t)| s + t).into(),
        end_s: ((outcome == RequestOutcome::Completed)
            .then(|| ns("request_end_ns"))
            .flatten())
        .into(),
        ttft_s: ttft_s.into(),
        latency_s: metric("request_latency").map(|ms| ms / 1000.0).into(),
        prompt_tokens: (metric("input_sequence_length")
            .or_else(|| metric("error_isl"))
            .map(|t| t as u64))
        .into(),
        output_tokens: metric("output_sequence_length").map(|t| t as u64).into(),
        server_prompt_tokens: metric("usage_prompt_tokens").map(|t| t as u64).into(),
        server_output_tokens: metric("usage_completion_tokens").map(|t| t as u64).into(),
        asked_output_tokens: None.into(),
        chunk_count: chunks
            .and_then(|n: u64| std::num::NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX))),
        ignore_eos: None,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_with(extra: &str) -> ClientAccount {
        let text = format!(
            r#"{{"aiperf_version": "0.13.0", "request_count": {{"unit": "requests", "avg": 1}}{extra}}}"#
        );
        summary(
            Path::new("profile_export_aiperf.json"),
            Source::Bytes(text.as_bytes()),
        )
        .unwrap()
    }

    /// `start_time` and `end_time` are `datetime.fromtimestamp(...)`, local time without
    /// a zone: the end is kept as such; one written with its zone is a Unix time; one that
    /// does not read is a note. The model only when the run named one.
    #[test]
    fn the_times_and_model_are_read_as_aiperf_writes_them() {
        let a = summary_with(
            r#", "start_time": "2026-12-01T02:57:16.246873", "end_time": "2026-12-01T02:57:18.785443", "input_config": {"models": {"items": [{"name": "sim-model"}]}}"#,
        );
        // date -u -d '2026-12-01 02:57:18' +%s is 1796093838.
        let saved = a.identity.saved_local_s.unwrap();
        assert!((saved - 1_796_093_838.785_443).abs() < 1e-6, "{saved}");
        assert_eq!(
            (a.identity.start_unix_s, a.identity.end_unix_s),
            (None, None)
        );
        assert_eq!(a.identity.model.as_deref(), Some("sim-model"));
        let zoned = summary_with(
            r#", "start_time": "2026-12-01T02:57:16Z", "end_time": "2026-12-01T03:57:18+01:00""#,
        );
        assert_eq!(zoned.identity.start_unix_s, Some(1_796_093_836.0));
        assert_eq!(zoned.identity.end_unix_s, Some(1_796_093_838.0));
        assert_eq!(zoned.identity.saved_local_s, None);
        let bad = summary_with(
            r#", "start_time": 17, "end_time": "yesterday", "input_config": {"models": {"items": [{"name": "a"}, {"name": "b"}]}}"#,
        );
        assert_eq!(
            bad.identity,
            inferlint_core::model::client::ResultIdentity::default()
        );
        assert_eq!(bad.notes.len(), 2, "{:?}", bad.notes);
        assert!(
            bad.notes.iter().all(|n| n.contains("is not a time")),
            "{:?}",
            bad.notes
        );
    }
}
