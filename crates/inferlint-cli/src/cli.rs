//! The command line, in the tutorial's words.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use inferlint_core::analyses::slo::ServiceLevel;

pub const HELP_TEMPLATE: &str = "\
{about-with-newline}
{usage-heading} {usage}

Run and check a benchmark:
  xray         Start the server, check it, record it while your load runs, stop it

Check a saved run:
  report       Check every file of a run and say what limited it
  check-log    Check one or more boot logs (T12 T5 T6; T4 T11 with two or more)
  boot-facts   List everything a boot log says about the server's setup
  preemption   Preemptions during the run, from two snapshots (T1)
  rate         Output tokens per second, and what a whole-second timer says (T10)
  series       Check a recording (T14 T9 T8)
  whatif       Replay a run's own load through a model of its server, as set up and as changed

Compare runs:
  compare      Can two runs (or sets of repeats) be compared, and what moved
  sweep        Runs of one setup at rising concurrency: where it stops following, the knee

Record a server yourself:
  snapshot     Save the server's counters, with the time, to a file
  watch        Record the server on a fixed schedule while a load runs
  probe        Send one request, then several at once; is the server still up? (T7)

The GPU:
  gpu-inspect  Show the GPUs and check that no server process holds one (T2)
  teardown     Stop every inference server process and wait for a clear card (T2 T3)

Learn:
  demo         Write a simulated run folder and check it
  explain      Explain a tripwire (T1-T31, or a name such as falling-ceiling)
  help         Print this message or the help of the given command

For scripts and shells:
  schema       Print the JSON Schema of --json (results, compare or sweep)
  completions  Print shell completions (bash, zsh, fish, powershell)

Options:
{options}{after-help}";

/// What limited your LLM inference benchmark, from what the server itself recorded.
#[derive(Debug, Parser)]
#[command(
    name = "inferlint",
    version,
    help_template = HELP_TEMPLATE,
    after_help = "Exit status: 0 everything passed (warnings allowed), 1 a tripwire failed or a service level (--slo) was not met, 2 a tripwire or a service level could not be told or an input came from another engine, 64 the command line is wrong, 65 an input cannot be used, 74 an output could not be written, 130 xray was interrupted (the README's table says more).\nINFERLINT_ENGINE=vllm|sglang|trtllm names the engine for every command."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Print JSON instead of terminal lines; with the commands that print it (each takes it
    /// after its name too)
    #[arg(long)]
    pub json: bool,
    /// Treat a warning as a failure (exit 1); with the commands that give verdicts (each
    /// takes it after its name too)
    #[arg(long)]
    pub strict: bool,
    /// The engine the inputs must come from: vllm, sglang or trtllm (also INFERLINT_ENGINE)
    #[arg(long, global = true, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// Also write the verdicts as JUnit XML to FILE (one test case per tripwire); with the
    /// commands that give verdicts (each takes it after its name too)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Colour on a terminal: auto (not when piped or NO_COLOR is set), always or never
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
}

/// `--json`, on each command that has JSON to print (not snapshot or watch, which write
/// files, nor schema and completions, which print what they print).
#[derive(Debug, Default, Clone, Copy, Args)]
pub struct JsonFlag {
    /// Print JSON instead of terminal lines
    #[arg(long)]
    pub json: bool,
}

/// `--strict` and `--junit`, on each command that gives verdicts: the only ones a warning
/// can turn into a failure, the only ones with test cases to write.
#[derive(Debug, Default, Clone, Args)]
pub struct Gate {
    /// Treat a warning as a failure (exit 1)
    #[arg(long)]
    pub strict: bool,
    /// Also write the verdicts as JUnit XML to FILE (one test case per tripwire)
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start the server, check it, record it while your load runs, stop it
    Xray(XrayArgs),
    /// Check every file of a run and say what limited it
    Report(Box<ReportArgs>),
    /// Check one or more boot logs (T12 T5 T6; T4 T11 with two or more)
    CheckLog {
        /// Boot logs: everything the server printed from start-up on
        #[arg(required = true, value_name = "LOG")]
        logs: Vec<PathBuf>,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// List everything a boot log says about the server's setup
    BootFacts {
        /// A boot log: everything the server printed from start-up on
        #[arg(value_name = "LOG")]
        log: PathBuf,
        /// Exit 2 when a line the log gave a fact in could not be read
        #[arg(long)]
        strict: bool,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Preemptions during the run, from two snapshots (T1)
    Preemption {
        /// The snapshot taken before the load (inferlint snapshot, or a saved /metrics page)
        #[arg(value_name = "BEFORE")]
        before: PathBuf,
        /// The snapshot taken after it
        #[arg(value_name = "AFTER")]
        after: PathBuf,
        /// A recording of the run (TensorRT-LLM: its paused gauge)
        #[arg(long, value_name = "FILE")]
        series: Option<PathBuf>,
        /// The server log saved until after the run (TensorRT-LLM logs each pause)
        #[arg(long, value_name = "FILE")]
        boot_log: Option<PathBuf>,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Output tokens per second, and what a whole-second timer says (T10)
    Rate {
        /// The snapshot taken before the load (inferlint snapshot, or a saved /metrics page)
        #[arg(value_name = "BEFORE")]
        before: PathBuf,
        /// The snapshot taken after it
        #[arg(value_name = "AFTER")]
        after: PathBuf,
        /// The counter to use instead of the engine's generation-token counter
        #[arg(long, value_name = "NAME")]
        counter: Option<String>,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Check a recording (T14 T9 T8)
    Series {
        /// The recording made during the load (inferlint watch's file; - reads standard input)
        #[arg(value_name = "FILE")]
        series: PathBuf,
        /// A snapshot taken after the run (T14 reads the block count from it)
        #[arg(long, value_name = "FILE")]
        snapshot: Option<PathBuf>,
        /// The concurrency the load asked for (T8)
        #[arg(long, value_name = "N", value_parser = requested_concurrency)]
        requested: Option<u64>,
        /// The boot log, for the server's own limits (T8)
        #[arg(long, value_name = "FILE")]
        boot_log: Option<PathBuf>,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Can two runs (or sets of repeats) be compared, and what moved
    Compare(CompareArgs),
    /// Runs of one setup at rising concurrency: where it stops following, the knee
    Sweep(SweepArgs),
    /// Replay a run's own load through a model of its server, as set up and as changed
    Whatif(WhatifArgs),
    /// Save the server's counters, with the time, to a file
    Snapshot {
        /// The server's address, e.g. http://127.0.0.1:8000
        #[arg(value_name = "URL")]
        url: String,
        /// The snapshot file to write (an existing file is refused)
        #[arg(short = 'o', long = "out", value_name = "FILE", required = true)]
        out: PathBuf,
        /// Replace an existing FILE
        #[arg(long)]
        force: bool,
    },
    /// Record the server on a fixed schedule while a load runs
    Watch(WatchArgs),
    /// Send one request, then several at once; is the server still up? (T7)
    Probe {
        /// The server's address, e.g. http://127.0.0.1:8000
        #[arg(value_name = "URL")]
        url: String,
        /// The model to ask (default: the first that /v1/models lists)
        #[arg(long, value_name = "M")]
        model: Option<String>,
        /// Requests sent at once after the first (1 to 256)
        #[arg(long, default_value_t = 8, value_name = "N")]
        concurrency: u32,
        /// Tokens each request asks for (1 to 4096)
        #[arg(long, default_value_t = 16, value_name = "N")]
        max_tokens: u32,
        /// How long each completion may take before it counts as failed (above 0, at
        /// most a day)
        #[arg(long, default_value_t = 300.0, value_name = "SECONDS")]
        timeout: f64,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Show the GPUs and check that no server process holds one (T2)
    GpuInspect(GpuInspectArgs),
    /// Stop every inference server process and wait for a clear card (T2 T3)
    Teardown(TeardownArgs),
    /// Write a simulated run folder and check it
    ///
    /// A simulated vLLM run; with --engine sglang or --engine trtllm (or INFERLINT_ENGINE),
    /// a simulated run of that engine.
    Demo {
        /// Where the run folder goes (default: a new folder `inferlint-demo` here)
        #[arg(short = 'o', long = "out", value_name = "DIR")]
        out: Option<PathBuf>,
        /// Write into DIR even if it holds other files (files of the same name are replaced)
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        gate: Gate,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Explain a tripwire (T1-T31, or a name such as falling-ceiling)
    Explain {
        /// Tripwire codes or names; every one when none
        #[arg(value_name = "TRIPWIRE")]
        ids: Vec<String>,
        #[command(flatten)]
        output: JsonFlag,
    },
    /// Print the JSON Schema of --json (results, compare or sweep)
    Schema {
        /// Which output: results (every checking command's --json), compare or sweep
        #[arg(value_name = "OUTPUT", default_value = "results", value_parser = ["results", "compare", "sweep"])]
        which: String,
    },
    /// Print shell completions (bash, zsh, fish, powershell)
    Completions {
        /// The shell: bash, zsh, fish or powershell
        #[arg(value_name = "SHELL", value_parser = ["bash", "zsh", "fish", "powershell"])]
        shell: String,
    },
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Run folders, or folders of repeats (each subfolder a run); the first is the baseline
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// The baseline run (or folder of repeats); every RUN is compared with it. Given
    /// several times, the runs are repeats of one baseline
    #[arg(long, value_name = "RUN")]
    pub baseline: Vec<PathBuf>,
    /// A run of the side held to the baseline; given several times, repeats of that side
    #[arg(long, value_name = "RUN")]
    pub candidate: Vec<PathBuf>,
    /// Fail (exit 1) when throughput or a latency figure got worse by more than this beyond
    /// the noise of repeats, e.g. 5%; exit 2 where the noise cannot tell (one run a side)
    #[arg(long, value_name = "PCT", value_parser = margin)]
    pub max_regression: Option<f64>,
    #[command(flatten)]
    pub slo: SloArgs,
    #[command(flatten)]
    pub page: PageArgs,
    #[command(flatten)]
    pub gate: Gate,
    #[command(flatten)]
    pub output: JsonFlag,
}

/// `--slo`: a service level held to every request of each run.
#[derive(Debug, Default, Args)]
pub struct SloArgs {
    /// A service level, e.g. 'ttft:p95<=2s,tpot:p99<=60ms,e2e:p99<=30s' (quoted; a bound
    /// without pNN holds every request), or `tool` for the thresholds each run's load tool
    /// was given with its own --goodput: each percentile counts a failed or unfinished
    /// request as an infinite latency. Not met: exit 1 (report; sweep and compare say how
    /// they gate); cannot be told: exit 2
    #[arg(long, value_name = "SLO", value_parser = service_level, conflicts_with = "slo_file")]
    pub slo: Option<Box<ServiceLevel>>,
    /// The service level from a file: the same bounds, by commas or lines (# starts a comment)
    #[arg(long, value_name = "FILE")]
    pub slo_file: Option<PathBuf>,
}

/// The HTML page `compare` and `sweep` write.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// Write an HTML page to FILE (an earlier page of ours is replaced)
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing FILE whatever wrote it (never a file the runs are read from)
    #[arg(long)]
    pub force: bool,
    /// A title for the page
    #[arg(long)]
    pub title: Option<String>,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Run folders of one setup at different loads, or one folder holding them
    #[arg(value_name = "DIR", required = true)]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub slo: SloArgs,
    /// With --slo: the price of one GPU, US dollars an hour, to give the cost of a million
    /// output tokens at the capacity's measured point
    #[arg(long, value_name = "USD_PER_HOUR", value_parser = gpu_price)]
    pub gpu_price: Option<f64>,
    /// With --gpu-price: GPUs in one replica (default 1)
    #[arg(long, value_name = "N", value_parser = gpus, requires = "gpu_price")]
    pub gpus: Option<u32>,
    #[command(flatten)]
    pub page: PageArgs,
    #[command(flatten)]
    pub gate: Gate,
    #[command(flatten)]
    pub output: JsonFlag,
}

#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// A run folder (xray's) with the load tool's per-request records
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// A change to replay, in the engine's own setting names or the load's
    /// (`max-num-seqs=4`, `gpu-memory-utilization=0.95`, `concurrency=16`, `rate=8`);
    /// repeatable, all applied together
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The load tool's saved result, when the folder holds another
    #[arg(long, value_name = "FILE")]
    pub bench_result: Option<PathBuf>,
    /// The concurrency the load asked for (default: the result file's max_concurrency)
    #[arg(long, value_name = "N", value_parser = requested_concurrency)]
    pub requested: Option<u64>,
    #[command(flatten)]
    pub output: JsonFlag,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The server's address, e.g. http://127.0.0.1:8000; several record a fleet
    #[arg(value_name = "URL", required_unless_present = "targets")]
    pub urls: Vec<String>,
    /// A file of replicas' addresses, one a line (# starts a comment): a fleet (not with
    /// URLs on the command line: one list, from one place)
    #[arg(long, value_name = "FILE", conflicts_with = "urls")]
    pub targets: Option<PathBuf>,
    /// The series file to write (one line per sample; an existing file is refused);
    /// for a fleet, a new or empty folder
    #[arg(short = 'o', long = "out", value_name = "FILE", required = true)]
    pub out: PathBuf,
    /// Seconds between samples (0.05 to 3600)
    #[arg(long, default_value_t = 0.5, value_name = "S")]
    pub interval: f64,
    /// Stop after this many seconds, at most 30 days (default: at Ctrl-C or SIGTERM)
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Replace an existing FILE (never one another recorder is writing)
    #[arg(long)]
    pub force: bool,
    /// The concurrency the load asks for: T8 and T17 are judged while the run goes on
    #[arg(long, value_name = "N", value_parser = requested_concurrency)]
    pub requested: Option<u64>,
    /// The server's boot log, for its running cap (T8, T17)
    #[arg(long, value_name = "FILE")]
    pub boot_log: Option<PathBuf>,
    /// Write each verdict that changes during the run to FILE, one JSON object a line
    #[arg(long, value_name = "FILE")]
    pub json_events: Option<PathBuf>,
    /// The run is meant to reuse prompt prefixes: T16 does not warn about cache hits
    #[arg(long)]
    pub expect_cache_hits: bool,
    /// Read no GPU beside the metrics (the server uses no NVIDIA GPU of this machine)
    #[arg(long)]
    pub no_gpu: bool,
    /// Read the whole metrics page at every scrape (default: after the first, only the
    /// samples the recording reads, filtered by the server where it can: the header says)
    #[arg(long)]
    pub whole_pages: bool,
    /// Receive the server's OpenTelemetry spans on 127.0.0.1:PORT (start it with
    /// --otlp-traces-endpoint http://127.0.0.1:PORT) into spans.otlp.jsonl beside -o
    #[arg(long, value_name = "PORT")]
    pub otlp: Option<u16>,
    /// Subscribe to the server's KV-cache events at its publisher (tcp://HOST:PORT, its
    /// --kv-events-config endpoint) into kv-events.jsonl beside -o
    #[arg(long, value_name = "ENDPOINT")]
    pub kv_events: Option<String>,
    /// The publisher's replay endpoint, asked for what a hole in the stream missed
    #[arg(long, value_name = "ENDPOINT", requires = "kv_events")]
    pub kv_replay: Option<String>,
    /// Drain the server's endpoints that forget what they return (TensorRT-LLM's
    /// /perf_metrics and /kv_cache_events) into server-requests.jsonl and kv-events.jsonl
    /// beside -o: another reader of them loses what this takes
    #[arg(long, conflicts_with = "kv_events")]
    pub drain: bool,
    /// Copy the step file of a vLLM server started with INFERLINT_STEPS=FILE (and the
    /// step plugin) into steps.jsonl beside -o: its header, then the steps of the window
    /// recorded
    #[arg(long, value_name = "FILE")]
    pub steps: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct XrayArgs {
    /// The run folder, new or empty (default: a new folder xray-YYYYmmdd-HHMMSS here)
    #[arg(short = 'o', long = "out", value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Use DIR even if it holds an earlier run: its files are moved into DIR/earlier-TIME/
    #[arg(long)]
    pub force: bool,
    /// The command that starts the server, in quotes (split like a shell would, no shell)
    #[arg(long, value_name = "CMD")]
    pub serve: Option<String>,
    /// The server's address (default: from --serve's --host and --port, else the engine's port)
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The boot log of a server already running (with --url)
    #[arg(long, value_name = "FILE")]
    pub boot_log: Option<PathBuf>,
    /// The concurrency the load asks for (default: the load command's --max-concurrency)
    #[arg(long, value_name = "N", value_parser = requested_concurrency)]
    pub requested: Option<u64>,
    /// The load tool's result file, for a load tool xray does not know (T15)
    #[arg(long, value_name = "FILE")]
    pub bench_result: Option<PathBuf>,
    /// Seconds between samples of the recording (0.05 to 3600)
    #[arg(long, default_value_t = 0.25, value_name = "S")]
    pub interval: f64,
    /// Seconds to wait for the server to be ready, and at most for each probe request (at most a day)
    #[arg(long, default_value_t = 900.0, value_name = "S")]
    pub ready_timeout: f64,
    /// Seconds the server's processes get after SIGTERM before SIGKILL, when xray stops a
    /// server it started (above 0, at most an hour)
    #[arg(long, default_value_t = 30.0, value_name = "S")]
    pub stop_grace: f64,
    /// Send no probe requests before the load (T7)
    #[arg(long)]
    pub no_probe: bool,
    /// The server uses no NVIDIA GPU on this machine (simulated or remote): no GPU gate (T2),
    /// no GPU readings in the recording (T21)
    #[arg(long)]
    pub no_gpu: bool,
    /// Read the whole metrics page at every scrape (default: after the first, only the
    /// samples the recording reads, filtered by the server where it can: the header says)
    #[arg(long)]
    pub whole_pages: bool,
    /// The run is meant to reuse prompt prefixes: T16 does not warn about cache hits
    #[arg(long)]
    pub expect_cache_hits: bool,
    /// Receive the server's OpenTelemetry spans: xray points --serve's engine at its own
    /// receiver on 127.0.0.1 (each request's life as the server recorded it: T24, T25)
    #[arg(long)]
    pub otlp: bool,
    /// Subscribe to the server's KV-cache events: xray adds the engine's
    /// --kv-events-config to --serve, on 127.0.0.1 (T26, the report's KV lane)
    #[arg(long)]
    pub kv_events: bool,
    /// Drain the server's endpoints that forget what they return (TensorRT-LLM's
    /// /perf_metrics and /kv_cache_events: T24, T26, the report's lanes); another reader
    /// of them loses what this takes
    #[arg(long, conflicts_with = "kv_events")]
    pub drain: bool,
    /// Record each engine step: xray adds --enable-logging-iteration-details to a vLLM
    /// --serve and sets INFERLINT_STEPS=RUN/steps.jsonl in its environment; the step
    /// plugin must be installed in the server's environment (pip install
    /// integrations/vllm; docs/steps.md) (T29, T30, T31)
    #[arg(long)]
    pub steps: bool,
    /// Have --serve's engine write its own per-request records into the run folder
    /// (SGLang's --export-metrics-to-file: T24, T25)
    #[arg(long)]
    pub request_metrics: bool,
    /// Write each verdict that changes during the recording to FILE, one JSON object a line
    #[arg(long, value_name = "FILE")]
    pub json_events: Option<PathBuf>,
    /// A title for the report
    #[arg(long)]
    pub title: Option<String>,
    #[command(flatten)]
    pub gate: Gate,
    #[command(flatten)]
    pub output: JsonFlag,
    /// The load command, after --
    #[arg(last = true, value_name = "LOAD")]
    pub load: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run folder (xray's), whose files are found by name
    #[arg(value_name = "RUN")]
    pub run: Option<PathBuf>,
    /// Where the HTML report goes (default RUN/report.html); an existing file is replaced
    /// only when it is a report inferlint wrote
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace an existing report file whatever wrote it (never a file the report reads)
    #[arg(long)]
    pub force: bool,
    /// Boot logs (repeatable)
    #[arg(long = "boot-log", value_name = "FILE")]
    pub boot_logs: Vec<PathBuf>,
    /// The snapshot taken before the load
    #[arg(long, value_name = "FILE")]
    pub before: Option<PathBuf>,
    /// The snapshot taken after the load
    #[arg(long, value_name = "FILE")]
    pub after: Option<PathBuf>,
    /// The recording made during the load
    #[arg(long, value_name = "FILE")]
    pub series: Option<PathBuf>,
    /// The load tool's saved result (bench.json, or SGLang's JSON lines)
    #[arg(long, value_name = "FILE")]
    pub bench_result: Option<PathBuf>,
    /// The server's spans (default: RUN/spans.otlp.jsonl, else *.otlp.jsonl; an
    /// OpenTelemetry Collector's file exporter output too)
    #[arg(long, value_name = "FILE")]
    pub spans: Option<PathBuf>,
    /// The server's KV event stream as a subscriber wrote it (default:
    /// RUN/kv-events.jsonl, else *.kv-events.jsonl)
    #[arg(long, value_name = "FILE")]
    pub kv_events: Option<PathBuf>,
    /// Each engine step as the server's step plugin wrote it (default: RUN/steps.jsonl,
    /// else *.steps.jsonl; docs/steps.md)
    #[arg(long, value_name = "FILE")]
    pub steps: Option<PathBuf>,
    /// The server's own per-request records: a drain's file (default:
    /// RUN/server-requests.jsonl) or the engine's files, a folder of them too (default:
    /// RUN/request-metrics/)
    #[arg(long, value_name = "PATH")]
    pub server_requests: Option<PathBuf>,
    /// The concurrency the load asked for (default: the result file's max_concurrency)
    #[arg(long, value_name = "N", value_parser = requested_concurrency)]
    pub requested: Option<u64>,
    /// The run is meant to reuse prompt prefixes: T16 does not warn about cache hits
    #[arg(long)]
    pub expect_cache_hits: bool,
    /// A title for the report
    #[arg(long)]
    pub title: Option<String>,
    /// Also write the run's timeline as a Chrome trace event file (JSON) to FILE: each
    /// request's phases, the recording and KV events as counters, the verdicts at their
    /// times; opens in Perfetto's UI (never over a file the report reads; an earlier
    /// trace is replaced, any other file only with --force)
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Also write the run as llm-d's Benchmark Report 0.2.1 (JSON) to FILE: the load
    /// tool's figures where the format puts them, the verdicts in
    /// results.observability.inferlint (never over a file the report reads)
    #[arg(long = "llmd-br", value_name = "FILE")]
    pub llmd_br: Option<PathBuf>,
    /// A run to hold this one to: exit 1 when a figure got worse by more than --max-regression
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<PathBuf>,
    /// With --baseline: the largest regression allowed, e.g. 5% (default 5%)
    #[arg(long, value_name = "PCT", value_parser = margin, requires = "baseline")]
    pub max_regression: Option<f64>,
    #[command(flatten)]
    pub slo: SloArgs,
    #[command(flatten)]
    pub prometheus: PrometheusArgs,
    #[command(flatten)]
    pub gate: Gate,
    #[command(flatten)]
    pub output: JsonFlag,
}

/// `report --prometheus`: where the run is read from.
#[derive(Debug, Default, Args)]
pub struct PrometheusArgs {
    /// Read the run from a Prometheus server's HTTP API instead of files: one run per
    /// replica (`pod`, else `instance`), checked each and as a fleet
    #[arg(long, value_name = "URL", requires_all = ["start", "end"], conflicts_with_all = ["run", "boot_logs", "before", "after", "series", "baseline", "slo", "slo_file"])]
    pub prometheus: Option<String>,
    /// The run's start: Unix seconds or RFC 3339 (2025-12-01T09:30:00Z)
    #[arg(long, value_name = "T", requires = "prometheus")]
    pub start: Option<String>,
    /// The run's end: Unix seconds or RFC 3339
    #[arg(long, value_name = "T", requires = "prometheus")]
    pub end: Option<String>,
    /// The label matchers of the replicas' series, e.g. '{job="vllm"}'
    #[arg(long, value_name = "SELECTOR", requires = "prometheus")]
    pub selector: Option<String>,
    /// Seconds between readings (default: the scrape interval Prometheus recorded)
    #[arg(long, value_name = "S", requires = "prometheus")]
    pub step: Option<f64>,
    /// Keep what was read as a fleet folder DIR (new or empty), which `report DIR` reads
    #[arg(long, value_name = "DIR", requires = "prometheus")]
    pub save: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GpuInspectArgs {
    /// A card is clear when no GPU uses more than this many MiB
    #[arg(long, default_value_t = 800, value_name = "MIB")]
    pub max_used_mib: u64,
    /// Clear readings in a row needed
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub consecutive: u32,
    /// Seconds to wait for a clear card (0: one reading)
    #[arg(long, default_value_t = 10.0, value_name = "S")]
    pub timeout: f64,
    #[command(flatten)]
    pub gate: Gate,
    #[command(flatten)]
    pub output: JsonFlag,
}

#[derive(Debug, Args)]
pub struct TeardownArgs {
    /// Only list what would be stopped
    #[arg(long)]
    pub dry_run: bool,
    /// A card is clear when no GPU uses more than this many MiB
    #[arg(long, default_value_t = 800, value_name = "MIB")]
    pub max_used_mib: u64,
    /// Clear readings in a row needed
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub consecutive: u32,
    /// Seconds to wait for a clear card after the processes are stopped
    #[arg(long, default_value_t = 120.0, value_name = "S")]
    pub timeout: f64,
    #[command(flatten)]
    pub gate: Gate,
    #[command(flatten)]
    pub output: JsonFlag,
}

/// Every command name, for "did you mean".
pub const COMMANDS: &[&str] = &[
    "xray",
    "report",
    "check-log",
    "boot-facts",
    "preemption",
    "rate",
    "series",
    "snapshot",
    "watch",
    "probe",
    "gpu-inspect",
    "teardown",
    "demo",
    "explain",
    "compare",
    "sweep",
    "whatif",
    "schema",
    "completions",
    "help",
];

pub const START_HERE: &str = "\
inferlint checks an inference benchmark run against what the server itself recorded:
its boot log, its counters before and after, and a recording made during the load.

Start here:
  inferlint demo                           write a simulated run and check it (no GPU needed)
  inferlint xray -o run/ --serve \"vllm serve MODEL\" -- vllm bench serve ...
                                           the whole routine: start, check, record, report, stop
  inferlint report run/                    check a run folder and say what limited it
  inferlint check-log boot.log             how the server set itself up (T12 T5 T6)
  inferlint series run.series.jsonl --snapshot after.json --requested 32
  inferlint explain T9                     what a tripwire catches and why it matters

Name your engine once with INFERLINT_ENGINE=vllm|sglang|trtllm (or --engine);
inputs from another engine are then refused. 'inferlint --help' lists every command.
";

/// `--max-regression 5%`: a percentage from 0 to 100, with or without the sign.
fn margin(text: &str) -> Result<f64, String> {
    // One `%` at most: `5%%` is a typing slip, never read as 5%.
    let trimmed = text.trim();
    let number = trimmed.strip_suffix('%').unwrap_or(trimmed).trim_end();
    match number.parse::<f64>() {
        Ok(p) if p.is_finite() && (0.0..=100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "'{text}' is not a percentage from 0 to 100 (e.g. 5%)"
        )),
    }
}

/// `--slo`: a service level, read by core; its error is one line naming the bound.
/// Boxed: a service level inline would make `report`'s arguments the command enum's one
/// large variant.
fn service_level(text: &str) -> Result<Box<ServiceLevel>, String> {
    ServiceLevel::parse(text)
        .map(Box::new)
        .map_err(|e| e.to_string())
}

/// `--gpu-price`: dollars an hour, above 0.
fn gpu_price(text: &str) -> Result<f64, String> {
    match text.trim().trim_start_matches('$').parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 => Ok(p),
        _ => Err(format!(
            "'{text}' is not a price in US dollars an hour above 0 (e.g. 2.50)"
        )),
    }
}

/// `--gpus`: 1 or more.
fn gpus(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{text}' is not a whole number of GPUs (1 or more)"
        )),
    }
}

/// `--requested N`: a load keeps at least one request open, so 0 is no concurrency at all
/// (and would let any server pass T8).
fn requested_concurrency(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("give the concurrency the load asked for, 1 or more".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "'{text}' is not a whole number of requests (1 or more)"
        )),
    }
}
