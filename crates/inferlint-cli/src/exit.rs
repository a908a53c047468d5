//! Every exit status the command can return, in one place.

use inferlint_core::status::{CheckResult, Outcome};

/// The process exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Everything passed (warnings allowed).
    Passed = 0,
    /// A tripwire failed (or a warning, with `--strict`).
    TripwireFailed = 1,
    /// A tripwire could not decide, an input came from another engine than the one named,
    /// an input is unusable, or the command line is wrong.
    Undecided = 2,
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
        match Outcome::of(results, strict) {
            Outcome::Passed => ExitCode::Passed,
            Outcome::TripwireFailed => ExitCode::TripwireFailed,
            Outcome::Undecided => ExitCode::Undecided,
        }
    }
}

/// An error that ends the command: a one-line message for stderr and its exit status.
#[derive(Debug)]
pub struct CliError {
    pub code: ExitCode,
    pub message: String,
}

impl CliError {
    /// An unusable input or a wrong command line: exit 2.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError {
            code: ExitCode::Undecided,
            message: message.into(),
        }
    }
}

impl From<inferlint_engines::files::FileError> for CliError {
    fn from(e: inferlint_engines::files::FileError) -> CliError {
        CliError::usage(format!("cannot read {e}"))
    }
}

impl From<inferlint_engines::load::LoadError> for CliError {
    fn from(e: inferlint_engines::load::LoadError) -> CliError {
        CliError::usage(e.to_string())
    }
}
