//! The ledger on real load-tool runs (fixtures/loadtools): every tool's run folder gets
//! T15, T18 and T20 verdicts, and minimal edits of copies make T18 and T20 fire the way
//! the situations they stand for would (aborts during the run, an engine that stopped
//! generating, a client that counts three times the prompt tokens, requests that stopped
//! early, lengths drawn below the one named).

use std::path::{Path, PathBuf};

use inferlint_core::story::contract::JsonObject;
use serde_json::Value;

use crate::common::UNUSABLE_INPUT;
use crate::common::{copy_tree, fixtures, inferlint, json_results, no_panic, stdout};

/// A run folder copied into a temporary folder as `run/`.
fn copy(case: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_tree(&fixtures().join("loadtools").join(case), &run);
    (tmp, run)
}

fn report(dir: &Path) -> (Vec<Value>, i32) {
    let out = inferlint(dir, &["report", "run", "--json", "-o", "report.html"]);
    no_panic(&out);
    (json_results(&out), out.status.code().unwrap_or(-1))
}

fn verdict<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} in {results:#?}"))
}

fn status_and_message(results: &[Value], tripwire: &str) -> (String, String) {
    let r = verdict(results, tripwire);
    (
        r["status"].as_str().unwrap().to_owned(),
        r["message"].as_str().unwrap().to_owned(),
    )
}

/// Edits the metrics text of a snapshot file.
fn edit_snapshot(path: &Path, edit: impl Fn(&str) -> String) {
    let mut snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let text = edit(snapshot["text"].as_str().unwrap());
    snapshot["text"] = Value::String(text);
    std::fs::write(path, snapshot.to_string()).unwrap();
}

/// Edits a JSON file, keeping its top-level keys in their order: the tools are told by
/// the fields near a file's start, as each writes them.
fn edit_json(path: &Path, edit: impl Fn(&mut Value)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut value: Value = serde_json::from_str(&text).unwrap();
    edit(&mut value);
    let written = match serde_json::from_str::<JsonObject>(&text) {
        Ok(order) => {
            let edited: JsonObject = order
                .keys()
                .filter_map(|k| Some((k.to_owned(), value.get(k)?.clone())))
                .collect();
            serde_json::to_string(&edited).unwrap()
        }
        Err(_) => value.to_string(),
    };
    std::fs::write(path, written).unwrap();
}

/// One normal run of each tool: T15, T18 and T20 all give a verdict, and all pass.
#[test]
fn every_tools_run_folder_gets_t15_t18_and_t20() {
    for case in [
        "vllm/concurrent-16",
        "vllm/concurrent-16-detailed",
        "sglang/concurrent-16",
        "sglang/oai-chat-16",
        "trtllm/concurrent-8-detailed",
        "guidellm/concurrent-8",
        "aiperf/concurrency-8",
        "inference-perf/concurrent-8",
        "genai-perf/concurrency-8",
        "llmperf/concurrent-8",
    ] {
        let (tmp, _) = copy(case);
        let (results, _) = report(tmp.path());
        for tripwire in ["T15", "T18", "T20"] {
            let (status, message) = status_and_message(&results, tripwire);
            assert_eq!(status, "pass", "{case} {tripwire}: {message}");
        }
    }
}

/// Runs with failed requests fail T18 whatever the tool, naming how many and why, while
/// T15 (which compares completed requests only, as the established tool does) passes.
#[test]
fn failed_requests_fail_t18_for_every_tool() {
    for (case, expected) in [
        (
            "vllm/some-errored-detailed",
            "6 of 32 requests failed (6 × Internal Server Error)",
        ),
        (
            "sglang/some-errored-details",
            "6 of 32 requests failed (6 × Internal Server Error)",
        ),
        (
            "trtllm/some-errored-detailed",
            "6 of 32 requests failed (6 × Internal Server Error)",
        ),
        (
            "guidellm/some-errored",
            "6 of 32 requests failed (6 × 500 Internal Server Error)",
        ),
        (
            "aiperf/some-errored",
            "6 of 32 requests failed (6 × 500 Internal Server Error)",
        ),
        (
            "inference-perf/some-errored",
            "6 of 32 requests failed (6 × 500 - Internal Server Error)",
        ),
        (
            "llmperf/some-errored",
            "6 of 32 requests failed (6 × HTTP 500)",
        ),
    ] {
        let (tmp, _) = copy(case);
        let (results, code) = report(tmp.path());
        let (status, message) = status_and_message(&results, "T18");
        assert_eq!(status, "fail", "{case}: {message}");
        assert!(message.starts_with(expected), "{case}: {message}");
        assert!(message.ends_with("(here 26)"), "{case}: {message}");
        assert_eq!(
            verdict(&results, "T18")["evidence"]["accounts"],
            serde_json::json!(["client"])
        );
        assert_eq!(status_and_message(&results, "T15").0, "pass", "{case}");
        assert_eq!(code, 1, "{case}");
    }
}

/// GuideLLM prints "Benchmarking complete" and its tables with every request failed
/// (404: a model name the server does not serve): T18 fails and report exits 1.
#[test]
fn a_guidellm_run_with_every_request_failed_fails_t18_and_exits_1() {
    let (tmp, _) = copy("guidellm/all-failed-404");
    let out = inferlint(tmp.path(), &["report", "run", "-o", "report.html"]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("[T18] TRIPWIRE-FAILED  every request failed: GuideLLM 0.8.1 completed none of the 32 requests it sent (32 × 404 Not Found), yet wrote its result as for a finished run"),
        "{text}"
    );
    for case in ["vllm/all-failed-detailed", "llmperf/all-failed"] {
        let (tmp, _) = copy(case);
        let (results, code) = report(tmp.path());
        let (status, message) = status_and_message(&results, "T18");
        assert_eq!((status.as_str(), code), ("fail", 1), "{case}: {message}");
        assert!(
            message.starts_with("every request failed"),
            "{case}: {message}"
        );
    }
}

/// An edit of a snapshot's metrics text.
type Edit = fn(&str) -> String;

/// The server aborted requests during the run that the load tool counted as neither
/// completed nor failed: each engine's own abort or error counter shows them.
#[test]
fn aborts_the_server_counted_fail_t18() {
    let cases: [(&str, Edit, &str); 3] = [
        (
            "vllm/concurrent-16",
            |text| {
                text.replace(
                    "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"sim-model\"} 0.0",
                    "vllm:request_success_total{engine=\"0\",finished_reason=\"abort\",model_name=\"sim-model\"} 3.0",
                )
            },
            "the server aborted 3 requests",
        ),
        (
            "sglang/concurrent-16",
            |text| {
                format!("{text}sglang:num_aborted_requests_total{{model_name=\"sim-model\"}} 4.0\n")
            },
            "the server aborted 4 requests",
        ),
        (
            "trtllm/concurrent-8-detailed",
            |text| {
                format!("{text}trtllm_request_error_total{{http_code=\"500\",model_name=\"sim-model\"}} 5.0\n")
            },
            "the server ended 5 requests with an error",
        ),
    ];
    for (case, edit, expected) in cases {
        let (tmp, run) = copy(case);
        edit_snapshot(&run.join("after.snapshot.json"), edit);
        let (results, _) = report(tmp.path());
        let (status, message) = status_and_message(&results, "T18");
        assert_eq!(status, "fail", "{case}: {message}");
        assert!(message.starts_with(expected), "{case}: {message}");
        assert_eq!(
            verdict(&results, "T18")["evidence"]["accounts"],
            serde_json::json!(["server"]),
            "{case}"
        );
    }
}

/// An engine that stopped generating while the load tool still counted successes: the
/// recording's token counter stops rising halfway, the tool's requests end later.
#[test]
fn an_engine_that_stopped_generating_fails_t18() {
    let (tmp, run) = copy("vllm/concurrent-16-detailed");
    let series = run.join("run.series.jsonl");
    let text = std::fs::read_to_string(&series).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The first sample with tokens generated: the counter stays there from then on.
    let frozen = lines
        .iter()
        .filter_map(|l| l["generation_tokens"].as_f64())
        .find(|g| *g > 0.0)
        .unwrap();
    let edited: Vec<String> = lines
        .into_iter()
        .map(|mut l| {
            if l["generation_tokens"].as_f64().is_some_and(|g| g > frozen) {
                l["generation_tokens"] = Value::from(frozen);
            }
            l.to_string()
        })
        .collect();
    std::fs::write(&series, edited.join("\n") + "\n").unwrap();
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T18");
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.contains("s into the recording, yet vllm bench serve counted"),
        "{message}"
    );
    assert_eq!(
        verdict(&results, "T18")["evidence"]["accounts"],
        serde_json::json!(["series"])
    );

    // Completed answers with no output token: the tool counted them as successes.
    let (tmp, run) = copy("vllm/concurrent-16-detailed");
    edit_json(&run.join("bench.json"), |bench| {
        for i in [3, 9] {
            bench["output_lens"][i] = Value::from(0);
        }
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T18");
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.starts_with("2 requests counted as completed returned no output token"),
        "{message}"
    );
}

/// A client whose tokenizer counts three times the prompt tokens the server processed:
/// its input throughput is three times what the server did.
#[test]
fn a_client_that_counted_three_times_the_prompt_tokens_fails_t20() {
    let (tmp, run) = copy("vllm/concurrent-16");
    edit_json(&run.join("bench.json"), |bench| {
        bench["total_input_tokens"] = Value::from(3 * 1024);
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T20");
    assert_eq!(status, "fail", "{message}");
    assert_eq!(
        message,
        "prompt tokens per request: vllm bench serve counted 96, the server counted 32 (0.33x): the tool's tokenizer is not the server's"
    );
    assert_eq!(status_and_message(&results, "T18").0, "pass");

    // With each answer's usage kept per request, the per-request numbers are given.
    let (tmp, run) = copy("inference-perf/concurrent-8");
    let records = run.join("inference-perf/per_request_lifecycle_metrics.json");
    edit_json(&records, |list| {
        for r in list.as_array_mut().unwrap() {
            let n = r["info"]["input_tokens"].as_u64().unwrap();
            r["info"]["input_tokens"] = Value::from(n * 3);
        }
    });
    edit_json(
        &run.join("inference-perf/summary_lifecycle_metrics.json"),
        |s| {
            s["successes"]["prompt_tokens"]["total"] = Value::from(3 * 1024);
        },
    );
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T20");
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.ends_with("; 32 of 32 requests differ (0.33x to 0.33x)"),
        "{message}"
    );
}

/// `vllm bench serve --random-prefix-len 256 --random-input-len 32` puts one shared
/// prefix of 256 tokens before each random prompt of 32, and counts and sends 288 (vLLM's
/// random dataset: "the total input length is the sum of random-prefix-len and a random
/// context length"). T20 failed it, "the run asked for 32, the server counted 288 (9.00x)":
/// the asked length is the prefix and the prompt, as the tool's console says them.
#[test]
fn a_shared_random_prefix_is_part_of_the_asked_prompt() {
    let (tmp, run) = copy("vllm/concurrent-16");
    let log = std::fs::read_to_string(run.join("load.log")).unwrap();
    assert!(
        log.contains("random_prefix_len=0,"),
        "the console names the prefix"
    );
    std::fs::write(
        run.join("load.log"),
        log.replace("random_prefix_len=0,", "random_prefix_len=256,"),
    )
    .unwrap();
    // 32 requests of 256 + 32 prompt tokens, as the tool counted and the server saw them.
    edit_json(&run.join("bench.json"), |bench| {
        bench["total_input_tokens"] = Value::from(32 * 288);
    });
    edit_snapshot(&run.join("after.snapshot.json"), |text| {
        let from = "vllm:prompt_tokens_total{engine=\"0\",model_name=\"sim-model\"} 1024.0";
        assert!(text.contains(from));
        text.replace(
            from,
            "vllm:prompt_tokens_total{engine=\"0\",model_name=\"sim-model\"} 9216.0",
        )
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T20");
    assert_eq!(status, "pass", "{message}");
    let t20 = verdict(&results, "T20");
    assert_eq!(t20["evidence"]["asked_prompt_per_request"], 288.0);
    assert_eq!(t20["evidence"]["advertised_prefix_tokens"], 256.0);

    // Without the prefix in what was sent, the server's 32 are a ninth of the 288 asked.
    let (tmp, run) = copy("vllm/concurrent-16");
    let log = std::fs::read_to_string(run.join("load.log")).unwrap();
    std::fs::write(
        run.join("load.log"),
        log.replace("random_prefix_len=0,", "random_prefix_len=256,"),
    )
    .unwrap();
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T20");
    assert_eq!(status, "fail", "{message}");
    assert!(
        message
            .starts_with("prompt tokens per request: the run asked for 288, the server counted 32"),
        "{message}"
    );
}

/// T18 passed four runs it cannot vouch for. A server restarted between the snapshots
/// (every `*_created` stamp moved; the requests in flight when it stopped are lost):
/// Can't tell, naming the restart. A result whose counts contradict each other
/// (`num_prompts: 0` beside 32 completed; `failed: 0` beside 3 errors in its per-request
/// list): Can't tell, naming the contradiction. A count no run can have
/// (`completed: -1`): the file is refused in one line naming the field, exit 65 (an input that cannot be used).
#[test]
fn t18_never_passes_what_it_cannot_vouch_for() {
    let (tmp, run) = copy("vllm/concurrent-16-detailed");
    edit_snapshot(&run.join("after.snapshot.json"), |text| {
        text.lines()
            .map(|l| match l.split_once("_created{") {
                Some((name, rest)) if !l.starts_with('#') => {
                    let (labels, _) = rest.rsplit_once(' ').unwrap();
                    format!("{name}_created{{{labels} 1.8e+09\n")
                }
                _ => format!("{l}\n"),
            })
            .collect()
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T18");
    assert_eq!(status, "unknown", "{message}");
    assert!(
        message.starts_with("all 32 requests vllm bench serve sent completed, but the server's counters cannot be compared (server restarted between snapshots"),
        "{message}"
    );

    let (tmp, run) = copy("vllm/concurrent-16-detailed");
    edit_json(&run.join("bench.json"), |bench| {
        bench["num_prompts"] = Value::from(0);
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T18");
    assert_eq!(status, "unknown", "{message}");
    assert!(
        message.contains("contradicts itself: it counts 0 requests sent but 32 that ended"),
        "{message}"
    );

    let (tmp, run) = copy("vllm/concurrent-16-detailed");
    edit_json(&run.join("bench.json"), |bench| {
        for i in 0..3 {
            bench["errors"][i] = Value::from("ServerDisconnectedError");
        }
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T18");
    assert_eq!(status, "unknown", "{message}");
    assert!(
        message.contains("it counts 0 failed, but 3 of its request records are failed"),
        "{message}"
    );

    let (tmp, run) = copy("vllm/concurrent-16-detailed");
    edit_json(&run.join("bench.json"), |bench| {
        bench["completed"] = Value::from(-1);
    });
    let out = inferlint(
        tmp.path(),
        &["report", "run", "--json", "-o", "report.html"],
    );
    no_panic(&out);
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT));
    let err = crate::common::stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("'completed' is -1, which no count of requests can be"),
        "{err}"
    );
}

/// Requests asked for 32 output tokens; the server generated 20 a request: they stopped
/// early (no ignore-EOS), and a run named "32 out" measured 20.
#[test]
fn requests_that_stopped_early_fail_t20() {
    let (tmp, run) = copy("guidellm/concurrent-8");
    edit_snapshot(&run.join("after.snapshot.json"), |text| {
        text.replace(
            "vllm:generation_tokens_total{engine=\"0\",model_name=\"sim-model\"} 1024.0",
            "vllm:generation_tokens_total{engine=\"0\",model_name=\"sim-model\"} 640.0",
        )
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T20");
    assert_eq!(status, "fail", "{message}");
    assert!(
        message.starts_with("output tokens per request:"),
        "{message}"
    );
    assert!(
        message.contains("the server counted 20 (0.62x)"),
        "{message}"
    );
}

/// Lengths drawn below the one named (a range ratio): the run says 36 prompt tokens, the
/// server processed 32 (0.89x): a warning with the numbers.
#[test]
fn lengths_drawn_below_the_one_named_warn_t20() {
    let (tmp, run) = copy("guidellm/concurrent-8");
    edit_json(&run.join("guidellm.json"), |g| {
        g["config"]["spec"]["data"][0]["prompt_tokens"] = Value::from(36);
    });
    let (results, _) = report(tmp.path());
    let (status, message) = status_and_message(&results, "T20");
    assert_eq!(status, "warn", "{message}");
    assert_eq!(
        message,
        "prompt tokens per request: the run asked for 36, the server counted 32 (0.89x): lengths were drawn below the one named (a range ratio), or the tool's tokenizer is not the server's"
    );
}

/// SGLang's bench_serving line counts no failure and, without `--output-details`, keeps
/// no record of each request: without its console (which says how many it sent) the
/// failures cannot be seen, and T18 says so, with the flag that would keep them.
#[test]
fn a_result_that_cannot_show_failures_is_cant_tell_with_the_flag_that_would() {
    let (tmp, run) = copy("sglang/concurrent-16");
    std::fs::remove_file(run.join("load.log")).unwrap();
    let (results, _) = report(tmp.path());
    let t18 = verdict(&results, "T18");
    assert_eq!(t18["status"], "unknown", "{t18}");
    assert!(
        t18["message"]
            .as_str()
            .unwrap()
            .starts_with("SGLang bench_serving's result counts 32 completed and no failed request, and keeps no record of each request"),
        "{t18}"
    );
    assert_eq!(
        t18["advice"],
        serde_json::json!(["run SGLang bench_serving with `--output-details`: its file then keeps each request, and the error of each failed one"])
    );
}
