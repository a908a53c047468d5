//! One line of a series file: the header or a sample, read (a fast path for the flat
//! sample lines recorders write, the full JSON parser for anything else) and written as
//! Python's `json.dumps` writes it, with the keys both tools share.

use std::io;

use inferlint_core::model::{GpuReading, GpuSampling, PageRequest, SeriesHeader, SeriesSample};
use inferlint_core::story::contract::JsonObject;
use inferlint_core::Engine;
use serde_json::{Map, Value};

/// The `schema` of a series file's header line.
pub const SERIES_SCHEMA: &str = "inferlint.series/1";

/// One line of a series file.
#[derive(Debug, Clone, PartialEq)]
pub enum SeriesLine {
    /// The header: schema, engine, address, interval.
    Header(SeriesHeader),
    /// One reading.
    Sample(SeriesSample),
    /// A recorder's record of a failed scrape (`gap`) or of a server restart (`restart`):
    /// a time, but no reading.
    Marker,
    /// A line that is not a sample: not JSON, not an object, or no usable `t_wall`
    /// (a cut-off last line from a killed recorder lands here).
    Skipped,
}

/// Parses one series line. Sample lines take a fast path (a flat object of numbers);
/// anything else goes through a full JSON parser, so odd but valid lines still read.
pub fn parse_series_line(line: &str) -> SeriesLine {
    parse_series_bytes(line.as_bytes())
}

/// [`parse_series_line`] on raw bytes; text that is not UTF-8 is skipped.
pub fn parse_series_bytes(line: &[u8]) -> SeriesLine {
    if let Some(sample) = fast_sample(line) {
        return SeriesLine::Sample(sample);
    }
    let Ok(line) = std::str::from_utf8(line) else {
        return SeriesLine::Skipped;
    };
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(line.trim()) else {
        return SeriesLine::Skipped;
    };
    if object.contains_key("schema") {
        return SeriesLine::Header(header_from(&object));
    }
    // A recorder's gap and restart records carry times but no reading: never a sample.
    if object.contains_key("gap") || object.contains_key("restart") {
        return SeriesLine::Marker;
    }
    let Some(t_wall) = object.get("t_wall").and_then(Value::as_f64) else {
        return SeriesLine::Skipped;
    };
    let number = |key: &str| object.get(key).and_then(Value::as_f64);
    SeriesLine::Sample(SeriesSample {
        t_wall,
        t_mono_ns: object
            .get("t_mono_ns")
            .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64))),
        running: number("running"),
        waiting: number("waiting"),
        waiting_capacity: number(WAITING_CAPACITY),
        waiting_deferred: number(WAITING_DEFERRED),
        kv_usage: number("kv_usage"),
        preemptions: number("preemptions"),
        generation_tokens: number("generation_tokens"),
        prompt_tokens: number("prompt_tokens"),
        paused: number("paused"),
        prefix_hits: number(PREFIX_HITS),
        prefix_queries: number(PREFIX_QUERIES),
        gpu: GpuReading {
            other_mib: number(GPU_OTHER_MIB),
            other_util: number(GPU_OTHER_UTIL),
            util: number(GPU_UTIL),
            throttle: number(GPU_THROTTLE),
            sm_mhz: number(GPU_SM_MHZ),
            sm_max_mhz: number(GPU_SM_MAX_MHZ),
        },
    })
}

// The series keys of the waiting gauge's split by reason, of the prefix cache's counters
// and of the GPU readings. The Python
// inferlint reads a sample by the keys it knows and ignores these.

/// Series key: waiting requests that wait for room ([`SeriesSample::waiting_capacity`]).
pub const WAITING_CAPACITY: &str = "waiting_capacity";
/// Series key: waiting requests held back by something other than room
/// ([`SeriesSample::waiting_deferred`]).
pub const WAITING_DEFERRED: &str = "waiting_deferred";
/// Series key: prompt tokens the prefix cache served ([`SeriesSample::prefix_hits`]).
pub const PREFIX_HITS: &str = "prefix_cache_hits";
/// Series key: prompt tokens looked up in the prefix cache
/// ([`SeriesSample::prefix_queries`]).
pub const PREFIX_QUERIES: &str = "prefix_cache_queries";
/// Series key: MiB other processes held on the server's GPUs ([`GpuReading::other_mib`]).
pub const GPU_OTHER_MIB: &str = "gpu_other_mib";
/// Series key: the highest SM use of another process ([`GpuReading::other_util`]).
pub const GPU_OTHER_UTIL: &str = "gpu_other_util";
/// Series key: the highest utilisation of the server's GPUs ([`GpuReading::util`]).
pub const GPU_UTIL: &str = "gpu_util";
/// Series key: NVML's clock-event reasons, as its bit mask ([`GpuReading::throttle`]).
pub const GPU_THROTTLE: &str = "gpu_throttle";
/// Series key: the lowest SM clock, MHz ([`GpuReading::sm_mhz`]).
pub const GPU_SM_MHZ: &str = "gpu_sm_mhz";
/// Series key: that GPU's maximum SM clock, MHz ([`GpuReading::sm_max_mhz`]).
pub const GPU_SM_MAX_MHZ: &str = "gpu_sm_max_mhz";

fn header_from(object: &Map<String, Value>) -> SeriesHeader {
    let engine_key = object.get("engine").and_then(Value::as_str);
    SeriesHeader {
        url: object.get("url").and_then(Value::as_str).map(str::to_owned),
        interval_s: object.get("interval_s").and_then(Value::as_f64),
        engine: engine_key.and_then(Engine::parse),
        unknown_engine: engine_key
            .filter(|k| Engine::parse(k).is_none())
            .map(str::to_owned),
        gpu: object
            .get("gpu")
            .and_then(Value::as_str)
            .and_then(GpuSampling::parse),
        pages: object.get("pages").and_then(page_request_from),
    }
}

/// `{"path": "/metrics/", "filtered_to": 112}` or `{"path": "/metrics", "whole_because":
/// "..."}`; `None` for a value no recorder writes.
fn page_request_from(value: &Value) -> Option<PageRequest> {
    let object = value.as_object()?;
    Some(PageRequest {
        path: object.get("path")?.as_str()?.to_owned(),
        filtered_to: object.get("filtered_to").and_then(Value::as_u64),
        whole_because: object
            .get("whole_because")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The fast path: `{"key": number-or-null, ...}` with plain keys, read straight from the
/// bytes. Returns `None` for anything it does not fully understand, and the caller falls
/// back to serde_json, so the fast path can only be faster, never different.
fn fast_sample(bytes: &[u8]) -> Option<SeriesSample> {
    let skip_ws = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    let mut i = skip_ws(0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut sample = SeriesSample::default();
    let mut have_wall = false;
    loop {
        i = skip_ws(i);
        match bytes.get(i)? {
            b'}' => {
                i += 1;
                break;
            }
            b'"' => {}
            _ => return None,
        }
        let key_start = i + 1;
        let key_end = key_start + memchr::memchr(b'"', bytes.get(key_start..)?)?;
        let key = &bytes[key_start..key_end];
        // A key with an escaped quote would end early here: leave it to the full parser.
        if key.last() == Some(&b'\\') {
            return None;
        }
        i = skip_ws(key_end + 1);
        if bytes.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(i + 1);
        let (value, end) = scan_value(bytes, i)?;
        i = end;
        let number = match value {
            Scanned::Null => None,
            Scanned::Number(f, _) => Some(f),
        };
        match key {
            b"t_wall" => {
                sample.t_wall = number?;
                have_wall = true;
            }
            b"t_mono_ns" => {
                sample.t_mono_ns = match value {
                    Scanned::Null => None,
                    Scanned::Number(f, integer) => Some(integer.unwrap_or(f as i64)),
                }
            }
            b"running" => sample.running = number,
            b"waiting" => sample.waiting = number,
            b"waiting_capacity" => sample.waiting_capacity = number,
            b"waiting_deferred" => sample.waiting_deferred = number,
            b"kv_usage" => sample.kv_usage = number,
            b"preemptions" => sample.preemptions = number,
            b"generation_tokens" => sample.generation_tokens = number,
            b"prompt_tokens" => sample.prompt_tokens = number,
            b"paused" => sample.paused = number,
            b"prefix_cache_hits" => sample.prefix_hits = number,
            b"prefix_cache_queries" => sample.prefix_queries = number,
            b"gpu_other_mib" => sample.gpu.other_mib = number,
            b"gpu_other_util" => sample.gpu.other_util = number,
            b"gpu_util" => sample.gpu.util = number,
            b"gpu_throttle" => sample.gpu.throttle = number,
            b"gpu_sm_mhz" => sample.gpu.sm_mhz = number,
            b"gpu_sm_max_mhz" => sample.gpu.sm_max_mhz = number,
            // A header or a gap or restart record whatever its value: the full parser
            // sorts those out (a `"gap": null` is a marker, never a sample).
            b"schema" | b"gap" | b"restart" => return None,
            _ => {}
        }
        i = skip_ws(i);
        match bytes.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    (skip_ws(i) == bytes.len() && have_wall).then_some(sample)
}

/// A value the fast path read: `null`, or a number (with its integer value when it was
/// written as an integer).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scanned {
    Null,
    Number(f64, Option<i64>),
}

/// Reads a `null` or a number starting at `start` and returns it with the index just past
/// it. A plain decimal whose digits, read as one integer, stay below 2^53 (the shape
/// recorders write: `0.0`, `22.0`, `1790470252.238873`) is converted exactly by one
/// division by a power of ten, which is correctly rounded because both operands are
/// exact; any other number goes to the standard library's parser. `None` for anything
/// else (a string, `true`), which sends the line to the full JSON parser.
fn scan_value(bytes: &[u8], start: usize) -> Option<(Scanned, usize)> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    if bytes[start..].starts_with(b"null") {
        return Some((Scanned::Null, start + 4));
    }
    let is_delimiter =
        |b: Option<&u8>| matches!(b, None | Some(b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'));
    let negative = bytes.get(start) == Some(&b'-');
    let mut i = start + usize::from(negative);
    let integer_start = i;
    let mut mantissa: u64 = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() && i - integer_start < 19 {
        mantissa = mantissa * 10 + u64::from(bytes[i] - b'0');
        i += 1;
    }
    let integer_digits = i - integer_start;
    if integer_digits == 0 {
        return None;
    }
    let mut fraction_digits = 0;
    let mut plain = true;
    let is_integer = bytes.get(i) != Some(&b'.');
    if !is_integer {
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() && integer_digits + fraction_digits < 19
        {
            mantissa = mantissa * 10 + u64::from(bytes[i] - b'0');
            i += 1;
            fraction_digits += 1;
        }
        plain = fraction_digits > 0;
    }
    if plain && is_delimiter(bytes.get(i)) && mantissa < (1 << 53) && fraction_digits < POW10.len()
    {
        let value = mantissa as f64 / POW10[fraction_digits];
        let signed = |m: u64| if negative { -(m as i64) } else { m as i64 };
        return Some((
            Scanned::Number(
                if negative { -value } else { value },
                is_integer.then(|| signed(mantissa)),
            ),
            i,
        ));
    }
    let mut end = i;
    while !is_delimiter(bytes.get(end)) {
        end += 1;
    }
    let raw = &bytes[start..end];
    let value: f64 = std::str::from_utf8(raw).ok()?.parse().ok()?;
    Some((Scanned::Number(value, parse_json_integer(raw)), end))
}

/// A whole JSON number (what [`scan_value`] reads, when it is all of `raw`).
#[cfg(test)]
fn parse_json_number(raw: &[u8]) -> Option<f64> {
    match scan_value(raw, 0)? {
        (Scanned::Number(f, _), end) if end == raw.len() => Some(f),
        _ => None,
    }
}

/// A JSON integer of at most 18 digits, read straight from the bytes.
fn parse_json_integer(raw: &[u8]) -> Option<i64> {
    let (negative, digits) = match raw.first()? {
        b'-' => (true, &raw[1..]),
        _ => (false, raw),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -n } else { n })
}

/// The header line of a series file.
pub fn series_header_json(header: &SeriesHeader) -> String {
    let mut object = JsonObject::new();
    object.insert("schema".into(), SERIES_SCHEMA.into());
    object.insert("url".into(), header.url.clone().into());
    object.insert("interval_s".into(), header.interval_s.into());
    if let Some(engine) = header.engine {
        object.insert("engine".into(), engine.key().into());
    }
    if let Some(gpu) = header.gpu {
        object.insert("gpu".into(), gpu.key().into());
    }
    if let Some(pages) = &header.pages {
        let mut request = JsonObject::new();
        request.insert("path".into(), pages.path.clone().into());
        if let Some(n) = pages.filtered_to {
            request.insert("filtered_to".into(), n.into());
        }
        if let Some(why) = &pages.whole_because {
            request.insert("whole_because".into(), why.clone().into());
        }
        object.insert("pages".into(), request.to_value());
    }
    python_style_json(&object)
}

/// One sample line of a series file: only the keys the engine has, `null` for a value
/// the scrape lacked.
pub fn series_sample_json(engine: Engine, sample: &SeriesSample) -> String {
    let mut out = Vec::with_capacity(256);
    write_series_sample_json(&mut out, engine, sample);
    String::from_utf8(out).unwrap_or_default()
}

/// [`series_sample_json`] appended to `out`, without a line end: a writer of many lines
/// fills one buffer. Written as Python's `json.dumps` writes the object (`": "` and
/// `", "`), each number as serde_json writes it and a value that is not finite as
/// `null`, so a reading that cannot be a number reads back as no reading.
pub fn write_series_sample_json(out: &mut Vec<u8>, engine: Engine, sample: &SeriesSample) {
    fn number(out: &mut Vec<u8>, key: &str, v: Option<f64>) {
        out.extend_from_slice(b", \"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\": ");
        match v {
            Some(v) => float(out, v),
            None => out.extend_from_slice(b"null"),
        }
    }
    out.extend_from_slice(b"{\"t_wall\": ");
    float(out, (sample.t_wall * 1e6).round() / 1e6);
    out.extend_from_slice(b", \"t_mono_ns\": ");
    match sample.t_mono_ns {
        Some(ns) => integer(out, ns),
        None => out.extend_from_slice(b"null"),
    }
    let d = engine.descriptor();
    number(out, "running", sample.running);
    number(out, "waiting", sample.waiting);
    // Written where the scrape had the split, so that recordings of servers that export
    // none (older vLLM) read as they always did.
    if d.waiting_reasons.is_some()
        && (sample.waiting_capacity.is_some() || sample.waiting_deferred.is_some())
    {
        number(out, WAITING_CAPACITY, sample.waiting_capacity);
        number(out, WAITING_DEFERRED, sample.waiting_deferred);
    }
    number(out, "kv_usage", sample.kv_usage);
    if d.preemption_counter.is_some() {
        number(out, "preemptions", sample.preemptions);
    }
    number(out, "generation_tokens", sample.generation_tokens);
    number(out, "prompt_tokens", sample.prompt_tokens);
    if d.paused_gauge.is_some() {
        number(out, "paused", sample.paused);
    }
    // Written where the scrape had them, so that recordings of servers (or simulations)
    // that serve no prefix-cache counters read as they always did.
    if d.prefix_cache.is_some() && (sample.prefix_hits.is_some() || sample.prefix_queries.is_some())
    {
        number(out, PREFIX_HITS, sample.prefix_hits);
        number(out, PREFIX_QUERIES, sample.prefix_queries);
    }
    // A recorder that read the GPUs writes what it could; a reading that failed writes
    // nothing, which reads back as no reading.
    let g = &sample.gpu;
    if !g.is_empty() {
        number(out, GPU_OTHER_MIB, g.other_mib);
        number(out, GPU_OTHER_UTIL, g.other_util);
        number(out, GPU_UTIL, g.util);
        number(out, GPU_THROTTLE, g.throttle);
        number(out, GPU_SM_MHZ, g.sm_mhz);
        number(out, GPU_SM_MAX_MHZ, g.sm_max_mhz);
    }
    out.push(b'}');
}

/// A number as serde_json writes an `f64`, `null` when it is not finite. A whole number
/// below 10^15 (a count, a time in whole seconds) is written as serde_json writes it, its
/// digits and `.0`, without its general float formatting; -0.0 keeps its sign there, so
/// it takes the general way.
fn float(out: &mut Vec<u8>, v: f64) {
    if v.fract() == 0.0 && v.abs() < 1e15 && !(v == 0.0 && v.is_sign_negative()) {
        integer(out, v as i64);
        out.extend_from_slice(b".0");
    } else {
        // Writing to memory cannot fail; serde_json writes a number that is not finite
        // as null.
        let _ = serde_json::to_writer(&mut *out, &v);
    }
}

/// An integer's decimal digits.
fn integer(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
}

/// JSON on one line with `": "` and `", "` separators, as Python's `json.dumps` writes.
pub(super) fn python_style_json(value: &impl serde::Serialize) -> String {
    struct Spaced;
    impl serde_json::ser::Formatter for Spaced {
        fn begin_object_key<W: ?Sized + io::Write>(
            &mut self,
            w: &mut W,
            first: bool,
        ) -> io::Result<()> {
            if first {
                Ok(())
            } else {
                w.write_all(b", ")
            }
        }
        fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
            w.write_all(b": ")
        }
    }
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Spaced);
    value
        .serialize(&mut ser)
        .expect("serialising to memory cannot fail");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod marker_tests {
    use super::{parse_series_line, SeriesLine};

    /// Guards against reading a recorder's gap or restart record as a sample whose
    /// every value is missing.
    #[test]
    fn gap_and_restart_records_are_not_samples() {
        for line in [
            r#"{"gap": "connection refused", "t_wall": 1790470252.25, "t_mono_ns": 5}"#,
            r#"{"restart": "vllm:num_preemptions_total went down", "t_wall": 1.0, "t_mono_ns": 9}"#,
        ] {
            assert_eq!(parse_series_line(line), SeriesLine::Marker, "{line}");
        }
        assert!(matches!(
            parse_series_line(r#"{"t_wall": 1.0, "t_mono_ns": 9, "running": 2.0}"#),
            SeriesLine::Sample(_)
        ));
    }
}

#[cfg(test)]
mod number_tests {
    use super::{parse_json_integer, parse_json_number};
    use inferlint_core::model::{GpuReading, SeriesSample};
    use inferlint_core::Engine;
    use proptest::prelude::*;
    use serde_json::Value;

    proptest! {
        #[test]
        fn fast_numbers_equal_the_standard_parser(text in "-?[0-9]{1,20}(\\.[0-9]{1,20})?") {
            prop_assert_eq!(parse_json_number(text.as_bytes()), text.parse::<f64>().ok());
        }

        #[test]
        fn any_float_printed_reads_back(v in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
            let text = format!("{v:?}");
            prop_assert_eq!(parse_json_number(text.as_bytes()), Some(v));
        }

        /// A sample line written straight into a buffer is the one the object of its keys
        /// gives, serialised Python's way (what this writer built before it wrote into a
        /// buffer): every engine, readings missing, NaN or infinite (null), GPU and
        /// prefix keys or none.
        #[test]
        fn a_sample_line_is_its_object_serialised(
            engine in prop::sample::select(Engine::ALL.to_vec()),
            t_wall in prop_oneof![0.0f64..1e11, (0.0f64..1e11).prop_map(f64::trunc)],
            t_mono_ns in prop::option::of(any::<i64>()),
            values in prop::collection::vec(prop::option::of(prop_oneof![
                any::<f64>(),
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(-0.0),
                0.0f64..1e6,
                (-1e16f64..1e16).prop_map(f64::trunc),
                prop::sample::select(vec![1e15 - 1.0, 1e15, -1e15 + 1.0, 9_007_199_254_740_991.0]),
            ]), 17),
        ) {
            let v = |i: usize| values[i];
            let sample = SeriesSample {
                t_wall,
                t_mono_ns,
                running: v(0),
                waiting: v(1),
                waiting_capacity: v(15),
                waiting_deferred: v(16),
                kv_usage: v(2),
                preemptions: v(3),
                generation_tokens: v(4),
                prompt_tokens: v(5),
                paused: v(6),
                prefix_hits: v(7),
                prefix_queries: v(8),
                gpu: GpuReading {
                    other_mib: v(9),
                    other_util: v(10),
                    util: v(11),
                    throttle: v(12),
                    sm_mhz: v(13),
                    sm_max_mhz: v(14),
                },
            };
            prop_assert_eq!(super::series_sample_json(engine, &sample), as_object(engine, &sample));
        }

        #[test]
        fn integers(n in any::<i64>()) {
            let text = n.to_string();
            let expected = (text.trim_start_matches('-').len() <= 18).then_some(n);
            prop_assert_eq!(parse_json_integer(text.as_bytes()), expected);
        }
    }

    /// A sample as an object of its keys, in order, serialised as Python writes it.
    fn as_object(engine: Engine, sample: &SeriesSample) -> String {
        use inferlint_core::story::contract::JsonObject;
        let mut object = JsonObject::new();
        object.insert(
            "t_wall".into(),
            Value::from((sample.t_wall * 1e6).round() / 1e6),
        );
        object.insert("t_mono_ns".into(), sample.t_mono_ns.into());
        let d = engine.descriptor();
        let mut put = |key: &str, v: Option<f64>| {
            object.insert(key.into(), v.into());
        };
        put("running", sample.running);
        put("waiting", sample.waiting);
        if d.waiting_reasons.is_some()
            && (sample.waiting_capacity.is_some() || sample.waiting_deferred.is_some())
        {
            put(super::WAITING_CAPACITY, sample.waiting_capacity);
            put(super::WAITING_DEFERRED, sample.waiting_deferred);
        }
        put("kv_usage", sample.kv_usage);
        if d.preemption_counter.is_some() {
            put("preemptions", sample.preemptions);
        }
        put("generation_tokens", sample.generation_tokens);
        put("prompt_tokens", sample.prompt_tokens);
        if d.paused_gauge.is_some() {
            put("paused", sample.paused);
        }
        if d.prefix_cache.is_some()
            && (sample.prefix_hits.is_some() || sample.prefix_queries.is_some())
        {
            put(super::PREFIX_HITS, sample.prefix_hits);
            put(super::PREFIX_QUERIES, sample.prefix_queries);
        }
        let g = &sample.gpu;
        if !g.is_empty() {
            put(super::GPU_OTHER_MIB, g.other_mib);
            put(super::GPU_OTHER_UTIL, g.other_util);
            put(super::GPU_UTIL, g.util);
            put(super::GPU_THROTTLE, g.throttle);
            put(super::GPU_SM_MHZ, g.sm_mhz);
            put(super::GPU_SM_MAX_MHZ, g.sm_max_mhz);
        }
        super::python_style_json(&object)
    }

    #[test]
    fn odd_numbers() {
        assert_eq!(parse_json_number(b"1e5"), Some(1e5));
        assert_eq!(parse_json_number(b"-0.25"), Some(-0.25));
        assert_eq!(
            parse_json_number(b"1."),
            "1.".parse().ok(),
            "as lenient as the standard parser"
        );
        assert_eq!(parse_json_number(b".5"), None);
        assert_eq!(parse_json_number(b"NaN"), None);
        assert_eq!(parse_json_number(b"-"), None);
        assert_eq!(parse_json_integer(b"12.5"), None);
    }

    /// The recorder's extra keys read back as written, and a line without them reads as
    /// before: no reading, never zeros.
    #[test]
    fn gpu_prefix_and_waiting_keys_round_trip() {
        use super::{parse_series_line, SeriesLine};
        use inferlint_core::model::{GpuReading, GpuSampling, SeriesHeader, SeriesSample};
        use inferlint_core::Engine;
        let sample = SeriesSample {
            t_wall: 1_790_826_427.5,
            t_mono_ns: Some(181_013_565_957),
            running: Some(8.0),
            waiting: Some(5.0),
            waiting_capacity: Some(3.0),
            waiting_deferred: Some(2.0),
            prefix_hits: Some(80.0),
            prefix_queries: Some(880.0),
            gpu: GpuReading {
                other_mib: Some(10_240.0),
                other_util: Some(35.0),
                util: Some(97.0),
                throttle: Some(4.0),
                sm_mhz: Some(1_500.0),
                sm_max_mhz: Some(1_980.0),
            },
            ..SeriesSample::default()
        };
        let line = super::series_sample_json(Engine::Vllm, &sample);
        assert_eq!(parse_series_line(&line), SeriesLine::Sample(sample));
        let plain = "{\"t_wall\": 1.0, \"running\": 2.0}";
        let SeriesLine::Sample(s) = parse_series_line(plain) else {
            panic!("a sample")
        };
        assert!(s.gpu.is_empty() && s.prefix_hits.is_none());
        assert!(s.waiting_capacity.is_none() && s.waiting_deferred.is_none());
        let header = SeriesHeader {
            gpu: Some(GpuSampling::Nvml),
            ..SeriesHeader::default()
        };
        let SeriesLine::Header(h) = parse_series_line(&super::series_header_json(&header)) else {
            panic!("a header")
        };
        assert_eq!(h.gpu, Some(GpuSampling::Nvml));
        assert_eq!(h.pages, None);
    }

    #[test]
    fn the_header_says_how_each_page_was_asked_for() {
        use super::{parse_series_line, SeriesLine};
        use inferlint_core::model::{PageRequest, SeriesHeader};
        for pages in [
            PageRequest {
                path: "/metrics/".into(),
                filtered_to: Some(112),
                whole_because: None,
            },
            PageRequest {
                path: "/metrics".into(),
                filtered_to: None,
                whole_because: Some("the server ignores name[]".into()),
            },
        ] {
            let header = SeriesHeader {
                pages: Some(pages.clone()),
                ..SeriesHeader::default()
            };
            let line = super::series_header_json(&header);
            let SeriesLine::Header(h) = parse_series_line(&line) else {
                panic!("a header: {line}")
            };
            assert_eq!(h.pages, Some(pages));
        }
        let written = super::series_header_json(&SeriesHeader {
            pages: Some(PageRequest {
                path: "/metrics/".into(),
                filtered_to: Some(112),
                whole_because: None,
            }),
            ..SeriesHeader::default()
        });
        assert!(
            // A nested object's keys are in serde_json's order, alphabetical (JsonObject).
            written.ends_with(r#""pages": {"filtered_to": 112, "path": "/metrics/"}}"#),
            "{written}"
        );
    }
}
