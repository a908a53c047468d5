//! What the KV-event and forward-pass subscribers share: the thread that receives into a
//! stream file, stopped once (by its owner or when dropped), and the writer that keeps
//! its first write error.

use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use inferlint_engines::output::StreamFile;

use crate::stop::Stop;

/// Writes lines, each in one call, and keeps the first error: nothing more is written
/// after it, and what was received is still counted.
#[derive(Debug, Default)]
pub(crate) struct LineWriter {
    /// The first write that failed, in words.
    pub(crate) error: Option<String>,
}

impl LineWriter {
    /// Writes `line` and its newline, unless a write already failed.
    pub(crate) fn put(&mut self, file: &mut StreamFile, mut line: String) {
        use std::io::Write;
        if self.error.is_some() {
            return;
        }
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            self.error = Some(format!("cannot write {}: {e}", file.path().display()));
        }
    }

    /// Flushes the file to the disk, unless a write already failed.
    pub(crate) fn sync(&mut self, file: &StreamFile, path: &Path) {
        if self.error.is_none() {
            if let Err(e) = file.sync_all() {
                self.error = Some(format!("cannot write {}: {e}", path.display()));
            }
        }
    }
}

/// A summary a receiving thread returns, and the one given when it returned none.
pub(crate) trait Summary: Send + 'static {
    /// The summary of the file at `path` when the thread gave none (`why`).
    fn lost(path: PathBuf, why: &str) -> Self;
}

/// A thread receiving into the file at `path`. Dropping it stops it as
/// [`Receiving::finish`] does.
#[derive(Debug)]
pub(crate) struct Receiving<S: Summary> {
    stop: Stop,
    path: PathBuf,
    thread: Option<JoinHandle<S>>,
}

impl<S: Summary> Receiving<S> {
    pub(crate) fn new(stop: Stop, path: PathBuf, thread: JoinHandle<S>) -> Receiving<S> {
        Receiving {
            stop,
            path,
            thread: Some(thread),
        }
    }

    /// The file being written.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Stops the thread and returns its summary: once; a second call, or a thread that
    /// panicked, gives a summary saying so.
    pub(crate) fn finish(&mut self) -> S {
        self.stop.stop();
        match self.thread.take() {
            Some(thread) => thread
                .join()
                .unwrap_or_else(|_| S::lost(self.path.clone(), "the subscriber's thread panicked")),
            None => S::lost(self.path.clone(), "already stopped"),
        }
    }
}

impl<S: Summary> Drop for Receiving<S> {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}
