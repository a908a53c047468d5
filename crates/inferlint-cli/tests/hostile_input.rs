//! Inputs are what they claim, and work is bounded: links to files are followed and
//! named, pipes and devices are refused (standard input is read whole as `-`), sizes
//! beyond their bound are refused naming it, a reading that cannot be is Can't tell
//! naming its line, and no flag or value read from a file sets how long a loop runs.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{
    demo_copy, finish_within, inferlint, json_results, no_panic, spawn_inferlint, stderr, stdout,
};
use crate::common::{UNUSABLE_INPUT, USAGE};

fn result<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} in {results:?}"))
}

/// The demo recording with one sample line's value replaced: the first line holding
/// `from` gets `to` instead. Returns the 1-based line edited.
fn edit_series(path: &Path, from: &str, to: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines.iter().position(|l| l.contains(from)).unwrap();
    lines[at] = lines[at].replacen(from, to, 1);
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
    at + 1
}

/// A run folder whose run.series.jsonl was a link was read without it: the failing T8
/// vanished and the run passed.
#[cfg(unix)]
#[test]
fn a_linked_recording_in_a_run_folder_is_read_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    std::fs::rename(run.join("run.series.jsonl"), tmp.path().join("kept.jsonl")).unwrap();
    std::os::unix::fs::symlink("../kept.jsonl", run.join("run.series.jsonl")).unwrap();
    let o = inferlint(tmp.path(), &["report", "run", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let results = json_results(&o);
    assert_eq!(result(&results, "T8")["status"], "fail");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains("run.series.jsonl -&gt; ../kept.jsonl"),
        "the page names the link"
    );
}

/// `preemption X X` passed T1 over a window of no time at all.
#[test]
fn one_snapshot_given_twice_is_no_window() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let before = "run/before.snapshot.json";
    let o = inferlint(tmp.path(), &["preemption", before, before]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(USAGE));
    assert!(
        stderr(&o).contains("is given as both the before and the after snapshot"),
        "{}",
        stderr(&o)
    );
    // A copy of it: the clocks say no time passed.
    std::fs::copy(
        run.join("before.snapshot.json"),
        tmp.path().join("copy.json"),
    )
    .unwrap();
    let o = inferlint(tmp.path(), &["preemption", before, "copy.json", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let t1 = &json_results(&o)[0];
    assert_eq!(t1["status"], "unknown");
    assert!(
        t1["message"]
            .as_str()
            .unwrap()
            .contains("at the same moment"),
        "{t1}"
    );
    // Swapped (the after one first) is refused too.
    let o = inferlint(
        tmp.path(),
        &["preemption", "run/after.snapshot.json", before, "--json"],
    );
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(&o));
}

/// One line with `"running": 1e400` turned T8 from failed into `PASS reached inf
/// running`; `1e20` made report allocate 11 GB.
#[test]
fn a_running_count_that_cannot_be_is_cant_tell_naming_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    for value in ["1e400", "1e20", "-3.0", "2.5"] {
        let _ = std::fs::remove_dir_all(&run);
        demo_copy(&run);
        let line = edit_series(
            &run.join("run.series.jsonl"),
            "\"running\": 10.0",
            &format!("\"running\": {value}"),
        );
        let o = inferlint(tmp.path(), &["report", "run", "--json"]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(1), "T1 still fails: {}", stderr(&o));
        let results = json_results(&o);
        for tripwire in ["T8", "T9", "T14"] {
            let r = result(&results, tripwire);
            assert_eq!(r["status"], "unknown", "{value}: {r}");
            let message = r["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("line {line} of the recording: running is ")),
                "{message}"
            );
            assert!(message.contains("no count of requests can be"), "{message}");
        }
    }
}

/// A KV usage written as a percent (4.7 for 4.7%) gave T9 a pass.
#[test]
fn a_kv_usage_above_1_is_cant_tell_with_a_note_on_percent() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    // The first reading above 0, as the file writes it.
    let text = std::fs::read_to_string(run.join("run.series.jsonl")).unwrap();
    let usage = text
        .lines()
        .find_map(|l| {
            let at = l.find("\"kv_usage\": ")? + "\"kv_usage\": ".len();
            let value = &l[at..at + l[at..].find([',', '}'])?];
            (value.parse::<f64>().ok()? > 0.0).then(|| value.to_owned())
        })
        .unwrap();
    let line = edit_series(
        &run.join("run.series.jsonl"),
        &format!("\"kv_usage\": {usage}"),
        "\"kv_usage\": 4.7",
    );
    let o = inferlint(
        tmp.path(),
        &[
            "series",
            "run/run.series.jsonl",
            "--json",
            "--requested",
            "32",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let results = json_results(&o);
    let t9 = result(&results, "T9");
    assert_eq!(t9["status"], "unknown");
    let message = t9["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("line {line} of the recording: kv_usage is 4.7")),
        "{message}"
    );
    assert!(message.contains("a percent (4.7%)"), "{message}");
    assert_eq!(t9["evidence"]["refused_line"], line);
}

/// Two recordings in one file (two `watch -o same.jsonl`, or `cat a b`) read as one.
#[test]
fn two_recordings_in_one_file_are_cant_tell() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let one = std::fs::read_to_string(run.join("run.series.jsonl")).unwrap();
    std::fs::write(tmp.path().join("two.jsonl"), format!("{one}{one}")).unwrap();
    let o = inferlint(
        tmp.path(),
        &["series", "two.jsonl", "--json", "--requested", "32"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let results = json_results(&o);
    let header_lines = one.lines().count() + 1;
    for tripwire in ["T9", "T8"] {
        let message = result(&results, tripwire)["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.starts_with(&format!(
                "line {header_lines} of the recording: a second header"
            )),
            "{message}"
        );
    }
    // Lines out of order, with no second header: time goes back.
    let mut lines: Vec<&str> = one.lines().collect();
    lines.swap(5, 6);
    std::fs::write(tmp.path().join("back.jsonl"), lines.join("\n")).unwrap();
    let o = inferlint(tmp.path(), &["series", "back.jsonl", "--json"]);
    let message = result(&json_results(&o), "T9")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("line 7 of the recording: t_mono_ns does not move forward from line 6"),
        "{message}"
    );
}

/// Runs the command with stdin from `input`, waiting at most 30 s: a command that
/// blocks on a pipe fails the test instead of hanging it.
fn with_stdin(cwd: &Path, args: &[&str], input: Stdio) -> std::process::Output {
    finish_within(spawn_inferlint(cwd, args, input), Duration::from_secs(30))
}

/// `series /dev/stdin` read the first line of a pipe and answered from it. `series -`
/// reads standard input whole; a pipe given by name is refused.
#[cfg(unix)]
#[test]
fn standard_input_is_read_whole_as_a_dash() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let from_file = inferlint(
        tmp.path(),
        &[
            "series",
            "run/run.series.jsonl",
            "--requested",
            "32",
            "--json",
        ],
    );
    let piped = |args: &[&str]| {
        let file = std::fs::File::open(run.join("run.series.jsonl")).unwrap();
        // Through `cat`, so that standard input is a pipe and not the file itself.
        let mut cat = Command::new("cat")
            .stdin(file)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pipe = cat.stdout.take().unwrap();
        let out = with_stdin(tmp.path(), args, Stdio::from(pipe));
        // A refused pipe is never read: cat may end on a broken pipe, which is fine.
        let _ = cat.wait();
        out
    };
    let o = piped(&["series", "-", "--requested", "32", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(json_results(&o), json_results(&from_file));
    // report reads the recording's last sample before the rest: a stream is refused, not
    // half read.
    let o = piped(&["report", "--series", "-", "-o", "r.html"]);
    assert_eq!(o.status.code(), Some(USAGE));
    assert!(
        stderr(&o).contains("not as - (standard input)"),
        "{}",
        stderr(&o)
    );
    let o = piped(&["series", "/dev/stdin", "--requested", "32"]);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    assert!(
        stderr(&o).contains("/dev/stdin: a pipe (FIFO), not a regular file"),
        "{}",
        stderr(&o)
    );
}

/// `/dev/zero` grew to 4 GB and aborted; a FIFO with no writer hung every command.
#[cfg(unix)]
#[test]
fn devices_and_pipes_are_refused_without_reading_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let fifo = fifo.to_str().unwrap();
    for input in ["/dev/zero", fifo] {
        for args in [
            vec!["series", input],
            vec!["preemption", input, input],
            vec!["check-log", input],
            vec!["boot-facts", input],
            vec!["report", "--boot-log", input, "-o", "r.html"],
        ] {
            let o = with_stdin(tmp.path(), &args, Stdio::null());
            no_panic(&o);
            assert_eq!(
                o.status.code(),
                Some(UNUSABLE_INPUT),
                "{args:?}: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains("not a regular file"),
                "{args:?}: {}",
                stderr(&o)
            );
        }
    }
}

/// A snapshot file beyond its bound is refused naming the bound, before it is read.
#[test]
fn a_snapshot_too_large_is_refused_naming_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let big = std::fs::File::create(tmp.path().join("big.json")).unwrap();
    // Sparse: no disk is used.
    big.set_len(200 << 20).unwrap();
    let o = inferlint(tmp.path(), &["preemption", "big.json", "big.json"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    assert!(
        stderr(&o).contains("big.json: 200 MiB, more than the 128 MiB a snapshot file can be"),
        "{}",
        stderr(&o)
    );
}

/// A counter that no counter can be (negative before and after) made "no preemptions".
#[test]
fn a_negative_counter_is_not_a_pass() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, value) in [("b.prom", "-5"), ("a.prom", "-5")] {
        std::fs::write(
            tmp.path().join(name),
            format!("vllm:num_preemptions_total {value}\nvllm:generation_tokens_total 10\n"),
        )
        .unwrap();
    }
    let o = inferlint(tmp.path(), &["preemption", "b.prom", "a.prom", "--json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let t1 = &json_results(&o)[0];
    assert_eq!(t1["status"], "unknown");
    assert!(
        t1["message"].as_str().unwrap().contains("is not a count"),
        "{t1}"
    );
}

/// One damaged line in a snapshot lost the whole file; now that line is skipped, said,
/// and the metric it belonged to reads as unknown rather than as a smaller sum.
#[test]
fn a_damaged_snapshot_line_is_skipped_and_said() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("b.prom"),
        b"vllm:num_preemptions_total{engine=\"0\"} 1\nvllm:num_preemptions_total{engine=\"1\"} 2\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("a.prom"),
        b"vllm:num_preemptions_total{engine=\"0\"} 1\nvllm:num_preemptions_total{engine=\"1\xff\"} 2\nvllm:other 1\n",
    )
    .unwrap();
    let o = inferlint(tmp.path(), &["preemption", "b.prom", "a.prom", "--json"]);
    no_panic(&o);
    assert!(
        stderr(&o).contains("note: a.prom: 1 line skipped (line 2: not UTF-8 text)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        json_results(&o)[0]["status"],
        "unknown",
        "a part of the sum is lost"
    );
}

/// `watch --interval 1e308` and `--duration 1e20` panicked (exit 101); `probe
/// --concurrency 100000` held 12,000 sockets for 40 s. Every bound is checked before
/// anything starts.
#[test]
fn flags_out_of_range_are_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:9";
    for (args, needle) in [
        (
            vec!["watch", url, "-o", "w.jsonl", "--interval", "1e308"],
            "--interval 1e308: give a number of seconds from 0.05 to 3,600",
        ),
        (
            vec!["watch", url, "-o", "w.jsonl", "--duration", "1e20"],
            "--duration 1e20: give a number of seconds above 0, at most 2,592,000",
        ),
        (
            vec!["watch", url, "-o", "w.jsonl", "--interval", "NaN"],
            "--interval NaN",
        ),
        (
            vec!["probe", url, "--concurrency", "100000"],
            "--concurrency 100000: give a number from 1 to 256",
        ),
        (
            vec!["probe", url, "--max-tokens", "1000000"],
            "--max-tokens 1000000: give a number from 1 to 4096",
        ),
        (
            vec!["xray", "-o", "x", "--ready-timeout", "1e300", "--", "true"],
            "--ready-timeout",
        ),
        (
            vec!["xray", "-o", "x", "--interval", "1e308", "--", "true"],
            "--interval 1e308",
        ),
        (
            vec!["xray", "-o", "x", "--stop-grace", "0", "--", "true"],
            "--stop-grace",
        ),
        (
            vec!["xray", "-o", "x", "--stop-grace", "1e9", "--", "true"],
            "--stop-grace",
        ),
        (
            vec!["gpu-inspect", "--timeout", "1e300"],
            "--timeout 1e300: give a number of seconds from 0 to 86,400",
        ),
        (
            vec!["teardown", "--dry-run", "--timeout", "inf"],
            "--timeout inf",
        ),
    ] {
        let o = inferlint(tmp.path(), &args);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(USAGE), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
    assert!(!tmp.path().join("w.jsonl").exists());
    assert!(!tmp.path().join("x").exists(), "xray made no folder");
}

/// A count the recording holds sets no loop's length: a reading of 10^15 running
/// requests (whole, finite, possible as a number) once drew one label per level.
#[test]
fn a_huge_but_whole_count_makes_no_long_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    edit_series(
        &run.join("run.series.jsonl"),
        "\"running\": 10.0",
        "\"running\": 1000000000000000.0",
    );
    let child = spawn_inferlint(tmp.path(), &["report", "run"], Stdio::null());
    let o = finish_within(child, Duration::from_secs(60));
    no_panic(&o);
    assert!(run.join("report.html").is_file(), "{}", stderr(&o));
}
