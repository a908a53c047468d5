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
    // The command typed, for the one line of a parse error whose usage clap leaves out.
    let typed = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| COMMANDS.contains(a))
        .map(str::to_owned);
    let mut cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            if !e.use_stderr() {
                // --help and --version go to stdout; a closed pipe there is fine.
                let _ = e.print();
                return ExitCode::Passed;
            }
            // A parse error is a wrong command line: 64, not clap's own 2, which is
            // this command's Can't tell; and one line, as every refusal.
            eprint_line!("inferlint: {}", usage_line(&e, typed.as_deref()));
            return ExitCode::Usage;
        }
    };
    let name = commands::name(&cli.command);
    // `--json` likewise goes with the commands that have JSON to print.
    match commands::json_flag(&cli.command) {
        Some(flag) => cli.global.json |= flag.json,
        None if cli.global.json => {
            eprint_line!(
                "inferlint: {name} takes no --json: it goes with the commands that print results (snapshot and watch write files, schema prints JSON as it is, completions a script)"
            );
            return ExitCode::Usage;
        }
        None => {}
    }
    output::set_colour(&cli.global.color, cli.global.json);
    // `--strict` and `--junit` go with the commands that give verdicts, before their name
    // or after it; elsewhere they are refused, never taken and ignored.
    match commands::gate(&cli.command) {
        Some(gate) => {
            cli.global.strict |= gate.strict;
            if cli.global.junit.is_none() {
                cli.global.junit = gate.junit;
            }
        }
        None if cli.global.strict => {
            eprint_line!(
                "inferlint: --strict turns warnings into failures, and {name} gives no verdict; it goes with {}, boot-facts",
                crate::junit::CHECKING.join(", ")
            );
            return ExitCode::Usage;
        }
        None => {}
    }
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

/// clap's refusal as one line: its message (without `error: ` and its tips), clap's
/// suggestion where it has one, and where the command's options are listed.
fn usage_line(e: &clap::Error, typed: Option<&str>) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let rendered = e.render().to_string();
    // The command as its usage line names it: `inferlint report`.
    let command = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage: "))
        .map(|usage| {
            usage
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']) && !w.ends_with("..."))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|c| !c.is_empty())
        .or_else(|| typed.map(|t| format!("inferlint {t}")))
        .unwrap_or_else(|| "inferlint".to_owned());
    let mut line = if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        "give a command".to_owned()
    } else {
        rendered
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("the command line is wrong")
            .trim_start_matches("error: ")
            .to_owned()
    };
    let suggestion = match e
        .get(ContextKind::SuggestedArg)
        .or_else(|| e.get(ContextKind::SuggestedSubcommand))
    {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(list)) if !list.is_empty() => Some(list.join("' or '")),
        _ => None,
    };
    if let Some(suggestion) = suggestion {
        line.push_str(&format!("; did you mean '{suggestion}'?"));
    } else if let Some(ContextValue::Strings(valid)) = e.get(ContextKind::ValidValue) {
        line.push_str(&format!("; give one of: {}", valid.join(", ")));
    }
    line.push_str(&format!(" ('{command} --help' lists what it takes)"));
    line
}
