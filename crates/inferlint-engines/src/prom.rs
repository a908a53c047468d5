//! Our own reader and writer of the Prometheus text exposition format.
//!
//! Generic parsers (the `prometheus-parse` crate among them) drop metric names with `:`,
//! and every vLLM and SGLang metric has one (`vllm:num_requests_running`), so we read the
//! format ourselves. The rules are those of the established Python tool: lines are trimmed;
//! blank lines and `#` lines (HELP, TYPE, comments) are skipped and OpenMetrics `# EOF` ends
//! the text; a sample is a name, optional `{labels}`, a value and an optional integer
//! timestamp in milliseconds; an OpenMetrics exemplar (` # {trace_id="x"} 1.0`) after them
//! is ignored. [`parse`] makes a malformed sample line an error naming its 1-based line;
//! [`read`], which recorders use, skips and counts it (never a panic either way). Both
//! refuse more than [`MAX_SAMPLES`] samples, so a hostile server cannot make a scrape
//! take more memory than a few times its body.
//!
//! The parser scans bytes rather than running a regex: a vLLM scrape is about 50 KB and 430
//! samples, and a `watch` loop reads one every half second. It allocates only the strings
//! it keeps (names, label names and label values).

use std::fmt::Write as _;

use inferlint_core::{MetricSet, Sample};

/// The largest body a scrape reads and the largest exposition parsed: a vLLM scrape is
/// about 50 KB.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// The most samples one exposition may hold: a vLLM scrape has about 430, one of eight
/// data-parallel engines a few thousand. A sample costs about half a kilobyte once read,
/// so a page at both bounds takes a few hundred megabytes at most.
pub const MAX_SAMPLES: usize = 100_000;
/// The most labels one sample may carry.
pub const MAX_LABELS: usize = 64;
/// The longest label value kept.
pub const MAX_LABEL_VALUE_BYTES: usize = 16 << 10;
/// How many skipped lines are kept with their reason (all are counted).
const KEPT_PROBLEMS: usize = 10;

/// A sample line that does not follow the exposition format.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// The 1-based line number in the text given to the parser.
    pub line: usize,
    /// A lowercase fragment naming what is wrong, such as `bad value 'abc' for vllm:foo`.
    pub message: String,
}

/// An exposition read line by line: the samples, and the lines that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    /// The samples read, in order.
    pub samples: Vec<Sample>,
    /// Sample lines read whole (the samples less the stand-ins of skipped lines).
    pub read: usize,
    /// Sample lines skipped, in all.
    pub skipped: usize,
    /// The first few skipped lines, with why.
    pub problems: Vec<ParseError>,
}

impl Exposition {
    /// `2 lines skipped (line 17: not UTF-8 text; ...)`, or `None` when none was.
    pub fn skipped_note(&self) -> Option<String> {
        if self.skipped == 0 {
            return None;
        }
        let reasons: Vec<String> = self
            .problems
            .iter()
            .take(3)
            .map(|p| p.to_string())
            .collect();
        let more = if self.skipped > reasons.len() {
            "; ..."
        } else {
            ""
        };
        Some(format!(
            "{} line{} skipped ({}{more})",
            self.skipped,
            if self.skipped == 1 { "" } else { "s" },
            reasons.join("; ")
        ))
    }
}

/// Parses a whole exposition into the [`MetricSet`] of one scrape, indexed by name, with
/// its engine's renamed metrics answering under their current names
/// ([`inferlint_core::engine::scrape_metrics`]); the first line that cannot be read is an
/// error.
pub fn parse(text: &str) -> Result<MetricSet, ParseError> {
    parse_samples(text).map(inferlint_core::engine::scrape_metrics)
}

/// Parses a whole exposition into its samples, in the order of the text; the first line
/// that cannot be read is an error.
pub fn parse_samples(text: &str) -> Result<Vec<Sample>, ParseError> {
    let exposition = read(text.as_bytes())?;
    match exposition.problems.into_iter().next() {
        Some(problem) => Err(problem),
        None => Ok(exposition.samples),
    }
}

/// Reads an exposition as a recorder must: a sample line that cannot be read (bad syntax,
/// bytes that are not UTF-8, a label too long) is skipped and counted, never fatal, so
/// one damaged line does not lose a whole scrape. When its metric name can still be read,
/// the metric gets a sample with no labels and a NaN value in its place: a sum over the
/// metric's series is then NaN, and no check can pass on a total that lost a part. An
/// exposition with more than [`MAX_SAMPLES`] samples is an error (on the line past the
/// cap), so memory stays within a bound whatever a server sends.
pub fn read(bytes: &[u8]) -> Result<Exposition, ParseError> {
    read_lines(bytes, None)
}

/// The sample names a narrow read keeps ([`read_kept`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeptNames(Vec<String>);

impl KeptNames {
    /// The names given, in any order.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> KeptNames {
        let mut names: Vec<String> = names.into_iter().map(Into::into).collect();
        names.sort();
        names.dedup();
        KeptNames(names)
    }

    /// Whether `name` is one of them.
    pub fn contains(&self, name: &str) -> bool {
        self.0
            .binary_search_by(|kept| kept.as_str().cmp(name))
            .is_ok()
    }

    /// The names, sorted.
    pub fn names(&self) -> &[String] {
        &self.0
    }
}

/// [`read`], keeping only the samples named in `keep`: a line whose metric name is whole
/// and not kept is passed over without being read further (its labels and value are not
/// looked at, and it counts toward no bound), so a recorder that needs twenty families
/// of a page does not pay for the histogram buckets that are most of it. Every other
/// line is read as [`read`] reads it: a damaged line whose name cannot be told is still
/// skipped and counted, and a damaged line of a kept metric still leaves its NaN.
pub fn read_kept(bytes: &[u8], keep: &KeptNames) -> Result<Exposition, ParseError> {
    read_lines(bytes, Some(keep))
}

/// Reads a page again into the set an earlier page of the same server was read into,
/// changing only its values and timestamps: `set`'s first `page_samples` samples must be
/// what [`read_kept`] read from that page (the rest, what the caller added, are left as
/// they are). A recorder's server serves the same series at every scrape, so this reads
/// a sample without allocating, where [`read_kept`] makes every name and label again.
///
/// It succeeds only when [`read_kept`] would read this page, line for line, into the
/// same series in the same order: every kept sample line reads cleanly and names, with
/// the same labels (in any order, unescaped), the series at its place in `set`, and
/// there are exactly `page_samples` of them. Anything else (a series added, gone or
/// moved, a label changed, a line [`read_kept`] would skip as damaged) returns `false`
/// with `set` as it was, and the caller reads the page with [`read_kept`].
pub fn reread_kept(
    bytes: &[u8],
    keep: &KeptNames,
    set: &mut MetricSet,
    page_samples: usize,
) -> bool {
    let samples = set.samples();
    if page_samples > samples.len() {
        return false;
    }
    let expected = &samples[..page_samples];
    let mut readings: Vec<(f64, Option<i64>)> = Vec::with_capacity(page_samples);
    let mut matched: Vec<bool> = Vec::new();
    for raw_line in bytes.split(|b| *b == b'\n') {
        if passed_over(raw_line, keep) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(raw_line) else {
            return false;
        };
        let line = text.trim();
        if line.is_empty() {
            continue;
        }
        if line.as_bytes()[0] == b'#' {
            if is_eof(line.as_bytes()) {
                break;
            }
            continue;
        }
        let Some(sample) = expected.get(readings.len()) else {
            return false;
        };
        match reread_sample_line(line, sample, &mut matched) {
            Some(reading) => readings.push(reading),
            None => return false,
        }
    }
    if readings.len() != page_samples {
        return false;
    }
    for ((value, timestamp), (new_value, new_timestamp)) in set.readings_mut().zip(readings) {
        *value = new_value;
        *timestamp = new_timestamp;
    }
    true
}

/// The value and timestamp of a trimmed sample line that [`parse_sample_line`] reads
/// into `expected`'s series; `None` when it would fail or read another series.
/// `matched` is scratch space, one flag per label of `expected`.
fn reread_sample_line(
    line: &str,
    expected: &Sample,
    matched: &mut Vec<bool>,
) -> Option<(f64, Option<i64>)> {
    let bytes = line.as_bytes();
    let name_end = scan_while(bytes, 0, is_metric_name_byte);
    if name_end == 0 || bytes[0].is_ascii_digit() || line[..name_end] != expected.name {
        return None;
    }
    matched.clear();
    matched.resize(expected.labels.len(), false);
    let mut labels = 0;
    let mut pos = skip_blanks(bytes, name_end);
    if bytes.get(pos) == Some(&b'{') {
        pos += 1;
        loop {
            pos = skip_blanks(bytes, pos);
            if *bytes.get(pos)? == b'}' {
                pos += 1;
                break;
            }
            let label_end = scan_while(bytes, pos, is_label_name_byte);
            if label_end == pos || bytes[pos].is_ascii_digit() {
                return None;
            }
            let label_name = &line[pos..label_end];
            pos = skip_blanks(bytes, label_end);
            if bytes.get(pos) != Some(&b'=') {
                return None;
            }
            pos = skip_blanks(bytes, pos + 1);
            if bytes.get(pos) != Some(&b'"') {
                return None;
            }
            let start = pos + 1;
            let at = start + memchr::memchr2(b'"', b'\\', bytes.get(start..)?)?;
            // The expected labels are sorted by name and distinct (the full read refuses
            // a repeated one): each label of the line must be one of them, once.
            let index = expected
                .labels
                .binary_search_by(|(name, _)| name.as_str().cmp(label_name))
                .ok()?;
            let after = if bytes[at] == b'"' {
                (expected.labels[index].1 == line[start..at]).then_some(at + 1)?
            } else {
                // An escape: read as the full read does (rare, so it may allocate).
                let (value, after) = parse_label_value(line, start)?;
                (expected.labels[index].1 == value).then_some(after)?
            };
            if std::mem::replace(&mut matched[index], true) {
                return None;
            }
            labels += 1;
            pos = skip_blanks(bytes, after);
            match bytes.get(pos)? {
                b',' => pos += 1,
                b'}' => {
                    pos += 1;
                    break;
                }
                _ => return None,
            }
        }
        pos = skip_blanks(bytes, pos);
    } else if pos == name_end && pos < bytes.len() {
        return None;
    }
    if labels != expected.labels.len() {
        return None;
    }
    read_value_and_timestamp(line, pos, &expected.name).ok()
}

fn read_lines(bytes: &[u8], keep: Option<&KeptNames>) -> Result<Exposition, ParseError> {
    // A vLLM scrape holds one sample per ~115 bytes; guessing low only costs a regrowth.
    let expected = match keep {
        Some(keep) => keep.0.len() * 4,
        None => bytes.len() / 128,
    };
    let mut exposition = Exposition {
        samples: Vec::with_capacity(expected.min(MAX_SAMPLES)),
        ..Exposition::default()
    };
    for (index, raw_line) in bytes.split(|b| *b == b'\n').enumerate() {
        if keep.is_some_and(|keep| passed_over(raw_line, keep)) {
            continue;
        }
        let line_number = index + 1;
        // Trimmed as `str::trim` does when the line is text; a line that is not UTF-8 is
        // trimmed of ASCII whitespace only, to tell a comment from a sample.
        let text = std::str::from_utf8(raw_line).ok().map(str::trim);
        let trimmed = text.map_or_else(|| trim_ascii(raw_line), str::as_bytes);
        if trimmed.is_empty() {
            continue;
        }
        if trimmed[0] == b'#' {
            // OpenMetrics ends the exposition with `# EOF`; anything after it is not ours.
            if is_eof(trimmed) {
                break;
            }
            continue;
        }
        if exposition.samples.len() >= MAX_SAMPLES {
            return Err(ParseError {
                line: line_number,
                message: format!(
                    "more than {} samples, the most one scrape may hold",
                    inferlint_core::story::fmt::thousands(MAX_SAMPLES as i64)
                ),
            });
        }
        let parsed = match text {
            Some(line) => parse_sample_line(line),
            None => Err("not UTF-8 text".to_owned()),
        };
        match parsed {
            Ok(sample) => {
                exposition.samples.push(sample);
                exposition.read += 1;
            }
            Err(message) => {
                exposition.skipped += 1;
                if exposition.problems.len() < KEPT_PROBLEMS {
                    exposition.problems.push(ParseError {
                        line: line_number,
                        message,
                    });
                }
                if let Some(name) = readable_name(trimmed) {
                    exposition.samples.push(Sample {
                        name: name.to_owned(),
                        labels: Vec::new(),
                        value: f64::NAN,
                        timestamp_ms: None,
                    });
                }
            }
        }
    }
    Ok(exposition)
}

/// Whether a narrow read passes over this line without reading it: its metric name is
/// whole and not kept.
fn passed_over(raw_line: &[u8], keep: &KeptNames) -> bool {
    let start = raw_line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(raw_line.len());
    readable_name(&raw_line[start..]).is_some_and(|name| !keep.contains(name))
}

/// Whether a trimmed comment line is OpenMetrics' `# EOF`, after which nothing is ours.
fn is_eof(comment: &[u8]) -> bool {
    trim_ascii(&comment[1..]) == b"EOF"
}

/// The metric name at the start of a line that could not be read, when the name itself
/// is whole: followed by a blank or a `{`.
fn readable_name(line: &[u8]) -> Option<&str> {
    let end = scan_while(line, 0, is_metric_name_byte);
    let whole =
        end > 0 && !line[0].is_ascii_digit() && matches!(line.get(end), Some(b' ' | b'\t' | b'{'));
    // Name bytes are ASCII, so the slice is UTF-8.
    whole
        .then(|| std::str::from_utf8(&line[..end]).ok())
        .flatten()
}

/// The bytes without leading and trailing ASCII whitespace (as `str::trim` does for the
/// characters an exposition uses).
fn trim_ascii(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// Appends one sample in exposition syntax, with a trailing newline.
///
/// Label values are escaped (`\\`, `\"`, `\n`) and the value is printed in the shortest
/// form that reads back to the same `f64` (`NaN`, `+Inf` and `-Inf` for the special
/// values), so [`parse_samples`] returns an equal sample. The name and label names are
/// printed as given; the caller keeps them within the format's alphabet.
pub fn write_sample(out: &mut String, sample: &Sample) {
    out.push_str(&sample.name);
    if !sample.labels.is_empty() {
        out.push('{');
        for (index, (label_name, label_value)) in sample.labels.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            out.push_str(label_name);
            out.push_str("=\"");
            write_escaped_label_value(out, label_value);
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    write_value(out, sample.value);
    if let Some(timestamp_ms) = sample.timestamp_ms {
        // Writing into a String cannot fail.
        let _ = write!(out, " {timestamp_ms}");
    }
    out.push('\n');
}

fn write_value(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
    } else if value == f64::INFINITY {
        out.push_str("+Inf");
    } else if value == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else {
        // `{:?}` prints the shortest text that reads back to the same f64, switching to
        // exponent form for very large and very small magnitudes (`1e300`, `5e-324`).
        let _ = write!(out, "{value:?}");
    }
}

fn write_escaped_label_value(out: &mut String, value: &str) {
    let bytes = value.as_bytes();
    let mut chunk_start = 0;
    for at in memchr::memchr3_iter(b'\\', b'"', b'\n', bytes) {
        out.push_str(&value[chunk_start..at]);
        out.push_str(match bytes[at] {
            b'\\' => "\\\\",
            b'"' => "\\\"",
            _ => "\\n",
        });
        chunk_start = at + 1;
    }
    out.push_str(&value[chunk_start..]);
}

/// Reads one trimmed, non-blank, non-comment line. The error is the message only; the
/// caller adds the line number.
fn parse_sample_line(line: &str) -> Result<Sample, String> {
    let bytes = line.as_bytes();
    let name_end = scan_while(bytes, 0, is_metric_name_byte);
    let bad_name = || {
        let first_token = &line[..token_end(bytes, 0)];
        format!("bad metric name at '{}'", excerpt(first_token))
    };
    if name_end == 0 || bytes[0].is_ascii_digit() {
        return Err(bad_name());
    }
    let name = &line[..name_end];

    let mut pos = skip_blanks(bytes, name_end);
    let mut labels = Vec::new();
    if bytes.get(pos) == Some(&b'{') {
        pos = parse_label_set(line, pos + 1, name, &mut labels)?;
        pos = skip_blanks(bytes, pos);
    } else if pos == name_end && pos < bytes.len() {
        // Something other than a blank, `{` or a name character follows the name.
        return Err(bad_name());
    }

    let (value, timestamp_ms) = read_value_and_timestamp(line, pos, name)?;

    labels.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    // Held for as long as the scrape is: no room for labels that never come.
    labels.shrink_to_fit();
    if let Some(pair) = labels.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(format!("duplicate label '{}' for {name}", pair[0].0));
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
        timestamp_ms,
    })
}

/// The value and optional timestamp of a sample line from `pos` (past its name and
/// labels) to its end, where only an OpenMetrics exemplar (`# ...`) may follow. The error
/// is the message only.
fn read_value_and_timestamp(
    line: &str,
    mut pos: usize,
    name: &str,
) -> Result<(f64, Option<i64>), String> {
    let bytes = line.as_bytes();
    let value_end = token_end(bytes, pos);
    if value_end == pos {
        return Err(format!("missing value for {name}"));
    }
    let value_text = &line[pos..value_end];
    let value = value_text
        .parse::<f64>()
        .map_err(|_| format!("bad value '{}' for {name}", excerpt(value_text)))?;
    pos = skip_blanks(bytes, value_end);

    // A `#` after the value starts an OpenMetrics exemplar, which no check uses.
    let mut timestamp_ms = None;
    if pos < bytes.len() && bytes[pos] != b'#' {
        let timestamp_end = token_end(bytes, pos);
        let timestamp_text = &line[pos..timestamp_end];
        let timestamp = timestamp_text
            .parse::<i64>()
            .map_err(|_| format!("bad timestamp '{}' for {name}", excerpt(timestamp_text)))?;
        timestamp_ms = Some(timestamp);
        pos = skip_blanks(bytes, timestamp_end);
    }
    if pos < bytes.len() && bytes[pos] != b'#' {
        return Err(format!(
            "unexpected '{}' after the timestamp of {name}",
            excerpt(&line[pos..])
        ));
    }
    Ok((value, timestamp_ms))
}

/// Reads `name="value", ...}` from just after the `{`; returns the position after the `}`.
fn parse_label_set(
    line: &str,
    mut pos: usize,
    metric: &str,
    labels: &mut Vec<(String, String)>,
) -> Result<usize, String> {
    let bytes = line.as_bytes();
    let unclosed = || format!("unclosed label set for {metric}");
    loop {
        pos = skip_blanks(bytes, pos);
        // An empty set `{}` and a trailing comma `{a="b",}` both end here.
        match bytes.get(pos) {
            None => return Err(unclosed()),
            Some(b'}') => return Ok(pos + 1),
            Some(_) => {}
        }
        let label_end = scan_while(bytes, pos, is_label_name_byte);
        if label_end == pos || bytes[pos].is_ascii_digit() {
            return Err(format!(
                "bad label name at '{}' for {metric}",
                excerpt(&line[pos..])
            ));
        }
        let label_name = &line[pos..label_end];
        if labels.len() >= MAX_LABELS {
            return Err(format!("more than {MAX_LABELS} labels for {metric}"));
        }
        pos = skip_blanks(bytes, label_end);
        if bytes.get(pos) != Some(&b'=') {
            return Err(format!("missing '=' after label {label_name} of {metric}"));
        }
        pos = skip_blanks(bytes, pos + 1);
        if bytes.get(pos) != Some(&b'"') {
            return Err(format!("unquoted value for label {label_name} of {metric}"));
        }
        let (label_value, after_quote) = parse_label_value(line, pos + 1)
            .ok_or_else(|| format!("unterminated value for label {label_name} of {metric}"))?;
        if label_value.len() > MAX_LABEL_VALUE_BYTES {
            return Err(format!(
                "label {label_name} of {metric} is longer than {} KiB",
                MAX_LABEL_VALUE_BYTES >> 10
            ));
        }
        labels.push((label_name.to_owned(), label_value));
        pos = skip_blanks(bytes, after_quote);
        match bytes.get(pos) {
            None => return Err(unclosed()),
            Some(b',') => pos += 1,
            Some(b'}') => return Ok(pos + 1),
            Some(_) => {
                return Err(format!(
                    "expected ',' or '}}' after label {label_name} of {metric}"
                ))
            }
        }
    }
}

/// Reads a quoted label value from just after its opening quote, unescaping `\\`, `\"`
/// and `\n`; an unknown escape such as `\x` is kept as written, as the Python tool does.
/// Returns the value and the position after the closing quote, or `None` when the line
/// ends first.
fn parse_label_value(line: &str, start: usize) -> Option<(String, usize)> {
    let bytes = line.as_bytes();
    let mut unescaped = String::new();
    let mut chunk_start = start;
    let mut pos = start;
    loop {
        let at = pos + memchr::memchr2(b'"', b'\\', bytes.get(pos..)?)?;
        if bytes[at] == b'"' {
            if chunk_start == start {
                // The common case: no escapes, one allocation of the exact slice.
                return Some((line[start..at].to_owned(), at + 1));
            }
            unescaped.push_str(&line[chunk_start..at]);
            return Some((unescaped, at + 1));
        }
        unescaped.push_str(&line[chunk_start..at]);
        let replacement = match bytes.get(at + 1)? {
            b'\\' => '\\',
            b'"' => '"',
            b'n' => '\n',
            _ => {
                // Keep the backslash; the character after it is read as an ordinary one.
                unescaped.push('\\');
                chunk_start = at + 1;
                pos = at + 1;
                continue;
            }
        };
        unescaped.push(replacement);
        chunk_start = at + 2;
        pos = at + 2;
    }
}

/// Which bytes may follow the first one of a name. Names are most of a scrape's bytes, and
/// a table lookup per byte measured faster than the chain of range comparisons.
const fn name_byte_table(allow_colon: bool) -> [bool; 256] {
    let mut table = [false; 256];
    let mut index = 0;
    while index < 256 {
        let byte = index as u8;
        table[index] =
            byte.is_ascii_alphanumeric() || byte == b'_' || (allow_colon && byte == b':');
        index += 1;
    }
    table
}

static METRIC_NAME_BYTES: [bool; 256] = name_byte_table(true);
static LABEL_NAME_BYTES: [bool; 256] = name_byte_table(false);

fn is_metric_name_byte(byte: u8) -> bool {
    METRIC_NAME_BYTES[usize::from(byte)]
}

fn is_label_name_byte(byte: u8) -> bool {
    LABEL_NAME_BYTES[usize::from(byte)]
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

fn scan_while(bytes: &[u8], mut pos: usize, accept: impl Fn(u8) -> bool) -> usize {
    while pos < bytes.len() && accept(bytes[pos]) {
        pos += 1;
    }
    pos
}

fn skip_blanks(bytes: &[u8], pos: usize) -> usize {
    scan_while(bytes, pos, is_blank)
}

/// The end of the whitespace-delimited token that starts at `pos`.
fn token_end(bytes: &[u8], pos: usize) -> usize {
    scan_while(bytes, pos, |byte| !is_blank(byte))
}

/// At most 40 characters of `text`, cut on a character boundary, for error messages.
fn excerpt(text: &str) -> &str {
    const LIMIT: usize = 40;
    match text.char_indices().nth(LIMIT) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_on_a_character_boundary() {
        let long = "é".repeat(50);
        assert_eq!(excerpt(&long).chars().count(), 40);
        assert_eq!(excerpt("short"), "short");
    }

    #[test]
    fn escaping_writes_each_special_character_once() {
        let mut out = String::new();
        write_escaped_label_value(&mut out, "a\\b\"c\nd");
        assert_eq!(out, r#"a\\b\"c\nd"#);
    }
}
