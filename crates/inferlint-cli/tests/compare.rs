//! `compare`, `sweep` and the `--baseline` gate, as a user runs them.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{
    copy_tree, edited_copy, fixtures, inferlint, no_panic, recorded, stderr, stdout, RECORDED_RUNS,
};
use crate::common::{UNUSABLE_INPUT, USAGE};

fn json(o: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(o))
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", stdout(o), stderr(o)))
}

/// A copy of a fixture run, without an earlier report.
fn copy_of(from: &Path, to: &Path) -> PathBuf {
    copy_tree(from, to);
    let _ = std::fs::remove_file(to.join("report.html"));
    to.to_owned()
}

/// Scales a figure of a `vllm bench serve` result file (throughput down, latency up).
fn scale_bench(run: &Path, key: &str, factor: f64) {
    let path = run.join("bench.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let old = v[key].as_f64().unwrap();
    v[key] = Value::from(old * factor);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

fn item<'a>(c: &'a Value, key: &str) -> &'a Value {
    c["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == key)
        .unwrap_or_else(|| panic!("no item {key}"))
}

/// Done when: two recordings of different setups exit 1 with the differences named.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn recordings_of_different_setups_are_not_comparable_and_say_why() {
    let rec = recorded();
    let o = inferlint(&rec, &["compare", "vllm-0.28/xray", "vllm-0.30/live"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("not comparable: engine version differs (0.28.0, 0.30.0); KV pool (tokens) differs (26,093, 29,127)"),
        "{text}"
    );
    let o = inferlint(
        &rec,
        &["compare", "--json", "vllm-0.28/xray", "sglang-0.5/live"],
    );
    assert_eq!(o.status.code(), Some(1));
    let c = json(&o);
    assert_eq!(c["verdict"], "not_comparable");
    assert_eq!(item(&c, "engine")["state"], "differs");
    assert_eq!(
        item(&c, "engine")["values"],
        serde_json::json!(["vLLM", "SGLang"])
    );
    // SGLang's log does not say its version: one-sided, never "same".
    assert_eq!(item(&c, "version")["state"], "one_sided");
}

/// Done when: a run and another folder of its setup and figures exit 0 with every item
/// the same, for every recorded run folder; its exact copy is the run given twice.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_recording_and_its_edited_copy_are_comparable_and_its_exact_copy_is_refused() {
    let rec = recorded();
    for run in RECORDED_RUNS {
        let tmp = tempfile::tempdir().unwrap();
        let copy = edited_copy(&rec.join(run), &tmp.path().join("copy"));
        let o = inferlint(&rec, &["compare", "--json", run, copy.to_str().unwrap()]);
        no_panic(&o);
        let c = json(&o);
        assert_eq!(o.status.code(), Some(0), "{run}: {c:#}");
        assert_eq!(c["verdict"], "comparable", "{run}");
        for i in c["items"].as_array().unwrap() {
            assert!(
                ["same", "not_recorded"].contains(&i["state"].as_str().unwrap()),
                "{run}: {i}"
            );
        }
        let exact = copy_of(&rec.join(run), &tmp.path().join("exact"));
        let o = inferlint(&rec, &["compare", "--json", run, exact.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(USAGE), "{run}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("the same byte for byte"),
            "{run}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn fixture_runs_of_two_engines_are_not_comparable_and_a_copy_is() {
    let sim = fixtures().join("sim");
    let o = inferlint(&sim, &["compare", "vllm-hybrid", "sglang-capped"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("engine differs (vLLM, SGLang)"),
        "{}",
        stdout(&o)
    );
    let tmp = tempfile::tempdir().unwrap();
    let copy = edited_copy(&sim.join("vllm-hybrid"), &tmp.path().join("copy"));
    let o = inferlint(&sim, &["compare", "vllm-hybrid", copy.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("\ncomparable (no run records: GPU"),
        "{}",
        stdout(&o)
    );
}

/// Done when: a run compared with itself (one folder twice, by any path, or a byte copy
/// of its files; as a side, as repeats of one side, as a sweep's point or as the
/// baseline of its own report) is refused with one line saying why, exit 64 (the command line names one run twice): both sides
/// would show the same numbers whatever the change under test did.
#[test]
fn a_run_compared_with_itself_is_refused_saying_why() {
    let tmp = tempfile::tempdir().unwrap();
    let c08 = fixtures().join("sweep/c08");
    let exact = copy_of(&c08, &tmp.path().join("exact"));
    let repeats = tmp.path().join("repeats");
    for r in ["r1", "r2"] {
        copy_of(&c08, &repeats.join(r));
    }
    let c08_again = fixtures().join("sweep/../sweep/c08");
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["compare", "sweep/c08", "sweep/c08"], "it is the same folder"),
        (
            vec!["compare", "sweep/c08", c08_again.to_str().unwrap()],
            "it is the same folder",
        ),
        (
            vec!["compare", "--json", "sweep/c08", exact.to_str().unwrap()],
            "their files are the same byte for byte (boot.log, before.snapshot.json, after.snapshot.json, run.series.jsonl, bench.json, load.log)",
        ),
        (
            vec!["compare", "sweep/c04", repeats.to_str().unwrap()],
            "their files are the same byte for byte",
        ),
        (vec!["sweep", "sweep", "sweep/c08"], "it is the same folder"),
    ];
    for (args, why) in cases {
        let o = inferlint(&fixtures(), &args);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(USAGE), "{args:?}: {}", stdout(&o));
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(" are one run: ") && err.contains(why),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("a run compared with itself is no comparison"),
            "{err}"
        );
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
    let o = inferlint(
        tmp.path(),
        &["report", "exact", "--baseline", c08.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(USAGE), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("the baseline ") && stderr(&o).contains(" are one run: "),
        "{}",
        stderr(&o)
    );
    // The control: a folder of the same setup whose files are not the run's bytes.
    let other = edited_copy(&c08, &tmp.path().join("other"));
    let o = inferlint(
        &fixtures(),
        &["compare", "sweep/c08", other.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// Done when: compare says of TensorRT-LLM, whose gauges move only when a request
/// completes (its engine table's `gauges_lag`), that how many ran at once cannot be
/// told, as its report does ("the recording does not give the number running"), and
/// never gives the recording's stale mean.
#[test]
fn compare_gives_no_count_of_running_from_a_gauge_that_lags() {
    let tmp = tempfile::tempdir().unwrap();
    let sim = fixtures().join("sim/trtllm-no-evict");
    let a = copy_of(&sim, &tmp.path().join("a"));
    edited_copy(&sim, &tmp.path().join("b"));
    let report = inferlint(tmp.path(), &["report", a.to_str().unwrap()]);
    assert!(
        stdout(&report).contains("so the recording does not give the number running"),
        "{}",
        stdout(&report)
    );
    let o = inferlint(tmp.path(), &["compare", "--json", "a", "b"]);
    no_panic(&o);
    let c = json(&o);
    let achieved = c["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == "achieved")
        .unwrap();
    assert_eq!(achieved["state"], "one_sided", "{achieved}");
    for v in achieved["values"].as_array().unwrap() {
        assert_eq!(
            v,
            "cannot be told: TensorRT-LLM updates its running gauge only when a request completes"
        );
    }
    let text = stdout(&inferlint(tmp.path(), &["compare", "a", "b"]));
    assert!(!text.contains("on average of"), "{text}");
}

/// A fact one run records and the other does not is "cannot tell" (exit 2), never "same".
#[test]
fn a_fact_missing_on_one_side_is_cannot_tell() {
    let tmp = tempfile::tempdir().unwrap();
    let a = copy_of(&fixtures().join("sweep/c08"), &tmp.path().join("a"));
    let b = copy_of(&fixtures().join("sweep/c08"), &tmp.path().join("b"));
    std::fs::remove_file(b.join("boot.log")).unwrap();
    let o = inferlint(tmp.path(), &["compare", "--json", "a", "b"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let c = json(&o);
    assert_eq!(c["verdict"], "cannot_tell");
    assert_eq!(item(&c, "model")["state"], "one_sided");
    assert_eq!(item(&c, "model")["values"][1], Value::Null);
    let _ = a;
}

/// Two repeats a side, edited copies of one run: their figures are the same, so the
/// noise measured is 0 and a figure 10% worse on both repeats is a regression beyond it.
#[test]
fn the_gate_fails_a_regression_past_the_margin_and_cannot_gate_other_setups() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [
        "base/1", "base/2", "slower/1", "slower/2", "later/1", "later/2",
    ] {
        edited_copy(&fixtures().join("sweep/c08"), &tmp.path().join(name));
    }
    // The second repeat of each side differs in one more byte than the first.
    for side in ["base", "slower", "later"] {
        let log = tmp.path().join(side).join("2/boot.log");
        let mut text = std::fs::read(&log).unwrap();
        text.push(b'\n');
        std::fs::write(&log, text).unwrap();
    }
    for repeat in ["1", "2"] {
        scale_bench(
            &tmp.path().join("slower").join(repeat),
            "output_throughput",
            0.9,
        );
        scale_bench(&tmp.path().join("later").join(repeat), "p99_ttft_ms", 1.5);
    }
    let run = |args: &[&str]| inferlint(tmp.path(), args);
    let o = run(&["compare", "base", "slower", "--max-regression", "5%"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("gate: REGRESSION output throughput of B got worse by 10.0%"),
        "{}",
        stdout(&o)
    );
    let o = run(&[
        "compare",
        "--baseline",
        "base",
        "slower",
        "--max-regression",
        "12%",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    // Latency got worse: the gate reads the direction of each figure.
    let o = run(&["compare", "base", "later", "--max-regression", "5%"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("TTFT p99 of B got worse by 50.0%"),
        "{}",
        stdout(&o)
    );
    // Another setup: cannot gate, exit 2.
    let other = fixtures().join("sweep/c16");
    let o = run(&[
        "compare",
        "base/1",
        other.to_str().unwrap(),
        "--max-regression",
        "5%",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(
            "gate: cannot gate: the runs are not comparable: concurrency asked differs (8, 16)"
        ),
        "{}",
        stdout(&o)
    );
}

/// Two runs of one quiet setup on the real vLLM CPU build (`whatif/healthy/baseline` and
/// `baseline-again`, the same server and load run twice) differ by 8% in output tok/s and
/// up to 22% elsewhere: that is noise, not a regression. With one run a side the gate
/// cannot know its noise: no figure is called a regression, the figures past 5% are
/// inconclusive and it exits 2, saying why.
#[test]
fn one_pair_of_runs_of_one_setup_is_inconclusive_never_a_regression() {
    let w = fixtures().join("real/vllm-0.32-cpu/whatif/healthy");
    let (a, b) = (w.join("baseline"), w.join("baseline-again"));
    let o = inferlint(
        Path::new("."),
        &[
            "compare",
            "--baseline",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--max-regression",
            "5%",
        ],
    );
    no_panic(&o);
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(!text.contains("REGRESSION"), "{text}");
    assert!(
        text.contains("gate: INCONCLUSIVE output throughput of B: 8.0% worse, noise unknown"),
        "{text}"
    );
    assert!(
        text.contains("gate: warning: the run-to-run noise is unknown"),
        "{text}"
    );
}

/// The same two runs on each side (each an edited copy, so another run to inferlint):
/// every figure moved by nothing, and the noise is what the two runs differ by, 8% in
/// output tok/s and up to 22% elsewhere. A 5% margin is below it: nothing can be decided
/// (INCONCLUSIVE, exit 2) and the margin is warned; a 50% margin is above it: PASS (exit
/// 0). Halving both candidate repeats' output rate is a regression beyond any noise.
#[test]
fn with_repeats_the_gate_answers_pass_fail_or_inconclusive_by_its_noise() {
    let w = fixtures().join("real/vllm-0.32-cpu/whatif/healthy");
    let tmp = tempfile::tempdir().unwrap();
    for (side, run) in [("a", "baseline"), ("b", "baseline-again")] {
        copy_of(&w.join(run), &tmp.path().join(format!("base-{side}")));
        edited_copy(&w.join(run), &tmp.path().join(format!("cand-{side}")));
    }
    let args = |margin: &str| {
        [
            "compare",
            "--baseline",
            "base-a",
            "--baseline",
            "base-b",
            "--candidate",
            "cand-a",
            "--candidate",
            "cand-b",
            "--max-regression",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([margin.to_owned()])
        .collect::<Vec<_>>()
    };
    let run = |margin: &str| {
        let a = args(margin);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let o = inferlint(tmp.path(), &a);
        no_panic(&o);
        o
    };
    let o = run("5%");
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("gate: INCONCLUSIVE output throughput of B: the same ± 8.3%"),
        "{text}"
    );
    assert!(
        text.contains("is below the noise measured on the repeats"),
        "{text}"
    );
    assert!(!text.contains("REGRESSION"), "{text}");
    let o = run("50%");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("gate: PASS"), "{}", stdout(&o));
    for side in ["a", "b"] {
        scale_bench(
            &tmp.path().join(format!("cand-{side}")),
            "output_throughput",
            0.5,
        );
    }
    let o = run("5%");
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("gate: REGRESSION output throughput of B got worse by 50.0%"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn report_with_a_baseline_gates_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    // The baseline is two repeats (edited copies of one run: no noise between them), so
    // the gate knows its noise and can call a regression.
    let base = edited_copy(&fixtures().join("sweep/c04"), &tmp.path().join("base/1"));
    let log =
        edited_copy(&fixtures().join("sweep/c04"), &tmp.path().join("base/2")).join("boot.log");
    let mut text = std::fs::read(&log).unwrap();
    text.push(b'\n');
    std::fs::write(&log, text).unwrap();
    let same = copy_of(&fixtures().join("sweep/c04"), &tmp.path().join("same"));
    let o = inferlint(tmp.path(), &["report", "same", "--baseline", "base"]);
    no_panic(&o);
    // The run itself passes (a warning at most): the gate decides.
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("gate: PASS: no figure got worse by more than 5.0%"),
        "{}",
        stdout(&o)
    );
    scale_bench(&same, "output_throughput", 0.8);
    let o = inferlint(
        tmp.path(),
        &[
            "report",
            "same",
            "--baseline",
            "base",
            "--max-regression",
            "10%",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // --json keeps its array: the gate's words go to stderr.
    let o = inferlint(
        tmp.path(),
        &["--json", "report", "same", "--baseline", "base"],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(serde_json::from_str::<Value>(&stdout(&o))
        .unwrap()
        .is_array());
    assert!(stderr(&o).contains("gate: REGRESSION"), "{}", stderr(&o));
    let o = inferlint(
        tmp.path(),
        &[
            "report",
            "same",
            "--baseline",
            fixtures().join("sim/sglang-capped").to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stdout(&o).contains("gate: cannot gate"), "{}", stdout(&o));
    let _ = base;
}

/// A side given as a folder of repeats measures the run-to-run noise.
#[test]
fn repeats_per_side_give_the_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let c08 = fixtures().join("sweep/c08");
    for (name, factor) in [("a/r1", 0.97), ("a/r2", 1.03), ("b/r1", 1.01)] {
        let run = copy_of(&c08, &tmp.path().join(name));
        scale_bench(&run, "output_throughput", factor);
    }
    let o = inferlint(tmp.path(), &["compare", "--json", "a", "b"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let c = json(&o);
    assert_eq!(c["sides"][0]["runs"].as_array().unwrap().len(), 2);
    let throughput = c["moved"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "output_throughput")
        .unwrap();
    let noise = throughput["sides"][0]["noise"].as_f64().unwrap();
    assert!((noise - 0.06).abs() < 1e-6, "{noise}");
    assert_eq!(throughput["sides"][1]["within_noise"], true);
}

/// Done when: the simulated sweep at 4, 8, 16 and 32 finds the knee the simulator put
/// there, the first preemption and the first run whose peak falls short.
#[test]
fn the_sweep_finds_the_places_the_simulator_put() {
    let expected = inferlint_sim::sweep::expected();
    let o = inferlint(&fixtures(), &["sweep", "--json", "sweep"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = json(&o);
    let label = |c: usize| format!("sweep/{}", inferlint_sim::sweep::folder(c));
    assert_eq!(s["knee"], label(expected.knee).as_str());
    assert_eq!(
        s["preemption_starts"],
        label(expected.preemption_starts).as_str()
    );
    assert_eq!(s["stops_reaching"], label(expected.stops_reaching).as_str());
    assert_eq!(s["one_setup"], "comparable");
    // One table: every run with its verdicts.
    let o = inferlint(
        &fixtures(),
        &["sweep", "sweep/c32", "sweep/c04", "sweep/c16", "sweep/c08"],
    );
    let text = stdout(&o);
    assert!(
        text.contains(&format!("knee at {}", expected.knee)),
        "{text}"
    );
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(" pass")).collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(rows[3].contains("failed T1 T8"), "{text}");
}

/// The number `report`'s "What limited this run" prints after `lead`, in milliseconds
/// when its unit is, with half its last printed digit (the rounding it was printed with).
fn printed_after(text: &str, lead: &str) -> Option<(f64, f64)> {
    let rest = &text[text.find(lead)? + lead.len()..];
    let number: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect();
    let value: f64 = number.replace(',', "").parse().ok()?;
    let decimals = number.split('.').nth(1).map_or(0, str::len);
    let half = 0.5 * 10f64.powi(-(decimals as i32));
    Some(match rest[number.len()..].trim_start() {
        u if u.starts_with("ms") => (value, half),
        u if u.starts_with("s ") || u.starts_with("s,") || u.starts_with("s.") => {
            (value * 1000.0, half * 1000.0)
        }
        _ => (value, half),
    })
}

/// Done when: every figure `sweep` and `compare` print of a run of the simulated sweep is
/// the one `report` prints of that folder (the concurrency asked and the peak as T8 read
/// them, T1's preemptions, and "What limited this run"'s busy mean, throughput and median
/// TTFT, to the digits it prints), and sweep says the server followed a concurrency
/// exactly where the report says the run reached it (T8 passed) and kept its requests
/// busy.
#[test]
fn sweep_and_compare_tell_each_run_as_its_report_does() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep_dir = tmp.path().join("sweep");
    for c in inferlint_sim::sweep::CONCURRENCIES {
        let folder = inferlint_sim::sweep::folder(c);
        copy_of(
            &fixtures().join("sweep").join(&folder),
            &sweep_dir.join(folder),
        );
    }
    let o = inferlint(tmp.path(), &["sweep", "--json", "sweep"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = json(&o);
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 4);
    let mut first_not_followed = None;
    for p in points {
        let dir = p["label"].as_str().unwrap();
        let results: Value =
            serde_json::from_str(&stdout(&inferlint(tmp.path(), &["report", "--json", dir])))
                .unwrap();
        let verdict = |t: &str| {
            results
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["tripwire"] == t)
                .unwrap_or_else(|| panic!("{dir}: no {t}"))
                .clone()
        };
        let (t8, t1) = (verdict("T8"), verdict("T1"));
        assert_eq!(
            p["asked"],
            t8["evidence"]["requested"].as_f64().unwrap(),
            "{dir}"
        );
        assert_eq!(p["peak_running"], t8["evidence"]["peak_running"], "{dir}");
        assert_eq!(p["preemptions"], t1["evidence"]["preemptions"], "{dir}");
        let text = stdout(&inferlint(tmp.path(), &["report", dir]));
        let mean = p["mean_running"].as_f64().unwrap();
        assert!(
            text.contains(&format!(
                "the server's recording shows {mean:.1} running on average while it was busy"
            )),
            "{dir}: {mean}\n{text}"
        );
        for (figure, lead) in [
            ("output_throughput", "the load tool's "),
            ("ttft_ms", "Half the requests got their first token within "),
            ("ttft_ms", "Half the requests waited more than "),
        ] {
            let Some((printed, half)) = printed_after(&text, lead) else {
                continue;
            };
            let ours = p[figure].as_f64().unwrap();
            assert!(
                (ours - printed).abs() <= half + 1e-9,
                "{dir}: {figure} {ours}, the report prints {printed} after {lead:?}"
            );
        }
        // A run whose records show its later requests queued gives the first wave's
        // median and the later ones' wait apart, not one median of all.
        assert!(
            text.contains("the load tool's ")
                && (text.contains("Half the requests ")
                    || text.contains("got their first token within")),
            "{dir}: {text}"
        );
        let kept_busy = text.contains("The run kept its requests busy");
        let followed = t8["status"] == "pass" && kept_busy;
        assert_eq!(p["follows"], followed, "{dir}:\n{text}");
        if !followed && first_not_followed.is_none() {
            first_not_followed = Some(dir.to_owned());
        }
        // compare prints the same counts of the same run.
        let other = edited_copy(
            &tmp.path().join(dir),
            &tmp.path().join(format!("{dir}-again")),
        );
        let c = json(&inferlint(
            tmp.path(),
            &["compare", "--json", dir, other.to_str().unwrap()],
        ));
        let run_item = |key: &str| {
            c["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["key"] == key)
                .unwrap()["values"][0]
                .clone()
        };
        assert_eq!(
            run_item("achieved"),
            format!(
                "{} at most, {mean:.1} on average of {}",
                t8["evidence"]["peak_running"].as_f64().unwrap(),
                t8["evidence"]["requested"]
            )
            .as_str(),
            "{dir}"
        );
        assert_eq!(
            run_item("preemptions"),
            format!("{}", t1["evidence"]["preemptions"].as_f64().unwrap()).as_str(),
            "{dir}"
        );
    }
    assert_eq!(s["stops_following"].as_str(), first_not_followed.as_deref());
}

#[test]
fn a_sweep_of_two_setups_says_so() {
    let sim = fixtures().join("sim");
    let o = inferlint(
        &fixtures(),
        &[
            "sweep",
            "sweep/c04",
            sim.join("vllm-hybrid").to_str().unwrap(),
        ],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("not one setup: "), "{}", stdout(&o));
}

/// The pages hold the findings, load nothing and run no script.
#[test]
fn the_pages_are_self_contained() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("c.html");
    let o = inferlint(
        &fixtures(),
        &[
            "compare",
            "sim/vllm-hybrid",
            "sim/sglang-capped",
            "-o",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let sweep_page = tmp.path().join("s.html");
    let o2 = inferlint(
        &fixtures(),
        &["sweep", "sweep", "-o", sweep_page.to_str().unwrap()],
    );
    assert_eq!(o2.status.code(), Some(0), "{}", stderr(&o2));
    for (path, must) in [
        (&page, "engine differs (vLLM, SGLang)"),
        (&sweep_page, "knee at 8"),
    ] {
        let html = std::fs::read_to_string(path).unwrap();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(
            html.contains("script-src &#39;none&#39;") || html.contains("script-src 'none'"),
            "{html}"
        );
        assert!(html.contains("default-src"));
        assert!(!html.contains("<script"), "{}", path.display());
        // Nothing is loaded: no address in a src or href (the SVG namespace of the
        // inline favicon is a name, not a request).
        for attr in ["src=\"http", "href=\"http", "url(http", "@import"] {
            assert!(!html.contains(attr), "{}: {attr}", path.display());
        }
        assert!(html.contains(must), "{}", path.display());
    }
    assert!(std::fs::read_to_string(&sweep_page)
        .unwrap()
        .contains("<svg"));
    // A second run replaces its own page; a foreign file needs --force.
    let o = inferlint(
        &fixtures(),
        &["sweep", "sweep", "-o", sweep_page.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0));
    let foreign = tmp.path().join("notes.html");
    std::fs::write(&foreign, "mine").unwrap();
    let o = inferlint(
        &fixtures(),
        &["sweep", "sweep", "-o", foreign.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(USAGE));
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "mine");
}

#[test]
fn compare_refuses_what_is_not_two_runs() {
    let o = inferlint(&fixtures(), &["compare", "sim/vllm-hybrid"]);
    assert_eq!(o.status.code(), Some(USAGE));
    assert!(
        stderr(&o).contains("give two runs or more"),
        "{}",
        stderr(&o)
    );
    let tmp = tempfile::tempdir().unwrap();
    let o = inferlint(tmp.path(), &["compare", ".", "."]);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    assert!(
        stderr(&o).starts_with("inferlint: no run files in ."),
        "{}",
        stderr(&o)
    );
}
