//! Recording a live server while a load runs (feature `live`).
//!
//! [`record`] is async: await it beside your load on your own tokio runtime (with its
//! time and I/O drivers on) and resolve its stop future when the load ends. It takes a
//! reading of `/metrics` before, samples it every [`RecordOptions::interval`] while the
//! load runs, and takes one after, and holds them in memory ([`Recording`]); with
//! [`RecordOptions::folder`] it also writes them as the files `inferlint report DIR`
//! reads. [`crate::Run::from_recording`] turns a recording into a run to check.
//!
//! No signal handler is installed unless you ask for one: pass [`interrupted`] as the
//! stop future to stop on Ctrl-C (it installs SIGINT and SIGTERM handlers for the rest
//! of the process, which only a program that owns the process should do).
//!
//! A program without a runtime uses [`blocking`], which, like `reqwest::blocking`, must
//! not be called inside an async runtime: there it returns [`ErrorKind::InsideRuntime`]
//! rather than panicking.
//!
//! ```no_run
//! # async fn harness() -> Result<(), inferlint::Error> {
//! use inferlint::live::{record, RecordOptions, Stop};
//!
//! let stop = Stop::new();
//! let options = RecordOptions::default();
//! let recorder = record("http://127.0.0.1:8000", &options, stop.stopped());
//! let load = async {
//!     // ... run your load against the server ...
//!     stop.stop();
//! };
//! let (recording, ()) = tokio::join!(recorder, load);
//! let report = inferlint::Run::from_recording(&recording?).requested(32).build()?.check();
//! # let _ = report;
//! # Ok(())
//! # }
//! ```
//!
//! [`ErrorKind::InsideRuntime`]: crate::ErrorKind::InsideRuntime

use std::future::Future;

pub use inferlint_live::watch::Progress;
pub use inferlint_live::{interrupted, RecordOptions, Recording, Stop};

use crate::error::Error;

/// Records the server at `url` (`http://127.0.0.1:8000`, or `127.0.0.1:8000`) until
/// `stop` resolves or [`RecordOptions::duration`] passes: a reading before, a series every
/// [`RecordOptions::interval`], a reading after. Errors: the address is not one a server
/// can have, nothing answers, or it serves no engine's metrics
/// ([`crate::ErrorKind::Server`]); it runs another engine than
/// [`RecordOptions::engine`] ([`crate::ErrorKind::Engine`]); a file of the folder asked
/// for exists or cannot be written ([`crate::ErrorKind::Write`]).
pub async fn record(
    url: &str,
    options: &RecordOptions,
    stop: impl Future<Output = ()>,
) -> Result<Recording, Error> {
    inferlint_live::record(url, options, stop)
        .await
        .map_err(|e| server_error(e, url))
}

fn server_error(error: inferlint_live::RecordError, url: &str) -> Error {
    let error = Error::from(error);
    match error.kind() {
        crate::ErrorKind::Server | crate::ErrorKind::Engine => error.with_input(url),
        _ => error,
    }
}

/// The blocking face of [`record`], for a program without an async runtime.
///
/// Nothing here may be called inside an async runtime (it would block the runtime's
/// thread, and tokio panics when a runtime is started inside another): there it returns
/// an error of kind [`crate::ErrorKind::InsideRuntime`]. From async code, await
/// [`crate::live::record()`].
pub mod blocking {
    use std::future::Future;

    use super::{RecordOptions, Recording};
    use crate::error::Error;

    /// [`super::record`] on a runtime of its own on the calling thread, blocking until
    /// `stop` resolves (a [`super::Stop::stopped`] future stopped from another thread, a
    /// timer) or the duration passes.
    pub fn record(
        url: &str,
        options: &RecordOptions,
        stop: impl Future<Output = ()>,
    ) -> Result<Recording, Error> {
        inferlint_live::blocking::record(url, options, stop)
            .map_err(|e| super::server_error(e, url))
    }
}
