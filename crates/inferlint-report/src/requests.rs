//! "Each request": the load tool's own record of every request, drawn on the recording's
//! clock under the requests the server was running, and the spread of its times to first
//! token and between tokens.
//!
//! Core lines the requests up with the recording ([`RequestTimeline`]) and decides what
//! the waits mean ("What limited this run"); this module only draws them and bins them
//! for the histograms.

use std::collections::HashMap;

use inferlint_core::model::client::{ClientAccount, RequestOutcome};
use inferlint_core::model::lives::{JoinedBy, Lives};
use inferlint_core::model::requests::{RequestTimeline, RequestTimes};
use inferlint_core::story::fmt;
use inferlint_core::story::insights::format_duration_ms;
use maud::{html, Markup};

use crate::report::Report;
use crate::svg::{gauge_path, window_ticks, y_axis, Frame, WIDTH};
use crate::timeline::Timeline;
use crate::words::moment;

/// The most requests drawn one row each; beyond it every n-th is drawn.
const MAX_ROWS_DRAWN: usize = 400;
/// The most rows of the requests' data table.
const MAX_TABLE_ROWS: usize = 200;
/// Bars of a histogram.
const BINS: usize = 24;

pub fn section(report: &Report) -> Markup {
    let Some((name, account)) = &report.run.bench else {
        return html! {};
    };
    if account.requests.is_empty() {
        let flag = account.tool.info().details_flag;
        return html! {
            section #requests aria-labelledby="requests-h" {
                h2 #requests-h { "Each request" }
                p.muted {
                    (account.tool_label()) "'s result (" (name) ") keeps no record of each request, so the requests cannot be drawn one by one."
                    @if let Some(flag) = flag { " Run it with " (flag) " to keep them." }
                }
            }
        };
    }
    let timeline = report.run.request_timeline();
    let server = server_lives(report);
    html! {
        section #requests aria-labelledby="requests-h" {
            h2 #requests-h { "Each request" }
            p { (summary_sentence(account)) }
            @if let Some(sentence) = join_sentence(report, &server) { p { (sentence) } }
            @match &timeline {
                Some(Ok(t)) => (timeline_figure(report, account, t, &server)),
                Some(Err(why)) => p.note { "No timeline of the requests: " (why) "." },
                None => p.muted { "No recording of the run was given, so the requests cannot be lined up with what the server did." },
            }
            (ttft_figure(account))
            (itl_figure(account))
            (crate::kv_lane::figure(report))
            (crate::steps_lane::figure(report))
        }
    }
}

/// Each request's life as the server recorded it, on the recording's axis (seconds from
/// its first sample, the axis the load tool's rows are drawn on), by the row's index.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ServerLife {
    /// When the server received it.
    arrival: f64,
    /// When its scheduler first ran it (arrival plus its time in the queue).
    scheduled: Option<f64>,
    /// Its first token, by the server's clock.
    first_token: Option<f64>,
    /// Its last, by the server's clock.
    end: Option<f64>,
    /// Times it was preempted, where the server says.
    preemptions: Option<u64>,
    /// What its arrival is (`received`, or `queued by the engine`).
    arrival_words: &'static str,
    /// Joined by id (else by send time and length).
    by_id: bool,
}

/// The load tool's rows joined with the server's records, and each joined row's server
/// life on the recording's axis; empty without both, or without a recording to place
/// the server's wall-clock times.
struct ServerView {
    lives: Option<Lives>,
    by_row: HashMap<usize, ServerLife>,
    /// What a record's arrival is (`received`, or `queued by the engine`).
    arrival: &'static str,
}

fn server_lives(report: &Report) -> ServerView {
    let lives = report.run.lives();
    let mut by_row = HashMap::new();
    let (Some(l), Some(server), Some(origin)) = (
        lives.as_ref(),
        report.run.server_requests.as_ref(),
        report.run.series.as_ref().and_then(|s| s.first_t_wall),
    ) else {
        return ServerView {
            lives,
            by_row,
            arrival: "received",
        };
    };
    for pair in &l.pairs {
        let record = &server.requests[pair.server];
        let Some(phases) = record.phases(origin) else {
            continue;
        };
        let (arrival, scheduled, first_token, end) = (
            phases.arrival,
            phases.scheduled,
            phases.first_token,
            phases.end,
        );
        by_row.insert(
            pair.client,
            ServerLife {
                arrival,
                scheduled,
                first_token,
                end,
                preemptions: record.preemptions,
                arrival_words: server.source.arrival_words(),
                by_id: pair.by == JoinedBy::Id,
            },
        );
    }
    ServerView {
        lives,
        by_row,
        arrival: server.source.arrival_words(),
    }
}

/// How the rows were joined with the server's own records, for the section's lead.
fn join_sentence(report: &Report, view: &ServerView) -> Option<String> {
    let server = report.run.server_requests.as_ref()?;
    let lives = view.lives.as_ref()?;
    let mut sentence = format!(
        "The server recorded {} request{} itself ({}, {}): {}.",
        server.requests.len(),
        fmt::plural(server.requests.len() as f64),
        server.source.words(),
        server.file,
        lives.summary()
    );
    if let Some(foreign) = lives.foreign(&server.file) {
        sentence.push_str(&format!(" {foreign}."));
    }
    Some(sentence)
}

/// `GuideLLM 0.8.1 kept a record of 32 requests: 26 completed, 6 failed.`
fn summary_sentence(account: &ClientAccount) -> String {
    let n = account.requests.len();
    let completed = account.records_with(RequestOutcome::Completed);
    let failed = account.records_with(RequestOutcome::Failed);
    let incomplete = account.records_with(RequestOutcome::Incomplete);
    let mut parts = vec![format!("{completed} completed")];
    if failed > 0 {
        parts.push(format!("{failed} failed"));
    }
    if incomplete > 0 {
        parts.push(format!("{incomplete} did not finish"));
    }
    format!(
        "{} kept a record of {n} request{}: {}.",
        account.tool_label(),
        fmt::plural(n as f64),
        crate::words::and_list(&parts)
    )
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// The requests as rows on the recording's time axis, under the running and waiting
/// gauges.
/// The figure's caption: which clock, what each mark is, how many failed, and which
/// rows are drawn when not all are.
fn caption(t: &RequestTimeline, stride: usize, joined: usize) -> String {
    let failed = t
        .requests
        .iter()
        .filter(|r| r.outcome == Some(RequestOutcome::Failed))
        .count();
    let mut caption = format!(
        "Each request the load tool sent, in the order it sent them, on the recording's clock ({}).",
        match t.clock {
            inferlint_core::model::client::RequestClock::Monotonic => "the host's monotonic clock, shared with the load tool",
            inferlint_core::model::client::RequestClock::Unix => "the wall clock",
        }
    );
    caption.push_str(" A thin line is the time it waited in the load tool for a free slot; the pale bar runs from sending it to its first token (the server's queue and prefill); the dark bar to its last token.");
    if joined > 0 {
        caption.push_str(&format!(
            " The {joined} request{} joined with the server's own record {} split by the server's clock instead: the way to the server and its front end, its queue, its prefill and its decode; a ring marks a request the server preempted.",
            fmt::plural(joined as f64),
            if joined == 1 { "is" } else { "are" }
        ));
    }
    if failed > 0 {
        caption.push_str(&format!(" {} failed: marked in red.", failed));
    }
    if stride > 1 {
        caption.push_str(&format!(
            " Every {}th of the {} requests is drawn.",
            stride,
            t.requests.len()
        ));
    }
    caption
}

fn timeline_figure(
    report: &Report,
    account: &ClientAccount,
    t: &RequestTimeline,
    server: &ServerView,
) -> Markup {
    let span = report
        .timeline
        .map_or(t.span_s, Timeline::span_s)
        .max(t.span_s);
    // The load's span, not the whole recording, where idle time surrounds it.
    let window = crate::charts::load_window(report, span);
    let (x_min, x_max) = window.map_or((0.0, if span > 0.0 { span } else { 1.0 }), |w| {
        (w.from, w.to)
    });
    let stride = t.requests.len().div_ceil(MAX_ROWS_DRAWN).max(1);
    let drawn: Vec<(usize, &RequestTimes)> = t
        .requests
        .iter()
        .enumerate()
        .filter(|(i, _)| i % stride == 0)
        .collect();
    let row = (360.0 / drawn.len().max(1) as f64).clamp(1.5, 10.0);
    // The server's gauges on top, the requests under them, one time axis.
    let gauges_height = if report.timeline.is_some() {
        120.0
    } else {
        0.0
    };
    let rows_top = 18.0 + gauges_height + if gauges_height > 0.0 { 14.0 } else { 0.0 };
    let height = rows_top + drawn.len() as f64 * row + 34.0;
    let frame = Frame {
        height,
        left: 56.0,
        right: 16.0,
        top: rows_top,
        bottom: 30.0,
        x_min,
        x_max,
        y_max: drawn.len().max(1) as f64,
    };
    let gauge_frame = report.timeline.map(|timeline| {
        let top = timeline
            .peak(|p| p.running)
            .into_iter()
            .chain(timeline.peak(|p| p.waiting))
            .fold(1.0, f64::max);
        let (y_max, ticks) = y_axis(top * 1.05);
        (
            Frame {
                height: 18.0 + gauges_height,
                bottom: 0.0,
                ..Frame::time_window(18.0 + gauges_height, x_min, x_max, y_max)
            },
            ticks,
            timeline,
        )
    });
    let y_of = |k: usize| frame.top + k as f64 * row;
    let bar = (row * 0.8).max(1.0);
    let caption = caption(t, stride, server.by_row.len());
    let phases = !server.by_row.is_empty();
    let label = format!(
        "{} requests over time, lined up with the requests the server was running",
        t.requests.len()
    );
    html! {
        figure.chart #fig-each-request {
            figcaption { h3 { "Each request, lined up with the server" } p { (caption) } }
            ul.legend {
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { line.s-running x1="1" x2="23" y1="5" y2="5" {} } " running (the server)" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { line.s-waiting x1="1" x2="23" y1="5" y2="5" {} } " waiting (the server)" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-wait x="1" y="2" width="22" height="6" {} } " sent, before its first token" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-gen x="1" y="2" width="22" height="6" {} } " generating" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-fail x="1" y="2" width="22" height="6" {} } " failed" }
                @if phases {
                    li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-front x="1" y="2" width="22" height="6" {} } " to the server, its front end" }
                    li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-queue x="1" y="2" width="22" height="6" {} } " the server's queue" }
                    li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-prefill x="1" y="2" width="22" height="6" {} } " prefill" }
                    li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.r-decode x="1" y="2" width="22" height="6" {} } " decode" }
                }
            }
            div.plot.static {
                svg viewBox=(frame.view_box()) role="img" aria-label=(label) {
                    g.axis aria-hidden="true" {
                        @for s in window_ticks(x_min, x_max) {
                            line.grid x1=(f1(frame.x(s))) x2=(f1(frame.x(s))) y1="18" y2=(f1(frame.baseline())) {}
                            text.xlabel x=(f1(frame.x(s))) y=(f1(height - 8.0)) { (moment(s, span)) }
                        }
                        line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(f1(frame.baseline())) y2=(f1(frame.baseline())) {}
                    }
                    @if let Some((g, ticks, timeline)) = &gauge_frame {
                        g.axis aria-hidden="true" {
                            @for v in ticks {
                                text.ylabel x=(g.left - 6.0) y=(f1(g.y(*v) + 4.0)) { (fmt::g(*v)) }
                            }
                            line.base x1=(g.left) x2=(WIDTH - g.right) y1=(f1(g.baseline())) y2=(f1(g.baseline())) {}
                        }
                        path.s-waiting d=(gauge_path(g, crate::charts::drawn(g, timeline), |p| p.waiting, false)) {}
                        path.s-running d=(gauge_path(g, crate::charts::drawn(g, timeline), |p| p.running, false)) {}
                    }
                    (crate::charts::idle_marks(&frame, window, false))
                    g.requests {
                        @for (k, (i, r)) in drawn.iter().enumerate() {
                            (request_row(&frame, y_of(k), bar, *i, r, account, server.by_row.get(&r.index)))
                        }
                    }
                }
            }
            (requests_table(t, account, server))
        }
    }
}

fn request_row(
    frame: &Frame,
    y: f64,
    bar: f64,
    index: usize,
    r: &RequestTimes,
    account: &ClientAccount,
    server: Option<&ServerLife>,
) -> Markup {
    let x = |t: f64| frame.x(t);
    let end = r.end.or(r.first_token).unwrap_or(r.sent);
    let title = request_title(index, r, account, server);
    let mid = y + bar / 2.0;
    let failed = r.outcome == Some(RequestOutcome::Failed);
    // A phase from `a` to `b`, at least half a pixel wide where it lasted at all.
    let span = |a: f64, b: f64| (f1(x(a)), f1((x(b) - x(a)).max(0.5)));
    html! {
        g.req.fail[failed] {
            title { (title) }
            @if let Some(s) = r.scheduled.filter(|s| *s < r.sent) {
                line.r-slot x1=(f1(x(s))) x2=(f1(x(r.sent))) y1=(f1(mid)) y2=(f1(mid)) {}
            }
            @if r.outcome == Some(RequestOutcome::Failed) {
                rect.r-fail x=(f1(x(r.sent))) y=(f1(y)) width=(f1((x(end) - x(r.sent)).max(2.0))) height=(f1(bar)) {}
            } @else if let Some(life) = server {
                @let arrival = life.arrival.max(r.sent);
                @let queued = life.scheduled.unwrap_or(arrival).max(arrival);
                @let first = life.first_token.unwrap_or(queued).max(queued);
                @let last = life.end.unwrap_or(end).max(first);
                @let (fx, fw) = span(r.sent, arrival);
                rect.r-front x=(fx) y=(f1(y)) width=(fw) height=(f1(bar)) {}
                @if queued > arrival {
                    @let (qx, qw) = span(arrival, queued);
                    rect.r-queue x=(qx) y=(f1(y)) width=(qw) height=(f1(bar)) {}
                }
                @if first > queued {
                    @let (px, pw) = span(queued, first);
                    rect.r-prefill x=(px) y=(f1(y)) width=(pw) height=(f1(bar)) {}
                }
                @if last > first {
                    @let (dx, dw) = span(first, last);
                    rect.r-decode x=(dx) y=(f1(y)) width=(dw) height=(f1(bar)) {}
                }
                @if end > last {
                    @let (ex, ew) = span(last, end);
                    rect.r-front x=(ex) y=(f1(y)) width=(ew) height=(f1(bar)) {}
                }
                @if life.preemptions.is_some_and(|p| p > 0) {
                    circle.r-preempted cx=(f1(x(last))) cy=(f1(mid)) r=(f1((bar * 0.7).max(2.5))) {}
                }
            } @else {
                @let first = r.first_token.unwrap_or(end);
                rect.r-wait x=(f1(x(r.sent))) y=(f1(y)) width=(f1((x(first) - x(r.sent)).max(0.5))) height=(f1(bar)) {}
                @if end > first {
                    rect.r-gen x=(f1(x(first))) y=(f1(y)) width=(f1((x(end) - x(first)).max(0.5))) height=(f1(bar)) {}
                }
            }
        }
    }
}

/// The hover text of one request, from the tool's own record.
fn request_title(
    index: usize,
    r: &RequestTimes,
    account: &ClientAccount,
    server: Option<&ServerLife>,
) -> String {
    let mut text = format!("Request {}: sent at {:.2} s", index + 1, r.sent);
    match r.outcome {
        Some(RequestOutcome::Failed) => {
            text.push_str(", failed");
            if let Some(e) = failed_error(r, account) {
                text.push_str(&format!(": {e}"));
            }
        }
        Some(RequestOutcome::Incomplete) => text.push_str(", did not finish"),
        _ => {
            if let Some(ttft) = r.ttft() {
                text.push_str(&format!(
                    ", first token after {}",
                    format_duration_ms(ttft * 1000.0)
                ));
            }
            if let Some(end) = r.end {
                text.push_str(&format!(", done at {end:.2} s"));
            }
        }
    }
    if let Some(life) = server {
        text.push_str(&format!(
            ". The server (joined by {}): {} {} after the send",
            if life.by_id {
                "id"
            } else {
                "send time and length"
            },
            life.arrival_words,
            format_duration_ms((life.arrival - r.sent) * 1000.0)
        ));
        if let Some(s) = life.scheduled {
            text.push_str(&format!(
                ", queued {}",
                format_duration_ms((s - life.arrival) * 1000.0)
            ));
        }
        if let (Some(f), Some(s)) = (life.first_token, life.scheduled) {
            text.push_str(&format!(
                ", prefill {}",
                format_duration_ms((f - s) * 1000.0)
            ));
        }
        if let (Some(e), Some(f)) = (life.end, life.first_token) {
            text.push_str(&format!(
                ", decode {}",
                format_duration_ms((e - f) * 1000.0)
            ));
        }
        if let Some(p) = life.preemptions.filter(|p| *p > 0) {
            text.push_str(&format!(", preempted {p} time{}", fmt::plural(p as f64)));
        }
    }
    text
}

/// The error the load tool recorded for a request.
fn failed_error(r: &RequestTimes, account: &ClientAccount) -> Option<String> {
    account
        .requests
        .get(r.index)
        .and_then(|record| record.error.as_deref().map(str::to_owned))
}

fn requests_table(t: &RequestTimeline, account: &ClientAccount, server: &ServerView) -> Markup {
    let shown = t.requests.len().min(MAX_TABLE_ROWS);
    let phases = !server.by_row.is_empty();
    let seconds = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    html! {
        details.data {
            summary { "Show the numbers" }
            table {
                caption {
                    "Each request on the recording's clock, in seconds since its first reading"
                    @if shown < t.requests.len() { " (the first " (shown) " of " (t.requests.len()) ")" }
                    "."
                }
                thead { tr {
                    th scope="col" { "Request" } th scope="col" { "Outcome" } th scope="col" { "Sent" }
                    th scope="col" { "First token after" } th scope="col" { "Done" }
                    @if phases {
                        th scope="col" { "Server " (server.arrival) } th scope="col" { "Queued (s)" }
                        th scope="col" { "Prefill (s)" } th scope="col" { "Decode (s)" }
                    }
                } }
                tbody {
                    @for (i, r) in t.requests.iter().take(shown).enumerate() {
                        tr {
                            th scope="row" { (i + 1) }
                            td { (match r.outcome {
                                Some(RequestOutcome::Completed) => "completed".to_owned(),
                                Some(RequestOutcome::Failed) => failed_error(r, account).map_or_else(|| "failed".to_owned(), |e| format!("failed: {e}")),
                                Some(RequestOutcome::Incomplete) => "did not finish".to_owned(),
                                None => String::new(),
                            }) }
                            td { (format!("{:.2}", r.sent)) }
                            td { (r.ttft().map(|s| format_duration_ms(s * 1000.0)).unwrap_or_default()) }
                            td { (r.end.map(|e| format!("{e:.2}")).unwrap_or_default()) }
                            @if phases {
                                @let life = server.by_row.get(&r.index);
                                td { (seconds(life.map(|l| l.arrival))) }
                                td { (seconds(life.and_then(|l| Some(l.scheduled? - l.arrival)))) }
                                td { (seconds(life.and_then(|l| Some(l.first_token? - l.scheduled?)))) }
                                td { (seconds(life.and_then(|l| Some(l.end? - l.first_token?)))) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Times to first token of the completed requests, in milliseconds.
fn ttfts_ms(account: &ClientAccount) -> Vec<f64> {
    account
        .requests
        .iter()
        .filter(|r| r.completed())
        .filter_map(|r| {
            r.ttft_s
                .get()
                .or_else(|| Some(r.first_token_at()? - r.sent_s.get()?))
        })
        .filter(|t| t.is_finite() && *t >= 0.0)
        .map(|t| t * 1000.0)
        .collect()
}

fn ttft_figure(account: &ClientAccount) -> Markup {
    let values = ttfts_ms(account);
    if values.is_empty() {
        return html! {};
    }
    histogram(
        "fig-ttft",
        "Time to first token",
        &format!(
            "How long each of the {} completed requests waited for its first token, as the load tool measured it.",
            values.len()
        ),
        &values,
    )
}

fn itl_figure(account: &ClientAccount) -> Markup {
    let values: Vec<f64> = account
        .inter_token_ms
        .iter()
        .map(|v| f64::from(*v))
        .filter(|v| v.is_finite() && *v >= 0.0)
        .collect();
    if values.is_empty() {
        return html! {};
    }
    histogram(
        "fig-itl",
        "Time between tokens",
        &format!(
            "The {} gaps between two streamed tokens (or chunks) the load tool recorded, over every completed request.",
            fmt::thousands(values.len() as i64)
        ),
        &values,
    )
}

/// The percentile of sorted values, by the one definition every printed percentile uses
/// (core's [`inferlint_core::story::account::percentile`], numpy's linear one, as the load tools
/// compute their own): the histogram's median is the load tool's median.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    inferlint_core::story::account::percentile(sorted, p).unwrap_or(f64::NAN)
}

/// A histogram of millisecond values: equal bins from the lowest to the highest, with the
/// median and p99 marked.
fn histogram(id: &str, title: &str, caption: &str, values: &[f64]) -> Markup {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    let width = if hi > lo {
        (hi - lo) / BINS as f64
    } else {
        1.0
    };
    let mut counts = [0usize; BINS];
    for v in &sorted {
        let bin = (((v - lo) / width) as usize).min(BINS - 1);
        counts[bin] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1) as f64;
    let (y_max, y_ticks) = y_axis(top * 1.05);
    let mut frame = Frame::time(200.0, BINS as f64, y_max);
    frame.left = 56.0;
    let slot = frame.plot_width() / BINS as f64;
    let x_of = |ms: f64| {
        frame.left + ((ms - lo) / (width * BINS as f64)).clamp(0.0, 1.0) * frame.plot_width()
    };
    let (median, p99) = (percentile(&sorted, 50.0), percentile(&sorted, 99.0));
    let label = format!("{title}: how many values fell in each range, in milliseconds");
    html! {
        figure.chart id=(id) {
            figcaption {
                h3 { (title) }
                p { (caption) " Median " (format_duration_ms(median)) ", p99 " (format_duration_ms(p99)) ", from " (format_duration_ms(lo)) " to " (format_duration_ms(hi)) "." }
            }
            div.plot.static {
                svg viewBox=(frame.view_box()) role="img" aria-label=(label) {
                    g.axis aria-hidden="true" {
                        @for v in &y_ticks {
                            line.grid x1=(frame.left) x2=(WIDTH - frame.right) y1=(f1(frame.y(*v))) y2=(f1(frame.y(*v))) {}
                            text.ylabel x=(frame.left - 6.0) y=(f1(frame.y(*v) + 4.0)) { (fmt::g(*v)) }
                        }
                        @for k in (0..=BINS).step_by(BINS / 6) {
                            text.xlabel x=(f1(frame.left + k as f64 * slot)) y=(f1(frame.height - 8.0)) { (format_duration_ms(lo + k as f64 * width)) }
                        }
                        line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(frame.baseline()) y2=(frame.baseline()) {}
                    }
                    @for (k, n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
                        rect.bar x=(f1(frame.left + k as f64 * slot + slot * 0.08)) width=(f1(slot * 0.84))
                            y=(f1(frame.y(*n as f64))) height=(f1(frame.baseline() - frame.y(*n as f64))) {
                            title { (n) " between " (format_duration_ms(lo + k as f64 * width)) " and " (format_duration_ms(lo + (k + 1) as f64 * width)) }
                        }
                    }
                    line.s-median x1=(f1(x_of(median))) x2=(f1(x_of(median))) y1=(frame.top) y2=(frame.baseline()) {}
                    text.linelabel x=(f1(x_of(median) + 4.0)) y=(f1(frame.top + 10.0)) { "median" }
                    line.s-p99 x1=(f1(x_of(p99))) x2=(f1(x_of(p99))) y1=(frame.top) y2=(frame.baseline()) {}
                    text.linelabel x=(f1(x_of(p99) + 4.0)) y=(f1(frame.top + 24.0)) { "p99" }
                }
            }
            details.data {
                summary { "Show the numbers" }
                table {
                    caption { (BINS) " equal ranges from the lowest value to the highest." }
                    thead { tr { th scope="col" { "From" } th scope="col" { "To" } th scope="col" { "Count" } } }
                    tbody {
                        @for (k, n) in counts.iter().enumerate() {
                            tr {
                                td { (format_duration_ms(lo + k as f64 * width)) }
                                td { (format_duration_ms(lo + (k + 1) as f64 * width)) }
                                td { (n) }
                            }
                        }
                    }
                }
            }
        }
    }
}
