//! `inferlint-sim`: writes simulated run folders (`write`), serves a simulated engine
//! (`serve`) and sends a benchmark load to any OpenAI-compatible server (`load`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use inferlint_core::Engine;
use inferlint_sim::load::{self, LoadConfig};
use inferlint_sim::runfolder;
use inferlint_sim::server::{self, ServerConfig};

const USAGE: &str = "usage:
  inferlint-sim write DIR
  inferlint-sim serve --engine vllm|sglang|trtllm [--port N] [--speed X] [--case NAME]
                      [--served-model-name NAME]
                      [--die-on-request N] [--restart-after-requests N] [--hang]
                      [--slow-metrics-ms MS] [--no-metrics] [--empty-completions]
                      [--error-every N] [--error-from N]
                      [--cold-start-ms MS [--cold-start-at-request N]]
                      [--gpu-readings FILE [--gpu-tenant-at-request N]]
  inferlint-sim load URL [--num-prompts N] [--max-concurrency C] [--input-len P]
                      [--output-len O] [--model M] [--timeout S] [--result-file F]
                      [--repeat-prompt] [--open-limit N] [--no-test-request]
                      [--save-detailed]

serve prints the boot log (ending with the ready line), then an access line per request;
SIGINT or SIGTERM stop it. --case NAME serves one of the run-folder cases
(vllm-hybrid, sglang-capped, trtllm-no-evict, trtllm-max-utilization) instead of a small
default. --served-model-name is the only model name completions accept (others: 404).
--error-every N answers 500 to every Nth completion request, --error-from N to every one
from the Nth on. --cold-start-ms MS: the first time there is work (from the Nth
completion request on, with --cold-start-at-request N), the engine compiles for MS
milliseconds first and logs its compile line. --gpu-readings FILE writes the
server's GPU as NVML readings for INFERLINT_NVML_READINGS; another process joins it at
the Nth completion request with --gpu-tenant-at-request N.
load sends one untimed test request (none with --no-test-request), then N streamed
completions, C at a time (at most --open-limit at a time, while its result still says C);
--repeat-prompt sends one prompt every time; --save-detailed keeps each request's
record in the result file.";

/// Exit statuses, in one place.
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("write") if args.len() == 2 => write(&args[1]),
        Some("serve") => serve(&args[1..]),
        Some("load") => load(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            EXIT_OK
        }
        _ => usage_error("expected a subcommand"),
    };
    ExitCode::from(code)
}

fn usage_error(message: &str) -> u8 {
    eprintln!("error: {message}\n{USAGE}");
    EXIT_USAGE
}

fn write(out: &str) -> u8 {
    for case in runfolder::all_cases() {
        let dir = Path::new(out).join(case.name);
        for (name, text) in runfolder::run_folder(&case) {
            let path = dir.join(name);
            if let Err(e) = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, text))
            {
                eprintln!("error: failed to write {}: {e}", path.display());
                return EXIT_USAGE;
            }
        }
        eprintln!("wrote {}", dir.display());
    }
    EXIT_OK
}

/// Flags after a subcommand: `--name value` pairs, switches, and positional words.
struct Flags {
    values: Vec<(String, String)>,
    switches: Vec<String>,
    positional: Vec<String>,
}

fn parse_flags(args: &[String], switches: &[&str], valued: &[&str]) -> Result<Flags, String> {
    let mut flags = Flags {
        values: Vec::new(),
        switches: Vec::new(),
        positional: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if let Some(name) = arg.strip_prefix("--") {
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (name, None),
            };
            if switches.contains(&name) && inline.is_none() {
                flags.switches.push(name.to_owned());
            } else if valued.contains(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| format!("--{name} needs a value"))?
                    }
                };
                flags.values.push((name.to_owned(), value));
            } else {
                return Err(format!("unknown option --{name}"));
            }
        } else {
            flags.positional.push(arg.clone());
        }
        i += 1;
    }
    Ok(flags)
}

impl Flags {
    fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        self.value(name)
            .map(|v| {
                v.parse::<T>()
                    .map_err(|_| format!("--{name} {v} is not a valid number"))
            })
            .transpose()
    }

    fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }
}

fn serve(args: &[String]) -> u8 {
    let flags = match parse_flags(
        args,
        &["hang", "no-metrics", "empty-completions"],
        &[
            "engine",
            "port",
            "speed",
            "case",
            "die-on-request",
            "restart-after-requests",
            "slow-metrics-ms",
            "served-model-name",
            "error-every",
            "error-from",
            "cold-start-ms",
            "cold-start-at-request",
            "gpu-readings",
            "gpu-tenant-at-request",
        ],
    ) {
        Ok(f) => f,
        Err(e) => return usage_error(&e),
    };
    if !flags.positional.is_empty() {
        return usage_error(&format!("unexpected argument {}", flags.positional[0]));
    }
    let config = match serve_config(&flags) {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    let handle = match server::spawn(config) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: failed to start the simulated server: {e}");
            return EXIT_FAILED;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: failed to start the signal handler: {e}");
            return EXIT_FAILED;
        }
    };
    let mut printed = 0usize;
    let mut print_new = |handle: &server::ServerHandle| {
        let log = handle.boot_log();
        let mut out = std::io::stdout().lock();
        for line in log.lines().skip(printed) {
            // A closed pipe is not an error: the server keeps serving.
            let _ = writeln!(out, "{line}");
            printed += 1;
        }
        let _ = out.flush();
    };
    let code = runtime.block_on(async {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: failed to listen for SIGTERM: {e}");
                    return EXIT_FAILED;
                }
            };
        loop {
            print_new(&handle);
            if handle.is_dead() {
                eprintln!("inferlint-sim: the simulated server died (--die-on-request)");
                return EXIT_FAILED;
            }
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return EXIT_OK,
                _ = terminate.recv() => return EXIT_OK,
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    });
    if code == EXIT_OK {
        handle.log_shutdown();
    }
    print_new(&handle);
    handle.shutdown();
    code
}

fn serve_config(flags: &Flags) -> Result<ServerConfig, String> {
    let mut config = match (flags.value("engine"), flags.value("case")) {
        (_, Some(name)) => {
            let case = runfolder::all_cases()
                .into_iter()
                .find(|c| c.name == name)
                .ok_or_else(|| format!("no case named {name}"))?;
            let mut config = ServerConfig::new(case.model.engine());
            config.case = case;
            config
        }
        (Some(engine), None) => ServerConfig::new(
            Engine::parse(engine).ok_or_else(|| format!("unknown engine {engine}"))?,
        ),
        (None, None) => return Err("serve needs --engine or --case".into()),
    };
    if let Some(engine) = flags.value("engine") {
        if Engine::parse(engine) != Some(config.case.model.engine()) {
            return Err(format!(
                "--engine {engine} does not match the case's engine"
            ));
        }
    }
    if let Some(port) = flags.number("port")? {
        config.port = port;
    }
    if let Some(speed) = flags.number::<f64>("speed")? {
        if !(speed.is_finite() && speed > 0.0) {
            return Err("--speed must be a positive number".into());
        }
        config.speed = speed;
    }
    if let Some(name) = flags.value("served-model-name") {
        if name.is_empty() {
            return Err("--served-model-name must not be empty".into());
        }
        config.case.boot.served_model_name = name.to_owned();
    }
    config.faults.error_every = flags.number("error-every")?;
    config.faults.error_from = flags.number("error-from")?;
    if config.faults.error_every == Some(0) || config.faults.error_from == Some(0) {
        return Err("--error-every and --error-from count from 1".into());
    }
    config.faults.die_on_request = flags.number("die-on-request")?;
    config.faults.restart_after_requests = flags.number("restart-after-requests")?;
    config.faults.slow_metrics_ms = flags.number("slow-metrics-ms")?;
    config.faults.hang = flags.switch("hang");
    config.faults.no_metrics = flags.switch("no-metrics");
    config.faults.empty_completions = flags.switch("empty-completions");
    config.faults.cold_start_ms = flags.number("cold-start-ms")?;
    config.faults.cold_start_at_request = flags.number("cold-start-at-request")?;
    if config.faults.cold_start_at_request.is_some() && config.faults.cold_start_ms.is_none() {
        return Err("--cold-start-at-request needs --cold-start-ms MS".into());
    }
    config.faults.gpu_readings = flags.value("gpu-readings").map(std::path::PathBuf::from);
    config.faults.gpu_tenant_at_request = flags.number("gpu-tenant-at-request")?;
    if config.faults.gpu_tenant_at_request.is_some() && config.faults.gpu_readings.is_none() {
        return Err("--gpu-tenant-at-request needs --gpu-readings FILE".into());
    }
    if config.faults.gpu_tenant_at_request == Some(0) {
        return Err("--gpu-tenant-at-request counts from 1".into());
    }
    Ok(config)
}

fn load(args: &[String]) -> u8 {
    let flags = match parse_flags(
        args,
        &["repeat-prompt", "no-test-request", "save-detailed"],
        &[
            "open-limit",
            "num-prompts",
            "max-concurrency",
            "input-len",
            "output-len",
            "model",
            "timeout",
            "result-file",
        ],
    ) {
        Ok(f) => f,
        Err(e) => return usage_error(&e),
    };
    let [url] = flags.positional.as_slice() else {
        return usage_error("load needs one URL");
    };
    let config = match load_config(&flags) {
        Ok(c) => c,
        Err(e) => return usage_error(&e),
    };
    let mut print = |line: &str| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    };
    let result = match load::run_with_output(url, config, &mut print) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: failed to {e}");
            return EXIT_FAILED;
        }
    };
    if let Some(file) = flags.value("result-file") {
        let mut text = match serde_json::to_string_pretty(&result.to_json()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: failed to write {file}: {e}");
                return EXIT_FAILED;
            }
        };
        text.push('\n');
        if let Err(e) = std::fs::write(file, text) {
            eprintln!("error: failed to write {file}: {e}");
            return EXIT_FAILED;
        }
    }
    if result.failed() > 0 {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

fn load_config(flags: &Flags) -> Result<LoadConfig, String> {
    let defaults = LoadConfig::default();
    Ok(LoadConfig {
        model: flags.value("model").map(str::to_owned),
        requests: flags.number("num-prompts")?.unwrap_or(defaults.requests),
        concurrency: flags
            .number("max-concurrency")?
            .unwrap_or(defaults.concurrency),
        prompt_tokens: flags.number("input-len")?.unwrap_or(defaults.prompt_tokens),
        output_tokens: flags
            .number("output-len")?
            .unwrap_or(defaults.output_tokens),
        timeout_s: flags.number("timeout")?.unwrap_or(600.0),
        repeat_prompt: flags.switch("repeat-prompt"),
        open_limit: flags.number("open-limit")?,
        no_test_request: flags.switch("no-test-request"),
        save_detailed: flags.switch("save-detailed"),
    })
}
