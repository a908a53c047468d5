//! `gpu-inspect` and `teardown`: glue between the command line and inferlint-gpu.

use std::path::PathBuf;

use inferlint_gpu::clear::{ClearRule, INTERVAL_S};
use inferlint_gpu::inspect;
use inferlint_gpu::teardown::{self, TeardownOptions};
use inferlint_gpu::Machine;

use crate::cli::{GpuInspectArgs, TeardownArgs};
use crate::exit::{CliError, ExitCode};
use crate::output;
use inferlint_engines::load::EngineChoice;

/// A file of recorded NVML readings to replay instead of asking the driver (docs/gpu.md).
const READINGS_VAR: &str = "INFERLINT_NVML_READINGS";
/// `1`: look only at processes in the caller's session (docs/gpu.md; the tests use it so
/// that they never touch a server they did not start).
const SESSION_VAR: &str = "INFERLINT_SESSION_ONLY";

fn rule(max_used_mib: u64, consecutive: u32, timeout: f64) -> Result<ClearRule, CliError> {
    crate::flags::seconds("--timeout", timeout, 0.0, crate::flags::MAX_CARD_TIMEOUT_S)?;
    if consecutive == 0 {
        return Err(CliError::usage("--consecutive must be at least 1"));
    }
    let mut rule = ClearRule::gate();
    rule.max_used_mib = max_used_mib;
    rule.consecutive = consecutive;
    rule.timeout_s = timeout;
    rule.interval_s = INTERVAL_S;
    Ok(rule)
}

pub(crate) fn machine(what: &str) -> Result<Machine, CliError> {
    let readings = std::env::var_os(READINGS_VAR)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let session_only = std::env::var(SESSION_VAR).is_ok_and(|v| v.trim() == "1");
    Machine::real(what, session_only, readings.as_deref())
        .map_err(|e| CliError::input(format!("cannot {e}")))
}

/// Lines printed while the command runs. A failed write does not stop it: teardown must
/// not leave servers half-stopped because a terminal went away.
fn streamed(json: bool) -> impl FnMut(&str) {
    move |text: &str| {
        if !json && !text.is_empty() {
            let _ = output::print(text);
        }
    }
}

pub fn gpu_inspect(
    _choice: &EngineChoice,
    args: &GpuInspectArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    // The card is clear only when no server of any engine holds it, so a named engine
    // changes nothing here.
    let rule = rule(args.max_used_mib, args.consecutive, args.timeout)?;
    let mut machine = machine("gpu-inspect's free-card check")?;
    let result = inspect::gpu_inspect(&mut machine, rule, &mut streamed(json));
    let results = [result];
    output::emit(&output::results_text(&results, json))?;
    Ok(ExitCode::for_results(&results, strict))
}

pub fn teardown(
    choice: &EngineChoice,
    args: &TeardownArgs,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let mut options =
        TeardownOptions::new(rule(args.max_used_mib, args.consecutive, args.timeout)?);
    options.dry_run = args.dry_run;
    if let Some((engine, by)) = choice.named_by() {
        options.engine = Some(engine);
        options.named_as = Some(by.prefix(engine));
    }
    let mut machine = machine("teardown")?;
    let outcome = teardown::teardown(&mut machine, &options, &mut streamed(json));
    if json {
        // Its --json is a report of its own, not the results array: --junit still gets
        // the results.
        crate::junit::printed(&outcome.results);
        output::emit(&output::json_safe(outcome.json()))?;
    } else {
        output::emit(&output::results_text(&outcome.results, false))?;
    }
    Ok(ExitCode::for_results(&outcome.results, strict))
}
