//! Our own reader and writer of the Prometheus text exposition format.
//!
//! Generic parsers (the `prometheus-parse` crate among them) drop metric names with `:`,
//! and every vLLM and SGLang metric has one (`vllm:num_requests_running`), so we read the
//! format ourselves. The rules are those of the established Python tool: lines are trimmed;
//! blank lines and `#` lines (HELP, TYPE, comments) are skipped and OpenMetrics `# EOF` ends
//! the text; a sample is a name, optional `{labels}`, a value and an optional integer
//! timestamp in milliseconds; an OpenMetrics exemplar (` # {trace_id="x"} 1.0`) after them
//! is ignored. A malformed sample line is an error naming its 1-based line, never a panic.
//!
//! The parser scans bytes rather than running a regex: a vLLM scrape is about 50 KB and 430
//! samples, and a `watch` loop reads one every half second. It allocates only the strings
//! it keeps (names, label names and label values).

use std::fmt::Write as _;

use inferlint_core::{MetricSet, Sample};

/// A sample line that does not follow the exposition format.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// The 1-based line number in the text given to the parser.
    pub line: usize,
    /// A lowercase fragment naming what is wrong, such as `bad value 'abc' for vllm:foo`.
    pub message: String,
}

/// Parses a whole exposition into a [`MetricSet`] indexed by name.
pub fn parse(text: &str) -> Result<MetricSet, ParseError> {
    parse_samples(text).map(MetricSet::new)
}

/// Parses a whole exposition into its samples, in the order of the text.
pub fn parse_samples(text: &str) -> Result<Vec<Sample>, ParseError> {
    // A vLLM scrape holds one sample per ~115 bytes; guessing low only costs a regrowth.
    let mut samples = Vec::with_capacity(text.len() / 128);
    for (index, raw_line) in text.split('\n').enumerate() {
        let line = raw_line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            // OpenMetrics ends the exposition with `# EOF`; anything after it is not ours.
            if comment.trim() == "EOF" {
                break;
            }
            continue;
        }
        let sample = parse_sample_line(line).map_err(|message| ParseError {
            line: index + 1,
            message,
        })?;
        samples.push(sample);
    }
    Ok(samples)
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

    labels.sort_unstable_by(|a, b| a.0.cmp(&b.0));
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
