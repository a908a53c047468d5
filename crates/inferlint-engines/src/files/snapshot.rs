//! Snapshot files (`inferlint.snapshot/1`): one scrape with its clocks, read from our
//! JSON or from bare Prometheus text, and written as the JSON the Python tool shares.

use std::path::Path;

use inferlint_core::engine::scrape_metrics;
use inferlint_core::model::Snapshot;
use serde_json::Value;

use crate::input::{read_bounded, FileError, MAX_SNAPSHOT_BYTES};
use crate::prom;

/// The `schema` a snapshot file carries (shared with the Python tool).
pub const SNAPSHOT_SCHEMA: &str = "inferlint.snapshot/1";

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
            metrics: scrape_metrics(exposition.samples),
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
        metrics: scrape_metrics(exposition.samples),
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
    let mut text = inferlint_core::story::contract::to_indent1(&file);
    text.push('\n');
    text
}
