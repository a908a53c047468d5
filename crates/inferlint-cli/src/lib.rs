//! The `inferlint` command line as a library: the flags (`cli.rs`, clap's derive), each
//! command's glue over the library crates, the output rules and the exit codes. The
//! binary (`main.rs`) is a few lines over [`main`]; xtask makes the man pages from
//! [`command`], the very definition the binary parses with; the page tests draw a run's
//! page through [`report_html`], as `report` draws it.

mod app;
mod cli;
mod commands;
mod compare;
mod demo;
mod exit;
mod flags;
mod fleet;
mod fleet_watch;
mod gpu;
mod junit;
mod live;
mod llmd_br;
mod loaded;
mod output;
mod receivers;
mod recorder;
mod report;
pub mod report_html;
mod run_folder;
mod suggest;
mod supervise;
mod whatif;
mod xray;

/// Runs the command line on `args` (the program's name first) and returns the exit
/// status, from the one table (README, "Exit status"). xray starts the server and the
/// load through this same binary: an internal invocation of the supervisor or the
/// trampoline (`supervise/`) is answered first.
pub fn main(args: Vec<std::ffi::OsString>) -> i32 {
    if let Some(code) = supervise::internal(&args) {
        return code;
    }
    app::run(args).code()
}

/// The command line's clap definition, which the binary parses with.
pub fn command() -> clap::Command {
    <cli::Cli as clap::CommandFactory>::command()
}
