//! The self-contained HTML report, rendered with maud.
//!
//! One file a user can attach to a ticket: every style, script and image is inline, and a
//! Content-Security-Policy lets the page load nothing from anywhere. It opens with what
//! limited the run, tells what happened in plain words, lists every verdict, draws what
//! the server did (with a replay of the KV cache block by block), and ends with the
//! server's start-up facts and a guide to the tripwires.
//!
//! Key design decision: the report computes no verdict. It shows the
//! [`CheckResult`]s and the "what limited this run" [`Insight`]s that core produced, the
//! facts the run model holds, and a [`Timeline`] folded from the recording for drawing.
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
mod page;
mod replay;
mod requests;
mod sections;
mod svg;
pub mod sweep;
pub mod timeline;
mod words;

use inferlint_core::insights::Insight;
use inferlint_core::run::Run;
use inferlint_core::{CheckResult, Status, Tripwire};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde_json::Value;

pub use csp::{policy, policy_without_script, source_hash};
pub use timeline::{Timeline, TimelineBuilder, TimelineSetup};

/// The page's style sheet (ours, constant).
pub const STYLE: &str = include_str!("../assets/report.css");
/// The page's script (ours, constant).
pub const SCRIPT: &str = include_str!("../assets/report.js");

/// Everything one report shows.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The run, as core read it.
    pub run: &'a Run,
    /// The verdicts, in the order the checks ran.
    pub results: &'a [CheckResult],
    /// "What limited this run", as core wrote it.
    pub insights: &'a [Insight],
    /// The recording folded for drawing, when there is one.
    pub timeline: Option<&'a Timeline>,
    /// The address the recording was made from (its header's URL).
    pub series_url: Option<&'a str>,
    /// `--title`.
    pub title: Option<&'a str>,
    /// The names of the files the report was made from, in the order boot logs, before,
    /// after, series, result file.
    pub made_from: &'a [String],
    /// What wrote the report, e.g. `inferlint 0.1.0`.
    pub generator: &'a str,
}

/// The usable KV block count T14 inferred, when T14 passed: the only block count the
/// charts and the replay trust.
pub fn usable_blocks(results: &[CheckResult]) -> Option<u64> {
    results
        .iter()
        .find(|r| r.tripwire == Tripwire::T14 && r.status == Status::Pass)
        .and_then(|r| r.evidence.get("inferred_usable_blocks"))
        .and_then(Value::as_u64)
}

/// The report's title: `--title`, else `vLLM 0.28.0 run`, else `vLLM run`.
pub fn title(report: &Report) -> String {
    if let Some(t) = report.title.filter(|t| !t.trim().is_empty()) {
        return t.to_owned();
    }
    match report.run.last_boot().and_then(|b| b.version.as_deref()) {
        Some(version) => format!("{} {version} run", report.run.engine.name),
        None => format!("{} run", report.run.engine.name),
    }
}

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
                title { (title) " \u{2013} inferlint" }
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

/// The page with every bidirectional control character (a right-to-left override in a
/// model name, a log line or a file name) written as its escape, `\u{202e}`, so that it
/// is seen and reverses nothing. The script's data escaped its own already
/// ([`data::ScriptJson`]); the style sheet and the script are ours and hold none, so
/// what is left is text and attribute values, where the escape is plain text.
fn bidi_shown(page: String) -> String {
    if !page.chars().any(inferlint_core::fmt::is_bidi_control) {
        return page;
    }
    let mut out = String::with_capacity(page.len() + 64);
    for c in page.chars() {
        if inferlint_core::fmt::is_bidi_control(c) {
            out.push_str(&inferlint_core::fmt::visible_escape(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// An inline SVG favicon (a tripwire across a gauge), as a data URI.
const FAVICON: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%232557a7'/%3E%3Cpath d='M2 11h12' stroke='%23fff' stroke-width='2'/%3E%3Cpath d='M4 8l3-4 2 3 3-4' stroke='%23fdd663' fill='none' stroke-width='1.6'/%3E%3C/svg%3E";
