//! The run's timeline as a Chrome trace event file (JSON), which Perfetto's UI
//! (ui.perfetto.dev) and `chrome://tracing` open: the same lanes the page draws, in the
//! viewer people already use for vLLM's and TensorRT-LLM's own profiles.
//!
//! The format (the Trace Event Format, "JSON Object Format"): an object with
//! `traceEvents`, each event a `ph` (phase), a `ts` in microseconds, a `pid` and `tid`
//! naming its track, a `name`, and `args`. This file uses:
//! - `M` (metadata) events naming the processes and threads;
//! - `b` / `e` (async begin and end, one `id` per request, nested by name) for each
//!   request's life: the load tool's view (sent, waiting for its first token, streaming)
//!   and the server's own record where its spans were received (queued, prefill,
//!   decode), the server's records no request of the load joined marked as another
//!   client's;
//! - `C` (counter) events for the recording (requests running and waiting, KV cache use,
//!   preemptions so far) and the KV event stream (blocks stored and removed per second);
//! - `i` (instant, global scope) events for the verdicts, each at the time it judges:
//!   T1's at each stretch where the preemption counter moved, the rest at the end of the
//!   readings' window (what they judge is the whole run).
//!
//! Time zero is the recording's first sample (where there is none, the before reading);
//! its Unix time is in `otherData.t0_unix_s`, beside what was left out and why. Each
//! figure comes from the report's inputs as core made them: nothing is computed here but
//! the placing on the clock.

use inferlint_core::judging::status::Status;
use inferlint_core::model::lives::{is_probe_request, JoinedBy};
use inferlint_core::Tripwire;
use serde_json::{json, Map, Value};

use crate::report::Report;

/// The process ids of the trace's lanes.
const LOAD: u32 = 1;
const SERVER: u32 = 2;
const RECORDING: u32 = 3;
const VERDICTS: u32 = 4;
const STEPS: u32 = 5;

fn us(seconds: f64) -> f64 {
    (seconds * 1e6).round()
}

/// The run's timeline as Chrome trace event JSON. See the module documentation.
pub fn chrome_trace(report: &Report) -> String {
    Trace::of(report).into_json()
}

struct Trace {
    events: Vec<Value>,
    other: Map<String, Value>,
    left_out: Vec<String>,
}

impl Trace {
    fn of(report: &Report) -> Trace {
        let mut trace = Trace {
            events: Vec::new(),
            other: Map::new(),
            left_out: Vec::new(),
        };
        let run = report.run;
        let origin = run
            .series
            .as_ref()
            .and_then(|s| s.first_t_wall)
            .or_else(|| run.before.as_ref().and_then(|b| b.t_wall));
        trace
            .other
            .insert("generator".into(), Value::from(report.generator.to_owned()));
        trace
            .other
            .insert("engine".into(), Value::from(run.engine.name));
        trace.other.insert("t0_unix_s".into(), json!(origin));
        for (pid, name) in [
            (LOAD, "load tool: each request as it saw it"),
            (SERVER, "server: each request's own record"),
            (RECORDING, "recording and KV events"),
            (VERDICTS, "verdicts"),
            (STEPS, "engine steps"),
        ] {
            trace.events.push(json!({
                "ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                "args": {"name": name},
            }));
            trace.events.push(json!({
                "ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                "args": {"sort_index": pid},
            }));
        }
        match origin {
            Some(origin) => {
                trace.load_requests(report);
                trace.server_requests(report, origin);
                trace.recording(report);
                trace.kv_events(report, origin);
                trace.steps(report, origin);
                trace.verdicts(report, origin);
            }
            None => trace.left_out.push(
                "everything on the clock: the run has neither a recording nor a before reading with a wall time to place it"
                    .into(),
            ),
        }
        trace
    }

    fn into_json(self) -> String {
        let mut other = self.other;
        other.insert("left_out".into(), json!(self.left_out));
        json!({
            "traceEvents": self.events,
            "displayTimeUnit": "ms",
            "otherData": other,
        })
        .to_string()
    }

    /// One async slice: `b` at `from`, `e` at `to`, on `pid`'s track, id `id`.
    fn slice(
        &mut self,
        (pid, cat): (u32, &str),
        id: &str,
        name: &str,
        (from, to): (f64, f64),
        args: Value,
    ) {
        if !(from.is_finite() && to.is_finite()) || to < from {
            return;
        }
        self.events.push(json!({
            "ph": "b", "cat": cat, "id": id, "name": name, "pid": pid, "tid": 0,
            "ts": us(from), "args": args,
        }));
        self.events.push(json!({
            "ph": "e", "cat": cat, "id": id, "name": name, "pid": pid, "tid": 0,
            "ts": us(to),
        }));
    }

    /// The load tool's requests, lined up with the recording by core.
    fn load_requests(&mut self, report: &Report) {
        let run = report.run;
        let Some((_, account)) = run.bench.as_ref() else {
            return;
        };
        let timeline = match run.request_timeline() {
            Some(Ok(t)) => t,
            Some(Err(why)) => {
                self.left_out
                    .push(format!("the load tool's requests: {why}"));
                return;
            }
            None => {
                if !account.requests.is_empty() {
                    self.left_out
                        .push("the load tool's requests: no recording to place them on".into());
                }
                return;
            }
        };
        for r in &timeline.requests {
            let id = format!("load-{}", r.index);
            let end = r.end.or(r.first_token).unwrap_or(r.sent);
            let outcome = r.outcome.map(|o| format!("{o:?}").to_lowercase());
            self.slice(
                (LOAD, "request"),
                &id,
                &format!("request {}", r.index),
                (r.sent, end),
                json!({"row": r.index, "outcome": outcome, "ttft_s": r.ttft()}),
            );
            if let Some(first) = r.first_token {
                self.slice(
                    (LOAD, "request"),
                    &id,
                    "waiting for the first token",
                    (r.sent, first),
                    json!({}),
                );
                if let Some(end) = r.end {
                    self.slice((LOAD, "request"), &id, "streaming", (first, end), json!({}));
                }
            }
        }
    }

    /// The server's own records (its spans), the load's where joined, another client's
    /// where every row joined and a record was left over.
    fn server_requests(&mut self, report: &Report, origin: f64) {
        let run = report.run;
        let Some(server) = run.server_requests.as_ref() else {
            return;
        };
        let lives = run.lives();
        let row_of = |s: usize| {
            lives
                .as_ref()
                .and_then(|l| l.pairs.iter().find(|p| p.server == s))
        };
        let other = |s: usize| lives.as_ref().is_some_and(|l| l.others().contains(&s));
        for (s, record) in server.requests.iter().enumerate() {
            let Some(phases) = record.phases(origin) else {
                continue;
            };
            let (arrival, scheduled, first, end) = (
                phases.arrival,
                phases.scheduled,
                phases.first_token,
                phases.end,
            );
            let id = format!("server-{s}");
            let (name, whose) = match row_of(s) {
                Some(p) => (
                    format!("request {}", p.client),
                    match p.by {
                        JoinedBy::Id => "the load's (joined by id)",
                        JoinedBy::TimeAndLength => "the load's (joined by send time and length)",
                    },
                ),
                None if is_probe_request(record) => (
                    "inferlint's probe".to_owned(),
                    "inferlint's own probe, before the load",
                ),
                None if other(s) => ("another client's request".to_owned(), "another client's"),
                None => (
                    "request (not joined)".to_owned(),
                    "not joined to a request of the load",
                ),
            };
            self.slice(
                (SERVER, "server"),
                &id,
                &name,
                (arrival, end.or(first).unwrap_or(arrival)),
                json!({
                    "id": record.id, "whose": whose,
                    "prompt_tokens": record.prompt_tokens, "output_tokens": record.output_tokens,
                    "cached_tokens": record.cached_tokens, "preemptions": record.preemptions,
                }),
            );
            if let Some(scheduled) = scheduled {
                self.slice(
                    (SERVER, "server"),
                    &id,
                    "queued",
                    (arrival, scheduled),
                    json!({}),
                );
                if let Some(first) = first {
                    self.slice(
                        (SERVER, "server"),
                        &id,
                        "prefill",
                        (scheduled, first),
                        json!({}),
                    );
                }
            }
            if let (Some(first), Some(end)) = (first, end) {
                self.slice((SERVER, "server"), &id, "decode", (first, end), json!({}));
            }
        }
    }

    fn counter(&mut self, name: &str, t: f64, args: Value) {
        self.events.push(json!({
            "ph": "C", "name": name, "pid": RECORDING, "tid": 0, "ts": us(t), "args": args,
        }));
    }

    /// The recording as folded for the page: every sample, or the stretches of a long
    /// one (each stretch's highest and last reading).
    fn recording(&mut self, report: &Report) {
        let Some(timeline) = report.timeline else {
            if report.run.series.is_some() {
                self.left_out
                    .push("the recording's samples: it was not folded for drawing".into());
            }
            return;
        };
        let folded = timeline.downsampled();
        self.other.insert(
            "recording".into(),
            json!({"samples": timeline.samples, "points": timeline.points.len(), "stretch_s": timeline.bucket_s}),
        );
        for p in &timeline.points {
            let t = p.t_last;
            let mut requests = Map::new();
            if let Some(r) = p.running {
                requests.insert("running".into(), json!(if folded { r.max } else { r.last }));
            }
            if let Some(w) = p.waiting {
                requests.insert("waiting".into(), json!(if folded { w.max } else { w.last }));
            }
            if !requests.is_empty() {
                self.counter("requests", t, Value::Object(requests));
            }
            if let Some(k) = p.kv_usage {
                let v = if folded { k.max } else { k.last };
                self.counter(
                    "KV cache used, %",
                    t,
                    json!({"used": (v * 1000.0).round() / 10.0}),
                );
            }
            if timeline.has_preemption_counter {
                self.counter(
                    "preemptions so far",
                    t,
                    json!({"preemptions": p.preemptions_so_far}),
                );
            }
        }
    }

    /// The KV event stream, a second's sums each.
    fn kv_events(&mut self, report: &Report, origin: f64) {
        let Some(events) = report.run.kv_events.as_ref() else {
            return;
        };
        for s in &events.seconds {
            let t = s.second as f64 - origin;
            self.counter(
                "KV blocks per second",
                t,
                json!({"stored": s.stored_blocks, "removed": s.removed_blocks}),
            );
        }
        if events.missed_batches() > 0 {
            self.other
                .insert("kv_events_missed".into(), json!(events.missed_batches()));
        }
    }

    /// The engine's steps (`steps.jsonl`) as folded by core: a counter per time bin of
    /// the steps' batch composition (prefill and decode tokens, the deepest queue) and
    /// time (mean and longest step), at most 4,096 bins for a file of any length; each
    /// preemption an instant event at its step.
    fn steps(&mut self, report: &Report, origin: f64) {
        let Some(steps) = report.run.steps.as_ref() else {
            return;
        };
        for (k, bin) in &steps.bins {
            let t = steps.wall(*k as f64 * steps.bin_s) - origin;
            self.events.push(json!({
                "ph": "C", "name": "step batch (tokens)", "pid": STEPS, "tid": 0, "ts": us(t),
                "args": {"prefill": bin.prefill_tokens, "decode": bin.decode_tokens},
            }));
            let mean = (bin.ms_steps > 0).then(|| bin.ms_sum / bin.ms_steps as f64);
            self.events.push(json!({
                "ph": "C", "name": "step time (ms)", "pid": STEPS, "tid": 0, "ts": us(t),
                "args": {"mean": mean.unwrap_or(0.0), "longest": bin.ms_max},
            }));
            self.events.push(json!({
                "ph": "C", "name": "steps' queue", "pid": STEPS, "tid": 0, "ts": us(t),
                "args": {"waiting": bin.queued_max, "running": bin.running_max},
            }));
        }
        for p in &steps.preemptions {
            self.events.push(json!({
                "ph": "i", "s": "p", "name": "preemption", "pid": STEPS, "tid": 0,
                "ts": us(steps.wall(p.t) - origin),
                "args": {"step": p.step, "iteration": p.i, "preempted": p.n},
            }));
        }
        self.other.insert(
            "steps".into(),
            json!({"file": steps.file, "steps": steps.steps, "bin_s": steps.bin_s, "dropped": steps.dropped}),
        );
        let kept: u64 = steps.preemptions.iter().map(|p| p.n).sum();
        if kept != steps.preempted {
            self.left_out.push(format!(
                "{} preemptions past the step file's bound on kept steps",
                steps.preempted - kept
            ));
        }
    }

    /// Each verdict, at the time it judges.
    fn verdicts(&mut self, report: &Report, origin: f64) {
        let run = report.run;
        let end = run
            .after
            .as_ref()
            .and_then(|a| a.t_wall)
            .map(|t| t - origin)
            .or_else(|| report.timeline.map(|t| t.span_s()))
            .unwrap_or(0.0);
        for r in report.results.iter().filter(|r| r.status.is_verdict()) {
            let mut at = vec![end];
            if r.tripwire == Tripwire::T1 && r.status == Status::Fail {
                if let Some(timeline) = report.timeline {
                    let moved: Vec<f64> = timeline
                        .points
                        .iter()
                        .filter(|p| p.preemptions > 0.0)
                        .map(|p| p.t_last)
                        .collect();
                    if !moved.is_empty() {
                        at = moved;
                    }
                }
            }
            for t in at {
                self.events.push(json!({
                    "ph": "i", "s": "g", "name": format!("{} {}", r.tripwire, r.status.human()),
                    "pid": VERDICTS, "tid": 0, "ts": us(t),
                    "args": {"tripwire": r.tripwire.to_string(), "status": r.status.json_word(), "message": r.message},
                }));
            }
        }
    }
}
