//! Cross-checks: two facts of one run that cannot both be true.
//!
//! Each check reads its own evidence. When two pieces of independent evidence about the
//! same run contradict each other, at least one of them is wrong, and a verdict built on
//! either cannot be trusted: the affected verdict becomes Can't tell, naming both facts.
//! A rule never turns a verdict into a pass, and a verdict that already says Can't tell
//! or Does not apply is left alone.
//!
//! Each rule is a function of the run and the results, returning the contradiction it
//! found; [`apply`] runs them all. The rules:
//!
//! - [`cache_must_have_overflowed`]: the KV arithmetic says requests must have been paused
//!   or retracted, while T1, whose "none" rests on a log or on a counter's absence, found
//!   none.
//! - [`series_counters_disagree`], [`series_tokens_disagree`]: a counter read later in
//!   the series or the snapshots is lower than one read earlier (by the wall clock, so
//!   not across a wall step, which leaves no order to read).
//! - [`aborted_requests_moved`]: the server's finished count disagrees with (or matches)
//!   the load tool's while its abort counter moved, so the comparison says nothing.
//! - [`series_outside_the_run`]: the series was recorded outside the snapshots' window.
//! - [`load_outlasted_the_snapshots`]: the load tool ran longer than the snapshots are
//!   apart, so they do not bracket the run.
//! - [`peak_above_the_servers_cap`]: the series shows more requests running than the boot
//!   log says the server runs at once.
//! - [`log_counts_more_than_the_counter`]: the server log shows more retractions than its
//!   counter ever counted.
//! - [`log_stopped_before_the_run`]: the server log's shutdown came before the after
//!   snapshot was read, under every time zone (T1 and T19 read that log).
//! - [`log_of_another_process`]: the snapshots' metrics name server processes the log
//!   never mentions (T1 and T19 read that log).
//! - [`tokens_still_running`]: T10 measured tokens an engine counts at finish while the
//!   after snapshot shows requests still running.
//! - [`gauges_behind_the_clients_records`]: T8 failed on a peak the recording read, while
//!   the load's own records show it kept the concurrency asked for open long enough for
//!   the recording to have seen it.

use serde_json::json;

use crate::engine::EngineDescriptor;
use crate::judging::checks::counters::counter_summary;
use crate::judging::checks::counters::counter_value;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, PyValue, Snapshot};
use crate::run::model::Run;
use crate::story::fmt;

/// Seconds two clocks of one host may disagree by before an order between readings is
/// trusted: a reading is taken over a request's latency, and its midpoint is stored.
const ORDER_TOLERANCE_S: f64 = 0.5;

/// Seconds the load tool's duration may exceed the snapshots' span (its timer and the
/// snapshots' clocks are read by different programs).
const SPAN_TOLERANCE_S: f64 = 1.0;

/// Two facts of one run that cannot both be true, and the verdicts they undermine.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    /// The rule's name, as the evidence records it.
    pub rule: &'static str,
    /// The tripwires whose verdicts it makes Can't tell.
    pub affected: Vec<Tripwire>,
    /// What one piece of evidence says.
    pub first: String,
    /// What the other says.
    pub second: String,
    /// Whether a failed verdict is undermined too (its count rests on the same facts).
    pub undermines_failure: bool,
}

/// A cross-check: the contradiction it finds in a run and its results, if any.
pub type Rule = fn(&Run, &[CheckResult]) -> Option<Contradiction>;

/// Runs every rule and makes each affected verdict Can't tell. Returns the contradictions
/// found, in rule order.
pub fn apply(run: &Run, results: &mut [CheckResult]) -> Vec<Contradiction> {
    let rules: [Rule; 12] = [
        cache_must_have_overflowed,
        series_counters_disagree,
        series_tokens_disagree,
        aborted_requests_moved,
        series_outside_the_run,
        load_outlasted_the_snapshots,
        peak_above_the_servers_cap,
        log_counts_more_than_the_counter,
        log_stopped_before_the_run,
        log_of_another_process,
        tokens_still_running,
        gauges_behind_the_clients_records,
    ];
    let found: Vec<Contradiction> = rules.iter().filter_map(|rule| rule(run, results)).collect();
    for contradiction in &found {
        for result in results.iter_mut() {
            if contradiction.affected.contains(&result.tripwire) {
                undermine(result, contradiction);
            }
        }
    }
    found
}

/// Turns one verdict into Can't tell, keeping what it said in the evidence.
fn undermine(result: &mut CheckResult, c: &Contradiction) {
    let vouches = matches!(result.status, Status::Pass | Status::Warn);
    let failed = result.status == Status::Fail && c.undermines_failure;
    if !(vouches || failed) {
        return;
    }
    let was = json!({
        "status": result.status.json_word(),
        "message": result.message,
    });
    result.status = Status::Unknown;
    result.message = format!("{}, but {}; the two disagree", c.first, c.second);
    result.terminal_suffix = None;
    result.evidence.insert(
        "contradiction".into(),
        json!({"rule": c.rule, "first": c.first, "second": c.second, "was": was}),
    );
}

/// Whether the wall clock stepped during the run: the series saw it step under its
/// monotonic clock, or the readings' wall span is not their monotonic span. Rules that
/// order readings by the wall clock then have no order to go by, and claim nothing.
fn wall_stepped(run: &Run) -> bool {
    let in_series = run.series.as_ref().is_some_and(|s| s.wall_steps.count > 0);
    let in_readings = match (&run.before, &run.after) {
        (Some(b), Some(a)) => match (b.t_wall, a.t_wall, b.t_mono_ns, a.t_mono_ns) {
            (Some(wb), Some(wa), Some(mb), Some(ma)) => {
                ((wa - wb) - (ma - mb) as f64 / 1e9).abs() > 1.0
            }
            _ => false,
        },
        _ => false,
    };
    in_series || in_readings
}

fn find(results: &[CheckResult], tripwire: Tripwire) -> Option<&CheckResult> {
    results.iter().find(|r| r.tripwire == tripwire)
}

/// The verdicts a log of another start would make wrong: T1's where it vouches for the
/// run (its pauses and retractions), T19's whatever it says (its compile lines).
fn read_from_the_log(results: &[CheckResult]) -> Vec<Tripwire> {
    let mut affected = Vec::new();
    if vouches(results, Tripwire::T1) {
        affected.push(Tripwire::T1);
    }
    if find(results, Tripwire::T19).is_some_and(|r| r.status.is_verdict()) {
        affected.push(Tripwire::T19);
    }
    affected
}

fn vouches(results: &[CheckResult], tripwire: Tripwire) -> bool {
    find(results, tripwire).is_some_and(|r| matches!(r.status, Status::Pass | Status::Warn))
}

/// The KV arithmetic against T1.
///
/// A run whose load needed more cache than the pool holds, on a server that ran more
/// requests at once than fit at full length, must have preempted (paused, retracted)
/// some as they grew. T1 read "none" from evidence that cannot see everything: a
/// TensorRT-LLM log (or its paused gauge), or SGLang's retraction counter being absent.
/// vLLM's counter counts each preemption, so a bound on lengths does not overrule it.
///
/// How many ran at once: the series' peak (a lower bound even where the gauge lags), and
/// on an engine that evicts only under one setting (TensorRT-LLM's `MAX_UTILIZATION`),
/// whose scheduler then admits every request whose next step fits, every open request up
/// to the running cap. Under its other settings (`GUARANTEED_NO_EVICT`) it admits only
/// requests whose whole output fits, so no pause is needed.
pub fn cache_must_have_overflowed(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    if !vouches(results, Tripwire::T1) {
        return None;
    }
    let engine = run.engine;
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let indirect = match engine.preemption_counter {
        None => true,
        Some(counter) => after.metrics.total(counter).is_none(),
    };
    if !indirect {
        return None;
    }
    let boot = run.last_boot()?;
    // A hybrid model's cache also holds per-request state: token arithmetic misses it.
    if boot.running_cap_reason.is_some() || boot.attention_block_size.is_some_and(|b| b > 64) {
        return None;
    }
    let pool = boot.kv_pool_tokens.filter(|p| *p > 0)?;
    let block = boot
        .page_size
        .or(boot.attention_block_size)
        .unwrap_or(1)
        .max(1);
    let summary = counter_summary(engine, before, after)?;
    let finished = summary.finished.filter(|f| *f >= 1.0)?;
    let per_request = summary.tokens_per_request().filter(|t| *t > 0.0)?;
    let open = run.requested?.min(finished.trunc() as u64);
    let allocated = (per_request / block as f64).ceil() * block as f64;
    // Each data-parallel copy holds its own pool of this size.
    let fit = (pool as f64 / allocated).floor() as u64 * copies(engine, boot)?;
    let mut ran = run
        .series
        .as_ref()
        .and_then(|s| s.peak_running)
        .map_or(0, |p| p.max(0.0) as u64);
    let mut how = "the recording shows".to_owned();
    if let Some((setting, evicting)) = engine.evicts_only_with {
        if boot.setting(setting).and_then(|v| v.as_str()) != Some(evicting) {
            return None;
        }
        let cap = boot.running_cap.or(boot.requested_running).unwrap_or(open);
        let admitted = open.min(cap);
        if admitted > ran {
            ran = admitted;
            how = format!("{evicting} admits every request whose next step fits, so it ran");
        }
    }
    if ran <= fit {
        return None;
    }
    let t1 = find(results, Tripwire::T1)?;
    Some(Contradiction {
        rule: "cache_must_have_overflowed",
        affected: vec![Tripwire::T1],
        first: format!("T1 found no {}s ({})", engine.preemption_word, t1.message),
        second: format!(
            "the cache holds {} tokens, {fit} requests of about {} tokens at full length, and {how} {ran} at once, so some must have been {}",
            fmt::thousands(pool as i64),
            fmt::thousands_f(per_request),
            past_tense(engine.preemption_word)
        ),
        undermines_failure: false,
    })
}

/// `pause` -> `paused`, `retraction` -> `retracted`, `preemption` -> `preempted`.
fn past_tense(word: &str) -> String {
    match word.strip_suffix("ion") {
        Some(stem) => format!("{stem}ed"),
        None if word.ends_with('e') => format!("{word}d"),
        None => format!("{word}ed"),
    }
}

/// One reading of a counter: when, how much, and where.
#[derive(Debug, Clone, Copy)]
struct Reading {
    t_wall: f64,
    value: f64,
    source: &'static str,
}

/// A later reading of the preemption counter lower than an earlier one.
///
/// The series is recorded between (or around) the two snapshots from the same server;
/// a counter only ever goes up, so of any two readings the later is never lower. When it
/// is, the series and the snapshots are not of the same server process, or one of them
/// was edited, and the counts built on either cannot be trusted.
pub fn series_counters_disagree(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let series = run.series.as_ref()?;
    counter_disagrees(
        run,
        results,
        run.engine.preemption_counter?,
        &series.preemption_track,
        vec![Tripwire::T1],
    )
}

/// The same for the generation-token counter, on which T10, T15 and T20 (the server's
/// tokens per request) rest.
pub fn series_tokens_disagree(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let series = run.series.as_ref()?;
    counter_disagrees(
        run,
        results,
        run.engine.generation_tokens,
        &series.generation_track,
        vec![Tripwire::T10, Tripwire::T15, Tripwire::T20],
    )
}

fn counter_disagrees(
    run: &Run,
    results: &[CheckResult],
    counter: &str,
    track: &crate::judging::checks::series::CounterTrack,
    affected: Vec<Tripwire>,
) -> Option<Contradiction> {
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let engine = run.engine;
    if !affected.iter().any(|t| find(results, *t).is_some()) {
        return None;
    }
    // A restart the snapshots show (their `_created` stamps moved) is no contradiction:
    // each check built on the counters' difference already says Can't tell for it, and
    // the series seeing the counter fall is that same restart.
    if crate::judging::checks::counters::restart_between(before, after).is_some() {
        return None;
    }
    if track.went_down {
        return Some(Contradiction {
            rule: "series_counters_disagree",
            affected,
            first: format!("the snapshots' {counter} moved forward"),
            second:
                "the series saw it go down during the run (a restart the snapshots do not show)"
                    .into(),
            undermines_failure: true,
        });
    }
    if wall_stepped(run) {
        return None;
    }
    let mut readings = Vec::new();
    for (snapshot, source) in [
        (before, "the before snapshot"),
        (after, "the after snapshot"),
    ] {
        if let (Some(t), Some(v)) = (snapshot.t_wall, counter_value(engine, snapshot, counter)) {
            readings.push(Reading {
                t_wall: t,
                value: v,
                source,
            });
        }
    }
    for (point, source) in [
        (track.first, "the series' first reading"),
        (track.last, "the series' last reading"),
    ] {
        if let Some((t, v)) = point {
            readings.push(Reading {
                t_wall: t,
                value: v,
                source,
            });
        }
    }
    for earlier in &readings {
        for later in &readings {
            if later.t_wall >= earlier.t_wall + ORDER_TOLERANCE_S && later.value < earlier.value {
                return Some(Contradiction {
                    rule: "series_counters_disagree",
                    affected,
                    first: format!(
                        "{} reads {counter} = {}",
                        earlier.source,
                        fmt::g(earlier.value)
                    ),
                    second: format!(
                        "{}, taken {:.1} s later, reads {} (a counter never goes down)",
                        later.source,
                        later.t_wall - earlier.t_wall,
                        fmt::g(later.value)
                    ),
                    undermines_failure: true,
                });
            }
        }
    }
    None
}

/// The aborted requests between two snapshots, over every abort counter the engine has
/// that either snapshot serves; `None` when neither serves one.
fn aborted_between(engine: &EngineDescriptor, before: &Snapshot, after: &Snapshot) -> Option<f64> {
    crate::judging::checks::ledger::failed_between(
        engine,
        before,
        after,
        crate::engine::FailedKind::Aborted,
    )
}

/// T15 against the server's abort counter.
///
/// T15 compares the requests the server finished with those the load tool completed.
/// Requests the server aborted (a client that gave up, a timeout) are counted by the
/// server and by the load tool in ways the two files cannot line up: a surplus on the
/// server's side may be aborted requests rather than other traffic, and an exact match
/// may hide them. When the abort counter moved, T15 says nothing either way.
pub fn aborted_requests_moved(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let t15 = find(results, Tripwire::T15)?;
    if !matches!(t15.status, Status::Pass | Status::Warn | Status::Fail) {
        return None;
    }
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let aborted = aborted_between(run.engine, before, after).filter(|a| *a > 0.0)?;
    Some(Contradiction {
        rule: "aborted_requests_moved",
        affected: vec![Tripwire::T15],
        first: format!("T15 compared the counts ({})", t15.message),
        second: format!(
            "the server aborted {} request{} during the run, which it counts and the load tool counts in ways the two files cannot line up",
            fmt::g(aborted),
            fmt::plural(aborted)
        ),
        undermines_failure: true,
    })
}

/// The series against the snapshots' window.
///
/// A series recorded entirely before the before snapshot or after the after snapshot is
/// not of this run: its peak, its ceilings and its block count describe another time.
pub fn series_outside_the_run(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    // The gate placed the series on the monotonic clock where it shares a boot with the
    // readings; across a wall step the wall clock places nothing.
    if wall_stepped(run) {
        return None;
    }
    let series = run.series.as_ref()?;
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let (first, last) = (series.first_t_wall?, series.last_t_wall?);
    let (start, end) = (before.t_wall?, after.t_wall?);
    let apart = if last + ORDER_TOLERANCE_S < start {
        format!("ends {:.1} s before the before snapshot", start - last)
    } else if first > end + ORDER_TOLERANCE_S {
        format!("starts {:.1} s after the after snapshot", first - end)
    } else {
        return None;
    };
    let affected: Vec<Tripwire> = [
        Tripwire::T8,
        Tripwire::T9,
        Tripwire::T14,
        Tripwire::T17,
        Tripwire::T21,
    ]
    .into_iter()
    .filter(|t| find(results, *t).is_some())
    .collect();
    (!affected.is_empty()).then(|| Contradiction {
        rule: "series_outside_the_run",
        affected,
        first: format!("the snapshots bracket {:.1} s of the run", end - start),
        second: format!("the series {apart}, so it is not a recording of this run"),
        undermines_failure: true,
    })
}

/// The load tool's duration against the snapshots' span.
///
/// The snapshots are read before the load starts and after it ends, so the load tool's
/// own timed span fits between them. When it does not, the snapshots missed part of the
/// run, and every count between them (T1, T10, T15, and the server's side of T18 and
/// T20) misses it too.
pub fn load_outlasted_the_snapshots(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let (name, bench) = run.bench.as_ref()?;
    let duration = bench.duration.filter(|d| d.is_finite() && *d > 0.0)?;
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let span = crate::judging::checks::snapshots::span_between(before, after)
        .ok()?
        .seconds;
    if duration <= span + SPAN_TOLERANCE_S {
        return None;
    }
    let affected: Vec<Tripwire> = [
        Tripwire::T1,
        Tripwire::T10,
        Tripwire::T15,
        Tripwire::T16,
        Tripwire::T18,
        Tripwire::T19,
        Tripwire::T20,
    ]
    .into_iter()
    .filter(|t| find(results, *t).is_some())
    .collect();
    (!affected.is_empty()).then(|| Contradiction {
        rule: "load_outlasted_the_snapshots",
        affected,
        first: format!("the snapshots are {span:.1} s apart"),
        second: format!(
            "{name} says the load ran for {duration:.1} s, so the snapshots do not bracket the run"
        ),
        undermines_failure: false,
    })
}

/// The series' peak against the running cap the boot log states.
///
/// The server never runs more requests at once than its cap; a series that shows more is
/// of another server (or another start of it) than the boot log describes.
pub fn peak_above_the_servers_cap(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    if !vouches(results, Tripwire::T8) {
        return None;
    }
    let peak = run.series.as_ref()?.peak_running?;
    let boot: &BootFacts = run.last_boot()?;
    // Data-parallel copies each run up to the cap, and the recording sums them.
    let cap = boot.running_cap? * copies(run.engine, boot)?;
    (peak > cap as f64).then(|| Contradiction {
        rule: "peak_above_the_servers_cap",
        affected: vec![Tripwire::T8],
        first: format!("the boot log says the server runs at most {cap} requests at once"),
        second: format!("the series shows {} running", fmt::g(peak)),
        undermines_failure: false,
    })
}

/// The series' running and waiting gauges against the load's own records of how many
/// requests it kept open.
///
/// A request the client has sent is running or waiting at the server, less the
/// milliseconds it spends in transit. When the load's records show it held the
/// concurrency asked for open for at least two of the recording's intervals, and no
/// sample showed that many running or waiting, the gauges did not keep up with the
/// server: vLLM sets them after each engine step, so a step of seconds (a batch shape
/// the engine had not run yet, compiled cold) leaves them at what the step before it
/// saw, and requests that end between samples leave the peak unseen. T8's "never ran
/// more than" then rests on readings that missed the requests, and says Can't tell.
/// The reverse (the gauges show the load's count, running and waiting) keeps T8's
/// failure: the server queued what it would not run.
pub fn gauges_behind_the_clients_records(
    run: &Run,
    results: &[CheckResult],
) -> Option<Contradiction> {
    if find(results, Tripwire::T8)?.status != Status::Fail {
        return None;
    }
    let n = run.requested.filter(|n| *n > 0)?;
    let series = run.series.as_ref()?;
    let seen = series.peak_in_flight?;
    if seen >= n as f64 {
        return None;
    }
    let timeline = run.request_timeline()?.ok()?;
    let open = crate::judging::checks::shortfall::client_open(&timeline, n)?;
    if (open.most_open as u64) < n {
        return None;
    }
    let held = (1.0 - open.short_share) * open.window_s;
    let (first, last) = (series.first_t_wall?, series.last_t_wall?);
    let interval = (last - first) / (series.samples.checked_sub(1)? as f64);
    if !(interval.is_finite() && interval > 0.0 && held >= 2.0 * interval) {
        return None;
    }
    Some(Contradiction {
        rule: "gauges_behind_the_clients_records",
        affected: vec![Tripwire::T8],
        first: format!(
            "the load's own records show {n} requests open at once for {} s",
            fmt::g((held * 100.0).round() / 100.0)
        ),
        second: format!(
            "no sample of the recording (one every {} s) showed more than {} running or waiting",
            fmt::g((interval * 100.0).round() / 100.0),
            fmt::g(seen)
        ),
        undermines_failure: true,
    })
}

/// How many copies of its scheduler the server ran (data parallelism), each with its own
/// cache and running cap; `None` when a setting says there are several but not how many.
fn copies(engine: &EngineDescriptor, boot: &BootFacts) -> Option<u64> {
    let mut copies = 1;
    for setting in engine.parallel_copies {
        match boot.setting(setting) {
            None => {}
            Some(PyValue::Int(n)) if *n >= 1 => copies *= *n as u64,
            Some(value) if !value.is_truthy() => {}
            Some(_) => return None,
        }
    }
    Some(copies)
}

/// The server log's retraction lines against the retraction counter.
///
/// SGLang logs every retraction (`KV cache pool is full. Retract requests.
/// #retracted_reqs: N`) and counts it. The log may hold retractions from before the run,
/// so it is compared with the counter's total since the server started, not with the
/// run's delta: a log with more retractions than the server ever counted contradicts it.
pub fn log_counts_more_than_the_counter(
    run: &Run,
    results: &[CheckResult],
) -> Option<Contradiction> {
    if !vouches(results, Tripwire::T1) {
        return None;
    }
    let counter = run.engine.preemption_counter?;
    let after = run.after.as_ref()?;
    let logged = run.last_boot()?.retractions_in_log.filter(|n| *n > 0)?;
    let counted = counter_value(run.engine, after, counter)?;
    (logged as f64 > counted).then(|| Contradiction {
        rule: "log_counts_more_than_the_counter",
        affected: vec![Tripwire::T1],
        first: format!(
            "{counter} has counted {} since the server started",
            fmt::g(counted)
        ),
        second: format!(
            "the server log shows {logged} {}",
            run.engine.preemption_words(logged as f64)
        ),
        undermines_failure: false,
    })
}

/// The server log's clock against the snapshots'.
///
/// A log that shows its HTTP server shutting down was written by a server that stopped
/// after answering the after snapshot. When no time zone puts its stamps around the
/// snapshots (see [`crate::judging::checks::pauses::clock_fit`]), the log is of another start of
/// the server, and what T1 read in it (its pauses, its retractions, the requests it
/// answered) is not about this run.
pub fn log_stopped_before_the_run(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let affected = read_from_the_log(results);
    if affected.is_empty() {
        return None;
    }
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let (label, boot) = run.boots.last()?;
    let clock = boot.log_clock?;
    if crate::judging::checks::pauses::clock_fit(&clock, before, after)
        != crate::judging::checks::pauses::ClockFit::Nowhere
    {
        return None;
    }
    Some(Contradiction {
        rule: "log_stopped_before_the_run",
        affected,
        first: format!(
            "{label} shows the server shutting down, {} s after its first line",
            clock.latest - clock.earliest
        ),
        second: format!(
            "the snapshots were read {:.1} s apart, later than its last line under every time zone, so the log is of another start of the server or its host's clock disagrees with the snapshots'",
            after.t_wall? - before.t_wall?
        ),
        undermines_failure: true,
    })
}

/// The process ids the snapshots' metrics carry against those the server log names.
///
/// TensorRT-LLM and SGLang label some metrics with the serving process's `pid`, and
/// their logs name their processes' ids (`[startup][pid=1739]`). When the snapshots name
/// processes and the log names others only, the log is of another start of the server,
/// and what T1 read in it is not about this run.
pub fn log_of_another_process(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let affected = read_from_the_log(results);
    if affected.is_empty() {
        return None;
    }
    let (label, boot) = run.boots.last()?;
    if boot.pids.is_empty() {
        return None;
    }
    let mut served_by: Vec<u64> = [run.before.as_ref(), run.after.as_ref()]
        .into_iter()
        .flatten()
        .flat_map(|s| s.metrics.samples())
        .filter_map(|s| s.label("pid")?.parse().ok())
        .collect();
    served_by.sort_unstable();
    served_by.dedup();
    if served_by.is_empty() || served_by.iter().any(|p| boot.pids.contains(p)) {
        return None;
    }
    let list = |pids: &[u64]| {
        pids.iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(Contradiction {
        rule: "log_of_another_process",
        affected,
        first: format!("the snapshots were served by process {}", list(&served_by)),
        second: format!(
            "{label} names processes {} only, so it is the log of another start of the server",
            list(&boot.pids)
        ),
        undermines_failure: true,
    })
}

/// T10's token count against the requests still running at the after snapshot.
///
/// SGLang counts a request's generated tokens when it finishes. A request still running at
/// the after snapshot generated tokens during the run that the counter does not hold yet,
/// so the rate T10 measured is short by an unknown amount. (TensorRT-LLM counts the same
/// way, but its running gauge shows the state at the last completion, so it cannot say
/// whether anything was still running.)
pub fn tokens_still_running(run: &Run, results: &[CheckResult]) -> Option<Contradiction> {
    let engine = run.engine;
    if !vouches(results, Tripwire::T10) || !engine.tokens_at_finish || engine.gauges_lag {
        return None;
    }
    let running = run
        .after
        .as_ref()?
        .metrics
        .total(engine.running)
        .filter(|r| *r >= 1.0)?;
    let t10 = find(results, Tripwire::T10)?;
    Some(Contradiction {
        rule: "tokens_still_running",
        affected: vec![Tripwire::T10],
        first: format!("T10 measured {}", t10.message),
        second: format!(
            "the after snapshot shows {} request{} still running, whose tokens {} counts only when they finish",
            fmt::g(running),
            fmt::plural(running),
            engine.name
        ),
        undermines_failure: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, TRTLLM, VLLM};
    use crate::judging::checks::series::SeriesStats;
    use crate::model::client::{ClientAccount, LoadTool};
    use crate::model::metrics::Sample;
    use crate::model::{SeriesSample, Settings};
    use crate::testing::{assert_unknown_saying, sample, trtllm_counters};

    fn snapshot(t_wall: f64, samples: Vec<Sample>) -> Snapshot {
        crate::testing::snapshot(Some(t_wall), samples)
    }

    /// The verdict the rules leave of one result of the run.
    fn after_rules(run: &Run, tripwire: Tripwire, status: Status, message: &str) -> CheckResult {
        let mut results = vec![result(tripwire, status, message)];
        apply(run, &mut results);
        results.remove(0)
    }

    /// Whether no rule found anything to say about one result of the run.
    fn untouched(run: &Run, tripwire: Tripwire, status: Status, message: &str) -> bool {
        let mut results = vec![result(tripwire, status, message)];
        apply(run, &mut results).is_empty()
    }

    /// Asserts every one of the results became Can't tell, the first naming `words`.
    fn assert_all_undermined(run: &Run, mut results: Vec<CheckResult>, words: &str) {
        apply(run, &mut results);
        assert!(
            results.iter().all(|r| r.status == Status::Unknown),
            "{results:?}"
        );
        assert!(results[0].message.contains(words), "{}", results[0].message);
    }

    fn result(tripwire: Tripwire, status: Status, message: &str) -> CheckResult {
        CheckResult::new(tripwire, status, message)
    }

    fn run(engine: &'static EngineDescriptor) -> Run {
        Run::empty(engine)
    }

    fn trtllm_run(pool: u64, policy: &str) -> Run {
        let mut settings = Settings::new();
        settings.insert(
            "capacity_scheduler_policy".into(),
            PyValue::Str(policy.into()),
        );
        let boot = BootFacts {
            kv_pool_tokens: Some(pool),
            page_size: Some(32),
            running_cap: Some(32),
            server_args: Some(settings),
            ..BootFacts::default()
        };
        Run {
            boots: vec![("boot.log".into(), boot)],
            before: Some(trtllm_counters(100.0, 9.0, 63.0, 144.0)),
            after: Some(trtllm_counters(130.0, 41.0, 2879.0, 32_144.0)),
            requested: Some(32),
            ..run(&TRTLLM)
        }
    }

    #[test]
    fn a_cache_too_small_for_a_max_utilization_run_contradicts_no_pause() {
        // 20,960 tokens hold 19 requests of 1,088; MAX_UTILIZATION ran all 32.
        let run = trtllm_run(20_960, "MAX_UTILIZATION");
        let mut results = vec![result(
            Tripwire::T1,
            Status::Pass,
            "no pause in the server log",
        )];
        let found = apply(&run, &mut results);
        assert_eq!(found.len(), 1);
        assert_eq!(results[0].status, Status::Unknown);
        assert!(
            results[0]
                .message
                .contains("19 requests of about 1,088 tokens"),
            "{}",
            results[0].message
        );
        assert!(results[0]
            .message
            .contains("32 at once, so some must have been paused"));
        assert_eq!(
            results[0].evidence["contradiction"]["was"]["status"],
            "pass"
        );
        // The whole load fits: no contradiction.
        let mut fits = vec![result(Tripwire::T1, Status::Pass, "no pause")];
        assert!(apply(&trtllm_run(37_760, "MAX_UTILIZATION"), &mut fits).is_empty());
        // GUARANTEED_NO_EVICT admits only what fits to the end: queueing, not pausing.
        let mut no_evict = vec![result(Tripwire::T1, Status::Pass, "no pause")];
        assert!(apply(&trtllm_run(20_960, "GUARANTEED_NO_EVICT"), &mut no_evict).is_empty());
        // A failed T1 already says what happened.
        let mut failed = vec![result(Tripwire::T1, Status::Fail, "13 requests paused")];
        apply(&run, &mut failed);
        assert_eq!(failed[0].status, Status::Fail);
    }

    #[test]
    fn vllms_own_preemption_count_is_not_overruled_by_arithmetic() {
        let mut run = trtllm_run(20_960, "MAX_UTILIZATION");
        run.engine = &VLLM;
        let counters = |t, n| {
            snapshot(
                t,
                vec![
                    sample("vllm:num_preemptions_total", &[], 0.0),
                    sample("vllm:request_success_total", &[], n),
                    sample("vllm:prompt_tokens_total", &[], n * 88.0),
                    sample("vllm:generation_tokens_total", &[], n * 1000.0),
                ],
            )
        };
        run.before = Some(counters(100.0, 0.0));
        run.after = Some(counters(130.0, 32.0));
        let mut stats = SeriesStats::new();
        stats.push(&SeriesSample {
            t_wall: 110.0,
            running: Some(32.0),
            ..SeriesSample::default()
        });
        run.series = Some(stats);
        assert!(untouched(
            &run,
            Tripwire::T1,
            Status::Pass,
            "no preemptions"
        ));
    }

    #[test]
    fn sglang_without_its_retraction_counter_meets_the_arithmetic() {
        let counters = |t, n: f64| {
            snapshot(
                t,
                vec![
                    sample("sglang:num_retracted_reqs", &[], 0.0),
                    sample("sglang:num_requests_total", &[], n),
                    sample("sglang:prompt_tokens_total", &[], n * 88.0),
                    sample("sglang:generation_tokens_total", &[], n * 1000.0),
                ],
            )
        };
        let boot = BootFacts {
            kv_pool_tokens: Some(20_000),
            page_size: Some(1),
            ..BootFacts::default()
        };
        let mut stats = SeriesStats::new();
        stats.push(&SeriesSample {
            t_wall: 110.0,
            running: Some(30.0),
            ..SeriesSample::default()
        });
        let run = Run {
            boots: vec![("boot.log".into(), boot)],
            before: Some(counters(100.0, 0.0)),
            after: Some(counters(130.0, 32.0)),
            series: Some(stats),
            requested: Some(32),
            ..run(&SGLANG)
        };
        assert_unknown_saying(
            &after_rules(&run, Tripwire::T1, Status::Pass, "no retractions"),
            "some must have been retracted",
        );
    }

    fn vllm_counters(t: f64, preempted: f64, generated: f64) -> Snapshot {
        snapshot(
            t,
            vec![
                sample("vllm:num_preemptions_total", &[], preempted),
                sample("vllm:generation_tokens_total", &[], generated),
                sample("vllm:request_success_total", &[], 32.0),
            ],
        )
    }

    fn series_of(points: &[(f64, f64, f64)]) -> SeriesStats {
        let mut stats = SeriesStats::new();
        for &(t_wall, preempted, generated) in points {
            stats.push(&SeriesSample {
                t_wall,
                preemptions: Some(preempted),
                generation_tokens: Some(generated),
                running: Some(4.0),
                ..SeriesSample::default()
            });
        }
        stats
    }

    #[test]
    fn a_series_that_saw_more_preemptions_than_the_snapshots_allow() {
        // The series saw the counter reach 5 at t=120; the after snapshot at t=130 reads
        // 0. Either the snapshots or the series are of another server.
        let run = Run {
            before: Some(vllm_counters(100.0, 0.0, 0.0)),
            after: Some(vllm_counters(130.0, 0.0, 32_000.0)),
            series: Some(series_of(&[(101.0, 0.0, 10.0), (120.0, 5.0, 20_000.0)])),
            ..run(&VLLM)
        };
        let mut results = vec![
            result(Tripwire::T1, Status::Pass, "no preemptions"),
            result(Tripwire::T10, Status::Pass, "rate"),
        ];
        let found = apply(&run, &mut results);
        assert_eq!(found[0].rule, "series_counters_disagree");
        assert_eq!(results[0].status, Status::Unknown);
        assert!(results[0]
            .message
            .contains("the series' last reading reads vllm:num_preemptions_total = 5"));
        assert!(
            results[0]
                .message
                .contains("the after snapshot, taken 10.0 s later, reads 0"),
            "{}",
            results[0].message
        );
        assert_eq!(results[1].status, Status::Pass, "tokens agree");
    }

    #[test]
    fn a_series_counter_that_went_down_undermines_the_rate() {
        let run = Run {
            before: Some(vllm_counters(100.0, 0.0, 0.0)),
            after: Some(vllm_counters(130.0, 0.0, 32_000.0)),
            series: Some(series_of(&[
                (101.0, 0.0, 9_000.0),
                (110.0, 0.0, 12.0),
                (120.0, 0.0, 30_000.0),
            ])),
            ..run(&VLLM)
        };
        assert_unknown_saying(
            &after_rules(&run, Tripwire::T10, Status::Pass, "rate"),
            "go down",
        );
        // Consistent readings leave the verdict alone.
        let fine = Run {
            series: Some(series_of(&[(101.0, 0.0, 10.0), (120.0, 0.0, 20_000.0)])),
            ..run
        };
        assert!(untouched(&fine, Tripwire::T10, Status::Pass, "rate"));
    }

    #[test]
    fn aborted_requests_make_the_client_server_comparison_say_nothing() {
        let counters = |t, length: f64, abort: f64| {
            snapshot(
                t,
                vec![
                    sample(
                        "vllm:request_success_total",
                        &[("finished_reason", "length")],
                        length,
                    ),
                    sample(
                        "vllm:request_success_total",
                        &[("finished_reason", "abort")],
                        abort,
                    ),
                ],
            )
        };
        let run = Run {
            before: Some(counters(100.0, 0.0, 0.0)),
            after: Some(counters(130.0, 30.0, 2.0)),
            ..run(&VLLM)
        };
        assert_unknown_saying(
            &after_rules(
                &run,
                Tripwire::T15,
                Status::Fail,
                "the server finished 2 more requests than the load tool sent",
            ),
            "the server aborted 2 requests",
        );
        // No abort: the failure stands.
        let quiet = Run {
            after: Some(counters(130.0, 32.0, 0.0)),
            ..run
        };
        assert!(untouched(&quiet, Tripwire::T15, Status::Fail, "2 more"));
    }

    #[test]
    fn trtllm_cancelled_requests_count_from_a_series_created_during_the_run() {
        let before = snapshot(
            100.0,
            vec![sample(
                "trtllm_request_success_total",
                &[("finished_reason", "length")],
                9.0,
            )],
        );
        let after = snapshot(
            130.0,
            vec![
                sample(
                    "trtllm_request_success_total",
                    &[("finished_reason", "length")],
                    39.0,
                ),
                sample(
                    "trtllm_request_success_total",
                    &[("finished_reason", "cancelled")],
                    2.0,
                ),
            ],
        );
        assert_eq!(aborted_between(&TRTLLM, &before, &after), Some(2.0));
        assert_eq!(aborted_between(&SGLANG, &before, &after), None);
    }

    #[test]
    fn a_series_recorded_outside_the_snapshots_is_not_of_this_run() {
        let run = Run {
            before: Some(vllm_counters(1000.0, 0.0, 0.0)),
            after: Some(vllm_counters(1030.0, 0.0, 32_000.0)),
            series: Some(series_of(&[(100.0, 0.0, 0.0), (130.0, 0.0, 100.0)])),
            ..run(&VLLM)
        };
        assert_all_undermined(
            &run,
            vec![
                result(Tripwire::T8, Status::Pass, "reached 32 running"),
                result(Tripwire::T9, Status::Warn, "ceiling moved"),
                result(Tripwire::T14, Status::Fail, "mismatch"),
            ],
            "ends 870.0 s before the before snapshot",
        );
    }

    #[test]
    fn a_load_longer_than_the_snapshots_span_was_not_bracketed() {
        let bench = ClientAccount {
            duration: Some(95.0),
            ..ClientAccount::new(LoadTool::VllmBench)
        };
        let run = Run {
            before: Some(vllm_counters(100.0, 0.0, 0.0)),
            after: Some(vllm_counters(160.0, 0.0, 32_000.0)),
            bench: Some(("bench.json".into(), bench.clone())),
            ..run(&VLLM)
        };
        assert_all_undermined(
            &run,
            vec![
                result(Tripwire::T1, Status::Pass, "no preemptions"),
                result(Tripwire::T10, Status::Pass, "rate"),
                result(Tripwire::T15, Status::Pass, "agree"),
            ],
            "bench.json says the load ran for 95.0 s",
        );
        let bracketed = Run {
            after: Some(vllm_counters(196.0, 0.0, 32_000.0)),
            ..run
        };
        assert!(untouched(
            &bracketed,
            Tripwire::T1,
            Status::Pass,
            "no preemptions"
        ));
    }

    #[test]
    fn a_peak_above_the_servers_cap_is_of_another_server() {
        let boot = BootFacts {
            running_cap: Some(10),
            ..BootFacts::default()
        };
        let mut stats = SeriesStats::new();
        stats.push(&SeriesSample {
            t_wall: 1.0,
            running: Some(32.0),
            ..SeriesSample::default()
        });
        let run = Run {
            boots: vec![("boot.log".into(), boot)],
            series: Some(stats),
            ..run(&SGLANG)
        };
        assert_unknown_saying(
            &after_rules(&run, Tripwire::T8, Status::Pass, "reached 32 running"),
            "at most 10 requests at once",
        );
        // Four data-parallel copies of 10 each run 32 together.
        let mut settings = Settings::new();
        settings.insert("dp_size".into(), PyValue::Int(4));
        let mut parallel = run;
        parallel.boots[0].1.server_args = Some(settings);
        assert!(untouched(
            &parallel,
            Tripwire::T8,
            Status::Pass,
            "reached 32 running"
        ));
    }

    #[test]
    fn a_log_with_more_retractions_than_the_counter_ever_counted() {
        let boot = BootFacts {
            retractions_in_log: Some(7),
            ..BootFacts::default()
        };
        let counters = |t, n| {
            snapshot(
                t,
                vec![sample("sglang:num_retracted_requests_total", &[], n)],
            )
        };
        let run = Run {
            boots: vec![("boot.log".into(), boot)],
            before: Some(counters(100.0, 2.0)),
            after: Some(counters(130.0, 2.0)),
            ..run(&SGLANG)
        };
        assert_unknown_saying(
            &after_rules(&run, Tripwire::T1, Status::Pass, "no retractions"),
            "the server log shows 7 retractions",
        );
        // Retractions before the run are in the log and in the counter's total: no clash.
        let earlier = Run {
            after: Some(counters(130.0, 7.0)),
            before: Some(counters(100.0, 7.0)),
            ..run
        };
        assert!(untouched(
            &earlier,
            Tripwire::T1,
            Status::Pass,
            "no retractions"
        ));
    }

    #[test]
    fn a_log_of_another_start_of_the_server() {
        let boot = |earliest: f64, latest: f64| BootFacts {
            log_clock: Some(crate::model::LogClock {
                earliest: earliest as i64,
                latest: latest as i64,
                stamped_after_shutdown: true,
            }),
            ..BootFacts::default()
        };
        // The log's server booted at 1000 and stopped at 1100; the run began at 2000.
        let run = Run {
            boots: vec![("boot.log".into(), boot(1000.0, 1100.0))],
            before: Some(trtllm_counters(2000.0, 9.0, 63.0, 144.0)),
            after: Some(trtllm_counters(2030.0, 41.0, 2879.0, 32_144.0)),
            ..run(&TRTLLM)
        };
        assert_unknown_saying(
            &after_rules(&run, Tripwire::T1, Status::Pass, "no pause"),
            "another start of the server",
        );
        // The same log around the run: no clash.
        let around = Run {
            boots: vec![("boot.log".into(), boot(1900.0, 2031.0))],
            ..run
        };
        assert!(untouched(&around, Tripwire::T1, Status::Pass, "no pause"));
    }

    #[test]
    fn a_log_naming_other_processes_than_the_metrics() {
        let boot = |pids: Vec<u64>| BootFacts {
            pids,
            ..BootFacts::default()
        };
        let counters = |t| {
            snapshot(
                t,
                vec![sample(
                    "trtllm_kv_cache_max_blocks",
                    &[("pid", "1739")],
                    1180.0,
                )],
            )
        };
        let run = Run {
            boots: vec![("boot.log".into(), boot(vec![693, 866]))],
            before: Some(counters(100.0)),
            after: Some(counters(130.0)),
            ..run(&TRTLLM)
        };
        assert_unknown_saying(
            &after_rules(&run, Tripwire::T1, Status::Pass, "no pause"),
            "served by process 1739",
        );
        let same = Run {
            boots: vec![("boot.log".into(), boot(vec![1739, 1896]))],
            ..run
        };
        assert!(untouched(&same, Tripwire::T1, Status::Pass, "no pause"));
    }

    #[test]
    fn sglang_tokens_of_requests_still_running_are_not_counted_yet() {
        let after =
            |running: f64| snapshot(130.0, vec![sample("sglang:num_running_reqs", &[], running)]);
        let sglang = Run {
            after: Some(after(3.0)),
            ..run(&SGLANG)
        };
        assert_unknown_saying(
            &after_rules(
                &sglang,
                Tripwire::T10,
                Status::Pass,
                "642.10 tokens/s over 49.836s",
            ),
            "3 requests still running",
        );
        let idle = Run {
            after: Some(after(0.0)),
            ..sglang
        };
        assert!(untouched(&idle, Tripwire::T10, Status::Pass, "rate"));
        // vLLM counts tokens as they are generated.
        let vllm = Run {
            after: Some(snapshot(
                130.0,
                vec![sample("vllm:num_requests_running", &[], 3.0)],
            )),
            ..run(&VLLM)
        };
        assert!(untouched(&vllm, Tripwire::T10, Status::Pass, "rate"));
    }

    #[test]
    fn past_tenses() {
        assert_eq!(past_tense("pause"), "paused");
        assert_eq!(past_tense("retraction"), "retracted");
        assert_eq!(past_tense("preemption"), "preempted");
    }
}
