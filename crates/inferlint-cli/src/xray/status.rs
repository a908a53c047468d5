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
    /// The mid-run verdicts and what limits the run now.
    pub(super) verdicts: String,
}

impl LiveLine {
    pub(super) fn new() -> LiveLine {
        LiveLine {
            terminal: io::stderr().is_terminal(),
            shown: false,
            at_line_start: true,
            progress: None,
            verdicts: String::new(),
        }
    }

    /// A line of its own (a verdict that changed, a note), printed where the load's
    /// output has ended a line; held for the end of the load's line otherwise.
    pub(super) fn note(&mut self, line: &str) {
        self.clear();
        let mut err = io::stderr().lock();
        if !self.at_line_start {
            let _ = writeln!(err);
            self.at_line_start = true;
        }
        let _ = writeln!(err, "{line}");
        let _ = err.flush();
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
            let mut text = crate::live::status_text(progress);
            if !self.verdicts.is_empty() {
                text.push_str("  |  ");
                text.push_str(&inferlint_core::story::fmt::terminal_safe(&self.verdicts));
            }
            let _ = write!(err, "\r\x1b[K{text}");
            let _ = err.flush();
            self.shown = true;
        }
    }
}
