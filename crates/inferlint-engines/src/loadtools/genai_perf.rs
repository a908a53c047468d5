//! GenAI-Perf's exports (`artifacts/<model>-<service>-<endpoint>-<load>/`):
//! `profile_export_genai_perf.json`, the summary, and `profile_export.json`,
//! perf_analyzer's record of every request.
//!
//! The summary has each metric as `{unit, avg, p50, p99, ...}` (`request_count`,
//! `time_to_first_token`, `output_sequence_length`, ...) and `input_config`, the
//! command's options; it counts no failed request. The export holds
//! `experiments[].requests[]` with the send `timestamp` and each streamed chunk's
//! `response_timestamps` in wall-clock nanoseconds, the request body as sent
//! (`request_inputs.payload`) and each chunk as received (`response_outputs`), whose last
//! event carries the server's usage when the body asked for it. Neither file records the
//! tool's version.

use std::path::Path;

use inferlint_core::model::client::{
    ClientAccount, ClientRequest, LoadTool, RequestClock, RequestOutcome,
};
use serde_json::Value;

use super::stream::{self, index_at, path_is, Seg, Sink, Source};
use super::{asked, at, body, count, extend_gaps, int, num, parse_json, shape, text};
use crate::input::FileError;

const TOOL: &str = "GenAI-Perf (version not recorded)";

pub(super) fn summary(path: &Path, source: Source) -> Result<ClientAccount, FileError> {
    let root = parse_json(path, source, TOOL)?;
    let avg = |metric: &str| num(at(&root, &[metric, "avg"]));
    let Some(requests) = avg("request_count") else {
        return Err(shape(path, TOOL, "no 'request_count.avg'"));
    };
    let mut account = ClientAccount::new(LoadTool::GenAiPerf);
    account.completed = Some(requests as i64);
    let config = root.get("input_config");
    let option = |key: &str| config.and_then(|c| c.get(key));
    account.sent = int(option("request_count"));
    if let Some(osl) = avg("output_sequence_length") {
        account.total_output_tokens = Some((osl * requests).round() as i64);
    }
    if let Some(isl) = avg("input_sequence_length") {
        account.total_input_tokens = Some((isl * requests).round() as i64);
    }
    if let Some(rate) = avg("request_throughput").filter(|r| *r > 0.0) {
        account.duration = Some(requests / rate);
    }
    account.output_throughput = avg("output_token_throughput");
    account.mean_ttft_ms = avg("time_to_first_token");
    account.median_ttft_ms = num(at(&root, &["time_to_first_token", "p50"]));
    account.p99_ttft_ms = num(at(&root, &["time_to_first_token", "p99"]));
    account.mean_tpot_ms = avg("inter_token_latency");
    account.max_concurrency = int(option("concurrency"));
    account.request_rate = num(option("request_rate"));
    account.backend = text(option("endpoint_type"));
    account.advertised.input_tokens = num(option("synthetic_input_tokens_mean"));
    account.advertised.output_tokens = num(option("output_tokens_mean"));
    account.advertised.ignore_eos = config
        .and_then(|c| at(c, &["extra_inputs", "ignore_eos"]))
        .and_then(Value::as_bool);
    // `input_config.model` is the `--model` list (`-m` takes several); the requests
    // named the one model only when the list holds one.
    if let Some([Value::String(model)]) =
        option("model").and_then(Value::as_array).map(Vec::as_slice)
    {
        account.identity.model = Some(model.clone()).filter(|m| !m.trim().is_empty());
    }
    account.notes.push(
        "GenAI-Perf's summary counts no failed request; the totals of tokens are its mean lengths times its request count"
            .into(),
    );
    Ok(account)
}

/// The keys of a request record [`request`] reads: an entry with none of them holds no
/// request.
const RECORD_KEYS: [&str; 4] = [
    "timestamp",
    "response_timestamps",
    "response_outputs",
    "request_inputs",
];

/// Each experiment's requests, each folded as it is read into its record and its gaps;
/// and the entries that hold no request (not an object, or one with none of
/// [`RECORD_KEYS`]), counted and not kept.
#[derive(Default)]
struct Records(
    std::collections::HashMap<usize, (Vec<ClientRequest>, Vec<f32>)>,
    u64,
);

impl Records {
    fn experiment(path: &[Seg]) -> Option<usize> {
        path_is(path, &[Some("experiments"), None, Some("requests")])
            .then(|| index_at(path, 1))
            .flatten()
    }
}

impl Sink for Records {
    fn streams(&self, path: &[Seg]) -> bool {
        Records::experiment(path).is_some()
    }

    fn begin(&mut self, path: &[Seg]) {
        if let Some(e) = Records::experiment(path) {
            self.0.insert(e, Default::default());
        }
    }

    fn item(&mut self, path: &[Seg], _: usize, item: Value) {
        if !super::holds_any(&item, &RECORD_KEYS) {
            self.1 += 1;
            return;
        }
        if let Some(e) = Records::experiment(path) {
            let (requests, gaps) = self.0.entry(e).or_default();
            requests.push(request(&item, gaps));
        }
    }
}

pub(super) fn read_export(
    path: &Path,
    source: Source,
    account: &mut ClientAccount,
) -> Result<(), FileError> {
    let mut records = Records::default();
    let root = stream::parse(path, source, TOOL, &mut records)?;
    let Some(experiments) = root.get("experiments").and_then(Value::as_array) else {
        return Err(shape(path, TOOL, "no 'experiments' list"));
    };
    account.clock = Some(RequestClock::Unix);
    for (e, experiment) in experiments.iter().enumerate() {
        if account.max_concurrency.is_none()
            && text(at(experiment, &["experiment", "mode"])).as_deref() == Some("concurrency")
        {
            account.max_concurrency = int(at(experiment, &["experiment", "value"]));
        }
        if let Some([start, end]) = experiment
            .get("window_boundaries")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            let (start, end) = (num(Some(start)), num(Some(end)));
            account.span.start_s = start.map(|s| s / 1e9);
            account.span.end_s = end.map(|s| s / 1e9);
            // perf_analyzer's measurement window, in the wall-clock nanoseconds its
            // request `timestamp`s use: the run's span as Unix times, over every
            // experiment of the export.
            let id = &mut account.identity;
            if let (Some(s), Some(e)) = (account.span.start_s, account.span.end_s) {
                id.start_unix_s = Some(id.start_unix_s.map_or(s, |t| t.min(s)));
                id.end_unix_s = Some(id.end_unix_s.map_or(e, |t| t.max(e)));
            }
        }
        // The list was folded as it was read; the tree holds an empty one for it.
        if !experiment.get("requests").is_some_and(Value::is_array) {
            return Err(shape(
                path,
                TOOL,
                format!("experiments[{e}] has no 'requests' list"),
            ));
        }
        let (requests, gaps) = records.0.remove(&e).unwrap_or_default();
        account.keep_records(requests, gaps);
    }
    if records.1 > 0 {
        account.notes.push(format!(
            "{} entries of the experiments' 'requests' lists hold no request (not an object, or none of a record's fields): counted, not read",
            records.1
        ));
    }
    Ok(())
}

fn request(item: &Value, gaps: &mut Vec<f32>) -> ClientRequest {
    let sent = num(item.get("timestamp")).map(|ns| ns / 1e9);
    let times: Vec<f64> = item
        .get("response_timestamps")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|v| num(Some(v)))
                .map(|ns| ns / 1e9)
                .collect()
        })
        .unwrap_or_default();
    let events: Vec<String> = item
        .get("response_outputs")
        .and_then(Value::as_array)
        .map(|o| o.iter().filter_map(|r| text(r.get("response"))).collect())
        .unwrap_or_default();
    let payload = body(at(item, &["request_inputs", "payload"]));
    let (asked_output, ignore_eos) = payload.as_ref().map_or((None, None), asked);
    // perf_analyzer's record of a failed request is not known here: a request with no
    // answer at all, or an answer that is an error object, is taken as failed.
    let error = events.iter().find_map(|e| {
        let json: Value = serde_json::from_str(e.trim().trim_start_matches("data:").trim()).ok()?;
        json.get("error")
            .map(|err| text(err.get("message")).unwrap_or_else(|| err.to_string()))
            .or_else(|| {
                (json.get("object").and_then(Value::as_str) == Some("error"))
                    .then(|| text(json.get("message")).unwrap_or_else(|| "error".into()))
            })
    });
    let usage = events.iter().rev().find_map(|e| {
        let json: Value = serde_json::from_str(e.trim().trim_start_matches("data:").trim()).ok()?;
        json.get("usage").filter(|u| u.is_object()).cloned()
    });
    let outcome = if error.is_some() || times.is_empty() {
        RequestOutcome::Failed
    } else {
        RequestOutcome::Completed
    };
    // Token times: the chunks that carried text (the last ones may carry only the
    // finish reason, the usage and `[DONE]`).
    let token_times: Vec<f64> = times
        .iter()
        .zip(events.iter().chain(std::iter::repeat(&String::new())))
        .filter(|(_, e)| carries_text(e))
        .map(|(t, _)| *t)
        .collect();
    if outcome == RequestOutcome::Completed {
        extend_gaps(gaps, token_times.windows(2).map(|w| (w[1] - w[0]) * 1000.0));
    }
    let first = token_times.first().copied().or(times.first().copied());
    ClientRequest {
        outcome: Some(outcome),
        error: ((outcome == RequestOutcome::Failed)
            .then(|| error.unwrap_or_else(|| "no answer".into())))
        .map(Into::into),
        scheduled_s: None.into(),
        sent_s: sent.into(),
        first_token_s: first.into(),
        end_s: times.last().copied().into(),
        ttft_s: sent.zip(first).map(|(s, f)| f - s).into(),
        latency_s: sent.zip(times.last().copied()).map(|(s, e)| e - s).into(),
        prompt_tokens: None.into(),
        // The tool counts tokens with its tokenizer into the summary only; a chunk may hold
        // several tokens, so the chunks are no count.
        output_tokens: None.into(),
        server_prompt_tokens: usage
            .as_ref()
            .and_then(|u| count(u.get("prompt_tokens")))
            .into(),
        server_output_tokens: (usage
            .as_ref()
            .and_then(|u| count(u.get("completion_tokens"))))
        .into(),
        asked_output_tokens: asked_output.into(),
        // Each response that carried text is one streamed chunk.
        chunk_count: (outcome == RequestOutcome::Completed)
            .then(|| {
                std::num::NonZeroU32::new(u32::try_from(token_times.len()).unwrap_or(u32::MAX))
            })
            .flatten(),
        ignore_eos,
    }
}

/// Whether a streamed event carries generated text.
fn carries_text(event: &str) -> bool {
    let Ok(json) = serde_json::from_str::<Value>(event.trim().trim_start_matches("data:").trim())
    else {
        return false;
    };
    json.get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .is_some_and(|choice| {
            let text = choice
                .get("text")
                .or_else(|| at(choice, &["delta", "content"]))
                .and_then(Value::as_str);
            text.is_some_and(|t| !t.is_empty())
        })
}
