//! `--junit FILE`: every result a command prints is also kept here, and written as JUnit
//! XML when the command ends (core's [`inferlint_core::junit`] makes the document).
//!
//! Results are collected where they are turned into text ([`crate::output::results_text`]),
//! so every checking command, xray's stages included, feeds the file without code of its
//! own; `compare` and `sweep` add one suite per run they read. The file is written whole,
//! never over an input: only a new file or an earlier JUnit file of ours is replaced.

use std::path::Path;
use std::sync::Mutex;

use inferlint_core::judging::status::CheckResult;
use inferlint_core::junit::{self, Case, CaseOutcome, Suite};
use inferlint_engines::output::{self as writer, Rule};

use crate::exit::CliError;

#[derive(Debug, Default)]
struct Collected {
    /// The results the command printed, in order.
    printed: Vec<CheckResult>,
    /// Suites a command made itself (one per run of a comparison).
    suites: Vec<Suite>,
    /// Cases of its own (the comparability gate).
    extra: Vec<Case>,
}

static COLLECTED: Mutex<Collected> = Mutex::new(Collected {
    printed: Vec::new(),
    suites: Vec::new(),
    extra: Vec::new(),
});

fn collected() -> std::sync::MutexGuard<'static, Collected> {
    COLLECTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Keeps results the command printed.
pub fn printed(results: &[CheckResult]) {
    collected().printed.extend_from_slice(results);
}

/// Adds one run's suite (`compare`, `sweep`).
pub fn run_suite(name: &str, classname: &str, results: &[CheckResult], strict: bool) {
    collected().suites.push(Suite {
        name: name.to_owned(),
        classname: classname.to_owned(),
        cases: junit::cases(results, strict),
    });
}

/// Adds cases of the command's own suite.
pub fn cases(cases: Vec<Case>) {
    collected().extra.extend(cases);
}

/// The commands that check something, and so take `--junit`.
pub const CHECKING: &[&str] = &[
    "xray",
    "report",
    "check-log",
    "preemption",
    "rate",
    "series",
    "probe",
    "gpu-inspect",
    "teardown",
    "demo",
    "compare",
    "sweep",
];

/// Whether a file is a JUnit file this command wrote.
fn is_ours(path: &Path) -> bool {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(256).read_to_end(&mut head).is_err() {
        return false;
    }
    junit::is_ours(&String::from_utf8_lossy(&head))
}

/// Refuses, before the command runs, a FILE that may not be written: anything but a new
/// file or our own earlier JUnit file.
pub fn check(path: &Path) -> Result<(), CliError> {
    writer::check(path, &rule()).map_err(|e| CliError::from(e).prefixed("--junit: "))
}

fn rule() -> Rule<'static> {
    Rule {
        force: false,
        reads: &[],
        ours: Some(is_ours),
    }
}

/// Writes the file: the command's suite (what it printed, and its own cases), then the
/// suites it added. `error` is the command's one-line error, when it ended with one: it
/// is a failed case, so that a pipeline sees why there are no verdicts.
pub fn write(
    path: &Path,
    command: &str,
    strict: bool,
    error: Option<&str>,
) -> Result<(), CliError> {
    let collected = std::mem::take(&mut *collected());
    let mut own = junit::cases(&collected.printed, strict);
    own.extend(collected.extra);
    if let Some(message) = error {
        own.push(Case {
            name: "inferlint ran".into(),
            outcome: CaseOutcome::Failed {
                kind: "error".into(),
                message: message.to_owned(),
            },
            output: String::new(),
        });
    }
    let mut suites = Vec::new();
    if !own.is_empty() || collected.suites.is_empty() {
        suites.push(Suite {
            name: format!("inferlint {command}"),
            classname: format!("inferlint.{command}"),
            cases: own,
        });
    }
    suites.extend(collected.suites);
    let xml = junit::xml(&suites);
    writer::write_file(path, xml.as_bytes(), &rule())
        .map_err(|e| CliError::from(e).prefixed("--junit: "))
}
