//! What xray prints as it goes: its stage lines and results, and the live status line
//! under the load's own output.

use super::*;

/// Prints a line; a closed stdout must not stop xray before the server is stopped.
pub(super) fn say(text: &str) {
    let _ = output::print(&format!("{text}\n"));
}

pub(super) fn say_results(results: &[CheckResult]) {
    let _ = output::print(&output::results_text(results, false));
}

/// The live status line under the load's own output, on a terminal (stderr): the
/// recorder's latest reading. It is drawn only where the load's output ends a line, and
/// cleared before the load writes again, so the two never mix on one line.
#[derive(Debug)]
pub(super) struct LiveLine {
    pub(super) terminal: bool,
    pub(super) shown: bool,
    pub(super) at_line_start: bool,
    pub(super) progress: Option<watch::Progress>,
}

impl LiveLine {
    pub(super) fn new() -> LiveLine {
        LiveLine {
            terminal: io::stderr().is_terminal(),
            shown: false,
            at_line_start: true,
            progress: None,
        }
    }

    pub(super) fn clear(&mut self) {
        if self.shown {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.shown = false;
        }
    }

    pub(super) fn draw(&mut self) {
        if !self.terminal || !self.at_line_start {
            return;
        }
        if let Some(progress) = &self.progress {
            let mut err = io::stderr().lock();
            let _ = write!(err, "\r\x1b[K{}", crate::live::status_text(progress));
            let _ = err.flush();
            self.shown = true;
        }
    }
}
