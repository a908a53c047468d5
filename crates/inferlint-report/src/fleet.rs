//! The page a fleet's report writes: one row per replica (its verdicts, peak running,
//! preemptions, KV cache), each linked to the replica's own report, the fleet's verdicts
//! (T22) and the fleet's charts: requests running and waiting on each replica, stacked,
//! against time.
//!
//! Nothing here decides: the verdicts are core's, and [`FleetChart`] only folds the
//! replicas' readings into buckets for drawing (each bucket keeps each replica's highest
//! reading, so a stacked bucket is the most the fleet held then, never less).

use inferlint_core::judging::status::{CheckResult, Status};
use inferlint_core::model::SeriesSample;
use inferlint_core::story::fmt;
use maud::{html, Markup};

use crate::page::page;
use crate::svg::{self, Frame, WIDTH};

/// A link the page may hold: an `http://` or `https://` address as it is, or a relative
/// path with each of its segments percent-encoded (a `:` included, so that a folder named
/// `javascript:alert(1)` is a file name, never a scheme). Anything else (another scheme,
/// an absolute path, a path starting `//` or holding a backslash) gets no link: the
/// replica's name is shown without one.
pub fn safe_href(href: &str) -> Option<String> {
    let lower = href.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let ok = !href
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || c == '\\');
        return ok.then(|| href.to_owned());
    }
    if href.is_empty() || href.starts_with('/') || href.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(href.len() + 8);
    for (i, segment) in href.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        for byte in segment.bytes() {
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    Some(out)
}

/// One replica as its row shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaRow {
    /// As its source names it.
    pub name: String,
    /// The link to its own report, relative to the fleet page; `None` when none was
    /// written.
    pub href: Option<String>,
    /// Its results (verdicts and not-checked entries).
    pub results: Vec<CheckResult>,
    /// The most requests it ran at once.
    pub peak_running: Option<f64>,
}

/// The most buckets a fleet chart draws.
pub const CHART_BUCKETS: usize = 480;

#[derive(Debug, Clone, Default)]
struct ReplicaFold {
    running: Vec<Option<f64>>,
    waiting: Vec<Option<f64>>,
    peak_kv: Option<f64>,
    first_preemptions: Option<f64>,
    last_preemptions: Option<f64>,
}

/// The replicas' readings folded for drawing, bucket by bucket of time. Readings are
/// placed by slot (`(t - first) / interval`, rounded), so the replicas' readings of one
/// moment land in one bucket.
#[derive(Debug, Clone)]
pub struct FleetChart {
    first_t_wall: f64,
    interval_s: f64,
    span_s: f64,
    slots_per_bucket: usize,
    buckets: usize,
    replicas: Vec<ReplicaFold>,
}

impl FleetChart {
    /// A chart of `replicas` replicas read every `interval_s` from `first_t_wall` for
    /// `span_s` seconds.
    pub fn new(first_t_wall: f64, interval_s: f64, span_s: f64, replicas: usize) -> FleetChart {
        let interval_s = if interval_s > 0.0 && interval_s.is_finite() {
            interval_s
        } else {
            1.0
        };
        let span_s = if span_s.is_finite() {
            span_s.max(0.0)
        } else {
            0.0
        };
        let slots = ((span_s / interval_s).ceil().min(1e9) as usize).saturating_add(1);
        let slots_per_bucket = slots.div_ceil(CHART_BUCKETS).max(1);
        let buckets = slots.div_ceil(slots_per_bucket).max(1);
        FleetChart {
            first_t_wall,
            interval_s,
            span_s,
            slots_per_bucket,
            buckets,
            replicas: vec![
                ReplicaFold {
                    running: vec![None; buckets],
                    waiting: vec![None; buckets],
                    ..ReplicaFold::default()
                };
                replicas
            ],
        }
    }

    /// Folds one reading of replica `index` in.
    pub fn push(&mut self, index: usize, sample: &SeriesSample) {
        let offset = ((sample.t_wall - self.first_t_wall) / self.interval_s).round();
        let Some(fold) = self.replicas.get_mut(index) else {
            return;
        };
        if offset.is_nan() || offset < 0.0 {
            return;
        }
        let bucket = (offset as usize / self.slots_per_bucket).min(self.buckets - 1);
        let keep_max = |slot: &mut Option<f64>, v: Option<f64>| {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                *slot = Some(slot.map_or(v, |s: f64| s.max(v)));
            }
        };
        keep_max(&mut fold.running[bucket], sample.running);
        keep_max(&mut fold.waiting[bucket], sample.waiting);
        keep_max(&mut fold.peak_kv, sample.kv_usage);
        if let Some(p) = sample.preemptions.filter(|p| p.is_finite()) {
            fold.first_preemptions.get_or_insert(p);
            fold.last_preemptions = Some(p);
        }
    }

    /// Replica `index`'s highest KV usage, 0 to 1.
    pub fn peak_kv_usage(&self, index: usize) -> Option<f64> {
        self.replicas.get(index).and_then(|r| r.peak_kv)
    }

    /// How far replica `index`'s preemption counter moved (a restart can make this
    /// less than the truth; the replica's own T1 says so).
    pub fn preemptions(&self, index: usize) -> Option<f64> {
        let r = self.replicas.get(index)?;
        Some((r.last_preemptions? - r.first_preemptions?).max(0.0))
    }
}

/// One colour per replica (as SVG presentation attributes, which the page's policy
/// allows where it forbids inline styles), repeating after eight.
const PALETTE: [&str; 8] = [
    "#1f5fa8", "#c2410c", "#15803d", "#7e22ce", "#b45309", "#0e7490", "#be123c", "#4d7c0f",
];

/// One stacked chart of a gauge: each replica's band on top of the ones before.
fn stacked(
    chart: &FleetChart,
    names: &[String],
    pick: fn(&ReplicaFold) -> &[Option<f64>],
    what: &str,
) -> Markup {
    let buckets = chart.buckets;
    let mut tops = vec![0.0f64; buckets];
    let mut layers: Vec<Vec<(f64, f64)>> = Vec::new();
    for fold in &chart.replicas {
        let values = pick(fold);
        let layer: Vec<(f64, f64)> = (0..buckets)
            .map(|b| {
                let bottom = tops[b];
                let top = bottom + values[b].unwrap_or(0.0);
                tops[b] = top;
                (bottom, top)
            })
            .collect();
        layers.push(layer);
    }
    let highest = tops.iter().copied().fold(0.0, f64::max);
    let (y_max, y_ticks) = svg::y_axis(highest);
    let frame = Frame::time(220.0, chart.span_s, y_max);
    let bucket_s = chart.interval_s * chart.slots_per_bucket as f64;
    let x = |b: usize| frame.x(b as f64 * bucket_s);
    let band = |layer: &[(f64, f64)]| -> String {
        let mut d = String::new();
        for (b, (_, top)) in layer.iter().enumerate() {
            d.push_str(&format!(
                "{}{:.1},{:.1} L{:.1},{:.1} ",
                if b == 0 { "M" } else { "L" },
                x(b),
                frame.y(*top),
                x(b + 1),
                frame.y(*top)
            ));
        }
        for (b, (bottom, _)) in layer.iter().enumerate().rev() {
            d.push_str(&format!(
                "L{:.1},{:.1} L{:.1},{:.1} ",
                x(b + 1),
                frame.y(*bottom),
                x(b),
                frame.y(*bottom)
            ));
        }
        d.push('Z');
        d
    };
    html! {
        figure.chart {
            svg viewBox=(frame.view_box()) role="img" aria-label=(format!("Requests {what} on each replica, stacked, against time")) {
                g.axis {
                    @for t in &y_ticks {
                        line.grid x1=(frame.left) x2=(WIDTH - frame.right) y1=(format!("{:.1}", frame.y(*t))) y2=(format!("{:.1}", frame.y(*t))) {}
                        text.ylabel x=(frame.left - 6.0) y=(format!("{:.1}", frame.y(*t) + 4.0)) { (fmt::g(*t)) }
                    }
                    @for t in svg::time_ticks(chart.span_s) {
                        text.xlabel x=(format!("{:.1}", frame.x(t))) y=(frame.height - frame.bottom + 18.0) { (fmt::g(t)) " s" }
                    }
                    line.base x1=(frame.left) x2=(WIDTH - frame.right) y1=(frame.baseline()) y2=(frame.baseline()) {}
                }
                @for (i, layer) in layers.iter().enumerate() {
                    path d=(band(layer)) fill=(PALETTE[i % PALETTE.len()]) fill-opacity="0.45" stroke=(PALETTE[i % PALETTE.len()]) stroke-width="1" {
                        title { (names.get(i).map_or("", String::as_str)) }
                    }
                }
                g {
                    @for (i, name) in names.iter().enumerate().take(16) {
                        rect x=(frame.left + 8.0 + (i % 4) as f64 * 220.0) y=(frame.top + 4.0 + (i / 4) as f64 * 16.0) width="10" height="10" fill=(PALETTE[i % PALETTE.len()]) {}
                        text.replica x=(frame.left + 22.0 + (i % 4) as f64 * 220.0) y=(frame.top + 13.0 + (i / 4) as f64 * 16.0) { (name) }
                    }
                }
            }
            figcaption { p {
                "Requests " (what) " on each replica, stacked in the order of the table below (a band per replica, hover for its name); each bucket of "
                (fmt::g(bucket_s)) " s shows each replica's highest reading."
            } }
        }
    }
}

fn status_class(status: Status) -> &'static str {
    match status {
        Status::Fail => "fail",
        Status::Warn => "warn",
        Status::Unknown => "unknown",
        Status::Pass => "pass",
        Status::NotChecked => "notchecked",
        Status::NotApplicable => "na",
        // A status added later: shown as one that cannot tell.
        _ => "unknown",
    }
}

fn counts(results: &[CheckResult]) -> Markup {
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    html! {
        @for (status, word) in [(Status::Fail, "failed"), (Status::Warn, "warn"), (Status::Unknown, "can't tell"), (Status::Pass, "pass")] {
            @let n = count(status);
            @if n > 0 {
                span class={"chip " (status_class(status))} title=(results.iter().filter(|r| r.status == status).map(|r| r.tripwire.to_string()).collect::<Vec<_>>().join(" ")) { (n) " " (word) } " "
            }
        }
    }
}

/// What the page shows.
#[derive(Debug)]
pub struct FleetPage<'a> {
    /// `--title`, or none for "A fleet of N replicas".
    pub title: Option<&'a str>,
    /// Where the runs came from (`watch`, `prometheus URL …`).
    pub source: &'a str,
    /// One per replica.
    pub rows: &'a [ReplicaRow],
    /// The fleet's own verdicts (T22).
    pub fleet_results: &'a [CheckResult],
    /// The replicas' readings folded for drawing, when there are any.
    pub chart: Option<&'a FleetChart>,
    /// `inferlint VERSION`, in the page's head and footer.
    pub generator: &'a str,
}

/// The whole page.
pub fn render(p: &FleetPage) -> String {
    let title = p.title.filter(|t| !t.trim().is_empty()).map_or_else(
        || match p.rows.len() {
            1 => "A fleet of 1 replica".to_owned(),
            n => format!("A fleet of {n} replicas"),
        },
        str::to_owned,
    );
    let names: Vec<String> = p.rows.iter().map(|r| r.name.clone()).collect();
    let body = html! {
        section #fleet {
            h2 { "The fleet" }
            p.muted { "Read from " (p.source) "." }
            ul.findings {
                @for r in p.fleet_results {
                    li {
                        span class={"status " (status_class(r.status))} { (r.tripwire) " " (r.status.terminal_label()) }
                        " " (r.message)
                    }
                }
            }
        }
        section #replicas {
            h2 { "Each replica" }
            table {
                caption { "One row per replica; its name opens its own report" }
                thead { tr {
                    th scope="col" { "replica" }
                    th scope="col" { "verdicts" }
                    th scope="col" { "peak running" }
                    th scope="col" { "preemptions" }
                    th scope="col" { "peak KV cache" }
                    th scope="col" { "failed" }
                } }
                tbody {
                    @for (i, row) in p.rows.iter().enumerate() {
                        tr {
                            th scope="row" {
                                @match row.href.as_deref().and_then(safe_href) {
                                    Some(href) => a href=(href) { (row.name) },
                                    None => (row.name),
                                }
                            }
                            td { (counts(&row.results)) }
                            td { (row.peak_running.map_or("\u{2013}".into(), fmt::g)) }
                            td { (p.chart.and_then(|c| c.preemptions(i)).map_or("\u{2013}".into(), fmt::g)) }
                            td { (p.chart.and_then(|c| c.peak_kv_usage(i)).map_or("\u{2013}".into(), |u| format!("{:.0}%", u * 100.0))) }
                            td {
                                @for r in row.results.iter().filter(|r| r.status == Status::Fail) {
                                    (r.tripwire) " "
                                }
                            }
                        }
                    }
                }
            }
        }
        @if let Some(chart) = p.chart {
            section #charts {
                h2 { "The fleet over time" }
                (stacked(chart, &names, |f| &f.running, "running"))
                (stacked(chart, &names, |f| &f.waiting, "waiting"))
            }
        }
    };
    page(&title, p.generator, "fleet", body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::Tripwire;

    #[test]
    fn a_day_folds_into_at_most_the_buckets_drawn() {
        let mut chart = FleetChart::new(0.0, 1.0, 86_400.0, 2);
        assert!(chart.buckets <= CHART_BUCKETS);
        for t in 0..86_400 {
            let s = SeriesSample {
                t_wall: f64::from(t),
                running: Some(f64::from(t % 7)),
                waiting: Some(1.0),
                kv_usage: Some(0.5),
                preemptions: Some(f64::from(t / 100)),
                ..SeriesSample::default()
            };
            chart.push(0, &s);
        }
        assert_eq!(chart.peak_kv_usage(0), Some(0.5));
        assert_eq!(chart.preemptions(0), Some(863.0));
        assert_eq!(chart.preemptions(1), None);
    }

    #[test]
    fn rows_link_to_each_replica_and_the_page_has_no_script() {
        let rows = vec![ReplicaRow {
            name: "replica-0:8000".into(),
            href: Some("replica-0_8000/report.html".into()),
            results: vec![CheckResult::new(
                Tripwire::T1,
                Status::Fail,
                "9 preemptions",
            )],
            peak_running: Some(16.0),
        }];
        let fleet = [CheckResult::new(
            Tripwire::T22,
            Status::Fail,
            "replica replica-0:8000 queued <b>",
        )];
        let chart = FleetChart::new(0.0, 1.0, 10.0, 1);
        let html = render(&FleetPage {
            title: None,
            source: "watch",
            rows: &rows,
            fleet_results: &fleet,
            chart: Some(&chart),
            generator: "inferlint test",
        });
        assert!(html.contains("<a href=\"replica-0_8000/report.html\">replica-0:8000</a>"));
        assert!(
            html.contains("queued &lt;b&gt;"),
            "text from a run is escaped"
        );
        assert!(!html.contains("<script"));
        assert!(html.contains("A fleet of 1 replica<"));
    }

    #[test]
    fn a_link_is_http_or_a_relative_path_made_safe() {
        assert_eq!(
            safe_href("javascript:alert(1)/report.html").as_deref(),
            Some("javascript%3Aalert%281%29/report.html")
        );
        assert_eq!(
            safe_href("replica-0_8000/report.html").as_deref(),
            Some("replica-0_8000/report.html")
        );
        assert_eq!(
            safe_href("https://example.com/r.html").as_deref(),
            Some("https://example.com/r.html")
        );
        for refused in ["/etc/passwd", "//evil.example/x", "a\\b", ""] {
            assert_eq!(safe_href(refused), None, "{refused}");
        }
    }
}
