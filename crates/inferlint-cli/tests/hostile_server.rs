//! What reaches a terminal from a server, a log or a file: control characters and
//! bidirectional overrides are shown as escapes; a failed scrape names its real cause;
//! a line a scrape cannot read is skipped and counted; and `watch` says so, with a
//! non-zero status, when more than a tenth of its scrapes failed. The servers are the
//! simulated one (`inferlint_sim::server`) with faults, on 127.0.0.1 only.

use std::path::Path;
use std::time::Duration;

use inferlint_core::Engine;
use inferlint_sim::server::{self, Faults, ServerConfig, ServerHandle};

use crate::common::UNUSABLE_INPUT;
use crate::common::{
    demo_copy, inferlint, json_results, no_panic, spawn_inferlint, stderr, stdout,
};

fn sim_with(faults: Faults) -> ServerHandle {
    let mut config = ServerConfig::new(Engine::Vllm);
    config.faults = faults;
    server::spawn(config).unwrap()
}

/// The bytes a terminal obeys: ESC (and so every escape sequence), BEL, and the
/// right-to-left override.
fn assert_nothing_raw(text: &str) {
    for c in ['\u{1b}', '\u{7}', '\u{202e}', '\u{9b}'] {
        assert!(!text.contains(c), "a raw {c:?} in: {text:?}");
    }
}

/// A server's error body with `ESC]0;…BEL ESC[2J` went raw to the terminal: it set the
/// window title and cleared the screen.
#[test]
fn a_servers_escape_sequences_reach_the_terminal_escaped() {
    let body = "\u{1b}]0;owned\u{7}\u{1b}[2Jbad\u{202e}txt";
    let server = sim_with(Faults {
        completion_error_body: Some(body.into()),
        ..Faults::default()
    });
    let o = inferlint(Path::new("."), &["probe", &server.base_url]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert_nothing_raw(&out);
    assert!(
        out.contains("HTTP 500: \\x1b]0;owned\\x07\\x1b[2Jbad\\u{202e}txt"),
        "{out}"
    );
    // --json keeps the text whole for a script, escaped the JSON way.
    let o = inferlint(Path::new("."), &["probe", &server.base_url, "--json"]);
    assert_nothing_raw(&stdout(&o));
    let message = json_results(&o)[0]["message"].as_str().unwrap().to_owned();
    assert!(message.contains(body), "{message}");
}

/// A log line with escape sequences and an override: escaped on the terminal, and the
/// override shown, not obeyed, in the report.
#[test]
fn log_text_is_escaped_on_the_terminal_and_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    // The log parser drops colour codes (ESC [ ... m) itself; a BEL stays.
    let hostile = log.replace("sim-27B-hybrid", "demo\u{202e}ledom\u{7}");
    assert_ne!(hostile, log, "the model name is in the log");
    std::fs::write(run.join("boot.log"), hostile).unwrap();
    let o = inferlint(tmp.path(), &["boot-facts", "run/boot.log"]);
    no_panic(&o);
    assert_nothing_raw(&stdout(&o));
    assert!(
        stdout(&o).contains("demo\\u{202e}ledom\\x07"),
        "{}",
        stdout(&o)
    );

    let o = inferlint(tmp.path(), &["report", "run", "--title", "a\u{202e}b"]);
    no_panic(&o);
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    for c in ['\u{202e}', '\u{1b}'] {
        assert!(!html.contains(c), "a raw {c:?} in the report");
    }
    assert!(
        html.contains("a\\u{202e}b"),
        "the title shows the override as an escape"
    );
    assert!(
        html.contains("demo\\u{202e}ledom"),
        "so does the model name"
    );
}

/// `watch URL -o w.jsonl` every 0.05 s for `seconds`.
fn watch<'a>(url: &'a str, seconds: &'a str) -> [&'a str; 8] {
    [
        "watch",
        url,
        "-o",
        "w.jsonl",
        "--interval",
        "0.05",
        "--duration",
        seconds,
    ]
}

#[track_caller]
fn snapshot_fails(faults: Faults, cause: &str) {
    let server = sim_with(faults);
    let tmp = tempfile::tempdir().unwrap();
    let o = inferlint(tmp.path(), &["snapshot", &server.base_url, "-o", "s.json"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    let err = stderr(&o);
    assert!(
        err.starts_with(&format!(
            "inferlint: cannot read the metrics at {}: {}/metrics: {cause}",
            server.base_url, server.base_url
        )),
        "{err}"
    );
    assert!(
        !err.contains("--enable-metrics"),
        "the hint would mislead: {err}"
    );
    assert!(!tmp.path().join("s.json").exists());
}

/// Every scrape failure read "no vLLM, SGLang or TensorRT-LLM metrics ... start SGLang
/// with --enable-metrics", whatever happened.
#[test]
fn a_failed_scrape_names_its_real_cause() {
    snapshot_fails(
        Faults {
            metrics_status: Some(500),
            ..Faults::default()
        },
        "HTTP 500 Internal Server Error (metrics are not available)",
    );
    snapshot_fails(
        Faults {
            metrics_redirect: Some("http://elsewhere.invalid/metrics".into()),
            ..Faults::default()
        },
        "HTTP 302 Found to http://elsewhere.invalid/metrics",
    );
    snapshot_fails(
        Faults {
            metrics_padding_bytes: Some(65 << 20),
            ..Faults::default()
        },
        "the answer is larger than 64 MiB, the most read",
    );
}

/// One byte that is not UTF-8 rejected the whole scrape. The line is skipped and said;
/// the snapshot is taken.
#[test]
fn one_bad_byte_loses_one_line_not_the_scrape() {
    let server = sim_with(Faults {
        metrics_bad_byte: true,
        ..Faults::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let o = inferlint(tmp.path(), &["snapshot", &server.base_url, "-o", "s.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("1 line skipped (line 1: not UTF-8 text)"),
        "{err}"
    );
    assert!(tmp.path().join("s.json").is_file());
    // The file keeps the page, the byte it could not hold replaced.
    let saved = std::fs::read_to_string(tmp.path().join("s.json")).unwrap();
    assert!(
        saved.contains("sim_damaged_line{label=\\\"a\u{fffd}b\\\"} 1"),
        "{saved}"
    );
    assert!(saved.contains("vllm:num_requests_running"));

    let o = inferlint(tmp.path(), &watch(&server.base_url, "0.5"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 line skipped"), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("scrape(s) with unreadable lines"),
        "{}",
        stdout(&o)
    );
}

/// `watch` exited 0 after 98 of 100 scrapes failed. Past a tenth it ends with status 2
/// and says how many failed; the recording is kept.
#[test]
fn watch_fails_when_most_scrapes_failed() {
    let server = sim_with(Faults::default());
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.jsonl");
    let child = spawn_inferlint(
        tmp.path(),
        &watch(&server.base_url, "2"),
        std::process::Stdio::null(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&path).map_or(0, |t| t.lines().count()) < 2 {
        assert!(std::time::Instant::now() < deadline, "no sample");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The server goes away after the first samples: nearly every scrape after fails.
    drop(server);
    let o = child.wait_with_output().unwrap();
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("inferlint: "), "{err}");
    assert!(
        last.contains(" scrapes failed, more than 10%: a peak can hide in the gaps of w.jsonl"),
        "{err}"
    );
    assert!(path.is_file(), "the recording is kept");
}
