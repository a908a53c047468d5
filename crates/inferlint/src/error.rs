//! The one error type of the library: a kind to match on, the path or input it
//! concerns, and the one-line message the command line prints for the same failure.

use std::fmt;
use std::path::{Path, PathBuf};

use inferlint_engines::files::FileError;
use inferlint_engines::load::LoadError;

/// What kind of failure an [`Error`] is. New kinds may be added in a minor release, so a
/// `match` needs a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file or folder could not be read: missing, not permitted, not a regular file.
    /// [`Error::io_kind`] says what the system said.
    Io,
    /// An input is not what it should be: metrics text that is not Prometheus text, a
    /// damaged snapshot, recording or result file, a boot log that is no server's log,
    /// a client summary whose numbers cannot be; or a folder with several result files of
    /// which none, or more than one, fits the run.
    Invalid,
    /// An input from another engine than the one named, or inputs from two engines (a
    /// run's files come from one server); or an engine name that is none of those
    /// inferlint knows.
    Engine,
    /// The before and after readings cannot be two readings of one run: one file given as
    /// both, or given in the wrong order.
    Readings,
    /// A path that is no folder, or a folder that holds none of a run's files.
    NoRun,
    /// The inputs allow no check at all (only a result file, say): the refusal `inferlint
    /// report` gives, rather than a report that would read as a pass.
    NothingChecked,
    /// A live server could not be recorded: the address is not one a server can have,
    /// nothing answers there, or it serves no engine's metrics.
    Server,
    /// A blocking call made inside an async runtime: await the async function instead.
    InsideRuntime,
    /// A file could not be written, or may not be (it exists, it is an input, a link).
    Write,
    /// The replay model cannot speak for the run ([`Run::whatif`](crate::Run::whatif): no
    /// per-request records, a hybrid model, a restart, a pool or running limit the files
    /// do not state), or cannot make the change asked of it
    /// ([`whatif::predict`](crate::whatif::predict)). The message says why.
    Unmodelled,
}

/// Why something could not be done. Its message is one line, a lowercase fragment that
/// names the file, input or address concerned and what is wrong with it, as `inferlint`
/// prints it; [`Error::kind`] says what kind of failure it is, [`Error::path`] and
/// [`Error::input`] what it concerns.
///
/// ```
/// let error = inferlint::Run::builder()
///     .before_metrics("this is not Prometheus text")
///     .unwrap_err();
/// assert_eq!(error.kind(), inferlint::ErrorKind::Invalid);
/// assert_eq!(error.input(), Some("the before metrics"));
/// assert!(error.to_string().starts_with("cannot read the before metrics: "));
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    path: Option<PathBuf>,
    input: Option<String>,
    io_kind: Option<std::io::ErrorKind>,
    message: String,
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file or folder the error concerns, when it concerns one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The input the error concerns when it is not a file (`the before metrics`, `the
    /// sample at t_wall 1700000000.5`, a server's address), as the message names it.
    pub fn input(&self) -> Option<&str> {
        self.input.as_deref()
    }

    /// What the system said, for an [`ErrorKind::Io`] or [`ErrorKind::Write`] failure
    /// that came from it.
    pub fn io_kind(&self) -> Option<std::io::ErrorKind> {
        self.io_kind
    }

    pub(crate) fn new(kind: ErrorKind, message: impl fmt::Display) -> Error {
        Error {
            kind,
            path: None,
            input: None,
            io_kind: None,
            message: message.to_string(),
        }
    }

    pub(crate) fn with_input(mut self, input: impl Into<String>) -> Error {
        self.input = Some(input.into());
        self
    }

    pub(crate) fn with_path(mut self, path: &Path) -> Error {
        self.path = Some(path.to_owned());
        self
    }

    pub(crate) fn with_io_kind(mut self, kind: std::io::ErrorKind) -> Error {
        self.io_kind = Some(kind);
        self
    }

    /// An input given as text rather than a file: `what` names it as the message does.
    pub(crate) fn invalid_input(what: &str, why: impl fmt::Display) -> Error {
        Error::new(ErrorKind::Invalid, format!("cannot read {what}: {why}")).with_input(what)
    }
}

impl Error {
    /// The loader's error, as the library's (a conversion of its own rather than a public
    /// `From`, which would put the inner crate's type in the public API).
    pub(crate) fn from_load(error: LoadError) -> Error {
        let kind = match &error {
            LoadError::File(FileError::Io { .. }) => ErrorKind::Io,
            LoadError::File(_) | LoadError::NotALog { .. } | LoadError::ResultChoice(_) => {
                ErrorKind::Invalid
            }
            LoadError::UnknownEngine { .. }
            | LoadError::Mismatch(_)
            | LoadError::MixedEngines { .. } => ErrorKind::Engine,
            LoadError::SameSnapshot { .. } | LoadError::OutOfOrder { .. } => ErrorKind::Readings,
            LoadError::NotAFolder { .. } | LoadError::NoRunFiles { .. } => ErrorKind::NoRun,
            // A kind added to the loader later: an input it refused.
            _ => ErrorKind::Invalid,
        };
        let io_kind = match &error {
            LoadError::File(FileError::Io { source, .. }) => Some(source.kind()),
            _ => None,
        };
        Error {
            kind,
            path: error.path().map(Path::to_owned),
            input: None,
            io_kind,
            message: error.to_string(),
        }
    }
}

#[cfg(feature = "live")]
impl Error {
    /// The recorder's error, as the library's (a conversion of its own rather than a
    /// public `From`, which would put the inner crate's type in the public API).
    pub(crate) fn from_record(error: inferlint_live::RecordError) -> Error {
        use inferlint_engines::output::OutputError;
        use inferlint_live::RecordError;
        let mut message = error.to_string();
        let mut input = None;
        let (kind, path, io_kind) = match &error {
            RecordError::Interval(_) => {
                input = Some("the interval".to_owned());
                (ErrorKind::Invalid, None, None)
            }
            RecordError::Duration(_) => {
                input = Some("the duration".to_owned());
                (ErrorKind::Invalid, None, None)
            }
            RecordError::InsideRuntime => {
                // The library's own call, not the inner crate's.
                message = "the blocking recorder cannot run inside an async runtime; use inferlint::live::Recorder there instead".to_owned();
                (ErrorKind::InsideRuntime, None, None)
            }
            RecordError::Address(_) | RecordError::NoMetrics { .. } | RecordError::After(_) => {
                (ErrorKind::Server, None, None)
            }
            RecordError::Mismatch(_) => (ErrorKind::Engine, None, None),
            RecordError::Runtime(e) => (ErrorKind::Io, None, Some(e.kind())),
            RecordError::Write { path, source } => {
                (ErrorKind::Write, Some(path.clone()), Some(source.kind()))
            }
            RecordError::Output(output) => {
                let (path, io) = match output {
                    OutputError::Io { path, source } => (Some(path.clone()), Some(source.kind())),
                    OutputError::Exists { path }
                    | OutputError::Link { path }
                    | OutputError::IsInput { path, .. }
                    | OutputError::Folder { path }
                    | OutputError::NotRegular { path, .. }
                    | OutputError::Locked { path } => (Some(path.clone()), None),
                };
                (ErrorKind::Write, path, io)
            }
            _ => (ErrorKind::Server, None, None),
        };
        Error {
            kind,
            path,
            input,
            io_kind,
            message,
        }
    }
}

impl From<std::io::Error> for Error {
    /// A failure of the system, for a harness that mixes its own I/O with the library's
    /// calls under one error type.
    fn from(error: std::io::Error) -> Error {
        Error::new(ErrorKind::Io, &error).with_io_kind(error.kind())
    }
}
