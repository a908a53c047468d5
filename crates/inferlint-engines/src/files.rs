//! The files a run leaves: snapshots (`inferlint.snapshot/1`), series
//! (`inferlint.series/1`), the load tool's result file and its console log.
//!
//! Formats are shared with the established Python tool in both directions: the same
//! schema strings and field names, so either tool reads the other's recordings.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use inferlint_core::model::{BenchResult, SeriesHeader, SeriesSample, Snapshot};
use inferlint_core::Engine;
use serde_json::{Map, Value};

use crate::prom;

pub const SNAPSHOT_SCHEMA: &str = "inferlint.snapshot/1";
pub const SERIES_SCHEMA: &str = "inferlint.series/1";

/// A file that could not be used. The message reads after "cannot read": it names the
/// file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

impl FileError {
    fn invalid(path: &Path, message: impl Into<String>) -> FileError {
        FileError::Invalid {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    fn io(path: &Path, source: io::Error) -> FileError {
        FileError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

fn read_text(path: &Path) -> Result<String, FileError> {
    let bytes = std::fs::read(path).map_err(|e| FileError::io(path, e))?;
    String::from_utf8(bytes).map_err(|_| FileError::invalid(path, "not UTF-8 text"))
}

/// Reads a snapshot: our JSON (which must carry the snapshot schema), or bare Prometheus
/// text, which reads as a snapshot without clocks.
pub fn read_snapshot(path: &Path) -> Result<Snapshot, FileError> {
    let text = read_text(path)?;
    parse_snapshot(&text, path)
}

/// Parses a snapshot file's contents; `path` names it in errors.
pub fn parse_snapshot(text: &str, path: &Path) -> Result<Snapshot, FileError> {
    if text.trim().is_empty() {
        return Err(FileError::invalid(path, "empty file"));
    }
    if text.trim_start().starts_with('{') {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| FileError::invalid(path, format!("not a snapshot: bad JSON ({e})")))?;
        let Some(object) = value.as_object() else {
            return Err(FileError::invalid(
                path,
                "not a snapshot: not a JSON object",
            ));
        };
        match object.get("schema").and_then(Value::as_str) {
            Some(SNAPSHOT_SCHEMA) => {}
            Some(other) => {
                return Err(FileError::invalid(
                    path,
                    format!("schema '{other}', expected '{SNAPSHOT_SCHEMA}'"),
                ))
            }
            None => {
                return Err(FileError::invalid(
                    path,
                    format!("no schema; expected '{SNAPSHOT_SCHEMA}'"),
                ))
            }
        }
        let Some(body) = object.get("text").and_then(Value::as_str) else {
            return Err(FileError::invalid(path, "snapshot has no text"));
        };
        let metrics = prom::parse(body)
            .map_err(|e| FileError::invalid(path, format!("metrics text, {e}")))?;
        let t_wall = object
            .get("t_wall")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite());
        let t_mono_ns = object.get("t_mono_ns").and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
        });
        return Ok(Snapshot {
            url: object
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            t_wall,
            t_mono_ns,
            latency_s: object.get("latency_s").and_then(Value::as_f64),
            text: body.to_owned(),
            metrics,
        });
    }
    let metrics = prom::parse(text)
        .map_err(|e| FileError::invalid(path, format!("not Prometheus text: {e}")))?;
    if metrics.is_empty() {
        return Err(FileError::invalid(path, "no metric samples"));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Snapshot {
        url: format!("file:{name}"),
        t_wall: None,
        t_mono_ns: None,
        latency_s: None,
        text: text.to_owned(),
        metrics,
    })
}

/// A snapshot as the JSON our files and the Python tool's share (indent 1, trailing
/// newline).
pub fn snapshot_json(snapshot: &Snapshot) -> String {
    let mut object = Map::new();
    object.insert("schema".into(), SNAPSHOT_SCHEMA.into());
    object.insert("url".into(), snapshot.url.clone().into());
    object.insert("t_wall".into(), snapshot.t_wall.into());
    object.insert("t_mono_ns".into(), snapshot.t_mono_ns.into());
    object.insert("latency_s".into(), snapshot.latency_s.into());
    object.insert("text".into(), snapshot.text.clone().into());
    let mut text = inferlint_core::contract::to_indent1(&Value::Object(object));
    text.push('\n');
    text
}

/// One line of a series file.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesLine {
    Header(SeriesHeader),
    Sample(SeriesSample),
    /// A recorder's record of a failed scrape (`gap`) or of a server restart (`restart`):
    /// a time, but no reading.
    Marker,
    /// A line that is not a sample: not JSON, not an object, or no usable `t_wall`
    /// (a cut-off last line from a killed recorder lands here).
    Skipped,
}

/// What reading a whole series found besides its samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesSummary {
    /// The last header line seen (a recorder that never scraped writes it at the end).
    pub header: Option<SeriesHeader>,
    pub samples: usize,
    /// Gap and restart records.
    pub markers: usize,
    pub skipped: usize,
}

/// Streams a series file: calls `on_sample` for each sample in order, holding one line
/// at a time, so a day-long recording reads in constant memory.
pub fn read_series(
    path: &Path,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<SeriesSummary, FileError> {
    let chunk = fold_stretch(path, 0, u64::MAX, on_sample)?;
    let summary = SeriesSummary {
        header: chunk.header,
        samples: chunk.samples,
        markers: chunk.markers,
        skipped: chunk.skipped,
    };
    check_series_summary(path, &summary, chunk.lines)?;
    Ok(summary)
}

/// What one stretch of a series file held.
#[derive(Debug, Default)]
struct ChunkSummary {
    header: Option<SeriesHeader>,
    samples: usize,
    markers: usize,
    skipped: usize,
    lines: usize,
}

/// Folds a series file into an accumulator on up to `threads` threads: the file is cut
/// into stretches at line boundaries, each folded by `push` into its own `init()`, and the
/// results are joined in file order by `merge`. Each thread streams its stretch through
/// a fixed buffer, so memory stays flat whatever the file's size.
pub fn fold_series<A: Send>(
    path: &Path,
    threads: usize,
    init: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &SeriesSample) + Sync,
    merge: impl Fn(A, A) -> A,
) -> Result<(A, SeriesSummary), FileError> {
    let len = file_len(path)?;
    // Small files are not worth a thread.
    let stretches = if len < (4 << 20) {
        1
    } else {
        threads.clamp(1, 16)
    };
    fold_series_of_len(path, len, stretches, init, push, merge)
}

/// [`fold_series`] with the number of stretches given (one thread each), whatever the
/// file's size.
pub fn fold_series_in<A: Send>(
    path: &Path,
    stretches: usize,
    init: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &SeriesSample) + Sync,
    merge: impl Fn(A, A) -> A,
) -> Result<(A, SeriesSummary), FileError> {
    fold_series_of_len(path, file_len(path)?, stretches, init, push, merge)
}

/// The length of a file in bytes.
fn file_len(path: &Path) -> Result<u64, FileError> {
    Ok(std::fs::metadata(path)
        .map_err(|e| FileError::io(path, e))?
        .len())
}

/// [`fold_series_in`] for a file already known to be `len` bytes long, so a caller that
/// read the length to choose `stretches` does not read it again.
fn fold_series_of_len<A: Send>(
    path: &Path,
    len: u64,
    stretches: usize,
    init: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &SeriesSample) + Sync,
    merge: impl Fn(A, A) -> A,
) -> Result<(A, SeriesSummary), FileError> {
    let chunks = stretches.max(1) as u64;
    let bounds: Vec<(u64, u64)> = (0..chunks)
        .map(|i| (len * i / chunks, len * (i + 1) / chunks))
        .collect();
    let results: Vec<Result<(A, ChunkSummary), FileError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .iter()
            .map(|&(start, end)| {
                let (init, push) = (&init, &push);
                scope.spawn(move || {
                    let mut acc = init();
                    let summary = fold_stretch(path, start, end, |s| push(&mut acc, s))?;
                    Ok((acc, summary))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(FileError::invalid(path, "a reader thread failed")))
            })
            .collect()
    });
    let mut total: Option<A> = None;
    let mut summary = SeriesSummary::default();
    let mut lines = 0;
    for result in results {
        let (acc, chunk) = result?;
        total = Some(match total {
            None => acc,
            Some(left) => merge(left, acc),
        });
        if chunk.header.is_some() {
            summary.header = chunk.header;
        }
        summary.samples += chunk.samples;
        summary.markers += chunk.markers;
        summary.skipped += chunk.skipped;
        lines += chunk.lines;
    }
    let total = total.unwrap_or_else(&init);
    check_series_summary(path, &summary, lines)?;
    Ok((total, summary))
}

/// Folds the lines that start in `[start, end)` of a file.
fn fold_stretch(
    path: &Path,
    start: u64,
    end: u64,
    mut on_sample: impl FnMut(&SeriesSample),
) -> Result<ChunkSummary, FileError> {
    use std::io::{Seek, SeekFrom};
    let io = |e| FileError::io(path, e);
    let mut file = File::open(path).map_err(io)?;
    let mut summary = ChunkSummary::default();
    // A stretch that starts inside a line leaves that line to the stretch before it.
    let mut skipping = false;
    if start > 0 {
        file.seek(SeekFrom::Start(start - 1)).map_err(io)?;
        let mut byte = [0u8; 1];
        file.read_exact(&mut byte).map_err(io)?;
        skipping = byte[0] != b'\n';
    }
    let mut handle = |line: &[u8], summary: &mut ChunkSummary| {
        summary.lines += 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match parse_series_bytes(line) {
            SeriesLine::Header(h) => summary.header = Some(h),
            SeriesLine::Sample(s) => {
                summary.samples += 1;
                on_sample(&s);
            }
            SeriesLine::Marker => summary.markers += 1,
            SeriesLine::Skipped => summary.skipped += 1,
        }
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut pending: Vec<u8> = Vec::new();
    let mut pos = start;
    loop {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        let data = &buf[..n];
        let mut i = 0;
        if skipping {
            let Some(j) = memchr::memchr(b'\n', data) else {
                pos += n as u64;
                if pos >= end {
                    return Ok(summary);
                }
                continue;
            };
            i = j + 1;
            skipping = false;
            if pos + i as u64 >= end {
                return Ok(summary);
            }
        }
        while let Some(j) = memchr::memchr(b'\n', &data[i..]) {
            let line_end = i + j;
            if pending.is_empty() {
                handle(&data[i..line_end], &mut summary);
            } else {
                pending.extend_from_slice(&data[i..line_end]);
                handle(&pending, &mut summary);
                pending.clear();
            }
            i = line_end + 1;
            // The next line starts at `pos + i`; it is the next stretch's from `end` on.
            if pos + i as u64 >= end {
                return Ok(summary);
            }
        }
        pending.extend_from_slice(&data[i..]);
        pos += n as u64;
    }
    if !pending.is_empty() && !skipping {
        // The last line, without a newline: a recorder killed mid-write leaves one.
        handle(&pending, &mut summary);
    }
    Ok(summary)
}

fn check_series_summary(
    path: &Path,
    summary: &SeriesSummary,
    lines: usize,
) -> Result<(), FileError> {
    if lines == 0 {
        return Err(FileError::invalid(path, "empty file"));
    }
    if summary.header.is_none() && summary.samples == 0 {
        return Err(FileError::invalid(
            path,
            format!("not a series: no '{SERIES_SCHEMA}' header and no sample line"),
        ));
    }
    if let Some(h) = &summary.header {
        if let Some(other) = &h.unknown_engine {
            return Err(FileError::invalid(
                path,
                format!(
                    "series header names engine '{other}', which is none of vllm, sglang, trtllm"
                ),
            ));
        }
    }
    Ok(())
}

/// Parses one series line. Sample lines take a fast path (a flat object of numbers);
/// anything else goes through a full JSON parser, so odd but valid lines still read.
pub fn parse_series_line(line: &str) -> SeriesLine {
    parse_series_bytes(line.as_bytes())
}

/// [`parse_series_line`] on raw bytes; text that is not UTF-8 is skipped.
pub fn parse_series_bytes(line: &[u8]) -> SeriesLine {
    if let Some(sample) = fast_sample(line) {
        return SeriesLine::Sample(sample);
    }
    let Ok(line) = std::str::from_utf8(line) else {
        return SeriesLine::Skipped;
    };
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line.trim()) else {
        return SeriesLine::Skipped;
    };
    if object.contains_key("schema") {
        return SeriesLine::Header(header_from(&object));
    }
    // A recorder's gap and restart records carry times but no reading: never a sample.
    if object.contains_key("gap") || object.contains_key("restart") {
        return SeriesLine::Marker;
    }
    let Some(t_wall) = object.get("t_wall").and_then(Value::as_f64) else {
        return SeriesLine::Skipped;
    };
    let number = |key: &str| object.get(key).and_then(Value::as_f64);
    SeriesLine::Sample(SeriesSample {
        t_wall,
        t_mono_ns: object
            .get("t_mono_ns")
            .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))),
        running: number("running"),
        waiting: number("waiting"),
        kv_usage: number("kv_usage"),
        preemptions: number("preemptions"),
        generation_tokens: number("generation_tokens"),
        prompt_tokens: number("prompt_tokens"),
        paused: number("paused"),
    })
}

fn header_from(object: &Map<String, Value>) -> SeriesHeader {
    let engine_key = object.get("engine").and_then(Value::as_str);
    SeriesHeader {
        url: object.get("url").and_then(Value::as_str).map(str::to_owned),
        interval_s: object.get("interval_s").and_then(Value::as_f64),
        engine: engine_key.and_then(Engine::parse),
        unknown_engine: engine_key
            .filter(|k| Engine::parse(k).is_none())
            .map(str::to_owned),
    }
}

/// The fast path: `{"key": number-or-null, ...}` with plain keys, read straight from the
/// bytes. Returns `None` for anything it does not fully understand, and the caller falls
/// back to serde_json, so the fast path can only be faster, never different.
fn fast_sample(bytes: &[u8]) -> Option<SeriesSample> {
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut sample = SeriesSample::default();
    let mut have_wall = false;
    loop {
        i = skip_ws(i);
        match bytes.get(i)? {
            b'}' => {
                i += 1;
                break;
            }
            b'"' => {}
            _ => return None,
        }
        let key_start = i + 1;
        let key_end = key_start + memchr::memchr(b'"', bytes.get(key_start..)?)?;
        let key = &bytes[key_start..key_end];
        // A key with an escaped quote would end early here: leave it to the full parser.
        if key.last() == Some(&b'\\') {
            return None;
        }
        i = skip_ws(key_end + 1);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(i + 1);
        let (value, end) = scan_value(bytes, i)?;
        i = end;
        let number = match value {
            Scanned::Null => None,
            Scanned::Number(f, _) => Some(f),
        };
        match key {
            b"t_wall" => {
                sample.t_wall = number?;
                have_wall = true;
            }
            b"t_mono_ns" => {
                sample.t_mono_ns = match value {
                    Scanned::Null => None,
                    Scanned::Number(f, integer) => Some(integer.unwrap_or(f as i64)),
                }
            }
            b"running" => sample.running = number,
            b"waiting" => sample.waiting = number,
            b"kv_usage" => sample.kv_usage = number,
            b"preemptions" => sample.preemptions = number,
            b"generation_tokens" => sample.generation_tokens = number,
            b"prompt_tokens" => sample.prompt_tokens = number,
            b"paused" => sample.paused = number,
            b"schema" => return None,
            _ => {}
        }
        i = skip_ws(i);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    (skip_ws(i) == bytes.len() && have_wall).then_some(sample)
}

/// A value the fast path read: `null`, or a number (with its integer value when it was
/// written as an integer).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scanned {
    Null,
    Number(f64, Option<i64>),
}

/// Reads a `null` or a number starting at `start` and returns it with the index just past
/// it. A plain decimal whose digits, read as one integer, stay below 2^53 (the shape
/// recorders write: `0.0`, `22.0`, `1790470252.238873`) is converted exactly by one
/// division by a power of ten, which is correctly rounded because both operands are
/// exact; any other number goes to the standard library's parser. `None` for anything
/// else (a string, `true`), which sends the line to the full JSON parser.
fn scan_value(bytes: &[u8], start: usize) -> Option<(Scanned, usize)> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    if bytes[start..].starts_with(b"null") {
        return Some((Scanned::Null, start + 4));
    }
    let is_delimiter =
        |b: Option<&u8>| matches!(b, None | Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'));
    let negative = bytes.get(start) == Some(&b'-');
    let mut i = start + usize::from(negative);
    let integer_start = i;
    let mut mantissa: u64 = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() && i - integer_start < 19 {
        mantissa = mantissa * 10 + u64::from(bytes[i] - b'0');
        i += 1;
    }
    let integer_digits = i - integer_start;
    if integer_digits == 0 {
        return None;
    }
    let mut fraction_digits = 0;
    let mut plain = true;
    let is_integer = bytes.get(i) != Some(&b'.');
    if !is_integer {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() && integer_digits + fraction_digits < 19
        {
            mantissa = mantissa * 10 + u64::from(bytes[i] - b'0');
            i += 1;
            fraction_digits += 1;
        }
        plain = fraction_digits > 0;
    }
    if plain && is_delimiter(bytes.get(i)) && mantissa < (1 << 53) && fraction_digits < POW10.len()
    {
        let value = mantissa as f64 / POW10[fraction_digits];
        let signed = |m: u64| if negative { -(m as i64) } else { m as i64 };
        return Some((
            Scanned::Number(
                if negative { -value } else { value },
                is_integer.then(|| signed(mantissa)),
            ),
            i,
        ));
    }
    let mut end = i;
    while !is_delimiter(bytes.get(end)) {
        end += 1;
    }
    let raw = &bytes[start..end];
    let value: f64 = std::str::from_utf8(raw).ok()?.parse().ok()?;
    Some((Scanned::Number(value, parse_json_integer(raw)), end))
}

/// A whole JSON number (what [`scan_value`] reads, when it is all of `raw`).
#[cfg(test)]
fn parse_json_number(raw: &[u8]) -> Option<f64> {
    match scan_value(raw, 0)? {
        (Scanned::Number(f, _), end) if end == raw.len() => Some(f),
        _ => None,
    }
}

/// A JSON integer of at most 18 digits, read straight from the bytes.
fn parse_json_integer(raw: &[u8]) -> Option<i64> {
    let (negative, digits) = match raw.first()? {
        b'-' => (true, &raw[1..]),
        _ => (false, raw),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -n } else { n })
}

/// The header line of a series file.
pub fn series_header_json(header: &SeriesHeader) -> String {
    let mut object = Map::new();
    object.insert("schema".into(), SERIES_SCHEMA.into());
    object.insert("url".into(), header.url.clone().into());
    object.insert("interval_s".into(), header.interval_s.into());
    if let Some(engine) = header.engine {
        object.insert("engine".into(), engine.key().into());
    }
    python_style_json(&Value::Object(object))
}

/// One sample line of a series file: only the keys the engine has, `null` for a value
/// the scrape lacked.
pub fn series_sample_json(engine: Engine, sample: &SeriesSample) -> String {
    let mut object = Map::new();
    object.insert(
        "t_wall".into(),
        Value::from((sample.t_wall * 1e6).round() / 1e6),
    );
    object.insert("t_mono_ns".into(), sample.t_mono_ns.into());
    let d = engine.descriptor();
    let mut put = |key: &str, v: Option<f64>| {
        object.insert(key.into(), v.into());
    };
    put("running", sample.running);
    put("waiting", sample.waiting);
    put("kv_usage", sample.kv_usage);
    if d.preemption_counter.is_some() {
        put("preemptions", sample.preemptions);
    }
    put("generation_tokens", sample.generation_tokens);
    put("prompt_tokens", sample.prompt_tokens);
    if d.paused_gauge.is_some() {
        put("paused", sample.paused);
    }
    python_style_json(&Value::Object(object))
}

/// JSON on one line with `": "` and `", "` separators, as Python's `json.dumps` writes.
fn python_style_json(value: &Value) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_object_key<W: ?Sized + io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    serde::Serialize::serialize(value, &mut ser).expect("serialising to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Reads the load tool's result: one JSON object, or JSON lines of which the last
/// non-empty one is the run (SGLang's client appends a line per run).
pub fn read_bench_result(path: &Path) -> Result<BenchResult, FileError> {
    let text = read_text(path)?;
    parse_bench_result(&text).map_err(|m| FileError::invalid(path, m))
}

/// Parses a result file's contents. The load tools are Python programs and write JSON
/// with Python's `NaN` and `Infinity` (see [`crate::pyjson`]); such a value reads as
/// missing, never as a number.
pub fn parse_bench_result(text: &str) -> Result<BenchResult, String> {
    if text.trim().is_empty() {
        return Err("empty file".into());
    }
    let value: Value = match crate::pyjson::from_str(text) {
        Ok(v) => v,
        Err(_) => {
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            crate::pyjson::from_str(last)
                .map_err(|e| format!("not a load tool result: bad JSON ({e})"))?
        }
    };
    let Value::Object(object) = value else {
        return Err("not a load tool result: not a JSON object".into());
    };
    // Numbers only: booleans are rejected, integers truncated.
    let float = |key: &str| match object.get(key) {
        Some(Value::Number(n)) => n.as_f64().filter(|f| f.is_finite()),
        _ => None,
    };
    let int = |key: &str| float(key).map(|f| f.trunc() as i64);
    Ok(BenchResult {
        completed: int("completed"),
        failed: int("failed"),
        total_input_tokens: int("total_input_tokens"),
        total_output_tokens: int("total_output_tokens"),
        duration: float("duration"),
        output_throughput: float("output_throughput"),
        max_concurrency: int("max_concurrency"),
        num_prompts: int("num_prompts"),
        backend: object
            .get("backend")
            .and_then(Value::as_str)
            .map(str::to_owned),
        mean_ttft_ms: float("mean_ttft_ms"),
        median_ttft_ms: float("median_ttft_ms"),
        p99_ttft_ms: float("p99_ttft_ms"),
        mean_tpot_ms: float("mean_tpot_ms"),
    })
}

/// Requests the load tool sent outside its timed run (a test request, warm-up), as its
/// console output announces them. The server finished these too, so T15 expects them.
pub fn untimed_requests(load_log: &str) -> u64 {
    let mut extra = 0u64;
    for line in load_log.lines() {
        if line.contains("Initial test run completed.") {
            extra += 1;
        }
        if let Some(n) = number_after(line, "Warming up with ") {
            extra += n;
        }
        if let Some(rest) = line.split("Warmup completed with ").nth(1) {
            extra += leading_number(rest).unwrap_or(1);
        }
    }
    extra
}

fn number_after(line: &str, anchor: &str) -> Option<u64> {
    leading_number(line.split(anchor).nth(1)?)
}

fn leading_number(text: &str) -> Option<u64> {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Reads a text file that may hold invalid UTF-8 (a boot log with a cut multi-byte
/// character), replacing what it cannot decode.
pub fn read_lossy(path: &Path) -> Result<String, FileError> {
    let bytes = std::fs::read(path).map_err(|e| FileError::io(path, e))?;
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// The files of a run folder, found by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFiles {
    pub boot_logs: Vec<PathBuf>,
    pub before: Option<PathBuf>,
    pub after: Option<PathBuf>,
    pub series: Option<PathBuf>,
    pub bench: Option<PathBuf>,
    pub load_log: Option<PathBuf>,
}

impl RunFiles {
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
/// `bench.json`/`bench.jsonl` else any other JSON file that reads as a load tool result;
/// `load.log`.
pub fn discover_run(dir: &Path) -> Result<RunFiles, FileError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| FileError::io(dir, e))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
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
        load_log: has("load.log").then(|| dir.join("load.log")),
    };
    files.bench = if has("bench.json") {
        Some(dir.join("bench.json"))
    } else if has("bench.jsonl") {
        Some(dir.join("bench.jsonl"))
    } else {
        names
            .iter()
            .filter(|n| {
                (n.ends_with(".json") || n.ends_with(".jsonl"))
                    && !n.ends_with(".snapshot.json")
                    && !n.ends_with(".series.jsonl")
                    && n.as_str() != "results.json"
            })
            .map(|n| dir.join(n))
            .find(|p| {
                read_bench_result(p)
                    .is_ok_and(|b| b.completed.is_some() && b.total_output_tokens.is_some())
            })
    };
    Ok(files)
}

#[cfg(test)]
mod marker_tests {
    use super::{parse_series_line, SeriesLine};

    /// Guards against reading a recorder's gap or restart record as a sample whose
    /// every value is missing.
    #[test]
    fn gap_and_restart_records_are_not_samples() {
        for line in [
            r#"{"gap": "connection refused", "t_wall": 1790470252.25, "t_mono_ns": 5}"#,
            r#"{"restart": "vllm:num_preemptions_total went down", "t_wall": 1.0, "t_mono_ns": 9}"#,
        ] {
            assert_eq!(parse_series_line(line), SeriesLine::Marker, "{line}");
        }
        assert!(matches!(
            parse_series_line(r#"{"t_wall": 1.0, "t_mono_ns": 9, "running": 2.0}"#),
            SeriesLine::Sample(_)
        ));
    }
}

#[cfg(test)]
mod number_tests {
    use super::{parse_json_integer, parse_json_number};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fast_numbers_equal_the_standard_parser(text in "-?[0-9]{1,20}(\\.[0-9]{1,20})?") {
            prop_assert_eq!(parse_json_number(text.as_bytes()), text.parse::<f64>().ok());
        }

        #[test]
        fn any_float_printed_reads_back(v in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
            let text = format!("{v:?}");
            prop_assert_eq!(parse_json_number(text.as_bytes()), Some(v));
        }

        #[test]
        fn integers(n in any::<i64>()) {
            let text = n.to_string();
            let expected = (text.trim_start_matches('-').len() <= 18).then_some(n);
            prop_assert_eq!(parse_json_integer(text.as_bytes()), expected);
        }
    }

    #[test]
    fn odd_numbers() {
        assert_eq!(parse_json_number(b"1e5"), Some(1e5));
        assert_eq!(parse_json_number(b"-0.25"), Some(-0.25));
        assert_eq!(
            parse_json_number(b"1."),
            "1.".parse().ok(),
            "as lenient as the standard parser"
        );
        assert_eq!(parse_json_number(b".5"), None);
        assert_eq!(parse_json_number(b"NaN"), None);
        assert_eq!(parse_json_number(b"-"), None);
        assert_eq!(parse_json_integer(b"12.5"), None);
    }
}
