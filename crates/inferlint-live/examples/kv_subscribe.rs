//! Subscribes to an engine's KV-cache event stream until SIGINT or SIGTERM, writing
//! `inferlint.kv-events/1` to OUT, then prints the totals. What
//! `scripts/real-vllm/kv-events.sh` runs against the real engine.
//!
//! Usage: kv_subscribe ENDPOINT REPLAY-ENDPOINT|- OUT [BACKFILL-FROM]

use std::path::Path;
use std::process::ExitCode;

use inferlint_live::kv_events::{KvOptions, KvSubscriber};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (endpoint, replay, out) = match args.as_slice() {
        [e, r, o] | [e, r, o, _] => (e, r, o),
        _ => {
            eprintln!("usage: kv_subscribe ENDPOINT REPLAY-ENDPOINT|- OUT [BACKFILL-FROM]");
            return ExitCode::from(64);
        }
    };
    let mut options = KvOptions::new(endpoint);
    options.replay_endpoint = (replay != "-").then(|| replay.clone());
    if let Some(from) = args.get(3) {
        match from.parse() {
            Ok(from) => options.backfill_from = Some(from),
            Err(_) => {
                eprintln!("kv_subscribe: {from:?} is not a sequence number");
                return ExitCode::from(64);
            }
        }
    }
    let runtime = match inferlint_live::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kv_subscribe: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The handlers first, so a signal that comes while the subscriber starts is kept.
    let interrupted = {
        let _entered = runtime.enter();
        inferlint_live::interrupted()
    };
    let subscriber = match KvSubscriber::start_with(options, Path::new(out)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kv_subscribe: {e}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!("kv_subscribe: writing {out}");
    runtime.block_on(interrupted);
    let summary = subscriber.stop();
    let t = summary.totals;
    println!(
        "{} batches ({} replayed), {} gaps ({} missed), {} bad frames, {} restarts, {} blocks stored, {} removed",
        t.batches, t.replayed, t.gaps, t.missed, t.bad_frames, t.restarts, t.stored_blocks, t.removed_blocks
    );
    if let Some(e) = summary.write_error {
        eprintln!("kv_subscribe: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
