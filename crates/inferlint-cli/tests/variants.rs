//! The format variants in fixtures/variants: real recordings changed the way real
//! situations change them (Python's JSON, logs flushed out of order, cut mid-line, CRLF
//! and colour, files left over from other runs). Each folder's `variant.json` names the
//! command and the verdicts it must give; the folders are made by `cargo xtask variants`,
//! so these tests run from the repository alone.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{copy_tree, fixtures, inferlint, json_results, no_panic, stderr};

fn variants_dir() -> PathBuf {
    fixtures().join("variants")
}

/// Runs one variant in a copy of its folder and checks every verdict and the exit code.
fn check_variant(name: &str) {
    let dir = variants_dir().join(name);
    let description: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("variant.json")).unwrap()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join(name);
    copy_tree(&dir, &run);
    std::fs::remove_file(run.join("variant.json")).unwrap();
    let page = tmp.path().join("report.html");
    let mut args: Vec<String> = description["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    if args[0] == "report" {
        args.extend(["-o".into(), page.to_str().unwrap().to_owned()]);
    }
    args.push("--json".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = inferlint(&run, &args);
    no_panic(&out);
    let results = json_results(&out);
    let got: Vec<String> = results
        .iter()
        .map(|r| format!("{} {}", r["tripwire"], r["status"]))
        .collect();
    let want: Vec<String> = description["expected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{} {}", r["tripwire"], r["status"]))
        .collect();
    assert_eq!(
        got,
        want,
        "{name}: {}\n{}\nstderr: {}",
        description["situation"],
        results
            .iter()
            .map(|r| format!("{} {}: {}", r["tripwire"], r["status"], r["message"]))
            .collect::<Vec<_>>()
            .join("\n"),
        stderr(&out)
    );
    assert_eq!(
        out.status.code(),
        description["exit_code"].as_i64().map(|c| c as i32),
        "{name}: exit status"
    );
}

/// Every variant folder has a test below: a new variant without one fails here.
#[test]
fn every_variant_has_a_test() {
    let this = include_str!("variants.rs");
    let mut seen = 0;
    for entry in std::fs::read_dir(variants_dir()).unwrap() {
        let entry = entry.unwrap();
        if !entry.path().is_dir() {
            continue;
        }
        let name = entry.file_name().into_string().unwrap();
        seen += 1;
        let ident = name.replace('-', "_");
        assert!(
            this.contains(&format!("{ident},")) && this.contains(&format!("\"{name}\"")),
            "no test for variant {name}"
        );
    }
    assert!(
        seen >= 10,
        "only {seen} variants in {}",
        variants_dir().display()
    );
    let _ = Path::new("");
}

macro_rules! variant {
    ($fn:ident, $name:literal) => {
        #[test]
        fn $fn() {
            check_variant($name);
        }
    };
}

variant!(
    sglang_bench_serving_python_json,
    "sglang-bench-serving-python-json"
);
variant!(
    sglang_retraction_gauge_without_log,
    "sglang-retraction-gauge-without-log"
);
variant!(
    trtllm_chunks_spliced_inside_lines,
    "trtllm-chunks-spliced-inside-lines"
);
variant!(
    trtllm_log_cut_inside_a_pause_line,
    "trtllm-log-cut-inside-a-pause-line"
);
variant!(trtllm_log_of_another_start, "trtllm-log-of-another-start");
variant!(trtllm_pause_lines_lost, "trtllm-pause-lines-lost");
variant!(
    trtllm_pauses_flushed_after_the_run,
    "trtllm-pauses-flushed-after-the-run"
);
variant!(vllm_crlf_and_colour, "vllm-crlf-and-colour");
variant!(vllm_log_copied_mid_line, "vllm-log-copied-mid-line");
variant!(
    vllm_processes_flushed_out_of_order,
    "vllm-processes-flushed-out-of-order"
);
variant!(
    vllm_series_left_over_from_another_run,
    "vllm-series-left-over-from-another-run"
);
