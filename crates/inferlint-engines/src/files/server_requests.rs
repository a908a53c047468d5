//! An engine's own per-request records beyond its spans, and their reader into the run
//! model's [`ServerRequests`], through the engine table's [`RequestRecord`]:
//!
//! - the file a drain writes (`inferlint.server-requests/1`, `server-requests.jsonl`):
//!   what a poller took from an endpoint that forgets what it returns (TensorRT-LLM's
//!   `/perf_metrics`), one JSON object a line: the header first, `{"schema", "engine",
//!   "source", "url", "clock", "same_host", "t_wall", "t_mono_ns"}` (the poller's start
//!   on both clocks; `same_host` whether the server is on this host, so that a time on
//!   its monotonic clock can be placed on ours); then each record as the server gave it,
//!   `{"record": {...}, "t_wall", "t_mono_ns"}` (when the drain that took it answered);
//!   `{"failed_drain": REASON, ...}` for a drain that got no answer it could read (what
//!   the server handed out in it, if anything, is lost); `{"note": TEXT, ...}`; and
//!   `{"end": "stopped", "drains", "failed_drains", "records", ...}` last;
//! - the files an engine writes itself (SGLang's `--export-metrics-to-file`): one record
//!   a line, nothing else, a folder of them read in the order of their names (the
//!   engine names them by the hour).
//!
//! A time the record gives as 0 is a stamp never set (TensorRT-LLM's time points start
//! at the clock's epoch) and is left `None`; a value that is not a number, or a duration
//! that comes out negative, is counted in `unreadable_values`. A line that is not JSON,
//! or longer than [`MAX_RECORD_LINE_BYTES`], is counted in `skipped`.

use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

use inferlint_core::engine::{
    Engine, EngineDescriptor, JsonPath, RecordClock, RecordsFrom, RequestRecord,
};
use inferlint_core::model::traces::{ClockAnchor, RequestSource, ServerRequest, ServerRequests};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::input::{for_each_line_within, open_input, shown, FileError};

/// The schema string of the header line.
pub const SERVER_REQUESTS_SCHEMA: &str = "inferlint.server-requests/1";

/// The longest line read. A drained record is under a kilobyte; an engine's own file
/// holds each request's parameters, its prompt among them, as one string.
pub const MAX_RECORD_LINE_BYTES: usize = 16 << 20;

/// The most files of one folder read.
const MAX_FILES: usize = 10_000;

/// What the header says.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequestsHeader {
    /// The engine whose table reads the records.
    pub engine: Engine,
    /// Where they came from.
    pub source: RequestSource,
    /// The address drained.
    pub url: String,
    /// Whether the server is on the poller's host (its monotonic clock is ours).
    pub same_host: bool,
    /// When the poller started.
    pub anchor: ClockAnchor,
}

#[derive(Serialize)]
struct HeaderLine<'a> {
    schema: &'static str,
    engine: &'static str,
    source: RequestSource,
    url: &'a str,
    clock: &'static str,
    same_host: bool,
    t_wall: f64,
    t_mono_ns: i64,
}

/// The header line.
pub fn server_requests_header_json(header: &ServerRequestsHeader) -> String {
    let clock = match header.engine.descriptor().request_records.map(|r| r.clock) {
        Some(RecordClock::HostMonotonic) => "host_monotonic",
        _ => "unix",
    };
    to_line(&HeaderLine {
        schema: SERVER_REQUESTS_SCHEMA,
        engine: header.engine.key(),
        source: header.source,
        url: &header.url,
        clock,
        same_host: header.same_host,
        t_wall: header.anchor.t_wall,
        t_mono_ns: header.anchor.t_mono_ns,
    })
}

/// One record's line: the record as the server gave it, and when the drain answered.
pub fn server_record_json(record: &Value, at: ClockAnchor) -> String {
    #[derive(Serialize)]
    struct RecordLine<'a> {
        record: &'a Value,
        t_wall: f64,
        t_mono_ns: i64,
    }
    to_line(&RecordLine {
        record,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

/// A drain that got no answer it could read.
pub fn failed_drain_json(reason: &str, at: ClockAnchor) -> String {
    #[derive(Serialize)]
    struct Failed<'a> {
        failed_drain: &'a str,
        t_wall: f64,
        t_mono_ns: i64,
    }
    to_line(&Failed {
        failed_drain: reason,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

/// A note: what the poller met that is neither a record nor a failed drain.
pub fn server_requests_note_json(note: &str, at: ClockAnchor) -> String {
    #[derive(Serialize)]
    struct Note<'a> {
        note: &'a str,
        t_wall: f64,
        t_mono_ns: i64,
    }
    to_line(&Note {
        note,
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
    })
}

/// What a poller did, as its closing line says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DrainTotals {
    /// Drains answered and read.
    pub drains: u64,
    /// Drains that got no answer that could be read.
    pub failed_drains: u64,
    /// Records written.
    pub records: u64,
    /// Entries the server handed out that were not written: past the most one answer
    /// or one run is written with, or no record (not an object). Each answer that had
    /// any says how many in a note line.
    pub cut: u64,
}

/// The closing line.
pub fn server_requests_end_json(totals: &DrainTotals, at: ClockAnchor) -> String {
    #[derive(Serialize)]
    struct End<'a> {
        end: &'static str,
        t_wall: f64,
        t_mono_ns: i64,
        #[serde(flatten)]
        totals: &'a DrainTotals,
    }
    to_line(&End {
        end: "stopped",
        t_wall: at.t_wall,
        t_mono_ns: at.t_mono_ns,
        totals,
    })
}

fn to_line(value: &impl Serialize) -> String {
    // Plain structs and JSON values: serialising them cannot fail.
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"note\": \"{e}\"}}"))
}

/// Reads an engine's per-request records: a drain's file (its header names the engine),
/// else the engine's own file, or a folder of its files, read through `engine`'s table.
pub fn read_server_requests(
    path: &Path,
    engine: &'static EngineDescriptor,
) -> Result<ServerRequests, FileError> {
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return read_record_folder(path, engine);
    }
    let (file, _) = open_input(path)?;
    read_server_requests_from(path, file, engine)
}

/// [`read_server_requests`] of one file's bytes; `path` names it.
pub fn read_server_requests_from(
    path: &Path,
    reader: impl Read,
    engine: &'static EngineDescriptor,
) -> Result<ServerRequests, FileError> {
    let mut fold = Fold::new(shown(path), engine);
    for_each_line_within(path, reader, MAX_RECORD_LINE_BYTES, |line| fold.line(line))?;
    fold.finish(path)
}

/// The engine's own files in `dir` (the table's name prefix and suffix), in name order.
fn read_record_folder(
    dir: &Path,
    engine: &'static EngineDescriptor,
) -> Result<ServerRequests, FileError> {
    let Some(RecordsFrom::Files(files)) = engine.request_records.map(|r| r.from) else {
        return Err(FileError::invalid(
            dir,
            format!(
                "a folder, and {} writes no per-request files inferlint reads",
                engine.name
            ),
        ));
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(files.name_prefix) && n.ends_with(files.name_suffix))
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(FileError::invalid(
            dir,
            format!(
                "holds no {}*{} file: the server wrote no record there",
                files.name_prefix, files.name_suffix
            ),
        ));
    }
    if names.len() > MAX_FILES {
        return Err(FileError::invalid(
            dir,
            format!(
                "holds {} record files, more than the {MAX_FILES} read",
                names.len()
            ),
        ));
    }
    let mut fold = Fold::new(shown(dir), engine);
    for name in &names {
        let path = dir.join(name);
        let (file, _) = open_input(&path)?;
        fold.file = Some(name.clone());
        for_each_line_within(&path, file, MAX_RECORD_LINE_BYTES, |line| fold.line(line))?;
    }
    fold.finish(dir)
}

/// The records read so far.
struct Fold {
    engine: &'static EngineDescriptor,
    table: Option<RequestRecord>,
    requests: ServerRequests,
    /// Whether the first line has been seen, and whether it was a drain's header.
    started: Option<bool>,
    same_host: bool,
    ids: HashSet<(String, u64)>,
    line_no: usize,
    /// The file of a folder being read, to name a problem's place.
    file: Option<String>,
    refused: Option<String>,
}

impl Fold {
    fn new(shown: String, engine: &'static EngineDescriptor) -> Fold {
        let source = engine
            .request_records
            .map_or(RequestSource::OtlpSpan, |r| r.source);
        Fold {
            engine,
            table: engine.request_records,
            requests: ServerRequests::new(source, shown),
            started: None,
            same_host: false,
            ids: HashSet::new(),
            line_no: 0,
            file: None,
            refused: None,
        }
    }

    fn place(&self) -> String {
        match &self.file {
            Some(file) => format!("{file} line {}", self.line_no),
            None => format!("line {}", self.line_no),
        }
    }

    fn problem(&mut self, why: &str) {
        let place = self.place();
        self.requests
            .first_problem
            .get_or_insert_with(|| format!("{place}: {why}"));
    }

    fn skip(&mut self, why: &str) {
        self.requests.skipped += 1;
        self.problem(why);
    }

    fn line(&mut self, line: Option<&[u8]>) {
        self.line_no += 1;
        if self.refused.is_some() {
            return;
        }
        let Some(line) = line else {
            self.skip(&format!("longer than {} MiB", MAX_RECORD_LINE_BYTES >> 20));
            return;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let object: Map<String, Value> = match serde_json::from_slice(line) {
            Ok(o) => o,
            Err(e) => {
                self.skip(&format!("not a JSON object: {e}"));
                return;
            }
        };
        if self.started.is_none() {
            let header = object.contains_key("schema");
            self.started = Some(header);
            if header {
                self.header(&object);
                return;
            }
            if let Some(RecordsFrom::Drain(drain)) = self.table.map(|t| t.from) {
                self.refused = Some(format!(
                    "not a file of drained records ({SERVER_REQUESTS_SCHEMA}): {}'s records come from {}",
                    self.engine.name, drain.path
                ));
                return;
            }
        }
        if self.started == Some(true) {
            if object.contains_key("schema") {
                self.skip("a second header");
                return;
            }
            match object.get("record") {
                Some(Value::Object(record)) => self.record(record),
                Some(_) => self.skip("a record that is not an object"),
                // The poller's own lines (failed drains, notes, the end): no request.
                None => {}
            }
        } else {
            self.record(&object);
        }
    }

    fn header(&mut self, object: &Map<String, Value>) {
        if object.get("schema").and_then(Value::as_str) != Some(SERVER_REQUESTS_SCHEMA) {
            self.refused = Some(format!(
                "its first line is a header of {}, not {SERVER_REQUESTS_SCHEMA}",
                object
                    .get("schema")
                    .map_or("no schema".into(), |s| s.to_string())
            ));
            return;
        }
        let Some(engine) = object
            .get("engine")
            .and_then(Value::as_str)
            .and_then(Engine::parse)
        else {
            self.refused = Some("the header names no engine".into());
            return;
        };
        let descriptor = engine.descriptor();
        let Some(table) = descriptor.request_records else {
            self.refused = Some(format!(
                "the header names {}, which keeps no per-request records inferlint reads",
                descriptor.name
            ));
            return;
        };
        self.engine = descriptor;
        self.table = Some(table);
        self.requests.source = table.source;
        self.requests.anchor = anchor_of(object);
        self.same_host = object.get("same_host").and_then(Value::as_bool) == Some(true);
    }

    fn record(&mut self, record: &Map<String, Value>) {
        let Some(table) = self.table else {
            self.refused = Some(format!(
                "{} keeps no per-request records inferlint reads",
                self.engine.name
            ));
            return;
        };
        let mut bad = 0u64;
        let mut first_bad = None;
        let mut time = |path: Option<JsonPath>| -> Option<f64> {
            let path = path?;
            match number_at(record, path) {
                Found::Absent => None,
                Found::Number(0.0) => None,
                Found::Number(v) if v.is_finite() && v > 0.0 => Some(v),
                _ => {
                    bad += 1;
                    first_bad.get_or_insert_with(|| path.join("."));
                    None
                }
            }
        };
        let arrival = table.arrival.iter().find_map(|p| time(Some(p)));
        let enqueued = time(table.enqueued);
        let first_scheduled = time(table.first_scheduled);
        let first_token = time(table.first_token);
        let prefill_end = time(table.prefill_end);
        let last_token = time(table.last_token);
        let mut duration = |path: Option<JsonPath>| -> Option<f64> {
            let path = path?;
            match number_at(record, path) {
                Found::Absent => None,
                Found::Number(v) if v.is_finite() && v >= 0.0 => Some(v),
                _ => {
                    bad += 1;
                    first_bad.get_or_insert_with(|| path.join("."));
                    None
                }
            }
        };
        let queue_field = duration(table.queue_s);
        let e2e_field = duration(table.e2e_s);
        let decode_rate = duration(table.decode_rate).filter(|r| *r > 0.0);
        let mut count = |path: Option<JsonPath>| -> Option<u64> {
            let path = path?;
            match number_at(record, path) {
                Found::Absent => None,
                Found::Number(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 => Some(v as u64),
                _ => {
                    bad += 1;
                    first_bad.get_or_insert_with(|| path.join("."));
                    None
                }
            }
        };
        let prompt_tokens = count(table.prompt_tokens);
        let output_tokens = count(table.output_tokens);
        let cached_tokens = count(table.cached_tokens);
        let preemptions = table.preemptions.iter().find_map(|p| count(Some(p)));
        let reused_blocks = count(table.reused_blocks);
        let missed_blocks = count(table.missed_blocks);

        // Durations between two stamps of the record's own clock; a negative one is a
        // value that cannot be read.
        let mut between = |from: Option<f64>, to: Option<f64>, what: &str| -> Option<f64> {
            let d = to? - from?;
            if d >= 0.0 {
                Some(d)
            } else {
                bad += 1;
                first_bad.get_or_insert_with(|| what.to_owned());
                None
            }
        };
        // The time from the first token to the last, where the record gives the decode
        // rate instead of the first token: (output tokens - 1) / rate.
        let decode_by_rate = match (decode_rate, output_tokens) {
            (Some(rate), Some(out)) if out > 1 => Some((out - 1) as f64 / rate),
            _ => None,
        };
        let queue_s =
            queue_field.or_else(|| between(enqueued.or(arrival), first_scheduled, "queue"));
        let e2e_s = e2e_field.or_else(|| between(arrival, last_token, "e2e"));
        let decode_s = between(first_token, last_token, "decode").or(decode_by_rate);
        let ttft_s = between(arrival, first_token, "time to first token").or_else(|| {
            let d = e2e_s? - decode_by_rate?;
            (d >= 0.0).then_some(d)
        });
        let prefill_s = between(first_scheduled, first_token.or(prefill_end), "prefill");

        let id = table
            .id
            .iter()
            .find_map(|path| match value_at(record, path) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Number(n)) => Some(n.to_string()),
                _ => None,
            });
        let arrival = match table.clock {
            RecordClock::Unix => arrival,
            // Placed through the poller's reading of both clocks, on this host only.
            RecordClock::HostMonotonic => match (self.same_host, self.requests.anchor) {
                (true, Some(anchor)) => {
                    arrival.map(|a| a + anchor.t_wall - anchor.t_mono_ns as f64 / 1e9)
                }
                _ => None,
            },
        };
        if bad > 0 {
            self.requests.unreadable_values += bad;
            let what = first_bad.unwrap_or_default();
            self.problem(&format!("{what} cannot be read"));
        }
        let request = ServerRequest {
            id,
            arrival,
            queue_s,
            ttft_s,
            ttft_from_scheduling_s: None,
            prefill_s,
            decode_s,
            e2e_s,
            prompt_tokens,
            output_tokens,
            cached_tokens,
            preemptions,
            reused_blocks,
            missed_blocks,
        };
        if request.id.is_none() && request.arrival.is_none() && request.e2e_s.is_none() {
            self.skip("a record of no request (no id, no time)");
            return;
        }
        if let Some(id) = &request.id {
            let key = (id.clone(), request.arrival.unwrap_or(0.0).to_bits());
            if !self.ids.insert(key) {
                self.requests.repeated += 1;
                return;
            }
        }
        self.requests.requests.push(request);
    }

    fn finish(self, path: &Path) -> Result<ServerRequests, FileError> {
        if let Some(why) = self.refused {
            return Err(FileError::invalid(path, why));
        }
        if self.started.is_none() && self.requests.skipped == 0 {
            return Err(FileError::invalid(
                path,
                "empty: no request record in it".to_owned(),
            ));
        }
        if self.requests.requests.is_empty() && self.requests.skipped > 0 {
            return Err(FileError::invalid(
                path,
                format!(
                    "no line is a request record ({})",
                    self.requests
                        .first_problem
                        .as_deref()
                        .unwrap_or("none read")
                ),
            ));
        }
        Ok(self.requests)
    }
}

fn anchor_of(o: &Map<String, Value>) -> Option<ClockAnchor> {
    Some(ClockAnchor {
        t_wall: o.get("t_wall")?.as_f64()?,
        t_mono_ns: o.get("t_mono_ns")?.as_i64()?,
    })
}

fn value_at(record: &Map<String, Value>, path: JsonPath) -> Option<&Value> {
    let (first, rest) = path.split_first()?;
    let mut value = record.get(*first)?;
    for key in rest {
        value = value.as_object()?.get(*key)?;
    }
    Some(value)
}

enum Found {
    Absent,
    Number(f64),
    NotANumber,
}

fn number_at(record: &Map<String, Value>, path: JsonPath) -> Found {
    match value_at(record, path) {
        None | Some(Value::Null) => Found::Absent,
        Some(Value::Number(n)) => n.as_f64().map_or(Found::NotANumber, Found::Number),
        Some(_) => Found::NotANumber,
    }
}
