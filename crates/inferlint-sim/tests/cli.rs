//! The `inferlint-sim` command line (clap): its usage errors exit 2 naming the flag, a
//! flag given twice takes its last value, and `write` writes every case.

use std::process::Command;

fn sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_inferlint-sim"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn usage_errors_exit_2_naming_what_is_wrong() {
    for (args, says) in [
        (&["load"][..], "<URL>"),
        (&["serve", "--port", "x"][..], "--port"),
        (&["serve", "--engine", "nope"][..], "unknown engine nope"),
        (&["serve"][..], "serve needs --engine or --case"),
        (
            &["serve", "--engine", "vllm", "--speed", "0"][..],
            "--speed must be a positive number",
        ),
        (
            &["serve", "--engine", "vllm", "--error-every", "0"][..],
            "count from 1",
        ),
        (
            &["serve", "--case", "vllm-hybrid", "--engine", "sglang"][..],
            "does not match the case's engine",
        ),
        (&["serve", "--no-such-flag"][..], "--no-such-flag"),
        (&[][..], "Usage"),
    ] {
        let out = sim(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let help = sim(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("serve"));
}

/// A repeated flag takes its last value (the hand-written parser did; clap refuses a
/// repeated flag unless told otherwise): here the last `--case` names no case.
#[test]
fn a_repeated_flag_takes_its_last_value() {
    let out = sim(&["serve", "--case", "vllm-hybrid", "--case", "no-such-case"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no case named no-such-case"));
}

#[test]
fn write_writes_every_case() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(&["write", dir.path().to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for case in inferlint_sim::runfolder::all_cases() {
        assert!(
            dir.path().join(case.name).join("boot.log").is_file(),
            "{}",
            case.name
        );
    }
}
