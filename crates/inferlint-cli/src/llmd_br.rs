//! `report --llmd-br FILE`: the run written as llm-d's Benchmark Report 0.2.1 (JSON), the
//! format llm-d's harness and inference-perf share, so that a run checked here sits beside
//! the others a platform keeps.
//!
//! What the load tool measured goes where the format puts it
//! (`results.request_performance.aggregate`: the requests sent, failed and left
//! incomplete, their mean lengths, the output rate, the time to first token and per
//! output token), every figure read from the run's account
//! (`inferlint_core::story::account`), as every other output reads it; a figure the account
//! does not hold is left out, never written as 0. The workload (`scenario.load`) is
//! written where the result names its tool. inferlint's own verdicts go in
//! `results.observability.inferlint`: `observability` is the one section of `results`
//! whose schema admits keys of its own (`additionalProperties: true`; the package's own
//! converters put measurements the schema has not named yet there), and the verdicts are
//! what the server's observed metrics say of the run.

use std::path::Path;

use inferlint_core::judging::status::{count_line, CheckResult};
use inferlint_core::run::Run;
use inferlint_core::story::account::{Account, Figure};
use inferlint_engines::load::shown;
use inferlint_engines::output::{self as writer, Rule};
use serde_json::{json, Map, Value};

use crate::exit::CliError;

/// The format's revision written.
const VERSION: &str = "0.2.1";

/// What the report may do about a file at its path: replace a Benchmark Report it wrote
/// earlier, any other file only with `--force`, never a file the report reads, a link
/// (without `--force`), a device, a FIFO or a socket.
fn rule<'a>(force: bool, reads: &'a [(&'a Path, &'a str)]) -> Rule<'a> {
    Rule {
        force,
        reads,
        ours: Some(is_ours),
    }
}

/// Whether a file is a Benchmark Report inferlint wrote: its `run.uid` is ours, near its
/// start.
fn is_ours(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .is_ok()
        && String::from_utf8_lossy(&head).contains("\"uid\": \"inferlint-")
}

/// Checks the path before anything is read, as every output of the command is.
pub(crate) fn check(path: &Path, force: bool, reads: &[(&Path, &str)]) -> Result<(), CliError> {
    writer::check(path, &rule(force, reads)).map_err(|e| CliError::from(e).prefixed("--llmd-br: "))
}

/// Writes the report to `path` under the command's rule for outputs, and never into the
/// folder of a Benchmark Report the report reads (every report in that folder is read as
/// one of the run's stages, and this one is of none).
pub(crate) fn write(
    path: &Path,
    (run, results, account): (&Run, &[CheckResult], &Account),
    (force, reads): (bool, &[(&Path, &str)]),
    bench_path: Option<&Path>,
) -> Result<(), CliError> {
    let reads_a_report = run
        .bench
        .as_ref()
        .is_some_and(|(_, b)| b.tool == inferlint_core::model::client::LoadTool::LlmdBr);
    let folder = |p: &Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
        parent.unwrap_or(Path::new(".")).canonicalize().ok()
    };
    if let (true, Some(bench)) = (reads_a_report, bench_path) {
        if folder(bench).is_some() && folder(bench) == folder(path) {
            return Err(CliError::usage(format!(
                "--llmd-br: {} is beside {}, a Benchmark Report the report reads as this run's: every report in that folder is read as one of its stages; name a file in another folder",
                shown(path),
                shown(bench)
            )));
        }
    }
    let text = text(&report(run, results, account));
    writer::write_file(path, text.as_bytes(), &rule(force, reads))
        .map_err(|e| CliError::from(e).prefixed("--llmd-br: "))
}

/// The report as JSON: `version`, `run`, `scenario` where the result names its tool,
/// `results`.
pub(crate) fn report(
    run: &Run,
    results: &[CheckResult],
    account: &Account,
) -> Vec<(&'static str, Value)> {
    let h = &account.happened;
    let bench = run.bench.as_ref().map(|(_, b)| b);
    let value = |f: Option<Figure>| f.map(|f| f.value);
    let mut aggregate = Map::new();
    if let Some(total) = value(h.client_sent) {
        let mut requests = Map::new();
        put(&mut requests, "total", whole(total));
        if let Some(f) = value(h.client_failed) {
            put(&mut requests, "failures", whole(f));
        }
        if let Some(i) = value(h.client_incomplete) {
            put(&mut requests, "incomplete", whole(i));
        }
        // The mean length of the requests that came back, as the tool counted them.
        let per_request = |tokens: Option<Figure>| {
            let done = value(h.client_completed).filter(|c| *c > 0.0)?;
            Some(json!({"units": "count", "mean": value(tokens)? / done}))
        };
        if let Some(s) = per_request(h.client_prompt_tokens) {
            put(&mut requests, "input_length", s);
        }
        if let Some(s) = per_request(h.client_output_tokens) {
            put(&mut requests, "output_length", s);
        }
        put(&mut aggregate, "requests", Value::Object(requests));
    }
    let mut latency = Map::new();
    let mut ttft = Map::new();
    for (key, f) in [
        ("mean", h.mean_ttft_ms),
        ("p50", h.median_ttft_ms),
        ("p99", h.p99_ttft_ms),
    ] {
        if let Some(v) = value(f) {
            ttft.insert(key.into(), json!(v));
        }
    }
    // A statistic needs its mean.
    if ttft.contains_key("mean") {
        put(&mut ttft, "units", json!("ms"));
        put(&mut latency, "time_to_first_token", Value::Object(ttft));
    }
    if let Some(v) = value(h.mean_tpot_ms) {
        put(
            &mut latency,
            "time_per_output_token",
            json!({"units": "ms/token", "mean": v}),
        );
    }
    if !latency.is_empty() {
        put(&mut aggregate, "latency", Value::Object(latency));
    }
    if let Some(v) = value(h.client_output_throughput) {
        put(
            &mut aggregate,
            "throughput",
            json!({"output_token_rate": {"units": "tokens/s", "mean": v}}),
        );
    }
    let mut results_block = Map::new();
    if !aggregate.is_empty() {
        put(
            &mut results_block,
            "request_performance",
            json!({ "aggregate": Value::Object(aggregate) }),
        );
    }
    let verdicts: Value =
        serde_json::from_str(&inferlint_core::story::contract::results_json(results))
            .unwrap_or(Value::Null);
    put(
        &mut results_block,
        "observability",
        json!({
            "inferlint": {
                "version": env!("CARGO_PKG_VERSION"),
                "summary": count_line(results).trim(),
                "verdicts": verdicts,
                "account": serde_json::to_value(account).unwrap_or(Value::Null),
            }
        }),
    );
    let mut report = vec![
        ("version", json!(VERSION)),
        ("run", run_block((run, results), account, &results_block)),
    ];
    if let Some(load) = bench.and_then(|b| load_block(b, account)) {
        report.push(("scenario", json!({ "load": load })));
    }
    report.push(("results", Value::Object(results_block)));
    report
}

/// The report's text: its top level in the order the format's own files give it,
/// `version` and `run` first, where a reader looking at a file's start finds them.
pub(crate) fn text(report: &[(&str, Value)]) -> String {
    let fields: Vec<String> = report
        .iter()
        .map(|(key, value)| {
            let value = serde_json::to_string_pretty(value)
                .unwrap_or_else(|_| "null".into())
                .replace('\n', "\n  ");
            format!("  {}: {value}", Value::String((*key).to_owned()))
        })
        .collect();
    format!("{{\n{}\n}}\n", fields.join(",\n"))
}

/// A count as the format's integer.
fn whole(v: f64) -> Value {
    json!(v.round() as u64)
}

/// `run`: an id made from what the report says (the same run checked the same way has
/// the same id), the load's time where the result gives it.
fn run_block(
    (run, verdicts): (&Run, &[CheckResult]),
    account: &Account,
    results: &Map<String, Value>,
) -> Value {
    // FNV-1a over the results written: stable, and different for a different run.
    let text = serde_json::to_string(results).unwrap_or_default();
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut block = Map::new();
    put(&mut block, "uid", json!(format!("inferlint-{hash:016x}")));
    let identity = run.bench.as_ref().map(|(_, b)| &b.identity);
    let mut time = Map::new();
    let at = |t: Option<f64>| t.and_then(rfc3339);
    if let Some(s) = at(identity.and_then(|i| i.start_unix_s)) {
        put(&mut time, "start", json!(s));
    }
    if let Some(e) = at(identity.and_then(|i| i.end_unix_s)) {
        put(&mut time, "end", json!(e));
    }
    if let Some(d) = account.happened.client_duration_s {
        put(&mut time, "duration", json!(format!("PT{}S", d.value)));
    }
    if !time.is_empty() {
        put(&mut block, "time", Value::Object(time));
    }
    put(
        &mut block,
        "description",
        json!(format!(
            "checked by inferlint {}: {}",
            env!("CARGO_PKG_VERSION"),
            count_line(verdicts).trim()
        )),
    );
    Value::Object(block)
}

/// A Unix time as the schema's `date-time` (RFC 3339, UTC), to the microsecond.
fn rfc3339(unix_s: f64) -> Option<String> {
    if !(0.0..=1e11).contains(&unix_s) {
        return None;
    }
    let micros = (unix_s * 1e6).round() as i64;
    let (year, month, day, h, m, s) =
        inferlint_core::model::civil::utc_parts(micros.div_euclid(1_000_000));
    let fraction = micros.rem_euclid(1_000_000);
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{fraction:06}Z"
    ))
}

/// `scenario.load`: the tool that made the load, the concurrency asked for (the
/// account's) and the rate; the input length its required `input_seq_len` names is the
/// length asked for, else the mean the tool counted (`distribution: other`).
fn load_block(
    bench: &inferlint_core::model::client::ClientAccount,
    account: &Account,
) -> Option<Value> {
    let (distribution, length) = match bench.advertised.input_tokens {
        Some(asked) => ("fixed", asked),
        None => {
            let done = account.happened.client_completed?.value;
            let tokens = account.happened.client_prompt_tokens?.value;
            ("other", (done > 0.0).then(|| tokens / done)?)
        }
    };
    let mut standardized = Map::new();
    put(&mut standardized, "tool", json!(bench.tool.info().key));
    put(
        &mut standardized,
        "tool_version",
        json!(bench.tool_version.clone().unwrap_or_default()),
    );
    put(&mut standardized, "source", json!("unknown"));
    put(
        &mut standardized,
        "input_seq_len",
        json!({"distribution": distribution, "value": length}),
    );
    if let Some(c) = account.load.requested.filter(|c| c.value >= 1.0) {
        put(&mut standardized, "concurrency", whole(c.value));
    }
    if let Some(r) = bench.request_rate.filter(|r| *r > 0.0 && r.is_finite()) {
        put(&mut standardized, "rate_qps", json!(r));
    }
    Some(json!({
        "metadata": {},
        "standardized": Value::Object(standardized),
        "native": {},
    }))
}

/// Sets a key of a JSON object being built.
fn put(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.insert(key.to_owned(), value);
}
