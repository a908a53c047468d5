//! The load tools' result files, read into one model of the client's account
//! ([`ClientAccount`]).
//!
//! A file is recognised by what it holds, never by its name: a run folder may hold
//! `guidellm.json`, `benchmarks.json`, `profile_export_aiperf.json` or
//! `summary_lifecycle_metrics.json`, and a user may rename any of them. [`identify`] reads
//! the start of a file for the fields only one tool writes; each tool's module then reads
//! the whole file, and the per-request file beside a summary where the tool writes one,
//! as a stream (the `stream` module): each request record is folded into the account as it is
//! read, so memory follows what the account keeps, not the file's size.
//!
//! Three promises:
//! - a file of a known tool in a shape its reader does not understand is an error that
//!   names the tool and its version, never a file silently skipped or half read;
//! - a cut-off or foreign file is a one-line error naming the file;
//! - a number the file does not give stays `None`, never 0.

use std::path::{Path, PathBuf};

use inferlint_core::model::client::{ClientAccount, Keep, LoadTool};
use serde_json::Value;

use crate::input::FileError;

mod aiperf;
pub mod console;
mod dates;
mod genai_perf;
pub(crate) mod guidellm;
mod inference_perf;
mod llmd_br;
mod llmperf;
mod stream;
mod vllm;

use stream::Source;

/// How many bytes [`identify`] reads: every tool writes its telling fields near the start.
const SNIFF_BYTES: usize = 64 * 1024;

/// What a result file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The run's summary (which may also hold each request, as vLLM's detailed file does).
    Summary,
    /// One record per request, written beside a summary.
    Requests,
    /// One load stage's report, beside the run's summary (inference-perf).
    Stage,
    /// A report in a format shared by several tools (llm-d's Benchmark Report), made
    /// from a tool's results: read where no tool's own result lies in the folder, whose
    /// files keep more (each request's record).
    Report,
}

/// A result file recognised by its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The tool that wrote it.
    pub tool: LoadTool,
    /// What it holds.
    pub role: Role,
}

/// Which tool wrote a file and what it holds, from its first bytes; `None` when it is no
/// load tool's result (a snapshot, a tool's other output, anything else).
pub fn identify(head: &[u8]) -> Option<Kind> {
    let text = String::from_utf8_lossy(&head[..head.len().min(SNIFF_BYTES)]);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    let has = |needle: &str| text.contains(needle);
    let summary = |tool| {
        Some(Kind {
            tool,
            role: Role::Summary,
        })
    };
    let requests = |tool| {
        Some(Kind {
            tool,
            role: Role::Requests,
        })
    };
    let object = text.starts_with('{');
    let list = text.starts_with('[');
    if object && (has("\"guidellm_version\"") || has("\"generative_benchmark\"")) {
        return summary(LoadTool::GuideLlm);
    }
    if object && has("\"aiperf_version\"") {
        // AIPerf writes other JSON beside its results (its own scrape of /metrics).
        let results = has("\"request_count\"")
            || has("\"benchmark_duration\"")
            || has("\"request_throughput\"")
            || has("\"error_request_count\"");
        return results.then_some(Kind {
            tool: LoadTool::AiPerf,
            role: Role::Summary,
        });
    }
    let first_line = text.lines().next().unwrap_or("");
    if object && first_line.contains("\"benchmark_phase\"") && first_line.contains("\"metadata\"") {
        return requests(LoadTool::AiPerf);
    }
    if object && has("\"load_summary\"") && (has("\"successes\"") || has("\"failures\"")) {
        // A stage's report says what the stage asked for and sent; the summary does not.
        let stage =
            has("\"send_duration\"") || has("\"requested_rate\"") || has("\"achieved_rate\"");
        return Some(Kind {
            tool: LoadTool::InferencePerf,
            role: if stage { Role::Stage } else { Role::Summary },
        });
    }
    if list
        && has("\"start_time\"")
        && has("\"end_time\"")
        && has("\"request\"")
        && has("\"response\"")
        && has("\"info\"")
    {
        return requests(LoadTool::InferencePerf);
    }
    if object && has("\"experiments\"") && (has("\"request_inputs\"") || has("\"experiment\"")) {
        return requests(LoadTool::GenAiPerf);
    }
    if object
        && has("\"request_throughput\"")
        && has("\"input_config\"")
        && has("\"unit\"")
        && has("\"avg\"")
    {
        return summary(LoadTool::GenAiPerf);
    }
    if object
        && (has("\"results_num_requests_started\"")
            || has("\"results_num_completed_requests\"")
            || (has("\"num_concurrent_requests\"") && has("\"results_")))
    {
        return summary(LoadTool::LlmPerf);
    }
    if list && has("\"end_to_end_latency_s\"") && has("\"error_code\"") {
        return requests(LoadTool::LlmPerf);
    }
    if llmd_br::looks_like(text) {
        return Some(Kind {
            tool: LoadTool::LlmdBr,
            role: Role::Report,
        });
    }
    if object && has("\"completed\"") {
        // The engines' own clients share vLLM's field names; each adds its own.
        if has("\"request_goodput:\"") || has("\"user_throughput\"") || has("\"e2els\"") {
            return summary(LoadTool::TrtllmBench);
        }
        if has("\"total_output_tokens_retokenized\"")
            || has("\"server_info\"")
            || has("\"sharegpt_output_len\"")
            || has("\"accept_length\"")
        {
            return summary(LoadTool::SglangBench);
        }
        if has("\"total_output_tokens\"")
            || has("\"duration\"")
            || has("\"num_prompts\"")
            || has("\"failed\"")
        {
            return summary(LoadTool::VllmBench);
        }
    }
    None
}

/// Reads a result file, with the files the tool writes beside it (its per-request
/// records, or its summary when `path` is the records), into the client's account.
///
/// The file is read as a stream (its records folded one at a time into the account), so
/// the memory it takes is what the account keeps, not the file's size. Only a file no
/// tool's is read whole, to say what it is.
pub fn read_result(path: &Path) -> Result<ClientAccount, FileError> {
    read_result_kept(path, Keep::Records)
}

/// [`read_result`], its request records kept as `keep` says: for the replay alone
/// ([`Keep::ForReplay`]), the engines' clients fold each record as their lists are read
/// (no gap between tokens held), the other tools once the file is read.
pub fn read_result_kept(path: &Path, keep: Keep) -> Result<ClientAccount, FileError> {
    let source = Source::File(path);
    let Some(kind) = identify(&source.head(path, SNIFF_BYTES)?) else {
        return Err(not_a_result(path, &read_bytes(path)?));
    };
    let companions = companions(path, kind);
    read_kind(path, source, kind, &companions, keep)
}

/// Reads a result file's contents alone (no file beside it). `name` names it in errors.
/// The entry point for fuzzing: any bytes give an account or an error, never a panic.
pub fn read_bytes_named(name: &str, bytes: &[u8]) -> Result<ClientAccount, FileError> {
    let path = Path::new(name);
    let Some(kind) = identify(bytes) else {
        return Err(not_a_result(path, bytes));
    };
    read_kind(
        path,
        Source::Bytes(bytes),
        kind,
        &Companions::default(),
        Keep::Records,
    )
}

/// The files a tool writes beside one of its results.
#[derive(Debug, Default)]
pub(crate) struct Companions {
    /// The per-request file when the result is a summary; the summary when it is the
    /// per-request file.
    pub other: Option<PathBuf>,
    /// Further files of the same run (inference-perf's per-stage reports).
    pub stages: Vec<PathBuf>,
}

fn read_kind(
    path: &Path,
    source: Source,
    kind: Kind,
    companions: &Companions,
    keep: Keep,
) -> Result<ClientAccount, FileError> {
    let found = (path, source, kind.role);
    let mut account = match kind.tool {
        LoadTool::VllmBench | LoadTool::SglangBench | LoadTool::TrtllmBench => {
            vllm::read_kept(path, source, kind.tool, keep)?
        }
        LoadTool::GuideLlm => guidellm::read(path, source)?,
        LoadTool::AiPerf => summary_then_records(
            found,
            companions,
            kind.tool,
            aiperf::summary,
            aiperf::read_records,
        )?,
        LoadTool::InferencePerf => inference_perf::read(found, companions)?,
        LoadTool::LlmdBr => llmd_br::read(path, source, &companions.stages)?,
        LoadTool::GenAiPerf => summary_then_records(
            found,
            companions,
            kind.tool,
            genai_perf::summary,
            genai_perf::read_export,
        )?,
        LoadTool::LlmPerf => summary_then_records(
            found,
            companions,
            kind.tool,
            llmperf::summary,
            llmperf::read_records,
        )?,
        // No file is told to be a harness's (`identify` never answers it): its counts
        // come through the library.
        LoadTool::Harness => {
            return Err(FileError::invalid(
                path,
                "not a load tool result: a harness gives its counts through the library",
            ))
        }
    };
    if keep == Keep::ForReplay && account.keep != Keep::ForReplay {
        account.keep_for_replay();
    }
    account.count_from_records();
    if let Some(why) = account.impossible_count() {
        let tool = label(account.tool, account.tool_version.as_deref());
        return Err(FileError::invalid(path, format!("{tool} result: {why}")));
    }
    Ok(account)
}

/// The files beside `path` that belong to the same run of the same tool.
fn companions(path: &Path, kind: Kind) -> Companions {
    let Some(dir) = path.parent() else {
        return Companions::default();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut found = Companions::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    let mut names: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .filter(|p| p != path && is_json_name(p))
        .collect();
    names.sort();
    if kind.tool == LoadTool::LlmdBr {
        // Every report beside it: the stages of its run, or another run's (refused).
        found.stages = names
            .into_iter()
            .filter(|p| sniff(p) == Some(kind))
            .collect();
        return found;
    }
    let wanted_role = match kind.role {
        Role::Summary | Role::Stage | Role::Report => Role::Requests,
        Role::Requests => Role::Summary,
    };
    // LLMPerf names the pair after one prefix: `X_summary.json`, `X_individual_responses.json`.
    let prefix = file_name(path)
        .strip_suffix("_summary.json")
        .or_else(|| file_name(path).strip_suffix("_individual_responses.json"))
        .map(str::to_owned);
    let mut candidates: Vec<&PathBuf> = names
        .iter()
        .filter(|p| {
            sniff(p)
                == Some(Kind {
                    tool: kind.tool,
                    role: wanted_role,
                })
        })
        .collect();
    if let Some(prefix) = &prefix {
        if let Some(same) = candidates
            .iter()
            .position(|p| file_name(p).starts_with(prefix.as_str()))
        {
            candidates = vec![candidates[same]];
        }
    }
    found.other = candidates.first().map(|p| (*p).clone());
    if kind.tool == LoadTool::InferencePerf {
        found.stages = names
            .iter()
            .filter(|p| {
                sniff(p)
                    == Some(Kind {
                        tool: LoadTool::InferencePerf,
                        role: Role::Stage,
                    })
            })
            .cloned()
            .collect();
        if kind.role == Role::Stage {
            found.stages.push(path.to_owned());
        }
    }
    found
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// A name a result may have: JSON, JSON lines, or YAML (llm-d's Benchmark Report).
fn is_json_name(path: &Path) -> bool {
    let name = file_name(path);
    (name.ends_with(".json")
        || name.ends_with(".jsonl")
        || name.ends_with(".yaml")
        || name.ends_with(".yml"))
        && !name.ends_with(".snapshot.json")
        && !name.ends_with(".series.jsonl")
        && name != "results.json"
}

/// Identifies a file from its first bytes; `None` when it cannot be read or is no result.
fn sniff(path: &Path) -> Option<Kind> {
    use std::io::Read;
    let mut head = vec![0u8; SNIFF_BYTES];
    // Only regular files: a pipe named like a result must not block the search.
    let (mut file, _) = crate::input::open_input(path).ok()?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(_) => return None,
        }
    }
    head.truncate(filled);
    identify(&head)
}

/// Finds the load tool's result in a run folder and the folders below it (its tools
/// write into their own: `aiperf/`, `result_outputs/`, `artifacts/NAME/`). xray's own
/// names (`bench.json`, `bench.jsonl`) come first; else the summary nearest the top; a
/// folder with only per-request records gives those. `Ok(None)` when there is none; an
/// error when two tools' results lie equally near the top (name one with
/// `--bench-result`). The first of [`find_results`].
pub fn find_result(dir: &Path) -> Result<Option<PathBuf>, FileError> {
    Ok(find_results(dir)?.into_iter().next())
}

/// Every result [`find_result`] could have picked: the files of its tool and role at its
/// depth, in name order (xray's `bench.json` or `bench.jsonl` first, with the others of
/// its tool and role beside it). A folder may hold several runs of one tool (`vllm bench
/// serve` names each file after its date, GuideLLM and LLMPerf write into one results
/// folder run after run), and only what each file holds tells which is the run's:
/// `load_run` reads each and keeps the one that fits the server's files.
pub fn find_results(dir: &Path) -> Result<Vec<PathBuf>, FileError> {
    for name in ["bench.json", "bench.jsonl"] {
        let path = dir.join(name);
        if !path.is_file() {
            continue;
        }
        if let Some(kind) = sniff(&path) {
            let mut beside: Vec<(usize, Kind, PathBuf)> = Vec::new();
            walk_to(dir, 0, 0, &mut beside);
            let mut all = vec![path.clone()];
            all.extend(
                beside
                    .into_iter()
                    .filter(|(_, k, p)| *k == kind && *p != path)
                    .map(|(_, _, p)| p),
            );
            return Ok(all);
        }
    }
    let mut found: Vec<(usize, Kind, PathBuf)> = Vec::new();
    walk(dir, 0, &mut found);
    nearest(dir, found)
}

/// [`find_result`] among the files written at or after `since`: a tool's output folder
/// (`artifacts/`) keeps the results of earlier runs beside this one's.
pub fn find_result_written_since(
    dir: &Path,
    since: std::time::SystemTime,
) -> Result<Option<PathBuf>, FileError> {
    let mut found: Vec<(usize, Kind, PathBuf)> = Vec::new();
    walk(dir, 0, &mut found);
    found.retain(|(_, _, p)| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since)
    });
    Ok(nearest(dir, found)?.into_iter().next())
}

/// The results nearest the top among those found: summaries before stage reports before
/// per-request records before a shared format's reports, every one of that role at the
/// nearest depth; two tools' at that depth is an error. Of the shared format's reports,
/// one per folder: reading it reads the others beside it.
fn nearest(dir: &Path, found: Vec<(usize, Kind, PathBuf)>) -> Result<Vec<PathBuf>, FileError> {
    let mut found = found;
    let mut folders = Vec::new();
    found.retain(|(_, k, p)| {
        k.role != Role::Report || {
            let folder = p.parent().map(Path::to_path_buf);
            let first = !folders.contains(&folder);
            folders.push(folder);
            first
        }
    });
    for role in [Role::Summary, Role::Stage, Role::Requests, Role::Report] {
        let Some(depth) = found
            .iter()
            .filter(|(_, k, _)| k.role == role)
            .map(|(d, _, _)| *d)
            .min()
        else {
            continue;
        };
        let nearest: Vec<&(usize, Kind, PathBuf)> = found
            .iter()
            .filter(|(d, k, _)| *d == depth && k.role == role)
            .collect();
        let mut tools: Vec<LoadTool> = nearest.iter().map(|(_, k, _)| k.tool).collect();
        tools.dedup();
        if tools.len() > 1 {
            let names: Vec<String> = nearest
                .iter()
                .map(|(_, k, p)| format!("{} ({})", p.display(), k.tool.name()))
                .collect();
            return Err(FileError::invalid(
                dir,
                format!(
                    "results of several load tools: {}; name one with --bench-result",
                    names.join(", ")
                ),
            ));
        }
        return Ok(nearest.into_iter().map(|(_, _, p)| p.clone()).collect());
    }
    Ok(Vec::new())
}

/// Folders below a run folder that are searched for results.
const MAX_DEPTH: usize = 4;

fn walk(dir: &Path, depth: usize, found: &mut Vec<(usize, Kind, PathBuf)>) {
    walk_to(dir, depth, MAX_DEPTH, found);
}

/// The results in `dir` and the folders below it down to `max` levels.
fn walk_to(dir: &Path, depth: usize, max: usize, found: &mut Vec<(usize, Kind, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<(PathBuf, bool)> = entries
        .flatten()
        .filter_map(|e| {
            let kind = e.file_type().ok()?;
            // Links are not followed: a link out of the run folder is not the run's.
            (!kind.is_symlink()).then(|| (e.path(), kind.is_dir()))
        })
        .collect();
    entries.sort();
    for (path, is_dir) in entries {
        if is_dir {
            if depth < max {
                walk_to(&path, depth + 1, max, found);
            }
        } else if is_json_name(&path) {
            if let Some(kind) = sniff(&path) {
                found.push((depth, kind, path));
            }
        }
    }
}

/// A whole file, bounded ([`crate::input::MAX_RESULT_BYTES`]); a pipe, a device or a
/// folder is refused before anything is read. Only for a file no tool's: a result is read
/// as a stream ([`stream`]).
fn read_bytes(path: &Path) -> Result<Vec<u8>, FileError> {
    crate::input::read_bounded(path, crate::input::MAX_RESULT_BYTES, "a result file")
}

/// A tool's result that comes as a summary and a per-request file, from whichever of the
/// two was found: the summary read into an account (an empty one of `tool` without it),
/// then the per-request file read into that account.
pub(super) fn summary_then_records(
    found: (&Path, Source, Role),
    companions: &Companions,
    tool: LoadTool,
    summary: impl FnOnce(&Path, Source) -> Result<ClientAccount, FileError>,
    records: impl FnOnce(&Path, Source, &mut ClientAccount) -> Result<(), FileError>,
) -> Result<ClientAccount, FileError> {
    let (path, source, role) = found;
    let (summary_path, records_path) = match role {
        // A stage's report has the summary's shape, for its stage alone.
        Role::Summary | Role::Stage | Role::Report => (Some(path), companions.other.as_deref()),
        Role::Requests => (companions.other.as_deref(), Some(path)),
    };
    let mut account = match summary_path {
        Some(p) if p == path => summary(p, source)?,
        Some(p) => summary(p, Source::File(p))?,
        None => ClientAccount::new(tool),
    };
    match records_path {
        Some(p) if p == path => records(p, source, &mut account)?,
        Some(p) => records(p, Source::File(p), &mut account)?,
        None => {}
    }
    Ok(account)
}

/// Why a file is no result: empty, not text, not JSON, cut off, or JSON of something else.
fn not_a_result(path: &Path, bytes: &[u8]) -> FileError {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim();
    let message = if trimmed.is_empty() {
        "empty file".to_owned()
    } else if std::str::from_utf8(bytes).is_err() {
        "not a load tool result: not UTF-8 text".to_owned()
    } else {
        match crate::pyjson::from_str(trimmed) {
            Ok(_) => format!(
                "not a load tool result: JSON with none of the fields of {}",
                known_tools()
            ),
            Err(e) if e.is_eof() => {
                "not a load tool result: the JSON is cut off (the file ends inside it)".to_owned()
            }
            Err(_) => match trimmed.lines().rev().find(|l| !l.trim().is_empty()) {
                // JSON lines of which none parses whole, or text.
                Some(_) if !trimmed.starts_with(['{', '[']) => {
                    "not a load tool result: not JSON".to_owned()
                }
                _ => "not a load tool result: bad JSON".to_owned(),
            },
        }
    };
    FileError::invalid(path, message)
}

fn known_tools() -> String {
    // A harness's counts come through the library, never in a file.
    let names: Vec<&str> = LoadTool::ALL
        .iter()
        .filter(|t| **t != LoadTool::Harness)
        .map(|t| t.name())
        .collect();
    names.join(", ")
}

/// Reads a whole file as JSON as Python writes it, as a stream (a summary, kilobytes;
/// the records are streamed by [`stream::parse`] with a sink); a cut-off or malformed
/// file is an error naming the tool the start of the file showed.
pub(crate) fn parse_json(path: &Path, source: Source, what: &str) -> Result<Value, FileError> {
    stream::parse(path, source, what, &mut stream::Whole)
}

/// A file's first bytes, where every tool writes its version.
pub(crate) fn head(path: &Path, source: Source) -> Result<Vec<u8>, FileError> {
    source.head(path, SNIFF_BYTES)
}

/// The error for a known tool's file whose shape the reader does not understand.
pub(crate) fn shape(path: &Path, tool: &str, what: impl std::fmt::Display) -> FileError {
    FileError::invalid(
        path,
        format!("{tool} result in a shape this reader does not understand: {what}"),
    )
}

/// `GuideLLM 0.8.1`, or `GuideLLM (version not recorded)`.
pub(crate) fn label(tool: LoadTool, version: Option<&str>) -> String {
    match version {
        Some(v) => format!("{} {v}", tool.name()),
        None => format!("{} (version not recorded)", tool.name()),
    }
}

/// The string value of the first `"key": "value"` in a file's text, found without
/// parsing it, so that an error about a cut-off file can still name the tool's version.
pub(crate) fn string_field(bytes: &[u8], key: &str) -> Option<String> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(SNIFF_BYTES)]);
    let needle = format!("\"{key}\"");
    let rest = &head[head.find(&needle)? + needle.len()..];
    let rest = rest
        .trim_start()
        .strip_prefix(':')?
        .trim_start()
        .strip_prefix('"')?;
    let value = &rest[..rest.find('"')?];
    (!value.is_empty() && value.len() <= 64).then(|| value.to_owned())
}

/// The value at a path of keys.
/// Whether `item` is an object holding at least one of `keys`: a request record a reader
/// reads something from. Anything else holds no request.
pub(crate) fn holds_any(item: &Value, keys: &[&str]) -> bool {
    item.as_object()
        .is_some_and(|o| keys.iter().any(|k| o.contains_key(*k)))
}

pub(crate) fn at<'a>(value: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |v, k| v.get(*k))
}

/// Gaps between tokens, in milliseconds, onto the account's list, which keeps them as
/// `f32`: a gap `f32` cannot hold as a finite number (over about 3.4e38 ms, or one whose
/// arithmetic overflowed) is no measurement and is left out, never kept as infinite.
pub(crate) fn extend_gaps(gaps: &mut Vec<f32>, ms: impl IntoIterator<Item = f64>) {
    gaps.extend(ms.into_iter().map(|g| g as f32).filter(|g| g.is_finite()));
}

/// A finite number (Python's `NaN` and `Infinity`, read as their words, are none).
pub(crate) fn num(value: Option<&Value>) -> Option<f64> {
    match value? {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        _ => None,
    }
}

/// A number truncated to an integer, as the established tool reads counts.
pub(crate) fn int(value: Option<&Value>) -> Option<i64> {
    num(value).map(|f| f.trunc() as i64)
}

/// A count that cannot be negative.
pub(crate) fn count(value: Option<&Value>) -> Option<u64> {
    num(value).filter(|f| *f >= 0.0).map(|f| f.trunc() as u64)
}

pub(crate) fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

/// The request body a tool kept, as an object (it may be stored as a JSON string).
pub(crate) fn body(value: Option<&Value>) -> Option<Value> {
    match value? {
        Value::String(s) => serde_json::from_str::<Value>(s).ok(),
        v @ Value::Object(_) => Some(v.clone()),
        _ => None,
    }
    .filter(Value::is_object)
}

/// The output length a request body asked for and whether it asked to ignore EOS.
pub(crate) fn asked(body: &Value) -> (Option<u64>, Option<bool>) {
    let max = ["max_completion_tokens", "max_tokens", "max_new_tokens"]
        .iter()
        .find_map(|k| count(body.get(*k)));
    let ignore_eos = body.get("ignore_eos").and_then(Value::as_bool);
    (max, ignore_eos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_is_told_by_its_own_fields() {
        let cases: [(&str, Option<(LoadTool, Role)>); 16] = [
            (
                r#"{"metadata": {"guidellm_version": "0.8.1"}, "benchmarks": []}"#,
                Some((LoadTool::GuideLlm, Role::Summary)),
            ),
            (
                r#"{"schema_version": "1.4", "aiperf_version": "0.13.0", "request_count": {}}"#,
                Some((LoadTool::AiPerf, Role::Summary)),
            ),
            (
                r#"{"schema_version": "1.1", "aiperf_version": "0.13.0", "summary": {"endpoints_configured": []}}"#,
                None,
            ),
            (
                r#"{"metadata": {"benchmark_phase": "profiling"}, "metrics": {}}"#,
                Some((LoadTool::AiPerf, Role::Requests)),
            ),
            (
                r#"{"benchmark_time_seconds": 2.4, "load_summary": {"count": 32}, "successes": {}}"#,
                Some((LoadTool::InferencePerf, Role::Summary)),
            ),
            (
                r#"[{"start_time": 1.0, "end_time": 2.0, "request": "{}", "response": "", "info": {}, "error": null}]"#,
                Some((LoadTool::InferencePerf, Role::Requests)),
            ),
            (
                r#"{"experiments": [{"experiment": {"mode": "concurrency"}, "requests": []}], "version": ""}"#,
                Some((LoadTool::GenAiPerf, Role::Requests)),
            ),
            (
                r#"{"request_throughput": {"unit": "requests/sec", "avg": 1.0}, "input_config": {}}"#,
                Some((LoadTool::GenAiPerf, Role::Summary)),
            ),
            (
                r#"{"version": "2023-08-31", "num_concurrent_requests": 8, "results_num_requests_started": 32}"#,
                Some((LoadTool::LlmPerf, Role::Summary)),
            ),
            (
                r#"[{"error_code": null, "ttft_s": 0.1, "end_to_end_latency_s": 0.5}]"#,
                Some((LoadTool::LlmPerf, Role::Requests)),
            ),
            (
                r#"{"completed": 32, "total_output_tokens": 32000, "request_goodput:": null}"#,
                Some((LoadTool::TrtllmBench, Role::Summary)),
            ),
            (
                r#"{"backend": "sglang", "completed": 32, "total_output_tokens_retokenized": 1}"#,
                Some((LoadTool::SglangBench, Role::Summary)),
            ),
            (
                r#"{"completed": 32, "failed": 0, "total_output_tokens": 32000}"#,
                Some((LoadTool::VllmBench, Role::Summary)),
            ),
            (
                r#"{"schema": "inferlint.snapshot/1", "text": "vllm:x 1"}"#,
                None,
            ),
            (
                "version: 0.2.1\nrun:\n  uid: inference-perf-stage-0-3e2e9aaf\nresults:\n",
                Some((LoadTool::LlmdBr, Role::Report)),
            ),
            (
                r#"{"version": "0.2.1", "run": {"uid": "u"}, "results": {}}"#,
                Some((LoadTool::LlmdBr, Role::Report)),
            ),
        ];
        for (text, expected) in cases {
            let found = identify(text.as_bytes()).map(|k| (k.tool, k.role));
            assert_eq!(found, expected, "{text}");
        }
    }

    #[test]
    fn python_floats_are_not_numbers() {
        let v =
            crate::pyjson::from_str(r#"{"a": NaN, "b": Infinity, "c": 2.9, "d": true}"#).unwrap();
        assert_eq!(num(v.get("a")), None);
        assert_eq!(num(v.get("b")), None);
        assert_eq!(int(v.get("c")), Some(2));
        assert_eq!(int(v.get("d")), None);
    }
}
