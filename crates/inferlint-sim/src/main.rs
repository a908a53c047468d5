//! `inferlint-sim`: writes simulated run folders. The HTTP server (`serve`) and the load
//! generator (`load`) are not built yet; see docs/sim.md.

use std::path::Path;
use std::process::ExitCode;

use inferlint_sim::runfolder;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["write", out] => {
            for case in runfolder::all_cases() {
                let dir = Path::new(out).join(case.name);
                for (name, text) in runfolder::run_folder(&case) {
                    let path = dir.join(name);
                    if let Err(e) =
                        std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text))
                    {
                        eprintln!("error: failed to write {}: {e}", path.display());
                        return ExitCode::from(2);
                    }
                }
                eprintln!("wrote {}", dir.display());
            }
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: inferlint-sim write DIR");
            ExitCode::from(2)
        }
    }
}
