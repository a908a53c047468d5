//! A whole run checked at once: which checks apply to what is present, in the order the
//! `report` command and xray print them.

use crate::checks::series::SeriesStats;
use crate::checks::{boot, series, snapshots};
use crate::engine::EngineDescriptor;
use crate::model::{BenchResult, BootFacts, Snapshot};
use crate::status::{CheckResult, Status};

/// Whatever a run left, already read. Every part is optional.
#[derive(Debug)]
pub struct Run {
    pub engine: &'static EngineDescriptor,
    /// Boot logs with the label each is shown under.
    pub boots: Vec<(String, BootFacts)>,
    pub before: Option<Snapshot>,
    pub after: Option<Snapshot>,
    pub series: Option<SeriesStats>,
    /// The load tool's result and the name it is shown under.
    pub bench: Option<(String, BenchResult)>,
    /// Untimed requests the load tool announced (test request, warm-up).
    pub expected_extra_requests: u64,
    /// The concurrency the load asked for.
    pub requested: Option<u64>,
}

impl Run {
    /// The boot log that covers the run: the last one given.
    pub fn last_boot(&self) -> Option<&BootFacts> {
        self.boots.last().map(|(_, f)| f)
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
    if let Some(n) = requested {
        results.push(series::concurrency(engine, stats, n, boot));
    }
    results
}

/// Every check the run's files allow, in report order: boot checks, T15, T1, T10, then
/// the series checks.
pub fn check_run(run: &Run) -> Vec<CheckResult> {
    let mut results = check_logs(&run.boots);
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
        results.push(snapshots::preemption(
            run.engine,
            before,
            after,
            run.series.as_ref(),
            run.last_boot(),
        ));
        results.push(snapshots::rate(run.engine, before, after, None));
    }
    if let Some(stats) = &run.series {
        results.extend(series_checks(
            run.engine,
            stats,
            run.after.as_ref(),
            run.requested,
            run.last_boot(),
        ));
    }
    results
}
