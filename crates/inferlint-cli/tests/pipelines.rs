//! For pipelines and shells: `--junit`, `schema`, `completions` and colour.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::report_json_junit;
use crate::common::{fixtures, inferlint, inferlint_env, no_panic, recorded, stderr, stdout};
use crate::common::{UNUSABLE_INPUT, USAGE};

/// Every run folder under `root` (a folder holding a boot log or a recording), and every
/// loose boot log (`boot*.log` beside other files).
pub(crate) fn walk(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut runs, mut logs) = (Vec::new(), Vec::new());
    let mut folders = vec![root.to_owned()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.join("boot.log").exists() || path.join("run.series.jsonl").exists() {
                    runs.push(path.clone());
                }
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "log")
                && path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("boot"))
            {
                logs.push(path);
            }
        }
    }
    runs.sort();
    logs.sort();
    (runs, logs)
}

/// Every run folder of the repository's fixtures.
fn fixture_runs() -> Vec<PathBuf> {
    let runs = walk(&fixtures()).0;
    assert!(runs.len() > 30, "{runs:?}");
    runs
}

fn schema(name: &str) -> jsonschema::Validator {
    let tmp = std::env::temp_dir();
    let o = inferlint(&tmp, &["schema", name]);
    assert_eq!(o.status.code(), Some(0));
    let schema: Value = serde_json::from_str(&stdout(&o)).unwrap();
    jsonschema::draft202012::new(&schema).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn assert_valid(validator: &jsonschema::Validator, what: &str, o: &std::process::Output) {
    no_panic(o);
    let value: Value = serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {}{}", stdout(o), stderr(o)));
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

/// Done when: the schema validates `report --json` of every fixture (and recording,
/// below).
#[test]
fn the_schema_validates_report_json_of_every_fixture() {
    let results = schema("results");
    for run in fixture_runs() {
        let o = &report_json_junit(&run).output;
        assert_valid(&results, &run.display().to_string(), o);
    }
}

/// Done when: the schema validates `report --json` of every recording, and `check-log
/// --json` of every loose boot log beside them.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_schema_validates_report_json_of_every_recording() {
    let results = schema("results");
    let tmp = tempfile::tempdir().unwrap();
    let rec = recorded();
    let (runs, logs) = walk(&rec);
    assert!(runs.len() >= 8, "{runs:?}");
    for run in runs {
        let o = &report_json_junit(&run).output;
        assert_valid(&results, &run.display().to_string(), o);
    }
    for log in logs {
        let o = inferlint(tmp.path(), &["--json", "check-log", log.to_str().unwrap()]);
        assert_valid(&results, &log.display().to_string(), &o);
    }
}

#[test]
fn the_schemas_validate_compare_and_sweep_json() {
    let compare = schema("compare");
    let f = fixtures();
    let tmp = tempfile::tempdir().unwrap();
    let c04 = crate::common::edited_copy(&f.join("sweep/c04"), &tmp.path().join("c04"));
    for args in [
        vec!["compare", "--json", "sim/vllm-hybrid", "sim/sglang-capped"],
        vec![
            "compare",
            "--json",
            "sweep/c04",
            c04.to_str().unwrap(),
            "--max-regression",
            "5%",
        ],
        vec![
            "compare",
            "--json",
            "--baseline",
            "sweep",
            "sim/vllm-hybrid",
        ],
        vec![
            "compare",
            "--json",
            "variants/vllm-crlf-and-colour",
            "sim/trtllm-no-evict",
        ],
    ] {
        let o = inferlint(&f, &args);
        assert_valid(&compare, &args.join(" "), &o);
    }
    let sweep = schema("sweep");
    for args in [
        vec!["sweep", "--json", "sweep"],
        vec![
            "sweep",
            "--json",
            "sim/vllm-hybrid",
            "sim/trtllm-no-evict",
            "sim/sglang-capped",
        ],
    ] {
        let o = inferlint(&f, &args);
        assert_valid(&sweep, &args.join(" "), &o);
    }
    // A schema that accepted anything would pass the above: it refuses a wrong shape.
    let broken = serde_json::json!([{"tripwire": "T1", "status": "maybe", "message": "", "evidence": {}, "advice": []}]);
    assert!(!schema("results").is_valid(&broken));
}

/// The JUnit file: well-formed XML, one `testcase` per result, the structure CI
/// readers use, and the counts they read agreeing with the cases.
fn check_junit(xml: &str, strict: bool) -> Vec<(String, String)> {
    let doc = roxmltree::Document::parse(xml).unwrap_or_else(|e| panic!("not XML ({e}):\n{xml}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let mut cases = Vec::new();
    let count =
        |n: roxmltree::Node, attr: &str| n.attribute(attr).unwrap().parse::<usize>().unwrap();
    let (mut tests, mut failures, mut skipped) = (0, 0, 0);
    for suite in root.children().filter(|n| n.is_element()) {
        assert_eq!(suite.tag_name().name(), "testsuite");
        assert!(suite.attribute("name").is_some_and(|n| !n.is_empty()));
        let (mut t, mut f, mut s) = (0, 0, 0);
        for case in suite.children().filter(|n| n.is_element()) {
            assert_eq!(case.tag_name().name(), "testcase");
            let name = case.attribute("name").unwrap().to_owned();
            assert!(case.attribute("classname").is_some());
            let kids: Vec<&str> = case
                .children()
                .filter(|n| n.is_element())
                .map(|n| n.tag_name().name())
                .collect();
            let outcome = match kids.iter().find(|k| **k != "system-out") {
                None => "passed",
                Some(&"failure") => "failure",
                Some(&"skipped") => "skipped",
                Some(other) => panic!("unexpected <{other}> in {name}"),
            };
            assert!(
                kids.iter().filter(|k| **k != "system-out").count() <= 1,
                "{name}: {kids:?}"
            );
            t += 1;
            f += usize::from(outcome == "failure");
            s += usize::from(outcome == "skipped");
            cases.push((name, outcome.to_owned()));
        }
        assert_eq!(
            (
                count(suite, "tests"),
                count(suite, "failures"),
                count(suite, "skipped")
            ),
            (t, f, s)
        );
        tests += t;
        failures += f;
        skipped += s;
    }
    assert_eq!(
        (
            count(root, "tests"),
            count(root, "failures"),
            count(root, "skipped")
        ),
        (tests, failures, skipped)
    );
    let _ = strict;
    cases
}

/// Done when: the JUnit file is valid XML with one testcase per tripwire result.
#[test]
fn junit_holds_one_case_per_tripwire_and_reads_as_ci_reads_it() {
    junit_of_each(fixture_runs());
}

/// The same of every run folder of the recordings.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn junit_of_every_recording_holds_one_case_per_tripwire() {
    let runs = walk(&recorded()).0;
    assert!(runs.len() >= 8, "{runs:?}");
    junit_of_each(runs);
}

/// Each run's JUnit file, as it is and with `--strict`, to the results `--json` printed.
fn junit_of_each(runs: Vec<PathBuf>) {
    let tmp = tempfile::tempdir().unwrap();
    for run in runs {
        let junit = tmp.path().join("junit.xml");
        let html = tmp.path().join("r.html");
        // `--json --junit J report RUN -o H`, as the other tests of every folder run it.
        let ran = report_json_junit(&run);
        let o = &ran.output;
        no_panic(o);
        let results: Vec<Value> = serde_json::from_str(&stdout(o)).unwrap();
        let written = ran.junit.as_deref();
        let cases = check_junit(
            written.unwrap_or_else(|| panic!("{}", run.display())),
            false,
        );
        assert_eq!(cases.len(), results.len(), "{}", run.display());
        for (case, result) in cases.iter().zip(&results) {
            let id = result["tripwire"].as_str().unwrap();
            assert!(
                case.0.starts_with(&format!("{id} ")),
                "{}: {case:?}",
                run.display()
            );
            let expected = match result["status"].as_str().unwrap() {
                "fail" => "failure",
                "pass" | "warn" => "passed",
                _ => "skipped",
            };
            assert_eq!(case.1, expected, "{}: {case:?}", run.display());
        }
        // --strict: a warning and a Can't tell become failures.
        let strict = [
            "--strict",
            "--junit",
            junit.to_str().unwrap(),
            "report",
            run.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ];
        inferlint(tmp.path(), &strict);
        let cases = check_junit(&std::fs::read_to_string(&junit).unwrap(), true);
        for (case, result) in cases.iter().zip(&results) {
            if ["warn", "unknown", "fail"].contains(&result["status"].as_str().unwrap()) {
                assert_eq!(case.1, "failure", "{}: {case:?}", run.display());
            }
        }
    }
}

#[test]
fn junit_covers_compare_sweep_and_errors_and_never_replaces_a_foreign_file() {
    let tmp = tempfile::tempdir().unwrap();
    let junit = tmp.path().join("junit.xml");
    let j = junit.to_str().unwrap();
    let f = fixtures();
    let o = inferlint(
        &f,
        &[
            "--junit",
            j,
            "compare",
            "sim/vllm-hybrid",
            "sim/sglang-capped",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let cases = check_junit(&std::fs::read_to_string(&junit).unwrap(), false);
    assert!(
        cases.contains(&("same engine".to_owned(), "failure".to_owned())),
        "{cases:?}"
    );
    assert!(cases.iter().any(|c| c.0.starts_with("T8 ")), "{cases:?}");
    let o = inferlint(&f, &["--junit", j, "sweep", "sweep"]);
    assert_eq!(o.status.code(), Some(0));
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.root_element()
            .children()
            .filter(|n| n.is_element())
            .count(),
        4,
        "{xml}"
    );
    // An unusable input still leaves a file saying why.
    let o = inferlint(tmp.path(), &["--junit", j, "check-log", "missing.log"]);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    let cases = check_junit(&std::fs::read_to_string(&junit).unwrap(), false);
    assert_eq!(cases, [("inferlint ran".to_owned(), "failure".to_owned())]);
    // Never over a file it did not write, nor with a command that checks nothing.
    let notes = tmp.path().join("notes.xml");
    std::fs::write(&notes, "mine").unwrap();
    let o = inferlint(&f, &["--junit", notes.to_str().unwrap(), "sweep", "sweep"]);
    assert_eq!(o.status.code(), Some(USAGE));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
    let o = inferlint(&f, &["--junit", j, "explain", "T1"]);
    assert_eq!(o.status.code(), Some(USAGE));
    assert!(
        stderr(&o).contains("--junit writes verdicts, and explain gives none"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn completions_for_every_shell_know_the_new_commands() {
    let tmp = std::env::temp_dir();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let o = inferlint(&tmp, &["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let text = stdout(&o);
        for word in ["compare", "sweep", "max-regression", "junit"] {
            assert!(text.contains(word), "{shell}: {word}");
        }
    }
    let o = inferlint(&tmp, &["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(USAGE));
}

/// No colour code ever reaches a pipe or `--json`; `--color always` colours the words.
#[test]
fn colour_only_where_asked_and_never_in_json() {
    let f = fixtures();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.html");
    let report = ["report", "sim/vllm-hybrid", "-o", out.to_str().unwrap()];
    let piped = inferlint(&f, &report);
    assert!(stdout(&piped).contains("TRIPWIRE-FAILED"));
    assert!(!piped.stdout.contains(&0x1b), "colour reached a pipe");
    let mut always = vec!["--color", "always"];
    always.extend(report);
    let o = inferlint(&f, &always);
    assert!(
        stdout(&o).contains("\x1b[1;31mTRIPWIRE-FAILED\x1b[0m"),
        "{}",
        stdout(&o)
    );
    let mut json = vec!["--color", "always", "--json"];
    json.extend(report);
    let o = inferlint(&f, &json);
    assert!(!o.stdout.contains(&0x1b) && !o.stderr.contains(&0x1b));
    for args in [
        vec![
            "--color",
            "always",
            "--json",
            "compare",
            "sim/vllm-hybrid",
            "sim/sglang-capped",
        ],
        vec!["--color", "always", "--json", "sweep", "sweep"],
    ] {
        let o = inferlint(&f, &args);
        assert!(!o.stdout.contains(&0x1b), "{args:?}");
    }
    let o = inferlint_env(
        &f,
        &[
            "--color",
            "never",
            "compare",
            "sim/vllm-hybrid",
            "sim/sglang-capped",
        ],
        &[("NO_COLOR", "1")],
    );
    assert!(!o.stdout.contains(&0x1b));
}
