//! The committed load-tool fixtures (`fixtures/loadtools/<tool>/<case>/`): each says how
//! it was made (MADE.md) and every JSON or JSON-lines file in it parses, with Python's
//! `NaN`, `Infinity` and `-Infinity` allowed (Python's json module writes them). Only a
//! sanity check that the files are whole: reading what they mean is the readers' work.

use std::path::{Path, PathBuf};

use serde_json::Value;

fn loadtools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/loadtools")
}

/// Python's non-standard number words outside strings become `null`, so serde_json can
/// check the rest of the text.
fn python_json_to_standard(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        let word = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w));
        if let Some(w) = word {
            out.push_str("null");
            rest = &rest[w.len()..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

fn parse_python_json(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str(&python_json_to_standard(text))
}

fn files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}

fn case_folders() -> Vec<PathBuf> {
    let mut cases = Vec::new();
    for tool in std::fs::read_dir(loadtools()).unwrap() {
        let tool = tool.unwrap().path();
        if !tool.is_dir() {
            continue;
        }
        for case in std::fs::read_dir(&tool).unwrap() {
            let case = case.unwrap().path();
            if case.is_dir() {
                cases.push(case);
            }
        }
    }
    cases.sort();
    cases
}

#[test]
fn python_number_words_are_read_outside_strings_only() {
    let v = parse_python_json(r#"{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN \"Infinity\""}"#)
        .unwrap();
    assert!(v["a"].is_null());
    assert_eq!(v["b"], serde_json::json!([null, null]));
    assert_eq!(v["c"], "NaN \"Infinity\"");
    assert!(parse_python_json(r#"{"a": NaN"#).is_err());
    assert!(parse_python_json(r#"{"a": Nan}"#).is_err());
}

#[test]
fn every_load_tool_fixture_says_how_it_was_made_and_its_json_parses() {
    let cases = case_folders();
    // Eight tools, each with at least one case.
    let tools: std::collections::BTreeSet<_> = cases
        .iter()
        .map(|c| c.parent().unwrap().file_name().unwrap().to_owned())
        .collect();
    assert!(tools.len() >= 8, "{tools:?}");
    for case in &cases {
        let made = std::fs::read_to_string(case.join("MADE.md"))
            .unwrap_or_else(|e| panic!("{}: no MADE.md: {e}", case.display()));
        for needed in [
            "- tool: ",
            "- made: ",
            "- what it stands for: ",
            "- hand-made: ",
        ] {
            assert!(
                made.contains(needed),
                "{}: MADE.md lacks {needed:?}",
                case.display()
            );
        }
        let mut files = Vec::new();
        files_under(case, &mut files);
        let mut parsed = 0;
        for file in &files {
            let name = file.file_name().unwrap().to_string_lossy();
            if name.ends_with(".json") {
                let text = std::fs::read_to_string(file).unwrap();
                parse_python_json(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
                parsed += 1;
            } else if name.ends_with(".jsonl") {
                let text = std::fs::read_to_string(file).unwrap();
                for (n, line) in text.lines().enumerate() {
                    if line.trim().is_empty() {
                        continue;
                    }
                    parse_python_json(line)
                        .unwrap_or_else(|e| panic!("{}:{}: {e}", file.display(), n + 1));
                }
                parsed += 1;
            }
        }
        // Every run folder holds at least the server's before snapshot and its series.
        assert!(parsed >= 2, "{}: {parsed} JSON files", case.display());
    }
}
