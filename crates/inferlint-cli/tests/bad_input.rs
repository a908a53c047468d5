//! Bad input gets a clear one-line error or a Can't tell naming what is missing, the
//! right exit status, and never a panic.

use std::path::Path;

use crate::common::{
    copy_tree, inferlint, inferlint_env, json_results, no_panic, recorded, stderr, stdout,
};
use crate::common::{UNDECIDED, UNUSABLE_INPUT, USAGE};

/// One line on stderr naming what is wrong, nothing on stdout, and `status`: an input
/// that cannot be used is 65, another engine's input 2, a wrong command line 64.
fn one_line_error(out: &std::process::Output, needle: &str, status: i32) {
    no_panic(out);
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("note:")).collect();
    assert_eq!(lines.len(), 1, "expected one error line, got:\n{err}");
    assert!(lines[0].starts_with("inferlint: "), "{err}");
    assert!(lines[0].contains(needle), "expected '{needle}' in: {err}");
    assert_eq!(out.status.code(), Some(status), "{err}");
    assert!(stdout(out).is_empty(), "nothing on stdout after an error");
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn empty_files() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "empty.json", b"");
    write(tmp.path(), "empty.jsonl", b"");
    let out = inferlint(tmp.path(), &["preemption", "empty.json", "empty.json"]);
    one_line_error(&out, "empty.json: empty file", UNUSABLE_INPUT);
    let out = inferlint(tmp.path(), &["series", "empty.jsonl"]);
    one_line_error(&out, "empty.jsonl: empty file", UNUSABLE_INPUT);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn truncated_snapshot_json() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read(dir.join("vllm-0.28/live/after.snapshot.json")).unwrap();
    write(tmp.path(), "after.json", &text[..text.len() / 2]);
    let out = inferlint(tmp.path(), &["preemption", "after.json", "after.json"]);
    one_line_error(&out, "after.json: not a snapshot: bad JSON", UNUSABLE_INPUT);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_series_cut_mid_line_still_reads() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read(dir.join("vllm-0.28/live/run.series.jsonl")).unwrap();
    // Cut inside the last line, as a recorder killed mid-write leaves it.
    write(tmp.path(), "cut.series.jsonl", &text[..text.len() - 40]);
    let out = inferlint(
        tmp.path(),
        &["series", "cut.series.jsonl", "--requested", "32", "--json"],
    );
    no_panic(&out);
    let results = json_results(&out);
    let t8 = results.iter().find(|r| r["tripwire"] == "T8").unwrap();
    assert_eq!(t8["evidence"]["peak_running"], 10.0);
    assert!(
        stderr(&out).contains("1 line(s) skipped"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn binary_garbage() {
    let tmp = tempfile::tempdir().unwrap();
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    write(tmp.path(), "g.bin", &garbage);
    let out = inferlint(tmp.path(), &["preemption", "g.bin", "g.bin"]);
    one_line_error(&out, "g.bin", UNUSABLE_INPUT);
    let out = inferlint(tmp.path(), &["series", "g.bin"]);
    one_line_error(&out, "g.bin", UNUSABLE_INPUT);
    let out = inferlint(
        tmp.path(),
        &["report", "--bench-result", "g.bin", "--series", "g.bin"],
    );
    one_line_error(&out, "g.bin", UNUSABLE_INPUT);
    // A boot log of garbage is no boot log: it would pass T12 on nothing.
    let out = inferlint(tmp.path(), &["check-log", "g.bin", "--json"]);
    one_line_error(
        &out,
        "g.bin is not a server log: it is a binary file",
        UNUSABLE_INPUT,
    );
}

#[test]
fn nan_values() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "b.prom",
        b"vllm:num_preemptions_total NaN\nvllm:generation_tokens_total 1\n",
    );
    write(
        tmp.path(),
        "a.prom",
        b"vllm:num_preemptions_total NaN\nvllm:generation_tokens_total 2\n",
    );
    let out = inferlint(tmp.path(), &["preemption", "b.prom", "a.prom", "--json"]);
    no_panic(&out);
    let results = json_results(&out);
    assert_ne!(
        results[0]["status"], "pass",
        "a NaN counter proves nothing: {results:?}"
    );
    write(
        tmp.path(),
        "nan.series.jsonl",
        b"{\"schema\": \"inferlint.series/1\", \"engine\": \"vllm\"}\n{\"t_wall\": 1.0, \"running\": NaN, \"kv_usage\": NaN}\n",
    );
    let out = inferlint(
        tmp.path(),
        &["series", "nan.series.jsonl", "--requested", "4", "--json"],
    );
    no_panic(&out);
    let results = json_results(&out);
    assert!(results.iter().all(|r| r["status"] != "pass"), "{results:?}");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn two_snapshots_from_different_server_starts() {
    let dir = recorded();
    let out = inferlint(
        &dir,
        &[
            "preemption",
            "vllm-0.28/metrics/restart_before.prom",
            "vllm-0.28/metrics/restart_after.prom",
        ],
    );
    no_panic(&out);
    assert!(stdout(&out).contains("server restarted between snapshots"));
    assert_eq!(out.status.code(), Some(1));
    let out = inferlint(
        &dir,
        &[
            "rate",
            "vllm-0.28/live/before.snapshot.json",
            "vllm-0.28/xray/after.snapshot.json",
            "--json",
        ],
    );
    no_panic(&out);
    let results = json_results(&out);
    assert_eq!(results[0]["status"], "unknown", "{results:?}");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn another_engines_series_with_engine_named() {
    let dir = recorded();
    let out = inferlint(
        &dir,
        &[
            "series",
            "sglang-0.5/live/run.series.jsonl",
            "--engine",
            "vllm",
        ],
    );
    one_line_error(
        &out,
        "--engine vllm, but sglang-0.5/live/run.series.jsonl came from SGLang.",
        UNDECIDED,
    );
    let out = inferlint_env(
        &dir,
        &[
            "preemption",
            "sglang-0.5/live/before.snapshot.json",
            "sglang-0.5/live/after.snapshot.json",
        ],
        &[("INFERLINT_ENGINE", "trtllm")],
    );
    one_line_error(
        &out,
        "INFERLINT_ENGINE=trtllm, but the snapshots came from SGLang.",
        UNDECIDED,
    );
    let out = inferlint(
        &dir,
        &[
            "check-log",
            "trtllm-1.3/qwen3-8b/boot.log",
            "--engine",
            "sglang",
        ],
    );
    one_line_error(&out, "came from TensorRT-LLM", UNDECIDED);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_snapshot_from_another_engine_in_a_run_folder() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_tree(&dir.join("vllm-0.28/live"), &run);
    std::fs::copy(
        dir.join("sglang-0.5/live/after.snapshot.json"),
        run.join("after.snapshot.json"),
    )
    .unwrap();
    let out = inferlint(tmp.path(), &["report", "run"]);
    one_line_error(&out, "came from SGLang", UNDECIDED);
}

#[test]
fn missing_files_and_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(tmp.path(), &["preemption", "nope.json", "nope.json"]);
    one_line_error(&out, "nope.json", UNUSABLE_INPUT);
    let out = inferlint(tmp.path(), &["report", "nope"]);
    one_line_error(&out, "nope is not a folder", UNUSABLE_INPUT);
    let out = inferlint(tmp.path(), &["report", "."]);
    one_line_error(&out, "no run files in .", UNUSABLE_INPUT);
    let out = inferlint(tmp.path(), &["report"]);
    one_line_error(&out, "give a run folder", USAGE);
}

#[test]
fn a_snapshot_with_the_wrong_schema() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "s.json",
        br#"{"schema": "something/2", "text": ""}"#,
    );
    let out = inferlint(tmp.path(), &["rate", "s.json", "s.json"]);
    one_line_error(&out, "schema 'something/2'", UNUSABLE_INPUT);
}
