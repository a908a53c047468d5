//! `--junit FILE`: the results as JUnit XML, the report format CI systems read (GitLab,
//! Jenkins, GitHub's test reporters, Azure Pipelines), written by `quick-junit`.
//!
//! One `<testsuite>` per checked run (or per command), one `<testcase>` per tripwire
//! result, named `T8 concurrency-not-reached`. A failed tripwire is a `<failure>`; Can't
//! tell is `<skipped>` (the exit status still says 2), or a `<failure>` under `--strict`,
//! as is a warning; a warning is otherwise a pass with its message in `<system-out>`.
//! Does not apply and not checked are `<skipped>`, with the reason. The shape is the one
//! those readers share: `testsuites` > `testsuite` (with `name`, `tests`, `failures`,
//! `errors`, `skipped`) > `testcase` (with `name`, `classname`) holding at most one of
//! `failure` / `skipped`, and `system-out`.
//!
//! Text from logs and servers can hold characters XML 1.0 forbids (most C0 controls): they
//! are written as visible escapes (`\x1b`), as on the terminal, so the file always parses
//! and nothing is dropped.
//!
//! Every result a command prints is also kept here, and written when the command ends.
//! Results are collected where they are turned into text ([`crate::output::results_text`]),
//! so every checking command, xray's stages included, feeds the file without code of its
//! own; `compare` and `sweep` add one suite per run they read. The file is written whole,
//! never over an input: only a new file or an earlier JUnit file of ours is replaced.

use std::path::Path;
use std::sync::Mutex;

use inferlint_core::analyses::compare::{Comparison, GateVerdict, ItemState};
use inferlint_core::judging::status::{CheckResult, Status};
use inferlint_core::story::{catalogue, fmt};
use inferlint_engines::output::{self as writer, Rule};
use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::exit::CliError;

/// What became of one test case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseOutcome {
    /// A pass, or a warning without `--strict`.
    Passed,
    /// A failed tripwire; under `--strict` also a warning or a Can't tell.
    Failed {
        /// `tripwire failed`, `warning` or `can't tell`.
        kind: String,
        /// The result's message.
        message: String,
    },
    /// No verdict to gate on: does not apply, not checked, or (without `--strict`) a
    /// Can't tell.
    Skipped {
        /// Why: does not apply, not checked, or can't tell, with the message.
        message: String,
    },
}

/// One `<testcase>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The test case's name: the tripwire and its title.
    pub name: String,
    /// What became of it.
    pub outcome: CaseOutcome,
    /// Extra text: the message of a pass or a warning, the advice of a finding.
    pub output: String,
}

/// One `<testsuite>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    /// `inferlint report run/`.
    pub name: String,
    /// `inferlint.report`: the `classname` of its cases.
    pub classname: String,
    /// Its test cases.
    pub cases: Vec<Case>,
}

/// The name a tripwire's case carries: `T8 concurrency-not-reached`.
fn case_name(result: &CheckResult) -> String {
    match catalogue::find(&result.tripwire.to_string()) {
        Some(info) => format!("{} {}", result.tripwire, info.slug),
        None => result.tripwire.to_string(),
    }
}

/// The cases of a command's results, one per result, in their order.
pub fn cases_of(results: &[CheckResult], strict: bool) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for r in results {
        let mut output = r.message.clone();
        for advice in &r.advice {
            output.push_str("\nadvice: ");
            output.push_str(advice);
        }
        let outcome = match r.status {
            Status::Pass => CaseOutcome::Passed,
            Status::Warn if strict => CaseOutcome::Failed {
                kind: "warning".into(),
                message: r.message.clone(),
            },
            Status::Warn => {
                output = format!("warning: {output}");
                CaseOutcome::Passed
            }
            Status::Fail => CaseOutcome::Failed {
                kind: "tripwire failed".into(),
                message: r.message.clone(),
            },
            Status::Unknown if strict => CaseOutcome::Failed {
                kind: "can't tell".into(),
                message: r.message.clone(),
            },
            Status::Unknown => CaseOutcome::Skipped {
                message: format!("can't tell: {}", r.message),
            },
            Status::NotApplicable => CaseOutcome::Skipped {
                message: format!("does not apply: {}", r.message),
            },
            Status::NotChecked => CaseOutcome::Skipped {
                message: format!("not checked: {}", r.message),
            },
            // A status a later core adds: gated as the one that says least, Can't tell.
            _ if strict => CaseOutcome::Failed {
                kind: "can't tell".into(),
                message: r.message.clone(),
            },
            _ => CaseOutcome::Skipped {
                message: format!("can't tell: {}", r.message),
            },
        };
        let mut name = case_name(r);
        // A tripwire checked on several boot logs: each case keeps a name of its own.
        let repeats = out
            .iter()
            .filter(|c| c.name == name || c.name.starts_with(&format!("{name} #")))
            .count();
        if repeats > 0 {
            name = format!("{name} #{}", repeats + 1);
        }
        out.push(Case {
            name,
            outcome,
            output,
        });
    }
    out
}

/// The cases of a comparison: one per gate item, then the regression gate.
pub fn comparison_cases(c: &Comparison, strict: bool) -> Vec<Case> {
    let mut out = Vec::new();
    for item in &c.items {
        let values = item
            .values
            .iter()
            .map(|v| v.clone().unwrap_or_else(|| "not recorded".into()))
            .collect::<Vec<_>>()
            .join(", ");
        let outcome = match item.state {
            ItemState::Same => CaseOutcome::Passed,
            ItemState::Differs => CaseOutcome::Failed {
                kind: "not comparable".into(),
                message: format!("{} differs ({values})", item.words),
            },
            ItemState::OneSided if strict => CaseOutcome::Failed {
                kind: "can't tell".into(),
                message: format!("{} is recorded by some runs only ({values})", item.words),
            },
            ItemState::OneSided => CaseOutcome::Skipped {
                message: format!(
                    "can't tell: {} is recorded by some runs only ({values})",
                    item.words
                ),
            },
            ItemState::NotRecorded => CaseOutcome::Skipped {
                message: format!("no run records the {}", item.words),
            },
        };
        out.push(Case {
            name: format!("same {}", item.words),
            outcome,
            output: item.effect.unwrap_or("").to_owned(),
        });
    }
    if let Some(gate) = &c.gate {
        let outcome = match gate.verdict {
            GateVerdict::Passed => CaseOutcome::Passed,
            GateVerdict::Regressed => CaseOutcome::Failed {
                kind: "regression".into(),
                message: gate.regressions.join("; "),
            },
            GateVerdict::Inconclusive => CaseOutcome::Failed {
                kind: "inconclusive".into(),
                message: gate
                    .figures
                    .iter()
                    .filter(|f| f.verdict == GateVerdict::Inconclusive)
                    .map(|f| f.words.clone())
                    .chain(gate.warnings.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("; "),
            },
            GateVerdict::CannotGate => CaseOutcome::Failed {
                kind: "cannot gate".into(),
                message: gate.reason.clone().unwrap_or_default(),
            },
        };
        out.push(Case {
            name: format!(
                "no regression over {}",
                fmt::percent(gate.max_regression, 1)
            ),
            outcome,
            output: String::new(),
        });
    }
    // One case per other side's goodput under the service level (`compare --slo`).
    for g in c.service_level.iter().flat_map(|l| &l.gates) {
        let outcome = match g.verdict {
            inferlint_core::analyses::slo::GateVerdict::Passed => CaseOutcome::Passed,
            inferlint_core::analyses::slo::GateVerdict::Regressed => CaseOutcome::Failed {
                kind: "regression".into(),
                message: g.words.clone(),
            },
            inferlint_core::analyses::slo::GateVerdict::CannotGate => CaseOutcome::Failed {
                kind: "cannot gate".into(),
                message: g.words.clone(),
            },
        };
        out.push(Case {
            name: format!("goodput of {} at the service level", g.side),
            outcome,
            output: g.words.clone(),
        });
    }
    out
}

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
        cases: cases_of(results, strict),
    });
}

/// Adds cases of the command's own suite.
pub fn add_cases(cases: Vec<Case>) {
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
    String::from_utf8_lossy(&head).starts_with(HEAD)
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
    let mut own = cases_of(&collected.printed, strict);
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
    let xml = xml(&suites).map_err(|e| CliError::cannot_write(format!("--junit: {e}")))?;
    writer::write_file(path, xml.as_bytes(), &rule())
        .map_err(|e| CliError::from(e).prefixed("--junit: "))
}

/// How every document this module writes begins: a rerun may replace a file that does.
const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"inferlint\" ";

/// Text with the characters XML 1.0 does not allow (and the bidirectional controls) as
/// visible escapes, as on the terminal; the writer escapes the markup characters.
fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            c if fmt::is_unsafe_for_terminal(c)
                || c == '\r'
                || matches!(c, '\u{fffe}' | '\u{ffff}') =>
            {
                out.push_str(&fmt::visible_escape(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// The whole document.
fn xml(suites: &[Suite]) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("inferlint");
    for suite in suites {
        let mut out = TestSuite::new(shown(&suite.name));
        for case in &suite.cases {
            let status = match &case.outcome {
                CaseOutcome::Passed => TestCaseStatus::success(),
                CaseOutcome::Failed { kind, message } => {
                    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    s.set_type(shown(kind))
                        .set_message(shown(message))
                        .set_description(shown(message));
                    s
                }
                CaseOutcome::Skipped { message } => {
                    let mut s = TestCaseStatus::skipped();
                    s.set_message(shown(message));
                    s
                }
            };
            let mut test = TestCase::new(shown(&case.name), status);
            test.set_classname(shown(&suite.classname));
            if !case.output.is_empty() {
                test.set_system_out(shown(&case.output));
            }
            out.add_test_case(test);
        }
        report.add_test_suite(out);
    }
    report.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::judging::status::Tripwire;

    #[test]
    fn each_status_becomes_the_case_ci_expects() {
        let results = [
            CheckResult::new(Tripwire::T1, Status::Fail, "22 preemptions"),
            CheckResult::new(Tripwire::T9, Status::Warn, "ceiling moved"),
            CheckResult::new(Tripwire::T8, Status::Unknown, "no gauge"),
            CheckResult::new(Tripwire::T14, Status::NotApplicable, "sglang"),
            CheckResult::new(Tripwire::T12, Status::Pass, "no failure"),
        ];
        let loose = cases_of(&results, false);
        assert!(matches!(loose[0].outcome, CaseOutcome::Failed { .. }));
        assert_eq!(loose[1].outcome, CaseOutcome::Passed);
        assert!(loose[1].output.starts_with("warning: "));
        assert!(matches!(loose[2].outcome, CaseOutcome::Skipped { .. }));
        assert!(matches!(loose[3].outcome, CaseOutcome::Skipped { .. }));
        let strict = cases_of(&results, true);
        assert!(matches!(strict[1].outcome, CaseOutcome::Failed { .. }));
        assert!(matches!(strict[2].outcome, CaseOutcome::Failed { .. }));
        assert_eq!(loose[0].name, "T1 silent-preemption");
    }

    #[test]
    fn text_xml_forbids_is_shown_not_written() {
        let message = "a<b & \"c\"\u{1b}[2J\u{0}";
        let suite = Suite {
            name: "inferlint report run/".into(),
            classname: "inferlint.report".into(),
            cases: cases_of(
                &[CheckResult::new(Tripwire::T1, Status::Fail, message)],
                false,
            ),
        };
        let text = xml(&[suite]).unwrap();
        assert!(text.starts_with(HEAD), "{text}");
        // Read back as a CI reader reads it: the markup characters come back as written,
        // the escape and the NUL as their visible forms, nothing dropped.
        let doc = roxmltree::Document::parse(&text).unwrap();
        let failure = doc
            .descendants()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        let shown = "a<b & \"c\"\\x1b[2J\\x00";
        assert_eq!(failure.attribute("message"), Some(shown));
        assert_eq!(failure.text(), Some(shown));
        assert_eq!(failure.attribute("type"), Some("tripwire failed"));
        let root = doc.root_element();
        assert_eq!(root.attribute("tests"), Some("1"));
        assert_eq!(root.attribute("failures"), Some("1"));
    }

    #[test]
    fn a_tripwire_on_several_logs_keeps_distinct_names() {
        let r = CheckResult::new(Tripwire::T12, Status::Pass, "a");
        let c = cases_of(&[r.clone(), r.clone(), r], false);
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "T12 unexplained-failure",
                "T12 unexplained-failure #2",
                "T12 unexplained-failure #3"
            ]
        );
    }
}
