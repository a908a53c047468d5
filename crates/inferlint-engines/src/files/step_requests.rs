//! The finished-request lines of a step file (`inferlint.steps/1`, docs/steps.md), read
//! as the server's own account of each request where the run kept no other: one
//! [`ServerRequest`] a line, from vLLM's `FinishedRequestStats` as the plugin writes it.
//!
//! What each time spans, by vLLM's `update_from_finished_request` (v1/metrics/stats.py):
//! `queued` is the engine core's first `QUEUED` event to its first `SCHEDULED`; `prefill`
//! first `SCHEDULED` to the first token; `decode` the first token to the last; `infer`
//! first `SCHEDULED` to the last token (preemptions inside each counted in it). All are
//! the engine core's stamps: none starts at the API server's receipt (its `arrival_time`,
//! which only `e2e_latency` and the TTFT histogram count from, and the plugin does not
//! write), so the front end's work before the engine queued the request (parsing,
//! tokenising, the hop to the engine core) is in no line. The line's `t` is when the
//! plugin's `record` ran for the step the request finished in: just after its last token.
//!
//! So each request's phases are placed from its end backwards: its end at the anchor's
//! wall time plus `t`, its entry into the engine's queue `infer` and `queued` before that
//! (its `arrival` here), its first token `queued` and `prefill` after it. Its TTFT is
//! `queued` plus `prefill`, counted from the engine's queue, and its TTFT from its first
//! scheduling `prefill` (what vLLM's per-request metrics count). No end-to-end time is
//! given: vLLM's counts from the API server's receipt, which no line says.
//!
//! Bounds: lines are read as the step reader reads them (at most
//! [`MAX_STEP_LINE_BYTES`] each, one line held at a time); a line without a `"fin"` key is
//! passed over unparsed; at most [`MAX_FINISHED_REQUESTS`] requests are kept (the first
//! ones), the ones past it counted and named in the load's note.

use std::io::Read;
use std::path::Path;

use inferlint_core::model::traces::{ClockAnchor, RequestSource, ServerRequest, ServerRequests};
use serde::Deserialize;
use serde_json::Value;

use super::steps::{MAX_STEP_LINE_BYTES, STEPS_SCHEMA};
use crate::input::{for_each_line_within, open_input, shown, FileError};

/// The most finished requests kept from one step file (a request is 232 bytes and its
/// id, about 140 MB in all): a day at 6 requests a second. A load past them joins none
/// of the later ones, and T24 and T25 say they could not join it.
pub const MAX_FINISHED_REQUESTS: usize = 1 << 19;

/// A step file's finished requests, as the server's account of each.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishedRequests {
    /// The requests, in the file's order.
    pub requests: ServerRequests,
    /// Finished lines past [`MAX_FINISHED_REQUESTS`], read and not kept.
    pub not_kept: u64,
}

/// Reads the finished-request lines of the step file at `path`; `None` when it has none.
/// Refused: a file whose first line is not a step file's header with its clock anchor.
pub fn read_finished_requests(path: &Path) -> Result<Option<FinishedRequests>, FileError> {
    let (file, _) = open_input(path)?;
    read_finished_requests_from(path, file)
}

/// [`read_finished_requests`] of what `reader` gives; `path` names it.
pub fn read_finished_requests_from(
    path: &Path,
    reader: impl Read,
) -> Result<Option<FinishedRequests>, FileError> {
    read_keeping(path, reader, MAX_FINISHED_REQUESTS)
}

/// [`read_finished_requests_from`], keeping at most `max` requests.
fn read_keeping(
    path: &Path,
    reader: impl Read,
    max: usize,
) -> Result<Option<FinishedRequests>, FileError> {
    let mut fold = Fold {
        max,
        out: ServerRequests::new(RequestSource::StepFileFinished, shown(path)),
        anchor: None,
        failure: None,
        line: 0,
        finished: 0,
        not_kept: 0,
    };
    for_each_line_within(path, reader, MAX_STEP_LINE_BYTES, |line| fold.line(line))?;
    if let Some(why) = fold.failure {
        return Err(FileError::invalid(path, why));
    }
    if fold.anchor.is_none() {
        return Err(FileError::invalid(
            path,
            format!("empty: not a step file ({STEPS_SCHEMA})"),
        ));
    }
    Ok((fold.finished > 0).then_some(FinishedRequests {
        requests: fold.out,
        not_kept: fold.not_kept,
    }))
}

/// A finished line's keys, each as it came: a value of the wrong kind is counted, never
/// the line's end.
#[derive(Deserialize)]
struct FinLine {
    t: Option<Value>,
    fin: Option<Value>,
    #[serde(rename = "in")]
    prompt: Option<Value>,
    out: Option<Value>,
    cached: Option<Value>,
    pre: Option<Value>,
    queued: Option<Value>,
    prefill: Option<Value>,
    decode: Option<Value>,
    infer: Option<Value>,
}

struct Fold {
    /// The most requests kept.
    max: usize,
    out: ServerRequests,
    anchor: Option<ClockAnchor>,
    failure: Option<String>,
    line: u64,
    /// Finished lines read (kept or not).
    finished: u64,
    not_kept: u64,
}

impl Fold {
    fn problem(&mut self, why: String) {
        if self.out.first_problem.is_none() {
            self.out.first_problem = Some(format!("line {}: {why}", self.line));
        }
    }

    fn line(&mut self, line: Option<&[u8]>) {
        self.line += 1;
        if self.failure.is_some() {
            return;
        }
        let Some(line) = line else {
            // Too long to be a line the plugin wrote: the step reader counts it.
            return;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let Some(anchor) = self.anchor else {
            self.header(line);
            return;
        };
        // Only a line naming a finished request is parsed; every other line is the step
        // reader's.
        if !line.windows(6).any(|w| w == b"\"fin\":") {
            return;
        }
        let parsed: FinLine = match serde_json::from_slice(line) {
            Ok(parsed) => parsed,
            Err(e) => {
                self.out.skipped += 1;
                self.problem(format!("a finished request's line that is not read ({e})"));
                return;
            }
        };
        let Some(Value::String(id)) = parsed.fin.clone() else {
            self.out.skipped += 1;
            self.problem("a finished request's line whose `fin` is not an id".into());
            return;
        };
        self.finished += 1;
        if self.out.requests.len() >= self.max {
            self.not_kept += 1;
            return;
        }
        let request = self.request(id, &parsed, anchor);
        self.out.requests.push(request);
    }

    fn header(&mut self, line: &[u8]) {
        let object = match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(o)) => o,
            _ => {
                self.failure = Some(format!(
                    "line {}: not a step file (its first line is not an {STEPS_SCHEMA} header)",
                    self.line
                ));
                return;
            }
        };
        if object.get("schema").and_then(Value::as_str) != Some(STEPS_SCHEMA) {
            self.failure = Some(format!(
                "line {}: not a step file (its first line is not an {STEPS_SCHEMA} header)",
                self.line
            ));
            return;
        }
        let t_wall = object
            .get("t_wall")
            .and_then(Value::as_f64)
            .filter(|t| t.is_finite());
        let t_mono_ns = object.get("t_mono_ns").and_then(Value::as_i64);
        match (t_wall, t_mono_ns) {
            (Some(t_wall), Some(t_mono_ns)) => {
                let anchor = ClockAnchor { t_wall, t_mono_ns };
                self.anchor = Some(anchor);
                self.out.anchor = Some(anchor);
            }
            _ => {
                self.failure = Some(format!(
                    "line {}: the header gives no clock anchor (t_wall and t_mono_ns)",
                    self.line
                ))
            }
        }
    }

    /// One value: `None` when the key is missing (a vLLM without the field: the plugin's
    /// header lists it as unread), `None` and counted when it is there and not a count.
    fn count(&mut self, key: &str, value: &Option<Value>) -> Option<u64> {
        let value = value.as_ref()?;
        let n = value.as_u64();
        if n.is_none() {
            self.out.unreadable_values += 1;
            self.problem(format!("`{key}` is {value}, not a count"));
        }
        n
    }

    /// As [`Fold::count`], for seconds: a finite number, not negative.
    fn seconds(&mut self, key: &str, value: &Option<Value>) -> Option<f64> {
        let value = value.as_ref()?;
        let s = value.as_f64().filter(|s| s.is_finite() && *s >= 0.0);
        if s.is_none() {
            self.out.unreadable_values += 1;
            self.problem(format!("`{key}` is {value}, not seconds"));
        }
        s
    }

    fn request(&mut self, id: String, line: &FinLine, anchor: ClockAnchor) -> ServerRequest {
        let t = self.seconds("t", &line.t);
        let queued = self.seconds("queued", &line.queued);
        let prefill = self.seconds("prefill", &line.prefill);
        let decode = self.seconds("decode", &line.decode);
        let infer = self.seconds("infer", &line.infer);
        // From first scheduled to the last token: `infer`, else its two parts.
        let in_engine = infer.or_else(|| Some(prefill? + decode?));
        let arrival = (|| Some(anchor.t_wall + t? - in_engine? - queued?))();
        ServerRequest {
            id: Some(id),
            arrival,
            queue_s: queued,
            ttft_s: (|| Some(queued? + prefill?))(),
            ttft_from_scheduling_s: prefill,
            prefill_s: prefill,
            decode_s: decode,
            e2e_s: None,
            prompt_tokens: self.count("in", &line.prompt),
            output_tokens: self.count("out", &line.out),
            cached_tokens: self.count("cached", &line.cached),
            preemptions: self.count("pre", &line.pre),
            reused_blocks: None,
            missed_blocks: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::model::lives::is_probe_request;

    const HEADER: &str = r#"{"schema":"inferlint.steps/1","engine":"vllm","t_wall":1000.0,"t_mono_ns":5000000000,"iteration_details":true,"unread":[]}"#;

    fn read(lines: &[&str]) -> Result<Option<FinishedRequests>, FileError> {
        let text = lines.join("\n") + "\n";
        read_finished_requests_from(Path::new("steps.jsonl"), text.as_bytes())
    }

    /// Lines in the plugin's form: a step, the probe's request, a load's request, one
    /// whose `out` is missing (a vLLM without the field), one whose `decode` is a string,
    /// a gap and the end.
    #[test]
    fn each_finished_line_is_one_request_placed_from_its_end() {
        let got = read(&[
            HEADER,
            r#"{"t":0.5,"r":1,"w":0,"d":0,"kv":0.01,"gen":1,"prompt":6,"pre":0}"#,
            r#"{"t":0.840629,"fin":"cmpl-inferlint-probe-1796524950000-0-0","reason":"length","in":6,"out":16,"cached":0,"pre":0,"queued":2.7e-05,"prefill":0.009774,"decode":0.054014,"infer":0.063788}"#,
            r#"{"t":2.0,"fin":"cmpl-bench-1-0","reason":"stop","in":32,"out":8,"cached":16,"pre":1,"queued":0.25,"prefill":0.125,"decode":0.5,"infer":0.625}"#,
            r#"{"t":3.0,"fin":"cmpl-bench-2-0","reason":"stop","in":32,"cached":0,"pre":0,"queued":0.0,"prefill":0.5,"decode":0.25,"infer":0.75}"#,
            r#"{"t":4.0,"fin":"cmpl-bench-3-0","reason":"stop","in":32,"out":4,"cached":0,"pre":0,"queued":0.5,"prefill":0.25,"decode":"soon","infer":0.75}"#,
            r#"{"t":4.5,"gap":2,"reason":"queue full"}"#,
            r#"{"t":5.0,"end":true,"steps":1,"dropped":2,"calls":3,"record_ns":100}"#,
        ])
        .unwrap()
        .expect("four finished lines");
        assert_eq!(got.not_kept, 0);
        let out = &got.requests;
        assert_eq!(out.source, RequestSource::StepFileFinished);
        assert_eq!(out.file, "steps.jsonl");
        assert_eq!(
            out.anchor,
            Some(ClockAnchor {
                t_wall: 1000.0,
                t_mono_ns: 5_000_000_000
            })
        );
        let ids: Vec<_> = out.requests.iter().map(|r| r.id.as_deref()).collect();
        assert_eq!(
            ids,
            [
                Some("cmpl-inferlint-probe-1796524950000-0-0"),
                Some("cmpl-bench-1-0"),
                Some("cmpl-bench-2-0"),
                Some("cmpl-bench-3-0")
            ]
        );
        // The probe's request is kept as the engine recorded it; the join tells it apart
        // by its id.
        assert!(is_probe_request(&out.requests[0]));
        assert!(!is_probe_request(&out.requests[1]));

        // Ended at 1000 + 2.0; in the engine 0.625 s from first scheduled, 0.25 s queued
        // before: it entered the engine's queue at 1001.125, its first token 0.375 s
        // later.
        let r = &out.requests[1];
        assert_eq!(r.arrival, Some(1001.125));
        assert_eq!(r.queue_s, Some(0.25));
        assert_eq!(r.ttft_s, Some(0.375));
        assert_eq!(r.ttft_from_scheduling_s, Some(0.125));
        assert_eq!(
            (r.prefill_s, r.decode_s, r.e2e_s),
            (Some(0.125), Some(0.5), None)
        );
        assert_eq!(
            (
                r.prompt_tokens,
                r.output_tokens,
                r.cached_tokens,
                r.preemptions
            ),
            (Some(32), Some(8), Some(16), Some(1))
        );
        let phases = r.phases(1000.0).unwrap();
        assert_eq!(phases.end, Some(2.0));

        // No `out`: no count, and no damage.
        assert_eq!(out.requests[2].output_tokens, None);
        assert_eq!(out.requests[2].prompt_tokens, Some(32));
        // `decode` not a number: that value unread and counted; the rest kept, the
        // arrival from `infer`.
        let r = &out.requests[3];
        assert_eq!((r.decode_s, r.output_tokens), (None, Some(4)));
        assert_eq!(r.arrival, Some(1003.25 - 0.5));
        assert_eq!(out.unreadable_values, 1);
        assert_eq!(out.skipped, 0);
        assert_eq!(
            out.first_problem.as_deref(),
            Some(r#"line 6: `decode` is "soon", not seconds"#)
        );
    }

    #[test]
    fn a_damaged_finished_line_is_skipped_and_a_file_without_any_gives_none() {
        let got = read(&[
            HEADER,
            r#"{"t":1.0,"fin":42,"out":3}"#,
            r#"{"t":1.0,"fin":"cmpl-a-0","out":3"#,
            r#"{"t":1.5,"fin":"cmpl-b-0","out":3}"#,
        ])
        .unwrap()
        .unwrap();
        assert_eq!(got.requests.requests.len(), 1);
        assert_eq!(got.requests.skipped, 2);
        assert!(got
            .requests
            .first_problem
            .as_deref()
            .unwrap()
            .starts_with("line 2: "));

        let none = read(&[HEADER, r#"{"t":0.5,"r":1,"w":0,"d":0,"kv":0.01}"#]).unwrap();
        assert_eq!(none, None);
        let err = read(&[r#"{"t":0.5,"fin":"cmpl-a-0"}"#]).unwrap_err();
        assert!(err.to_string().contains("not a step file"), "{err}");
    }

    /// Past the bound, a finished line is counted and not kept: memory stays bounded
    /// however long the server ran.
    #[test]
    fn past_the_bound_finished_lines_are_counted_not_kept() {
        let mut text = format!("{HEADER}\n");
        for i in 0..5 {
            text.push_str(&format!(
                "{{\"t\":{i}.5,\"fin\":\"cmpl-{i}-0\",\"out\":2}}\n"
            ));
        }
        let got = read_keeping(Path::new("steps.jsonl"), text.as_bytes(), 3)
            .unwrap()
            .unwrap();
        assert_eq!(got.requests.requests.len(), 3);
        assert_eq!(got.not_kept, 2);
        assert_eq!(got.requests.requests[2].id.as_deref(), Some("cmpl-2-0"));
    }
}
