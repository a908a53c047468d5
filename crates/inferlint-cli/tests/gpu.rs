//! `inferlint gpu-inspect` and `inferlint teardown`, run as a user runs them: on this
//! machine's missing NVIDIA driver, on the H200's recorded NVML readings, and against a
//! real tree of look-alike server processes that the test starts and always cleans up.
//!
//! Every run sets `INFERLINT_SESSION_ONLY=1`, so that it looks only at processes of its
//! own session: a test never sees, let alone stops, a server it did not start.

use crate::common::{inferlint_env, no_panic, stderr, stdout};
#[cfg(target_os = "linux")]
use crate::common::{json_results, recorded};
use crate::common::{UNUSABLE_INPUT, USAGE};

const SCOPED: (&str, &str) = ("INFERLINT_SESSION_ONLY", "1");

fn here() -> std::path::PathBuf {
    std::env::temp_dir()
}

#[cfg(not(target_os = "linux"))]
#[test]
fn without_proc_both_commands_say_they_need_linux() {
    let o = inferlint_env(&here(), &["teardown"], &[SCOPED]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains(
        "teardown needs Linux: it finds the server's processes in /proc. Run it where the server runs."
    ));
    let o = inferlint_env(&here(), &["gpu-inspect"], &[SCOPED]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("gpu-inspect's free-card check needs Linux"));
}

/// Runs inferlint as the only member of a new session (`setsid`), so that
/// `INFERLINT_SESSION_ONLY` shows it no process but itself: the test harness's own session
/// also holds the look-alike servers other tests start at the same time.
#[cfg(target_os = "linux")]
fn inferlint_alone(args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("setsid");
    cmd.current_dir(here())
        .arg(env!("CARGO_BIN_EXE_inferlint"))
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .env_remove("INFERLINT_NVML_READINGS")
        .env("COLUMNS", "88")
        .env(SCOPED.0, SCOPED.1)
        .stdin(std::process::Stdio::null());
    cmd.output().expect("setsid runs the inferlint binary")
}

/// Whether this machine has an NVIDIA kernel driver; the no-driver tests are skipped
/// where it has one.
#[cfg(target_os = "linux")]
fn nvidia_driver_present() -> bool {
    std::path::Path::new("/proc/driver/nvidia/version").exists()
}

#[cfg(target_os = "linux")]
#[test]
fn gpu_inspect_without_a_driver_says_so_and_cannot_tell() {
    if nvidia_driver_present() {
        crate::common::skipped("this machine has an NVIDIA driver");
        return;
    }
    let o = inferlint_alone(&["gpu-inspect"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("no NVIDIA driver found ("), "{out}");
    assert!(
        lines[1].starts_with("[ T2] ????  no NVIDIA driver found ("),
        "{out}"
    );
    assert!(lines[1].ends_with(": no server process is alive, but the GPU memory cannot be read"));

    let o = inferlint_alone(&["gpu-inspect", "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let results = json_results(&o);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tripwire"], "T2");
    assert_eq!(results[0]["status"], "unknown");
    assert_eq!(results[0]["evidence"]["gpus"], serde_json::json!([]));
}

#[cfg(target_os = "linux")]
#[test]
fn teardown_without_a_driver_or_a_server_cannot_tell() {
    if nvidia_driver_present() {
        crate::common::skipped("this machine has an NVIDIA driver");
        return;
    }
    let o = inferlint_alone(&["teardown"]);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("no server processes found (vLLM, SGLang or TensorRT-LLM)\n[ T2] ????  no NVIDIA driver found ("),
        "{out}"
    );

    let o = inferlint_alone(&["teardown", "--dry-run", "--engine", "sglang"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "no server processes found (SGLang)\n");
}

#[cfg(target_os = "linux")]
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn gpu_inspect_shows_the_recorded_h200_as_the_tutorial_does() {
    let dir = recorded();
    let idle = dir.join("gpu-h200/nvml-idle.json");
    let o = inferlint_env(
        &here(),
        &["gpu-inspect"],
        &[SCOPED, ("INFERLINT_NVML_READINGS", idle.to_str().unwrap())],
    );
    no_panic(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "GPU 0   NVIDIA H200\n        Hopper, compute capability 9.0, driver 580.159.04\n        memory: 143,771 MiB total, 0 MiB used, 143,156 MiB free\n[ T2] PASS  2 consecutive clear readings\n"
    );
}

#[cfg(target_os = "linux")]
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn gpu_inspect_is_a_gate_on_a_held_card() {
    let dir = recorded();
    let loaded = dir.join("gpu-h200/nvml-loaded.json");
    let env = [
        SCOPED,
        ("INFERLINT_NVML_READINGS", loaded.to_str().unwrap()),
    ];
    let o = inferlint_env(&here(), &["gpu-inspect", "--timeout", "0"], &env);
    no_panic(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "`gpu-inspect || exit 1` stops a script"
    );
    let out = stdout(&o);
    assert!(out.contains("        memory: 143,771 MiB total, 21,099 MiB used, 122,057 MiB free\n"));
    assert!(out.contains(
        "[ T2] TRIPWIRE-FAILED  card not clear, so a server started now would get less memory: not clear after 0s: last reading 21099 MiB used, 0 server processes alive\n"
    ), "{out}");
    // A higher limit lets the same card through.
    let o = inferlint_env(
        &here(),
        &[
            "gpu-inspect",
            "--timeout",
            "0",
            "--max-used-mib",
            "30000",
            "--json",
        ],
        &env,
    );
    assert_eq!(o.status.code(), Some(0));
    let results = json_results(&o);
    assert_eq!(results[0]["message"], "1 clear reading");
    assert_eq!(results[0]["evidence"]["gpus"][0]["memory_used_mib"], 21_099);
    assert_eq!(results[0]["evidence"]["gpus"][0]["family"], "Hopper");
}

#[test]
fn unusable_settings_and_files_are_usage_errors() {
    let env = [
        SCOPED,
        ("INFERLINT_NVML_READINGS", "/nonexistent/readings.json"),
    ];
    let o = inferlint_env(&here(), &["gpu-inspect"], &env);
    no_panic(&o);
    assert_eq!(o.status.code(), Some(UNUSABLE_INPUT));
    assert!(
        stderr(&o).starts_with(
            "inferlint: cannot read recorded GPU readings from /nonexistent/readings.json: "
        ),
        "{}",
        stderr(&o)
    );
    for args in [
        &["gpu-inspect", "--timeout=-1"][..],
        &["teardown", "--timeout", "nan"],
        &["teardown", "--dry-run", "--consecutive", "0"],
    ] {
        let o = inferlint_env(&here(), args, &[SCOPED]);
        no_panic(&o);
        assert_eq!(o.status.code(), Some(USAGE), "{args:?}");
        assert!(stdout(&o).is_empty(), "{args:?}");
    }
}

#[cfg(target_os = "linux")]
mod process_tree {
    //! A real tree of look-alike server processes, built by the test in a session of its
    //! own: vLLM fronts with a prctl-renamed engine and an argv-renamed worker, an engine
    //! orphaned by SIGKILL to its front, SGLang with renamed workers, TensorRT-LLM started
    //! as a module with an MPI-like daemon and worker, and bystanders that only mention
    //! the servers. The commands run from the test's own `bash -c` one-liner, which
    //! mentions `vllm serve` too.

    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use inferlint_gpu::procs::{read_process, read_process_table, send_signal, StopSignal};
    use serde_json::Value;

    const FAKE_PY: &str = r#"
import ctypes, os, subprocess, sys, time

PY = sys.executable
READY = os.environ["FAKE_READY"]

def ready(role, pid=None):
    path = os.path.join(READY, role)
    with open(path + ".tmp", "w") as f:
        f.write(str(pid or os.getpid()))
    os.rename(path + ".tmp", path)

def hold():
    while True:
        time.sleep(600)

def renamed_child(role, title):
    # A child that renames its comm with prctl, as the stand-in engine does.
    return subprocess.Popen([PY, "-c", "import fake; fake.renamed_main()", role, title])

def renamed_main():
    role, title = sys.argv[1], sys.argv[2]
    ctypes.CDLL(None).prctl(15, title.encode(), 0, 0, 0)
    ready(role)
    hold()

def exec_a_child(role, title):
    # A child whose argv[0] is rewritten (as setproctitle does), its comm left alone.
    p = subprocess.Popen(["bash", "-c", 'exec -a "$0" sleep 600', title])
    for _ in range(200):
        try:
            with open("/proc/%d/cmdline" % p.pid, "rb") as f:
                if f.read().startswith(title.encode() + b"\0"):
                    break
        except OSError:
            pass
        time.sleep(0.02)
    ready(role, p.pid)
    return p
"#;

    const FAKE_VLLM: &str = r#"
import sys, fake
if sys.argv[1:2] == ["serve"]:
    tag = sys.argv[2]
    fake.renamed_child(tag + ".engine", "VLLM::EngineCore")
    if "--tp2" in sys.argv:
        fake.exec_a_child(tag + ".worker", "VLLM::Worker_TP1")
    fake.ready(tag + ".front")
else:
    fake.ready("bench")
fake.hold()
"#;

    const FAKE_SGLANG: &str = r#"
import fake
fake.renamed_child("sglang.scheduler", "sglang::scheduler")
fake.renamed_child("sglang.detokenizer", "sglang::detokenizer")
fake.ready("sglang.front")
fake.hold()
"#;

    const FAKE_TRTLLM: &str = r#"
import subprocess, sys, fake
fake.exec_a_child("trt.prte", "prte")
subprocess.Popen([sys.executable, "-m", "mpi4py.futures.server"])
fake.ready("trt.front")
fake.hold()
"#;

    const FAKE_MPI_WORKER: &str = "import fake\nfake.ready('trt.mpi')\nfake.hold()\n";
    const PLOT: &str = "import fake\nfake.ready('plot')\nfake.hold()\n";

    /// Every role that writes its PID, and how many there are.
    const ROLES: usize = 16;

    /// The one-liner. Its first words mention `vllm serve`, as a clean-up one-liner does.
    const SCENARIO: &str = r#": "stop what vllm serve left behind"
set -u
cd "$FAKE_DIR"
"$FAKE_PYTHON" bin/vllm serve a --tp2 &
"$FAKE_PYTHON" bin/vllm serve b &
"$FAKE_PYTHON" -m sglang.launch_server --model-path m &
"$FAKE_PYTHON" -m tensorrt_llm.commands.serve m &
"$FAKE_PYTHON" bin/vllm bench serve --model m &
"$FAKE_PYTHON" plot.py "runs/vllm serve.csv" &
tail -f "vllm serve.log" &
echo $! > ready/tail
sleep 600 | grep "vllm serve" &
echo $! > ready/grep
echo $$ > ready/shell
for i in $(seq 600); do
  [ "$(ls ready | grep -vc tmp)" -ge 16 ] && break
  sleep 0.05
done
# Orphan b's engine: SIGKILL to its front, as in the H200 recording.
kill -9 "$(cat ready/b.front)"
for i in $(seq 200); do
  [ "$(cut -d' ' -f4 "/proc/$(cat ready/b.engine)/stat")" != "$(cat ready/b.front)" ] && break
  sleep 0.05
done
"$INFERLINT" teardown --dry-run --json > dry.json 2> dry.err; echo $? > dry.rc
"$INFERLINT" teardown --dry-run --engine vllm > dry-vllm.txt 2> dry-vllm.err
"$INFERLINT" teardown --dry-run --engine vllm --json > dry-vllm.json 2>> dry-vllm.err
"$INFERLINT" teardown --json > real.json 2> real.err; echo $? > real.rc
echo survived > survived
sleep 600
"#;

    /// Starts `bash -c SCENARIO` as the leader of a new session that reaps its orphans
    /// (so the orphaned engine does not end as a zombie of PID 1), and on every path out
    /// of the test kills every process of that session, by PID and start time.
    struct Session {
        leader: Child,
        sid: u32,
    }

    impl Session {
        fn start(python: &str, dir: &Path) -> Session {
            let launcher = "import ctypes, os, sys\n\
                            os.setsid()\n\
                            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)\n\
                            os.execvp('bash', ['bash', '-c', sys.argv[1]])";
            let leader = Command::new(python)
                .args(["-c", launcher, SCENARIO])
                .env("FAKE_DIR", dir)
                .env("FAKE_PYTHON", python)
                .env("FAKE_READY", dir.join("ready"))
                .env("PYTHONPATH", dir.join("py"))
                .env("INFERLINT", env!("CARGO_BIN_EXE_inferlint"))
                .env("INFERLINT_SESSION_ONLY", "1")
                .env_remove("INFERLINT_ENGINE")
                .env_remove("INFERLINT_NVML_READINGS")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("python3 starts");
            let sid = leader.id();
            Session { leader, sid }
        }

        /// The live processes of the session other than its leader.
        fn members(&self) -> Vec<(u32, u64)> {
            read_process_table()
                .map(|t| {
                    t.iter()
                        .filter(|p| p.sid == self.sid && p.pid != self.sid && p.is_alive())
                        .map(|p| (p.pid, p.start_time))
                        .collect()
                })
                .unwrap_or_default()
        }
    }

    impl Drop for Session {
        fn drop(&mut self) {
            // The members first, so that the leader, still alive, reaps them.
            for _ in 0..50 {
                let members = self.members();
                if members.is_empty() {
                    break;
                }
                for (pid, start_time) in members {
                    let _ = send_signal(pid, start_time, StopSignal::Kill);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = self.leader.kill();
            let _ = self.leader.wait();
        }
    }

    fn write(path: PathBuf, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    fn json(dir: &Path, name: &str) -> Value {
        let text = read(dir, name);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"))
    }

    fn pids_of(list: &Value) -> BTreeSet<u32> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let pid = t.get("pid").unwrap_or(t);
                u32::try_from(pid.as_u64().unwrap()).unwrap()
            })
            .collect()
    }

    /// Whether the process is alive (a zombie waiting for its parent is not).
    fn alive(pid: u32) -> bool {
        read_process(pid).is_some_and(|p| p.is_alive())
    }

    #[test]
    #[cfg_attr(not(python3), ignore = "needs python3 on PATH")]
    fn teardown_stops_every_server_and_no_bystander_and_its_shell_survives() {
        let python = crate::gpu::python();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        write(dir.join("py/fake.py"), FAKE_PY);
        write(dir.join("bin/vllm"), FAKE_VLLM);
        write(dir.join("py/sglang/__init__.py"), "");
        write(dir.join("py/sglang/launch_server.py"), FAKE_SGLANG);
        write(dir.join("py/tensorrt_llm/__init__.py"), "");
        write(dir.join("py/tensorrt_llm/commands/__init__.py"), "");
        write(dir.join("py/tensorrt_llm/commands/serve.py"), FAKE_TRTLLM);
        write(dir.join("py/mpi4py/__init__.py"), "");
        write(dir.join("py/mpi4py/futures/__init__.py"), "");
        write(dir.join("py/mpi4py/futures/server.py"), FAKE_MPI_WORKER);
        write(dir.join("plot.py"), PLOT);
        write(dir.join("vllm serve.log"), "");
        std::fs::create_dir_all(dir.join("ready")).unwrap();

        let session = Session::start(&python, dir);
        let deadline = Instant::now() + Duration::from_secs(90);
        while !dir.join("survived").exists() {
            assert!(
                Instant::now() < deadline,
                "the scenario did not finish; ready: {:?}",
                std::fs::read_dir(dir.join("ready")).map(|d| d.count())
            );
            std::thread::sleep(Duration::from_millis(100));
        }

        let pid: BTreeMap<String, u32> = std::fs::read_dir(dir.join("ready"))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| !e.file_name().to_string_lossy().ends_with(".tmp"))
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let text = std::fs::read_to_string(e.path()).unwrap();
                (name, text.trim().parse().unwrap())
            })
            .collect();
        assert_eq!(pid.len(), ROLES, "{pid:?}");
        let set = |roles: &[&str]| -> BTreeSet<u32> { roles.iter().map(|r| pid[*r]).collect() };
        let vllm_servers = set(&["a.front", "a.engine", "a.worker", "b.engine"]);
        let other_servers = set(&[
            "sglang.front",
            "sglang.scheduler",
            "sglang.detokenizer",
            "trt.front",
            "trt.prte",
            "trt.mpi",
        ]);
        let servers: BTreeSet<u32> = vllm_servers.union(&other_servers).copied().collect();
        let bystanders = set(&["bench", "plot", "tail", "grep"]);

        // The dry run lists exactly the servers.
        assert_eq!(read(dir, "dry.rc").trim(), "0", "{}", read(dir, "dry.err"));
        let dry = json(dir, "dry.json");
        assert_eq!(pids_of(&dry["targets"]), servers);
        assert_eq!(dry["results"], serde_json::json!([]));
        let why = |list: &Value, p: u32| -> String {
            list.as_array()
                .unwrap()
                .iter()
                .find(|t| t["pid"] == p)
                .map(|t| t["why"].as_str().unwrap().to_owned())
                .unwrap()
        };
        assert_eq!(
            why(&dry["targets"], pid["b.engine"]),
            "process name VLLM::EngineCor"
        );
        assert_eq!(
            why(&dry["targets"], pid["a.worker"]),
            "named VLLM::Worker_TP1"
        );
        assert_eq!(
            why(&dry["targets"], pid["trt.prte"]),
            format!("started by TensorRT-LLM server pid {}", pid["trt.front"])
        );
        assert!(why(&dry["targets"], pid["trt.front"]).ends_with(" -m tensorrt_llm.commands.serve"));

        // With --engine vllm: only vLLM's, and what pkill -f 'vllm serve' would have done.
        let shell = pid["shell"];
        let dry_vllm = json(dir, "dry-vllm.json");
        assert_eq!(pids_of(&dry_vllm["targets"]), vllm_servers);
        assert_eq!(pids_of(&dry_vllm["left_alone"]), other_servers);
        assert_eq!(dry_vllm["pkill"]["pattern"], "vllm serve");
        assert_eq!(
            pids_of(&dry_vllm["pkill"]["would_miss"]),
            set(&["a.engine", "a.worker", "b.engine"])
        );
        assert_eq!(
            pids_of(&dry_vllm["pkill"]["would_wrongly_hit"]),
            set(&["shell", "tail", "plot", "grep"]),
            "pkill would hit the one-liner's own shell"
        );
        let text = read(dir, "dry-vllm.txt");
        let expected_tail =
            "left alone (--engine vllm): 6 processes of SGLang and TensorRT-LLM servers\n\
                             (pkill -f 'vllm serve' would miss 3 and wrongly hit 4)\n";
        assert!(text.ends_with(expected_tail), "{text}");
        assert!(
            text.contains(&format!(
                "target  pid={:<8} VLLM::EngineCor\n",
                pid["b.engine"]
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "target  pid={:<8} VLLM::Worker_TP1 600\n",
                pid["a.worker"]
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "target  pid={:<8} {python} bin/vllm serve a --tp2\n",
                pid["a.front"]
            )),
            "{text}"
        );

        // The real run stops all of them and nothing else; the shell goes on.
        let real = json(dir, "real.json");
        assert_eq!(
            pids_of(&real["targets"]),
            servers,
            "the real run agrees with the dry run"
        );
        let t2 = &real["results"][0];
        assert_eq!(t2["tripwire"], "T2");
        assert_eq!(pids_of(&t2["evidence"]["signalled"]), servers);
        assert_eq!(t2["evidence"]["killed"], serde_json::json!([]));
        if !super::nvidia_driver_present() {
            assert_eq!(t2["status"], "unknown", "{t2}");
            assert!(t2["message"]
                .as_str()
                .unwrap()
                .starts_with("no NVIDIA driver found ("));
            assert_eq!(read(dir, "real.rc").trim(), "2");
        }
        for p in &servers {
            assert!(!alive(*p), "server pid {p} still alive");
        }
        for p in bystanders.iter().chain([&shell]) {
            assert!(alive(*p), "bystander pid {p} was hit");
        }
        assert_eq!(read(dir, "survived").trim(), "survived");
        drop(session);
        for p in bystanders.iter().chain([&shell]) {
            assert!(!alive(*p), "the test left pid {p} behind");
        }
    }
}

/// The real Python interpreter (not a pyenv shim script). The tests that need it are
/// ignored unless the build found `python3` or `CI` was set (build.rs: `cfg(python3)`);
/// one that runs without it fails here.
#[cfg(target_os = "linux")]
fn python() -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .expect("no python3 that runs on PATH: the process tests build their tree with it");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
