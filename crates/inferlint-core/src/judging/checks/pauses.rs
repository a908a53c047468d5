//! T1 on an engine that counts no pauses (TensorRT-LLM): the pauses its log shows, each
//! placed inside or outside the run the snapshots bracket.
//!
//! A merged log is written by several processes, each with its own output buffer: the
//! executor logs `MaxUtilizationScheduler: request ID N -> pause`, the HTTP server logs
//! one access line per answered request. Line order is therefore not time order, and a
//! pause line's position among the access lines proves nothing. A pause is left out of
//! the run only when something independent of line order proves it outside:
//!
//! - **the cache**: requests that together never needed more KV blocks than the pool
//!   holds cannot have caused a pause. The before snapshot's counters give the tokens of
//!   every request finished before the run (a probe, a warm-up); the counter deltas give
//!   the run's.
//! - **the request id**: the executor numbers requests in the order it receives them,
//!   from a start its table records, so the ids below `start + finished before the run`
//!   belong to requests that came before the run.
//! - **the time stamp**: where the pause line carries one and the log's clock can be
//!   lined up with the snapshots' (see `clock_offset`).
//! - **nothing after the run**: when no request was answered after the after snapshot,
//!   no pause can belong to later traffic.
//!
//! A pause that could belong to the run and is not proven to counts or makes the verdict
//! Can't tell; it never reads as no pause.

use std::collections::BTreeSet;

use super::counters::counter_value;
use crate::engine::EngineDescriptor;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, LogClock, LoggedPause, Snapshot};
use crate::story::fmt;

/// Seconds of clock disagreement tolerated between the log's stamps and the snapshots'
/// clocks, on top of the stamps' whole-second truncation.
const CLOCK_TOLERANCE_S: f64 = 2.0;

/// Every time zone in use is a whole number of quarter hours from UTC.
const ZONE_STEP_S: i64 = 900;

/// Where a pause can lie relative to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Before,
    Run,
    After,
}

/// What is known about the run's place in the log, gathered once.
#[derive(Debug)]
struct Facts {
    /// Requests finished by the before and by the after snapshot.
    before: u64,
    after: u64,
    answered_in_log: u64,
    /// The cache could not hold more than the requests before the run needed: no pause
    /// before the run. `Some(reason)` when proven.
    nothing_before: Option<String>,
    /// Likewise for the run's own requests.
    nothing_in_run: Option<String>,
    /// No request was answered after the after snapshot.
    nothing_after: bool,
    /// Request ids below this came before the run.
    first_run_id: Option<u64>,
    /// Log stamp minus UTC, when the log's clock lines up with the snapshots'.
    offset_s: Option<i64>,
    before_t: Option<(f64, f64)>,
    after_t: Option<(f64, f64)>,
}

/// T1 from the pauses of a TensorRT-LLM log, or `None` when the log cannot tell (no INFO
/// lines, or no answered request), and the caller falls back to the paused gauge.
pub(crate) fn from_log(
    engine: &EngineDescriptor,
    before: &Snapshot,
    after: &Snapshot,
    log: &BootFacts,
) -> Option<CheckResult> {
    let (pauses, served) = (log.pauses?, log.served_in_log?);
    let gauge = engine.paused_gauge.unwrap_or("");
    let base = |status, message: String| {
        CheckResult::new(Tripwire::T1, status, message)
            .with("engine", engine.key)
            .with("series", gauge)
    };
    let fragments = log.pause_fragments.len();
    let (Some(b), Some(a)) = (
        finished(engine, before).filter(|b| *b >= 0.0),
        finished(engine, after),
    ) else {
        return Some(whole_log(engine, log, pauses, served, base));
    };
    if a < b {
        return Some(whole_log(engine, log, pauses, served, base));
    }
    let (b, a) = (b as u64, a as u64);
    if served < a {
        return Some(
            base(
                Status::Unknown,
                format!(
                    "the server log has {served} answered requests, fewer than the {a} the server had finished by the after snapshot, so it does not cover the run; {} counts no pauses, so save its log until after the run",
                    engine.name
                ),
            )
            .with("served_in_log", served)
            .with("finished_by_after", a),
        );
    }
    let facts = Facts::gather(engine, before, after, log, b, a, served);
    let mut inside = Vec::new();
    let mut outside: Vec<(LoggedPause, &'static str)> = Vec::new();
    let mut unplaced: Vec<(LoggedPause, BTreeSet<Place>)> = Vec::new();
    for pause in &log.pause_lines {
        let (places, proof) = facts.places(pause);
        if places.len() == 1 && places.contains(&Place::Run) {
            inside.push(*pause);
        } else if !places.is_empty() && !places.contains(&Place::Run) {
            outside.push((*pause, proof));
        } else {
            unplaced.push((*pause, places));
        }
    }
    let served_in_run = a - b;
    let served_outside = served - served_in_run;
    let outside_text = left_out(&outside);
    let result = if !inside.is_empty() {
        let n = inside.len() as u64;
        let mut message = format!(
            "{n} request{} paused for recompute during the run, from the server log ({} counts none)",
            fmt::plural(n as f64),
            engine.name
        );
        if !outside.is_empty() {
            message.push_str(&format!(
                "; {} more outside the run ({outside_text}) left out",
                outside.len()
            ));
        }
        if !unplaced.is_empty() {
            message.push_str(&format!("; {} more could not be placed", unplaced.len()));
        }
        if fragments > 0 {
            message.push_str(&format!(
                "; {fragments} cut pause line{} could not be read",
                fmt::plural(fragments as f64)
            ));
        }
        base(Status::Fail, message).with("preemptions", n)
    } else if !unplaced.is_empty() || fragments > 0 {
        let mut reasons = Vec::new();
        if !unplaced.is_empty() {
            reasons.push(format!(
                "{} pause{} could belong to the run: {}",
                unplaced.len(),
                fmt::plural(unplaced.len() as f64),
                facts.why_unplaced(&unplaced)
            ));
        }
        if fragments > 0 {
            reasons.push(format!(
                "{fragments} line{} hold{} a cut pause line (a log cut mid-line, or two processes' output spliced) whose request cannot be read",
                fmt::plural(fragments as f64),
                if fragments == 1 { "s" } else { "" }
            ));
        }
        let mut message = format!(
            "{}; in a merged log line order is not time order, and {} counts no pauses",
            reasons.join("; "),
            engine.name
        );
        if !outside.is_empty() {
            message.push_str(&format!(
                "; {} more outside the run ({outside_text}) left out",
                outside.len()
            ));
        }
        base(Status::Unknown, message)
    } else {
        let mut message = format!(
            "no pause in the server log during the run, which covers its {served_in_run} answered requests"
        );
        if served_outside > 0 {
            message.push_str(&format!(
                " ({served_outside} answered outside the run, such as a probe's, left out)"
            ));
        }
        if !outside.is_empty() {
            message.push_str(&format!(
                "; {} pause{} outside the run left out ({outside_text})",
                outside.len(),
                fmt::plural(outside.len() as f64)
            ));
        }
        base(Status::Pass, message).with("preemptions", 0)
    };
    Some(
        result
            .with("paused_in_log", inside.len())
            .with("served_in_log", served_in_run)
            .with("paused_outside_run", outside.len())
            .with("paused_unplaced", unplaced.len())
            .with("pause_fragments", fragments)
            .with("served_outside_run", served_outside)
            .with("log_clock_offset_s", facts.offset_s),
    )
}

/// Requests the server had finished at a snapshot.
fn finished(engine: &EngineDescriptor, snapshot: &Snapshot) -> Option<f64> {
    snapshot
        .metrics
        .total(engine.request_success)
        .filter(|v| v.is_finite())
}

/// Without request counters the log cannot be lined up with the snapshots: every pause
/// in it counts, and a cut pause line makes the count unknown.
fn whole_log(
    engine: &EngineDescriptor,
    log: &BootFacts,
    pauses: u64,
    served: u64,
    base: impl Fn(Status, String) -> CheckResult,
) -> CheckResult {
    let fragments = log.pause_fragments.len();
    let result = if pauses > 0 {
        base(
            Status::Fail,
            format!(
                "{pauses} request{} paused for recompute during the run, from the server log ({} counts none)",
                fmt::plural(pauses as f64),
                engine.name
            ),
        )
        .with("preemptions", pauses)
    } else if fragments > 0 {
        base(
            Status::Unknown,
            format!(
                "{fragments} line{} of the server log hold{} a cut pause line whose request cannot be read; {} counts no pauses",
                fmt::plural(fragments as f64),
                if fragments == 1 { "s" } else { "" },
                engine.name
            ),
        )
    } else {
        base(
            Status::Pass,
            format!("no pause in the server log, which covers {served} answered requests"),
        )
        .with("preemptions", pauses)
    };
    result
        .with("paused_in_log", pauses)
        .with("served_in_log", served)
        .with("pause_fragments", fragments)
}

impl Facts {
    fn gather(
        engine: &EngineDescriptor,
        before: &Snapshot,
        after: &Snapshot,
        log: &BootFacts,
        b: u64,
        a: u64,
        served: u64,
    ) -> Facts {
        let tokens = |s: &Snapshot| {
            Some(
                counter_value(engine, s, engine.prompt_tokens)?
                    + counter_value(engine, s, engine.generation_tokens)?,
            )
            .filter(|t| t.is_finite() && *t >= 0.0)
        };
        let cache = log
            .kv_pool_tokens
            .zip(log.page_size)
            .filter(|(pool, block)| *pool > 0 && *block > 0);
        let nothing_before = cache.and_then(|(pool, block)| {
            let t = tokens(before)?;
            cannot_fill(t, b, pool, block).then(|| {
                format!(
                    "the {b} requests finished before the run needed {} tokens, less than the {}-token cache holds",
                    fmt::thousands_f(t),
                    fmt::thousands(pool as i64)
                )
            })
        });
        // The token counters move when a request finishes: the run's delta covers all its
        // requests only when none was still running, i.e. none was answered afterwards.
        let nothing_after = served == a;
        let nothing_in_run = cache.filter(|_| nothing_after).and_then(|(pool, block)| {
            let t = tokens(after)? - tokens(before)?;
            (t >= 0.0 && cannot_fill(t, a - b, pool, block)).then(|| {
                format!(
                    "the run's {} requests needed {} tokens, less than the {}-token cache holds",
                    a - b,
                    fmt::thousands_f(t),
                    fmt::thousands(pool as i64)
                )
            })
        });
        let first_run_id = engine
            .request_ids_start_at_max_batch_size
            .then_some(log.requested_running)
            .flatten()
            .filter(|_| {
                log.version
                    .as_deref()
                    .is_some_and(|v| engine.is_tested_version(v))
            })
            // Ids below the start would break the numbering this proof rests on.
            .filter(|start| log.pause_lines.iter().all(|p| p.request_id >= *start))
            .map(|start| start + b);
        let stamped = |s: &Snapshot| Some((s.t_wall?, s.latency_s.unwrap_or(0.0) / 2.0));
        Facts {
            before: b,
            after: a,
            answered_in_log: served,
            nothing_before,
            nothing_in_run,
            nothing_after,
            first_run_id,
            offset_s: log
                .log_clock
                .and_then(|clock| clock_offset(&clock, before, after)),
            before_t: stamped(before),
            after_t: stamped(after),
        }
    }

    /// Where a pause can lie, and the proof that took the run out when it did.
    fn places(&self, pause: &LoggedPause) -> (BTreeSet<Place>, &'static str) {
        let mut places: BTreeSet<Place> = [Place::Before, Place::Run, Place::After].into();
        let mut proof = "";
        if self.nothing_before.is_some() {
            places.remove(&Place::Before);
        }
        if self.nothing_after {
            places.remove(&Place::After);
        }
        if self.nothing_in_run.is_some() && places.remove(&Place::Run) {
            proof = "the run's requests could not fill the cache";
        }
        if let Some(first) = self.first_run_id {
            if pause.request_id < first && places.contains(&Place::Run) {
                places.retain(|p| *p == Place::Before);
                proof = "by request id";
            }
        }
        if let Some(at) = self.time_place(pause) {
            if places.contains(&Place::Run) && at != Place::Run {
                proof = "by time stamp";
            }
            places.retain(|p| *p == at);
        }
        (places, proof)
    }

    /// The place a pause's time stamp proves, where the log's clock lines up.
    fn time_place(&self, pause: &LoggedPause) -> Option<Place> {
        let local = pause.logged_at? as f64;
        let utc = local - self.offset_s? as f64;
        let (before, before_half) = self.before_t?;
        let (after, after_half) = self.after_t?;
        // A stamp is truncated to the second: the line was written in [utc, utc + 1).
        if utc + 1.0 + CLOCK_TOLERANCE_S <= before - before_half {
            Some(Place::Before)
        } else if utc - CLOCK_TOLERANCE_S >= after + after_half {
            Some(Place::After)
        } else if utc - CLOCK_TOLERANCE_S >= before + before_half
            && utc + 1.0 + CLOCK_TOLERANCE_S <= after - after_half
        {
            Some(Place::Run)
        } else {
            None
        }
    }

    /// Why the pauses that could be the run's were not placed.
    fn why_unplaced(&self, unplaced: &[(LoggedPause, BTreeSet<Place>)]) -> String {
        let possible = |p: Place| unplaced.iter().any(|(_, s)| s.contains(&p));
        let mut why = Vec::new();
        if unplaced.iter().any(|(_, s)| s.is_empty()) {
            why.push("the log's facts about them disagree".to_owned());
        }
        if possible(Place::Before) {
            why.push(format!(
                "the {} requests finished before the run could have filled the cache",
                self.before
            ));
        }
        if possible(Place::After) {
            why.push(format!(
                "{} requests were answered after the after snapshot",
                self.answered_in_log - self.after
            ));
        }
        if why.is_empty() {
            why.push("nothing places them".to_owned());
        }
        why.join(", and ")
    }
}

/// The proofs that left pauses out, named once each.
fn left_out(outside: &[(LoggedPause, &'static str)]) -> String {
    let proofs: BTreeSet<&str> = outside.iter().map(|(_, p)| *p).collect();
    let named: Vec<&str> = proofs.into_iter().filter(|p| !p.is_empty()).collect();
    if named.is_empty() {
        "a probe, a warm-up".to_owned()
    } else {
        named.join(", ")
    }
}

/// Whether requests holding `tokens` in all could never have needed more blocks than
/// the pool has, even all at once: each request wastes less than one block to rounding
/// and may reserve one more for the next step.
fn cannot_fill(tokens: f64, requests: u64, pool_tokens: u64, block: u64) -> bool {
    let block = block as f64;
    let needed = (tokens / block).ceil() + 2.0 * requests as f64;
    needed <= (pool_tokens as f64 / block).floor()
}

/// How the log's clock lines up with the snapshots'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockFit {
    /// Exactly one zone fits: the log's stamps minus UTC, in seconds.
    Offset(i64),
    /// Several zones fit, or the log gives no bound after the run.
    Unknown,
    /// No zone fits: the log's server stopped before the after snapshot was read, or its
    /// clock and the snapshots' disagree.
    Nowhere,
}

/// Lines the log's clock up with the snapshots'.
///
/// Engines stamp local time without a zone. The earliest stamp was written before the
/// before snapshot (the server booted first); when the HTTP server's shutdown is in the
/// log with dated lines after it, the latest stamp was written after the after snapshot
/// (the server answered that reading before it stopped). Zones are whole quarter hours
/// from UTC, so the offsets that fit both bounds are the candidates.
pub fn clock_fit(clock: &LogClock, before: &Snapshot, after: &Snapshot) -> ClockFit {
    let (Some(before_t), Some(after_t)) = (before.t_wall, after.t_wall) else {
        return ClockFit::Unknown;
    };
    if !(clock.stamped_after_shutdown && before_t.is_finite() && after_t.is_finite())
        || after_t < before_t
    {
        return ClockFit::Unknown;
    }
    let low = clock.earliest as f64 - before_t - CLOCK_TOLERANCE_S;
    let high = clock.latest as f64 + 1.0 - after_t + CLOCK_TOLERANCE_S;
    let first = (low / ZONE_STEP_S as f64).ceil() as i64;
    let last = (high / ZONE_STEP_S as f64).floor() as i64;
    match last - first {
        0 => ClockFit::Offset(first * ZONE_STEP_S),
        n if n < 0 => ClockFit::Nowhere,
        _ => ClockFit::Unknown,
    }
}

/// The log's stamps minus UTC, when exactly one zone fits.
fn clock_offset(clock: &LogClock, before: &Snapshot, after: &Snapshot) -> Option<i64> {
    match clock_fit(clock, before, after) {
        ClockFit::Offset(offset) => Some(offset),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::TRTLLM;
    use crate::testing::assert_unknown_saying;

    use crate::testing::trtllm_counters as snapshot;

    /// The shape of an xray run on TensorRT-LLM 1.3: a probe of 9 short requests, then 32
    /// requests of 88 + 1,000 tokens. `pool` is the KV cache in tokens (32 per block).
    fn log(pool: u64, pauses: &[(u64, Option<i64>)], answered: u64) -> BootFacts {
        BootFacts {
            version: Some("1.3.0rc29".into()),
            kv_pool_tokens: Some(pool),
            page_size: Some(32),
            requested_running: Some(32),
            pauses: Some(pauses.len() as u64),
            served_in_log: Some(answered),
            served_lines: (1..=answered as usize).collect(),
            pause_lines: pauses
                .iter()
                .enumerate()
                .map(|(i, &(request_id, logged_at))| LoggedPause {
                    lineno: 1000 + i,
                    request_id,
                    logged_at,
                })
                .collect(),
            ..BootFacts::default()
        }
    }

    const BEFORE_T: f64 = 1_790_844_234.36;
    const AFTER_T: f64 = 1_790_844_266.53;

    fn run_snapshots() -> (Snapshot, Snapshot) {
        (
            snapshot(BEFORE_T, 9.0, 63.0, 144.0),
            snapshot(AFTER_T, 41.0, 63.0 + 2816.0, 144.0 + 32_000.0),
        )
    }

    #[test]
    fn pauses_the_pool_makes_certain_count_wherever_the_lines_sit() {
        // 20,960 tokens hold 19 requests of 1,088; 32 ran. Whatever their position in the
        // file, the probe could not have caused these pauses and nothing was answered
        // after the run: they are the run's.
        let (before, after) = run_snapshots();
        let pauses: Vec<(u64, Option<i64>)> = (0..13).map(|i| (72 - i, None)).collect();
        let r = from_log(&TRTLLM, &before, &after, &log(20_960, &pauses, 41)).unwrap();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(r
            .message
            .starts_with("13 requests paused for recompute during the run"));
        assert_eq!(r.evidence["preemptions"], 13);
    }

    #[test]
    fn a_pause_that_could_be_after_the_run_is_not_a_pass() {
        // Two requests were answered after the after snapshot: the pause may be theirs or
        // the run's. Not proven outside, so never a pass.
        let (before, after) = run_snapshots();
        let r = from_log(&TRTLLM, &before, &after, &log(20_960, &[(80, None)], 43)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message
                .contains("2 requests were answered after the after snapshot"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_pause_of_a_request_before_the_run_is_left_out_by_its_id() {
        // A cache so small that the probe could fill it: request ids 32..40 were the
        // probe's (the executor numbers requests from max_batch_size).
        let (before, after) = run_snapshots();
        let r = from_log(&TRTLLM, &before, &after, &log(96, &[(35, None)], 41)).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(r
            .message
            .ends_with("; 1 pause outside the run left out (by request id)"));
        // An untested version numbers requests some other way, maybe: not proven.
        let mut other = log(96, &[(35, None)], 41);
        other.version = Some("1.4.0".into());
        let r = from_log(&TRTLLM, &before, &after, &other).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    #[test]
    fn a_pause_of_a_run_whose_requests_could_not_fill_the_cache_is_not_the_runs() {
        // A long warm-up before the run (100 requests, 200,000 tokens) could fill 20,960
        // tokens; the run's 4 short requests could not.
        let before = snapshot(BEFORE_T, 100.0, 100_000.0, 100_000.0);
        let after = snapshot(AFTER_T, 104.0, 100_200.0, 100_200.0);
        let mut facts = log(20_960, &[(70, None)], 104);
        facts.version = None;
        let r = from_log(&TRTLLM, &before, &after, &facts).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(
            r.message
                .ends_with("left out (the run's requests could not fill the cache)"),
            "{}",
            r.message
        );
    }

    #[test]
    fn a_pause_nothing_could_have_caused_makes_the_facts_disagree() {
        // 37,760 tokens hold the probe and all 32 run requests at full length, nothing was
        // answered after the run, and yet the log shows a pause: it cannot be placed.
        let (before, after) = run_snapshots();
        let r = from_log(&TRTLLM, &before, &after, &log(37_760, &[(50, None)], 41)).unwrap();
        assert_unknown_saying(&r, "the log's facts about them disagree");
    }

    #[test]
    fn time_stamps_place_pauses_once_the_log_clock_lines_up() {
        let (before, after) = run_snapshots();
        // The log's zone is UTC-7: stamps read 7 hours behind the snapshots' clock.
        let offset = -7 * 3600;
        let local = |utc: f64| (utc as i64) + offset;
        let mut facts = log(96, &[(60, Some(local(BEFORE_T - 30.0)))], 41);
        facts.version = Some("1.4.0".into());
        facts.log_clock = Some(LogClock {
            earliest: local(BEFORE_T - 120.0),
            latest: local(AFTER_T + 1.0),
            stamped_after_shutdown: true,
        });
        let r = from_log(&TRTLLM, &before, &after, &facts).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(r.evidence["log_clock_offset_s"], offset);
        assert!(r.message.ends_with("(by time stamp)"), "{}", r.message);
        facts.pause_lines[0].logged_at = Some(local(BEFORE_T + 10.0));
        let r = from_log(&TRTLLM, &before, &after, &facts).unwrap();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        // Without the shutdown in the log, the latest stamp bounds nothing.
        facts.log_clock.as_mut().unwrap().stamped_after_shutdown = false;
        let r = from_log(&TRTLLM, &before, &after, &facts).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    #[test]
    fn a_cut_pause_line_is_never_no_pause() {
        let (before, after) = run_snapshots();
        let mut facts = log(20_960, &[], 41);
        facts.pause_fragments = vec![612];
        let r = from_log(&TRTLLM, &before, &after, &facts).unwrap();
        assert_unknown_saying(&r, "1 line holds a cut pause line");
    }

    #[test]
    fn clock_offsets_need_one_quarter_hour_to_fit() {
        let (before, after) = run_snapshots();
        let clock = |earliest: f64, latest: f64| LogClock {
            earliest: earliest as i64,
            latest: latest as i64,
            stamped_after_shutdown: true,
        };
        assert_eq!(
            clock_offset(&clock(BEFORE_T - 60.0, AFTER_T + 1.0), &before, &after),
            Some(0)
        );
        assert_eq!(
            clock_offset(
                &clock(BEFORE_T - 60.0 + 19_800.0, AFTER_T + 19_801.0),
                &before,
                &after
            ),
            Some(19_800),
            "UTC+5:30"
        );
        // A log that spans hours fits many zones.
        assert_eq!(
            clock_fit(&clock(BEFORE_T - 7200.0, AFTER_T + 1.0), &before, &after),
            ClockFit::Unknown
        );
        // A log whose server stopped ten minutes before the run began fits none.
        assert_eq!(
            clock_fit(&clock(BEFORE_T - 700.0, BEFORE_T - 600.0), &before, &after),
            ClockFit::Nowhere
        );
    }

    #[test]
    fn cache_bounds() {
        // 9 requests of 23 tokens in 1,180 blocks of 32: far from full.
        assert!(cannot_fill(207.0, 9, 37_760, 32));
        // 32 requests of 1,088 tokens need 1,088 blocks plus slack: more than 655.
        assert!(!cannot_fill(34_816.0, 32, 20_960, 32));
        assert!(cannot_fill(34_816.0, 32, 37_760, 32));
    }
}
