//! "What the server did": the charts, each with its data table in a `<details>`.
//!
//! Time charts draw the [`Timeline`]'s points: a step line through every sample, or, for a
//! downsampled recording, a band from each stretch's lowest to its highest reading. The
//! page's script adds a read-out under each time chart (pointer or arrow keys); the SVG
//! and the tables stand on their own without it.

use inferlint_core::model::BootFacts;
use inferlint_core::run::Run;
use inferlint_core::story::fmt;
use inferlint_core::story::insights::cache_load;
use maud::{html, Markup};

use crate::report::Report;
use crate::svg::{area_path, gauge_path, marker_path, window_ticks, y_axis, Frame, WIDTH};
use crate::timeline::{Range, Stretch, Timeline};
use crate::words::{count, duration, moment, thousands};

/// The chart's wording for an engine whose gauges move only when a request completes.
fn lag_note(report: &Report) -> Option<String> {
    report.run.engine.gauges_lag.then(|| {
        format!(
            "{} updates these readings only when a request completes, so they can miss what happened in between.",
            report.run.engine.name
        )
    })
}

/// The part of the recording the time charts draw: the load's span (from the load tool's
/// first send to its last request's end, on the recording's axis) and any stretch the
/// server was busy outside it (a warm-up the load tool did not time), when the recording
/// also holds idle time around them worth leaving out; the idle parts are marked, not
/// drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// Seconds from the recording's first sample where the drawn window starts.
    pub from: f64,
    /// Where it ends.
    pub to: f64,
    /// The whole recording, seconds.
    pub recording_s: f64,
}

/// Idle recording around the load below this share of it is drawn as it is.
const IDLE_SHARE_LEFT_OUT: f64 = 0.05;

/// The window the time charts draw (see [`Window`]), padded by 1% of itself (at least
/// 0.25 s) either side; `None` (draw the whole recording) without the load tool's requests
/// lined up with the recording, or when little of the recording is idle around the load.
pub(crate) fn load_window(report: &Report, recording_s: f64) -> Option<Window> {
    let Some(Ok(t)) = report.run.request_timeline() else {
        return None;
    };
    let mut first = t
        .requests
        .iter()
        .map(|r| r.sent)
        .fold(f64::INFINITY, f64::min);
    let mut last = t
        .requests
        .iter()
        .map(|r| r.end.or(r.first_token).unwrap_or(r.sent))
        .fold(f64::NEG_INFINITY, f64::max);
    if let Some(timeline) = report.timeline {
        let busy = |p: &&Stretch| {
            p.running.is_some_and(|r| r.max > 0.0) || p.waiting.is_some_and(|r| r.max > 0.0)
        };
        if let Some(p) = timeline.points.iter().find(busy) {
            first = first.min(p.t_first);
        }
        if let Some(p) = timeline.points.iter().rev().find(busy) {
            last = last.max(p.t_last);
        }
    }
    if !(first.is_finite() && last.is_finite() && last > first && recording_s > 0.0) {
        return None;
    }
    let pad = ((last - first) * 0.01).max(0.25);
    let from = (first - pad).max(0.0);
    let to = (last + pad).min(recording_s);
    let idle = from + (recording_s - to);
    (idle >= IDLE_SHARE_LEFT_OUT * recording_s).then_some(Window {
        from,
        to,
        recording_s,
    })
}

/// The points a frame draws: those that reach into its window (every point without one).
pub(crate) fn drawn<'t>(frame: &Frame, timeline: &'t Timeline) -> &'t [Stretch] {
    let points = &timeline.points;
    let start = points.partition_point(|p| p.t_last < frame.x_min);
    let end = points.partition_point(|p| p.t_first <= frame.x_max);
    &points[start..end.max(start)]
}

/// A time chart's frame: over the load's window where there is one, else the recording.
fn time_frame(height: f64, timeline: &Timeline, window: Option<Window>, y_max: f64) -> Frame {
    match window {
        Some(w) => Frame::time_window(height, w.from, w.to, y_max),
        None => Frame::time(height, timeline.span_s(), y_max),
    }
}

/// What the charts leave out, in words: `The recording runs 10.0 s; the time charts draw
/// 7.2 s to 9.6 s, the load and the server's work: the 7.2 s before it and the 0.4 s
/// after it, with the server idle, are left out and marked at the charts' edges.`
fn window_words(w: &Window) -> String {
    let mut idle = Vec::new();
    if w.from > 0.0 {
        idle.push(format!("the {} before it", moment(w.from, w.recording_s)));
    }
    if w.recording_s - w.to > 0.0 {
        idle.push(format!(
            "the {} after it",
            moment(w.recording_s - w.to, w.recording_s)
        ));
    }
    format!(
        "The recording runs {}; the time charts draw {} to {}, the load and the server's work: {}, with the server idle, {} left out and marked at the charts' edges.",
        duration(w.recording_s),
        moment(w.from, w.recording_s),
        moment(w.to, w.recording_s),
        idle.join(" and "),
        if idle.len() == 1 { "is" } else { "are" }
    )
}

/// The parts of the recording left out of a chart, marked at its edges: a dashed edge,
/// and (`labelled`, where nothing is drawn along the chart's foot) how long each was.
pub(crate) fn idle_marks(frame: &Frame, window: Option<Window>, labelled: bool) -> Markup {
    let Some(w) = window else {
        return html! {};
    };
    let (left, right) = (frame.left, WIDTH - frame.right);
    let (top, bottom) = (frame.top, frame.baseline());
    html! {
        g.idle {
            @if w.from > 0.0 {
                line.idle-edge x1=(fmt1(left)) x2=(fmt1(left)) y1=(fmt1(top)) y2=(fmt1(bottom)) {}
                @if labelled { text.idle-label x=(fmt1(left + 4.0)) y=(fmt1(bottom - 6.0)) {
                    "\u{2190} " (moment(w.from, w.recording_s)) " idle, not drawn"
                } }
            }
            @if w.recording_s - w.to > 0.0 {
                line.idle-edge x1=(fmt1(right)) x2=(fmt1(right)) y1=(fmt1(top)) y2=(fmt1(bottom)) {}
                @if labelled { text.idle-label.end x=(fmt1(right - 4.0)) y=(fmt1(bottom - 6.0)) {
                    (moment(w.recording_s - w.to, w.recording_s)) " idle, not drawn \u{2192}"
                } }
            }
        }
    }
}

pub fn what_the_server_did(report: &Report) -> Markup {
    let cache = cache_figure(report);
    let Some(timeline) = report.timeline.filter(|t| !t.points.is_empty()) else {
        return html! {
            section #server-did aria-labelledby="did-h" {
                h2 #did-h { "What the server did" }
                @if let Some(c) = cache { (c) }
                p.muted { "No recording of the run was given (run.series.jsonl, made by inferlint watch or xray), so there is nothing to draw over time." }
            }
        };
    };
    let window = load_window(report, timeline.span_s());
    let tput = if report.run.engine.tokens_at_finish {
        None
    } else {
        tokens_figure(report, timeline, window)
    };
    let no_gauges = !timeline.has(|p| p.running) && !timeline.has(|p| p.waiting);
    html! {
        section #server-did aria-labelledby="did-h" {
            h2 #did-h { "What the server did" }
            @if no_gauges {
                p.note {
                    "The recording has no running or waiting readings, so there is no chart of requests over time."
                    @if let Some(hint) = report.run.engine.gauges_hint { " " (hint) "." }
                }
            }
            p.muted.hint { "Hover over a chart, or focus it and use the arrow keys, to read any moment. Each chart has its numbers below it." }
            @if let Some(w) = &window { p.window { (window_words(w)) } }
            @if let Some(c) = cache { (c) }
            @if !no_gauges { (requests_figure(report, timeline, window)) }
            (kv_figure(report, timeline, window))
            @match tput {
                Some(f) => (f),
                None => {
                    @if report.run.engine.tokens_at_finish {
                        p.note #tput-note {
                            (tput_note(report))
                        }
                    }
                },
            }
            @if report.run.engine.gauges_lag {
                p.note #levels-note { (levels_note(report)) }
            } @else {
                (levels_figure(timeline))
            }
        }
    }
}

/// Why a lagging engine's recording gets no "how long at each number running" chart: its
/// gauge holds a value from the last completion until the next, so the seconds at each
/// level would be the gauge's, not the server's.
fn levels_note(report: &Report) -> String {
    format!(
        "No chart of how long the server ran each number of requests: {} updates its running gauge only when a request completes, so the time between readings would be counted at a number the server may no longer have been running.",
        report.run.engine.name
    )
}

fn tput_note(report: &Report) -> String {
    let engine = report.run.engine;
    format!(
        "No output-tokens-per-second chart: {} adds a request's tokens to its counter when the request finishes, not as they are made, so the counter moves in jumps and a per-second rate would show when requests ended rather than how fast tokens came.",
        engine.name
    )
}

/// The caption under a data table's summary.
fn table_summary(timeline: &Timeline) -> String {
    if timeline.downsampled() || timeline.row_step_s > timeline.setup.interval_s.unwrap_or(0.0) {
        format!(
            "Show the numbers, every {}",
            moment_step(timeline.row_step_s)
        )
    } else {
        "Show the numbers".to_owned()
    }
}

/// Says how the table and the chart relate to the samples.
fn table_caption(timeline: &Timeline) -> String {
    let mut text = format!(
        "One row per {} of the run: the lowest and highest reading in it (one number when they agree), from {}.",
        moment_step(timeline.row_step_s),
        count(timeline.samples as f64, "reading")
    );
    if let Some(b) = timeline.bucket_s {
        text.push_str(&format!(
            " Downsampled: the chart draws {} stretches of {} each, keeping each stretch's lowest and highest reading, so no peak and no preemption is lost.",
            timeline.points.len(),
            duration(b)
        ));
    }
    text
}

fn moment_step(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{} s", fmt::g(seconds))
    } else if seconds < 3600.0 {
        format!("{} min", fmt::g(seconds / 60.0))
    } else {
        format!("{} h", fmt::g(seconds / 3600.0))
    }
}

fn range_text(r: Option<Range>, scale: f64, decimals: usize) -> String {
    match r {
        None => "\u{2013}".into(),
        Some(r) => {
            let (lo, hi) = (r.min * scale, r.max * scale);
            let f = |v: f64| format!("{v:.decimals$}");
            if f(lo) == f(hi) {
                f(lo)
            } else {
                format!("{}\u{2013}{}", f(lo), f(hi))
            }
        }
    }
}

fn row_label(row: &Stretch, step: f64, span: f64) -> String {
    let start = (row.t_first / step).floor() * step;
    format!(
        "{}\u{2013}{}",
        moment(start, span),
        moment(start + step, span)
    )
}

/// The x axis and the horizontal grid of a time chart.
fn axes(frame: &Frame, span: f64, y_ticks: &[f64], y_label: impl Fn(f64) -> String) -> Markup {
    // Labels are worded for the whole recording; ticks fall on the drawn window.
    html! {
        g.axis aria-hidden="true" {
            @for v in y_ticks {
                line.grid x1=(frame.left) x2=(WIDTH - frame.right) y1=(fmt1(frame.y(*v))) y2=(fmt1(frame.y(*v))) {}
                text.ylabel x=(frame.left - 6.0) y=(fmt1(frame.y(*v) + 4.0)) { (y_label(*v)) }
            }
            @for t in window_ticks(frame.x_min, frame.x_max) {
                text.xlabel x=(fmt1(frame.x(t))) y=(fmt1(frame.height - 8.0)) { (moment(t, span)) }
            }
            line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(frame.baseline()) y2=(frame.baseline()) {}
        }
    }
}

fn fmt1(v: f64) -> String {
    format!("{v:.1}")
}

/// Preemption markers along the top of a time chart, one per point that gained any.
fn markers(report: &Report, frame: &Frame, timeline: &Timeline) -> Markup {
    let word = report.run.engine.preemption_word;
    let span = timeline.span_s();
    html! {
        g.markers {
            @for p in drawn(frame, timeline).iter().filter(|p| p.preemptions > 0.0) {
                path.mark d=(marker_path(frame.x(p.t_last), frame.top - 2.0)) data-n=(fmt::g(p.preemptions)) {
                    title {
                        (thousands(p.preemptions)) " " (word) (fmt::plural(p.preemptions))
                        @if moment(p.t_first, span) != moment(p.t_last, span) {
                            " between " (moment(p.t_first, span)) " and " (moment(p.t_last, span))
                        } @else {
                            " at " (moment(p.t_last, span))
                        }
                    }
                }
            }
        }
    }
}

/// The frame of a time chart: its plot area, its read-out and its keyboard focus.
fn plot(id: &str, label: &str, frame: &Frame, inner: Markup) -> Markup {
    html! {
        div.plot tabindex="0" role="group" aria-label=(label) data-chart=(id)
            data-left=(frame.left) data-width=(frame.plot_width()) data-from=(frame.x_min) data-span=(frame.x_span()) {
            svg viewBox=(frame.view_box()) role="img" aria-label=(label) {
                (inner)
                line.cursor x1="0" x2="0" y1=(frame.top) y2=(frame.baseline()) visibility="hidden" {}
            }
        }
        output.readout aria-live="polite" { "Hover over the chart, or focus it and use the arrow keys, to read any moment." }
    }
}

fn legend(items: &[(&str, &str)]) -> Markup {
    html! {
        ul.legend {
            @for (class, text) in items {
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { line class=(*class) x1="1" x2="23" y1="5" y2="5" {} } " " (*text) }
            }
        }
    }
}

fn requests_figure(report: &Report, timeline: &Timeline, window: Option<Window>) -> Markup {
    let requested = report.run.requested.map(|n| n as f64);
    let band = timeline.downsampled();
    let top = [
        timeline.peak(|p| p.running),
        timeline.peak(|p| p.waiting),
        timeline.peak(|p| p.fit_in_cache),
        requested,
    ]
    .into_iter()
    .flatten()
    .fold(1.0, f64::max);
    let (y_max, y_ticks) = y_axis(top * 1.05);
    let frame = time_frame(260.0, timeline, window, y_max);
    let has_fit = timeline.has(|p| p.fit_in_cache);
    let mut legend_items = vec![("s-running", "running"), ("s-waiting", "waiting")];
    if has_fit {
        legend_items.push(("s-fit", "fit in the cache"));
    }
    if requested.is_some() {
        legend_items.push(("s-requested", "asked for"));
    }
    let mut caption =
        String::from("Requests the server was running and those waiting in its queue.");
    if has_fit {
        caption.push_str(" The dashed pink line is how many requests of the sizes running then fit in the cache, read while the cache was at least 90% full.");
    }
    if timeline.preemptions > 0.0 {
        caption.push_str(&format!(
            " Triangles mark {}: {} in the recording.",
            report.run.engine.preemption_words(2.0),
            thousands(timeline.preemptions)
        ));
    }
    if let Some(note) = lag_note(report) {
        caption.push(' ');
        caption.push_str(&note);
    }
    let label = "Requests over time: running, waiting, and how many fit in the cache";
    let inner = html! {
        (axes(&frame, timeline.span_s(), &y_ticks, fmt::g))
        (idle_marks(&frame, window, true))
        @if let Some(n) = requested {
            line.s-requested x1=(frame.left) x2=(WIDTH - frame.right) y1=(fmt1(frame.y(n))) y2=(fmt1(frame.y(n))) {}
            text.linelabel x=(WIDTH - frame.right - 4.0) y=(fmt1(frame.y(n) - 5.0)) { "asked for: " (fmt::g(n)) }
        }
        path.s-waiting.band[band] d=(gauge_path(&frame, drawn(&frame, timeline), |p| p.waiting, band)) {}
        path.s-running.band[band] d=(gauge_path(&frame, drawn(&frame, timeline), |p| p.running, band)) {}
        @if has_fit {
            // Its own colour and dash, so that where it runs along the running line (a full
            // cache holds what runs) both read: the running line shows between its dashes.
            path.s-fit d=(gauge_path(&frame, drawn(&frame, timeline), |p| p.fit_in_cache.map(|r| Range { last: r.min, ..r }), false)) {}
        }
        (markers(report, &frame, timeline))
    };
    let span = timeline.span_s();
    html! {
        figure.chart #fig-requests {
            figcaption { h3 { "Requests over time" } p { (caption) } }
            (legend(&legend_items))
            (plot("requests", label, &frame, inner))
            details.data {
                summary { (table_summary(timeline)) }
                table {
                    caption { (table_caption(timeline)) }
                    thead { tr {
                        th scope="col" { "Time" } th scope="col" { "Running" } th scope="col" { "Waiting" }
                        @if has_fit { th scope="col" { "Fit in the cache" } }
                        th scope="col" { (crate::words::preemption_heading(report.run.engine.preemption_word)) }
                    } }
                    tbody {
                        @for row in &timeline.rows {
                            tr {
                                th scope="row" { (row_label(row, timeline.row_step_s, span)) }
                                td { (range_text(row.running, 1.0, 0)) }
                                td { (range_text(row.waiting, 1.0, 0)) }
                                @if has_fit { td { (range_text(row.fit_in_cache, 1.0, 0)) } }
                                td { (if row.preemptions > 0.0 { thousands(row.preemptions) } else { String::new() }) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn kv_figure(report: &Report, timeline: &Timeline, window: Option<Window>) -> Markup {
    if !timeline.has(|p| p.kv_usage) {
        return html! {};
    }
    let frame = time_frame(200.0, timeline, window, 100.0);
    let percent = |p: &Stretch| {
        p.kv_usage.map(|r| Range {
            min: r.min * 100.0,
            max: r.max * 100.0,
            last: r.last * 100.0,
        })
    };
    let band = timeline.downsampled();
    let mut caption = String::from("How full the KV cache was, from the server's gauge.");
    let pool_words = report.run.engine.kv_usage_pool_words;
    if pool_words != "the cache" {
        caption.push_str(&format!(
            " {} measures {pool_words}.",
            report.run.engine.name
        ));
    }
    if band {
        caption.push_str(" The shaded area reaches each stretch's highest reading; the line under it is the lowest.");
    }
    if let Some(note) = lag_note(report) {
        caption.push(' ');
        caption.push_str(&note);
    }
    let label = "KV cache in use, percent over time";
    let inner = html! {
        (axes(&frame, timeline.span_s(), &[0.0, 25.0, 50.0, 75.0, 100.0], |v| format!("{}%", fmt::g(v))))
        (idle_marks(&frame, window, true))
        path.s-kv.area d=(area_path(&frame, drawn(&frame, timeline), percent)) {}
        @if band {
            path.s-kv.low d=(gauge_path(&frame, drawn(&frame, timeline), |p| percent(p).map(|r| Range { last: r.min, ..r }), false)) {}
        }
        (markers(report, &frame, timeline))
    };
    html! {
        figure.chart #fig-kv {
            figcaption { h3 { "KV cache in use" } p { (caption) } }
            (plot("kv", label, &frame, inner))
            (one_column_table(timeline, "KV cache in use (%)", |row| range_text(row.kv_usage, 100.0, 1)))
        }
    }
}

fn tokens_figure(report: &Report, timeline: &Timeline, window: Option<Window>) -> Option<Markup> {
    if !timeline.has_rate() {
        return None;
    }
    let top = timeline.peak(|p| p.tokens_per_s).unwrap_or(1.0);
    let (y_max, y_ticks) = y_axis(top * 1.05);
    let frame = time_frame(200.0, timeline, window, y_max);
    let band = timeline.downsampled();
    let mut caption = String::from("Output tokens per second, from the server's token counter over the second before each reading.");
    if let Some(h) = inferlint_core::story::insights::throughput_headline(report.account) {
        match h.servers_window {
            Some((rate, _)) => caption.push_str(&format!(
                " The run's throughput is {}, {}; {rate:.2} tokens/s is T10's, {}.",
                h.value,
                h.what,
                inferlint_core::judging::checks::snapshots::SERVERS_WINDOW
            )),
            None => caption.push_str(&format!(" Over the run: {} tokens/s, {}.", h.value, h.what)),
        }
    }
    let label = "Output tokens per second over time";
    let inner = html! {
        (axes(&frame, timeline.span_s(), &y_ticks, fmt::thousands_f))
        (idle_marks(&frame, window, true))
        path.s-tput.band[band] d=(gauge_path(&frame, drawn(&frame, timeline), |p| p.tokens_per_s, band)) {}
    };
    Some(html! {
        figure.chart #fig-tput {
            figcaption { h3 { "Output tokens per second" } p { (caption) } }
            (plot("tput", label, &frame, inner))
            (one_column_table(timeline, "Output tokens/s", |row| range_text(row.tokens_per_s, 1.0, 0)))
        }
    })
}

/// The data table under a chart that draws one reading: a row per stretch of the run,
/// its time and `cell` of it under `heading`.
fn one_column_table(
    timeline: &Timeline,
    heading: &str,
    cell: impl Fn(&Stretch) -> String,
) -> Markup {
    let span = timeline.span_s();
    html! {
        details.data {
            summary { (table_summary(timeline)) }
            table {
                caption { (table_caption(timeline)) }
                thead { tr { th scope="col" { "Time" } th scope="col" { (heading) } } }
                tbody {
                    @for row in &timeline.rows {
                        tr { th scope="row" { (row_label(row, timeline.row_step_s, span)) } td { (cell(row)) } }
                    }
                }
            }
        }
    }
}

fn levels_figure(timeline: &Timeline) -> Markup {
    let levels = &timeline.seconds_at_level;
    if levels.is_empty() {
        return html! {};
    }
    let total: f64 = levels.iter().map(|(_, s)| s).sum();
    let max_level = levels.iter().map(|(l, _)| *l).max().unwrap_or(0).max(1);
    let top = levels.iter().map(|(_, s)| *s).fold(0.0, f64::max);
    let (y_max, y_ticks) = y_axis(top * 1.05);
    let mut frame = Frame::time(220.0, (max_level + 1) as f64, y_max);
    frame.left = 64.0;
    let slot = frame.plot_width() / (max_level + 1) as f64;
    let label_every = ((max_level + 1) as f64 / 16.0).ceil().max(1.0) as i64;
    let busiest = levels
        .iter()
        .filter(|(l, _)| *l > 0)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    html! {
        figure.chart #fig-levels {
            figcaption {
                h3 { "How many requests ran at once, and for how long" }
                p {
                    "Seconds of the recording spent at each number of running requests."
                    @if let Some((level, seconds)) = busiest {
                        (format!(" While busy, the server spent the most time, {}, with {level} running.", duration(*seconds)))
                    }
                }
            }
            div.plot.static {
                svg viewBox=(frame.view_box()) role="img" aria-label="Seconds spent at each number of running requests" {
                    g.axis aria-hidden="true" {
                        @for v in &y_ticks {
                            line.grid x1=(frame.left) x2=(WIDTH - frame.right) y1=(fmt1(frame.y(*v))) y2=(fmt1(frame.y(*v))) {}
                            text.ylabel x=(frame.left - 6.0) y=(fmt1(frame.y(*v) + 4.0)) { (fmt::g(*v)) " s" }
                        }
                        // Stepped, not filtered: a level read from the recording
                        // never sets how long a loop runs.
                        @for level in (0..=max_level).step_by(label_every as usize) {
                            text.xlabel x=(fmt1(frame.left + (level as f64 + 0.5) * slot)) y=(fmt1(frame.height - 8.0)) { (level) }
                        }
                        line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(frame.baseline()) y2=(frame.baseline()) {}
                    }
                    @for (level, seconds) in levels {
                        rect.bar x=(fmt1(frame.left + *level as f64 * slot + slot * 0.1)) width=(fmt1(slot * 0.8))
                            y=(fmt1(frame.y(*seconds))) height=(fmt1(frame.baseline() - frame.y(*seconds))) {
                            title { (level) " running: " (duration(*seconds)) }
                        }
                    }
                }
            }
            p.axis-note { "Running requests \u{2192}" }
            details.data {
                summary { "Show the numbers" }
                table {
                    caption { "Each reading's number of running requests, held until the next reading." }
                    thead { tr { th scope="col" { "Running" } th scope="col" { "Seconds" } th scope="col" { "Share of the recording" } } }
                    tbody {
                        @for (level, seconds) in levels {
                            tr {
                                th scope="row" { (level) }
                                td { (format!("{seconds:.2}")) }
                                td { (if total > 0.0 { fmt::percent(seconds / total, 1) } else { String::new() }) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn cache_figure(report: &Report) -> Option<Markup> {
    // Drawn only beside core's sentence on the cache, from the same numbers: the run's
    // account's capacity, which the advice and that sentence read too.
    if !report.insights.iter().any(|i| i.key == "cache") {
        return None;
    }
    let c = cache_load(report.run, report.account)?;
    let (need, fit) = (c.need(), c.fit());
    let scale_max = need.max(c.pool);
    let (left, right) = (200.0, 24.0);
    let width = WIDTH - left - right;
    let x = |v: f64| left + v / scale_max * width;
    let caption_end = if need > c.pool {
        format!("{} of them fit.", fmt::g(fit.min(c.requests as f64)))
    } else {
        format!("{} tokens to spare.", fmt::thousands_f(c.pool - need))
    };
    let block_words = match c.block {
        Some(b) if c.allocated != c.per_request => format!(
            ", rounded up to whole {}-token blocks: {}",
            b,
            fmt::thousands_f(c.allocated)
        ),
        _ => String::new(),
    };
    let usable_words = match (c.usable_blocks, c.block) {
        (Some(usable), Some(b)) => format!(
            " in {usable} usable block{} of {b}",
            fmt::plural(usable as f64)
        ),
        _ => String::new(),
    };
    let per = if c.per_request.fract() == 0.0 {
        ""
    } else {
        "about "
    };
    Some(html! {
        figure.chart #fig-cache {
            figcaption {
                h3 { "The KV cache and the load" }
                p {
                    "The cache holds " (fmt::thousands_f(c.pool)) " tokens" (usable_words) ". Each of the " (c.requests)
                    " requests the load kept open needs " (per) (fmt::thousands_f(c.per_request)) " tokens to run to its end"
                    (block_words) "; together " (fmt::thousands_f(need)) ". " (caption_end)
                }
            }
            div.plot.static {
                svg viewBox={"0 0 " (WIDTH) " 110"} role="img" aria-label={"KV pool " (fmt::thousands_f(c.pool)) " tokens against the load's " (fmt::thousands_f(need)) " tokens"} {
                    text.barlabel x=(left - 8.0) y="34" { "KV pool" }
                    rect.bar.pool x=(left) y="18" width=(fmt1(x(c.pool) - left)) height="24" {}
                    text.barlabel x=(left - 8.0) y="82" { (c.requests) " requests" }
                    rect.bar.load x=(left) y="66" width=(fmt1(x(need) - left)) height="24" {}
                    @if c.requests <= 128 {
                        @for i in 1..c.requests {
                            line.sep x1=(fmt1(x(i as f64 * c.allocated))) x2=(fmt1(x(i as f64 * c.allocated))) y1="66" y2="90" {}
                        }
                    }
                    line.limit x1=(fmt1(x(c.pool))) x2=(fmt1(x(c.pool))) y1="10" y2="100" {}
                }
            }
            details.data {
                summary { "Show the numbers" }
                table {
                    tbody {
                        tr { th scope="row" { "KV pool (tokens)" } td { (fmt::thousands_f(c.pool)) } }
                        @if let Some(usable) = c.usable_blocks { tr { th scope="row" { "Usable KV blocks" } td { (usable) } } }
                        tr { th scope="row" { "Requests kept open" } td { (c.requests) } }
                        tr { th scope="row" { "Tokens per request (prompt and output)" } td { (format!("{:.1}", c.per_request)) } }
                        @if let Some(b) = c.block { tr { th scope="row" { "Block size (tokens)" } td { (b) } } }
                        tr { th scope="row" { "Tokens held per request, whole blocks" } td { (fmt::thousands_f(c.allocated)) } }
                        tr { th scope="row" { "The load, all requests at full length" } td { (fmt::thousands_f(need)) } }
                        tr { th scope="row" { "Requests that fit at full length" } td { (fmt::g(fit)) } }
                    }
                }
            }
        }
    })
}

/// GPU memory at start-up, when the log gave at least two of its parts.
pub fn memory(boot: &BootFacts) -> Markup {
    let parts: Vec<(&str, f64)> = [
        ("Model weights", boot.model_load_gib),
        ("KV cache", boot.available_kv_cache_gib),
        (
            "CUDA graphs",
            boot.cudagraph_actual_gib.or(boot.cudagraph_estimated_gib),
        ),
        ("Activation peak", boot.peak_activation_gib),
    ]
    .into_iter()
    .filter_map(|(n, v)| v.filter(|v| v.is_finite() && *v >= 0.0).map(|v| (n, v)))
    .collect();
    if parts.len() < 2 {
        return html! {};
    }
    bars(
        "fig-memory",
        "GPU memory at start-up",
        "What the server set aside on the GPU, as its start-up log says, in GiB.",
        &parts
            .iter()
            .map(|(n, v)| ((*n).to_owned(), *v))
            .collect::<Vec<_>>(),
        |v| format!("{v:.2} GiB"),
    )
}

/// The KV pool of each boot, when two or more boot logs gave one.
pub fn pools(run: &Run) -> Markup {
    let pools: Vec<(String, f64)> = run
        .boots
        .iter()
        .filter_map(|(label, b)| b.kv_pool_tokens.map(|p| (label.clone(), p as f64)))
        .collect();
    if pools.len() < 2 {
        return html! {};
    }
    bars(
        "fig-pools",
        "KV pool per boot",
        "The KV pool each start of the server set aside (T4 compares them).",
        &pools,
        |v| format!("{} tokens", fmt::thousands_f(v)),
    )
}

fn bars(
    id: &str,
    title: &str,
    caption: &str,
    items: &[(String, f64)],
    label: impl Fn(f64) -> String,
) -> Markup {
    let (left, right, row) = (220.0, 150.0, 34.0);
    let height = items.len() as f64 * row + 16.0;
    let top = items.iter().map(|(_, v)| *v).fold(0.0, f64::max).max(1e-9);
    let width = WIDTH - left - right;
    html! {
        figure.chart id=(id) {
            figcaption { h3 { (title) } p { (caption) } }
            div.plot.static {
                svg viewBox={"0 0 " (WIDTH) " " (height)} role="img" aria-label=(title) {
                    @for (i, (name, v)) in items.iter().enumerate() {
                        @let y = 8.0 + i as f64 * row;
                        text.barlabel x=(left - 8.0) y=(fmt1(y + 18.0)) { (name) }
                        rect.bar x=(left) y=(fmt1(y)) width=(fmt1(v / top * width)) height="24" {}
                        text.barvalue x=(fmt1(left + v / top * width + 6.0)) y=(fmt1(y + 18.0)) { (label(*v)) }
                    }
                }
            }
            details.data {
                summary { "Show the numbers" }
                table {
                    tbody {
                        @for (name, v) in items {
                            tr { th scope="row" { (name) } td { (label(*v)) } }
                        }
                    }
                }
            }
        }
    }
}
