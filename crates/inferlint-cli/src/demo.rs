//! `demo`: a simulated vLLM run folder, made in-process by inferlint-sim (so it works from
//! an installed binary with no repository), written out and checked with `report`.

use std::path::{Path, PathBuf};

use inferlint_sim::bootlog::SIMULATED_LINE;
use inferlint_sim::runfolder;

use crate::cli::ReportArgs;
use crate::engine_choice::EngineChoice;
use crate::exit::{CliError, ExitCode};

const DEFAULT_DIR: &str = "inferlint-demo";

/// Whether `dir` holds a run folder an earlier `inferlint demo` wrote (its boot log says so).
fn is_previous_demo(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("boot.log"))
        .is_ok_and(|text| text.lines().next() == Some(SIMULATED_LINE))
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

pub fn demo(out: Option<&Path>, json: bool, strict: bool) -> Result<ExitCode, CliError> {
    let dir: PathBuf = out.map_or_else(|| PathBuf::from(DEFAULT_DIR), Path::to_path_buf);
    if dir.exists() {
        if !dir.is_dir() {
            return Err(CliError::usage(format!(
                "{} is a file, not a folder; give another with -o",
                dir.display()
            )));
        }
        if !is_empty_dir(&dir) && !is_previous_demo(&dir) {
            return Err(CliError::usage(format!(
                "{} is not empty and holds no earlier demo; give another folder with -o",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::usage(format!("failed to create {}: {e}", dir.display())))?;
    let case = runfolder::demo_case();
    for (name, text) in runfolder::run_folder(&case) {
        let path = dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| CliError::usage(format!("failed to write {}: {e}", path.display())))?;
    }
    eprintln!(
        "wrote a simulated vLLM run to {} (made by inferlint-sim, not a real server); checking it:",
        dir.display()
    );
    let args = ReportArgs {
        run: Some(dir),
        out: None,
        boot_logs: Vec::new(),
        before: None,
        after: None,
        series: None,
        bench_result: None,
        requested: None,
        title: None,
    };
    let mut choice = EngineChoice::from_args(None)?;
    crate::commands::report(&mut choice, &args, json, strict)
}
