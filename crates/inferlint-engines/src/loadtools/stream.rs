//! Result files read as a stream, never whole: a file's bytes pass once through a small
//! buffer, and its JSON is built into a tree of values except for the lists of records,
//! which a [`Sink`] folds one entry at a time into what the account keeps. What the tree
//! holds is then the summary's fields; what the sink holds is the records; nothing holds
//! the file.
//!
//! The bytes are read as [`crate::pyjson`] reads text: each `NaN`, `Infinity` and
//! `-Infinity` outside a string becomes a string of the same word; and, as a whole file
//! was read before, a file that is not UTF-8 text anywhere, or longer than
//! [`MAX_RESULT_BYTES`], is that error, whatever else is wrong with it.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::input::{size_text, FileError, MAX_RESULT_BYTES};

/// How many bytes are read from a file at a time.
const CHUNK: usize = 64 * 1024;

/// Where a result's bytes come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source<'a> {
    /// A file, read as a stream (at most [`MAX_RESULT_BYTES`]).
    File(&'a Path),
    /// Bytes given whole (the library's and the fuzzer's entry point).
    Bytes(&'a [u8]),
}

impl<'a> Source<'a> {
    /// The bytes from the start, as a reader; `path` names the file in errors. A pipe, a
    /// device or a folder is refused before anything is read, as is a file longer than
    /// the bound.
    pub(crate) fn open(&self, path: &Path) -> Result<Bounded<Box<dyn Read + 'a>>, FileError> {
        match *self {
            Source::Bytes(bytes) => Ok(Bounded::new(Box::new(bytes), u64::MAX)),
            Source::File(file_path) => {
                let (file, len) = crate::input::open_input(file_path)?;
                if len > MAX_RESULT_BYTES {
                    return Err(too_big(path, len));
                }
                Ok(Bounded::new(Box::new(file), MAX_RESULT_BYTES))
            }
        }
    }

    /// Its first `n` bytes (fewer when it is shorter).
    pub(crate) fn head(&self, path: &Path, n: usize) -> Result<Vec<u8>, FileError> {
        if let Source::Bytes(bytes) = *self {
            return Ok(bytes[..bytes.len().min(n)].to_vec());
        }
        let mut reader = self.open(path)?;
        let mut head = Vec::with_capacity(n);
        (&mut reader)
            .take(n as u64)
            .read_to_end(&mut head)
            .map_err(|e| FileError::io(path, e))?;
        Ok(head)
    }
}

fn too_big(path: &Path, size: u64) -> FileError {
    FileError::invalid(
        path,
        format!(
            "{}, more than the {} a result file can be",
            size_text(size),
            size_text(MAX_RESULT_BYTES)
        ),
    )
}

/// A reader that reads no more than a bound and says when the input held more.
#[derive(Debug)]
pub(crate) struct Bounded<R> {
    inner: R,
    left: u64,
    over: bool,
}

impl<R: Read> Bounded<R> {
    fn new(inner: R, limit: u64) -> Bounded<R> {
        Bounded {
            inner,
            left: limit,
            over: false,
        }
    }
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // One byte more than the bound tells a file that grew past it.
            let mut one = [0u8; 1];
            let n = self.inner.read(&mut one)?;
            if n > 0 {
                self.over = true;
                return Err(io::Error::other("more than the bound"));
            }
            return Ok(0);
        }
        let room = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..room])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// The non-standard tokens Python writes, longest first where one is a prefix.
const PYTHON_TOKENS: &[&[u8]] = &[b"-Infinity", b"Infinity", b"NaN"];
/// The longest of them and the byte after it, which must not continue a word.
const LOOK_AHEAD: usize = 10;

/// The bytes of a source as JSON reads them: Python's tokens quoted, every byte checked
/// for UTF-8, and what went wrong kept for the error.
struct Stream<'a> {
    inner: BufReader<Bounded<Box<dyn Read + 'a>>>,
    check_utf8: bool,
    /// Bytes read but not yet rewritten (a token cut at a chunk's end, a UTF-8 sequence).
    pending: Vec<u8>,
    /// Rewritten bytes not yet given out, from `given`.
    out: Vec<u8>,
    given: usize,
    in_string: bool,
    escaped: bool,
    previous: u8,
    utf8_tail: Vec<u8>,
    not_utf8: bool,
    io_error: Option<io::Error>,
    ended: bool,
}

impl<'a> Stream<'a> {
    fn new(reader: Bounded<Box<dyn Read + 'a>>, check_utf8: bool, chunk: usize) -> Stream<'a> {
        Stream {
            inner: BufReader::with_capacity(chunk, reader),
            check_utf8,
            pending: Vec::new(),
            out: Vec::with_capacity(CHUNK + 64),
            given: 0,
            in_string: false,
            escaped: false,
            previous: b' ',
            utf8_tail: Vec::new(),
            not_utf8: false,
            io_error: None,
            ended: false,
        }
    }

    /// Reads the next chunk and rewrites what of it can be; `false` at the end.
    fn refill(&mut self) -> io::Result<bool> {
        self.out.clear();
        self.given = 0;
        while self.out.is_empty() {
            if self.ended && self.pending.is_empty() {
                return Ok(false);
            }
            if !self.ended {
                let chunk = match self.inner.fill_buf() {
                    Ok(c) => c,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let kind = e.kind();
                        self.io_error = Some(e);
                        return Err(io::Error::new(kind, "the file could not be read"));
                    }
                };
                let n = chunk.len();
                if n == 0 {
                    self.ended = true;
                    if !self.utf8_tail.is_empty() {
                        self.not_utf8 = true;
                    }
                } else {
                    let from = self.pending.len();
                    self.pending.extend_from_slice(chunk);
                    self.inner.consume(n);
                    if self.check_utf8 {
                        let pending = std::mem::take(&mut self.pending);
                        self.check(&pending[from..]);
                        self.pending = pending;
                    }
                }
            }
            self.rewrite();
        }
        Ok(true)
    }

    /// Checks a chunk for UTF-8, a sequence cut at its end carried to the next.
    fn check(&mut self, chunk: &[u8]) {
        if self.not_utf8 {
            return;
        }
        if self.utf8_tail.is_empty() {
            // The common case, checked where it lies.
            if let Err(e) = std::str::from_utf8(chunk) {
                match e.error_len() {
                    Some(_) => self.not_utf8 = true,
                    None => self.utf8_tail = chunk[e.valid_up_to()..].to_vec(),
                }
            }
            return;
        }
        let mut bytes = std::mem::take(&mut self.utf8_tail);
        bytes.extend_from_slice(chunk);
        if let Err(e) = std::str::from_utf8(&bytes) {
            match e.error_len() {
                Some(_) => self.not_utf8 = true,
                None => self.utf8_tail = bytes[e.valid_up_to()..].to_vec(),
            }
        }
    }

    /// Moves what of `pending` can be decided into `out`, quoting Python's tokens as
    /// [`crate::pyjson`] does.
    fn rewrite(&mut self) {
        let bytes = std::mem::take(&mut self.pending);
        let mut i = 0;
        while i < bytes.len() {
            // A run of bytes that need no decision is copied whole: in a string up to
            // its next quote or backslash, outside one up to the next byte that may
            // begin a string or one of Python's tokens.
            let run = if self.in_string {
                if self.escaped {
                    0
                } else {
                    bytes[i..]
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\')
                        .unwrap_or(bytes.len() - i)
                }
            } else {
                bytes[i..]
                    .iter()
                    .position(|&b| matches!(b, b'"' | b'-' | b'I' | b'N'))
                    .unwrap_or(bytes.len() - i)
            };
            if run > 0 {
                self.out.extend_from_slice(&bytes[i..i + run]);
                self.previous = bytes[i + run - 1];
                i += run;
                continue;
            }
            let b = bytes[i];
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                }
                self.out.push(b);
                self.previous = b;
                i += 1;
                continue;
            }
            if b == b'"' {
                self.in_string = true;
                self.out.push(b);
                self.previous = b;
                i += 1;
                continue;
            }
            if matches!(b, b'-' | b'I' | b'N') {
                let rest = &bytes[i..];
                if rest.len() < LOOK_AHEAD && !self.ended {
                    // The token may go on in the next chunk.
                    self.pending = rest.to_vec();
                    return;
                }
                let token = PYTHON_TOKENS.iter().find(|t| {
                    rest.starts_with(t)
                        && !rest
                            .get(t.len())
                            .is_some_and(|n| n.is_ascii_alphanumeric() || *n == b'_')
                        && !self.previous.is_ascii_alphanumeric()
                });
                if let Some(t) = token {
                    self.out.push(b'"');
                    self.out.extend_from_slice(t);
                    self.out.push(b'"');
                    self.previous = t[t.len() - 1];
                    i += t.len();
                    continue;
                }
            }
            self.out.push(b);
            self.previous = b;
            i += 1;
        }
    }

    /// Reads to the end, so that a file's UTF-8 and size are known whole.
    fn drain(&mut self) {
        while self.io_error.is_none() && !self.over() {
            match self.refill() {
                Ok(true) => {}
                _ => break,
            }
        }
    }

    fn over(&self) -> bool {
        self.inner.get_ref().over
    }
}

impl Read for Stream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.given == self.out.len() && !self.refill()? {
            return Ok(0);
        }
        let n = buf.len().min(self.out.len() - self.given);
        buf[..n].copy_from_slice(&self.out[self.given..self.given + n]);
        self.given += n;
        Ok(n)
    }
}

/// One step of the way from a file's top value to a value in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Whether a path is the keys and indexes given, `None` standing for any index.
pub(crate) fn path_is(path: &[Seg], pattern: &[Option<&str>]) -> bool {
    path.len() == pattern.len()
        && path
            .iter()
            .zip(pattern)
            .all(|(seg, want)| match (seg, want) {
                (Seg::Key(k), Some(w)) => k == w,
                (Seg::Index(_), None) => true,
                _ => false,
            })
}

/// The index at position `at` of a path, when it is one.
pub(crate) fn index_at(path: &[Seg], at: usize) -> Option<usize> {
    match path.get(at) {
        Some(Seg::Index(i)) => Some(*i),
        _ => None,
    }
}

/// What a reader folds records into as they are read.
pub(crate) trait Sink {
    /// Whether the list at `path` is given to [`Sink::item`] one entry at a time rather
    /// than kept in the tree (where an empty list then stands for it).
    fn streams(&self, path: &[Seg]) -> bool;
    /// A list at `path` begins: a key given twice in one object is read as its last, so
    /// what an earlier list of the same path gave is forgotten.
    fn begin(&mut self, path: &[Seg]);
    /// Entry `index` of the list at `path`.
    fn item(&mut self, path: &[Seg], index: usize, item: Value);
}

/// A sink that streams nothing: the whole file as one tree (a summary, kilobytes).
pub(crate) struct Whole;

impl Sink for Whole {
    fn streams(&self, _: &[Seg]) -> bool {
        false
    }
    fn begin(&mut self, _: &[Seg]) {}
    fn item(&mut self, _: &[Seg], _: usize, _: Value) {}
}

/// Builds the tree as [`Value`]'s own deserialisation does, handing the lists a sink
/// streams to it.
struct Tree<'s, S> {
    path: &'s mut Vec<Seg>,
    sink: &'s mut S,
}

impl<'de, S: Sink> DeserializeSeed<'de> for Tree<'_, S> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: Sink> Visitor<'de> for Tree<'_, S> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        if self.sink.streams(self.path) {
            self.sink.begin(self.path);
            let mut i = 0;
            while let Some(item) = seq.next_element::<Value>()? {
                self.sink.item(self.path, i, item);
                i += 1;
            }
            return Ok(Value::Array(Vec::new()));
        }
        let mut items = Vec::new();
        loop {
            self.path.push(Seg::Index(items.len()));
            let item = seq.next_element_seed(Tree {
                path: &mut *self.path,
                sink: &mut *self.sink,
            });
            self.path.pop();
            match item? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut values = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(Seg::Key(key));
            let value = map.next_value_seed(Tree {
                path: &mut *self.path,
                sink: &mut *self.sink,
            });
            if let Some(Seg::Key(key)) = self.path.pop() {
                values.insert(key, value?);
            }
        }
        Ok(Value::Object(values))
    }
}

/// Reads a result's JSON as a stream: the tree of what `sink` does not stream, the lists
/// it streams folded into it. A cut-off or malformed file is an error naming `what`
/// (the tool), as [`super::parse_json`] words it.
pub(crate) fn parse<S: Sink>(
    path: &Path,
    source: Source,
    what: &str,
    sink: &mut S,
) -> Result<Value, FileError> {
    parse_from(path, source.open(path)?, true, what, sink)
}

/// [`parse`] of `len` bytes from `start` (one line of a file), its UTF-8 left to the
/// parser (a line was read as text with its bad bytes replaced).
pub(crate) fn parse_range<S: Sink>(
    path: &Path,
    source: Source,
    (start, len): (u64, u64),
    what: &str,
    sink: &mut S,
) -> Result<Value, FileError> {
    let mut reader = source.open(path)?;
    io::copy(&mut (&mut reader).take(start), &mut io::sink())
        .map_err(|e| FileError::io(path, e))?;
    let reader = Bounded::new(Box::new(reader.take(len)) as Box<dyn Read>, u64::MAX);
    parse_from(path, reader, false, what, sink)
}

fn parse_from<S: Sink>(
    path: &Path,
    reader: Bounded<Box<dyn Read + '_>>,
    check_utf8: bool,
    what: &str,
    sink: &mut S,
) -> Result<Value, FileError> {
    let mut stream = Stream::new(reader, check_utf8, CHUNK);
    let mut trail = Vec::new();
    let parsed = {
        // serde_json reads a reader a byte at a time; a BufReader gives it each byte from
        // its buffer rather than through a call of the stream's `read`.
        let mut de =
            serde_json::Deserializer::from_reader(BufReader::with_capacity(CHUNK, &mut stream));
        Tree {
            path: &mut trail,
            sink,
        }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
    };
    let failed = parsed.is_err();
    if failed {
        stream.drain();
    }
    // A file that grew past the bound is that error, not the read error it raised.
    if stream.over() {
        return Err(too_big(path, MAX_RESULT_BYTES + 1));
    }
    if let Some(e) = stream.io_error.take() {
        return Err(FileError::io(path, e));
    }
    if stream.not_utf8 {
        return Err(FileError::invalid(path, format!("{what}: not UTF-8 text")));
    }
    parsed.map_err(|e| json_error(path, what, &e))
}

/// A JSON error as [`super::parse_json`] words it.
pub(crate) fn json_error(path: &Path, what: &str, e: &serde_json::Error) -> FileError {
    let message = if e.is_eof() {
        format!(
            "{what}, cut off: the file ends inside its JSON (line {})",
            e.line()
        )
    } else {
        format!(
            "{what}, bad JSON at line {} column {}",
            e.line(),
            e.column()
        )
    };
    FileError::invalid(path, message)
}

/// Calls `on_line` with each line of a source (split at `\n`, without it), one line held
/// at a time, and its byte offset; stops when it returns `false`. `path` names the file in
/// errors.
pub(crate) fn for_each_line(
    path: &Path,
    source: Source,
    mut on_line: impl FnMut(u64, &[u8]) -> bool,
) -> Result<(), FileError> {
    let mut reader = BufReader::with_capacity(CHUNK, source.open(path)?);
    let mut line = Vec::new();
    let mut offset = 0u64;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| line_error(path, reader.get_ref(), e))?;
        if n == 0 {
            return Ok(());
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if !on_line(offset, text) {
            return Ok(());
        }
        offset += n as u64;
    }
}

fn line_error<R>(path: &Path, reader: &Bounded<R>, e: io::Error) -> FileError {
    if reader.over {
        too_big(path, MAX_RESULT_BYTES + 1)
    } else {
        FileError::io(path, e)
    }
}

/// A sink for a file that is one list of records: calls its function with each entry
/// and its index as it is read.
pub(crate) struct RootList<F>(pub F);

impl<F: FnMut(usize, Value)> Sink for RootList<F> {
    fn streams(&self, path: &[Seg]) -> bool {
        path.is_empty()
    }
    fn begin(&mut self, _: &[Seg]) {}
    fn item(&mut self, _: &[Seg], index: usize, item: Value) {
        (self.0)(index, item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text read through a stream of `chunk` bytes at a time, as `parse` reads it.
    fn chunked(text: &str, chunk: usize) -> Result<Value, String> {
        let reader = Bounded::new(Box::new(text.as_bytes()) as Box<dyn Read>, u64::MAX);
        let mut stream = Stream::new(reader, true, chunk);
        let mut de = serde_json::Deserializer::from_reader(&mut stream);
        let parsed = Tree {
            path: &mut Vec::new(),
            sink: &mut Whole,
        }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
        parsed.map_err(|e| format!("{} {} {}", e.is_eof(), e.line(), e.column()))
    }

    /// Python's tokens are read as the whole-text reader reads them wherever a chunk
    /// ends, in strings and out, with every error at the same place.
    #[test]
    fn a_stream_reads_what_the_whole_text_reads_wherever_a_chunk_ends() {
        let texts = [
            r#"{"request_rate": Infinity, "std_itl_ms": NaN, "low": -Infinity, "n": 3}"#,
            r#"[NaN,Infinity, -Infinity, -1.5e3, "NaN", "a\"NaN\\", 2]"#,
            r#"{"label": "NaN \" Infinity", "x": NaN}"#,
            "{\"a\": NaNa}",
            "{\"a\": nan}",
            "{\"a\": 1",
            "{\"a\": [1, 2,\n NaN, Infinity",
            "[1-Infinity]",
            "{\"é\": \"ünïcode\", \"b\": -Infinity}",
        ];
        for text in texts {
            let whole = crate::pyjson::from_str(text)
                .map_err(|e| format!("{} {} {}", e.is_eof(), e.line(), e.column()));
            for chunk in 1..=12 {
                assert_eq!(chunked(text, chunk), whole, "{text} in chunks of {chunk}");
            }
        }
    }

    /// A file that grows past the bound while it is read is refused as too big.
    #[test]
    fn a_file_that_grows_past_the_bound_is_too_big() {
        let reader = Bounded::new(Box::new(&b"{\"a\": [1, 2, 3]}"[..]) as Box<dyn Read>, 4);
        let e = parse_from(Path::new("f.json"), reader, true, "T", &mut Whole)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("more than the 1 GiB a result file can be"),
            "{e}"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_are_found_wherever_they_are() {
        for bytes in [
            &b"{\"a\": \"\xff\"}"[..],
            b"{\"a\": 1} \xc3",
            b"{\"a\": 1 \xff",
        ] {
            let e = parse(Path::new("f.json"), Source::Bytes(bytes), "T", &mut Whole)
                .unwrap_err()
                .to_string();
            assert!(e.ends_with("T: not UTF-8 text"), "{e}");
        }
    }
}
