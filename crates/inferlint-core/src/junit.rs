//! `--junit FILE`: the results as JUnit XML, the report format CI systems read (GitLab,
//! Jenkins, GitHub's test reporters, Azure Pipelines).
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
//! are written as visible escapes (`\x1b`), as on the terminal, so the file always parses.

use crate::analyses::compare::{Comparison, GateVerdict, ItemState};
use crate::judging::status::{CheckResult, Status};
use crate::story::catalogue;
use crate::story::fmt;

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
pub fn cases(results: &[CheckResult], strict: bool) -> Vec<Case> {
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
            crate::analyses::slo::GateVerdict::Passed => CaseOutcome::Passed,
            crate::analyses::slo::GateVerdict::Regressed => CaseOutcome::Failed {
                kind: "regression".into(),
                message: g.words.clone(),
            },
            crate::analyses::slo::GateVerdict::CannotGate => CaseOutcome::Failed {
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

/// Text as XML character data or an attribute value: markup characters as entities,
/// characters XML 1.0 does not allow (and the bidirectional controls) as visible escapes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
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
pub fn xml(suites: &[Suite]) -> String {
    let count = |s: &Suite, f: &dyn Fn(&CaseOutcome) -> bool| {
        s.cases.iter().filter(|c| f(&c.outcome)).count()
    };
    let failed = |o: &CaseOutcome| matches!(o, CaseOutcome::Failed { .. });
    let skipped = |o: &CaseOutcome| matches!(o, CaseOutcome::Skipped { .. });
    let total: usize = suites.iter().map(|s| s.cases.len()).sum();
    let failures: usize = suites.iter().map(|s| count(s, &failed)).sum();
    let skips: usize = suites.iter().map(|s| count(s, &skipped)).sum();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    out.push_str(&format!(
        "<testsuites name=\"inferlint\" tests=\"{total}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skips}\">\n"
    ));
    for suite in suites {
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
            escape(&suite.name),
            suite.cases.len(),
            count(suite, &failed),
            count(suite, &skipped)
        ));
        for case in &suite.cases {
            out.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"0\">",
                escape(&suite.classname),
                escape(&case.name)
            ));
            match &case.outcome {
                CaseOutcome::Passed => {}
                CaseOutcome::Failed { kind, message } => out.push_str(&format!(
                    "<failure type=\"{}\" message=\"{}\">{}</failure>",
                    escape(kind),
                    escape(message),
                    escape(message)
                )),
                CaseOutcome::Skipped { message } => {
                    out.push_str(&format!("<skipped message=\"{}\"/>", escape(message)));
                }
            }
            if !case.output.is_empty() {
                out.push_str(&format!(
                    "<system-out>{}</system-out>",
                    escape(&case.output)
                ));
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

/// Whether a file's start is a JUnit document this module wrote: a rerun may replace it.
pub fn is_ours(head: &str) -> bool {
    head.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"inferlint\" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::status::Tripwire;

    #[test]
    fn each_status_becomes_the_case_ci_expects() {
        let results = [
            CheckResult::new(Tripwire::T1, Status::Fail, "22 preemptions"),
            CheckResult::new(Tripwire::T9, Status::Warn, "ceiling moved"),
            CheckResult::new(Tripwire::T8, Status::Unknown, "no gauge"),
            CheckResult::new(Tripwire::T14, Status::NotApplicable, "sglang"),
            CheckResult::new(Tripwire::T12, Status::Pass, "no failure"),
        ];
        let loose = cases(&results, false);
        assert!(matches!(loose[0].outcome, CaseOutcome::Failed { .. }));
        assert_eq!(loose[1].outcome, CaseOutcome::Passed);
        assert!(loose[1].output.starts_with("warning: "));
        assert!(matches!(loose[2].outcome, CaseOutcome::Skipped { .. }));
        assert!(matches!(loose[3].outcome, CaseOutcome::Skipped { .. }));
        let strict = cases(&results, true);
        assert!(matches!(strict[1].outcome, CaseOutcome::Failed { .. }));
        assert!(matches!(strict[2].outcome, CaseOutcome::Failed { .. }));
        assert_eq!(loose[0].name, "T1 silent-preemption");
    }

    #[test]
    fn text_xml_forbids_is_shown_not_written() {
        assert_eq!(
            escape("a<b & \"c\"\u{1b}[2J\u{0}"),
            "a&lt;b &amp; &quot;c&quot;\\x1b[2J\\x00"
        );
    }

    #[test]
    fn a_tripwire_on_several_logs_keeps_distinct_names() {
        let r = CheckResult::new(Tripwire::T12, Status::Pass, "a");
        let c = cases(&[r.clone(), r.clone(), r], false);
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
