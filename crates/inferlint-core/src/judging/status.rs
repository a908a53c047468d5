//! The verdict type: five statuses, the tripwire id and a check result with its evidence.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;

/// Evidence behind a result: named values, kept in the order the check computed them, so
/// that the `--json` output reads in that order whatever features `serde_json` was built
/// with. Which keys each check writes is listed in [`crate::judging::evidence`].
pub type Evidence = crate::model::object::JsonObject;

/// What a check concluded. `Unknown` is "Can't tell": it never counts as a pass.
///
/// `NotChecked` is no verdict at all: the tripwire applies to the run, but an input it
/// needs was not given (the message says which). It is listed so that a check never
/// vanishes silently from the results; like `NotApplicable` it does not change the exit
/// status on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Status {
    /// Tripwire failed: the run fell into the trap (`fail` in `--json`).
    Fail,
    /// Warning: worth knowing, not wrong by itself (`warn`).
    Warn,
    /// Can't tell: the evidence does not decide (`unknown`); never a pass.
    Unknown,
    /// Pass (`pass`).
    Pass,
    /// Does not apply to this engine or run (`not_applicable`).
    NotApplicable,
    /// Not checked: an input it needs was not given (`not_checked`).
    NotChecked,
}

impl Status {
    /// The word used in `--json` output (the contract shared with the Python tool).
    pub fn json_word(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Unknown => "unknown",
            Status::NotApplicable => "not_applicable",
            Status::NotChecked => "not_checked",
        }
    }

    /// Whether this is a verdict on the run (pass, warn, fail, can't tell): neither "does
    /// not apply" nor "not checked".
    pub fn is_verdict(self) -> bool {
        !matches!(self, Status::NotApplicable | Status::NotChecked)
    }

    /// Parses the `--json` word back.
    pub fn from_json_word(word: &str) -> Option<Status> {
        Some(match word {
            "pass" => Status::Pass,
            "warn" => Status::Warn,
            "fail" => Status::Fail,
            "unknown" => Status::Unknown,
            "not_applicable" => Status::NotApplicable,
            "not_checked" => Status::NotChecked,
            _ => return None,
        })
    }

    /// The label printed on a terminal line.
    pub fn terminal_label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Warn => "WARN",
            Status::Fail => "TRIPWIRE-FAILED",
            Status::Unknown => "????",
            Status::NotApplicable => "N/A",
            Status::NotChecked => "NOT-CHECKED",
        }
    }

    /// The words a person reads in a report.
    pub fn human(self) -> &'static str {
        match self {
            Status::Pass => "Pass",
            Status::Warn => "Warning",
            Status::Fail => "Tripwire failed",
            Status::Unknown => "Can't tell",
            Status::NotApplicable => "Does not apply",
            Status::NotChecked => "Not checked",
        }
    }
}

/// A tripwire id. Which ids exist is the catalogue's to say ([`crate::story::catalogue`]): an id
/// is built from a number only when the catalogue has an entry for it, and the constants
/// that name them (`Tripwire::T9`) stand beside the entries there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tripwire(u8);

impl Tripwire {
    /// The id of number `n`, for the catalogue's constants.
    pub(crate) const fn declare(n: u8) -> Tripwire {
        Tripwire(n)
    }

    /// The id's number: 9 for `T9`.
    pub fn number(self) -> u8 {
        self.0
    }
}

impl fmt::Display for Tripwire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.0)
    }
}

/// One check's answer: which tripwire, what status, a one-line message in the run's own
/// numbers, and the evidence behind it. More fields may come (it is
/// `#[non_exhaustive]`): read it through its methods, make one with [`CheckResult::new`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CheckResult {
    /// The tripwire answered for.
    pub tripwire: Tripwire,
    /// What the check concluded.
    pub status: Status,
    /// One line in the run's own numbers.
    pub message: String,
    /// The named values behind the verdict ([`crate::judging::evidence`] lists the keys).
    pub evidence: Evidence,
    /// Extra words shown on a terminal line but not in `--json` (T10's integer-second
    /// comparison), so that JSON messages stay identical to the established tool's.
    pub terminal_suffix: Option<String>,
    /// What to change, in the run's own numbers and the engine's own setting names, when
    /// the run gives them (`raise --gpu-memory-utilization above 0.93 ...`). Kept apart
    /// from the message so that messages stay comparable with the established tool's.
    pub advice: Vec<String>,
}

impl CheckResult {
    /// A result with no evidence and no advice yet.
    pub fn new(tripwire: Tripwire, status: Status, message: impl Into<String>) -> CheckResult {
        CheckResult {
            tripwire,
            status,
            message: message.into(),
            evidence: Evidence::new(),
            terminal_suffix: None,
            advice: Vec::new(),
        }
    }

    /// A tripwire that applies to the run but could not be checked: `needs` says what
    /// was missing (`needs the load tool's result file`), `inputs` names each missing
    /// input for scripts (`bench_result`).
    pub fn not_checked(
        tripwire: Tripwire,
        needs: impl Into<String>,
        inputs: &[&str],
    ) -> CheckResult {
        CheckResult::new(tripwire, Status::NotChecked, needs).with("needs", inputs.to_vec())
    }

    /// Adds one evidence entry (builder style).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> CheckResult {
        self.evidence.insert(key.to_owned(), value.into());
        self
    }

    /// Adds every entry of `evidence` (builder style).
    pub fn with_evidence(mut self, evidence: Evidence) -> CheckResult {
        self.evidence.extend(evidence);
        self
    }

    /// The tripwire this result answers for; it displays as `T1`.
    pub fn tripwire(&self) -> Tripwire {
        self.tripwire
    }

    /// What the check concluded.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The one-line message, in the run's own numbers (the `--json` `message`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// What to change, one sentence each (the `--json` `advice`).
    pub fn advice(&self) -> &[String] {
        &self.advice
    }

    /// The evidence behind the result, in the order the check wrote it. Which keys
    /// each tripwire writes is listed in [`crate::judging::evidence`].
    pub fn evidence(&self) -> &Evidence {
        &self.evidence
    }

    /// One evidence value read as `T` (a number, a string, a list, a struct of yours),
    /// or `None` when the key is absent or holds another type. A count the check kept as
    /// a whole float (`16.0`) also reads as an integer type.
    ///
    /// ```
    /// use inferlint_core::{CheckResult, Status, Tripwire};
    /// let r = CheckResult::new(Tripwire::T1, Status::Fail, "16 preemptions during the run")
    ///     .with("preemptions", 16.0);
    /// assert_eq!(r.evidence_as::<f64>("preemptions"), Some(16.0));
    /// assert_eq!(r.evidence_as::<u64>("preemptions"), Some(16));
    /// assert_eq!(r.evidence_as::<String>("preemptions"), None);
    /// assert_eq!(r.evidence_as::<f64>("no such key"), None);
    /// ```
    pub fn evidence_as<T: serde::de::DeserializeOwned>(&self, key: &str) -> Option<T> {
        let value = self.evidence.get(key)?;
        if let Ok(read) = T::deserialize(value) {
            return Some(read);
        }
        // Counters are read as floats; a whole one is a count for a caller that asks
        // for an integer.
        let whole = value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)?;
        T::deserialize(&Value::from(whole as i64)).ok()
    }

    /// An evidence number (`None` when absent or not a number).
    pub fn evidence_f64(&self, key: &str) -> Option<f64> {
        self.evidence.get(key).and_then(Value::as_f64)
    }

    /// An evidence text (`None` when absent or not a text).
    pub fn evidence_str(&self, key: &str) -> Option<&str> {
        self.evidence.get(key).and_then(Value::as_str)
    }

    /// Prefixes the message with a label (several boot logs in one `check-log`).
    pub fn labelled(mut self, label: &str) -> CheckResult {
        self.message = format!("{label}: {}", self.message);
        self
    }

    /// The terminal line: `[ T1] TRIPWIRE-FAILED  22 preemptions during the run`.
    pub fn terminal_line(&self) -> String {
        let id = self.tripwire.to_string();
        let mut line = format!(
            "[{id:>3}] {}  {}",
            self.status.terminal_label(),
            self.message
        );
        if let Some(suffix) = &self.terminal_suffix {
            line.push_str(suffix);
        }
        line
    }

    /// The terminal line, then one indented `advice:` line per piece of advice.
    pub fn terminal_block(&self) -> String {
        let mut text = self.terminal_line();
        text.push('\n');
        for advice in &self.advice {
            text.push_str(ADVICE_INDENT);
            text.push_str("advice: ");
            text.push_str(advice);
            text.push('\n');
        }
        text
    }
}

/// A status serialises as its `--json` word (`fail`, `not_checked`).
impl Serialize for Status {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.json_word())
    }
}

/// A tripwire serialises as its id (`T9`).
impl Serialize for Tripwire {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A result serialises as one entry of the `--json` array: `tripwire`, `status`,
/// `message`, `evidence`, `advice`, in that order ([`crate::story::contract`]).
impl Serialize for CheckResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("CheckResult", 5)?;
        s.serialize_field("tripwire", &self.tripwire)?;
        s.serialize_field("status", &self.status)?;
        s.serialize_field("message", &self.message)?;
        s.serialize_field("evidence", &self.evidence)?;
        s.serialize_field("advice", &self.advice)?;
        s.end()
    }
}

/// Advice lines start under the status label, past the `[ T1] ` column.
const ADVICE_INDENT: &str = "      ";

/// How a set of results maps onto the process exit status: one table for every command.
/// In JSON: `passed`, `tripwire_failed`, `undecided`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// Everything passed (warnings allowed).
    Passed,
    /// A tripwire failed, or a warning under `--strict`.
    TripwireFailed,
    /// A tripwire could not decide.
    Undecided,
}

impl Outcome {
    /// The outcome of a set of results; `strict` counts a warning as a failure.
    pub fn of(results: &[CheckResult], strict: bool) -> Outcome {
        let any = |s: Status| results.iter().any(|r| r.status == s);
        if any(Status::Fail) || (strict && any(Status::Warn)) {
            Outcome::TripwireFailed
        } else if any(Status::Unknown) {
            Outcome::Undecided
        } else {
            Outcome::Passed
        }
    }
}

/// The count line: `8 checks (4 pass, 2 warn, 2 tripwire-failed)`, plus `; 1 does not
/// apply` when some results do not apply to the engine and `; 2 not checked` when some
/// lacked an input.
pub fn count_line(results: &[CheckResult]) -> String {
    let count = |s: Status| results.iter().filter(|r| r.status == s).count();
    let not_applicable = count(Status::NotApplicable);
    let not_checked = count(Status::NotChecked);
    let checked = results.len() - not_applicable - not_checked;
    let parts: Vec<String> = [
        (Status::Pass, "pass"),
        (Status::Warn, "warn"),
        (Status::Fail, "tripwire-failed"),
        (Status::Unknown, "unknown"),
    ]
    .iter()
    .filter_map(|&(status, word)| {
        let n = count(status);
        (n > 0).then(|| format!("{n} {word}"))
    })
    .collect();
    let mut line = format!(
        "{checked} check{} ({})",
        if checked == 1 { "" } else { "s" },
        parts.join(", ")
    );
    match not_applicable {
        0 => {}
        1 => line.push_str("; 1 does not apply"),
        n => line.push_str(&format!("; {n} do not apply")),
    }
    if not_checked > 0 {
        line.push_str(&format!("; {not_checked} not checked"));
    }
    line
}

/// Whether any result is a verdict on the run. Without one, the inputs allowed no check
/// at all, and a command must not answer as if the run had passed.
pub fn any_verdict(results: &[CheckResult]) -> bool {
    results.iter().any(|r| r.status.is_verdict())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_line_pads_the_id_to_three() {
        let r = CheckResult::new(Tripwire::T1, Status::Fail, "22 preemptions during the run");
        assert_eq!(
            r.terminal_line(),
            "[ T1] TRIPWIRE-FAILED  22 preemptions during the run"
        );
        let r = CheckResult::new(Tripwire::T14, Status::Unknown, "x");
        assert_eq!(r.terminal_line(), "[T14] ????  x");
    }

    #[test]
    fn count_line_matches_the_tutorial() {
        let mk = |s| CheckResult::new(Tripwire::T1, s, "");
        let results: Vec<_> = [
            Status::Pass,
            Status::Pass,
            Status::Pass,
            Status::Pass,
            Status::Warn,
            Status::Warn,
            Status::Fail,
            Status::Fail,
        ]
        .into_iter()
        .map(mk)
        .collect();
        assert_eq!(
            count_line(&results),
            "8 checks (4 pass, 2 warn, 2 tripwire-failed)"
        );
        let mut with_na = results.clone();
        with_na.push(mk(Status::NotApplicable));
        assert!(count_line(&with_na).ends_with("; 1 does not apply"));
    }

    #[test]
    fn outcome_follows_the_exit_rule() {
        let mk = |s| CheckResult::new(Tripwire::T1, s, "");
        assert_eq!(
            Outcome::of(&[mk(Status::Pass), mk(Status::Warn)], false),
            Outcome::Passed
        );
        assert_eq!(
            Outcome::of(&[mk(Status::Warn)], true),
            Outcome::TripwireFailed
        );
        assert_eq!(
            Outcome::of(&[mk(Status::Unknown), mk(Status::Pass)], false),
            Outcome::Undecided
        );
        assert_eq!(
            Outcome::of(&[mk(Status::Unknown), mk(Status::Fail)], false),
            Outcome::TripwireFailed
        );
        assert_eq!(
            Outcome::of(&[mk(Status::NotApplicable)], true),
            Outcome::Passed
        );
    }

    #[test]
    fn not_checked_is_counted_apart_and_never_a_verdict() {
        let mk = |s| CheckResult::new(Tripwire::T1, s, "");
        let results = [
            mk(Status::Pass),
            CheckResult::not_checked(
                Tripwire::T15,
                "needs the load tool's result file",
                &["bench_result"],
            ),
        ];
        assert_eq!(count_line(&results), "1 check (1 pass); 1 not checked");
        assert_eq!(Outcome::of(&results, true), Outcome::Passed);
        assert!(any_verdict(&results));
        assert!(!any_verdict(&results[1..]));
        assert_eq!(
            results[1].terminal_line(),
            "[T15] NOT-CHECKED  needs the load tool's result file"
        );
        assert_eq!(
            Status::from_json_word("not_checked"),
            Some(Status::NotChecked)
        );
    }

    #[test]
    fn advice_prints_under_its_verdict() {
        let mut r = CheckResult::new(Tripwire::T8, Status::Fail, "held back");
        r.advice.push("raise --max-num-seqs to 32".into());
        assert_eq!(
            r.terminal_block(),
            "[ T8] TRIPWIRE-FAILED  held back\n      advice: raise --max-num-seqs to 32\n"
        );
    }

    #[test]
    fn tripwire_parse() {
        assert_eq!(Tripwire::parse("t9"), Some(Tripwire::T9));
        assert_eq!(Tripwire::parse("T16"), Some(Tripwire::T16));
        assert_eq!(Tripwire::parse("T200"), None);
        assert_eq!(Tripwire::parse("x"), None);
        assert_eq!(Tripwire::parse("T18"), Some(Tripwire::T18));
        assert_eq!(Tripwire::parse("20"), Some(Tripwire::T20));
    }

    /// Ids come from the catalogue: a number it has no entry for is no tripwire, and the
    /// list a reader sees names exactly its entries.
    #[test]
    fn ids_are_the_catalogues() {
        // 200 is past any catalogue this crate will have: no entry, no id.
        assert_eq!(Tripwire::new(200), None);
        assert_eq!(Tripwire::new(0), None);
        assert_eq!(Tripwire::new(18), Some(Tripwire::T18));
        let numbers: Vec<u8> = Tripwire::all().map(Tripwire::number).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            numbers, sorted,
            "the catalogue is in number order, each id once"
        );
        // Consecutive numbers from 1 are named as one range, whatever the last.
        let last = numbers.last().copied().unwrap();
        if numbers == (1..=last).collect::<Vec<u8>>() {
            assert_eq!(Tripwire::all_named(), format!("T1-T{last}"));
        }
    }
}
