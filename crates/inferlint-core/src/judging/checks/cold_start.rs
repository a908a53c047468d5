//! T19: the run measured an engine that was still warming up.
//!
//! An engine compiles kernels and captures CUDA graphs at start-up, but not for every
//! shape: the first requests of a new size can trigger a just-in-time compile (vLLM's
//! kernel JIT monitor logs `Triton kernel JIT compilation during inference`), a lazily
//! captured graph, an autotuner run. A benchmark that times its first requests without an
//! untimed warm-up pays for that inside its numbers: first-wave time to first token of
//! 40 s against 1 s afterwards has been reported. T19 looks at three things:
//!
//! - compile and graph-capture lines the boot log shows after the ready line, placed
//!   inside or outside the run by their time stamps (a line that cannot be placed is
//!   Can't tell, never a pass);
//! - the load tool's records: the first wave of requests against the rest;
//! - whether anything warmed the engine before the timed requests: requests the server
//!   had answered before the run (a probe, an earlier run), or the load's own untimed
//!   request.

use crate::engine::EngineDescriptor;
use crate::judging::checks::counters::counter_value;
use crate::judging::checks::pauses::{clock_fit, ClockFit};
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::client::ClientAccount;
use crate::model::{BootFacts, ServingCompile, Snapshot};
use crate::story::fmt;

/// A first wave slower than the rest by this factor, and by [`SLOWER_BY_S`] at least, is
/// a cold start, unless its own prefill explains it.
pub const SLOWER_FACTOR: f64 = 5.0;
/// See [`SLOWER_FACTOR`]: the first wave's TTFT exceeds the rest's by this many seconds.
pub const SLOWER_BY_S: f64 = 2.0;
/// The longest a server takes from its process start to its first log line with a date
/// (imports, a container's entry point): bounds the log's time zone from the process
/// start time the metrics give.
pub const MAX_START_DELAY_S: f64 = 600.0;
/// Seconds of disagreement tolerated between the log's stamps and the snapshots' clocks,
/// on top of the stamps' whole-second truncation.
const TOLERANCE_S: f64 = 2.0;
/// Every time zone in use is a whole number of quarter hours from UTC.
const ZONE_STEP_S: f64 = 900.0;

/// The Prometheus client's process collector: the serving process's start, Unix seconds.
pub const PROCESS_START: &str = "process_start_time_seconds";

/// What T19 reads.
#[derive(Debug, Clone, Copy)]
pub struct ColdStartInputs<'a> {
    /// The engine's table: its finished-requests counter.
    pub engine: &'a EngineDescriptor,
    /// The boot log's facts, with its compile lines after the ready line.
    pub boot: Option<&'a BootFacts>,
    /// The before reading, whose clocks place the run's start.
    pub before: Option<&'a Snapshot>,
    /// The after reading, whose clocks place the run's end.
    pub after: Option<&'a Snapshot>,
    /// The load tool's account, with its per-request records where it kept them.
    pub client: Option<&'a ClientAccount>,
    /// Untimed requests the load tool sent before its timed run (a test request).
    pub untimed: u64,
    /// The concurrency the load asked for: the size of its first wave.
    pub requested: Option<u64>,
    /// The log is the live output of a server still running: it covers the run.
    pub live_log: bool,
}

/// Where a compile line lies relative to the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Placed {
    /// Stamped at or before the ready line: start-up work, buffered past it in the file.
    StartUp,
    /// Stamped after the ready line, before the before reading.
    Before,
    /// Stamped between the before and after readings.
    Run,
    /// Stamped after the after reading.
    After,
    /// Not placed against the run, and why.
    Unplaced(String),
}

/// The log's stamps minus UTC, from the snapshots' clocks (the log covers them) or from
/// the server's process start (its first dated line comes within minutes of it).
pub fn log_offset(boot: &BootFacts, before: &Snapshot, after: &Snapshot) -> Result<i64, String> {
    if let Some(clock) = boot.log_clock {
        if let ClockFit::Offset(offset) = clock_fit(&clock, before, after) {
            return Ok(offset);
        }
    }
    let start = [before, after]
        .iter()
        .find_map(|s| s.metrics.single(PROCESS_START).ok().flatten())
        .filter(|t| t.is_finite() && *t > 0.0);
    let Some(start) = start else {
        return Err(format!(
            "the log's time zone cannot be found: the log does not run past the after snapshot, and the snapshots have no {PROCESS_START}"
        ));
    };
    let earliest = match (boot.log_clock, boot.first_time) {
        (Some(clock), _) => clock.earliest,
        (None, Some(first)) => first.naive_seconds(start),
        (None, None) => return Err("the log's lines carry no time stamp".into()),
    };
    // earliest - offset lies between the start and MAX_START_DELAY_S after it.
    let high = earliest as f64 - start + TOLERANCE_S;
    let low = earliest as f64 - start - MAX_START_DELAY_S;
    let first = (low / ZONE_STEP_S).ceil() as i64;
    let last = (high / ZONE_STEP_S).floor() as i64;
    match last - first {
        0 => Ok(first * ZONE_STEP_S as i64),
        n if n < 0 => Err(format!(
            "the log's first stamp fits no time zone against the server's {PROCESS_START}: the log is of another start"
        )),
        _ => Err("the log's time zone cannot be told from the server's process start".into()),
    }
}

/// Whether the log runs to the end of the run, or why it is not known to: the HTTP
/// server's shutdown is in it, it answered every request the server had finished by the
/// after reading, or its last stamp falls after that reading.
pub fn log_coverage(
    engine: &EngineDescriptor,
    boot: &BootFacts,
    window: Option<(&Snapshot, &Snapshot)>,
    offset: &Result<i64, String>,
) -> Result<(), String> {
    if boot.shutdown_lineno.is_some() {
        return Ok(());
    }
    let Some((before, after)) = window else {
        return Err(
            "there are no before and after readings to tell whether the log covers the run".into(),
        );
    };
    let finished = counter_value(engine, after, engine.request_success);
    if let (Some(served), Some(finished)) = (boot.served_in_log, finished) {
        if served as f64 >= finished {
            return Ok(());
        }
    }
    let (Some(last), Some(end), Ok(offset)) = (boot.last_time, after.t_wall, offset) else {
        return Err("the log has no shutdown line and its clock cannot be lined up with the readings, so whether it covers the run is unknown".into());
    };
    let last_utc = (last.naive_seconds(before.t_wall.unwrap_or(end)) - offset) as f64;
    if last_utc + 1.0 + TOLERANCE_S >= end {
        Ok(())
    } else {
        Err(format!(
            "the log ends {:.0} s before the after reading (it was copied while the server ran)",
            end - last_utc - 1.0
        ))
    }
}

/// Places one compile line relative to the run the snapshots bracket.
pub fn place(
    line: &ServingCompile,
    boot: &BootFacts,
    window: Option<(&Snapshot, &Snapshot)>,
    offset: &Result<i64, String>,
) -> Placed {
    let Some(stamp) = line.logged_at else {
        return Placed::Unplaced("it carries no time stamp".into());
    };
    // Stamps without a year take the one nearest the run, or nearest the ready line.
    let near = window.and_then(|(before, _)| before.t_wall).unwrap_or(0.0);
    let at = stamp.naive_seconds(near);
    if boot
        .ready_time
        .is_some_and(|ready| at <= ready.naive_seconds(near))
    {
        return Placed::StartUp;
    }
    let Some((before, after)) = window else {
        return Placed::Unplaced(
            "there are no before and after readings to place it against".into(),
        );
    };
    // Across a wall step the window holds both readings of it (`model::window`): a
    // line is placed outside the run only where neither puts it inside.
    let Some((start, end)) = crate::model::window(Some(before), Some(after)) else {
        return Placed::Unplaced("the readings carry no wall clock".into());
    };
    let offset = match offset {
        Ok(o) => *o,
        Err(why) => return Placed::Unplaced(why.clone()),
    };
    let utc = (at - offset) as f64;
    // A stamp is truncated to the second: the line was written in [utc, utc + 1).
    if utc + 1.0 + TOLERANCE_S < start {
        Placed::Before
    } else if utc - TOLERANCE_S > end {
        Placed::After
    } else if utc >= start && utc + 1.0 <= end {
        Placed::Run
    } else {
        Placed::Unplaced("it was logged within seconds of a reading".into())
    }
}

fn t19(status: Status, message: String) -> CheckResult {
    CheckResult::new(Tripwire::T19, status, message)
}

/// The first wave's and the rest's median time to first token, from the load tool's
/// records, and whether the first wave's own prefill explains the difference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waves {
    /// Requests in the first wave.
    pub first_size: usize,
    /// The first wave's median time to first token, in seconds.
    pub first_ttft_s: f64,
    /// The rest's median time to first token, in seconds.
    pub rest_ttft_s: f64,
    /// The most the first wave's TTFT could be from prefilling its own prompts at the
    /// rate the rest were prefilled, where the records give prompt lengths.
    pub burst_bound_s: Option<f64>,
}

impl Waves {
    /// Whether the first wave was far slower than the rest, beyond its own prefill.
    pub fn cold(&self) -> bool {
        self.first_ttft_s >= SLOWER_FACTOR * self.rest_ttft_s
            && self.first_ttft_s - self.rest_ttft_s >= SLOWER_BY_S
            && self.burst_bound_s.is_none_or(|b| self.first_ttft_s > b)
    }
}

/// Each completed request's time to first token, in the order the load tool sent them
/// (its send times, else the order it wrote them in), with its prompt length where the
/// record keeps it.
pub fn first_token_waits(client: &ClientAccount) -> Vec<(f64, Option<u64>)> {
    let mut records: Vec<(f64, f64, Option<u64>)> = client
        .requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.completed())
        .filter_map(|(i, r)| {
            let ttft = r
                .ttft_s
                .get()
                .or_else(|| Some(r.first_token_at()? - r.sent_s.get()?))?;
            let order = r.sent_s.get().unwrap_or(i as f64);
            (order.is_finite() && ttft.is_finite() && ttft >= 0.0).then_some((
                order,
                ttft,
                r.prompt_tokens.get(),
            ))
        })
        .collect();
    records.sort_by(|a, b| a.0.total_cmp(&b.0));
    records.into_iter().map(|(_, t, p)| (t, p)).collect()
}

/// The first `first_size` requests against the rest, from [`first_token_waits`]; `None`
/// with fewer than four requests or none after the first wave.
pub fn waves_of(waits: &[(f64, Option<u64>)], first_size: usize) -> Option<Waves> {
    if waits.len() < 4 || first_size == 0 || waits.len() <= first_size {
        return None;
    }
    let (first, rest) = waits.split_at(first_size);
    let first_ttft_s = fmt::median(&mut first.iter().map(|r| r.0).collect::<Vec<_>>())?;
    let rest_ttft_s = fmt::median(&mut rest.iter().map(|r| r.0).collect::<Vec<_>>())?;
    // The rest's prefill rate (tokens per second of TTFT), and the time the first wave's
    // prompts would take at that rate, one after another.
    let burst_bound_s = (|| {
        let mut rates: Vec<f64> = rest
            .iter()
            .map(|r| Some(r.1? as f64 / r.0.max(1e-3)))
            .collect::<Option<_>>()?;
        let rate = fmt::median(&mut rates).filter(|r| *r > 0.0)?;
        let tokens: u64 = first.iter().map(|r| r.1).sum::<Option<u64>>()?;
        Some(tokens as f64 / rate)
    })();
    Some(Waves {
        first_size,
        first_ttft_s,
        rest_ttft_s,
        burst_bound_s,
    })
}

/// The first wave (the first `wave` requests sent, at most half of them) against the
/// rest, as T19 judges them.
pub fn waves(client: &ClientAccount, wave: u64) -> Option<Waves> {
    let waits = first_token_waits(client);
    let first_size = (wave.max(1) as usize).min(waits.len() / 2);
    waves_of(&waits, first_size)
}

/// Requests the server had finished at the before reading, where its counter says.
fn answered_before(inputs: &ColdStartInputs<'_>) -> Option<f64> {
    inputs
        .before
        .and_then(|b| counter_value(inputs.engine, b, inputs.engine.request_success))
        .filter(|n| n.is_finite() && *n >= 0.0)
}

/// What warmed the engine before the timed requests, in words, or `None` when nothing
/// shows it was.
fn warmed_by(inputs: &ColdStartInputs<'_>) -> Option<String> {
    if let Some(n) = answered_before(inputs).filter(|n| *n > 0.0) {
        return Some(format!(
            "the server had answered {} request{} before the run",
            fmt::thousands_f(n),
            fmt::plural(n)
        ));
    }
    let announced = inputs
        .client
        .and_then(|c| c.span.untimed_requests)
        .unwrap_or(0)
        .max(inputs.untimed);
    if announced > 0 {
        return Some(format!(
            "the load sent {announced} untimed request{} first",
            fmt::plural(announced as f64)
        ));
    }
    if let Some(w) = inputs
        .client
        .and_then(|c| c.span.warmup_s)
        .filter(|w| *w > 0.0)
    {
        return Some(format!(
            "the load left its first {} s out of its figures",
            fmt::g(w)
        ));
    }
    None
}

/// T19, or `None` when nothing the run gave could show a cold start (no boot log, no
/// before reading and no load tool records): the caller lists it as not checked.
pub fn cold_start(inputs: &ColdStartInputs<'_>) -> Option<CheckResult> {
    let boot = inputs.boot;
    let window = inputs.before.zip(inputs.after);
    let warm = warmed_by(inputs);
    let waves = inputs.client.and_then(|c| {
        waves(
            c,
            inputs
                .requested
                .or(c.max_concurrency.and_then(|m| u64::try_from(m).ok()))
                .unwrap_or(1),
        )
    });
    let mut inside: Vec<&ServingCompile> = Vec::new();
    let mut unplaced: Vec<(&ServingCompile, String)> = Vec::new();
    let mut outside = 0usize;
    let mut uncovered: Option<String> = None;
    if let Some(boot) = boot {
        let offset = match window {
            Some((b, a)) => log_offset(boot, b, a),
            None => Err("there are no before and after readings".into()),
        };
        if !inputs.live_log {
            uncovered = log_coverage(inputs.engine, boot, window, &offset).err();
        }
        for line in &boot.serving_compiles {
            match place(line, boot, window, &offset) {
                Placed::Run => inside.push(line),
                Placed::Unplaced(why) => unplaced.push((line, why)),
                _ => outside += 1,
            }
        }
    }
    let more = boot.map_or(0, |b| {
        b.serving_compiles_total
            .saturating_sub(b.serving_compiles.len())
    });
    let evidence = |r: CheckResult| {
        let mut r = r
            .with("compiles_in_run", inside.len())
            .with("compiles_unplaced", unplaced.len())
            .with("compiles_outside_run", outside)
            .with("warmed_by", warm.clone());
        if let Some(w) = waves {
            r = r
                .with("first_wave", w.first_size)
                .with("first_wave_ttft_s", w.first_ttft_s)
                .with("rest_ttft_s", w.rest_ttft_s)
                .with("first_wave_prefill_bound_s", w.burst_bound_s);
        }
        r
    };
    let line_words = |line: &ServingCompile| format!("line {}: {}", line.lineno, line.text);
    if let Some(first) = inside.first() {
        let n = inside.len();
        return Some(
            evidence(t19(
                Status::Fail,
                format!(
                    "{n} compile or graph-capture line{} logged during the run ({}): the run timed the engine while it compiled",
                    fmt::plural(n as f64),
                    line_words(first)
                ),
            ))
            .with("first_line", first.lineno),
        );
    }
    if let Some(w) = waves.filter(Waves::cold) {
        return Some(evidence(t19(
            Status::Fail,
            format!(
                "the first {} requests waited {} s for their first token (median), the rest {} s: the first wave paid for a cold engine",
                w.first_size,
                fmt::g((w.first_ttft_s * 100.0).round() / 100.0),
                fmt::g((w.rest_ttft_s * 100.0).round() / 100.0)
            ),
        )));
    }
    if let (Some(why), true) = (&uncovered, unplaced.is_empty()) {
        return Some(evidence(t19(
            Status::Unknown,
            format!("no compile line inside the run in the log, but {why}: a compile after the log's end would not be in it"),
        )));
    }
    if let Some((line, why)) = unplaced.first() {
        let n = unplaced.len() + more;
        return Some(
            evidence(t19(
                Status::Unknown,
                format!(
                    "{n} compile or graph-capture line{} after the ready line could not be placed inside or outside the run ({}: {why})",
                    fmt::plural(n as f64),
                    line_words(line)
                ),
            ))
            .with("first_line", line.lineno),
        );
    }
    let waves_words = waves.map(|w| {
        format!(
            "the first {} requests waited {} s for their first token (median), the rest {} s",
            w.first_size,
            fmt::g((w.first_ttft_s * 100.0).round() / 100.0),
            fmt::g((w.rest_ttft_s * 100.0).round() / 100.0)
        )
    });
    let compile_words = match (boot, outside) {
        (Some(_), 0) => Some("no compile or graph-capture line after the ready line".to_owned()),
        (Some(_), n) => Some(format!(
            "{n} compile or graph-capture line{} after the ready line, all outside the run",
            fmt::plural(n as f64)
        )),
        (None, _) => None,
    };
    let cold = warm.is_none() && is_cold(inputs);
    if cold && waves.is_none() {
        let mut message = "no untimed warm-up: the run's first requests were the first the server answered, so they may have paid for compiles and first-use work the engine defers".to_owned();
        if let Some(c) = &compile_words {
            message.push_str(&format!(" ({c}, but not every compile is logged)"));
        }
        return Some(evidence(t19(Status::Warn, message)));
    }
    // Neither the log nor the records could show the trap itself.
    if boot.is_none() && waves.is_none() {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    parts.extend(compile_words);
    parts.extend(waves_words);
    let lead = match (&warm, cold) {
        (Some(by), _) => format!("warm: {by}"),
        (None, true) => {
            "no untimed warm-up, but the first requests were no slower than the rest".into()
        }
        (None, false) => {
            parts.push("whether anything warmed the engine before the run is unknown".into());
            parts.remove(0)
        }
    };
    parts.insert(0, lead);
    Some(evidence(t19(Status::Pass, parts.join("; "))))
}

/// Whether nothing warmed the engine: the server had answered no request at the before
/// reading, and the load tool's account shows no untimed request.
fn is_cold(inputs: &ColdStartInputs<'_>) -> bool {
    answered_before(inputs) == Some(0.0) && inputs.client.is_some() && inputs.untimed == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::model::civil::days_from_civil;
    use crate::model::client::{ClientRequest, LoadTool, RequestOutcome};
    use crate::model::{LogClock, LogTime};
    use crate::testing::sample;

    const BEFORE_T: f64 = 1_790_826_427.68;
    const AFTER_T: f64 = 1_790_826_529.27;
    /// UTC-7, as the recorded vLLM 0.28 xray run's log.
    const ZONE: i64 = -25_200;

    fn snapshot(t_wall: f64, finished: f64, start: Option<f64>) -> Snapshot {
        let mut samples = vec![sample(
            VLLM.request_success,
            &[("finished_reason", "length")],
            finished,
        )];
        samples.extend(start.map(|start| sample(PROCESS_START, &[], start)));
        crate::testing::snapshot(Some(t_wall), samples)
    }

    /// A vLLM stamp (no year) of a naive time.
    fn stamp(naive: i64) -> LogTime {
        let days = naive.div_euclid(86_400);
        // 2026-09-30 is day 20,726 since 1970.
        let day_of_sept = days - days_from_civil(2026, 9, 1) + 1;
        assert!(
            (1..=30).contains(&day_of_sept),
            "test times stay in September 2026"
        );
        LogTime {
            year: None,
            month: 9,
            day: day_of_sept as u8,
            second_of_day: naive.rem_euclid(86_400) as u32,
        }
    }

    fn boot(compiles: &[i64]) -> BootFacts {
        let start = 1_790_826_289.69;
        BootFacts {
            first_time: Some(stamp(start as i64 + 8 + ZONE)),
            ready_time: Some(stamp(BEFORE_T as i64 - 20 + ZONE)),
            serving_compiles: compiles
                .iter()
                .enumerate()
                .map(|(i, t)| ServingCompile {
                    lineno: 200 + i,
                    logged_at: Some(stamp(*t + ZONE)),
                    text: "Triton kernel JIT compilation during inference: _topk_topp_kernel."
                        .into(),
                })
                .collect(),
            serving_compiles_total: compiles.len(),
            shutdown_lineno: Some(400),
            ..BootFacts::default()
        }
    }

    fn inputs<'a>(
        boot: &'a BootFacts,
        before: &'a Snapshot,
        after: &'a Snapshot,
    ) -> ColdStartInputs<'a> {
        ColdStartInputs {
            engine: &VLLM,
            boot: Some(boot),
            before: Some(before),
            after: Some(after),
            client: None,
            untimed: 1,
            requested: Some(32),
            live_log: false,
        }
    }

    /// The recorded vLLM 0.28 xray run: two kernel JIT compilations 7 and 23 s into the
    /// run, placed by the process start time (its log ends without dated lines after the
    /// shutdown, so the snapshots alone do not fix the zone).
    #[test]
    fn jit_compiles_during_the_run_fail() {
        let start = Some(1_790_826_289.69);
        let (before, after) = (
            snapshot(BEFORE_T, 9.0, start),
            snapshot(AFTER_T, 41.0, start),
        );
        let b = boot(&[BEFORE_T as i64 + 7, BEFORE_T as i64 + 23]);
        let r = cold_start(&inputs(&b, &before, &after)).unwrap();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence["compiles_in_run"], 2);
        // Without the process start the zone is unknown: never a pass.
        let (before, after) = (snapshot(BEFORE_T, 9.0, None), snapshot(AFTER_T, 41.0, None));
        let r = cold_start(&inputs(&b, &before, &after)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
    }

    #[test]
    fn compiles_before_the_run_and_a_warm_engine_pass() {
        let start = Some(1_790_826_289.69);
        let (before, after) = (
            snapshot(BEFORE_T, 9.0, start),
            snapshot(AFTER_T, 41.0, start),
        );
        let b = boot(&[BEFORE_T as i64 - 10]);
        let r = cold_start(&inputs(&b, &before, &after)).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(
            r.message
                .starts_with("warm: the server had answered 9 requests before the run"),
            "{}",
            r.message
        );
    }

    #[test]
    fn no_warm_up_at_all_warns() {
        let (before, after) = (snapshot(BEFORE_T, 0.0, None), snapshot(AFTER_T, 32.0, None));
        let b = boot(&[]);
        let summary_only = ClientAccount::new(LoadTool::VllmBench);
        let mut i = inputs(&b, &before, &after);
        i.untimed = 0;
        i.client = Some(&summary_only);
        let r = cold_start(&i).unwrap();
        assert_eq!(r.status, Status::Warn, "{}", r.message);
        // Without the load tool's account, an untimed request may have been sent: the
        // compile lines decide, and the warm-up is said to be unknown.
        i.client = None;
        let r = cold_start(&i).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(r.message.contains("is unknown"), "{}", r.message);
        // Neither a log nor records: nothing could show the trap.
        i.boot = None;
        assert_eq!(cold_start(&i), None);
    }

    fn client(ttfts: &[f64], prompt: u64) -> ClientAccount {
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        account.requests = ttfts
            .iter()
            .enumerate()
            .map(|(i, ttft)| ClientRequest {
                outcome: Some(RequestOutcome::Completed),
                sent_s: Some(i as f64 * 0.5).into(),
                ttft_s: Some(*ttft).into(),
                prompt_tokens: Some(prompt).into(),
                ..ClientRequest::default()
            })
            .collect();
        account
    }

    #[test]
    fn a_first_wave_far_slower_than_the_rest_fails_unless_its_prefill_explains_it() {
        // 4 requests waited 40 s, the other 12 about 1 s: a cold start.
        let mut ttfts = vec![40.0, 41.0, 42.0, 40.5];
        ttfts.extend(std::iter::repeat_n(1.0, 12));
        let cold = client(&ttfts, 1_000);
        let w = waves(&cold, 4).unwrap();
        assert!(w.cold(), "{w:?}");
        // 16 sent at once wait for each other's prefill: 0.5 s each, one after another,
        // while the later ones waited 0.5 s alone. Slower, but by their own prefill.
        let mut burst: Vec<f64> = (1..=16).map(|i| f64::from(i) * 0.5).collect();
        burst.extend(std::iter::repeat_n(0.5, 16));
        let burst = waves(&client(&burst, 1_000), 16).unwrap();
        assert!(
            burst.first_ttft_s >= SLOWER_FACTOR * burst.rest_ttft_s,
            "{burst:?}"
        );
        assert!(!burst.cold(), "{burst:?}");
        let even = client(&[1.0; 16], 1_000);
        assert!(!waves(&even, 4).unwrap().cold());
        let (before, after) = (snapshot(BEFORE_T, 0.0, None), snapshot(AFTER_T, 16.0, None));
        let b = boot(&[]);
        let mut i = inputs(&b, &before, &after);
        i.client = Some(&cold);
        i.requested = Some(4);
        let r = cold_start(&i).unwrap();
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        i.client = Some(&even);
        i.untimed = 0;
        let r = cold_start(&i).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    /// The tests' stamps: a year-less stamp takes the year nearest the reading, and a
    /// log with dates (SGLang, TensorRT-LLM) places by its own clock.
    #[test]
    fn yearless_stamps_take_the_nearest_year() {
        let t = stamp(BEFORE_T as i64 + ZONE);
        assert_eq!(t.naive_seconds(BEFORE_T), BEFORE_T as i64 + ZONE);
        let dated = LogTime {
            year: Some(2026),
            ..t
        };
        assert_eq!(dated.naive_seconds(0.0), BEFORE_T as i64 + ZONE);
        let with_clock = BootFacts {
            log_clock: Some(LogClock {
                earliest: 1_790_826_297 + ZONE,
                latest: AFTER_T as i64 + ZONE,
                stamped_after_shutdown: false,
            }),
            ..BootFacts::default()
        };
        let start = Some(1_790_826_289.69);
        let (before, after) = (
            snapshot(BEFORE_T, 9.0, start),
            snapshot(AFTER_T, 41.0, start),
        );
        assert_eq!(log_offset(&with_clock, &before, &after), Ok(ZONE));
    }

    /// A log copied while the server still answered ends inside the run: no compile line
    /// in it is not a pass.
    #[test]
    fn a_log_that_ends_inside_the_run_is_not_a_pass() {
        let start = Some(1_790_826_289.69);
        let (before, after) = (
            snapshot(BEFORE_T, 9.0, start),
            snapshot(AFTER_T, 41.0, start),
        );
        let mut cut = boot(&[]);
        cut.shutdown_lineno = None;
        cut.last_time = Some(stamp(BEFORE_T as i64 + 30 + ZONE));
        let r = cold_start(&inputs(&cut, &before, &after)).unwrap();
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message
                .contains("the log ends 71 s before the after reading"),
            "{}",
            r.message
        );
        // The live output of a server still running covers the run by construction.
        let mut live = inputs(&cut, &before, &after);
        live.live_log = true;
        assert_eq!(cold_start(&live).map(|r| r.status), Some(Status::Pass));
        // Stamped past the after reading, it covers the run.
        cut.last_time = Some(stamp(AFTER_T as i64 + 20 + ZONE));
        let r = cold_start(&inputs(&cut, &before, &after)).unwrap();
        assert_eq!(r.status, Status::Pass, "{}", r.message);
    }

    #[test]
    fn a_line_stamped_before_ready_is_start_up_work() {
        let b = boot(&[]);
        let line = ServingCompile {
            lineno: 90,
            logged_at: b.ready_time,
            text: "Capturing CUDA graphs".into(),
        };
        assert_eq!(place(&line, &b, None, &Err("x".into())), Placed::StartUp);
    }
}
