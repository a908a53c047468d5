//! One account of each run: a figure that appears more than once in one output (a
//! verdict's message, its advice, "What limited this run", the library's account) has
//! one value, for every recording, fixture and variant.
//!
//! Each figure is found by the words the tool speaks of it with; every sentence that
//! names it must give the number the others give.

use std::path::{Path, PathBuf};

use inferlint::Status;

/// The numbers that follow `phrase` (and precede `until`, when given) in `text`:
/// `numbers_after("... ran at most 10 at once ...", "ran at most ", None)` is `[10]`.
fn numbers_after(text: &str, phrase: &str) -> Vec<f64> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(phrase) {
        rest = &rest[at + phrase.len()..];
        let number: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
            .filter(|c| *c != ',')
            .collect();
        if let Ok(n) = number.trim_end_matches('.').parse::<f64>() {
            found.push(n);
        }
    }
    found
}

/// The numbers just before each `phrase` in `text`: `numbers_before("so 5 fit", " fit")`
/// is `[5]`; an occurrence after a word is skipped.
fn numbers_before(text: &str, phrase: &str) -> Vec<f64> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(phrase) {
        let end = from + at;
        let start = text[..end]
            .rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .map_or(0, |i| i + 1);
        let number: String = text[start..end].chars().filter(|c| *c != ',').collect();
        if let Ok(n) = number.parse::<f64>() {
            found.push(n);
        }
        from = end + phrase.len();
    }
    found
}

/// Every run folder of the repository's simulated runs, sweep and variants.
fn folders() -> Vec<PathBuf> {
    let fixtures = crate::common::fixtures();
    let mut dirs = Vec::new();
    for group in ["sim", "sweep", "variants"] {
        let Ok(entries) = std::fs::read_dir(fixtures.join(group)) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("boot.log").is_file()
                || entry.path().join("run.series.jsonl").is_file()
            {
                dirs.push(entry.path());
            }
        }
    }
    dirs.sort();
    dirs
}

/// The recorded whole runs ([`crate::common::RECORDED_RUNS`]).
fn recorded_folders() -> Vec<PathBuf> {
    let recorded = crate::common::recorded();
    crate::common::RECORDED_RUNS
        .iter()
        .map(|run| recorded.join(run))
        .collect()
}

/// All the values one figure takes in one output, and the sentences they came from.
struct Seen {
    name: &'static str,
    values: Vec<(f64, String)>,
}

impl Seen {
    fn new(name: &'static str) -> Seen {
        Seen {
            name,
            values: Vec::new(),
        }
    }

    fn add(&mut self, text: &str, phrases: &[&str]) {
        for phrase in phrases {
            for n in numbers_after(text, phrase) {
                self.values.push((n, text.to_owned()));
            }
        }
    }

    fn add_before(&mut self, text: &str, phrases: &[&str]) {
        for phrase in phrases {
            for n in numbers_before(text, phrase) {
                self.values.push((n, text.to_owned()));
            }
        }
    }

    fn first_number(&mut self, text: &str) {
        if let Some(n) = numbers_after(&format!(" {text}"), " ").first() {
            self.values.push((*n, text.to_owned()));
        }
    }

    fn assert_one(&self, dir: &Path) {
        if let Some((first, said)) = self.values.first() {
            for (n, other) in &self.values {
                assert_eq!(
                    n,
                    first,
                    "{}: {} is {first} in\n  {said}\nbut {n} in\n  {other}",
                    dir.display(),
                    self.name
                );
            }
        }
    }
}

#[test]
fn every_figure_has_one_value_in_one_output() {
    let (checked, compared) = one_value_each(&folders());
    assert!(checked >= 10, "only {checked} run folders were checked");
    assert!(
        compared >= 20,
        "only {compared} figures were said twice in one output: the phrases no longer match the sentences"
    );
    eprintln!("one account: {compared} figures said twice or more, in {checked} run folders");
}

/// The same of the recorded whole runs: each of them is read and checked.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_figure_of_the_recordings_has_one_value_in_one_output() {
    let folders = recorded_folders();
    let (checked, compared) = one_value_each(&folders);
    assert_eq!(checked, folders.len(), "every recorded run is read");
    eprintln!("one account: {compared} figures said twice or more, in {checked} run folders");
}

/// Each figure of each folder has one value in one output; returns the folders checked
/// and the figures said twice or more in one of them.
fn one_value_each(folders: &[PathBuf]) -> (usize, usize) {
    let mut checked = 0;
    // Figures said at least twice in one output: what the test really compared.
    let mut compared = 0;
    for dir in folders {
        let Ok(run) = inferlint::Run::from_dir(dir) else {
            continue;
        };
        let report = run.check();
        let mut fit = Seen::new("the requests that fit at full length");
        let mut peak = Seen::new("the peak running");
        let mut preemptions = Seen::new("the preemptions");
        let mut rate = Seen::new("T10's rate");
        let mut more = Seen::new("the KV memory more the load needs");
        for r in report.results() {
            let message = r.message();
            for advice in r.advice() {
                // T1: `N of these requests fit at full length (...): lower X to N so that
                // none is preempted`; T8: `... and N at full length (...)`, `at most N of
                // these requests (... at full length)`, `or ask for N`; T9: `cap X at N,
                // the most that fit at full length`.
                fit.add_before(
                    advice,
                    &[
                        " of these requests fit at full length",
                        " at full length (",
                        " so that none is",
                        ", the most that fit at full length",
                    ],
                );
                if advice.contains("each at full length)") {
                    fit.add_before(advice, &[" of these requests ("]);
                }
                if advice.contains("at full length") {
                    fit.add(advice, &["ask for "]);
                }
                more.add(advice, &["the KV cache about ", "give the KV cache the "]);
            }
            match (r.tripwire().to_string().as_str(), r.status()) {
                ("T8", Status::Fail) => peak.add(message, &["never ran more than "]),
                ("T1", Status::Fail) if message.contains(" during the run") => {
                    preemptions.first_number(message)
                }
                ("T10", Status::Pass) => rate.first_number(message),
                _ => {}
            }
        }
        for insight in report.insights() {
            let text = format!("{}. {}", insight.title, insight.text);
            fit.add_before(&text, &[" fit at full length."]);
            peak.add(&text, &["ran at most "]);
            preemptions.add(&text, &["preempted ", "retracted ", "paused "]);
            rate.add(&text, &["T10's "]);
        }
        // The library's account, as its report's JSON carries it.
        let json = serde_json::to_value(&report).unwrap();
        if let Some(p) = json["account"]["happened"]["peak_running"]["value"].as_f64() {
            if !peak.values.is_empty() {
                peak.values.push((p, "the account's peak_running".into()));
            }
        }
        for seen in [&fit, &peak, &preemptions, &rate, &more] {
            seen.assert_one(dir);
            compared += usize::from(seen.values.len() >= 2);
        }
        checked += 1;
    }
    (checked, compared)
}

/// A result file the readings do not bracket (it says its load ran 500 s; the readings
/// are 101.6 s apart, and without its `date` the gate cannot place it): the cross-check
/// makes the verdicts that read it Can't tell, and no sentence of "What limited this
/// run" then states its throughput or waits as this run's.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_result_the_readings_do_not_bracket_tells_no_part_of_the_story() {
    let (_tmp, dir) = crate::common::copy_run("vllm-0.28/xray");
    let path = dir.join("bench.json");
    let mut bench: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let object = bench.as_object_mut().unwrap();
    object.remove("date");
    object.insert("duration".into(), serde_json::json!(500.0));
    std::fs::write(&path, serde_json::to_string(&bench).unwrap()).unwrap();
    let report = inferlint::Run::from_dir(&dir).unwrap().check();
    for t in ["T15", "T18", "T20"] {
        let r = report
            .results()
            .iter()
            .find(|r| r.tripwire().to_string() == t)
            .unwrap();
        assert_eq!(r.status(), Status::Unknown, "{t}: {}", r.message());
    }
    for insight in report.insights() {
        let text = format!("{}. {}", insight.title, insight.text);
        // The file's own figures: 336 output tokens/s, median TTFT 28.9 s, p99 73.4 s.
        for figure in ["336 output tokens/s", "28.9 s", "73.4 s", "load tool's"] {
            assert!(!text.contains(figure), "{figure} in: {text}");
        }
    }
    let json = serde_json::to_value(&report).unwrap();
    assert!(json["account"]["happened"]["client_output_throughput"].is_null());
}
