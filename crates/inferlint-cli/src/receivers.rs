//! What `watch` and xray share of the span receiver and the KV event subscriber: the
//! wait for a server's last spans, and the lines that say what each received.

use std::time::{Duration, Instant};

use inferlint_core::EngineDescriptor;
use inferlint_engines::files;
use inferlint_live::drain::DrainSummary;
use inferlint_live::kv_events::KvSummary;
use inferlint_live::otlp::{OtlpReceiver, OtlpSummary};

/// How long after the load the server's spans are waited for at most: vLLM's exporter
/// sends what it holds every 5 s.
const SPANS_WAIT: Duration = Duration::from_secs(12);
/// A wait for spans ends once this long has passed with no new request span.
const SPANS_QUIET: Duration = Duration::from_secs(6);

/// Waits for the server's last spans, then stops the receiver: until a request span has
/// come for each of `finished` requests (where the server's counter says), or none has
/// come for [`SPANS_QUIET`], at most [`SPANS_WAIT`], or until `interrupted`. Returns
/// what it received and how many request spans the file holds.
pub fn stop_after_last_spans(
    receiver: OtlpReceiver,
    engine: &EngineDescriptor,
    finished: Option<f64>,
    interrupted: &dyn Fn() -> bool,
) -> (OtlpSummary, usize) {
    let count = || {
        files::read_spans(receiver.file(), engine)
            .map(|s| s.requests.len())
            .unwrap_or(0)
    };
    let deadline = Instant::now() + SPANS_WAIT;
    let (mut last, mut since) = (count(), Instant::now());
    while Instant::now() < deadline
        && finished.is_none_or(|f| (last as f64) < f)
        && since.elapsed() < SPANS_QUIET
        && !interrupted()
    {
        std::thread::sleep(Duration::from_millis(200));
        let now = count();
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    (receiver.stop(), last)
}

/// `spans: 12 export request(s), 45 span(s) received, 32 of them requests`, with the
/// refusals when there were any.
pub fn spans_line(summary: &OtlpSummary, requests: usize) -> String {
    let mut line = format!(
        "spans: {} export request(s), {} span(s) received, {requests} of them requests -> {}",
        summary.requests,
        summary.spans,
        summary.file.display()
    );
    if summary.refused > 0 {
        line.push_str(&format!(
            "; {} refused ({})",
            summary.refused,
            summary.first_refusal.as_deref().unwrap_or("no reason kept")
        ));
    }
    line
}

/// `KV events: 29 batch(es) received (0 replayed), 0 missed in 0 hole(s)`.
pub fn kv_line(summary: &KvSummary) -> String {
    let t = summary.totals;
    format!(
        "KV events: {} batch(es) received ({} replayed), {} missed in {} hole(s) -> {}",
        t.batches,
        t.replayed,
        t.missed,
        t.gaps,
        summary.path.display()
    )
}

/// What a drain took: `drain: 3 answer(s), 32 record(s) -> run/server-requests.jsonl`,
/// with the answers lost, and the KV events' line.
pub fn drain_lines(summary: &DrainSummary) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some((path, t)) = &summary.requests {
        let mut line = format!(
            "drain: {} answer(s), {} record(s) -> {}",
            t.drains,
            t.records,
            path.display()
        );
        if t.failed_drains > 0 {
            line.push_str(&format!(
                "; {} drain(s) got no answer that could be read (what they held is lost)",
                t.failed_drains
            ));
        }
        lines.push(line);
    }
    if let Some((path, t)) = &summary.kv_events {
        lines.push(format!(
            "KV events drained: {} run(s) of events, {} missed in {} hole(s), {} unreadable -> {}",
            t.batches,
            t.missed,
            t.gaps,
            t.bad_frames,
            path.display()
        ));
    }
    lines
}
