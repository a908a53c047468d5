//! Waiting for what a recording has written, not for a time: the recorder writes each
//! record (the header, each sample, each gap) as a line the moment it makes it
//! (`watch::put` flushes each), so the samples in the file are the samples made, on any
//! machine at any load. (A loaded machine makes the recorder miss slots: those are gap
//! lines, so a test that needs samples counts samples, not lines.)

use std::path::Path;
use std::time::{Duration, Instant};

use inferlint_engines::files::{parse_series_line, SeriesLine};

/// The longest a test waits for lines: a recording at 50 ms writes a sample per slot, so
/// a few samples take well under a second on an idle machine; 20 s is for a loaded one,
/// and only a recorder that stopped writing reaches it.
pub const LIMIT: Duration = Duration::from_secs(20);

/// How often the file is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The samples in a series file (0 while it is not there).
pub fn samples_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| {
        t.lines()
            .filter(|l| matches!(parse_series_line(l), SeriesLine::Sample(_)))
            .count()
    })
}

/// Waits, on this thread, until the series file `path` holds at least `n` samples;
/// panics past [`LIMIT`].
pub fn wait_for_samples(path: &Path, n: usize) {
    let deadline = Instant::now() + LIMIT;
    while samples_in(path) < n {
        assert!(
            Instant::now() < deadline,
            "{} never held {n} samples",
            path.display()
        );
        std::thread::sleep(LOOK_EVERY);
    }
}

/// Resolves once the series file `path` holds at least `n` samples (a stop for a
/// recording that is to hold that many); panics past [`LIMIT`].
pub async fn samples_written(path: &Path, n: usize) {
    let deadline = Instant::now() + LIMIT;
    while samples_in(path) < n {
        assert!(
            Instant::now() < deadline,
            "{} never held {n} samples",
            path.display()
        );
        tokio::time::sleep(LOOK_EVERY).await;
    }
}
