//! The KV-block replay ("Why only 10?") and the data the page's script reads.
//!
//! The recording has, at each reading, the share of the cache in use, the requests
//! running and the requests waiting, not each request's blocks. So the replay shows what
//! can be known: the usable blocks as a grid (from T14), `round(kv_usage x usable blocks)`
//! of them in use, shared evenly by the running requests, drawn as towers; each waiting
//! request a tile, outlined when a preemption just pushed a request back. Without a
//! trusted block count (T14 did not pass, or the engine has no such count), each cell is
//! one percent of the cache and the page says so.

use inferlint_core::story::fmt::{self, round_half_even};
use inferlint_core::{Status, Tripwire};
use maud::{html, Markup};

use crate::data::{JsonWriter, ScriptJson};
use crate::report::Report;
use crate::timeline::{Range, Stretch};
use crate::words::{find, moment, preemption_heading, thousands};

/// The most cells the grid draws as blocks; a larger pool is drawn in percent.
const MAX_BLOCK_CELLS: u64 = 4096;

/// The grid's cells: usable blocks, or 100 percent cells.
fn cells(report: &Report) -> (u64, bool) {
    let trusted = report.account.setup.trusted_blocks.map(|f| f.value as u64);
    match trusted.filter(|b| *b > 0 && *b <= MAX_BLOCK_CELLS) {
        Some(b) => (b, true),
        None => (100, false),
    }
}

/// Cells in use at a stretch's last reading.
fn cells_in_use(p: &Stretch, cells: u64) -> Option<f64> {
    p.kv_usage
        .map(|r| round_half_even(r.last.clamp(0.0, 1.0) * cells as f64))
}

/// Whether the replay is drawn: a recording with running and KV readings, from an engine
/// whose gauges show what happened. A lagging gauge (updated only when a request
/// completes) would replay stale numbers as if they were the cache's state.
pub fn shown(report: &Report) -> bool {
    !report.run.engine.gauges_lag
        && report
            .timeline
            .is_some_and(|t| !t.points.is_empty() && t.has(|p| p.running) && t.has(|p| p.kv_usage))
}

/// The replay's introduction: what the cache is, how many blocks of what size were usable
/// and how many requests fitted in them (T14 and T9, from the account), or why each cell is
/// one percent.
fn intro(report: &Report, cells: u64, are_blocks: bool) -> Vec<String> {
    let (setup, happened) = (&report.account.setup, &report.account.happened);
    let peak = happened.peak_running.map(|f| f.value);
    let mut intro: Vec<String> = vec![
        "While a request is being answered, the server keeps its working notes in GPU memory, called the KV cache, and hands that memory out in blocks.".to_owned(),
    ];
    if are_blocks {
        let reported = setup.reported_blocks.map(|f| f.value);
        let block = setup.block_tokens.map(|f| f.value as u64);
        match (reported, block) {
            (Some(r), Some(b)) => intro.push(format!(
                "In this run there were {} blocks of {} tokens each, and {} held back, so {} were usable (T14).",
                thousands(r),
                fmt::thousands(b as i64),
                if r - cells as f64 == 1.0 { "one is".to_owned() } else { format!("{} are", thousands(r - cells as f64)) },
                thousands(cells as f64)
            )),
            _ => intro.push(format!("{} blocks were usable (T14).", thousands(cells as f64))),
        }
        let per_request = happened.blocks_per_request_min.map(|f| f.value);
        let (lo, hi) = (
            happened.cache_ceiling_min.map(|f| f.value),
            happened.cache_ceiling_max.map(|f| f.value),
        );
        if let (Some(bpr), Some(hi)) = (per_request, hi) {
            let held = (bpr * 10.0).round() / 10.0;
            let mut s = format!(
                "While the cache was full, each request held at least {} block{}, so at most {} fit",
                fmt::g(held),
                fmt::plural(held),
                fmt::g(hi)
            );
            let requested = report.account.load.requested.map(|f| f.value);
            if let (Some(n), Some(p)) = (requested, peak) {
                if n > p {
                    s.push_str(&format!(" and the other {} waited", fmt::g(n - p)));
                }
            }
            s.push('.');
            intro.push(s);
            if let Some(lo) = lo.filter(|lo| *lo < hi) {
                intro.push(format!(
                    "As answers grew they needed more blocks, and fewer fit: as few as {}.",
                    fmt::g(lo)
                ));
            }
        }
    } else {
        intro.push(format!(
            "The recording gives the share of {} in use, not a block count this report can trust, so each square below is one percent of it.",
            report.run.engine.kv_usage_pool_words
        ));
    }
    intro.push("Press Play to replay the recorded run, or move the slider through it (it takes the arrow keys).".to_owned());
    intro
}

pub fn section(report: &Report) -> Markup {
    if report.run.engine.gauges_lag && report.timeline.is_some() {
        return html! {
            section #replay aria-labelledby="replay-h" {
                h2 #replay-h { "The KV cache, replayed" }
                p.note {
                    "No replay: " (report.run.engine.name) " updates its running and KV gauges only when a request completes, so a replay would show stale readings as the cache's state. The charts above label those readings as such."
                }
            }
        };
    }
    if !shown(report) {
        return html! {};
    }
    let Some(timeline) = report
        .timeline
        .filter(|t| !t.points.is_empty() && t.has(|p| p.running) && t.has(|p| p.kv_usage))
    else {
        return html! {};
    };
    let (cells, are_blocks) = cells(report);
    let t8 = find(report.results, Tripwire::T8);
    let peak = report.account.happened.peak_running.map(|f| f.value);
    let subject = if are_blocks {
        "The KV cache, block by block"
    } else {
        "The KV cache, replayed"
    };
    let heading = match (t8.map(|r| r.status), peak) {
        (Some(Status::Fail), Some(p)) => format!("Why only {}? {subject}", fmt::g(p)),
        _ => subject.to_owned(),
    };
    let intro = intro(report, cells, are_blocks);
    let span = timeline.span_s();
    let first_preemption = timeline.points.iter().find(|p| p.preemptions > 0.0);
    let last_index = timeline.points.len().saturating_sub(1);
    html! {
        section #replay aria-labelledby="replay-h" {
            h2 #replay-h { (heading) }
            p { (intro.join(" ")) }
            @if timeline.downsampled() {
                p.note { "This recording is long, so each step of the replay is one stretch of the chart above, shown at its last reading." }
            }
            div.replay data-cells=(cells) data-blocks=(are_blocks) {
                div.controls {
                    button #rp-play type="button" aria-pressed="false" { "Play" }
                    label for="rp-slider" { "Time in the recorded run" }
                    input #rp-slider type="range" min="0" max=(last_index) value="0" step="1";
                }
                div.scale aria-hidden="true" {
                    span { (moment(0.0, span)) }
                    @if let Some(p) = first_preemption {
                        span { (moment(p.t_last, span)) ": first " (report.run.engine.preemption_word) }
                    }
                    span { (moment(span, span)) }
                }
                dl.rp-stats {
                    div { dt { "Seconds into the run" } dd #rp-t { "0.0" } }
                    div { dt { "Running" } dd #rp-running { "0" } }
                    div { dt { "Waiting" } dd #rp-waiting { "0" } }
                    div { dt { (if are_blocks { "Blocks each, average" } else { "Percent each, average" }) } dd #rp-each { "\u{2013}" } }
                    div { dt { (preemption_heading(report.run.engine.preemption_word)) " so far" } dd #rp-pre { "0" } }
                }
                p.rp-grid-title {
                    @if are_blocks { "The " (thousands(cells as f64)) " usable blocks: " } @else { "The cache, in percent: " }
                    span #rp-used { "0 in use, " (cells) " free" }
                }
                canvas #rp-canvas width="960" height="440" role="img" aria-describedby="rp-desc" {}
                p #rp-desc aria-live="polite" {}
                p.muted {
                    "Each tower is a running request and each tile a waiting one; a tile with an outline has just been pushed back. Outlined free cells are room left while requests wait. The recording has the total in use, not each request's share, so the towers share that total evenly."
                }
            }
            noscript { p { "The replay needs the page's script; the charts above show the same recording." } }
        }
    }
}

fn ranges<'a>(
    w: &mut JsonWriter,
    key: &str,
    points: &'a [Stretch],
    gauge: impl Fn(&'a Stretch) -> Option<Range>,
    scale: f64,
    decimals: usize,
    downsampled: bool,
) {
    w.nested(key, |o| {
        if downsampled {
            o.numbers(
                "min",
                points.iter().map(|p| gauge(p).map(|r| r.min * scale)),
                decimals,
            );
            o.numbers(
                "max",
                points.iter().map(|p| gauge(p).map(|r| r.max * scale)),
                decimals,
            );
            o.numbers(
                "last",
                points.iter().map(|p| gauge(p).map(|r| r.last * scale)),
                decimals,
            );
        } else {
            o.numbers(
                "v",
                points.iter().map(|p| gauge(p).map(|r| r.last * scale)),
                decimals,
            );
        }
    });
}

/// The JSON the page's script reads: the timeline's points for the read-outs and the
/// replay, and a few facts for their wording.
pub fn script_data(report: &Report) -> ScriptJson {
    let mut w = JsonWriter::object();
    let engine = report.run.engine;
    w.text("engine", engine.name);
    w.text("preemption_word", engine.preemption_word);
    w.number("requested", report.run.requested.map(|n| n as f64), 0);
    if let Some(t) = report.timeline.filter(|t| !t.points.is_empty()) {
        let (cells, are_blocks) = cells(report);
        let points = &t.points;
        let down = t.downsampled();
        w.number("span", Some(t.span_s()), 3);
        w.boolean("downsampled", down);
        w.number("cells", Some(cells as f64), 0);
        w.boolean("blocks", are_blocks);
        w.numbers("t", points.iter().map(|p| Some(p.t_first)), 3);
        w.numbers("t_last", points.iter().map(|p| Some(p.t_last)), 3);
        ranges(&mut w, "running", points, |p| p.running, 1.0, 2, down);
        ranges(&mut w, "waiting", points, |p| p.waiting, 1.0, 2, down);
        ranges(&mut w, "kv", points, |p| p.kv_usage, 100.0, 2, down);
        ranges(&mut w, "fit", points, |p| p.fit_in_cache, 1.0, 0, down);
        ranges(&mut w, "tput", points, |p| p.tokens_per_s, 1.0, 1, down);
        w.numbers("pre", points.iter().map(|p| Some(p.preemptions)), 0);
        let counted = t.has_preemption_counter;
        w.numbers(
            "pre_so_far",
            points
                .iter()
                .map(|p| counted.then_some(p.preemptions_so_far)),
            0,
        );
        w.numbers("used", points.iter().map(|p| cells_in_use(p, cells)), 0);
    }
    ScriptJson::new(&w.finish())
}
