//! The KV lane: the engine's KV-cache events (blocks stored and removed, the cache
//! cleared) per stretch of the recording's clock, and the holes in the stream drawn as
//! holes. Core reads and sums the stream ([`inferlint_core::model::traces::KvEvents`], a
//! second's sums each); this module places the seconds on the recording's axis and bins
//! them so that a day-long stream stays a few hundred bars.

use inferlint_core::model::traces::KvEvents;
use inferlint_core::story::fmt;
use maud::{html, Markup};

use crate::report::Report;
use crate::svg::{time_ticks, y_axis, Frame, WIDTH};
use crate::words::moment;

/// The most bars drawn across the recording.
const MAX_BARS: usize = 300;
/// The most rows of the data table.
const MAX_TABLE_ROWS: usize = 200;

/// One bar: the sums over `[from, from + width)` seconds of the recording's axis.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Bin {
    stored: u64,
    removed: u64,
    cleared: u64,
    batches: u64,
}

fn f1(v: f64) -> String {
    format!("{v:.1}")
}

/// The stream's seconds binned on the recording's axis: the bins, their width in
/// seconds and the axis' span. `None` without a recording to place them.
fn binned(report: &Report, events: &KvEvents) -> Option<(Vec<Bin>, f64, f64)> {
    let series = report.run.series.as_ref()?;
    let origin = series.first_t_wall?;
    let span = report
        .timeline
        .map(crate::timeline::Timeline::span_s)
        .or_else(|| series.span_s())
        .filter(|s| *s > 0.0)?;
    let bars = (span.ceil() as usize).clamp(1, MAX_BARS);
    let width = span / bars as f64;
    let mut bins = vec![Bin::default(); bars];
    for second in &events.seconds {
        let at = second.second as f64 - origin;
        if !(0.0..=span).contains(&at) {
            continue;
        }
        let k = ((at / width) as usize).min(bars - 1);
        let bin = &mut bins[k];
        bin.stored += second.stored_blocks;
        bin.removed += second.removed_blocks;
        bin.cleared += second.cleared;
        bin.batches += second.batches;
    }
    Some((bins, width, span))
}

/// The figure, or nothing without a stream; a stream that cannot be placed says why.
pub fn figure(report: &Report) -> Markup {
    let Some(events) = report.run.kv_events.as_ref() else {
        return html! {};
    };
    let Some((bins, width, span)) = binned(report, events) else {
        return html! {
            p.note #kv-lane-note { "The KV event stream (" (events.file) ") was received, but there is no recording of the run to place its events on." }
        };
    };
    let origin = report
        .run
        .series
        .as_ref()
        .and_then(|s| s.first_t_wall)
        .unwrap_or(0.0);
    let top = bins
        .iter()
        .map(|b| b.stored.max(b.removed))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let (y_max, ticks) = y_axis(top * 1.05);
    let height = 220.0;
    let frame = Frame::time(height, span, y_max);
    // Stored above the middle line, removed below it.
    let middle = frame.top + frame.plot_height() / 2.0;
    let half = frame.plot_height() / 2.0;
    let up = |v: u64| half * (v as f64 / y_max).clamp(0.0, 1.0);
    let slot = frame.plot_width() / bins.len() as f64;
    let gaps: Vec<(f64, String)> = events
        .gaps
        .iter()
        .filter_map(|g| {
            let at = g.t_wall? - origin;
            (0.0..=span).contains(&at).then(|| {
                (
                    at,
                    format!("batches {} to {} lost: {}", g.from_seq, g.to_seq, g.reason),
                )
            })
        })
        .collect();
    let unplaced_gaps = events.gaps.len() - gaps.len();
    let caption = format!(
        "The KV-cache events the engine published and the recorder received ({}): {} batches, {} blocks stored (above the line) and {} removed (below it), summed over {} s stretches of the recording's clock. {}",
        events.file,
        fmt::thousands(events.batches as i64),
        fmt::thousands(events.stored_blocks() as i64),
        fmt::thousands(events.removed_blocks() as i64),
        fmt::g((width * 100.0).round() / 100.0),
        match (events.gaps.len(), unplaced_gaps) {
            (0, _) => "No batch was lost.".to_owned(),
            (n, 0) => format!("{n} hole{} in the stream, each a red band where it was found.", fmt::plural(n as f64)),
            (n, u) => format!("{n} hole{} in the stream ({u} not placed on the clock).", fmt::plural(n as f64)),
        }
    );
    let label = format!(
        "KV-cache blocks stored and removed over time, {} stretches",
        bins.len()
    );
    let table_step = bins.len().div_ceil(MAX_TABLE_ROWS).max(1);
    html! {
        figure.chart #fig-kv-events {
            figcaption { h3 { "The KV cache, event by event" } p { (caption) } }
            ul.legend {
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.kv-stored x="1" y="2" width="22" height="6" {} } " blocks stored" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.kv-removed x="1" y="2" width="22" height="6" {} } " blocks removed" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { line.kv-cleared x1="12" x2="12" y1="0" y2="10" {} } " cache cleared" }
                li { svg.key viewBox="0 0 24 10" aria-hidden="true" { rect.kv-gap x="1" y="0" width="22" height="10" {} } " batches lost" }
            }
            div.plot.static {
                svg viewBox=(frame.view_box()) role="img" aria-label=(label) {
                    g.axis aria-hidden="true" {
                        @for v in &ticks {
                            text.ylabel x=(frame.left - 6.0) y=(f1(middle - up(*v as u64) + 4.0)) { (fmt::g(*v)) }
                        }
                        @for s in time_ticks(span) {
                            line.grid x1=(f1(frame.x(s))) x2=(f1(frame.x(s))) y1=(frame.top) y2=(f1(frame.baseline())) {}
                            text.xlabel x=(f1(frame.x(s))) y=(f1(height - 8.0)) { (moment(s, span)) }
                        }
                        line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(f1(middle)) y2=(f1(middle)) {}
                    }
                    @for (k, b) in bins.iter().enumerate() {
                        @let x = frame.left + k as f64 * slot;
                        @if b.stored > 0 {
                            rect.kv-stored x=(f1(x + slot * 0.1)) width=(f1((slot * 0.8).max(0.5))) y=(f1(middle - up(b.stored))) height=(f1(up(b.stored))) {
                                title { (b.stored) " blocks stored from " (moment(k as f64 * width, span)) }
                            }
                        }
                        @if b.removed > 0 {
                            rect.kv-removed x=(f1(x + slot * 0.1)) width=(f1((slot * 0.8).max(0.5))) y=(f1(middle)) height=(f1(up(b.removed))) {
                                title { (b.removed) " blocks removed from " (moment(k as f64 * width, span)) }
                            }
                        }
                        @if b.cleared > 0 {
                            line.kv-cleared x1=(f1(x + slot / 2.0)) x2=(f1(x + slot / 2.0)) y1=(frame.top) y2=(f1(frame.baseline())) {
                                title { "the cache was cleared (" (b.cleared) ") from " (moment(k as f64 * width, span)) }
                            }
                        }
                    }
                    @for (at, words) in &gaps {
                        rect.kv-gap x=(f1(frame.x(*at) - 3.0)) width="6" y=(frame.top) height=(f1(frame.plot_height())) {
                            title { (words) }
                        }
                    }
                }
            }
            details.data {
                summary { "Show the numbers" }
                table {
                    caption {
                        "Blocks stored and removed per stretch of " (fmt::g((width * 100.0).round() / 100.0)) " s, from the recording's first reading"
                        @if table_step > 1 { " (every " (table_step) "th stretch)" }
                        "."
                    }
                    thead { tr {
                        th scope="col" { "From (s)" } th scope="col" { "Batches" } th scope="col" { "Stored" }
                        th scope="col" { "Removed" } th scope="col" { "Cleared" }
                    } }
                    tbody {
                        @for (k, b) in bins.iter().enumerate().step_by(table_step) {
                            tr {
                                td { (format!("{:.1}", k as f64 * width)) }
                                td { (b.batches) } td { (b.stored) } td { (b.removed) } td { (b.cleared) }
                            }
                        }
                    }
                }
                @if !events.gaps.is_empty() {
                    ul {
                        @for g in &events.gaps {
                            li { "Batches " (g.from_seq) " to " (g.to_seq) " lost: " (g.reason) }
                        }
                    }
                }
            }
        }
    }
}
