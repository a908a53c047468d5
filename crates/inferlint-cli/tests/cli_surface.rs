//! The command line as a user meets it.

use std::process::{Command, Stdio};

use crate::common::{inferlint, inferlint_env, no_panic, recorded, stderr, stdout};
use crate::common::{UNDECIDED, UNUSABLE_INPUT, USAGE};

fn here() -> std::path::PathBuf {
    std::env::temp_dir()
}

#[test]
fn no_arguments_prints_where_to_start() {
    let out = inferlint(&here(), &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("inferlint checks an inference benchmark run"));
    assert!(text.contains("inferlint report run/"));
    assert!(text.contains("INFERLINT_ENGINE"));
}

#[test]
fn version() {
    let out = inferlint(&here(), &["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stdout(&out),
        format!("inferlint {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn help_lists_commands_in_groups() {
    let out = inferlint(&here(), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    let saved = text.find("Check a saved run:").unwrap();
    let learn = text.find("Learn:").unwrap();
    assert!(saved < learn);
    for command in [
        "report",
        "check-log",
        "boot-facts",
        "preemption",
        "rate",
        "series",
        "explain",
    ] {
        assert!(
            text.contains(&format!("  {command} ")),
            "{command} missing from --help"
        );
    }
}

#[test]
fn unknown_command_suggests_the_closest() {
    let out = inferlint(&here(), &["reprot"]);
    assert_eq!(out.status.code(), Some(USAGE));
    assert_eq!(
        stderr(&out),
        "inferlint: unknown command 'reprot'. Did you mean 'report'? 'inferlint --help' lists them.\n"
    );
    let out = inferlint(&here(), &["zzzz"]);
    assert_eq!(
        stderr(&out),
        "inferlint: unknown command 'zzzz'. 'inferlint --help' lists them.\n"
    );
}

#[test]
fn unknown_engine_names() {
    let out = inferlint(&here(), &["explain", "--engine", "tgi"]);
    assert_eq!(out.status.code(), Some(USAGE));
    assert!(stderr(&out).contains("unknown engine 'tgi'"));
    let out = inferlint_env(&here(), &["explain", "T1"], &[("INFERLINT_ENGINE", "tgi")]);
    assert_eq!(out.status.code(), Some(USAGE));
    assert_eq!(
        stderr(&out),
        "inferlint: INFERLINT_ENGINE='tgi' is not an engine (known: vllm, sglang, trtllm)\n"
    );
    // Display names in any case are accepted.
    let out = inferlint(&here(), &["explain", "T1", "--engine", "TensorRT-LLM"]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn explain_by_code_and_by_name() {
    let out = inferlint(&here(), &["explain", "T9"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("T9  "), "{text}");
    assert!(text.contains("(falling-ceiling)"));
    assert_eq!(
        stdout(&inferlint(&here(), &["explain", "falling-ceiling"])),
        text
    );
    assert!(text.lines().all(|l| l.chars().count() <= 88), "{text}");
    let out = inferlint(&here(), &["explain", "T99"]);
    assert_eq!(out.status.code(), Some(USAGE));
    assert_eq!(
        stderr(&out),
        "inferlint: unknown tripwire: T99 (known: T1-T31, or a name such as silent-preemption)\n"
    );
    let all = stdout(&inferlint(&here(), &["explain"]));
    let mut at = Vec::new();
    for n in 1..=21 {
        let found = if all.starts_with(&format!("T{n}  ")) {
            Some(0)
        } else {
            all.find(&format!("\nT{n}  "))
        };
        assert!(found.is_some(), "T{n} missing");
        at.extend(found);
    }
    // `explain` lists the catalogue in number order.
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
}

#[test]
fn explain_with_an_engine_shows_only_its_notes() {
    let sglang = stdout(&inferlint(
        &here(),
        &["explain", "T1", "--engine", "sglang"],
    ));
    assert!(sglang.contains("On SGLang:"));
    assert!(!sglang.contains("On TensorRT-LLM:"));
}

#[test]
fn a_closed_pipe_is_not_an_error() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .arg("explain")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close our end before it writes: its writes then fail with a broken pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    no_panic(&out);
    assert_eq!(stderr(&out), "");
    assert_eq!(out.status.code(), Some(0));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn strict_turns_warnings_into_failures() {
    let dir = recorded();
    let out = inferlint(&dir, &["check-log", "vllm-0.28/boot_fp8_triton.log"]);
    assert_eq!(out.status.code(), Some(0));
    let out = inferlint(
        &dir,
        &["check-log", "vllm-0.28/boot_fp8_triton.log", "--strict"],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn terminal_lines_match_the_tutorial() {
    let dir = recorded();
    let l = "vllm-0.28/live";
    let out = inferlint(
        &dir,
        &[
            "preemption",
            &format!("{l}/before.snapshot.json"),
            &format!("{l}/after.snapshot.json"),
        ],
    );
    assert_eq!(
        stdout(&out),
        "[ T1] TRIPWIRE-FAILED  22 preemptions during the run\n"
    );
    let out = inferlint(
        &dir,
        &[
            "rate",
            &format!("{l}/before.snapshot.json"),
            &format!("{l}/after.snapshot.json"),
        ],
    );
    assert_eq!(
        stdout(&out),
        "[T10] PASS  341.44 tokens/s over 93.720s; an integer-second timer would say 344.09 (+0.77%)\n"
    );
    let series_args = [
        "series".to_owned(),
        format!("{l}/run.series.jsonl"),
        "--snapshot".to_owned(),
        format!("{l}/after.snapshot.json"),
        "--requested".to_owned(),
        "32".to_owned(),
    ];
    let series_args: Vec<&str> = series_args.iter().map(String::as_str).collect();
    let series = stdout(&inferlint(&dir, &series_args));
    // The tutorial's "You'll see" for step 9, the lines `series` prints.
    let tutorial_series = [
        "[T14] PASS  gauge denominator is 42 = num_gpu_blocks (43) - 1 null block",
        "[ T9] WARN  ceiling moved between 7 and 10 as requests grew (one request held 9.5% to 14.3% of the cache); concurrency was not a constant of this run",
        "[ T8] TRIPWIRE-FAILED  requested 32 concurrent, server never ran more than 10",
    ];
    assert_eq!(series, format!("{}\n", tutorial_series.join("\n")));
    // The tutorial's step 3, the lines `check-log` prints.
    let tutorial_check_log = [
        "[T12] PASS  no failure in log",
        "[ T5] WARN  attention block size forced to 784 tokens (requested 16); each request's KV is allocated in 784-token units",
        "[ T6] PASS  nothing to check: the server was started without --attention-backend, so vLLM chose its own (FLASH_ATTN) and nothing could be ignored; there was no draft model either",
    ];
    let out = inferlint(&dir, &["check-log", &format!("{l}/boot.log")]);
    assert_eq!(stdout(&out), format!("{}\n", tutorial_check_log.join("\n")));
    let out = inferlint(
        &dir,
        &[
            "report",
            "--requested",
            "32",
            "--boot-log",
            &format!("{l}/boot.log"),
            "--before",
            &format!("{l}/before.snapshot.json"),
            "--after",
            &format!("{l}/after.snapshot.json"),
            "--series",
            &format!("{l}/run.series.jsonl"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "report follows the exit rule");
    let report = stdout(&out);
    // Step 10: the report repeats the verdicts of the steps before it, word for word (T10
    // excepted: the report says whose count its throughput is), then "What limited this
    // run:" with the tutorial's sentences, then the count line.
    for line in ["[ T1] TRIPWIRE-FAILED  22 preemptions during the run"]
        .iter()
        .chain(&tutorial_series)
        .chain(&tutorial_check_log)
    {
        assert_eq!(
            report.lines().filter(|l| l == line).count(),
            1,
            "the report should print once: {line}\n{report}"
        );
    }
    let limited = report
        .split_once("What limited this run:\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no What limited block\n{report}"));
    for (i, sentence) in [
        "  - The server ran fewer requests at once than the load sent. The load kept 32 requests open, but the server ran at most 10 at once. It also preempted 22 running requests.",
        "  - Requests waited in the queue. A request waited 29.3 s on average before the server started it.",
        "  - On average 8 of 32 requests ran at once.",
    ]
    .iter()
    .enumerate()
    {
        let got = limited.lines().nth(i).unwrap_or_default();
        // The tutorial cuts the third sentence short ("…").
        assert!(got.starts_with(sentence), "sentence {i}: {got}\n{report}");
    }
    assert_the_count_line_counts_the_lines(&report);
    // `--json`: the same verdicts, in the same order, with the same words.
    let json_args: Vec<&str> = series_args.iter().copied().chain(["--json"]).collect();
    let value: serde_json::Value =
        serde_json::from_str(&stdout(&inferlint(&dir, &json_args))).expect("series --json");
    let from_json: Vec<String> = value
        .as_array()
        .expect("an array of results")
        .iter()
        .map(|r| {
            let label = match r["status"].as_str().unwrap() {
                "pass" => "PASS",
                "warn" => "WARN",
                "fail" => "TRIPWIRE-FAILED",
                other => panic!("a status the run did not give: {other}"),
            };
            let id = r["tripwire"].as_str().unwrap();
            format!("[{id:>3}] {label}  {}", r["message"].as_str().unwrap())
        })
        .collect();
    assert_eq!(from_json, tutorial_series);
}

/// The count line, argued from its format (`N checks (a pass, b warn, c tripwire-failed,
/// d unknown)`, zero counts left out, N without the checks that do not apply or were not
/// checked, then `; 1 does not apply` or `; n do not apply`, and `; n not checked`),
/// against the verdict lines printed above it. Each tripwire is printed once.
fn assert_the_count_line_counts_the_lines(report: &str) {
    let labels: Vec<(&str, &str)> = report
        .lines()
        .filter(|l| l.starts_with('['))
        .map(|l| {
            let (id, rest) = l[1..].split_once("] ").expect("a verdict line");
            (id.trim(), rest.split("  ").next().unwrap_or_default())
        })
        .collect();
    let mut ids: Vec<&str> = labels.iter().map(|(id, _)| *id).collect();
    ids.sort_unstable();
    let printed = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), printed, "a tripwire printed twice\n{report}");
    let count = |label: &str| labels.iter().filter(|(_, l)| *l == label).count();
    let not_applicable = count("N/A");
    let not_checked = count("NOT-CHECKED");
    let parts: Vec<String> = [
        ("PASS", "pass"),
        ("WARN", "warn"),
        ("TRIPWIRE-FAILED", "tripwire-failed"),
        ("????", "unknown"),
    ]
    .iter()
    .filter(|(label, _)| count(label) > 0)
    .map(|(label, word)| format!("{} {word}", count(label)))
    .collect();
    let checked = printed - not_applicable - not_checked;
    let plural = if checked == 1 { "" } else { "s" };
    let mut expected = format!("{checked} check{plural} ({})", parts.join(", "));
    match not_applicable {
        0 => {}
        1 => expected.push_str("; 1 does not apply"),
        n => expected.push_str(&format!("; {n} do not apply")),
    }
    if not_checked > 0 {
        expected.push_str(&format!("; {not_checked} not checked"));
    }
    assert_eq!(report.lines().last(), Some(expected.as_str()), "{report}");
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn boot_facts_lines() {
    let dir = recorded();
    let out = inferlint(&dir, &["boot-facts", "sglang-0.5/qwen3-8b/boot.log"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.contains("\nengine                       sglang\n")
            || text.starts_with("engine                       sglang\n"),
        "{text}"
    );
    assert!(
        text.contains("kv_pool_tokens               32096\n"),
        "{text}"
    );
    let out = inferlint(&dir, &["boot-facts", "vllm-0.28/boot_eager.log", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["attention_block_size"], 784);
}

/// The README's exit table, one row at a time: clap's own parse errors (an unknown flag,
/// a missing argument, a value it refuses, flags that conflict) are a wrong command line,
/// 64, not clap's 2; a truncated input is an input that cannot be used, 65; a tripwire
/// that cannot decide is still 2. A CI gate can tell a typo from an undecided run.
#[test]
fn exit_statuses_tell_a_typo_from_unusable_input_and_from_cant_tell() {
    let tmp = tempfile::tempdir().unwrap();
    for args in [
        &["report", "--no-such-flag"][..],
        &["series"][..],
        &["series", "run.series.jsonl", "--requested", "abc"][..],
        &[
            "report",
            "--prometheus",
            "http://127.0.0.1:1",
            "--start",
            "1",
        ][..],
        &[
            "report",
            "run",
            "--prometheus",
            "http://127.0.0.1:1",
            "--start",
            "1",
            "--end",
            "2",
        ][..],
    ] {
        let out = inferlint(tmp.path(), args);
        no_panic(&out);
        assert_eq!(out.status.code(), Some(USAGE), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).starts_with("inferlint: ") && stderr(&out).lines().count() == 1,
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty(), "{args:?}");
    }

    let demo = crate::common::demo_folder();
    let whole = std::fs::read(demo.join("after.snapshot.json")).unwrap();
    std::fs::write(tmp.path().join("cut.json"), &whole[..whole.len() / 2]).unwrap();
    let before = demo.join("before.snapshot.json");
    let out = inferlint(
        tmp.path(),
        &["preemption", before.to_str().unwrap(), "cut.json"],
    );
    no_panic(&out);
    assert_eq!(
        out.status.code(),
        Some(UNUSABLE_INPUT),
        "a truncated snapshot: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("cut.json"), "{}", stderr(&out));

    // Readings that lack the preemption counter: T1 cannot tell.
    std::fs::write(
        tmp.path().join("a.prom"),
        "vllm:generation_tokens_total 10\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("b.prom"),
        "vllm:generation_tokens_total 20\n",
    )
    .unwrap();
    let out = inferlint(tmp.path(), &["preemption", "a.prom", "b.prom"]);
    no_panic(&out);
    assert!(stdout(&out).starts_with("[ T1] ????"), "{}", stdout(&out));
    assert_eq!(out.status.code(), Some(UNDECIDED), "Can't tell");
}
