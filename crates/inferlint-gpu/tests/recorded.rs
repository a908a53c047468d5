//! The H200 recordings (`recorded/gpu-h200/`): real NVML readings of an idle card, of a
//! card a `VLLM::EngineCore` process holds 21 GiB of, of the same engine orphaned after its
//! front got SIGKILL, and the ~0.13 s timeline after the engine got SIGTERM; and /proc's
//! view of the two processes.

use inferlint_core::Status;
use inferlint_gpu::clear::{CardVerdict, ClearCardWatch, ClearRule, Reading};
use inferlint_gpu::inspect::{gpu_inspect, gpu_text};
use inferlint_gpu::pids::gpu_holders;
use inferlint_gpu::procs::{ProcessInfo, ProcessTable, StopSignal};
use inferlint_gpu::recorded::{parse_readings, RecordedReading};
use inferlint_gpu::servers::{compare_with_pkill, discover, Scope};
use inferlint_gpu::teardown::{plan, teardown, TeardownOptions};

use crate::common::{add_process, add_reading, h200, machine, recorded, Answer, World};

fn reading(name: &str) -> RecordedReading {
    let dir = recorded();
    let mut all = parse_readings(&h200(&dir, name)).unwrap();
    assert_eq!(all.len(), 1);
    all.pop().unwrap()
}

/// The processes of `proc-loaded.txt`. Its `cmdline:` lines show the NULs as spaces, so
/// they are split on spaces here (no argument of these two holds one).
fn loaded_processes(text: &str) -> Vec<ProcessInfo> {
    let mut processes = Vec::new();
    let mut cmdline = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("cmdline: ") {
            cmdline = rest.to_owned();
        } else if let Some(stat) = line.strip_prefix("stat: ") {
            let bytes: Vec<u8> = cmdline.replace(' ', "\0").into_bytes();
            processes.push(ProcessInfo::from_proc_files(stat, &bytes).unwrap());
        }
    }
    processes
}

/// Not in the recorded table: inferlint itself, elsewhere on the machine.
const CALLER: u32 = 99_999;

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn gpu_lines_of_the_idle_card() {
    let idle = reading("nvml-idle.json");
    assert_eq!(
        gpu_text(&Ok(idle.snapshot), &[]),
        "GPU 0   NVIDIA H200\n        Hopper, compute capability 9.0, driver 580.159.04\n        memory: 143,771 MiB total, 0 MiB used, 143,156 MiB free\n"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_loaded_card_names_the_engine_that_holds_it() {
    let dir = recorded();
    let loaded = reading("nvml-loaded.json");
    let table = ProcessTable::new(loaded_processes(&h200(&dir, "proc-loaded.txt")));
    let holders = gpu_holders(&loaded.snapshot, &table, &|_| Some(true));
    let text = gpu_text(&Ok(loaded.snapshot), &holders);
    assert!(
        text.ends_with(
            "        memory: 143,771 MiB total, 21,099 MiB used, 122,057 MiB free\n        pid 438 holds 21,090 MiB: VLLM::EngineCor (vLLM server)\n"
        ),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_front_and_its_renamed_engine_are_both_servers() {
    let dir = recorded();
    let table = ProcessTable::new(loaded_processes(&h200(&dir, "proc-loaded.txt")));
    let found = discover(&table, CALLER, Scope::Everything);
    let shown: Vec<(u32, &str, &str)> = found
        .targets
        .iter()
        .map(|t| (t.pid, t.name.as_str(), t.why.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                434,
                "python3 /tmp/bin/vllm serve Qwen/Qwen3-8B --max-model-len 16384 --gib 20",
                "python3 runs vllm serve"
            ),
            (438, "VLLM::EngineCor", "process name VLLM::EngineCor"),
        ]
    );
    let pkill = compare_with_pkill(&table, CALLER, Scope::Everything, &found.targets, None);
    assert_eq!(pkill.would_miss, [438]);
    assert_eq!(
        pkill.line(),
        "(pkill -f 'vllm serve' would miss 1 and wrongly hit 0)"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_orphaned_engine_is_found_by_its_name_alone() {
    let dir = recorded();
    // proc-orphan.txt: after the front's SIGKILL, the engine lives on under PID 1.
    let orphan_text = h200(&dir, "proc-orphan.txt");
    assert!(orphan_text.contains("Name:\tVLLM::EngineCor") && orphan_text.contains("PPid:\t1"));
    let mut engine = loaded_processes(&h200(&dir, "proc-loaded.txt"))
        .into_iter()
        .find(|p| p.pid == 438)
        .unwrap();
    engine.ppid = 1;
    let table = ProcessTable::new([engine]);
    let plan = plan(&table, CALLER, Scope::Everything, None);
    // The tutorial's lines, with the recording's PID.
    assert_eq!(
        plan.text(None),
        "target  pid=438      VLLM::EngineCor\n(pkill -f 'vllm serve' would miss 1 and wrongly hit 0)\n"
    );
}

fn timeline() -> Vec<RecordedReading> {
    let dir = recorded();
    let readings = parse_readings(&h200(&dir, "release.jsonl")).unwrap();
    assert_eq!(readings.len(), 80);
    readings
}

/// Folds the timeline through the rule; `alive` says whether the engine counts.
fn first_clear_card(readings: &[RecordedReading], count_the_process: bool) -> Option<u64> {
    let mut watch = ClearCardWatch::new(ClearRule::teardown());
    readings.iter().find_map(|r| {
        let alive = count_the_process && r.alive.unwrap();
        let verdict = watch.push(Reading {
            elapsed_ms: r.t_ms.unwrap(),
            gpu: inferlint_gpu::clear::state_of(&Ok(r.snapshot.clone())),
            servers_alive: usize::from(alive),
        });
        matches!(verdict, Some(CardVerdict::Clear { .. })).then(|| r.t_ms.unwrap())
    })
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn memory_alone_calls_the_card_clear_while_the_engine_still_lives() {
    let readings = timeline();
    // NVML reads 0 MiB from 145 ms on; the engine lives until between 1852 and 1988 ms.
    let memory_only = first_clear_card(&readings, false).unwrap();
    assert_eq!(memory_only, 280);
    let at = readings
        .iter()
        .find(|r| r.t_ms == Some(memory_only))
        .unwrap();
    assert_eq!(at.alive, Some(true), "the engine was still alive");
    // Both halves: two clear readings in a row only once the process is gone too.
    assert_eq!(first_clear_card(&readings, true), Some(2122));
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn memory_held_by_a_process_proc_does_not_show_keeps_the_card_unclear() {
    // A container: NVML's PID 438 is in no /proc here, so no server process is visible,
    // but the card is full. Processes alone would call it clear.
    let orphan = reading("nvml-orphan.json");
    let world = World::new();
    add_reading(&world, 0, Ok(orphan.snapshot));
    let mut text = String::new();
    let result = gpu_inspect(&mut machine(&world, 1), ClearRule::gate(), &mut |t| {
        text.push_str(t)
    });
    assert_eq!(result.status, Status::Fail);
    assert!(
        result.message.ends_with(
            "not clear after 10s: last reading 21099 MiB used, 0 server processes alive"
        ),
        "{}",
        result.message
    );
    assert!(
        text.contains("        pid 438 holds 21,090 MiB: not in this machine's /proc\n"),
        "{text}"
    );
    assert!(text.contains("inferlint never signals a process by NVML's PID"));
    assert_eq!(
        result.evidence["gpus"][0]["processes"][0]["in_proc"],
        "missing"
    );
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn teardown_of_the_orphan_replays_the_release_timeline() {
    let (dir, readings) = (recorded(), timeline());
    let mut engine = loaded_processes(&h200(&dir, "proc-loaded.txt"))
        .into_iter()
        .find(|p| p.pid == 438)
        .unwrap();
    engine.ppid = 1;
    let world = World::new();
    // The engine exits when the recording saw it gone: between 1852 and 1988 ms.
    add_process(&world, engine, Answer::ExitsAfterTerm(1988));
    for r in readings {
        add_reading(&world, r.t_ms.unwrap().saturating_sub(4), Ok(r.snapshot));
    }
    let outcome = teardown(
        &mut machine(&world, 1),
        &TeardownOptions::new(ClearRule::teardown()),
        &mut |_| {},
    );
    let signals: Vec<(u32, StopSignal, u64)> = world.borrow().signals.clone();
    assert_eq!(signals, [(438, StopSignal::Term, 0)]);
    let t2 = &outcome.results[0];
    assert_eq!(t2.status, Status::Pass, "{}", t2.message);
    assert_eq!(t2.message, "2 consecutive clear readings");
    // The grace period saw the engine gone at 2 s; two clear readings 2 s apart followed.
    assert_eq!(
        t2.evidence["readings"],
        serde_json::json!([[0.0, 0, 0], [2.0, 0, 0]])
    );
}

/// A file of recorded readings (`INFERLINT_NVML_READINGS`) keeps the input rules of every
/// input: a device, a FIFO without a writer, or a file above the bound is refused at
/// once, before anything is read (before: `/dev/zero` was read until memory ran out,
/// and the FIFO blocked for ever).
#[cfg(unix)]
#[test]
fn recorded_readings_that_are_not_a_bounded_regular_file_are_refused_at_once() {
    use inferlint_gpu::recorded::{ReplayReader, MAX_READINGS_BYTES};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("readings.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let big = dir.path().join("big.json");
    // Sparse: its length is above the bound, its blocks are not.
    std::fs::File::create(&big)
        .unwrap()
        .set_len(MAX_READINGS_BYTES + 1)
        .unwrap();
    for (path, words) in [
        (fifo, "a pipe (FIFO)"),
        (big, "more than the 64 MiB a file of NVML readings can be"),
        (std::path::PathBuf::from("/dev/zero"), "a character device"),
    ] {
        let started = Instant::now();
        let error = ReplayReader::from_file(&path).unwrap_err().to_string();
        assert!(error.contains(words), "{}: {error}", path.display());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
