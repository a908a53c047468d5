//! `xray --steps`: what it refuses (another engine than vLLM, no --serve), and what it
//! does to the server it starts (the step plugin's variable in its environment, the flag
//! that fills each step's batch) on the simulated vLLM server, behind a shell that writes
//! down what it was given. The simulated server has no step plugin: xray warns that no
//! steps.jsonl appeared.

use crate::common::{inferlint, no_panic, stderr, USAGE};
use crate::xray::{assert_none_left, finish, free_port, sim, start_xray_with, url};

/// The step plugin is vLLM's: SGLang and TensorRT-LLM are refused, as is a server xray
/// does not start (it cannot set the server's environment). Nothing is made.
#[test]
fn steps_for_another_engine_or_without_serve_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "xray",
                "-o",
                "r1",
                "--steps",
                "--serve",
                "python -m sglang.launch_server --model-path m",
                "--",
                "true",
            ],
            "--steps: the step plugin is vLLM's (a stat logger); SGLang has none",
        ),
        (
            &[
                "xray",
                "-o",
                "r2",
                "--steps",
                "--serve",
                "trtllm-serve m",
                "--",
                "true",
            ],
            "TensorRT-LLM has none",
        ),
        (
            &[
                "--engine",
                "vllm",
                "xray",
                "-o",
                "r3",
                "--steps",
                "--url",
                "http://127.0.0.1:9",
                "--",
                "true",
            ],
            "--steps needs --serve",
        ),
    ];
    for (args, expected) in cases {
        let o = inferlint(dir.path(), args);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(USAGE), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
    for run in ["r1", "r2", "r3"] {
        assert!(!dir.path().join(run).exists(), "{run}");
    }
}

/// The server xray starts gets INFERLINT_STEPS naming RUN/steps.jsonl (whole) and
/// --enable-logging-iteration-details after its own words; with no plugin to write the
/// file, xray warns after the load and says how to install it.
#[test]
fn steps_sets_the_plugins_variable_and_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let seen = tmp.path().join("seen.txt");
    let serve = format!(
        "sh -c 'printf \"%s\\n\" \"$INFERLINT_STEPS\" \"$@\" > {}; exec {} serve --engine vllm --port {port}' server",
        seen.display(),
        sim().display()
    );
    let load = format!(
        "{} load {} --num-prompts 4 --max-concurrency 2 --input-len 16 --output-len 8 --result-file run/bench.json",
        sim().display(),
        url(port)
    );
    // The port is inside the shell's words, where xray does not read it: --url says it.
    let base = url(port);
    let mut args = vec![
        "-o",
        "run",
        "--engine",
        "vllm",
        "--no-gpu",
        "--no-probe",
        "--interval",
        "0.1",
        "--url",
        &base,
        "--steps",
        "--serve",
        &serve,
        "--",
    ];
    args.extend(load.split_whitespace());
    let out = finish(start_xray_with(
        tmp.path(),
        &args,
        &[("INFERLINT_SESSION_ONLY", "1")],
    ));
    no_panic(&out);
    assert_none_left(port);
    let seen = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<&str> = seen.lines().collect();
    let expected = std::path::absolute(tmp.path().join("run/steps.jsonl")).unwrap();
    assert_eq!(lines[0], expected.to_str().unwrap(), "{seen}");
    assert!(
        lines.contains(&"--enable-logging-iteration-details"),
        "{seen}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no run/steps.jsonl appeared after the load")
            && err.contains("pip install integrations/vllm"),
        "{err}"
    );
}
