//! `demo`: a simulated vLLM run folder, made in-process by inferlint-sim (so it works from
//! an installed binary with no repository), written out and checked with `report`. With an
//! engine named (`--engine`, `INFERLINT_ENGINE`), the simulator's run of that engine.

use std::path::{Path, PathBuf};

use inferlint_engines::load::EngineChoice;
use inferlint_engines::output::{self, Rule};
use inferlint_sim::runfolder;
use inferlint_sim::sched::ModelEngine;

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
    engine: Option<&str>,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let mut choice = EngineChoice::from_args(engine)?;
    // The engine named, or the demo's own (vLLM): the simulator models all three.
    let case = match choice.named() {
        None => runfolder::demo_case(),
        Some(named) => runfolder::all_cases()
            .into_iter()
            .find(|c| c.model.engine() == named)
            .ok_or_else(|| CliError::usage(format!("the simulator has no {} run", named.name())))?,
    };
    let dir: PathBuf = out.map_or_else(|| PathBuf::from(DEFAULT_DIR), Path::to_path_buf);
    let mut replace = force;
    // Asked before the marker is written: only an earlier demo's own files are removed.
    let was_demo = dir.is_dir() && is_previous_demo(&dir);
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
    // Each file whole or not at all; a link in the folder is replaced, never followed.
    let rule = Rule::force(replace);
    // The marker first: a demo stopped half-way is still known as ours the next time.
    crate::run_folder::mark(&dir, "demo", &rule)?;
    let files = runfolder::run_folder(&case);
    if was_demo {
        // An earlier demo of another engine left files this one does not write (its
        // spans, its request records): they are ours, and not this run's.
        for other in runfolder::all_cases() {
            for (name, _) in runfolder::run_folder(&other) {
                let path = dir.join(name);
                if !files.iter().any(|(n, _)| *n == name) && path.is_file() {
                    std::fs::remove_file(&path).map_err(|e| {
                        CliError::cannot_write(format!(
                            "cannot remove the earlier demo's {}: {e}",
                            path.display()
                        ))
                    })?;
                }
            }
        }
    }
    for (name, text) in files {
        output::write_file(&dir.join(name), text.as_bytes(), &rule).map_err(CliError::from)?;
    }
    eprint_line!(
        "wrote a simulated {} run to {} (made by inferlint-sim, not a real server); checking it:",
        case.model.engine().name(),
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
        steps: None,
        server_requests: None,
        requested: None,
        expect_cache_hits: false,
        title: None,
        trace: None,
        llmd_br: None,
        force: false,
        baseline: None,
        max_regression: None,
        slo: crate::cli::SloArgs::default(),
        prometheus: crate::cli::PrometheusArgs::default(),
        gate: crate::cli::Gate::default(),
        output: crate::cli::JsonFlag::default(),
    };
    crate::report::report(&mut choice, &args, json, strict)
}
