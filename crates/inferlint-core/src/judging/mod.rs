//! The judging: which inputs belong to the run, every check as a pure function of the
//! admitted run, the cross-checks between two facts, the verdict type and the one rule
//! that turns a run's verdicts into its outcome.

pub mod checks;
pub mod crosscheck;
pub mod evidence;
pub mod identity;
pub mod live;
pub mod other_traffic;
pub mod outcome;
pub mod status;
