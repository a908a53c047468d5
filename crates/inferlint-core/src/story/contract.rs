//! The `--json` contract: the shape scripts read, kept apart from the internal model so
//! that the model can change without breaking them.
//!
//! Version 1 is the shape the established Python tool prints: a JSON array (indent 1) of
//! `{"tripwire", "status", "message", "evidence"}` objects, status one of `pass`, `warn`,
//! `fail`, `unknown`, `not_applicable`.
//!
//! Version 2 keeps that array, its order and every key, so that a script written for the
//! established tool reads it unchanged, and adds:
//! - a fifth key, `advice`: an array of strings, what to change in the engine's own
//!   setting names and the run's numbers (empty when the run gives none);
//! - a sixth status word, `not_checked`: a tripwire the command covers but could not
//!   check because an input was missing. Such entries come after every verdict; their
//!   `message` says what is needed and `evidence.needs` names the inputs. They change
//!   neither the exit status nor a count of verdicts, so a script that keeps only the
//!   statuses it knows sees exactly the verdicts the established tool would print.
//!
//! Keys come in the order the contract gives and, within `evidence`, in the order the
//! check computed them ([`JsonObject`] keeps it, without turning on any `serde_json`
//! feature for the crates that link this one). An object nested inside an evidence value
//! has its keys in alphabetical order.
//!
//! The `tripwire` values are the catalogue's ids: a new tripwire (T16 to T21) adds entries
//! with a new id and keeps every other entry as it was, so a script that keeps the ids it
//! knows sees the same verdicts. A change that removes or renames a key or a status word,
//! or adds a status word, bumps [`JSON_CONTRACT_VERSION`].

use crate::judging::status::{CheckResult, Evidence};
pub use crate::model::object::JsonObject;
use serde::Serialize;

/// The version of the `--json` result shape.
pub const JSON_CONTRACT_VERSION: u32 = 2;

#[derive(Serialize)]
struct JsonResult<'a> {
    tripwire: String,
    status: &'static str,
    message: &'a str,
    evidence: &'a Evidence,
    advice: &'a [String],
}

/// The results as the `--json` array, with a trailing newline. Not-checked entries are
/// moved after every verdict (keeping their order), as the contract promises.
pub fn results_json(results: &[CheckResult]) -> String {
    let (verdicts, not_checked): (Vec<&CheckResult>, Vec<&CheckResult>) = results
        .iter()
        .partition(|r| r.status != crate::judging::status::Status::NotChecked);
    let items: Vec<JsonResult<'_>> = verdicts
        .into_iter()
        .chain(not_checked)
        .map(|r| JsonResult {
            tripwire: r.tripwire.to_string(),
            status: r.status.json_word(),
            message: &r.message,
            evidence: &r.evidence,
            advice: &r.advice,
        })
        .collect();
    let mut text = to_indent1(&items);
    text.push('\n');
    text
}

/// Any value as JSON with a one-space indent (the layout of the established tool's files).
pub fn to_indent1<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b" ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    value
        .serialize(&mut ser)
        .expect("serialising plain data to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judging::status::{Status, Tripwire};
    use serde_json::Value;

    /// The keys' order is the contract's, and the evidence's the check's, with no
    /// `serde_json` feature turned on (this crate's tests build it without any).
    #[test]
    fn keys_and_words_are_the_contract() {
        let r = CheckResult::new(Tripwire::T1, Status::NotApplicable, "m")
            .with("preemptions", 2.0)
            .with("counter", "x")
            .with("before", 1);
        let text = results_json(&[r]);
        let in_order: Vec<JsonObject> = serde_json::from_str(&text).unwrap();
        let o = &in_order[0];
        // The established tool's four keys first and in its order; version 2 adds one.
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            ["tripwire", "status", "message", "evidence", "advice"]
        );
        #[derive(serde::Deserialize)]
        struct Item {
            evidence: JsonObject,
        }
        let items: Vec<Item> = serde_json::from_str(&text).unwrap();
        assert_eq!(
            items[0].evidence.keys().collect::<Vec<_>>(),
            ["preemptions", "counter", "before"],
            "the order the check wrote them, not alphabetical"
        );
        assert_eq!(o["tripwire"], "T1");
        assert_eq!(o["status"], "not_applicable");
        assert_eq!(o["evidence"]["preemptions"], 2.0);
        assert_eq!(o["advice"], serde_json::json!([]));
        assert_eq!(JSON_CONTRACT_VERSION, 2);
    }

    /// A script written for the established tool keeps the statuses it knows; what it
    /// keeps must be exactly the verdicts, in their order, never a not-checked entry.
    #[test]
    fn not_checked_entries_follow_every_verdict() {
        let mut fail = CheckResult::new(Tripwire::T8, Status::Fail, "held back");
        fail.advice.push("raise --max-num-seqs to 32".into());
        let results = [
            CheckResult::new(Tripwire::T12, Status::Pass, "no failure in log"),
            CheckResult::not_checked(
                Tripwire::T15,
                "needs the load tool's result file",
                &["bench_result"],
            ),
            fail,
        ];
        let v: Value = serde_json::from_str(&results_json(&results)).unwrap();
        let items = v.as_array().unwrap();
        let pairs: Vec<(&str, &str)> = items
            .iter()
            .map(|r| {
                (
                    r["tripwire"].as_str().unwrap(),
                    r["status"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            pairs,
            [("T12", "pass"), ("T8", "fail"), ("T15", "not_checked")]
        );
        assert_eq!(items[1]["advice"][0], "raise --max-num-seqs to 32");
        assert_eq!(items[2]["evidence"]["needs"][0], "bench_result");
        let known = ["pass", "warn", "fail", "unknown", "not_applicable"];
        let kept = items
            .iter()
            .filter(|r| known.contains(&r["status"].as_str().unwrap()))
            .count();
        assert_eq!(kept, 2);
    }
}
