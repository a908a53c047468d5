//! The files a run leaves: snapshots (`inferlint.snapshot/1`), series
//! (`inferlint.series/1`), the load tool's result file and its console log.
//!
//! Formats are shared with the established Python tool in both directions: the same
//! schema strings and field names, so either tool reads the other's recordings.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use inferlint_core::checks::series::{RefusedReading, SeriesStats};
use inferlint_core::client::ClientAccount;
use inferlint_core::contract::JsonObject;
use inferlint_core::model::{
    BootFacts, GpuReading, GpuSampling, SeriesHeader, SeriesSample, Snapshot,
};
use inferlint_core::{Engine, MetricSet};
use serde_json::{Map, Value};

use crate::prom;

/// The `schema` a snapshot file carries (shared with the Python tool).
pub const SNAPSHOT_SCHEMA: &str = "inferlint.snapshot/1";
/// The `schema` of a series file's header line.
pub const SERIES_SCHEMA: &str = "inferlint.series/1";

/// A file that could not be used. The message reads after "cannot read": it names the
/// file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The file is not what it should be.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

impl FileError {
    pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> FileError {
        FileError::Invalid {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &Path, source: io::Error) -> FileError {
        FileError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The largest snapshot file read: a scrape is tens of kilobytes, and the recorder
/// refuses a body above [`crate::prom::MAX_BODY_BYTES`]; its JSON escaping adds a little.
pub const MAX_SNAPSHOT_BYTES: u64 = 128 << 20;
/// The largest load-tool result file read: a summary is kilobytes; one with every
/// request's timings can reach hundreds of megabytes.
pub const MAX_RESULT_BYTES: u64 = 1 << 30;
/// The longest series line read: a sample is about 250 bytes. A longer line is skipped
/// without being held.
pub const MAX_SERIES_LINE_BYTES: usize = 64 << 10;

/// `1.5 GiB`, `128 MiB`, `900 bytes`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            return if value.fract() == 0.0 {
                format!("{value:.0} {unit}")
            } else {
                format!("{value:.1} {unit}")
            };
        }
    }
    format!("{bytes} bytes")
}

/// What a path names when it is not a regular file, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Opens an input: a regular file, or a link to one (followed). A pipe, a device, a
/// socket or a folder is refused before anything is read: a pipe without a writer would
/// block every command, and `/dev/zero` never ends. On Unix the file is opened without
/// blocking, so even a pipe put in its place after a check cannot hang the open. Returns
/// the file and its length.
pub fn open_input(path: &Path) -> Result<(File, u64), FileError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let file = options.open(path).map_err(|e| FileError::io(path, e))?;
    let meta = file.metadata().map_err(|e| FileError::io(path, e))?;
    if !meta.is_file() {
        let kind = kind_of(&meta);
        let hint = if meta.is_dir() {
            ""
        } else {
            "; save what it gives to a file first (series reads standard input as -)"
        };
        return Err(FileError::invalid(
            path,
            format!("{kind}, not a regular file{hint}"),
        ));
    }
    Ok((file, meta.len()))
}

/// Reads a whole input of at most `limit` bytes; `what` names it in the error
/// (`a snapshot file`).
pub(crate) fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_input(path)?;
    let too_big = |size: u64| {
        FileError::invalid(
            path,
            format!(
                "{}, more than the {} {what} can be",
                size_text(size),
                size_text(limit)
            ),
        )
    };
    if len > limit {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // A file still growing is read no further than the bound.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads a snapshot: our JSON (which must carry the snapshot schema), or bare Prometheus
/// text, which reads as a snapshot without clocks.
pub fn read_snapshot(path: &Path) -> Result<Snapshot, FileError> {
    read_snapshot_noted(path).map(|(snapshot, _)| snapshot)
}

/// [`read_snapshot`], with a note when metrics lines were skipped (`3 lines skipped
/// (line 17: not UTF-8 text)`): a damaged line loses that line, not the file.
pub fn read_snapshot_noted(path: &Path) -> Result<(Snapshot, Option<String>), FileError> {
    let bytes = read_bounded(path, MAX_SNAPSHOT_BYTES, "a snapshot file")?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(FileError::invalid(path, "empty file"));
    }
    let json = bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{');
    if json {
        let text =
            String::from_utf8(bytes).map_err(|_| FileError::invalid(path, "not UTF-8 text"))?;
        return parse_snapshot_noted(&text, path);
    }
    // Bare exposition text: a line that is not UTF-8 is one skipped line.
    let exposition = prom::read(&bytes)
        .map_err(|e| FileError::invalid(path, format!("not Prometheus text: {e}")))?;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    bare_snapshot(text, exposition, path)
}

/// Parses a snapshot file's contents; `path` names it in errors.
pub fn parse_snapshot(text: &str, path: &Path) -> Result<Snapshot, FileError> {
    parse_snapshot_noted(text, path).map(|(snapshot, _)| snapshot)
}

/// [`parse_snapshot`], with the note of skipped metrics lines.
pub fn parse_snapshot_noted(
    text: &str,
    path: &Path,
) -> Result<(Snapshot, Option<String>), FileError> {
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
        // The text is a scrape as a server served it: a damaged line is skipped and
        // counted, as the recorder that took it would have.
        let exposition = prom::read(body.as_bytes())
            .map_err(|e| FileError::invalid(path, format!("metrics text, {e}")))?;
        let note = exposition
            .skipped_note()
            .map(|n| format!("metrics text: {n}"));
        let t_wall = object
            .get("t_wall")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite());
        let t_mono_ns = object.get("t_mono_ns").and_then(|v| {
            v.as_i64()
                .or_else(|| v.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
        });
        let snapshot = Snapshot {
            url: object
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            t_wall,
            t_mono_ns,
            latency_s: object.get("latency_s").and_then(Value::as_f64),
            text: body.to_owned(),
            metrics: MetricSet::new(exposition.samples),
        };
        return Ok((snapshot, note));
    }
    let exposition = prom::read(text.as_bytes())
        .map_err(|e| FileError::invalid(path, format!("not Prometheus text: {e}")))?;
    bare_snapshot(text.to_owned(), exposition, path)
}

/// A snapshot of bare exposition text, without clocks. A file in which not one sample line
/// reads is not Prometheus text at all, and is refused naming its first bad line.
fn bare_snapshot(
    text: String,
    exposition: prom::Exposition,
    path: &Path,
) -> Result<(Snapshot, Option<String>), FileError> {
    let read_whole = exposition.read > exposition.skipped;
    if let Some(first) = exposition.problems.first().filter(|_| !read_whole) {
        return Err(FileError::invalid(
            path,
            format!("not Prometheus text: {first}"),
        ));
    }
    if exposition.samples.is_empty() {
        return Err(FileError::invalid(path, "no metric samples"));
    }
    let note = exposition.skipped_note();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let snapshot = Snapshot {
        url: format!("file:{name}"),
        t_wall: None,
        t_mono_ns: None,
        latency_s: None,
        text,
        metrics: MetricSet::new(exposition.samples),
    };
    Ok((snapshot, note))
}

/// A snapshot as the JSON our files and the Python tool's share (indent 1, trailing
/// newline).
pub fn snapshot_json(snapshot: &Snapshot) -> String {
    /// The file's fields in the file's order, borrowing the page: a scrape of tens of
    /// megabytes is not copied into a JSON value before it is written.
    #[derive(serde::Serialize)]
    struct SnapshotFile<'a> {
        schema: &'a str,
        url: &'a str,
        t_wall: Option<f64>,
        t_mono_ns: Option<i64>,
        latency_s: Option<f64>,
        text: &'a str,
    }
    let file = SnapshotFile {
        schema: SNAPSHOT_SCHEMA,
        url: &snapshot.url,
        t_wall: snapshot.t_wall,
        t_mono_ns: snapshot.t_mono_ns,
        latency_s: snapshot.latency_s,
        text: &snapshot.text,
    };
    let mut text = inferlint_core::contract::to_indent1(&file);
    text.push('\n');
    text
}

/// One line of a series file.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesLine {
    /// The header: schema, engine, address, interval.
    Header(SeriesHeader),
    /// One reading.
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
    /// Samples read and passed on (refused ones not included).
    pub samples: usize,
    /// Gap and restart records.
    pub markers: usize,
    /// Lines that are not samples: not JSON, not an object, no usable `t_wall`, or
    /// longer than [`MAX_SERIES_LINE_BYTES`] (a cut-off last line lands here).
    pub skipped: usize,
    /// The first line refused, if any: a reading that cannot be, time going back, or a
    /// second header (two recordings in one file). Refused samples are not passed on.
    pub refused: Option<RefusedReading>,
}

/// Streams a series file: calls `on_sample` for each sample in order, holding one line
/// at a time, so a day-long recording reads in constant memory. A sample that cannot be
/// (see [`SeriesSummary::refused`]) is not passed on.
pub fn read_series(
    path: &Path,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<SeriesSummary, FileError> {
    let (file, _) = open_input(path)?;
    let chunk = fold_lines(path, file, false, 0, u64::MAX, on_sample)?;
    finish_summary(path, vec![chunk])
}

/// Streams a series from any reader (standard input for `series -`), read to its end
/// once; `name` names it in errors.
pub fn read_series_from(
    name: &Path,
    reader: impl Read,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<SeriesSummary, FileError> {
    let chunk = fold_lines(name, reader, false, 0, u64::MAX, on_sample)?;
    finish_summary(name, vec![chunk])
}

/// Folds a whole series into [`SeriesStats`] (on up to `threads` threads for a large
/// file), with the first refused line, if any, in the statistics: every check of the
/// recording then answers Can't tell, naming it.
pub fn read_series_stats(
    path: &Path,
    threads: usize,
) -> Result<(SeriesStats, SeriesSummary), FileError> {
    let (mut stats, summary) = fold_series(
        path,
        threads,
        SeriesStats::new,
        |stats, s| stats.push(s),
        SeriesStats::merge,
    )?;
    stats.refused.clone_from(&summary.refused);
    stats.gpu_sampling = summary.header.as_ref().and_then(|h| h.gpu);
    Ok((stats, summary))
}

/// [`read_series_stats`] for a reader, read once in order.
pub fn read_series_stats_from(
    name: &Path,
    reader: impl Read,
) -> Result<(SeriesStats, SeriesSummary), FileError> {
    let mut stats = SeriesStats::new();
    let summary = read_series_from(name, reader, |s| stats.push(s))?;
    stats.refused.clone_from(&summary.refused);
    stats.gpu_sampling = summary.header.as_ref().and_then(|h| h.gpu);
    Ok((stats, summary))
}

/// A sample's clocks and line, to check that time goes forward.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    line: usize,
    t_wall: f64,
    t_mono_ns: Option<i64>,
}

impl Stamp {
    fn of(line: usize, s: &SeriesSample) -> Stamp {
        Stamp {
            line,
            t_wall: s.t_wall,
            t_mono_ns: s.t_mono_ns,
        }
    }

    /// Why `self` cannot follow `earlier` in one recording: its monotonic clock does
    /// not move forward (when both have one; the wall clock may step), else its wall
    /// clock goes back.
    fn goes_back_from(&self, earlier: &Stamp) -> Option<String> {
        let (what, back) = match (earlier.t_mono_ns, self.t_mono_ns) {
            (Some(a), Some(b)) => ("t_mono_ns", (b <= a).then(|| format!("{a} -> {b}"))),
            _ => (
                "t_wall",
                (self.t_wall < earlier.t_wall)
                    .then(|| format!("{} -> {}", earlier.t_wall, self.t_wall)),
            ),
        };
        back.map(|change| {
            format!(
                "{what} does not move forward from line {} ({change}): two recordings in one file, or lines out of order",
                earlier.line
            )
        })
    }
}

/// What one stretch of a series file held. Line numbers are the stretch's own, from 1.
#[derive(Debug, Default)]
struct ChunkSummary {
    header: Option<SeriesHeader>,
    /// The lines of the first two headers.
    header_lines: Vec<usize>,
    samples: usize,
    markers: usize,
    skipped: usize,
    lines: usize,
    /// The first refused line and why, and how many were.
    refused: Option<(usize, String)>,
    refused_count: usize,
    first_sample: Option<Stamp>,
    last_sample: Option<Stamp>,
}

impl ChunkSummary {
    fn refuse(&mut self, line: usize, why: String) {
        self.refused_count += 1;
        self.refused.get_or_insert((line, why));
    }
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
    let (_, len) = open_input(path)?;
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
    let (_, len) = open_input(path)?;
    fold_series_of_len(path, len, stretches, init, push, merge)
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
    let mut chunks = Vec::with_capacity(results.len());
    for result in results {
        let (acc, chunk) = result?;
        total = Some(match total {
            None => acc,
            Some(left) => merge(left, acc),
        });
        chunks.push(chunk);
    }
    let total = total.unwrap_or_else(&init);
    let summary = finish_summary(path, chunks)?;
    if summary.refused.is_some() && stretches > 1 {
        // Which samples one pass keeps after a refused line depends on every line before
        // it (the last sample kept), and a stretch knows only its own: a first sample
        // that went back in time from the stretch before was passed on, and a refusal's
        // words name the stretch's line numbers. A file with a refused line is rare; it
        // is read again, in one pass.
        return fold_series_of_len(path, len, 1, init, push, merge);
    }
    Ok((total, summary))
}

/// Joins the stretches' summaries in file order: their counts, their line numbers made
/// the file's, and the checks that cross a boundary (time going forward, one header).
fn finish_summary(path: &Path, chunks: Vec<ChunkSummary>) -> Result<SeriesSummary, FileError> {
    let mut summary = SeriesSummary::default();
    let mut lines = 0;
    let mut refused: Option<(usize, String)> = None;
    let mut refused_count = 0;
    let mut header_lines: Vec<usize> = Vec::new();
    let mut last: Option<Stamp> = None;
    for chunk in chunks {
        let offset = lines;
        if chunk.header.is_some() {
            summary.header = chunk.header;
        }
        header_lines.extend(chunk.header_lines.iter().map(|l| l + offset));
        summary.samples += chunk.samples;
        summary.markers += chunk.markers;
        summary.skipped += chunk.skipped;
        if let (Some(earlier), Some(first)) = (last, chunk.first_sample) {
            let earlier = Stamp {
                line: earlier.line,
                ..earlier
            };
            let first = Stamp {
                line: first.line + offset,
                ..first
            };
            if let Some(why) = first.goes_back_from(&earlier) {
                refused_count += 1;
                if refused.as_ref().is_none_or(|(line, _)| first.line < *line) {
                    refused = Some((first.line, why));
                }
            }
        }
        if let Some((line, why)) = chunk.refused {
            refused_count += chunk.refused_count;
            if refused.as_ref().is_none_or(|(l, _)| line + offset < *l) {
                refused = Some((line + offset, why));
            }
        }
        if let Some(l) = chunk.last_sample {
            last = Some(Stamp {
                line: l.line + offset,
                ..l
            });
        }
        lines += chunk.lines;
    }
    if let Some(&second) = header_lines.get(1) {
        refused_count += header_lines.len() - 1;
        if refused.as_ref().is_none_or(|(line, _)| second < *line) {
            refused = Some((
                second,
                format!(
                    "a second header line (the first is line {}): two recordings in one file",
                    header_lines[0]
                ),
            ));
        }
    }
    summary.refused = refused.map(|(line, what)| RefusedReading {
        line,
        what,
        count: refused_count,
    });
    check_series_summary(path, &summary, lines)?;
    Ok(summary)
}

/// Folds the lines that start in `[start, end)` of a file.
fn fold_stretch(
    path: &Path,
    start: u64,
    end: u64,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<ChunkSummary, FileError> {
    use std::io::{Seek, SeekFrom};
    let io = |e| FileError::io(path, e);
    let (mut file, _) = open_input(path)?;
    // A stretch that starts inside a line leaves that line to the stretch before it.
    let mut skipping = false;
    if start > 0 {
        file.seek(SeekFrom::Start(start - 1)).map_err(io)?;
        let mut byte = [0u8; 1];
        file.read_exact(&mut byte).map_err(io)?;
        skipping = byte[0] != b'\n';
    }
    fold_lines(path, file, skipping, start, end, on_sample)
}

/// Reads lines from `reader` (positioned at byte `start` of its file) until one starts at
/// or after `end`, and folds each. `skipping` drops the partial line it starts in. A line
/// longer than [`MAX_SERIES_LINE_BYTES`] is counted as skipped without being held.
fn fold_lines(
    path: &Path,
    mut reader: impl Read,
    mut skipping: bool,
    start: u64,
    end: u64,
    mut on_sample: impl FnMut(&SeriesSample),
) -> Result<ChunkSummary, FileError> {
    let io = |e| FileError::io(path, e);
    let mut summary = ChunkSummary::default();
    // `None` is a line too long to hold.
    let mut handle = |line: Option<&[u8]>, summary: &mut ChunkSummary| {
        summary.lines += 1;
        let line_number = summary.lines;
        let Some(line) = line.filter(|l| l.len() <= MAX_SERIES_LINE_BYTES) else {
            summary.skipped += 1;
            return;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match parse_series_bytes(line) {
            SeriesLine::Header(h) => {
                summary.header = Some(h);
                if summary.header_lines.len() < 2 {
                    summary.header_lines.push(line_number);
                }
            }
            SeriesLine::Sample(s) => {
                if let Some(why) = s.impossible_reading() {
                    summary.refuse(line_number, why);
                    return;
                }
                let stamp = Stamp::of(line_number, &s);
                if let Some(why) = summary.last_sample.and_then(|l| stamp.goes_back_from(&l)) {
                    summary.refuse(line_number, why);
                    return;
                }
                summary.first_sample.get_or_insert(stamp);
                summary.last_sample = Some(stamp);
                summary.samples += 1;
                on_sample(&s);
            }
            SeriesLine::Marker => summary.markers += 1,
            SeriesLine::Skipped => summary.skipped += 1,
        }
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut pending: Vec<u8> = Vec::new();
    // The line being read is already longer than any line kept: drop it to its end.
    let mut overlong = false;
    let mut pos = start;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
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
            if overlong {
                handle(None, &mut summary);
                overlong = false;
            } else if pending.is_empty() {
                handle(Some(&data[i..line_end]), &mut summary);
            } else {
                pending.extend_from_slice(&data[i..line_end]);
                handle(Some(&pending), &mut summary);
                pending.clear();
            }
            i = line_end + 1;
            // The next line starts at `pos + i`; it is the next stretch's from `end` on.
            if pos + i as u64 >= end {
                return Ok(summary);
            }
        }
        if !overlong {
            pending.extend_from_slice(&data[i..]);
            if pending.len() > MAX_SERIES_LINE_BYTES {
                overlong = true;
                pending = Vec::new();
            }
        }
        pos += n as u64;
    }
    if overlong {
        handle(None, &mut summary);
    } else if !pending.is_empty() && !skipping {
        // The last line, without a newline: a recorder killed mid-write leaves one.
        handle(Some(&pending), &mut summary);
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
        prefix_hits: number(PREFIX_HITS),
        prefix_queries: number(PREFIX_QUERIES),
        gpu: GpuReading {
            other_mib: number(GPU_OTHER_MIB),
            other_util: number(GPU_OTHER_UTIL),
            util: number(GPU_UTIL),
            throttle: number(GPU_THROTTLE),
            sm_mhz: number(GPU_SM_MHZ),
            sm_max_mhz: number(GPU_SM_MAX_MHZ),
        },
    })
}

// The series keys of the prefix cache's counters and of the GPU readings. The Python
// inferlint reads a sample by the keys it knows and ignores these.

/// Series key: prompt tokens the prefix cache served ([`SeriesSample::prefix_hits`]).
pub const PREFIX_HITS: &str = "prefix_cache_hits";
/// Series key: prompt tokens looked up in the prefix cache
/// ([`SeriesSample::prefix_queries`]).
pub const PREFIX_QUERIES: &str = "prefix_cache_queries";
/// Series key: MiB other processes held on the server's GPUs ([`GpuReading::other_mib`]).
pub const GPU_OTHER_MIB: &str = "gpu_other_mib";
/// Series key: the highest SM use of another process ([`GpuReading::other_util`]).
pub const GPU_OTHER_UTIL: &str = "gpu_other_util";
/// Series key: the highest utilisation of the server's GPUs ([`GpuReading::util`]).
pub const GPU_UTIL: &str = "gpu_util";
/// Series key: NVML's clock-event reasons, as its bit mask ([`GpuReading::throttle`]).
pub const GPU_THROTTLE: &str = "gpu_throttle";
/// Series key: the lowest SM clock, MHz ([`GpuReading::sm_mhz`]).
pub const GPU_SM_MHZ: &str = "gpu_sm_mhz";
/// Series key: that GPU's maximum SM clock, MHz ([`GpuReading::sm_max_mhz`]).
pub const GPU_SM_MAX_MHZ: &str = "gpu_sm_max_mhz";

fn header_from(object: &Map<String, Value>) -> SeriesHeader {
    let engine_key = object.get("engine").and_then(Value::as_str);
    SeriesHeader {
        url: object.get("url").and_then(Value::as_str).map(str::to_owned),
        interval_s: object.get("interval_s").and_then(Value::as_f64),
        engine: engine_key.and_then(Engine::parse),
        unknown_engine: engine_key
            .filter(|k| Engine::parse(k).is_none())
            .map(str::to_owned),
        gpu: object
            .get("gpu")
            .and_then(Value::as_str)
            .and_then(GpuSampling::parse),
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
            b"prefix_cache_hits" => sample.prefix_hits = number,
            b"prefix_cache_queries" => sample.prefix_queries = number,
            b"gpu_other_mib" => sample.gpu.other_mib = number,
            b"gpu_other_util" => sample.gpu.other_util = number,
            b"gpu_util" => sample.gpu.util = number,
            b"gpu_throttle" => sample.gpu.throttle = number,
            b"gpu_sm_mhz" => sample.gpu.sm_mhz = number,
            b"gpu_sm_max_mhz" => sample.gpu.sm_max_mhz = number,
            // A header or a gap or restart record whatever its value: the full parser
            // sorts those out (a `"gap": null` is a marker, never a sample).
            b"schema" | b"gap" | b"restart" => return None,
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
    let mut object = JsonObject::new();
    object.insert("schema".into(), SERIES_SCHEMA.into());
    object.insert("url".into(), header.url.clone().into());
    object.insert("interval_s".into(), header.interval_s.into());
    if let Some(engine) = header.engine {
        object.insert("engine".into(), engine.key().into());
    }
    if let Some(gpu) = header.gpu {
        object.insert("gpu".into(), gpu.key().into());
    }
    python_style_json(&object)
}

/// One sample line of a series file: only the keys the engine has, `null` for a value
/// the scrape lacked.
pub fn series_sample_json(engine: Engine, sample: &SeriesSample) -> String {
    let mut object = JsonObject::new();
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
    // Written where the scrape had them, so that recordings of servers (or simulations)
    // that serve no prefix-cache counters read as they always did.
    if d.prefix_cache.is_some() && (sample.prefix_hits.is_some() || sample.prefix_queries.is_some())
    {
        put(PREFIX_HITS, sample.prefix_hits);
        put(PREFIX_QUERIES, sample.prefix_queries);
    }
    // A recorder that read the GPUs writes what it could; a reading that failed writes
    // nothing, which reads back as no reading.
    let g = &sample.gpu;
    if !g.is_empty() {
        put(GPU_OTHER_MIB, g.other_mib);
        put(GPU_OTHER_UTIL, g.other_util);
        put(GPU_UTIL, g.util);
        put(GPU_THROTTLE, g.throttle);
        put(GPU_SM_MHZ, g.sm_mhz);
        put(GPU_SM_MAX_MHZ, g.sm_max_mhz);
    }
    python_style_json(&object)
}

/// JSON on one line with `": "` and `", "` separators, as Python's `json.dumps` writes.
fn python_style_json(value: &impl serde::Serialize) -> String {
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
    value
        .serialize(&mut ser)
        .expect("serialising to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Reads the load tool's result file, whichever tool wrote it, with the files the tool
/// writes beside it ([`crate::loadtools`]).
pub fn read_bench_result(path: &Path) -> Result<ClientAccount, FileError> {
    crate::loadtools::read_result(path)
}

/// Reads a result file's contents alone: any load tool's, recognised by what it holds.
pub fn parse_bench_result(text: &str) -> Result<ClientAccount, String> {
    crate::loadtools::read_bytes_named("result", text.as_bytes()).map_err(|e| match e {
        FileError::Invalid { message, .. } => message,
        other => other.to_string(),
    })
}

/// Requests the load tool sent outside its timed run (a test request, warm-up), as its
/// console output announces them. The server finished these too, so T15 expects them.
pub fn untimed_requests(load_log: &str) -> u64 {
    // Saturating: a log that claims more warm-ups than a u64 holds says nothing a larger
    // count would not, and must not wrap to a small one (nor panic in a debug build).
    load_log
        .lines()
        .map(untimed_in_line)
        .fold(0, u64::saturating_add)
}

/// [`untimed_requests`] of a console log file, read line by line.
pub fn untimed_requests_in(path: &Path) -> Result<u64, FileError> {
    let (file, _) = open_input(path)?;
    let mut extra = 0u64;
    for_each_log_line(path, file, |line| {
        extra = extra.saturating_add(untimed_in_line(line));
    })?;
    Ok(extra)
}

/// The untimed requests one console line announces.
fn untimed_in_line(line: &str) -> u64 {
    let mut extra = 0u64;
    if line.contains("Initial test run completed.") {
        extra += 1;
    }
    if let Some(n) = number_after(line, "Warming up with ") {
        extra = extra.saturating_add(n);
    }
    if let Some(rest) = line.split("Warmup completed with ").nth(1) {
        extra = extra.saturating_add(leading_number(rest).unwrap_or(1));
    }
    extra
}

/// The longest log line read; the rest of a longer one is dropped. Engines' lines are
/// under a few kilobytes; TensorRT-LLM's settings line reaches tens.
pub const MAX_LOG_LINE_BYTES: usize = 1 << 20;

/// Calls `on_line` for each line of a log as it is read, in constant memory: `\n`,
/// `\r\n` and a bare `\r` end a line (as Python reads text), a final line break starts
/// no empty line, bytes that are not UTF-8 are replaced, and a line longer than
/// [`MAX_LOG_LINE_BYTES`] is cut there. `path` names the file in errors.
pub fn for_each_log_line(
    path: &Path,
    mut reader: impl Read,
    mut on_line: impl FnMut(&str),
) -> Result<(), FileError> {
    let mut buf = vec![0u8; 1 << 16];
    let mut line: Vec<u8> = Vec::new();
    // The last line ended with `\r`: a `\n` right after it belongs to that break.
    let mut after_cr = false;
    let mut emit = |line: &mut Vec<u8>| {
        match std::str::from_utf8(line) {
            Ok(text) => on_line(text),
            Err(_) => on_line(&String::from_utf8_lossy(line)),
        }
        line.clear();
    };
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FileError::io(path, e)),
        };
        if n == 0 {
            break;
        }
        let mut data = &buf[..n];
        if after_cr && data.first() == Some(&b'\n') {
            data = &data[1..];
        }
        after_cr = false;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', data) {
            let room = MAX_LOG_LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&data[..at.min(room)]);
            emit(&mut line);
            let mut next = at + 1;
            if data[at] == b'\r' {
                match data.get(at + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => after_cr = true,
                }
            }
            data = &data[next..];
        }
        let room = MAX_LOG_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&data[..data.len().min(room)]);
    }
    if !line.is_empty() {
        emit(&mut line);
    }
    Ok(())
}

/// A boot log file as read: its facts, the engine its own markers name, and why it is not
/// a server's log at all, if it is not (see [`crate::bootlog::not_a_boot_log`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BootLogFile {
    /// What the log says of the start.
    pub facts: BootFacts,
    /// The engine the log's own markers name.
    pub engine: Option<Engine>,
    /// Why it is no server's log, in a few words.
    pub not_a_log: Option<&'static str>,
}

/// Reads a boot log file line by line (see [`for_each_log_line`]) into its facts, in the
/// memory of a few lines whatever its size. The engine is the one the log's first
/// 200,000 characters name, else `hint`.
pub fn read_boot_log(path: &Path, hint: Option<Engine>) -> Result<BootLogFile, FileError> {
    let (mut file, _) = open_input(path)?;
    // Enough bytes for the characters the engine is told from (at most four bytes each).
    let mut head = Vec::new();
    (&mut file)
        .take(800_000)
        .read_to_end(&mut head)
        .map_err(|e| FileError::io(path, e))?;
    let from_log = crate::detect::engine_from_log(&String::from_utf8_lossy(&head));
    let mut reader = crate::bootlog::BootLogReader::new(from_log.or(hint));
    for_each_log_line(path, head.as_slice().chain(file), |line| {
        reader.push_line(line);
    })?;
    let (facts, mut shape) = reader.finish_with_shape();
    if shape.starts_like_json() {
        // Read once more to tell a JSON document (a snapshot, a result file) from log
        // lines: as Python writes JSON when it is the size of a snapshot, else streamed
        // through a strict parser, without holding it.
        let (mut again, len) = open_input(path)?;
        let whole = if len <= MAX_SNAPSHOT_BYTES {
            let mut bytes = Vec::new();
            (&mut again)
                .take(MAX_SNAPSHOT_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|e| FileError::io(path, e))?;
            crate::pyjson::from_str(&String::from_utf8_lossy(&bytes)).is_ok()
        } else {
            serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(again))
                .is_ok()
        };
        shape.set_whole_json(whole);
    }
    let not_a_log = crate::bootlog::not_a_boot_log_by_shape(&shape, from_log.is_some(), &facts);
    Ok(BootLogFile {
        facts,
        engine: from_log,
        not_a_log,
    })
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
                .find(|p| crate::load::shown(p) == *name)
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
/// of one tool); `load.log`.
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
    };
    let results = crate::loadtools::find_results(dir)?;
    files.bench = results.first().cloned();
    if results.len() > 1 {
        files.bench_candidates = results;
    }
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

    /// The recorder's extra keys read back as written, and a line without them reads as
    /// before: no reading, never zeros.
    #[test]
    fn gpu_and_prefix_keys_round_trip() {
        use super::{parse_series_line, SeriesLine};
        use inferlint_core::model::{GpuReading, GpuSampling, SeriesHeader, SeriesSample};
        use inferlint_core::Engine;
        let sample = SeriesSample {
            t_wall: 1_790_826_427.5,
            t_mono_ns: Some(181_013_565_957),
            running: Some(8.0),
            prefix_hits: Some(80.0),
            prefix_queries: Some(880.0),
            gpu: GpuReading {
                other_mib: Some(10_240.0),
                other_util: Some(35.0),
                util: Some(97.0),
                throttle: Some(4.0),
                sm_mhz: Some(1_500.0),
                sm_max_mhz: Some(1_980.0),
            },
            ..SeriesSample::default()
        };
        let line = super::series_sample_json(Engine::Vllm, &sample);
        assert_eq!(parse_series_line(&line), SeriesLine::Sample(sample));
        let plain = "{\"t_wall\": 1.0, \"running\": 2.0}";
        let SeriesLine::Sample(s) = parse_series_line(plain) else {
            panic!("a sample")
        };
        assert!(s.gpu.is_empty() && s.prefix_hits.is_none());
        let header = SeriesHeader {
            gpu: Some(GpuSampling::Nvml),
            ..SeriesHeader::default()
        };
        let SeriesLine::Header(h) = parse_series_line(&super::series_header_json(&header)) else {
            panic!("a header")
        };
        assert_eq!(h.gpu, Some(GpuSampling::Nvml));
    }
}
