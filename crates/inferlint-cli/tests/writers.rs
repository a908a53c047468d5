//! No output ever replaces an input or an earlier result: every writer refuses an
//! existing file unless told (`--force`), never follows a symbolic link to write, never
//! writes over a file the command reads, and a recording being written is locked against
//! a second recorder. Each test is named after the loss it guards against.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use inferlint_core::Engine;
use inferlint_sim::server::{self, ServerConfig, ServerHandle};

use crate::common::USAGE;
use crate::common::{demo_copy, inferlint, no_panic, spawn_inferlint, stderr, stdout};

fn sim() -> ServerHandle {
    server::spawn(ServerConfig::new(Engine::Vllm)).unwrap()
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// An output target refused by the writing rules: the command line's to mend (another
/// file, or `--force`), so a usage error.
#[track_caller]
fn refused(o: &std::process::Output, needle: &str) {
    no_panic(o);
    assert_eq!(o.status.code(), Some(USAGE), "{}", stderr(o));
    assert!(
        stderr(o).contains(needle),
        "expected '{needle}' in: {}",
        stderr(o)
    );
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// `report RUN -o RUN/run.series.jsonl` once replaced the recording with the page.
#[test]
fn report_never_writes_over_a_file_it_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let series = read(&run.join("run.series.jsonl"));
    for extra in [&[][..], &["--force"][..]] {
        let mut args = vec!["report", "run", "-o", "run/run.series.jsonl"];
        args.extend_from_slice(extra);
        let o = inferlint(tmp.path(), &args);
        refused(
            &o,
            "run/run.series.jsonl is the recording, which this command reads",
        );
        assert!(stdout(&o).is_empty(), "refused before anything was checked");
        assert_eq!(read(&run.join("run.series.jsonl")), series);
    }
    // Named the other way round, and through a link to it: the same file, still refused.
    let o = inferlint(
        tmp.path(),
        &[
            "report",
            "--before",
            "run/before.snapshot.json",
            "--after",
            "run/after.snapshot.json",
            "-o",
            "run/after.snapshot.json",
        ],
    );
    refused(&o, "is the after snapshot");
    #[cfg(unix)]
    {
        symlink(&run.join("boot.log"), &tmp.path().join("page.html"));
        let o = inferlint(tmp.path(), &["report", "run", "-o", "page.html", "--force"]);
        refused(&o, "page.html is a boot log");
    }
}

/// A second `report RUN` regenerates its own report.html; a report.html that inferlint
/// did not write (the user's notes, say) is left alone unless `--force`.
#[test]
fn report_replaces_only_its_own_earlier_report() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let first = inferlint(tmp.path(), &["report", "run"]);
    assert!(
        stdout(&first).ends_with(" -> run/report.html\n"),
        "{}",
        stdout(&first)
    );
    let again = inferlint(tmp.path(), &["report", "run"]);
    assert!(
        stdout(&again).ends_with(" -> run/report.html\n"),
        "{}",
        stderr(&again)
    );

    std::fs::write(run.join("report.html"), "my own notes\n").unwrap();
    let o = inferlint(tmp.path(), &["report", "run"]);
    assert_eq!(o.status.code(), Some(1), "the verdicts still decide");
    assert!(!stdout(&o).contains(" -> "), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("report.html not written: run/report.html exists; give another file, or --force to replace it"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read(&run.join("report.html")), b"my own notes\n");

    let o = inferlint(tmp.path(), &["report", "run", "--force"]);
    assert!(
        stdout(&o).ends_with(" -> run/report.html\n"),
        "{}",
        stderr(&o)
    );
    assert!(std::str::from_utf8(&read(&run.join("report.html")))
        .unwrap()
        .starts_with("<!DOCTYPE html>"));

    // -o: the same rule, as an error.
    std::fs::write(tmp.path().join("notes.html"), "mine").unwrap();
    let o = inferlint(tmp.path(), &["report", "run", "-o", "notes.html"]);
    refused(
        &o,
        "notes.html exists; give another file, or --force to replace it",
    );
    assert!(stdout(&o).is_empty());
    assert_eq!(read(&tmp.path().join("notes.html")), b"mine");
}

/// `-o` naming a symbolic link wrote through it into the file it points to.
#[cfg(unix)]
#[test]
fn a_link_is_never_followed_to_write() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    demo_copy(&run);
    let target = tmp.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    symlink(&target, &tmp.path().join("out.html"));

    let o = inferlint(tmp.path(), &["report", "run", "-o", "out.html"]);
    refused(&o, "out.html is a symbolic link");
    assert_eq!(read(&target), b"keep me");

    // --force replaces the link itself with the report.
    let o = inferlint(tmp.path(), &["report", "run", "-o", "out.html", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(read(&target), b"keep me");
    let link = std::fs::symlink_metadata(tmp.path().join("out.html")).unwrap();
    assert!(link.is_file(), "the link was replaced by the report");
}

/// A second `snapshot -o before.json` (meant as after.json) lost the reading taken
/// before the run.
#[test]
fn snapshot_refuses_to_replace_an_earlier_snapshot() {
    let server = sim();
    let tmp = tempfile::tempdir().unwrap();
    let o = inferlint(
        tmp.path(),
        &["snapshot", &server.base_url, "-o", "before.json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = read(&tmp.path().join("before.json"));

    let o = inferlint(
        tmp.path(),
        &["snapshot", &server.base_url, "-o", "before.json"],
    );
    refused(
        &o,
        "before.json exists; give another file, or --force to replace it",
    );
    assert_eq!(read(&tmp.path().join("before.json")), before);

    let o = inferlint(
        tmp.path(),
        &["snapshot", &server.base_url, "-o", "before.json", "--force"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_ne!(
        read(&tmp.path().join("before.json")),
        before,
        "a new reading"
    );

    #[cfg(unix)]
    {
        let target = tmp.path().join("elsewhere.json");
        std::fs::write(&target, "keep").unwrap();
        symlink(&target, &tmp.path().join("link.json"));
        let o = inferlint(
            tmp.path(),
            &["snapshot", &server.base_url, "-o", "link.json"],
        );
        refused(&o, "link.json is a symbolic link");
        assert_eq!(read(&target), b"keep");
    }
}

/// `watch -o FILE` truncated an existing recording, and followed a link to overwrite
/// what it pointed to.
#[test]
fn watch_refuses_an_existing_recording_and_a_link() {
    let server = sim();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("run.series.jsonl");
    std::fs::write(&path, "{\"schema\": \"inferlint.series/1\"}\n").unwrap();
    let o = inferlint(
        tmp.path(),
        &[
            "watch",
            &server.base_url,
            "-o",
            "run.series.jsonl",
            "--duration",
            "0.2",
        ],
    );
    refused(
        &o,
        "run.series.jsonl exists; give another file, or --force to replace it",
    );
    assert_eq!(read(&path), b"{\"schema\": \"inferlint.series/1\"}\n");

    #[cfg(unix)]
    {
        let target = tmp.path().join("precious.jsonl");
        std::fs::write(&target, "keep").unwrap();
        symlink(&target, &tmp.path().join("link.jsonl"));
        let args = [
            "watch",
            &server.base_url,
            "-o",
            "link.jsonl",
            "--duration",
            "0.2",
        ];
        let o = inferlint(tmp.path(), &args);
        refused(&o, "link.jsonl is a symbolic link");
        let o = inferlint(tmp.path(), &[&args[..], &["--force"]].concat());
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert_eq!(
            read(&target),
            b"keep",
            "the file behind the link is untouched"
        );
        assert!(std::fs::symlink_metadata(tmp.path().join("link.jsonl"))
            .unwrap()
            .is_file());
    }
}

fn watch_in_background(dir: &Path, url: &str, args: &[&str]) -> Child {
    let mut all = vec!["watch", url];
    all.extend_from_slice(args);
    spawn_inferlint(dir, &all, Stdio::null())
}

/// Two `watch -o same.jsonl` both exited 0 with their recordings interleaved in one
/// file. The second is refused while the first holds the file.
#[test]
fn a_second_recorder_on_the_same_file_is_refused() {
    let server = sim();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("same.jsonl");
    let mut first = watch_in_background(
        tmp.path(),
        &server.base_url,
        &["-o", "same.jsonl", "--interval", "0.05", "--duration", "20"],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&path).map_or(0, |t| t.lines().count()) < 2 {
        assert!(Instant::now() < deadline, "the first watch wrote nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    for force in [false, true] {
        let mut args = vec![
            "watch",
            &server.base_url,
            "-o",
            "same.jsonl",
            "--duration",
            "0.2",
        ];
        if force {
            args.push("--force");
        }
        let o = inferlint(tmp.path(), &args);
        refused(&o, "same.jsonl is being written by another recorder");
    }
    let _ = first.kill();
    let _ = first.wait();
    // One recording, one header, time going forward: it reads without a refused line.
    let o = inferlint(tmp.path(), &["series", "same.jsonl", "--json"]);
    assert!(!stderr(&o).contains("refused"), "{}", stderr(&o));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches("inferlint.series/1").count(), 1, "{text}");
    assert!(!stdout(&o).contains("two recordings"), "{}", stdout(&o));
}

/// `demo` wrote its files through links left in an earlier demo folder.
#[cfg(unix)]
#[test]
fn demo_replaces_links_in_its_folder_without_following_them() {
    let tmp = tempfile::tempdir().unwrap();
    let o = inferlint(tmp.path(), &["demo", "-o", "d"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let target = tmp.path().join("precious.json");
    std::fs::write(&target, "keep").unwrap();
    std::fs::remove_file(tmp.path().join("d/bench.json")).unwrap();
    symlink(&target, &tmp.path().join("d/bench.json"));
    let o = inferlint(tmp.path(), &["demo", "-o", "d"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(read(&target), b"keep");
    assert!(std::fs::symlink_metadata(tmp.path().join("d/bench.json"))
        .unwrap()
        .is_file());

    // A folder holding something else: refused, then written into with --force.
    std::fs::create_dir(tmp.path().join("mine")).unwrap();
    std::fs::write(tmp.path().join("mine/notes.txt"), "x").unwrap();
    let o = inferlint(tmp.path(), &["demo", "-o", "mine"]);
    refused(&o, "--force to write into it");
    let o = inferlint(tmp.path(), &["demo", "-o", "mine", "--force"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(read(&tmp.path().join("mine/notes.txt")), b"x");
}
