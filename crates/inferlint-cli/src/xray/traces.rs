//! `--otlp` and `--kv-events`: the server's own account of each request (its spans) and
//! its KV-cache events, received beside the recording. Both receivers start before the
//! server, on 127.0.0.1, on threads of their own (the 4 Hz sampler is not slowed by
//! them); the engine's flags that point it at them are added to `--serve` from the engine
//! table's `trace_flags`; both stop after the load, once the server's last spans came.

use super::*;
use inferlint_engines::files::{KV_EVENTS_FILE, SPANS_FILE};
use inferlint_live::kv_events::{KvOptions, KvSubscriber};
use inferlint_live::otlp::{Listen, OtlpReceiver};

/// The receivers of one xray run.
#[derive(Debug, Default)]
pub(super) struct Receivers {
    otlp: Option<OtlpReceiver>,
    kv: Option<KvSubscriber>,
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
        return Err(CliError::usage(format!(
            "--kv-events: {} publishes no KV event stream xray can subscribe to",
            engine.name()
        )));
    }
    Ok(())
}

impl Xray<'_> {
    /// Starts the receivers asked for and returns the `--serve` words with the engine's
    /// flags that point it at them.
    pub(super) fn start_receivers(&mut self, words: &[String]) -> Result<Vec<String>, Stop> {
        let mut words = words.to_vec();
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

    /// Waits for the server's last spans (until a request span has come for every
    /// request the server finished, or for a quiet spell), then stops both receivers
    /// and says what they received.
    pub(super) fn stop_receivers(&mut self, finished: Option<f64>) {
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
    }
}
