//! Follows the step file of a server already running (`INFERLINT_STEPS=FILE`, the
//! `inferlint.steps/1` format of docs/steps.md) for the window a recording covers, and
//! copies that window into the run folder's `steps.jsonl`.
//!
//! The copy is the FILE's header line (its clock anchors place every step on the
//! recording's clock) and then every complete line the server appended from the start of
//! the recording until its end. What FILE held before the start is another window's and
//! is not copied (a line being written at the start is the step before it, and is skipped
//! too); a last line still being written at the end is not copied. The file is read in
//! chunks as it grows: nothing is held but one unfinished line, at most
//! [`MAX_STEP_LINE_BYTES`] (a longer one is skipped, as the reader would skip it).
//!
//! A server that restarts truncates FILE and writes a new header (the plugin opens it
//! anew); a new process's steps have other clock anchors and another numbering, so the
//! follower stops there and says the server restarted: the copy keeps what the first
//! process wrote within the window, and the checks judge that. A FILE that vanishes or is
//! replaced by another file is the same. A FILE that never gets a header writes no copy
//! at all: an empty file is never presented as steps.
//!
//! [`StepsFollow`] is the follower itself, one read per [`StepsFollow::poll`], for a
//! caller (or a test) that drives it; [`StepsFollower`] runs it on a thread of its own,
//! polling every [`POLL`].

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use inferlint_engines::files::{read_steps_from, MAX_STEP_LINE_BYTES, STEPS_SCHEMA};
use inferlint_engines::output::{self, OutputError, Rule, StreamFile};

/// How often [`StepsFollower`] reads what the server appended. The plugin flushes
/// whenever its queue empties, so a tenth of a second keeps the copy close behind.
pub const POLL: Duration = Duration::from_millis(100);

/// The bytes read from FILE at a time.
const CHUNK: usize = 64 << 10;

/// Why following stopped before the end of the recording, or why it never began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepsProblem {
    /// FILE never held a complete header line during the recording (missing or empty:
    /// the plugin writes it at the server's first step, or is not installed, or the
    /// server was not started with `INFERLINT_STEPS=FILE`).
    NoHeader,
    /// FILE's first line is not an `inferlint.steps/1` header with its clock anchors;
    /// the reason.
    NotSteps(String),
    /// FILE was truncated or its header changed: the server restarted and began a new
    /// file.
    Restarted,
    /// FILE was removed or replaced by another file.
    Vanished,
}

impl std::fmt::Display for StepsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepsProblem::NoHeader => write!(
                f,
                "it never held an {STEPS_SCHEMA} header (was the server started with INFERLINT_STEPS naming it, with the plugin installed? it writes its header at the first step)"
            ),
            StepsProblem::NotSteps(why) => write!(f, "not a step file: {why}"),
            StepsProblem::Restarted => write!(
                f,
                "the server restarted (the file was truncated and began anew): its steps after the restart are not copied"
            ),
            StepsProblem::Vanished => write!(
                f,
                "the file was removed or replaced: the steps after that are not copied"
            ),
        }
    }
}

/// Why following could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StepsError {
    /// FILE holds a first line that is not a step file's header.
    #[error("{}: {}", .path.display(), .problem)]
    NotSteps {
        /// The step file.
        path: PathBuf,
        /// What is wrong with it.
        problem: StepsProblem,
    },
    /// FILE exists but cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The step file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// An earlier copy could not be removed (`force`).
    #[error("cannot remove {}: {source}", .path.display())]
    Remove {
        /// The copy's path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The copy may not be written where asked.
    #[error("{0}")]
    Output(#[from] OutputError),
    /// The follower's thread could not start.
    #[error("cannot start the step follower: {0}")]
    Thread(io::Error),
}

/// What a follow copied, and what it could not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepsSummary {
    /// The server's step file.
    pub source: PathBuf,
    /// The copy; `None` when nothing was written (no header ever came).
    pub out: Option<PathBuf>,
    /// Lines copied after the header: steps, gaps, finished requests, the end line.
    pub lines: u64,
    /// Of them, gap lines (steps the plugin dropped).
    pub gaps: u64,
    /// Complete lines FILE held past its header when following began (another window's:
    /// not copied).
    pub before: u64,
    /// Lines longer than [`MAX_STEP_LINE_BYTES`], skipped.
    pub too_long: u64,
    /// Bytes of a last line still being written when following ended (not copied).
    pub unfinished_bytes: u64,
    /// Why following stopped early, or never began.
    pub problem: Option<StepsProblem>,
    /// The first write of the copy that failed: it stops there.
    pub write_error: Option<String>,
}

impl StepsSummary {
    /// One line for the end of a recording: what was copied, and what was not.
    pub fn line(&self) -> String {
        let mut line = match &self.out {
            Some(out) => format!(
                "{} step-file line(s) from {} -> {}",
                self.lines,
                self.source.display(),
                out.display()
            ),
            None => format!("no steps copied from {}", self.source.display()),
        };
        if self.gaps > 0 {
            line.push_str(&format!(
                " ({} gap line(s): the plugin dropped steps)",
                self.gaps
            ));
        }
        if self.too_long > 0 {
            line.push_str(&format!(
                " ({} line(s) over {} bytes skipped)",
                self.too_long, MAX_STEP_LINE_BYTES
            ));
        }
        line
    }

    /// The warning a reader must see, if any: why the copy is not the whole window (or
    /// there is none), or why writing it failed.
    pub fn warning(&self) -> Option<String> {
        if let Some(e) = &self.write_error {
            return Some(format!("steps: {e}"));
        }
        self.problem
            .as_ref()
            .map(|p| format!("steps: {}: {p}", self.source.display()))
    }
}

/// The follower: reads what FILE's server appended since the last read, and copies it.
#[derive(Debug)]
pub struct StepsFollow {
    source: PathBuf,
    out_path: PathBuf,
    force: bool,
    file: Option<File>,
    #[cfg(unix)]
    identity: Option<(u64, u64)>,
    /// The header line (without its newline), once read.
    header: Option<Vec<u8>>,
    /// The offset in FILE read up to.
    pos: u64,
    /// The bytes of a line not yet complete.
    partial: Vec<u8>,
    /// Skipping to the next newline: the line under way when following began, or one
    /// too long to hold.
    skipping: bool,
    out: Option<StreamFile>,
    summary: StepsSummary,
    ended: bool,
}

impl StepsFollow {
    /// Begins following `source` now: what it holds is left behind. Its header, when it
    /// has one, is checked and copied to `out` at once; a first line that is not a step
    /// file's header is refused. `out` is checked against `force` here (an existing file
    /// is refused without it, and removed with it, so that no earlier copy is left to pass
    /// for this window's) and created when the header is read.
    pub fn start(source: &Path, out: &Path, force: bool) -> Result<StepsFollow, StepsError> {
        let reads = [(source, "the server's step file")];
        let rule = Rule {
            force,
            reads: &reads,
            ours: None,
        };
        output::check(out, &rule)?;
        let mut follow = StepsFollow {
            source: source.to_owned(),
            out_path: out.to_owned(),
            force,
            file: None,
            #[cfg(unix)]
            identity: None,
            header: None,
            pos: 0,
            partial: Vec::new(),
            skipping: false,
            out: None,
            summary: StepsSummary {
                source: source.to_owned(),
                out: None,
                lines: 0,
                gaps: 0,
                before: 0,
                too_long: 0,
                unfinished_bytes: 0,
                problem: None,
                write_error: None,
            },
            ended: false,
        };
        let read_error = |source: io::Error| StepsError::Read {
            path: follow.source.clone(),
            source,
        };
        if let Some(mut file) = open(source).map_err(read_error)? {
            let len = file.metadata().map_err(read_error)?.len();
            let header = read_header(&mut file).map_err(read_error)?;
            match header {
                Some(Ok(header)) => {
                    // Everything past the header is another window's; so is a line
                    // being written now.
                    let start = header.len() as u64 + 1;
                    if len > start {
                        let ends_line = last_byte(&mut file, len).map_err(read_error)? == b'\n';
                        follow.summary.before =
                            count_lines(&mut file, start, len).map_err(read_error)?;
                        follow.skipping = !ends_line;
                    }
                    follow.pos = len.max(start);
                    follow.remember(&file);
                    follow.file = Some(file);
                    follow.header = Some(header);
                }
                Some(Err(problem)) => {
                    return Err(StepsError::NotSteps {
                        path: source.to_owned(),
                        problem,
                    })
                }
                // A header under way (or nothing yet): the server's first step comes
                // within the window, and everything it writes belongs to it.
                None => {
                    follow.remember(&file);
                    follow.file = Some(file);
                }
            }
        }
        if force && fs::symlink_metadata(out).is_ok() {
            fs::remove_file(out).map_err(|source| StepsError::Remove {
                path: out.to_owned(),
                source,
            })?;
        }
        if let Some(header) = follow.header.clone() {
            follow.copy(&header);
        }
        Ok(follow)
    }

    /// Whether the header has been read (and the copy begun).
    pub fn has_header(&self) -> bool {
        self.header.is_some()
    }

    /// What has been copied so far.
    pub fn summary(&self) -> &StepsSummary {
        &self.summary
    }

    /// Whether following has stopped (the server restarted, FILE vanished or is no step
    /// file, or the copy could not be written).
    pub fn stopped(&self) -> bool {
        self.ended
    }

    /// Reads what FILE's server appended and copies its complete lines; a line still
    /// being written waits for the next poll.
    pub fn poll(&mut self) {
        if self.ended {
            return;
        }
        // A read that failed is FILE gone from under us.
        if self.read_new().is_err() {
            self.stop_with(StepsProblem::Vanished);
        }
    }

    /// Reads what was appended up to now for the last time, leaves a line still being
    /// written, and closes the copy.
    pub fn finish(mut self) -> StepsSummary {
        self.poll();
        self.summary.unfinished_bytes = self.partial.len() as u64;
        if self.header.is_none() && self.summary.problem.is_none() {
            self.summary.problem = Some(StepsProblem::NoHeader);
        }
        if let Some(mut out) = self.out.take() {
            if let Err(e) = out.flush().and_then(|()| out.sync_all()) {
                self.write_failed(e);
            }
        }
        self.summary
    }

    #[cfg(unix)]
    fn remember(&mut self, file: &File) {
        use std::os::unix::fs::MetadataExt;
        self.identity = file.metadata().ok().map(|m| (m.dev(), m.ino()));
    }

    #[cfg(not(unix))]
    fn remember(&mut self, _file: &File) {}

    /// Whether `meta` (FILE's path now) is still the file opened.
    #[cfg(unix)]
    fn same_file(&self, meta: &fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.identity
            .is_none_or(|id| id == (meta.dev(), meta.ino()))
    }

    #[cfg(not(unix))]
    fn same_file(&self, _meta: &fs::Metadata) -> bool {
        true
    }

    fn stop_with(&mut self, problem: StepsProblem) {
        self.summary.problem.get_or_insert(problem);
        self.ended = true;
        self.partial.clear();
    }

    fn read_new(&mut self) -> io::Result<()> {
        let meta = match fs::metadata(&self.source) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if self.file.is_some() && self.header.is_some() {
                    self.stop_with(StepsProblem::Vanished);
                }
                // Before the header, a missing FILE may still appear.
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        if self.file.is_none() || !self.same_file(&meta) {
            if self.header.is_some() {
                self.stop_with(StepsProblem::Vanished);
                return Ok(());
            }
            // Before the header, the file that appears is the server's new file.
            match open(&self.source)? {
                Some(file) => {
                    self.remember(&file);
                    self.file = Some(file);
                    self.pos = 0;
                    self.partial.clear();
                }
                None => return Ok(()),
            }
        }
        let Some(mut file) = self.file.take() else {
            return Ok(());
        };
        let result = self.read_from(&mut file, meta.len());
        self.file = Some(file);
        result
    }

    fn read_from(&mut self, file: &mut File, len: u64) -> io::Result<()> {
        if len < self.pos {
            if self.header.is_some() {
                self.stop_with(StepsProblem::Restarted);
            } else {
                // Truncated before any header: what comes is all new.
                self.pos = 0;
                self.partial.clear();
                self.skipping = false;
            }
            return Ok(());
        }
        // The header still FILE's first line, or the server began the file anew.
        if let Some(header) = &self.header {
            let mut now = vec![0u8; header.len() + 1];
            file.seek(SeekFrom::Start(0))?;
            let read = read_fully(file, &mut now)?;
            if read < now.len() || now[..header.len()] != header[..] || now[header.len()] != b'\n' {
                self.stop_with(StepsProblem::Restarted);
                return Ok(());
            }
        }
        file.seek(SeekFrom::Start(self.pos))?;
        let mut chunk = vec![0u8; CHUNK];
        while self.pos < len && !self.ended {
            let want = usize::try_from(len - self.pos).unwrap_or(CHUNK).min(CHUNK);
            let n = file.read(&mut chunk[..want])?;
            if n == 0 {
                break;
            }
            self.pos += n as u64;
            self.take(&chunk[..n]);
        }
        Ok(())
    }

    /// Splits bytes read into lines and copies each complete one.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && !self.ended {
            match bytes.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    let (line, rest) = (&bytes[..at], &bytes[at + 1..]);
                    bytes = rest;
                    if std::mem::take(&mut self.skipping) {
                        self.partial.clear();
                        continue;
                    }
                    if self.partial.len() + line.len() > MAX_STEP_LINE_BYTES {
                        self.partial.clear();
                        self.summary.too_long += 1;
                        if self.header.is_none() {
                            self.stop_with(StepsProblem::NotSteps(format!(
                                "its first line is longer than {MAX_STEP_LINE_BYTES} bytes"
                            )));
                        }
                        continue;
                    }
                    let whole = if self.partial.is_empty() {
                        std::borrow::Cow::Borrowed(line)
                    } else {
                        self.partial.extend_from_slice(line);
                        std::borrow::Cow::Owned(std::mem::take(&mut self.partial))
                    };
                    self.line(&whole);
                }
                None => {
                    if !self.skipping {
                        if self.partial.len() + bytes.len() > MAX_STEP_LINE_BYTES {
                            self.partial.clear();
                            self.summary.too_long += 1;
                            self.skipping = true;
                            if self.header.is_none() {
                                self.stop_with(StepsProblem::NotSteps(format!(
                                    "its first line is longer than {MAX_STEP_LINE_BYTES} bytes"
                                )));
                            }
                        } else {
                            self.partial.extend_from_slice(bytes);
                        }
                    }
                    bytes = &[];
                }
            }
        }
    }

    /// One complete line, without its newline.
    fn line(&mut self, line: &[u8]) {
        if self.header.is_none() {
            match check_header(line) {
                Ok(()) => {
                    self.header = Some(line.to_vec());
                    self.copy(line);
                }
                Err(problem) => self.stop_with(problem),
            }
            return;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // A second header without a truncation: a new process writing into the same
        // file.
        if has_key(line, "schema") {
            self.stop_with(StepsProblem::Restarted);
            return;
        }
        if has_key(line, "gap") {
            self.summary.gaps += 1;
        }
        self.summary.lines += 1;
        self.copy(line);
    }

    fn copy(&mut self, line: &[u8]) {
        if self.summary.write_error.is_some() {
            return;
        }
        if self.out.is_none() {
            match output::create_stream(&self.out_path, &Rule::force(self.force)) {
                Ok(out) => {
                    self.summary.out = Some(self.out_path.clone());
                    self.out = Some(out);
                }
                Err(e) => {
                    self.summary.write_error = Some(e.to_string());
                    self.ended = true;
                    return;
                }
            }
        }
        let Some(out) = self.out.as_mut() else {
            return;
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
            self.write_failed(e);
        }
    }

    fn write_failed(&mut self, e: io::Error) {
        self.summary
            .write_error
            .get_or_insert_with(|| format!("cannot write {}: {e}", self.out_path.display()));
        self.ended = true;
    }
}

/// Opens FILE, `None` when it does not exist.
fn open(path: &Path) -> io::Result<Option<File>> {
    match File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// FILE's first line checked as a header: `None` while it is not complete.
fn read_header(file: &mut File) -> io::Result<Option<Result<Vec<u8>, StepsProblem>>> {
    file.seek(SeekFrom::Start(0))?;
    let mut held = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = file.read(&mut chunk)?;
        if n == 0 {
            return Ok(None);
        }
        if let Some(at) = chunk[..n].iter().position(|&b| b == b'\n') {
            held.extend_from_slice(&chunk[..at]);
            return Ok(Some(check_header(&held).map(|()| held)));
        }
        held.extend_from_slice(&chunk[..n]);
        if held.len() > MAX_STEP_LINE_BYTES {
            return Ok(Some(Err(StepsProblem::NotSteps(format!(
                "its first line is longer than {MAX_STEP_LINE_BYTES} bytes"
            )))));
        }
    }
}

/// A header line checked by the step file's own reader (schema and clock anchors).
fn check_header(line: &[u8]) -> Result<(), StepsProblem> {
    read_steps_from(Path::new("FILE"), line)
        .map(|_| ())
        .map_err(|e| {
            let text = e.to_string();
            // The reader says "FILE: line 1: why"; the why is what the caller names.
            let why = text
                .split_once("line 1: ")
                .map_or(text.as_str(), |(_, why)| why);
            StepsProblem::NotSteps(why.to_owned())
        })
}

fn last_byte(file: &mut File, len: u64) -> io::Result<u8> {
    file.seek(SeekFrom::Start(len - 1))?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// Complete lines in `start..len`: what the window leaves behind.
fn count_lines(file: &mut File, start: u64, len: u64) -> io::Result<u64> {
    file.seek(SeekFrom::Start(start))?;
    let mut reader = file.take(len - start);
    let mut chunk = vec![0u8; CHUNK];
    let mut lines = 0u64;
    loop {
        let n = reader.read(&mut chunk)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += chunk[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

fn read_fully(file: &mut File, buf: &mut [u8]) -> io::Result<usize> {
    let mut read = 0;
    while read < buf.len() {
        match file.read(&mut buf[read..])? {
            0 => break,
            n => read += n,
        }
    }
    Ok(read)
}

/// Whether a line is a JSON object with `key`: parsed only when the key's quoted name
/// is in it at all, so that a step line costs a byte scan.
fn has_key(line: &[u8], key: &str) -> bool {
    let quoted = format!("\"{key}\"");
    line.windows(quoted.len()).any(|w| w == quoted.as_bytes())
        && serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line)
            .is_ok_and(|o| o.contains_key(key))
}

/// [`StepsFollow`] on a thread of its own, reading every [`POLL`] until
/// [`StepsFollower::stop`].
#[derive(Debug)]
pub struct StepsFollower {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<StepsSummary>,
    source: PathBuf,
    started_with_header: bool,
}

impl StepsFollower {
    /// [`StepsFollow::start`] (its refusals), then follows on a thread.
    pub fn start(source: &Path, out: &Path, force: bool) -> Result<StepsFollower, StepsError> {
        let mut follow = StepsFollow::start(source, out, force)?;
        let started_with_header = follow.has_header();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("inferlint-steps".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(POLL) {
                    follow.poll();
                }
                follow.finish()
            })
            .map_err(StepsError::Thread)?;
        Ok(StepsFollower {
            stop,
            thread,
            source: source.to_owned(),
            started_with_header,
        })
    }

    /// Whether FILE held its header when following began (if not, the copy begins when
    /// the server writes it: at its first step).
    pub fn started_with_header(&self) -> bool {
        self.started_with_header
    }

    /// Reads what was appended up to now for the last time and returns what was copied.
    pub fn stop(self) -> StepsSummary {
        let _ = self.stop.send(());
        let source = self.source;
        self.thread.join().unwrap_or_else(|_| StepsSummary {
            source: source.clone(),
            out: None,
            lines: 0,
            gaps: 0,
            before: 0,
            too_long: 0,
            unfinished_bytes: 0,
            problem: None,
            write_error: Some("the step follower's thread ended unexpectedly".into()),
        })
    }
}
