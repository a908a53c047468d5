//! What checking a run gives: the verdicts, the tripwires not checked and why, what
//! limited the run, and the outcome.

use inferlint_core::judging::status::{count_line, CheckResult, Outcome, Status};
use inferlint_core::run::Checked;
use inferlint_core::story::contract;
use inferlint_core::story::insights::{self, Insight};
use serde::Serialize;

/// The checked run. Serialises as an object with `outcome`, `results` (each verdict, in
/// the `--json` shape: `tripwire`, `status`, `message`, `evidence`, `advice`),
/// `not_checked` (the same shape, status `not_checked`), `insights` (`limit`, `key`,
/// `title`, `text`), `account` (the run's figures, each with where it came from; its
/// shape is not stable) and `notes`.
///
/// ```
/// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
/// let report = inferlint::Run::from_dir(dir)?.check();
/// let json = serde_json::to_value(&report).expect("a report serialises");
/// assert_eq!(json["outcome"], "tripwire_failed");
/// assert_eq!(json["results"][0]["tripwire"], "T12");
/// # Ok::<(), inferlint::Error>(())
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    outcome: Outcome,
    results: Vec<CheckResult>,
    not_checked: Vec<CheckResult>,
    insights: Vec<Insight>,
    /// The run's one account: every figure the insights and advice speak of, with where
    /// it came from.
    account: inferlint_core::story::account::Account,
    notes: Vec<String>,
    /// Whether the run was not a benchmark: then it never passes.
    #[serde(skip)]
    not_a_benchmark: bool,
}

impl Report {
    /// The report of a run checked by core's one path ([`inferlint_core::run::check`]).
    pub(crate) fn new(checked: Checked, notes: Vec<String>) -> Report {
        let (not_checked, results): (Vec<CheckResult>, Vec<CheckResult>) = checked
            .results
            .into_iter()
            .partition(|r| r.status == Status::NotChecked);
        let mut report = Report {
            outcome: Outcome::Passed,
            results,
            not_checked,
            insights: checked.insights,
            account: checked.account,
            notes,
            not_a_benchmark: checked.not_a_benchmark,
        };
        report.outcome = report.outcome_with(false);
        report
    }

    /// Each verdict (pass, warning, tripwire failed, can't tell, does not apply), in
    /// the order `inferlint report` prints them.
    pub fn results(&self) -> &[CheckResult] {
        &self.results
    }

    /// Each tripwire the run's files could answer but whose input was missing, with
    /// what it needs in its message (`needs the load tool's result file`) and in its
    /// `needs` evidence (`bench_result`).
    pub fn not_checked(&self) -> &[CheckResult] {
        &self.not_checked
    }

    /// "What limited this run": plain sentences on what held the run back, limits first.
    pub fn insights(&self) -> &[Insight] {
        &self.insights
    }

    /// The run's one account: its setup, its load and what happened, each figure with
    /// where it came from, and the inputs set aside as not of this run (the figures the
    /// insights and the advice give are these); the report's JSON carries it as
    /// `account`. Read by the HTML report.
    pub(crate) fn account(&self) -> &inferlint_core::story::account::Account {
        &self.account
    }

    /// What a reader should know that did not stop the load (skipped lines, gaps in
    /// the recording, an engine version not tested, files read as vLLM's).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The run's outcome, as `inferlint report`'s exit status gives it: a tripwire
    /// failed (1), else a check could not tell or the run was not a benchmark (2), else
    /// passed (0). Warnings pass.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// The outcome under `--strict`: a warning counts as a failed tripwire.
    pub fn strict_outcome(&self) -> Outcome {
        self.outcome_with(true)
    }

    fn outcome_with(&self, strict: bool) -> Outcome {
        inferlint_core::judging::outcome::of_results(&self.results, self.not_a_benchmark, strict)
    }

    /// The results as `inferlint report --json` prints them: the verdicts, then the
    /// tripwires not checked (contract version 2, shared with the established Python
    /// tool: `tripwire`, `status`, `message`, `evidence`, plus `advice`).
    pub fn to_json(&self) -> String {
        contract::results_json(&self.all())
    }

    /// The lines `inferlint report` prints on a terminal: each result with its advice,
    /// the run's throughput, "What limited this run", and the count line (`14 checks (10 pass, 2 warn, 2
    /// tripwire-failed); 1 does not apply`).
    pub fn to_text(&self) -> String {
        let all = self.all();
        let mut text: String = all.iter().map(CheckResult::terminal_block).collect();
        text.push_str(&insights::terminal_throughput(self.account()));
        text.push_str(&insights::terminal_lines(&self.insights));
        text.push_str(&count_line(&all));
        text.push('\n');
        text
    }

    /// Every result as `inferlint report` prints them: the verdicts, then the tripwires
    /// not checked.
    pub fn all(&self) -> Vec<CheckResult> {
        self.results
            .iter()
            .chain(&self.not_checked)
            .cloned()
            .collect()
    }
}
