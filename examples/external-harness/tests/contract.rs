//! The contract a harness codes against, from outside the workspace: a recorded run
//! folder gives the verdicts `inferlint report --json` gives; raw `/metrics` text and the
//! harness's own counts make a run; the simulated server is recorded live inside the
//! harness's own runtime; garbage is a typed error.

use std::path::{Path, PathBuf};

use inferlint::sim::{self, LoadConfig, ServerConfig};
use inferlint::{ClientSummary, Engine, ErrorKind, Outcome, Run, Status, Tripwire};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every run folder the repository ships, and the recordings when `INFERLINT_RECORDED`
/// names them (in CI, `CI` set, it must).
fn run_folders() -> Vec<PathBuf> {
    let mut roots = vec![
        repository().join("fixtures/sim"),
        repository().join("fixtures/variants"),
    ];
    match std::env::var_os("INFERLINT_RECORDED") {
        Some(dir) => roots.push(PathBuf::from(dir)),
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "INFERLINT_RECORDED must point at the recordings in CI"
            );
            skipped("the recordings (INFERLINT_RECORDED is not set); fixtures only")
        }
    }
    let mut runs = Vec::new();
    while let Some(dir) = roots.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.join("boot.log").exists() || path.join("run.series.jsonl").exists() {
                    runs.push(path.clone());
                }
                roots.push(path);
            }
        }
    }
    runs.sort();
    runs
}

/// A recorded run folder gives the verdicts `inferlint report --json` gives, when the
/// command is at hand (`INFERLINT_BIN`, which CI sets); without it, the library's own
/// JSON must still read as the contract's array.
#[test]
fn a_run_folder_gives_the_verdicts_report_json_gives() {
    let bin = std::env::var_os("INFERLINT_BIN").map(PathBuf::from);
    if bin.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "INFERLINT_BIN must name the inferlint binary in CI"
        );
        skipped("the comparison with report --json (INFERLINT_BIN is not set)");
    }
    let scratch = std::env::temp_dir().join(format!("external-harness-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let folders = run_folders();
    assert!(folders.len() >= 10, "{folders:?}");
    for dir in &folders {
        let report = Run::from_dir(dir).map(|run| run.check());
        let Some(bin) = &bin else {
            if let Ok(report) = &report {
                let array: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
                assert!(
                    array.as_array().is_some_and(|a| !a.is_empty()),
                    "{}",
                    dir.display()
                );
            }
            continue;
        };
        let out = scratch.join("report.html");
        let cli = std::process::Command::new(bin)
            .args(["report", "--json", "-o"])
            .arg(&out)
            .arg(dir)
            .env_remove("INFERLINT_ENGINE")
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&out);
        match report {
            Ok(report) => {
                assert_eq!(
                    report.to_json(),
                    String::from_utf8_lossy(&cli.stdout),
                    "{}",
                    dir.display()
                );
                let code = match report.outcome() {
                    Outcome::Passed => 0,
                    Outcome::TripwireFailed => 1,
                    _ => 2,
                };
                // The offline use gives the same outcome.
                assert_eq!(
                    external_harness::check_folder(dir).unwrap(),
                    report.outcome()
                );
                assert_eq!(cli.status.code(), Some(code), "{}", dir.display());
            }
            Err(error) => {
                assert_eq!(cli.status.code(), Some(2), "{}: {error}", dir.display());
                assert!(String::from_utf8_lossy(&cli.stderr).contains(&error.to_string()));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Raw `/metrics` text and the harness's own counts make a run; its report serialises.
#[test]
fn raw_metrics_and_own_counts_make_a_run() {
    let metrics = |finished: u64, preempted: u64| {
        format!(
            "vllm:request_success_total{{finished_reason=\"length\"}} {finished}\n\
             vllm:generation_tokens_total {}\n\
             vllm:prompt_tokens_total {}\n\
             vllm:num_preemptions_total {preempted}\n",
            finished * 100,
            finished * 10
        )
    };
    let report = Run::builder()
        .engine(Engine::Vllm)
        .before_metrics_at(&metrics(0, 0), 1_700_000_000.0)
        .unwrap()
        .after_metrics_at(&metrics(8, 3), 1_700_000_010.0)
        .unwrap()
        .client(ClientSummary::new(8, 0, 800, 9.5))
        .requested(8)
        .build()
        .unwrap()
        .check();
    let t1 = report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T1)
        .unwrap();
    assert_eq!(t1.status(), Status::Fail);
    assert_eq!(t1.evidence_as::<f64>("preemptions"), Some(3.0));
    assert_eq!(format!("{}", t1.tripwire()), "T1");
    assert_eq!(format!("{:?}", t1.status()), "Fail");
    assert!(!t1.message().is_empty());
    let t8 = report
        .not_checked()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T8)
        .unwrap();
    assert_eq!(t8.status(), Status::NotChecked);
    assert!(report.insights().iter().all(|i| !i.title().is_empty()));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["outcome"], "tripwire_failed");
}

/// The simulated server, recorded live inside this test's own tokio runtime while the
/// simulated load runs: every request accounted for, and an HTML report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_recording_inside_the_harness_runtime() {
    let server = sim::spawn(ServerConfig {
        speed: 10.0,
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let load = LoadConfig {
        requests: 8,
        concurrency: 4,
        prompt_tokens: 32,
        output_tokens: 100,
        ..LoadConfig::default()
    };
    let checked = external_harness::benchmark(&server.base_url, &server.boot_log(), load)
        .await
        .unwrap();
    assert_eq!(checked.client.completed, 8);
    assert_eq!((checked.health.failed(), checked.health.restarts()), (0, 0));
    assert!(checked.health.samples() >= 2, "{:?}", checked.health);
    let status = |t| {
        checked
            .report
            .results()
            .iter()
            .find(|r| r.tripwire() == t)
            .map(|r| r.status())
    };
    assert_eq!(status(Tripwire::T15), Some(Status::Pass));
    assert_eq!(status(Tripwire::T18), Some(Status::Pass));
    assert_eq!(status(Tripwire::T12), Some(Status::Pass));
    assert!(status(Tripwire::T8).is_some());
    // The blocking face refuses to run here, inside a runtime, with an error.
    let refused = inferlint::live::blocking::record(
        &server.base_url,
        &inferlint::live::RecordOptions::default(),
        async {},
    )
    .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InsideRuntime);
}

/// A server that dies on the load's seventh request (its test request and four timed
/// ones, two at a time, come back whole before it): the harness gets its report all the
/// same, the before reading and the samples checked, and the checks that need the
/// after reading say Can't tell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_run_is_checked_for_what_it_left() {
    let server = sim::spawn(ServerConfig {
        speed: 10.0,
        faults: sim::Faults {
            die_on_request: Some(7),
            ..sim::Faults::default()
        },
        ..ServerConfig::new(Engine::Vllm)
    })
    .unwrap();
    let load = LoadConfig {
        requests: 8,
        concurrency: 2,
        prompt_tokens: 32,
        output_tokens: 100,
        ..LoadConfig::default()
    };
    let checked = external_harness::benchmark(&server.base_url, &server.boot_log(), load)
        .await
        .unwrap();
    assert!(checked.health.samples() >= 1);
    assert!(checked.client.failed >= 1, "{:?}", checked.client);
    let t1 = checked
        .report
        .results()
        .iter()
        .find(|r| r.tripwire() == Tripwire::T1)
        .unwrap_or_else(|| panic!("{}", checked.report.to_text()));
    assert_eq!(t1.status(), Status::Unknown);
    assert!(t1.message().contains("after reading"), "{}", t1.message());
    // The boot log and the series are judged.
    let judged = |t| checked.report.results().iter().any(|r| r.tripwire() == t);
    assert!(judged(Tripwire::T12) && judged(Tripwire::T8));
}

/// The harness's own data: the `/metrics` text it read before, during and after, a GPU
/// reading with each sample, and one record per request. 8 requests of 1000 tokens
/// balance the server's 8 requests and 8000 tokens (T15 passes); the GPU readings are
/// checked (T21 is a verdict) and the records' first tokens give the time to first
/// token.
#[test]
fn the_harness_own_data_makes_a_run() {
    let metrics = |finished: u64, running: u64| {
        format!(
            "vllm:request_success_total{{finished_reason=\"length\"}} {finished}\n\
             vllm:generation_tokens_total {}\n\
             vllm:prompt_tokens_total {}\n\
             vllm:num_preemptions_total 0\n\
             vllm:num_requests_running {running}\n\
             vllm:num_requests_waiting 0\n\
             vllm:kv_cache_usage_perc 0.4\n",
            finished * 1000,
            finished * 50
        )
    };
    let t0 = 1_700_000_000.0;
    let mut readings = vec![(metrics(0, 0), t0)];
    readings.extend((1..=10).map(|i| (metrics(0, 8), t0 + i as f64)));
    readings.push((metrics(8, 0), t0 + 12.0));
    let requests: Vec<inferlint::RequestRecord> = (0..8)
        .map(|i| {
            let start = t0 + 0.5 + i as f64 * 0.01;
            inferlint::RequestRecord::new(start, start + 10.0)
                .first_token(start + 0.1)
                .tokens(50, 1000)
        })
        .collect();
    let gpu = inferlint::GpuReading::default()
        .util(95.0)
        .other_process(0.0, 0.0);
    let report = external_harness::check_own_data(&readings, gpu, &requests).unwrap();
    let status = |t| {
        report
            .results()
            .iter()
            .find(|r| r.tripwire() == t)
            .map(|r| r.status())
    };
    assert_eq!(
        status(Tripwire::T15),
        Some(Status::Pass),
        "{}",
        report.to_text()
    );
    assert_eq!(
        status(Tripwire::T21),
        Some(Status::Pass),
        "{}",
        report.to_text()
    );
    assert_eq!(
        status(Tripwire::T8),
        Some(Status::Pass),
        "{}",
        report.to_text()
    );
}

/// Each of the three uses in `src/lib.rs` is at most 15 lines, counted between its
/// `use:` markers (its `pub fn` line to its closing brace).
#[test]
fn each_use_is_at_most_fifteen_lines() {
    let source = include_str!("../src/lib.rs");
    let mut counts = Vec::new();
    for name in ["offline check", "live record-and-check", "own data"] {
        let begins = format!("// use: {name} begins\n");
        let ends = format!("// use: {name} ends");
        let start = source.find(&begins).unwrap() + begins.len();
        let end = source.find(&ends).unwrap();
        let lines = source[start..end].lines().count();
        assert!(lines <= 15, "{name}: {lines} lines");
        counts.push(format!("{name} {lines}"));
    }
    // The counts the crate's docs state.
    let docs = ["(7 lines)", "(14 lines)", "(14 lines)"];
    for (count, doc) in counts.iter().zip(docs) {
        let n = count.rsplit(' ').next().unwrap();
        assert_eq!(
            doc,
            format!("({n} lines)"),
            "{count}: src/lib.rs's docs say {doc}"
        );
        assert!(source.contains(doc));
    }
    // The facade's docs state the same counts.
    let stated = format!(
        "{}, {} and {} lines",
        counts[0].rsplit(' ').next().unwrap(),
        counts[1].rsplit(' ').next().unwrap(),
        counts[2].rsplit(' ').next().unwrap()
    );
    let root = std::fs::read_to_string(repository().join("crates/inferlint/src/lib.rs")).unwrap();
    let library = std::fs::read_to_string(repository().join("docs/library.md")).unwrap();
    for (name, text) in [("the crate root", root), ("docs/library.md", library)] {
        let flat = text
            .replace("//!", "")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert!(flat.contains(&stated), "{name} does not say {stated:?}");
    }
}

/// Garbage is a typed error that names its input, never a panic.
#[test]
fn garbage_is_a_typed_error() {
    let error = Run::builder()
        .before_metrics("\u{1b}[31mnot metrics")
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Invalid);
    assert_eq!(error.input(), Some("the before metrics"));
    let as_std: &dyn std::error::Error = &error;
    assert!(as_std
        .to_string()
        .starts_with("cannot read the before metrics"));
    let missing = Run::from_dir("/nonexistent/run").unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NoRun);
    assert_eq!(missing.path(), Some(Path::new("/nonexistent/run")));
    let nowhere = inferlint::live::blocking::record(
        "ftp://nowhere",
        &inferlint::live::RecordOptions::default(),
        async {},
    )
    .unwrap_err();
    assert_eq!(nowhere.kind(), ErrorKind::Server);
    assert_eq!(nowhere.input(), Some("ftp://nowhere"));
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
