//! Loading through the engines crate, with its notes shown: the one way a command reads
//! its files.

use inferlint_engines::load::{EngineChoice, LoadError};

use crate::exit::CliError;
use crate::output::eprint_line;

/// Prints the notes loading left (skipped lines, gap records, untested versions), then
/// turns a load error into the command's.
pub(crate) fn noted<T>(
    choice: &mut EngineChoice,
    load: impl FnOnce(&mut EngineChoice) -> Result<T, LoadError>,
) -> Result<T, CliError> {
    let loaded = load(choice);
    for note in choice.take_notes() {
        eprint_line!("note: {note}");
    }
    loaded.map_err(CliError::from)
}
