//! The step lane: each engine step as the server's step plugin recorded it
//! (`steps.jsonl`), binned on the recording's axis: prefill and decode tokens per
//! stretch, the steps' mean and longest time and the deepest queue beside them, and each
//! preemption at its step. Core folds the file into time bins of its own (at most 4,096
//! for a file of any length, [`inferlint_core::model::steps::Steps::bins`]); this module places
//! them on the recording's axis and sums them into a few hundred bars, so a day-long
//! file stays light.

use inferlint_core::model::steps::{StepBin, Steps};
use inferlint_core::story::fmt;
use maud::{html, Markup};

use crate::report::Report;
use crate::svg::{time_ticks, y_axis, Frame, WIDTH};
use crate::words::moment;

/// The most bars drawn across the recording.
const MAX_BARS: usize = 300;
/// The most rows of the data table.
const MAX_TABLE_ROWS: usize = 200;

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// The steps' bins summed into bars on the recording's axis: the bars, their width in
/// seconds, the axis' span and its origin (Unix seconds). `None` without a recording.
fn binned(report: &Report, steps: &Steps) -> Option<(Vec<StepBin>, f64, f64, f64)> {
    let series = report.run.series.as_ref()?;
    let origin = series.first_t_wall?;
    let span = report
        .timeline
        .map(crate::timeline::Timeline::span_s)
        .or_else(|| series.span_s())
        .filter(|s| *s > 0.0)?;
    let bars = ((span / steps.bin_s).ceil() as usize).clamp(1, MAX_BARS);
    let width = span / bars as f64;
    let mut out = vec![StepBin::default(); bars];
    for (k, bin) in &steps.bins {
        let at = steps.wall((*k as f64 + 0.5) * steps.bin_s) - origin;
        if !(0.0..=span).contains(&at) {
            continue;
        }
        out[((at / width) as usize).min(bars - 1)].add(bin);
    }
    Some((out, width, span, origin))
}

/// The figure, or nothing without a step file; one that cannot be placed says why.
pub fn figure(report: &Report) -> Markup {
    let Some(steps) = report.run.steps.as_ref() else {
        return html! {};
    };
    let Some((bars, width, span, origin)) = binned(report, steps) else {
        return html! {
            p.note #steps-lane-note { "The engine's steps (" (steps.file) ") were recorded, but there is no recording of the run to place them on." }
        };
    };
    let tokens_top = bars
        .iter()
        .map(|b| b.prefill_tokens + b.decode_tokens)
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (tokens_max, token_ticks) = y_axis(tokens_top * 1.05);
    let height = 200.0;
    let frame = Frame::time(height, span, tokens_max);
    let slot = frame.plot_width() / bars.len() as f64;
    let h = |v: u64| frame.plot_height() * (v as f64 / tokens_max).clamp(0.0, 1.0);
    // The second panel: each bar's mean step time (a line) and its deepest queue (bars).
    let mean = |b: &StepBin| (b.ms_steps > 0).then(|| b.ms_sum / b.ms_steps as f64);
    let ms_top = bars.iter().filter_map(mean).fold(0.0, f64::max).max(0.001);
    let (ms_max, ms_ticks) = y_axis(ms_top * 1.05);
    let queue_top = bars.iter().map(|b| b.queued_max).max().unwrap_or(0).max(1) as f64;
    let lower = Frame::time(160.0, span, ms_max);
    let ms_line: String = bars
        .iter()
        .enumerate()
        .filter_map(|(k, b)| {
            let x = lower.left + (k as f64 + 0.5) * slot;
            mean(b).map(|m| format!("{},{}", f1(x), f1(lower.y(m))))
        })
        .collect::<Vec<_>>()
        .join(" ");
    let preempting: Vec<(f64, &StepBin)> = bars
        .iter()
        .enumerate()
        .filter(|(_, b)| b.preempted > 0)
        .map(|(k, b)| (k as f64, b))
        .collect();
    let placed_preemptions: Vec<(f64, u64, u64)> = steps
        .preemptions
        .iter()
        .filter_map(|p| {
            let at = steps.wall(p.t) - origin;
            (0.0..=span).contains(&at).then_some((at, p.step, p.n))
        })
        .collect();
    let caption = format!(
        "Each engine step as the server's step plugin recorded it ({}): {} steps, summed over {} s stretches of the recording's clock: the tokens each stretch's steps scheduled, prefill above decode; below, the steps' mean time and the deepest queue (waiting and deferred). {} {}",
        steps.file,
        fmt::thousands(steps.steps as i64),
        fmt::g((width * 1000.0).round() / 1000.0),
        match steps.preempted {
            0 => "No step preempted a request.".to_owned(),
            n => format!("{n} preemption{} marked at {} step{} (red).", fmt::plural(n as f64), steps.preemptions.len(), fmt::plural(steps.preemptions.len() as f64)),
        },
        match steps.dropped {
            0 => String::new(),
            n => format!("The plugin dropped {} steps (its gap lines).", fmt::thousands(n as i64)),
        }
    );
    let label = format!(
        "Prefill and decode tokens per stretch, {} stretches",
        bars.len()
    );
    let table_step = bars.len().div_ceil(MAX_TABLE_ROWS).max(1);
    html! {
        figure.chart #fig-steps {
            figcaption { h3 { "The engine, step by step" } p { (caption) } }
            ul.legend {
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.step-prefill x="1" y="2" width="22" height="6" {} } " prefill tokens" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.step-decode x="1" y="2" width="22" height="6" {} } " decode tokens" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { line.step-ms x1="1" x2="23" y1="5" y2="5" {} } " mean step time" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.step-queue x="1" y="2" width="22" height="6" {} } " deepest queue" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { line.step-preempt x1="12" x2="12" y1="0" y2="10" {} } " preemption" }
            }
            div.plot.static {
                svg viewBox=(frame.view_box()) role="img" aria-label=(label) {
                    g.axis aria-hidden="true" {
                        @for v in &token_ticks {
                            text.ylabel x=(frame.left - 6.0) y=(f1(frame.y(*v) + 4.0)) { (fmt::g(*v)) }
                        }
                        @for s in time_ticks(span) {
                            line.grid x1=(f1(frame.x(s))) x2=(f1(frame.x(s))) y1=(frame.top) y2=(f1(frame.baseline())) {}
                            text.xlabel x=(f1(frame.x(s))) y=(f1(height - 8.0)) { (moment(s, span)) }
                        }
                        line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(f1(frame.baseline())) y2=(f1(frame.baseline())) {}
                    }
                    @for (k, b) in bars.iter().enumerate() {
                        @let x = frame.left + k as f64 * slot;
                        @if b.decode_tokens > 0 {
                            rect.step-decode x=(f1(x + slot * 0.1)) width=(f1((slot * 0.8).max(0.5))) y=(f1(frame.baseline() - h(b.decode_tokens))) height=(f1(h(b.decode_tokens))) {
                                title { (b.decode_tokens) " decode tokens in " (b.steps) " steps from " (moment(k as f64 * width, span)) }
                            }
                        }
                        @if b.prefill_tokens > 0 {
                            rect.step-prefill x=(f1(x + slot * 0.1)) width=(f1((slot * 0.8).max(0.5))) y=(f1(frame.baseline() - h(b.decode_tokens) - h(b.prefill_tokens))) height=(f1(h(b.prefill_tokens))) {
                                title { (b.prefill_tokens) " prefill tokens from " (moment(k as f64 * width, span)) }
                            }
                        }
                    }
                    @for (at, step, n) in placed_preemptions.iter().take(2000) {
                        line.step-preempt x1=(f1(frame.x(*at))) x2=(f1(frame.x(*at))) y1=(frame.top) y2=(f1(frame.baseline())) {
                            title { (n) " preempted at step " (step) ", " (moment(*at, span)) }
                        }
                    }
                }
                svg viewBox=(lower.view_box()) role="img" aria-label="Mean step time and deepest queue per stretch" {
                    g.axis aria-hidden="true" {
                        @for v in &ms_ticks {
                            text.ylabel x=(lower.left - 6.0) y=(f1(lower.y(*v) + 4.0)) { (fmt::g(*v)) " ms" }
                        }
                        line.base x1=(lower.left) x2=(WIDTH - lower.right) y1=(f1(lower.baseline())) y2=(f1(lower.baseline())) {}
                    }
                    @for (k, b) in bars.iter().enumerate() {
                        @if b.queued_max > 0 {
                            @let qh = lower.plot_height() * (b.queued_max as f64 / queue_top);
                            rect.step-queue x=(f1(lower.left + k as f64 * slot + slot * 0.1)) width=(f1((slot * 0.8).max(0.5))) y=(f1(lower.baseline() - qh)) height=(f1(qh)) {
                                title { (b.queued_max) " waiting at most from " (moment(k as f64 * width, span)) }
                            }
                        }
                    }
                    @if !ms_line.is_empty() {
                        polyline.step-ms points=(ms_line) {}
                    }
                }
            }
            details.data {
                summary { "Show the numbers" }
                table {
                    caption {
                        "Steps per stretch of " (fmt::g((width * 1000.0).round() / 1000.0)) " s, from the recording's first reading"
                        @if table_step > 1 { " (every " (table_step) "th stretch)" }
                        "."
                    }
                    thead { tr {
                        th scope="col" { "From (s)" } th scope="col" { "Steps" } th scope="col" { "Prefill tokens" }
                        th scope="col" { "Decode tokens" } th scope="col" { "Mean step (ms)" } th scope="col" { "Longest step (ms)" }
                        th scope="col" { "Deepest queue" } th scope="col" { "Preempted" }
                    } }
                    tbody {
                        @for (k, b) in bars.iter().enumerate().step_by(table_step) {
                            tr {
                                td { (format!("{:.2}", k as f64 * width)) }
                                td { (b.steps) } td { (b.prefill_tokens) } td { (b.decode_tokens) }
                                td { (mean(b).map_or_else(String::new, |m| format!("{m:.2}"))) }
                                td { (format!("{:.2}", b.ms_max)) }
                                td { (b.queued_max) } td { (b.preempted) }
                            }
                        }
                    }
                }
                @if !preempting.is_empty() {
                    p { "Stretches with a preemption: " (preempting.len()) "." }
                }
            }
        }
    }
}
