//! What the command line promises and must keep: a folder of runs is not read as one.

use serde_json::Value;

use crate::common::{copy_tree, fixtures, inferlint, no_panic, recorded, stderr, stdout};
use crate::common::UNUSABLE_INPUT;

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
fn a_folder_of_runs_is_refused_naming_them() {
    let Some(dir) = recorded() else { return };
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
