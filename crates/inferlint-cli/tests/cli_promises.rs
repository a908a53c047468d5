//! What the command line promises and must keep: a folder of runs is not read as one,
//! `--slo` gates, the help names every command and only the flags each honours, usage
//! errors are one line.

use std::path::Path;

use serde_json::Value;

use crate::common::{copy_tree, fixtures, inferlint, no_panic, recorded, stderr, stdout};
use crate::common::{UNDECIDED, UNUSABLE_INPUT, USAGE};

/// The one line a refusal prints, checked to be one line and led by `inferlint: `.
fn one_line(out: &std::process::Output) -> String {
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("inferlint: "), "{err}");
    err
}

fn sweep_run(concurrency: &str) -> std::path::PathBuf {
    fixtures().join("sweep").join(concurrency)
}

// ---- a folder of runs ----

/// The recorded vLLM 0.28 folder holds eight loose boot logs and subfolders that are runs
/// of their own (`xray/` and `live/` each a whole run, `metrics/` snapshot pairs,
/// `series/` two recordings): `report` must not pick one log and another folder's result
/// file and call it a run. An input that cannot be used is 65 by the README's table.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_folder_of_runs_is_refused_naming_them() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let folder = dir.join("vllm-0.28");
    let out = inferlint(
        tmp.path(),
        &[
            "report",
            folder.to_str().unwrap(),
            "-o",
            tmp.path().join("r.html").to_str().unwrap(),
        ],
    );
    no_panic(&out);
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&out));
    let err = one_line(&out);
    for named in [
        "boot_eager.log",
        "boot_cudagraphs.log",
        "xray/",
        "live/",
        "compare",
        "sweep",
    ] {
        assert!(err.contains(named), "{named} not named: {err}");
    }
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(!tmp.path().join("r.html").exists());
}

/// A folder whose subfolders are runs (a sweep) is not one run either; nor two boot logs
/// of report's loose name with nothing saying which is the run's.
#[test]
fn subfolders_of_runs_and_loose_boot_logs_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(
        tmp.path(),
        &[
            "report",
            fixtures().join("sweep").to_str().unwrap(),
            "-o",
            "r.html",
        ],
    );
    no_panic(&out);
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&out));
    let err = one_line(&out);
    for named in ["c04/", "c08/", "c16/", "c32/"] {
        assert!(err.contains(named), "{err}");
    }

    let two = tmp.path().join("two");
    copy_tree(&sweep_run("c04"), &two);
    std::fs::rename(two.join("boot.log"), two.join("boot-a.log")).unwrap();
    std::fs::copy(sweep_run("c08").join("boot.log"), two.join("boot-b.log")).unwrap();
    let out = inferlint(tmp.path(), &["report", "two", "-o", "r.html"]);
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&out));
    let err = one_line(&out);
    assert!(
        err.contains("boot-a.log") && err.contains("boot-b.log"),
        "{err}"
    );
}

/// xray keeps an earlier run in `earlier-TIME/` beside the folder's own: the folder is
/// still one run, and nothing is read from the earlier one (here its result file, the only
/// one there is: the run's own was removed, so T15 must say it has none).
#[test]
fn an_earlier_run_beside_the_run_is_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_tree(&sweep_run("c04"), &run);
    std::fs::remove_file(run.join("bench.json")).unwrap();
    copy_tree(&sweep_run("c08"), &run.join("earlier-20260101-000000"));
    let out = inferlint(tmp.path(), &["report", "run", "--json", "-o", "r.html"]);
    no_panic(&out);
    assert!(
        stderr(&out).lines().all(|l| !l.contains("several runs")),
        "{}",
        stderr(&out)
    );
    let results: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let t15 = results.iter().find(|r| r["tripwire"] == "T15").unwrap();
    assert_eq!(t15["status"], "not_checked", "{t15}");
    assert!(!stdout(&out).contains("earlier-"), "{}", stdout(&out));
}

// ---- --slo gates ----

fn report_slo(slo: &str, extra: &[&str]) -> std::process::Output {
    let tmp = tempfile::tempdir().unwrap();
    let run = sweep_run("c04");
    let mut args = vec![
        "report",
        run.to_str().unwrap(),
        "--slo",
        slo,
        "-o",
        "r.html",
    ];
    args.extend_from_slice(extra);
    let out = inferlint(tmp.path(), &args);
    no_panic(&out);
    out
}

/// c04 passes every tripwire (the setup fits 8 whole requests, 4 are asked), so its exit
/// status is the service level's alone. The simulated server's every step costs 18.5 ms
/// (crates/inferlint-sim/src/sweep.rs), so no first token comes within 1 ms: NOT MET is 1,
/// with `--strict` too. Its p95 TTFT is tens of milliseconds: a 2 s bound is met, 0.
/// Without the requests' records it cannot be told: 2.
#[test]
fn a_service_level_not_met_fails_and_one_not_told_is_cant_tell() {
    let out = report_slo("ttft:p95<=1ms", &[]);
    assert!(stdout(&out).contains("NOT MET"), "{}", stdout(&out));
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let out = report_slo("ttft:p95<=1ms", &["--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let out = report_slo("ttft:p95<=2s", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));

    // The same run's result as `vllm bench serve` writes it without `--save-detailed`:
    // no request's own figures, so no percentile of every request can be taken.
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_tree(&sweep_run("c04"), &run);
    let mut bench: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(run.join("bench.json")).unwrap()).unwrap();
    for detailed in [
        "errors",
        "input_lens",
        "itls",
        "output_lens",
        "queue_times",
        "start_times",
        "ttfts",
    ] {
        bench.remove(detailed);
    }
    std::fs::write(
        run.join("bench.json"),
        serde_json::to_string(&bench).unwrap(),
    )
    .unwrap();
    let out = inferlint(tmp.path(), &["report", "run", "-o", "r.html"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = inferlint(
        tmp.path(),
        &["report", "run", "-o", "r.html", "--slo", "ttft:p95<=2s"],
    );
    assert!(stdout(&out).contains("can't tell"), "{}", stdout(&out));
    assert_eq!(out.status.code(), Some(UNDECIDED), "{}", stdout(&out));
}

/// The README's example: every run of the sweep keeps each request's record, so each is
/// told against the service level (no `?`), and the capacity lies between 8 (the pool
/// holds 8 whole requests: nothing waits) and 16 (preempting), priced at 8.
#[test]
fn the_readme_sweep_with_a_service_level_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(
        tmp.path(),
        &[
            "sweep",
            fixtures().join("sweep").to_str().unwrap(),
            "--slo",
            "ttft:p95<=2s,tpot:p99<=60ms",
            "--gpu-price",
            "2.5",
        ],
    );
    no_panic(&out);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("run "))
        .skip(1)
        .take(4)
        .collect();
    assert_eq!(table.len(), 4, "{text}");
    for row in &table {
        assert!(!row.contains('?') && !row.contains("can't tell"), "{row}");
    }
    assert!(text.contains("between 8 that meets"), "{text}");
    assert!(text.contains("and 16 that does not"), "{text}");
    assert!(text.contains("cost at"), "{text}");

    // A bound no run can meet brackets no capacity: it cannot be told, 2.
    let out = inferlint(
        tmp.path(),
        &[
            "sweep",
            fixtures().join("sweep").to_str().unwrap(),
            "--slo",
            "ttft:p95<=1ms",
        ],
    );
    assert_eq!(out.status.code(), Some(UNDECIDED), "{}", stdout(&out));
}

/// The sweep's setup holds 8 whole requests (crates/inferlint-sim/src/sweep.rs): up to 8
/// asked the server runs every request the load keeps open, past it they preempt each
/// other. The closed loop's single test request before the load and its drain at the end
/// are not the server failing to follow, so the first finding names 16, not 4.
#[test]
fn the_sweep_says_where_the_load_stopped_being_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(
        tmp.path(),
        &["sweep", fixtures().join("sweep").to_str().unwrap()],
    );
    let text = stdout(&out);
    let first = text
        .lines()
        .find(|l| l.starts_with("- "))
        .unwrap_or_default();
    assert!(
        first.starts_with("- the server followed the load up to 8; at 16 asked"),
        "{text}"
    );
}

// ---- the help and the flags ----

/// `--json` goes with the commands that have results to print; snapshot and watch write
/// files, schema prints JSON whatever is asked, completions a script: there it is refused
/// (64, one line) and not offered in their help.
#[test]
fn json_only_where_there_is_json_to_print() {
    let tmp = tempfile::tempdir().unwrap();
    for command in ["snapshot", "watch", "schema", "completions"] {
        let help = stdout(&inferlint(tmp.path(), &[command, "--help"]));
        let offered = help.lines().any(|l| l.trim_start().starts_with("--json "));
        assert!(!offered, "{command}: {help}");
        let out = inferlint(tmp.path(), &["--json", command]);
        assert_eq!(out.status.code(), Some(USAGE), "{command}");
        one_line(&out);
    }
    for args in [
        &["--json", "explain", "T1"][..],
        &["explain", "T1", "--json"][..],
    ] {
        let out = inferlint(tmp.path(), args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let _: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    }
}

#[test]
fn every_command_is_in_the_help() {
    let out = inferlint(Path::new("."), &["--help"]);
    let text = stdout(&out);
    // Every subcommand clap knows (the shell completions list them), `help` aside.
    for command in [
        "xray",
        "report",
        "check-log",
        "boot-facts",
        "preemption",
        "rate",
        "series",
        "compare",
        "sweep",
        "whatif",
        "snapshot",
        "watch",
        "probe",
        "gpu-inspect",
        "teardown",
        "demo",
        "explain",
        "schema",
        "completions",
    ] {
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "{command} missing from --help"
        );
    }
}

/// `--junit` and `--strict` are offered, and taken, only by the commands that give
/// verdicts: elsewhere a usage error (64), one line, and no file written.
#[test]
fn strict_and_junit_only_where_they_do_something() {
    let tmp = tempfile::tempdir().unwrap();
    for command in ["schema", "explain", "whatif", "snapshot", "completions"] {
        let help = stdout(&inferlint(tmp.path(), &[command, "--help"]));
        assert!(!help.contains("--junit"), "{command}: {help}");
        assert!(!help.contains("--strict"), "{command}: {help}");
    }
    for command in ["report", "check-log", "compare", "sweep", "probe", "demo"] {
        let help = stdout(&inferlint(tmp.path(), &[command, "--help"]));
        assert!(
            help.contains("--junit") && help.contains("--strict"),
            "{command}"
        );
    }
    for args in [
        &["explain", "T1", "--junit", "j.xml"][..],
        &["--junit", "j.xml", "schema"][..],
        &["--strict", "schema"][..],
        &["schema", "--strict"][..],
        &["--strict", "explain", "T1"][..],
    ] {
        let out = inferlint(tmp.path(), args);
        assert_eq!(out.status.code(), Some(USAGE), "{args:?}");
        one_line(&out);
        assert!(!tmp.path().join("j.xml").exists(), "{args:?}");
    }
    // Before or after the command's name, where it is honoured.
    let log = sweep_run("c04").join("boot.log");
    let out = inferlint(
        tmp.path(),
        &[
            "check-log",
            log.to_str().unwrap(),
            "--junit",
            "j.xml",
            "--strict",
        ],
    );
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
    assert!(tmp.path().join("j.xml").is_file());
}

#[test]
fn explain_json_is_json() {
    let out = inferlint(
        Path::new("."),
        &["explain", "--json", "T1", "falling-ceiling"],
    );
    assert_eq!(out.status.code(), Some(0));
    let v: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0]["tripwire"], "T1");
    assert_eq!(v[0]["slug"], "silent-preemption");
    assert!(v[0]["verdicts"][0]["status"].is_string());
}

/// The simulator models SGLang (fixtures/sim/sglang-capped): `demo --engine sglang` writes
/// and checks that run, with SGLang's own metric names, rather than a vLLM one.
#[test]
fn demo_checks_the_engine_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = inferlint(
        tmp.path(),
        &["demo", "--engine", "sglang", "-o", "d", "--json"],
    );
    no_panic(&out);
    assert!(
        stderr(&out).contains("simulated SGLang run"),
        "{}",
        stderr(&out)
    );
    let before = std::fs::read_to_string(tmp.path().join("d/before.snapshot.json")).unwrap();
    assert!(before.contains("sglang:"), "not an SGLang snapshot");
    let results: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(!results.is_empty());
}

#[test]
fn every_positional_argument_is_described() {
    for command in [
        "boot-facts",
        "preemption",
        "rate",
        "series",
        "check-log",
        "report",
    ] {
        let help = stdout(&inferlint(Path::new("."), &[command, "--help"]));
        let arguments: Vec<&str> = help
            .lines()
            .skip_while(|l| !l.starts_with("Arguments:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            // An argument's line; a description too long for the width goes on below it.
            .filter(|l| l.trim_start().starts_with(['<', '[']))
            .collect();
        assert!(!arguments.is_empty(), "{command}: {help}");
        for line in arguments {
            // `  <NAME>  what it is`: a name alone says nothing.
            let described = line
                .trim()
                .split_once("  ")
                .is_some_and(|(_, d)| !d.trim().is_empty());
            assert!(described, "{command}: '{line}' is not described");
        }
    }
}

/// Nothing listens at the port (it was bound and let go): no server answered, so no T7
/// verdict; an input that cannot be used, one line, as `snapshot` says it.
#[test]
fn probe_of_an_address_where_nothing_listens_is_unusable_input() {
    let port = crate::common::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let out = inferlint(Path::new("."), &["probe", &url]);
    no_panic(&out);
    assert_eq!(out.status.code(), Some(UNUSABLE_INPUT), "{}", stdout(&out));
    one_line(&out);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let snap = inferlint(
        Path::new("."),
        &[
            "snapshot",
            &url,
            "-o",
            std::env::temp_dir().join("never.json").to_str().unwrap(),
        ],
    );
    assert_eq!(snap.status.code(), Some(UNUSABLE_INPUT));
}

/// The README promises one line for a refusal: clap's unknown flag, missing argument and
/// refused value too, with its suggestion kept.
#[test]
fn usage_errors_are_one_line() {
    for (args, says) in [
        (&["report", "--no-such-flag"][..], "--no-such-flag"),
        (&["report", "--forc"][..], "did you mean '--force'"),
        (&["series"][..], "required"),
        (
            &["series", "x", "--requested", "abc"][..],
            "'inferlint series --help'",
        ),
        (&["--json"][..], "command"),
        (&["--color", "blue", "explain"][..], "auto, always, never"),
    ] {
        let out = inferlint(Path::new("."), args);
        assert_eq!(out.status.code(), Some(USAGE), "{args:?}");
        let line = one_line(&out);
        assert!(line.contains(says), "{args:?}: {line}");
    }
}
