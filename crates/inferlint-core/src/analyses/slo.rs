//! A service level held to a run's requests, every one of them: percentiles that count
//! the failed, timed-out and still-running requests as misses, goodput, and the highest
//! load of a sweep that meets the service level.
//!
//! Key design decision: a request that did not come back whole has an infinite latency.
//! Every load tool computes its percentiles over the requests that succeeded, so a run in
//! which most requests failed can print a fine p95. Here each percentile is taken over
//! every request the timed run sent, a miss counting as +infinity, by one definition
//! throughout: the **nearest rank** (the p-th percentile of N requests is the k-th
//! smallest, k = ceil(p x N / 100)). A p95 with more than 5% misses is infinite, which is
//! "not met", never a number. The tool's own figure (over the completed requests, with
//! its own definition) is shown beside it, with how many requests it left out.
//!
//! Where the tool kept no per-request record, a percentile cannot be corrected and says
//! so: it can still be told to be infinite from the counts alone (more misses than the
//! rank leaves room for), never to be met. A capacity is only ever found between a
//! measured load that meets the service level and one that does not; otherwise the
//! sweep is "not bracketed" and names the load to measure next.
//!
//! This module knows nothing of sweeps or comparisons: [`capacity`] and [`goodput_gate`]
//! take the points and the sides as plain data, so `sweep.rs` and `compare.rs` can call
//! them.

use serde::Serialize;

use crate::model::client::{ClientAccount, ClientRequest, RequestOutcome};
use crate::story::fmt;

/// A figure a service level can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first: (end-to-end - TTFT) / (output tokens - 1).
    Tpot,
    /// End-to-end latency.
    E2e,
}

impl Metric {
    /// The key the service level is written with: `ttft`, `tpot`, `e2e`.
    pub fn key(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::E2e => "e2e",
        }
    }

    /// How a person names it.
    pub fn words(self) -> &'static str {
        match self {
            Metric::Ttft => "TTFT",
            Metric::Tpot => "TPOT",
            Metric::E2e => "latency",
        }
    }

    fn from_key(key: &str) -> Option<Metric> {
        [Metric::Ttft, Metric::Tpot, Metric::E2e]
            .into_iter()
            .find(|m| m.key() == key)
    }
}

/// One bound of a service level: a percentile of a figure (or every request's) at most
/// a limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bound {
    /// The figure bounded.
    pub metric: Metric,
    /// The percentile in hundredths of a percent (9500 for p95, 9990 for p99.9); `None`
    /// when every request must meet the limit.
    pub percentile_e2: Option<u32>,
    /// The limit, milliseconds.
    pub limit_ms: f64,
}

impl Bound {
    /// `p95`, `p99.9`, or `every` for a bound on every request.
    pub fn quantile_words(&self) -> String {
        match self.percentile_e2 {
            Some(p) => format!("p{}", fmt::g(f64::from(p) / 100.0)),
            None => "every".to_owned(),
        }
    }

    /// The bound as it is written: `ttft:p95<=2000ms`, `e2e<=30000ms`.
    pub fn spec(&self) -> String {
        match self.percentile_e2 {
            Some(_) => format!(
                "{}:{}<={}ms",
                self.metric.key(),
                self.quantile_words(),
                fmt::g(self.limit_ms)
            ),
            None => format!("{}<={}ms", self.metric.key(), fmt::g(self.limit_ms)),
        }
    }

    /// The bound in words: `TTFT p95 <= 2000 ms`, `latency of every request <= 30000 ms`.
    pub fn words(&self) -> String {
        match self.percentile_e2 {
            Some(_) => format!(
                "{} {} <= {} ms",
                self.metric.words(),
                self.quantile_words(),
                fmt::g(self.limit_ms)
            ),
            None => format!(
                "{} of every request <= {} ms",
                self.metric.words(),
                fmt::g(self.limit_ms)
            ),
        }
    }

    /// The nearest rank (1-based) of this bound's percentile among `n` requests: the
    /// smallest k with k >= p x n / 100, in whole numbers so that 95% of 20 is 19 and not
    /// the 20 a floating-point ceiling of 19.000000000000004 gives. Every request's bound
    /// is the last rank.
    pub fn rank(&self, n: usize) -> usize {
        let n64 = n as u64;
        let k = match self.percentile_e2 {
            Some(p) => (u64::from(p) * n64).div_ceil(10_000),
            None => n64,
        };
        (k.max(1) as usize).min(n.max(1))
    }

    /// The fewest requests at which this percentile is not simply the slowest of them:
    /// ceil(100 / (100 - p)), 20 for p95, 100 for p99. A bound on every request is the
    /// slowest by definition and never thin.
    pub fn fewest_requests(&self) -> usize {
        match self.percentile_e2 {
            Some(p) => 1_000_000u64.div_ceil(u64::from(10_000 - p) * 100) as usize,
            None => 1,
        }
    }
}

/// A service level: every bound must hold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceLevel {
    /// The bounds, in the order given.
    pub bounds: Vec<Bound>,
    /// Whether each run is held to the thresholds its own load tool was given for its
    /// goodput (`--slo tool`) instead of `bounds`.
    pub from_tool: bool,
}

/// Why a service level cannot be read: one line, naming what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError(pub String);

impl std::fmt::Display for SloError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SloError {}

fn parse_limit(text: &str, item: &str) -> Result<f64, SloError> {
    let text = text.trim();
    let (number, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        return Err(SloError(format!(
            "'{item}': the limit '{text}' needs its unit, s or ms (2s, 60ms)"
        )));
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        SloError(format!(
            "'{item}': the limit '{text}' is not a number of s or ms"
        ))
    })?;
    if !(value.is_finite() && value > 0.0) {
        return Err(SloError(format!(
            "'{item}': the limit must be a number above 0, not '{text}'"
        )));
    }
    Ok(value * scale)
}

fn parse_percentile(text: &str, item: &str) -> Result<u32, SloError> {
    let bad = || {
        SloError(format!(
            "'{item}': '{text}' is no percentile: write p50, p95, p99 or p99.9 (above 0, below 100), or leave it out for every request"
        ))
    };
    let number = text.strip_prefix('p').ok_or_else(bad)?;
    let value: f64 = number.parse().map_err(|_| bad())?;
    let e2 = (value * 100.0).round();
    if !(value > 0.0 && value < 100.0) || (e2 - value * 100.0).abs() > 1e-6 {
        return Err(bad());
    }
    Ok(e2 as u32)
}

fn parse_bound(item: &str) -> Result<Bound, SloError> {
    let Some((left, limit)) = item.split_once("<=") else {
        return Err(SloError(format!(
            "'{item}' is no bound: write METRIC:pNN<=LIMIT, as ttft:p95<=2s"
        )));
    };
    let left = left.trim();
    let (metric, percentile) = match left.split_once(':') {
        Some((m, p)) => (m.trim(), Some(p.trim())),
        None => (left, None),
    };
    let metric = Metric::from_key(&metric.to_ascii_lowercase()).ok_or_else(|| {
        SloError(format!(
            "'{item}': unknown metric '{metric}': the service level bounds ttft, tpot or e2e"
        ))
    })?;
    let percentile_e2 = match percentile {
        Some(p) => Some(parse_percentile(&p.to_ascii_lowercase(), item)?),
        None => None,
    };
    Ok(Bound {
        metric,
        percentile_e2,
        limit_ms: parse_limit(limit, item)?,
    })
}

impl ServiceLevel {
    /// Reads a service level: bounds separated by commas or lines,
    /// `METRIC[:pNN]<=LIMIT` each (`ttft:p95<=2s,tpot:p99<=60ms,e2e<=30s`); a bound
    /// without a percentile holds every request. In a file, `#` starts a comment.
    pub fn parse(text: &str) -> Result<ServiceLevel, SloError> {
        if text.trim() == "tool" {
            return Ok(ServiceLevel {
                bounds: Vec::new(),
                from_tool: true,
            });
        }
        let mut bounds: Vec<Bound> = Vec::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for item in line.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                let bound = parse_bound(item)?;
                if bounds
                    .iter()
                    .any(|b| b.metric == bound.metric && b.percentile_e2 == bound.percentile_e2)
                {
                    return Err(SloError(format!(
                        "'{item}': {} {} is bounded twice",
                        bound.metric.key(),
                        bound.quantile_words()
                    )));
                }
                bounds.push(bound);
            }
        }
        if bounds.is_empty() {
            return Err(SloError(
                "the service level is empty: give bounds such as ttft:p95<=2s,tpot:p99<=60ms"
                    .to_owned(),
            ));
        }
        Ok(ServiceLevel {
            bounds,
            from_tool: false,
        })
    }

    /// The service level the thresholds of a load tool's own `--goodput` make
    /// (`ttft:500`, `tpot:50`, `e2el:2000`: milliseconds, as `vllm bench serve` takes
    /// them): each a bound on every request, since the tool counts a request good only
    /// when it meets each.
    pub fn from_tool_goodput(items: &[String]) -> Result<ServiceLevel, SloError> {
        let mut bounds = Vec::new();
        for item in items {
            let bad = || {
                SloError(format!(
                    "the load tool's goodput threshold '{item}' is not KEY:MILLISECONDS with a key of ttft, tpot or e2el"
                ))
            };
            let (key, value) = item.split_once(':').ok_or_else(bad)?;
            let metric = match key.trim() {
                "e2el" => Metric::E2e,
                other => Metric::from_key(other).ok_or_else(bad)?,
            };
            let limit_ms: f64 = value.trim().parse().map_err(|_| bad())?;
            if !(limit_ms.is_finite() && limit_ms > 0.0) {
                return Err(bad());
            }
            bounds.push(Bound {
                metric,
                percentile_e2: None,
                limit_ms,
            });
        }
        if bounds.is_empty() {
            return Err(SloError(
                "the load tool stored no goodput thresholds".to_owned(),
            ));
        }
        Ok(ServiceLevel {
            bounds,
            from_tool: false,
        })
    }

    /// The service level as it is written, in milliseconds (`tool` for each run's own
    /// tool's thresholds).
    pub fn spec(&self) -> String {
        if self.from_tool {
            return "tool".to_owned();
        }
        let parts: Vec<String> = self.bounds.iter().map(Bound::spec).collect();
        parts.join(",")
    }
}

/// Whether a run meets a service level (or one bound of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every bound holds, counting every request.
    Met,
    /// A bound does not hold (an infinite percentile among them).
    NotMet,
    /// It cannot be told: no per-request records, or records without the figure.
    CannotTell,
}

impl Verdict {
    /// `met`, `NOT MET`, `can't tell`.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::NotMet => "NOT MET",
            Verdict::CannotTell => "can't tell",
        }
    }
}

/// The requests of a run, as the service level counts them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Counted {
    /// Requests of the timed run: the tool's count of those sent, or its records where
    /// it keeps more.
    pub requests: u64,
    /// Of them, completed.
    pub completed: u64,
    /// Failed (an error answer, a timeout, a broken stream).
    pub failed: u64,
    /// Still running or cancelled when the tool stopped.
    pub incomplete: u64,
    /// Sent but in no record and no count of an outcome: counted as misses.
    pub unaccounted: u64,
    /// Per-request records the file keeps.
    pub records: u64,
}

impl Counted {
    /// Requests that did not come back whole: each an infinite latency.
    pub fn misses(&self) -> u64 {
        self.requests.saturating_sub(self.completed)
    }
}

/// One bound held to one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundResult {
    /// The bound, as written (`ttft:p95<=2000ms`).
    pub bound: String,
    /// Its figure.
    pub metric: Metric,
    /// Its limit, milliseconds.
    pub limit_ms: f64,
    /// The percentile counting every request, milliseconds; `None` when infinite or when
    /// it cannot be told.
    pub value_ms: Option<f64>,
    /// Whether the percentile is infinite: more misses than its rank leaves room for.
    pub infinite: bool,
    /// The nearest rank taken, of `counted` requests.
    pub rank: u64,
    /// Requests the percentile is over.
    pub counted: u64,
    /// Of them, misses (failed, timed out, unfinished): +infinity each.
    pub misses: u64,
    /// The same percentile over the completed requests alone, as the tools count:
    /// nearest rank, milliseconds.
    pub completed_only_ms: Option<f64>,
    /// The tool's own figure for this percentile, where its file states one
    /// (its own definition, over completed requests only).
    pub tool_ms: Option<f64>,
    /// Why the percentile rests on thin evidence, when it does.
    pub thin: Option<String>,
    /// Whether the bound holds.
    pub verdict: Verdict,
    /// (limit - value) / limit: above 0 meets, below fails; `None` when infinite or not
    /// told (see `infinite`).
    pub margin: Option<f64>,
    /// Why it cannot be told, when it cannot.
    pub why: Option<String>,
}

/// Requests and output tokens per second that met the service level.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Goodput {
    /// Requests that came back whole and met every bound, each bound read per request
    /// (as the load tools' `--goodput` does).
    pub good_requests: u64,
    /// Their output tokens.
    pub good_output_tokens: u64,
    /// The timed span, seconds.
    pub duration_s: f64,
    /// `good_requests / duration_s`.
    pub requests_per_s: f64,
    /// `good_output_tokens / duration_s`.
    pub output_tokens_per_s: f64,
}

/// A service level held to one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSlo {
    /// The run's label.
    pub label: String,
    /// The service level held, as written (with `--slo tool`, the run's own tool's).
    pub service_level: String,
    /// The load tool, with its version.
    pub tool: Option<String>,
    /// What was counted.
    pub counted: Counted,
    /// Each bound.
    pub bounds: Vec<BoundResult>,
    /// Requests and tokens per second that met the service level; `None` when it cannot
    /// be told (see `cannot_correct`).
    pub goodput: Option<Goodput>,
    /// Whether the run meets the service level.
    pub verdict: Verdict,
    /// The binding margin: the smallest bound's margin; `None` when a bound is infinite
    /// or cannot be told.
    pub margin: Option<f64>,
    /// Whether a bound is infinite (the binding margin is then minus infinity).
    pub infinite: bool,
    /// The figures that cannot be corrected, and why.
    pub cannot_correct: Vec<String>,
    /// What a reader should know.
    pub notes: Vec<String>,
}

impl RunSlo {
    /// The binding margin as a number: minus infinity when a bound is infinite.
    pub fn margin_value(&self) -> Option<f64> {
        if self.infinite {
            Some(f64::NEG_INFINITY)
        } else {
            self.margin
        }
    }
}

/// One request's value of a figure, milliseconds: `None` when its record lacks it.
fn request_ms(r: &ClientRequest, metric: Metric) -> Option<f64> {
    let ttft = || {
        r.ttft_s
            .get()
            .or_else(|| Some(r.first_token_at()? - r.sent_s.get()?))
    };
    let e2e = || {
        r.latency_s
            .get()
            .or_else(|| Some(r.end_at()? - r.sent_s.get()?))
    };
    let ms = match metric {
        Metric::Ttft => ttft()?,
        Metric::E2e => e2e()?,
        Metric::Tpot => {
            let out = r.output_tokens.get().or(r.server_output_tokens.get())?;
            // One output token has no time after its first: 0, as `vllm bench serve`'s
            // goodput counts it.
            if out <= 1 {
                0.0
            } else {
                (e2e()? - ttft()?) / (out - 1) as f64
            }
        }
    } * 1e3;
    ms.is_finite().then_some(ms.max(0.0))
}

/// What the file counts beside its records, to find the requests sent but never
/// recorded; `None` when the records are a sample (fewer completed records than the
/// completed count), so that what they leave out cannot be told.
fn count(account: &ClientAccount) -> Result<Counted, String> {
    let records = account.requests.len() as u64;
    let of = |o| account.records_with(o) as u64;
    let positive = |v: Option<i64>| v.map(|v| v.max(0) as u64);
    let (rec_completed, rec_failed, rec_incomplete) = (
        of(RequestOutcome::Completed),
        of(RequestOutcome::Failed),
        of(RequestOutcome::Incomplete),
    );
    let completed = positive(account.completed).unwrap_or(rec_completed);
    if records > 0 && completed > rec_completed {
        return Err(format!(
            "the file keeps {rec_completed} records of its {completed} completed requests (a sample): what the others took cannot be told"
        ));
    }
    let failed = positive(account.failed).unwrap_or(0).max(rec_failed);
    let incomplete = positive(account.incomplete)
        .unwrap_or(0)
        .max(rec_incomplete);
    let sent = positive(account.sent).unwrap_or(0);
    let requests = sent.max(records).max(completed + failed + incomplete);
    Ok(Counted {
        requests,
        completed,
        failed,
        incomplete,
        unaccounted: requests - completed - failed - incomplete,
        records,
    })
}

/// The tool's own figure for a bound, where its file states it.
fn tool_figure(account: &ClientAccount, bound: &Bound) -> Option<f64> {
    match (bound.metric, bound.percentile_e2) {
        (Metric::Ttft, Some(5000)) => account.median_ttft_ms,
        (Metric::Ttft, Some(9900)) => account.p99_ttft_ms,
        _ => None,
    }
}

fn thin_words(bound: &Bound, n: u64) -> Option<String> {
    let fewest = bound.fewest_requests() as u64;
    (n < fewest).then(|| {
        format!(
            "thin: a {} of {n} request{} is their slowest; it needs {fewest} or more",
            bound.quantile_words(),
            fmt::plural(n as f64)
        )
    })
}

/// One bound over the records: the sorted finite values of the completed requests and
/// the misses.
fn hold_bound(
    bound: &Bound,
    account: &ClientAccount,
    counted: &Counted,
    records: Option<&[ClientRequest]>,
) -> BoundResult {
    let n = counted.requests;
    let rank = bound.rank(n as usize) as u64;
    let misses = counted.misses();
    let mut result = BoundResult {
        bound: bound.spec(),
        metric: bound.metric,
        limit_ms: bound.limit_ms,
        value_ms: None,
        infinite: false,
        rank,
        counted: n,
        misses,
        completed_only_ms: None,
        tool_ms: tool_figure(account, bound),
        thin: thin_words(bound, n),
        verdict: Verdict::CannotTell,
        margin: None,
        why: None,
    };
    if n == 0 {
        result.why = Some("the run counts no request".to_owned());
        return result;
    }
    // More misses than the ranks above k leave room for: the k-th is a miss, whatever
    // the completed requests took. The counts alone tell it.
    if rank > counted.completed {
        result.infinite = true;
        result.verdict = Verdict::NotMet;
        // The misses decide it for this run whatever the count: not thin.
        result.thin = None;
    }
    let Some(records) = records else {
        if !result.infinite {
            result.why = Some("no per-request records".to_owned());
        }
        return result;
    };
    let completed: Vec<&ClientRequest> = records.iter().filter(|r| r.completed()).collect();
    let mut values: Vec<f64> = completed
        .iter()
        .filter_map(|r| request_ms(r, bound.metric))
        .collect();
    values.sort_by(f64::total_cmp);
    if values.len() < completed.len() {
        let lacking = completed.len() - values.len();
        result.why = Some(format!(
            "{lacking} completed record{} carr{} no {}",
            fmt::plural(lacking as f64),
            if lacking == 1 { "ies" } else { "y" },
            bound.metric.words()
        ));
        return result;
    }
    if !values.is_empty() {
        let k = bound.rank(values.len());
        result.completed_only_ms = Some(values[k - 1]);
    }
    if !result.infinite {
        let value = values[rank as usize - 1];
        result.value_ms = Some(value);
        result.margin = Some((bound.limit_ms - value) / bound.limit_ms);
        result.verdict = if value <= bound.limit_ms {
            Verdict::Met
        } else {
            Verdict::NotMet
        };
    }
    result
}

/// The timed span: the tool's, else the records' first send to last end.
fn duration(account: &ClientAccount) -> Option<f64> {
    account.duration.filter(|d| *d > 0.0).or_else(|| {
        let first = account
            .requests
            .iter()
            .filter_map(|r| r.sent_s.get())
            .fold(f64::INFINITY, f64::min);
        let last = account
            .requests
            .iter()
            .filter_map(ClientRequest::end_at)
            .fold(f64::NEG_INFINITY, f64::max);
        (last > first && last.is_finite() && first.is_finite()).then_some(last - first)
    })
}

/// Requests and tokens per second that met every bound, each read per request.
fn goodput(level: &ServiceLevel, account: &ClientAccount) -> Result<Goodput, String> {
    let duration_s = duration(account).ok_or("the file gives no timed span")?;
    let mut good_requests = 0u64;
    let mut good_output_tokens = 0u64;
    for r in account.requests.iter().filter(|r| r.completed()) {
        let mut meets = true;
        for b in &level.bounds {
            // A completed request whose record lacks a bounded figure may or may not have
            // met it: goodput cannot be told, never counted as 0.
            let value = request_ms(r, b.metric)
                .ok_or_else(|| format!("a completed record carries no {}", b.metric.words()))?;
            meets &= value <= b.limit_ms;
        }
        if meets {
            good_requests += 1;
            good_output_tokens += r
                .output_tokens
                .get()
                .or(r.server_output_tokens.get())
                .unwrap_or(0);
        }
    }
    Ok(Goodput {
        good_requests,
        good_output_tokens,
        duration_s,
        requests_per_s: good_requests as f64 / duration_s,
        output_tokens_per_s: good_output_tokens as f64 / duration_s,
    })
}

/// Holds a service level to one run's load-tool account (`None`: the run has no load
/// tool's result). With `--slo tool`, the run is held to its own tool's goodput
/// thresholds, and cannot be told where the tool stored none.
pub fn hold(level: &ServiceLevel, label: &str, account: Option<&ClientAccount>) -> RunSlo {
    if !level.from_tool {
        let mut out = hold_level(level, label, account);
        if let Some(a) = account.filter(|a| !a.goodput.is_empty()) {
            out.notes.push(format!(
                "{} was given --goodput {}: `--slo tool` holds the run to those",
                a.tool_label(),
                a.goodput.join(" ")
            ));
        }
        return out;
    }
    let own = account.map(|a| ServiceLevel::from_tool_goodput(&a.goodput));
    match own {
        Some(Ok(own)) => hold_level(&own, label, account),
        Some(Err(why)) => {
            let mut out = hold_level(level, label, account);
            out.service_level = "tool".to_owned();
            out.bounds.clear();
            out.goodput = None;
            out.verdict = Verdict::CannotTell;
            out.cannot_correct
                .push(format!("{why} (give the bounds with --slo)"));
            out
        }
        None => hold_level(level, label, None),
    }
}

fn hold_level(level: &ServiceLevel, label: &str, account: Option<&ClientAccount>) -> RunSlo {
    let mut out = RunSlo {
        label: label.to_owned(),
        service_level: level.spec(),
        tool: account.map(ClientAccount::tool_label),
        counted: Counted::default(),
        bounds: Vec::new(),
        goodput: None,
        verdict: Verdict::CannotTell,
        margin: None,
        infinite: false,
        cannot_correct: Vec::new(),
        notes: Vec::new(),
    };
    let Some(account) = account else {
        out.cannot_correct.push(
            "every figure: the run has no load tool's result, so no request is counted".to_owned(),
        );
        return out;
    };
    let (counted, records) = match count(account) {
        Ok(c) => {
            let records = (c.records > 0).then_some(account.requests.as_slice());
            (c, records)
        }
        Err(why) => {
            out.cannot_correct
                .push(format!("every percentile and goodput: {why}"));
            return out;
        }
    };
    out.counted = counted;
    if records.is_none() {
        let how = account
            .tool
            .info()
            .details_flag
            .map_or(String::new(), |f| format!(" ({f} keeps them)"));
        let misses = out.counted.misses();
        out.cannot_correct.push(if misses > 0 {
            format!(
                "{} keeps no per-request records{how}: its percentiles cannot be corrected for the {misses} request{} that did not come back whole (only one the misses alone make infinite is told), nor goodput told",
                account.tool_label(),
                fmt::plural(misses as f64)
            )
        } else {
            format!(
                "{} keeps no per-request records{how}: no percentile of its requests can be taken, nor goodput told (its counts show none failed)",
                account.tool_label()
            )
        });
    }
    if out.counted.unaccounted > 0 {
        out.notes.push(format!(
            "{} request{} sent but in no record nor count of an outcome (still running when the tool stopped?): counted as misses",
            out.counted.unaccounted,
            fmt::plural(out.counted.unaccounted as f64)
        ));
    }
    out.bounds = level
        .bounds
        .iter()
        .map(|b| hold_bound(b, account, &out.counted, records))
        .collect();
    for b in &out.bounds {
        if let (Verdict::CannotTell, Some(why)) = (b.verdict, &b.why) {
            if records.is_some() {
                out.cannot_correct.push(format!("{}: {why}", b.bound));
            }
        }
    }
    if records.is_some() {
        match goodput(level, account) {
            Ok(g) => out.goodput = Some(g),
            Err(why) => out.cannot_correct.push(format!("goodput: {why}")),
        }
    } else if out.counted.completed == 0 && out.counted.requests > 0 {
        // No request came back: nothing met the service level, records or not.
        if let Some(d) = duration(account) {
            out.goodput = Some(Goodput {
                good_requests: 0,
                good_output_tokens: 0,
                duration_s: d,
                requests_per_s: 0.0,
                output_tokens_per_s: 0.0,
            });
        }
    }
    out.infinite = out.bounds.iter().any(|b| b.infinite);
    out.verdict = if out.bounds.iter().any(|b| b.verdict == Verdict::NotMet) {
        Verdict::NotMet
    } else if out.bounds.is_empty() || out.bounds.iter().any(|b| b.verdict == Verdict::CannotTell) {
        Verdict::CannotTell
    } else {
        Verdict::Met
    };
    if out.bounds.iter().all(|b| b.margin.is_some()) && !out.bounds.is_empty() {
        out.margin = out
            .bounds
            .iter()
            .filter_map(|b| b.margin)
            .min_by(f64::total_cmp);
    }
    out
}

/// Holds a service level to a checked run's load-tool account, as the identity gate
/// admits it: a result set aside as not of this run is no account of it.
pub fn hold_run(
    level: &ServiceLevel,
    label: &str,
    run: &crate::judging::identity::Admitted,
) -> RunSlo {
    hold(level, label, run.bench.as_ref().map(|(_, b)| b))
}

fn ms_words(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

fn value_words(b: &BoundResult) -> String {
    if b.infinite {
        "infinite".to_owned()
    } else if b.verdict == Verdict::CannotTell {
        "can't tell".to_owned()
    } else {
        ms_words(b.value_ms)
    }
}

/// One run's service level as terminal lines.
pub fn run_text(r: &RunSlo, level: &ServiceLevel) -> String {
    let c = &r.counted;
    let mut out = format!(
        "service level {}{} on {}: {}\n",
        r.service_level,
        if level.from_tool && r.service_level != "tool" {
            " (the load tool's own --goodput)"
        } else {
            ""
        },
        r.label,
        r.verdict.words()
    );
    out.push_str(&format!(
        "  counted: {} request{} ({} completed, {} failed, {} unfinished, {} unaccounted), {} record{}{}\n",
        c.requests,
        fmt::plural(c.requests as f64),
        c.completed,
        c.failed,
        c.incomplete,
        c.unaccounted,
        c.records,
        fmt::plural(c.records as f64),
        r.tool.as_ref().map_or(String::new(), |t| format!(" from {t}"))
    ));
    if !r.bounds.is_empty() {
        out.push_str(&format!(
            "  {:<22} {:>12} {:>14} {:>12} {:>10}  {}\n",
            "bound", "all (ms)", "completed (ms)", "tool (ms)", "left out", "verdict"
        ));
    }
    for b in &r.bounds {
        out.push_str(&format!(
            "  {:<22} {:>12} {:>14} {:>12} {:>10}  {}{}\n",
            b.bound,
            value_words(b),
            ms_words(b.completed_only_ms),
            ms_words(b.tool_ms),
            b.misses,
            b.verdict.words(),
            b.thin.as_ref().map_or(String::new(), |t| format!(" ({t})"))
        ));
    }
    match &r.goodput {
        Some(g) => out.push_str(&format!(
            "  goodput: {:.3} req/s, {:.1} output tok/s ({} of {} request{} met every bound over {:.1} s)\n",
            g.requests_per_s,
            g.output_tokens_per_s,
            g.good_requests,
            c.requests,
            fmt::plural(c.requests as f64),
            g.duration_s
        )),
        None => out.push_str("  goodput: can't tell\n"),
    }
    for why in &r.cannot_correct {
        out.push_str(&format!("  cannot correct: {why}\n"));
    }
    for note in &r.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out
}

/// The price of the GPUs a replica holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GpuPrice {
    /// US dollars per GPU-hour.
    pub usd_per_gpu_hour: f64,
    /// GPUs in one replica.
    pub gpus: u32,
}

/// One run of a sweep, for [`capacity`].
#[derive(Debug, Clone, Copy)]
pub struct CapacityPoint<'a> {
    /// The concurrency or rate the run asked for.
    pub asked: Option<f64>,
    /// The service level held to it.
    pub slo: &'a RunSlo,
}

/// What a sweep says of its capacity under the service level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityVerdict {
    /// Bracketed between a measured point that meets and one that does not.
    Bracketed,
    /// No meeting point below a failing one: measure at `measure_next`.
    NotBracketed,
    /// The runs differ in more than the load: no capacity is read across them.
    Refused,
}

/// The cost of a million output tokens at a measured point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    /// The run it is priced at: the highest measured point that meets the service
    /// level below the ceiling (never an unmeasured load).
    pub at: String,
    /// Its goodput, output tokens per second.
    pub output_tokens_per_s: f64,
    /// The price given.
    pub price: GpuPrice,
    /// US dollars per million output tokens that met the service level.
    pub usd_per_mtok: f64,
}

/// The highest load meeting the service level, as far as the sweep measured it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Capacity {
    /// The service level, as written.
    pub service_level: String,
    /// Whether a capacity was found.
    pub verdict: CapacityVerdict,
    /// The ceiling, in the sweep's load: interpolated on the binding margin between the
    /// two points, or the meeting point itself when the failing point's margin is
    /// infinite.
    pub ceiling: Option<f64>,
    /// Whether the ceiling was interpolated (both margins finite).
    pub interpolated: bool,
    /// The meeting point below it.
    pub meets_at: Option<String>,
    /// The failing point above it.
    pub fails_at: Option<String>,
    /// The load to measure next: the midpoint of the bracket to narrow it, or past the
    /// sweep's ends when it is not bracketed.
    pub measure_next: Option<f64>,
    /// The cost at the meeting point, with `--gpu-price`.
    pub cost: Option<Cost>,
    /// Why no cost, when a price was given but none could be told.
    pub cost_unknown: Option<String>,
    /// The finding in words.
    pub words: String,
    /// What a reader should know: thin evidence, points that cannot be told, a curve
    /// that is not monotone.
    pub notes: Vec<String>,
}

fn asked_words(v: f64) -> String {
    fmt::g((v * 100.0).round() / 100.0)
}

/// The load between two, for the next run: whole for a concurrency.
fn midpoint(a: f64, b: f64, whole: bool) -> f64 {
    let m = (a + b) / 2.0;
    if whole {
        m.round()
    } else {
        (m * 100.0).round() / 100.0
    }
}

/// The capacity of a sweep: the highest load that meets the service level, only ever
/// between a measured point that meets it and the next that does not. `refused` says why
/// the points cannot be read as one curve (the comparability gate), when they cannot;
/// `whole` when the load is a concurrency (the next point to measure is then whole).
pub fn capacity(
    level: &ServiceLevel,
    points: &[CapacityPoint<'_>],
    refused: Option<&str>,
    whole: bool,
    price: Option<GpuPrice>,
) -> Capacity {
    let mut cap = Capacity {
        service_level: level.spec(),
        verdict: CapacityVerdict::NotBracketed,
        ceiling: None,
        interpolated: false,
        meets_at: None,
        fails_at: None,
        measure_next: None,
        cost: None,
        cost_unknown: None,
        words: String::new(),
        notes: Vec::new(),
    };
    if let Some(why) = refused {
        cap.verdict = CapacityVerdict::Refused;
        cap.words = format!(
            "capacity refused: the runs differ in more than the load ({why}), so no one curve holds them"
        );
        return cap;
    }
    let mut known: Vec<(f64, &RunSlo)> = points
        .iter()
        .filter(|p| p.slo.verdict != Verdict::CannotTell)
        .filter_map(|p| Some((p.asked?, p.slo)))
        .collect();
    known.sort_by(|a, b| a.0.total_cmp(&b.0));
    for p in points
        .iter()
        .filter(|p| p.slo.verdict == Verdict::CannotTell)
    {
        cap.notes.push(format!(
            "{} cannot be told against the service level and is left out",
            p.slo.label
        ));
    }
    // The highest meeting point with a failing one above it, and the lowest failing
    // point above that: no meeting point lies between them.
    let bracket = known
        .iter()
        .enumerate()
        .rfind(|(i, (_, s))| {
            s.verdict == Verdict::Met
                && known[i + 1..]
                    .iter()
                    .any(|(_, f)| f.verdict == Verdict::NotMet)
        })
        .and_then(|(i, low)| {
            let high = known[i + 1..]
                .iter()
                .find(|(_, f)| f.verdict == Verdict::NotMet)?;
            Some((*low, *high))
        });
    let met: Vec<f64> = known
        .iter()
        .filter(|(_, s)| s.verdict == Verdict::Met)
        .map(|(x, _)| *x)
        .collect();
    // A run that fails below one that meets: the curve is not monotone (noise, or a
    // run that went wrong), and the reader should know which runs the bracket rests on.
    let highest_met = met.last().copied();
    if let Some((x_fail, _)) = known
        .iter()
        .find(|(x, s)| s.verdict == Verdict::NotMet && highest_met.is_some_and(|m| *x < m))
    {
        cap.notes.push(format!(
            "not monotone: {} fails the service level below {} that meets it",
            asked_words(*x_fail),
            asked_words(highest_met.unwrap_or(*x_fail))
        ));
    }
    let Some(((x_low, low), (x_high, high))) = bracket else {
        not_bracketed(&mut cap, &known, &met, whole);
        return cap;
    };
    cap.verdict = CapacityVerdict::Bracketed;
    cap.meets_at = Some(low.label.clone());
    cap.fails_at = Some(high.label.clone());
    cap.measure_next = Some(midpoint(x_low, x_high, whole));
    let (m_low, m_high) = (low.margin_value(), high.margin_value());
    match (m_low, m_high) {
        (Some(a), Some(b)) if b.is_finite() && a >= 0.0 && b < 0.0 => {
            cap.ceiling = Some(x_low + (x_high - x_low) * a / (a - b));
            cap.interpolated = true;
        }
        _ => cap.ceiling = Some(x_low),
    }
    let ceiling = cap.ceiling.unwrap_or(x_low);
    cap.words = if cap.interpolated {
        format!(
            "capacity {} (between {} that meets, binding margin {}, and {} that does not, {}; interpolated on the binding margin)",
            asked_words(ceiling),
            asked_words(x_low),
            fmt::signed_percent(m_low.unwrap_or(0.0), 1),
            asked_words(x_high),
            fmt::signed_percent(m_high.unwrap_or(0.0), 1)
        )
    } else {
        format!(
            "capacity at least {} and below {}: {} meets the service level, {} does not{}; measure at {} next to narrow it",
            asked_words(x_low),
            asked_words(x_high),
            asked_words(x_low),
            asked_words(x_high),
            if high.infinite {
                " (an infinite percentile there: no margin to interpolate on)"
            } else {
                ""
            },
            asked_words(cap.measure_next.unwrap_or(x_low))
        )
    };
    for (x, s) in [(x_low, low), (x_high, high)] {
        if let Some(thin) = s.bounds.iter().find_map(|b| b.thin.as_ref()) {
            cap.notes
                .push(format!("{} ({}): {thin}", asked_words(x), s.label));
        }
    }
    if let Some(price) = price {
        price_at(&mut cap, low, price);
    }
    cap
}

fn not_bracketed(cap: &mut Capacity, known: &[(f64, &RunSlo)], met: &[f64], whole: bool) {
    let (Some(lowest), Some(highest)) = (known.first(), known.last()) else {
        cap.words =
            "not bracketed: no run can be told against the service level (see each run)".into();
        return;
    };
    let (next, why) = if met.is_empty() {
        let next = if whole {
            (lowest.0 / 2.0).floor().max(1.0)
        } else {
            lowest.0 / 2.0
        };
        (
            next,
            format!(
                "no measured point meets the service level (the lowest, {}, does not)",
                asked_words(lowest.0)
            ),
        )
    } else {
        (
            highest.0 * 2.0,
            format!(
                "every measured point meets the service level up to {}",
                asked_words(highest.0)
            ),
        )
    };
    cap.measure_next = Some(next);
    cap.words = format!(
        "not bracketed: {why}; the ceiling is never extrapolated: measure at {} next",
        asked_words(next)
    );
}

fn price_at(cap: &mut Capacity, low: &RunSlo, price: GpuPrice) {
    match low.goodput.as_ref().map(|g| g.output_tokens_per_s) {
        Some(tps) if tps > 0.0 => {
            let usd_per_s = price.usd_per_gpu_hour * f64::from(price.gpus) / 3600.0;
            cap.cost = Some(Cost {
                at: low.label.clone(),
                output_tokens_per_s: tps,
                price,
                usd_per_mtok: usd_per_s / tps * 1e6,
            });
        }
        _ => {
            cap.cost_unknown = Some(format!(
                "{} has no goodput in output tokens to price",
                low.label
            ))
        }
    }
}

/// The capacity as terminal lines.
pub fn capacity_text(cap: &Capacity) -> String {
    let mut out = format!("- {}\n", cap.words);
    if let Some(c) = &cap.cost {
        out.push_str(&format!(
            "- cost at {}: ${:.3} per million output tokens that met the service level ({:.1} tok/s of goodput on {} GPU{} at ${}/h each)\n",
            c.at,
            c.usd_per_mtok,
            c.output_tokens_per_s,
            c.price.gpus,
            if c.price.gpus == 1 { "" } else { "s" },
            fmt::g(c.price.usd_per_gpu_hour)
        ));
    }
    if let Some(why) = &cap.cost_unknown {
        out.push_str(&format!("- cost: can't tell: {why}\n"));
    }
    for note in &cap.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out
}

/// Whether a candidate's goodput held against the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GateVerdict {
    /// Within the noise (or better).
    Passed,
    /// Fell by more than the noise.
    Regressed,
    /// Goodput cannot be told on a side, or the runs cannot be compared.
    CannotGate,
}

/// The goodput gate of one candidate side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoodputGate {
    /// The candidate side's label.
    pub side: String,
    /// The baseline's mean goodput, requests per second.
    pub baseline_rps: Option<f64>,
    /// The candidate's.
    pub candidate_rps: Option<f64>,
    /// (candidate - baseline) / baseline.
    pub change: Option<f64>,
    /// The larger of the two sides' noise, `(max - min) / mean` over each side's
    /// repeats (a side of one run has none); `None` when neither side has repeats.
    pub noise: Option<f64>,
    /// The drop allowed: the noise (or the margin given, when larger), else (one run a
    /// side) the margin.
    pub allowed: f64,
    /// The answer.
    pub verdict: GateVerdict,
    /// The answer in words.
    pub words: String,
}

fn mean_and_noise(runs: &[&RunSlo]) -> Result<(f64, Option<f64>), String> {
    let mut values = Vec::new();
    for r in runs {
        match &r.goodput {
            Some(g) => values.push(g.requests_per_s),
            None => return Err(format!("the goodput of {} cannot be told", r.label)),
        }
    }
    if values.is_empty() {
        return Err("a side has no run".into());
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    let noise = (values.len() >= 2 && mean > 0.0).then(|| (hi - lo) / mean);
    Ok((mean, noise))
}

/// The drop a goodput gate allows when no side has repeats and no margin was given.
pub const NO_NOISE_MARGIN: f64 = 0.05;

/// Holds a candidate side's goodput to the baseline's: a fall beyond the larger noise of
/// the sides' repeats fails. `margin` (a share, 0.05 for 5%), when given, is a floor
/// under the noise (three repeats' spread can be far below the true run-to-run noise);
/// with one run a side the noise is unknown and the margin, else [`NO_NOISE_MARGIN`],
/// stands in for it. `refused` says why the sides cannot be compared, when they cannot.
pub fn goodput_gate(
    side: &str,
    baseline: &[&RunSlo],
    candidate: &[&RunSlo],
    margin: Option<f64>,
    refused: Option<&str>,
) -> GoodputGate {
    let mut gate = GoodputGate {
        side: side.to_owned(),
        baseline_rps: None,
        candidate_rps: None,
        change: None,
        noise: None,
        allowed: margin.unwrap_or(NO_NOISE_MARGIN),
        verdict: GateVerdict::CannotGate,
        words: String::new(),
    };
    if let Some(why) = refused {
        gate.words = format!("goodput gate: cannot gate {side}: {why}");
        return gate;
    }
    let (base, cand) = match (mean_and_noise(baseline), mean_and_noise(candidate)) {
        (Ok(b), Ok(c)) => (b, c),
        (Err(why), _) | (_, Err(why)) => {
            gate.words = format!("goodput gate: cannot gate {side}: {why}");
            return gate;
        }
    };
    gate.baseline_rps = Some(base.0);
    gate.candidate_rps = Some(cand.0);
    // The larger noise of the sides whose repeats measured one.
    let noise = match (base.1, cand.1) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    gate.noise = noise;
    let (allowed, allowed_words) = match (noise, margin) {
        (Some(n), Some(m)) if m > n => (
            m,
            format!(
                "the {} margin given (the noise of the repeats is {})",
                fmt::percent(m, 1),
                fmt::percent(n, 1)
            ),
        ),
        (Some(n), _) => (
            n,
            format!("the noise of the repeats, {}", fmt::percent(n, 1)),
        ),
        (None, m) => {
            let m = m.unwrap_or(NO_NOISE_MARGIN);
            (
                m,
                format!(
                    "the {} margin (one run a side: the noise is unknown)",
                    fmt::percent(m, 1)
                ),
            )
        }
    };
    gate.allowed = allowed;
    if base.0 <= 0.0 {
        gate.verdict = if cand.0 > 0.0 {
            GateVerdict::Passed
        } else {
            GateVerdict::CannotGate
        };
        gate.words = format!(
            "goodput gate: {side}: the baseline's goodput is 0 req/s ({:.3} req/s in {side}); no share of it can be held",
            cand.0
        );
        if gate.verdict == GateVerdict::Passed {
            gate.words = format!(
                "goodput gate: passed: {side} has {:.3} req/s of goodput against the baseline's 0",
                cand.0
            );
        }
        return gate;
    }
    let change = (cand.0 - base.0) / base.0;
    gate.change = Some(change);
    let regressed = -change > gate.allowed;
    gate.verdict = if regressed {
        GateVerdict::Regressed
    } else {
        GateVerdict::Passed
    };
    gate.words = format!(
        "goodput gate: {}: goodput of {side} at the service level {} by {} ({:.3} -> {:.3} req/s), {} {allowed_words}",
        if regressed { "REGRESSION" } else { "passed" },
        if change < 0.0 { "fell" } else { "rose" },
        fmt::percent(change.abs(), 1),
        base.0,
        cand.0,
        if regressed { "beyond" } else { "within" }
    );
    gate
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::client::LoadTool;

    fn level(text: &str) -> ServiceLevel {
        ServiceLevel::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_service_level_reads_each_way_it_is_written() {
        let l = level("ttft:p95<=2s, tpot:p99<=60ms,e2e:p99<=30s");
        assert_eq!(l.spec(), "ttft:p95<=2000ms,tpot:p99<=60ms,e2e:p99<=30000ms");
        assert_eq!(l.bounds[0].percentile_e2, Some(9500));
        // A file: lines, comments, a bound on every request, p99.9.
        let f = level("# the product's SLO\nttft:p99.9<=1.5s\n\ne2e<=30s  # every request\n");
        assert_eq!(f.bounds[0].percentile_e2, Some(9990));
        assert_eq!(f.bounds[0].limit_ms, 1500.0);
        assert_eq!(f.bounds[1].percentile_e2, None);
        assert_eq!(f.bounds[1].words(), "latency of every request <= 30000 ms");
    }

    /// `--slo tool`: each run's own `--goodput` thresholds, milliseconds, each on every
    /// request; a run whose tool stored none cannot be told.
    #[test]
    fn the_tool_s_own_goodput_thresholds_are_a_service_level() {
        let own = ServiceLevel::from_tool_goodput(&["ttft:500".into(), "e2el:2000".into()])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(own.spec(), "ttft<=500ms,e2e<=2000ms");
        assert!(ServiceLevel::from_tool_goodput(&["itl:5".into()]).is_err());
        let tool = level("tool");
        assert!(tool.from_tool);
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.duration = Some(1.0);
        account.requests = vec![
            request(RequestOutcome::Completed, 0.4, 1.0, 5),
            request(RequestOutcome::Completed, 0.6, 1.0, 5),
        ];
        account.count_from_records();
        let none = hold(&tool, "run", Some(&account));
        assert_eq!(none.verdict, Verdict::CannotTell);
        assert!(
            none.cannot_correct[0].contains("no goodput thresholds"),
            "{:?}",
            none.cannot_correct
        );
        account.goodput = vec!["ttft:500".into()];
        // Every request within 500 ms: the second took 600.
        let r = hold(&tool, "run", Some(&account));
        assert_eq!(r.service_level, "ttft<=500ms");
        assert_eq!(r.verdict, Verdict::NotMet);
        assert_eq!(r.goodput.map(|g| g.good_requests), Some(1));
        let explicit = hold(&level("ttft:p50<=1s"), "run", Some(&account));
        assert!(
            explicit.notes[0].contains("--goodput ttft:500"),
            "{:?}",
            explicit.notes
        );
    }

    #[test]
    fn a_bad_service_level_is_one_line_naming_what_is_wrong() {
        for (text, says) in [
            ("", "empty"),
            ("# nothing\n", "empty"),
            ("ttft:p95<2s", "no bound"),
            ("itl:p95<=2s", "unknown metric 'itl'"),
            ("ttft:p95<=2", "needs its unit"),
            ("ttft:p95<=fast", "needs its unit"),
            ("ttft:p95<=xs", "not a number"),
            ("ttft:p95<=0s", "above 0"),
            ("ttft:p95<=-1s", "above 0"),
            ("ttft:p100<=1s", "no percentile"),
            ("ttft:q95<=1s", "no percentile"),
            ("ttft:p95.123<=1s", "no percentile"),
            ("ttft:p95<=1s,ttft:p95<=2s", "bounded twice"),
        ] {
            let e = ServiceLevel::parse(text).expect_err(text).to_string();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    /// Nearest rank: k = ceil(p x N / 100), in whole numbers.
    #[test]
    fn the_nearest_rank_is_whole_and_never_past_the_last() {
        let p95 = level("ttft:p95<=1s").bounds[0];
        // 0.95 x 20 = 19 exactly (a float ceiling gives 20).
        assert_eq!(p95.rank(20), 19);
        assert_eq!(p95.rank(32), 31); // 30.4 -> 31
        assert_eq!(p95.rank(100), 95);
        assert_eq!(p95.rank(1), 1);
        let p50 = level("ttft:p50<=1s").bounds[0];
        assert_eq!(p50.rank(4), 2);
        assert_eq!(p50.rank(5), 3);
        let every = level("ttft<=1s").bounds[0];
        assert_eq!(every.rank(7), 7);
        assert_eq!(p95.fewest_requests(), 20);
        assert_eq!(level("ttft:p99<=1s").bounds[0].fewest_requests(), 100);
        assert_eq!(level("ttft:p99.9<=1s").bounds[0].fewest_requests(), 1000);
        assert_eq!(p50.fewest_requests(), 2);
    }

    fn request(outcome: RequestOutcome, ttft_s: f64, latency_s: f64, out: u64) -> ClientRequest {
        ClientRequest {
            outcome: Some(outcome),
            ttft_s: ttft_s.into(),
            latency_s: latency_s.into(),
            output_tokens: out.into(),
            ..ClientRequest::default()
        }
    }

    /// 20 requests: 18 completed with TTFT 100, 200, ... 1800 ms, 2 failed. Nearest-rank
    /// p90 of 20 is the 18th: 1800 ms (finite: 18 completed). p95 is the 19th: a miss,
    /// infinite. Over the completed alone p95 is the 18th of 18 (ceil(17.1) = 18): 1800.
    #[test]
    fn misses_count_as_infinite_latency() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        for i in 1..=18 {
            account
                .requests
                .push(request(RequestOutcome::Completed, i as f64 * 0.1, 2.0, 11));
        }
        for _ in 0..2 {
            account
                .requests
                .push(request(RequestOutcome::Failed, f64::NAN, f64::NAN, 0));
        }
        account.duration = Some(10.0);
        account.count_from_records();
        let l = level("ttft:p90<=2s,ttft:p95<=2s");
        let r = hold(&l, "run", Some(&account));
        let (p90, p95) = (&r.bounds[0], &r.bounds[1]);
        assert_eq!((p90.rank, p90.counted, p90.misses), (18, 20, 2));
        assert!((p90.value_ms.unwrap() - 1800.0).abs() < 1e-9);
        assert_eq!(p90.verdict, Verdict::Met);
        assert!(p95.infinite && p95.value_ms.is_none());
        assert_eq!(p95.verdict, Verdict::NotMet);
        assert!((p95.completed_only_ms.unwrap() - 1800.0).abs() < 1e-9);
        assert_eq!(r.verdict, Verdict::NotMet);
        assert_eq!(r.margin_value(), Some(f64::NEG_INFINITY));
        // Goodput: each bound per request, all 18 completed have TTFT <= 2 s; 10 tokens
        // after the first in 2 s minus TTFT is no bound here. 18 in 10 s, 18 x 11 tokens.
        let g = r.goodput.clone().unwrap();
        assert_eq!((g.good_requests, g.good_output_tokens), (18, 198));
        assert!((g.requests_per_s - 1.8).abs() < 1e-12);
        let text = run_text(&r, &l);
        assert!(text.contains("infinite"), "{text}");
        assert!(text.contains("NOT MET"), "{text}");
    }

    /// TPOT per request: (e2e - TTFT) / (output - 1). 1.0 s end to end, 0.1 s TTFT,
    /// 10 tokens: 900 ms / 9 = 100 ms. One token: 0.
    #[test]
    fn time_per_output_token_is_read_per_request() {
        let r = request(RequestOutcome::Completed, 0.1, 1.0, 10);
        assert!((request_ms(&r, Metric::Tpot).unwrap() - 100.0).abs() < 1e-9);
        let one = request(RequestOutcome::Completed, 0.1, 1.0, 1);
        assert_eq!(request_ms(&one, Metric::Tpot), Some(0.0));
        let no_ttft = request(RequestOutcome::Completed, f64::NAN, 1.0, 10);
        assert_eq!(request_ms(&no_ttft, Metric::Tpot), None);
    }

    /// Without records: 32 sent, 6 failed. p95 of 32 is the 31st, and only 26 came back:
    /// infinite from the counts alone. p50 (the 16th) cannot be told.
    #[test]
    fn without_records_only_an_infinite_percentile_is_told() {
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        account.sent = Some(32);
        account.completed = Some(26);
        account.failed = Some(6);
        account.duration = Some(8.0);
        let r = hold(&level("ttft:p95<=2s,ttft:p50<=2s"), "run", Some(&account));
        assert_eq!(r.bounds[0].verdict, Verdict::NotMet);
        assert!(r.bounds[0].infinite);
        assert_eq!(r.bounds[1].verdict, Verdict::CannotTell);
        assert_eq!(r.verdict, Verdict::NotMet);
        assert!(r.goodput.is_none());
        assert!(
            r.cannot_correct[0].contains("no per-request records"),
            "{:?}",
            r.cannot_correct
        );
        // All completed, no records: can't tell, never a pass.
        account.completed = Some(32);
        account.failed = Some(0);
        let r = hold(&level("ttft:p95<=2s"), "run", Some(&account));
        assert_eq!(r.verdict, Verdict::CannotTell);
    }

    /// A file that keeps a sample of its completed requests cannot be corrected: what the
    /// others took is unknown.
    #[test]
    fn a_sample_of_records_is_not_corrected() {
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        account.sent = Some(100);
        account.completed = Some(100);
        account.requests = vec![request(RequestOutcome::Completed, 0.1, 1.0, 5); 10];
        let r = hold(&level("ttft:p95<=2s"), "run", Some(&account));
        assert_eq!(r.verdict, Verdict::CannotTell);
        assert!(
            r.cannot_correct[0].contains("a sample"),
            "{:?}",
            r.cannot_correct
        );
    }

    /// Requests sent but never recorded (the tool stopped with them in flight) are
    /// misses: 10 sent, 8 records, all completed.
    #[test]
    fn requests_sent_but_never_recorded_are_misses() {
        let mut account = ClientAccount::new(LoadTool::InferencePerf);
        account.sent = Some(10);
        account.requests = vec![request(RequestOutcome::Completed, 0.1, 1.0, 5); 8];
        let r = hold(&level("e2e:p50<=2s,e2e:p90<=2s"), "run", Some(&account));
        assert_eq!(r.counted.unaccounted, 2);
        // p50 of 10 is the 5th: 1000 ms; p90 is the 9th, past the 8 that came back.
        assert_eq!(r.bounds[0].value_ms, Some(1000.0));
        assert!(r.bounds[1].infinite);
        assert!(r.notes[0].contains("counted as misses"), "{:?}", r.notes);
    }

    /// GuideLLM keeps the requests still running when it stopped as `incomplete`: each
    /// is a miss. 4 records: 3 completed (TTFT 100, 200, 300 ms), 1 incomplete. p50 of 4
    /// is the 2nd, 200 ms; p90 is the ceil(3.6) = 4th: the miss.
    #[test]
    fn a_request_still_running_when_the_tool_stopped_is_a_miss() {
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        for t in [0.1, 0.2, 0.3] {
            account
                .requests
                .push(request(RequestOutcome::Completed, t, 1.0, 5));
        }
        account
            .requests
            .push(request(RequestOutcome::Incomplete, f64::NAN, f64::NAN, 0));
        account.count_from_records();
        let r = hold(&level("ttft:p50<=1s,ttft:p90<=1s"), "run", Some(&account));
        assert_eq!((r.counted.incomplete, r.counted.misses()), (1, 1));
        assert!((r.bounds[0].value_ms.unwrap() - 200.0).abs() < 1e-9);
        assert!(r.bounds[1].infinite);
    }

    fn run_slo(
        label: &str,
        verdict: Verdict,
        margin: Option<f64>,
        infinite: bool,
        tps: f64,
    ) -> RunSlo {
        RunSlo {
            label: label.into(),
            service_level: String::new(),
            tool: None,
            counted: Counted::default(),
            bounds: Vec::new(),
            goodput: Some(Goodput {
                good_requests: 1,
                good_output_tokens: 1,
                duration_s: 1.0,
                requests_per_s: tps / 100.0,
                output_tokens_per_s: tps,
            }),
            verdict,
            margin,
            infinite,
            cannot_correct: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Meets at 8 with a margin of +20%, fails at 16 with -60%: the margin falls to 0 a
    /// quarter of the way (0.2 / 0.8): 8 + 8 x 0.25 = 10.
    #[test]
    fn a_bracketed_ceiling_is_interpolated_on_the_binding_margin() {
        let l = level("ttft:p95<=2s");
        let a = run_slo("c4", Verdict::Met, Some(0.5), false, 100.0);
        let b = run_slo("c8", Verdict::Met, Some(0.2), false, 200.0);
        let c = run_slo("c16", Verdict::NotMet, Some(-0.6), false, 250.0);
        let points = [
            CapacityPoint {
                asked: Some(16.0),
                slo: &c,
            },
            CapacityPoint {
                asked: Some(4.0),
                slo: &a,
            },
            CapacityPoint {
                asked: Some(8.0),
                slo: &b,
            },
        ];
        let price = GpuPrice {
            usd_per_gpu_hour: 3.6,
            gpus: 2,
        };
        let cap = capacity(&l, &points, None, true, Some(price));
        assert_eq!(cap.verdict, CapacityVerdict::Bracketed);
        assert!((cap.ceiling.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(cap.meets_at.as_deref(), Some("c8"));
        assert_eq!(cap.measure_next, Some(12.0));
        // Priced at c8, the measured meeting point: $7.2/h = $0.002/s over 200 tok/s
        // is $1e-5 per token, $10 per million.
        let cost = cap.cost.unwrap();
        assert_eq!(cost.at, "c8");
        assert!((cost.usd_per_mtok - 10.0).abs() < 1e-9);
    }

    #[test]
    fn an_infinite_failing_point_brackets_without_interpolation() {
        let l = level("ttft:p95<=2s");
        let b = run_slo("c8", Verdict::Met, Some(0.2), false, 200.0);
        let c = run_slo("c16", Verdict::NotMet, None, true, 250.0);
        let points = [
            CapacityPoint {
                asked: Some(8.0),
                slo: &b,
            },
            CapacityPoint {
                asked: Some(16.0),
                slo: &c,
            },
        ];
        let cap = capacity(&l, &points, None, true, None);
        assert_eq!(cap.ceiling, Some(8.0));
        assert!(!cap.interpolated);
        assert!(
            cap.words.contains("at least 8 and below 16"),
            "{}",
            cap.words
        );
    }

    /// A failing run below a meeting one is named; the bracket is still the highest
    /// meeting run and the failing one above it.
    #[test]
    fn a_curve_that_is_not_monotone_is_named() {
        let l = level("ttft:p95<=2s");
        let a = run_slo("c4", Verdict::NotMet, None, true, 100.0);
        let b = run_slo("c8", Verdict::Met, Some(0.2), false, 200.0);
        let c = run_slo("c16", Verdict::NotMet, Some(-0.2), false, 250.0);
        let points = [
            CapacityPoint {
                asked: Some(4.0),
                slo: &a,
            },
            CapacityPoint {
                asked: Some(8.0),
                slo: &b,
            },
            CapacityPoint {
                asked: Some(16.0),
                slo: &c,
            },
        ];
        let cap = capacity(&l, &points, None, true, None);
        assert_eq!(cap.meets_at.as_deref(), Some("c8"));
        // 8 + 8 x 0.2 / 0.4 = 12.
        assert!((cap.ceiling.unwrap() - 12.0).abs() < 1e-9);
        assert_eq!(
            cap.notes,
            ["not monotone: 4 fails the service level below 8 that meets it"]
        );
    }

    /// Never extrapolated: all meeting asks for double the highest, none meeting for half
    /// the lowest.
    #[test]
    fn an_unbracketed_sweep_names_the_point_to_measure_next() {
        let l = level("ttft:p95<=2s");
        let a = run_slo("c4", Verdict::Met, Some(0.5), false, 100.0);
        let b = run_slo("c8", Verdict::Met, Some(0.2), false, 200.0);
        let all_meet = [
            CapacityPoint {
                asked: Some(4.0),
                slo: &a,
            },
            CapacityPoint {
                asked: Some(8.0),
                slo: &b,
            },
        ];
        let cap = capacity(&l, &all_meet, None, true, None);
        assert_eq!(cap.verdict, CapacityVerdict::NotBracketed);
        assert_eq!((cap.ceiling, cap.measure_next), (None, Some(16.0)));
        assert!(cap.words.contains("measure at 16 next"), "{}", cap.words);
        let x = run_slo("c4", Verdict::NotMet, Some(-0.1), false, 100.0);
        let y = run_slo("c8", Verdict::NotMet, Some(-0.5), false, 100.0);
        let none_meet = [
            CapacityPoint {
                asked: Some(4.0),
                slo: &x,
            },
            CapacityPoint {
                asked: Some(8.0),
                slo: &y,
            },
        ];
        let cap = capacity(&l, &none_meet, None, true, None);
        assert_eq!((cap.ceiling, cap.measure_next), (None, Some(2.0)));
        let refused = capacity(&l, &none_meet, Some("the KV pool differs"), true, None);
        assert_eq!(refused.verdict, CapacityVerdict::Refused);
        assert_eq!(refused.ceiling, None);
    }

    /// Baseline repeats 10 and 11 req/s (noise 1/10.5 = 9.5%), candidate 9 and 9.5
    /// (5.4%): mean 10.5 -> 9.25 is a fall of 11.9%, beyond 9.5%. 10.0 and 10.2 is a fall
    /// of 3.8%, within.
    #[test]
    fn goodput_that_fell_beyond_the_noise_fails_the_gate() {
        let rps = |label: &str, v: f64| run_slo(label, Verdict::Met, Some(0.1), false, v * 100.0);
        let (b1, b2) = (rps("b1", 10.0), rps("b2", 11.0));
        let (c1, c2) = (rps("c1", 9.0), rps("c2", 9.5));
        let g = goodput_gate("B", &[&b1, &b2], &[&c1, &c2], None, None);
        assert_eq!(g.verdict, GateVerdict::Regressed);
        assert!((g.noise.unwrap() - 1.0 / 10.5).abs() < 1e-9);
        let (d1, d2) = (rps("d1", 10.0), rps("d2", 10.2));
        let g = goodput_gate("B", &[&b1, &b2], &[&d1, &d2], None, None);
        assert_eq!(g.verdict, GateVerdict::Passed, "{}", g.words);
        // Repeats on one side only: their noise (9.5%) is the noise. 10.5 -> 9.0 is a
        // fall of 14.3%, beyond it; 10.5 -> 10.0 is 4.8%, within.
        let g = goodput_gate("B", &[&b1, &b2], &[&c1], None, None);
        assert_eq!(g.verdict, GateVerdict::Regressed, "{}", g.words);
        assert!((g.noise.unwrap() - 1.0 / 10.5).abs() < 1e-9);
        let g = goodput_gate("B", &[&b1, &b2], &[&d1], None, None);
        assert_eq!(g.verdict, GateVerdict::Passed, "{}", g.words);
        // One run a side: the margin stands in for the unknown noise.
        let g = goodput_gate("B", &[&b1], &[&d1], None, None);
        assert_eq!(g.noise, None);
        assert_eq!(g.verdict, GateVerdict::Passed);
        let g = goodput_gate("B", &[&b1], &[&c1], None, None);
        assert_eq!(g.verdict, GateVerdict::Regressed, "{}", g.words);
        // A margin given is a floor under the noise: 11.9% allowed by a 15% margin.
        let g = goodput_gate("B", &[&b1, &b2], &[&c1, &c2], Some(0.15), None);
        assert_eq!(g.verdict, GateVerdict::Passed, "{}", g.words);
        let g = goodput_gate("B", &[&b1], &[&c1], None, Some("the pool differs"));
        assert_eq!(g.verdict, GateVerdict::CannotGate);
    }
}
