//! T23: the client's own wait left out of latency.
//!
//! A load tool times each request from the moment it sends it. A request can be due
//! earlier than that:
//! - in an open loop (`--request-rate R`), it is due at its place in the tool's schedule;
//!   a concurrency cap (`--max-concurrency C`) or a client that falls behind holds it
//!   back, and the tool writes how long (`vllm bench serve`'s `queue_times`, GuideLLM's
//!   `scheduled_at`, AIPerf's `credit_issued_ns`);
//! - in a closed loop (C requests kept open, no rate), it is due the moment one of the C
//!   requests before it ended and freed its slot: with the requests' sends and ends that
//!   moment is known, whatever the tool, as the earliest time at which fewer than C
//!   requests were in flight. A client slower than its server (its event loop, its
//!   connection pool, its tokenizer) sends later than that.
//!
//! Either way the wait happened to the request and the tool's TTFT and end-to-end figures
//! leave it out. A closed loop's own start (its first C requests) is no wait.

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::{ClientAccount, LoadTool, RequestOutcome};
use crate::story::fmt;

/// A wait this long, and at least [`SHARE_OF_LATENCY`] of the request's own latency,
/// counts: a few milliseconds of an event loop's turn do not.
const WAIT_FLOOR_S: f64 = 0.05;
/// See [`WAIT_FLOOR_S`].
const SHARE_OF_LATENCY: f64 = 0.10;
/// The share of requests that waited beyond which the tool's figures are not the
/// requests' lives: the tripwire fails.
const FAIL_SHARE: f64 = 0.10;
/// A clock read twice by one program is not exact: a send "before" its due time by less
/// than this is no wait and no contradiction.
const CLOCK_SLACK_S: f64 = 0.002;

/// What T23 reads.
#[derive(Debug, Clone, Copy)]
pub struct ClientWaitInputs<'a> {
    /// The load tool's account.
    pub account: &'a ClientAccount,
    /// The result file's name, for the message.
    pub result_file: &'a str,
    /// The concurrency the load asked for, where the account does not say.
    pub requested: Option<u64>,
}

/// How the requests were paced.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pacing {
    /// A request rate: each request due at its place in the tool's schedule.
    Open(f64),
    /// At most this many requests at once and no rate: each due when a slot freed.
    Closed(u64),
}

/// One request's wait and latency, seconds.
#[derive(Debug, Clone, Copy)]
struct Waited {
    wait: f64,
    latency: Option<f64>,
}

/// T23.
pub fn client_wait(inputs: &ClientWaitInputs) -> CheckResult {
    let account = inputs.account;
    let tool = account.tool;
    // What the file does not hold is not checked, naming what would be needed; only
    // records that hold it and cannot be placed are Can't tell.
    let not_checked = |needs: String| {
        CheckResult::not_checked(Tripwire::T23, needs, &[crate::run::input::BENCH_RESULT])
            .with("tool", tool.info().key)
    };
    let sent: usize = account
        .requests
        .iter()
        .filter(|r| r.sent_s.is_some())
        .count();
    if sent < 2 {
        let flag = tool
            .info()
            .details_flag
            .map(|f| format!(" ({} {f})", tool.name()))
            .unwrap_or_default();
        return not_checked(format!(
            "needs the load tool's record of when it sent each request{flag}: {} keeps none",
            inputs.result_file
        ));
    }
    let cap = account
        .max_concurrency
        .and_then(|c| u64::try_from(c).ok())
        .filter(|c| *c > 0)
        .or(inputs.requested);
    let pacing = match (account.request_rate.filter(|r| r.is_finite() && *r > 0.0), cap) {
        (Some(rate), _) => Pacing::Open(rate),
        (None, Some(cap)) => Pacing::Closed(cap),
        (None, None) => {
            return not_checked(
                "needs the request rate or the concurrency the load asked for (--requested N, or a result file that says)".to_owned(),
            )
        }
    };
    let waits = match pacing {
        Pacing::Open(_) => scheduled_waits(account),
        Pacing::Closed(cap) => slot_waits(account, cap),
    };
    let Some(waits) = waits else {
        return CheckResult::new(
            Tripwire::T23,
            Status::Unknown,
            format!(
                "the load ran at a request rate, and {} keeps no time each request was due (its schedule) in {}: how long each waited before it was sent cannot be told",
                tool.name(),
                inputs.result_file
            ),
        )
        .with("tool", tool.info().key);
    };
    judge(&waits, pacing, tool, inputs.result_file)
}

/// Open loop: the tool's own schedule. `None` when no record carries it.
fn scheduled_waits(account: &ClientAccount) -> Option<Vec<Waited>> {
    let waits: Vec<Waited> = account
        .requests
        .iter()
        .filter_map(|r| {
            let sent = r.sent_s.get()?;
            let due = r.scheduled_s.get()?;
            Some(Waited {
                wait: (sent - due).max(0.0),
                latency: latency(r),
            })
        })
        .collect();
    (!waits.is_empty()).then_some(waits)
}

fn latency(r: &crate::model::client::ClientRequest) -> Option<f64> {
    if r.outcome != Some(RequestOutcome::Completed) {
        return None;
    }
    Some(r.end_at()? - r.sent_s.get()?).filter(|l| l.is_finite() && *l >= 0.0)
}

/// Closed loop: request `k` (in send order) was due when at most `cap - 1` of the
/// requests sent before it were still in flight, that is at the `(k - cap + 1)`-th
/// earliest end among them; the first `cap` were due at the load's start. A request
/// whose end is not known (it failed, the tool kept no time) is taken to have held its
/// slot to the end of the run, which can only make the waits found shorter. A tool that
/// records a later due time of its own (its slot freed later: a connection it reused) is
/// believed.
fn slot_waits(account: &ClientAccount, cap: u64) -> Option<Vec<Waited>> {
    let mut records: Vec<Sent> = account
        .requests
        .iter()
        .filter_map(|r| {
            Some(Sent {
                sent: r.sent_s.get()?,
                end: r.end_at(),
                scheduled: r.scheduled_s.get(),
                latency: latency(r),
            })
        })
        .collect();
    records.sort_by(|a, b| a.sent.total_cmp(&b.sent));
    let start = records.first()?.sent;
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    // The ends of the requests sent so far, earliest first; each slot frees once.
    let mut ends: std::collections::BinaryHeap<std::cmp::Reverse<OrdF64>> =
        std::collections::BinaryHeap::new();
    let mut waits = Vec::with_capacity(records.len());
    for (k, r) in records.iter().enumerate() {
        let (sent, scheduled, latency) = (r.sent, r.scheduled, r.latency);
        if k > 0 {
            let end = records[k - 1].end.unwrap_or(f64::INFINITY);
            ends.push(std::cmp::Reverse(OrdF64(end)));
        }
        let slot_free = if k < cap {
            start
        } else {
            ends.pop().map_or(f64::INFINITY, |e| e.0 .0)
        };
        let due = scheduled.map_or(slot_free, |s| s.max(slot_free));
        waits.push(Waited {
            wait: if due.is_finite() {
                (sent - due).max(0.0)
            } else {
                0.0
            },
            latency,
        });
    }
    Some(waits)
}

/// One sent request's times, seconds on the tool's clock.
#[derive(Debug, Clone, Copy)]
struct Sent {
    sent: f64,
    end: Option<f64>,
    scheduled: Option<f64>,
    latency: Option<f64>,
}

/// An `f64` ordered by `total_cmp`, for the heap of ends.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OrdF64(f64);

impl Eq for OrdF64 {}

impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Whether a wait counts: beyond the floor and beyond a tenth of the request's own
/// latency (a request without one is held to the floor alone).
fn counts(w: &Waited) -> bool {
    w.wait > WAIT_FLOOR_S.max(w.latency.unwrap_or(0.0) * SHARE_OF_LATENCY) + CLOCK_SLACK_S
}

/// The nearest-rank percentile of sorted values.
fn nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank.min(sorted.len()) - 1).copied()
}

fn judge(waits: &[Waited], pacing: Pacing, tool: LoadTool, result_file: &str) -> CheckResult {
    let n = waits.len();
    let waited = waits.iter().filter(|w| counts(w)).count();
    let mut wait_sorted: Vec<f64> = waits.iter().map(|w| w.wait).collect();
    wait_sorted.sort_by(f64::total_cmp);
    let mut latency_sorted: Vec<f64> = waits.iter().filter_map(|w| w.latency).collect();
    latency_sorted.sort_by(f64::total_cmp);
    let mut lived_sorted: Vec<f64> = waits
        .iter()
        .filter_map(|w| w.latency.map(|l| l + w.wait))
        .collect();
    lived_sorted.sort_by(f64::total_cmp);
    let p50 = nearest_rank(&wait_sorted, 50.0).unwrap_or(0.0);
    let p99 = nearest_rank(&wait_sorted, 99.0).unwrap_or(0.0);
    let (loop_word, how) = match pacing {
        Pacing::Open(rate) => (
            "open",
            format!(
                "its schedule of {} requests/s",
                fmt::g((rate * 100.0).round() / 100.0)
            ),
        ),
        Pacing::Closed(cap) => (
            "closed",
            format!("a slot of the {cap} it keeps open freeing"),
        ),
    };
    let mut result = CheckResult::new(Tripwire::T23, Status::Pass, String::new())
        .with("tool", tool.info().key)
        .with("loop", loop_word)
        .with("requests", n as u64)
        .with("waited", waited as u64)
        .with("wait_p50_s", round_ms(p50))
        .with("wait_p99_s", round_ms(p99));
    if let Some(l) = nearest_rank(&latency_sorted, 50.0) {
        result = result.with("latency_p50_s", round_ms(l));
    }
    if let Some(l) = nearest_rank(&lived_sorted, 50.0) {
        result = result.with("latency_with_wait_p50_s", round_ms(l));
    }
    if let Pacing::Closed(cap) = pacing {
        result = result.with("concurrency", cap);
    }
    let share = waited as f64 / n as f64;
    let name = tool.name();
    if waited == 0 {
        result.message = format!(
            "no request waited in {name} before it was sent: each went out within {} of {how} (p99), so its latencies from send are the requests' own",
            seconds(p99)
        );
        return result;
    }
    result.status = if share >= FAIL_SHARE {
        Status::Fail
    } else {
        Status::Warn
    };
    let lived = match (
        nearest_rank(&latency_sorted, 50.0),
        nearest_rank(&lived_sorted, 50.0),
    ) {
        (Some(from_send), Some(from_due)) => format!(
            "; counted from when each was due, the median latency is {}, not {}",
            seconds(from_due),
            seconds(from_send)
        ),
        _ => String::new(),
    };
    result.message = format!(
        "{waited} of {n} requests waited in {name} before it sent them (p50 {}, p99 {} after {how}), and {result_file}'s TTFT and latency start at the send{lived}",
        seconds(p50),
        seconds(p99)
    );
    result
}

fn round_ms(s: f64) -> f64 {
    (s * 1e3).round() / 1e3
}

fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{} ms", fmt::g((s * 1e3).round()))
    } else {
        format!("{} s", fmt::g((s * 100.0).round() / 100.0))
    }
}

/// What to change after T23 warned or failed.
pub fn advice(result: &CheckResult) -> Vec<String> {
    if !matches!(result.status, Status::Fail | Status::Warn) {
        return Vec::new();
    }
    let tool = result
        .evidence_str("tool")
        .and_then(LoadTool::from_key)
        .map_or("the load tool", LoadTool::name);
    match result.evidence_str("loop") {
        Some("open") => vec![format!(
            "the server (or the load's concurrency limit) did not keep up with the rate asked: report the latency counted from when each request was due ({tool}: the client queue, `e2el_including_client_queue` in vllm bench serve's --percentile-metrics), or run at a rate it keeps up with, or raise the concurrency limit"
        )],
        _ => vec![format!(
            "the client fell behind its own closed loop: give {tool} more CPU (another machine, more worker processes or connections) or fewer requests open at once, and check that it is not the run's limit"
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::client::{ClientRequest, RequestClock};

    fn account(
        rate: Option<f64>,
        cap: Option<i64>,
        records: &[(f64, f64, Option<f64>)],
    ) -> ClientAccount {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(RequestClock::Monotonic);
        account.request_rate = rate;
        account.max_concurrency = cap;
        account.requests = records
            .iter()
            .map(|&(sent, latency, scheduled)| ClientRequest {
                outcome: Some(RequestOutcome::Completed),
                sent_s: Some(sent).into(),
                latency_s: Some(latency).into(),
                scheduled_s: scheduled.into(),
                ..ClientRequest::default()
            })
            .collect();
        account
    }

    fn check(account: &ClientAccount) -> CheckResult {
        client_wait(&ClientWaitInputs {
            account,
            result_file: "bench.json",
            requested: None,
        })
    }

    /// Two slots, each request sent the moment one frees: every wait is zero, whatever
    /// the tool's schedule (vllm bench serve at rate inf dates every request at the
    /// start: that date is not when a slot freed).
    #[test]
    fn a_closed_loop_that_keeps_up_passes() {
        // Requests of 1 s; slots free at 1, 1, 2, 2, ...
        let records: Vec<(f64, f64, Option<f64>)> = (0..8)
            .map(|i| ((i / 2) as f64 * 1.0005, 1.0, Some(0.0)))
            .collect();
        let r = check(&account(None, Some(2), &records));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence_f64("waited"), Some(0.0));
    }

    /// The client sends each request 0.3 s after a slot freed, on 1 s requests: every
    /// request after the first two waited 0.3 s (30% of its latency).
    #[test]
    fn a_client_slower_than_its_closed_loop_fails() {
        // Slot frees at 1.0; next sent at 1.3, ends 2.3; and so on.
        let mut records = vec![(0.0, 1.0, None), (0.0, 1.0, None)];
        let mut t = 1.3;
        for _ in 0..6 {
            records.push((t, 1.0, None));
            records.push((t, 1.0, None));
            t += 1.3;
        }
        let r = check(&account(None, Some(2), &records));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence_f64("waited"), Some(12.0));
        assert_eq!(r.evidence_f64("wait_p50_s"), Some(0.3));
        assert_eq!(r.evidence_f64("latency_with_wait_p50_s"), Some(1.3));
        assert!(
            r.message.starts_with("12 of 14 requests waited"),
            "{}",
            r.message
        );
    }

    /// An open loop at 10 requests/s capped at one at a time, 0.5 s each: request i is
    /// due at 0.1 i and sent at 0.5 i, so it waited 0.4 i.
    #[test]
    fn an_open_loop_held_back_by_its_cap_fails() {
        let records: Vec<(f64, f64, Option<f64>)> = (0..10)
            .map(|i| (i as f64 * 0.5, 0.5, Some(i as f64 * 0.1)))
            .collect();
        let r = check(&account(Some(10.0), Some(1), &records));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        // Waits 0, 0.4, 0.8, ..., 3.6: all but the first beyond 50 ms and 10% of 0.5 s.
        assert_eq!(r.evidence_f64("waited"), Some(9.0));
        assert_eq!(r.evidence_str("loop"), Some("open"));
        assert!(!advice(&r).is_empty());
    }

    /// One request in twenty late by 0.2 s: a warning, not a failure.
    #[test]
    fn a_few_late_requests_warn() {
        let records: Vec<(f64, f64, Option<f64>)> = (0..20)
            .map(|i| {
                let due = i as f64;
                let late = if i == 7 { 0.2 } else { 0.0 };
                (due + late, 0.5, Some(due))
            })
            .collect();
        let r = check(&account(Some(1.0), None, &records));
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        assert_eq!(r.evidence_f64("waited"), Some(1.0));
    }

    /// A rate without a schedule in the file is Can't tell; no send times, or neither rate
    /// nor cap, is not checked.
    #[test]
    fn what_cannot_be_placed_is_cant_tell() {
        let no_schedule: Vec<(f64, f64, Option<f64>)> =
            (0..4).map(|i| (i as f64, 0.5, None)).collect();
        assert_eq!(
            check(&account(Some(2.0), None, &no_schedule)).status,
            Status::Unknown
        );
        // What the file lacks is not checked, and says what it needs.
        assert_eq!(
            check(&account(None, None, &no_schedule)).status,
            Status::NotChecked
        );
        let none = check(&account(None, Some(2), &[]));
        assert_eq!(none.status, Status::NotChecked);
        assert!(none.message.contains("--save-detailed"), "{}", none.message);
    }

    /// A failed request's end is unknown: it holds its slot, and no later request is
    /// said to have waited for it.
    #[test]
    fn a_request_without_an_end_never_makes_a_wait() {
        let mut a = account(None, Some(1), &[(0.0, 1.0, None), (5.0, 1.0, None)]);
        a.requests[0].outcome = Some(RequestOutcome::Failed);
        a.requests[0].latency_s = None.into();
        let r = check(&a);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }
}
