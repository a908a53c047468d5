//! The step file (`inferlint.steps/1`, docs/steps.md): one line per engine step, written
//! inside the server by its stat-logger plugin; and its reader, into the run model's
//! [`Steps`], folded as it is read (a day at 50 steps a second is 4.3 M lines; nothing
//! keeps them all).
//!
//! A file whose first line is not an `inferlint.steps/1` header is refused, as is a
//! second header. A line that cannot be read (not JSON, no `t`, a key of no known kind of
//! line, a line cut by a server killed mid-write) is damage: counted in `skipped`, never
//! read as a step.

use std::io::Read;
use std::path::Path;

use inferlint_core::steps::{StepGap, StepLine, Steps, StepsEnd};
use inferlint_core::traces::ClockAnchor;
use serde_json::{Map, Value};

use crate::input::{open_input, shown, FileError};

/// The schema string of the header line.
pub const STEPS_SCHEMA: &str = "inferlint.steps/1";

/// The longest line read: a step is about 120 bytes, a finished request's line twice
/// that. A longer line is skipped without being held.
pub const MAX_STEP_LINE_BYTES: usize = 16 << 10;

/// Reads a step file into its fold. Refused: a file without the header first, a header
/// of another schema, a second header, an empty file.
pub fn read_steps(path: &Path) -> Result<Steps, FileError> {
    let (file, _) = open_input(path)?;
    read_steps_from(path, file)
}

/// [`read_steps`] from any reader; `path` names it.
pub fn read_steps_from(path: &Path, reader: impl Read) -> Result<Steps, FileError> {
    let mut steps: Option<Steps> = None;
    let mut failure: Option<String> = None;
    let mut line_no = 0usize;
    crate::input::for_each_line_within(path, reader, MAX_STEP_LINE_BYTES, |line| {
        line_no += 1;
        if failure.is_some() {
            return;
        }
        let text = match line.map(std::str::from_utf8) {
            Some(Ok(text)) if text.trim().is_empty() => return,
            Some(Ok(text)) => Some(text),
            _ => None,
        };
        let Some(folded) = steps.as_mut() else {
            let object = text.and_then(|t| match serde_json::from_str::<Value>(t) {
                Ok(Value::Object(o)) => Some(o),
                _ => None,
            });
            match object.as_ref().map(|o| header(path, o)) {
                Some(Ok(header)) => steps = Some(header),
                Some(Err(why)) => failure = Some(format!("line {line_no}: {why}")),
                None => {
                    failure = Some(format!(
                        "line {line_no}: not a step file (its first line is not an {STEPS_SCHEMA} header)"
                    ))
                }
            }
            return;
        };
        // Past the header, each line is read into its fields as typed (a value of the
        // wrong type fails the line: damage), the keys no check reads passed over.
        let Some(raw) = text.and_then(|t| serde_json::from_str::<RawLine>(t).ok()) else {
            folded.skipped += 1;
            return;
        };
        if raw.schema.is_some() {
            failure = Some(format!("line {line_no}: a second header"));
            return;
        }
        if fold_line(folded, raw).is_err() {
            folded.skipped += 1;
        }
    })?;
    if let Some(why) = failure {
        return Err(FileError::invalid(path, why));
    }
    let mut steps = steps.ok_or_else(|| {
        FileError::invalid(path, format!("empty: not a step file ({STEPS_SCHEMA})"))
    })?;
    steps.finish();
    Ok(steps)
}

fn header(path: &Path, o: &Map<String, Value>) -> Result<Steps, String> {
    match o.get("schema").and_then(Value::as_str) {
        Some(STEPS_SCHEMA) => {}
        Some(other) => {
            return Err(format!(
                "a header of {other}, not {STEPS_SCHEMA}: not a step file this inferlint reads"
            ))
        }
        None => {
            return Err(format!(
                "not a step file (its first line is not an {STEPS_SCHEMA} header)"
            ))
        }
    }
    let t_wall = o
        .get("t_wall")
        .and_then(Value::as_f64)
        .filter(|t| t.is_finite());
    let t_mono_ns = o.get("t_mono_ns").and_then(Value::as_i64);
    let (Some(t_wall), Some(t_mono_ns)) = (t_wall, t_mono_ns) else {
        return Err("the header gives no clock anchor (t_wall and t_mono_ns)".into());
    };
    let mut steps = Steps::new(shown(path), ClockAnchor { t_wall, t_mono_ns });
    steps.engine_version = o
        .get("engine_version")
        .and_then(Value::as_str)
        .map(str::to_owned);
    steps.iteration_details = o
        .get("iteration_details")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(steps)
}

/// A line past the header, as typed as the format says; keys no check reads are passed
/// over.
#[derive(serde::Deserialize)]
struct RawLine {
    schema: Option<serde::de::IgnoredAny>,
    t: Option<f64>,
    end: Option<serde::de::IgnoredAny>,
    steps: Option<u64>,
    dropped: Option<u64>,
    calls: Option<u64>,
    record_ns: Option<u64>,
    gap: Option<u64>,
    reason: Option<String>,
    fin: Option<serde::de::IgnoredAny>,
    i: Option<u64>,
    r: Option<u64>,
    w: Option<u64>,
    d: Option<u64>,
    kv: Option<f64>,
    pr: Option<u64>,
    pt: Option<u64>,
    dr: Option<u64>,
    dt: Option<u64>,
    ms: Option<f64>,
    gen: Option<u64>,
    prompt: Option<u64>,
    pre: Option<u64>,
}

/// Folds one line that is not the header; `Err` for a line of no known kind, without
/// `t`, or with a time that is no time (damage).
fn fold_line(steps: &mut Steps, o: RawLine) -> Result<(), ()> {
    let t = o.t.filter(|t| t.is_finite() && *t >= 0.0).ok_or(())?;
    if o.end.is_some() {
        steps.end = Some(StepsEnd {
            t,
            steps: o.steps,
            dropped: o.dropped,
            calls: o.calls,
            record_ns: o.record_ns,
        });
        return Ok(());
    }
    if let Some(dropped) = o.gap {
        steps.gap(StepGap {
            t,
            steps: dropped,
            reason: o.reason.unwrap_or_else(|| "not said".to_owned()),
        });
        return Ok(());
    }
    if o.fin.is_some() {
        steps.finished += 1;
        return Ok(());
    }
    // A step: at least one of the scheduler's numbers.
    if o.r.is_none()
        && o.w.is_none()
        && o.d.is_none()
        && o.kv.is_none()
        && o.ms.is_none()
        && o.gen.is_none()
    {
        return Err(());
    }
    let finite = |x: Option<f64>| x.filter(|v| v.is_finite());
    steps.step(&StepLine {
        t,
        i: o.i,
        r: o.r,
        w: o.w,
        d: o.d,
        kv: finite(o.kv),
        pr: o.pr,
        pt: o.pt,
        dr: o.dr,
        dt: o.dt,
        ms: finite(o.ms),
        gen: o.gen,
        prompt: o.prompt,
        pre: o.pre,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"schema":"inferlint.steps/1","plugin":"0.1.0","engine":"vllm","engine_version":"0.32.0","engine_index":0,"pid":1,"t_wall":1796524949.5,"t_mono_ns":1000000000,"iteration_details":true,"unread":[]}"#;

    fn read(text: &str) -> Result<Steps, FileError> {
        read_steps_from(Path::new("steps.jsonl"), text.as_bytes())
    }

    /// The format's lines, each read as its kind: a step folded, a finished request
    /// counted, a gap kept with its count, the end's totals; the wall clock is the
    /// header's plus `t`.
    #[test]
    fn each_kind_of_line_is_read_as_the_format_says() {
        let text = format!(
            "{HEADER}\n\
             {{\"t\":0.5,\"r\":2,\"w\":1,\"d\":0,\"kv\":0.1,\"i\":0,\"pr\":1,\"pt\":32,\"dr\":1,\"dt\":1,\"ms\":4.0,\"gen\":2,\"prompt\":32,\"pre\":1}}\n\
             {{\"t\":0.6,\"gap\":7,\"reason\":\"queue full\"}}\n\
             {{\"t\":0.7,\"fin\":\"cmpl-1\",\"reason\":\"length\",\"in\":32,\"out\":2}}\n\
             {{\"t\":0.8,\"end\":true,\"steps\":1,\"dropped\":7,\"calls\":8,\"record_ns\":100}}\n"
        );
        let steps = read(&text).unwrap();
        assert_eq!(steps.steps, 1);
        assert_eq!(steps.detailed, 1);
        assert_eq!(steps.finished, 1);
        assert_eq!((steps.gap_lines, steps.dropped), (1, 7));
        assert_eq!(steps.gaps[0].reason, "queue full");
        assert_eq!(steps.preempted, 1);
        assert_eq!(steps.preemptions[0].i, Some(0));
        assert_eq!(steps.end.unwrap().calls, Some(8));
        assert!((steps.wall(0.5) - 1796524950.0).abs() < 1e-6);
        assert_eq!(steps.skipped, 0);
    }

    /// Another schema's header, a file that is no step file, a second header and an
    /// empty file are refused with one line; a damaged line past the header is counted.
    #[test]
    fn garbage_is_refused_and_damage_counted() {
        let other = HEADER.replace("inferlint.steps/1", "inferlint.steps/2");
        let err = read(&other).unwrap_err().to_string();
        assert!(err.contains("a header of inferlint.steps/2"), "{err}");
        assert!(!err.contains('\n'));
        let err = read("{\"t\":1}\n").unwrap_err().to_string();
        assert!(err.contains("not a step file"), "{err}");
        let err = read(&format!("{HEADER}\n{HEADER}\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("a second header"), "{err}");
        assert!(read("").unwrap_err().to_string().contains("empty"));
        let damaged = format!(
            "{HEADER}\nnot json\n{{\"t\":1.0,\"r\":\"x\"}}\n{{\"t\":1.0,\"what\":1}}\n{{\"t\":1.1,\"r\":1,\"w\":0"
        );
        let steps = read(&damaged).unwrap();
        assert_eq!((steps.steps, steps.skipped), (0, 4));
    }

    /// The real recordings read whole: their step, finished-request and gap counts are
    /// those their MADE.md states (scripts/real-vllm/steps_made.py counted them).
    #[test]
    fn the_real_recordings_read_as_made() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real/vllm-0.32-cpu");
        for (name, step_lines, finished, preempted) in [
            ("steps-healthy", 180, 41, 0),
            ("steps-preempting", 1329, 25, 11),
            ("steps-long-prefill", 239, 41, 0),
        ] {
            let steps = read_steps(&root.join(name).join("steps.jsonl")).unwrap();
            assert_eq!(steps.steps, step_lines, "{name}");
            assert_eq!(steps.finished, finished, "{name}");
            assert_eq!(steps.preempted, preempted, "{name}");
            assert_eq!((steps.gap_lines, steps.skipped), (0, 0), "{name}");
            assert_eq!(steps.end.and_then(|e| e.steps), Some(step_lines), "{name}");
        }
    }

    /// The three checks on the real recordings, argued from what happened on the server
    /// (each folder's MADE.md):
    /// - steps-healthy: nobody waited, 0 preemptions, small prefills (32 tokens) beside
    ///   decodes: T29, T30, T31 pass;
    /// - steps-preempting: 6 blocks for 8 requests of 2 blocks: requests waited in 1,067
    ///   steps, each of which still generated (Pass); 11 preemptions, the counter moved
    ///   11; iterations 273 and 275 (3 within 20 ms) and iteration 527 (2 in one step)
    ///   are bursts (steps 275-277 and 529 in the file, three lines without an
    ///   iteration index before them); the others lie a hundred steps apart;
    /// - steps-long-prefill: prompts of 400 words scheduled beside decodes: its slowest
    ///   decode steps are mostly prefill-carrying, and those ran about 1.9 times as long
    ///   as decode-only steps of their batch: T30 warns.
    #[test]
    fn the_step_checks_on_the_real_recordings() {
        use inferlint_core::checks::steps as checks;
        use inferlint_core::status::Status;
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/real/vllm-0.32-cpu");
        let engine = &inferlint_core::engine::VLLM;
        let load = |name: &str| {
            let dir = root.join(name);
            let steps = read_steps(&dir.join("steps.jsonl")).unwrap();
            let b = crate::files::read_snapshot(&dir.join("before.snapshot.json")).unwrap();
            let a = crate::files::read_snapshot(&dir.join("after.snapshot.json")).unwrap();
            (steps, b, a)
        };
        for name in ["steps-healthy", "steps-preempting", "steps-long-prefill"] {
            let (steps, _, _) = load(name);
            let r = checks::scheduler_stall(&steps);
            assert_eq!(r.status, Status::Pass, "{name}: {}", r.message);
        }
        let (healthy, b, a) = load("steps-healthy");
        let r = checks::prefill_stalls_decode(&healthy);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        let r = checks::preemption_located(&healthy, engine, Some((&b, &a)));
        assert_eq!(r.status, Status::Pass, "{}", r.message);

        let (preempting, b, a) = load("steps-preempting");
        assert_eq!(
            checks::scheduler_stall(&preempting).evidence_f64("queued_steps"),
            Some(1067.0)
        );
        let r = checks::prefill_stalls_decode(&preempting);
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        let r = checks::preemption_located(&preempting, engine, Some((&b, &a)));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence_f64("preempted"), Some(11.0));
        assert_eq!(r.evidence_f64("counter_moved"), Some(11.0));
        assert!(r.message.contains("moved 11: equal"), "{}", r.message);
        let bursts = r.evidence["bursts"].as_array().unwrap();
        assert_eq!(bursts.len(), 2, "{bursts:?}");
        assert_eq!(bursts[0]["preempted"], 3);
        assert_eq!(bursts[1]["preempted"], 2);
        assert_eq!(
            (bursts[0]["from_step"].clone(), bursts[0]["to_step"].clone()),
            (275.into(), 277.into())
        );
        assert_eq!(bursts[1]["to_step"], 529);

        let (long, _, _) = load("steps-long-prefill");
        let r = checks::prefill_stalls_decode(&long);
        assert_eq!(r.status, Status::Warn, "{}", r.message);
    }
}
