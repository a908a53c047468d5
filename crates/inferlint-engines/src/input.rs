//! The ground floor of every file read: how an input is opened (a regular file only, never
//! blocking), how much of it is read (the bounds on each kind of input), how a log is cut
//! into lines, the error every reader returns, and how a message names a path. It imports
//! no other module of this crate, so every reader can stand on it.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// The path that names standard input where a command reads a stream (`series -`).
pub const STDIN: &str = "-";

/// A path as messages name it: `standard input` for [`STDIN`].
pub fn shown(path: &Path) -> String {
    if path.as_os_str() == STDIN {
        return "standard input".into();
    }
    path.display().to_string()
}

/// A file that could not be used. The message reads after "cannot read": it names the
/// file and what is wrong with it.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The file is not what it should be.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

impl FileError {
    pub(crate) fn invalid(path: &Path, message: impl Into<String>) -> FileError {
        FileError::Invalid {
            path: path.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn io(path: &Path, source: io::Error) -> FileError {
        FileError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The largest snapshot file read: a scrape is tens of kilobytes, and the recorder
/// refuses a body above [`crate::prom::MAX_BODY_BYTES`]; its JSON escaping adds a little.
pub const MAX_SNAPSHOT_BYTES: u64 = 128 << 20;
/// The largest load-tool result file read: a summary is kilobytes; one with every
/// request's timings can reach hundreds of megabytes.
pub const MAX_RESULT_BYTES: u64 = 1 << 30;
/// The longest series line read: a sample is about 250 bytes. A longer line is skipped
/// without being held.
pub const MAX_SERIES_LINE_BYTES: usize = 64 << 10;

/// The longest line of a file of spans read: one export request of an exporter's batch,
/// hundreds of kilobytes for vLLM's 512 spans; the receiver takes a message of at most
/// 4 MiB, which its JSON encoding can make a few times longer. A longer line is skipped
/// without being held.
pub const MAX_SPAN_LINE_BYTES: usize = 64 << 20;

/// `1.5 GiB`, `128 MiB`, `900 bytes`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size {
            let value = bytes as f64 / size as f64;
            return if value.fract() == 0.0 {
                format!("{value:.0} {unit}")
            } else {
                format!("{value:.1} {unit}")
            };
        }
    }
    format!("{bytes} bytes")
}

/// What a path names when it is not a regular file, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Opens an input: a regular file, or a link to one (followed). A pipe, a device, a
/// socket or a folder is refused before anything is read: a pipe without a writer would
/// block every command, and `/dev/zero` never ends. On Unix the file is opened without
/// blocking, so even a pipe put in its place after a check cannot hang the open. Returns
/// the file and its length.
pub fn open_input(path: &Path) -> Result<(File, u64), FileError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits());
    }
    let file = options.open(path).map_err(|e| FileError::io(path, e))?;
    let meta = file.metadata().map_err(|e| FileError::io(path, e))?;
    if !meta.is_file() {
        let kind = kind_of(&meta);
        let hint = if meta.is_dir() {
            ""
        } else {
            "; save what it gives to a file first (series reads standard input as -)"
        };
        return Err(FileError::invalid(
            path,
            format!("{kind}, not a regular file{hint}"),
        ));
    }
    Ok((file, meta.len()))
}

/// Reads a whole input of at most `limit` bytes; `what` names it in the error
/// (`a snapshot file`).
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, FileError> {
    let (file, len) = open_input(path)?;
    let too_big = |size: u64| {
        FileError::invalid(
            path,
            format!(
                "{}, more than the {} {what} can be",
                size_text(size),
                size_text(limit)
            ),
        )
    };
    if len > limit {
        return Err(too_big(len));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // A file still growing is read no further than the bound.
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Calls `on_line` with each line of a file of JSON lines as it is read, without its line
/// break (`\n`, or `\r\n`), a last line without one included. A line longer than `max`
/// bytes is never held: `on_line` gets `None` in its place, once it ends.
pub fn for_each_line_within(
    path: &Path,
    mut reader: impl Read,
    max: usize,
    mut on_line: impl FnMut(Option<&[u8]>),
) -> Result<(), FileError> {
    let mut buf = vec![0u8; 1 << 16];
    // At most `max + 1` bytes of the line being read (room for a `\r` before its `\n`);
    // `overlong` once it passed that, and the rest of it is dropped as it comes.
    let mut line: Vec<u8> = Vec::new();
    let mut overlong = false;
    let take = |line: &mut Vec<u8>, overlong: &mut bool, bytes: &[u8]| {
        if *overlong {
            return;
        }
        if line.len() + bytes.len() > max + 1 {
            *overlong = true;
            *line = Vec::new();
        } else {
            line.extend_from_slice(bytes);
        }
    };
    let mut emit = |line: &mut Vec<u8>, overlong: &mut bool| {
        let text = line.strip_suffix(b"\r").unwrap_or(line);
        if *overlong || text.len() > max {
            on_line(None);
        } else {
            on_line(Some(text));
        }
        line.clear();
        *overlong = false;
    };
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FileError::io(path, e)),
        };
        if n == 0 {
            break;
        }
        let mut data = &buf[..n];
        while let Some(at) = memchr::memchr(b'\n', data) {
            take(&mut line, &mut overlong, &data[..at]);
            emit(&mut line, &mut overlong);
            data = &data[at + 1..];
        }
        take(&mut line, &mut overlong, data);
    }
    if overlong || !line.is_empty() {
        emit(&mut line, &mut overlong);
    }
    Ok(())
}

/// The longest log line read; the rest of a longer one is dropped. Engines' lines are
/// under a few kilobytes; TensorRT-LLM's settings line reaches tens.
pub const MAX_LOG_LINE_BYTES: usize = 1 << 20;

/// Calls `on_line` for each line of a log as it is read, in constant memory: `\n`,
/// `\r\n` and a bare `\r` end a line (as Python reads text), a final line break starts
/// no empty line, bytes that are not UTF-8 are replaced, and a line longer than
/// [`MAX_LOG_LINE_BYTES`] is cut there. `path` names the file in errors.
pub fn for_each_log_line(
    path: &Path,
    mut reader: impl Read,
    mut on_line: impl FnMut(&str),
) -> Result<(), FileError> {
    let mut buf = vec![0u8; 1 << 16];
    let mut line: Vec<u8> = Vec::new();
    // The last line ended with `\r`: a `\n` right after it belongs to that break.
    let mut after_cr = false;
    let mut emit = |line: &mut Vec<u8>| {
        match std::str::from_utf8(line) {
            Ok(text) => on_line(text),
            Err(_) => on_line(&String::from_utf8_lossy(line)),
        }
        line.clear();
    };
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FileError::io(path, e)),
        };
        if n == 0 {
            break;
        }
        let mut data = &buf[..n];
        if after_cr && data.first() == Some(&b'\n') {
            data = &data[1..];
        }
        after_cr = false;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', data) {
            let room = MAX_LOG_LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&data[..at.min(room)]);
            emit(&mut line);
            let mut next = at + 1;
            if data[at] == b'\r' {
                match data.get(at + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => after_cr = true,
                }
            }
            data = &data[next..];
        }
        let room = MAX_LOG_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&data[..data.len().min(room)]);
    }
    if !line.is_empty() {
        emit(&mut line);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], max: usize) -> Vec<Option<String>> {
        let mut out = Vec::new();
        // One byte at a time and all at once read the same lines.
        for chunked in [false, true] {
            let mut got = Vec::new();
            let reader: Box<dyn Read> = if chunked {
                Box::new(OneByte(text))
            } else {
                Box::new(text)
            };
            for_each_line_within(Path::new("f"), reader, max, |l| {
                got.push(l.map(|b| String::from_utf8_lossy(b).into_owned()))
            })
            .unwrap();
            if chunked {
                assert_eq!(got, out);
            } else {
                out = got;
            }
        }
        out
    }

    struct OneByte<'a>(&'a [u8]);

    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.split_first() {
                Some((b, rest)) if !buf.is_empty() => {
                    buf[0] = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn lines_within_the_bound_are_read_and_longer_ones_passed_over() {
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(
            lines(b"abc\nabcd\r\nabcde\n\nab", 4),
            [s("abc"), s("abcd"), None, s(""), s("ab")]
        );
        // A last line over the bound, without a line break.
        assert_eq!(lines(b"a\nabcdef", 4), [s("a"), None]);
        // Exactly the bound, then one over, each with and without `\r`.
        assert_eq!(
            lines(b"abcd\nabcd\r\nabcde\r\n", 4),
            [s("abcd"), s("abcd"), None]
        );
        assert!(lines(b"", 4).is_empty());
    }
}
