//! Each command: read the files, hand them to the library, print what comes back.

use std::path::{Path, PathBuf};

use inferlint_core::judging::checks::snapshots;
use inferlint_core::judging::status::CheckResult;
use inferlint_core::model::BootFacts;
use inferlint_core::run;
use inferlint_core::story::contract::JsonObject;
use inferlint_core::{story::catalogue, story::contract};
use inferlint_engines::load::{self, EngineChoice};

use crate::cli::{Cli, Command, Gate, JsonFlag};
use crate::exit::{CliError, ExitCode};
use crate::loaded::noted;
use crate::output;

pub fn dispatch(cli: &Cli) -> Result<ExitCode, CliError> {
    let g = &cli.global;
    let mut choice = EngineChoice::from_args(g.engine.as_deref())?;
    match &cli.command {
        Command::CheckLog { logs, .. } => check_log(&mut choice, logs, g.json, g.strict),
        Command::BootFacts { log, .. } => boot_facts(&mut choice, log, g.json, g.strict),
        Command::Preemption {
            before,
            after,
            series,
            boot_log,
            ..
        } => {
            let (before, after, stats, facts, engine) = noted(&mut choice, |c| {
                let (before, after) = load::load_snapshots(c, before, after)?;
                let stats = series
                    .as_deref()
                    .map(|p| load::load_series(c, p))
                    .transpose()?;
                let facts = boot_log
                    .as_deref()
                    .map(|p| load::load_boot(c, p))
                    .transpose()?;
                Ok((before, after, stats, facts, c.resolve().descriptor()))
            })?;
            let result =
                snapshots::preemption(engine, &before, &after, stats.as_ref(), facts.as_ref());
            finish(&[result], g.json, g.strict)
        }
        Command::Rate {
            before,
            after,
            counter,
            ..
        } => {
            let (before, after, engine) = noted(&mut choice, |c| {
                let (before, after) = load::load_snapshots(c, before, after)?;
                Ok((before, after, c.resolve().descriptor()))
            })?;
            let result = snapshots::rate(engine, &before, &after, counter.as_deref());
            finish(&[result], g.json, g.strict)
        }
        Command::Series {
            series,
            snapshot,
            requested,
            boot_log,
            ..
        } => {
            let (stats, after, facts, engine) = noted(&mut choice, |c| {
                let stats = load::load_series(c, series)?;
                let after = snapshot
                    .as_deref()
                    .map(|p| load::load_snapshot(c, p, "the snapshot"))
                    .transpose()?;
                let facts = boot_log
                    .as_deref()
                    .map(|p| load::load_boot(c, p))
                    .transpose()?;
                Ok((stats, after, facts, c.resolve().descriptor()))
            })?;
            let results =
                run::series_checks(engine, &stats, after.as_ref(), *requested, facts.as_ref());
            finish(&results, g.json, g.strict)
        }
        Command::Xray(args) => crate::xray::xray(&mut choice, args, g.json, g.strict),
        Command::Report(args) => crate::report::report(&mut choice, args, g.json, g.strict),
        Command::Snapshot { url, out, force } => crate::live::snapshot(&choice, url, out, *force),
        Command::Watch(args) => match (args.urls.as_slice(), &args.targets) {
            ([url], None) => crate::live::watch(&mut choice, args, url),
            _ => {
                crate::live::fleet_takes_no_live_verdicts(args)?;
                crate::fleet_watch::watch_fleet(
                    &choice,
                    &args.urls,
                    args.targets.as_deref(),
                    &args.out,
                    args.interval,
                    args.duration,
                    args.whole_pages,
                )
            }
        },
        Command::Probe {
            url,
            model,
            concurrency,
            max_tokens,
            timeout,
            ..
        } => {
            // The flags first (a wrong command line is told before the server is asked).
            crate::flags::count(
                "--concurrency",
                *concurrency,
                &crate::flags::PROBE_CONCURRENCY,
            )?;
            crate::flags::count("--max-tokens", *max_tokens, &crate::flags::PROBE_MAX_TOKENS)?;
            crate::flags::positive_seconds(
                "--timeout",
                *timeout,
                crate::flags::MAX_PROBE_TIMEOUT_S,
            )?;
            if g.engine.is_none() {
                refuse_silent_address(url)?;
            }
            crate::live::probe(
                g,
                url,
                model.as_deref(),
                *concurrency,
                *max_tokens,
                *timeout,
            )
        }
        Command::GpuInspect(args) => crate::gpu::gpu_inspect(&choice, args, g.json, g.strict),
        Command::Teardown(args) => crate::gpu::teardown(&choice, args, g.json, g.strict),
        Command::Demo { out, force, .. } => crate::demo::demo(
            out.as_deref(),
            *force,
            g.engine.as_deref(),
            g.json,
            g.strict,
        ),
        Command::Explain { ids, .. } => explain(&choice, ids, g.json),
        Command::Compare(args) => {
            crate::compare::compare_command(g.engine.as_deref(), args, g.json, g.strict)
        }
        Command::Sweep(args) => {
            crate::compare::sweep_command(g.engine.as_deref(), args, g.json, g.strict)
        }
        Command::Whatif(args) => crate::whatif::whatif(&mut choice, args, g.json),
        Command::Schema { which } => schema(which),
        Command::Completions { shell } => completions(shell),
    }
}

/// An address where nothing listens (the connection refused) is an input that cannot be
/// used, as `snapshot` says of it (65): no server answered, so there is no server whose
/// crash T7 could tell. A server that accepts the connection is probed.
fn refuse_silent_address(url: &str) -> Result<(), CliError> {
    use std::net::{TcpStream, ToSocketAddrs};
    let base = inferlint_live::BaseUrl::parse(url)?;
    let Some((host, port)) = base.host_port() else {
        return Ok(());
    };
    let Ok(addrs) = (host.as_str(), port).to_socket_addrs() else {
        return Ok(());
    };
    let addrs: Vec<_> = addrs.collect();
    let refused = !addrs.is_empty()
        && addrs.iter().all(|a| {
            TcpStream::connect_timeout(a, std::time::Duration::from_secs(5))
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
        });
    if refused {
        return Err(CliError::input(format!(
            "nothing answers at {base} (connection refused): start the server, or give its address"
        )));
    }
    Ok(())
}

/// The command's own `--strict` and `--junit`, where it gives verdicts; `None` where it
/// gives none (nothing for a warning to turn into a failure, no test case to write).
/// `boot-facts` takes `--strict` alone.
pub fn gate(command: &Command) -> Option<Gate> {
    match command {
        Command::Xray(a) => Some(a.gate.clone()),
        Command::Report(a) => Some(a.gate.clone()),
        Command::Compare(a) => Some(a.gate.clone()),
        Command::Sweep(a) => Some(a.gate.clone()),
        Command::GpuInspect(a) => Some(a.gate.clone()),
        Command::Teardown(a) => Some(a.gate.clone()),
        Command::CheckLog { gate, .. }
        | Command::Preemption { gate, .. }
        | Command::Rate { gate, .. }
        | Command::Series { gate, .. }
        | Command::Probe { gate, .. }
        | Command::Demo { gate, .. } => Some(gate.clone()),
        Command::BootFacts { strict, .. } => Some(Gate {
            strict: *strict,
            junit: None,
        }),
        Command::Whatif(_)
        | Command::Snapshot { .. }
        | Command::Watch(_)
        | Command::Explain { .. }
        | Command::Schema { .. }
        | Command::Completions { .. } => None,
    }
}

/// The command's own `--json`, where it has JSON to print; `None` where it has none.
pub fn json_flag(command: &Command) -> Option<JsonFlag> {
    match command {
        Command::Xray(a) => Some(a.output),
        Command::Report(a) => Some(a.output),
        Command::Compare(a) => Some(a.output),
        Command::Sweep(a) => Some(a.output),
        Command::Whatif(a) => Some(a.output),
        Command::GpuInspect(a) => Some(a.output),
        Command::Teardown(a) => Some(a.output),
        Command::CheckLog { output, .. }
        | Command::BootFacts { output, .. }
        | Command::Preemption { output, .. }
        | Command::Rate { output, .. }
        | Command::Series { output, .. }
        | Command::Probe { output, .. }
        | Command::Demo { output, .. }
        | Command::Explain { output, .. } => Some(*output),
        Command::Snapshot { .. }
        | Command::Watch(_)
        | Command::Schema { .. }
        | Command::Completions { .. } => None,
    }
}

/// The command's name as typed, for `--junit` and its messages.
pub fn name(command: &Command) -> &'static str {
    match command {
        Command::Xray(_) => "xray",
        Command::Report(_) => "report",
        Command::CheckLog { .. } => "check-log",
        Command::BootFacts { .. } => "boot-facts",
        Command::Preemption { .. } => "preemption",
        Command::Rate { .. } => "rate",
        Command::Series { .. } => "series",
        Command::Compare(_) => "compare",
        Command::Sweep(_) => "sweep",
        Command::Whatif(_) => "whatif",
        Command::Snapshot { .. } => "snapshot",
        Command::Watch { .. } => "watch",
        Command::Probe { .. } => "probe",
        Command::GpuInspect(_) => "gpu-inspect",
        Command::Teardown(_) => "teardown",
        Command::Demo { .. } => "demo",
        Command::Explain { .. } => "explain",
        Command::Schema { .. } => "schema",
        Command::Completions { .. } => "completions",
    }
}

fn schema(which: &str) -> Result<ExitCode, CliError> {
    let schema = inferlint_core::story::schema::by_name(which).ok_or_else(|| {
        CliError::usage(format!(
            "no schema named '{which}' (known: {})",
            inferlint_core::story::schema::NAMES.join(", ")
        ))
    })?;
    let mut text = contract::to_indent1(&schema);
    text.push('\n');
    output::emit(&text)?;
    Ok(ExitCode::Passed)
}

fn completions(shell: &str) -> Result<ExitCode, CliError> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    let shell = match shell {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        "fish" => Shell::Fish,
        "powershell" => Shell::PowerShell,
        other => {
            return Err(CliError::usage(format!(
                "no completions for '{other}' (bash, zsh, fish, powershell)"
            )))
        }
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "inferlint", &mut script);
    // The script is ours, not text from a run: it goes out as it is (completions carry
    // no control characters, and escaping would break none either).
    output::emit(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::Passed)
}

/// Prints results and returns the exit status they call for.
fn finish(results: &[CheckResult], json: bool, strict: bool) -> Result<ExitCode, CliError> {
    output::emit(&output::results_text(results, json))?;
    Ok(ExitCode::for_results(results, strict))
}

fn check_log(
    choice: &mut EngineChoice,
    logs: &[PathBuf],
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let boots = noted(choice, |c| load::load_boots(c, logs))?;
    let results = run::check_logs(&boots);
    finish(&results, json, strict)
}

fn boot_facts(
    choice: &mut EngineChoice,
    log: &Path,
    json: bool,
    strict: bool,
) -> Result<ExitCode, CliError> {
    let facts = noted(choice, |c| load::load_boot(c, log))?;
    let text = if json {
        let mut t = output::json_safe(contract::to_indent1(&facts));
        t.push('\n');
        t
    } else {
        boot_facts_text(&facts)
    };
    output::emit(&text)?;
    Ok(if strict && !facts.unparsed.is_empty() {
        ExitCode::Undecided
    } else {
        ExitCode::Passed
    })
}

/// One line per fact that the log gave, then the settings, conflicts and unreadable lines.
fn boot_facts_text(facts: &BootFacts) -> String {
    use serde_json::Value;
    let mut text = String::new();
    // The facts in their declared order, whatever order serde_json's own map keeps.
    let fields = serde_json::to_string(facts)
        .ok()
        .and_then(|text| serde_json::from_str::<JsonObject>(&text).ok())
        .unwrap_or_default();
    let skip = [
        "unparsed",
        "conflicts",
        "non_default_args",
        "server_args",
        "llm_args",
    ];
    for (name, v) in &fields {
        if skip.contains(&name.as_str()) {
            continue;
        }
        let shown = match v {
            Value::Null => continue,
            Value::Array(a) if a.is_empty() => continue,
            Value::String(s) if s.is_empty() => continue,
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", "),
            other => other.to_string(),
        };
        text.push_str(&format!("{name:<28} {shown}\n"));
    }
    if let Some(args) = &facts.non_default_args {
        let keys: Vec<&str> = args.keys().map(String::as_str).collect();
        text.push_str(&format!("{:<28} {}\n", "non_default_args", keys.join(", ")));
    }
    if let Some(args) = &facts.server_args {
        text.push_str(&format!(
            "{:<28} {} settings (--json lists them)\n",
            "server_args",
            args.len()
        ));
    }
    for (field, values) in &facts.conflicts {
        text.push_str(&format!("CONFLICT {field}: [{}]\n", values.join(", ")));
    }
    for u in &facts.unparsed {
        text.push_str(&format!(
            "UNPARSED {} (line {}): {}\n",
            u.field, u.lineno, u.text
        ));
    }
    text
}

fn explain(choice: &EngineChoice, ids: &[String], json: bool) -> Result<ExitCode, CliError> {
    let only = choice.named();
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .map_or(88, |c| c.clamp(40, 88));
    let infos: Vec<&catalogue::TripwireInfo> = if ids.is_empty() {
        catalogue::all().iter().collect()
    } else {
        ids.iter()
            .map(|id| {
                catalogue::find(id).ok_or_else(|| {
                    CliError::usage(format!(
                        "unknown tripwire: {id} (known: {}, or a name such as silent-preemption)",
                        inferlint_core::Tripwire::all_named()
                    ))
                })
            })
            .collect::<Result<_, _>>()?
    };
    if json {
        let entries: Vec<JsonObject> = infos.iter().map(|info| explain_json(info, only)).collect();
        let mut text = output::json_safe(contract::to_indent1(&entries));
        text.push('\n');
        output::emit(&text)?;
        return Ok(ExitCode::Passed);
    }
    let text: Vec<String> = infos
        .iter()
        .map(|info| catalogue::render_explain(info, only, width))
        .collect();
    output::emit(&format!("{}\n", text.join("\n").trim_end()))?;
    Ok(ExitCode::Passed)
}

/// One tripwire as `explain --json` gives it: the catalogue's fields, the engine notes of
/// the engine named (every one when none), and what each verdict means.
fn explain_json(
    info: &catalogue::TripwireInfo,
    only: Option<inferlint_core::Engine>,
) -> JsonObject {
    use serde_json::{json, Value};
    let mut notes = JsonObject::new();
    for (engine, note) in info.engine_notes {
        if only.is_none_or(|wanted| wanted == *engine) {
            notes.insert(engine.key().to_owned(), Value::from(*note));
        }
    }
    let verdicts: Vec<Value> = info
        .verdicts
        .iter()
        // `when`: what gives that status (a key after `status` in the order serde_json
        // keeps, so that each reads as "status ... when ...").
        .map(|(status, when)| json!({"status": status, "when": when}))
        .collect();
    // Not evidence: the catalogue's own fields, in its order.
    let fields: [(&str, Value); 8] = [
        ("tripwire", Value::from(info.tripwire.to_string())),
        ("slug", Value::from(info.slug)),
        ("name", Value::from(info.name)),
        ("what", Value::from(info.what)),
        ("why", Value::from(info.why)),
        (
            "engine_notes",
            serde_json::to_value(&notes).unwrap_or(Value::Null),
        ),
        ("command", Value::from(info.command)),
        ("verdicts", Value::from(verdicts)),
    ];
    let mut o = JsonObject::new();
    for (key, value) in fields {
        o.insert(key.to_owned(), value);
    }
    o
}
