//! The self-contained HTML report, rendered with maud.
//!
//! One file a user can attach to a ticket: every style, script and image is inline, and a
//! Content-Security-Policy lets the page load nothing from anywhere. It opens with what
//! limited the run, tells what happened in plain words, lists every verdict, draws what
//! the server did (with a replay of the KV cache block by block), and ends with the
//! server's start-up facts and a guide to the tripwires.
//!
//! Key design decision: the report computes no verdict. It shows the
//! `CheckResult`s, the run's `Account` and the "what limited this run" `Insight`s that
//! core produced, the facts the run model holds, and a [`Timeline`] folded from the recording for drawing.
//! Everything that comes from a file (log lines, model names, file names, metric labels)
//! reaches the page through maud's escaping; data for the page's script goes in as JSON
//! ([`data::ScriptJson`]), never as code. The charts are SVG drawn here, so the page reads
//! without its script; the script adds the read-outs, the replay and the theme switch.

#![deny(missing_docs)]

mod charts;
pub mod compare;
mod csp;
pub mod data;
pub mod fleet;
mod kv_lane;
mod page;
mod replay;
mod report;
mod requests;
mod sections;
mod steps_lane;
mod svg;
pub mod sweep;
pub mod timeline;
pub mod timeline_pass;
pub mod trace;
mod words;

use maud::{html, Markup, PreEscaped, DOCTYPE};

pub use csp::{policy, policy_without_script, source_hash};
pub use page::{SCRIPT, STYLE};
pub use report::{title, usable_blocks, Report};
pub use timeline::{Timeline, TimelineBuilder, TimelineSetup};
pub use timeline_pass::{charts_timeline, PassCharts, TimelinePass};

use page::{bidi_shown, FAVICON};

/// Renders the whole page.
pub fn render(report: &Report) -> String {
    let title = title(report);
    let data = replay::script_data(report);
    let page: Markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta http-equiv="Content-Security-Policy" content=(policy(STYLE, SCRIPT));
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="generator" content=(report.generator);
                title {
                    @if report.account.simulated.is_some() { "Simulated: " }
                    (title) " \u{2013} inferlint"
                }
                link rel="icon" href=(FAVICON);
                // Our own constant style sheet; nothing from the run is in it.
                style { (PreEscaped(STYLE)) }
            }
            body {
                a.skip href="#limits" { "Skip to the findings" }
                (sections::header(report, &title))
                main {
                    (sections::what_limited(report))
                    (sections::what_happened(report))
                    (sections::results(report))
                    (charts::what_the_server_did(report))
                    (requests::section(report))
                    (replay::section(report))
                    (sections::server(report))
                    (sections::guide(report))
                }
                (sections::footer(report))
                script type="application/json" id="report-data" { (data) }
                // Our own constant script; it reads the run's data from the JSON above.
                script { (PreEscaped(SCRIPT)) }
            }
        }
    };
    bidi_shown(page.into_string())
}
