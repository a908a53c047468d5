//! One boot-log line made ready for matching: ANSI colour codes removed, the engine's log
//! prefix (process, level, time stamp, source location) split off, the rest trimmed.
//!
//! Prefix shapes, each optional:
//! - vLLM: `(EngineCore pid=3475) ERROR 09-05 23:33:11 [core.py:1348] ` (the process part,
//!   the level-and-stamp part, or both);
//! - SGLang: `[2026-10-01 00:37:47] ` or `[2026-10-01 00:37:47 TP0] `;
//! - TensorRT-LLM: `[10/01/2026-01:43:03] [TRT-LLM] [I] `, `[TRT-LLM] [W] `,
//!   `[TensorRT-LLM] `.

use std::borrow::Cow;
use std::ops::Range;

/// The levels vLLM writes before its time stamp.
const VLLM_LEVELS: &[&str] = &["DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL "];

/// Where a line's time stamp came from; each formats to `MM-DD HH:MM:SS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stamp {
    /// vLLM `09-05 23:33:11`: already in the shape.
    MonthDay(usize),
    /// SGLang `2026-10-01 00:37:47`: month and day at +5, time at +11.
    IsoDate(usize),
    /// TensorRT-LLM `10/01/2026-01:43:03`: month at +0, day at +3, time at +11.
    SlashDate(usize),
}

#[derive(Debug)]
pub(crate) struct Line<'a> {
    /// The line without ANSI escapes (borrowed when it had none).
    pub clean: Cow<'a, str>,
    /// The part after the prefix, trimmed.
    body: Range<usize>,
    /// vLLM's process name, e.g. `EngineCore`.
    process: Option<Range<usize>>,
    stamp: Option<Stamp>,
}

impl<'a> Line<'a> {
    pub fn new(raw: &'a str) -> Line<'a> {
        let clean = strip_ansi(raw);
        let (body, process, stamp) = split_prefix(&clean);
        Line {
            clean,
            body,
            process,
            stamp,
        }
    }

    /// The same line, owning its text in `buffer` (cleared first), to be kept after the
    /// text it was read from is gone: a log read line by line keeps one line back, and
    /// reuses one allocation for every line.
    pub fn into_owned_in(self, mut buffer: String) -> Line<'static> {
        let clean = match self.clean {
            Cow::Owned(text) => text,
            Cow::Borrowed(text) => {
                buffer.clear();
                buffer.push_str(text);
                buffer
            }
        };
        Line {
            clean: Cow::Owned(clean),
            body: self.body,
            process: self.process,
            stamp: self.stamp,
        }
    }

    /// The text this line owns, for [`Line::into_owned_in`] to reuse.
    pub fn into_buffer(self) -> String {
        match self.clean {
            Cow::Owned(text) => text,
            Cow::Borrowed(_) => String::new(),
        }
    }

    /// The line without its prefix, trimmed.
    pub fn body(&self) -> &str {
        &self.clean[self.body.clone()]
    }

    pub fn process(&self) -> Option<&str> {
        self.process.clone().map(|r| &self.clean[r])
    }

    pub fn has_stamp(&self) -> bool {
        self.stamp.is_some()
    }

    /// The time stamp as `MM-DD HH:MM:SS`.
    pub fn stamp(&self) -> Option<String> {
        let text = self.clean.as_ref();
        let part = |r: Range<usize>| text.get(r).unwrap_or("");
        Some(match self.stamp? {
            Stamp::MonthDay(at) => part(at..at + 14).to_owned(),
            Stamp::IsoDate(at) => format!("{} {}", part(at + 5..at + 10), part(at + 11..at + 19)),
            Stamp::SlashDate(at) => format!(
                "{}-{} {}",
                part(at..at + 2),
                part(at + 3..at + 5),
                part(at + 11..at + 19)
            ),
        })
    }

    /// The time stamp as it reads, with its year where it has one.
    pub fn log_time(&self) -> Option<inferlint_core::model::LogTime> {
        let text = self.clean.as_bytes();
        let number = |at: usize, n: usize| -> Option<u32> {
            let digits = text.get(at..at + n)?;
            digits.iter().try_fold(0u32, |v, d| {
                d.is_ascii_digit().then(|| v * 10 + u32::from(d - b'0'))
            })
        };
        let (year, month, day, time_at) = match self.stamp? {
            Stamp::MonthDay(at) => (None, number(at, 2)?, number(at + 3, 2)?, at + 6),
            Stamp::IsoDate(at) => (
                Some(number(at, 4)?),
                number(at + 5, 2)?,
                number(at + 8, 2)?,
                at + 11,
            ),
            Stamp::SlashDate(at) => (
                Some(number(at + 6, 4)?),
                number(at, 2)?,
                number(at + 3, 2)?,
                at + 11,
            ),
        };
        let (h, m, s) = (
            number(time_at, 2)?,
            number(time_at + 3, 2)?,
            number(time_at + 6, 2)?,
        );
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
            return None;
        }
        Some(inferlint_core::model::LogTime {
            year: year.map(|y| y as i32),
            month: month as u8,
            day: day as u8,
            second_of_day: h * 3600 + m * 60 + s,
        })
    }

    /// The time stamp as seconds since 1970-01-01 00:00:00 read as if the stamp were UTC,
    /// where it carries a year (SGLang, TensorRT-LLM). Engines stamp local time without a
    /// zone, so this lines stamps up with each other, not with another host's clock.
    pub fn naive_seconds(&self) -> Option<i64> {
        let text = self.clean.as_bytes();
        let number = |at: usize, n: usize| -> Option<i64> {
            let digits = text.get(at..at + n)?;
            digits.iter().try_fold(0i64, |v, d| {
                d.is_ascii_digit().then(|| v * 10 + i64::from(d - b'0'))
            })
        };
        let (year, month, day, time_at) = match self.stamp? {
            Stamp::MonthDay(_) => return None,
            Stamp::IsoDate(at) => (
                number(at, 4)?,
                number(at + 5, 2)?,
                number(at + 8, 2)?,
                at + 11,
            ),
            Stamp::SlashDate(at) => (
                number(at + 6, 4)?,
                number(at, 2)?,
                number(at + 3, 2)?,
                at + 11,
            ),
        };
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        let (h, m, s) = (
            number(time_at, 2)?,
            number(time_at + 3, 2)?,
            number(time_at + 6, 2)?,
        );
        Some(
            inferlint_core::model::civil::days_from_civil(year, month, day) * 86_400
                + h * 3600
                + m * 60
                + s,
        )
    }
}

/// Splits a whole log into lines the way Python reads a text file: `\n`, `\r\n` and a
/// bare `\r` (a progress bar redrawing itself) each end a line, and a final line break
/// does not start an empty line. Line numbers in facts count these lines.
pub(crate) fn split(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= bytes.len() {
            return None;
        }
        let line_start = start;
        match memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
            Some(offset) => {
                let end = start + offset;
                start = if bytes[end] == b'\r' && bytes.get(end + 1) == Some(&b'\n') {
                    end + 2
                } else {
                    end + 1
                };
                Some(&text[line_start..end])
            }
            None => {
                start = bytes.len();
                Some(&text[line_start..])
            }
        }
    })
}

/// Removes ANSI escape sequences (`ESC [ ... letter` and two-byte `ESC x`).
pub(crate) fn strip_ansi(line: &str) -> Cow<'_, str> {
    if memchr::memchr(0x1b, line.as_bytes()).is_none() {
        return Cow::Borrowed(line);
    }
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    let mut run_start = 0;
    while i < bytes.len() {
        if bytes[i] != 0x1b {
            i += 1;
            continue;
        }
        out.push_str(&line[run_start..i]);
        i += 1;
        if bytes.get(i) == Some(&b'[') {
            i += 1;
            while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                i += 1;
            }
            i = (i + 1).min(bytes.len());
        } else if i < bytes.len() && bytes[i].is_ascii() {
            i += 1;
        }
        run_start = i;
    }
    out.push_str(&line[run_start..]);
    Cow::Owned(out)
}

fn digits_at(bytes: &[u8], at: usize, n: usize) -> bool {
    bytes
        .get(at..at + n)
        .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
}

/// `DD-DD DD:DD:DD` at `at`.
fn month_day_stamp(bytes: &[u8], at: usize) -> bool {
    digits_at(bytes, at, 2)
        && bytes.get(at + 2) == Some(&b'-')
        && digits_at(bytes, at + 3, 2)
        && bytes.get(at + 5) == Some(&b' ')
        && time_at(bytes, at + 6)
}

/// `DD:DD:DD` at `at`.
fn time_at(bytes: &[u8], at: usize) -> bool {
    digits_at(bytes, at, 2)
        && bytes.get(at + 2) == Some(&b':')
        && digits_at(bytes, at + 3, 2)
        && bytes.get(at + 5) == Some(&b':')
        && digits_at(bytes, at + 6, 2)
}

type Prefix = (Range<usize>, Option<Range<usize>>, Option<Stamp>);

fn split_prefix(line: &str) -> Prefix {
    let bytes = line.as_bytes();
    let mut pos = 0;
    let mut process = None;
    let mut stamp = None;

    // vLLM: `(Name pid=123) `
    if bytes.first() == Some(&b'(') {
        if let Some(close) = memchr::memchr(b')', bytes) {
            let inside = &line[1..close];
            if let Some((name, pid)) = inside.split_once(" pid=") {
                let name_ok = !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                if name_ok && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) {
                    process = Some(1..1 + name.len());
                    pos = close + 1;
                    if bytes.get(pos) == Some(&b' ') {
                        pos += 1;
                    }
                }
            }
        }
    }
    // vLLM: `LEVEL MM-DD HH:MM:SS[.frac] [file:line] `
    if let Some(level) = VLLM_LEVELS.iter().find(|l| line[pos..].starts_with(**l)) {
        let at = pos + level.len();
        if month_day_stamp(bytes, at) {
            let mut end = at + 14;
            if bytes.get(end) == Some(&b'.') {
                end += 1;
                while bytes.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
            }
            let mut rest = end;
            if bytes.get(rest) == Some(&b' ') && bytes.get(rest + 1) == Some(&b'[') {
                if let Some(close) = line[rest..].find("] ").map(|c| rest + c) {
                    rest = close + 2;
                } else if line.ends_with(']') {
                    rest = line.len();
                }
            }
            stamp = Some(Stamp::MonthDay(at));
            pos = rest;
        }
    }
    if pos == 0 && bytes.first() == Some(&b'[') {
        // SGLang: `[YYYY-MM-DD HH:MM:SS...] `
        if digits_at(bytes, 1, 4)
            && bytes.get(5) == Some(&b'-')
            && digits_at(bytes, 6, 2)
            && bytes.get(8) == Some(&b'-')
            && month_day_stamp(bytes, 6)
        {
            if let Some(close) = memchr::memchr(b']', bytes) {
                stamp = Some(Stamp::IsoDate(1));
                pos = close + 1;
            }
        // TensorRT-LLM: `[MM/DD/YYYY-HH:MM:SS] `
        } else if digits_at(bytes, 1, 2)
            && bytes.get(3) == Some(&b'/')
            && digits_at(bytes, 4, 2)
            && bytes.get(6) == Some(&b'/')
            && digits_at(bytes, 7, 4)
            && bytes.get(11) == Some(&b'-')
            && time_at(bytes, 12)
            && bytes.get(20) == Some(&b']')
        {
            stamp = Some(Stamp::SlashDate(1));
            pos = 21;
        }
        pos = skip_spaces(bytes, pos);
        for tag in ["[TRT-LLM]", "[TensorRT-LLM]"] {
            if line[pos..].starts_with(tag) {
                pos = skip_spaces(bytes, pos + tag.len());
                // One-letter level: `[I]`, `[W]`, `[E]`, ...
                if bytes.get(pos) == Some(&b'[')
                    && bytes.get(pos + 1).is_some_and(u8::is_ascii_uppercase)
                    && bytes.get(pos + 2) == Some(&b']')
                {
                    pos = skip_spaces(bytes, pos + 3);
                }
                break;
            }
        }
    }
    let rest = &line[pos..];
    let start = pos + (rest.len() - rest.trim_start().len());
    let end = pos + rest.trim_end().len();
    (start..end.max(start), process, stamp)
}

fn skip_spaces(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos) == Some(&b' ') {
        pos += 1;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_prefix() {
        let line = Line::new(
            "(EngineCore pid=3475) ERROR 09-05 23:33:11 [core.py:1348] RuntimeError: boom",
        );
        assert_eq!(line.body(), "RuntimeError: boom");
        assert_eq!(line.process(), Some("EngineCore"));
        assert_eq!(line.stamp().as_deref(), Some("09-05 23:33:11"));
        let uvicorn = Line::new("(APIServer pid=1) INFO:     Application startup complete.");
        assert_eq!(uvicorn.body(), "INFO:     Application startup complete.");
        assert_eq!(uvicorn.process(), Some("APIServer"));
        assert!(!uvicorn.has_stamp());
        let bare = Line::new("INFO 09-05 23:33:11.123 [core.py:1] hello");
        assert_eq!(bare.body(), "hello");
        assert_eq!(Line::new("(EngineCore pid=3) ").body(), "");
    }

    #[test]
    fn sglang_and_trtllm_prefixes() {
        let s = Line::new("[2026-10-01 00:37:47 TP0] Load weight end.");
        assert_eq!(s.body(), "Load weight end.");
        assert_eq!(s.stamp().as_deref(), Some("10-01 00:37:47"));
        let t = Line::new("[10/01/2026-01:43:33] [TRT-LLM] [I] [_torch] max_num_requests=32");
        assert_eq!(t.body(), "[_torch] max_num_requests=32");
        assert_eq!(t.stamp().as_deref(), Some("10-01 01:43:33"));
        // 2026-10-01 01:43:33 read as UTC.
        assert_eq!(t.naive_seconds(), Some(1_790_819_013));
        assert_eq!(s.naive_seconds(), Some(1_790_815_067));
        assert_eq!(
            Line::new("INFO 09-05 23:33:11 [a.py:1] x").naive_seconds(),
            None
        );
        assert_eq!(
            Line::new("[TensorRT-LLM] TensorRT LLM version: 1.3.0rc29").body(),
            "TensorRT LLM version: 1.3.0rc29"
        );
        assert_eq!(
            Line::new("[start of libtorchcodec loading traceback]").body(),
            "[start of libtorchcodec loading traceback]"
        );
    }

    #[test]
    fn ansi_codes_are_removed() {
        assert_eq!(strip_ansi("\u{1b}[33;20mrank 0\u{1b}[0m ok"), "rank 0 ok");
        assert_eq!(strip_ansi("cut \u{1b}["), "cut ");
        assert_eq!(strip_ansi("\u{1b}é"), "é");
    }

    #[test]
    fn splitting() {
        let bodies = |text: &str| -> Vec<String> {
            split(text)
                .map(|l| Line::new(l).body().to_owned())
                .collect()
        };
        assert!(bodies("").is_empty());
        assert_eq!(bodies("a\n"), ["a"]);
        assert_eq!(bodies("a\n\n"), ["a", ""]);
        assert_eq!(bodies("a\r\nb"), ["a", "b"]);
        assert_eq!(
            bodies("10%\r20%\rdone\nnext"),
            ["10%", "20%", "done", "next"]
        );
        assert_eq!(bodies("a\r"), ["a"]);
        assert_eq!(bodies("\n"), [""]);
    }
}
