//! Waiting for what a recording has written, not for a time: the recorder writes each
//! record (the header, each sample, each gap) as a line the moment it makes it
//! (`watch::put` flushes each), so `n` lines in the file are `n` records made, on any
//! machine at any load.

use std::path::Path;
use std::time::{Duration, Instant};

/// The longest a test waits for lines: a recording at 50 ms writes a line per slot, so
/// a few lines take well under a second on an idle machine; 20 s is for a loaded one,
/// and only a recorder that stopped writing reaches it.
pub const LIMIT: Duration = Duration::from_secs(20);

/// How often the file is looked at.
const LOOK_EVERY: Duration = Duration::from_millis(5);

/// The lines in a file (0 while it is not there).
pub fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Waits, on this thread, until `path` holds at least `n` lines; panics past [`LIMIT`].
pub fn wait_for_lines(path: &Path, n: usize) {
    let deadline = Instant::now() + LIMIT;
    while lines_in(path) < n {
        assert!(
            Instant::now() < deadline,
            "{} never reached {n} lines",
            path.display()
        );
        std::thread::sleep(LOOK_EVERY);
    }
}

/// Resolves once `path` holds at least `n` lines (a stop for a recording that is to
/// hold that many); panics past [`LIMIT`].
pub async fn lines_written(path: &Path, n: usize) {
    let deadline = Instant::now() + LIMIT;
    while lines_in(path) < n {
        assert!(
            Instant::now() < deadline,
            "{} never reached {n} lines",
            path.display()
        );
        tokio::time::sleep(LOOK_EVERY).await;
    }
}
