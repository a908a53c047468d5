//! A load tool's result file takes memory in proportion to what the account keeps, not
//! to the file: each tool's fixture grown to 16 MB is read in a process of its own (this
//! test binary run again for that one read), whose peak resident memory (`VmHWM`) above
//! what it held before the read is compared with a bound argued from what is kept:
//! - the account itself, counted by capacity (its records, their error texts, its
//!   inter-token gaps), twice: a vector that grows moves into one twice as large while the
//!   old one is still live, and vLLM's per-request lists are held as compact columns until
//!   the last of them is read and they are zipped into records;
//! - three times the largest single record: one held as it is read, one as a tree of
//!   values, one as what the reader makes of it;
//! - 8 MiB for the rest: the read buffer, the summary's fields, a record's temporaries,
//!   the allocator's own pages.
//!
//! The whole file read into a tree took 10 to 40 times the file.

#![cfg(target_os = "linux")]
// The helpers are the test's: a failure in them is the test's failure.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use inferlint_core::model::client::ClientAccount;
use inferlint_engines::loadtools;
use serde_json::Value;

/// Set in the process that does one read: the file it reads.
const CHILD: &str = "INFERLINT_MEMORY_TEST_READ";
const TEST: &str = "a_result_file_takes_memory_in_proportion_to_what_is_kept";

/// A `kB` line of this process's `/proc/self/status`, in bytes.
fn status_bytes(key: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no {key} in /proc/self/status"));
    let kib: usize = line
        .trim_start_matches(key)
        .trim_start_matches(':')
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib << 10
}

/// The one read of a child process: prints its peak above what was resident before, the
/// account's heap and its number of records.
fn child(path: &str) {
    let before = status_bytes("VmRSS");
    let account = loadtools::read_result(Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    let peak = status_bytes("VmHWM").saturating_sub(before);
    println!(
        "memory-read {peak} {} {}",
        account_bytes(&account),
        account.requests.len()
    );
}

/// Reads `path` in a process of its own: the peak, the account's heap, its records.
fn read_apart(path: &Path) -> (usize, usize, usize) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD, path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("memory-read ").map(|(_, r)| r))
        .unwrap_or_else(|| {
            panic!(
                "the read of {} said nothing: {stdout}{}",
                path.display(),
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let n: Vec<usize> = line
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    (n[0], n[1], n[2])
}

/// The heap the account holds, by capacity.
fn account_bytes(a: &ClientAccount) -> usize {
    let strings = |v: &[String]| v.iter().map(String::capacity).sum::<usize>();
    a.requests.capacity() * std::mem::size_of::<inferlint_core::model::client::ClientRequest>()
        + a.requests
            .iter()
            .map(|r| r.error.as_ref().map_or(0, |e| e.len()))
            .sum::<usize>()
        + a.inter_token_ms.capacity() * 4
        + a.failure_reasons
            .iter()
            .map(|r| r.reason.capacity() + std::mem::size_of_val(r))
            .sum::<usize>()
        + strings(&a.notes)
        + a.notes.capacity() * std::mem::size_of::<String>()
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/loadtools")
}

/// The size each grown file reaches.
const TARGET: usize = 16 << 20;

/// Copies a fixture folder into `into`.
fn copy_dir(from: &Path, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let to = into.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
}

/// A list cycled until its JSON reaches about `bytes`; with its largest entry's length.
fn grow(items: &[Value], bytes: usize) -> (Vec<Value>, usize) {
    let sizes: Vec<usize> = items
        .iter()
        .map(|v| serde_json::to_string(v).unwrap().len() + 2)
        .collect();
    let each = sizes.iter().sum::<usize>() / items.len();
    let n = bytes / each;
    let largest = sizes.into_iter().max().unwrap();
    (items.iter().cycle().take(n).cloned().collect(), largest)
}

/// How a tool's fixture is grown: the folder, the file grown in it, and how. Returns the
/// largest record's length in bytes.
type Grow = fn(&Path) -> usize;

fn json_at(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Writes a value as JSON, an object's smallest fields first: the tools write the fields
/// that tell them near the start, before their lists.
fn write_json(path: &Path, value: &Value) {
    let Some(object) = value.as_object() else {
        std::fs::write(path, serde_json::to_string(value).unwrap()).unwrap();
        return;
    };
    let mut fields: Vec<String> = object
        .iter()
        .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), v))
        .collect();
    fields.sort_by_key(String::len);
    std::fs::write(path, format!("{{{}}}", fields.join(", "))).unwrap();
}

fn grow_guidellm(path: &Path) -> usize {
    let mut report = json_at(path);
    let list = &mut report["benchmarks"][0]["requests"]["successful"];
    let (grown, largest) = grow(list.as_array().unwrap(), TARGET);
    *list = Value::Array(grown);
    write_json(path, &report);
    largest
}

fn grow_vllm(path: &Path) -> usize {
    let mut report = json_at(path);
    let object = report.as_object_mut().unwrap();
    let n = object["errors"].as_array().unwrap().len();
    let keys: Vec<String> = object
        .iter()
        .filter(|(_, v)| v.as_array().is_some_and(|a| a.len() == n))
        .map(|(k, _)| k.clone())
        .collect();
    // One record is the i-th entry of every list.
    let record = |object: &serde_json::Map<String, Value>, i: usize| -> usize {
        keys.iter()
            .map(|k| serde_json::to_string(&object[k][i]).unwrap().len() + 2)
            .sum()
    };
    let largest = (0..n).map(|i| record(object, i)).max().unwrap();
    let each = (0..n).map(|i| record(object, i)).sum::<usize>() / n;
    let grown = TARGET / each;
    for k in &keys {
        let list: Vec<Value> = object[k]
            .as_array()
            .unwrap()
            .iter()
            .cycle()
            .take(grown)
            .cloned()
            .collect();
        object.insert(k.clone(), Value::Array(list));
    }
    for k in ["num_prompts", "completed"] {
        object.insert(k.into(), Value::from(grown));
    }
    object.insert("failed".into(), Value::from(0));
    write_json(path, &report);
    largest
}

fn grow_genai_perf(path: &Path) -> usize {
    let mut export = json_at(path);
    let list = &mut export["experiments"][0]["requests"];
    let (grown, largest) = grow(list.as_array().unwrap(), TARGET);
    *list = Value::Array(grown);
    write_json(path, &export);
    largest
}

fn grow_list(path: &Path) -> usize {
    let records = json_at(path);
    let (grown, largest) = grow(records.as_array().unwrap(), TARGET);
    write_json(path, &Value::Array(grown));
    largest
}

fn grow_lines(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let largest = lines.iter().map(|l| l.len() + 1).max().unwrap();
    let mut out = String::with_capacity(TARGET + largest);
    for line in lines.iter().cycle() {
        if out.len() >= TARGET {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    std::fs::write(path, out).unwrap();
    largest
}

const TOOLS: &[(&str, &str, Grow)] = &[
    ("guidellm/concurrent-8", "guidellm.json", grow_guidellm),
    ("vllm/concurrent-16-detailed", "bench.json", grow_vllm),
    (
        "genai-perf/concurrency-8",
        "artifacts/sim-model-openai-completions-concurrency8/profile_export.json",
        grow_genai_perf,
    ),
    (
        "aiperf/concurrency-8",
        "aiperf/profile_export.jsonl",
        grow_lines,
    ),
    (
        "inference-perf/concurrent-8",
        "inference-perf/per_request_lifecycle_metrics.json",
        grow_list,
    ),
    (
        "llmperf/concurrent-8",
        "result_outputs/sim-model_32_32_individual_responses.json",
        grow_list,
    ),
];

/// Every tool's records grown to 16 MB are read within the bound the records kept set.
#[test]
fn a_result_file_takes_memory_in_proportion_to_what_is_kept() {
    if let Ok(path) = std::env::var(CHILD) {
        child(&path);
        return;
    }
    let mut over = Vec::new();
    for (folder, file, grow) in TOOLS {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&fixtures().join(folder), dir.path());
        let path = dir.path().join(file);
        let largest = grow(&path);
        let size = std::fs::metadata(&path).unwrap().len() as usize;
        let (peak, kept, records) = read_apart(&path);
        assert!(records > 1000, "{folder}: grown to {records} records");
        let bound = 2 * kept + 3 * largest + (8 << 20);
        let line = format!(
            "{folder}: a {} MB file, {records} records: peak {} MiB, bound {} MiB (account {} KiB, largest record {largest} bytes)",
            size >> 20,
            peak >> 20,
            bound >> 20,
            kept >> 10,
        );
        eprintln!("{line}");
        if peak > bound {
            over.push(line);
        }
    }
    assert!(over.is_empty(), "over the bound:\n{}", over.join("\n"));
}

/// Set in the process that reads a file of empty records: the file it reads.
const EMPTY_CHILD: &str = "INFERLINT_MEMORY_TEST_EMPTY";
const EMPTY_TEST: &str = "a_file_of_empty_records_takes_the_compact_record_each";

/// A file of nothing but empty records (`{},`, 3 bytes each) holds no request: each is
/// counted, not kept, so 2^20 of them peak within the 8 MiB the bound above allows for
/// the rest. Kept as a compact record each (112 bytes), they took 120 MiB for a 3 MiB
/// file, 37 times its size; 100 MB of them would have taken 4 GB.
#[test]
fn a_file_of_empty_records_takes_the_compact_record_each() {
    if let Ok(path) = std::env::var(EMPTY_CHILD) {
        child(&path);
        return;
    }
    assert!(std::mem::size_of::<inferlint_core::model::client::ClientRequest>() <= 112);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixtures().join("guidellm/concurrent-8"), dir.path());
    let path = dir.path().join("guidellm.json");
    let n = 1usize << 20;
    let mut report = json_at(&path);
    let benchmark = &mut report["benchmarks"][0];
    benchmark["requests"] = serde_json::json!({
        "successful": vec![serde_json::json!({}); n],
        "errored": [],
        "incomplete": [],
    });
    benchmark["metrics"]["request_totals"]["successful"] = Value::from(n);
    benchmark["metrics"]["request_totals"]["total"] = Value::from(n);
    write_json(&path, &report);
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", EMPTY_TEST, "--nocapture", "--test-threads=1"])
        .env(EMPTY_CHILD, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("memory-read ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("the read said nothing: {stdout}"));
    let n_read: Vec<usize> = line
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    let (peak, kept, records) = (n_read[0], n_read[1], n_read[2]);
    eprintln!(
        "guidellm, every record {{}}: a {} KiB file, {records} records: peak {} MiB ({:.1} times the file), account {} MiB",
        size >> 10,
        peak >> 20,
        peak as f64 / size as f64,
        kept >> 20
    );
    assert_eq!(records, 0, "an empty record holds no request");
    let bound = 8 << 20;
    assert!(peak <= bound, "peak {peak} bytes is over {bound}: 8 MiB");
}
