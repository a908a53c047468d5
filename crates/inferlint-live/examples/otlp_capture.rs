//! Runs the OTLP receiver by itself, for making fixtures of what an engine really sends
//! (`scripts/real-vllm/otlp.sh`): it writes the file the receiver writes and, with
//! `--bodies DIR`, every body as it came.
//!
//! ```text
//! otlp_capture OUT.jsonl [--bodies DIR] [--port N] [--until-spans N]
//! ```
//!
//! It prints `grpc URL` and `http URL` on standard output once it listens, then receives
//! until SIGINT or SIGTERM, or until it has written `--until-spans` spans, and prints its
//! summary as one line of JSON.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use inferlint_live::otlp::{Listen, OtlpOptions, OtlpReceiver};

fn main() {
    if let Err(e) = run() {
        eprintln!("otlp_capture: {e}");
        std::process::exit(64);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut out: Option<PathBuf> = None;
    let mut options = OtlpOptions::default();
    let mut listen = Listen::AnyPort;
    let mut until_spans: Option<u64> = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--bodies" => options.keep_bodies = Some(value("--bodies")?.into()),
            "--port" => {
                let port = value("--port")?;
                listen = Listen::Port(port.parse().map_err(|_| format!("bad port {port}"))?);
            }
            "--until-spans" => {
                let n = value("--until-spans")?;
                until_spans = Some(n.parse().map_err(|_| format!("bad count {n}"))?);
            }
            _ if out.is_none() && !arg.starts_with("--") => out = Some(arg.into()),
            _ => return Err(format!("unexpected argument {arg}")),
        }
    }
    let out =
        out.ok_or("usage: otlp_capture OUT.jsonl [--bodies DIR] [--port N] [--until-spans N]")?;
    let runtime = inferlint_live::runtime().map_err(|e| e.to_string())?;
    // The handlers go in before the receiver starts, so no signal is lost in between.
    let interrupted = {
        let _inside = runtime.enter();
        inferlint_live::interrupted()
    };
    let receiver = OtlpReceiver::start_with(listen, &out, &options).map_err(|e| e.to_string())?;
    println!("grpc {}", receiver.grpc_endpoint());
    println!("http {}", receiver.http_endpoint());
    let _ = std::io::stdout().flush();
    runtime.block_on(async {
        tokio::pin!(interrupted);
        loop {
            tokio::select! {
                _ = &mut interrupted => break,
                _ = tokio::time::sleep(Duration::from_millis(100)) => {
                    if until_spans.is_some_and(|n| receiver.tally().spans >= n) {
                        break;
                    }
                }
            }
        }
    });
    let s = receiver.stop();
    println!(
        "{}",
        serde_json::json!({
            "file": s.file,
            "requests": s.requests,
            "spans": s.spans,
            "refused": s.refused,
            "too_large": s.too_large,
            "over_budget": s.over_budget,
            "connections_refused": s.connections_refused,
            "broken_connections": s.broken_connections,
            "first_refusal": s.first_refusal,
            "cut_at_stop": s.cut_at_stop,
            "sync_error": s.sync_error,
        })
    );
    Ok(())
}
