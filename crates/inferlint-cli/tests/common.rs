use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The exit statuses of the README's table, by name, so that each expectation says which
/// row of the table it is: a tripwire that could not decide or another engine's input,
/// a wrong command line (BSD's EX_USAGE), an input that cannot be used (EX_DATAERR), an
/// output the system would not let be written (EX_IOERR).
pub const UNDECIDED: i32 = 2;
pub const USAGE: i32 = 64;
pub const UNUSABLE_INPUT: i32 = 65;
pub const CANNOT_WRITE: i32 = 74;

/// The recordings folder (the test kit's rule: a missing one fails, naming it), made
/// canonical, so that paths the command prints read the same from any folder.
pub fn recorded() -> PathBuf {
    let dir = inferlint_testkit::recorded();
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// The expected-verdicts folder beside the recordings (`../spec/expected`).
pub fn expected_dir(recorded: &Path) -> PathBuf {
    recorded.join("../spec/expected")
}

/// The repository's own fixtures folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Runs `inferlint` with a pinned environment (no engine named, no colour, fixed width).
pub fn inferlint(cwd: &Path, args: &[&str]) -> Output {
    inferlint_env(cwd, args, &[])
}

pub fn inferlint_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inferlint"));
    cmd.current_dir(cwd)
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("COLUMNS", "88")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the inferlint binary runs")
}

/// Starts `inferlint` in the background with the pinned environment, its output piped.
pub fn spawn_inferlint(cwd: &Path, args: &[&str], stdin: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_inferlint"))
        .current_dir(cwd)
        .args(args)
        .env_remove("INFERLINT_ENGINE")
        .env("COLUMNS", "88")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the inferlint binary runs")
}

/// Waits for a command at most `limit`: one that blocks (on a pipe, in a loop) is killed
/// and fails the test instead of hanging it.
pub fn finish_within(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child
        .try_wait()
        .expect("the child can be waited for")
        .is_none()
    {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("the output can be read")
}

/// The run folder `inferlint demo` writes, as `cargo xtask regen-fixtures` keeps it in
/// fixtures/sim.
pub fn demo_folder() -> PathBuf {
    fixtures().join("sim/vllm-hybrid")
}

/// A copy of the demo run folder at `to`, without a report.
pub fn demo_copy(to: &Path) {
    copy_tree(&demo_folder(), to);
    let _ = std::fs::remove_file(to.join("report.html"));
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The `--json` results of a run.
pub fn json_results(o: &Output) -> Vec<Value> {
    let text = stdout(o);
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(a)) => a,
        _ => panic!(
            "not a JSON array on stdout:\n{text}\nstderr:\n{}",
            stderr(o)
        ),
    }
}

/// Asserts the process did not panic and printed no backtrace.
pub fn no_panic(o: &Output) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(!err.contains("RUST_BACKTRACE"), "panic: {err}");
}

/// Copies a file or folder of the recordings into a temporary folder (CI's copy of the
/// recordings is read-only, and mutation tests edit files).
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
        let mut perms = std::fs::metadata(to).unwrap().permissions();
        #[expect(
            clippy::permissions_set_readonly_false,
            reason = "test copies must be editable"
        )]
        perms.set_readonly(false);
        std::fs::set_permissions(to, perms).unwrap();
    }
}

/// A copy of a run folder (without an earlier report) whose boot log ends with one more
/// blank line: the same setup and figures, but not the run's files byte for byte, so
/// `compare` takes it as a run of its own (an exact copy is one run given twice).
pub fn edited_copy(from: &Path, to: &Path) -> PathBuf {
    copy_tree(from, to);
    let _ = std::fs::remove_file(to.join("report.html"));
    let log = to.join("boot.log");
    let mut text = std::fs::read(&log).unwrap();
    text.push(b'\n');
    std::fs::write(&log, text).unwrap();
    to.to_owned()
}

/// Every recorded run folder with a boot log, snapshots and a series.
pub const RECORDED_RUNS: &[&str] = &[
    "vllm-0.28/live",
    "vllm-0.28/xray",
    "vllm-0.30/live",
    "sglang-0.5/live",
    "sglang-0.5/capped",
    "sglang-0.5/qwen3-8b",
    "trtllm-1.3/qwen3-8b",
    "trtllm-1.3/no-iter-stats",
];

/// A copy of one recorded run folder in a temporary folder, editable.
pub fn copy_run(run: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let to = tmp.path().join("run");
    copy_tree(&dir.join(run), &to);
    (tmp, to)
}

/// Says that the running test was skipped and why, past the test harness's capture of
/// `eprintln!` (which shows a passing test's output to no one): a test that returns early
/// would otherwise read as a silent pass. The line names the test.
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("a test").to_owned();
    // One write: stderr is unbuffered, and the tests beside this one print too.
    let line = format!("skipped: {test}: {why}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A port nobody listens on right now, and never one handed to another test of this
/// run: the tests run at once, and each one's port marks the processes it owns.
///
/// Taken below the kernel's ephemeral range: a port bound and let go inside it is free
/// until anyone binds port 0 (an xray's span receiver or KV subscriber in a test beside
/// this one), and the kernel may hand them the very port this test's server is about to
/// bind. xray then rightly finds something already answering and starts nothing (T13).
/// Below the range only a port named on purpose is bound, and this process names them
/// once each.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    // The range's low end (32768 by the kernel's default), and a window of 8,000 ports
    // under it, entered at a place of this process's own.
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768)
        .max(10_000);
    let window = 8_000u16.min(low - 2_000);
    let start = (std::process::id() % u32::from(window)) as u16;
    (0..window)
        .map(|i| low - window + (start + i) % window)
        .find(|port| {
            !given.contains(port) && std::net::TcpListener::bind(("127.0.0.1", *port)).is_ok()
        })
        .inspect(|port| given.push(*port))
        .expect("a free port below the ephemeral range")
}

/// What `inferlint --json --junit J report DIR -o H` gave for one folder: its output and
/// the JUnit file it wrote (`None` when it wrote none).
pub struct ReportOutput {
    pub output: Output,
    pub junit: Option<String>,
}

/// `inferlint --json --junit J report DIR -o H` of a folder, run once per test process
/// (J and H in a temporary folder of its own, so no fixture gets a report.html): several
/// tests hold the same invocation to their own promises (the library's results, the
/// schema, the JUnit cases), and the command's output for a folder does not change
/// between them. A test that asks while another runs it waits for that run.
pub fn report_json_junit(dir: &Path) -> std::sync::Arc<ReportOutput> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    type Runs = Mutex<HashMap<PathBuf, Arc<OnceLock<Arc<ReportOutput>>>>>;
    static RUNS: OnceLock<Runs> = OnceLock::new();
    let slot = RUNS
        .get_or_init(Runs::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(dir.to_owned())
        .or_default()
        .clone();
    slot.get_or_init(|| {
        let scratch = tempfile::tempdir().unwrap();
        let (junit, html) = (
            scratch.path().join("junit.xml"),
            scratch.path().join("r.html"),
        );
        let output = inferlint(
            scratch.path(),
            &[
                "--json",
                "--junit",
                junit.to_str().unwrap(),
                "report",
                dir.to_str().unwrap(),
                "-o",
                html.to_str().unwrap(),
            ],
        );
        let junit = std::fs::read_to_string(&junit).ok();
        Arc::new(ReportOutput { output, junit })
    })
    .clone()
}

/// `inferlint::Run::from_dir` of a folder, read once per test process: the tests that
/// hold every folder's run to a promise of their own (the command's results, one figure
/// across the outputs, the service level's lines) read the same folder the same way, and
/// each checks the run itself (`check` takes the run as read).
pub fn run_of(dir: &Path) -> std::sync::Arc<Result<inferlint::Run, inferlint::Error>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, PoisonError};
    type Read = Arc<Result<inferlint::Run, inferlint::Error>>;
    type Runs = Mutex<HashMap<PathBuf, Arc<OnceLock<Read>>>>;
    static RUNS: OnceLock<Runs> = OnceLock::new();
    let slot = RUNS
        .get_or_init(Runs::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(dir.to_owned())
        .or_default()
        .clone();
    slot.get_or_init(|| Arc::new(inferlint::Run::from_dir(dir)))
        .clone()
}
