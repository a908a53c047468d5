//! `--otlp` and `--kv-events`: the server's own account of each request (its spans) and
//! its KV-cache events, received beside the recording. Both receivers start before the
//! server, on 127.0.0.1, on threads of their own (the 4 Hz sampler is not slowed by
//! them); the engine's flags that point it at them are added to `--serve` from the engine
//! table's `trace_flags`; both stop after the load, once the server's last spans came.
//!
//! `--drain` drains the endpoints that forget what they return (the table's
//! `request_records` and `kv_events_drain`: TensorRT-LLM's `/perf_metrics` and
//! `/kv_cache_events`) on a thread of its own, from before the server starts to one
//! last drain after the load. `--request-metrics` adds the engine's own flags that make
//! it write its per-request records into the run folder (the table's `RecordFiles`:
//! SGLang's `--export-metrics-to-file`).

use super::*;
use inferlint_core::engine::RecordsFrom;
use inferlint_engines::files::{
    KV_EVENTS_FILE, REQUEST_METRICS_DIR, SERVER_REQUESTS_FILE, SPANS_FILE, STEPS_FILE,
};
use inferlint_live::drain::{destructive_warning, DrainOptions, Drainer};
use inferlint_live::kv_events::{KvOptions, KvSubscriber};
use inferlint_live::otlp::{Listen, OtlpReceiver};

/// The receivers of one xray run.
#[derive(Debug, Default)]
pub(super) struct Receivers {
    otlp: Option<OtlpReceiver>,
    kv: Option<KvSubscriber>,
    drain: Option<Drainer>,
}

/// A free TCP port on 127.0.0.1 (bound and let go: the engine binds it next).
fn free_port() -> Result<u16, Stop> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| problem(format!("cannot find a free port on 127.0.0.1: {e}")))
}

/// Refuses `--otlp` and `--kv-events` where xray cannot add the engine's flags: without
/// `--serve`, or for an engine that sends none of it.
pub(super) fn check_flags(args: &XrayArgs, engine: Option<Engine>) -> Result<(), CliError> {
    check_drain_flags(args, engine)?;
    check_steps_flag(args, engine)?;
    if !args.otlp && !args.kv_events {
        return Ok(());
    }
    let flag = if args.otlp { "--otlp" } else { "--kv-events" };
    if args.serve.is_none() {
        return Err(CliError::usage(format!(
            "{flag} needs --serve: xray points the server it starts at its receivers; for a server already running, record it with inferlint watch URL {flag} ... and start the server with its own flags"
        )));
    }
    let Some(engine) = engine else {
        return Err(CliError::usage(format!(
            "{flag} needs the engine (--engine, or a --serve command xray recognizes) to know its flags"
        )));
    };
    let flags = engine.descriptor().trace_flags;
    if args.otlp && flags.and_then(|f| f.otlp_endpoint).is_none() {
        return Err(CliError::usage(format!(
            "--otlp: {}'s spans are not read (its requests' timings are not in one span); leave it out",
            engine.name()
        )));
    }
    if args.kv_events && flags.and_then(|f| f.kv_events_config).is_none() {
        let drained = engine
            .descriptor()
            .kv_events_drain
            .map(|d| format!(" (it serves them from {}, which --drain reads)", d.path))
            .unwrap_or_default();
        return Err(CliError::usage(format!(
            "--kv-events: {} publishes no KV event stream xray can subscribe to{drained}",
            engine.name()
        )));
    }
    Ok(())
}

/// The variable that tells the step plugin (integrations/vllm) where to write.
pub(super) const STEPS_VARIABLE: &str = "INFERLINT_STEPS";

/// How the step plugin is installed, as xray says it.
const STEPS_INSTALL: &str =
    "pip install integrations/vllm into the server's Python environment (docs/steps.md)";

/// Refuses `--steps` without `--serve` or for an engine other than vLLM: the step
/// plugin is a vLLM stat logger.
fn check_steps_flag(args: &XrayArgs, engine: Option<Engine>) -> Result<(), CliError> {
    if !args.steps {
        return Ok(());
    }
    match engine {
        Some(e) if e.descriptor().step_plugin.is_some() => {}
        Some(other) => {
            return Err(CliError::usage(format!(
                "--steps: the step plugin is vLLM's (a stat logger); {} has none",
                other.name()
            )))
        }
        None => {
            return Err(CliError::usage(
                "--steps needs the engine (--engine vllm, or a --serve command xray recognizes as vLLM)",
            ))
        }
    }
    if args.serve.is_none() {
        let flag = engine
            .and_then(|e| e.descriptor().step_plugin)
            .map_or("", |p| p.iteration_details_flag);
        return Err(CliError::usage(format!(
            "--steps needs --serve: xray sets {STEPS_VARIABLE} in the environment of the server it starts; for a server already running, start it with {STEPS_VARIABLE}=FILE and {flag}, and record it with watch --steps FILE"
        )));
    }
    Ok(())
}

/// Refuses `--drain` for an engine without an endpoint that forgets what it returns, and
/// `--request-metrics` for one that writes no per-request files or without `--serve`.
fn check_drain_flags(args: &XrayArgs, engine: Option<Engine>) -> Result<(), CliError> {
    if !args.drain && !args.request_metrics {
        return Ok(());
    }
    let flag = if args.drain {
        "--drain"
    } else {
        "--request-metrics"
    };
    let Some(engine) = engine else {
        return Err(CliError::usage(format!(
            "{flag} needs the engine (--engine, or a --serve command xray recognizes) to know what it serves"
        )));
    };
    let d = engine.descriptor();
    if args.drain {
        let (requests, kv) = inferlint_live::drain::drains(d);
        if requests.is_none() && kv.is_none() {
            let instead = match d.request_records.map(|r| r.from) {
                Some(RecordsFrom::Files(files)) => format!(
                    ": it writes its per-request records to files ({}, which --request-metrics adds)",
                    files.flag
                ),
                _ if d.request_span.is_some() => {
                    ": its account of each request is its spans (--otlp), its KV events a stream (--kv-events)".into()
                }
                _ => String::new(),
            };
            return Err(CliError::usage(format!(
                "--drain: {} serves nothing that forgets what it returns{instead}",
                d.name
            )));
        }
    }
    if args.request_metrics {
        let Some(RecordsFrom::Files(_)) = d.request_records.map(|r| r.from) else {
            let instead = match d.request_records.map(|r| r.from) {
                Some(RecordsFrom::Drain(drain)) => {
                    format!(": it serves them from {} (--drain)", drain.path)
                }
                _ => String::new(),
            };
            return Err(CliError::usage(format!(
                "--request-metrics: {} writes no per-request files{instead}",
                d.name
            )));
        };
        if args.serve.is_none() {
            return Err(CliError::usage(
                "--request-metrics needs --serve: xray adds the engine's own flags to the command that starts it; for a server already running, give its files to report --server-requests",
            ));
        }
    }
    Ok(())
}

impl Xray<'_> {
    /// Starts the receivers asked for and returns the `--serve` words with the engine's
    /// flags that point it at them.
    pub(super) fn start_receivers(&mut self, words: &[String]) -> Result<Vec<String>, Stop> {
        let mut words = words.to_vec();
        self.start_drain(true)?;
        // `--steps` was refused for an engine without the plugin (check_steps_flag).
        let plugin = self.engine.and_then(|e| e.descriptor().step_plugin);
        if let Some(plugin) = plugin.filter(|_| self.args.steps) {
            let flag = plugin.iteration_details_flag;
            say(&format!(
                "== steps: the server's step plugin writes each engine step into {} ({STEPS_VARIABLE}, {flag}); xray installs nothing: {STEPS_INSTALL}",
                shown(&self.dir.join(STEPS_FILE))
            ));
            if !words.iter().any(|w| w == flag) {
                words.push(flag.to_owned());
            }
        }
        if self.args.request_metrics {
            if let Some(RecordsFrom::Files(files)) = self
                .engine
                .and_then(|e| e.descriptor().request_records)
                .map(|r| r.from)
            {
                let dir = self.dir.join(REQUEST_METRICS_DIR);
                // The server's working folder need not be ours: it is told the whole path.
                let dir = std::path::absolute(&dir).unwrap_or(dir);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| problem(format!("cannot make {}: {e}", shown(&dir))))?;
                say(&format!(
                    "== request metrics: the server writes them into {} ({} {}; {})",
                    shown(&dir),
                    files.flag,
                    files.dir_flag,
                    files.needs
                ));
                words.extend([
                    files.flag.to_owned(),
                    files.dir_flag.to_owned(),
                    dir.to_string_lossy().into_owned(),
                ]);
            }
        }
        let Some(flags) = self.engine.and_then(|e| e.descriptor().trace_flags) else {
            return Ok(words);
        };
        if self.args.otlp {
            if let Some(flag) = flags.otlp_endpoint {
                let receiver = OtlpReceiver::start(Listen::AnyPort, self.dir.join(SPANS_FILE))
                    .map_err(|e| problem(format!("cannot start the span receiver: {e}")))?;
                say(&format!(
                    "== spans: receiving at {} (OTLP over gRPC and HTTP) into {}",
                    receiver.grpc_endpoint(),
                    shown(&self.dir.join(SPANS_FILE))
                ));
                words.extend([flag.to_owned(), receiver.grpc_endpoint()]);
                self.receivers.otlp = Some(receiver);
            }
        }
        if self.args.kv_events {
            if let Some(flag) = flags.kv_events_config {
                let endpoint = format!("tcp://127.0.0.1:{}", free_port()?);
                let replay = format!("tcp://127.0.0.1:{}", free_port()?);
                let mut options = KvOptions::new(&endpoint);
                options.replay_endpoint = Some(replay.clone());
                options.bind = true;
                let subscriber = KvSubscriber::start_with(options, &self.dir.join(KV_EVENTS_FILE))
                    .map_err(|e| problem(format!("cannot start the KV event subscriber: {e}")))?;
                say(&format!(
                    "== KV events: subscribed at {endpoint} (replay {replay}) into {}",
                    shown(&self.dir.join(KV_EVENTS_FILE))
                ));
                words.extend([flag.to_owned(), flags.kv_events_json(&endpoint, &replay)]);
                self.receivers.kv = Some(subscriber);
            }
        }
        Ok(words)
    }

    /// Starts draining the server's endpoints that forget what they return, when asked
    /// (`--drain`): before the server when xray starts it (`started_after`: every event
    /// from id 0 is this run's), else before its first scrape.
    pub(super) fn start_drain(&mut self, started_after: bool) -> Result<(), Stop> {
        if !self.args.drain || self.receivers.drain.is_some() {
            return Ok(());
        }
        let Some(engine) = self.engine else {
            return Ok(());
        };
        let d = engine.descriptor();
        let (requests, kv) = inferlint_live::drain::drains(d);
        let mut options = DrainOptions::new(self.base.clone(), d);
        options.requests_out = requests.map(|_| self.dir.join(SERVER_REQUESTS_FILE));
        options.kv_events_out = kv.map(|_| self.dir.join(KV_EVENTS_FILE));
        options.server_started_after = started_after;
        let drainer =
            Drainer::start(options).map_err(|e| problem(format!("cannot start the drain: {e}")))?;
        say(&format!("== drain: {}", destructive_warning(&self.base, d)));
        for drain in [requests, kv].into_iter().flatten() {
            say(&format!(
                "   {} holds nothing unless the server is started for it: {}",
                drain.path, drain.needs
            ));
        }
        self.receivers.drain = Some(drainer);
        Ok(())
    }

    /// Waits for the server's last spans (until a request span has come for every
    /// request the server finished, or for a quiet spell), then stops both receivers
    /// and says what they received.
    pub(super) fn stop_receivers(&mut self, finished: Option<f64>) {
        if let Some(drainer) = self.receivers.drain.take() {
            let summary = drainer.stop();
            for line in crate::receivers::drain_lines(&summary) {
                say(&format!("== {line}"));
            }
            if let Some(e) = summary.write_error {
                eprint_line!("inferlint: {e}");
            }
        }
        if let Some(receiver) = self.receivers.otlp.take() {
            let engine = self.engine.unwrap_or(Engine::DEFAULT).descriptor();
            let shared = Arc::clone(&self.shared);
            let (summary, requests) =
                receiver.stop_after_last_spans(engine, finished, &|| shared.interrupted());
            say(&format!(
                "== {}",
                crate::receivers::spans_line(&summary, requests)
            ));
        }
        if let Some(subscriber) = self.receivers.kv.take() {
            let summary = subscriber.stop();
            say(&format!("== {}", crate::receivers::kv_line(&summary)));
            if let Some(e) = summary.write_error {
                eprint_line!("inferlint: {e}");
            }
        }
        if self.args.steps && !self.dir.join(STEPS_FILE).is_file() {
            eprint_line!(
                "inferlint: warning: --steps: no {} appeared after the load: the step plugin is not installed in the server's environment ({STEPS_INSTALL})",
                shown(&self.dir.join(STEPS_FILE))
            );
        }
    }

    /// The variable that tells the step plugin where to write (the whole path: the
    /// server's working folder need not be ours), where `--steps` asked for it.
    pub(super) fn steps_env(&self) -> Option<(String, String)> {
        self.args.steps.then(|| {
            let path = self.dir.join(STEPS_FILE);
            let path = std::path::absolute(&path).unwrap_or(path);
            (
                STEPS_VARIABLE.to_owned(),
                path.to_string_lossy().into_owned(),
            )
        })
    }
}
