//! A boot log as a file is read: in chunks of any size (the first bytes choose them), cut
//! into lines by `for_each_log_line` and fed one at a time to `BootLogReader`. However the
//! reads fall (a `\r\n` split between two, a multi-byte character cut in half), the lines
//! are the whole text's lines and the facts are those `parse_boot_log` reads from the
//! whole text.

#![no_main]

use std::io::Read;
use std::path::Path;

use inferlint_engines::bootlog::{parse_boot_log, BootLogReader};
use inferlint_engines::detect::engine_from_log;
use inferlint_engines::files::for_each_log_line;
use libfuzzer_sys::fuzz_target;

#[path = "common/lines.rs"]
mod lines;

/// A reader that hands out its bytes in chunks of the sizes given, in turn.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
    turn: usize,
}

impl Read for Chunked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = self
            .sizes
            .get(self.turn % self.sizes.len().max(1))
            .map_or(1, |&s| usize::from(s).max(1));
        self.turn += 1;
        let n = size.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&count, rest)) = input.split_first() else {
        return;
    };
    let count = usize::from(count % 8).min(rest.len());
    let (sizes, data) = rest.split_at(count);
    let text = String::from_utf8_lossy(data);

    let mut lines: Vec<String> = Vec::new();
    let reader = Chunked {
        data,
        sizes,
        turn: 0,
    };
    for_each_log_line(Path::new("fuzz.log"), reader, |line| lines.push(line.to_owned()))
        .expect("reading from memory cannot fail");
    let expected: Vec<&str> = lines::lines(&text);
    assert_eq!(lines, expected, "lines");

    let mut streamed = BootLogReader::new(engine_from_log(&text));
    for line in &lines {
        streamed.push_line(line);
    }
    assert_eq!(streamed.finish(), parse_boot_log(&text, None), "facts");
});
