//! Which result file is the run's, proven by what each holds: a result of another run (its
//! `date` outside the readings in every time zone), of another model, or of a server on
//! another port is set aside and the checks that needed it say Can't tell naming why; of
//! several results of one tool in a folder, the one that fits is kept, and none or
//! several fitting is refused naming each and `--bench-result`.
//!
//! The results are real ones edited as another run would have left them: the vllm-0.28
//! xray recording's `vllm bench serve` result (`date` 20260930-204849, written at UTC-7:
//! the readings are 2026-10-01 03:47:07 to 03:48:49 UTC), the TensorRT-LLM recording's
//! (`model_id` /root/models/Qwen3-8B, the boot log's model) and SGLang bench_serving's
//! line in fixtures/loadtools (`server_info.port` 36331, the port its server was started
//! on).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::common::UNUSABLE_INPUT;
use crate::common::{
    copy_run, copy_tree, fixtures, inferlint, json_results, no_panic, stderr, stdout,
};

/// `vllm bench serve`'s own name for the recording's result:
/// `{backend}-{rate}qps-concurrency{N}-{model's last path part}-{date}.json`.
fn vllm_name(date: &str) -> String {
    format!("openai-infqps-concurrency32-Qwen3.8-27B-W4A16-AutoRound-{date}.json")
}

/// The recording's date and one a day earlier: the day before, 20:48:49 falls between
/// 2026-09-29 06:48:49 and 2026-09-30 08:48:49 UTC in the zones that exist (UTC+14 to
/// UTC-12), long before the readings.
const OWN_DATE: &str = "20260930-204849";
const DAY_EARLIER: &str = "20260929-204849";

/// The vllm-0.28 xray recording with its result under the client's own name, and copies
/// of it dated `others`, each with `"date"` changed and nothing else.
fn xray_with_results(others: &[&str], keep_own: bool) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) = copy_run("vllm-0.28/xray");
    let text = std::fs::read_to_string(dir.join("bench.json")).unwrap();
    let own = format!("\"date\": \"{OWN_DATE}\"");
    assert!(
        text.contains(&own),
        "the recording's result is dated {OWN_DATE}"
    );
    std::fs::remove_file(dir.join("bench.json")).unwrap();
    if keep_own {
        std::fs::write(dir.join(vllm_name(OWN_DATE)), &text).unwrap();
    }
    for date in others {
        let edited = text.replace(&own, &format!("\"date\": \"{date}\""));
        std::fs::write(dir.join(vllm_name(date)), edited).unwrap();
    }
    (tmp, dir)
}

fn report(dir: &Path, extra: &[&str]) -> Output {
    let out = dir.join("report.html");
    let mut args = vec!["report", "--json", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.push(dir.to_str().unwrap());
    let o = inferlint(dir, &args);
    no_panic(&o);
    o
}

fn verdict<'a>(results: &'a [Value], tripwire: &str) -> &'a Value {
    results
        .iter()
        .find(|r| r["tripwire"] == tripwire)
        .unwrap_or_else(|| panic!("no {tripwire} in {results:?}"))
}

/// The result file each of T15, T18 and T20 read, as their evidence names it.
fn result_files(results: &[Value]) -> Vec<String> {
    ["T15", "T18", "T20"]
        .iter()
        .map(|t| {
            verdict(results, t)["evidence"]["result_file"]
                .as_str()
                .unwrap_or_else(|| panic!("{t} names no result file"))
                .to_owned()
        })
        .collect()
}

/// The line the command refused with: a folder whose result files leave the run's
/// unknown is an input that cannot be used as it is (name the run's with --bench-result).
fn refusal(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT), "{}", stderr(o));
    assert!(stdout(o).is_empty(), "{}", stdout(o));
    let err = stderr(o);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("inferlint: "))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_owned()
}

/// Asserts T15, T18 and T20 say Can't tell, each naming the result file as not of this
/// run and `words`, and that the command exits 2 (no tripwire failed otherwise).
fn set_aside_saying(o: &Output, file: &str, words: &str) {
    let results = json_results(o);
    for t in ["T15", "T18", "T20"] {
        let r = verdict(&results, t);
        assert_eq!(r["status"], "unknown", "{t}: {r}");
        let message = r["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("{file} is not of this run")) && message.contains(words),
            "{t}: {message}"
        );
    }
    assert_eq!(o.status.code(), Some(2), "{}", stderr(o));
}

/// Two `vllm bench serve` results in one folder, the run's and one a day older (which
/// sorts first, and so was the one read): the run's is kept by its date, and a note names
/// the other and why.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn of_two_runs_results_the_one_dated_in_the_run_is_kept() {
    let (_tmp, dir) = xray_with_results(&[DAY_EARLIER], true);
    let o = report(&dir, &[]);
    let results = json_results(&o);
    for file in result_files(&results) {
        assert!(file.ends_with(&vllm_name(OWN_DATE)), "{file}");
    }
    for t in ["T15", "T18", "T20"] {
        assert_eq!(verdict(&results, t)["status"], "pass", "{t}");
    }
    let err = stderr(&o);
    let note = err
        .lines()
        .find(|l| l.starts_with("note: left out "))
        .unwrap_or_else(|| panic!("no note names the file left out:\n{err}"));
    assert!(
        note.contains(&vllm_name(DAY_EARLIER))
            && note.contains("it was saved at 2026-09-29 20:48:49")
            && note.contains("in no time zone"),
        "{note}"
    );
}

/// A result file dated a day before the run, alone in the folder, is another run's.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_result_saved_a_day_before_the_run_is_cant_tell() {
    let (_tmp, dir) = xray_with_results(&[DAY_EARLIER], false);
    let o = report(&dir, &[]);
    let results = json_results(&o);
    for t in ["T15", "T18", "T20"] {
        let r = verdict(&results, t);
        assert_eq!(r["status"], "unknown", "{t}: {r}");
        assert!(
            r["message"]
                .as_str()
                .unwrap()
                .contains("it was saved at 2026-09-29 20:48:49"),
            "{t}: {r}"
        );
    }
}

/// The TensorRT-LLM recording passes every check it can judge; with its result's
/// `model_id` naming another model than the boot log's (the vLLM recordings' model), the
/// result is another run's: T15, T18 and T20 say Can't tell naming the model, and the
/// command exits 2 where it exited 0.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn a_result_of_another_model_than_the_boot_logs_is_cant_tell() {
    let (_tmp, dir) = copy_run("trtllm-1.3/qwen3-8b");
    assert_eq!(report(&dir, &[]).status.code(), Some(0));
    let bench = dir.join("bench.json");
    let text = std::fs::read_to_string(&bench).unwrap();
    let own = "\"model_id\": \"/root/models/Qwen3-8B\"";
    assert!(text.contains(own), "the recording's result names its model");
    let other = "\"model_id\": \"/models/Qwen3.8-27B-W4A16-AutoRound\"";
    std::fs::write(&bench, text.replace(own, other)).unwrap();
    let o = report(&dir, &[]);
    set_aside_saying(
        &o,
        "bench.json",
        "it names the model /models/Qwen3.8-27B-W4A16-AutoRound",
    );
}

/// SGLang bench_serving writes the measured server's `/get_server_info` answer: a result
/// naming a server started on another port than this boot log's is another server's.
#[test]
fn an_sglang_result_of_a_server_on_another_port_is_cant_tell() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    copy_tree(&fixtures().join("loadtools/sglang/concurrent-16"), &dir);
    assert_eq!(report(&dir, &[]).status.code(), Some(0));
    let bench = dir.join("bench.jsonl");
    let text = std::fs::read_to_string(&bench).unwrap();
    let own = "\"port\": 36331";
    assert!(text.contains(own), "the result names its server's port");
    std::fs::write(&bench, text.replace(own, "\"port\": 36332")).unwrap();
    let o = report(&dir, &[]);
    set_aside_saying(
        &o,
        "bench.jsonl",
        "it names a server on port 36332, but the boot log's server was started on port 36331",
    );
}

/// Two results that both fit the run (its own, and a copy saved a second later): which
/// is the run's cannot be told, so the command refuses naming both and `--bench-result`,
/// which then reads the one named, as before.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn two_results_that_both_fit_are_refused_naming_both() {
    let (_tmp, dir) = xray_with_results(&["20260930-204850"], true);
    let line = refusal(&report(&dir, &[]));
    assert!(
        line.starts_with("inferlint: several result files could be this run's (")
            && line.contains(&format!("{} fits", vllm_name(OWN_DATE)))
            && line.contains(&format!("{} fits", vllm_name("20260930-204850")))
            && line.ends_with("name the run's with --bench-result"),
        "{line}"
    );
    let named = dir.join(vllm_name("20260930-204850"));
    let o = report(&dir, &["--bench-result", named.to_str().unwrap()]);
    for file in result_files(&json_results(&o)) {
        assert!(file.ends_with(&vllm_name("20260930-204850")), "{file}");
    }
}

/// Two results of other runs (a day and two days before): none is the run's, and taking
/// either would check another run's numbers; refused naming both and why.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn two_results_of_other_runs_are_refused_naming_both() {
    let (_tmp, dir) = xray_with_results(&[DAY_EARLIER, "20260928-204849"], false);
    let line = refusal(&report(&dir, &[]));
    assert!(
        line.starts_with("inferlint: no result file here is of this run (")
            && line.contains(&format!(
                "{}: it was saved at 2026-09-29 20:48:49",
                vllm_name(DAY_EARLIER)
            ))
            && line.contains(&format!(
                "{}: it was saved at 2026-09-28 20:48:49",
                vllm_name("20260928-204849")
            ))
            && line.ends_with("name the run's with --bench-result"),
        "{line}"
    );
}

/// `compare` and the library read a folder through the same search and choice as
/// `report`: the same result kept, the same refusal.
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn compare_and_the_library_choose_as_report_does() {
    let (_kept_tmp, kept) = xray_with_results(&[DAY_EARLIER], true);
    let (_refused_tmp, refused) = xray_with_results(&[DAY_EARLIER, "20260928-204849"], false);
    let scratch = tempfile::tempdir().unwrap();
    assert!(!crate::library::agree(&kept));
    assert!(crate::library::agree(&refused));
    let error = inferlint::Run::from_dir(&refused).unwrap_err();
    assert_eq!(error.kind(), inferlint::ErrorKind::Invalid);
    let o = inferlint(
        scratch.path(),
        &["compare", kept.to_str().unwrap(), refused.to_str().unwrap()],
    );
    no_panic(&o);
    let line = refusal(&o);
    assert!(
        line.contains("no result file here is of this run"),
        "{line}"
    );
}
