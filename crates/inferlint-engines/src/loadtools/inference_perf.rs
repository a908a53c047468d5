//! kubernetes-sigs inference-perf's lifecycle reports, in the folder its config names
//! (`storage.local_storage.path`).
//!
//! `summary_lifecycle_metrics.json` (and one `stage_N_lifecycle_metrics.json` per load
//! stage) hold `load_summary.count` (requests sent), `successes` and `failures`, each with
//! a `count` and distributions; `successes.prompt_tokens` and `output_tokens` are the
//! server's usage where it sent one, `output_len` the tool's own count of the answer, and
//! `failures.by_label` the errors by status. `per_request_lifecycle_metrics.json` (with
//! `report.request_lifecycle.per_request: true`) is a list of `{start_time, end_time,
//! request, response, info, error}` on the host's monotonic clock. The file records no
//! version of the tool.

use std::path::Path;

use inferlint_core::model::client::{
    ClientAccount, ClientRequest, LoadTool, RequestClock, RequestOutcome,
};
use serde_json::Value;

use super::stream::{self, RootList, Source};
use super::{
    asked, at, body, count, extend_gaps, int, num, parse_json, shape, text, Companions, Role,
};
use crate::input::FileError;

const TOOL: &str = "inference-perf (version not recorded)";

pub(super) fn read(
    found: (&Path, Source, Role),
    companions: &Companions,
) -> Result<ClientAccount, FileError> {
    let mut account = super::summary_then_records(
        found,
        companions,
        LoadTool::InferencePerf,
        summary,
        read_records,
    )?;
    // The summary says nothing of the load asked for: each stage's report does.
    let mut levels = Vec::new();
    for stage in &companions.stages {
        if let Ok(value) = parse_json(stage, Source::File(stage), TOOL) {
            levels.push((
                int(at(&value, &["load_summary", "concurrency"])),
                num(at(&value, &["load_summary", "requested_rate"])),
            ));
        }
    }
    if !levels.is_empty() {
        let concurrency: Vec<Option<i64>> = levels.iter().map(|l| l.0).collect();
        account.max_concurrency = super::guidellm::same(&concurrency);
        if account.max_concurrency.is_none() {
            let rates: Vec<Option<f64>> = levels.iter().map(|l| l.1).collect();
            account.request_rate = super::guidellm::same(&rates);
        }
        account.parts = levels.len();
    }
    Ok(account)
}

fn summary(path: &Path, source: Source) -> Result<ClientAccount, FileError> {
    let root = parse_json(path, source, TOOL)?;
    let Some(sent) = int(at(&root, &["load_summary", "count"])) else {
        return Err(shape(path, TOOL, "no 'load_summary.count'"));
    };
    let successes = root.get("successes").filter(|s| s.is_object());
    let failures = root.get("failures").filter(|s| s.is_object());
    let (Some(successes), Some(failures)) = (successes, failures) else {
        return Err(shape(path, TOOL, "no 'successes' or no 'failures' object"));
    };
    let mut account = ClientAccount::new(LoadTool::InferencePerf);
    account.sent = Some(sent);
    account.completed = int(successes.get("count"));
    account.failed = int(failures.get("count"));
    if let Some(labels) = failures.get("by_label").and_then(Value::as_object) {
        for (label, entry) in labels {
            account.add_failure_reason(label, count(entry.get("count")).unwrap_or(1));
        }
    }
    account.total_input_tokens = int(at(successes, &["prompt_tokens", "total"]));
    account.total_output_tokens = int(at(successes, &["output_tokens", "total"]));
    account.duration = num(root.get("benchmark_time_seconds"));
    account.output_throughput = num(at(successes, &["throughput", "output_tokens_per_sec"]));
    let latency = |metric: &str, stat: &str| {
        num(at(successes, &["latency", metric, stat])).map(|s| s * 1000.0)
    };
    account.mean_ttft_ms = latency("time_to_first_token", "mean");
    account.median_ttft_ms = latency("time_to_first_token", "median");
    account.p99_ttft_ms = latency("time_to_first_token", "p99");
    account.mean_tpot_ms = latency("time_per_output_token", "mean");
    Ok(account)
}

fn read_records(path: &Path, source: Source, account: &mut ClientAccount) -> Result<(), FileError> {
    // Each request folded into its record as it is read (with what it asked and the
    // model its body named), its gaps kept apart until the list is whole; the first that
    // is no object kept for the error.
    let mut requests = Vec::new();
    let mut gaps = Vec::new();
    let mut asks = Vec::new();
    // The model every body named so far: `Some(None)` once two differ or one names none.
    let mut model: Option<Option<String>> = None;
    let mut not_object = None;
    let root = stream::parse(
        path,
        source,
        TOOL,
        &mut RootList(|i, item: Value| {
            if !item.is_object() {
                not_object.get_or_insert(i);
            } else if not_object.is_none() {
                let (request, ignore_eos) = request(&item, &mut gaps);
                requests.push(request);
                asks.push(ignore_eos);
                let named = body(item.get("request")).and_then(|b| text(b.get("model")));
                match &model {
                    None => model = Some(named),
                    Some(Some(m)) if named.as_ref() != Some(m) => model = Some(None),
                    Some(_) => {}
                }
            }
        }),
    )?;
    if !root.is_array() {
        return Err(shape(path, TOOL, "the per-request report is not a list"));
    }
    if let Some(i) = not_object {
        return Err(shape(
            path,
            TOOL,
            format!("request {} is not an object", i + 1),
        ));
    }
    account.clock = Some(RequestClock::Monotonic);
    let items = requests.len();
    account.keep_records(requests, gaps);
    account.advertised.ignore_eos = super::guidellm::same(&asks);
    // The model: the `model` of each request body as sent (`request`, the JSON text the
    // tool posted; its config's `server.model_name`), when every request named the same.
    // The summary and the stage reports name none, and no time in these files is a time
    // of day (`start_time` and `end_time` are the host's monotonic clock).
    account.identity.model = model.flatten().filter(|m| !m.trim().is_empty());
    if let Some(total) = account.sent {
        if (items as i64) != total {
            account.notes.push(format!(
                "the per-request report holds {items} requests, the summary {total}"
            ));
        }
    }
    Ok(())
}

/// One request as the account keeps it, with whether it asked to ignore EOS; a completed
/// request's gaps between tokens onto `gaps`.
fn request(item: &Value, gaps: &mut Vec<f32>) -> (ClientRequest, Option<bool>) {
    let error = item.get("error").filter(|e| !e.is_null());
    let outcome = if error.is_some() {
        RequestOutcome::Failed
    } else {
        RequestOutcome::Completed
    };
    let token_times: Vec<f64> = at(item, &["info", "response_metrics", "output_token_times"])
        .and_then(Value::as_array)
        .map(|t| t.iter().filter_map(|v| num(Some(v))).collect())
        .unwrap_or_default();
    if outcome == RequestOutcome::Completed {
        extend_gaps(gaps, token_times.windows(2).map(|w| (w[1] - w[0]) * 1000.0));
    }
    let sent = num(item.get("start_time"));
    let (asked_output, ignore_eos) = body(item.get("request")).map_or((None, None), |b| asked(&b));
    let usage = |key: &str| count(at(item, &["info", "response_metrics", "server_usage", key]));
    let request = ClientRequest {
        outcome: Some(outcome),
        error: (error.map(|e| {
            text(e.get("error_type"))
                .or_else(|| text(e.get("error_msg")))
                .unwrap_or_else(|| "unnamed error".into())
        }))
        .map(Into::into),
        scheduled_s: None.into(),
        sent_s: sent.into(),
        first_token_s: token_times.first().copied().into(),
        end_s: num(item.get("end_time")).into(),
        ttft_s: sent
            .zip(token_times.first().copied())
            .map(|(s, f)| f - s)
            .into(),
        latency_s: sent
            .zip(num(item.get("end_time")))
            .map(|(s, e)| e - s)
            .into(),
        prompt_tokens: count(at(item, &["info", "input_tokens"])).into(),
        output_tokens: count(at(item, &["info", "response_metrics", "output_tokens"])).into(),
        server_prompt_tokens: usage("prompt_tokens").into(),
        server_output_tokens: usage("completion_tokens").into(),
        asked_output_tokens: asked_output.into(),
        // Its `output_token_times` are one per token as it counted them, which says
        // nothing of the chunks they arrived in.
        chunk_count: None,
        ignore_eos,
    };
    (request, ignore_eos)
}
