//! What one report shows: the checked run, its account and its verdicts, as the caller
//! made them. Every section reads this, and this reads no section: the ground floor of
//! the run report.

use inferlint_core::run::Run;
use inferlint_core::story::account::Account;
use inferlint_core::story::insights::Insight;
use inferlint_core::CheckResult;

use crate::timeline::Timeline;

/// Everything one report shows.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The run, as core read it.
    pub run: &'a Run,
    /// The verdicts, in the order the checks ran.
    pub results: &'a [CheckResult],
    /// The run's one account ([`inferlint_core::story::account::of`] on `run` and `results`):
    /// every figure the page states is read from here, never from a verdict's evidence.
    pub account: &'a Account,
    /// "What limited this run", as core wrote it.
    pub insights: &'a [Insight],
    /// The recording folded for drawing, when there is one.
    pub timeline: Option<&'a Timeline>,
    /// The address the recording was made from (its header's URL).
    pub series_url: Option<&'a str>,
    /// `--title`.
    pub title: Option<&'a str>,
    /// The names of the files the report was made from, in the order boot logs, before,
    /// after, series, result file.
    pub made_from: &'a [String],
    /// What wrote the report, e.g. `inferlint 0.1.0`.
    pub generator: &'a str,
}

/// The usable KV block count T14 inferred, when T14 passed: the only block count the
/// charts and the replay trust. For a caller that folds the recording before it has the
/// account; it is the account's `setup.trusted_blocks`.
pub fn usable_blocks(results: &[CheckResult]) -> Option<u64> {
    inferlint_core::story::account::trusted_blocks(results)
}

/// The report's title: `--title`, else `vLLM 0.28.0 run`, else `vLLM run`.
pub fn title(report: &Report) -> String {
    if let Some(t) = report.title.filter(|t| !t.trim().is_empty()) {
        return t.to_owned();
    }
    match report.run.last_boot().and_then(|b| b.version.as_deref()) {
        Some(version) => format!("{} {version} run", report.run.engine.name),
        None => format!("{} run", report.run.engine.name),
    }
}
