//! A whole run checked at once: which checks apply to what is present, in the order the
//! `report` command and xray print them.
//!
//! Nothing vanishes: a tripwire the run's files could answer but whose input is missing
//! comes back as [`Status::NotChecked`] naming what it needs, after every verdict. A run
//! whose load sent no request (or failed) is "not a benchmark": its load-dependent
//! tripwires are not checked, rather than judged on a run that did not happen.

use crate::checks::cold_start::{self, ColdStartInputs};
use crate::checks::counters::{counter_delta, out_of_order, restart_between};
use crate::checks::ledger::{self, LedgerInputs, ServerOutcomes};
use crate::checks::series::SeriesStats;
use crate::checks::shortfall::{self, ShortfallInputs};
use crate::checks::{boot, contention, prefix_cache, series, snapshots};
use crate::client::ClientAccount;
use crate::engine::EngineDescriptor;
use crate::model::{BootFacts, Snapshot};
use crate::requests::{self, RequestTimeline};
use crate::status::{CheckResult, Status, Tripwire};

/// The inputs a not-checked tripwire can name, as `evidence.needs` spells them.
pub mod input {
    /// The server's boot log.
    pub const BOOT_LOG: &str = "boot_log";
    /// The before reading.
    pub const BEFORE: &str = "before";
    /// The after reading.
    pub const AFTER: &str = "after";
    /// A recording of the run.
    pub const SERIES: &str = "series";
    /// The load tool's result file.
    pub const BENCH_RESULT: &str = "bench_result";
    /// The concurrency the load asked for.
    pub const REQUESTED: &str = "requested";
    /// A load that sent requests: the run was not a benchmark.
    pub const LOAD: &str = "load";
    /// NVML readings of the server's GPUs beside the recording's samples.
    pub const GPU_READINGS: &str = "gpu_readings";
}

/// What the user said about how the run is meant to be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// The run is meant to reuse prompt prefixes (a multi-turn or shared-prefix workload):
    /// T16 reports the cache's share without warning.
    pub expect_cache_hits: bool,
    /// The boot log is the live output of a server still running (xray checks before it
    /// stops the server): everything logged until now is in it, so it covers the run.
    pub live_log: bool,
}

/// Whatever a run left, already read. Every part is optional.
#[derive(Debug, Clone)]
pub struct Run {
    /// The engine's table.
    pub engine: &'static EngineDescriptor,
    /// Boot logs with the label each is shown under.
    pub boots: Vec<(String, BootFacts)>,
    /// The reading before the load.
    pub before: Option<Snapshot>,
    /// The reading after it.
    pub after: Option<Snapshot>,
    /// The recording, folded.
    pub series: Option<SeriesStats>,
    /// The load tool's result and the name it is shown under.
    pub bench: Option<(String, ClientAccount)>,
    /// Untimed requests the load tool announced (test request, warm-up).
    pub expected_extra_requests: u64,
    /// The concurrency the load asked for.
    pub requested: Option<u64>,
    /// Why the load command failed (`the load command exited with code 1`), when the
    /// caller ran it and it did.
    pub load_failure: Option<String>,
    /// Inputs given for the run that are not of it (another run's result file, the next
    /// run's recording): set aside by [`crate::identity::admit`] before any check, and
    /// read by nothing but the Can't tell of the checks that needed them.
    pub rejected: Vec<crate::identity::Rejected>,
    /// What a reader should know about how the inputs were placed (a wall clock that
    /// stepped, a result file left out).
    pub notes: Vec<String>,
}

impl Run {
    /// The boot log that covers the run: the last one given.
    pub fn last_boot(&self) -> Option<&BootFacts> {
        self.boots.last().map(|(_, f)| f)
    }

    /// The server's account of the run from its counters, or why the snapshots give none;
    /// `None` without both snapshots.
    pub fn server_outcomes(&self) -> Option<Result<ServerOutcomes, String>> {
        let (before, after) = (self.before.as_ref()?, self.after.as_ref()?);
        Some(ledger::server_outcomes(self.engine, before, after))
    }

    /// The load tool's requests lined up with the recording, or why they cannot be;
    /// `None` without a result file or a recording.
    pub fn request_timeline(&self) -> Option<Result<RequestTimeline, String>> {
        let (_, account) = self.bench.as_ref()?;
        let series = self.series.as_ref()?;
        if account.requests.is_empty() {
            return None;
        }
        Some(requests::line_up(
            account,
            series,
            self.before.as_ref(),
            self.after.as_ref(),
        ))
    }
}

/// The boot checks of one log: T12 (or T7), T5, T6, then T12 Can't tell when the log had
/// lines in an unknown format.
pub fn boot_checks(facts: &BootFacts) -> Vec<CheckResult> {
    let mut results = vec![
        boot::failure_check(facts),
        boot::block_size_check(facts),
        boot::backend_check(facts),
    ];
    results.extend(boot::unparsed_check(facts));
    results
}

/// `check-log` on one or more logs: per log, prefixed with its label when there are
/// several; then T4 and T11 across logs started with the same flags.
pub fn check_logs(boots: &[(String, BootFacts)]) -> Vec<CheckResult> {
    let several = boots.len() > 1;
    let mut results = Vec::new();
    for (label, facts) in boots {
        for r in boot_checks(facts) {
            results.push(if several { r.labelled(label) } else { r });
        }
    }
    if several {
        let refs: Vec<(String, &BootFacts)> = boots.iter().map(|(l, f)| (l.clone(), f)).collect();
        results.extend(boot::across_boots(&refs));
    }
    results
}

/// The series checks: T14 (or N/A), T9 using T14's block count when it passed, and T8
/// when the requested concurrency is known.
pub fn series_checks(
    engine: &EngineDescriptor,
    stats: &SeriesStats,
    after: Option<&Snapshot>,
    requested: Option<u64>,
    boot: Option<&BootFacts>,
) -> Vec<CheckResult> {
    let mut results = Vec::new();
    if let Some(refused) = &stats.refused {
        // A recording holding a reading that cannot be: no check of it may pass.
        let unknown = |tripwire| {
            CheckResult::new(tripwire, Status::Unknown, refused.message())
                .with("refused_line", refused.line)
                .with("refused_lines", refused.count)
        };
        if engine.cache_info.is_none() {
            results.push(series::not_applicable_t14(engine));
        } else if after.is_some() {
            results.push(unknown(Tripwire::T14));
        }
        results.push(unknown(Tripwire::T9));
        if requested.is_some() {
            results.push(unknown(Tripwire::T8));
        }
        return results;
    }
    let mut usable_blocks = None;
    if engine.cache_info.is_none() {
        results.push(series::not_applicable_t14(engine));
    } else if let Some(after) = after {
        let (t14, blocks) = series::null_block(engine, stats, after);
        if t14.status == Status::Pass {
            usable_blocks = blocks;
        }
        results.push(t14);
    }
    results.push(series::falling_ceiling(engine, stats, usable_blocks));
    match requested {
        Some(0) => results.push(
            CheckResult::new(
                Tripwire::T8,
                Status::Unknown,
                "the concurrency asked for is 0; a load keeps at least 1 request open",
            )
            .with("requested", 0),
        ),
        Some(n) => results.push(series::concurrency(engine, stats, n, boot)),
        None => results.push(CheckResult::not_checked(
            Tripwire::T8,
            "needs the concurrency the load asked for (--requested N, or the load tool's result file)",
            &[input::REQUESTED],
        )),
    }
    if engine.cache_info.is_some() && after.is_none() {
        results.push(CheckResult::not_checked(
            Tripwire::T14,
            "needs the after reading, whose cache info holds the block count",
            &[input::AFTER],
        ));
    }
    results
}

/// Why the run is not a benchmark, if it is not: the load command failed, the load
/// tool's result counts no completed request, or the server finished none between its
/// readings (or, without readings, its recording shows none running).
pub fn not_a_benchmark(run: &Run) -> Option<String> {
    if let Some(failure) = &run.load_failure {
        return Some(failure.clone());
    }
    if let Some((name, bench)) = &run.bench {
        if bench.completed == Some(0) {
            return Some(format!(
                "the load tool's result file {name} counts no completed request"
            ));
        }
    }
    if let (Some(before), Some(after)) = (&run.before, &run.after) {
        // Readings that cannot be compared say nothing here; their checks say why.
        if restart_between(before, after).is_some() || out_of_order(before, after).is_some() {
            return None;
        }
        let finished = counter_delta(run.engine, before, after, run.engine.request_success);
        return (finished == Some(0.0)).then(|| {
            "the server finished no request between the before and the after reading".to_owned()
        });
    }
    // A lagging gauge can miss every request; only a live one shows that none ran.
    let stats = run.series.as_ref().filter(|_| !run.engine.gauges_lag)?;
    let idle = stats.running_readings > 0
        && stats.peak_running == Some(0.0)
        && stats.peak_in_flight.is_none_or(|p| p <= 0.0);
    idle.then(|| "the recording shows no request running or waiting".to_owned())
}

/// Tripwires with no verdict on a run, and why (see [`without_verdict`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Absent {
    /// The tripwires, in catalogue order.
    pub tripwires: Vec<Tripwire>,
    /// Why, said of one tripwire: `needs a boot log`.
    pub one: String,
    /// Why, said of several: `need a boot log`.
    pub many: String,
}

/// Every tripwire the catalogue has that got no verdict on the run, grouped by why, in the
/// order of each group's first tripwire: what core said it needs when it listed it as not
/// checked, else that it does not apply to the engine, else what the catalogue says a
/// verdict needs (T2 and T3 run at clean-up, T7 needs a live server).
pub fn without_verdict(results: &[CheckResult], engine: &EngineDescriptor) -> Vec<Absent> {
    let mut groups: Vec<Absent> = Vec::new();
    for tripwire in Tripwire::all() {
        if results
            .iter()
            .any(|r| r.tripwire == tripwire && r.status.is_verdict())
        {
            continue;
        }
        let listed = results
            .iter()
            .find(|r| r.tripwire == tripwire && r.status == Status::NotChecked);
        let (one, many) = match listed {
            Some(r) => (r.message.clone(), r.message.replacen("needs ", "need ", 1)),
            None if tripwire == Tripwire::T14 && engine.cache_info.is_none() => (
                format!("does not apply to {}", engine.name),
                format!("do not apply to {}", engine.name),
            ),
            None => {
                let (one, many) = crate::catalogue::get(tripwire).needs;
                (one.to_owned(), many.to_owned())
            }
        };
        match groups.iter_mut().find(|g| g.one == one) {
            Some(group) => group.tripwires.push(tripwire),
            None => groups.push(Absent {
                tripwires: vec![tripwire],
                one,
                many,
            }),
        }
    }
    groups
}

/// The one-line refusal when no check could run on the inputs `given` (as messages name
/// them): which tripwires need what, from the not-checked results.
pub fn nothing_checked(given: &[String], results: &[CheckResult]) -> String {
    let mut needs: Vec<(String, Vec<String>)> = Vec::new();
    for r in results.iter().filter(|r| r.status == Status::NotChecked) {
        let what = r.message.trim_start_matches("needs ").to_owned();
        match needs.iter_mut().find(|(m, _)| *m == what) {
            Some((_, ids)) => ids.push(r.tripwire.to_string()),
            None => needs.push((what, vec![r.tripwire.to_string()])),
        }
    }
    let needs: Vec<String> = needs
        .iter()
        .map(|(what, ids)| match ids.split_last() {
            Some((last, [])) => format!("{last} needs {what}"),
            Some((last, rest)) => format!("{} and {last} need {what}", rest.join(", ")),
            None => String::new(),
        })
        .collect();
    format!(
        "no check could run on {}: {}",
        if given.is_empty() {
            "nothing".to_owned()
        } else {
            given.join(", ")
        },
        needs.join("; ")
    )
}

/// Every check the run's files allow, in report order: boot checks, T15, T18, T20, T1,
/// T10, T16, then the series checks, T17, T19 and T21; the cross-checks, which make a verdict that two facts of
/// the run contradict Can't tell; then each tripwire a missing input left unchecked,
/// saying what it needs. Each result carries the advice the run's numbers give.
pub fn check_run(run: &Run) -> Vec<CheckResult> {
    check_run_with(run, RunOptions::default())
}

/// [`check_run`] with what the user said about the run.
pub fn check_run_with(run: &Run, options: RunOptions) -> Vec<CheckResult> {
    let run = &*crate::identity::admitted(run);
    let mut results = run_checks(run, options);
    crate::identity::name_rejected(run, &mut results);
    crate::advice::attach(run, &mut results);
    results
}

/// T16, T17, T19 and T21, the traps only a whole run shows: verdicts go to `results`,
/// tripwires whose input is missing to `missing`.
fn whole_run_checks(
    run: &Run,
    options: RunOptions,
    results: &mut Vec<CheckResult>,
    missing: &mut Vec<CheckResult>,
) {
    match prefix_cache::prefix_cache(
        run.engine,
        run.before.as_ref(),
        run.after.as_ref(),
        run.series.as_ref(),
        options.expect_cache_hits,
    ) {
        Some(r) => results.push(r),
        None if run.engine.prefix_cache.is_some() => missing.push(CheckResult::not_checked(
            Tripwire::T16,
            "needs the before and after readings, or a recording of the run",
            &[input::BEFORE, input::AFTER, input::SERIES],
        )),
        None => {}
    }
    let timeline = run.request_timeline().and_then(Result::ok);
    let client = run.bench.as_ref().map(|(_, account)| account);
    match (&run.series, run.requested) {
        (Some(stats), Some(requested)) => results.push(shortfall::client_shortfall(
            &ShortfallInputs {
                engine: run.engine,
                stats,
                requested,
                boot: run.last_boot(),
                client,
                timeline: timeline.as_ref(),
            },
        )),
        (Some(_), None) => missing.push(CheckResult::not_checked(
            Tripwire::T17,
            "needs the concurrency the load asked for (--requested N, or the load tool's result file)",
            &[input::REQUESTED],
        )),
        (None, requested) => missing.push(CheckResult::not_checked(
            Tripwire::T17,
            if requested.is_some() {
                "needs a recording of the run"
            } else {
                "needs a recording of the run and the concurrency the load asked for (--requested N, or the load tool's result file)"
            },
            if requested.is_some() {
                &[input::SERIES]
            } else {
                &[input::SERIES, input::REQUESTED]
            },
        )),
    }
    match cold_start::cold_start(&ColdStartInputs {
        engine: run.engine,
        boot: run.last_boot(),
        before: run.before.as_ref(),
        after: run.after.as_ref(),
        client,
        untimed: run.expected_extra_requests,
        requested: run.requested,
        live_log: options.live_log,
    }) {
        Some(r) => results.push(r),
        None => missing.push(CheckResult::not_checked(
            Tripwire::T19,
            "needs the server's boot log, the before reading or the load tool's per-request records",
            &[input::BOOT_LOG, input::BEFORE, input::BENCH_RESULT],
        )),
    }
    match run.series.as_ref().map(contention::gpu_contention) {
        Some(Some(r)) => results.push(r),
        Some(None) => missing.push(CheckResult::not_checked(
            Tripwire::T21,
            "needs GPU readings in the recording: record with inferlint watch or xray on the server's machine",
            &[input::GPU_READINGS],
        )),
        None => missing.push(CheckResult::not_checked(
            Tripwire::T21,
            "needs a recording with GPU readings (inferlint watch or xray on the server's machine)",
            &[input::SERIES, input::GPU_READINGS],
        )),
    }
}

/// T18 on the run: the load tool's account against the server's counters and the
/// recording.
fn dropped_failures(run: &Run) -> CheckResult {
    let (name, account) = run.bench.as_ref().expect("called with a result file");
    let server = run.server_outcomes();
    let stopped = match (run.series.as_ref(), run.request_timeline()) {
        (Some(series), Some(Ok(timeline))) => ledger::stopped_generating(series, &timeline),
        _ => None,
    };
    ledger::dropped_failures(&LedgerInputs {
        engine: run.engine,
        account,
        result_file: name,
        server: server.as_ref(),
        stopped,
        untimed: run.expected_extra_requests,
    })
}

fn run_checks(run: &Run, options: RunOptions) -> Vec<CheckResult> {
    let mut results = check_logs(&run.boots);
    let mut missing = Vec::new();
    if run.boots.is_empty() {
        for tripwire in [Tripwire::T12, Tripwire::T5, Tripwire::T6] {
            missing.push(CheckResult::not_checked(
                tripwire,
                "needs the server's boot log",
                &[input::BOOT_LOG],
            ));
        }
    }
    if let Some(reason) = not_a_benchmark(run) {
        // A load whose requests all failed is T18's to judge, not a reason to skip it.
        if run.bench.is_some() {
            results.push(dropped_failures(run));
        }
        for tripwire in [
            Tripwire::T15,
            Tripwire::T20,
            Tripwire::T1,
            Tripwire::T10,
            Tripwire::T16,
            Tripwire::T14,
            Tripwire::T9,
            Tripwire::T8,
            Tripwire::T17,
            Tripwire::T19,
            Tripwire::T21,
        ] {
            if tripwire == Tripwire::T14 && run.engine.cache_info.is_none() {
                results.push(series::not_applicable_t14(run.engine));
                continue;
            }
            missing.push(
                CheckResult::not_checked(
                    tripwire,
                    format!("not a benchmark: {reason}"),
                    &[input::LOAD],
                )
                .with("not_a_benchmark", reason.as_str()),
            );
        }
        results.extend(missing);
        return results;
    }
    let readings = match (&run.before, &run.after) {
        (Some(_), Some(_)) => None,
        (Some(_), None) => Some(("needs the after reading too", vec![input::AFTER])),
        (None, Some(_)) => Some(("needs the before reading too", vec![input::BEFORE])),
        (None, None) => Some((
            "needs the before and after readings",
            vec![input::BEFORE, input::AFTER],
        )),
    };
    match (&run.bench, &readings) {
        (None, _) => {
            for tripwire in [Tripwire::T15, Tripwire::T18, Tripwire::T20] {
                missing.push(CheckResult::not_checked(
                    tripwire,
                    "needs the load tool's result file",
                    &[input::BENCH_RESULT],
                ));
            }
        }
        (Some(_), Some((needs, inputs))) => {
            missing.push(CheckResult::not_checked(Tripwire::T15, *needs, inputs));
        }
        (Some(_), None) => {}
    }
    if let Some((needs, inputs)) = &readings {
        for tripwire in [Tripwire::T1, Tripwire::T10] {
            missing.push(CheckResult::not_checked(tripwire, *needs, inputs));
        }
    }
    if run.series.is_none() {
        if run.engine.cache_info.is_none() {
            results.push(series::not_applicable_t14(run.engine));
        } else {
            missing.push(CheckResult::not_checked(
                Tripwire::T14,
                "needs a recording of the run",
                &[input::SERIES],
            ));
        }
        missing.push(CheckResult::not_checked(
            Tripwire::T9,
            "needs a recording of the run",
            &[input::SERIES],
        ));
        let (needs, inputs): (&str, &[&str]) = if run.requested.is_some() {
            ("needs a recording of the run", &[input::SERIES])
        } else {
            (
                "needs a recording of the run and the concurrency the load asked for (--requested N, or the load tool's result file)",
                &[input::SERIES, input::REQUESTED],
            )
        };
        missing.push(CheckResult::not_checked(Tripwire::T8, needs, inputs));
    }
    if let (Some(before), Some(after)) = (&run.before, &run.after) {
        if let Some((name, bench)) = &run.bench {
            results.push(snapshots::client_server(
                run.engine,
                before,
                after,
                bench,
                name,
                run.expected_extra_requests,
            ));
        }
    }
    if let Some((name, bench)) = &run.bench {
        results.push(dropped_failures(run));
        let server = run.server_outcomes();
        let server_ok = server.as_ref().and_then(|s| s.as_ref().ok());
        if ledger::lengths_comparable(bench, server_ok) {
            results.push(ledger::length_mismatch(bench, name, server_ok));
        } else {
            let needs = match &server {
                Some(Err(why)) => format!(
                    "needs the server's counters, which cannot be compared here ({why}), or a result file that keeps each answer's usage"
                ),
                _ => "needs the before and after readings, or a result file that keeps each answer's usage".to_owned(),
            };
            missing.push(CheckResult::not_checked(
                Tripwire::T20,
                needs,
                &[input::BEFORE, input::AFTER],
            ));
        }
    }
    if let (Some(before), Some(after)) = (&run.before, &run.after) {
        results.push(snapshots::preemption(
            run.engine,
            before,
            after,
            run.series.as_ref(),
            run.last_boot(),
        ));
        results.push(snapshots::rate(run.engine, before, after, None));
    }
    let mut after_snapshots = Vec::new();
    let mut after_series = Vec::new();
    whole_run_checks(run, options, &mut after_series, &mut missing);
    // T16 reads the snapshots' counters: it follows T10.
    if let Some(at) = after_series
        .iter()
        .position(|r| r.tripwire == Tripwire::T16)
    {
        after_snapshots.push(after_series.remove(at));
    }
    results.append(&mut after_snapshots);
    if let Some(stats) = &run.series {
        let from_series = series_checks(
            run.engine,
            stats,
            run.after.as_ref(),
            run.requested,
            run.last_boot(),
        );
        for r in from_series {
            if r.status == Status::NotChecked {
                missing.push(r);
            } else {
                results.push(r);
            }
        }
    }
    results.append(&mut after_series);
    crate::crosscheck::apply(run, &mut results);
    results.extend(missing);
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, VLLM};
    use crate::metrics::{MetricSet, Sample};
    use crate::model::SeriesSample;

    fn snapshot(t_mono_s: f64, finished: f64, tokens: f64) -> Snapshot {
        let sample = |name: &str, value: f64| Sample {
            name: name.to_owned(),
            labels: Vec::new(),
            value,
            timestamp_ms: None,
        };
        Snapshot {
            url: "http://127.0.0.1:8000/metrics".into(),
            t_wall: Some(1_700_000_000.0 + t_mono_s),
            t_mono_ns: Some((t_mono_s * 1e9) as i64),
            latency_s: Some(0.002),
            text: String::new(),
            metrics: MetricSet::new(vec![
                sample(VLLM.request_success, finished),
                sample(VLLM.generation_tokens, tokens),
                sample(VLLM.prompt_tokens, finished * 88.0),
                sample(VLLM.preemption_counter.unwrap_or_default(), 0.0),
            ]),
        }
    }

    fn recording() -> SeriesStats {
        let mut stats = SeriesStats::new();
        for (i, running) in [0.0, 10.0, 10.0, 6.0, 0.0].into_iter().enumerate() {
            stats.push(&SeriesSample {
                t_wall: 1_700_000_001.0 + i as f64,
                t_mono_ns: Some((1.0 + i as f64) as i64 * 1_000_000_000),
                running: Some(running),
                waiting: Some(0.0),
                kv_usage: Some(if running > 0.0 { 0.95 } else { 0.0 }),
                ..SeriesSample::default()
            });
        }
        stats
    }

    fn run(engine: &'static EngineDescriptor) -> Run {
        Run {
            engine,
            boots: Vec::new(),
            before: Some(snapshot(0.0, 10.0, 100.0)),
            after: Some(snapshot(100.0, 42.0, 32_100.0)),
            series: Some(recording()),
            bench: None,
            expected_extra_requests: 0,
            requested: None,
            load_failure: None,
            rejected: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn status_of(results: &[CheckResult], tripwire: Tripwire) -> Vec<(Status, String)> {
        results
            .iter()
            .filter(|r| r.tripwire == tripwire)
            .map(|r| (r.status, r.message.clone()))
            .collect()
    }

    /// Without the result file, the boot log and the concurrency asked for, the checks
    /// that need them are listed as not checked (they used to vanish), after the verdicts.
    #[test]
    fn missing_inputs_are_listed_as_not_checked() {
        let results = check_run(&run(&VLLM));
        for (tripwire, needs) in [
            (Tripwire::T15, "needs the load tool's result file"),
            (Tripwire::T12, "needs the server's boot log"),
            (
                Tripwire::T8,
                "needs the concurrency the load asked for (--requested N, or the load tool's result file)",
            ),
        ] {
            let found = status_of(&results, tripwire);
            assert_eq!(found.len(), 1, "{tripwire}: {results:#?}");
            assert_eq!(found[0].0, Status::NotChecked);
            assert_eq!(found[0].1, needs);
        }
        let first = results
            .iter()
            .position(|r| r.status == Status::NotChecked)
            .expect("not-checked entries");
        assert!(results[first..]
            .iter()
            .all(|r| r.status == Status::NotChecked));
        let t14 = series_checks(&VLLM, &recording(), None, Some(32), None);
        assert_eq!(
            status_of(&t14, Tripwire::T14),
            [(
                Status::NotChecked,
                "needs the after reading, whose cache info holds the block count".to_owned()
            )]
        );
        // SGLang has no null block: T14 does not apply, with or without a recording.
        let mut sglang = run(&SGLANG);
        sglang.series = None;
        let t14 = status_of(&check_run(&sglang), Tripwire::T14);
        assert_eq!(t14[0].0, Status::NotApplicable);
    }

    /// A load that failed, or that the server finished nothing of, is not a benchmark:
    /// no verdict on the tripwires that need a load (T8 used to fail on it).
    #[test]
    fn a_run_without_a_load_is_not_a_benchmark() {
        let mut failed = run(&VLLM);
        failed.requested = Some(8);
        failed.load_failure = Some("the load command exited with code 1".into());
        let results = check_run(&failed);
        let t8 = status_of(&results, Tripwire::T8);
        assert_eq!(
            t8,
            [(
                Status::NotChecked,
                "not a benchmark: the load command exited with code 1".to_owned()
            )]
        );
        let mut idle = run(&VLLM);
        idle.requested = Some(8);
        idle.after = Some(snapshot(100.0, 10.0, 100.0));
        assert_eq!(
            not_a_benchmark(&idle).as_deref(),
            Some("the server finished no request between the before and the after reading")
        );
        assert!(check_run(&idle)
            .iter()
            .filter(|r| [Tripwire::T1, Tripwire::T8, Tripwire::T10].contains(&r.tripwire))
            .all(|r| r.status == Status::NotChecked));
        assert_eq!(not_a_benchmark(&run(&VLLM)), None);
    }

    /// Snapshots in the wrong order are said to be, from their clocks, rather than read
    /// as a restart (every counter seems to go down).
    #[test]
    fn swapped_snapshots_are_named_from_their_clocks() {
        let mut swapped = run(&VLLM);
        std::mem::swap(&mut swapped.before, &mut swapped.after);
        let results = check_run(&swapped);
        for tripwire in [Tripwire::T1, Tripwire::T10] {
            let found = status_of(&results, tripwire);
            assert_eq!(found[0].0, Status::Unknown, "{tripwire}");
            assert_eq!(
                found[0].1,
                "the before reading was taken 100.0 s after the after reading: the snapshots are in the wrong order"
            );
        }
    }

    /// A concurrency of 0 is no concurrency: it used to pass T8 against any server.
    #[test]
    fn a_requested_concurrency_of_zero_is_not_a_pass() {
        let results = series_checks(&VLLM, &recording(), None, Some(0), None);
        let t8 = status_of(&results, Tripwire::T8);
        assert_eq!(t8[0].0, Status::Unknown);
    }
}
