//! One figure, one value, across every output of a run: the terminal text, `--json`, the
//! HTML page's text and its chart data, and the library's account. A figure a user may
//! copy from one of them (how many requests fit when they start and at full length, the
//! peak running, the load tool's output throughput, its TTFT median and p99, the usable
//! KV blocks) must be the same figure in all of them, over every run folder of
//! `fixtures/` (the real engine's included) and of the recordings.
//!
//! A printed number stands for every value that rounds to it (`2.2 s` is 2.15 to 2.25 s),
//! so two sayings of one figure disagree only when no one value prints as both.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A number as printed: its value and how many decimals it was printed with.
#[derive(Debug, Clone, Copy)]
struct Printed {
    value: f64,
    decimals: u32,
}

impl Printed {
    fn exact(value: f64) -> Printed {
        Printed {
            value,
            decimals: u32::MAX,
        }
    }

    /// The values that print as this one, scaled by `scale` (a unit's factor).
    fn range(self, scale: f64) -> (f64, f64) {
        let half = if self.decimals == u32::MAX {
            1e-9 * self.value.abs().max(1.0)
        } else {
            0.5 * 10f64.powi(-(self.decimals as i32)) + 1e-9
        };
        ((self.value - half) * scale, (self.value + half) * scale)
    }
}

/// The number at the start of `text` (`1,088`, `2.2`, `372`), thousands separators
/// dropped, and the rest of the text after it.
fn number_at(text: &str) -> Option<(Printed, &str)> {
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == ','))
        .map_or(text.len(), |(i, _)| i);
    let raw = text[..end].trim_end_matches(['.', ',']);
    let rest = &text[raw.len()..];
    let digits: String = raw.chars().filter(|c| *c != ',').collect();
    let value = digits.parse::<f64>().ok()?;
    let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len() as u32);
    Some((Printed { value, decimals }, rest))
}

/// The number just before `end` in `text`, when a number ends there.
fn number_before(text: &str, end: usize) -> Option<Printed> {
    let start = text[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .map_or(0, |i| i + c_len(text, i));
    if start >= end {
        return None;
    }
    number_at(&text[start..end]).map(|(p, _)| p)
}

fn c_len(text: &str, i: usize) -> usize {
    text[i..].chars().next().map_or(1, char::len_utf8)
}

/// A duration as printed (`641 ms`, `2.2 s`, `1 min`), in milliseconds.
fn duration_at(text: &str) -> Option<(f64, f64)> {
    let (p, rest) = number_at(text)?;
    let rest = rest.trim_start();
    let scale = if rest.starts_with("ms") {
        1.0
    } else if rest.starts_with("min") {
        60_000.0
    } else if rest.starts_with('s') {
        1000.0
    } else {
        return None;
    };
    Some(p.range(scale))
}

/// Every value one figure takes across one run's outputs, with where each was read.
struct Figure {
    name: &'static str,
    seen: Vec<((f64, f64), String)>,
}

impl Figure {
    fn new(name: &'static str) -> Figure {
        Figure {
            name,
            seen: Vec::new(),
        }
    }

    fn push(&mut self, range: (f64, f64), whence: impl Into<String>) {
        self.seen.push((range, whence.into()));
    }

    /// The number after each `prefix` in `text`, when the text after the number starts
    /// with `suffix`.
    fn after(&mut self, output: &str, text: &str, prefix: &str, suffix: &str) {
        for (at, _) in text.match_indices(prefix) {
            let from = at + prefix.len();
            if let Some((p, rest)) = number_at(&text[from..]) {
                if rest.starts_with(suffix) {
                    self.push(p.range(1.0), excerpt(output, text, at));
                }
            }
        }
    }

    /// The number just before each `phrase` in `text`.
    fn before(&mut self, output: &str, text: &str, phrase: &str) {
        for (at, _) in text.match_indices(phrase) {
            if let Some(p) = number_before(text, at) {
                self.push(p.range(1.0), excerpt(output, text, at));
            }
        }
    }

    /// The duration after each `prefix` in `text`, in milliseconds.
    fn duration_after(&mut self, output: &str, text: &str, prefix: &str) {
        for (at, _) in text.match_indices(prefix) {
            if let Some(range) = duration_at(&text[at + prefix.len()..]) {
                self.push(range, excerpt(output, text, at));
            }
        }
    }

    fn exact(&mut self, value: Option<f64>, whence: &str) {
        if let Some(v) = value.filter(|v| v.is_finite()) {
            self.push(Printed::exact(v).range(1.0), whence);
        }
    }

    /// The sayings that no one value prints as, if any.
    fn disagreement(&self) -> Option<String> {
        let lo = self
            .seen
            .iter()
            .map(|((lo, _), _)| *lo)
            .fold(f64::MIN, f64::max);
        let hi = self
            .seen
            .iter()
            .map(|((_, hi), _)| *hi)
            .fold(f64::MAX, f64::min);
        if lo <= hi {
            return None;
        }
        let said: Vec<String> = self
            .seen
            .iter()
            .map(|((lo, hi), whence)| format!("  {lo:.3} to {hi:.3}: {whence}"))
            .collect();
        Some(format!(
            "{} takes more than one value:\n{}",
            self.name,
            said.join("\n")
        ))
    }
}

/// Where a saying was read: the output and the words around it.
fn excerpt(output: &str, text: &str, at: usize) -> String {
    let mut start = at.saturating_sub(60);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (at + 90).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!("{output}: …{}…", &text[start..end])
}

/// The page's text as a reader sees it: its markup, styles and scripts left out, its
/// entities read, its white space collapsed.
fn page_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        out.push(' ');
        let tail = &rest[open..];
        // A script's or a style's content is not text the reader sees.
        let close = ["script", "style"]
            .iter()
            .find(|t| tail[1..].starts_with(**t))
            .and_then(|t| tail.find(&format!("</{t}")))
            .unwrap_or(0);
        rest = tail[close..]
            .find('>')
            .map_or("", |i| &tail[close + i + 1..]);
    }
    out.push_str(rest);
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The page's chart data: the JSON of its `report-data` script element.
fn page_data(html: &str) -> Option<Value> {
    let open = r#"<script type="application/json" id="report-data">"#;
    let start = html.find(open)? + open.len();
    let end = start + html[start..].find("</script>")?;
    serde_json::from_str(&html[start..end]).ok()
}

/// Every folder under `root` that holds a run's files.
fn run_folders(root: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut is_run = false;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            run_folders(&path, into);
        } else if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
            is_run |= name == "boot.log"
                || name == "run.series.jsonl"
                || name.ends_with(".snapshot.json");
        }
    }
    if is_run {
        into.push(root.to_path_buf());
    }
}

/// The figures of one run, read from each output.
struct Figures {
    fit_start: Figure,
    fit_full: Figure,
    peak: Figure,
    throughput: Figure,
    ttft_median: Figure,
    ttft_p99: Figure,
    usable_blocks: Figure,
}

impl Figures {
    fn new() -> Figures {
        Figures {
            fit_start: Figure::new("the requests that fit when they start"),
            fit_full: Figure::new("the requests that fit at full length"),
            peak: Figure::new("the peak running"),
            throughput: Figure::new("the load tool's output throughput"),
            ttft_median: Figure::new("the load tool's median TTFT (ms)"),
            ttft_p99: Figure::new("the load tool's p99 TTFT (ms)"),
            usable_blocks: Figure::new("the usable KV blocks"),
        }
    }

    fn all(&self) -> [&Figure; 7] {
        [
            &self.fit_start,
            &self.fit_full,
            &self.peak,
            &self.throughput,
            &self.ttft_median,
            &self.ttft_p99,
            &self.usable_blocks,
        ]
    }

    /// The sentences of an output (terminal text, a JSON message or advice, the page's
    /// text), in the words each figure is said with.
    fn read_text(&mut self, output: &str, text: &str) {
        // T8's advice: `... hold at most 5 of these requests when they start (...)`.
        self.fit_start
            .before(output, text, " of these requests when they start");
        // T1's, T8's and T9's advice, "What limited this run", the cache figure.
        for phrase in [
            " of these requests fit at full length",
            " at full length (",
            ", the most that fit at full length",
            " fit at full length.",
            " of them fit.",
        ] {
            self.fit_full.before(output, text, phrase);
        }
        if text.contains("each at full length)") {
            self.fit_full.before(output, text, " of these requests (");
        }
        self.fit_full
            .after(output, text, "Requests that fit at full length ", "");
        // T8's message, "What limited this run", the page's cards.
        for prefix in [
            "concurrent, server never ran more than ",
            "The server never ran more than ",
            "it ran at most ",
            "the server ran at most ",
            "never worked on more than ",
            "Ran at once ",
        ] {
            self.peak.after(output, text, prefix, "");
        }
        self.throughput.after(
            output,
            text,
            "throughput is the load tool's ",
            " output tokens/s",
        );
        self.throughput
            .after(output, text, "is the load tool's ", ", over its own timed");
        for prefix in [
            "Half the requests got their first token within ",
            "Half the requests waited more than ",
            "Time to first token, median ",
        ] {
            self.ttft_median.duration_after(output, text, prefix);
        }
        for prefix in [
            "the slowest (p99) waited ",
            "the slowest (p99) within ",
            "the slowest (p99) ",
        ] {
            self.ttft_p99.duration_after(output, text, prefix);
        }
        for (at, _) in text.match_indices("Time to first token, median ") {
            let rest = &text[at..];
            if let Some(p99) = rest.find(" p99 ").filter(|i| *i < 60) {
                if let Some(range) = duration_at(&rest[p99 + 5..]) {
                    self.ttft_p99.push(range, excerpt(output, text, at));
                }
            }
        }
        self.usable_blocks.before(output, text, " usable blocks");
        self.usable_blocks
            .after(output, text, "gauge denominator is ", " ");
        self.usable_blocks
            .after(output, text, "so ", " were usable");
        self.usable_blocks
            .after(output, text, "Usable KV blocks ", "");
    }

    /// The `--json` array: each result's message and advice as text, and the evidence
    /// that names a figure.
    fn read_json(&mut self, json: &Value) {
        for r in json.as_array().into_iter().flatten() {
            let tripwire = r["tripwire"].as_str().unwrap_or("");
            let output = format!("--json {tripwire}");
            if let Some(m) = r["message"].as_str() {
                self.read_text(&format!("{output} message"), m);
            }
            for a in r["advice"].as_array().into_iter().flatten() {
                if let Some(a) = a.as_str() {
                    self.read_text(&format!("{output} advice"), a);
                }
            }
            let verdict = !matches!(
                r["status"].as_str(),
                Some("not_checked" | "cant_tell" | "not_applicable")
            );
            let e = &r["evidence"];
            match tripwire {
                "T8" if verdict => self
                    .peak
                    .exact(e["peak_running"].as_f64(), "--json T8 peak_running"),
                "T9" if verdict => self
                    .usable_blocks
                    .exact(e["usable_blocks"].as_f64(), "--json T9 usable_blocks"),
                "T14" if r["status"] == "pass" => self.usable_blocks.exact(
                    e["inferred_usable_blocks"].as_f64(),
                    "--json T14 inferred_usable_blocks",
                ),
                _ => {}
            }
        }
    }

    /// The library's account, as it serialises.
    fn read_account(&mut self, account: &Value) {
        let figure = |path: &[&str]| {
            let mut v = account;
            for key in path {
                v = &v[*key];
            }
            v["value"].as_f64()
        };
        self.peak.exact(
            figure(&["happened", "peak_running"]),
            "the account's peak_running",
        );
        self.throughput.exact(
            figure(&["happened", "client_output_throughput"]),
            "the account's client_output_throughput",
        );
        self.ttft_median.exact(
            figure(&["happened", "median_ttft_ms"]),
            "the account's median_ttft_ms",
        );
        self.ttft_p99.exact(
            figure(&["happened", "p99_ttft_ms"]),
            "the account's p99_ttft_ms",
        );
        self.usable_blocks.exact(
            figure(&["setup", "usable_blocks"]),
            "the account's usable_blocks",
        );
        self.usable_blocks.exact(
            figure(&["setup", "trusted_blocks"]),
            "the account's trusted_blocks",
        );
        let capacity = &account["capacity"];
        self.fit_start.exact(
            capacity["fit_start"].as_f64(),
            "the account's capacity fit_start",
        );
        self.fit_full.exact(
            capacity["fit_full"].as_f64(),
            "the account's capacity fit_full",
        );
        self.usable_blocks.exact(
            capacity["unit"]["blocks"]["usable"].as_f64(),
            "the account's capacity in usable blocks",
        );
    }

    /// The page's chart data: the KV lane's cells are the usable blocks where it counts
    /// blocks.
    fn read_data(&mut self, data: &Value) {
        if data["blocks"] == true {
            self.usable_blocks
                .exact(data["cells"].as_f64(), "the page's chart data: cells");
        }
    }
}

#[test]
fn one_figure_has_one_value_across_every_output() {
    let fixtures = crate::common::fixtures();
    let mut dirs = Vec::new();
    run_folders(&fixtures, &mut dirs);
    let (checked, real_checked, compared) = one_value_each(&dirs);
    assert!(checked >= 30, "only {checked} run folders were checked");
    assert!(
        real_checked >= 10,
        "only {real_checked} of the real engine's run folders were checked"
    );
    assert!(
        compared >= 100,
        "only {compared} figures were said twice or more: the phrases no longer match the outputs"
    );
    eprintln!("one figure: {compared} figures said twice or more, in {checked} run folders");
}

/// The same of every run folder of the recordings: each of the eight whole runs
/// ([`crate::common::RECORDED_RUNS`]) is among them and is checked.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn one_figure_has_one_value_across_every_output_of_the_recordings() {
    let mut dirs = Vec::new();
    run_folders(&crate::common::recorded(), &mut dirs);
    let (checked, _, compared) = one_value_each(&dirs);
    assert!(
        checked >= crate::common::RECORDED_RUNS.len(),
        "only {checked} run folders were checked"
    );
    eprintln!("one figure: {compared} figures said twice or more, in {checked} run folders");
}

/// Each figure of each folder in `dirs` has one value across the outputs; returns the
/// folders checked, those of the real engine's fixtures among them, and the figures
/// said twice or more.
fn one_value_each(dirs: &[PathBuf]) -> (usize, usize, usize) {
    let mut dirs = dirs.to_vec();
    dirs.sort();
    dirs.dedup();
    let real = crate::common::fixtures().join("real");
    let (mut checked, mut real_checked, mut compared) = (0, 0, 0);
    let mut failures = Vec::new();
    for dir in &dirs {
        let read = crate::common::run_of(dir);
        let Ok(run) = &*read else {
            continue;
        };
        let report = run.check();
        let mut figures = Figures::new();
        figures.read_text("terminal", &report.to_text());
        let json: Value = serde_json::from_str(&report.to_json()).unwrap();
        figures.read_json(&json);
        figures.read_account(&serde_json::to_value(&report).unwrap()["account"]);
        if let Ok(html) = run.html(&report, None) {
            figures.read_text("report.html", &page_text(&html));
            if let Some(data) = page_data(&html) {
                figures.read_data(&data);
            }
        }
        for figure in figures.all() {
            compared += usize::from(figure.seen.len() >= 2);
            if let Some(why) = figure.disagreement() {
                failures.push(format!("{}: {why}", dir.display()));
            }
        }
        checked += 1;
        real_checked += usize::from(dir.starts_with(&real));
    }
    assert!(
        failures.is_empty(),
        "{} figures with two values:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    (checked, real_checked, compared)
}
