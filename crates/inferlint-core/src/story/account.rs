//! One account of the run: every figure that more than one sentence of the tool speaks
//! of, computed in one place from the inputs the gate admitted (`crate::judging::identity`) and
//! the checks' results, each with where it came from.
//!
//! Verdict advice ([`crate::story::advice`]), "What limited this run" ([`crate::story::insights`]),
//! the report and the library read their figures from here, so one output never says
//! two numbers for one thing: the peak running that T8 names is the one "What limited"
//! names, the requests that fit at full length that T1's advice names are the ones T8's
//! and T9's name. An input the gate set aside contributes nothing.

use serde::Serialize;
use serde_json::Value;

use crate::judging::checks::counters::counter_summary;
use crate::judging::identity::{Admitted, Rejected};
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::run::model::Run;
use crate::story::advice::{self, Capacity, Headroom};

/// Where a figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The server's boot log.
    BootLog,
    /// The before and after readings of `/metrics` (their counters' difference, or a
    /// setting their info metrics state).
    Readings,
    /// The recording sampled during the run.
    Recording,
    /// The load tool's result file.
    ResultFile,
    /// What the user said (`--requested`).
    CommandLine,
    /// The engine's documented default.
    EngineDefault,
}

/// One figure and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figure {
    /// The value.
    pub value: f64,
    /// Where it came from.
    pub from: Source,
}

fn figure(value: Option<f64>, from: Source) -> Option<Figure> {
    value
        .filter(|v| v.is_finite())
        .map(|value| Figure { value, from })
}

/// The server's setup, as the run shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Setup {
    /// The KV cache's pool in tokens.
    pub kv_pool_tokens: Option<Figure>,
    /// Tokens per KV block.
    pub block_tokens: Option<Figure>,
    /// The blocks requests can use (T14's denominator).
    pub usable_blocks: Option<Figure>,
    /// GiB the engine gave its KV cache.
    pub kv_cache_gib: Option<Figure>,
    /// The card's memory, GiB.
    pub card_total_gib: Option<Figure>,
    /// The most memory the card could still give the KV cache, GiB, and from what.
    pub kv_headroom: Option<Headroom>,
    /// The most requests the server runs at once, as its log says.
    pub running_cap: Option<Figure>,
    /// The KV blocks the server reports (`cache_config_info` in the after reading), as
    /// T14 read them.
    pub reported_blocks: Option<Figure>,
    /// The usable blocks the usage gauge's readings imply (T14), whatever T14's verdict:
    /// a failed T14 shows them against `reported_blocks`.
    pub inferred_blocks: Option<Figure>,
    /// `inferred_blocks` when T14 passed: the only block count a chart or a replay may
    /// draw the cache in ([`trusted_blocks`]).
    pub trusted_blocks: Option<Figure>,
}

/// The load, as the load tool and the server counted it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Load {
    /// The concurrency the load asked for.
    pub requested: Option<Figure>,
    /// Requests the server finished between the readings, else the load tool's.
    pub finished: Option<Figure>,
    /// Prompt tokens per request.
    pub prompt_tokens: Option<Figure>,
    /// Output tokens per request.
    pub output_tokens: Option<Figure>,
}

/// What happened during the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Happened {
    /// The most requests running at once (T8's peak).
    pub peak_running: Option<Figure>,
    /// The most requests waiting at once for room in the batch or the KV cache, where the
    /// recording has the engine's waiting split by reason (T8's figure).
    pub peak_waiting_capacity: Option<Figure>,
    /// The most requests deferred at once (a KV transfer, another transient block), from
    /// the same split.
    pub peak_waiting_deferred: Option<Figure>,
    /// The deferred share of the waiting the recording saw, 0 to 1.
    pub waiting_deferred_share: Option<Figure>,
    /// Requests running on average while the server was busy (none from a gauge that
    /// moves only when requests complete).
    pub busy_mean_running: Option<Figure>,
    /// Seconds the server was busy in the recording.
    pub busy_seconds: Option<Figure>,
    /// Preemptions (retractions, pauses) during the run (T1).
    pub preemptions: Option<Figure>,
    /// Mean seconds a request waited in the server's queue.
    pub mean_queue_s: Option<Figure>,
    /// Output tokens the server generated between the readings, in all.
    pub generated_tokens: Option<Figure>,
    /// The load tool's median and p99 time to first token, milliseconds.
    pub median_ttft_ms: Option<Figure>,
    /// See `median_ttft_ms`.
    pub p99_ttft_ms: Option<Figure>,
    /// The load tool's output tokens per second over its timed span.
    pub client_output_throughput: Option<Figure>,
    /// The load tool's timed span, seconds: the load's span wherever a sentence says how
    /// long the load ran (never the readings' window, which also holds the tool's start,
    /// warm-up and wind-down).
    pub client_duration_s: Option<Figure>,
    /// The requests the load tool timed (its completed count): what its throughput is
    /// over.
    pub client_completed: Option<Figure>,
    /// The requests the load tool sent in its timed run, failed, and left incomplete, as
    /// its result file counts them.
    pub client_sent: Option<Figure>,
    /// See `client_sent`.
    pub client_failed: Option<Figure>,
    /// See `client_sent`.
    pub client_incomplete: Option<Figure>,
    /// The prompt and output tokens of the requests the load tool completed, in all, as
    /// it counted them.
    pub client_prompt_tokens: Option<Figure>,
    /// See `client_prompt_tokens`.
    pub client_output_tokens: Option<Figure>,
    /// The load tool's mean time to first token, milliseconds.
    pub mean_ttft_ms: Option<Figure>,
    /// The load tool's mean time per output token, milliseconds.
    pub mean_tpot_ms: Option<Figure>,
    /// T10's generated tokens per second over the span between the readings: the
    /// server's count over the readings' window, never the run's throughput where the
    /// load tool timed one ([`Account::throughput`]).
    pub server_token_rate: Option<Figure>,
    /// That span, seconds.
    pub readings_span_s: Option<Figure>,
    /// How far that span may be off, from each reading's latency, seconds.
    pub readings_span_uncertainty_s: Option<Figure>,
    /// The rate a whole-second timer would give over the readings' span (T10).
    pub whole_second_rate: Option<Figure>,
    /// That rate's error against `server_token_rate`, as a fraction.
    pub whole_second_error: Option<Figure>,
    /// The fewest requests that would have filled the KV cache over the run (T9).
    pub cache_ceiling_min: Option<Figure>,
    /// The most requests that would have filled it (T9).
    pub cache_ceiling_max: Option<Figure>,
    /// The fewest KV blocks one running request held (T9, with a trusted block count).
    pub blocks_per_request_min: Option<Figure>,
}

/// One account of a run. See the module documentation.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Account {
    /// The server's setup.
    pub setup: Setup,
    /// The load.
    pub load: Load,
    /// What happened.
    pub happened: Happened,
    /// How many requests fit at start and at full length ([`advice::capacity`]).
    pub capacity: Option<Capacity>,
    /// Inputs given for the run that the gate set aside, and why.
    pub set_aside: Vec<Rejected>,
    /// The input that says the run was simulated ([`SIMULATED_MARK`]), when one does.
    pub simulated: Option<&'static str>,
    /// Requests the server finished beside the load's (T15), described: its counters
    /// hold them too, so the load's figures above come from the result file.
    pub other_traffic: Option<crate::judging::other_traffic::OtherTraffic>,
}

/// What the simulator (`inferlint-sim`) writes at the head of every file it makes (a
/// `#` comment at the top of each reading and of its boot log, the `note` of its result
/// file; the readings' comment is the one read here): a run whose files say it is not a real server's.
pub const SIMULATED_MARK: &str = "simulated by inferlint-sim";

impl Account {
    /// The run's output throughput: the load tool's own figure over the requests it
    /// timed, where it measured one; else the server's count over the readings' window
    /// (`from` says which: [`Source::ResultFile`] or [`Source::Readings`]). Every output
    /// that states the run's throughput reads it here.
    pub fn throughput(&self) -> Option<Figure> {
        self.happened
            .client_output_throughput
            .or(self.happened.server_token_rate)
    }
}

/// Writes the run's throughput ([`Account::throughput`]) into T10's evidence, so that
/// `--json`, which carries no account, gives the run's own figure beside T10's rate:
/// `run_output_throughput` (output tokens per second) and `run_output_throughput_from`
/// (`result_file`: the load tool's, over the requests it timed; `readings`: T10's own
/// rate, for want of one).
pub fn attach_throughput(run: &Admitted, results: &mut [CheckResult]) {
    attach_throughput_of(&of(run, results), results);
}

/// [`attach_throughput`] from the run's account, already made from the same results (the
/// account reads no evidence this writes).
pub fn attach_throughput_of(account: &Account, results: &mut [CheckResult]) {
    let Some(figure) = account.throughput() else {
        return;
    };
    let from = match figure.from {
        Source::ResultFile => "result_file",
        _ => "readings",
    };
    if let Some(t10) = results
        .iter_mut()
        .find(|r| r.tripwire == Tripwire::T10 && r.status.is_verdict())
    {
        t10.evidence
            .insert("run_output_throughput".into(), figure.value.into());
        t10.evidence
            .insert("run_output_throughput_from".into(), from.into());
    }
}

/// The percentile every printed percentile uses ([`crate::story::fmt::percentile`]: numpy's
/// linear one, as `vllm bench serve` computes its own).
pub use crate::story::fmt::percentile;

/// Which input says the run was simulated: a reading whose text carries the
/// simulator's mark in a comment at its head.
fn simulated(run: &Run) -> Option<&'static str> {
    let marked = |text: &str| {
        text.lines()
            .take_while(|l| l.starts_with('#') || l.trim().is_empty())
            .any(|l| l.contains(SIMULATED_MARK))
    };
    if run.before.as_ref().is_some_and(|s| marked(&s.text)) {
        return Some(crate::run::input::BEFORE);
    }
    run.after
        .as_ref()
        .filter(|s| marked(&s.text))
        .map(|_| crate::run::input::AFTER)
}

fn evidence(results: &[CheckResult], tripwire: Tripwire, key: &str) -> Option<f64> {
    results
        .iter()
        .find(|r| r.tripwire == tripwire && r.status.is_verdict())
        .and_then(|r| r.evidence.get(key))
        .and_then(Value::as_f64)
}

/// The usable KV block count T14 inferred, when T14 passed: the only block count the
/// charts and the replay trust. A caller that folds a recording before it has an
/// [`Account`] reads it here; the account's `setup.trusted_blocks` is the same count.
pub fn trusted_blocks(results: &[CheckResult]) -> Option<u64> {
    results
        .iter()
        .find(|r| r.tripwire == Tripwire::T14 && r.status == Status::Pass)
        .and_then(|r| r.evidence_as::<u64>("inferred_usable_blocks"))
}

/// The cross-checks whose contradiction discredits an input for the run's story, and
/// which: a result file longer than the readings' span is not the run they bracket; a
/// recording whose counters go back, or that shows more running than the server's cap,
/// is not a recording of this server's run.
const DISCREDITS: &[(&str, &str)] = &[
    (
        "load_outlasted_the_snapshots",
        crate::run::model::input::BENCH_RESULT,
    ),
    ("series_counters_disagree", crate::run::model::input::SERIES),
    ("series_tokens_disagree", crate::run::model::input::SERIES),
    ("series_outside_the_run", crate::run::model::input::SERIES),
    (
        "peak_above_the_servers_cap",
        crate::run::model::input::SERIES,
    ),
];

/// The run as its story may read it: the gate's admitted inputs, less any input a
/// cross-check discredited (the verdicts that read it say Can't tell; no sentence may
/// then state its figures as this run's).
pub fn story_run<'a>(run: &'a Admitted, results: &[CheckResult]) -> std::borrow::Cow<'a, Run> {
    let discredited: Vec<&str> = results
        .iter()
        .filter_map(|r| r.evidence.get("contradiction"))
        .filter_map(|c| c.get("rule").and_then(Value::as_str))
        .filter_map(|rule| DISCREDITS.iter().find(|(r, _)| *r == rule).map(|(_, i)| *i))
        .collect();
    if discredited.is_empty() {
        return std::borrow::Cow::Borrowed(run);
    }
    let mut story = Run::clone(run);
    if discredited.contains(&crate::run::model::input::BENCH_RESULT) {
        story.bench = None;
    }
    if discredited.contains(&crate::run::model::input::SERIES) {
        story.series = None;
    }
    std::borrow::Cow::Owned(story)
}

/// How many requests fit when they start and at full length, counted once
/// ([`advice::capacity`]) on the run as its story reads it ([`story_run`]): the count the
/// account, the advice, "What limited this run", the report and the library all give.
pub fn capacity(run: &Admitted, results: &[CheckResult]) -> Option<Capacity> {
    advice::capacity(&story_run(run, results), results)
}

/// The account of a checked run: its admitted inputs and the checks' results.
pub fn of(run: &Admitted, results: &[CheckResult]) -> Account {
    let run = &*story_run(run, results);
    let boot = run.last_boot();
    let bench = run.bench.as_ref().map(|(_, b)| b);
    let summary = match (&run.before, &run.after) {
        (Some(b), Some(a)) => counter_summary(run.engine, b, a),
        _ => None,
    };
    let block = advice::block_size(run).map(|(b, from)| Figure {
        value: b as f64,
        from: match from {
            advice::BlockFrom::BootLog => Source::BootLog,
            advice::BlockFrom::Readings => Source::Readings,
            advice::BlockFrom::EngineDefault => Source::EngineDefault,
        },
    });
    let setup = Setup {
        kv_pool_tokens: figure(
            boot.and_then(|b| b.kv_pool_tokens).map(|p| p as f64),
            Source::BootLog,
        ),
        block_tokens: block,
        usable_blocks: figure(
            evidence(results, Tripwire::T9, "usable_blocks"),
            Source::Recording,
        ),
        kv_cache_gib: figure(
            boot.and_then(|b| advice::cache_gib(run.engine, b)),
            Source::BootLog,
        ),
        card_total_gib: figure(boot.and_then(|b| b.device_total_gib), Source::BootLog),
        kv_headroom: boot.and_then(|b| advice::headroom(run.engine, b)),
        running_cap: figure(
            boot.and_then(|b| b.running_cap).map(|c| c as f64),
            Source::BootLog,
        ),
        reported_blocks: figure(
            evidence(results, Tripwire::T14, "reported_num_gpu_blocks"),
            Source::Readings,
        ),
        inferred_blocks: figure(
            evidence(results, Tripwire::T14, "inferred_usable_blocks"),
            Source::Recording,
        ),
        trusted_blocks: figure(trusted_blocks(results).map(|b| b as f64), Source::Recording),
    };
    let requested_from = if bench.and_then(|b| b.max_concurrency).map(|c| c as f64)
        == run.requested.map(|r| r as f64)
    {
        Source::ResultFile
    } else {
        Source::CommandLine
    };
    // Counters that hold another client's requests too are not the load's: its own
    // counts are (crate::judging::other_traffic).
    let other_traffic = crate::judging::other_traffic::of(run, results);
    let load_counters = summary.as_ref().filter(|_| other_traffic.is_none());
    let per_request = |server: Option<f64>, client: Option<i64>| {
        let from_server =
            load_counters.and_then(|s| Some(server? / s.finished.filter(|f| *f > 0.0)?));
        match from_server {
            Some(v) => figure(Some(v), Source::Readings),
            None => {
                let b = bench?;
                let done = b.completed.filter(|c| *c > 0)? as f64;
                figure(Some(client? as f64 / done), Source::ResultFile)
            }
        }
    };
    let load = Load {
        requested: figure(run.requested.map(|r| r as f64), requested_from),
        finished: figure(load_counters.and_then(|s| s.finished), Source::Readings).or_else(|| {
            figure(
                bench.and_then(|b| b.completed).map(|c| c as f64),
                Source::ResultFile,
            )
        }),
        prompt_tokens: per_request(
            summary.as_ref().and_then(|s| s.prompt_tokens),
            bench.and_then(|b| b.total_input_tokens),
        ),
        output_tokens: per_request(
            summary.as_ref().and_then(|s| s.output_tokens),
            bench.and_then(|b| b.total_output_tokens),
        ),
    };
    // A gauge that moves only when a request completes cannot say how many ran at once.
    let recording = run.series.as_ref().filter(|_| !run.engine.gauges_lag);
    let t10_passed = results
        .iter()
        .any(|r| r.tripwire == Tripwire::T10 && r.status == Status::Pass);
    // The readings' figures are T10's, and only a T10 that passed vouches for them.
    let t10 = |key: &str| {
        figure(
            evidence(results, Tripwire::T10, key).filter(|_| t10_passed),
            Source::Readings,
        )
    };
    // A count the load tool's result file gives.
    let counted = |n: Option<i64>| figure(n.map(|c| c as f64), Source::ResultFile);
    let happened = Happened {
        peak_running: figure(
            evidence(results, Tripwire::T8, "peak_running"),
            Source::Recording,
        ),
        peak_waiting_capacity: figure(
            evidence(results, Tripwire::T8, "peak_waiting_capacity"),
            Source::Recording,
        ),
        peak_waiting_deferred: figure(
            evidence(results, Tripwire::T8, "peak_waiting_deferred"),
            Source::Recording,
        ),
        waiting_deferred_share: figure(
            evidence(results, Tripwire::T8, "waiting_deferred_share"),
            Source::Recording,
        ),
        busy_mean_running: figure(
            recording.and_then(|s| s.busy_mean_running()),
            Source::Recording,
        ),
        busy_seconds: figure(recording.and_then(|s| s.busy_seconds()), Source::Recording),
        preemptions: figure(
            results
                .iter()
                .find(|r| r.tripwire == Tripwire::T1)
                .and_then(|r| r.evidence.get("preemptions"))
                .and_then(Value::as_f64),
            Source::Readings,
        ),
        mean_queue_s: figure(
            summary.as_ref().and_then(|s| s.mean_queue_s),
            Source::Readings,
        ),
        generated_tokens: figure(
            summary.as_ref().and_then(|s| s.output_tokens),
            Source::Readings,
        ),
        median_ttft_ms: figure(bench.and_then(|b| b.median_ttft_ms), Source::ResultFile),
        p99_ttft_ms: figure(bench.and_then(|b| b.p99_ttft_ms), Source::ResultFile),
        client_output_throughput: figure(
            bench.and_then(|b| b.output_throughput).filter(|r| *r > 0.0),
            Source::ResultFile,
        ),
        client_duration_s: figure(
            bench.and_then(|b| b.duration).filter(|d| *d > 0.0),
            Source::ResultFile,
        ),
        client_completed: counted(bench.and_then(|b| b.completed)),
        client_sent: counted(bench.and_then(|b| b.sent)),
        client_failed: counted(bench.and_then(|b| b.failed)),
        client_incomplete: counted(bench.and_then(|b| b.incomplete)),
        client_prompt_tokens: counted(bench.and_then(|b| b.total_input_tokens)),
        client_output_tokens: counted(bench.and_then(|b| b.total_output_tokens)),
        mean_ttft_ms: figure(bench.and_then(|b| b.mean_ttft_ms), Source::ResultFile),
        mean_tpot_ms: figure(bench.and_then(|b| b.mean_tpot_ms), Source::ResultFile),
        server_token_rate: t10("rate_per_s"),
        readings_span_s: t10("span_s"),
        readings_span_uncertainty_s: t10("span_uncertainty_s"),
        whole_second_rate: t10("integer_second_rate_per_s"),
        whole_second_error: t10("integer_second_error"),
        cache_ceiling_min: figure(
            evidence(results, Tripwire::T9, "ceiling_min"),
            Source::Recording,
        ),
        cache_ceiling_max: figure(
            evidence(results, Tripwire::T9, "ceiling_max"),
            Source::Recording,
        ),
        blocks_per_request_min: figure(
            evidence(results, Tripwire::T9, "blocks_per_request_min"),
            Source::Recording,
        ),
    };
    Account {
        setup,
        load,
        happened,
        capacity: advice::capacity(run, results),
        set_aside: run.rejected.clone(),
        simulated: simulated(run),
        other_traffic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's `percentile(v, p)` (linear): for 32 TTFTs in two groups of 16, the median is
    /// half-way between the 16th and the 17th value, as `vllm bench serve` prints it; the
    /// nearest rank would give the 16th.
    #[test]
    fn percentiles_are_numpys_linear_ones() {
        let mut v: Vec<f64> = (0..16)
            .map(|_| 23.86)
            .chain((0..16).map(|_| 30.83))
            .collect();
        v.sort_by(f64::total_cmp);
        assert!((percentile(&v, 50.0).unwrap() - (23.86 + 30.83) / 2.0).abs() < 1e-12);
        // numpy.percentile([1, 2, 3, 4], 99) == 3.97
        assert!((percentile(&[1.0, 2.0, 3.0, 4.0], 99.0).unwrap() - 3.97).abs() < 1e-12);
        assert_eq!(percentile(&[], 50.0), None);
    }

    /// The run's throughput is the load tool's where it measured one, else T10's, and says
    /// which it is by its source.
    #[test]
    fn the_runs_throughput_is_the_load_tools_first() {
        let mut account = Account::default();
        assert_eq!(account.throughput(), None);
        account.happened.server_token_rate = Some(Figure {
            value: 276.03,
            from: Source::Readings,
        });
        assert_eq!(account.throughput().map(|f| f.from), Some(Source::Readings));
        account.happened.client_output_throughput = Some(Figure {
            value: 323.2,
            from: Source::ResultFile,
        });
        assert_eq!(
            account.throughput(),
            Some(Figure {
                value: 323.2,
                from: Source::ResultFile
            })
        );
    }
}
