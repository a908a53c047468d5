//! The outcome of a checked run: the one rule the command line's exit status and the
//! library's `Report::outcome` both read.
//!
//! A set of results gives [`Outcome::of`]: a failed tripwire (or a warning under
//! `strict`), else a Can't tell, else a pass. A whole run adds one rule: a run that was
//! not a benchmark (the load failed, or no request completed) never passes, since its
//! load-dependent tripwires were not checked; it is undecided, or failed when a tripwire
//! failed.
//!
//! (This module stands beside `status`, whose `Outcome` it folds; once `status` and `run`
//! settle, the rule may move next to `Outcome::of`.)

use crate::judging::status::{CheckResult, Outcome};
use crate::run::{not_a_benchmark, Run};

/// The outcome of a whole run: the results', except that a run that was not a benchmark
/// never passes.
pub fn of_run(run: &Run, results: &[CheckResult], strict: bool) -> Outcome {
    of_results(results, not_a_benchmark(run).is_some(), strict)
}

/// [`of_run`] for a caller that already knows whether the run was a benchmark (a load
/// that failed before any run could be read, say).
pub fn of_results(results: &[CheckResult], not_a_benchmark: bool, strict: bool) -> Outcome {
    match Outcome::of(results, strict) {
        Outcome::Passed if not_a_benchmark => Outcome::Undecided,
        outcome => outcome,
    }
}

/// The more serious of two outcomes: a failure, else an undecided, else a pass. A fleet's
/// outcome is the worst of its replicas' and its own.
pub fn worst_of(a: Outcome, b: Outcome) -> Outcome {
    let rank = |o: Outcome| match o {
        Outcome::Passed => 0,
        Outcome::Undecided => 1,
        Outcome::TripwireFailed => 2,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::status::{Status, Tripwire};

    fn one(status: Status) -> Vec<CheckResult> {
        vec![CheckResult::new(Tripwire::T1, status, "x")]
    }

    #[test]
    fn a_run_that_was_no_benchmark_never_passes() {
        assert_eq!(
            of_results(&one(Status::Pass), false, false),
            Outcome::Passed
        );
        assert_eq!(
            of_results(&one(Status::Pass), true, false),
            Outcome::Undecided
        );
        assert_eq!(
            of_results(&one(Status::Fail), true, false),
            Outcome::TripwireFailed
        );
        assert_eq!(
            of_results(&one(Status::Warn), false, true),
            Outcome::TripwireFailed
        );
    }

    #[test]
    fn the_worst_outcome_wins() {
        use Outcome::*;
        assert_eq!(worst_of(Passed, Undecided), Undecided);
        assert_eq!(worst_of(TripwireFailed, Undecided), TripwireFailed);
        assert_eq!(worst_of(Undecided, Passed), Undecided);
        assert_eq!(worst_of(Passed, Passed), Passed);
    }
}
