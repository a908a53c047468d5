//! The page `sweep -o FILE` writes: every run's figures and verdicts in one table, and
//! one chart of throughput against latency with the knee, the first run the server did
//! not follow and the first preemption marked. It lays out the [`Sweep`] core made.

use inferlint_core::analyses::compare::Verdict;
use inferlint_core::analyses::slo::{self, CapacityVerdict, Verdict as SloVerdict};
use inferlint_core::analyses::sweep::{Point, Sweep, SweepSlo};
use inferlint_core::story::fmt;
use maud::{html, Markup};

use crate::page::page;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 320.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 44.0;

/// The chart: output throughput (up) against TTFT (across, on a log scale when it spans
/// more than ten times), one point per run labelled with its asked load.
fn chart(s: &Sweep) -> Markup {
    let points: Vec<(&Point, f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| Some((p, p.ttft_ms?, p.output_throughput?)))
        .filter(|(_, x, y)| *x > 0.0 && y.is_finite())
        .collect();
    if points.len() < 2 {
        return html! { p.note { "No chart: fewer than two runs have both a throughput and a TTFT from the load tool." } };
    }
    let x_min = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let x_max = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let y_max = crate::svg::nice_ceiling(points.iter().map(|p| p.2).fold(0.0, f64::max).max(1e-9));
    let log = x_max / x_min > 10.0;
    let (lo, hi) = if log {
        (x_min.log10().floor(), x_max.log10().ceil())
    } else {
        (0.0, crate::svg::nice_ceiling(x_max))
    };
    let span = (hi - lo).max(1e-9);
    let x = |v: f64| {
        let t = if log {
            (v.log10() - lo) / span
        } else {
            (v - lo) / span
        };
        LEFT + t * (WIDTH - LEFT - RIGHT)
    };
    let y = |v: f64| TOP + (1.0 - v / y_max) * (HEIGHT - TOP - BOTTOM);
    let path: String = points
        .iter()
        .enumerate()
        .map(|(i, (_, px, py))| {
            format!(
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { "L" },
                x(*px),
                y(*py)
            )
        })
        .collect();
    let y_ticks = crate::svg::ticks(y_max, 5);
    let x_ticks: Vec<f64> = if log {
        (lo as i32..=hi as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        crate::svg::ticks(hi, 5)
    };
    let mark = |p: &Point| -> Vec<&'static str> {
        let mut m = Vec::new();
        if s.knee.as_deref() == Some(p.label.as_str()) {
            m.push("knee");
        }
        if s.stops_following.as_deref() == Some(p.label.as_str()) {
            m.push("not followed");
        }
        if s.stops_reaching.as_deref() == Some(p.label.as_str())
            && s.stops_reaching != s.stops_following
        {
            m.push("peak below asked");
        }
        if s.preemption_starts.as_deref() == Some(p.label.as_str()) {
            m.push("preemption starts");
        }
        m
    };
    html! {
        figure.chart {
            svg viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) role="img" aria-label="Output throughput against time to first token, one point per run" {
                g.axis {
                    @for t in &y_ticks {
                        line.grid x1=(LEFT) x2=(WIDTH - RIGHT) y1=(format!("{:.1}", y(*t))) y2=(format!("{:.1}", y(*t))) {}
                        text.ylabel x=(LEFT - 6.0) y=(format!("{:.1}", y(*t) + 4.0)) { (fmt::g(*t)) }
                    }
                    @for t in &x_ticks {
                        text.xlabel x=(format!("{:.1}", x(*t))) y=(HEIGHT - BOTTOM + 18.0) { (fmt::g(*t)) }
                    }
                    line.base x1=(LEFT) x2=(WIDTH - RIGHT) y1=(HEIGHT - BOTTOM) y2=(HEIGHT - BOTTOM) {}
                    text.xlabel x=(format!("{:.1}", (LEFT + WIDTH - RIGHT) / 2.0)) y=(HEIGHT - 6.0) {
                        "TTFT, ms" @if log { " (log scale)" }
                    }
                }
                path.s-running d=(path) {}
                @for (p, px, py) in &points {
                    circle.s-running cx=(format!("{:.1}", x(*px))) cy=(format!("{:.1}", y(*py))) r="4" {}
                    text.linelabel x=(format!("{:.1}", x(*px) - 6.0)) y=(format!("{:.1}", y(*py) - 8.0)) {
                        (p.asked.map_or_else(|| p.label.clone(), fmt::g))
                        @for m in mark(p) { " \u{b7} " (m) }
                    }
                }
            }
            figcaption { p { "Output tokens per second (up) against the median time to first token (across); each point is one run, labelled with the load asked for." } }
        }
    }
}

fn verdicts(p: &Point) -> Markup {
    html! {
        @for (t, s) in &p.verdicts {
            @let class = match s.as_str() { "fail" => "fail", "warn" => "warn", "unknown" => "unknown", "pass" => "pass", "not_checked" => "notchecked", _ => "na" };
            span class={"chip " (class)} { (t) " " (s) } " "
        }
    }
}

fn bound_cell(b: &slo::BoundResult) -> String {
    if b.infinite {
        return "infinite".to_owned();
    }
    match b.value_ms {
        Some(v) => format!("{v:.1}"),
        None => "can't tell".to_owned(),
    }
}

/// The service level's part: each run's percentiles over every request (and over the
/// completed alone, as the tools count), its goodput, and the capacity.
fn service_level(level: &SweepSlo) -> Markup {
    let bounds: Vec<String> = level
        .runs
        .first()
        .map(|r| r.bounds.iter().map(|b| b.bound.clone()).collect())
        .unwrap_or_default();
    let cap = &level.capacity;
    html! {
        section #service-level {
            h2 { "Under the service level " code { (level.spec) } }
            p {
                @match cap.verdict {
                    CapacityVerdict::Bracketed => span.status.pass { "bracketed" },
                    CapacityVerdict::NotBracketed => span.status.unknown { "not bracketed" },
                    CapacityVerdict::Refused => span.status.fail { "refused" },
                }
                " " (cap.words)
            }
            @if let Some(c) = &cap.cost {
                p { "Cost at " (c.at) ": $" (format!("{:.3}", c.usd_per_mtok)) " per million output tokens that met the service level (" (format!("{:.1}", c.output_tokens_per_s)) " tok/s of goodput on " (c.price.gpus) " GPU at $" (fmt::g(c.price.usd_per_gpu_hour)) "/h each)." }
            }
            @if let Some(why) = &cap.cost_unknown { p.note { "Cost: can't tell: " (why) } }
            @for n in &cap.notes { p.note { (n) } }
            table {
                caption { "Each percentile over every request, a failed or unfinished one as +infinity (nearest rank); in brackets, over the completed requests alone, as the load tools count" }
                thead { tr {
                    th scope="col" { "run" }
                    th scope="col" { "requests" }
                    th scope="col" { "misses" }
                    @for b in &bounds { th scope="col" { (b) " ms" } }
                    th scope="col" { "goodput req/s" }
                    th scope="col" { "verdict" }
                } }
                tbody {
                    @for r in &level.runs {
                        tr {
                            th scope="row" { (r.label) }
                            td { (r.counted.requests) }
                            td { (r.counted.misses()) }
                            @for b in &r.bounds {
                                td {
                                    (bound_cell(b))
                                    @if let Some(c) = b.completed_only_ms { " (" (format!("{c:.1}")) ")" }
                                    @if b.thin.is_some() { " thin" }
                                }
                            }
                            td { (r.goodput.as_ref().map_or("can't tell".into(), |g| format!("{:.3}", g.requests_per_s))) }
                            td {
                                @match r.verdict {
                                    SloVerdict::Met => span.status.pass { "met" },
                                    SloVerdict::NotMet => span.status.fail { "not met" },
                                    SloVerdict::CannotTell => span.status.unknown { "can't tell" },
                                }
                            }
                        }
                    }
                }
            }
            @for r in &level.runs {
                @for why in &r.cannot_correct { p.note { (r.label) ": cannot correct: " (why) } }
            }
        }
    }
}

/// The whole page.
pub fn render(s: &Sweep, generator: &str, title: Option<&str>) -> String {
    let title = title.filter(|t| !t.trim().is_empty()).map_or_else(
        || format!("A sweep of {} runs", s.points.len()),
        str::to_owned,
    );
    let body = html! {
        section #findings {
            h2 { "What the sweep shows" }
            ul { @for f in &s.findings { li { (f) } } }
            @match s.one_setup {
                Verdict::Comparable => p { span.status.pass { "one setup" } " every run has the same setup and load but the one swept" },
                Verdict::NotComparable => p { span.status.fail { "not one setup" } " " (s.reasons.join("; ")) },
                Verdict::CannotTell => p { span.status.unknown { "cannot tell" } " " (s.reasons.join("; ")) },
            }
        }
        @if let Some(level) = &s.service_level { (service_level(level)) }
        section #chart {
            h2 { "Throughput against latency" }
            (chart(s))
        }
        section #runs {
            h2 { "Each run" }
            table {
                caption { "Every run of the sweep, in rising order of the load asked for" }
                thead { tr {
                    th scope="col" { "run" }
                    th scope="col" { (s.axis.map_or("load asked", |a| a.words())) }
                    th scope="col" { "ran at once (peak / busy mean)" }
                    th scope="col" { "preemptions" }
                    th scope="col" { "output tok/s" }
                    th scope="col" { "TTFT ms" }
                    th scope="col" { "TPOT ms" }
                    th scope="col" { "elasticity" }
                    th scope="col" { "verdicts" }
                } }
                tbody {
                    @for p in &s.points {
                        tr {
                            th scope="row" { (p.label) }
                            td { (p.asked.map_or("\u{2013}".into(), fmt::g)) }
                            td { (p.peak_running.map_or("\u{2013}".into(), fmt::g)) " / " (p.mean_running.map_or("\u{2013}".into(), |m| format!("{m:.1}"))) }
                            td { (p.preemptions.map_or("\u{2013}".into(), fmt::g)) }
                            td { (p.output_throughput.map_or("\u{2013}".into(), |v| format!("{v:.1}"))) }
                            td { (p.ttft_ms.map_or("\u{2013}".into(), |v| format!("{v:.1}"))) }
                            td { (p.tpot_ms.map_or("\u{2013}".into(), |v| format!("{v:.2}"))) }
                            td { (p.elasticity.map_or("\u{2013}".into(), |v| format!("{v:.2}"))) }
                            td { (verdicts(p)) }
                        }
                    }
                }
            }
        }
    };
    page(&title, generator, "sweep", body)
}
