//! `demo`: a simulated vLLM run folder, made in-process by inferlint-sim (so it works from
//! an installed binary with no repository), written out and checked with `report`.

use std::path::{Path, PathBuf};

use inferlint_engines::load::EngineChoice;
use inferlint_engines::output::{self, Rule};
use inferlint_sim::runfolder;

use crate::cli::ReportArgs;
use crate::exit::{CliError, ExitCode};
use crate::output::eprint_line;

const DEFAULT_DIR: &str = "inferlint-demo";

/// Whether `dir` holds a run folder an earlier `inferlint demo` wrote: only the marker
/// file demo writes into every folder it makes says so (see
/// [`crate::run_folder::MARKER`]), never what the files hold. A real run recorded from
/// the simulated server has the simulator's boot log too, and is no demo.
fn is_previous_demo(dir: &Path) -> bool {
    crate::run_folder::marked_by(dir, "demo")
}

pub fn demo(
    out: Option<&Path>,
    force: bool,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let dir: PathBuf = out.map_or_else(|| PathBuf::from(DEFAULT_DIR), Path::to_path_buf);
    let mut replace = force;
    // A link is never followed to write: the folder it points to may be anything.
    crate::run_folder::refuse_link(&dir, "demo", "-o")?;
    if dir.exists() {
        if !dir.is_dir() {
            return Err(CliError::usage(format!(
                "{} is a file, not a folder; give another with -o",
                dir.display()
            )));
        }
        if is_previous_demo(&dir) {
            // Its files are our own earlier output: written again, in place.
            replace = true;
        } else if !output::is_empty_folder(&dir) && !force {
            return Err(CliError::usage(format!(
                "{} is not empty and holds no earlier demo; give another folder with -o, or --force to write into it",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::cannot_write(format!("failed to create {}: {e}", dir.display())))?;
    let case = runfolder::demo_case();
    // Each file whole or not at all; a link in the folder is replaced, never followed.
    let rule = Rule::force(replace);
    // The marker first: a demo stopped half-way is still known as ours the next time.
    crate::run_folder::mark(&dir, "demo", &rule)?;
    for (name, text) in runfolder::run_folder(&case) {
        output::write_file(&dir.join(name), text.as_bytes(), &rule).map_err(CliError::from)?;
    }
    eprint_line!(
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
        spans: None,
        kv_events: None,
        server_requests: None,
        requested: None,
        expect_cache_hits: false,
        title: None,
        force: false,
        baseline: None,
        max_regression: None,
        slo: crate::cli::SloArgs::default(),
        prometheus: crate::cli::PrometheusArgs::default(),
    };
    let mut choice = EngineChoice::from_args(None)?;
    crate::report::report(&mut choice, &args, json, strict)
}
