//! teardown and gpu-inspect's gate on a fake machine: what is signalled, when, and what
//! the card verdict says, without a real process or a real second going by.

use inferlint_core::{Engine, Status};
use inferlint_gpu::clear::ClearRule;
use inferlint_gpu::gpu::{GpuDevice, GpuError, GpuMemory, GpuSnapshot, MIB};
use inferlint_gpu::inspect::gpu_inspect;
use inferlint_gpu::procs::{ProcError, StopSignal};
use inferlint_gpu::teardown::{teardown, TeardownOptions, TeardownOutcome};
use inferlint_gpu::Machine;
use serde_json::Value;

use crate::common::{
    add_process, add_reading, alive, machine, process, Answer, SharedWorld, World,
};

fn card(used_mib: u64) -> Result<GpuSnapshot, GpuError> {
    Ok(GpuSnapshot {
        driver_version: Some("580.159.04".into()),
        devices: vec![GpuDevice {
            index: 0,
            name: Some("NVIDIA H200".into()),
            uuid: None,
            architecture: Some("Hopper".into()),
            compute_capability: Some((9, 0)),
            memory: Some(GpuMemory {
                total: 143_771 * MIB,
                used: used_mib * MIB,
                free: (143_771 - used_mib) * MIB,
            }),
            processes: Some(vec![]),
        }],
    })
}

/// We are pid 401, run by a shell one-liner (400) that also mentions `vllm serve`; a vLLM
/// server (200) with its engine (201); an orphaned engine (300) whose front is gone; a
/// `tail -f` on a log named after the server (500).
fn world(orphan: Answer) -> SharedWorld {
    let world = servers_only(orphan);
    add_reading(&world, 0, card(21_099));
    add_reading(&world, 600, card(0));
    world
}

/// The processes of [`world`], with no GPU reading yet.
fn servers_only(orphan: Answer) -> SharedWorld {
    let world = World::new();
    let ok = Answer::ExitsAfterTerm(300);
    for (info, answer) in [
        (process(1, 0, "init", &["/sbin/init"]), ok),
        (process(100, 1, "bash", &["-bash"]), ok),
        (
            process(
                200,
                100,
                "python3",
                &["python3", "/venv/bin/vllm", "serve", "m"],
            ),
            ok,
        ),
        (
            process(
                201,
                200,
                "VLLM::EngineCor",
                &[
                    "python3",
                    "-c",
                    "from multiprocessing.spawn import spawn_main",
                ],
            ),
            ok,
        ),
        (
            process(
                300,
                1,
                "VLLM::EngineCor",
                &[
                    "python3",
                    "-c",
                    "from multiprocessing.spawn import spawn_main",
                ],
            ),
            orphan,
        ),
        (
            process(
                400,
                100,
                "bash",
                &["bash", "-c", "pkill -f 'vllm serve'; inferlint teardown"],
            ),
            ok,
        ),
        (
            process(401, 400, "inferlint", &["inferlint", "teardown"]),
            ok,
        ),
        (
            process(500, 100, "tail", &["tail", "-f", "vllm serve.log"]),
            ok,
        ),
    ] {
        add_process(&world, info, answer);
    }
    world
}

fn run(world: &SharedWorld, options: &TeardownOptions) -> (TeardownOutcome, String) {
    let mut machine = machine(world, 401);
    let mut text = String::new();
    let outcome = teardown(&mut machine, options, &mut |t| text.push_str(t));
    (outcome, text)
}

fn pids(outcome: &TeardownOutcome) -> Vec<u32> {
    outcome
        .plan
        .as_ref()
        .unwrap()
        .targets
        .iter()
        .map(|t| t.pid)
        .collect()
}

#[test]
fn the_real_run_signals_exactly_what_the_dry_run_lists() {
    let world = world(Answer::ExitsAfterTerm(300));
    let mut options = TeardownOptions::new(ClearRule::teardown());
    options.dry_run = true;
    let (dry, dry_text) = run(&world, &options);
    assert!(dry.results.is_empty());
    assert!(
        world.borrow().signals.is_empty(),
        "a dry run signals nothing"
    );
    assert_eq!(
        dry_text,
        "target  pid=200      python3 /venv/bin/vllm serve m\n\
         target  pid=201      VLLM::EngineCor\n\
         target  pid=300      VLLM::EngineCor\n\
         (pkill -f 'vllm serve' would miss 2 and wrongly hit 2)\n"
    );

    options.dry_run = false;
    let (real, real_text) = run(&world, &options);
    assert_eq!(pids(&real), pids(&dry));
    assert!(real_text.starts_with(&dry_text));
    let signalled: Vec<(u32, StopSignal)> = world
        .borrow()
        .signals
        .iter()
        .map(|&(pid, s, _)| (pid, s))
        .collect();
    assert_eq!(
        signalled,
        [
            (200, StopSignal::Term),
            (201, StopSignal::Term),
            (300, StopSignal::Term)
        ]
    );
    for pid in [200, 201, 300] {
        assert!(!alive(&world, pid));
    }
    for pid in [400, 401, 500] {
        assert!(alive(&world, pid), "pid {pid} is no server and must live");
    }
    let t2 = &real.results[0];
    assert_eq!(t2.status, Status::Pass);
    assert_eq!(t2.message, "2 consecutive clear readings");
    assert_eq!(t2.evidence["signalled"], serde_json::json!([200, 201, 300]));
    assert_eq!(t2.evidence["killed"], serde_json::json!([]));
}

#[test]
fn an_engine_that_ignores_sigterm_gets_sigkill_after_the_grace_period() {
    let world = world(Answer::IgnoresTerm);
    let (outcome, text) = run(&world, &TeardownOptions::new(ClearRule::teardown()));
    let kills: Vec<(u32, u64)> = world
        .borrow()
        .signals
        .iter()
        .filter(|s| s.1 == StopSignal::Kill)
        .map(|&(pid, _, at)| (pid, at))
        .collect();
    assert_eq!(
        kills,
        [(300, 15_000)],
        "SIGKILL only for the survivor, after 15 s"
    );
    assert!(
        text.contains("killed  pid=300      VLLM::EngineCor (still running 15s after SIGTERM)\n"),
        "{text}"
    );
    assert_eq!(outcome.results[0].status, Status::Pass);
    assert_eq!(
        outcome.results[0].evidence["killed"],
        serde_json::json!([300])
    );
}

#[test]
fn a_reused_pid_is_never_signalled() {
    let world = world(Answer::ExitsAfterTerm(300));
    world.borrow_mut().reuse_pid_on_first_signal = Some(300);
    let (outcome, text) = run(&world, &TeardownOptions::new(ClearRule::teardown()));
    assert!(world.borrow().signals.iter().all(|s| s.0 != 300));
    assert!(alive(&world, 300), "the new process with the old PID lives");
    assert!(text.contains("note: pid 300 was not signalled: it now belongs to another process"));
    assert_eq!(outcome.results[0].status, Status::Pass);
}

#[test]
fn a_named_engine_leaves_the_others_alone_but_the_card_waits_for_them() {
    let world = world(Answer::ExitsAfterTerm(300));
    add_process(
        &world,
        process(
            600,
            1,
            "python3",
            &["python3", "-m", "sglang.launch_server", "--model-path", "m"],
        ),
        Answer::ExitsAfterTerm(10),
    );
    add_process(
        &world,
        process(601, 600, "sglang::schedul", &["sglang::scheduler"]),
        Answer::ExitsAfterTerm(10),
    );
    let mut options = TeardownOptions::new(ClearRule::teardown());
    options.engine = Some(Engine::Vllm);
    options.named_as = Some("--engine vllm".into());
    let (outcome, text) = run(&world, &options);
    assert!(
        text.contains("left alone (--engine vllm): 2 processes of SGLang servers\n"),
        "{text}"
    );
    assert!(world.borrow().signals.iter().all(|s| s.0 < 600));
    assert!(alive(&world, 600) && alive(&world, 601));
    let t2 = &outcome.results[0];
    assert_eq!(t2.status, Status::Fail);
    assert_eq!(
        t2.message,
        "not clear after 120s: last reading 0 MiB used, 2 server processes alive"
    );
    // Readings every 2 s from the end of the grace period until the timeout, the last
    // one at 120 s exactly.
    let readings = t2.evidence["readings"].as_array().unwrap();
    assert_eq!(readings.len(), 61);
    assert_eq!(readings.last().unwrap()[0], 120.0);
}

#[test]
fn with_no_driver_the_servers_are_still_stopped_and_the_card_is_cannot_tell() {
    let world = servers_only(Answer::ExitsAfterTerm(300));
    add_reading(
        &world,
        0,
        Err(GpuError::NoDriver {
            detail: "libnvidia-ml.so.1: cannot open shared object file".into(),
        }),
    );
    let (outcome, _) = run(&world, &TeardownOptions::new(ClearRule::teardown()));
    let signalled: Vec<u32> = world.borrow().signals.iter().map(|s| s.0).collect();
    assert_eq!(signalled, [200, 201, 300]);
    let t2 = &outcome.results[0];
    assert_eq!(t2.status, Status::Unknown);
    assert_eq!(
        t2.message,
        "no NVIDIA driver found (libnvidia-ml.so.1: cannot open shared object file): \
         no server process is alive, but the GPU memory cannot be read"
    );
    // Decided at the first reading after the servers were gone, not at the timeout.
    assert_eq!(t2.evidence["readings"].as_array().unwrap().len(), 1);
}

#[test]
fn the_gate_only_looks() {
    let world = world(Answer::ExitsAfterTerm(300));
    let mut machine = machine(&world, 401);
    let mut text = String::new();
    let result = gpu_inspect(&mut machine, ClearRule::gate(), &mut |t| text.push_str(t));
    assert!(world.borrow().signals.is_empty());
    assert_eq!(result.status, Status::Fail);
    assert!(
        result
            .message
            .ends_with("not clear after 10s: last reading 0 MiB used, 3 server processes alive"),
        "{}",
        result.message
    );
    assert!(text.starts_with("GPU 0   NVIDIA H200\n"), "{text}");
    assert_eq!(result.evidence["gpus"][0]["memory_used_mib"], 21_099);
}

#[test]
fn without_proc_both_commands_say_why() {
    let world = world(Answer::ExitsAfterTerm(300));
    let not_linux = |what: &str| {
        let mut m: Machine = machine(&world, 401);
        m.processes = Err(ProcError::NotLinux { what: what.into() });
        m
    };
    let mut text = String::new();
    let out = teardown(
        &mut not_linux("teardown"),
        &TeardownOptions::new(ClearRule::teardown()),
        &mut |t| text.push_str(t),
    );
    assert_eq!(out.results[0].status, Status::Unknown);
    assert_eq!(
        out.results[0].message,
        "teardown needs Linux: it finds the server's processes in /proc. Run it where the server runs."
    );
    let json: Value = serde_json::from_str(&out.json()).unwrap();
    assert_eq!(json["targets"], serde_json::json!([]));
    assert_eq!(json["results"][0]["status"], "unknown");

    let mut text = String::new();
    let r = gpu_inspect(
        &mut not_linux("gpu-inspect's free-card check"),
        ClearRule::gate(),
        &mut |t| text.push_str(t),
    );
    assert!(
        text.starts_with("GPU 0   NVIDIA H200\n"),
        "the GPU is still shown: {text}"
    );
    assert_eq!(r.status, Status::Unknown);
    assert!(r
        .message
        .starts_with("gpu-inspect's free-card check needs Linux"));
    assert!(world.borrow().signals.is_empty());
}

/// xray's clear-card wait after its stop: a daemon its server left (a helper that looks
/// like no server, still alive) keeps the card from clearing, though the memory reads 0
/// and no process looks like a server. Without it counted, the card would read clear.
#[test]
fn a_process_left_of_a_started_tree_keeps_the_card_from_clearing() {
    use inferlint_gpu::clear::Asker;
    use inferlint_gpu::tree::{still_alive, Member};
    use inferlint_gpu::wait::{wait_for_clear_card, wait_for_clear_card_with};

    let world = World::new();
    add_process(
        &world,
        process(1, 0, "init", &["/sbin/init"]),
        Answer::IgnoresTerm,
    );
    add_process(
        &world,
        process(401, 1, "inferlint", &["inferlint"]),
        Answer::IgnoresTerm,
    );
    let daemon = process(700, 1, "sleep", &["sleep", "1000"]);
    let left = [Member {
        pid: daemon.pid,
        start_time: daemon.start_time,
    }];
    add_process(&world, daemon, Answer::IgnoresTerm);
    add_reading(&world, 0, card(0));
    let mut rule = ClearRule::teardown();
    rule.timeout_s = 10.0;

    let mut m = machine(&world, 401);
    let processes = m.processes.as_mut().unwrap();
    let waited = wait_for_clear_card_with(
        Asker::Teardown,
        rule,
        processes.as_mut(),
        m.gpus.as_mut(),
        m.clock.as_mut(),
        &|table| still_alive(table, &left),
    );
    assert_eq!(
        waited.result.status,
        Status::Fail,
        "{}",
        waited.result.message
    );
    assert!(
        waited.result.message.contains("1 server process alive"),
        "{}",
        waited.result.message
    );

    // The same machine without the tree's leftovers counted reads clear.
    let mut m = machine(&world, 401);
    let processes = m.processes.as_mut().unwrap();
    let plain = wait_for_clear_card(
        Asker::Teardown,
        rule,
        processes.as_mut(),
        m.gpus.as_mut(),
        m.clock.as_mut(),
    );
    assert_eq!(
        plain.result.status,
        Status::Pass,
        "{}",
        plain.result.message
    );
}
