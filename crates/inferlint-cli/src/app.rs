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
            Err(_) => ExitCode::CannotWrite,
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
            return ExitCode::Usage;
        }
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // A parse error is a wrong command line: 64, not clap's own 2, which is
            // this command's Can't tell.
            let code = if e.use_stderr() {
                ExitCode::Usage
            } else {
                ExitCode::Passed
            };
            // --help and --version go to stdout; a closed pipe there is fine.
            let _ = e.print();
            return code;
        }
    };
    output::set_colour(&cli.global.color, cli.global.json);
    let name = commands::name(&cli.command);
    if let Some(path) = &cli.global.junit {
        let refused = if !crate::junit::CHECKING.contains(&name) {
            Some(CliError::usage(format!(
                "--junit writes verdicts, and {name} gives none; it goes with {}",
                crate::junit::CHECKING.join(", ")
            )))
        } else {
            crate::junit::check(path).err()
        };
        if let Some(e) = refused {
            eprint_line!("inferlint: {e}");
            return e.code();
        }
    }
    let outcome = commands::dispatch(&cli);
    if let Some(path) = &cli.global.junit {
        let error = outcome.as_ref().err().map(CliError::message);
        if let Err(e) = crate::junit::write(path, name, cli.global.strict, error) {
            eprint_line!("inferlint: {e}");
            if outcome.is_ok() {
                return e.code();
            }
        }
    }
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprint_line!("inferlint: {e}");
            e.code()
        }
    }
}
