//! The `inferlint` binary: the command line (the `inferlint_cli` library) run on the
//! process's arguments, its status the exit code.

fn main() {
    std::process::exit(inferlint_cli::main(std::env::args_os().collect()));
}
