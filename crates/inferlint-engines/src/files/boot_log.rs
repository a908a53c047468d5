//! Reading a boot log file: its facts, streamed line by line, the engine its own markers
//! name, and whether it is a server's log at all.

use std::io::Read;
use std::path::Path;

use inferlint_core::model::BootFacts;
use inferlint_core::Engine;

use crate::input::{for_each_log_line, open_input, FileError, MAX_SNAPSHOT_BYTES};

/// A boot log file as read: its facts, the engine its own markers name, and why it is not
/// a server's log at all, if it is not (see [`crate::bootlog::not_a_boot_log`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BootLogFile {
    /// What the log says of the start.
    pub facts: BootFacts,
    /// The engine the log's own markers name.
    pub engine: Option<Engine>,
    /// Why it is no server's log, in a few words.
    pub not_a_log: Option<&'static str>,
}

/// Reads a boot log file line by line (see [`for_each_log_line`]) into its facts, in the
/// memory of a few lines whatever its size. The engine is the one the log's first
/// 200,000 characters name, else `hint`.
pub fn read_boot_log(path: &Path, hint: Option<Engine>) -> Result<BootLogFile, FileError> {
    let (mut file, _) = open_input(path)?;
    // Enough bytes for the characters the engine is told from (at most four bytes each).
    let mut head = Vec::new();
    (&mut file)
        .take(800_000)
        .read_to_end(&mut head)
        .map_err(|e| FileError::io(path, e))?;
    let from_log = crate::detect::engine_from_log(&String::from_utf8_lossy(&head));
    let mut reader = crate::bootlog::BootLogReader::new(from_log.or(hint));
    for_each_log_line(path, head.as_slice().chain(file), |line| {
        reader.push_line(line);
    })?;
    let (facts, mut shape) = reader.finish_with_shape();
    if shape.starts_like_json() {
        // Read once more to tell a JSON document (a snapshot, a result file) from log
        // lines: as Python writes JSON when it is the size of a snapshot, else streamed
        // through a strict parser, without holding it.
        let (mut again, len) = open_input(path)?;
        let whole = if len <= MAX_SNAPSHOT_BYTES {
            let mut bytes = Vec::new();
            (&mut again)
                .take(MAX_SNAPSHOT_BYTES)
                .read_to_end(&mut bytes)
                .map_err(|e| FileError::io(path, e))?;
            crate::pyjson::from_str(&String::from_utf8_lossy(&bytes)).is_ok()
        } else {
            serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(again))
                .is_ok()
        };
        shape.set_whole_json(whole);
    }
    let not_a_log = crate::bootlog::not_a_boot_log_by_shape(&shape, from_log.is_some(), &facts);
    Ok(BootLogFile {
        facts,
        engine: from_log,
        not_a_log,
    })
}
