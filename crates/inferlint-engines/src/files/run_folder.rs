//! A run folder's files, found by name (and the load tool's result by content): what a
//! run's check reads, so that no output is ever written over one.

use std::path::{Path, PathBuf};

use crate::input::{shown, FileError};

/// The server's spans as a span receiver writes them into a run folder.
pub const SPANS_FILE: &str = "spans.otlp.jsonl";
/// The KV event stream as a subscriber writes it into a run folder.
pub const KV_EVENTS_FILE: &str = "kv-events.jsonl";
/// Each engine step as the server's step plugin writes it into a run folder.
pub const STEPS_FILE: &str = "steps.jsonl";
/// The file a drain of the server's per-request records writes in a run folder.
pub const SERVER_REQUESTS_FILE: &str = "server-requests.jsonl";
/// The folder of a run folder the engine writes its own per-request files into.
pub const REQUEST_METRICS_DIR: &str = "request-metrics";

/// The files of a run folder, found by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFiles {
    /// The boot logs, the one that covers the run last.
    pub boot_logs: Vec<PathBuf>,
    /// The snapshot taken before the load.
    pub before: Option<PathBuf>,
    /// The snapshot taken after it.
    pub after: Option<PathBuf>,
    /// The recording made during it.
    pub series: Option<PathBuf>,
    /// The load tool's result file.
    pub bench: Option<PathBuf>,
    /// The result files found for the run when the folder held several of one tool and
    /// role ([`crate::loadtools::find_results`]; `bench` is the first of them), which
    /// [`crate::load::load_run`] chooses among by what each holds. Empty when one was
    /// found or named: whoever names the result file (`--bench-result`) clears it.
    pub bench_candidates: Vec<PathBuf>,
    /// What the load tool printed (`load.log`).
    pub load_log: Option<PathBuf>,
    /// The server's spans as a receiver wrote them (`spans.otlp.jsonl`) or an
    /// OpenTelemetry Collector's file exporter did.
    pub spans: Option<PathBuf>,
    /// The KV-cache event stream as a subscriber wrote it (`kv-events.jsonl`).
    pub kv_events: Option<PathBuf>,
    /// The server's own per-request records beyond its spans: what a drain took
    /// (`server-requests.jsonl`), or the folder the engine wrote its own files into
    /// (`request-metrics/`).
    pub server_requests: Option<PathBuf>,
    /// Each engine step as the server's step plugin wrote it (`steps.jsonl`).
    pub steps: Option<PathBuf>,
}

impl RunFiles {
    /// Every file a run's check reads, with a few words naming each (`the recording`), so
    /// that no output is ever written over one.
    pub fn inputs(&self) -> Vec<(&Path, &'static str)> {
        let mut reads: Vec<(&Path, &'static str)> = self
            .boot_logs
            .iter()
            .map(|p| (p.as_path(), "a boot log"))
            .collect();
        let named = [
            (&self.before, "the before snapshot"),
            (&self.after, "the after snapshot"),
            (&self.series, "the recording"),
            (&self.bench, "the load tool's result"),
            (&self.load_log, "the load tool's log"),
            (&self.spans, "the server's spans"),
            (&self.kv_events, "the KV event stream"),
            (&self.server_requests, "the server's per-request records"),
            (&self.steps, "the engine's steps"),
        ];
        for (path, what) in named {
            if let Some(path) = path {
                reads.push((path.as_path(), what));
            }
        }
        for path in &self.bench_candidates {
            if self.bench.as_ref() != Some(path) {
                reads.push((path.as_path(), "a load tool's result"));
            }
        }
        reads
    }

    /// The result file the run was read from: the candidate `run.bench` names when the
    /// folder held several, else the one found or named.
    pub fn chosen_bench(&self, run: &inferlint_core::run::Run) -> Option<&Path> {
        if self.bench_candidates.len() > 1 {
            let name = &run.bench.as_ref()?.0;
            return self
                .bench_candidates
                .iter()
                .find(|p| shown(p) == *name)
                .map(PathBuf::as_path);
        }
        self.bench.as_deref()
    }

    /// Whether none of the files the checks read from the server is there (a result file
    /// alone is no run).
    pub fn is_empty(&self) -> bool {
        self.boot_logs.is_empty()
            && self.before.is_none()
            && self.after.is_none()
            && self.series.is_none()
    }
}

/// Finds a run's files in a folder the way xray names them, with looser fallbacks for
/// folders laid out by hand: `boot.log` else the first `*boot*.log`; `before.snapshot.json`
/// else `*before*.json`; likewise `after`; `run.series.jsonl` else `*.series.jsonl`;
/// the load tool's result, recognised by content in the folder or the folders its tools
/// write into ([`crate::loadtools::find_results`], every candidate when there are several
/// of one tool); `load.log`; `spans.otlp.jsonl` else `*.otlp.jsonl` (the server's spans);
/// `kv-events.jsonl` else `*.kv-events.jsonl` (its KV event stream);
/// `server-requests.jsonl` else the folder `request-metrics/` (its own per-request
/// records); `steps.jsonl` else `*.steps.jsonl` (each engine step).
pub fn discover_run(dir: &Path) -> Result<RunFiles, FileError> {
    // A link is followed, so a recording linked into the folder is read like any other.
    // Only folders are passed over: a link that leads nowhere, a pipe or a device with a
    // run file's name is kept, so that reading it fails with a clear error instead of the
    // file quietly missing from the report.
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| !std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    let has = |n: &str| names.iter().any(|x| x == n);
    let first = |pred: &dyn Fn(&str) -> bool| names.iter().find(|n| pred(n)).map(|n| dir.join(n));
    let named_or = |exact: &str, pred: &dyn Fn(&str) -> bool| {
        if has(exact) {
            Some(dir.join(exact))
        } else {
            first(pred)
        }
    };
    let mut files = RunFiles {
        boot_logs: named_or("boot.log", &|n| n.contains("boot") && n.ends_with(".log"))
            .into_iter()
            .collect(),
        before: named_or("before.snapshot.json", &|n| {
            n.contains("before") && n.ends_with(".json")
        }),
        after: named_or("after.snapshot.json", &|n| {
            n.contains("after") && n.ends_with(".json")
        }),
        series: named_or("run.series.jsonl", &|n| n.ends_with(".series.jsonl")),
        bench: None,
        bench_candidates: Vec::new(),
        load_log: has("load.log").then(|| dir.join("load.log")),
        spans: named_or(SPANS_FILE, &|n| n.ends_with(".otlp.jsonl")),
        kv_events: named_or(KV_EVENTS_FILE, &|n| n.ends_with(".kv-events.jsonl")),
        server_requests: if has(SERVER_REQUESTS_FILE) {
            Some(dir.join(SERVER_REQUESTS_FILE))
        } else {
            Some(dir.join(REQUEST_METRICS_DIR)).filter(|p| p.is_dir())
        },
        steps: named_or(STEPS_FILE, &|n| n.ends_with(".steps.jsonl")),
    };
    let results = crate::loadtools::find_results(dir)?;
    files.bench = results.first().cloned();
    if results.len() > 1 {
        files.bench_candidates = results;
    }
    Ok(files)
}
