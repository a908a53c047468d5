//! "What limited this run": plain sentences that say what held a run back, printed by
//! `report` after the verdict lines and shown first in the HTML report.
//!
//! The verdicts say what went wrong with the measurement; these sentences say what the
//! numbers mean for the load. They lead with the consequence of every failed tripwire,
//! in order of how much it changes the numbers: a server that failed (no number from the
//! run describes the engine), another server or other traffic (the numbers describe
//! another load), an attention backend other than the one asked for (another kernel),
//! the load against the cache (the concurrency measured, and work repeated by
//! preemption), a usage gauge whose meaning changed. Then come the ok findings and the
//! rest: whether the cache held the load, how long requests waited to start, which
//! throughput is the run's, and how many requests were busy on average.
//!
//! Counters compared across a restart mean nothing, so a run whose server restarted
//! between its two readings gets no sentences at all; a run that was not a benchmark gets
//! one sentence saying so.

use serde_json::Value;

use crate::story::advice::{block_size, preempted, Unit};

use crate::engine::EngineDescriptor;
use crate::judging::checks::series::cap_reason;
use crate::judging::identity::Admitted;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::ClientAccount;
use crate::model::BootFacts;
use crate::run::model::{not_a_benchmark, Run};
use crate::story::fmt;

pub use crate::judging::checks::counters::{counter_summary, CounterSummary};

/// A run kept its requests busy when this share of the load ran on average (the share
/// `sweep` calls following the load, so the two never disagree).
pub const BUSY_SHARE: f64 = 0.9;

/// Without a result file, a mean queue time from this many seconds up is worth a sentence.
const QUEUE_WORTH_SAYING_S: f64 = 1.0;

/// A median time to first token from this many milliseconds up is a long wait.
const LONG_WAIT_MS: f64 = 2000.0;

/// One sentence of "What limited this run". In JSON: `limit`, `key`, `title`, `text`.
/// More fields may come (it is `#[non_exhaustive]`): read it through its methods, make
/// one with [`Insight::new`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct Insight {
    /// True for a limit (something held the run back); false for an ok finding.
    pub limit: bool,
    /// `benchmark`, `server`, `traffic`, `backend`, `cache`, `concurrency`, `preemption`,
    /// `gauge`, `waiting`, `throughput`, `pace`, `client-wait` or `chunks`.
    pub key: &'static str,
    /// The finding in a few words: `The server ran fewer requests at once than the load sent.`
    pub title: String,
    /// What the run's numbers say of it, in sentences.
    pub text: String,
}

impl Insight {
    /// A finding: a limit (something held the run back) when `limit` is true, else an ok
    /// finding; `key` names what it is about (see [`Insight::key`]).
    pub fn new(
        limit: bool,
        key: &'static str,
        title: impl Into<String>,
        text: impl Into<String>,
    ) -> Insight {
        Insight {
            limit,
            key,
            title: title.into(),
            text: text.into(),
        }
    }

    /// Whether it is a limit (something held the run back) rather than an ok finding.
    pub fn is_limit(&self) -> bool {
        self.limit
    }

    /// What it is about: `benchmark`, `server`, `traffic`, `backend`, `cache`,
    /// `concurrency`, `preemption`, `gauge`, `waiting`, `throughput`, `pace`,
    /// `client-wait` or `chunks` (more may come).
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The finding in a few words.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// What the run's numbers say of it, in sentences.
    pub fn text(&self) -> &str {
        &self.text
    }

    fn limit(key: &'static str, title: impl Into<String>, text: impl Into<String>) -> Insight {
        Insight::new(true, key, title, text)
    }

    fn ok(key: &'static str, title: impl Into<String>, text: impl Into<String>) -> Insight {
        Insight::new(false, key, title, text)
    }
}

/// Requests that ended without finishing, aborted or in an error: the server's own
/// counters of them (the engine's table of failed-request counters), else the load tool's
/// failed count; `None` when neither says.
pub fn requests_in_error(run: &Run) -> Option<f64> {
    if let Some(Ok(outcomes)) = run.server_outcomes() {
        if outcomes.aborted.is_some() || outcomes.errored.is_some() {
            return Some(outcomes.aborted.unwrap_or(0.0) + outcomes.errored.unwrap_or(0.0));
        }
    }
    run.bench
        .as_ref()
        .and_then(|(_, b)| b.failed)
        .map(|f| f as f64)
}

/// The KV cache against the load: what the cache holds, how many requests the load kept
/// open, and what each needs to run to its end, whole blocks counted. Every figure is the
/// run's one capacity's ([`crate::story::account::Account::capacity`]): the insight on the cache,
/// the report's figure of it and the advice all read that one count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheLoad {
    /// Tokens the KV cache holds as the capacity counts it: its usable blocks times the
    /// block size, else the boot log's pool.
    pub pool: f64,
    /// The usable blocks, where the cache is counted in them.
    pub usable_blocks: Option<u64>,
    /// Requests the load kept open (the concurrency asked for, at most the requests
    /// finished).
    pub requests: u64,
    /// Prompt and output tokens per request.
    pub per_request: f64,
    /// Tokens each request holds at full length, rounded up to whole blocks.
    pub allocated: f64,
    /// The block size in tokens, where known.
    pub block: Option<u64>,
    /// Requests that fit at full length: the capacity's count.
    pub fit_full: u64,
}

impl CacheLoad {
    /// Tokens the whole load holds at full length.
    pub fn need(&self) -> f64 {
        self.requests as f64 * self.allocated
    }

    /// Requests that fit in the cache at full length.
    pub fn fit(&self) -> f64 {
        self.fit_full as f64
    }
}

/// The cache against the load, from the run's account, when its capacity counts the
/// cache in tokens from the requests' lengths (not for a hybrid model, whose pages hold
/// per-request state as well, nor where the sizes were measured).
pub fn cache_load(run: &Run, account: &crate::story::account::Account) -> Option<CacheLoad> {
    let summary = match (&run.before, &run.after) {
        (Some(b), Some(a)) => counter_summary(run.engine, b, a),
        _ => None,
    };
    cache_load_of(run, summary.as_ref(), account)
}

fn cache_load_of(
    run: &Run,
    summary: Option<&CounterSummary>,
    account: &crate::story::account::Account,
) -> Option<CacheLoad> {
    let c = account.capacity.as_ref()?;
    let (pool, per_request) = (c.cache_tokens?, c.request_tokens?);
    if pool <= 0.0 || per_request <= 0.0 {
        return None;
    }
    let bench = run.bench.as_ref().map(|(_, b)| b);
    let requests = open_requests(run.requested, summary, bench)?;
    let (usable_blocks, block) = match c.unit {
        Unit::Blocks {
            usable,
            block_tokens,
        } => (Some(usable), block_tokens),
        Unit::Tokens { .. } => (None, block_size(run).map(|(b, _)| b)),
    };
    let allocated = match c.unit {
        Unit::Blocks {
            block_tokens: Some(b),
            ..
        } => c.per_request_full * b as f64,
        _ => c.per_request_full,
    };
    Some(CacheLoad {
        pool,
        usable_blocks,
        requests,
        per_request,
        allocated,
        block,
        fit_full: c.fit_full,
    })
}

/// The requests the load kept open: the concurrency asked for, at most the requests
/// finished (the server's count, else the load tool's).
fn open_requests(
    requested: Option<u64>,
    summary: Option<&CounterSummary>,
    bench: Option<&ClientAccount>,
) -> Option<u64> {
    let finished = summary
        .and_then(|s| s.finished)
        .or_else(|| bench.and_then(|b| b.completed).map(|c| c as f64))
        .filter(|f| *f >= 1.0);
    match (requested, finished) {
        (Some(n), Some(f)) => Some(n.min(f.trunc() as u64)),
        (n, _) => n,
    }
    .filter(|n| *n > 0)
}

/// What limited the run: every failed tripwire's consequence first, most consequential
/// first, then whether the cache held the load, waiting, and throughput with pace. None
/// after a restart; one sentence for a run that was not a benchmark.
///
/// For a run its caller built itself, not yet through the gate: it is admitted here (a
/// copy); the one path makes the account once and calls [`what_limited_by`].
pub fn what_limited(run: &Run, results: &[CheckResult]) -> Vec<Insight> {
    let run = crate::judging::identity::admitted(run);
    what_limited_by(&run, results, &crate::story::account::of(&run, results))
}

/// [`what_limited`] from the run's account, already made ([`crate::story::account::of`] on the
/// same run and results): the figures it states are the account's.
pub fn what_limited_by(
    run: &Admitted,
    results: &[CheckResult],
    account: &crate::story::account::Account,
) -> Vec<Insight> {
    // What the gate set aside and what a cross-check discredited tell no part of it.
    let run = &*crate::story::account::story_run(run, results);
    let failed = |tripwire: Tripwire| {
        results
            .iter()
            .find(|r| r.tripwire == tripwire && r.status == Status::Fail)
    };
    let failures_left_out = failed(Tripwire::T18).map(|r| {
        let none_answered = r.evidence.get("completed").and_then(Value::as_i64) == Some(0);
        Insight::limit(
            "failures",
            "Requests failed, and the figures leave them out",
            if none_answered {
                format!(
                    "{}. Its figures measure nothing: fix the cause the errors name before running again.",
                    capitalised(&r.message)
                )
            } else {
                format!(
                    "{}. The load tool's throughput and latency describe only the requests that were answered, not the load it was asked to send.",
                    capitalised(&r.message)
                )
            },
        )
    });
    if let Some(reason) = not_a_benchmark(run) {
        let mut insights = vec![Insight::limit(
            "benchmark",
            "This run was not a benchmark",
            format!(
                "{}, so no number from it describes a load. Make the load send its requests, then run it again.",
                capitalised(&reason)
            ),
        )];
        insights.extend(failures_left_out);
        return insights;
    }
    let summary = match (&run.before, &run.after) {
        (Some(before), Some(after)) => match counter_summary(run.engine, before, after) {
            Some(summary) => Some(summary),
            None => return Vec::new(),
        },
        _ => None,
    };
    let load = Load::new(run, results, summary, account);
    let mut insights = Vec::new();
    insights.extend(server_failed(results));
    insights.extend(failures_left_out);
    insights.extend(failed(Tripwire::T13).map(|r| {
        Insight::limit(
            "server",
            "Another server answered",
            format!(
                "{}. Every number from this run may belong to that server, not to the one the setup describes.",
                capitalised(&r.message)
            ),
        )
    }));
    // One request more than the load sent (a stray test or health request) mixes
    // nothing worth leading the story with; the verdict still says it.
    let one_request = |r: &&CheckResult| {
        let number = |key: &str| r.evidence.get(key).and_then(|v| v.as_f64());
        matches!(
            (number("extra_requests"), number("expected_extra_requests")),
            (Some(extra), Some(expected)) if (extra - expected).abs() <= 1.0
        )
    };
    insights.extend(failed(Tripwire::T15).filter(|r| !one_request(r)).map(|r| {
        Insight::limit(
            "traffic",
            "The load tool and the server counted different runs",
            format!(
                "{}. The load tool's latencies and the server's counters then describe a mixed load, not this one.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T20).map(|r| {
        Insight::limit(
            "lengths",
            "The requests were not the lengths the run names",
            format!(
                "{}. Its throughput and latency are those of the lengths the server processed.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T6).map(|r| {
        Insight::limit(
            "backend",
            "The run used another attention backend than the one asked for",
            format!(
                "{}. Its numbers measure that backend's kernels, not the ones its label names.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T19).map(|r| {
        if cold_first_wave(r) {
            Insight::limit(
                "cold",
                "The engine was still warming up",
                format!(
                    "{}. The first requests' times include that work, so the run's latency and throughput describe start-up as much as serving.",
                    capitalised(&r.message)
                ),
            )
        } else {
            // A compile inside the run with no slow first wave measured: a latency spike
            // for the requests in flight at its moment, not the run's start-up.
            Insight::limit(
                "cold",
                "The engine compiled during the run",
                format!(
                    "{}. Each compile is a latency spike for the requests in flight at that moment; the rest of the run is served warm.",
                    capitalised(&r.message)
                ),
            )
        }
    }));
    insights.extend(failed(Tripwire::T23).map(|r| {
        Insight::limit(
            "client-wait",
            "Requests waited in the load tool before they were sent",
            format!(
                "{}. The tool's TTFT and latency leave that wait out: they describe the requests it managed to send, not the pace it was asked for.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T24).map(|r| {
        Insight::limit(
            "ttft-definitions",
            "The load tool's TTFT and the server's are not one figure",
            format!(
                "{}. A TTFT from this run compares only with one measured from the same start.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T26).map(|r| {
        Insight::limit(
            "kv-events",
            "The server's KV events were lost or never sent",
            format!(
                "{}. What the run's KV timeline shows of its cache is incomplete.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T28).map(|r| {
        Insight::limit(
            "disaggregation",
            "The run was declared disaggregated but did not disaggregate",
            format!(
                "{}. Its prefill ran where it decoded: the run measured ordinary serving, not disaggregated serving.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(failed(Tripwire::T29).map(|r| {
        Insight::limit(
            "scheduler-stall",
            "The scheduler stalled while requests waited",
            format!(
                "{}. The load tool counted that stall as the server's latency.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(
        results
            .iter()
            .find(|r| r.tripwire == Tripwire::T30 && r.status == Status::Warn)
            .map(|r| {
                Insight::limit(
                    "prefill-beside-decode",
                    "Prefills scheduled beside decodes made the inter-token tail",
                    format!(
                        "{}. The run's inter-token latency tail measures its prompts' prefills, not its decodes.",
                        capitalised(&r.message)
                    ),
                )
            }),
    );
    insights.extend(failed(Tripwire::T25).map(|r| {
        Insight::limit(
            "chunks",
            "The load tool counted streamed chunks as tokens",
            format!("{}.", capitalised(&r.message)),
        )
    }));
    insights.extend(
        results
            .iter()
            .find(|r| r.tripwire == Tripwire::T27 && r.status == Status::Warn)
            .map(|r| {
                Insight::limit(
                    "speculation",
                    "Speculative decoding was measured on content it was not meant for",
                    format!(
                        "{}. The run's throughput and latency hold for this acceptance only.",
                        capitalised(&r.message)
                    ),
                )
            }),
    );
    insights.extend(failed(Tripwire::T21).map(|r| {
        Insight::limit(
            "gpu",
            "The GPU was shared or held back",
            format!(
                "{}. The run measured the machine's other load or its power and cooling, not the engine alone.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(
        results
            .iter()
            .find(|r| r.tripwire == Tripwire::T16 && r.status == Status::Warn)
            .map(|r| {
                Insight::limit(
                    "prefix",
                    "The prefix cache served the prompts",
                    format!(
                        "{}. Prefill throughput and time to first token are those of cached prompts.",
                        capitalised(&r.message)
                    ),
                )
            }),
    );
    // A client that kept fewer open than asked explains a low concurrency better than
    // the server's limits do: the server had room.
    let client_short = failed(Tripwire::T17).map(|r| {
        Insight::limit(
            "client",
            "The load tool, not the server, kept fewer requests open",
            format!(
                "{}. This run measured the concurrency the client held, not the one it was asked for.",
                capitalised(&r.message)
            ),
        )
    });
    let cache = load.cache();
    let (cache_limit, cache_ok) = match cache {
        Some(c) if c.limit => (Some(c), None),
        other => (None, other),
    };
    // The cache and concurrency sentences name the preemptions too; without either, the
    // preemptions get a sentence of their own.
    match cache_limit.or(client_short).or_else(|| load.concurrency()) {
        Some(limit) => insights.push(limit),
        None => insights.extend(load.preemption()),
    }
    insights.extend(failed(Tripwire::T14).map(|r| {
        Insight::limit(
            "gauge",
            "The KV usage gauge does not mean what it should",
            format!(
                "{}. The charts and the ceiling (T9) read that gauge, so take them as approximate.",
                capitalised(&r.message)
            ),
        )
    }));
    insights.extend(cache_ok);
    insights.extend(load.waiting());
    match load.pace(results) {
        Some(pace) => insights.push(pace),
        None => insights.extend(
            load.throughput(results)
                .map(|text| Insight::ok("throughput", "Which throughput is the run's", text)),
        ),
    }
    rank_by_effect(&mut insights, results);
    insights
}

/// Whether T19 measured a slow first wave (the first requests slower than their own
/// prefill explains), rather than only compile lines inside the run.
fn cold_first_wave(t19: &CheckResult) -> bool {
    let number = |key: &str| t19.evidence.get(key).and_then(Value::as_f64);
    match (number("first_wave_ttft_s"), number("rest_ttft_s")) {
        (Some(first), Some(rest)) => {
            first > rest && number("compiles_in_run").unwrap_or(0.0) == 0.0
                || first > 2.0 * rest.max(f64::MIN_POSITIVE)
        }
        _ => number("compiles_in_run").unwrap_or(0.0) == 0.0,
    }
}

/// How much of the published numbers a limit changed, from 0 to 1, measured from the
/// run where it can be: a run that was no benchmark, a failed server or another server's
/// numbers change all of them; the requests left out and the requests a cold start
/// slowed change their share; a server that ran fewer than the load sent shapes every
/// request; a compile inside the run is a spike for the requests in flight at its
/// moment, below the waits and the pace that every timed request shows.
fn effect(insight: &Insight, results: &[CheckResult]) -> f64 {
    let evidence = |tripwire: Tripwire, key: &str| {
        results
            .iter()
            .find(|r| r.tripwire == tripwire)
            .and_then(|r| r.evidence.get(key))
            .and_then(Value::as_f64)
    };
    match insight.key {
        "benchmark" | "server" | "traffic" => 1.0,
        "failures" => match (
            evidence(Tripwire::T18, "failed"),
            evidence(Tripwire::T18, "sent"),
        ) {
            (Some(failed), Some(sent)) if sent > 0.0 => (failed / sent).clamp(0.0, 1.0),
            _ => 0.9,
        },
        // The server's shortfall shapes every request of the run.
        "cache" | "concurrency" | "client" | "preemption" => 0.8,
        "lengths" | "backend" | "prefix" | "gpu" => 0.6,
        "gauge" => 0.3,
        // Long waits and a low pace are every timed request's: below the server's
        // shortfall that caused them, above what touched a few requests.
        "waiting" => 0.5,
        "pace" => 0.4,
        "throughput" => 0.1,
        "cold" => {
            let t19 = results.iter().find(|r| r.tripwire == Tripwire::T19);
            match t19 {
                Some(r) if cold_first_wave(r) => {
                    match (
                        evidence(Tripwire::T19, "first_wave"),
                        evidence(Tripwire::T15, "completed")
                            .or_else(|| evidence(Tripwire::T18, "completed")),
                    ) {
                        (Some(wave), Some(all)) if all > 0.0 => (wave / all).clamp(0.0, 1.0),
                        _ => 0.3,
                    }
                }
                _ => 0.05,
            }
        }
        _ => 0.5,
    }
}

/// Limits first, the most consequential first (a stable sort: equal effects keep the
/// order they were found in), then the findings that held.
fn rank_by_effect(insights: &mut [Insight], results: &[CheckResult]) {
    insights.sort_by(|a, b| {
        b.limit.cmp(&a.limit).then_with(|| {
            if a.limit && b.limit {
                effect(b, results).total_cmp(&effect(a, results))
            } else {
                std::cmp::Ordering::Equal
            }
        })
    });
}

/// How many sentences "What limited this run" leads with, in the terminal and at the
/// top of the report, as the tutorial shows it: the rest are in the report's account.
pub const LEADING_SENTENCES: usize = 3;

/// The server failed (T12 before it was ready, T7 after): no number describes it.
fn server_failed(results: &[CheckResult]) -> Option<Insight> {
    let r = results.iter().find(|r| {
        r.status == Status::Fail && (r.tripwire == Tripwire::T12 || r.tripwire == Tripwire::T7)
    })?;
    let when = if r.tripwire == Tripwire::T7 {
        "after it was ready"
    } else {
        "before it was ready"
    };
    Some(Insight::limit(
        "server",
        format!("The server failed {when}"),
        format!(
            "{}: {}. Requests sent to it failed or never ran, so no number from this run describes the engine: fix the cause and run again.",
            r.tripwire,
            r.message.trim_end_matches('.')
        ),
    ))
}

/// The text with its first letter in upper case and no closing full stop, for a message
/// that starts a sentence the caller ends.
fn capitalised(text: &str) -> String {
    let text = text.trim_end_matches('.');
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The run's output throughput as the terminal's headline, the report's card and the
/// library state it, read from the account ([`crate::story::account::Account::throughput`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The figure as printed (`323`, `1,412`, `20.1`).
    pub value: String,
    /// What it is: whose count, over what (`the load tool's, over its 32 timed requests
    /// in 99.0 s`).
    pub what: String,
    /// Whether it is the load tool's own figure (else the server's count over the
    /// readings' window, for want of one).
    pub load_tools: bool,
    /// The server's count over the readings' window, beside the load tool's figure:
    /// `(rate, window seconds)`; `None` when it is the headline itself or unknown.
    pub servers_window: Option<(f64, f64)>,
}

/// The run's throughput: the load tool's timed figure where it measured one, else the
/// server's count over the readings' window, said as such.
pub fn throughput_headline(account: &crate::story::account::Account) -> Option<Headline> {
    use crate::story::account::Source;
    let h = &account.happened;
    let figure = account.throughput()?;
    let window = h.readings_span_s.map(|f| f.value);
    if figure.from == Source::ResultFile {
        let mut what = "the load tool's".to_owned();
        match (h.client_completed, h.client_duration_s) {
            (Some(n), Some(d)) => what.push_str(&format!(
                ", over its {} timed request{} in {:.1} s",
                fmt::g(n.value),
                fmt::plural(n.value),
                d.value
            )),
            (Some(n), None) => what.push_str(&format!(
                ", over its {} timed request{}",
                fmt::g(n.value),
                fmt::plural(n.value)
            )),
            (None, Some(d)) => what.push_str(&format!(", over its {:.1} s", d.value)),
            (None, None) => {}
        }
        return Some(Headline {
            value: fmt::rate(figure.value),
            what,
            load_tools: true,
            servers_window: h.server_token_rate.map(|r| r.value).zip(window),
        });
    }
    let mut what = crate::judging::checks::snapshots::SERVERS_WINDOW.to_owned();
    if let Some(w) = window {
        what.push_str(&format!(" ({w:.1} s)"));
    }
    what.push_str(", not the run's own: no load tool's result file timed this run");
    Some(Headline {
        value: format!("{:.2}", figure.value),
        what,
        load_tools: false,
        servers_window: None,
    })
}

/// The terminal's throughput line, printed before "What limited this run"; empty without
/// a throughput.
pub fn terminal_throughput(account: &crate::story::account::Account) -> String {
    let Some(h) = throughput_headline(account) else {
        return String::new();
    };
    let mut line = format!("Output tokens per second: {}, {}", h.value, h.what);
    if let Some((rate, window)) = h.servers_window {
        line.push_str(&format!(
            " (T10's {rate:.2} is {}, {window:.1} s)",
            crate::judging::checks::snapshots::SERVERS_WINDOW
        ));
    }
    line.push_str(".\n");
    line
}

/// The terminal block `report` prints after the verdict lines; empty without insights.
pub fn terminal_lines(insights: &[Insight]) -> String {
    if insights.is_empty() {
        return String::new();
    }
    let mut out = String::from("What limited this run:\n");
    for insight in insights.iter().take(LEADING_SENTENCES) {
        out.push_str(&format!("  - {}. {}\n", insight.title, insight.text));
    }
    out
}

/// A duration as the sentences print it: `641 ms` below a second, else `22.1 s`.
pub fn format_duration_ms(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

/// Every number the sentences use, gathered once from the run and its results.
struct Load<'a> {
    engine: &'static EngineDescriptor,
    boot: Option<&'a BootFacts>,
    bench: Option<&'a ClientAccount>,
    summary: Option<CounterSummary>,
    busy_mean_running: Option<f64>,
    busy_seconds: Option<f64>,
    /// The concurrency the load asked for.
    requested: Option<u64>,
    /// The requests the load kept open: the requested concurrency, or fewer when the run
    /// finished fewer requests than that.
    open: Option<u64>,
    /// The cache against the load.
    cache: Option<CacheLoad>,
    /// T8 failed: the server ran fewer at once than requested.
    concurrency_failed: bool,
    /// T17 failed: the client, not the server, kept fewer open than requested.
    client_short: bool,
    peak_running: Option<f64>,
    /// Where the engine splits its waiting gauge by reason: the most waiting for room and
    /// the most deferred at once, and the deferred share of the waiting.
    waiting_split: Option<(f64, f64, f64)>,
    /// Preemptions (retractions, pauses) from T1.
    preempted: Option<f64>,
}

impl<'a> Load<'a> {
    fn new(
        run: &'a Run,
        results: &[CheckResult],
        summary: Option<CounterSummary>,
        account: &crate::story::account::Account,
    ) -> Load<'a> {
        let find = |tripwire: Tripwire| results.iter().find(|r| r.tripwire == tripwire);
        let t8 = find(Tripwire::T8);
        let bench = run.bench.as_ref().map(|(_, b)| b);
        let open = open_requests(run.requested, summary.as_ref(), bench);
        // Every figure below is the run's one account's: the same numbers the advice and
        // the report give.
        let cache = cache_load_of(run, summary.as_ref(), account);
        let value = |f: Option<crate::story::account::Figure>| f.map(|f| f.value);
        Load {
            engine: run.engine,
            boot: run.last_boot(),
            bench,
            summary,
            busy_mean_running: value(account.happened.busy_mean_running),
            busy_seconds: value(account.happened.busy_seconds),
            requested: run.requested,
            open,
            cache,
            concurrency_failed: t8.is_some_and(|r| r.status == Status::Fail),
            client_short: find(Tripwire::T17).is_some_and(|r| r.status == Status::Fail),
            peak_running: value(account.happened.peak_running),
            waiting_split: (|| {
                let h = &account.happened;
                Some((
                    value(h.peak_waiting_capacity)?,
                    value(h.peak_waiting_deferred)?,
                    value(h.waiting_deferred_share)?,
                ))
            })(),
            // T1's sentence: the account's count, said only where T1 failed on it (a
            // count T1 could not stand behind is no sentence here).
            preempted: value(account.happened.preemptions)
                .filter(|k| *k > 0.0)
                .filter(|_| find(Tripwire::T1).is_none_or(|r| r.status == Status::Fail)),
        }
    }

    /// Whether the cache could hold every request of the load at full length.
    fn cache(&self) -> Option<Insight> {
        let c = self.cache?;
        let (pool, n, per_request, need) = (c.pool, c.requests, c.per_request, c.need());
        let about = if per_request.fract() == 0.0 {
            ""
        } else {
            "about "
        };
        let blocks = match (c.usable_blocks, c.block) {
            (Some(usable), Some(b)) => format!(
                " in {usable} usable block{} of {}",
                fmt::plural(usable as f64),
                fmt::thousands(b as i64)
            ),
            _ => String::new(),
        };
        let holds = format!(
            "The cache holds {} tokens{blocks}; {n} requests of {about}{} tokens need {}",
            fmt::thousands_f(pool),
            fmt::thousands_f(per_request),
            fmt::thousands_f(need)
        );
        if need > pool {
            let mut text = format!(
                "{holds} to run to the end together, so {} fit at full length.",
                fmt::g(c.fit())
            );
            text.push_str(&self.made_room());
            return Some(Insight::limit(
                "cache",
                "The KV cache was too small for the load",
                text,
            ));
        }
        let share = fmt::percent(need / pool, 0);
        // With T17 failed the client held requests back, which its own sentence says.
        if self.concurrency_failed && !self.client_short {
            if let Some(held_back) = self.concurrency_text() {
                return Some(Insight::limit(
                    "cache",
                    "The cache had room; something else held requests back",
                    format!("{holds}, {share} of it. {held_back}"),
                ));
            }
        }
        Some(Insight::ok(
            "cache",
            "The KV cache held the whole load",
            format!("{holds}, {share} of it."),
        ))
    }

    /// ` To make room, it ran at most 29 at once and queued the rest[, and preempted 22
    /// running requests].`, or nothing when the server did neither.
    fn made_room(&self) -> String {
        let peak = self.peak_running.filter(|_| self.concurrency_failed);
        let preempted = self.preempted.map(|k| self.preempted_requests(k));
        match (peak, preempted) {
            (Some(peak), Some(preempted)) => format!(
                " To make room, it ran at most {} at once and queued the rest, and {preempted}.",
                fmt::g(peak)
            ),
            (Some(peak), None) => format!(
                " To make room, it ran at most {} at once and queued the rest.",
                fmt::g(peak)
            ),
            (None, Some(preempted)) => format!(" To make room, it {preempted}."),
            (None, None) => String::new(),
        }
    }

    /// `preempted 22 running requests`, in the engine's word.
    fn preempted_requests(&self, count: f64) -> String {
        format!(
            "{} {} running request{}",
            preempted(self.engine),
            fmt::g(count),
            fmt::plural(count)
        )
    }

    /// T1 failed and no cache or concurrency sentence said so: what the evictions did.
    fn preemption(&self) -> Option<Insight> {
        let k = self.preempted?;
        Some(Insight::limit(
            "preemption",
            format!("The server {}", self.preempted_requests(k)),
            "Each was evicted from the KV cache and later recomputed from its prompt, so throughput, time per output token and tail latency include repeated work: the run shows its memory pressure, not the engine's steady speed.",
        ))
    }

    /// The server ran fewer at once than the load sent (T8 failed).
    fn concurrency(&self) -> Option<Insight> {
        if !self.concurrency_failed {
            return None;
        }
        Some(Insight::limit(
            "concurrency",
            "The server ran fewer requests at once than the load sent",
            self.concurrency_text()?,
        ))
    }

    fn concurrency_text(&self) -> Option<String> {
        let requested = self.requested?;
        let peak = self.peak_running?;
        let mut text = format!(
            "The load kept {requested} requests open, but the server ran at most {} at once",
            fmt::g(peak)
        );
        if let Some(reason) = self.boot.and_then(|b| {
            let reason = cap_reason(self.engine, b, requested, peak)?;
            // A limit the engine did not lower itself is the peak already said: name it
            // once, by its setting.
            Some(match (b.running_cap, b.running_cap_reason.as_ref()) {
                (Some(cap), None) => {
                    format!("its running limit ({} {cap})", self.engine.running_cap_flag)
                }
                _ => reason,
            })
        }) {
            text.push_str(": ");
            text.push_str(&reason);
        }
        text.push('.');
        if let Some(waited) = self.waiting_reason() {
            text.push(' ');
            text.push_str(&waited);
        }
        if let Some(k) = self.preempted {
            text.push_str(&format!(" It also {}.", self.preempted_requests(k)));
        }
        Some(text)
    }

    /// `Most of the waiting (80%) was deferred ...`: why requests waited at the server,
    /// where the engine's waiting split says.
    fn waiting_reason(&self) -> Option<String> {
        let (capacity, deferred, share) = self.waiting_split?;
        Some(if share > 0.5 {
            format!(
                "{} of the waiting at the server was deferred (at most {} at once): a KV transfer, a grammar still compiling or another transient block held those requests, not the running limit.",
                if share == 1.0 { "All".to_owned() } else { format!("Most ({})", fmt::percent(share, 0)) },
                fmt::g(deferred)
            )
        } else if share < 0.5 {
            format!(
                "{} of the waiting at the server was for room in the batch or the KV cache (at most {} at once), not deferred.",
                if share == 0.0 { "All".to_owned() } else { format!("Most ({})", fmt::percent(1.0 - share, 0)) },
                fmt::g(capacity)
            )
        } else {
            format!(
                "Half the waiting at the server was deferred (a KV transfer, a grammar still compiling or another transient block, at most {} at once) and half for room (at most {} at once).",
                fmt::g(deferred),
                fmt::g(capacity)
            )
        })
    }

    /// How long requests waited for their first token: from the load tool's median and
    /// p99 when its result file has them, else from the server's mean queue time.
    fn waiting(&self) -> Option<Insight> {
        if let Some(waves) = self.waves() {
            return Some(waves);
        }
        let from_client = self
            .bench
            .and_then(|b| Some((b.median_ttft_ms?, b.p99_ttft_ms?)));
        let Some((median, p99)) = from_client else {
            let queue = self.summary.as_ref()?.mean_queue_s?;
            return (queue >= QUEUE_WORTH_SAYING_S).then(|| {
                Insight::limit(
                    "waiting",
                    "Requests waited in the queue",
                    format!(
                        "A request waited {queue:.1} s on average before the server started it."
                    ),
                )
            });
        };
        let (median_text, p99_text) = (format_duration_ms(median), format_duration_ms(p99));
        let queued = self.queue_was_most_of_the_wait();
        if p99 > (3.0 * median).max(median + 1000.0) {
            let cause = if queued {
                ": they were queued until running requests ended"
            } else {
                ""
            };
            return Some(Insight::limit(
                "waiting",
                "Some requests waited much longer to start",
                format!(
                    "Half the requests got their first token within {median_text}, but the slowest (p99) waited {p99_text}{cause}."
                ),
            ));
        }
        if median >= LONG_WAIT_MS {
            let cause = if queued {
                ", most of it in the queue"
            } else {
                ""
            };
            return Some(Insight::limit(
                "waiting",
                "Requests waited long to start",
                format!(
                    "Half the requests waited more than {median_text} for their first token, the slowest (p99) {p99_text}{cause}."
                ),
            ));
        }
        Some(Insight::ok(
            "waiting",
            "No request waited long to start",
            format!(
                "Half the requests got their first token within {median_text}, and the slowest (p99) within {p99_text}."
            ),
        ))
    }

    /// The requests in the order they were sent, in waves of the concurrency asked for:
    /// when the first wave waited far longer for its first token than the rest (a server
    /// not warmed up), or the later ones far longer than the first (a queue), one sentence
    /// says so with each side's median.
    fn waves(&self) -> Option<Insight> {
        let account = self.bench?;
        let wave = usize::try_from(self.requested?).ok().filter(|n| *n > 0)?;
        let waits = crate::judging::checks::cold_start::first_token_waits(account);
        let w = crate::judging::checks::cold_start::waves_of(&waits, wave)?;
        let (k, m) = (w.first_size, waits.len() - w.first_size);
        let (a, b) = (w.first_ttft_s, w.rest_ttft_s);
        let (a_text, b_text) = (
            format_duration_ms(a * 1000.0),
            format_duration_ms(b * 1000.0),
        );
        let far = |long: f64, short: f64| long >= (3.0 * short).max(short + 1.0);
        if far(a, b) {
            // T19's rule: slower than their own prefill explains is a cold engine.
            let cause = if w.cold() {
                "the server was not warmed up when the load began, so the run's latency includes its start"
            } else {
                "sent together, they waited for each other's prefill"
            };
            return Some(Insight::limit(
                "waiting",
                "The first requests waited longest",
                format!(
                    "The first {k} requests waited {a_text} for their first token (median), the {m} sent after them {b_text}: {cause}."
                ),
            ));
        }
        if far(b, a) {
            return Some(Insight::limit(
                "waiting",
                "Later requests waited in the queue",
                format!(
                    "The first {k} requests got their first token within {a_text} (median); the {m} sent after them waited {b_text}: they queued until running requests ended."
                ),
            ));
        }
        None
    }

    /// The server's counters show that most of the time to first token was spent
    /// waiting in the queue, not in prefill.
    fn queue_was_most_of_the_wait(&self) -> bool {
        self.summary
            .as_ref()
            .is_some_and(|s| match (s.mean_queue_s, s.mean_ttft_s) {
                (Some(queue), Some(ttft)) => ttft > 0.0 && queue >= 0.5 * ttft,
                _ => false,
            })
    }

    /// How many of the open requests were busy on average: from the recording where it
    /// can say, else from the load tool's throughput and time per output token. Where
    /// the load tool measured a throughput, the sentence says which number is the run's.
    fn pace(&self, results: &[CheckResult]) -> Option<Insight> {
        let n = self.open?;
        match self.busy_mean_running {
            Some(average) => Some(self.pace_from_recording(n, average, results)),
            None => self.pace_from_client(n, results),
        }
    }

    /// Which throughput to publish: the load tool's, over its own timed requests; and
    /// why T10's differs (the span between the readings holds time and requests the
    /// load tool did not time).
    fn throughput(&self, results: &[CheckResult]) -> Option<String> {
        let bench = self.bench?;
        let rate = bench
            .output_throughput
            .filter(|r| r.is_finite() && *r > 0.0)?;
        let mut text = format!(
            "The run's throughput is the load tool's {} output tokens/s",
            fmt::rate(rate)
        );
        match (bench.completed, bench.duration) {
            (Some(done), Some(seconds)) if seconds > 0.0 => text.push_str(&format!(
                ", over its {done} timed request{} in {seconds:.1} s",
                fmt::plural(done as f64)
            )),
            (Some(done), _) => text.push_str(&format!(
                ", over its {done} timed request{}",
                fmt::plural(done as f64)
            )),
            _ => {}
        }
        text.push('.');
        let t10 = results
            .iter()
            .find(|r| r.tripwire == Tripwire::T10 && r.status == Status::Pass);
        let number = |key: &str| {
            t10.and_then(|r| r.evidence.get(key))
                .and_then(Value::as_f64)
        };
        let (Some(server_rate), Some(span)) = (number("rate_per_s"), number("span_s")) else {
            return Some(text);
        };
        text.push_str(&format!(
            " T10's {server_rate:.2} tokens/s is the server's count over the {span:.1} s between the two readings"
        ));
        let mut reasons = Vec::new();
        if let Some(seconds) = bench.duration.filter(|d| span - d >= 0.05) {
            reasons.push(format!(
                "{:.1} s the load tool did not time (its start, warm-up and wind-down)",
                span - seconds
            ));
        }
        let extra_tokens = match (number("tokens"), bench.total_output_tokens) {
            (Some(server), Some(client)) => server - client as f64,
            _ => 0.0,
        };
        if extra_tokens >= 1.0 {
            let extra_requests = results
                .iter()
                .find(|r| r.tripwire == Tripwire::T15)
                .and_then(|r| r.evidence.get("extra_requests"))
                .and_then(Value::as_f64)
                .filter(|n| *n >= 1.0);
            reasons.push(match extra_requests {
                Some(k) => format!(
                    "{} output tokens of {} untimed request{} (test or warm-up)",
                    fmt::thousands_f(extra_tokens),
                    fmt::g(k),
                    fmt::plural(k)
                ),
                None => format!(
                    "{} output tokens the load tool did not count",
                    fmt::thousands_f(extra_tokens)
                ),
            });
        }
        if reasons.is_empty() {
            text.push_str(", not over the load tool's own timing.");
        } else {
            text.push_str(&format!(", which also hold {}.", reasons.join(" and ")));
        }
        Some(text)
    }

    fn pace_from_recording(&self, n: u64, average: f64, results: &[CheckResult]) -> Insight {
        let client_rate = self.throughput(results);
        let server_rate = match (
            self.summary.as_ref().and_then(|s| s.output_tokens),
            self.busy_seconds,
        ) {
            (Some(tokens), Some(seconds)) if seconds > 0.0 => Some(tokens / seconds),
            _ => None,
        };
        // A load that fell short (T17) was asked for n; it did not keep them open.
        let kept = if self.client_short {
            format!("The load was asked to keep {n} requests open")
        } else {
            format!("The load kept {n} requests open")
        };
        let text = match (client_rate, server_rate) {
            (Some(throughput), _) => format!(
                "{kept}; the server's recording shows {average:.1} running on average while it was busy. {throughput}"
            ),
            (None, Some(rate)) => format!(
                "{kept}; while the server was busy, its recording shows {average:.1} running on average and {} output tokens/s.",
                fmt::thousands_f(rate)
            ),
            (None, None) => format!(
                "{kept}; the server's recording shows {average:.1} running on average while it was busy."
            ),
        };
        pace_insight(n, average, "ran at once", text)
    }

    /// Without a usable recording: requests part-way through their output, on average,
    /// are the output rate times the time each output token took (Little's law).
    fn pace_from_client(&self, n: u64, results: &[CheckResult]) -> Option<Insight> {
        let rate = self.bench?.output_throughput?;
        let tpot_ms = self
            .bench
            .and_then(|b| b.mean_tpot_ms)
            .or_else(|| self.server_tpot_ms())
            .filter(|t| *t > 0.0)?;
        let tpot_s = tpot_ms / 1000.0;
        let average = (rate * tpot_s).min(n as f64);
        let rate_text = fmt::rate(rate);
        let mut text = self.throughput(results).unwrap_or_else(|| {
            format!("The load tool measured {rate_text} output tokens/s over the whole run.")
        });
        text.push_str(&format!(
            " From its first token to its last, a request took {tpot_ms:.1} ms per token (TPOT), so on average {average:.1} of the {n} requests the load kept open were in that stretch ({rate_text} x {tpot_s:.4} s), including any paused mid-output."
        ));
        if self.engine.gauges_lag {
            text.push_str(&format!(
                " {} updates its running gauge only when a request completes, so the recording does not give the number running.",
                self.engine.name
            ));
        }
        Some(pace_insight(
            n,
            average,
            "were part-way through their output",
            text,
        ))
    }

    /// The time per output token from the server's means: the time after the first
    /// token, spread over the tokens after the first.
    fn server_tpot_ms(&self) -> Option<f64> {
        let s = self.summary.as_ref()?;
        let after_first = s.output_per_request()? - 1.0;
        let generating_s = s.mean_e2e_s? - s.mean_ttft_s?;
        (after_first > 0.0).then(|| generating_s / after_first * 1000.0)
    }
}

/// The pace sentence's tone: ok when nearly all of the load was busy, else a limit
/// titled with the average.
fn pace_insight(n: u64, average: f64, doing: &str, text: String) -> Insight {
    if average >= BUSY_SHARE * n as f64 {
        Insight::ok("pace", "The run kept its requests busy", text)
    } else {
        Insight::limit(
            "pace",
            format!(
                "On average {} of {n} requests {doing}",
                fmt::g(fmt::round_half_even(average))
            ),
            text,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, TRTLLM, VLLM};
    use crate::judging::checks::series::SeriesStats;
    use crate::model::client::LoadTool;
    use crate::model::metrics::{MetricSet, Sample};
    use crate::model::SeriesSample;
    use crate::model::Snapshot;
    use crate::run::checking::check_run;

    /// One counter read before and after the run; `before: None` leaves it out of the
    /// before reading.
    struct Counter {
        name: String,
        labels: Vec<(&'static str, &'static str)>,
        before: Option<f64>,
        after: f64,
    }

    fn counter(name: &str, before: f64, after: f64) -> Counter {
        labelled(name, &[], before, after)
    }

    fn labelled(
        name: &str,
        labels: &[(&'static str, &'static str)],
        before: f64,
        after: f64,
    ) -> Counter {
        Counter {
            name: name.to_owned(),
            labels: labels.to_vec(),
            before: Some(before),
            after,
        }
    }

    /// A histogram's `_sum` and `_count`, each as (before, after).
    fn histogram(name: &str, sum: (f64, f64), count: (f64, f64)) -> [Counter; 2] {
        [
            counter(&format!("{name}_sum"), sum.0, sum.1),
            counter(&format!("{name}_count"), count.0, count.1),
        ]
    }

    fn snapshot(samples: Vec<Sample>) -> Snapshot {
        Snapshot {
            url: "file:test".into(),
            t_wall: None,
            t_mono_ns: None,
            latency_s: None,
            text: String::new(),
            metrics: MetricSet::new(samples),
        }
    }

    fn readings(counters: &[Counter]) -> (Snapshot, Snapshot) {
        let sample = |c: &Counter, value: f64| Sample {
            name: c.name.clone(),
            labels: c
                .labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            timestamp_ms: None,
        };
        let before = counters
            .iter()
            .filter_map(|c| Some(sample(c, c.before?)))
            .collect();
        let after = counters.iter().map(|c| sample(c, c.after)).collect();
        (snapshot(before), snapshot(after))
    }

    /// A recording from (seconds, running) points, with the cache in use while busy.
    fn recording(points: &[(f64, f64)]) -> SeriesStats {
        let mut stats = SeriesStats::new();
        for &(seconds, running) in points {
            stats.push(&SeriesSample {
                t_wall: 1000.0 + seconds,
                t_mono_ns: Some((seconds * 1e9) as i64),
                running: Some(running),
                waiting: Some(0.0),
                kv_usage: Some(if running > 0.0 { 0.95 } else { 0.0 }),
                ..SeriesSample::default()
            });
        }
        stats
    }

    fn run(
        engine: &'static EngineDescriptor,
        boot: BootFacts,
        counters: &[Counter],
        series: SeriesStats,
        bench: Option<ClientAccount>,
    ) -> Run {
        let (before, after) = readings(counters);
        Run {
            engine,
            boots: vec![("boot.log".into(), boot)],
            before: Some(before),
            after: Some(after),
            series: Some(series),
            bench: bench.map(|b| ("bench.json".into(), b)),
            expected_extra_requests: 0,
            requested: Some(32),
            load_failure: None,
            rejected: Vec::new(),
            server_requests: None,
            kv_events: None,
            steps: None,
            notes: Vec::new(),
        }
    }

    fn insights_of(run: &Run) -> Vec<Insight> {
        what_limited(run, &check_run(run))
    }

    fn vllm_reasons(length: (f64, f64)) -> Vec<Counter> {
        let mut counters = vec![labelled(
            VLLM.request_success,
            &[("finished_reason", "length")],
            length.0,
            length.1,
        )];
        for reason in ["stop", "abort", "error", "repetition"] {
            counters.push(labelled(
                VLLM.request_success,
                &[("finished_reason", reason)],
                0.0,
                0.0,
            ));
        }
        counters
    }

    /// The counters of the recorded vLLM 0.28 live run (27B hybrid, 32 requests of 88 +
    /// 1,000 tokens, 22 preemptions).
    fn vllm_028_live_counters() -> Vec<Counter> {
        let mut counters = vllm_reasons((9.0, 41.0));
        counters.extend([
            counter(VLLM.generation_tokens, 144.0, 32144.0),
            counter(VLLM.prompt_tokens, 63.0, 2882.0),
            counter(VLLM.preemption_counter.unwrap_or_default(), 0.0, 22.0),
        ]);
        counters.extend(histogram(
            VLLM.queue_time_histogram,
            (8.52340000960794e-05, 936.9106002270003),
            (9.0, 41.0),
        ));
        counters.extend(histogram(
            VLLM.ttft_histogram,
            (1.1135427951812744, 949.2443010807037),
            (9.0, 41.0),
        ));
        counters.extend(histogram(
            VLLM.e2e_latency_histogram,
            (3.947205066680908, 1744.3562092781067),
            (9.0, 41.0),
        ));
        counters
    }

    /// The vLLM 0.28 live run without its result file: a recording with the same busy
    /// time (93.166 s) and busy mean (8.03 running) as the recorded one.
    fn vllm_028_live() -> Run {
        let boot = BootFacts {
            attention_block_size: Some(784),
            kv_pool_tokens: Some(26093),
            ..BootFacts::default()
        };
        let series = recording(&[(0.0, 0.0), (0.25, 10.0), (47.44, 6.0), (93.41565, 0.0)]);
        run(&VLLM, boot, &vllm_028_live_counters(), series, None)
    }

    fn sglang_counters(
        prompt_after: f64,
        queue_sum: (f64, f64),
        ttft_sum: (f64, f64),
        e2e_sum: (f64, f64),
    ) -> Vec<Counter> {
        let mut counters = vec![
            counter(SGLANG.request_success, 10.0, 42.0),
            counter(SGLANG.generation_tokens, 152.0, 32152.0),
            counter(SGLANG.prompt_tokens, 69.0, prompt_after),
            counter(SGLANG.preemption_witness.unwrap_or_default(), 0.0, 0.0),
        ];
        counters.extend(histogram(
            SGLANG.queue_time_histogram,
            queue_sum,
            (12.0, 44.0),
        ));
        counters.extend(histogram(SGLANG.ttft_histogram, ttft_sum, (10.0, 42.0)));
        counters.extend(histogram(
            SGLANG.e2e_latency_histogram,
            e2e_sum,
            (10.0, 42.0),
        ));
        counters
    }

    /// SGLang 0.5 serving Qwen3-8B: a 32,096-token pool, page size 1, a peak of 29
    /// running and a busy mean of 16.8.
    fn sglang_qwen3_8b() -> Run {
        let boot = BootFacts {
            page_size: Some(1),
            kv_pool_tokens: Some(32096),
            running_cap: Some(32),
            requested_running: Some(32),
            ..BootFacts::default()
        };
        let counters = sglang_counters(
            2885.0,
            (0.00950337500005105, 65.12424906099965),
            (3.179106164999993, 85.99004242100007),
            (3.1791137489999954, 761.5175347779998),
        );
        // The recorded run queued the 3 that did not fit: the client had all 32 open (T17).
        let mut series = SeriesStats::new();
        for (seconds, running, waiting) in [
            (0.0, 0.0, 0.0),
            (0.25, 29.0, 3.0),
            (14.167, 10.0, 0.0),
            (39.089, 0.0, 0.0),
        ] {
            series.push(&SeriesSample {
                t_wall: 1000.0 + seconds,
                t_mono_ns: Some((seconds * 1e9) as i64),
                running: Some(running),
                waiting: Some(waiting),
                kv_usage: Some(if running > 0.0 { 0.95 } else { 0.0 }),
                ..SeriesSample::default()
            });
        }
        let bench = ClientAccount {
            completed: Some(32),
            failed: Some(0),
            total_input_tokens: Some(2816),
            total_output_tokens: Some(32000),
            output_throughput: Some(799.1441856232549),
            max_concurrency: Some(32),
            median_ttft_ms: Some(641.237398499996),
            p99_ttft_ms: Some(22121.087090780005),
            mean_ttft_ms: Some(2647.322880750001),
            mean_tpot_ms: Some(21.124663304554556),
            ..ClientAccount::new(LoadTool::VllmBench)
        };
        run(&SGLANG, boot, &counters, series, Some(bench))
    }

    /// TensorRT-LLM 1.3 serving Qwen3-8B: a 37,760-token pool in 32-token pages; its
    /// gauges lag, so pace comes from the load tool's numbers.
    fn trtllm_qwen3_8b() -> Run {
        let boot = BootFacts {
            page_size: Some(32),
            kv_pool_tokens: Some(37760),
            running_cap: Some(32),
            requested_running: Some(32),
            ..BootFacts::default()
        };
        let mut counters = vec![
            labelled(
                TRTLLM.request_success,
                &[("finished_reason", "length")],
                9.0,
                41.0,
            ),
            counter(TRTLLM.generation_tokens, 144.0, 32144.0),
            counter(TRTLLM.prompt_tokens, 63.0, 2879.0),
        ];
        counters.extend(histogram(
            TRTLLM.e2e_latency_histogram,
            (2.8980680000000234, 730.9283240000002),
            (9.0, 41.0),
        ));
        counters.extend(histogram(
            TRTLLM.ttft_histogram,
            (0.33682000000004564, 18.078891999999996),
            (9.0, 41.0),
        ));
        counters.extend(histogram(
            TRTLLM.queue_time_histogram,
            (0.02019200000006549, 9.468964000000199),
            (9.0, 41.0),
        ));
        let series = recording(&[(0.0, 0.0), (10.0, 32.0), (30.0, 12.0), (40.0, 0.0)]);
        let bench = ClientAccount {
            completed: Some(32),
            failed: Some(0),
            total_input_tokens: Some(2816),
            total_output_tokens: Some(32000),
            output_throughput: Some(1389.2067618862027),
            max_concurrency: Some(32),
            median_ttft_ms: Some(595.9842805000051),
            p99_ttft_ms: Some(599.0842861800087),
            mean_ttft_ms: Some(588.8253768437437),
            mean_tpot_ms: Some(22.430810995995994),
            ..ClientAccount::new(LoadTool::VllmBench)
        };
        run(&TRTLLM, boot, &counters, series, Some(bench))
    }

    fn titles_and_texts(insights: &[Insight]) -> Vec<(bool, &str, &str, &str)> {
        insights
            .iter()
            .map(|i| (i.limit, i.key, i.title.as_str(), i.text.as_str()))
            .collect()
    }

    #[test]
    fn vllm_live_without_result_file_reads_the_queue_and_the_recording() {
        let insights = insights_of(&vllm_028_live());
        assert_eq!(
            titles_and_texts(&insights),
            [
                (
                    true,
                    "concurrency",
                    "The server ran fewer requests at once than the load sent",
                    "The load kept 32 requests open, but the server ran at most 10 at once. It also preempted 22 running requests."
                ),
                (
                    true,
                    "waiting",
                    "Requests waited in the queue",
                    "A request waited 29.3 s on average before the server started it."
                ),
                (
                    true,
                    "pace",
                    "On average 8 of 32 requests ran at once",
                    "The load kept 32 requests open; while the server was busy, its recording shows 8.0 running on average and 343 output tokens/s."
                ),
            ]
        );
    }

    /// Without the concurrency asked for there is no cache or concurrency sentence, but
    /// T1 still failed: its consequence must lead, not vanish behind the queue.
    #[test]
    fn a_failed_preemption_check_leads_without_the_concurrency_asked_for() {
        let mut run = vllm_028_live();
        run.requested = None;
        let results = check_run(&run);
        assert!(results
            .iter()
            .any(|r| r.tripwire == Tripwire::T1 && r.status == Status::Fail));
        let insights = what_limited(&run, &results);
        assert_eq!(
            titles_and_texts(&insights)[0],
            (
                true,
                "preemption",
                "The server preempted 22 running requests",
                "Each was evicted from the KV cache and later recomputed from its prompt, so throughput, time per output token and tail latency include repeated work: the run shows its memory pressure, not the engine's steady speed."
            )
        );
        assert_eq!(insights[1].key, "waiting");
    }

    /// Every failed tripwire's consequence comes first, the most consequential first:
    /// a failed server, then other traffic, then the load against the cache.
    #[test]
    fn failed_tripwires_lead_in_order_of_consequence() {
        let run = vllm_028_live();
        let results = vec![
            CheckResult::new(Tripwire::T8, Status::Fail, "held back").with("peak_running", 10.0),
            CheckResult::new(
                Tripwire::T15,
                Status::Fail,
                "the server finished 2 more requests than the load tool sent; other traffic shared the server during the run",
            ),
            CheckResult::new(
                Tripwire::T7,
                Status::Fail,
                "cuda_error during serving: an illegal memory access was encountered",
            ),
            CheckResult::new(Tripwire::T1, Status::Fail, "22").with("preemptions", 22.0),
        ];
        let keys: Vec<&str> = what_limited(&run, &results).iter().map(|i| i.key).collect();
        assert_eq!(
            keys,
            ["server", "traffic", "concurrency", "waiting", "pace"]
        );
        let first = &what_limited(&run, &results)[0];
        assert_eq!(first.title, "The server failed after it was ready");
        assert!(first
            .text
            .starts_with("T7: cuda_error during serving: an illegal memory access"));
    }

    /// One request more on the server than the load sent is a verdict, not the story of
    /// what limited the run: two are other traffic, and lead.
    #[test]
    fn one_stray_request_does_not_lead_the_story() {
        let run = vllm_028_live();
        let t15 = |extra: i64| {
            CheckResult::new(Tripwire::T15, Status::Fail, "the server finished more")
                .with("extra_requests", extra)
                .with("expected_extra_requests", 0)
        };
        let keys = |extra| {
            what_limited(&run, &[t15(extra)])
                .iter()
                .map(|i| i.key)
                .collect::<Vec<_>>()
        };
        assert!(!keys(1).contains(&"traffic"), "{:?}", keys(1));
        assert_eq!(keys(2)[0], "traffic");
    }

    /// A TTFT the load tool and the server measure from different starts (T24), and KV
    /// events lost on the way (T26), each say what they take from the run, as every
    /// failed whole-run check does.
    #[test]
    fn ttfts_that_differ_and_lost_kv_events_say_what_they_take() {
        let run = vllm_028_live();
        let keys = |result: CheckResult| {
            what_limited(&run, &[result])
                .iter()
                .map(|i| i.key)
                .collect::<Vec<_>>()
        };
        let t24 = CheckResult::new(
            Tripwire::T24,
            Status::Fail,
            "the load tool's TTFT p50 is 180 ms above the server's",
        );
        assert!(keys(t24).contains(&"ttft-definitions"));
        let t26 = CheckResult::new(
            Tripwire::T26,
            Status::Fail,
            "3 of 12 KV event batches were lost and not recovered",
        );
        assert!(keys(t26).contains(&"kv-events"));
        // A pass says nothing.
        let passed = CheckResult::new(Tripwire::T26, Status::Pass, "every batch arrived");
        assert!(!keys(passed).contains(&"kv-events"));
    }

    /// A run whose server finished nothing between its readings measured no load: one
    /// sentence says so, and none describes a load that did not happen.
    #[test]
    fn a_run_that_finished_nothing_is_not_a_benchmark() {
        let idle: Vec<Counter> = vllm_028_live_counters()
            .into_iter()
            .map(|c| Counter {
                after: c.before.unwrap_or(c.after),
                ..c
            })
            .collect();
        let mut run = vllm_028_live();
        let (before, after) = readings(&idle);
        run.before = Some(before);
        run.after = Some(after);
        let insights = insights_of(&run);
        assert_eq!(insights.len(), 1);
        assert_eq!(insights[0].key, "benchmark");
        assert_eq!(
            insights[0].text,
            "The server finished no request between the before and the after reading, so no number from it describes a load. Make the load send its requests, then run it again."
        );
        let mut failed = vllm_028_live();
        failed.load_failure = Some("the load command exited with code 1".into());
        assert!(insights_of(&failed)[0]
            .text
            .starts_with("The load command exited with code 1, so"));
    }

    /// The load tool's rate is the run's; T10's differs because the span between the
    /// readings holds time the load tool did not time and its untimed requests' tokens.
    #[test]
    fn throughput_names_the_runs_number_and_why_t10_differs() {
        let mut run = vllm_028_live();
        let mut counters = vllm_028_live_counters();
        for c in &mut counters {
            if c.name == VLLM.generation_tokens {
                c.after += 1000.0;
            }
            if c.name == VLLM.request_success && c.labels == [("finished_reason", "length")] {
                c.after += 1.0;
            }
        }
        let (mut before, mut after) = readings(&counters);
        before.t_mono_ns = Some(0);
        after.t_mono_ns = Some(115_800_000_000);
        run.before = Some(before);
        run.after = Some(after);
        run.expected_extra_requests = 1;
        run.bench = Some((
            "bench.json".into(),
            ClientAccount {
                completed: Some(32),
                total_input_tokens: Some(2816),
                total_output_tokens: Some(32000),
                output_throughput: Some(322.9),
                duration: Some(99.1),
                ..ClientAccount::new(LoadTool::VllmBench)
            },
        ));
        let pace = insights_of(&run).pop().expect("a pace sentence");
        assert!(
            pace.text.ends_with("The run's throughput is the load tool's 323 output tokens/s, over its 32 timed requests in 99.1 s. T10's 284.97 tokens/s is the server's count over the 115.8 s between the two readings, which also hold 16.7 s the load tool did not time (its start, warm-up and wind-down) and 1,000 output tokens of 1 untimed request (test or warm-up)."),
            "{}",
            pace.text
        );
    }

    #[test]
    fn terminal_lines_match_the_tutorial() {
        let lines = terminal_lines(&insights_of(&vllm_028_live()));
        assert_eq!(
            lines,
            "What limited this run:\n\
             \x20 - The server ran fewer requests at once than the load sent. The load kept 32 requests open, but the server ran at most 10 at once. It also preempted 22 running requests.\n\
             \x20 - Requests waited in the queue. A request waited 29.3 s on average before the server started it.\n\
             \x20 - On average 8 of 32 requests ran at once. The load kept 32 requests open; while the server was busy, its recording shows 8.0 running on average and 343 output tokens/s.\n"
        );
        assert_eq!(terminal_lines(&[]), "");
    }

    #[test]
    fn sglang_qwen3_8b_cache_too_small_for_the_load() {
        let insights = insights_of(&sglang_qwen3_8b());
        assert_eq!(
            titles_and_texts(&insights),
            [
                (
                    true,
                    "cache",
                    "The KV cache was too small for the load",
                    "The cache holds 32,096 tokens; 32 requests of 1,088 tokens need 34,816 to run to the end together, so 29 fit at full length. To make room, it ran at most 29 at once and queued the rest."
                ),
                (
                    true,
                    "waiting",
                    "Some requests waited much longer to start",
                    "Half the requests got their first token within 641 ms, but the slowest (p99) waited 22.1 s: they were queued until running requests ended."
                ),
                (
                    true,
                    "pace",
                    "On average 17 of 32 requests ran at once",
                    "The load kept 32 requests open; the server's recording shows 16.8 running on average while it was busy. The run's throughput is the load tool's 799 output tokens/s, over its 32 timed requests."
                ),
            ]
        );
        assert!(terminal_lines(&insights)
            .starts_with("What limited this run:\n  - The KV cache was too small for the load."));
    }

    #[test]
    fn trtllm_qwen3_8b_has_only_ok_findings() {
        let insights = insights_of(&trtllm_qwen3_8b());
        assert_eq!(
            titles_and_texts(&insights),
            [
                (
                    false,
                    "cache",
                    "The KV cache held the whole load",
                    "The cache holds 37,760 tokens; 32 requests of 1,088 tokens need 34,816, 92% of it."
                ),
                (
                    false,
                    "waiting",
                    "No request waited long to start",
                    "Half the requests got their first token within 596 ms, and the slowest (p99) within 599 ms."
                ),
                (
                    false,
                    "pace",
                    "The run kept its requests busy",
                    "The run's throughput is the load tool's 1,389 output tokens/s, over its 32 timed requests. From its first token to its last, a request took 22.4 ms per token (TPOT), so on average 31.2 of the 32 requests the load kept open were in that stretch (1,389 x 0.0224 s), including any paused mid-output. TensorRT-LLM updates its running gauge only when a request completes, so the recording does not give the number running."
                ),
            ]
        );
    }

    /// A running limit the server was started with is the peak it reached: the sentence
    /// names it once, by its setting, instead of saying "ran at most 1 at once: the
    /// server runs at most 1 at once".
    #[test]
    fn a_running_limit_is_said_once() {
        // A pool that holds the load, so that the limit is what held requests back.
        let boot = BootFacts {
            page_size: Some(1),
            kv_pool_tokens: Some(100_000),
            running_cap: Some(1),
            ..BootFacts::default()
        };
        let counters = sglang_counters(
            3164.0,
            (9.559663955000019, 9124.982823040998),
            (18.602119442999992, 9143.928195097998),
            (18.60213458599992, 9729.852307343),
        );
        let series = recording(&[(0.0, 0.0), (0.25, 1.0), (585.25, 0.0)]);
        let insights = insights_of(&run(&SGLANG, boot, &counters, series, None));
        let texts: Vec<&str> = insights.iter().map(|i| i.text.as_str()).collect();
        assert!(
            texts.iter().any(|t| t.contains(
                "The load kept 32 requests open, but the server ran at most 1 at once: its running limit (--max-running-requests 1)."
            )),
            "{texts:?}"
        );
        assert!(
            !texts.iter().any(|t| t.contains("runs at most")),
            "{texts:?}"
        );
    }

    #[test]
    fn sglang_capped_hybrid_names_the_lowered_cap() {
        let boot = BootFacts {
            page_size: Some(1),
            kv_pool_tokens: Some(17675),
            running_cap: Some(1),
            running_cap_reason: Some("mamba state cache".into()),
            requested_running: Some(32),
            ..BootFacts::default()
        };
        let counters = sglang_counters(
            3164.0,
            (9.559663955000019, 9124.982823040998),
            (18.602119442999992, 9143.928195097998),
            (18.60213458599992, 9729.852307343),
        );
        let series = recording(&[(0.0, 0.0), (0.25, 1.0), (585.25, 0.0)]);
        let bench = ClientAccount {
            completed: Some(32),
            total_input_tokens: Some(2979),
            total_output_tokens: Some(32000),
            output_throughput: Some(54.37728524823147),
            median_ttft_ms: Some(285165.0006025),
            p99_ttft_ms: Some(564476.4005736001),
            mean_tpot_ms: Some(18.326818527871616),
            ..ClientAccount::new(LoadTool::VllmBench)
        };
        let insights = insights_of(&run(&SGLANG, boot, &counters, series, Some(bench)));
        assert_eq!(
            titles_and_texts(&insights),
            [
                (
                    true,
                    "concurrency",
                    "The server ran fewer requests at once than the load sent",
                    "The load kept 32 requests open, but the server ran at most 1 at once: SGLang lowered its limit to 1 running because of the mamba state cache, although it was started with --max-running-requests 32."
                ),
                (
                    true,
                    "waiting",
                    "Requests waited long to start",
                    "Half the requests waited more than 285.2 s for their first token, the slowest (p99) 564.5 s, most of it in the queue."
                ),
                (
                    true,
                    "pace",
                    "On average 1 of 32 requests ran at once",
                    "The load kept 32 requests open; the server's recording shows 1.0 running on average while it was busy. The run's throughput is the load tool's 54.4 output tokens/s, over its 32 timed requests."
                ),
            ]
        );
    }

    #[test]
    fn cache_with_room_blames_something_else() {
        let run = trtllm_qwen3_8b();
        let results = vec![
            CheckResult::new(Tripwire::T8, Status::Fail, "held back").with("peak_running", 20.0),
            CheckResult::new(Tripwire::T1, Status::Fail, "paused").with("preemptions", 1),
        ];
        let insights = what_limited(&run, &results);
        assert_eq!(insights[0].key, "cache");
        assert!(insights[0].limit);
        assert_eq!(
            insights[0].title,
            "The cache had room; something else held requests back"
        );
        assert_eq!(
            insights[0].text,
            "The cache holds 37,760 tokens; 32 requests of 1,088 tokens need 34,816, 92% of it. The load kept 32 requests open, but the server ran at most 20 at once. It also paused 1 running request."
        );
    }

    #[test]
    fn cache_too_small_names_preemptions_without_a_concurrency_failure() {
        // vLLM with its default 16-token blocks: 1,088.09 tokens round up to 1,104.
        let mut run = vllm_028_live();
        run.boots[0].1.attention_block_size = None;
        run.boots[0].1.kv_pool_tokens = Some(20000);
        let results = vec![
            CheckResult::new(Tripwire::T8, Status::Pass, "reached"),
            CheckResult::new(Tripwire::T1, Status::Fail, "22").with("preemptions", 22.0),
        ];
        let insights = what_limited(&run, &results);
        assert_eq!(
            insights[0].text,
            "The cache holds 20,000 tokens; 32 requests of about 1,088 tokens need 35,328 to run to the end together, so 18 fit at full length. To make room, it preempted 22 running requests."
        );
    }

    #[test]
    fn no_insight_after_a_restart() {
        let mut counters = vllm_028_live_counters();
        counters.push(counter("vllm:num_requests_total", 50.0, 3.0));
        let (before, after) = readings(&counters);
        assert_eq!(counter_summary(&VLLM, &before, &after), None);
        let mut run = vllm_028_live();
        run.before = Some(before);
        run.after = Some(after);
        assert_eq!(insights_of(&run), []);
    }

    #[test]
    fn tpot_falls_back_to_the_server_means() {
        let mut run = trtllm_qwen3_8b();
        if let Some((_, bench)) = run.bench.as_mut() {
            bench.mean_tpot_ms = None;
        }
        let pace = insights_of(&run).pop().expect("a pace insight");
        // (22.751 s - 0.554 s) / 999 tokens = 22.2 ms.
        assert!(
            pace.text
                .contains("a request took 22.2 ms per token (TPOT)"),
            "{}",
            pace.text
        );
    }

    #[test]
    fn counter_summary_of_the_vllm_live_run() {
        let (before, after) = readings(&vllm_028_live_counters());
        let summary = counter_summary(&VLLM, &before, &after).expect("no restart");
        assert_eq!(summary.finished, Some(32.0));
        assert_eq!(
            summary.finished_by_reason,
            [
                ("length".to_owned(), 32.0),
                ("stop".to_owned(), 0.0),
                ("repetition".to_owned(), 0.0),
                ("abort".to_owned(), 0.0),
                ("error".to_owned(), 0.0),
            ]
        );
        assert_eq!(summary.output_tokens, Some(32000.0));
        assert_eq!(summary.prompt_tokens, Some(2819.0));
        assert_eq!(summary.preemptions, Some(22.0));
        let queue = summary.mean_queue_s.expect("queue histogram");
        assert!((queue - 936.9105149930001 / 32.0).abs() < 1e-9);
        assert!(summary.mean_ttft_s.is_some() && summary.mean_e2e_s.is_some());
    }

    #[test]
    fn finish_reasons_created_during_the_run_count_from_zero() {
        let name = TRTLLM.request_success;
        let counters = [
            labelled(name, &[("finished_reason", "stop")], 2.0, 2.0),
            Counter {
                before: None,
                ..labelled(name, &[("finished_reason", "length")], 0.0, 32.0)
            },
            labelled(name, &[("finished_reason", "timeout")], 0.0, 1.0),
        ];
        let (before, after) = readings(&counters);
        let summary = counter_summary(&TRTLLM, &before, &after).expect("no restart");
        assert_eq!(
            summary.finished_by_reason,
            [
                ("length".to_owned(), 32.0),
                ("stop".to_owned(), 0.0),
                ("timeout".to_owned(), 1.0),
            ]
        );
        // Without the counter in the before reading nothing is known.
        let (_, after) = readings(&counters);
        let empty = snapshot(Vec::new());
        let summary = counter_summary(&TRTLLM, &empty, &after).expect("no restart");
        assert_eq!(summary.finished, None);
        assert!(summary.finished_by_reason.is_empty());
        assert_eq!(summary.preemptions, None);
    }

    #[test]
    fn sglang_has_a_total_but_no_reasons() {
        let (before, after) = readings(&sglang_counters(
            2885.0,
            (0.0, 65.0),
            (0.0, 83.0),
            (0.0, 760.0),
        ));
        let summary = counter_summary(&SGLANG, &before, &after).expect("no restart");
        assert_eq!(summary.finished, Some(32.0));
        assert!(summary.finished_by_reason.is_empty());
        // The witness gauge stands in for the missing retraction counter.
        assert_eq!(summary.preemptions, Some(0.0));
    }

    /// Per-request records in send order: a first wave that waited far longer than the
    /// rest (a server not warmed up), and later waves that queued behind the first.
    #[test]
    fn waves_of_requests_say_who_waited() {
        use crate::model::client::{ClientRequest, RequestOutcome};
        let account = |ttfts: &[f64]| {
            let mut a = ClientAccount::new(LoadTool::VllmBench);
            a.completed = Some(ttfts.len() as i64);
            a.requests = ttfts
                .iter()
                .enumerate()
                .map(|(i, t)| ClientRequest {
                    outcome: Some(RequestOutcome::Completed),
                    sent_s: Some(i as f64 * 0.01).into(),
                    ttft_s: Some(*t).into(),
                    ..ClientRequest::default()
                })
                .collect();
            a
        };
        fn load(a: &ClientAccount, requested: u64) -> Load<'_> {
            Load {
                engine: &VLLM,
                boot: None,
                bench: Some(a),
                summary: None,
                busy_mean_running: None,
                busy_seconds: None,
                requested: Some(requested),
                open: Some(requested),
                cache: None,
                concurrency_failed: false,
                client_short: false,
                peak_running: None,
                waiting_split: None,
                preempted: None,
            }
        }
        let mut cold = vec![40.0; 8];
        cold.extend(vec![0.5; 24]);
        let a = account(&cold);
        let insight = load(&a, 8).waiting().unwrap();
        assert_eq!(insight.title, "The first requests waited longest");
        assert!(
            insight.text.starts_with("The first 8 requests waited 40.0 s for their first token (median), the 24 sent after them 500 ms"),
            "{}",
            insight.text
        );
        let mut queued = vec![0.3; 8];
        queued.extend(vec![12.0; 24]);
        let a = account(&queued);
        let insight = load(&a, 8).waiting().unwrap();
        assert_eq!(insight.title, "Later requests waited in the queue");
        assert!(
            insight
                .text
                .contains("the 24 sent after them waited 12.0 s"),
            "{}",
            insight.text
        );
        // Even waits say nothing of waves.
        let a = account(&[0.3; 32]);
        assert!(load(&a, 8).waves().is_none());
    }

    #[test]
    fn durations() {
        assert_eq!(format_duration_ms(641.237398499996), "641 ms");
        assert_eq!(format_duration_ms(22121.087090780005), "22.1 s");
        assert_eq!(format_duration_ms(1000.0), "1.0 s");
        assert_eq!(format_duration_ms(285165.0006025), "285.2 s");
    }

    #[test]
    fn preemption_words_as_verbs() {
        assert_eq!(preempted(&VLLM), "preempted");
        assert_eq!(preempted(&SGLANG), "retracted");
        assert_eq!(preempted(&TRTLLM), "paused");
    }

    /// The terminal's throughput line is the load tool's figure over the requests it
    /// timed (vllm bench serve's `output_throughput`, `completed`, `duration`), with T10's
    /// rate beside it as the server's count over the readings' window; without a load
    /// tool's figure, T10's rate is the line, said as such.
    #[test]
    fn the_terminal_throughput_is_the_load_tools_else_the_servers_window_said_as_such() {
        use crate::story::account::{Account, Figure, Source};
        let f = |value, from| Some(Figure { value, from });
        let mut account = Account::default();
        account.happened.server_token_rate = f(276.03, Source::Readings);
        account.happened.readings_span_s = f(119.554, Source::Readings);
        assert_eq!(
            terminal_throughput(&account),
            "Output tokens per second: 276.03, the server's count over the readings' window (119.6 s), not the run's own: no load tool's result file timed this run.\n"
        );
        account.happened.client_output_throughput = f(323.218902, Source::ResultFile);
        account.happened.client_completed = f(32.0, Source::ResultFile);
        account.happened.client_duration_s = f(99.004111, Source::ResultFile);
        assert_eq!(
            terminal_throughput(&account),
            "Output tokens per second: 323, the load tool's, over its 32 timed requests in 99.0 s (T10's 276.03 is the server's count over the readings' window, 119.6 s).\n"
        );
        assert_eq!(terminal_throughput(&Account::default()), "");
    }

    /// A vLLM 0.32 run asked for 32 at once whose server ran at most 8 while 24 waited,
    /// its recording carrying the waiting gauge's split by reason as `split` gives it for
    /// the 24 (capacity, deferred), or no split at all (an older vLLM).
    fn waiting_run(split: Option<(f64, f64)>) -> Run {
        waiting_run_of(24.0, split)
    }

    /// The same with `queued` waiting beside the 8 running.
    fn waiting_run_of(queued: f64, split: Option<(f64, f64)>) -> Run {
        let mut series = SeriesStats::new();
        for (seconds, running, waiting) in [
            (0.0, 0.0, 0.0),
            (0.25, 8.0, queued),
            (10.0, 8.0, queued),
            (20.0, 0.0, 0.0),
        ] {
            let (capacity, deferred) = match split {
                Some((c, d)) if waiting > 0.0 => (Some(c), Some(d)),
                Some(_) => (Some(0.0), Some(0.0)),
                None => (None, None),
            };
            series.push(&SeriesSample {
                t_wall: 1000.0 + seconds,
                t_mono_ns: Some((seconds * 1e9) as i64),
                running: Some(running),
                waiting: Some(waiting),
                waiting_capacity: capacity,
                waiting_deferred: deferred,
                kv_usage: Some(if running > 0.0 { 0.5 } else { 0.0 }),
                ..SeriesSample::default()
            });
        }
        let mut counters = vllm_reasons((0.0, 32.0));
        counters.extend([
            counter(VLLM.generation_tokens, 0.0, 4096.0),
            counter(VLLM.prompt_tokens, 0.0, 4096.0),
            counter(VLLM.preemption_counter.unwrap_or_default(), 0.0, 0.0),
        ]);
        run(&VLLM, BootFacts::default(), &counters, series, None)
    }

    fn t8_of(results: &[CheckResult]) -> &CheckResult {
        results
            .iter()
            .find(|r| r.tripwire == Tripwire::T8)
            .expect("T8 judged")
    }

    /// The 24 waiting requests were all deferred (vLLM's `deferred` reason: the
    /// scheduler's deferred set, requests waiting on a KV transfer or another transient
    /// block). T8 still fails, but its message, its advice and "What limited this run"
    /// say that no running limit held them: the advice is to find what deferred them.
    #[test]
    fn waiting_all_deferred_points_away_from_the_running_limit() {
        let run = waiting_run(Some((0.0, 24.0)));
        let results = check_run(&run);
        let t8 = t8_of(&results);
        assert_eq!(t8.status, Status::Fail, "{}", t8.message);
        assert!(
            t8.message.ends_with(
                "; every request that waited at the server was deferred (a KV transfer, a grammar still compiling or another transient block held them, not the running limit; at most 24 at once)"
            ),
            "{}",
            t8.message
        );
        assert_eq!(t8.evidence["peak_waiting_deferred"], 24.0);
        assert_eq!(t8.evidence["peak_waiting_capacity"], 0.0);
        assert_eq!(t8.evidence["waiting_deferred_share"], 1.0);
        assert_eq!(t8.advice.len(), 1, "{:?}", t8.advice);
        assert!(
            t8.advice[0]
                .starts_with("all of the waiting requests were deferred (at most 24 at once)"),
            "{:?}",
            t8.advice
        );
        let limited = what_limited(&run, &results);
        let concurrency = limited
            .iter()
            .find(|i| i.key == "concurrency")
            .expect("a concurrency sentence");
        assert!(
            concurrency.text.contains(
                "All of the waiting at the server was deferred (at most 24 at once): a KV transfer, a grammar still compiling or another transient block held those requests, not the running limit."
            ),
            "{}",
            concurrency.text
        );
    }

    /// The 24 waited for room (vLLM's `capacity` reason): the running limit or the cache
    /// is what to change, and every output says so.
    #[test]
    fn waiting_all_for_capacity_points_at_the_limit() {
        let run = waiting_run(Some((24.0, 0.0)));
        let results = check_run(&run);
        let t8 = t8_of(&results);
        assert_eq!(t8.status, Status::Fail, "{}", t8.message);
        assert!(
            t8.message.ends_with(
                "; every request that waited at the server waited for room in the batch or the KV cache (at most 24 at once); none was deferred"
            ),
            "{}",
            t8.message
        );
        assert_eq!(t8.evidence["waiting_deferred_share"], 0.0);
        assert_eq!(t8.advice.len(), 1, "{:?}", t8.advice);
        assert!(
            t8.advice[0].starts_with(
                "the waiting requests waited for room in the batch or the KV cache, not for a KV transfer: "
            ),
            "{:?}",
            t8.advice
        );
        let limited = what_limited(&run, &results);
        assert!(
            limited.iter().any(|i| i.text.contains(
                "All of the waiting at the server was for room in the batch or the KV cache (at most 24 at once), not deferred."
            )),
            "{limited:?}"
        );
    }

    /// Without the split (vLLM before 0.32) the verdict, its evidence and its advice are
    /// the same run's without it: nothing is said of why requests waited.
    #[test]
    fn waiting_without_the_split_says_nothing_of_it() {
        let run = waiting_run(None);
        let results = check_run(&run);
        let t8 = t8_of(&results);
        assert_eq!(t8.status, Status::Fail, "{}", t8.message);
        assert_eq!(
            t8.message,
            "requested 32 concurrent, server never ran more than 8"
        );
        for key in [
            "peak_waiting_capacity",
            "peak_waiting_deferred",
            "waiting_deferred_share",
        ] {
            assert!(t8.evidence.get(key).is_none(), "{key}");
        }
        assert!(
            !t8.advice
                .iter()
                .any(|a| a.contains("deferred") || a.contains("waited for room")),
            "{:?}",
            t8.advice
        );
        let limited = what_limited(&run, &results);
        assert!(
            !limited.iter().any(|i| i.text.contains("deferred")),
            "{limited:?}"
        );
    }

    /// T17: the client kept 16 of 32 in flight (8 running, 8 waiting), and at that peak
    /// requests waited, so the server would not have run more (Warn). Half of the 8 waited
    /// for room and half were deferred (vLLM's split, 4 and 4): T17 says so, with the
    /// share of the waiting that was deferred, 50%.
    #[test]
    fn a_client_shortfall_says_why_requests_waited() {
        let run = waiting_run_of(8.0, Some((4.0, 4.0)));
        let results = check_run(&run);
        let t17 = results
            .iter()
            .find(|r| r.tripwire == Tripwire::T17)
            .expect("T17 judged");
        assert_eq!(t17.status, Status::Warn, "{}", t17.message);
        assert!(
            t17.message.ends_with(
                "; of the waiting at the server, 50% was deferred (a KV transfer, a grammar still compiling or another transient block held them, not the running limit; at most 4 at once) and the rest for room in the batch or the KV cache (at most 4 at once)"
            ),
            "{}",
            t17.message
        );
        assert_eq!(t17.evidence["waiting_deferred_share"], 0.5);
    }
}
