//! `cargo xtask variants [--check]`: the corpus of format variants in fixtures/variants.
//!
//! Each variant is a real recording (from `INFERLINT_RECORDED`) changed the way a real
//! situation changes it: a load tool that writes Python's `Infinity`, a log whose
//! processes' buffers were flushed out of order, a log copied while it was being written,
//! CRLF line ends and colour codes, a file left over from another run. Each folder holds
//! the changed files and `variant.json`: the situation it stands for, where it came from,
//! the command to run in it, and the verdicts that command must give, with the reason.
//! The CLI's tests run every variant; this crate's tests regenerate the corpus from the
//! recordings when they are present and fail when the committed copy is stale.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use inferlint_core::story::contract::JsonObject;
use serde_json::{json, Value};

/// Where the generated corpus lives, under the repository root.
pub const DIR: &str = "fixtures/variants";

/// One variant: a recording, a change, and what the change must do to the verdicts.
struct Variant {
    name: &'static str,
    /// The recorded run folder it starts from, under the recordings.
    source: &'static str,
    /// The real situation it stands for.
    situation: &'static str,
    /// Why the expected verdicts are right.
    why: &'static str,
    /// The command, run in the variant's folder (`--json` is added by the test).
    args: &'static [&'static str],
    /// (tripwire, status) in output order.
    expected: Verdicts,
    exit_code: i32,
    /// The folder's files from the source folder's.
    build: fn(&Source) -> Result<Files>,
}

type Files = Vec<(String, Vec<u8>)>;

/// (tripwire, status) pairs, in output order.
type Verdicts = Vec<(&'static str, &'static str)>;

/// The tripwires of a run's report in the order the registry declares them (the boot
/// log's, those across boots, then the whole run's): a "not checked" entry comes after
/// every verdict, in this order.
fn declared() -> Vec<String> {
    use inferlint_core::judging::checks::registry::{of_phase, Phase};
    [Phase::Boot, Phase::AcrossBoots, Phase::Run]
        .into_iter()
        .flat_map(of_phase)
        .map(|d| d.tripwire.to_string())
        .collect()
}

/// `verdicts` with the checks no recording here can feed listed as not checked, where
/// the report lists them: T23 (none of the recorded result files keeps when each request
/// was sent: they were saved without the per-request lists), T24 and T25 (no run recorded
/// the server's spans), T26 (none subscribed to its KV events).
fn without_traces(mut verdicts: Verdicts) -> Verdicts {
    let declared = declared();
    let rank = |t: &str| declared.iter().position(|d| d == t).unwrap_or(usize::MAX);
    for added in ["T23", "T24", "T25", "T26"] {
        let at = verdicts
            .iter()
            .rposition(|(t, s)| *s == "not_checked" && rank(t) < rank(added))
            .map(|i| i + 1)
            .or_else(|| {
                verdicts
                    .iter()
                    .position(|(t, s)| *s == "not_checked" && rank(t) > rank(added))
            })
            .unwrap_or(verdicts.len());
        verdicts.insert(at, (added, "not_checked"));
    }
    // T27: no recorded server was started with speculative decoding, as each boot log
    // shows (T12 is judged wherever there is one): it does not apply, a verdict listed
    // after the verdicts judged before it (T28's comes after). The one variant without a boot log is SGLang's, which serves no
    // counter of drafts: T27 is not checked there, last of all.
    if verdicts
        .iter()
        .any(|(t, s)| *t == "T12" && *s != "not_checked")
    {
        let at = verdicts
            .iter()
            .rposition(|(t, s)| *s != "not_checked" && rank(t) < rank("T27"))
            .map_or(0, |i| i + 1);
        verdicts.insert(at, ("T27", "not_applicable"));
    } else {
        verdicts.push(("T27", "not_checked"));
    }
    verdicts
}

/// A vLLM variant's verdicts and T29 to T31, not checked, last: they read each engine step
/// (`steps.jsonl`, written by the step plugin in the server's environment), which no
/// recorded run holds. On the other engines they give no result (the plugin is vLLM's).
fn without_steps(mut verdicts: Verdicts) -> Verdicts {
    verdicts.extend([
        ("T29", "not_checked"),
        ("T30", "not_checked"),
        ("T31", "not_checked"),
    ]);
    verdicts
}

/// The recorded TensorRT-LLM run's report verdicts, with T1's and T19's as given. Its
/// recording holds no GPU readings: T21 is not checked.
fn trtllm_report(t1: &'static str, t19: &'static str) -> Verdicts {
    vec![
        ("T12", "pass"),
        ("T5", "pass"),
        ("T6", "pass"),
        ("T15", "pass"),
        ("T18", "pass"),
        ("T20", "pass"),
        ("T1", t1),
        ("T10", "pass"),
        ("T16", "pass"),
        ("T14", "not_applicable"),
        ("T9", "pass"),
        ("T8", "pass"),
        ("T17", "pass"),
        ("T19", t19),
        ("T21", "not_checked"),
    ]
}

/// The recorded vLLM 0.28 xray run's report verdicts, with T19's as given: vLLM's kernel
/// JIT monitor logged two compiles inside the run, which T19 fails on wherever it can
/// place them.
fn vllm_xray_report(t19: &'static str) -> Verdicts {
    vec![
        ("T12", "pass"),
        ("T5", "warn"),
        ("T6", "pass"),
        ("T15", "pass"),
        ("T18", "pass"),
        ("T20", "pass"),
        ("T1", "fail"),
        ("T10", "pass"),
        ("T16", "pass"),
        ("T14", "pass"),
        ("T9", "warn"),
        ("T8", "fail"),
        ("T17", "pass"),
        ("T19", t19),
        // Its boot log shows no KV connector: it was not declared disaggregated.
        ("T28", "not_applicable"),
        ("T21", "not_checked"),
    ]
}

/// A recorded run folder, read.
struct Source {
    dir: PathBuf,
}

impl Source {
    fn bytes(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(name);
        std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))
    }

    fn text(&self, name: &str) -> Result<String> {
        String::from_utf8(self.bytes(name)?).with_context(|| format!("{name} is not UTF-8"))
    }

    /// Every file of the folder, with `name` taken from another recorded folder.
    fn with_file_of(&self, other: &str, name: &str) -> Result<Files> {
        let mut files = self.all_but(&[])?;
        let other = Source {
            dir: self.dir.join(other),
        };
        replace(&mut files, name, other.bytes(name)?);
        Ok(files)
    }

    /// Every file of the folder but the ones named.
    fn all_but(&self, skip: &[&str]) -> Result<Files> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .with_context(|| format!("cannot read {}", self.dir.display()))?
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !skip.contains(&n.as_str()))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|n| Ok((n.clone(), self.bytes(&n)?)))
            .collect()
    }
}

/// Replaces one file of a folder's list.
fn replace(files: &mut Files, name: &str, bytes: Vec<u8>) {
    match files.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = bytes,
        None => files.push((name.to_owned(), bytes)),
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
}

/// `text` with `from` replaced, which must be there.
fn edit(text: &str, from: &str, to: &str) -> Result<String> {
    if !text.contains(from) {
        bail!("the recording has no {from:?}");
    }
    Ok(text.replace(from, to))
}

/// The 0-based index of the last line answering a completion request.
fn last_answer(lines: &[&str]) -> Result<usize> {
    lines
        .iter()
        .rposition(|l| l.contains("\"POST /v1/completions HTTP/1.1\" 200"))
        .context("the recording answers no completion request")
}

/// A TensorRT-LLM pause line as the C++ capacity scheduler logs it at INFO
/// (`TLLM_LOG_INFO("MaxUtilizationScheduler: request ID %lu -> pause", ...)`), through
/// its logger's `[TensorRT-LLM][INFO] ` prefix, with no time stamp.
fn pause_line(request_id: u64) -> String {
    format!("[TensorRT-LLM][INFO] MaxUtilizationScheduler: request ID {request_id} -> pause")
}

/// The recorded TensorRT-LLM run, as if started with `capacity_scheduler_policy:
/// MAX_UTILIZATION` and a KV cache of 20,960 tokens: 19 of the run's 32 requests of
/// 1,088 tokens fit at full length.
fn max_utilization_log(source: &Source) -> Result<String> {
    let log = source.text("boot.log")?;
    let log = edit(
        &log,
        "<CapacitySchedulerPolicy.GUARANTEED_NO_EVICT: 'GUARANTEED_NO_EVICT'>",
        "<CapacitySchedulerPolicy.MAX_UTILIZATION: 'MAX_UTILIZATION'>",
    )?;
    edit(&log, "paged KV cache (37760)", "paged KV cache (20960)")
}

/// The folder's files and the lines of its MAX_UTILIZATION log (see
/// [`max_utilization_log`]), for a variant to change further.
fn max_utilization_lines(source: &Source) -> Result<(Files, Vec<String>)> {
    let files = source.all_but(&[])?;
    let log = max_utilization_log(source)?;
    Ok((files, log.lines().map(str::to_owned).collect()))
}

/// The request ids of the run's requests that MAX_UTILIZATION paused, newest first (it
/// pauses the last started request). The executor numbers requests from max_batch_size
/// (32); the probe took 32 to 40, the run 41 to 72.
fn paused_ids() -> impl Iterator<Item = u64> {
    (60..=72).rev()
}

fn lines_to_text(lines: &[String]) -> Vec<u8> {
    let mut text = lines.join("\n");
    text.push('\n');
    text.into_bytes()
}

const REPORT: &[&str] = &["report", "."];

/// Every variant, in the order the README lists them.
fn variants() -> Vec<Variant> {
    vec![
        Variant {
            name: "sglang-bench-serving-python-json",
            source: "sglang-0.5/qwen3-8b",
            situation: "The load ran with SGLang's own client, `python -m sglang.bench_serving --output-file bench.jsonl` without `--request-rate`. It appends one `json.dumps` line per run: `\"request_rate\": Infinity`, and `NaN` for statistics of an empty list (the earlier one-request smoke run has no inter-token gaps).",
            why: "The file is valid Python JSON; the run's line carries the same counts as the recording's own result, so every verdict is the recording's, but T18: without `--output-details` the line keeps no record of each request and counts no failure, so whether failures were left out cannot be told.",
            args: REPORT,
            expected: without_traces(vec![
                ("T12", "pass"),
                ("T5", "pass"),
                ("T6", "pass"),
                ("T15", "pass"),
                ("T18", "unknown"),
                ("T20", "pass"),
                ("T1", "pass"),
                ("T10", "pass"),
                ("T16", "pass"),
                ("T14", "not_applicable"),
                ("T9", "pass"),
                ("T8", "fail"),
                ("T17", "pass"),
                ("T19", "pass"),
                ("T21", "not_checked"),
            ]),
            exit_code: 1,
            build: |s| {
                let mut files = s.all_but(&["bench.json"])?;
                let recorded: Value = serde_json::from_str(&s.text("bench.json")?)?;
                let number = |key: &str| recorded.get(key).cloned().unwrap_or(Value::Null);
                let smoke = JsonObject::from([
                    ("backend", json!("sglang-oai")),
                    ("dataset_name", json!("random")),
                    ("request_rate", json!("__INF__")),
                    ("max_concurrency", json!(1)),
                    ("random_input_len", json!(88)),
                    ("random_output_len", json!(1)),
                    ("random_range_ratio", json!(0.0)),
                    ("duration", json!(0.41)),
                    ("completed", json!(1)),
                    ("total_input_tokens", json!(88)),
                    ("total_output_tokens", json!(1)),
                    ("total_output_tokens_retokenized", json!(1)),
                    ("mean_ttft_ms", json!(408.2)),
                    ("mean_tpot_ms", json!(0.0)),
                    ("mean_itl_ms", json!("__NAN__")),
                    ("median_itl_ms", json!("__NAN__")),
                    ("std_itl_ms", json!("__NAN__")),
                    ("p99_itl_ms", json!("__NAN__")),
                ]);
                let mut run = JsonObject::new();
                run.insert("backend".into(), json!("sglang-oai"));
                run.insert("dataset_name".into(), json!("random"));
                run.insert("request_rate".into(), json!("__INF__"));
                run.insert("max_concurrency".into(), number("max_concurrency"));
                run.insert("random_input_len".into(), json!(88));
                run.insert("random_output_len".into(), json!(1000));
                run.insert("random_range_ratio".into(), json!(0.0));
                for key in [
                    "duration",
                    "completed",
                    "total_input_tokens",
                    "total_output_tokens",
                    "request_throughput",
                    "output_throughput",
                    "mean_ttft_ms",
                    "median_ttft_ms",
                    "std_ttft_ms",
                    "p99_ttft_ms",
                    "mean_tpot_ms",
                    "median_tpot_ms",
                    "std_tpot_ms",
                    "p99_tpot_ms",
                    "mean_itl_ms",
                    "median_itl_ms",
                    "std_itl_ms",
                    "p99_itl_ms",
                ] {
                    run.insert(key.into(), number(key));
                }
                run.insert(
                    "total_output_tokens_retokenized".into(),
                    number("total_output_tokens"),
                );
                // json.dumps writes ", " and ": " separators and the bare tokens.
                let python = |v: &JsonObject| {
                    python_dumps(v)
                        .replace("\"__INF__\"", "Infinity")
                        .replace("\"__NAN__\"", "NaN")
                };
                let text = format!("{}\n{}\n", python(&smoke), python(&run));
                replace(&mut files, "bench.jsonl", text.into_bytes());
                Ok(files)
            },
        },
        Variant {
            name: "trtllm-pauses-flushed-after-the-run",
            source: "trtllm-1.3/qwen3-8b",
            situation: "TensorRT-LLM under MAX_UTILIZATION with a KV cache of 20,960 tokens ran 32 requests of 1,088 tokens and paused 13 of them. The executor and the HTTP server write the merged log through their own buffers: the executor's pause lines reached the file after the run's last access line.",
            why: "The probe's 9 requests (207 tokens) could not fill the cache and nothing was answered after the after snapshot, so every pause is the run's wherever its line sits: T1 fails with 13. The other verdicts are the recording's.",
            args: REPORT,
            expected: without_traces(trtllm_report("fail", "pass")),
            exit_code: 1,
            build: |s| {
                let (mut files, mut lines) = max_utilization_lines(s)?;
                let at = last_answer(&lines.iter().map(String::as_str).collect::<Vec<_>>())?;
                for (i, id) in paused_ids().enumerate() {
                    lines.insert(at + 1 + i, pause_line(id));
                }
                replace(&mut files, "boot.log", lines_to_text(&lines));
                Ok(files)
            },
        },
        Variant {
            name: "trtllm-pause-lines-lost",
            source: "trtllm-1.3/qwen3-8b",
            situation: "The same MAX_UTILIZATION run whose executor was killed before its buffered output reached the log: the log shows no pause at all.",
            why: "The log alone would pass T1; the cache arithmetic (19 fit, MAX_UTILIZATION ran all 32) says requests must have been paused. The two disagree, so T1 cannot tell.",
            args: REPORT,
            expected: without_traces(trtllm_report("unknown", "pass")),
            exit_code: 2,
            build: |s| {
                let mut files = s.all_but(&[])?;
                replace(&mut files, "boot.log", max_utilization_log(s)?.into_bytes());
                Ok(files)
            },
        },
        Variant {
            name: "trtllm-log-cut-inside-a-pause-line",
            source: "trtllm-1.3/qwen3-8b",
            situation: "The log of the MAX_UTILIZATION run copied while the executor was still writing: the copy ends in the middle of its first pause line, before the server's shutdown.",
            why: "A pause line whose request cannot be read is never no pause: T1 cannot tell.",
            args: REPORT,
            expected: without_traces(trtllm_report("unknown", "pass")),
            exit_code: 2,
            build: |s| {
                let mut files = s.all_but(&[])?;
                let log = max_utilization_log(s)?;
                let lines: Vec<&str> = log.lines().collect();
                let at = last_answer(&lines)?;
                let mut text = lines[..=at].join("\n");
                text.push('\n');
                let pause = pause_line(72);
                text.push_str(&pause[..pause.find("ID ").context("pause line")? + 4]);
                replace(&mut files, "boot.log", text.into_bytes());
                Ok(files)
            },
        },
        Variant {
            name: "trtllm-chunks-spliced-inside-lines",
            source: "trtllm-1.3/qwen3-8b",
            situation: "The MAX_UTILIZATION run's log written by two processes into one file without line buffering: chunks of executor output land in the middle of access lines, so pause lines are glued to access lines, and one pause line is split by an access line.",
            why: "Twelve pause lines read whole (glued or not) and are the run's: T1 fails; the split one is reported as a cut line that could not be read.",
            args: REPORT,
            expected: without_traces(trtllm_report("fail", "pass")),
            exit_code: 1,
            build: |s| {
                let (mut files, mut lines) = max_utilization_lines(s)?;
                let answers: Vec<usize> = lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.contains("\"POST /v1/completions HTTP/1.1\" 200"))
                    .map(|(i, _)| i)
                    .collect();
                let ids: Vec<u64> = paused_ids().collect();
                // Twelve pauses glued to the end of the run's last twelve access lines.
                for (k, id) in ids[..12].iter().enumerate() {
                    let line = answers[answers.len() - 1 - k];
                    lines[line].push_str(&pause_line(*id));
                }
                // The last pause split by the access line of the run's first answer.
                let split = pause_line(ids[12]);
                let (head, tail) = split.split_at(split.find("ID ").context("pause line")? + 3);
                let first = answers[answers.len() - 32];
                lines[first - 1].push_str(head);
                lines[first] = format!("{tail}{}", lines[first]);
                replace(&mut files, "boot.log", lines_to_text(&lines));
                Ok(files)
            },
        },
        Variant {
            name: "trtllm-log-of-another-start",
            source: "trtllm-1.3/qwen3-8b",
            situation: "The run folder holds the boot log of an earlier start of the same server (same probe, same 32 requests), not of the start that served the snapshots.",
            why: "The log answers as many requests as the run and shows no pause, so T1 alone would pass; but its processes (693, 866) are not the one whose metrics the snapshots read (1739). T1 and T19, which read the log, cannot tell; the boot checks describe the log they read.",
            args: REPORT,
            expected: without_traces(trtllm_report("unknown", "unknown")),
            exit_code: 2,
            build: |s| s.with_file_of("../qwen3-8b-start2", "boot.log"),
        },
        Variant {
            name: "vllm-crlf-and-colour",
            source: "vllm-0.28/xray",
            situation: "vLLM's log captured through a terminal (`script`, a container log viewer): CRLF line ends, the process prefix and the level coloured with ANSI escape codes.",
            why: "Line ends and colour carry no fact: every verdict is the recording's, T19's failure on the two kernel compiles vLLM logged inside the run included.",
            args: REPORT,
            expected: without_steps(without_traces(vllm_xray_report("fail"))),
            exit_code: 1,
            build: |s| {
                let mut files = s.all_but(&[])?;
                let log = s.text("boot.log")?;
                let mut out = String::with_capacity(log.len() * 2);
                for line in log.lines() {
                    out.push_str(&colour_vllm_line(line));
                    out.push_str("\r\n");
                }
                replace(&mut files, "boot.log", out.into_bytes());
                Ok(files)
            },
        },
        Variant {
            name: "vllm-processes-flushed-out-of-order",
            source: "vllm-0.28/xray",
            situation: "vLLM's API server and engine core write the merged log through their own buffers: each engine-core line reaches the file up to eight lines later than it was written.",
            why: "The facts a boot log gives do not depend on the order of two processes' lines: every verdict is the recording's. T19 places the kernel compiles by their own time stamps, not by their lines' order.",
            args: REPORT,
            expected: without_steps(without_traces(vllm_xray_report("fail"))),
            exit_code: 1,
            build: |s| {
                let mut files = s.all_but(&[])?;
                let log = s.text("boot.log")?;
                replace(&mut files, "boot.log", delay_engine_core(&log, 8).into_bytes());
                Ok(files)
            },
        },
        Variant {
            name: "vllm-log-copied-mid-line",
            source: "vllm-0.28/xray",
            situation: "vLLM's log copied while the server was still answering the run: the copy ends in the middle of an access line, before the shutdown.",
            why: "The log still shows the boot and the serving; the counts come from the snapshots: every verdict is the recording's but T19's. The copy ends inside the run, before the kernel compiles vLLM logged in it, so no compile line in the copy is not a pass: T19 cannot tell.",
            args: REPORT,
            expected: without_steps(without_traces(vllm_xray_report("unknown"))),
            exit_code: 1,
            build: |s| {
                let mut files = s.all_but(&[])?;
                let log = s.text("boot.log")?;
                let lines: Vec<&str> = log.lines().collect();
                let at = last_answer(&lines)?;
                let mut text = lines[..at].join("\n");
                text.push('\n');
                text.push_str(&lines[at][..lines[at].len() / 2]);
                replace(&mut files, "boot.log", text.into_bytes());
                Ok(files)
            },
        },
        Variant {
            name: "vllm-series-left-over-from-another-run",
            source: "vllm-0.28/xray",
            situation: "The run folder holds a series recorded during another run (of another start of the server, days earlier) instead of this run's.",
            why: "Every sample of the series lies before the before snapshot (days earlier, by both clocks), so it recorded another time: the gate sets it aside, and every verdict that needs a recording (T14, T9, T8, T17, T21) cannot tell, naming it. Set aside, it contradicts nothing: the snapshots, the result file and the log are this run's, so T1, T10, T15, T18 and T20 are judged on them as on the recording's own folder (T1 fails with its 21 preemptions, T19 with its compile lines).",
            args: REPORT,
            expected: without_steps(without_traces(vec![
                ("T12", "pass"),
                ("T5", "warn"),
                ("T6", "pass"),
                ("T15", "pass"),
                ("T18", "pass"),
                ("T20", "pass"),
                ("T1", "fail"),
                ("T10", "pass"),
                ("T16", "pass"),
                ("T14", "unknown"),
                ("T9", "unknown"),
                ("T8", "unknown"),
                ("T17", "unknown"),
                ("T19", "fail"),
                ("T21", "unknown"),
                ("T28", "not_applicable"),
            ])),
            exit_code: 1,
            build: |s| s.with_file_of("../live", "run.series.jsonl"),
        },
        Variant {
            name: "sglang-retraction-gauge-without-log",
            source: "sglang-0.5/qwen3-8b",
            situation: "An SGLang run saved without its server log. The after snapshot has the retraction gauge but no retraction counter, as every SGLang release since mid-2025 serves it: those that have the counter write it at the first retraction, earlier ones never do.",
            why: "Without the log's `Retract requests.` lines nothing tells the two apart: T1 cannot tell. The other verdicts need no log and are the recording's; the boot checks and T19 (whose compile lines are in the log) are listed as not checked.",
            args: REPORT,
            expected: without_traces(vec![
                ("T15", "pass"),
                ("T18", "pass"),
                ("T20", "pass"),
                ("T1", "unknown"),
                ("T10", "pass"),
                ("T16", "pass"),
                ("T14", "not_applicable"),
                ("T9", "pass"),
                ("T8", "fail"),
                ("T17", "pass"),
                ("T12", "not_checked"),
                ("T5", "not_checked"),
                ("T6", "not_checked"),
                ("T19", "not_checked"),
                ("T21", "not_checked"),
            ]),
            exit_code: 1,
            build: |s| s.all_but(&["boot.log"]),
        },
    ]
}

/// A JSON value as Python's `json.dumps` writes it by default: `", "` and `": "`.
fn python_dumps(object: &JsonObject) -> String {
    fn value(v: &Value) -> String {
        match v {
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(value).collect();
                format!("[{}]", items.join(", "))
            }
            other => other.to_string(),
        }
    }
    let items: Vec<String> = object
        .iter()
        .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), value(v)))
        .collect();
    format!("{{{}}}", items.join(", "))
}

/// A vLLM line with the colours a terminal shows: the process prefix cyan, the level
/// green, yellow or red.
fn colour_vllm_line(line: &str) -> String {
    let (prefix, rest) = match line
        .strip_prefix('(')
        .and_then(|r| r.find(") ").map(|c| c + 1))
    {
        Some(close) => (&line[..close + 1], &line[close + 1..]),
        None => ("", line),
    };
    let mut out = String::new();
    if !prefix.is_empty() {
        out.push_str(&format!("\u{1b}[1;36m{prefix}\u{1b}[0m"));
    }
    let rest_trimmed = rest.strip_prefix(' ').unwrap_or(rest);
    if !prefix.is_empty() {
        out.push(' ');
    }
    for (level, colour) in [("INFO ", "32"), ("WARNING ", "33"), ("ERROR ", "31")] {
        if let Some(after) = rest_trimmed.strip_prefix(level) {
            out.push_str(&format!(
                "\u{1b}[{colour}m{}\u{1b}[0m {after}",
                level.trim_end()
            ));
            return out;
        }
    }
    out.push_str(rest_trimmed);
    out
}

/// The log with each `(EngineCore ...)` line moved up to `delay` lines later, as a
/// buffer flushed late leaves it; the order within each process is kept.
fn delay_engine_core(log: &str, delay: usize) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut pending: std::collections::VecDeque<(usize, &str)> = Default::default();
    for (i, line) in log.lines().enumerate() {
        if line.starts_with("(EngineCore") {
            // A deterministic delay between 1 and `delay` lines.
            pending.push_back((i + 1 + (i * 7919) % delay, line));
        } else {
            out.push(line);
        }
        while pending.front().is_some_and(|(due, _)| *due <= i) {
            out.push(pending.pop_front().expect("checked").1);
        }
    }
    out.extend(pending.into_iter().map(|(_, l)| l));
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// The recordings folder, from `INFERLINT_RECORDED`.
pub fn recorded() -> Option<PathBuf> {
    std::env::var_os("INFERLINT_RECORDED")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
}

/// Every generated file, by path under the repository root.
pub fn files(recorded: &Path) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut readme = String::from(
        "<!-- generated by `cargo xtask variants`, do not edit -->\n\
# Format variants\n\n\
Each folder is a real recording changed the way a real situation changes it, made by\n\
`cargo xtask variants` from the recordings in `INFERLINT_RECORDED` (see\n\
`xtask/src/variants.rs`). `variant.json` says what situation it stands for, the command\n\
to run in the folder and the verdicts that command must give; the CLI's tests run each\n\
one (`crates/inferlint-cli/tests/variants.rs`).\n\n\
| variant | from | situation |\n|---|---|---|\n",
    );
    for v in variants() {
        let source = Source {
            dir: recorded.join(v.source),
        };
        let folder = Path::new(DIR).join(v.name);
        for (name, bytes) in (v.build)(&source).with_context(|| format!("variant {}", v.name))? {
            out.push((folder.join(name), bytes));
        }
        /// The file's fields in its order.
        #[derive(serde::Serialize)]
        struct Description<'a> {
            generated: &'a str,
            situation: &'a str,
            source: &'a str,
            args: &'a [&'a str],
            expected: Vec<JsonObject>,
            exit_code: i32,
            why: &'a str,
        }
        let description = Description {
            generated: "by `cargo xtask variants`, do not edit",
            situation: v.situation,
            source: v.source,
            args: v.args,
            expected: v
                .expected
                .iter()
                .map(|(t, s)| JsonObject::from([("tripwire", json!(t)), ("status", json!(s))]))
                .collect(),
            exit_code: v.exit_code,
            why: v.why,
        };
        let mut text = serde_json::to_string_pretty(&description)?;
        text.push('\n');
        out.push((folder.join("variant.json"), text.into_bytes()));
        readme.push_str(&format!(
            "| {} | {} | {} |\n",
            v.name,
            v.source,
            v.situation.replace('|', "\\|")
        ));
    }
    out.push((Path::new(DIR).join("README.md"), readme.into_bytes()));
    Ok(out)
}

/// Writes the corpus, or with `check` fails when a committed file is stale or missing.
pub fn run(root: &Path, check: bool) -> Result<()> {
    let recorded = recorded().context(
        "set INFERLINT_RECORDED to the recordings folder: the variants are made from them",
    )?;
    let files = files(&recorded)?;
    let mut stale = Vec::new();
    for (path, bytes) in &files {
        let full = root.join(path);
        if check {
            if std::fs::read(&full).ok().as_deref() != Some(bytes.as_slice()) {
                stale.push(path.display().to_string());
            }
        } else {
            if let Some(dir) = full.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(&full, bytes)
                .with_context(|| format!("cannot write {}", full.display()))?;
        }
    }
    // A folder no variant makes any more is stale too.
    let made: std::collections::BTreeSet<String> = files
        .iter()
        .filter_map(|(p, _)| p.strip_prefix(DIR).ok()?.iter().next())
        .filter_map(|c| c.to_str().map(str::to_owned))
        .collect();
    if let Ok(entries) = std::fs::read_dir(root.join(DIR)) {
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && !made.contains(&name) {
                stale.push(format!("{DIR}/{name} (no variant makes it)"));
            }
        }
    }
    if !stale.is_empty() {
        bail!(
            "{} is out of date: run `INFERLINT_RECORDED=../shared/recorded cargo xtask variants` and commit",
            stale.join(", ")
        );
    }
    Ok(())
}
