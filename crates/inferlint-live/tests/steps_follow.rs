//! The step follower against a step file the test writes, line by line, as the plugin
//! would (docs/steps.md: compact JSON lines, the header first). Each test drives the
//! follower's reads itself ([`StepsFollow::poll`]), so what it copies is decided by what
//! the file held at each read, not by a clock.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use inferlint_engines::files::read_steps;
use inferlint_live::steps_follow::{StepsError, StepsFollow, StepsFollower, StepsProblem};

/// A header as the plugin writes it, for process `pid` (the restarted server's differs).
fn header(pid: u32) -> String {
    format!(
        r#"{{"schema":"inferlint.steps/1","plugin":"0.1.0","engine":"vllm","engine_version":"0.32.0","engine_index":0,"pid":{pid},"t_wall":1790000000.5,"t_mono_ns":1000000000,"iteration_details":true,"unread":[]}}"#
    )
}

/// Step `i` at `t` seconds after the header's anchor.
fn step(i: u64, t: f64) -> String {
    format!(
        r#"{{"t":{t},"i":{i},"r":2,"w":0,"d":0,"kv":0.1,"pr":0,"pt":0,"dr":2,"dt":2,"ms":12.5,"gen":2,"prompt":0,"pre":0}}"#
    )
}

const GAP: &str = r#"{"t":2.5,"gap":3,"reason":"queue full"}"#;

fn append(path: &Path, text: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the step file opens");
    file.write_all(text.as_bytes())
        .expect("the step file is written");
    file.flush().expect("flushed");
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .expect("the copy is there")
        .lines()
        .map(str::to_owned)
        .collect()
}

struct Files {
    _dir: tempfile::TempDir,
    source: PathBuf,
    out: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let source = dir.path().join("server-steps.jsonl");
    let out = dir.path().join("run").join("steps.jsonl");
    Files {
        source,
        out,
        _dir: dir,
    }
}

#[test]
fn only_the_lines_appended_during_the_window_are_copied_after_the_header() {
    let f = files();
    // The server has run before the recording: its header and two steps.
    append(
        &f.source,
        &format!("{}\n{}\n{}\n", header(7), step(1, 0.1), step(2, 0.2)),
    );
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    // The header is copied at once: its clock anchors place every step copied after it.
    assert_eq!(lines(&f.out), vec![header(7)]);
    append(&f.source, &format!("{}\n{GAP}\n", step(3, 2.0)));
    follow.poll();
    append(&f.source, &format!("{}\n", step(4, 3.0)));
    let summary = follow.finish();
    assert_eq!(
        lines(&f.out),
        vec![header(7), step(3, 2.0), GAP.to_owned(), step(4, 3.0)]
    );
    assert_eq!(
        summary.before, 2,
        "the two steps before the start are left behind"
    );
    assert_eq!((summary.lines, summary.gaps), (3, 1));
    assert_eq!(summary.problem, None);
    // The copy is a step file its reader takes: 2 steps, the gap's 3 dropped steps.
    let read = read_steps(&f.out).expect("the copy reads as a step file");
    assert_eq!((read.steps, read.dropped, read.skipped), (2, 3, 0));
}

#[test]
fn a_line_being_written_is_held_until_it_is_complete() {
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    let whole = step(1, 0.5);
    let (first, rest) = whole.split_at(20);
    append(&f.source, first);
    follow.poll();
    assert_eq!(lines(&f.out), vec![header(7)], "half a line is not copied");
    append(&f.source, &format!("{rest}\n"));
    follow.poll();
    assert_eq!(lines(&f.out), vec![header(7), whole.clone()]);
    // A last line still under way when the recording ends is not copied, and counted.
    append(&f.source, first);
    let summary = follow.finish();
    assert_eq!(lines(&f.out), vec![header(7), whole.clone()]);
    assert_eq!(summary.unfinished_bytes, first.len() as u64);
}

#[test]
fn a_line_under_way_at_the_start_belongs_to_the_window_before() {
    let f = files();
    let cut = step(1, 0.1);
    let (first, rest) = cut.split_at(30);
    append(&f.source, &format!("{}\n{first}", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    append(&f.source, &format!("{rest}\n{}\n", step(2, 0.2)));
    follow.poll();
    let summary = follow.finish();
    assert_eq!(lines(&f.out), vec![header(7), step(2, 0.2)]);
    assert_eq!(summary.lines, 1);
}

#[test]
fn a_file_without_a_header_at_the_start_is_copied_whole_once_the_server_writes_one() {
    let f = files();
    // The plugin opens its file when the server starts and writes the header at its
    // first step: an idle server's file is empty.
    append(&f.source, "");
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    follow.poll();
    assert!(!f.out.exists(), "no copy before there is a header");
    append(&f.source, &format!("{}\n{}\n", header(7), step(1, 0.1)));
    let summary = follow.finish();
    assert_eq!(lines(&f.out), vec![header(7), step(1, 0.1)]);
    assert_eq!(
        (summary.before, summary.lines, summary.problem),
        (0, 1, None)
    );
}

#[test]
fn a_restarted_server_stops_the_copy_and_says_so() {
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    append(&f.source, &format!("{}\n", step(1, 0.1)));
    follow.poll();
    // The new process opens the file anew (truncating it) and writes more than the old
    // one had: only its header tells.
    fs::write(
        &f.source,
        format!("{}\n{}\n{}\n", header(8), step(1, 0.1), step(2, 0.2)),
    )
    .expect("rewritten");
    follow.poll();
    assert!(follow.stopped());
    append(&f.source, &format!("{}\n", step(3, 0.3)));
    let summary = follow.finish();
    assert_eq!(lines(&f.out), vec![header(7), step(1, 0.1)]);
    assert_eq!(summary.problem, Some(StepsProblem::Restarted));
    assert!(summary
        .warning()
        .is_some_and(|w| w.contains("the server restarted")));
}

#[test]
fn a_truncated_file_is_a_restart() {
    let f = files();
    append(&f.source, &format!("{}\n{}\n", header(7), step(1, 0.1)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    fs::write(&f.source, "").expect("truncated");
    let summary = {
        follow.poll();
        follow.finish()
    };
    assert_eq!(summary.problem, Some(StepsProblem::Restarted));
    assert_eq!(lines(&f.out), vec![header(7)]);
}

#[test]
fn a_file_removed_or_replaced_is_said() {
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    fs::remove_file(&f.source).expect("removed");
    follow.poll();
    let summary = follow.finish();
    assert_eq!(summary.problem, Some(StepsProblem::Vanished));
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    let other = f.source.with_extension("new");
    append(&other, &format!("{}\n{}\n", header(7), step(1, 0.1)));
    fs::rename(&other, &f.source).expect("replaced");
    follow.poll();
    let summary = follow.finish();
    assert_eq!(summary.problem, Some(StepsProblem::Vanished));
    assert_eq!(lines(&f.out), vec![header(7)]);
}

#[test]
fn a_file_that_is_no_step_file_is_refused_at_the_start_or_said_later() {
    let f = files();
    append(&f.source, "{\"schema\":\"inferlint.series/1\"}\n");
    match StepsFollow::start(&f.source, &f.out, false) {
        Err(StepsError::NotSteps { problem, .. }) => {
            assert!(
                matches!(problem, StepsProblem::NotSteps(ref why) if why.contains("inferlint.series/1")),
                "{problem:?}"
            )
        }
        other => panic!("refused, not {other:?}"),
    }
    // A header without its clock anchors cannot place a step: refused too.
    let f = files();
    append(&f.source, "{\"schema\":\"inferlint.steps/1\"}\n");
    assert!(matches!(
        StepsFollow::start(&f.source, &f.out, false),
        Err(StepsError::NotSteps { .. })
    ));
    // Empty at the start, then something else than a header: no copy, and why.
    let f = files();
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    append(&f.source, "Traceback (most recent call last):\n");
    follow.poll();
    let summary = follow.finish();
    assert!(matches!(summary.problem, Some(StepsProblem::NotSteps(_))));
    assert_eq!(summary.out, None);
    assert!(!f.out.exists());
}

#[test]
fn no_header_ever_leaves_no_copy() {
    let f = files();
    let follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    let summary = follow.finish();
    assert_eq!(summary.problem, Some(StepsProblem::NoHeader));
    assert_eq!(summary.out, None);
    assert!(!f.out.exists(), "no empty file passes for steps");
    assert!(summary
        .warning()
        .is_some_and(|w| w.contains("INFERLINT_STEPS")));
}

#[test]
fn the_copy_is_refused_over_an_existing_file_or_the_step_file_itself() {
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    fs::create_dir_all(f.out.parent().unwrap()).unwrap();
    fs::write(&f.out, "an earlier copy\n").unwrap();
    assert!(matches!(
        StepsFollow::start(&f.source, &f.out, false),
        Err(StepsError::Output(_))
    ));
    assert!(matches!(
        StepsFollow::start(&f.source, &f.source, true),
        Err(StepsError::Output(_))
    ));
    // With force, an earlier copy is gone even when no step comes.
    let follow = StepsFollow::start(&f.source, &f.out, true).expect("following starts");
    follow.finish();
    assert_eq!(lines(&f.out), vec![header(7)]);
}

#[test]
fn the_follower_on_its_thread_reads_to_the_end_when_stopped() {
    let f = files();
    append(&f.source, &format!("{}\n{}\n", header(7), step(1, 0.1)));
    let follower = StepsFollower::start(&f.source, &f.out, false).expect("following starts");
    assert!(follower.started_with_header());
    append(&f.source, &format!("{}\n{}\n", step(2, 0.2), step(3, 0.3)));
    // The stop reads what was appended up to it: no wait is needed for the last lines.
    let summary = follower.stop();
    assert_eq!(lines(&f.out), vec![header(7), step(2, 0.2), step(3, 0.3)]);
    assert_eq!((summary.lines, summary.before), (2, 1));
}

#[test]
fn a_second_header_appended_is_a_restart_too() {
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    // A new process that appends rather than truncating: its header is not a step.
    append(
        &f.source,
        &format!("{}\n{}\n{}\n", step(1, 0.1), header(8), step(1, 0.1)),
    );
    follow.poll();
    let summary = follow.finish();
    assert_eq!(summary.problem, Some(StepsProblem::Restarted));
    assert_eq!(lines(&f.out), vec![header(7), step(1, 0.1)]);
    assert_eq!(summary.lines, 1);
}

/// A line longer than the reader takes (16 KiB) is not held whole: dropped as it grows,
/// counted, and the line after it copied.
#[test]
fn a_line_too_long_to_hold_is_skipped_and_counted() {
    let f = files();
    append(&f.source, &format!("{}\n", header(7)));
    let mut follow = StepsFollow::start(&f.source, &f.out, false).expect("following starts");
    let long = format!(r#"{{"t":1.0,"fin":"{}""#, "x".repeat(10 << 10));
    append(&f.source, &long);
    follow.poll();
    append(
        &f.source,
        &format!("{}}}\n{}\n", "y".repeat(10 << 10), step(2, 0.2)),
    );
    follow.poll();
    let summary = follow.finish();
    assert_eq!(summary.too_long, 1);
    assert_eq!(lines(&f.out), vec![header(7), step(2, 0.2)]);
}
