//! The ledger: the load tool's account of the run against the server's counters and its
//! recording. T18 (failures left out) and T20 (request lengths as advertised).
//!
//! Three accounts of one run:
//! - the client's: what the load tool's files say it sent, what completed, failed or was
//!   left incomplete, and each request where it kept them ([`ClientAccount`]);
//! - the server's counters between the snapshots: requests finished (by reason where the
//!   engine says), aborted and answered with an error (the engine table's
//!   [`FailedRequests`](crate::engine::FailedRequests)), prompt and output tokens;
//! - the recording: when the engine last generated a token.
//!
//! The established tool's T15 compares the first two on completed requests and output
//! tokens only, and stays as it is. T18 asks whether failures are left out of the run's
//! figures; T20 whether the lengths the run names are the lengths the server processed.

use serde_json::{json, Value};

use super::counters::{counter_delta, out_of_order, restart_between};
use super::series::SeriesStats;
use crate::engine::{EngineDescriptor, FailedKind};
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::{
    ClientAccount, FailureCounting, LoadTool, LoadToolInfo, RequestOutcome,
};
use crate::model::requests::RequestTimeline;
use crate::model::Snapshot;
use crate::story::fmt;

/// What the server's counters say about the run, between the two snapshots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServerOutcomes {
    /// Requests it finished, every reason counted.
    pub finished: f64,
    /// Requests it aborted, over every abort counter the scrapes serve; `None` when they
    /// serve none.
    pub aborted: Option<f64>,
    /// Requests it ended with an error.
    pub errored: Option<f64>,
    /// Prompt tokens the server processed.
    pub prompt_tokens: Option<f64>,
    /// Output tokens the server generated.
    pub output_tokens: Option<f64>,
}

/// The server's account of the run, or why the snapshots give none.
pub fn server_outcomes(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
) -> Result<ServerOutcomes, String> {
    if let Some(order) = out_of_order(before, after) {
        return Err(order);
    }
    if let Some(restart) = restart_between(before, after) {
        return Err(restart.message);
    }
    let finished = counter_delta(engine, before, after, engine.request_success)
        .filter(|f| f.is_finite())
        .ok_or_else(|| format!("{} is missing from a snapshot", engine.request_success))?;
    let aborted = failed_between(engine, before, after, FailedKind::Aborted);
    let errored = failed_between(engine, before, after, FailedKind::Errored);
    let delta = |name| counter_delta(engine, before, after, name).filter(|v| v.is_finite());
    Ok(ServerOutcomes {
        finished,
        aborted,
        errored,
        prompt_tokens: delta(engine.prompt_tokens),
        output_tokens: delta(engine.generation_tokens),
    })
}

/// Requests of one kind that did not finish between two snapshots, over every counter of
/// that kind the engine has ([`EngineDescriptor::failed_requests`]) that the after
/// snapshot serves; `None` when it serves none. A labelled series is created at its first
/// request (TensorRT-LLM creates one per reason lazily), so one absent before counts from
/// zero.
pub fn failed_between(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    kind: FailedKind,
) -> Option<f64> {
    let mut total = None;
    for counter in engine.failed_requests.iter().filter(|c| c.kind == kind) {
        let read = |s: &Snapshot| match counter.label {
            Some((key, value)) => s.metrics.total_matching(counter.name, &[(key, value)]),
            None => s.metrics.total(counter.name),
        };
        let Some(later) = read(after).filter(|v| v.is_finite()) else {
            continue;
        };
        let earlier = read(before).filter(|v| v.is_finite()).unwrap_or(0.0);
        *total.get_or_insert(0.0) += (later - earlier).max(0.0);
    }
    total
}

/// Seconds after the sample that saw the generation counter's last rise within which a
/// request can still end on tokens generated before it: the answer's delivery and the
/// scrape's latency. No later sample saw a rise, so nothing was generated after it.
const STOP_TOLERANCE_S: f64 = 0.5;

/// The engine stopped generating while the load tool still counted successes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoppedGenerating {
    /// Seconds into the recording of the engine's last generated token.
    pub last_token_s: f64,
    /// Requests the tool counted as completed that ended after that (with the tolerance).
    pub completed_after: usize,
}

/// Completed requests that ended after the engine's last token, from the lined-up
/// timeline; `None` when the recording cannot say (no generation counter, no rise, or no
/// sample after the requests ended).
pub fn stopped_generating(
    series: &SeriesStats,
    timeline: &RequestTimeline,
) -> Option<StoppedGenerating> {
    let (rise_wall, rise_mono) = series.generation_last_rise?;
    let last_token_s = match (rise_mono, series.first_t_mono_ns) {
        (Some(m), Some(first)) if series.all_mono => (m - first) as f64 / 1e9,
        _ => rise_wall - series.first_t_wall?,
    };
    let completed_after = timeline
        .requests
        .iter()
        .filter(|r| r.outcome == Some(RequestOutcome::Completed))
        .filter_map(|r| r.end)
        // The recording must cover the request's end to say the engine was idle then.
        .filter(|end| *end <= timeline.span_s)
        .filter(|end| *end > last_token_s + STOP_TOLERANCE_S)
        .count();
    Some(StoppedGenerating {
        last_token_s,
        completed_after,
    })
}

/// T18's inputs beside the account.
#[derive(Debug, Clone, Copy)]
pub struct LedgerInputs<'a> {
    /// The engine's table.
    pub engine: &'static EngineDescriptor,
    /// The load tool's account.
    pub account: &'a ClientAccount,
    /// The name the result file is shown under.
    pub result_file: &'a str,
    /// The server's account, or why the snapshots give none; `None` without snapshots.
    pub server: Option<&'a Result<ServerOutcomes, String>>,
    /// When the recording shows the server stopped generating, if it did before the end.
    pub stopped: Option<StoppedGenerating>,
    /// Untimed requests (test, warm-up) the server also served.
    pub untimed: u64,
}

/// T18: failures the run's figures leave out.
pub fn dropped_failures(inputs: &LedgerInputs) -> CheckResult {
    let account = inputs.account;
    let tally = Tally::of(inputs);
    let verdict = |status, message: String| tally.evidence(inputs, t18(inputs, status, message));
    // A result file whose counts contradict each other shows nothing for certain about
    // the client's side: the failures it would show, or rule out, are its counts.
    let contradiction = account.contradiction();
    let findings = tally.findings(inputs, contradiction.is_some());
    if !findings.parts.is_empty() {
        let message = failure_message(
            account,
            tally.completed,
            &findings.parts,
            contradiction.as_ref(),
        );
        let mut result = verdict(Status::Fail, message).with("accounts", findings.accounts);
        if let Some(why) = contradiction {
            result = result.with("client_contradiction", why);
        }
        return result;
    }
    if let Some(why) = contradiction {
        let tool = account.tool_label();
        return verdict(
            Status::Unknown,
            format!(
                "{tool}'s result contradicts itself: {why}; which count is wrong cannot be told, so the failures it shows or rules out are unknown"
            ),
        )
        .with("client_contradiction", why);
    }
    let (status, message) = no_failure_verdict(inputs, &tally);
    verdict(status, message)
}

/// A T18 result with the tool and the result file it judged.
fn t18(inputs: &LedgerInputs, status: Status, message: String) -> CheckResult {
    let account = inputs.account;
    CheckResult::new(Tripwire::T18, status, message)
        .with("tool", account.tool.info().key)
        .with("tool_version", account.tool_version.clone())
        .with("result_file", inputs.result_file)
}

/// Each account's count of requests that did not end in an answer, as read.
struct Tally<'a> {
    sent: Option<i64>,
    completed: Option<i64>,
    failed: i64,
    incomplete: i64,
    /// Requests sent but neither completed nor counted as failed or incomplete.
    unaccounted: i64,
    /// Requests counted as completed that returned no output token.
    empty: i64,
    server: Option<&'a ServerOutcomes>,
    server_unusable: Option<&'a String>,
    /// Requests the tool counted as completed beyond those the server finished.
    short: f64,
    /// The server finished requests and generated no token.
    server_empty: bool,
    /// The engine stopped generating while the tool still counted completions.
    stopped: Option<StoppedGenerating>,
}

impl<'a> Tally<'a> {
    fn of(inputs: &LedgerInputs<'a>) -> Tally<'a> {
        let account = inputs.account;
        let completed = account.completed.filter(|c| *c >= 0);
        let failed = account.failed_count().unwrap_or(0).max(0);
        let incomplete = account.incomplete_count().unwrap_or(0).max(0);
        let sent = account.sent.filter(|s| *s >= 0);
        // Requests sent but neither completed nor counted as failed or incomplete: a tool
        // that counts no failure drops them from its counts.
        let unaccounted = match (sent, completed) {
            (Some(s), Some(c)) => (s - c - failed - incomplete).max(0),
            _ => 0,
        };
        let empty_records = account
            .requests
            .iter()
            .filter(|r| r.completed())
            .filter(|r| {
                r.output_tokens.get() == Some(0)
                    && r.server_output_tokens.get().is_none_or(|t| t == 0)
            })
            .count() as i64;
        let empty = if account.requests.is_empty() {
            match (completed, account.total_output_tokens) {
                (Some(c), Some(0)) if c > 0 => c,
                _ => 0,
            }
        } else {
            empty_records
        };
        let server = inputs.server.and_then(|s| s.as_ref().ok());
        let short = match (server, completed) {
            (Some(s), Some(c)) => (c as f64 + inputs.untimed as f64 - s.finished.trunc()).max(0.0),
            _ => 0.0,
        };
        let server_empty = match (server, completed) {
            (Some(s), Some(c)) if c > 0 && s.finished > 0.0 => s.output_tokens == Some(0.0),
            _ => false,
        };
        Tally {
            sent,
            completed,
            failed,
            incomplete,
            unaccounted,
            empty,
            server,
            server_unusable: inputs.server.and_then(|s| s.as_ref().err()),
            short,
            server_empty,
            stopped: inputs.stopped.filter(|s| s.completed_after > 0),
        }
    }

    /// T18's evidence: every count as read, whatever the verdict.
    fn evidence(&self, inputs: &LedgerInputs, r: CheckResult) -> CheckResult {
        let account = inputs.account;
        let reasons: Vec<Value> = account
            .failure_reasons
            .iter()
            .map(|r| json!([r.reason, r.count]))
            .collect();
        r.with("sent", self.sent)
            .with("completed", self.completed)
            .with("client_failed", self.failed)
            .with("client_incomplete", self.incomplete)
            .with("client_unaccounted", self.unaccounted)
            .with("client_empty", self.empty)
            .with("failure_reasons", reasons)
            .with("failures_counted", failure_counting_word(account))
            .with("server_finished", self.server.map(|s| s.finished))
            .with("server_aborted", self.server.and_then(|s| s.aborted))
            .with("server_errored", self.server.and_then(|s| s.errored))
            .with("server_short", self.short)
            .with("untimed_requests", inputs.untimed)
            .with("last_token_s", inputs.stopped.map(|s| s.last_token_s))
            .with(
                "completed_after_last_token",
                self.stopped.map(|s| s.completed_after),
            )
    }

    /// Each failure an account shows, in the client's, the server's and the recording's
    /// order; a contradicted client's counts show none.
    fn findings(&self, inputs: &LedgerInputs, contradicted: bool) -> Findings {
        let mut found = Findings::default();
        if !contradicted {
            self.client_findings(inputs.account, &mut found);
        }
        self.server_findings(inputs.account, contradicted, &mut found);
        found.accounts.dedup();
        found
    }

    /// The client's failures: failed, incomplete, unaccounted and empty requests.
    fn client_findings(&self, account: &ClientAccount, found: &mut Findings) {
        let tool = account.tool_label();
        let (failed, incomplete, unaccounted) = (self.failed, self.incomplete, self.unaccounted);
        let client_failures = failed + incomplete + unaccounted;
        let total = self
            .sent
            .or_else(|| Some(self.completed? + failed + incomplete));
        if self.completed == Some(0) && client_failures > 0 {
            let sent_words = match total {
                Some(t) => format!("none of the {t} requests it sent"),
                None => "no request".to_owned(),
            };
            found.push(
                "client",
                format!(
                    "every request failed: {tool} completed {sent_words}{}, yet wrote its result as for a finished run",
                    reason_words(account)
                ),
            );
        } else {
            if failed > 0 {
                let of = total.map_or(String::new(), |t| format!(" of {t}"));
                found.push(
                    "client",
                    format!(
                        "{failed}{of} request{} failed{}",
                        fmt::plural(failed as f64),
                        reason_words(account)
                    ),
                );
            }
            if incomplete > 0 {
                found.push(
                    "client",
                    format!(
                        "{incomplete} {} still in flight or cancelled when the tool stopped",
                        if incomplete == 1 { "was" } else { "were" }
                    ),
                );
            }
            if unaccounted > 0 {
                found.push(
                    "client",
                    format!(
                        "{unaccounted} of the {} requests it sent {} neither completed nor counted as failed",
                        self.sent.unwrap_or(0),
                        if unaccounted == 1 { "is" } else { "are" }
                    ),
                );
            }
        }
        if self.empty > 0 {
            found.push(
                "client",
                format!(
                    "{} request{} counted as completed returned no output token",
                    self.empty,
                    fmt::plural(self.empty as f64)
                ),
            );
        }
    }

    /// The server's failures (aborted, errored, short, no token) and the recording's
    /// (the engine stopped generating); a contradicted client's count of completed
    /// requests shows no shortfall.
    fn server_findings(&self, account: &ClientAccount, contradicted: bool, found: &mut Findings) {
        let tool = account.tool_label();
        let aborted = self.server.and_then(|s| s.aborted).unwrap_or(0.0);
        let errored = self.server.and_then(|s| s.errored).unwrap_or(0.0);
        let short = if contradicted { 0.0 } else { self.short };
        if aborted > 0.0 {
            found.push(
                "server",
                format!(
                    "the server aborted {} request{}",
                    fmt::g(aborted),
                    fmt::plural(aborted)
                ),
            );
        }
        if errored > 0.0 {
            found.push(
                "server",
                format!(
                    "the server ended {} request{} with an error",
                    fmt::g(errored),
                    fmt::plural(errored)
                ),
            );
        }
        if short > 0.0 {
            found.push(
                "server",
                format!(
                    "the server finished {} fewer request{} than {tool} counted as completed",
                    fmt::g(short),
                    fmt::plural(short)
                ),
            );
        }
        if self.server_empty {
            found.push("server", "the server generated no token at all".into());
        }
        if let Some(s) = self.stopped {
            found.push(
                "series",
                format!(
                    "the server's token counter stopped {:.1} s into the recording, yet {tool} counted {} request{} as completed after that",
                    s.last_token_s,
                    s.completed_after,
                    fmt::plural(s.completed_after as f64)
                ),
            );
        }
    }
}

/// The failures T18 found, each with the account that shows it.
#[derive(Default)]
struct Findings {
    parts: Vec<String>,
    accounts: Vec<&'static str>,
}

impl Findings {
    fn push(&mut self, account: &'static str, part: String) {
        self.parts.push(part);
        self.accounts.push(account);
    }
}

/// T18's failing message: the failures, the tool's headline they leave out, and a
/// contradiction in the tool's own counts.
fn failure_message(
    account: &ClientAccount,
    completed: Option<i64>,
    parts: &[String],
    contradiction: Option<&String>,
) -> String {
    let info = account.tool.info();
    let tool = account.tool_label();
    let tail = match completed {
        Some(c) if c > 0 => format!("; {} {} (here {c})", info.name, info.headline),
        _ => String::new(),
    };
    let mut message = parts.join("; ");
    message.push_str(&tail);
    if let Some(why) = contradiction {
        message.push_str(&format!(
            "; {tool}'s own counts contradict each other ({why})"
        ));
    }
    message
}

/// No failure anywhere: a pass needs an account that could have shown one.
fn no_failure_verdict(inputs: &LedgerInputs, tally: &Tally) -> (Status, String) {
    let account = inputs.account;
    let tool = account.tool_label();
    let (sent, completed, server) = (tally.sent, tally.completed, tally.server);
    let client_can_show = account.shows_failures() || sent.is_some();
    if !client_can_show {
        let server_words = match (server, tally.server_unusable) {
            (Some(s), _) if s.aborted.is_some() => {
                " The server counted no abort, but a request refused before it reached the engine (a wrong model name, a prompt too long) is in none of its counters."
            }
            _ => "",
        };
        return (
            Status::Unknown,
            format!(
                "{tool}'s result counts {} completed and no failed request, and keeps no record of each request: failures cannot be seen{}",
                completed.map_or("its".into(), |c| c.to_string()),
                server_words.trim_end_matches('.')
            ),
        );
    }
    let what = match (sent, completed) {
        (Some(s), Some(c)) if s == c => format!("all {c} requests {tool} sent completed"),
        (_, Some(c)) => format!("{tool} counted {c} completed requests and no failure"),
        _ => format!("{tool} counted no failure"),
    };
    // Snapshots given but not comparable: a restart between them (which loses the
    // requests in flight when the server stopped, and starts its counters again), or
    // readings that do not cover the run. The server's own account is there and cannot be
    // read, so a pass would rest on the tool's word alone where the run says more.
    if let Some(why) = tally.server_unusable {
        return (
            Status::Unknown,
            format!(
                "{what}, but the server's counters cannot be compared ({why}): its own account of aborted and failed requests cannot confirm it"
            ),
        );
    }
    let server_words = match server {
        Some(s) => match (s.aborted, s.errored) {
            (None, None) => "the server serves no counter of aborted or failed requests to compare",
            _ => "the server counted no abort or error",
        },
        None => "no server readings to compare",
    };
    (Status::Pass, format!("{what}; {server_words}"))
}

/// ` (6 × 500 Internal Server Error)`: the reasons, most frequent first, at most three.
fn reason_words(account: &ClientAccount) -> String {
    let mut reasons = account.failure_reasons.clone();
    if reasons.is_empty() {
        return String::new();
    }
    reasons.sort_by_key(|r| std::cmp::Reverse(r.count));
    let shown: Vec<String> = reasons
        .iter()
        .take(3)
        .map(|r| format!("{} × {}", r.count, r.reason))
        .collect();
    let more = if reasons.len() > 3 {
        format!(", and {} other reasons", reasons.len() - 3)
    } else {
        String::new()
    };
    format!(" ({}{more})", shown.join(", "))
}

fn failure_counting_word(account: &ClientAccount) -> &'static str {
    match account.tool.info().failures {
        FailureCounting::Counted => "counted",
        FailureCounting::PerRequestOnly => "per_request_only",
        FailureCounting::NotCounted => "not_counted",
    }
}

/// Per request differences smaller than this many tokens are noise (a BOS token, a
/// tokenizer's word boundary).
const TOKEN_SLACK: f64 = 2.0;
/// T20 warns above this relative difference and fails above [`LENGTH_FAIL`].
pub const LENGTH_WARN: f64 = 0.05;
/// T20 fails above this relative difference.
pub const LENGTH_FAIL: f64 = 0.25;

/// One comparison of lengths T20 makes.
#[derive(Debug, Clone, PartialEq)]
struct Comparison {
    /// `prompt` or `output`.
    side: &'static str,
    /// What is compared with the server: `client` (the tool's own count) or `asked`.
    against: &'static str,
    /// Tokens per request the other account names.
    theirs: f64,
    /// Tokens per request the server (or, without it, the tool) counted.
    reference: f64,
    /// Whether `reference` is the server's count.
    server: bool,
}

impl Comparison {
    /// The reference count over the one compared with it: how far what the server did is
    /// from what was counted or asked (0.61 when requests stopped at 61% of the asked
    /// length).
    fn ratio(&self) -> f64 {
        if self.theirs > 0.0 {
            self.reference / self.theirs
        } else if self.reference > 0.0 {
            f64::INFINITY
        } else {
            1.0
        }
    }

    /// The relative difference, or 0 when the two differ by no more than a token or two.
    fn deviation(&self) -> f64 {
        if (self.theirs - self.reference).abs() <= TOKEN_SLACK {
            0.0
        } else {
            (self.ratio() - 1.0).abs()
        }
    }

    fn json(&self) -> Value {
        json!({
            "side": self.side,
            "against": self.against,
            "theirs_per_request": self.theirs,
            "reference_per_request": self.reference,
            "reference_is_server": self.server,
            "ratio": self.ratio(),
        })
    }
}

/// The server's prompt and output tokens per request: the usage its answers carried
/// where the tool kept it, else its counters over the requests it finished.
fn server_lengths(
    account: &ClientAccount,
    server: Option<&ServerOutcomes>,
) -> Option<(Option<f64>, Option<f64>, &'static str)> {
    let completed: Vec<_> = account.requests.iter().filter(|r| r.completed()).collect();
    let mean = |values: Vec<u64>| {
        (!values.is_empty()).then(|| values.iter().sum::<u64>() as f64 / values.len() as f64)
    };
    let prompt = mean(
        completed
            .iter()
            .filter_map(|r| r.server_prompt_tokens.get())
            .collect(),
    );
    let output = mean(
        completed
            .iter()
            .filter_map(|r| r.server_output_tokens.get())
            .collect(),
    );
    if prompt.is_some() || output.is_some() {
        return Some((prompt, output, "usage"));
    }
    let s = server.filter(|s| s.finished > 0.0)?;
    Some((
        s.prompt_tokens.map(|p| p / s.finished),
        s.output_tokens.map(|o| o / s.finished),
        "counters",
    ))
}

/// The tool's own counts per completed request.
fn client_lengths(account: &ClientAccount) -> (Option<f64>, Option<f64>) {
    let completed = account.completed.filter(|c| *c > 0).map(|c| c as f64);
    let per = |total: Option<i64>| Some(total? as f64 / completed?);
    (
        per(account.total_input_tokens),
        per(account.total_output_tokens),
    )
}

/// What the run asked for per request: its advertised lengths, else (for output, when it
/// asked the server to ignore the end-of-sequence token) each request's `max_tokens`.
///
/// The prompt asked for is what the tool sent: a shared prefix it put before each prompt
/// (`--random-prefix-len`) and the prompt length it names after it. vLLM's random data
/// makes each prompt `prefix + sampled input` and counts that as the request's prompt
/// length; a tool that says nothing of a prefix adds none.
fn asked_lengths(account: &ClientAccount) -> (Option<f64>, Option<f64>) {
    let prefix = account
        .advertised
        .prefix_tokens
        .filter(|p| p.is_finite() && *p > 0.0)
        .unwrap_or(0.0);
    let input = account.advertised.input_tokens.map(|i| i + prefix);
    let output = account.advertised.output_tokens.or_else(|| {
        let asked: Vec<u64> = account
            .requests
            .iter()
            .filter(|r| r.completed() && r.ignore_eos == Some(true))
            .filter_map(|r| r.asked_output_tokens.get())
            .collect();
        (!asked.is_empty()).then(|| asked.iter().sum::<u64>() as f64 / asked.len() as f64)
    });
    (input, output)
}

/// Whether T20 has anything to compare: the server's side, or lengths the run asked for
/// against the tool's own counts.
pub fn lengths_comparable(account: &ClientAccount, server: Option<&ServerOutcomes>) -> bool {
    if server_lengths(account, server).is_some() {
        return true;
    }
    let (ci, co) = client_lengths(account);
    let (ai, ao) = asked_lengths(account);
    (ci.is_some() && ai.is_some()) || (co.is_some() && ao.is_some())
}

/// T20: the lengths the server processed against what the load tool counted, sent and
/// asked for.
pub fn length_mismatch(
    account: &ClientAccount,
    result_file: &str,
    server: Option<&ServerOutcomes>,
) -> CheckResult {
    let tool = account.tool_label();
    let lengths = Lengths::of(account, server);
    let comparisons = lengths.comparisons();
    let verdict = |status, message: String| {
        let r = CheckResult::new(Tripwire::T20, status, message)
            .with("tool", account.tool.info().key)
            .with("result_file", result_file);
        lengths.evidence(account, &comparisons, r)
    };
    let Some(worst) = comparisons
        .iter()
        .max_by(|a, b| a.deviation().total_cmp(&b.deviation()))
    else {
        return verdict(
            Status::Unknown,
            format!(
                "nothing to compare: neither the server's counts nor {tool}'s counts and asked lengths are there"
            ),
        );
    };
    let status = length_status(worst);
    let message = if status == Status::Pass {
        agreement_words(&comparisons, lengths.server.is_some(), &tool)
    } else {
        disagreement_words(account, worst, &tool)
    };
    verdict(status, message)
        .with("worst_side", worst.side)
        .with("worst_against", worst.against)
        .with("worst_ratio", worst.ratio())
}

/// The lengths per request T20 compares: the tool's counts, what the run asked for, and
/// the server's with where they come from.
struct Lengths {
    client_in: Option<f64>,
    client_out: Option<f64>,
    asked_in: Option<f64>,
    asked_out: Option<f64>,
    server: Option<(Option<f64>, Option<f64>, &'static str)>,
}

impl Lengths {
    fn of(account: &ClientAccount, server: Option<&ServerOutcomes>) -> Lengths {
        let (client_in, client_out) = client_lengths(account);
        let (asked_in, asked_out) = asked_lengths(account);
        Lengths {
            client_in,
            client_out,
            asked_in,
            asked_out,
            server: server_lengths(account, server),
        }
    }

    /// Each pair of finite lengths to compare: against the server's where it counted
    /// them, else what was asked for against the tool's counts.
    fn comparisons(&self) -> Vec<Comparison> {
        let mut comparisons = Vec::new();
        let mut push =
            |side, against, theirs: Option<f64>, reference: Option<f64>, server: bool| {
                if let (Some(theirs), Some(reference)) = (theirs, reference) {
                    if theirs.is_finite() && reference.is_finite() {
                        comparisons.push(Comparison {
                            side,
                            against,
                            theirs,
                            reference,
                            server,
                        });
                    }
                }
            };
        match self.server {
            Some((server_in, server_out, _)) => {
                push("prompt", "client", self.client_in, server_in, true);
                push("prompt", "asked", self.asked_in, server_in, true);
                push("output", "client", self.client_out, server_out, true);
                push("output", "asked", self.asked_out, server_out, true);
            }
            None => {
                push("prompt", "asked", self.asked_in, self.client_in, false);
                push("output", "asked", self.asked_out, self.client_out, false);
            }
        }
        comparisons
    }

    /// T20's evidence: the comparisons and every length as read.
    fn evidence(
        &self,
        account: &ClientAccount,
        comparisons: &[Comparison],
        r: CheckResult,
    ) -> CheckResult {
        let r = r
            .with(
                "comparisons",
                comparisons.iter().map(Comparison::json).collect::<Vec<_>>(),
            )
            .with("server_source", self.server.map(|(_, _, s)| s))
            .with("client_prompt_per_request", self.client_in)
            .with("client_output_per_request", self.client_out)
            .with("asked_prompt_per_request", self.asked_in)
            .with("asked_output_per_request", self.asked_out)
            .with("advertised_range_ratio", account.advertised.range_ratio);
        // Only where the tool named a prefix: most tools have none to name.
        let r = match account.advertised.prefix_tokens {
            Some(p) => r.with("advertised_prefix_tokens", p),
            None => r,
        };
        r.with("ignore_eos", account.advertised.ignore_eos)
            .with("requests_differing", per_request_differences(account))
    }
}

/// T20's status from its worst comparison.
fn length_status(worst: &Comparison) -> Status {
    // The thresholds hold on the boundary whatever the floating-point rounding.
    let deviation = worst.deviation() - 1e-9;
    if deviation > LENGTH_FAIL {
        Status::Fail
    } else if deviation > LENGTH_WARN {
        Status::Warn
    } else {
        Status::Pass
    }
}

/// The worst difference, then how many requests differ and by how much.
fn disagreement_words(account: &ClientAccount, worst: &Comparison, tool: &str) -> String {
    let mut m = difference_words(worst, tool);
    let differing = per_request_differences(account);
    if let Some(d) = differing.as_object().filter(|d| d.contains_key("requests")) {
        if let (Some(n), Some(of)) = (d["requests"].as_u64(), d["of"].as_u64()) {
            if n > 0 {
                m.push_str(&format!("; {n} of {of} requests differ"));
                if let (Some(lo), Some(hi)) = (d["ratio_min"].as_f64(), d["ratio_max"].as_f64()) {
                    m.push_str(&format!(" ({lo:.2}x to {hi:.2}x)"));
                }
            }
        }
    }
    m
}

/// A count per request: whole where it is within 0.05 of one (`32`), else to a tenth.
pub(crate) fn per_request(n: f64) -> String {
    if (n - n.round()).abs() < 0.05 {
        fmt::thousands_f(n)
    } else {
        format!("{n:.1}")
    }
}

/// The sentence for the worst difference, with its likely cause.
fn difference_words(c: &Comparison, tool: &str) -> String {
    let ratio = c.ratio();
    let whose = if c.server { "the server" } else { tool };
    let (theirs, reference) = (per_request(c.theirs), per_request(c.reference));
    let more = ratio > 1.0;
    let cause = match (c.side, c.against, more) {
        ("prompt", "client", false) => "the tool's tokenizer is not the server's",
        ("prompt", "client", true) => {
            "the server counts tokens the tool does not (a chat template, special tokens), or its tokenizer is not the server's"
        }
        ("prompt", "asked", false) => {
            "lengths were drawn below the one named (a range ratio), or the tool's tokenizer is not the server's"
        }
        ("prompt", "asked", true) => {
            "the server counts more than the lengths named (a chat template, special tokens, or text that does not tokenize back to the tokens it was made from)"
        }
        ("output", "client", _) => "the tool counts output tokens with another tokenizer than the server",
        ("output", "asked", false) => "requests stopped early (at an end-of-sequence token)",
        ("output", "asked", true) => "the server generated more than asked",
        _ => "",
    };
    let theirs_words = match c.against {
        "client" => format!("{tool} counted {theirs}"),
        _ => format!("the run asked for {theirs}"),
    };
    format!(
        "{} tokens per request: {theirs_words}, {whose} counted {reference} ({ratio:.2}x): {cause}",
        c.side
    )
}

fn agreement_words(comparisons: &[Comparison], server: bool, tool: &str) -> String {
    let find = |side: &str| {
        comparisons
            .iter()
            .find(|c| c.side == side)
            .map(|c| c.reference)
    };
    let both = match (find("prompt"), find("output")) {
        (Some(p), Some(o)) => format!(
            "{} in and {} out per request",
            per_request(p),
            per_request(o)
        ),
        (Some(p), None) => format!("{} prompt tokens per request", per_request(p)),
        (None, Some(o)) => format!("{} output tokens per request", per_request(o)),
        (None, None) => String::new(),
    };
    let mut against: Vec<&str> = Vec::new();
    for c in comparisons {
        let word = if c.against == "client" {
            "counted"
        } else {
            "asked for"
        };
        if !against.contains(&word) {
            against.push(word);
        }
    }
    if server {
        format!(
            "lengths as advertised: the server processed {both}, as {tool} {} (within 5%)",
            against.join(" and ")
        )
    } else {
        // The tool's own count against what it asked for: one subject, said once.
        format!(
            "lengths as advertised: {tool} counted {both}, as it {} (within 5%)",
            against.join(" and ")
        )
    }
}

/// Per-request comparison where the records hold both the tool's count and the server's
/// usage: how many requests differ, and the range of their ratios.
fn per_request_differences(account: &ClientAccount) -> Value {
    let pairs: Vec<(f64, f64)> = account
        .requests
        .iter()
        .filter(|r| r.completed())
        .flat_map(|r| {
            [
                (r.prompt_tokens.get(), r.server_prompt_tokens.get()),
                (r.output_tokens.get(), r.server_output_tokens.get()),
            ]
        })
        .filter_map(|(client, server)| Some((client? as f64, server? as f64)))
        .collect();
    if pairs.is_empty() {
        return Value::Null;
    }
    let of = account.requests.iter().filter(|r| r.completed()).count();
    let differing: Vec<f64> = pairs
        .iter()
        .filter(|(c, s)| (c - s).abs() > TOKEN_SLACK.max(s * LENGTH_WARN))
        .map(|(c, s)| if *c > 0.0 { s / c } else { f64::INFINITY })
        .collect();
    let requests = {
        // A request differs when either of its two counts does.
        account
            .requests
            .iter()
            .filter(|r| r.completed())
            .filter(|r| {
                [
                    (r.prompt_tokens.get(), r.server_prompt_tokens.get()),
                    (r.output_tokens.get(), r.server_output_tokens.get()),
                ]
                .iter()
                .any(|(c, s)| match (c, s) {
                    (Some(c), Some(s)) => {
                        let (c, s) = (*c as f64, *s as f64);
                        (c - s).abs() > TOKEN_SLACK.max(s * LENGTH_WARN)
                    }
                    _ => false,
                })
            })
            .count()
    };
    let finite: Vec<f64> = differing
        .iter()
        .copied()
        .filter(|r| r.is_finite())
        .collect();
    json!({
        "requests": requests,
        "of": of,
        "ratio_min": finite.iter().copied().reduce(f64::min),
        "ratio_max": finite.iter().copied().reduce(f64::max),
    })
}

/// What to change after T18 or T20, from their evidence: the load tool's own setting that
/// keeps what was missing, or the cause the failures' errors name.
pub fn advice(result: &CheckResult) -> Vec<String> {
    let Some(tool) = evidence_text(result, "tool").and_then(LoadTool::from_key) else {
        return Vec::new();
    };
    let info = tool.info();
    match (result.tripwire, result.status) {
        (Tripwire::T18, Status::Unknown) => info
            .details_flag
            .map(|flag| {
                format!(
                    "run {} with {flag}: its file then keeps each request, and the error of each failed one",
                    info.name
                )
            })
            .into_iter()
            .collect(),
        (Tripwire::T18, Status::Fail) => failures_advice(result, info),
        (Tripwire::T20, Status::Warn | Status::Fail) => lengths_advice(result, info),
        _ => Vec::new(),
    }
}

fn evidence_text<'a>(result: &'a CheckResult, key: &str) -> Option<&'a str> {
    result.evidence.get(key).and_then(Value::as_str)
}

fn evidence_number(result: &CheckResult, key: &str) -> Option<f64> {
    result.evidence.get(key).and_then(Value::as_f64)
}

/// After T18 failed: the cause each failure's error names, a stopped engine, and how to
/// report the run.
fn failures_advice(result: &CheckResult, info: &LoadToolInfo) -> Vec<String> {
    let number = |key: &str| evidence_number(result, key);
    let mut advice = reason_advice(result, info);
    let accounts = result.evidence.get("accounts").and_then(Value::as_array);
    let from = |account: &str| accounts.is_some_and(|a| a.iter().any(|v| v == account));
    if from("series") || number("client_empty").is_some_and(|n| n > 0.0) {
        advice.push(
            "the engine stopped answering with tokens: look in the server log for an error after its last answer (T7, T12)"
                .into(),
        );
    }
    let failed = number("client_failed").unwrap_or(0.0)
        + number("client_incomplete").unwrap_or(0.0)
        + number("client_unaccounted").unwrap_or(0.0);
    let completed = number("completed").unwrap_or(0.0);
    if let (true, Some(sent)) = (failed > 0.0 && completed > 0.0, number("sent")) {
        advice.push(format!(
            "report the run with its failures ({} of {} requests failed), or remove their cause and run it again",
            fmt::g(failed),
            fmt::g(sent)
        ));
    }
    advice
}

/// The cause each kind of error in the failures' reasons names.
fn reason_advice(result: &CheckResult, info: &LoadToolInfo) -> Vec<String> {
    let reasons: Vec<String> = result
        .evidence
        .get("failure_reasons")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|pair| pair.get(0).and_then(Value::as_str))
                .map(str::to_lowercase)
                .collect()
        })
        .unwrap_or_default();
    let any = |needles: &[&str]| {
        reasons
            .iter()
            .any(|r| needles.iter().any(|n| r.contains(n)))
    };
    let mut advice = Vec::new();
    if any(&["404", "not found"]) {
        advice.push(format!(
            "the server does not serve the model name {} sent (404): give it one of the names the server's /v1/models lists",
            info.name
        ));
    }
    if any(&["400", "bad request"]) {
        advice.push(
            "the server refused requests as invalid (400), often a prompt and output longer than its maximum model length: shorten them or raise the server's limit"
                .into(),
        );
    }
    if any(&["429", "503", "too many"]) {
        advice.push(
            "the server turned requests away (429, 503): lower the load, or raise the number of requests it queues"
                .into(),
        );
    }
    if any(&["500", "internal server error"]) {
        advice.push(
            "the server answered with internal errors (500): its log says why (T7, T12)".into(),
        );
    }
    if any(&["timeout", "timed out"]) {
        advice.push(format!(
            "requests timed out: raise {}'s request timeout, or lower the load",
            info.name
        ));
    }
    advice
}

/// After T20 warned or failed: the setting its worst comparison points to.
fn lengths_advice(result: &CheckResult, info: &LoadToolInfo) -> Vec<String> {
    let side = evidence_text(result, "worst_side");
    let against = evidence_text(result, "worst_against");
    let ratio = evidence_number(result, "worst_ratio").unwrap_or(1.0);
    let advice: Option<String> = match (side, against) {
        (Some("prompt" | "output"), Some("client")) => Some(format!(
            "count tokens with the server's tokenizer: {}",
            info.tokenizer
        )),
        (Some("output"), Some("asked")) if ratio < 1.0 => {
            if result.evidence.get("ignore_eos").and_then(Value::as_bool) != Some(true) {
                Some(format!(
                    "ask the server for the whole length ({}), or report the output length it generated",
                    info.ignore_eos
                ))
            } else {
                Some(
                    "the requests asked to ignore the end-of-sequence token and still stopped early: check the server's maximum model length and stop settings"
                        .into(),
                )
            }
        }
        (Some("prompt"), Some("asked")) if ratio < 1.0 => Some(
            "draw fixed lengths (the tool's range ratio), or report the prompt length the server counted"
                .into(),
        ),
        (Some("prompt"), Some("asked")) => Some(
            "report the prompt length the server counted: it includes what the server adds to each prompt (a chat template)"
                .into(),
        ),
        _ => None,
    };
    advice.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::model::client::{ClientRequest, LoadTool};

    fn account(sent: i64, completed: i64, failed: Option<i64>) -> ClientAccount {
        let mut a = ClientAccount::new(LoadTool::VllmBench);
        a.sent = Some(sent);
        a.completed = Some(completed);
        a.failed = failed;
        a.total_input_tokens = Some(completed * 100);
        a.total_output_tokens = Some(completed * 200);
        a
    }

    fn server(finished: f64, aborted: f64) -> Result<ServerOutcomes, String> {
        Ok(ServerOutcomes {
            finished,
            aborted: Some(aborted),
            errored: Some(0.0),
            prompt_tokens: Some(finished * 100.0),
            output_tokens: Some(finished * 200.0),
        })
    }

    fn t18(
        account: &ClientAccount,
        server: Option<&Result<ServerOutcomes, String>>,
    ) -> CheckResult {
        dropped_failures(&LedgerInputs {
            engine: &VLLM,
            account,
            result_file: "bench.json",
            server,
            stopped: None,
            untimed: 0,
        })
    }

    #[test]
    fn a_clean_run_passes_and_says_which_accounts_agree() {
        let r = t18(&account(32, 32, Some(0)), Some(&server(32.0, 0.0)));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "all 32 requests vllm bench serve sent completed; the server counted no abort or error"
        );
        let r = t18(&account(32, 32, Some(0)), None);
        assert_eq!(r.status, Status::Pass);
        assert!(
            r.message.ends_with("no server readings to compare"),
            "{}",
            r.message
        );
    }

    /// Each account alone is enough to fail: the client's count, the requests it sent but
    /// never counted, and the server's abort counter.
    #[test]
    fn any_account_that_shows_a_failure_fails() {
        let r = t18(&account(32, 30, Some(2)), Some(&server(30.0, 0.0)));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message.starts_with("2 of 32 requests failed;"),
            "{}",
            r.message
        );
        let r = t18(&account(32, 30, None), None);
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message.starts_with(
                "2 of the 32 requests it sent are neither completed nor counted as failed"
            ),
            "{}",
            r.message
        );
        let r = t18(&account(32, 32, Some(0)), Some(&server(35.0, 3.0)));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message.starts_with("the server aborted 3 requests;"),
            "{}",
            r.message
        );
        // The server finished fewer than the tool counted: answers it never finished.
        let r = t18(&account(32, 32, Some(0)), Some(&server(28.0, 0.0)));
        assert_eq!(r.status, Status::Fail);
        assert!(
            r.message.starts_with(
                "the server finished 4 fewer requests than vllm bench serve counted as completed"
            ),
            "{}",
            r.message
        );
    }

    /// A server restarted between the snapshots (its counters started again, and the
    /// requests in flight when it stopped are lost) passed on the tool's word. The
    /// server's account is there and cannot be read: Can't tell, naming why; a failure
    /// the tool itself counts still fails.
    #[test]
    fn a_restart_between_the_snapshots_is_cant_tell_not_a_pass() {
        let restarted: Result<ServerOutcomes, String> = Err(
            "server restarted between snapshots (3 *_created stamps moved, e.g. vllm:request_success_created: 1.000 -> 9.000)".into(),
        );
        let r = t18(&account(32, 32, Some(0)), Some(&restarted));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message.starts_with("all 32 requests vllm bench serve sent completed, but the server's counters cannot be compared (server restarted between snapshots"),
            "{}",
            r.message
        );
        let r = t18(&account(32, 30, Some(2)), Some(&restarted));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
    }

    /// Counts of one file that cannot all be true: T18 passed each of them.
    #[test]
    fn a_result_whose_counts_contradict_each_other_is_cant_tell() {
        // No request sent, 32 completed.
        let r = t18(&account(0, 32, Some(0)), Some(&server(32.0, 0.0)));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert_eq!(
            r.message,
            "vllm bench serve's result contradicts itself: it counts 0 requests sent but 32 that ended (32 completed, 0 failed); which count is wrong cannot be told, so the failures it shows or rules out are unknown"
        );
        // `failed: 0`, yet 3 of the per-request errors are not empty.
        let mut a = account(32, 32, Some(0));
        a.requests = (0..32)
            .map(|i| ClientRequest {
                outcome: Some(if i < 3 {
                    RequestOutcome::Failed
                } else {
                    RequestOutcome::Completed
                }),
                output_tokens: Some(200).into(),
                ..ClientRequest::default()
            })
            .collect();
        let r = t18(&a, Some(&server(32.0, 0.0)));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message
                .contains("it counts 0 failed, but 3 of its request records are failed"),
            "{}",
            r.message
        );
        // The server's own account of aborts still fails the run.
        let r = t18(&account(0, 32, Some(0)), Some(&server(35.0, 3.0)));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(
            r.message.starts_with("the server aborted 3 requests;"),
            "{}",
            r.message
        );
        assert!(r.message.ends_with("; vllm bench serve's own counts contradict each other (it counts 0 requests sent but 32 that ended (32 completed, 0 failed))"), "{}", r.message);
        // A sample of the records (fewer than counted) is no contradiction.
        let mut sampled = account(32, 32, Some(0));
        sampled.requests = vec![ClientRequest {
            outcome: Some(RequestOutcome::Completed),
            output_tokens: Some(200).into(),
            ..ClientRequest::default()
        }];
        assert_eq!(t18(&sampled, Some(&server(32.0, 0.0))).status, Status::Pass);
    }

    /// A summary that counts no failure and no request sent can show none: Can't tell,
    /// never a pass, even when the server's counters show no abort (a refused request
    /// never reaches them).
    #[test]
    fn an_account_that_cannot_show_failures_is_cant_tell() {
        let mut a = ClientAccount::new(LoadTool::SglangBench);
        a.completed = Some(32);
        let r = t18(&a, Some(&server(32.0, 0.0)));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        // With the per-request records, it can.
        a.requests = vec![ClientRequest {
            outcome: Some(RequestOutcome::Completed),
            output_tokens: Some(5).into(),
            ..ClientRequest::default()
        }];
        assert_eq!(t18(&a, Some(&server(32.0, 0.0))).status, Status::Pass);
    }

    #[test]
    fn t20_thresholds_at_5_and_25_percent_with_two_tokens_of_slack() {
        let run = |client_prompt: i64, server_prompt: f64| {
            let mut a = account(10, 10, Some(0));
            a.total_input_tokens = Some(client_prompt * 10);
            let s = ServerOutcomes {
                finished: 10.0,
                aborted: Some(0.0),
                errored: Some(0.0),
                prompt_tokens: Some(server_prompt * 10.0),
                output_tokens: Some(2000.0),
            };
            length_mismatch(&a, "bench.json", Some(&s)).status
        };
        assert_eq!(run(100, 100.0), Status::Pass);
        assert_eq!(run(100, 105.0), Status::Pass, "5% exactly");
        assert_eq!(run(100, 106.0), Status::Warn);
        assert_eq!(run(100, 125.0), Status::Warn, "25% exactly");
        assert_eq!(run(100, 126.0), Status::Fail);
        assert_eq!(run(20, 22.0), Status::Pass, "2 tokens are noise");
        assert_eq!(run(20, 23.0), Status::Warn);
        assert_eq!(run(300, 100.0), Status::Fail, "three times the tokens");
    }

    /// The prompt asked for is the shared prefix and the prompt after it, as the tool
    /// sent them: 256 + 32 against the server's 288 agree.
    #[test]
    fn t20_counts_a_shared_prefix_in_the_prompt_asked_for() {
        let mut a = account(10, 10, Some(0));
        a.total_input_tokens = Some(2880);
        a.advertised.input_tokens = Some(32.0);
        a.advertised.prefix_tokens = Some(256.0);
        let s = ServerOutcomes {
            finished: 10.0,
            aborted: Some(0.0),
            errored: Some(0.0),
            prompt_tokens: Some(2880.0),
            output_tokens: Some(2000.0),
        };
        let r = length_mismatch(&a, "bench.json", Some(&s));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["asked_prompt_per_request"], 288.0);
        a.advertised.prefix_tokens = None;
        let r = length_mismatch(&a, "bench.json", Some(&s));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
    }

    #[test]
    fn t20_needs_something_to_compare() {
        let mut a = account(10, 10, Some(0));
        assert!(!lengths_comparable(&a, None));
        a.advertised.output_tokens = Some(200.0);
        assert!(lengths_comparable(&a, None));
        let r = length_mismatch(&a, "bench.json", None);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        a.advertised.output_tokens = Some(400.0);
        let r = length_mismatch(&a, "bench.json", None);
        assert_eq!(r.status, Status::Fail);
        assert_eq!(
            r.message,
            "output tokens per request: the run asked for 400, vllm bench serve counted 200 (0.50x): requests stopped early (at an end-of-sequence token)"
        );
    }
}
