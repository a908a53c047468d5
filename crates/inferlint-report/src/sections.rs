//! The report's prose sections: the head, what limited the run, what happened, the
//! results, the server that ran, the tripwire guide and the footer.

use inferlint_core::judging::checks::counters::restart_between;
use inferlint_core::model::{BootFacts, PyValue};
use inferlint_core::run::without_verdict;
use inferlint_core::story::account::{Figure, Source};
use inferlint_core::story::advice::preempted;
use inferlint_core::story::catalogue;
use inferlint_core::story::fmt;
use inferlint_core::story::insights::{counter_summary, requests_in_error, CounterSummary};
use inferlint_core::{CheckResult, Engine, EngineDescriptor, Status, Tripwire};
use maud::{html, Markup};
use serde_json::Value;

use crate::charts;
use crate::report::Report;
use crate::words::{
    and_list, badge, count, duration, find, preemption_heading, status_class, status_icon,
    status_meaning, thousands, STATUSES,
};

/// The last part of a model path: `/root/models/Qwen3-8B` -> `Qwen3-8B`.
pub fn model_name(boot: &BootFacts) -> Option<&str> {
    let model = boot
        .model
        .as_deref()
        .or_else(|| boot.setting("model_path").and_then(PyValue::as_str))
        .or_else(|| boot.setting("model").and_then(PyValue::as_str))?;
    let trimmed = model.trim_end_matches('/');
    Some(trimmed.rsplit('/').next().unwrap_or(trimmed)).filter(|m| !m.is_empty())
}

/// The counter facts between the two readings: `Ok(None)` without both readings,
/// `Err(())` when the server restarted between them.
fn summary(report: &Report) -> Result<Option<CounterSummary>, ()> {
    match (&report.run.before, &report.run.after) {
        (Some(before), Some(after)) => counter_summary(report.run.engine, before, after)
            .map(Some)
            .ok_or(()),
        _ => Ok(None),
    }
}

fn restarted(report: &Report) -> bool {
    match (&report.run.before, &report.run.after) {
        (Some(b), Some(a)) => restart_between(b, a).is_some(),
        _ => false,
    }
}

/// The input that says the run was simulated, in words.
fn input_words(input: &str) -> &'static str {
    use inferlint_core::run::input;
    match input {
        input::BEFORE => "before reading",
        input::AFTER => "after reading",
        input::BOOT_LOG => "boot log",
        input::BENCH_RESULT => "load tool's result file",
        _ => "files",
    }
}

/// The KV pool as the header states it. A hybrid model's pool is said twice, each with
/// what it counts: the engine log's tokens are the requests of its stated length that the
/// cache holds, each request also holding its own state blocks (vLLM prints "GPU KV cache
/// size: N tokens" as its "Maximum concurrency for L tokens per request" times L); the
/// usable blocks times the block size count every block as tokens and no request's state.
fn pool_words(report: &Report) -> Vec<String> {
    let run = report.run;
    let Some(boot) = run.last_boot() else {
        return Vec::new();
    };
    let Some(pool) = boot.kv_pool_tokens else {
        return Vec::new();
    };
    let pool_text = format!("{}-token KV pool", fmt::thousands(pool as i64));
    if !inferlint_core::model::facts::hybrid(boot) {
        return vec![pool_text];
    }
    let setup = &report.account.setup;
    // The log's token figure is a count of requests of a stated length only where the log
    // states that concurrency beside it (vLLM's); elsewhere (SGLang keeps the state in a
    // pool of its own) it is said as the log says it.
    let (Some(c), Some(len)) = (boot.max_concurrency, boot.max_concurrency_request_len) else {
        return vec![pool_text];
    };
    let mut words = vec![format!(
        "{pool_text} as {}'s log counts it: {c:.2} requests of {} tokens, each also holding its own state blocks",
        run.engine.name,
        fmt::thousands(len as i64)
    )];
    let blocks = setup
        .usable_blocks
        .or(setup.trusted_blocks)
        .map(|f| f.value);
    if let (Some(blocks), Some(block)) = (blocks, value(setup.block_tokens)) {
        words.push(format!(
            "{} usable blocks of {} tokens ({} tokens of blocks, counting no request's state)",
            fmt::g(blocks),
            fmt::thousands(block as i64),
            fmt::thousands_f(blocks * block)
        ));
    }
    words
}

pub fn header(report: &Report, title: &str) -> Markup {
    let run = report.run;
    let boot = run.last_boot();
    let mut meta: Vec<String> = Vec::new();
    match boot.and_then(|b| b.version.as_deref()) {
        Some(v) => meta.push(format!("{} {v}", run.engine.name)),
        None => meta.push(run.engine.name.to_owned()),
    }
    if let Some(model) = boot.and_then(model_name) {
        meta.push(model.to_owned());
    }
    meta.extend(pool_words(report));
    if let Some((_, account)) = &run.bench {
        meta.push(format!("load: {}", account.tool_label()));
    }
    if let Some(n) = run.requested {
        meta.push(format!("concurrency asked for: {n}"));
    }
    let untested = boot.and_then(|b| {
        let version = b.version.as_deref()?;
        run.engine.untested_version_note(version)
    });
    html! {
        header.top {
            div.brand {
                span.logo aria-hidden="true" { "\u{2301}" }
                span { "inferlint report" }
                button #theme-toggle type="button" aria-pressed="false" {
                    "Dark"
                }
            }
            h1 {
                @if report.account.simulated.is_some() {
                    span.simulated-badge { "Simulated" } " "
                }
                (title)
            }
            @if let Some(input) = report.account.simulated {
                p.simulated role="note" {
                    strong { "A simulated run." }
                    " Its " (input_words(input)) " says it was made by inferlint-sim, a scheduler model, not by a real server: no figure on this page describes a real engine or card."
                }
            }
            p.meta { (meta.join(" \u{b7} ")) }
            @if let Some(note) = untested {
                p.note role="note" { (note) }
            }
            nav aria-label="Sections" {
                a href="#limits" { "What limited this run" }
                a href="#happened" { "What happened" }
                a href="#results" { "Results" }
                a href="#server-did" { "What the server did" }
                @if run.bench.as_ref().is_some_and(|(_, b)| !b.requests.is_empty()) {
                    a href="#requests" { "Each request" }
                }
                @if report.timeline.is_some() {
                    a href="#replay" { "KV replay" }
                }
                a href="#server" { "The server" }
                a href="#guide" { "The " (inferlint_core::story::catalogue::all().len()) " tripwires" }
            }
        }
    }
}

pub fn what_limited(report: &Report) -> Markup {
    html! {
        section #limits aria-labelledby="limits-h" {
            h2 #limits-h { "What limited this run" }
            @if report.insights.is_empty() {
                @if restarted(report) {
                    p { "The server restarted between the before and the after reading, so its counters say nothing about this run, and nothing can be said about what limited it." }
                } @else {
                    p.muted { "Nothing to say: the files given do not hold the numbers these findings need (the server's counters before and after, the concurrency asked for, or a recording)." }
                }
            } @else {
                ul.insights {
                    @for insight in report.insights {
                        li class={"insight " (if insight.limit { "limit" } else { "ok" })} {
                            span.icon aria-hidden="true" {
                                (if insight.limit { "\u{25B2}" } else { "\u{2714}" })
                            }
                            span.visually-hidden {
                                (if insight.limit { "A limit: " } else { "Fine: " })
                            }
                            span { strong { (insight.title) "." } " " (insight.text) }
                        }
                    }
                }
            }
        }
    }
}

/// The plain-English account of the run, one sentence a part: how the server failed,
/// how long the load ran, the load tool's count, the server's count, how many ran at
/// once, and what was preempted. Every figure is the run's account's.
fn story(report: &Report) -> Vec<String> {
    let run = report.run;
    let account = report.account;
    let mut sentences: Vec<String> = Vec::new();
    sentences.extend(failure_sentence(report));
    // The load's span is the load tool's timed duration; the readings' window also holds
    // its start, warm-up and wind-down, and is said as such where it is all there is.
    let load_span = value(account.happened.client_duration_s);
    let window =
        value(account.happened.readings_span_s).or_else(|| report.timeline.map(|t| t.span_s()));
    match (value(account.load.requested), load_span, window) {
        (Some(n), Some(s), _) => sentences.push(format!(
            "The load tool kept {} requests open for {s:.1} s, as it timed them.",
            fmt::g(n)
        )),
        (None, Some(s), _) => sentences.push(format!("The load tool timed {s:.1} s.")),
        (Some(n), None, Some(w)) => sentences.push(format!(
            "The load was asked to keep {} requests open; the readings are {} apart, and no load tool's result file says how long the load itself ran.",
            fmt::g(n),
            duration(w)
        )),
        (None, None, Some(w)) => sentences.push(format!(
            "The readings are {} apart; no load tool's result file says how long the load itself ran.",
            duration(w)
        )),
        _ => {}
    }
    if let Some((_, client)) = &run.bench {
        sentences.push(client_sentence(client));
    }
    sentences.extend(server_count_sentence(report));
    sentences.extend(at_once_sentence(report));
    sentences.extend(preemption_sentence(report));
    sentences
}

/// A figure's value.
fn value(figure: Option<Figure>) -> Option<f64> {
    figure.map(|f| f.value)
}

/// `The server failed during start-up (out of memory): ...`
fn failure_sentence(report: &Report) -> Option<String> {
    let f = report.run.last_boot()?.failure.as_ref()?;
    let mut text = format!(
        "The server failed during {} ({})",
        f.phase.word(),
        f.kind.replace('_', " ")
    );
    if let Some(detail) = &f.detail {
        text.push_str(": ");
        text.push_str(detail.trim_end_matches('.'));
    }
    text.push('.');
    Some(text)
}

/// `The server finished 32 requests with no errors and generated 4,096 tokens.`: the
/// server's own count between the readings.
fn server_count_sentence(report: &Report) -> Option<String> {
    let account = report.account;
    let finished = account
        .load
        .finished
        .filter(|f| f.from == Source::Readings)?
        .value;
    let mut text = format!("The server finished {}", count(finished, "request"));
    match requests_in_error(report.run) {
        Some(0.0) => text.push_str(" with no errors"),
        Some(e) => text.push_str(&format!(" ({} ended in an error)", thousands(e))),
        None => {}
    }
    if let Some(tokens) = value(account.happened.generated_tokens) {
        text.push_str(&format!(
            " and generated {} tokens",
            thousands(tokens.round())
        ));
    }
    text.push('.');
    Some(text)
}

/// T8's peak in words: held back (and how long the others queued), or as many as asked.
fn at_once_sentence(report: &Report) -> Option<String> {
    let happened = &report.account.happened;
    let t8 = find(report.results, Tripwire::T8)?;
    let peak = value(happened.peak_running)?;
    match t8.status {
        Status::Fail => {
            let mut text = format!("But it never worked on more than {} at once", fmt::g(peak));
            if let Some(q) = value(happened.mean_queue_s) {
                text.push_str(&format!(
                    ": the others waited in its queue, {q:.1} s on average before a request started"
                ));
            }
            text.push('.');
            Some(text)
        }
        Status::Pass => Some(format!(
            "It ran {} requests at once, as many as the load asked for.",
            fmt::g(peak)
        )),
        _ => None,
    }
}

/// T1's preemptions in words, with whether the engine logs each one.
fn preemption_sentence(report: &Report) -> Option<String> {
    let run = report.run;
    let k = value(report.account.happened.preemptions)?;
    if k > 0.0 {
        let logged = if run.engine.logs_each_eviction {
            format!("{} logs each one", run.engine.name)
        } else {
            format!(
                "{} writes no log line for this, so only its counter shows it",
                run.engine.name
            )
        };
        return Some(format!(
            "To make room it {} {} running request{}, which then started over; {logged}.",
            preempted(run.engine),
            thousands(k),
            fmt::plural(k)
        ));
    }
    find(report.results, Tripwire::T1)
        .is_some_and(|r| r.status == Status::Pass)
        .then(|| format!("It {} no running request.", preempted(run.engine)))
}

/// The load tool's own account in one sentence: `GuideLLM 0.8.1 sent 32 requests: 26
/// completed and 6 failed (500 Internal Server Error).`
fn client_sentence(account: &inferlint_core::model::client::ClientAccount) -> String {
    let tool = account.tool_label();
    let completed = account.completed.unwrap_or(0).max(0);
    let failed = account.failed_count().unwrap_or(0).max(0);
    let incomplete = account.incomplete_count().unwrap_or(0).max(0);
    let mut parts = vec![format!("{completed} completed")];
    if failed > 0 {
        let mut words = format!("{failed} failed");
        if let Some(reason) = account.failure_reasons.iter().max_by_key(|r| r.count) {
            words.push_str(&format!(" ({})", reason.reason));
        }
        parts.push(words);
    }
    if incomplete > 0 {
        parts.push(format!("{incomplete} did not finish"));
    }
    let sent = match account.sent {
        Some(n) => format!("sent {}", count(n as f64, "request")),
        None => "counted its requests".to_owned(),
    };
    format!("{tool} {sent}: {}.", and_list(&parts))
}

struct Tile {
    label: String,
    value: String,
    sub: Option<String>,
    status: Option<Status>,
}

/// The figures of "What happened" as tiles: each from the account, with its verdict's
/// badge where a tripwire judged it.
fn tiles(report: &Report) -> Vec<Tile> {
    [
        ran_at_once_tile(report),
        preemptions_tile(report),
        throughput_tile(report),
        servers_window_tile(report),
        first_token_tile(report),
        usable_blocks_tile(report),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// T8's peak against the concurrency asked for, else the recording's peak alone.
fn ran_at_once_tile(report: &Report) -> Option<Tile> {
    let run = report.run;
    let account = report.account;
    let t8 = find(report.results, Tripwire::T8);
    let Some(peak) = value(account.happened.peak_running) else {
        let peak = run.series.as_ref()?.peak_running?;
        return Some(Tile {
            label: "Ran at once".into(),
            value: fmt::g(peak),
            sub: Some("at most; the concurrency asked for is not known".into()),
            status: None,
        });
    };
    Some(Tile {
        label: "Ran at once".into(),
        value: match value(account.load.requested) {
            Some(n) => format!("{} of {}", fmt::g(peak), fmt::g(n)),
            None => fmt::g(peak),
        },
        sub: Some(if run.engine.gauges_lag {
            format!(
                "the most running requests the recording shows; {} updates that gauge only when a request completes",
                run.engine.name
            )
        } else {
            "the most running requests the recording shows".into()
        }),
        status: t8.map(|r| r.status),
    })
}

/// T1's preemptions (`?` when it could not count them).
fn preemptions_tile(report: &Report) -> Option<Tile> {
    let run = report.run;
    let t1 = find(report.results, Tripwire::T1)?;
    Some(Tile {
        label: preemption_heading(run.engine.preemption_word),
        value: value(report.account.happened.preemptions).map_or_else(|| "?".into(), thousands),
        sub: Some(if run.engine.logs_each_eviction {
            format!("{} logs each one", run.engine.name)
        } else {
            "the server log mentions none".into()
        }),
        status: Some(t1.status),
    })
}

/// The run's throughput ([`inferlint_core::story::insights::throughput_headline`]): the load
/// tool's own figure over the requests it timed. Where the run has none, the server's
/// count over the readings' window, said as such, with T10's verdict.
fn throughput_tile(report: &Report) -> Option<Tile> {
    let headline = inferlint_core::story::insights::throughput_headline(report.account)?;
    if headline.load_tools {
        return Some(Tile {
            label: "Output tokens per second".into(),
            value: headline.value,
            sub: Some(headline.what),
            status: None,
        });
    }
    let mut sub = headline.what;
    sub.push_str(&whole_second_words(report));
    Some(Tile {
        label: "Output tokens per second".into(),
        value: headline.value,
        sub: Some(sub),
        status: find(report.results, Tripwire::T10).map(|r| r.status),
    })
}

/// T10's rate between the readings beside the load tool's throughput: the server's count
/// over the readings' window, with what a whole-second timer would say and T10's verdict.
fn servers_window_tile(report: &Report) -> Option<Tile> {
    let headline = inferlint_core::story::insights::throughput_headline(report.account)?;
    let (rate, window) = headline.servers_window?;
    let mut sub = format!(
        "over the {window:.3} s between the two readings, which also hold what the load tool did not time"
    );
    sub.push_str(&whole_second_words(report));
    Some(Tile {
        label: "The server's count over the readings' window".into(),
        value: format!("{rate:.2}"),
        sub: Some(sub),
        status: find(report.results, Tripwire::T10).map(|r| r.status),
    })
}

/// `; a whole-second timer would say 275.00 (-0.37%)` (T10), or nothing.
fn whole_second_words(report: &Report) -> String {
    let happened = &report.account.happened;
    match (
        value(happened.whole_second_rate),
        value(happened.whole_second_error),
    ) {
        (Some(naive), Some(error)) => format!(
            "; a whole-second timer would say {naive:.2} ({})",
            fmt::signed_percent(error, 2)
        ),
        _ => String::new(),
    }
}

/// The load tool's median time to first token, with its p99.
fn first_token_tile(report: &Report) -> Option<Tile> {
    let happened = &report.account.happened;
    let median = value(happened.median_ttft_ms)?;
    Some(Tile {
        label: "Time to first token, median".into(),
        value: inferlint_core::story::insights::format_duration_ms(median),
        sub: value(happened.p99_ttft_ms).map(|p| {
            format!(
                "p99 {}; from the load tool's result file",
                inferlint_core::story::insights::format_duration_ms(p)
            )
        }),
        status: None,
    })
}

/// T14's usable blocks against the blocks the server reports.
fn usable_blocks_tile(report: &Report) -> Option<Tile> {
    let setup = &report.account.setup;
    let usable = value(setup.inferred_blocks)?;
    let mut sub = String::new();
    if let Some(reported) = value(setup.reported_blocks) {
        let held = reported - usable;
        sub.push_str(&format!(
            "{} reported, {} held back",
            thousands(reported),
            if held == 1.0 {
                "one".to_owned()
            } else {
                thousands(held)
            }
        ));
    }
    if let Some(block) = value(setup.block_tokens) {
        sub.push_str(&format!(
            "; {} tokens per block",
            fmt::thousands(block as i64)
        ));
    }
    Some(Tile {
        label: "Usable KV blocks".into(),
        value: thousands(usable),
        sub: Some(sub),
        status: find(report.results, Tripwire::T14).map(|r| r.status),
    })
}

/// `8 of 17. Not here: T2 and T3 (run at clean-up), ...` (of every tripwire the catalogue
/// has). A tripwire core listed as
/// not checked is named with what core said it needs.
pub fn tripwires_checked(report: &Report) -> String {
    let ran: Vec<Tripwire> = Tripwire::all()
        .filter(|t| {
            report
                .results
                .iter()
                .any(|r| r.tripwire == *t && r.status.is_verdict())
        })
        .collect();
    let parts: Vec<String> = without_verdict(report.results, report.run.engine)
        .iter()
        .map(|group| {
            let names: Vec<String> = group.tripwires.iter().map(ToString::to_string).collect();
            let reason = if group.tripwires.len() == 1 {
                &group.one
            } else {
                &group.many
            };
            format!("{} ({reason})", and_list(&names))
        })
        .collect();
    let of = inferlint_core::story::catalogue::all().len();
    if parts.is_empty() {
        format!("{} of {of}.", ran.len())
    } else {
        format!("{} of {of}. Not here: {}", ran.len(), parts.join(", "))
    }
}

/// `32: 32 reached their token limit, no errors`.
fn finished_text(s: &CounterSummary) -> Option<String> {
    let finished = s.finished?;
    if s.finished_by_reason.is_empty() {
        return Some(thousands(finished));
    }
    let mut parts = Vec::new();
    let mut errors_seen = false;
    for (reason, n) in &s.finished_by_reason {
        let n = *n;
        if reason == "error" {
            errors_seen = true;
            parts.push(if n == 0.0 {
                "no errors".to_owned()
            } else {
                format!("{} ended in an error", thousands(n))
            });
            continue;
        }
        if n == 0.0 {
            continue;
        }
        let what = match reason.as_str() {
            "length" => "reached their token limit".to_owned(),
            "stop" => "stopped at an end token".to_owned(),
            "abort" => "were aborted".to_owned(),
            "repetition" => "were stopped for repeating".to_owned(),
            other => format!("finished as {other}"),
        };
        parts.push(format!("{} {what}", thousands(n)));
    }
    if !errors_seen {
        parts.push("errors not counted".into());
    }
    Some(format!("{}: {}", thousands(finished), parts.join(", ")))
}

fn per_request(total: f64, finished: Option<f64>) -> String {
    match finished.filter(|f| *f > 0.0) {
        Some(f) => format!(
            "{} ({} per request)",
            thousands(total.round()),
            fmt::thousands_f(total / f)
        ),
        None => thousands(total.round()),
    }
}

/// "What happened": the story, the tiles of its figures, the test's and the setup's
/// facts, and the words the report uses.
pub fn what_happened(report: &Report) -> Markup {
    let summary_result = summary(report);
    let summary = summary_result.as_ref().ok().and_then(Option::as_ref);
    let is_restart = summary_result.is_err();
    let story = if is_restart {
        vec!["The server restarted between the before and the after reading, so its counters say nothing about this run.".to_owned()]
    } else {
        story(report)
    };
    let tiles = tiles(report);
    html! {
        section #happened aria-labelledby="happened-h" {
            h2 #happened-h { "What happened" }
            @if !story.is_empty() {
                p.lede { (story.join(" ")) }
            }
            @if !tiles.is_empty() {
                ul.tiles {
                    @for tile in &tiles {
                        li.tile {
                            span.label { (tile.label) }
                            span.value { (tile.value) }
                            @if let Some(sub) = &tile.sub {
                                span.sub { (sub) }
                            }
                            @if let Some(status) = tile.status {
                                (badge(status))
                            }
                        }
                    }
                }
            }
            div.facts {
                (the_test(report, summary, is_restart))
                (the_setup(report))
            }
            (words_used(report))
        }
    }
}

/// The test's facts: its span and clock times, the server's start-up, and the counters'
/// count of what finished.
fn the_test(report: &Report, summary: Option<&CounterSummary>, is_restart: bool) -> Markup {
    let run = report.run;
    let happened = &report.account.happened;
    let startup = run.last_boot().and_then(BootFacts::startup);
    let clock = match (
        run.before.as_ref().and_then(|b| b.t_wall),
        run.after.as_ref().and_then(|a| a.t_wall),
    ) {
        (Some(a), Some(b)) => match (fmt::utc(a), fmt::utc(b)) {
            (Some(from), Some(to)) => Some(format!("from {from} to {to}")),
            _ => None,
        },
        _ => None,
    };
    html! {
        div {
            h3 { "The test" }
            dl {
                @if let Some(load) = value(happened.client_duration_s) {
                    dt { "The load's span" }
                    dd { (format!("{load:.1} s")) ", as the load tool timed its requests" }
                }
                @if let Some(span) = value(happened.readings_span_s) {
                    dt { "The readings' window" }
                    dd {
                        (format!("{span:.3} s"))
                        @if let Some(u) = value(happened.readings_span_uncertainty_s) {
                            (format!(" \u{b1} {u:.3} s"))
                        }
                        " between the before and the after reading"
                    }
                }
                @if let Some(clock) = &clock {
                    dt { "Clock time" }
                    dd { (clock) }
                }
                @if let Some(s) = &startup {
                    dt { "Server start-up" }
                    dd { (format!("{:.1} s ({} to {})", s.seconds, s.first_time, s.ready_time)) " by its log" }
                }
                @if is_restart {
                    dt { "Counters" }
                    dd { "not comparable: the server restarted between the readings" }
                }
                @if let Some(s) = summary {
                    @if let Some(text) = finished_text(s) {
                        dt { "Requests finished" }
                        dd { (text) }
                    }
                    @if let Some(out) = s.output_tokens {
                        dt { "Output tokens" }
                        dd { (per_request(out, s.finished)) }
                    }
                    @if let Some(prompt) = s.prompt_tokens {
                        dt { "Prompt tokens" }
                        dd { (per_request(prompt, s.finished)) }
                    }
                    @if let Some(e2e) = s.mean_e2e_s {
                        dt { "Mean time per request" }
                        dd { (format!("{e2e:.1} s")) }
                    }
                    @if let Some(ttft) = s.mean_ttft_s {
                        dt { "Mean wait for the first token" }
                        dd {
                            (format!("{ttft:.1} s"))
                            @if let Some(q) = s.mean_queue_s {
                                (format!(", {q:.1} s of it in the queue"))
                            }
                        }
                    }
                }
                @if summary.is_none() && !is_restart {
                    dt { "Counters" }
                    dd.muted { "no before and after readings, so no counts" }
                }
            }
        }
    }
}

/// The setup's facts: the load asked for, who sent it, the recording, the address, the
/// files read and the tripwires checked.
fn the_setup(report: &Report) -> Markup {
    let run = report.run;
    let address = report.series_url.map(str::to_owned).or_else(|| {
        run.after
            .as_ref()
            .map(|a| a.url.clone())
            .filter(|u| !u.starts_with("file:"))
    });
    html! {
        div {
            h3 { "The setup" }
            dl {
                dt { "Concurrency asked for" }
                dd {
                    @match run.requested {
                        Some(n) => (n),
                        None => span.muted { "not known (give --requested, or the load tool's result file)" },
                    }
                }
                dt { "Requests sent by" }
                dd {
                    @match &run.bench {
                        Some((name, bench)) => {
                            @match &bench.backend {
                                Some(backend) => { "a load tool with backend " code { (backend) } ", result file " code { (name) } }
                                None => { "a load tool, result file " code { (name) } }
                            }
                        },
                        None => span.muted { "a load tool that left no result file here" },
                    }
                }
                @if let Some(t) = report.timeline {
                    dt { "Recording" }
                    dd {
                        (count(t.samples as f64, "reading"))
                        @if let Some(i) = t.setup.interval_s {
                            (format!(", every {} s", fmt::g(i)))
                        }
                        @if let Some(b) = t.bucket_s {
                            (format!("; the charts draw {} stretches of {}, each with its lowest and highest reading", t.points.len(), duration(b)))
                        }
                    }
                }
                @if let Some(address) = &address {
                    dt { "Server address" }
                    dd { code { (address) } }
                }
                @if !report.made_from.is_empty() {
                    dt { "Made from" }
                    dd { (report.made_from.join(", ")) }
                }
                dt { "Tripwires checked" }
                dd { (tripwires_checked(report)) }
            }
        }
    }
}

/// The glossary under "What happened".
fn words_used(report: &Report) -> Markup {
    html! {
        details.glossary {
            summary { "Words used in this report" }
            dl {
                dt { "KV cache" }
                dd { "The GPU memory where the server keeps each request's working notes (its keys and values) while it answers. It is handed out in blocks of a fixed number of tokens." }
                dt { "KV pool" }
                dd { "How many tokens the KV cache holds in all, as the server's start-up log says." }
                dt { "Running, waiting" }
                dd { "Requests the server is working on, and requests it has accepted but not started: they wait in its queue." }
                dt { "Concurrency" }
                dd { "How many requests run at once. The load tool sets how many it keeps open; the server decides how many of them run." }
                dt { (preemption_heading(report.run.engine.preemption_word)) }
                dd { "When the cache is full, the server evicts a running request, frees its blocks and later starts it over, redoing its work." }
                dt { "Fit in the cache" }
                dd { "How many requests of the sizes running at that moment the cache could hold, from the share of the cache each running request held. It falls as answers grow." }
                dt { "Time to first token" }
                dd { "From sending a request to receiving its first output token: time in the queue plus the prompt's processing." }
            }
        }
    }
}

/// The note under the result counts.
fn status_note(report: &Report) -> Option<String> {
    let failed: Vec<&CheckResult> = report
        .results
        .iter()
        .filter(|r| r.status == Status::Fail)
        .collect();
    if failed.is_empty() {
        return None;
    }
    let mut server_failed: Vec<String> = failed
        .iter()
        .filter(|r| r.tripwire == Tripwire::T7 || r.tripwire == Tripwire::T12)
        .map(|r| r.tripwire.to_string())
        .collect();
    server_failed.sort_by_key(|t| t.trim_start_matches('T').parse::<u8>().unwrap_or(0));
    server_failed.dedup();
    if !server_failed.is_empty() {
        return Some(format!(
            "{}: the server itself failed. Read the finding below before any number from this run.",
            and_list(&server_failed)
        ));
    }
    let mut note = "The server worked; the failed tripwires are about the measurement: a number from this run does not mean what it seems.".to_owned();
    if let Ok(Some(s)) = summary(report) {
        if let Some(finished) = s.finished {
            match requests_in_error(report.run) {
                Some(0.0) => note.push_str(&format!(
                    " The server finished {} with no errors.",
                    count(finished, "request")
                )),
                _ => note.push_str(&format!(
                    " The server finished {}.",
                    count(finished, "request")
                )),
            }
        }
    }
    Some(note)
}

fn evidence_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => fmt::g(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn finding(result: &CheckResult, index: usize, engine: Engine, full: bool) -> Markup {
    let info = catalogue::get(result.tripwire);
    let note = info
        .engine_notes
        .iter()
        .find(|(e, _)| *e == engine)
        .map(|(_, n)| *n);
    html! {
        article class={"finding " (status_class(result.status))} id={"finding-" (index)} {
            h3 {
                (badge(result.status))
                " "
                span.tw { (result.tripwire.to_string()) }
                " " (info.name)
            }
            p.message { (result.message) }
            @for advice in &result.advice {
                p.advice { strong { "What to change: " } (advice) }
            }
            @if full {
                p.why { strong { "Why it matters: " } (catalogue::why_in_run(result)) }
                @if let Some(note) = note {
                    p.why { strong { "On " (engine.name()) ": " } (note) }
                }
            }
            @if !result.evidence.is_empty() {
                details.evidence {
                    summary { "Evidence" }
                    dl {
                        @for (key, value) in &result.evidence {
                            dt { (key) }
                            dd { (evidence_value(value)) }
                        }
                    }
                }
            }
            p.check { "Check: " code { (info.command) } }
        }
    }
}

pub fn results(report: &Report) -> Markup {
    let mut ordered: Vec<(usize, &CheckResult)> = report.results.iter().enumerate().collect();
    ordered.sort_by_key(|(i, r)| (r.status, r.tripwire.number(), *i));
    let count_of = |s: Status| report.results.iter().filter(|r| r.status == s).count();
    let (full, folded): (Vec<_>, Vec<_>) = ordered
        .iter()
        .partition(|(_, r)| matches!(r.status, Status::Fail | Status::Warn | Status::Unknown));
    let passed = count_of(Status::Pass);
    let not_applicable = count_of(Status::NotApplicable);
    let not_checked = count_of(Status::NotChecked);
    let engine = report.run.engine.engine;
    let mut fold_line = if full.is_empty() && passed > 0 {
        format!("All {passed} checks passed")
    } else {
        format!("{passed} passed")
    };
    match not_applicable {
        0 => {}
        1 => fold_line.push_str(&format!("; 1 does not apply to {}", report.run.engine.name)),
        n => fold_line.push_str(&format!("; {n} do not apply to {}", report.run.engine.name)),
    }
    if not_checked > 0 {
        fold_line.push_str(&format!("; {not_checked} not checked"));
    }
    html! {
        section #results aria-labelledby="results-h" {
            h2 #results-h { "Results" }
            @if report.results.is_empty() {
                p { "No check could run on the files given." }
            } @else {
                p.chips {
                    @for status in STATUSES {
                        @let n = count_of(status);
                        @if n > 0 || !matches!(status, Status::NotApplicable | Status::Unknown | Status::NotChecked) {
                            span class={"chip " (status_class(status))} {
                                span.icon aria-hidden="true" { (status_icon(status)) }
                                " " (n) " " (status.human())
                            }
                        }
                    }
                }
                @if let Some(note) = status_note(report) {
                    p.status-note { (note) }
                }
                details.glossary {
                    summary { "What the verdicts mean" }
                    table {
                        thead { tr { th scope="col" { "Verdict" } th scope="col" { "What it means" } th scope="col" { "What to do" } } }
                        tbody {
                            @for status in STATUSES {
                                @let (meaning, todo) = status_meaning(status);
                                tr {
                                    th scope="row" { (badge(status)) }
                                    td { (meaning) }
                                    td { (todo) }
                                }
                            }
                        }
                    }
                }
                @for (i, r) in &full {
                    (finding(r, *i, engine, true))
                }
                @if !folded.is_empty() {
                    details.passed {
                        summary { (fold_line) }
                        @for (i, r) in &folded {
                            (finding(r, *i, engine, false))
                        }
                    }
                }
            }
        }
    }
}

fn gib(v: f64) -> String {
    fmt::memory(v)
}

fn setting_text(v: &PyValue) -> String {
    match v {
        PyValue::Str(s) | PyValue::Raw(s) => s.clone(),
        other => other.canonical(),
    }
}

/// The settings worth showing: the ones the log says were changed, else those the
/// engine's table names from a list of every setting, else the first 20.
fn main_settings(engine: &EngineDescriptor, boot: &BootFacts) -> Vec<(String, String)> {
    if let Some(args) = &boot.non_default_args {
        return args
            .iter()
            .filter(|(k, _)| k.as_str() != "model" && k.as_str() != "model_tag")
            .map(|(k, v)| (k.clone(), setting_text(v)))
            .collect();
    }
    if let Some(args) = &boot.server_args {
        if !engine.settings_shown.is_empty() {
            return engine
                .settings_shown
                .iter()
                .filter_map(|k| args.get(*k).map(|v| ((*k).to_owned(), setting_text(v))))
                .collect();
        }
        return args
            .iter()
            .take(20)
            .map(|(k, v)| (k.clone(), setting_text(v)))
            .collect();
    }
    Vec::new()
}

/// What the boot log says beyond the setup: how the server failed, the lines it wrote
/// that the parser could not read, and its main settings (`dt`/`dd` pairs of the
/// server's list).
fn log_facts(engine: &EngineDescriptor, boot: &BootFacts) -> Markup {
    let settings = main_settings(engine, boot);
    html! {
        @if let Some(f) = &boot.failure {
            dt { "Failure" }
            dd {
                strong { (f.kind) } " during " (f.phase.word()) ", line " (f.lineno)
                @if let Some(detail) = &f.detail { ": " (detail) }
                br;
                code.logline { (f.line) }
            }
        }
        @if !boot.unparsed.is_empty() {
            dt { "Lines not understood" }
            dd {
                (boot.unparsed.len()) " recognised line(s) in an unknown format"
                ul {
                    @for u in boot.unparsed.iter().take(10) {
                        li { "line " (u.lineno) " (" (u.field) "): " code.logline { (u.text) } }
                    }
                }
            }
        }
        @if !settings.is_empty() {
            dt { "Main settings" }
            dd {
                ul.settings {
                    @for (k, v) in &settings {
                        li { code { (k) } " = " code { (v) } }
                    }
                }
            }
        }
    }
}

pub fn server(report: &Report) -> Markup {
    let run = report.run;
    let engine = run.engine;
    let Some(boot) = run.last_boot() else {
        return html! {
            section #server aria-labelledby="server-h" {
                h2 #server-h { "The server that ran" }
                p.muted { "No boot log was given, so nothing is known about how the server set itself up." }
            }
        };
    };
    let label = run.boots.last().map(|(l, _)| l.as_str()).unwrap_or("");
    // The account's one block size, the figure the advice and the capacity use: as the
    // log printed it, as the readings' cache info states it (vLLM's CPU build prints none
    // and uses 128), else the engine's default for a server that came up without saying.
    let block = match report.account.setup.block_tokens {
        Some(Figure { value, from }) => {
            let tokens = fmt::thousands(value as i64);
            match from {
                Source::BootLog if boot.page_size.is_some() => {
                    format!("{tokens} tokens (page size)")
                }
                Source::Readings => format!("{tokens} tokens (the server's cache info)"),
                Source::EngineDefault if boot.ready() => format!("{tokens} tokens (default)"),
                Source::EngineDefault => "not in the log".into(),
                _ => format!("{tokens} tokens"),
            }
        }
        None => "not in the log".into(),
    };
    html! {
        section #server aria-labelledby="server-h" {
            h2 #server-h { "The server that ran" }
            @if run.boots.len() > 1 {
                p { "From the last of " (run.boots.len()) " boot logs, " code { (label) } ", the one that covers the run." }
            }
            dl.server-facts {
                dt { (engine.name) }
                dd {
                    @match &boot.version {
                        Some(v) => (v),
                        None => span.muted { "version not in the log" },
                    }
                }
                @if let Some(model) = model_name(boot) {
                    dt { "Model" }
                    dd { (model) }
                }
                dt { "KV pool" }
                dd {
                    @match boot.kv_pool_tokens {
                        Some(p) => (format!("{} tokens", fmt::thousands(p as i64))),
                        None => span.muted { "not in the log" },
                    }
                }
                dt { "Attention block" }
                dd { (block) }
                @if !boot.selected_backends.is_empty() {
                    dt { "Attention backend" }
                    dd {
                        (boot.selected_backends.join(", "))
                        @match &boot.requested_backend {
                            Some(r) => { " (asked for " (r) ")" },
                            None => { " (chosen by " (engine.name) ")" },
                        }
                    }
                }
                @if !boot.drafter_backends.is_empty() {
                    dt { "Draft model's backend" }
                    dd { (boot.drafter_backends.join(", ")) }
                }
                @if let Some(kv) = report.account.setup.kv_cache_gib.map(|f| f.value) {
                    dt { "KV cache memory" }
                    dd { (gib(kv)) }
                }
                @if let Some(graphs) = boot.cudagraphs {
                    dt { "CUDA graphs" }
                    dd {
                        (if graphs { "on" } else { "off" })
                        @if let Some(g) = boot.cudagraph_actual_gib.or(boot.cudagraph_estimated_gib) {
                            ", " (gib(g))
                        }
                    }
                }
                @if let Some(c) = boot.max_concurrency {
                    dt { "Max concurrency at start-up" }
                    dd {
                        (fmt::g(c))
                        @if let Some(len) = boot.max_concurrency_request_len {
                            (format!(" requests of {} tokens", fmt::thousands(len as i64)))
                        }
                        ", as the log says"
                    }
                }
                @if let Some(cap) = boot.running_cap {
                    dt { "Running limit" }
                    dd {
                        (cap)
                        @if let Some(reason) = &boot.running_cap_reason {
                            ", lowered because of the " (reason)
                        }
                    }
                }
                @if let Some(load) = boot.model_load_gib {
                    dt { "Model load" }
                    dd {
                        (gib(load))
                        @if let Some(s) = boot.model_load_s { (format!(" in {s:.1} s")) }
                    }
                }
                (log_facts(engine, boot))
            }
            (charts::memory(boot))
            (charts::pools(run))
        }
    }
}

pub fn guide(report: &Report) -> Markup {
    let engine = report.run.engine.engine;
    html! {
        section #guide aria-labelledby="guide-h" {
            h2 #guide-h { "The " (inferlint_core::story::catalogue::all().len()) " tripwires" }
            p { "Grouped by when in a test each applies. Open one for what goes wrong, why it changes the numbers, what differs on " (engine.name()) " where something does, and the command that checks it." }
            @for (stage, tripwires) in catalogue::stages() {
                h3 { (stage) }
                @for t in tripwires.iter() {
                    @let info = catalogue::get(*t);
                    details.tripwire {
                        summary { span.tw { (info.tripwire.to_string()) } " " (info.name) }
                        p { (info.what) }
                        p { strong { "Why it changes the numbers: " } (info.why) }
                        @for (e, note) in info.engine_notes {
                            @if *e == engine {
                                p { strong { "On " (e.name()) ": " } (note) }
                            }
                        }
                        p { "Check: " code { (info.command) } }
                    }
                }
            }
        }
    }
}

pub fn footer(report: &Report) -> Markup {
    html! {
        footer {
            p {
                "Written by " (report.generator) ". This page is one file: it needs no network and loads nothing."
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The story on accounts made by hand: each sentence's figure is the account's, and a
    //! verdict's evidence that says otherwise changes nothing.

    use inferlint_core::engine::{EngineDescriptor, SGLANG, VLLM};
    use inferlint_core::run::Run;
    use inferlint_core::story::account::{Account, Figure, Source};
    use inferlint_core::{CheckResult, Status, Tripwire};

    use super::story;
    use crate::report::Report;

    fn run(engine: &'static EngineDescriptor) -> Run {
        Run::empty(engine)
    }

    fn from(value: f64, from: Source) -> Option<Figure> {
        Some(Figure { value, from })
    }

    fn told(run: &Run, results: &[CheckResult], account: &Account) -> Vec<String> {
        story(&Report {
            run,
            results,
            account,
            insights: &[],
            timeline: None,
            series_url: None,
            title: None,
            made_from: &[],
            generator: "inferlint (test)",
        })
    }

    /// 32 asked for, 10 ran: the span, the server's count, the peak and the queue are
    /// the account's. T8's evidence says 99 ran at once, and the story still says 10.
    /// The load's span is the 99.0 s the load tool timed, never the 119.6 s between the
    /// readings, which also hold its start, warm-up and wind-down.
    #[test]
    fn a_held_back_run_is_told_from_its_account() {
        let run = run(&VLLM);
        let results = [
            CheckResult::new(Tripwire::T8, Status::Fail, "held back").with("peak_running", 99.0),
            CheckResult::new(Tripwire::T1, Status::Pass, "none"),
        ];
        let mut account = Account::default();
        account.load.requested = from(32.0, Source::CommandLine);
        account.load.finished = from(32.0, Source::Readings);
        account.happened.readings_span_s = from(119.6, Source::Readings);
        account.happened.client_duration_s = from(99.0, Source::ResultFile);
        account.happened.generated_tokens = from(16_384.0, Source::Readings);
        account.happened.peak_running = from(10.0, Source::Recording);
        account.happened.mean_queue_s = from(41.24, Source::Readings);
        account.happened.preemptions = from(0.0, Source::Readings);
        assert_eq!(
            told(&run, &results, &account),
            [
                "The load tool kept 32 requests open for 99.0 s, as it timed them.",
                "The server finished 32 requests and generated 16,384 tokens.",
                "But it never worked on more than 10 at once: the others waited in its queue, 41.2 s on average before a request started.",
                "It preempted no running request.",
            ]
        );
    }

    /// No concurrency and no load tool known: the readings' window, said as such and not
    /// as the load's length. T8 passed at the account's peak; the
    /// account's 7 retractions are told in SGLang's word, and SGLang logs each one.
    #[test]
    fn preemptions_are_counted_in_the_engines_word() {
        let run = run(&SGLANG);
        let results = [
            CheckResult::new(Tripwire::T8, Status::Pass, "all ran"),
            CheckResult::new(Tripwire::T1, Status::Fail, "retracted").with("preemptions", 1.0),
        ];
        let mut account = Account::default();
        account.happened.readings_span_s = from(45.0, Source::Readings);
        account.happened.peak_running = from(32.0, Source::Recording);
        account.happened.preemptions = from(7.0, Source::Readings);
        assert_eq!(
            told(&run, &results, &account),
            [
                "The readings are 45.0 s apart; no load tool's result file says how long the load itself ran.",
                "It ran 32 requests at once, as many as the load asked for.",
                "To make room it retracted 7 running requests, which then started over; SGLang logs each one.",
            ]
        );
    }

    /// The load tool's count is not the server's: the story says what the server finished
    /// only from the readings. A T8 that could not tell says nothing of the peak, and a
    /// run with no span and no recording says nothing of its length.
    #[test]
    fn what_the_account_does_not_hold_is_not_told() {
        let run = run(&VLLM);
        let results = [
            CheckResult::new(Tripwire::T8, Status::Unknown, "no recording"),
            CheckResult::new(Tripwire::T1, Status::Unknown, "no readings"),
        ];
        let mut account = Account::default();
        account.load.requested = from(8.0, Source::CommandLine);
        account.load.finished = from(8.0, Source::ResultFile);
        account.happened.peak_running = from(8.0, Source::Recording);
        assert!(told(&run, &results, &account).is_empty());
        // The same verdicts with evidence, and an empty account: still nothing.
        let results = [
            CheckResult::new(Tripwire::T8, Status::Fail, "held back")
                .with("peak_running", 4.0)
                .with("requested", 8),
            CheckResult::new(Tripwire::T10, Status::Pass, "rate").with("span_s", 60.0),
            CheckResult::new(Tripwire::T1, Status::Warn, "some").with("preemptions", 3.0),
        ];
        assert!(told(&run, &results, &Account::default()).is_empty());
    }
}
