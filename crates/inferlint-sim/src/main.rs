//! `inferlint-sim`: writes simulated run folders (`write`), serves a simulated engine
//! (`serve`) and sends a benchmark load to any OpenAI-compatible server (`load`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use inferlint_core::Engine;
use inferlint_sim::kvpub::KvConfig;
use inferlint_sim::kvwire::Encoding;
use inferlint_sim::load::{self, LoadConfig};
use inferlint_sim::otlp_export::OtlpConfig;
use inferlint_sim::runfolder;
use inferlint_sim::sched::{EngineModel, ModelEngine};
use inferlint_sim::server::{self, ServerConfig};

/// The simulated server's command line.
#[derive(Debug, Parser)]
#[command(
    name = "inferlint-sim",
    version,
    about = "A simulated vLLM, SGLang or TensorRT-LLM server, its run folders and a benchmark load",
    // A flag given twice takes its last value, as a shell user expects.
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write the simulated run folders (one per case) into DIR.
    Write {
        /// The folder to write into.
        dir: PathBuf,
    },
    /// Serve a simulated engine: prints the boot log (ending with the ready line), then an
    /// access line per request; SIGINT or SIGTERM stop it.
    Serve(ServeArgs),
    /// Send one untimed test request (none with --no-test-request), then N streamed
    /// completions, C at a time (at most --open-limit), to any OpenAI-compatible server.
    Load(LoadArgs),
    /// Answer Prometheus' query API over a simulated fleet's history (vLLM's metrics, one
    /// `instance` per replica) and print its address; SIGINT or SIGTERM stop it.
    Prometheus(PrometheusArgs),
    /// Serve one fixed metrics page on N ports of 127.0.0.1 (whole at /metrics, narrowed by
    /// name[] at /metrics/), print each address on a line; SIGINT or SIGTERM stop it.
    Pages(PagesArgs),
}

#[derive(Debug, Args)]
struct PagesArgs {
    /// The page: Prometheus text, or a snapshot file (`inferlint snapshot`'s JSON), whose
    /// text is served as it was read.
    page: PathBuf,
    /// How many servers.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    servers: u64,
    /// Threads that answer (1: every server's answers one after another on one thread,
    /// as one real server answers its own; more: the servers answer side by side, as
    /// servers on machines of their own do).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
    threads: u64,
}

#[derive(Debug, Args)]
struct PrometheusArgs {
    /// The port to listen on (0: any free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// How many replicas the fleet has.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=1024))]
    replicas: u64,
    /// How many scrapes the history holds.
    #[arg(long, default_value_t = 3600, value_parser = clap::value_parser!(i64).range(1..))]
    steps: i64,
    /// Milliseconds between scrapes.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(i64).range(1..))]
    interval_ms: i64,
    /// The first scrape, Unix milliseconds.
    #[arg(long, default_value_t = 1_764_547_200_000)]
    start_ms: i64,
    /// Replica 0 queues and preempts while the others idle.
    #[arg(long)]
    imbalanced: bool,
    /// A real vLLM page (Prometheus text, or a snapshot file): every replica also serves
    /// its other series in the instant answers, so the snapshots are a real page's size.
    #[arg(long)]
    page: Option<PathBuf>,
    /// Append every request answered to this file, one line each (its path and query).
    #[arg(long)]
    query_log: Option<PathBuf>,
    /// Write the history as OpenMetrics text to this file (for `promtool tsdb
    /// create-blocks-from openmetrics`) and end, serving nothing.
    #[arg(long)]
    openmetrics: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The engine to simulate (vllm, sglang, trtllm); or give --case.
    #[arg(long)]
    engine: Option<String>,
    /// Serve one of the run-folder cases (vllm-hybrid, sglang-capped, trtllm-no-evict,
    /// trtllm-max-utilization) instead of a small default.
    #[arg(long)]
    case: Option<String>,
    /// The port to listen on (0: any free one).
    #[arg(long)]
    port: Option<u16>,
    /// Simulated seconds per real second.
    #[arg(long)]
    speed: Option<f64>,
    /// The only model name completions accept (others: 404).
    #[arg(long)]
    served_model_name: Option<String>,
    /// Die on the Nth request.
    #[arg(long, value_name = "N")]
    die_on_request: Option<u32>,
    /// Restart (counters back to 0) after N requests.
    #[arg(long, value_name = "N")]
    restart_after_requests: Option<u32>,
    /// Accept connections but never answer.
    #[arg(long)]
    hang: bool,
    /// Answer /metrics this many milliseconds late.
    #[arg(long, value_name = "MS")]
    slow_metrics_ms: Option<u64>,
    /// Serve no /metrics.
    #[arg(long)]
    no_metrics: bool,
    /// Answer a name[] query at /metrics/ with an empty page, as prometheus_client in
    /// multiprocess mode does (it honours the filter by default).
    #[arg(long)]
    name_filter_empty: bool,
    /// Answer completions with no text.
    #[arg(long)]
    empty_completions: bool,
    /// Answer 500 to every Nth completion request.
    #[arg(long, value_name = "N")]
    error_every: Option<u32>,
    /// Answer 500 to every completion request from the Nth on.
    #[arg(long, value_name = "N")]
    error_from: Option<u32>,
    /// A cold engine: the first time there is work, compile for MS milliseconds first
    /// and log the engine's compile line.
    #[arg(long, value_name = "MS")]
    cold_start_ms: Option<u64>,
    /// With --cold-start-ms: compile from the Nth completion request on.
    #[arg(long, value_name = "N")]
    cold_start_at_request: Option<u32>,
    /// Write the server's GPU as NVML readings into FILE, for INFERLINT_NVML_READINGS.
    #[arg(long, value_name = "FILE")]
    gpu_readings: Option<PathBuf>,
    /// With --gpu-readings: another process joins the GPU at the Nth completion request.
    #[arg(long, value_name = "N")]
    gpu_tenant_at_request: Option<u32>,
    /// Tokens per streamed chunk: the first at once, then every N (vLLM's and SGLang's
    /// --stream-interval).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4096))]
    stream_interval: Option<u64>,
    /// Export an llm_request span for each finished request to URL, as vLLM does
    /// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: grpc, the default, or http/protobuf;
    /// OTEL_BSP_SCHEDULE_DELAY: milliseconds between batches). vLLM only.
    #[arg(long, value_name = "URL")]
    otlp_traces_endpoint: Option<String>,
    /// Publish the KV cache's events over ZeroMQ, as vLLM and SGLang do (vLLM's JSON:
    /// enable_kv_cache_events, publisher, endpoint, replay_endpoint, buffer_steps, topic).
    #[arg(long, value_name = "JSON")]
    kv_events_config: Option<String>,
    /// Never send the KV event batch numbered N on the PUB socket (it stays in the
    /// replay's buffer); repeat or give a list (3,4).
    #[arg(long, value_name = "N", value_delimiter = ',')]
    kv_drop_seq: Vec<u64>,
    /// The KV events' replay endpoint reads each request and never answers.
    #[arg(long)]
    kv_replay_silent: bool,
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// The server's address.
    url: String,
    /// Timed requests.
    #[arg(long, value_name = "N")]
    num_prompts: Option<usize>,
    /// Requests kept open at once.
    #[arg(long, value_name = "C")]
    max_concurrency: Option<usize>,
    /// Prompt length in words.
    #[arg(long, value_name = "P")]
    input_len: Option<u64>,
    /// Output length in tokens.
    #[arg(long, value_name = "O")]
    output_len: Option<u64>,
    /// The model to ask for (default: the server's first).
    #[arg(long, value_name = "M")]
    model: Option<String>,
    /// Seconds the whole run may take.
    #[arg(long, value_name = "S")]
    timeout: Option<f64>,
    /// Write vllm bench serve's result fields to this file.
    #[arg(long, value_name = "F")]
    result_file: Option<PathBuf>,
    /// Send one prompt every time (the prefix cache serves all but the first).
    #[arg(long)]
    repeat_prompt: bool,
    /// Keep at most N open at a time, while the result file still says C.
    #[arg(long, value_name = "N")]
    open_limit: Option<usize>,
    /// Send no untimed test request first.
    #[arg(long)]
    no_test_request: bool,
    /// Keep each request's record in the result file, as vllm bench serve
    /// --save-detailed does.
    #[arg(long)]
    save_detailed: bool,
    /// Requests per second (evenly spaced), each held back while C are open; inf (the
    /// default): each sent as a slot frees.
    #[arg(long, value_name = "R")]
    request_rate: Option<String>,
    /// Send timed request i with X-Request-Id: PREFIX{i} (default: bench-XXXXXXXX-, as
    /// vllm bench serve; an empty PREFIX sends no id).
    #[arg(long, value_name = "PREFIX")]
    request_id_prefix: Option<String>,
    /// Count each streamed chunk with text as one output token (a tool that counts
    /// chunks), whatever the server's usage says.
    #[arg(long)]
    count_chunks: bool,
    /// The API: /v1/completions (the default) or /v1/chat/completions.
    #[arg(long, value_name = "PATH")]
    endpoint: Option<String>,
    /// Stop the TTFT clock at the first streamed chunk, text or not (on the chat API, the
    /// role chunk the server sends before any token).
    #[arg(long)]
    ttft_first_chunk: bool,
}

/// Exit statuses, in one place (clap's own usage errors exit 2 too).
const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let code = match Cli::parse().command {
        Command::Write { dir } => write(&dir),
        Command::Serve(args) => serve(&args),
        Command::Load(args) => load(&args),
        Command::Prometheus(args) => prometheus(&args),
        Command::Pages(args) => pages(&args),
    };
    ExitCode::from(code)
}

fn usage_error(message: &str) -> u8 {
    eprintln!("error: {message}");
    EXIT_USAGE
}

fn write(out: &Path) -> u8 {
    for case in runfolder::all_cases() {
        let dir = out.join(case.name);
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

fn serve(args: &ServeArgs) -> u8 {
    let config = match serve_config(args) {
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
    let Some(runtime) = signal_runtime() else {
        return EXIT_FAILED;
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

/// The runtime `serve` and `prometheus` wait for their signals on; `None` (with the error
/// printed) when it cannot start.
fn signal_runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("error: failed to start the signal handler: {e}");
            None
        }
    }
}

fn prometheus(args: &PrometheusArgs) -> u8 {
    use inferlint_sim::prometheus::{self as fake, FleetHistory};
    let replicas = usize::try_from(args.replicas).unwrap_or(1);
    let mut history = FleetHistory::new(replicas, args.start_ms, args.interval_ms, args.steps);
    history.imbalanced = args.imbalanced;
    history.query_log.clone_from(&args.query_log);
    if let Some(path) = &args.page {
        match read_page(path) {
            Ok(text) => match inferlint_engines::prom::parse(&text) {
                Ok(metrics) => history.page = metrics.samples().to_vec(),
                Err(e) => {
                    eprintln!("error: {} is not Prometheus text: {e}", path.display());
                    return EXIT_USAGE;
                }
            },
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_USAGE;
            }
        }
    }
    if let Some(path) = &args.openmetrics {
        let written = std::fs::File::create_new(path).and_then(|file| {
            let mut out = std::io::BufWriter::new(file);
            fake::write_openmetrics(&history, &mut out)?;
            out.flush()
        });
        return match written {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                EXIT_FAILED
            }
        };
    }
    let handle = match fake::spawn(history, args.port) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("error: failed to start the simulated Prometheus: {e}");
            return EXIT_FAILED;
        }
    };
    println!("{}", handle.base_url);
    let _ = std::io::stdout().flush();
    let Some(runtime) = signal_runtime() else {
        return EXIT_FAILED;
    };
    runtime.block_on(async {
        let Ok(mut terminate) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    });
    drop(handle);
    EXIT_OK
}

/// A page given as Prometheus text, or as a snapshot file (`inferlint snapshot`'s JSON),
/// which holds the page as its `text`.
fn read_page(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => match v.get("text").and_then(serde_json::Value::as_str) {
            Some(page) => Ok(page.to_owned()),
            None => Err(format!("{} is JSON without a text field", path.display())),
        },
        Err(_) => Ok(text),
    }
}

fn pages(args: &PagesArgs) -> u8 {
    let page = match read_page(&args.page) {
        Ok(page) => page,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_USAGE;
        }
    };
    let threads = usize::try_from(args.threads).unwrap_or(1);
    let runtime = if threads <= 1 {
        signal_runtime()
    } else {
        match tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
        {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("error: failed to start {threads} threads: {e}");
                None
            }
        }
    };
    let Some(runtime) = runtime else {
        return EXIT_FAILED;
    };
    let count = usize::try_from(args.servers).unwrap_or(1);
    runtime.block_on(async {
        let ports = match inferlint_sim::pages::serve_pages(
            std::sync::Arc::new(page),
            count,
            inferlint_sim::pages::NameFilter::Honoured,
        )
        .await
        {
            Ok(p) => p,
            Err(e) => {
                eprintln!("error: failed to listen: {e}");
                return EXIT_FAILED;
            }
        };
        let mut out = String::new();
        for port in ports {
            out.push_str(&format!("http://127.0.0.1:{port}\n"));
        }
        print!("{out}");
        let _ = std::io::stdout().flush();
        let Ok(mut terminate) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return EXIT_FAILED;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        EXIT_OK
    })
}

fn serve_config(args: &ServeArgs) -> Result<ServerConfig, String> {
    let mut config = match (&args.engine, &args.case) {
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
    if let Some(engine) = &args.engine {
        if Engine::parse(engine) != Some(config.case.model.engine()) {
            return Err(format!(
                "--engine {engine} does not match the case's engine"
            ));
        }
    }
    if let Some(port) = args.port {
        config.port = port;
    }
    if let Some(speed) = args.speed {
        if !(speed.is_finite() && speed > 0.0) {
            return Err("--speed must be a positive number".into());
        }
        config.speed = speed;
    }
    if let Some(name) = &args.served_model_name {
        if name.is_empty() {
            return Err("--served-model-name must not be empty".into());
        }
        config.case.boot.served_model_name.clone_from(name);
    }
    config.faults.error_every = args.error_every;
    config.faults.error_from = args.error_from;
    if config.faults.error_every == Some(0) || config.faults.error_from == Some(0) {
        return Err("--error-every and --error-from count from 1".into());
    }
    config.faults.die_on_request = args.die_on_request;
    config.faults.restart_after_requests = args.restart_after_requests;
    config.faults.slow_metrics_ms = args.slow_metrics_ms;
    config.faults.hang = args.hang;
    config.faults.no_metrics = args.no_metrics;
    if args.name_filter_empty {
        config.faults.name_filter = inferlint_sim::pages::NameFilter::Empty;
    }
    config.faults.empty_completions = args.empty_completions;
    config.faults.cold_start_ms = args.cold_start_ms;
    config.faults.cold_start_at_request = args.cold_start_at_request;
    if config.faults.cold_start_at_request.is_some() && config.faults.cold_start_ms.is_none() {
        return Err("--cold-start-at-request needs --cold-start-ms MS".into());
    }
    config.faults.gpu_readings.clone_from(&args.gpu_readings);
    config.faults.gpu_tenant_at_request = args.gpu_tenant_at_request;
    if config.faults.gpu_tenant_at_request.is_some() && config.faults.gpu_readings.is_none() {
        return Err("--gpu-tenant-at-request needs --gpu-readings FILE".into());
    }
    if config.faults.gpu_tenant_at_request == Some(0) {
        return Err("--gpu-tenant-at-request counts from 1".into());
    }
    if let Some(n) = args.stream_interval {
        config.stream_interval = n;
    }
    let engine = config.case.model.engine();
    if let Some(endpoint) = &args.otlp_traces_endpoint {
        if engine != Engine::Vllm {
            return Err(format!(
                "--otlp-traces-endpoint: the simulated {} exports no spans (only vLLM's are read)",
                engine.name()
            ));
        }
        let env = |name: &str| std::env::var(name).ok();
        config.traces.otlp = Some(OtlpConfig::from_env(endpoint, &env)?);
    }
    if let Some(json) = &args.kv_events_config {
        let encoding = match &config.case.model {
            EngineModel::Vllm(_) => Encoding::VllmMaps,
            EngineModel::Sglang(_) => Encoding::SglangArrays,
            EngineModel::Trtllm(_) => {
                return Err(
                    "--kv-events-config: the simulated TensorRT-LLM publishes no KV events".into(),
                )
            }
        };
        config.traces.kv_events = KvConfig::parse(json, encoding)?;
    }
    if (!args.kv_drop_seq.is_empty() || args.kv_replay_silent) && config.traces.kv_events.is_none()
    {
        return Err(
            "--kv-drop-seq and --kv-replay-silent need a --kv-events-config that publishes".into(),
        );
    }
    config.faults.kv.drop_seqs = args.kv_drop_seq.iter().copied().collect();
    config.faults.kv.replay_silent = args.kv_replay_silent;
    Ok(config)
}

fn load(args: &LoadArgs) -> u8 {
    let url = &args.url;
    let config = match load_config(args) {
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
    if let Some(path) = &args.result_file {
        let file = path.display();
        let mut text = match serde_json::to_string_pretty(&result.to_json()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("error: failed to write {file}: {e}");
                return EXIT_FAILED;
            }
        };
        text.push('\n');
        if let Err(e) = std::fs::write(path, text) {
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

fn load_config(args: &LoadArgs) -> Result<LoadConfig, String> {
    let defaults = LoadConfig::default();
    let request_rate = match args.request_rate.as_deref().map(str::trim) {
        None | Some("inf") => None,
        Some(r) => match r.parse::<f64>() {
            Ok(r) if r.is_finite() && r > 0.0 => Some(r),
            _ => return Err(format!("--request-rate {r}: a positive number or inf")),
        },
    };
    let chat = match args.endpoint.as_deref() {
        None | Some("/v1/completions") => false,
        Some("/v1/chat/completions") => true,
        Some(other) => {
            return Err(format!(
                "--endpoint {other}: /v1/completions or /v1/chat/completions"
            ))
        }
    };
    // vllm bench serve's default prefix: `bench-` and 8 hex digits of a random UUID.
    let request_id_prefix = match &args.request_id_prefix {
        Some(p) if p.is_empty() => None,
        Some(p) => Some(p.clone()),
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let mut rng = inferlint_sim::rng::Rng::new(
                u64::from(std::process::id()) << 32 | u64::from(nanos),
            );
            Some(format!("bench-{:08x}-", rng.next_u64() >> 32))
        }
    };
    Ok(LoadConfig {
        request_rate,
        request_id_prefix,
        count_chunks: args.count_chunks,
        chat,
        ttft_first_chunk: args.ttft_first_chunk,
        model: args.model.clone(),
        requests: args.num_prompts.unwrap_or(defaults.requests),
        concurrency: args.max_concurrency.unwrap_or(defaults.concurrency),
        prompt_tokens: args.input_len.unwrap_or(defaults.prompt_tokens),
        output_tokens: args.output_len.unwrap_or(defaults.output_tokens),
        timeout_s: args.timeout.unwrap_or(600.0),
        repeat_prompt: args.repeat_prompt,
        open_limit: args.open_limit,
        no_test_request: args.no_test_request,
        save_detailed: args.save_detailed,
    })
}
