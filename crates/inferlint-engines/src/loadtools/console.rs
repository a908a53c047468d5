//! What a load tool printed while it ran (xray keeps it in `load.log`).
//!
//! The engines' own clients print their settings first, as Python prints an
//! `argparse.Namespace`: `Namespace(..., num_prompts=32, random_input_len=32, ...)`. Their
//! result files leave some of it out (SGLang writes no request count at all), so the
//! settings fill what the file did not say, and never override what it did.

use inferlint_core::model::client::{one_line, ClientAccount, LoadTool};
use inferlint_core::model::PyValue;

use crate::bootlog::pyliteral;

/// The last settings line a client printed (`Namespace(...)`), as key and value pairs.
pub fn namespace_settings(log: &str) -> Option<Vec<(String, PyValue)>> {
    log.lines().rev().find_map(|line| {
        let start = line.find("Namespace(")?;
        pyliteral::parse_kwargs_call(line[start..].trim_end())
            .ok()
            .map(|(_, args)| args)
    })
}

/// [`complete_from_console`] from a console log file, read line by line in bounded
/// memory ([`crate::input::for_each_log_line`]).
pub fn complete_from_console_file(
    account: &mut ClientAccount,
    path: &std::path::Path,
) -> Result<(), crate::input::FileError> {
    if !prints_settings(account) {
        return Ok(());
    }
    let (file, _) = crate::input::open_input(path)?;
    let mut last = None;
    crate::input::for_each_log_line(path, file, |line| {
        if line.contains("Namespace(") {
            last = Some(line.to_owned());
        }
    })?;
    if let Some(line) = last {
        complete_from_console(account, &line);
    }
    Ok(())
}

/// Whether the account's tool prints its settings as a `Namespace(...)` line: the
/// engines' own clients do.
fn prints_settings(account: &ClientAccount) -> bool {
    matches!(
        account.tool,
        LoadTool::VllmBench | LoadTool::SglangBench | LoadTool::TrtllmBench
    )
}

/// Fills the account's request count and advertised lengths from the settings the tool
/// printed, where the result file did not give them. Only the engines' own clients print
/// such a line; another tool's account is left as it is.
pub fn complete_from_console(account: &mut ClientAccount, log: &str) {
    if !prints_settings(account) {
        return;
    }
    let Some(settings) = namespace_settings(log) else {
        return;
    };
    let get = |key: &str| settings.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let number = |key: &str| match get(key)? {
        PyValue::Int(i) => Some(*i as f64),
        PyValue::Float(f) => Some(*f),
        PyValue::Str(s) | PyValue::Raw(s) => s.parse::<f64>().ok().filter(|f| f.is_finite()),
        _ => None,
    };
    if account.sent.is_none() {
        account.sent = number("num_prompts").map(|n| n as i64);
    }
    let dataset = get("dataset_name").and_then(PyValue::as_str).unwrap_or("");
    if account.advertised.dataset.is_none() && !dataset.is_empty() {
        account.advertised.dataset = Some(dataset.to_owned());
    }
    if dataset.starts_with("random") {
        let advertised = &mut account.advertised;
        advertised.input_tokens = advertised
            .input_tokens
            .or_else(|| number("random_input_len"));
        advertised.output_tokens = advertised
            .output_tokens
            .or_else(|| number("random_output_len"));
        advertised.range_ratio = advertised
            .range_ratio
            .or_else(|| number("random_range_ratio"));
        advertised.prefix_tokens = advertised
            .prefix_tokens
            .or_else(|| number("random_prefix_len"));
    }
    // A custom dataset (`--dataset-name custom`, a JSONL of prompts) asks for
    // `--custom-output-len` tokens of every answer; -1 (or none) leaves each prompt's own
    // `output_tokens`, which is no one length.
    if dataset == "custom" {
        let advertised = &mut account.advertised;
        advertised.output_tokens = advertised
            .output_tokens
            .or_else(|| number("custom_output_len").filter(|n| *n > 0.0));
    }
    // `--goodput ttft:500 tpot:50` prints as a list of its words; `--goodput` unset as
    // None.
    if account.goodput.is_empty() {
        if let Some(PyValue::List(items)) = get("goodput") {
            account.goodput = items
                .iter()
                .filter_map(PyValue::as_str)
                .map(str::to_owned)
                .collect();
        }
    }
    // `--request-id-prefix` (vllm bench serve): request `i` went out as PREFIX{i}.
    if account.request_id_prefix.is_none() {
        account.request_id_prefix = get("request_id_prefix")
            .and_then(PyValue::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_owned);
    }
    // vllm bench serve prints its settings before it sets `ignore_eos` for a random
    // dataset sent to an OpenAI-style backend (`benchmarks/serve.py`, 0.32: "when using
    // random datasets, default to ignoring EOS"; and for `timed_trace` whatever the
    // backend): the line says False where every request asked True.
    let backend = get("backend").and_then(PyValue::as_str).unwrap_or("");
    let openai_style = matches!(
        backend,
        "vllm" | "openai" | "openai-chat" | "openai-responses"
    );
    let forced = account.tool == LoadTool::VllmBench
        && ((matches!(dataset, "random" | "random-mm") && openai_style)
            || dataset == "timed_trace");
    if forced {
        account.advertised.ignore_eos = Some(true);
    }
    if account.advertised.ignore_eos.is_none() {
        account.advertised.ignore_eos = match (get("ignore_eos"), get("disable_ignore_eos")) {
            (Some(PyValue::Bool(b)), _) => Some(*b),
            // SGLang sends ignore_eos unless told not to.
            (None, Some(PyValue::Bool(disabled))) => Some(!disabled),
            _ => None,
        };
    }
}

/// An error as a person reads it: the HTTP status an exception's text names (`404 Not
/// Found` from `HTTPStatusError("Client error '404 Not Found' for url ...")`), else its
/// first line.
pub fn short_error(text: &str) -> String {
    let bytes = text.as_bytes();
    for (i, window) in bytes.windows(5).enumerate() {
        let status = &window[..3];
        if window[3] == b' '
            && status.iter().all(u8::is_ascii_digit)
            && matches!(status[0], b'4' | b'5')
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
            && window[4].is_ascii_uppercase()
        {
            let rest = &text[i..];
            let end = rest
                .find(['\'', '"', '\n', ',', '(', ')'])
                .unwrap_or(rest.len());
            return rest[..end].trim().to_owned();
        }
    }
    // `Internal Server Error: {"object": "error", ...}`: the reason before the body, so
    // that requests failed the same way count as one reason.
    let line = one_line(text, 200);
    match line.find(": {") {
        Some(i) if i > 0 => line[..i].trim().to_owned(),
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thresholds `vllm bench serve --goodput` was given are read from its settings
    /// line; `goodput=None` gives none.
    #[test]
    fn the_tool_s_goodput_thresholds_are_read_from_its_settings() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(
            &mut account,
            "Namespace(num_prompts=32, dataset_name='random', goodput=['ttft:500', 'e2el:2000'])\n",
        );
        assert_eq!(account.goodput, ["ttft:500", "e2el:2000"]);
        let mut none = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(&mut none, "Namespace(num_prompts=32, goodput=None)\n");
        assert!(none.goodput.is_empty());
    }

    #[test]
    fn an_http_status_is_the_reason() {
        assert_eq!(
            short_error("HTTPStatusError(\"Client error '404 Not Found' for url 'http://x/v1'\")"),
            "404 Not Found"
        );
        assert_eq!(
            short_error("Internal Server Error"),
            "Internal Server Error"
        );
        assert_eq!(
            short_error("500 Internal Server Error"),
            "500 Internal Server Error"
        );
        assert_eq!(short_error("read 1500 Bytes"), "read 1500 Bytes");
        assert_eq!(
            short_error("Internal Server Error: {\"object\":\"error\",\"code\":500}"),
            "Internal Server Error"
        );
    }

    #[test]
    fn settings_fill_what_the_file_left_out() {
        let log = "noise\nNamespace(backend='sglang', num_prompts=32, dataset_name='random', random_input_len=32, random_output_len=64, random_range_ratio=1.0, disable_ignore_eos=False, request_rate=inf)\n";
        let mut account = ClientAccount::new(LoadTool::SglangBench);
        complete_from_console(&mut account, log);
        assert_eq!(account.sent, Some(32));
        assert_eq!(account.advertised.output_tokens, Some(64.0));
        assert_eq!(account.advertised.ignore_eos, Some(true));
        let mut other = ClientAccount::new(LoadTool::GuideLlm);
        complete_from_console(&mut other, log);
        assert_eq!(other.sent, None);
    }

    /// vLLM 0.32's `vllm bench serve --dataset-name random` without `--ignore-eos` prints
    /// `ignore_eos=False` (fixtures/real/vllm-0.32-cpu/spec-random/load.log) and then sets
    /// it for every request (`benchmarks/serve.py`, for a random dataset sent to an
    /// OpenAI-style backend); a custom dataset keeps what it printed. The dataset's name
    /// is kept for what its prompts are.
    #[test]
    fn vllm_bench_ignores_eos_on_a_random_dataset_whatever_it_printed() {
        let log = "Namespace(subparser='bench', bench_type='serve', num_prompts=32, dataset_name='random', random_input_len=32, random_output_len=32, backend='openai', ignore_eos=False)\n";
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(&mut account, log);
        assert_eq!(account.advertised.ignore_eos, Some(true));
        assert_eq!(account.advertised.dataset.as_deref(), Some("random"));
        let custom = log.replace("'random'", "'custom'");
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(&mut account, &custom);
        assert_eq!(account.advertised.ignore_eos, Some(false));
        assert_eq!(account.advertised.dataset.as_deref(), Some("custom"));
        // A backend that is not OpenAI-style sends what it printed.
        let tgi = log.replace("backend='openai'", "backend='tgi'");
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(&mut account, &tgi);
        assert_eq!(account.advertised.ignore_eos, Some(false));
    }

    /// vLLM 0.32's `vllm bench serve --dataset-name custom --custom-output-len 64`, as its
    /// load.log opens (fixtures/real/vllm-0.32-cpu/stops-early): the result file names no
    /// length, so the printed setting is what the run asked for.
    #[test]
    fn a_custom_datasets_output_length_is_what_was_asked() {
        let log = "Namespace(subparser='bench', num_prompts=32, dataset_name='custom', dataset_path='/tmp/p.jsonl', custom_output_len=64, ignore_eos=False)\n";
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(&mut account, log);
        assert_eq!(account.advertised.output_tokens, Some(64.0));
        assert_eq!(
            account.advertised.input_tokens, None,
            "each prompt is its own length"
        );
        assert_eq!(account.advertised.ignore_eos, Some(false));
        // -1: each prompt's own output_tokens, no one length.
        let mut own = ClientAccount::new(LoadTool::VllmBench);
        complete_from_console(
            &mut own,
            &log.replace("custom_output_len=64", "custom_output_len=-1"),
        );
        assert_eq!(own.advertised.output_tokens, None);
    }
}
