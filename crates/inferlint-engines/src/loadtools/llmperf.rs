//! LLMPerf's results (`--results-dir`): `{name}_summary.json` and
//! `{name}_individual_responses.json`.
//!
//! The summary is flat: `results_num_requests_started`, `results_num_completed_requests`,
//! `results_number_errors`, `results_error_code_frequency` (a Python dict written as a
//! string, `"{500: 6}"`), the statistics as `results_<metric>_mean`,
//! `results_<metric>_quantiles_p50`, ... over successful requests only (`NaN` when there
//! were none), `num_concurrent_requests`, the asked `mean_input_tokens` and
//! `mean_output_tokens`, and `version`, the date of its result format. LLMPerf stops at
//! `--max-num-completed-requests` or its timeout and drops the requests still in flight:
//! started minus completed minus errors. The individual responses are a list of
//! `{error_code, error_msg, ttft_s, end_to_end_latency_s, inter_token_latency_s,
//! number_input_tokens, number_output_tokens, ...}` with no time of day.

use std::path::Path;

use inferlint_core::model::client::{ClientAccount, ClientRequest, LoadTool, RequestOutcome};
use serde_json::Value;

use super::stream::{self, RootList, Source};
use super::{count, int, num, parse_json, shape, text};
use crate::input::FileError;

fn tool_label(version: Option<&str>) -> String {
    match version {
        Some(v) => format!("LLMPerf (result format {v})"),
        None => "LLMPerf (version not recorded)".into(),
    }
}

pub(super) fn summary(path: &Path, source: Source) -> Result<ClientAccount, FileError> {
    let version = super::string_field(&super::head(path, source)?, "version");
    let label = tool_label(version.as_deref());
    let root = parse_json(path, source, &label)?;
    let get = |key: &str| root.get(key);
    let Some(completed) = int(get("results_num_completed_requests")) else {
        return Err(shape(path, &label, "no 'results_num_completed_requests'"));
    };
    let mut account = ClientAccount::new(LoadTool::LlmPerf);
    account.tool_version = version;
    account.completed = Some(completed);
    account.sent = int(get("results_num_requests_started"));
    account.failed = int(get("results_number_errors"));
    if let (Some(sent), Some(failed)) = (account.sent, account.failed) {
        let dropped = sent - completed - failed;
        if dropped > 0 {
            account.incomplete = Some(dropped);
        }
    }
    if let Some(frequency) = text(get("results_error_code_frequency")) {
        for (code, n) in error_codes(&frequency) {
            account.add_failure_reason(&format!("HTTP {code}"), n);
        }
    }
    account.max_concurrency = int(get("num_concurrent_requests"));
    account.output_throughput = num(get("results_mean_output_throughput_token_per_s"));
    let ms = |key: &str| num(get(key)).map(|s| s * 1000.0);
    account.mean_ttft_ms = ms("results_ttft_s_mean");
    account.median_ttft_ms = ms("results_ttft_s_quantiles_p50");
    account.p99_ttft_ms = ms("results_ttft_s_quantiles_p99");
    account.mean_tpot_ms = ms("results_inter_token_latency_s_mean");
    let per_minute = num(get("results_num_completed_requests_per_min")).filter(|r| *r > 0.0);
    account.duration = per_minute.map(|r| completed as f64 / r * 60.0);
    if let Some(mean) = num(get("results_number_output_tokens_mean")) {
        account.total_output_tokens = Some((mean * completed as f64).round() as i64);
    }
    if let Some(mean) = num(get("results_number_input_tokens_mean")) {
        account.total_input_tokens = Some((mean * completed as f64).round() as i64);
    }
    account.advertised.input_tokens = num(get("mean_input_tokens"));
    account.advertised.output_tokens = num(get("mean_output_tokens"));
    account.advertised.ignore_eos =
        get("additional_sampling_params_ignore_eos").and_then(Value::as_bool);
    // `model` is the `--model` every request named. `timestamp` is `int(time.time())`
    // taken when `LLMPerfResults` is made from the finished run, just before the file is
    // written: a Unix time at the run's end, cut to the second (so up to a second
    // early), which the gate's tolerance of two seconds covers.
    account.identity.model = text(get("model")).filter(|m| !m.trim().is_empty());
    match get("timestamp") {
        None | Some(Value::Null) => {}
        Some(value) => match num(Some(value)).filter(|t| *t > 0.0) {
            Some(t) => account.identity.end_unix_s = Some(t),
            None => account.notes.push(format!(
                "its 'timestamp' {} is not a Unix time, so when the run ended is not known",
                inferlint_core::model::client::one_line(&value.to_string(), 40)
            )),
        },
    }
    Ok(account)
}

/// `{500: 6, 429: 2}` as LLMPerf writes its error codes' counts.
fn error_codes(text: &str) -> Vec<(String, u64)> {
    text.trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .split(',')
        .filter_map(|pair| {
            let (code, n) = pair.split_once(':')?;
            let code = code.trim().trim_matches(['\'', '"']).to_owned();
            let n = n.trim().parse().ok()?;
            (!code.is_empty()).then_some((code, n))
        })
        .collect()
}

pub(super) fn read_records(
    path: &Path,
    source: Source,
    account: &mut ClientAccount,
) -> Result<(), FileError> {
    let label = tool_label(account.tool_version.as_deref());
    // Each response folded into its record as it is read; the first that is no object
    // kept for the error.
    let mut requests = Vec::new();
    let mut not_object = None;
    let root = stream::parse(
        path,
        source,
        &label,
        &mut RootList(|i, item: Value| {
            if !item.is_object() {
                not_object.get_or_insert(i);
            } else if not_object.is_none() {
                requests.push(request(&item));
            }
        }),
    )?;
    if !root.is_array() {
        return Err(shape(
            path,
            &label,
            "the individual responses are not a list",
        ));
    }
    if let Some(i) = not_object {
        return Err(shape(
            path,
            &label,
            format!("response {} is not an object", i + 1),
        ));
    }
    let mut output = 0i64;
    let mut input = 0i64;
    for request in &requests {
        if request.completed() {
            output += request.output_tokens.get().unwrap_or(0) as i64;
            input += request.prompt_tokens.get().unwrap_or(0) as i64;
        }
    }
    account.keep_records(requests, Vec::new());
    // The records' sums are exact where the summary gave only means.
    account.total_output_tokens = Some(output);
    account.total_input_tokens = Some(input);
    Ok(())
}

/// One response as the account keeps it.
fn request(item: &Value) -> ClientRequest {
    let code = item.get("error_code").filter(|c| !c.is_null());
    let outcome = if code.is_some() {
        RequestOutcome::Failed
    } else {
        RequestOutcome::Completed
    };
    let completed = outcome == RequestOutcome::Completed;
    ClientRequest {
        outcome: Some(outcome),
        error: (code.map(|c| {
            let message = text(item.get("error_msg")).unwrap_or_default();
            let code = match c {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("HTTP {code} {message}").trim().to_owned()
        }))
        .map(Into::into),
        ttft_s: completed.then(|| num(item.get("ttft_s"))).flatten().into(),
        latency_s: (completed
            .then(|| num(item.get("end_to_end_latency_s")))
            .flatten())
        .into(),
        prompt_tokens: count(item.get("number_input_tokens")).into(),
        output_tokens: count(item.get("number_output_tokens")).into(),
        ..ClientRequest::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_from_a_python_dict_string() {
        assert_eq!(
            error_codes("{500: 6, '429': 2}"),
            [("500".to_owned(), 6), ("429".to_owned(), 2)]
        );
        assert!(error_codes("{}").is_empty());
    }

    /// `model` is the `--model` the requests named and `timestamp` `int(time.time())`
    /// when the results were made, after the run: kept as its end; one that is no Unix
    /// time is a note.
    #[test]
    fn the_model_and_timestamp_say_which_run() {
        let read_text = |extra: &str| {
            let text = format!(r#"{{"results_num_completed_requests": 1, "model": "m"{extra}}}"#);
            summary(Path::new("x_summary.json"), Source::Bytes(text.as_bytes())).unwrap()
        };
        let a = read_text(r#", "timestamp": 1796094047"#);
        assert_eq!(a.identity.model.as_deref(), Some("m"));
        assert_eq!(a.identity.end_unix_s, Some(1_796_094_047.0));
        assert!(a.notes.is_empty(), "{:?}", a.notes);
        for bad in [r#", "timestamp": "soon""#, r#", "timestamp": -1"#] {
            let a = read_text(bad);
            assert_eq!(a.identity.end_unix_s, None, "{bad}");
            assert_eq!(a.notes.len(), 1, "{bad}: {:?}", a.notes);
        }
    }
}
