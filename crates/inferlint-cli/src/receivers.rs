//! What `watch` and xray share of the span receiver and the KV event subscriber: the
//! lines that say what each received.

use inferlint_live::drain::DrainSummary;
use inferlint_live::kv_events::KvSummary;
use inferlint_live::otlp::OtlpSummary;

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
