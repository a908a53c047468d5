//! One checked run as `compare` and `sweep` see it: the facts of its setup, the shape of
//! its load, what happened in it and the figures it measured, each `None` when the run's
//! files do not say.
//!
//! A fact is read from the files only: the boot log's lines and settings, the info metrics
//! of a snapshot, the load tool's result and the run's own verdicts. A missing fact stays
//! missing: compare then says it cannot tell for that item, never that it is the same.

use serde::Serialize;
use serde_json::Value;

use crate::engine::SetupSource;
use crate::judging::checks::counters::out_of_order;
use crate::judging::identity;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::ClientAccount;
use crate::model::{BootFacts, PyValue};
use crate::run::model::{not_a_benchmark, Run};

/// Everything compare and sweep read from one checked run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunProfile {
    /// How the run is named (its folder).
    pub label: String,
    /// The server's setup.
    pub setup: Setup,
    /// The load.
    pub load: LoadShape,
    /// What happened.
    pub happened: Happened,
    /// The figures compared.
    pub figures: Figures,
    /// Each tripwire's status word (`pass`, `fail`, ...), in the order the checks ran.
    pub verdicts: Vec<(String, String)>,
}

/// The server's setup: what decides how many requests fit and how fast each step runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Setup {
    /// The engine's key.
    pub engine: String,
    /// Its version.
    pub version: Option<String>,
    /// The model.
    pub model: Option<String>,
    /// The KV pool, tokens.
    pub kv_pool_tokens: Option<u64>,
    /// The KV pool, blocks.
    pub kv_blocks: Option<u64>,
    /// The attention block size, tokens.
    pub block_size: Option<u64>,
    /// The attention backend.
    pub attention_backend: Option<String>,
    /// The KV cache's data type.
    pub kv_dtype: Option<String>,
    /// The longest context.
    pub max_model_len: Option<u64>,
    /// The cap on running requests.
    pub running_cap: Option<u64>,
    /// The GPU.
    pub gpu: Option<String>,
}

/// The load as it was asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LoadShape {
    /// The load tool, without its version.
    pub tool: Option<String>,
    /// The concurrency the load asked for.
    pub requested_concurrency: Option<u64>,
    /// Requests per second asked for; `None` when unlimited or not said.
    pub request_rate: Option<f64>,
    /// Prompt tokens per request: the advertised length, else the mean the tool counted.
    pub input_tokens: Option<f64>,
    /// Output tokens per request, the same way.
    pub output_tokens: Option<f64>,
    /// Requests the timed run sent.
    pub requests: Option<i64>,
}

/// What happened during the run, from the server's own account and the tool's.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Happened {
    /// The most requests the server ran at once (the recording's peak, as T8 reads it).
    pub peak_running: Option<f64>,
    /// Requests running on average while the server was busy (the figure `report`'s
    /// "What limited this run" gives).
    pub mean_running: Option<f64>,
    /// Requests running on average over the samples in which the load kept the
    /// concurrency it asked for at the server (running plus waiting at least that): the
    /// closed loop's saturated middle, without its ramp and tail. `None` without a
    /// concurrency asked, a waiting gauge, or a sample that held that many.
    pub saturated_running: Option<f64>,
    /// Why how many requests ran at once cannot be told, when it cannot: an engine whose
    /// gauges move only when a request completes, or a recording T8 could not judge.
    /// `peak_running` and `mean_running` are then `None`.
    pub running_unknown: Option<String>,
    /// Preemptions (retractions, pauses) during the run, as T1 counted them.
    pub preemptions: Option<f64>,
    /// The share of prompt tokens the prefix cache served, from the engine's counters.
    pub prefix_cache_share: Option<f64>,
    /// Requests that failed.
    pub failed: Option<i64>,
    /// Requests that completed.
    pub completed: Option<i64>,
    /// Untimed requests before the timed run (a test request, a warm-up).
    pub untimed_requests: Option<u64>,
    /// Seconds of warm-up the tool left out of its figures.
    pub warmup_s: Option<f64>,
    /// Why the run was not a benchmark, if it was not.
    pub not_a_benchmark: Option<String>,
}

/// Whether a larger value of a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Higher is better (throughput).
    Higher,
    /// Lower is better (latency).
    Lower,
}

/// One measured figure of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    /// `output_throughput`, `ttft_p50_ms`, ...
    pub key: &'static str,
    /// The value.
    pub value: f64,
    /// `load tool (summary)`, `load tool (per request)`, `server counters`.
    pub source: &'static str,
}

/// The figures a run measured, in a fixed order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Figures(pub Vec<Figure>);

impl Figures {
    /// The figure with this key.
    pub fn get(&self, key: &str) -> Option<&Figure> {
        self.0.iter().find(|f| f.key == key)
    }
}

/// Every figure compare knows, its unit, its words and which way is better.
pub const FIGURES: &[(&str, &str, &str, Better)] = &[
    (
        "output_throughput",
        "tok/s",
        "output throughput",
        Better::Higher,
    ),
    (
        "request_throughput",
        "req/s",
        "request throughput",
        Better::Higher,
    ),
    ("ttft_mean_ms", "ms", "TTFT mean", Better::Lower),
    ("ttft_p50_ms", "ms", "TTFT p50", Better::Lower),
    ("ttft_p99_ms", "ms", "TTFT p99", Better::Lower),
    ("tpot_mean_ms", "ms", "TPOT mean", Better::Lower),
    ("tpot_p50_ms", "ms", "TPOT p50", Better::Lower),
    ("tpot_p99_ms", "ms", "TPOT p99", Better::Lower),
    ("itl_p50_ms", "ms", "ITL p50", Better::Lower),
    ("itl_p99_ms", "ms", "ITL p99", Better::Lower),
    ("e2e_p50_ms", "ms", "latency p50", Better::Lower),
    ("e2e_p99_ms", "ms", "latency p99", Better::Lower),
];

/// The unit, words and direction of a figure.
pub fn figure_info(key: &str) -> Option<(&'static str, &'static str, Better)> {
    FIGURES
        .iter()
        .find(|(k, ..)| *k == key)
        .map(|(_, unit, words, better)| (*unit, *words, *better))
}

impl RunProfile {
    /// The profile of a checked run. It reads the run as the identity gate admits it
    /// ([`identity::Admitted`]), as the checks and `report` do: nothing from an input
    /// set aside as not of this run.
    pub fn of(label: &str, run: &identity::Admitted, results: &[CheckResult]) -> RunProfile {
        let boot = run.last_boot();
        let bench = run.bench.as_ref().map(|(_, b)| b);
        RunProfile {
            label: label.to_owned(),
            setup: setup(run, boot),
            load: load_shape(run, bench),
            happened: happened(run, results, bench),
            figures: figures(run, results, bench),
            verdicts: results
                .iter()
                .map(|r| (r.tripwire.to_string(), r.status.json_word().to_owned()))
                .collect(),
        }
    }

    /// The status of one tripwire in this run, when it was among the results.
    pub fn verdict(&self, tripwire: Tripwire) -> Option<Status> {
        let id = tripwire.to_string();
        self.verdicts
            .iter()
            .find(|(t, _)| *t == id)
            .and_then(|(_, s)| Status::from_json_word(s))
    }
}

fn setting_text(value: &PyValue) -> Option<String> {
    if value.is_none() {
        return None;
    }
    Some(match value {
        PyValue::Str(s) | PyValue::Raw(s) => s.clone(),
        PyValue::Int(i) => i.to_string(),
        other => other.canonical(),
    })
}

fn from_sources(run: &Run, boot: Option<&BootFacts>, sources: &[SetupSource]) -> Option<String> {
    sources.iter().find_map(|source| match source {
        SetupSource::Setting(key) => boot.and_then(|b| b.setting(key)).and_then(setting_text),
        SetupSource::InfoLabel { metric, label } => run.info_label(metric, label),
    })
}

fn whole(text: Option<String>) -> Option<u64> {
    text.and_then(|t| t.trim().parse::<u64>().ok())
}

fn setup(run: &Run, boot: Option<&BootFacts>) -> Setup {
    let sources = &run.engine.setup_sources;
    // The one block size of the run's account, as the log or the readings state it; the
    // engine's default is not a setting the run shows.
    let block_size = crate::story::advice::block_size(run)
        .filter(|(_, from)| *from != crate::story::advice::BlockFrom::EngineDefault)
        .map(|(b, _)| b);
    let kv_pool_tokens = boot.and_then(|b| b.kv_pool_tokens);
    let kv_blocks = whole(from_sources(run, boot, sources.kv_blocks)).or_else(|| {
        // An engine that states no block count: its pool in blocks of its page size.
        match (kv_pool_tokens, block_size) {
            (Some(tokens), Some(size)) if size > 0 => Some(tokens / size),
            _ => None,
        }
    });
    let backends = boot.map(|b| b.selected_backends.join(", "));
    Setup {
        engine: run.engine.name.to_owned(),
        version: boot.and_then(|b| b.version.clone()),
        model: boot.and_then(|b| b.model.clone()),
        kv_pool_tokens,
        kv_blocks,
        block_size,
        attention_backend: backends.filter(|b| !b.is_empty()),
        kv_dtype: from_sources(run, boot, sources.kv_dtype),
        // vLLM states the length in its pool line ("Maximum concurrency for 16,384 tokens
        // per request") even when max_model_len was not set by hand.
        max_model_len: whole(from_sources(run, boot, sources.max_model_len))
            .or_else(|| boot.and_then(|b| b.max_concurrency_request_len)),
        running_cap: boot.and_then(|b| b.running_cap),
        gpu: from_sources(run, boot, sources.gpu),
    }
}

fn per_request(total: Option<i64>, completed: Option<i64>) -> Option<f64> {
    match (total, completed) {
        (Some(t), Some(c)) if c > 0 => Some(t as f64 / c as f64),
        _ => None,
    }
}

fn load_shape(run: &Run, bench: Option<&ClientAccount>) -> LoadShape {
    LoadShape {
        tool: bench.map(|b| b.tool.name().to_owned()),
        requested_concurrency: run.requested,
        request_rate: bench.and_then(|b| b.request_rate),
        input_tokens: bench.and_then(|b| {
            b.advertised
                .input_tokens
                .or_else(|| per_request(b.total_input_tokens, b.completed))
        }),
        output_tokens: bench.and_then(|b| {
            b.advertised
                .output_tokens
                .or_else(|| per_request(b.total_output_tokens, b.completed))
        }),
        requests: bench.and_then(|b| b.sent.or(b.completed)),
    }
}

fn evidence_f64(results: &[CheckResult], tripwire: Tripwire, key: &str) -> Option<f64> {
    results
        .iter()
        .find(|r| r.tripwire == tripwire && r.status.is_verdict() && r.status != Status::Unknown)
        .and_then(|r| r.evidence.get(key))
        .and_then(Value::as_f64)
}

/// The share of the run's prompt tokens the prefix cache served, from the same counters
/// and deltas as T16 (one table of them, in the engine descriptors).
fn prefix_cache_share(run: &Run) -> Option<f64> {
    let counters = run.engine.prefix_cache?;
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    if out_of_order(before, after).is_some() {
        return None;
    }
    let d = crate::judging::checks::prefix_cache::deltas_between(&counters, before, after).ok()?;
    if !(d.queried > 0.0 && d.hits.is_finite() && d.hits >= 0.0) {
        return None;
    }
    Some((d.hits / d.queried).clamp(0.0, 1.0))
}

/// How many requests ran at once, as `report` tells it: the peak T8 read, the busy mean
/// of the recording, or why neither can be told. A gauge that moves only when a request
/// completes holds between completions a count that is no longer true, so neither its
/// peak nor its mean says how many ran (T8 and "What limited this run" say so too); a
/// recording T8 could not judge gives no count either.
fn running(run: &Run, results: &[CheckResult]) -> (Option<f64>, Option<f64>, Option<String>) {
    if run.engine.gauges_lag {
        return (
            None,
            None,
            Some(format!(
                "cannot be told: {} updates its running gauge only when a request completes",
                run.engine.name
            )),
        );
    }
    let t8 = results.iter().find(|r| r.tripwire == Tripwire::T8);
    if let Some(t8) = t8.filter(|r| r.status == Status::Unknown) {
        return (None, None, Some(format!("cannot be told: {}", t8.message)));
    }
    let stats = run.series.as_ref().filter(|s| s.refused.is_none());
    let peak = match t8.filter(|r| r.status.is_verdict()) {
        Some(t8) => t8.evidence.get("peak_running").and_then(Value::as_f64),
        None => stats.and_then(|s| s.peak_running),
    };
    (peak, stats.and_then(|s| s.busy_mean_running()), None)
}

fn happened(run: &Run, results: &[CheckResult], bench: Option<&ClientAccount>) -> Happened {
    let (peak_running, mean_running, running_unknown) = running(run, results);
    let saturated_running = match (running_unknown.is_none(), run.requested) {
        (true, Some(asked)) => run
            .series
            .as_ref()
            .filter(|s| s.refused.is_none())
            .and_then(|s| s.flight.mean_running_with_at_least(asked)),
        _ => None,
    };
    Happened {
        peak_running,
        mean_running,
        saturated_running,
        running_unknown,
        preemptions: evidence_f64(results, Tripwire::T1, "preemptions"),
        prefix_cache_share: prefix_cache_share(run),
        failed: bench.and_then(ClientAccount::failed_count),
        completed: bench.and_then(|b| b.completed),
        untimed_requests: bench.map(|b| {
            b.span
                .untimed_requests
                .unwrap_or(run.expected_extra_requests)
        }),
        warmup_s: bench.and_then(|b| b.span.warmup_s),
        not_a_benchmark: not_a_benchmark(run),
    }
}

/// numpy's default (linear) percentile of sorted values: the account's one definition.
pub use crate::story::account::percentile;

fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

fn figures(run: &Run, results: &[CheckResult], bench: Option<&ClientAccount>) -> Figures {
    const SUMMARY: &str = "load tool (summary)";
    const RECORDS: &str = "load tool (per request)";
    let mut out = Vec::new();
    let mut push = |key: &'static str, value: Option<f64>, source: &'static str| {
        if let Some(value) = value.filter(|v| v.is_finite() && *v >= 0.0) {
            if !out.iter().any(|f: &Figure| f.key == key) {
                out.push(Figure { key, value, source });
            }
        }
    };
    // A run that was not a benchmark measured nothing worth comparing.
    if not_a_benchmark(run).is_some() {
        return Figures(out);
    }
    match bench {
        Some(b) => {
            let completed: Vec<_> = b.requests.iter().filter(|r| r.completed()).collect();
            let ttft = sorted(
                completed
                    .iter()
                    .filter_map(|r| r.ttft_s.get())
                    .map(|s| s * 1e3),
            );
            let e2e = sorted(
                completed
                    .iter()
                    .filter_map(|r| r.latency_s.get())
                    .map(|s| s * 1e3),
            );
            let tpot = sorted(completed.iter().filter_map(|r| {
                let out = r.output_tokens.get().or(r.server_output_tokens.get())?;
                let generating = r.latency_s.get()? - r.ttft_s.get()?;
                (out > 1).then(|| generating * 1e3 / (out - 1) as f64)
            }));
            let itl = sorted(b.inter_token_ms.iter().map(|&g| f64::from(g)));
            let throughput =
                b.output_throughput
                    .or_else(|| match (b.total_output_tokens, b.duration) {
                        (Some(t), Some(d)) if d > 0.0 => Some(t as f64 / d),
                        _ => None,
                    });
            push("output_throughput", throughput, SUMMARY);
            let request_rate = match (b.completed, b.duration) {
                (Some(c), Some(d)) if d > 0.0 => Some(c as f64 / d),
                _ => None,
            };
            push("request_throughput", request_rate, SUMMARY);
            push("ttft_mean_ms", b.mean_ttft_ms, SUMMARY);
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            push("ttft_mean_ms", mean(&ttft), RECORDS);
            push("ttft_p50_ms", b.median_ttft_ms, SUMMARY);
            push("ttft_p50_ms", percentile(&ttft, 50.0), RECORDS);
            push("ttft_p99_ms", b.p99_ttft_ms, SUMMARY);
            push("ttft_p99_ms", percentile(&ttft, 99.0), RECORDS);
            push("tpot_mean_ms", b.mean_tpot_ms, SUMMARY);
            push("tpot_mean_ms", mean(&tpot), RECORDS);
            push("tpot_p50_ms", percentile(&tpot, 50.0), RECORDS);
            push("tpot_p99_ms", percentile(&tpot, 99.0), RECORDS);
            push("itl_p50_ms", percentile(&itl, 50.0), RECORDS);
            push("itl_p99_ms", percentile(&itl, 99.0), RECORDS);
            push("e2e_p50_ms", percentile(&e2e, 50.0), RECORDS);
            push("e2e_p99_ms", percentile(&e2e, 99.0), RECORDS);
        }
        None => {
            // Without the load tool's file, the server's own count (T10) is the run's
            // throughput; it includes what the tool would not have timed.
            push(
                "output_throughput",
                evidence_f64(results, Tripwire::T10, "rate_per_s"),
                "server counters",
            );
        }
    }
    let mut figures = Figures(out);
    figures
        .0
        .sort_by_key(|f| FIGURES.iter().position(|(k, ..)| *k == f.key));
    figures
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineDescriptor, TRTLLM, VLLM};
    use crate::judging::checks::series::SeriesStats;
    use crate::model::SeriesSample;
    use crate::run::checking::check_run;
    use crate::testing::snapshot;

    /// A recording of `running` requests at each quarter second from `first_wall`, on a
    /// host whose monotonic clock started at wall time 0 (as [`snapshot`]'s readings).
    fn recording(first_wall: f64, running: &[f64]) -> SeriesStats {
        let mut stats = SeriesStats::new();
        for (i, r) in running.iter().enumerate() {
            let t = first_wall + i as f64 * 0.25;
            stats.push(&SeriesSample {
                t_wall: t,
                t_mono_ns: Some((t * 1e9) as i64),
                running: Some(*r),
                ..SeriesSample::default()
            });
        }
        stats
    }

    fn run_of(engine: &'static EngineDescriptor, series: SeriesStats, requested: u64) -> Run {
        Run {
            engine,
            boots: Vec::new(),
            before: None,
            after: None,
            series: Some(series),
            bench: None,
            expected_extra_requests: 0,
            requested: Some(requested),
            load_failure: None,
            rejected: Vec::new(),
            server_requests: None,
            kv_events: None,
            steps: None,
            notes: Vec::new(),
        }
    }

    /// Six running for five seconds, then none: a peak of 6 and a busy mean of 6 (the
    /// idle tail is not busy time).
    fn six_running() -> Vec<f64> {
        let mut running = vec![6.0; 21];
        running.extend([0.0; 4]);
        running
    }

    #[test]
    fn a_gauge_that_moves_only_when_a_request_completes_gives_no_count_of_running() {
        // vLLM's gauge is live: its recording's peak and busy mean are the run's.
        let live = run_of(&VLLM, recording(1000.0, &six_running()), 6);
        let p = RunProfile::of("live", &identity::admitted(&live), &check_run(&live));
        assert_eq!(p.happened.peak_running, Some(6.0));
        assert_eq!(p.happened.mean_running, Some(6.0));
        assert_eq!(p.happened.running_unknown, None);
        // TensorRT-LLM's gauges move only when a request completes (`gauges_lag`): the
        // same readings hold a count that went stale between completions, so neither the
        // peak nor the mean is stated, and the profile says why.
        assert!(TRTLLM.gauges_lag);
        let lagging = run_of(&TRTLLM, recording(1000.0, &six_running()), 6);
        let p = RunProfile::of(
            "lagging",
            &identity::admitted(&lagging),
            &check_run(&lagging),
        );
        assert_eq!(p.happened.peak_running, None);
        assert_eq!(p.happened.mean_running, None);
        assert_eq!(
            p.happened.running_unknown.as_deref(),
            Some("cannot be told: TensorRT-LLM updates its running gauge only when a request completes")
        );
    }

    /// `sweep` says a concurrency was followed exactly where `report`'s "What limited
    /// this run" says the run kept its requests busy, on either side of the share: a
    /// recording alternating 10 and 8 running has a busy mean of 9.0, 90% of the 10
    /// asked; 10 and 7.9 has 8.95, just under it. Both peaks reach the 10 asked.
    #[test]
    fn sweep_follows_where_report_says_the_run_kept_its_requests_busy() {
        for (low, kept) in [(8.0, true), (7.9, false)] {
            let mut running: Vec<f64> = (0..40)
                .map(|i| if i % 2 == 0 { 10.0 } else { low })
                .collect();
            running.extend([0.0; 4]);
            let run = run_of(&VLLM, recording(1000.0, &running), 10);
            let results = check_run(&run);
            let pace = crate::story::insights::what_limited(&run, &results)
                .into_iter()
                .find(|i| i.key == "pace")
                .expect("a pace sentence");
            assert_eq!(pace.limit, !kept, "{pace:?}");
            assert_eq!(
                pace.title == "The run kept its requests busy",
                kept,
                "{pace:?}"
            );
            let point = |c: u64| {
                let r = run_of(&VLLM, recording(1000.0, &running), c);
                RunProfile::of(&format!("c{c}"), &identity::admitted(&r), &check_run(&r))
            };
            // A second, smaller load makes it a sweep; the run at 10 is the one judged.
            let mut smaller = point(10);
            smaller.label = "c5".into();
            smaller.load.requested_concurrency = Some(5);
            let s = crate::analyses::sweep::sweep(vec![smaller, point(10)], false);
            assert_eq!(s.points[1].follows, Some(kept), "{:?}", s.points[1]);
        }
    }

    #[test]
    fn a_recording_set_aside_as_not_of_the_run_gives_no_count_of_running() {
        // The readings bracket 1000 s to 1100 s; the recording starts a second after the
        // after reading (the next run's), by the monotonic clock both share.
        let mut run = run_of(&VLLM, recording(1101.0, &six_running()), 6);
        run.before = Some(snapshot(Some(1000.0), Vec::new()));
        run.after = Some(snapshot(Some(1100.0), Vec::new()));
        assert_eq!(
            crate::judging::identity::place(&run).rejected[0].input,
            crate::run::model::input::SERIES
        );
        // Built without the gate (as a library user may): the profile admits it itself.
        let p = RunProfile::of("next", &identity::admitted(&run), &check_run(&run));
        assert_eq!(p.happened.peak_running, None);
        assert_eq!(p.happened.mean_running, None);
        let why = p.happened.running_unknown.unwrap_or_default();
        assert!(why.contains("not of this run"), "{why}");
        // Without the checks' results as well: nothing is read from the set-aside input.
        let p = RunProfile::of("next", &identity::admitted(&run), &[]);
        assert_eq!(p.happened.peak_running, None);
        assert_eq!(p.happened.mean_running, None);
    }

    #[test]
    fn percentiles_are_numpys_linear_ones() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert!((percentile(&v, 99.0).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn every_figure_has_its_words() {
        for (key, unit, words, _) in FIGURES {
            assert!(!unit.is_empty() && !words.is_empty(), "{key}");
            assert!(figure_info(key).is_some());
        }
    }
}
