//! The `inferlint` binary: parse the command line, run one command, print, exit with a
//! code from one table. Every piece of logic lives in the library crates.

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
mod report_html;
mod run_folder;
mod suggest;
mod supervise;
mod whatif;
mod xray;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // xray starts the server and the load through this same binary (supervise.rs).
    if let Some(code) = supervise::internal(&args) {
        std::process::exit(code);
    }
    let code = app::run(args);
    std::process::exit(code.code());
}
