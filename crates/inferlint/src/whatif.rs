//! What a change would have done: the run's own load replayed through a scheduler model
//! of its server ([`Run::whatif`](crate::Run::whatif)), as `inferlint whatif RUN --set
//! KEY=VALUE` replays it (docs/whatif.md).
//!
//! Outside the stable API, as the `slo` and `sim` modules are: the replay's types are
//! `inferlint-core`'s and `inferlint-sched`'s, re-exported with their public fields, and
//! change as the model and its calibrated bands do. The calls this module and
//! [`Run::whatif`](crate::Run::whatif) own return the library's [`Error`]; the methods of
//! the re-exported types (`Baseline::predict`, `Change::count`) keep their own one-line
//! `String` reasons. Some of their fields are of types this module does not re-export
//! (the setup as read, the fit, the bands): read them, but a harness that names them
//! depends on the inner crates themselves.
//!
//! ```no_run
//! use inferlint::whatif;
//! let run = inferlint::Run::from_dir("runs/kv-too-small")?;
//! let base = run.whatif()?;
//! let change = whatif::parse_change(run.engine(), "max-num-seqs=2")?;
//! let p = whatif::predict(&base, &[change])?;
//! println!("preemptions: {:?}", p.predicted.evictions);
//! # Ok::<(), inferlint::Error>(())
//! ```

pub use inferlint_core::analyses::whatif::{Baseline, Change, Errors, FitFrom, Knob, Prediction};
pub use inferlint_sched::stats::Summary;

use crate::error::{Error, ErrorKind};
use crate::Engine;

/// A change to replay, `KEY=VALUE`, for a run of `engine`: the key is one of the engine's
/// setting names (with or without dashes, in either spelling: `max-num-seqs`,
/// `--max_num_seqs`) or a load setting (`concurrency`, `request-rate`). A key that is no
/// setting of the engine's, or a value it cannot take, is an [`ErrorKind::Invalid`] error
/// naming what it accepts (a key of another engine says whose it is).
pub fn parse_change(engine: Engine, text: &str) -> Result<Change, Error> {
    inferlint_core::analyses::whatif::change::parse(engine, text)
        .map_err(|why| Error::invalid_input("the change", why))
}

/// [`Baseline::predict`]: the run replayed with `changes` applied, each figure with its
/// calibrated band; an [`ErrorKind::Unmodelled`] error when the model cannot make the
/// change to this run (it would leave the KV cache no usable block, the engine ignores
/// that setting here, ...), the message saying why.
pub fn predict(baseline: &Baseline, changes: &[Change]) -> Result<Prediction, Error> {
    baseline.predict(changes).map_err(|why| {
        Error::new(
            ErrorKind::Unmodelled,
            format!("the replay cannot make this change: {why}"),
        )
        .with_input("the change")
    })
}
