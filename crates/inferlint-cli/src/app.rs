//! From arguments to an exit status.

use std::ffi::OsString;

use clap::Parser;

use crate::cli::{Cli, COMMANDS, START_HERE};
use crate::exit::{CliError, ExitCode};
use crate::output::eprint_line;
use crate::{commands, output, suggest};

/// Runs one command line and returns its exit status; every error is printed here.
pub fn run(args: Vec<OsString>) -> ExitCode {
    if args.len() <= 1 {
        return match output::print(START_HERE) {
            Ok(()) => ExitCode::Passed,
            Err(_) => ExitCode::Undecided,
        };
    }
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        if !first.starts_with('-') && !COMMANDS.contains(&first) {
            let mut message = format!("inferlint: unknown command '{first}'.");
            if let Some(close) = suggest::closest(first, COMMANDS) {
                message.push_str(&format!(" Did you mean '{close}'?"));
            }
            message.push_str(" 'inferlint --help' lists them.");
            eprint_line!("{message}");
            return ExitCode::Undecided;
        }
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::Undecided
            } else {
                ExitCode::Passed
            };
            // --help and --version go to stdout; a closed pipe there is fine.
            let _ = e.print();
            return code;
        }
    };
    match commands::dispatch(&cli) {
        Ok(code) => code,
        Err(CliError { code, message }) => {
            eprint_line!("inferlint: {message}");
            code
        }
    }
}
