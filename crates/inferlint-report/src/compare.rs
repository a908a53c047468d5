//! The page `compare -o FILE` writes: the comparability gate item by item, what happened
//! in each run, what moved and the regression gate, as core decided them. Nothing here
//! decides: it lays out the [`Comparison`] it is given.

use inferlint_core::analyses::compare::{Comparison, GateVerdict, Item, ItemState, Verdict};
use inferlint_core::analyses::slo::{GateVerdict as SloGate, Verdict as SloVerdict};
use inferlint_core::story::fmt;
use maud::{html, Markup};

use crate::page::page;

fn state_class(state: ItemState) -> &'static str {
    match state {
        ItemState::Same => "pass",
        ItemState::Differs => "fail",
        ItemState::OneSided => "unknown",
        ItemState::NotRecorded => "na",
    }
}

fn state_icon(state: ItemState) -> &'static str {
    match state {
        ItemState::Same => "\u{2713}",
        ItemState::Differs => "\u{2717}",
        ItemState::OneSided => "?",
        ItemState::NotRecorded => "\u{2013}",
    }
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Comparable => "pass",
        Verdict::NotComparable => "fail",
        Verdict::CannotTell => "unknown",
    }
}

/// The runs' labels as column heads: `A: run/a`.
fn run_heads(c: &Comparison) -> Vec<String> {
    c.sides
        .iter()
        .flat_map(|s| s.runs.iter().map(move |r| format!("{}: {r}", s.label)))
        .collect()
}

fn items_table(c: &Comparison, caption: &str, items: &[&Item]) -> Markup {
    let heads = run_heads(c);
    html! {
        table {
            caption { (caption) }
            thead { tr {
                th scope="col" { "item" }
                th scope="col" { "state" }
                @for h in &heads { th scope="col" { (h) } }
                th scope="col" { "how it moves the numbers" }
            } }
            tbody {
                @for item in items {
                    tr {
                        th scope="row" { (item.words) }
                        td { span class={"status " (state_class(item.state))} {
                            span.icon aria-hidden="true" { (state_icon(item.state)) } " " (item.state.label())
                        } }
                        @for v in &item.values {
                            td { (v.as_deref().unwrap_or("not recorded")) }
                        }
                        td { (item.effect.unwrap_or("")) }
                    }
                }
            }
        }
    }
}

fn moved_table(c: &Comparison) -> Markup {
    html! {
        table {
            caption { "What moved, each side against " (c.sides.first().map_or("", |s| s.label.as_str())) }
            thead { tr {
                th scope="col" { "figure" }
                @for s in &c.sides { th scope="col" { (s.label) " (" (s.runs.len()) " run" @if s.runs.len() != 1 { "s" } ")" } }
                th scope="col" { "from" }
            } }
            tbody {
                @for m in &c.moved {
                    tr {
                        th scope="row" { (m.words) " (" (m.unit) ")" }
                        @for f in &m.sides {
                            td {
                                @if let Some(f) = f {
                                    (format!("{:.2}", f.mean))
                                    @if let Some(n) = f.noise { " \u{b1}" (fmt::percent(n / 2.0, 1)) }
                                    @if let Some(ch) = f.change {
                                        " (" (fmt::signed_percent(ch, 1))
                                        @if f.within_noise == Some(true) { ", within noise" }
                                        @else if f.worse == Some(true) { ", worse" }
                                        @else if ch != 0.0 { ", better" }
                                        ")"
                                    }
                                } @else { "\u{2013}" }
                            }
                        }
                        td { (m.source) }
                    }
                }
            }
        }
    }
}

/// The whole page.
pub fn render(c: &Comparison, generator: &str, title: Option<&str>) -> String {
    let title = title.filter(|t| !t.trim().is_empty()).map_or_else(
        || {
            format!(
                "{} runs compared",
                c.sides.iter().map(|s| s.runs.len()).sum::<usize>()
            )
        },
        str::to_owned,
    );
    let setup: Vec<&Item> = c.items.iter().filter(|i| i.group == "setup").collect();
    let load: Vec<&Item> = c.items.iter().filter(|i| i.group == "load").collect();
    let runs: Vec<&Item> = c.runs.iter().collect();
    let body = html! {
        section #verdict {
            h2 { "Can these runs be compared?" }
            p { span class={"status " (verdict_class(c.verdict))} { (c.verdict.words()) } }
            @if !c.reasons.is_empty() {
                ul { @for r in &c.reasons { li { (r) } } }
            }
            @if !c.reservations.is_empty() {
                p.note { "No run records: " (c.reservations.join(", ")) ". These are not known to be the same." }
            }
            @if let Some(g) = &c.gate {
                h3 { "Regression gate (" (fmt::percent(g.max_regression, 1)) ")" }
                @match g.verdict {
                    GateVerdict::Passed => p { span.status.pass { "passed" } " no figure got worse by more than the margin" },
                    GateVerdict::Regressed => ul { @for r in &g.regressions { li { span.status.fail { "regression" } " " (r) } } },
                    GateVerdict::Inconclusive => ul { @for f in g.figures.iter().filter(|f| f.verdict == GateVerdict::Inconclusive) { li { span.status.unknown { "inconclusive" } " " (f.words) } } },
                    GateVerdict::CannotGate => p { span.status.unknown { "cannot gate" } " " (g.reason.as_deref().unwrap_or("")) },
                }
                @for w in &g.warnings { p.note { "Warning: " (w) } }
            }
            @if let Some(level) = &c.service_level {
                h3 { "Goodput under the service level " code { (level.spec) } }
                @for g in &level.gates {
                    p {
                        @match g.verdict {
                            SloGate::Passed => span.status.pass { "passed" },
                            SloGate::Regressed => span.status.fail { "regression" },
                            SloGate::CannotGate => span.status.unknown { "cannot gate" },
                        }
                        " " (g.words)
                    }
                }
                table {
                    caption { "Each run held to the service level: every request counted, a failed or unfinished one as an infinite latency" }
                    thead { tr {
                        th scope="col" { "side" } th scope="col" { "run" } th scope="col" { "verdict" }
                        th scope="col" { "misses" } th scope="col" { "goodput req/s" }
                    } }
                    tbody {
                        @for (side, runs) in &level.sides {
                            @for r in runs {
                                tr {
                                    td { (side) } th scope="row" { (r.label) }
                                    td {
                                        @match r.verdict {
                                            SloVerdict::Met => span.status.pass { "met" },
                                            SloVerdict::NotMet => span.status.fail { "not met" },
                                            SloVerdict::CannotTell => span.status.unknown { "can't tell" },
                                        }
                                    }
                                    td { (r.counted.misses()) " of " (r.counted.requests) }
                                    td { (r.goodput.as_ref().map_or("can't tell".into(), |g| format!("{:.3}", g.requests_per_s))) }
                                }
                            }
                        }
                    }
                }
            }
        }
        section #gate {
            h2 { "The setup and the load, item by item" }
            (items_table(c, "The server's setup", &setup))
            (items_table(c, "The load asked for", &load))
        }
        section #runs {
            h2 { "What happened in each run" }
            (items_table(c, "The runs", &runs))
        }
        @if !c.moved.is_empty() {
            section #moved {
                h2 { "What moved" }
                (moved_table(c))
                @if c.sides.iter().all(|s| s.runs.len() < 2) {
                    p.note { "One run per side: the run-to-run noise is unknown. Give a folder of repeats per side to measure it." }
                }
            }
        }
    };
    page(&title, generator, "compare", body)
}
