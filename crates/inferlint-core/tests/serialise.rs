//! A result serialised with serde is exactly its entry of the `--json` array, so a
//! harness that serialises a report and a script that reads `--json` see the same thing.

use inferlint_core::judging::status::Outcome;
use inferlint_core::story::contract::results_json;
use inferlint_core::story::insights::Insight;
use inferlint_core::{CheckResult, Status, Tripwire};
use serde_json::Value;

fn results() -> Vec<CheckResult> {
    let mut fail = CheckResult::new(Tripwire::T1, Status::Fail, "16 preemptions during the run")
        .with("engine", "vllm")
        .with("preemptions", 16.0);
    fail.advice.push("lower `--max-num-seqs` to 6".into());
    vec![
        fail,
        CheckResult::new(Tripwire::T20, Status::Pass, "lengths as advertised")
            .with("tool", "harness"),
        CheckResult::new(Tripwire::T14, Status::NotApplicable, "does not apply"),
        CheckResult::new(Tripwire::T9, Status::Unknown, "can't tell").with("samples", 3),
        CheckResult::new(Tripwire::T5, Status::Warn, "block size 784"),
        CheckResult::not_checked(Tripwire::T8, "needs a recording of the run", &["series"]),
    ]
}

#[test]
fn a_serialised_result_is_its_json_contract_entry() {
    let results = results();
    let contract: Vec<Value> = serde_json::from_str(&results_json(&results)).unwrap();
    for (result, entry) in results.iter().zip(&contract) {
        let serialised = serde_json::to_value(result).unwrap();
        assert_eq!(&serialised, entry, "{}", result.tripwire);
        // The keys in the contract's order, and the evidence in the check's.
        let text = serde_json::to_string(result).unwrap();
        let at = |key: &str| text.find(&format!("\"{key}\"")).unwrap();
        assert!(at("tripwire") < at("status") && at("status") < at("message"));
        assert!(at("message") < at("evidence") && at("evidence") < at("advice"));
    }
    let t1 = serde_json::to_string(&results[0]).unwrap();
    assert!(t1.find("\"engine\"").unwrap() < t1.find("\"preemptions\"").unwrap());
    assert_eq!(contract[0]["status"], "fail");
    assert_eq!(contract[5]["status"], "not_checked");
    assert_eq!(contract[5]["evidence"]["needs"][0], "series");
}

#[test]
fn statuses_tripwires_and_outcomes_serialise_as_their_words() {
    for status in [
        Status::Pass,
        Status::Warn,
        Status::Fail,
        Status::Unknown,
        Status::NotApplicable,
        Status::NotChecked,
    ] {
        let word = serde_json::to_value(status).unwrap();
        assert_eq!(Status::from_json_word(word.as_str().unwrap()), Some(status));
    }
    assert_eq!(serde_json::to_value(Tripwire::T18).unwrap(), "T18");
    assert_eq!(
        serde_json::to_value(Outcome::TripwireFailed).unwrap(),
        "tripwire_failed"
    );
    assert_eq!(
        serde_json::to_value(Outcome::Undecided).unwrap(),
        "undecided"
    );
    let insight = Insight::new(true, "cache", "The cache held 10 of 32.", "Raise it.");
    assert!(insight.is_limit() && insight.key() == "cache");
    let value = serde_json::to_value(&insight).unwrap();
    assert_eq!(value["key"], "cache");
    assert_eq!(value["limit"], true);
}

/// The typed accessors read what the check wrote, and nothing else.
#[test]
fn evidence_reads_back_typed() {
    let r = &results()[0];
    assert_eq!(r.tripwire(), Tripwire::T1);
    assert_eq!(r.status(), Status::Fail);
    assert_eq!(r.message(), "16 preemptions during the run");
    assert_eq!(r.advice(), ["lower `--max-num-seqs` to 6"]);
    assert_eq!(r.evidence_f64("preemptions"), Some(16.0));
    assert_eq!(r.evidence_str("engine"), Some("vllm"));
    assert_eq!(r.evidence_str("preemptions"), None);
    assert_eq!(r.evidence_as::<u32>("preemptions"), Some(16));
    assert!(inferlint_core::judging::evidence::get("preemptions").is_some());
}
