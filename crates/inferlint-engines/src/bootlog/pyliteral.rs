//! A small reader for the Python literals engines print with `repr()`: dicts, lists,
//! tuples, sets, strings with escapes, numbers, `True`, `False` and `None`.
//!
//! Anything else that appears as a value (an enum repr such as `<LoadFormat.AUTO: 0>`, a
//! call such as `SpeculativeConfig(method='mtp')`, a dotted name such as `torch.bfloat16`)
//! is kept as printed in [`PyValue::Raw`], so an unknown repr never makes the whole dict
//! unreadable. A dict that is cut off, or has anything but whitespace after its closing
//! brace, is an error: the caller records the line as unparsed rather than guess.

use inferlint_core::model::PyValue;

/// Nesting deeper than this is refused rather than risk the stack on hostile input.
const MAX_DEPTH: usize = 64;

/// Why a literal could not be read: the byte offset where reading stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiteralError {
    /// Bytes into the text.
    pub offset: usize,
}

/// Reads `text` as one dict literal (leading and trailing whitespace allowed) into its
/// entries, in printed order. Keys that are not strings are kept in their canonical form.
pub fn parse_dict(text: &str) -> Result<Vec<(String, PyValue)>, LiteralError> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    reader.skip_ws();
    if reader.peek() != Some(b'{') {
        return Err(reader.error());
    }
    let value = reader.value(0)?;
    reader.skip_ws();
    if reader.pos != reader.bytes.len() {
        return Err(reader.error());
    }
    match value {
        PyValue::Dict(entries) => Ok(entries),
        _ => Err(LiteralError { offset: 0 }),
    }
}

/// Reads `text` as one literal of any kind (whitespace around it allowed).
pub fn parse_value(text: &str) -> Result<PyValue, LiteralError> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    reader.skip_ws();
    let value = reader.value(0)?;
    reader.skip_ws();
    if reader.pos != reader.bytes.len() {
        return Err(reader.error());
    }
    Ok(value)
}

/// Reads `text` as a call with keyword arguments, as Python prints an
/// `argparse.Namespace`: `Namespace(seed=0, model='m', rate=inf)`. Returns the callee's
/// name and the arguments in printed order.
pub fn parse_kwargs_call(text: &str) -> Result<(String, Vec<(String, PyValue)>), LiteralError> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    reader.skip_ws();
    let name = reader.identifier()?;
    if reader.peek() != Some(b'(') {
        return Err(reader.error());
    }
    reader.pos += 1;
    let mut args = Vec::new();
    loop {
        reader.skip_ws();
        if reader.peek() == Some(b')') {
            reader.pos += 1;
            break;
        }
        let key = reader.identifier()?;
        reader.skip_ws();
        if reader.peek() != Some(b'=') {
            return Err(reader.error());
        }
        reader.pos += 1;
        let value = reader.value(1)?;
        args.push((key, value));
        reader.skip_ws();
        match reader.peek() {
            Some(b',') => reader.pos += 1,
            Some(b')') => {
                reader.pos += 1;
                break;
            }
            _ => return Err(reader.error()),
        }
    }
    reader.skip_ws();
    if reader.pos != reader.bytes.len() {
        return Err(reader.error());
    }
    Ok((name, args))
}

/// A bare scalar as printed in `key=value` settings (`32`, `0.9`, `True`, `None`); any
/// other text is kept raw.
pub fn scalar(text: &str) -> PyValue {
    match text {
        "None" => PyValue::None,
        "True" => PyValue::Bool(true),
        "False" => PyValue::Bool(false),
        _ => number(text).unwrap_or_else(|| PyValue::Raw(text.to_owned())),
    }
}

/// A Python int or float literal, or `None` when `text` is not one.
fn number(text: &str) -> Option<PyValue> {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    let first = digits.bytes().next()?;
    if !(first.is_ascii_digit() || first == b'.') {
        return None;
    }
    if digits.bytes().all(|b| b.is_ascii_digit()) {
        // Beyond i64 Python ints are still ints; keep the digits rather than round them.
        return Some(
            text.parse::<i64>()
                .map_or_else(|_| PyValue::Raw(text.to_owned()), PyValue::Int),
        );
    }
    let float_chars = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'));
    if float_chars {
        text.parse::<f64>().ok().map(PyValue::Float)
    } else {
        None
    }
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn error(&self) -> LiteralError {
        LiteralError { offset: self.pos }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    /// A Python identifier (ASCII letters, digits and `_`, not starting with a digit).
    fn identifier(&mut self) -> Result<String, LiteralError> {
        let start = self.pos;
        while matches!(self.peek(), Some(b) if b == b'_' || b.is_ascii_alphanumeric()) {
            self.pos += 1;
        }
        let name = &self.text[start..self.pos];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            return Err(self.error());
        }
        Ok(name.to_owned())
    }

    fn value(&mut self, depth: usize) -> Result<PyValue, LiteralError> {
        if depth > MAX_DEPTH {
            return Err(self.error());
        }
        self.skip_ws();
        match self.peek() {
            None => Err(self.error()),
            Some(b'{') => self.braces(depth),
            Some(b'[') => self.sequence(b']', depth),
            Some(b'(') => self.sequence(b')', depth),
            Some(b'\'' | b'"') => self.string().map(PyValue::Str),
            Some(b'}' | b']' | b')' | b',' | b':') => Err(self.error()),
            Some(_) => self.bare(),
        }
    }

    /// `{}` is an empty dict; `{k: v, ...}` a dict; `{a, b}` a set, read as a list.
    fn braces(&mut self, depth: usize) -> Result<PyValue, LiteralError> {
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(PyValue::Dict(Vec::new()));
        }
        let first = self.value(depth + 1)?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            let mut items = vec![first];
            self.rest_of_sequence(b'}', depth, &mut items)?;
            return Ok(PyValue::List(items));
        }
        let mut entries = Vec::new();
        let mut key = first;
        loop {
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.error());
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            entries.push((key_text(key), value));
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        return Ok(PyValue::Dict(entries));
                    }
                    key = self.value(depth + 1)?;
                }
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(PyValue::Dict(entries));
                }
                _ => return Err(self.error()),
            }
        }
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<PyValue, LiteralError> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(close) {
            self.pos += 1;
            return Ok(PyValue::List(items));
        }
        items.push(self.value(depth + 1)?);
        self.rest_of_sequence(close, depth, &mut items)?;
        Ok(PyValue::List(items))
    }

    /// After an item: `, item`... up to the closing bracket (a trailing comma allowed).
    fn rest_of_sequence(
        &mut self,
        close: u8,
        depth: usize,
        items: &mut Vec<PyValue>,
    ) -> Result<(), LiteralError> {
        loop {
            self.skip_ws();
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        return Ok(());
                    }
                    items.push(self.value(depth + 1)?);
                }
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.error()),
            }
        }
    }

    /// A quoted string with Python's escapes; the quote must close.
    fn string(&mut self) -> Result<String, LiteralError> {
        let quote = self.bytes[self.pos];
        self.pos += 1;
        let mut out = String::new();
        let mut run_start = self.pos;
        while let Some(b) = self.peek() {
            if b == quote {
                out.push_str(&self.text[run_start..self.pos]);
                self.pos += 1;
                return Ok(out);
            }
            if b != b'\\' {
                self.pos += 1;
                continue;
            }
            out.push_str(&self.text[run_start..self.pos]);
            self.pos += 1;
            let Some(escaped) = self.peek() else {
                return Err(self.error());
            };
            self.pos += 1;
            match escaped {
                b'n' => out.push('\n'),
                b't' => out.push('\t'),
                b'r' => out.push('\r'),
                b'0' => out.push('\0'),
                b'a' => out.push('\u{7}'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'v' => out.push('\u{b}'),
                b'\\' => out.push('\\'),
                b'\'' => out.push('\''),
                b'"' => out.push('"'),
                b'x' => out.push(self.hex_escape(2)?),
                b'u' => out.push(self.hex_escape(4)?),
                b'U' => out.push(self.hex_escape(8)?),
                _ => {
                    // Python keeps an unknown escape as written, backslash included.
                    out.push('\\');
                    self.pos -= 1;
                }
            }
            run_start = self.pos;
        }
        Err(self.error())
    }

    fn hex_escape(&mut self, digits: usize) -> Result<char, LiteralError> {
        let end = self.pos + digits;
        let hex = self.text.get(self.pos..end).ok_or_else(|| self.error())?;
        let code = u32::from_str_radix(hex, 16).map_err(|_| self.error())?;
        self.pos = end;
        Ok(char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER))
    }

    /// A bare token: a number, `True`/`False`/`None`, or an unknown repr kept raw. An
    /// unknown repr runs to the next `,` `:` or closing bracket outside any bracket or
    /// quote of its own (`Config(a=1, b=[2])`, `<Enum.X: 'x'>`).
    fn bare(&mut self) -> Result<PyValue, LiteralError> {
        let start = self.pos;
        let angle = self.peek() == Some(b'<');
        let mut depth = 0usize;
        while let Some(b) = self.peek() {
            match b {
                b'\'' | b'"' => {
                    self.string()?;
                    continue;
                }
                b'(' | b'[' | b'{' => depth += 1,
                b'<' if angle => depth += 1,
                b')' | b']' | b'}' if depth > 0 => depth -= 1,
                b'>' if angle && depth > 0 => depth -= 1,
                b')' | b']' | b'}' | b',' | b':' if depth == 0 => break,
                _ => {}
            }
            self.pos += 1;
        }
        if depth > 0 {
            return Err(self.error());
        }
        let token = self.text[start..self.pos].trim_end();
        if token.is_empty() {
            return Err(self.error());
        }
        Ok(scalar(token))
    }
}

fn key_text(key: PyValue) -> String {
    match key {
        PyValue::Str(s) => s,
        other => other.canonical(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_argparse_namespace() {
        let (name, args) = parse_kwargs_call(
            "Namespace(fn=<function cmd at 0x7f>, num_prompts=32, rate=inf, bucket={(256, 256, 1): 0.5}, model='m, n', x=None)",
        )
        .unwrap();
        assert_eq!(name, "Namespace");
        let get = |k: &str| {
            args.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("num_prompts"), Some(PyValue::Int(32)));
        assert_eq!(get("rate"), Some(PyValue::Raw("inf".into())));
        assert_eq!(get("model"), Some(PyValue::Str("m, n".into())));
        assert_eq!(get("x"), Some(PyValue::None));
        assert_eq!(args.len(), 6);
        assert!(parse_kwargs_call("Namespace(a=1, b=").is_err());
    }

    #[test]
    fn reads_a_vllm_args_dict() {
        let dict = parse_dict(
            "{'model': '/m', 'max_num_seqs': 32, 'gpu_memory_utilization': 0.93, 'enforce_eager': True, \
             'served_model_name': ['qwen38'], 'speculative_config': {'method': 'mtp', 'n': 3}, 'seed': None}",
        )
        .expect("parses");
        assert_eq!(dict[0], ("model".into(), PyValue::Str("/m".into())));
        assert_eq!(dict[1].1, PyValue::Int(32));
        assert_eq!(dict[2].1, PyValue::Float(0.93));
        assert_eq!(dict[3].1, PyValue::Bool(true));
        assert_eq!(
            dict[4].1,
            PyValue::List(vec![PyValue::Str("qwen38".into())])
        );
        assert!(matches!(&dict[5].1, PyValue::Dict(d) if d.len() == 2));
        assert_eq!(dict[6].1, PyValue::None);
    }

    #[test]
    fn keeps_unknown_reprs_raw() {
        let dict = parse_dict(
            "{'fmt': <LoadFormat.AUTO: 0>, 'spec': SpeculativeConfig(method='mtp', sizes=[1, 2]), 'dtype': torch.bfloat16, 'x': inf}",
        )
        .expect("parses");
        assert_eq!(dict[0].1, PyValue::Raw("<LoadFormat.AUTO: 0>".into()));
        assert_eq!(
            dict[1].1,
            PyValue::Raw("SpeculativeConfig(method='mtp', sizes=[1, 2])".into())
        );
        assert_eq!(dict[2].1, PyValue::Raw("torch.bfloat16".into()));
        assert_eq!(dict[3].1, PyValue::Raw("inf".into()));
    }

    #[test]
    fn strings_with_escapes_and_both_quotes() {
        assert_eq!(
            parse_value(r#"'it\'s \\ \n \x41 \u00e9'"#),
            Ok(PyValue::Str("it's \\ \n A é".into()))
        );
        assert_eq!(
            parse_value(r#""say 'hi'""#),
            Ok(PyValue::Str("say 'hi'".into()))
        );
        assert_eq!(parse_value(r"'a\qb'"), Ok(PyValue::Str(r"a\qb".into())));
    }

    #[test]
    fn tuples_sets_and_trailing_commas() {
        assert_eq!(
            parse_value("(1, -2.5e-3,)"),
            Ok(PyValue::List(vec![
                PyValue::Int(1),
                PyValue::Float(-0.0025)
            ]))
        );
        assert_eq!(
            parse_value("{1, 2}"),
            Ok(PyValue::List(vec![PyValue::Int(1), PyValue::Int(2)]))
        );
        assert_eq!(parse_value("{}"), Ok(PyValue::Dict(Vec::new())));
        assert_eq!(
            parse_value("123456789012345678901234567890"),
            Ok(PyValue::Raw("123456789012345678901234567890".into()))
        );
    }

    #[test]
    fn truncated_or_trailing_text_is_an_error() {
        assert!(parse_dict("{'a': 1, 'b': [1, 2").is_err());
        assert!(parse_dict("{'a': 'unterminated").is_err());
        assert!(parse_dict("{'a': 1} and more").is_err());
        assert!(parse_dict("{'a': 1,").is_err());
        assert!(parse_dict("{'a' 1}").is_err());
        assert!(parse_dict("").is_err());
        assert!(parse_dict("[1]").is_err());
        assert!(parse_value(&"[".repeat(10_000)).is_err());
        assert!(parse_value(r"'\x4'").is_err());
    }
}
