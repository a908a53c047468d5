//! The one way a run is checked, whoever asks (`report`, xray, `compare`, `whatif`, the
//! library): the run the identity gate admitted, its checks, then its account and its
//! story ("What limited this run") from those results. The engines crate's
//! `load::check_files` reads the files into the admitted run and calls [`check`]; the
//! library's `Run::check` calls it on the run it holds.

use crate::judging::identity::Admitted;
use crate::judging::status::{any_verdict, CheckResult, Outcome, Status};
use crate::run::checking::{after_not_taken, nothing_checked, verdicts_of};
use crate::run::model::{not_a_benchmark, RunOptions};
use crate::story::account::{self, Account};
use crate::story::insights::{self, Insight};

/// How a run is checked: what the user said about it, and why the recording has no after
/// reading when it could not be taken.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// What the user said about how the run is meant to be read.
    pub run: RunOptions,
    /// Why the after reading could not be taken, when a recording asked for one and
    /// failed ([`after_not_taken`]).
    pub after_missing: Option<String>,
}

/// A run checked: its results in report order (the verdicts, then what was not checked),
/// its one account and "What limited this run", each read from those results.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Every result, in the order `report` prints them.
    pub results: Vec<CheckResult>,
    /// The run's one account: every figure an output prints.
    pub account: Account,
    /// "What limited this run".
    pub insights: Vec<Insight>,
    /// Whether the run was not a benchmark (then it never passes).
    pub not_a_benchmark: bool,
}

/// Checks an admitted run: the checks ([`crate::run::check_run_with`]'s), a failed after reading named
/// ([`after_not_taken`]), then the account and the story from the results.
pub fn check(run: &Admitted, options: &CheckOptions) -> Checked {
    let mut results = verdicts_of(run, options.run);
    // The account, made once: it reads none of what is written below (the throughput in
    // T10's evidence, a result waiting for a failed after reading made Can't tell).
    let account = account::of(run, &results);
    account::attach_throughput_of(&account, &mut results);
    if let Some(why) = &options.after_missing {
        after_not_taken(&mut results, why);
    }
    // The verdicts, then what was not checked (a verdict named above keeps its place).
    let (mut results, not_checked): (Vec<CheckResult>, Vec<CheckResult>) = results
        .into_iter()
        .partition(|r| r.status != Status::NotChecked);
    results.extend(not_checked);
    let insights = insights::what_limited_by(run, &results, &account);
    Checked {
        results,
        account,
        insights,
        not_a_benchmark: not_a_benchmark(run).is_some(),
    }
}

impl Checked {
    /// Why no check could run on the run, naming the inputs `given` (the refusal every
    /// command and the library make); `None` when some check gave a verdict.
    pub fn nothing_checked(&self, given: &[String]) -> Option<String> {
        (!any_verdict(&self.results)).then(|| nothing_checked(given, &self.results))
    }

    /// The run's outcome by core's one exit rule (`strict`: a warning fails).
    pub fn outcome(&self, strict: bool) -> Outcome {
        crate::judging::outcome::of_results(&self.results, self.not_a_benchmark, strict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::judging::status::Tripwire;
    use crate::run::model::Run;

    fn empty() -> Run {
        Run::empty(&VLLM)
    }

    /// A run with no file of the server's gives no check anything to read: it is refused,
    /// naming what was given.
    #[test]
    fn a_run_with_nothing_to_read_is_refused() {
        let checked = check(
            &crate::judging::identity::admit(empty()),
            &CheckOptions::default(),
        );
        assert!(checked.results.iter().all(|r| !r.status.is_verdict()));
        let refusal = checked.nothing_checked(&["nothing".to_owned()]);
        assert!(refusal.is_some_and(|why| why.contains("nothing")));
    }

    /// The failed after reading is named in the one path, as the library named it: what
    /// waited for it cannot tell, and says why.
    #[test]
    fn a_failed_after_reading_is_named_by_the_one_path() {
        let options = CheckOptions {
            after_missing: Some("connection refused".to_owned()),
            ..CheckOptions::default()
        };
        let checked = check(&crate::judging::identity::admit(empty()), &options);
        let t1 = checked
            .results
            .iter()
            .find(|r| r.tripwire == Tripwire::T1)
            .unwrap();
        assert_eq!(t1.status, Status::Unknown);
        assert!(t1
            .message
            .ends_with("could not be taken: connection refused"));
    }
}
