//! The report decides nothing: it renders the run's account and the verdicts, and reads
//! no figure out of a verdict's evidence by its key. A key read by string is a sentence
//! that a renamed key silently drops (the story once read 13 of them); the account is
//! typed, so a renamed field is a compile error instead.
//!
//! Evidence is a JSON object on each [`inferlint_core::CheckResult`], read as
//! `r.evidence.get("key")`, `r.evidence["key"]`, `r.evidence.contains_key("key")`, or
//! through `r.evidence_as::<T>("key")`; a helper of the report's own would take the key as
//! an argument (`evidence_f64(t8, "peak_running")`, as the report had). Each is refused
//! below. Listing a result's whole evidence (the Evidence table under a finding, which
//! iterates it) names no key and is the rendering of the verdict itself.

use std::fs;
use std::path::Path;

/// Why a line reads evidence by key, if it does.
fn reads_evidence_by_key(line: &str) -> Option<&'static str> {
    let code = line.split("//").next().unwrap_or("");
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    for (access, why) in [
        ("evidence.get(", "the evidence map read by key"),
        ("evidence[", "the evidence map indexed by key"),
        ("evidence.contains_key(", "the evidence map asked for a key"),
        ("evidence_as", "CheckResult::evidence_as reads a key"),
    ] {
        if compact.contains(access) {
            return Some(why);
        }
    }
    // A helper named for evidence, called with a string literal: `evidence_f64(r, "k")`.
    let mut rest = compact.as_str();
    while let Some(at) = rest.find("evidence") {
        let after = &rest[at + "evidence".len()..];
        let name_end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let tail = &after[name_end..];
        if let Some(args) = tail.strip_prefix('(') {
            let close = args.find(')').unwrap_or(args.len());
            if args[..close].contains('"') {
                return Some("a helper given the key as a string");
            }
        }
        rest = after;
    }
    None
}

#[test]
fn the_detector_knows_each_way_evidence_is_read() {
    for bad in [
        r#"let p = r.evidence.get("peak_running").and_then(Value::as_f64);"#,
        r#"let p = &r.evidence["peak_running"];"#,
        r#"if r.evidence.contains_key("restarted") {"#,
        r#"let n = r.evidence_as::<u64>("requested");"#,
        r#"let peak = evidence_f64(t8, "peak_running");"#,
        r#"    .and_then(|r| r.evidence .get ("inferred_usable_blocks"))"#,
    ] {
        assert!(reads_evidence_by_key(bad).is_some(), "not caught: {bad}");
    }
    for good in [
        "@for (key, value) in &result.evidence {",
        "@if !result.evidence.is_empty() {",
        "dd { (evidence_value(value)) }",
        "details.evidence {",
        r#"// once read as evidence_f64(t8, "peak_running")"#,
        r#"let peak = report.account.happened.peak_running;"#,
    ] {
        assert!(reads_evidence_by_key(good).is_none(), "caught: {good}");
    }
}

#[test]
fn the_report_reads_no_evidence_by_key() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut files = 0;
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        files += 1;
        let text = fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            if let Some(why) = reads_evidence_by_key(line) {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                found.push(format!("{name}:{}: {why}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(files > 10, "the report's sources were not found in {src:?}");
    assert!(
        found.is_empty(),
        "the report reads evidence by key; read the figure from the run's account (inferlint_core::story::account, add the field there) instead:\n{}",
        found.join("\n")
    );
}
