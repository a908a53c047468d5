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

use inferlint_core::model::steps::{StepGap, StepLine, Steps, StepsEnd};
use inferlint_core::model::traces::ClockAnchor;
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
        // A step line exactly as the plugin writes it is read by hand; any other line
        // (and any line the hand reader does not take) by serde_json, which reads it the
        // same (`fast_step_line`).
        if let (Some(folded), Some(raw)) = (steps.as_mut(), line.and_then(fast_step_line)) {
            if fold_line(folded, raw).is_err() {
                folded.skipped += 1;
            }
            return;
        }
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
#[derive(serde::Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
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

/// A step line as the plugin writes it (`json.dumps` with `(",", ":")`): one flat object
/// of the step's keys (`t`, `i`, `r`, `w`, `d`, `kv`, `pr`, `pt`, `dr`, `dt`, `ms`,
/// `gen`, `prompt`, `pre`), each once, each a number, no space anywhere; the counts
/// plain digits that fit a `u64`, the rest JSON numbers that are finite. `None` for any
/// other line (another key, a string, a nested value, `null`, a sign on a count, a
/// space, a key twice, trailing bytes): serde_json reads it. What this takes, serde_json
/// would read to the same values: the test `the_hand_reader_reads_as_serde_json` holds
/// it to that on every form the plugin writes and on hostile ones.
fn fast_step_line(line: &[u8]) -> Option<RawLine> {
    let mut rest = line.strip_prefix(b"{")?.strip_suffix(b"}")?;
    let mut raw = RawLine::default();
    let mut seen = 0u16;
    loop {
        rest = rest.strip_prefix(b"\"")?;
        let close = rest.iter().position(|&c| c == b'"')?;
        let key = &rest[..close];
        rest = rest[close + 1..].strip_prefix(b":")?;
        let end = rest.iter().position(|&c| c == b',').unwrap_or(rest.len());
        let value = &rest[..end];
        let (bit, slot) = match key {
            b"t" => (0, Slot::F(&mut raw.t)),
            b"i" => (1, Slot::U(&mut raw.i)),
            b"r" => (2, Slot::U(&mut raw.r)),
            b"w" => (3, Slot::U(&mut raw.w)),
            b"d" => (4, Slot::U(&mut raw.d)),
            b"kv" => (5, Slot::F(&mut raw.kv)),
            b"pr" => (6, Slot::U(&mut raw.pr)),
            b"pt" => (7, Slot::U(&mut raw.pt)),
            b"dr" => (8, Slot::U(&mut raw.dr)),
            b"dt" => (9, Slot::U(&mut raw.dt)),
            b"ms" => (10, Slot::F(&mut raw.ms)),
            b"gen" => (11, Slot::U(&mut raw.gen)),
            b"prompt" => (12, Slot::U(&mut raw.prompt)),
            b"pre" => (13, Slot::U(&mut raw.pre)),
            _ => return None,
        };
        if seen & (1 << bit) != 0 {
            return None;
        }
        seen |= 1 << bit;
        match slot {
            Slot::U(slot) => *slot = Some(plain_u64(value)?),
            Slot::F(slot) => *slot = Some(json_f64(value)?),
        }
        if end == rest.len() {
            return Some(raw);
        }
        rest = &rest[end + 1..];
    }
}

/// Where a key's value goes.
enum Slot<'a> {
    U(&'a mut Option<u64>),
    F(&'a mut Option<f64>),
}

/// Plain digits, no leading zero (JSON's grammar), that fit a `u64`.
fn plain_u64(digits: &[u8]) -> Option<u64> {
    match digits {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        _ => digits.iter().try_fold(0u64, |n, &c| {
            if c.is_ascii_digit() {
                n.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            } else {
                None
            }
        }),
    }
}

/// A JSON number (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), read correctly
/// rounded (as serde_json's `float_roundtrip` reads it); `None` past the `f64` range.
fn json_f64(number: &[u8]) -> Option<f64> {
    fn digits(b: &[u8]) -> usize {
        b.iter().take_while(|c| c.is_ascii_digit()).count()
    }
    let negative = number.first() == Some(&b'-');
    let mut at = usize::from(negative);
    let int = digits(&number[at..]);
    if int == 0 || (int > 1 && number[at] == b'0') {
        return None;
    }
    let int_digits = &number[at..at + int];
    at += int;
    let mut frac_digits: &[u8] = &[];
    if number.get(at) == Some(&b'.') {
        let frac = digits(&number[at + 1..]);
        if frac == 0 {
            return None;
        }
        frac_digits = &number[at + 1..at + 1 + frac];
        at += 1 + frac;
    }
    let plain = at == number.len();
    if matches!(number.get(at), Some(b'e' | b'E')) {
        at += 1;
        if matches!(number.get(at), Some(b'+' | b'-')) {
            at += 1;
        }
        let exp = digits(&number[at..]);
        if exp == 0 {
            return None;
        }
        at += exp;
    }
    if at != number.len() {
        return None;
    }
    // Up to 15 digits and 22 places without an exponent (the plugin's `t`, `kv`, `ms`):
    // the digits and the power of ten are exact doubles, so their quotient, rounded once,
    // is the correctly rounded value.
    if plain && int + frac_digits.len() <= 15 {
        let m = int_digits
            .iter()
            .chain(frac_digits)
            .fold(0u64, |n, &c| n * 10 + u64::from(c - b'0'));
        let x = m as f64 / POWERS_OF_TEN[frac_digits.len()];
        return Some(if negative { -x } else { x });
    }
    let x: f64 = std::str::from_utf8(number).ok()?.parse().ok()?;
    x.is_finite().then_some(x)
}

/// 10^0 to 10^15: each an exact double.
const POWERS_OF_TEN: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

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

    /// What a line read gives, every value spelled out (`-0.0` apart from `0.0`).
    fn shown_raw(raw: Option<RawLine>) -> String {
        format!("{raw:?}")
    }

    /// serde_json's reading of a line, as the reader falls back to it.
    fn by_serde(line: &[u8]) -> Option<RawLine> {
        std::str::from_utf8(line)
            .ok()
            .and_then(|t| serde_json::from_str::<RawLine>(t).ok())
    }

    /// The hand reader takes `line` (it must, the plugin writes it so) and reads what
    /// serde_json reads.
    fn taken_as_serde(line: &str) {
        let fast = fast_step_line(line.as_bytes());
        assert!(fast.is_some(), "not taken: {line}");
        assert_eq!(
            shown_raw(fast),
            shown_raw(by_serde(line.as_bytes())),
            "{line}"
        );
    }

    /// Where the hand reader takes a line, serde_json reads it to the same values;
    /// where it does not, the line goes to serde_json, so the result is serde_json's
    /// whichever reads it.
    fn same_as_serde(line: &[u8]) {
        if let Some(fast) = fast_step_line(line) {
            let slow = by_serde(line);
            assert!(
                slow.is_some(),
                "serde_json refuses what the hand reader took: {}",
                String::from_utf8_lossy(line)
            );
            assert_eq!(
                shown_raw(Some(fast)),
                shown_raw(slow),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    /// Every step line the plugin writes (integrations/vllm/inferlint_vllm_steps.py:
    /// `json.dumps` with `(",", ":")` of `{"t": ..., **step}`, the keys in the order it
    /// reads them, any of them missing where the engine lacks the attribute, `kv`
    /// rounded to 4 places and `ms` to 3, `t` to 6, Python's float spelling such as
    /// `2.7e-05` and `1e-06`) is taken by the hand reader and read as serde_json reads
    /// it; lines of the other kinds (header, gap, finished request, end, a step with
    /// eviction events `ev`) are left to serde_json.
    #[test]
    fn the_hand_reader_reads_what_the_plugin_writes_as_serde_json() {
        let keys = [
            ("r", "8"),
            ("w", "0"),
            ("d", "3"),
            ("kv", "0.0012"),
            ("i", "4319999"),
            ("pr", "1"),
            ("pt", "32"),
            ("dr", "7"),
            ("dt", "7"),
            ("ms", "3.146"),
            ("gen", "8"),
            ("prompt", "32"),
            ("pre", "0"),
        ];
        // Each subset of the keys, in the plugin's order.
        for mask in 0u32..(1 << keys.len()) {
            let mut line = String::from("{\"t\":86400.5");
            for (k, (key, value)) in keys.iter().enumerate() {
                if mask & (1 << k) != 0 {
                    line.push_str(&format!(",\"{key}\":{value}"));
                }
            }
            line.push('}');
            taken_as_serde(&line);
        }
        for t in [
            "0.0",
            "0.930655",
            "2.7e-05",
            "1e-06",
            "86400.5",
            "12345678.123456",
            "0",
        ] {
            for kv in ["0.0", "1.0", "0.2", "0.0012", "1e-04", "0.9999"] {
                for ms in ["0.0", "2.459", "1234.5", "0.001", "1e-03"] {
                    taken_as_serde(&format!(
                        "{{\"t\":{t},\"r\":1,\"w\":0,\"d\":0,\"kv\":{kv},\"i\":0,\"pr\":1,\"pt\":6,\"dr\":0,\"dt\":0,\"ms\":{ms},\"gen\":1,\"prompt\":6,\"pre\":0}}"
                    ));
                }
            }
        }
        for other in [
            HEADER,
            r#"{"t":0.6,"gap":7,"reason":"queue full"}"#,
            r#"{"t":0.6,"gap":2,"reason":"queue full, record failed"}"#,
            r#"{"t":0.840629,"fin":"cmpl-1","reason":"length","in":6,"out":16,"cached":0,"pre":0,"queued":2.7e-05,"prefill":0.009774,"decode":0.054014,"infer":0.063788}"#,
            r#"{"t":0.8,"end":true,"steps":1,"dropped":7,"calls":8,"record_ns":100}"#,
            r#"{"t":0.5,"r":2,"w":0,"d":0,"kv":0.1,"ev":3}"#,
        ] {
            assert!(fast_step_line(other.as_bytes()).is_none(), "{other}");
        }
    }

    /// Hostile lines: a key twice, numbers of every JSON spelling and some that are not
    /// JSON, values of other types, spaces, escapes, trailing bytes, cut lines, bytes
    /// that are not UTF-8; and a generated mix of them. Whatever the hand reader takes,
    /// serde_json reads to the same values; a line serde_json refuses is never taken.
    #[test]
    fn the_hand_reader_reads_as_serde_json() {
        let numbers = [
            "0.1",
            "0.7",
            "-3.146",
            "123456789012345",
            "1234567890123456",
            "0.00000000000001",
            "0.000000000000001",
            "0.0000000000000001",
            "99999.9999999999",
            "12345678.123456",
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "-1",
            "01",
            "1.",
            ".5",
            "1e3",
            "1E3",
            "1e+3",
            "1e-3",
            "1e",
            "1e+",
            "-",
            "+1",
            "1.5e-7",
            "1e308",
            "1e309",
            "-1e309",
            "1e-400",
            "4e-324",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999999",
            "0.30000000000000004",
            "9007199254740993",
            "2.2250738585072011e-308",
            "NaN",
            "\"NaN\"",
            "Infinity",
            "null",
            "true",
            "\"1\"",
            "[1]",
            "{}",
            "1 ",
            " 1",
            "0x10",
            "1_000",
            "١",
        ];
        let keys = [
            "t", "i", "r", "kv", "ms", "pre", "ev", "schema", "T", "t\\u0000", "pr\"e",
        ];
        for key in keys {
            for n in numbers {
                for line in [
                    format!("{{\"{key}\":{n}}}"),
                    format!("{{\"t\":1.5,\"{key}\":{n}}}"),
                    format!("{{\"{key}\":{n},\"r\":2}}"),
                ] {
                    same_as_serde(line.as_bytes());
                }
            }
        }
        let base = r#"{"t":0.52,"r":8,"w":0,"d":0,"kv":0.0012,"i":1,"pr":0,"pt":0,"dr":8,"dt":8,"ms":3.37,"gen":8,"prompt":0,"pre":0}"#;
        for line in [
            r#"{"t":1,"t":2}"#.to_owned(),
            r#"{"t":1,"r":1,"r":2}"#.to_owned(),
            r#"{"t":1,"r":1,}"#.to_owned(),
            r#"{,"t":1}"#.to_owned(),
            r#"{"t":1,,"r":1}"#.to_owned(),
            r#"{"t":1 ,"r":1}"#.to_owned(),
            r#"{ "t":1}"#.to_owned(),
            r#"{"t" :1}"#.to_owned(),
            r#"{"t":1}}"#.to_owned(),
            r#"{"t":1}x"#.to_owned(),
            r#"{"t":1} "#.to_owned(),
            r#"{"t":1,"r":{"a":1}}"#.to_owned(),
            r#"{"t":1,"r":[1,2]}"#.to_owned(),
            r#"{"t":1,"\u0072":1}"#.to_owned(),
            r#"{"t":"1"}"#.to_owned(),
            r#"{}"#.to_owned(),
            "{".to_owned(),
            "}".to_owned(),
            String::new(),
            format!("{base}{base}"),
            format!("[{base}]"),
        ] {
            same_as_serde(line.as_bytes());
        }
        // The plugin's line cut at every byte, and with each byte changed to each of a
        // few hostile ones (a digit, a sign, a dot, an exponent, a quote, a comma, a
        // colon, a space, a brace, a byte that is not UTF-8).
        let bytes = base.as_bytes();
        for cut in 0..=bytes.len() {
            same_as_serde(&bytes[..cut]);
        }
        for at in 0..bytes.len() {
            for b in [
                b'0', b'9', b'-', b'+', b'.', b'e', b'E', b'"', b',', b':', b' ', b'}', b'{', 0xff,
                0xc3,
            ] {
                let mut line = bytes.to_vec();
                line[at] = b;
                same_as_serde(&line);
                line.insert(at, b);
                same_as_serde(&line);
            }
        }
        // A generated mix: lines built from pieces of keys, separators and numbers, by a
        // fixed linear congruential sequence (the same lines on every run).
        let pieces: Vec<String> = ["{", "}", ",", ":", "\"", " ", "\\", "\u{e9}"]
            .iter()
            .map(|s| s.to_string())
            .chain(keys.iter().map(|k| format!("\"{k}\":")))
            .chain(numbers.iter().map(|n| n.to_string()))
            .collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let mut taken = 0;
        for _ in 0..200_000 {
            let mut line = String::from("{");
            let fields = next(6);
            for f in 0..fields {
                if f > 0 {
                    line.push(',');
                }
                let key = keys[next(keys.len())];
                line.push_str(&format!("\"{key}\":{}", numbers[next(numbers.len())]));
                if next(8) == 0 {
                    line.push_str(&pieces[next(pieces.len())]);
                }
            }
            if next(10) != 0 {
                line.push('}');
            }
            taken += usize::from(fast_step_line(line.as_bytes()).is_some());
            same_as_serde(line.as_bytes());
        }
        // Decimals as the plugin rounds them, and longer: the digits divided by a power of
        // ten is serde_json's value.
        for _ in 0..200_000 {
            let digits = 1 + next(17);
            let mut number: String = (0..digits)
                .map(|_| char::from(b'0' + next(10) as u8))
                .collect();
            let places = next(digits + 1);
            if places > 0 {
                number.insert(digits - places, '.');
            }
            let number = number.trim_start_matches('0');
            let number = if number.starts_with('.') || number.is_empty() {
                format!("0{number}")
            } else {
                number.to_owned()
            };
            let number = number.trim_end_matches('.');
            same_as_serde(format!("{{\"t\":{number},\"ms\":-{number}}}").as_bytes());
        }
        // The mix holds lines the hand reader takes, so the comparison was made on them.
        assert!(taken > 1000, "{taken}");
    }

    /// A file read through the hand reader folds to what serde_json's reading of every
    /// line folds to: the plugin's lines, hostile ones between them, a cut last line.
    #[test]
    fn a_file_folds_the_same_either_way() {
        let mut text = format!("{HEADER}\n");
        for k in 0..5000u64 {
            let t = 0.5 + k as f64 / 50.0;
            let line = match k % 7 {
                0 => format!("{{\"t\":{t:.6},\"r\":8,\"w\":1,\"d\":0,\"kv\":0.0012,\"i\":{k},\"pr\":1,\"pt\":32,\"dr\":7,\"dt\":7,\"ms\":3.146,\"gen\":8,\"prompt\":32,\"pre\":{}}}", k % 3),
                1 => format!("{{\"t\":{t:.6},\"r\":8,\"w\":0,\"d\":0,\"kv\":0.0012,\"i\":{k},\"pr\":0,\"pt\":0,\"dr\":8,\"dt\":8,\"ms\":3.37,\"gen\":8,\"prompt\":0,\"pre\":0}}"),
                2 => format!("{{\"t\":{t:.6},\"r\":8,\"r\":9}}"),
                3 => format!("{{\"t\":{t:.6}, \"r\":8,\"w\":4,\"gen\":0}}"),
                4 => format!("{{\"t\":{t:.6},\"gap\":3,\"reason\":\"queue full\"}}"),
                5 => format!("{{\"t\":{t:.6},\"r\":-0,\"w\":2,\"kv\":-0.0,\"ms\":1e-3}}"),
                _ => format!("{{\"t\":{t:.6},\"r\":8,\"w\":0,\"ms\":1e400}}"),
            };
            text.push_str(&line);
            text.push('\n');
        }
        text.push_str("{\"t\":200.0,\"r\":1,\"w\":0,\"d\":0,\"kv\":0.5,\"ms\":");
        let fast = read(&text).unwrap();
        // The same file, each line read by serde_json alone.
        let mut lines = text.lines();
        let path = Path::new("steps.jsonl");
        let mut slow = {
            let o: Map<String, Value> = serde_json::from_str(lines.next().unwrap()).unwrap();
            header(path, &o).unwrap()
        };
        for line in lines {
            match serde_json::from_str::<RawLine>(line) {
                Ok(raw) => {
                    if fold_line(&mut slow, raw).is_err() {
                        slow.skipped += 1;
                    }
                }
                Err(_) => slow.skipped += 1,
            }
        }
        slow.finish();
        assert_eq!(format!("{fast:?}"), format!("{slow:?}"));
        assert!(
            fast.steps > 2000 && fast.skipped > 1000,
            "{} {}",
            fast.steps,
            fast.skipped
        );
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
        use inferlint_core::judging::checks::steps as checks;
        use inferlint_core::judging::status::Status;
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
