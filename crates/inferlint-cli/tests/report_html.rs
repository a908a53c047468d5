//! report.html as the command writes it: where it goes, that every recording's report is
//! well-formed and holds each verdict, the demo's holding what docs/report.md lists in its
//! order, a hostile run
//! whose markup stays text, and the page in headless Chromium (no script error, the
//! replay steps, a chart reads out).
//!
//! The browser tests need Debian's `chromium` (`.ci/run` installs it): they are ignored,
//! saying so, unless the build found it or `CI` was set (build.rs: `cfg(chromium)`); then
//! a missing browser fails them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::CANNOT_WRITE;
use crate::common::{
    demo_copy, demo_folder, fixtures, inferlint, json_results, no_panic, recorded, stderr, stdout,
};

#[path = "../../inferlint-report/tests/wellformed.rs"]
mod wellformed;

/// Text as the report escapes it.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn status_word(json_word: &str) -> &'static str {
    match json_word {
        "pass" => "Pass",
        "warn" => "Warning",
        "fail" => "Tripwire failed",
        "unknown" => "Can't tell",
        _ => "Does not apply",
    }
}

/// Runs `report ARGS --json -o OUT` and returns the results and the page.
fn report(cwd: &Path, args: &[&str], out: &Path) -> (Vec<Value>, String) {
    let mut all: Vec<&str> = vec!["report"];
    all.extend_from_slice(args);
    let out_arg = out.to_str().unwrap();
    all.extend_from_slice(&["--json", "-o", out_arg]);
    let o = inferlint(cwd, &all);
    no_panic(&o);
    let results = json_results(&o);
    let html = std::fs::read_to_string(out)
        .unwrap_or_else(|e| panic!("{args:?}: no report at {out_arg}: {e}\n{}", stderr(&o)));
    (results, html)
}

/// Asserts the page is well-formed and holds every verdict's status and message.
fn holds_every_verdict(name: &str, results: &[Value], html: &str) {
    if let Err(e) = wellformed::check(html) {
        panic!("{name}: not well-formed: {e}");
    }
    for r in results {
        let message = r["message"].as_str().unwrap();
        assert!(
            html.contains(&escaped(message)),
            "{name}: {} message missing: {message}",
            r["tripwire"]
        );
        assert!(html.contains(status_word(r["status"].as_str().unwrap())));
    }
}

/// The report of every recording the spec lists.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_recording_gives_a_well_formed_report_with_each_verdict() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let runs: &[&[&str]] = &[
        &["sglang-0.5/capped"],
        &["sglang-0.5/live"],
        &["sglang-0.5/qwen3-8b"],
        &["trtllm-1.3/no-iter-stats"],
        &["trtllm-1.3/qwen3-8b"],
        &["vllm-0.28/live", "--requested", "32"],
        &["vllm-0.28/xray"],
        &["vllm-0.30/live"],
        &["--boot-log", "vllm-0.28/boot_fail_accelerator.log"],
        &["--boot-log", "vllm-0.28/boot_spec_backend_override.log"],
        &[
            "--boot-log",
            "vllm-0.28/boot_pool_level_hi.log",
            "--boot-log",
            "vllm-0.28/boot_pool_level_lo.log",
        ],
        &[
            "--boot-log",
            "trtllm-1.3/qwen3-8b/boot.log",
            "--boot-log",
            "trtllm-1.3/qwen3-8b-start2/boot.log",
        ],
        &[
            "--series",
            "vllm-0.28/series/ladder.series.jsonl",
            "--after",
            "vllm-0.28/series/ladder_snapshot.prom",
            "--requested",
            "32",
        ],
        &[
            "--before",
            "vllm-0.28/metrics/restart_before.prom",
            "--after",
            "vllm-0.28/metrics/restart_after.prom",
        ],
    ];
    for (i, args) in runs.iter().enumerate() {
        let out = tmp.path().join(format!("{i}.html"));
        let (results, html) = report(&dir, args, &out);
        assert!(!results.is_empty(), "{args:?}: no results");
        holds_every_verdict(&format!("{args:?}"), &results, &html);
    }
}

/// Every load tool's run: a well-formed page that names the tool in its head, with each
/// request drawn where the tool kept them (failed ones marked), lined up with the
/// server's recording, and the spread of its times to first token.
#[test]
fn each_load_tools_run_gives_a_report_with_each_request() {
    let tmp = tempfile::tempdir().unwrap();
    let runs: &[(&str, &str, Option<usize>)] = &[
        ("vllm/concurrent-16", "vllm bench serve", None),
        ("vllm/some-errored-detailed", "vllm bench serve", Some(6)),
        ("sglang/some-errored-details", "SGLang bench_serving", None),
        (
            "trtllm/some-errored-detailed",
            "TensorRT-LLM benchmark_serving",
            None,
        ),
        ("guidellm/some-errored", "GuideLLM 0.8.1", Some(6)),
        ("guidellm/all-failed-404", "GuideLLM 0.8.1", Some(32)),
        ("aiperf/some-errored", "AIPerf 0.13.0", Some(6)),
        ("inference-perf/some-errored", "inference-perf", Some(6)),
        ("genai-perf/concurrency-8", "GenAI-Perf", Some(0)),
        ("llmperf/some-errored", "LLMPerf 2023-08-31", None),
    ];
    for (i, (case, tool, failed_drawn)) in runs.iter().enumerate() {
        let out = tmp.path().join(format!("{i}.html"));
        let dir = fixtures().join("loadtools").join(case);
        let (results, html) = report(&dir, &[dir.to_str().unwrap()], &out);
        holds_every_verdict(case, &results, &html);
        assert!(
            html.contains(&format!("load: {tool}")),
            "{case}: head names the tool"
        );
        match failed_drawn {
            // Requests with send times: drawn one row each, on the recording's axis.
            Some(failed) => {
                assert!(html.contains("id=\"fig-each-request\""), "{case}");
                assert_eq!(
                    html.matches("class=\"req fail\"").count(),
                    *failed,
                    "{case}"
                );
            }
            None => assert!(!html.contains("id=\"fig-each-request\""), "{case}"),
        }
        let completed = results
            .iter()
            .find(|r| r["tripwire"] == "T18")
            .and_then(|r| r["evidence"]["completed"].as_i64())
            .unwrap_or(0);
        let per_request = !case.ends_with("concurrent-16");
        assert_eq!(
            html.contains("id=\"fig-ttft\""),
            per_request && completed > 0,
            "{case}: TTFT histogram"
        );
    }
}

/// The recorded vLLM 0.28 run, with the facts the spec's report asserts.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_live_vllm_report_says_what_happened() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run.html");
    let o = inferlint(
        &dir,
        &[
            "report",
            "vllm-0.28/live",
            "--requested",
            "32",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert!(out.exists());
    assert!(stdout(&o).ends_with(&format!(
        // T23 to T26 are not checked: the recording has no result file and no KV stream;
        // nor are T29 to T31: no step file. T27 and T28 do not apply: the boot log starts
        // no speculative decoding and declares no KV connector.
        "11 checks (6 pass, 2 warn, 3 tripwire-failed); 2 do not apply; 11 not checked -> {}\n",
        out.display()
    )));
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.len() > 50_000);
    for text in [
        // No result file: the load's own span is unknown, and the readings' 93.7 s are
        // said as such, not as how long the load ran.
        "The load was asked to keep 32 requests open; the readings are 1 min 34 s apart, and no load tool's result file says how long the load itself ran.",
        "finished 32 requests with no errors and generated 32,000 tokens",
        "never worked on more than 10 at once",
        "32,000 (1,000 per request)",
        "32: 32 reached their token limit, no errors",
        "11 of 31. Not here: T2 and T3 (run at clean-up), T4 and T11 (need two or more boot logs), T7 (needs a live server), T13 (a rule for test scripts), T15, T18, T20, T23, T24 and T25 (need the load tool's result file), T21 (needs GPU readings in the recording: record with inferlint watch or xray on the server's machine), T22 (needs the recordings of two or more replicas on one schedule), T26 (needs the server's KV event stream: subscribe with inferlint watch or xray --kv-events, or drain TensorRT-LLM's with --drain), T27 (does not apply: the boot log shows no speculative setting, so the server did no speculative decoding), T28 (does not apply: the boot log shows no KV connector (kv_transfer_config): the run was not declared disaggregated), T29, T30 and T31 (need each engine step: install integrations/vllm into the server's environment and run xray --steps (docs/steps.md))",
        "boot.log, before.snapshot.json, after.snapshot.json, run.series.jsonl",
        "124.0 s (17:48:43 to 17:50:47)",
        "Why only 10?",
        // The finding says what to change, in the run's numbers.
        "42 usable blocks of 784 tokens hold at most 10 of these requests",
        // "Why it matters" speaks of this run, not of an example.
        "The server never ran more than 10 of 32, so this run measured concurrency 10",
    ] {
        assert!(html.contains(text), "missing: {text}");
    }
    // The preemption markers of each chart add up to the counter's 22.
    for figure in ["fig-requests", "fig-kv"] {
        let start = html.find(&format!("id=\"{figure}\"")).unwrap();
        let end = start + html[start..].find("</figure>").unwrap();
        let marked: f64 = html[start..end]
            .split("data-n=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse::<f64>().unwrap())
            .sum();
        assert_eq!(marked, 22.0, "{figure}");
    }
}

/// Engine wording: SGLang's cache figure and its N/A, TensorRT-LLM's title and missing
/// tokens-per-second chart, and a boot failure.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn each_engine_is_worded_as_its_own() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let (results, sglang) = report(&dir, &["sglang-0.5/qwen3-8b"], &tmp.path().join("s.html"));
    let passed = results.iter().filter(|r| r["status"] == "pass").count();
    assert!(sglang.contains(&format!(
        "{passed} passed; 2 do not apply to SGLang; 5 not checked</summary>"
    )));
    assert!(sglang.contains("29 of them fit."));
    assert!(sglang.contains("id=\"fig-cache\""));
    assert!(sglang.contains("id=\"fig-memory\""));
    assert!(!sglang.contains("id=\"fig-tput\""));
    let (_, capped) = report(&dir, &["sglang-0.5/capped"], &tmp.path().join("c.html"));
    assert!(capped.contains("T14 (does not apply to SGLang)"));
    assert!(capped.contains("<dt>SGLang</dt>"));
    let (_, trt) = report(&dir, &["trtllm-1.3/qwen3-8b"], &tmp.path().join("t.html"));
    assert!(trt.contains("<title>TensorRT-LLM 1.3.0rc29 run"));
    assert!(!trt.contains("id=\"fig-tput\""));
    assert!(trt.contains("No output-tokens-per-second chart: TensorRT-LLM adds"));
    assert!(trt.contains("updates these readings only when a request completes"));
    let (_, failed) = report(
        &dir,
        &["--boot-log", "vllm-0.28/boot_fail_accelerator.log"],
        &tmp.path().join("f.html"),
    );
    assert!(failed.contains("T12: the server itself failed."));
}

/// Where the report goes: `-o` (parents created), the run folder, or nowhere.
#[test]
fn the_report_goes_where_it_is_asked_to() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);

    let o = inferlint(tmp.path(), &["report", "run"]);
    assert_eq!(o.status.code(), Some(1), "report follows the exit rule");
    assert!(
        stdout(&o).ends_with(" -> run/report.html\n"),
        "{}",
        stdout(&o)
    );
    assert!(run.join("report.html").is_file());

    let o = inferlint(tmp.path(), &["report", "run", "-o", "a/b/c.html"]);
    assert!(stdout(&o).ends_with(" -> a/b/c.html\n"));
    assert!(tmp.path().join("a/b/c.html").is_file(), "parents are made");

    // --json prints the same results and still writes the page.
    std::fs::remove_file(run.join("report.html")).unwrap();
    let o = inferlint(tmp.path(), &["report", "run", "--json"]);
    // The demo's 18 verdicts, three "does not apply": T21 (no GPU), T27 (no speculative
    // decoding) and T28 (no KV connector), and T29 to T31 not checked (no step file).
    assert_eq!(json_results(&o).len(), 24);
    assert!(run.join("report.html").is_file());

    // Only files and no -o: no page, and a note that says how to get one.
    let o = inferlint(
        tmp.path(),
        &[
            "report",
            "--boot-log",
            "run/boot.log",
            "--series",
            "run/run.series.jsonl",
        ],
    );
    assert!(!stdout(&o).contains(" -> "));
    assert!(stderr(&o).contains("give -o FILE"));
    assert!(!tmp.path().join("report.html").exists());

    // No temporary file is left behind.
    let leftovers: Vec<PathBuf> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A run folder kept read-only (as the recordings are) is left as it was, even when the
/// test runs as root: the verdicts print, a note says where the page did not go.
#[cfg(unix)]
#[test]
fn a_read_only_run_folder_is_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o555)).unwrap();
    let o = inferlint(tmp.path(), &["report", "run"]);
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(o.status.code(), Some(1), "the verdicts still decide");
    // The demo's 14 verdicts and T23 to T26, which its per-request records, spans and KV
    // events let it judge (and which pass: it sent all 32 at once, each token a chunk of
    // its own, and lost no batch). T27 and T28 do not apply: the demo's server neither
    // speculates nor declares a KV connector; T29 to T31 are not checked: no step file.
    assert!(stdout(&o).ends_with(
        "18 checks (14 pass, 2 warn, 2 tripwire-failed); 3 do not apply; 3 not checked\n"
    ));
    assert!(stderr(&o).contains("read-only"), "{}", stderr(&o));
    assert!(!run.join("report.html").exists());

    // An -o that the system will not let be written (a file stands where its folder
    // would be) is an error, and not the writing rules' refusal: 74.
    let o = inferlint(tmp.path(), &["report", "run", "-o", "run/boot.log/x.html"]);
    assert_eq!(o.status.code(), Some(CANNOT_WRITE));
    assert!(
        stderr(&o).contains("cannot write the report"),
        "{}",
        stderr(&o)
    );
}

/// The demo's page holds what docs/report.md says a page holds, in its order: the head
/// (with the simulator's badge and title, since the demo's readings carry its mark), then
/// "What limited this run", "What happened", the results (failures first), "What the
/// server did", each request, the KV-block replay, the server that ran and the
/// tripwires' guide; the sections' links in that order too; every verdict and every
/// sentence of "What limited" that `--json` gives, and nothing the page loads from
/// elsewhere. (It replaces a whole-page snapshot, which pinned what the page happened to
/// say rather than what it promises.)
#[test]
fn the_demo_page_holds_what_the_report_doc_lists_in_its_order() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("demo.html");
    let (results, html) = report(&demo_folder(), &["."], &out);
    holds_every_verdict("demo", &results, &html);

    // docs/report.md, "What it holds, in order": items 2 to 9, each a section.
    let documented = [
        "limits",
        "happened",
        "results",
        "server-did",
        "requests",
        "replay",
        "server",
        "guide",
    ];
    let sections: Vec<&str> = html
        .match_indices("<section id=\"")
        .map(|(at, open)| {
            let rest = &html[at + open.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(sections, documented, "the page's sections");
    let nav = &html[html.find("<nav").unwrap()..];
    let nav = &nav[..nav.find("</nav>").unwrap()];
    let links: Vec<&str> = nav
        .match_indices("href=\"#")
        .map(|(at, open)| {
            let rest = &nav[at + open.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    let in_order: Vec<&&str> = documented.iter().filter(|d| links.contains(d)).collect();
    assert_eq!(
        links.iter().collect::<Vec<_>>(),
        in_order,
        "the section links follow the sections"
    );

    // Item 1, the head, before the first section: the demo's readings carry the
    // simulator's mark, so the page says it is simulated in its title and its heading.
    let head = &html[..html.find("<main>").unwrap()];
    assert!(head.contains("<title>Simulated: "), "the page's title");
    assert!(head.contains("class=\"simulated-badge\""), "the badge");
    assert!(head.contains("<header"), "the head");

    // Item 4, failures first: the first finding of the results is a failed tripwire
    // (the demo's run fails two), and every finding after a non-failure is no failure.
    let section = |id: &str| {
        let at = html.find(&format!("<section id=\"{id}\"")).unwrap();
        let rest = &html[at..];
        &rest[..rest.find("</section>").unwrap()]
    };
    let findings: Vec<&str> = section("results")
        .match_indices("<article class=\"finding ")
        .map(|(at, open)| {
            let rest = &section("results")[at + open.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    let failed = results.iter().filter(|r| r["status"] == "fail").count();
    assert!(failed > 0, "the demo fails tripwires");
    assert!(
        findings.len() > failed,
        "every failure and the other findings are shown: {findings:?}"
    );
    assert!(
        findings.iter().take(failed).all(|c| *c == "fail"),
        "failures first: {findings:?}"
    );
    assert!(
        findings.iter().skip(failed).all(|c| *c != "fail"),
        "failures first: {findings:?}"
    );

    // Item 2: "What limited this run" holds the sentences core writes, which `--json`
    // does not carry; the terminal prints the same ones: each of its lines that follows
    // "What limited this run" is on the page.
    let again = tmp.path().join("again.html");
    let terminal = inferlint(
        &demo_folder(),
        &["report", ".", "-o", again.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&terminal.stdout).into_owned();
    let limited: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("What limited this run"))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with("- "))
        .map(|l| l.trim_start().trim_start_matches("- "))
        .collect();
    assert!(
        !limited.is_empty(),
        "the terminal says what limited the run:\n{text}"
    );
    let limits = section("limits");
    for sentence in limited {
        // The page sets the sentence's first clause in bold: compare its words.
        let first = sentence.split(". ").next().unwrap();
        assert!(
            limits.contains(&escaped(first)),
            "What limited: {first} is not on the page"
        );
    }

    // Nothing is loaded from elsewhere: no remote source in any tag.
    for remote in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "the page loads {remote}");
    }
}

/// A model name and a log line that carry `<script>` and `onerror`.
/// The model name has no `/` (the report shows a path's last part) and no quote (the log
/// prints it inside a Python literal); an unclosed `<script>` would swallow the page.
const MODEL: &str =
    "<script>document.documentElement.dataset.pwned=1;<img src=x onerror=document.documentElement.dataset.pwned=2>";
const LOG_LINE: &str = "RuntimeError: <script>document.documentElement.dataset.pwned=3</script><img src=x onerror=document.documentElement.dataset.pwned=4>";

/// The demo run with the model name and a failing log line replaced by markup.
fn hostile_run(tmp: &Path) -> PathBuf {
    let run = tmp.join("hostile");
    demo_copy(&run);
    let log = std::fs::read_to_string(run.join("boot.log")).unwrap();
    let mut log = log.replace("sim-27B-hybrid", MODEL);
    log.push_str(&format!(
        "(EngineCore pid=4180) ERROR 11-30 00:02:00 [core.py:1] {LOG_LINE}\n"
    ));
    std::fs::write(run.join("boot.log"), log).unwrap();
    run
}

#[test]
fn a_hostile_model_name_and_log_line_stay_text() {
    let tmp = tempfile::tempdir().unwrap();
    let run = hostile_run(tmp.path());
    let out = tmp.path().join("hostile.html");
    let (results, html) = report(tmp.path(), &[run.to_str().unwrap()], &out);
    holds_every_verdict("hostile", &results, &html);
    let page = wellformed::check(&html).unwrap();
    assert_eq!(page.count("script"), 2, "the data block and our script");
    assert_eq!(page.count("img"), 0);
    for (element, key, _) in &page.attributes {
        assert!(!key.starts_with("on"), "<{element} {key}>");
    }
    assert!(!html.contains("<script>document"));
    assert!(
        html.contains(&escaped(MODEL)),
        "the model name is shown, as text"
    );
    assert!(
        html.contains("&lt;script&gt;document.documentElement.dataset.pwned=3&lt;/script&gt;"),
        "the log line is shown, as text"
    );
}

/// The hostile page in Chromium: no script from the run runs.
#[test]
#[cfg_attr(
    not(chromium),
    ignore = "needs chromium on PATH (apt-get install chromium)"
)]
fn a_hostile_model_name_and_log_line_run_no_script_in_a_browser() {
    let browser = Browser::find();
    let tmp = tempfile::tempdir().unwrap();
    let run = hostile_run(tmp.path());
    let out = tmp.path().join("hostile.html");
    report(tmp.path(), &[run.to_str().unwrap()], &out);
    let dom = browser.dump_dom(&out, "test");
    assert!(!dom.contains("data-pwned"), "a script from the run ran");
    assert_clean(&dom);
}

/// Headless Chromium, when this machine has it.
struct Browser {
    program: PathBuf,
}

impl Browser {
    /// The browser; a test that needs one is ignored unless the build found it
    /// (build.rs: `cfg(chromium)`, always set in CI), so a missing one fails here.
    fn find() -> Browser {
        let program = PathBuf::from("chromium");
        let works = Command::new(&program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            works,
            "no chromium that runs on PATH: the browser tests need it (apt-get install chromium; .ci/run installs Debian's package)"
        );
        Browser { program }
    }

    /// Runs the browser on a page with the flags every call shares, killing it after a
    /// minute. Its output goes to files: a page's DOM is larger than a pipe holds.
    fn run(&self, page: &Path, hash: &str, extra: &[String]) -> Output {
        let profile = tempfile::tempdir().unwrap();
        let stdout_path = profile.path().join("stdout");
        let stderr_path = profile.path().join("stderr");
        let url = format!("file://{}#{hash}", page.canonicalize().unwrap().display());
        let mut child = Command::new(&self.program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .args(extra)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout_path).unwrap())
            .stderr(std::fs::File::create(&stderr_path).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("chromium did not finish within a minute");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        Output {
            status,
            stdout: std::fs::read(&stdout_path).unwrap(),
            stderr: std::fs::read(&stderr_path).unwrap(),
        }
    }

    /// The page's DOM after its script ran (and 3 s of virtual time for its timers).
    fn dump_dom(&self, page: &Path, hash: &str) -> String {
        let out = self.run(
            page,
            hash,
            &["--virtual-time-budget=3000".into(), "--dump-dom".into()],
        );
        let dom = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            dom.contains("<html"),
            "no DOM: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        dom
    }
}

/// The `<html ...>` start tag of a dumped DOM, where the page's script leaves its marks.
fn html_tag(dom: &str) -> &str {
    let start = dom.find("<html").unwrap();
    &dom[start..start + dom[start..].find('>').unwrap()]
}

fn attribute<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!("{name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// No script error and no refused resource, and the self-test ran to its end.
fn assert_clean(dom: &str) {
    let tag = html_tag(dom);
    assert_eq!(attribute(tag, "data-script-error"), None, "{tag}");
    assert_eq!(attribute(tag, "data-test-ready"), Some("1"), "{tag}");
}

/// The demo's first reading with requests waiting, as the replay should show it with
/// `usable` blocks.
fn first_waiting_reading(usable: f64) -> (usize, f64, f64, f64) {
    let text = std::fs::read_to_string(demo_folder().join("run.series.jsonl")).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("t_wall").is_some())
        .enumerate()
        .find(|(_, v)| v["waiting"].as_f64().unwrap() > 0.0)
        .map(|(i, v)| {
            (
                i,
                v["running"].as_f64().unwrap(),
                v["waiting"].as_f64().unwrap(),
                (v["kv_usage"].as_f64().unwrap() * usable).round(),
            )
        })
        .unwrap()
}

/// The demo's report in Chromium: no error, the replay steps to the right reading, a
/// chart reads out the right value, Play moves, and the page draws (a screenshot).
#[test]
#[cfg_attr(
    not(chromium),
    ignore = "needs chromium on PATH (apt-get install chromium)"
)]
fn the_report_works_in_a_browser() {
    let browser = Browser::find();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("demo.html");
    let (results, _) = report(&demo_folder(), &["."], &out);
    let dom = browser.dump_dom(&out, "test");
    assert_clean(&dom);
    let tag = html_tag(&dom);

    let usable = results
        .iter()
        .find(|r| r["tripwire"] == "T14")
        .and_then(|r| r["evidence"]["inferred_usable_blocks"].as_f64())
        .expect("T14 gives the usable blocks");
    let (frame, running, waiting, used) = first_waiting_reading(usable);
    let replay = attribute(tag, "data-test-replay").expect("the replay stepped");
    assert_eq!(
        replay,
        format!(
            "frame={frame};running={running};waiting={waiting};used={used};each={}",
            (used / running * 10.0).round() / 10.0
        ),
        "{tag}"
    );
    let played: usize = attribute(tag, "data-test-played").unwrap().parse().unwrap();
    assert!(played > 0, "Play did not move the replay");

    // End, then one step left: the second-to-last reading of the recording.
    let chart = attribute(tag, "data-test-chart").expect("the chart read out");
    let text = std::fs::read_to_string(demo_folder().join("run.series.jsonl")).unwrap();
    let samples: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("t_wall").is_some())
        .collect();
    let second_last = &samples[samples.len() - 2];
    assert!(
        chart.starts_with(&format!("index={};At ", samples.len() - 2)),
        "{chart}"
    );
    let running_then = second_last["running"].as_f64().unwrap();
    assert!(
        chart.contains(&format!(": {running_then} running")),
        "{chart}"
    );

    for (theme, name) in [("light", "light.png"), ("dark", "dark.png")] {
        let shot = tmp.path().join(name);
        let o = browser.run(
            &out,
            theme,
            &[
                format!("--screenshot={}", shot.display()),
                "--window-size=1200,2400".into(),
            ],
        );
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 50_000,
            "{theme}: no screenshot\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The recorded vLLM run in the browser: the replay shows 10 running and 22 waiting
/// holding 40 of the 42 usable blocks, as the tutorial says.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
#[cfg_attr(
    not(chromium),
    ignore = "needs chromium on PATH (apt-get install chromium)"
)]
fn the_live_replay_in_a_browser() {
    let dir = recorded();
    let browser = Browser::find();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("live.html");
    report(&dir, &["vllm-0.28/live", "--requested", "32"], &out);
    let dom = browser.dump_dom(&out, "test");
    assert_clean(&dom);
    let replay = attribute(html_tag(&dom), "data-test-replay")
        .unwrap()
        .to_owned();
    assert!(
        replay.ends_with(";running=10;waiting=22;used=40;each=4"),
        "{replay}"
    );
}
