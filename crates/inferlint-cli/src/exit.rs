//! Every exit status the command can return, in one place, and the errors that end a
//! command, each of a kind that chooses its status.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | everything passed (warnings allowed) |
//! | 1 | a tripwire failed (or a warning, with `--strict`) |
//! | 2 | a tripwire could not decide, or an input came from another engine than the one named |
//! | 64 | the command line is wrong (BSD's `EX_USAGE`) |
//! | 65 | an input cannot be used (BSD's `EX_DATAERR`) |
//! | 74 | an output could not be written, or the system refused what the command needs (BSD's `EX_IOERR`) |
//! | 130 | `xray` was interrupted |

use std::fmt;

use inferlint_core::judging::outcome::worst_of;
use inferlint_core::judging::status::{CheckResult, Outcome};
use inferlint_engines::files::FileError;
use inferlint_engines::load::LoadError;
use inferlint_engines::output::OutputError;

/// The process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything passed (warnings allowed).
    Passed = 0,
    /// A tripwire failed (or a warning, with `--strict`).
    TripwireFailed = 1,
    /// A tripwire could not decide, or an input came from another engine than the one
    /// named.
    Undecided = 2,
    /// The command line is wrong: an unknown command, flag or value, flags that conflict,
    /// a missing argument, an output target refused.
    Usage = 64,
    /// An input cannot be used: missing, unreadable, empty, truncated, not what it should
    /// be, too large; a server whose answer is no engine's metrics.
    BadInput = 65,
    /// An output could not be written (no space, no permission, a closed pipe), or the
    /// system refused what the command needs (a thread, a signal handler).
    CannotWrite = 74,
    /// `xray` was stopped by SIGINT or SIGTERM (Ctrl-C); the server it started was stopped.
    Interrupted = 130,
}

impl ExitCode {
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The status for a set of results: 1 on a failure (or a warning with `--strict`),
    /// else 2 on a Can't tell, else 0. Does-not-apply never changes it.
    pub fn for_results(results: &[CheckResult], strict: bool) -> ExitCode {
        ExitCode::of(Outcome::of(results, strict))
    }

    /// The status that an outcome calls for.
    pub fn of(outcome: Outcome) -> ExitCode {
        match outcome {
            Outcome::Passed => ExitCode::Passed,
            Outcome::TripwireFailed => ExitCode::TripwireFailed,
            Outcome::Undecided => ExitCode::Undecided,
            // An outcome added later (`Outcome` is non-exhaustive): never a pass.
            _ => ExitCode::Undecided,
        }
    }
}

/// The more serious of two verdicts' statuses: an interruption, else a failure, else a
/// Can't tell, else a pass. (Errors end a command before any verdict is folded in.)
pub(crate) fn worst(a: ExitCode, b: ExitCode) -> ExitCode {
    let outcome = |c: ExitCode| match c {
        ExitCode::Passed => Some(Outcome::Passed),
        ExitCode::TripwireFailed => Some(Outcome::TripwireFailed),
        ExitCode::Undecided => Some(Outcome::Undecided),
        _ => None,
    };
    match (outcome(a), outcome(b)) {
        (Some(x), Some(y)) => ExitCode::of(worst_of(x, y)),
        // An error's or an interruption's status stands over any verdict's.
        (None, _) => a,
        (_, None) => b,
    }
}

/// The exit status of a whole run: core's outcome of it (a failed tripwire, a warning
/// under `--strict`, a Can't tell; a run that was not a benchmark never passes).
pub(crate) fn run_exit(
    run: &inferlint_core::run::Run,
    results: &[CheckResult],
    strict: bool,
) -> ExitCode {
    ExitCode::of(inferlint_core::judging::outcome::of_run(
        run, results, strict,
    ))
}

/// An error that ends the command: its kind chooses the exit status, its message is the
/// one line printed on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CliError {
    /// The command line is wrong: exit 64.
    Usage(String),
    /// An input cannot be used: exit 65.
    Input(String),
    /// An input came from another engine than the one named, or a run's inputs from two
    /// engines: exit 2.
    OtherEngine(String),
    /// The inputs were read but allow no decision at all (no check could run on them, a
    /// recording with too many gaps): exit 2, as a Can't tell.
    Undecided(String),
    /// An output could not be written, or the system refused what the command needs:
    /// exit 74.
    CannotWrite(String),
}

impl CliError {
    /// The exit status this error calls for.
    pub fn code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::Usage,
            CliError::Input(_) => ExitCode::BadInput,
            CliError::OtherEngine(_) | CliError::Undecided(_) => ExitCode::Undecided,
            CliError::CannotWrite(_) => ExitCode::CannotWrite,
        }
    }

    /// The one line printed on stderr (after `inferlint: `).
    pub fn message(&self) -> &str {
        match self {
            CliError::Usage(m)
            | CliError::Input(m)
            | CliError::OtherEngine(m)
            | CliError::Undecided(m)
            | CliError::CannotWrite(m) => m,
        }
    }

    /// A usage error.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage(message.into())
    }

    /// An unusable input.
    pub fn input(message: impl Into<String>) -> CliError {
        CliError::Input(message.into())
    }

    /// An output that could not be written.
    pub fn cannot_write(message: impl Into<String>) -> CliError {
        CliError::CannotWrite(message.into())
    }

    /// The same error, its message led by `prefix` (`--junit: `).
    pub fn prefixed(self, prefix: &str) -> CliError {
        let with = |m: String| format!("{prefix}{m}");
        match self {
            CliError::Usage(m) => CliError::Usage(with(m)),
            CliError::Input(m) => CliError::Input(with(m)),
            CliError::OtherEngine(m) => CliError::OtherEngine(with(m)),
            CliError::Undecided(m) => CliError::Undecided(with(m)),
            CliError::CannotWrite(m) => CliError::CannotWrite(with(m)),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for CliError {}

impl From<FileError> for CliError {
    fn from(e: FileError) -> CliError {
        CliError::Input(format!("cannot read {e}"))
    }
}

impl From<LoadError> for CliError {
    fn from(e: LoadError) -> CliError {
        let message = e.to_string();
        match e {
            LoadError::Mismatch(_) | LoadError::MixedEngines { .. } => {
                CliError::OtherEngine(message)
            }
            // `--engine` or INFERLINT_ENGINE names no engine; one file named as both
            // snapshots: the command line is wrong.
            LoadError::UnknownEngine { .. } | LoadError::SameSnapshot { .. } => {
                CliError::Usage(message)
            }
            LoadError::File(_)
            | LoadError::NotALog { .. }
            | LoadError::OutOfOrder { .. }
            | LoadError::NotAFolder { .. }
            | LoadError::NoRunFiles { .. }
            | LoadError::ResultChoice(_) => CliError::Input(message),
            // A refusal added to the loader later: an input it could not use.
            _ => CliError::Input(message),
        }
    }
}

/// An output target refused by the writing rules is a wrong command line (give another
/// file, or `--force`); a write the system refused is not.
impl From<OutputError> for CliError {
    fn from(e: OutputError) -> CliError {
        let message = e.to_string();
        match e {
            OutputError::Io { .. } => CliError::CannotWrite(message),
            OutputError::Exists { .. }
            | OutputError::Link { .. }
            | OutputError::IsInput { .. }
            | OutputError::Folder { .. }
            | OutputError::NotRegular { .. }
            | OutputError::Locked { .. } => CliError::Usage(message),
        }
    }
}

impl From<inferlint_live::BaseUrlError> for CliError {
    fn from(e: inferlint_live::BaseUrlError) -> CliError {
        CliError::Usage(e.to_string())
    }
}

/// The library's refusals, by kind: another engine's input is 2, a file that may not be
/// written is the command line's, a write the system refused is 74, a run that allows no
/// check is undecided, every other an unusable input.
impl From<inferlint::Error> for CliError {
    fn from(e: inferlint::Error) -> CliError {
        use inferlint::ErrorKind;
        let message = e.to_string();
        match e.kind() {
            ErrorKind::Engine => CliError::OtherEngine(message),
            ErrorKind::NothingChecked => CliError::Undecided(message),
            ErrorKind::Write if e.io_kind().is_some() => CliError::CannotWrite(message),
            ErrorKind::Write => CliError::Usage(message),
            ErrorKind::InsideRuntime => CliError::CannotWrite(message),
            _ => CliError::Input(message),
        }
    }
}

/// A window that cannot be read from Prometheus: a wrong selector is the command line's;
/// replicas of two engines or of another engine than the one named are another engine's
/// input; a server that does not answer as Prometheus does is an unusable input.
impl From<inferlint_live::prometheus::PromError> for CliError {
    fn from(e: inferlint_live::prometheus::PromError) -> CliError {
        use inferlint_live::prometheus::PromError;
        let message = e.to_string();
        match e {
            PromError::Selector(_) | PromError::TooManyQueries(_) => CliError::Usage(message),
            PromError::Engines(_) => CliError::OtherEngine(message),
            PromError::Output(refused) => CliError::from(refused),
            PromError::Write { .. } => CliError::CannotWrite(message),
            _ => CliError::Input(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_status() {
        assert_eq!(CliError::usage("x").code().code(), 64);
        assert_eq!(CliError::input("x").code().code(), 65);
        assert_eq!(CliError::OtherEngine("x".into()).code().code(), 2);
        assert_eq!(CliError::Undecided("x".into()).code().code(), 2);
        assert_eq!(CliError::cannot_write("x").code().code(), 74);
    }

    #[test]
    fn the_worst_verdict_wins() {
        use ExitCode::*;
        assert_eq!(worst(Passed, Undecided), Undecided);
        assert_eq!(worst(TripwireFailed, Undecided), TripwireFailed);
        assert_eq!(worst(Undecided, Passed), Undecided);
        assert_eq!(worst(Passed, Interrupted), Interrupted);
    }
}
