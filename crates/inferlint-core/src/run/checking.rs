//! A whole run checked at once: which checks apply to what is present, in the order the
//! `report` command and xray print them.
//!
//! Nothing vanishes: a tripwire the run's files could answer but whose input is missing
//! comes back as [`Status::NotChecked`] naming what it needs, after every verdict. A run
//! whose load sent no request (or failed) is "not a benchmark": its load-dependent
//! tripwires are not checked, rather than judged on a run that did not happen.

use crate::engine::EngineDescriptor;
use crate::judging::checks::series::SeriesStats;
use crate::judging::checks::{boot, registry};
use crate::judging::identity::Admitted;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, Snapshot};
use crate::run::model::{input, Run, RunOptions};

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

/// The boot checks of a server this process started and watched come up: those of its
/// log, except that a server that exited before it was ready failed T12 whatever its log
/// shows (`exited`: why, as the caller saw it; `last_line`: the log's last line, for the
/// evidence). A log that names no cause must not pass T12.
pub fn check_start(
    facts: BootFacts,
    exited: Option<&str>,
    last_line: Option<String>,
) -> Vec<CheckResult> {
    let mut results = check_logs(&[(String::new(), facts)]);
    if let Some(cause) = exited {
        for r in &mut results {
            if r.tripwire == Tripwire::T12 && r.status == Status::Pass {
                let mut failed = boot::start_failure(cause);
                if let Some(line) = &last_line {
                    failed = failed.with("line", line.as_str());
                }
                *r = failed;
            }
        }
    }
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
/// when the requested concurrency is known; verdicts first, then what was not checked.
pub fn series_checks(
    engine: &'static EngineDescriptor,
    stats: &SeriesStats,
    after: Option<&Snapshot>,
    requested: Option<u64>,
    boot: Option<&BootFacts>,
) -> Vec<CheckResult> {
    let run = Run {
        boots: boot
            .map(|b| (String::new(), b.clone()))
            .into_iter()
            .collect(),
        after: after.cloned(),
        series: Some(stats.clone()),
        requested,
        ..Run::empty(engine)
    };
    let (mut verdicts, missing): (Vec<CheckResult>, Vec<CheckResult>) =
        [Tripwire::T14, Tripwire::T9, Tripwire::T8]
            .into_iter()
            .filter_map(|t| registry::get(t).judge(&run, RunOptions::default()))
            .partition(|r| r.status != Status::NotChecked);
    verdicts.extend(missing);
    verdicts
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
/// checked, else that it does not apply to the engine, else why it does not apply to the
/// run where its result says so, else what the catalogue says a verdict needs (T2 and T3 run at clean-up, T7 needs a live server).
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
            None => {
                let (one, many) = registry::absent_reason(tripwire, engine);
                // A check that judged this run not its own says why, not what it needs.
                match results
                    .iter()
                    .find(|r| r.tripwire == tripwire && r.status == Status::NotApplicable)
                {
                    Some(r) if !one.starts_with("does not apply") => {
                        let why = format!("does not apply: {}", r.message);
                        (why.clone(), why)
                    }
                    _ => (one, many),
                }
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
///
/// For a run its caller built itself, not yet through the gate: it is admitted here
/// (a copy). What loads a run admits it once and calls [`check_run_with`].
pub fn check_run(run: &Run) -> Vec<CheckResult> {
    check_run_with(
        &crate::judging::identity::admitted(run),
        RunOptions::default(),
    )
}

/// The checks of a run the gate admitted, with what the user said about the run.
pub fn check_run_with(run: &Admitted, options: RunOptions) -> Vec<CheckResult> {
    let mut results = verdicts_of(run, options);
    crate::story::account::attach_throughput(run, &mut results);
    results
}

/// [`check_run_with`] but for the run's throughput in T10's evidence, which the one path
/// ([`crate::run::check`]) writes from the account it makes once.
pub(crate) fn verdicts_of(run: &Admitted, options: RunOptions) -> Vec<CheckResult> {
    let mut results = run_checks(run, options);
    crate::judging::identity::name_rejected(run, &mut results);
    let capacity = crate::story::account::capacity(run, &results);
    crate::story::advice::attach(run, &mut results, capacity.as_ref());
    results
}

/// The results of a recording whose after reading could not be taken (`why`, the
/// recorder's error): each tripwire left unchecked for want of the after reading says
/// Can't tell, naming why, since the reading was asked for and failed rather than never
/// asked for. The others are left as they are.
pub fn after_not_taken(results: &mut [CheckResult], why: &str) {
    for result in results {
        if result.status == Status::NotChecked && needs_input(result, input::AFTER) {
            *result = CheckResult::new(
                result.tripwire,
                Status::Unknown,
                format!("needs the after reading, which could not be taken: {why}"),
            )
            .with("needs", vec![input::AFTER]);
        }
    }
}

/// Whether a not-checked result names `input` among what it needs.
fn needs_input(result: &CheckResult, input: &str) -> bool {
    result
        .evidence
        .get("needs")
        .and_then(|v| v.as_array())
        .is_some_and(|needs| needs.iter().any(|n| n == input))
}

fn run_checks(run: &Run, options: RunOptions) -> Vec<CheckResult> {
    let mut results = check_logs(&run.boots);
    let mut missing = registry::boot_missing(run);
    let (verdicts, not_checked) = registry::judge_run(run, options);
    results.extend(verdicts);
    missing.extend(not_checked);
    crate::judging::crosscheck::apply(run, &mut results);
    crate::judging::other_traffic::apply(run, &mut results);
    results.extend(missing);
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, VLLM};
    use crate::model::metrics::{MetricSet, Sample};
    use crate::model::SeriesSample;
    use crate::run::model::not_a_benchmark;

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
            server_requests: None,
            kv_events: None,
            steps: None,
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
    fn a_server_that_exited_before_ready_fails_t12_whatever_its_log_says() {
        // A log that says the server was ready and names no failure passes T12 alone.
        let facts = BootFacts {
            ready_lineno: Some(40),
            ..BootFacts::default()
        };
        let alone = check_start(facts.clone(), None, None);
        let t12 = alone.iter().find(|r| r.tripwire == Tripwire::T12).unwrap();
        assert_eq!(t12.status, Status::Pass);
        // The same log of a server that exited before its health check answered fails.
        let exited = check_start(
            facts,
            Some("the server exited with code 1 before it was ready"),
            Some("Traceback (most recent call last):".into()),
        );
        let t12 = exited.iter().find(|r| r.tripwire == Tripwire::T12).unwrap();
        assert_eq!(t12.status, Status::Fail);
        assert_eq!(
            t12.message,
            "could not start: the server exited with code 1 before it was ready"
        );
        assert_eq!(t12.evidence["line"], "Traceback (most recent call last):");
    }

    /// A recording whose after reading failed: what needed the reading cannot tell,
    /// naming the failure (the reading was asked for, unlike a run that never took one);
    /// what needed something else (the result file) is still only not checked.
    #[test]
    fn a_failed_after_reading_makes_what_needs_it_cannot_tell() {
        let mut without_after = run(&VLLM);
        without_after.after = None;
        let mut results = check_run(&without_after);
        let waited: Vec<Tripwire> = results
            .iter()
            .filter(|r| r.status == Status::NotChecked && needs_input(r, input::AFTER))
            .map(|r| r.tripwire)
            .collect();
        // T1 compares the two readings' counters: without the after one it waits.
        assert!(waited.contains(&Tripwire::T1), "{results:#?}");
        after_not_taken(&mut results, "connection refused");
        for tripwire in waited {
            let r = results.iter().find(|r| r.tripwire == tripwire).unwrap();
            assert_eq!(r.status, Status::Unknown);
            assert_eq!(
                r.message,
                "needs the after reading, which could not be taken: connection refused"
            );
            assert_eq!(r.evidence["needs"], serde_json::json!(["after"]));
        }
        assert_eq!(
            status_of(&results, Tripwire::T15),
            [(
                Status::NotChecked,
                "needs the load tool's result file".to_owned()
            )]
        );
    }

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
