//! A simulated run folder's `spans.otlp.jsonl` and `kv-events.jsonl`, written as xray's
//! receivers write them while it records the server (`inferlint-live`'s OTLP receiver and
//! KV event subscriber, both started before the server), from what the scheduler model
//! did: each request's times and each step's block events. No network, no clock.
//!
//! - **Spans.** The receiver's header (its clock anchor), then one line per export
//!   request in the order the server's exporters sent them: the boot spans (one request
//!   per process), then the finished requests' spans in batches, each batch the requests
//!   that finished since the last tick of the batch span processor (every 5 s from the
//!   server's start), and what was left when it stopped. Every resource says it is
//!   simulated ([`crate::otlp::SIMULATED_ATTRIBUTE`]).
//! - **KV events.** The subscriber's header, a note that the stream is simulated, the
//!   lines of its bind and its subscription (xray's subscriber binds, and the engine,
//!   started after it, connects), the line of the publisher's connection during the
//!   boot, one line per step that stored, removed or cleared blocks (the engine's `ts` the
//!   step's end, received a fraction of a millisecond later), and the closing line with
//!   the totals.

use inferlint_core::model::traces::{ClockAnchor, KvNumbering};
use inferlint_engines::files::{
    kv_batch_json, kv_bound_json, kv_connected_json, kv_end_json, kv_header_json, kv_note_json,
    kv_subscribed_json, otlp_header_json, KvHeader, KvTotals, OtlpHeader,
};
use inferlint_engines::kv_frames::KvBatch;

use crate::kvblocks::Tally;
use crate::otlp::{self, Processes, RequestRecord};
use crate::rng::Rng;

/// The note a simulated KV event file carries after its header.
pub const KV_NOTE: &str =
    "simulated by inferlint-sim: not a real engine's stream; written from a scheduler model";

/// How long the batch span processor waits between exports by default (vLLM's
/// OpenTelemetry SDK, `OTEL_BSP_SCHEDULE_DELAY`).
pub const BSP_DELAY_S: f64 = 5.0;

/// The recorder's two clocks: a wall time's monotonic reading.
pub trait Clocks {
    /// Both clocks at the wall time `wall`.
    fn at(&self, wall: f64) -> ClockAnchor;
}

/// What the spans file is made of.
#[derive(Debug)]
pub struct SpansRun<'a> {
    /// When the receiver started (before the server).
    pub receiver_start: f64,
    /// The port it listened on.
    pub port: u16,
    /// When the server started and when it was ready.
    pub boot: (f64, f64),
    /// The server's API process id.
    pub pid: u32,
    /// Each finished request, with the wall time it finished, in the order they finished.
    pub requests: &'a [(f64, RequestRecord)],
    /// When the server stopped (its exporter sends what it still holds).
    pub stop: f64,
}

/// The spans file.
pub fn spans_file(run: &SpansRun, clocks: &dyn Clocks, rng: &mut Rng) -> String {
    let mut out = otlp_header_json(&OtlpHeader {
        received_on: format!("127.0.0.1:{}", run.port),
        grpc: format!("http://127.0.0.1:{}", run.port),
        http: format!("http://127.0.0.1:{}/v1/traces", run.port),
        anchor: clocks.at(run.receiver_start),
    });
    out.push('\n');
    let processes = Processes::new(run.pid, rng);
    for batch in otlp::boot_batches(&processes, run.boot.0, run.boot.1, rng) {
        out.push_str(&otlp::json_line(&batch));
        out.push('\n');
    }
    // The processor's ticks, from the server's start: a request finished before a tick
    // goes out at that tick; what is left, at the stop.
    let tick = |finished: f64| {
        let k = ((finished - run.boot.0) / BSP_DELAY_S).floor() + 1.0;
        (run.boot.0 + k * BSP_DELAY_S).min(run.stop)
    };
    let mut i = 0;
    while i < run.requests.len() {
        let at = tick(run.requests[i].0);
        let mut spans = Vec::new();
        while i < run.requests.len() && tick(run.requests[i].0) <= at {
            spans.push(otlp::request_span(&run.requests[i].1, rng));
            i += 1;
        }
        // The SDK's largest export request.
        for chunk in spans.chunks(512) {
            out.push_str(&otlp::json_line(&otlp::request_batch(
                &processes,
                chunk.to_vec(),
            )));
            out.push('\n');
        }
    }
    out
}

/// What the KV event file is made of.
#[derive(Debug)]
pub struct KvRun<'a> {
    /// When the subscriber started (before the server).
    pub subscriber_start: f64,
    /// The ports it bound and was given for the replay.
    pub ports: (u16, u16),
    /// When the engine's publisher connected to it (during the boot).
    pub publisher_connected: f64,
    /// Each step that changed the cache: its end on the engine's wall clock, and what it
    /// did.
    pub batches: &'a [(f64, Tally)],
    /// When the subscriber stopped.
    pub stop: f64,
}

/// The KV event file.
pub fn kv_file(run: &KvRun, clocks: &dyn Clocks, rng: &mut Rng) -> String {
    let endpoint = format!("tcp://127.0.0.1:{}", run.ports.0);
    let anchor = clocks.at(run.subscriber_start);
    let mut lines = vec![
        kv_header_json(&KvHeader {
            endpoint: endpoint.clone(),
            replay_endpoint: Some(format!("tcp://127.0.0.1:{}", run.ports.1)),
            backfill_from: None,
            anchor,
            drained: false,
            numbered_by: KvNumbering::Batch,
        }),
        kv_note_json(KV_NOTE, anchor),
        kv_bound_json(&endpoint, clocks.at(run.subscriber_start + 0.002)),
        kv_subscribed_json(&endpoint, false, clocks.at(run.subscriber_start + 0.0022)),
        kv_connected_json(&endpoint, clocks.at(run.publisher_connected)),
    ];
    let mut totals = KvTotals::default();
    for (seq, (ts, t)) in run.batches.iter().enumerate() {
        let named = t.stored_blocks + t.removed_blocks > 0;
        let batch = KvBatch {
            ts: *ts,
            dp_rank: Some(0),
            events: t.events,
            stored_blocks: t.stored_blocks,
            stored_tokens: t.stored_tokens,
            removed_blocks: t.removed_blocks,
            cleared: t.cleared,
            media: if named {
                vec!["GPU".to_owned()]
            } else {
                Vec::new()
            },
            ..KvBatch::default()
        };
        let received = ts + 0.0003 + 0.0006 * rng.unit();
        lines.push(kv_batch_json(
            seq as u64,
            &batch,
            clocks.at(received),
            false,
        ));
        totals.batches += 1;
        totals.stored_blocks += t.stored_blocks;
        totals.removed_blocks += t.removed_blocks;
    }
    lines.push(kv_end_json(&totals, clocks.at(run.stop)));
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
