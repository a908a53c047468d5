//! Finding a run's repeats: a folder that holds one run, or whose subfolders each hold
//! one (repeats of one setup, whose spread is the run-to-run noise), as `inferlint
//! compare` and `inferlint sweep` read each side.

use std::path::{Path, PathBuf};

use inferlint_engines::files;
use inferlint_engines::load::shown;

use crate::error::{Error, ErrorKind};

/// The run folders at `path`: the folder itself when it holds a run's own files (a boot
/// log, a snapshot, a recording), else each of its subfolders that does, in name order.
///
/// Refused: a path that is no folder, or a folder where neither it nor any subfolder
/// holds a run ([`ErrorKind::NoRun`]); a folder that cannot be listed ([`ErrorKind::Io`]).
///
/// ```
/// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/sim/vllm-hybrid");
/// let runs = inferlint::repeats(dir)?;
/// assert_eq!(runs, [std::path::PathBuf::from(dir)]);
/// # Ok::<(), inferlint::Error>(())
/// ```
///
/// # Blocking
///
/// Lists the folder and each of its subfolders on the calling thread: from async code,
/// call it inside `tokio::task::spawn_blocking`.
pub fn repeats(path: impl AsRef<Path>) -> Result<Vec<PathBuf>, Error> {
    let path = path.as_ref();
    if !path.is_dir() {
        return Err(
            Error::new(ErrorKind::NoRun, format!("{} is not a folder", shown(path)))
                .with_path(path),
        );
    }
    if holds_a_run(path) {
        return Ok(vec![path.to_owned()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| {
        Error::new(ErrorKind::Io, format!("cannot read {}: {e}", shown(path)))
            .with_path(path)
            .with_io_kind(e.kind())
    })?;
    let mut runs: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir() && holds_a_run(p))
        .collect();
    runs.sort();
    if runs.is_empty() {
        return Err(Error::new(
            ErrorKind::NoRun,
            format!(
                "no run files in {} or its subfolders (boot.log, *.snapshot.json, *.series.jsonl)",
                shown(path)
            ),
        )
        .with_path(path));
    }
    Ok(runs)
}

/// Whether a folder holds a run's own files (not only subfolders).
fn holds_a_run(dir: &Path) -> bool {
    files::discover_run(dir).is_ok_and(|f| !f.is_empty())
}
