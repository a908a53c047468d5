//! Reading a whole series file (`inferlint.series/1`): streamed in order in constant
//! memory, or folded in stretches on several threads and joined in file order, with the
//! checks that a recording holds together (time goes forward, one header, no reading that
//! cannot be).

use std::io::Read;
use std::path::Path;

use inferlint_core::judging::checks::series::{RefusedReading, SeriesStats, SeriesWindow};
use inferlint_core::model::{SampleFold, SeriesHeader, SeriesSample};

use super::series_line::{parse_series_bytes, SeriesLine, SERIES_SCHEMA};
use crate::input::{open_input, FileError, MAX_SERIES_LINE_BYTES};

/// What reading a whole series found besides its samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesSummary {
    /// The last header line seen (a recorder that never scraped writes it at the end).
    pub header: Option<SeriesHeader>,
    /// Samples read and passed on (refused ones not included).
    pub samples: usize,
    /// Gap and restart records.
    pub markers: usize,
    /// Lines that are not samples: not JSON, not an object, no usable `t_wall`, or
    /// longer than [`MAX_SERIES_LINE_BYTES`] (a cut-off last line lands here).
    pub skipped: usize,
    /// The first line refused, if any: a reading that cannot be, time going back, or a
    /// second header (two recordings in one file). Refused samples are not passed on.
    pub refused: Option<RefusedReading>,
}

/// Streams a series file: calls `on_sample` for each sample in order, holding one line
/// at a time, so a day-long recording reads in constant memory. A sample that cannot be
/// (see [`SeriesSummary::refused`]) is not passed on.
pub fn read_series(
    path: &Path,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<SeriesSummary, FileError> {
    let (file, _) = open_input(path)?;
    let chunk = fold_lines(path, file, false, 0, u64::MAX, on_sample)?;
    finish_summary(path, vec![chunk])
}

/// Streams a series from any reader (standard input for `series -`), read to its end
/// once; `name` names it in errors.
pub fn read_series_from(
    name: &Path,
    reader: impl Read,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<SeriesSummary, FileError> {
    let chunk = fold_lines(name, reader, false, 0, u64::MAX, on_sample)?;
    finish_summary(name, vec![chunk])
}

/// Folds a whole series into [`SeriesStats`] (on up to `threads` threads for a large
/// file), with the first refused line, if any, in the statistics: every check of the
/// recording then answers Can't tell, naming it.
pub fn read_series_stats(
    path: &Path,
    threads: usize,
) -> Result<(SeriesStats, SeriesSummary), FileError> {
    let (mut stats, summary) = fold_series(
        path,
        threads,
        SeriesStats::new,
        |stats, s| stats.push(s),
        SeriesStats::merge,
    )?;
    stats.refused.clone_from(&summary.refused);
    stats.gpu_sampling = summary.header.as_ref().and_then(|h| h.gpu);
    Ok((stats, summary))
}

/// [`read_series_stats`], with `side` folded in the same pass over the file (each stretch
/// into its own copy of it, joined in file order as the statistics are): a caller that
/// needs more of the recording than the checks do reads it once. `None` folds nothing
/// beside the statistics. A file with a refused line is folded again in one pass, the
/// side fold with it. Samples outside `window` (the readings' span) are counted and not
/// folded into the statistics ([`SeriesStats::within`]), nor into the side fold: what a
/// caller draws from the recording is the run's samples the checks read, no more.
pub fn read_series_stats_with<F: SampleFold>(
    path: &Path,
    threads: usize,
    side: Option<F>,
    window: Option<SeriesWindow>,
) -> Result<(SeriesStats, SeriesSummary, Option<F>), FileError> {
    let ((mut stats, side), summary) = fold_series(
        path,
        threads,
        || (SeriesStats::within(window), side.clone()),
        |(stats, side), s| {
            stats.push(s);
            let inside = window.is_none_or(|w| w.place(s) == std::cmp::Ordering::Equal);
            if let (Some(side), true) = (side, inside) {
                side.push(s);
            }
        },
        |(stats, side), (right_stats, right_side)| {
            let side = match (side, right_side) {
                (Some(left), Some(right)) => Some(left.merge(right)),
                _ => None,
            };
            (stats.merge(right_stats), side)
        },
    )?;
    stats.refused.clone_from(&summary.refused);
    stats.gpu_sampling = summary.header.as_ref().and_then(|h| h.gpu);
    Ok((stats, summary, side))
}

/// How far from each end of a series file [`series_ends`] looks for a sample: a line
/// kept is at most [`MAX_SERIES_LINE_BYTES`] (64 KiB), so this holds three whole ones
/// at the least, and a recorder's samples (a few hundred bytes) by the hundred. Twice
/// as much held at the start of a pass that holds a mebibyte per thread is memory a
/// report can see at its peak.
const ENDS_WINDOW: u64 = 256 << 10;

/// The first and the last sample of a series file, read from its head and its tail
/// without reading what lies between: the first sample line from the start, the last
/// from the end (a cut-off last line counts, as the reader counts it), each one the
/// reader would pass on unless time went back at it. `None` when either end shows no
/// such sample within 256 KiB. A caller that must know the recording's span before the
/// pass checks these against what the pass counted.
pub fn series_ends(path: &Path) -> Result<Option<(SeriesSample, SeriesSample)>, FileError> {
    use std::io::{Seek, SeekFrom};
    let io = |e| FileError::io(path, e);
    let (mut file, len) = open_input(path)?;
    let window = len.min(ENDS_WINDOW);
    let mut head = Vec::with_capacity(window as usize);
    (&mut file)
        .take(window)
        .read_to_end(&mut head)
        .map_err(io)?;
    // In the head, every line but the last is whole (the last is when the window holds
    // the whole file).
    let head_lines = head.split(|b| *b == b'\n');
    let whole = if window == len {
        head_lines.count()
    } else {
        head_lines.count() - 1
    };
    let Some(first) = head.split(|b| *b == b'\n').take(whole).find_map(sample_of) else {
        return Ok(None);
    };
    let start = len - window;
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut tail = Vec::with_capacity(window as usize);
    file.take(window).read_to_end(&mut tail).map_err(io)?;
    // In the tail, the first line is whole only when the window starts the file or a
    // line.
    let starts_a_line = start == 0 || { file_byte(path, start - 1)? == b'\n' };
    let mut lines: Vec<&[u8]> = tail.split(|b| *b == b'\n').collect();
    if !starts_a_line {
        lines.remove(0);
    }
    let Some(last) = lines.into_iter().rev().find_map(sample_of) else {
        return Ok(None);
    };
    Ok(Some((first, last)))
}

/// One byte of a file.
fn file_byte(path: &Path, at: u64) -> Result<u8, FileError> {
    use std::io::{Seek, SeekFrom};
    let io = |e| FileError::io(path, e);
    let (mut file, _) = open_input(path)?;
    file.seek(SeekFrom::Start(at)).map_err(io)?;
    let mut byte = [0u8; 1];
    file.read_exact(&mut byte).map_err(io)?;
    Ok(byte[0])
}

/// The sample a line holds, when the reader would pass it on (bar time going back): a
/// line it keeps, not blank, a sample, a reading that can be.
fn sample_of(line: &[u8]) -> Option<SeriesSample> {
    if line.len() > MAX_SERIES_LINE_BYTES || line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match parse_series_bytes(line) {
        SeriesLine::Sample(s) if s.impossible_reading().is_none() => Some(s),
        _ => None,
    }
}

/// [`read_series_stats`] for a reader, read once in order.
pub fn read_series_stats_from(
    name: &Path,
    reader: impl Read,
    window: Option<SeriesWindow>,
) -> Result<(SeriesStats, SeriesSummary), FileError> {
    let mut stats = SeriesStats::within(window);
    let summary = read_series_from(name, reader, |s| stats.push(s))?;
    stats.refused.clone_from(&summary.refused);
    stats.gpu_sampling = summary.header.as_ref().and_then(|h| h.gpu);
    Ok((stats, summary))
}

/// A sample's clocks and line, to check that time goes forward.
#[derive(Debug, Clone, Copy)]
struct Stamp {
    line: usize,
    t_wall: f64,
    t_mono_ns: Option<i64>,
}

impl Stamp {
    fn of(line: usize, s: &SeriesSample) -> Stamp {
        Stamp {
            line,
            t_wall: s.t_wall,
            t_mono_ns: s.t_mono_ns,
        }
    }

    /// Why `self` cannot follow `earlier` in one recording: its monotonic clock does
    /// not move forward (when both have one; the wall clock may step), else its wall
    /// clock goes back.
    fn goes_back_from(&self, earlier: &Stamp) -> Option<String> {
        let (what, back) = match (earlier.t_mono_ns, self.t_mono_ns) {
            (Some(a), Some(b)) => ("t_mono_ns", (b <= a).then(|| format!("{a} -> {b}"))),
            _ => (
                "t_wall",
                (self.t_wall < earlier.t_wall)
                    .then(|| format!("{} -> {}", earlier.t_wall, self.t_wall)),
            ),
        };
        back.map(|change| {
            format!(
                "{what} does not move forward from line {} ({change}): two recordings in one file, or lines out of order",
                earlier.line
            )
        })
    }
}

/// What one stretch of a series file held. Line numbers are the stretch's own, from 1.
#[derive(Debug, Default)]
struct ChunkSummary {
    header: Option<SeriesHeader>,
    /// The lines of the first two headers.
    header_lines: Vec<usize>,
    samples: usize,
    markers: usize,
    skipped: usize,
    lines: usize,
    /// The first refused line and why, and how many were.
    refused: Option<(usize, String)>,
    refused_count: usize,
    first_sample: Option<Stamp>,
    last_sample: Option<Stamp>,
}

impl ChunkSummary {
    fn refuse(&mut self, line: usize, why: String) {
        self.refused_count += 1;
        self.refused.get_or_insert((line, why));
    }

    /// Folds one line into the summary, passing a sample on when it can follow the ones
    /// before it. `None` is a line too long to hold.
    fn fold_line(&mut self, line: Option<&[u8]>, on_sample: &mut impl FnMut(&SeriesSample)) {
        self.lines += 1;
        let line_number = self.lines;
        let Some(line) = line.filter(|l| l.len() <= MAX_SERIES_LINE_BYTES) else {
            self.skipped += 1;
            return;
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match parse_series_bytes(line) {
            SeriesLine::Header(h) => {
                self.header = Some(h);
                if self.header_lines.len() < 2 {
                    self.header_lines.push(line_number);
                }
            }
            SeriesLine::Sample(s) => {
                if let Some(why) = s.impossible_reading() {
                    self.refuse(line_number, why);
                    return;
                }
                let stamp = Stamp::of(line_number, &s);
                if let Some(why) = self.last_sample.and_then(|l| stamp.goes_back_from(&l)) {
                    self.refuse(line_number, why);
                    return;
                }
                self.first_sample.get_or_insert(stamp);
                self.last_sample = Some(stamp);
                self.samples += 1;
                on_sample(&s);
            }
            SeriesLine::Marker => self.markers += 1,
            SeriesLine::Skipped => self.skipped += 1,
        }
    }
}

/// Folds a series file into an accumulator on up to `threads` threads: the file is cut
/// into stretches at line boundaries, each folded by `push` into its own `init()`, and the
/// results are joined in file order by `merge`. Each thread streams its stretch through
/// a fixed buffer, so memory stays flat whatever the file's size.
pub fn fold_series<A: Send>(
    path: &Path,
    threads: usize,
    init: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &SeriesSample) + Sync,
    merge: impl Fn(A, A) -> A,
) -> Result<(A, SeriesSummary), FileError> {
    let (_, len) = open_input(path)?;
    // Small files are not worth a thread.
    let stretches = if len < (4 << 20) {
        1
    } else {
        threads.clamp(1, 16)
    };
    fold_series_of_len(path, len, stretches, init, push, merge)
}

/// [`fold_series`] with the number of stretches given (one thread each), whatever the
/// file's size.
pub fn fold_series_in<A: Send>(
    path: &Path,
    stretches: usize,
    init: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &SeriesSample) + Sync,
    merge: impl Fn(A, A) -> A,
) -> Result<(A, SeriesSummary), FileError> {
    let (_, len) = open_input(path)?;
    fold_series_of_len(path, len, stretches, init, push, merge)
}

/// [`fold_series_in`] for a file already known to be `len` bytes long, so a caller that
/// read the length to choose `stretches` does not read it again.
fn fold_series_of_len<A: Send>(
    path: &Path,
    len: u64,
    stretches: usize,
    init: impl Fn() -> A + Sync,
    push: impl Fn(&mut A, &SeriesSample) + Sync,
    merge: impl Fn(A, A) -> A,
) -> Result<(A, SeriesSummary), FileError> {
    let chunks = stretches.max(1) as u64;
    let bounds: Vec<(u64, u64)> = (0..chunks)
        .map(|i| (len * i / chunks, len * (i + 1) / chunks))
        .collect();
    let results: Vec<Result<(A, ChunkSummary), FileError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = bounds
            .iter()
            .map(|&(start, end)| {
                let (init, push) = (&init, &push);
                scope.spawn(move || {
                    let mut acc = init();
                    let summary = fold_stretch(path, start, end, |s| push(&mut acc, s))?;
                    Ok((acc, summary))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(FileError::invalid(path, "a reader thread failed")))
            })
            .collect()
    });
    let mut total: Option<A> = None;
    let mut chunks = Vec::with_capacity(results.len());
    for result in results {
        let (acc, chunk) = result?;
        total = Some(match total {
            None => acc,
            Some(left) => merge(left, acc),
        });
        chunks.push(chunk);
    }
    let total = total.unwrap_or_else(&init);
    let summary = finish_summary(path, chunks)?;
    if summary.refused.is_some() && stretches > 1 {
        // Which samples one pass keeps after a refused line depends on every line before
        // it (the last sample kept), and a stretch knows only its own: a first sample
        // that went back in time from the stretch before was passed on, and a refusal's
        // words name the stretch's line numbers. A file with a refused line is rare; it
        // is read again, in one pass.
        return fold_series_of_len(path, len, 1, init, push, merge);
    }
    Ok((total, summary))
}

/// Joins the stretches' summaries in file order: their counts, their line numbers made
/// the file's, and the checks that cross a boundary (time going forward, one header).
fn finish_summary(path: &Path, chunks: Vec<ChunkSummary>) -> Result<SeriesSummary, FileError> {
    let mut summary = SeriesSummary::default();
    let mut lines = 0;
    let mut refused: Option<(usize, String)> = None;
    let mut refused_count = 0;
    let mut header_lines: Vec<usize> = Vec::new();
    let mut last: Option<Stamp> = None;
    for chunk in chunks {
        let offset = lines;
        if chunk.header.is_some() {
            summary.header = chunk.header;
        }
        header_lines.extend(chunk.header_lines.iter().map(|l| l + offset));
        summary.samples += chunk.samples;
        summary.markers += chunk.markers;
        summary.skipped += chunk.skipped;
        if let (Some(earlier), Some(first)) = (last, chunk.first_sample) {
            let earlier = Stamp {
                line: earlier.line,
                ..earlier
            };
            let first = Stamp {
                line: first.line + offset,
                ..first
            };
            if let Some(why) = first.goes_back_from(&earlier) {
                refused_count += 1;
                if refused.as_ref().is_none_or(|(line, _)| first.line < *line) {
                    refused = Some((first.line, why));
                }
            }
        }
        if let Some((line, why)) = chunk.refused {
            refused_count += chunk.refused_count;
            if refused.as_ref().is_none_or(|(l, _)| line + offset < *l) {
                refused = Some((line + offset, why));
            }
        }
        if let Some(l) = chunk.last_sample {
            last = Some(Stamp {
                line: l.line + offset,
                ..l
            });
        }
        lines += chunk.lines;
    }
    if let Some(&second) = header_lines.get(1) {
        refused_count += header_lines.len() - 1;
        if refused.as_ref().is_none_or(|(line, _)| second < *line) {
            refused = Some((
                second,
                format!(
                    "a second header line (the first is line {}): two recordings in one file",
                    header_lines[0]
                ),
            ));
        }
    }
    summary.refused = refused.map(|(line, what)| RefusedReading {
        line,
        what,
        count: refused_count,
    });
    check_series_summary(path, &summary, lines)?;
    Ok(summary)
}

/// Folds the lines that start in `[start, end)` of a file.
fn fold_stretch(
    path: &Path,
    start: u64,
    end: u64,
    on_sample: impl FnMut(&SeriesSample),
) -> Result<ChunkSummary, FileError> {
    use std::io::{Seek, SeekFrom};
    let io = |e| FileError::io(path, e);
    let (mut file, _) = open_input(path)?;
    // A stretch that starts inside a line leaves that line to the stretch before it.
    let mut skipping = false;
    if start > 0 {
        file.seek(SeekFrom::Start(start - 1)).map_err(io)?;
        let mut byte = [0u8; 1];
        file.read_exact(&mut byte).map_err(io)?;
        skipping = byte[0] != b'\n';
    }
    fold_lines(path, file, skipping, start, end, on_sample)
}

/// Reads lines from `reader` (positioned at byte `start` of its file) until one starts at
/// or after `end`, and folds each. `skipping` drops the partial line it starts in. A line
/// longer than [`MAX_SERIES_LINE_BYTES`] is counted as skipped without being held.
fn fold_lines(
    path: &Path,
    mut reader: impl Read,
    mut skipping: bool,
    start: u64,
    end: u64,
    mut on_sample: impl FnMut(&SeriesSample),
) -> Result<ChunkSummary, FileError> {
    let io = |e| FileError::io(path, e);
    let mut summary = ChunkSummary::default();
    let mut handle =
        |line: Option<&[u8]>, summary: &mut ChunkSummary| summary.fold_line(line, &mut on_sample);
    let mut buf = vec![0u8; 1 << 20];
    let mut pending: Vec<u8> = Vec::new();
    // The line being read is already longer than any line kept: drop it to its end.
    let mut overlong = false;
    let mut pos = start;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if n == 0 {
            break;
        }
        let data = &buf[..n];
        let mut i = 0;
        if skipping {
            let Some(j) = memchr::memchr(b'\n', data) else {
                pos += n as u64;
                if pos >= end {
                    return Ok(summary);
                }
                continue;
            };
            i = j + 1;
            skipping = false;
            if pos + i as u64 >= end {
                return Ok(summary);
            }
        }
        while let Some(j) = memchr::memchr(b'\n', &data[i..]) {
            let line_end = i + j;
            if overlong {
                handle(None, &mut summary);
                overlong = false;
            } else if pending.is_empty() {
                handle(Some(&data[i..line_end]), &mut summary);
            } else {
                pending.extend_from_slice(&data[i..line_end]);
                handle(Some(&pending), &mut summary);
                pending.clear();
            }
            i = line_end + 1;
            // The next line starts at `pos + i`; it is the next stretch's from `end` on.
            if pos + i as u64 >= end {
                return Ok(summary);
            }
        }
        if !overlong {
            pending.extend_from_slice(&data[i..]);
            if pending.len() > MAX_SERIES_LINE_BYTES {
                overlong = true;
                pending = Vec::new();
            }
        }
        pos += n as u64;
    }
    if overlong {
        handle(None, &mut summary);
    } else if !pending.is_empty() && !skipping {
        // The last line, without a newline: a recorder killed mid-write leaves one.
        handle(Some(&pending), &mut summary);
    }
    Ok(summary)
}

fn check_series_summary(
    path: &Path,
    summary: &SeriesSummary,
    lines: usize,
) -> Result<(), FileError> {
    if lines == 0 {
        return Err(FileError::invalid(path, "empty file"));
    }
    if summary.header.is_none() && summary.samples == 0 {
        return Err(FileError::invalid(
            path,
            format!("not a series: no '{SERIES_SCHEMA}' header and no sample line"),
        ));
    }
    if let Some(h) = &summary.header {
        if let Some(other) = &h.unknown_engine {
            return Err(FileError::invalid(
                path,
                format!(
                    "series header names engine '{other}', which is none of vllm, sglang, trtllm"
                ),
            ));
        }
    }
    Ok(())
}
