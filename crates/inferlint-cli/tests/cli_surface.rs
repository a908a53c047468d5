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
    let out = inferlint(
        &dir,
        &[
            "series",
            &format!("{l}/run.series.jsonl"),
            "--snapshot",
            &format!("{l}/after.snapshot.json"),
            "--requested",
            "32",
        ],
    );
    insta::assert_snapshot!("series_live_terminal", stdout(&out));
    let out = inferlint(&dir, &["check-log", &format!("{l}/boot.log")]);
    insta::assert_snapshot!("check_log_live_terminal", stdout(&out));
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
    insta::assert_snapshot!("report_live_terminal", stdout(&out));
    assert_eq!(out.status.code(), Some(1), "report follows the exit rule");
    let out = inferlint(
        &dir,
        &[
            "series",
            &format!("{l}/run.series.jsonl"),
            "--snapshot",
            &format!("{l}/after.snapshot.json"),
            "--requested",
            "32",
            "--json",
        ],
    );
    insta::assert_snapshot!("series_live_json", stdout(&out));
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
