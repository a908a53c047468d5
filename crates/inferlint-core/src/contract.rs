//! The `--json` contract: the shape scripts read, kept apart from the internal model so
//! that the model can change without breaking them.
//!
//! Version 1 is the shape the established Python tool prints: a JSON array (indent 1) of
//! `{"tripwire", "status", "message", "evidence"}` objects, status one of `pass`, `warn`,
//! `fail`, `unknown`, `not_applicable`. A change that removes or renames a key or a status
//! word bumps [`JSON_CONTRACT_VERSION`].

use serde::Serialize;
use serde_json::{Map, Value};

use crate::status::CheckResult;

/// The version of the `--json` result shape.
pub const JSON_CONTRACT_VERSION: u32 = 1;

#[derive(Serialize)]
struct JsonResult<'a> {
    tripwire: String,
    status: &'static str,
    message: &'a str,
    evidence: &'a Map<String, Value>,
}

/// The results as the `--json` array, with a trailing newline.
pub fn results_json(results: &[CheckResult]) -> String {
    let items: Vec<JsonResult<'_>> = results
        .iter()
        .map(|r| JsonResult {
            tripwire: r.tripwire.to_string(),
            status: r.status.json_word(),
            message: &r.message,
            evidence: &r.evidence,
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
    use crate::status::{Status, Tripwire};

    #[test]
    fn keys_and_words_are_the_contract() {
        let r = CheckResult::new(Tripwire::T1, Status::NotApplicable, "m").with("preemptions", 2.0);
        let v: Value = serde_json::from_str(&results_json(&[r])).unwrap();
        let o = v[0].as_object().unwrap();
        assert_eq!(
            o.keys().collect::<Vec<_>>(),
            ["tripwire", "status", "message", "evidence"]
        );
        assert_eq!(o["tripwire"], "T1");
        assert_eq!(o["status"], "not_applicable");
        assert_eq!(o["evidence"]["preemptions"], 2.0);
    }
}
