//! Missing input is visible: a tripwire whose input is missing is listed as not checked
//! with what it needs; input of the wrong kind, or input from which no check can run, is
//! refused in one line (exit 65 for input of the wrong kind, 2 when no check could run);
//! a load that sent nothing is not a benchmark.
//!
//! The cases are built from the simulated run folders in fixtures/sim (written in each
//! engine's own formats) and the demo run, so they run from the repository alone.

use serde_json::Value;

use crate::common::{
    copy_tree, demo_folder, fixtures, inferlint, json_results, no_panic, stderr, stdout,
};
use crate::common::{UNDECIDED, UNUSABLE_INPUT, USAGE};

/// One line on stderr naming `needle`, exit `status`, nothing on stdout: 65 for an input
/// that cannot be used, 2 for files from which no check could run (nothing decided).
#[track_caller]
fn refused(out: &std::process::Output, needle: &str, status: i32) {
    no_panic(out);
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("note:")).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got:\n{err}");
    assert!(lines[0].contains(needle), "expected '{needle}' in: {err}");
    assert_eq!(out.status.code(), Some(status), "{err}");
    assert!(stdout(out).is_empty(), "stdout: {}", stdout(out));
}

/// A copy of the demo run folder (tests never write into the repository).
fn demo_run() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&demo_folder(), tmp.path());
    tmp
}

/// A copy of a simulated run folder, without the files named.
fn sim_run(name: &str, without: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join("sim").join(name), &tmp.path().join("run"));
    for file in without {
        std::fs::remove_file(tmp.path().join("run").join(file)).unwrap();
    }
    tmp
}

fn result<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} in {results:#?}"))
}

/// Without the load tool's result file T8 and T15 used to vanish, and an SGLang run whose
/// full check fails T8 came back passed. They are now listed as not checked, with what
/// each needs, in the terminal and in `--json` (after every verdict).
#[test]
fn without_the_result_file_t8_and_t15_are_listed_as_not_checked() {
    // With the result file, the full check fails T8: the server capped itself at 1.
    let full = sim_run("sglang-capped", &[]);
    let out = inferlint(full.path(), &["report", "run", "--json"]);
    no_panic(&out);
    assert_eq!(result(&json_results(&out), "T8")["status"], "fail");

    let tmp = sim_run("sglang-capped", &["bench.json"]);
    let out = inferlint(tmp.path(), &["report", "run", "--json"]);
    no_panic(&out);
    let results = json_results(&out);
    let t8 = result(&results, "T8");
    assert_eq!(t8["status"], "not_checked");
    assert_eq!(
        t8["message"],
        "needs the concurrency the load asked for (--requested N, or the load tool's result file)"
    );
    assert_eq!(t8["evidence"]["needs"], serde_json::json!(["requested"]));
    let t15 = result(&results, "T15");
    assert_eq!(t15["status"], "not_checked");
    assert_eq!(t15["message"], "needs the load tool's result file");
    // Every not-checked entry follows every verdict.
    let first = results
        .iter()
        .position(|r| r["status"] == "not_checked")
        .unwrap();
    assert!(results[first..]
        .iter()
        .all(|r| r["status"] == "not_checked"));

    let out = inferlint(tmp.path(), &["report", "run"]);
    let text = stdout(&out);
    assert!(
        text.contains("[ T8] NOT-CHECKED  needs the concurrency the load asked for"),
        "{text}"
    );
    assert!(
        text.contains("[T15] NOT-CHECKED  needs the load tool's result file"),
        "{text}"
    );
    // T23 to T25 read the result file first, each request's send and, for T24 and T25,
    // the server's record of it.
    for tripwire in ["T18", "T20", "T23", "T24", "T25"] {
        assert!(
            text.contains(&format!(
                "[{tripwire}] NOT-CHECKED  needs the load tool's result file"
            )),
            "{text}"
        );
    }
    // T17 needs the concurrency too; the simulated recording says it read no GPU (T21
    // does not apply).
    assert!(
        text.contains("[T17] NOT-CHECKED  needs the concurrency the load asked for"),
        "{text}"
    );
    // T26 needs a KV event stream, which no simulated run here subscribed to.
    assert!(
        text.contains("[T26] NOT-CHECKED  needs the server's KV event stream"),
        "{text}"
    );
    assert!(text.contains("; 9 not checked -> "), "{text}");
}

/// `series` without `--requested` or `--snapshot` lists T8 and T14 as not checked.
#[test]
fn series_lists_what_its_flags_would_add() {
    let tmp = demo_run();
    let out = inferlint(tmp.path(), &["series", "run.series.jsonl", "--json"]);
    no_panic(&out);
    let results = json_results(&out);
    assert_eq!(result(&results, "T8")["status"], "not_checked");
    assert_eq!(result(&results, "T14")["status"], "not_checked");
    assert_eq!(result(&results, "T9")["status"], "warn");
}

/// A folder with only a before snapshot allows no check: it used to print `0 checks ()`
/// and exit 0. It is refused in one line that says what the checks need, and no report
/// is written.
#[test]
fn a_folder_from_which_no_check_can_run_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::copy(
        demo_folder().join("before.snapshot.json"),
        run.join("before.snapshot.json"),
    )
    .unwrap();
    for strict in [false, true] {
        let mut args = vec!["report", "run"];
        if strict {
            args.push("--strict");
        }
        let out = inferlint(tmp.path(), &args);
        refused(
            &out,
            "no check could run on run/before.snapshot.json",
            UNDECIDED,
        );
        assert!(
            stderr(&out).contains("T1 and T10 need the after reading too"),
            "{}",
            stderr(&out)
        );
    }
    assert!(!run.join("report.html").exists());
}

/// A boot log of the wrong kind is refused, never read as a log without a failure (which
/// used to print `[T12] PASS  no failure in log`).
#[test]
fn check_log_refuses_what_is_not_a_server_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let demo = demo_folder();
    std::fs::write(dir.join("empty.log"), b"").unwrap();
    std::fs::write(dir.join("blank.log"), b"\n  \r\n\n").unwrap();
    std::fs::copy(demo.join("before.snapshot.json"), dir.join("snap.log")).unwrap();
    std::fs::copy(demo.join("run.series.jsonl"), dir.join("series.log")).unwrap();
    // An executable's first bytes: an ELF header, NUL bytes and all.
    let mut elf = b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec();
    elf.extend((0..2048u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8));
    std::fs::write(dir.join("ls"), &elf).unwrap();
    std::fs::write(dir.join("shell.log"), b"bash: vllm: command not found\n").unwrap();
    for (file, why) in [
        ("empty.log", "it is empty"),
        ("blank.log", "it is empty"),
        ("snap.log", "it holds JSON"),
        ("series.log", "it holds JSON"),
        ("ls", "it is a binary file"),
        (
            "shell.log",
            "no line in it is one a vLLM, SGLang or TensorRT-LLM server writes",
        ),
    ] {
        let out = inferlint(dir, &["check-log", file]);
        refused(
            &out,
            &format!("{file} is not a server log: {why}"),
            UNUSABLE_INPUT,
        );
    }
    let out = inferlint(dir, &["boot-facts", "ls"]);
    refused(
        &out,
        "ls is not a server log: it is a binary file",
        UNUSABLE_INPUT,
    );
    let out = inferlint(dir, &["report", "--boot-log", "empty.log"]);
    refused(&out, "empty.log is not a server log", UNUSABLE_INPUT);
}

/// Snapshots given in the wrong order are named as such from their clocks (they used to
/// be read as a restart: `python_gc_collections_total went down`).
#[test]
fn swapped_snapshots_are_recognised_from_their_clocks() {
    let tmp = demo_run();
    let demo = tmp.path();
    for command in ["preemption", "rate"] {
        let out = inferlint(
            demo,
            &[command, "after.snapshot.json", "before.snapshot.json"],
        );
        refused(&out, "the snapshots are in the wrong order", UNUSABLE_INPUT);
        assert!(!stderr(&out).contains("went down"), "{}", stderr(&out));
    }
    let out = inferlint(
        demo,
        &[
            "report",
            "-o",
            "unused.html",
            "--before",
            "after.snapshot.json",
            "--after",
            "before.snapshot.json",
        ],
    );
    refused(&out, "the snapshots are in the wrong order", UNUSABLE_INPUT);
    assert!(!demo.join("unused.html").exists());
}

/// Bare Prometheus text has no clock; the same process read twice keeps its `*_created`
/// stamps, so counters that went down mean the two readings are swapped, not a restart.
#[test]
fn swapped_bare_prometheus_readings_are_recognised_from_their_stamps() {
    let tmp = tempfile::tempdir().unwrap();
    let text = |n: u64| {
        format!(
            "# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total {n}\nvllm:num_preemptions_created 1700000000.5\n# TYPE vllm:generation_tokens counter\nvllm:generation_tokens_total {}\nvllm:generation_tokens_created 1700000000.5\n",
            n * 100
        )
    };
    std::fs::write(tmp.path().join("early.prom"), text(3)).unwrap();
    std::fs::write(tmp.path().join("late.prom"), text(9)).unwrap();
    let out = inferlint(tmp.path(), &["preemption", "late.prom", "early.prom"]);
    refused(
        &out,
        "stayed the same: the snapshots are in the wrong order",
        UNUSABLE_INPUT,
    );
    let out = inferlint(tmp.path(), &["preemption", "early.prom", "late.prom"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// `--requested 0` used to pass T8 (`reached 10 running (requested 0)`).
#[test]
fn the_concurrency_asked_for_is_at_least_one() {
    let tmp = demo_run();
    let demo = tmp.path();
    for args in [
        &["series", "run.series.jsonl", "--requested", "0"][..],
        &["report", ".", "-o", "x.html", "--requested", "0"][..],
    ] {
        let out = inferlint(demo, args);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(USAGE), "{args:?}");
        assert!(stderr(&out).contains("1 or more"), "{}", stderr(&out));
        assert!(stdout(&out).is_empty());
    }
    assert!(!demo.join("x.html").exists());
}

/// A result file written without a concurrency limit gives no concurrency to check
/// against: T8 is not checked rather than judged against 0.
#[test]
fn a_result_file_without_a_concurrency_limit_gives_no_t8_verdict() {
    let tmp = sim_run("vllm-hybrid", &[]);
    let bench_path = tmp.path().join("run/bench.json");
    for limit in [serde_json::json!(0), Value::Null] {
        let mut bench: Value =
            serde_json::from_str(&std::fs::read_to_string(&bench_path).unwrap()).unwrap();
        bench["max_concurrency"] = limit;
        std::fs::write(&bench_path, bench.to_string()).unwrap();
        let out = inferlint(tmp.path(), &["report", "run", "--json"]);
        no_panic(&out);
        assert_eq!(result(&json_results(&out), "T8")["status"], "not_checked");
    }
}

/// A load tool that completed no request made no benchmark: `report` says so and gives
/// no verdict on the load-dependent tripwires; the requests it sent and never completed
/// fail T18, so it exits 1.
#[test]
fn a_result_file_with_no_completed_request_is_not_a_benchmark() {
    let tmp = sim_run("vllm-hybrid", &[]);
    let bench_path = tmp.path().join("run/bench.json");
    let mut bench: Value =
        serde_json::from_str(&std::fs::read_to_string(&bench_path).unwrap()).unwrap();
    bench["completed"] = serde_json::json!(0);
    // Its own record of each request says the same: every one failed.
    let sent = bench["errors"].as_array().map_or(0, Vec::len);
    bench["failed"] = serde_json::json!(sent);
    if sent > 0 {
        bench["errors"] = serde_json::json!(vec!["HTTP 500: simulated failure"; sent]);
    }
    std::fs::write(&bench_path, bench.to_string()).unwrap();
    let out = inferlint(tmp.path(), &["report", "run"]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[ T8] NOT-CHECKED  not a benchmark: the load tool's result file"),
        "{text}"
    );
    assert!(
        text.contains(
            "[T18] TRIPWIRE-FAILED  every request failed: vllm bench serve completed none of the"
        ),
        "{text}"
    );
    assert!(text.contains("This run was not a benchmark."), "{text}");
    assert!(!text.contains("[ T8] TRIPWIRE-FAILED"), "{text}");
}
