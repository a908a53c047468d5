//! Where what the receiver takes in goes: the file (one line per export request, written
//! with one `write` as it is received), the counts, and, when asked, each body as the
//! engine sent it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use inferlint_engines::output::{self, OutputError, Rule, StreamFile};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

use super::json::export_request_json;
use super::wire::Refusal;

/// What a receiver has taken in so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtlpTally {
    /// Export requests written to the file, one line each.
    pub requests: u64,
    /// Spans in them.
    pub spans: u64,
    /// Requests refused (answered with an error, nothing written).
    pub refused: u64,
    /// Of those, bodies over the size bound.
    pub too_large: u64,
    /// Of those, bodies refused because the ones arriving at once held the receiver's
    /// budget.
    pub over_budget: u64,
    /// Connections closed unread because as many as the receiver serves at once were
    /// open.
    pub connections_refused: u64,
    /// Connections that ended in an error: bytes that are not HTTP, a client gone
    /// mid-request.
    pub broken_connections: u64,
    /// The first refusal, in words: `grpc: the export request is larger than 4 MiB ...`.
    pub first_refusal: Option<String>,
}

/// The receiver's file and counts, shared by its connections.
#[derive(Debug)]
pub(super) struct Sink {
    file: Mutex<StreamFile>,
    tally: Mutex<OtlpTally>,
    bodies: Option<PathBuf>,
    /// Bodies kept so far.
    kept: AtomicU64,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves nothing half-done: each write is one call.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Sink {
    /// Creates the file (by the writers' rules: an existing file only with `force`) and
    /// writes `header` as its first line.
    pub(super) fn create(
        out: &Path,
        force: bool,
        header: &str,
        bodies: Option<PathBuf>,
    ) -> Result<Sink, OutputError> {
        let mut file = output::create_stream(out, &Rule::force(force))?;
        let mut line = header.to_owned();
        line.push('\n');
        file.write_all(line.as_bytes())
            .map_err(|source| OutputError::Io {
                path: out.to_owned(),
                source,
            })?;
        if let Some(dir) = &bodies {
            std::fs::create_dir_all(dir).map_err(|source| OutputError::Io {
                path: dir.clone(),
                source,
            })?;
        }
        Ok(Sink {
            file: Mutex::new(file),
            tally: Mutex::new(OtlpTally::default()),
            bodies,
            kept: AtomicU64::new(0),
        })
    }

    /// Writes one export request as a line and counts it.
    pub(super) fn write(&self, request: &ExportTraceServiceRequest) -> Result<(), Refusal> {
        let mut line = export_request_json(request);
        line.push('\n');
        let spans: usize = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        locked(&self.file)
            .write_all(line.as_bytes())
            .map_err(|e| Refusal::NotWritten(e.to_string()))?;
        let mut tally = locked(&self.tally);
        tally.requests += 1;
        tally.spans += spans as u64;
        Ok(())
    }

    /// Counts a refusal; `transport` names how it came (`grpc`, `http`).
    pub(super) fn refused(&self, transport: &str, refusal: &Refusal) {
        let mut tally = locked(&self.tally);
        tally.refused += 1;
        if refusal.is_too_large() {
            tally.too_large += 1;
        }
        if refusal.is_over_budget() {
            tally.over_budget += 1;
        }
        if tally.first_refusal.is_none() {
            tally.first_refusal = Some(format!("{transport}: {refusal}"));
        }
    }

    /// Counts a connection closed unread.
    pub(super) fn connection_refused(&self) {
        locked(&self.tally).connections_refused += 1;
    }

    /// Counts a connection that ended in an error.
    pub(super) fn connection_broken(&self) {
        locked(&self.tally).broken_connections += 1;
    }

    /// Keeps a body as it came, when asked to: `NNNN-TRANSPORT[-ENCODING].bin`, numbered
    /// in the order received. A body that cannot be kept is left out; the request itself
    /// is still received.
    pub(super) fn keep_body(&self, transport: &str, encoding: Option<&str>, body: &[u8]) {
        let Some(dir) = &self.bodies else {
            return;
        };
        let n = self.kept.fetch_add(1, Ordering::Relaxed) + 1;
        let encoding: String = encoding
            .unwrap_or("")
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect();
        let name = if encoding.is_empty() || encoding == "identity" {
            format!("{n:04}-{transport}.bin")
        } else {
            format!("{n:04}-{transport}-{encoding}.bin")
        };
        let _ = std::fs::write(dir.join(name), body);
    }

    /// What was taken in so far.
    pub(super) fn tally(&self) -> OtlpTally {
        locked(&self.tally).clone()
    }

    /// Flushes the file to the disk.
    pub(super) fn sync(&self) -> std::io::Result<()> {
        locked(&self.file).sync_all()
    }
}
