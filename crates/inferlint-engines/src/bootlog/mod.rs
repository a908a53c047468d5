//! Boot logs into [`BootFacts`]: what the server printed about how it set itself up, and
//! the failure (if any) the log shows.
//!
//! Each engine has a table of line shapes (`vllm.rs`, `sglang.rs`, `trtllm.rs`): an
//! **anchor** substring says the line is there, and a reader takes the value out. A line
//! whose anchor matched but whose value could not be read is kept in
//! [`BootFacts::unparsed`] and its field stays empty: a release that rewords a line shows
//! up as "recognised, unknown format", never as a wrong number. A fact seen with several
//! different values keeps the last and lists them all in [`BootFacts::conflicts`] (a log
//! holding two boots, for instance), except where an engine prints a dry run first and the
//! table says the last one wins.
//!
//! After the lines are read, `classify.rs` looks for the root cause of a failure.

mod classify;
mod compile;
pub(crate) mod lines;
pub mod pyliteral;
pub(crate) mod scan;
mod sglang;
mod trtllm;
mod vllm;

use std::sync::OnceLock;

use inferlint_core::engine::Engine;
use inferlint_core::model::{
    BootFacts, LogClock, PyValue, ServingCompile, Settings, UnparsedLine, MAX_SERVING_COMPILES,
};
use inferlint_core::story::fmt;
use memchr::memmem::Finder;

use self::lines::Line;

/// Longest line text kept in an unparsed entry or a failure.
const MAX_LINE_CHARS: usize = 300;

/// Reads a boot log. The engine is the one the log's own markers name, else
/// `engine_hint`, else unknown (and the log is read with vLLM's table). Never fails: what
/// could not be read is in `unparsed`.
pub fn parse_boot_log(text: &str, engine_hint: Option<Engine>) -> BootFacts {
    let mut reader = BootLogReader::new(crate::detect::engine_from_log(text).or(engine_hint));
    for line in lines::split(text) {
        reader.push_line(line);
    }
    reader.finish()
}

/// A boot log read one line at a time, so that a log of gigabytes (a TensorRT-LLM INFO
/// log kept until after the run) is read in the memory of a few lines: each line is read
/// when the next one arrives (a reader may look at the line after its own), and the
/// failure classifier keeps only its best candidate so far. [`parse_boot_log`] is this
/// over a whole text; `files::read_boot_log` is this over a file.
pub struct BootLogReader {
    parse: Parse,
    table: Table,
    /// The line before the one pushed last, not read yet.
    held: Option<Line<'static>>,
    /// How many lines were read.
    read: usize,
    /// The text of the last line with a time stamp.
    last_stamped: String,
    clock: ClockScan,
    /// Every process id the lines name.
    pids: std::collections::BTreeSet<u64>,
    shape: LogShape,
    classifier: classify::Classifier,
    /// The engine whose compile lines are looked for after the ready line.
    compile_engine: Engine,
    /// The line the server prints once it serves, as the table the log is read with
    /// writes it.
    ready_line: &'static str,
}

impl std::fmt::Debug for BootLogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BootLogReader")
            .field("engine", &self.parse.facts.engine)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

impl BootLogReader {
    /// A reader of a log of `engine` (the one its markers name, or the one the user
    /// named); `None` reads it with vLLM's table and names no engine.
    pub fn new(engine: Option<Engine>) -> BootLogReader {
        BootLogReader {
            parse: Parse::new(engine),
            table: Table::of(engine.unwrap_or(Engine::DEFAULT)).unwrap_or_else(Table::none),
            held: None,
            read: 0,
            last_stamped: String::new(),
            clock: ClockScan::default(),
            pids: std::collections::BTreeSet::new(),
            shape: LogShape::default(),
            classifier: classify::Classifier::default(),
            compile_engine: engine.unwrap_or(Engine::Vllm),
            ready_line: engine.unwrap_or(Engine::DEFAULT).descriptor().ready_line,
        }
    }

    /// The next line, without its line break.
    pub fn push_line(&mut self, raw: &str) {
        self.shape.push_line(raw);
        let line = Line::new(raw);
        let buffer = match self.held.take() {
            Some(previous) => {
                self.read_line(&previous, Some(&line));
                previous.into_buffer()
            }
            None => String::new(),
        };
        self.held = Some(line.into_owned_in(buffer));
    }

    /// Every fact the log gave, with the failure it shows.
    pub fn finish(self) -> BootFacts {
        self.finish_with_shape().0
    }

    /// [`BootLogReader::finish`], with what the text looked like (see
    /// [`not_a_boot_log_by_shape`]).
    pub fn finish_with_shape(mut self) -> (BootFacts, LogShape) {
        if let Some(last) = self.held.take() {
            self.read_line(&last, None);
        }
        self.parse.facts.line_count = self.read;
        self.parse.facts.log_clock = std::mem::take(&mut self.clock).finish();
        self.parse.facts.pids = std::mem::take(&mut self.pids).into_iter().collect();
        (self.table.finish)(&mut self.parse);
        let ready_index = self.parse.facts.ready_lineno.map(|n| n - 1);
        self.parse.facts.failure = self.classifier.finish(ready_index);
        (self.parse.facts, self.shape)
    }

    fn read_line(&mut self, line: &Line<'_>, next: Option<&Line<'_>>) {
        let index = self.read;
        self.read += 1;
        self.clock.see(line);
        self.pids.extend(scan::pids(&line.clean));
        let parse = &mut self.parse;
        if let Some(process) = line.process() {
            if !parse.facts.processes.iter().any(|p| p == process) {
                parse.facts.processes.push(process.to_owned());
            }
        }
        if line.body().ends_with("INFO:     Shutting down") && parse.facts.shutdown_lineno.is_none()
        {
            parse.facts.shutdown_lineno = Some(index + 1);
        }
        if line.has_stamp() {
            if parse.facts.first_stamp.is_none() {
                parse.facts.first_stamp = line.stamp();
                parse.facts.first_time = line.log_time();
            }
            if let Some(t) = line.log_time() {
                parse.facts.last_time = Some(t);
            }
            // The text only: its stamp is formatted once, if the ready line comes.
            self.last_stamped.clear();
            self.last_stamped.push_str(&line.clean);
        }
        if let Some(on_line) = self.table.on_line {
            on_line(parse, line, index + 1);
        }
        let body = line.body();
        let ready = !body.is_empty()
            && parse.facts.ready_lineno.is_none()
            && body.contains(self.ready_line);
        self.classifier.push(index, line, ready);
        if body.is_empty() {
            return;
        }
        if ready {
            parse.facts.ready_lineno = Some(index + 1);
            let last = Some(&self.last_stamped)
                .filter(|t| !t.is_empty())
                .map(|t| Line::new(t));
            parse.facts.ready_stamp = last.as_ref().and_then(Line::stamp);
            parse.facts.ready_time = last.as_ref().and_then(Line::log_time);
        } else if parse.facts.ready_lineno.is_some()
            && compile::is_compile_line(self.compile_engine, body)
        {
            let facts = &mut parse.facts;
            facts.serving_compiles_total += 1;
            if facts.serving_compiles.len() < MAX_SERVING_COMPILES {
                facts.serving_compiles.push(ServingCompile {
                    lineno: index + 1,
                    logged_at: line.log_time(),
                    text: scan::truncate(body, 200),
                });
            }
        }
        for (rule, finder) in self.table.rules.iter().zip(self.table.finders) {
            if finder.find(body.as_bytes()).is_none() {
                continue;
            }
            let at = LineAt { body, next };
            if (rule.read)(parse, &at).is_err() {
                parse.unparsed(rule.field, index + 1, body);
            }
        }
    }
}

/// Why a text is not a server's boot log, if it is not: in words that follow "X is not a
/// server log: ". A boot log is text that holds at least one line a server writes (an
/// engine's marker, a setting, a stamped line, the ready line, or a failure the
/// classifier names); anything else would be read as a log without a failure and pass
/// T12 on nothing.
pub fn not_a_boot_log(text: &str, facts: &BootFacts) -> Option<&'static str> {
    not_a_boot_log_by_shape(
        &LogShape::of_text(text),
        crate::detect::engine_from_log(text).is_some(),
        facts,
    )
}

/// [`not_a_boot_log`] from what a log read line by line looked like, and whether its
/// head names an engine.
pub fn not_a_boot_log_by_shape(
    shape: &LogShape,
    names_an_engine: bool,
    facts: &BootFacts,
) -> Option<&'static str> {
    if !shape.any_text {
        return Some("it is empty");
    }
    // Text has no NUL byte; invalid UTF-8 was read as U+FFFD, which a log in any
    // language has none of.
    if shape.nul || shape.replaced * 100 > shape.chars {
        return Some("it is a binary file, not text");
    }
    if shape.json_document() {
        return Some("it holds JSON (a snapshot, a recording or a result file?), not log lines");
    }
    let recognised = names_an_engine
        || facts.ready()
        || facts.failure.is_some()
        || !facts.unparsed.is_empty()
        || facts.version.is_some()
        || facts.config_args().is_some()
        || facts.kv_pool_tokens.is_some()
        || !facts.processes.is_empty()
        || facts.first_stamp.is_some();
    (!recognised).then_some("no line in it is one a vLLM, SGLang or TensorRT-LLM server writes")
}

/// The span of a log's dated stamps, and whether dated lines follow the HTTP server's
/// shutdown. Lines of several processes interleave in a merged log, so the span is the
/// minimum and maximum stamp, not the first and the last line's.
#[derive(Debug, Default)]
struct ClockScan {
    earliest: Option<i64>,
    latest: Option<i64>,
    shutting_down: bool,
    stamped_after_shutdown: bool,
}

impl ClockScan {
    fn see(&mut self, line: &Line<'_>) {
        if let Some(t) = line.naive_seconds() {
            self.earliest = Some(self.earliest.map_or(t, |e| e.min(t)));
            self.latest = Some(self.latest.map_or(t, |l| l.max(t)));
            self.stamped_after_shutdown |= self.shutting_down;
        }
        // uvicorn's own line when the HTTP server stops: `INFO:     Shutting down`.
        if line.body().ends_with("INFO:     Shutting down") {
            self.shutting_down = true;
        }
    }

    fn finish(self) -> Option<LogClock> {
        Some(LogClock {
            earliest: self.earliest?,
            latest: self.latest?,
            stamped_after_shutdown: self.stamped_after_shutdown,
        })
    }
}

/// What a text looks like, gathered as it is read: enough to tell a server's log from a
/// file of another kind without holding the text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogShape {
    /// Some character that is not whitespace.
    any_text: bool,
    nul: bool,
    /// U+FFFD characters (bytes that were not UTF-8), and all characters.
    replaced: usize,
    chars: usize,
    /// The first line that is not blank, trimmed; at most [`FIRST_LINE_KEPT`] bytes.
    first_line: Option<String>,
    /// The whole text is one JSON document.
    whole_json: bool,
}

/// How much of a log's first line is kept to tell JSON from log lines.
const FIRST_LINE_KEPT: usize = 1 << 20;

impl LogShape {
    /// The shape of a whole text.
    pub fn of_text(text: &str) -> LogShape {
        let mut shape = LogShape::default();
        for line in text.lines() {
            shape.push_line(line);
        }
        // Exact for a whole text: line breaks counted as they are.
        shape.chars = text.chars().count();
        shape.whole_json = shape.starts_like_json() && crate::pyjson::from_str(text).is_ok();
        shape
    }

    /// The next line, without its line break (counted as one character).
    pub fn push_line(&mut self, line: &str) {
        self.nul |= line.contains('\0');
        self.replaced += line.matches('\u{fffd}').count();
        self.chars += line.chars().count() + 1;
        let trimmed = line.trim();
        if !trimmed.is_empty() {
            self.any_text = true;
            if self.first_line.is_none() {
                let mut end = trimmed.len().min(FIRST_LINE_KEPT);
                while !trimmed.is_char_boundary(end) {
                    end -= 1;
                }
                self.first_line = Some(trimmed[..end].to_owned());
            }
        }
    }

    /// Whether the first line that is not blank opens a JSON object or array: only then
    /// is the whole text worth parsing as JSON.
    pub fn starts_like_json(&self) -> bool {
        self.first_line
            .as_deref()
            .is_some_and(|l| l.starts_with('{') || l.starts_with('['))
    }

    /// Records that the whole text, parsed as it was read again, is one JSON document.
    pub fn set_whole_json(&mut self, whole_json: bool) {
        self.whole_json = whole_json;
    }

    /// A JSON document as Python writes it (`NaN` included): the whole text, or its
    /// first line (JSON lines).
    fn json_document(&self) -> bool {
        self.starts_like_json()
            && (self.whole_json
                || self
                    .first_line
                    .as_deref()
                    .is_some_and(|l| crate::pyjson::from_str(l).is_ok()))
    }
}

/// A recognised line whose value could not be read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unreadable;

/// What a reader gets: the line without its prefix, and the line after it (TensorRT-LLM
/// prints its settings on the line after `LLM Args:`).
pub(crate) struct LineAt<'l, 'a> {
    pub body: &'l str,
    pub next: Option<&'l Line<'a>>,
}

/// One line shape of an engine's table.
pub(crate) struct Rule {
    /// The fact it fills, as named in `unparsed` and `conflicts`.
    pub field: &'static str,
    /// A substring that says the line is this one.
    pub anchor: &'static str,
    /// Reads the value; `Err` records the line as unparsed. A reader may also decide the
    /// line is not its own after all and return `Ok` without reading anything.
    pub read: fn(&mut Parse, &LineAt<'_, '_>) -> Result<(), Unreadable>,
}

/// The line shapes of `engine`'s table, as (the fact each fills, the substring that marks
/// its line), in the table's order; empty for an engine without a table.
pub fn rule_anchors(engine: Engine) -> Vec<(&'static str, &'static str)> {
    Table::of(engine)
        .map(|t| t.rules.iter().map(|r| (r.field, r.anchor)).collect())
        .unwrap_or_default()
}

/// An engine's table: its line shapes, a hook that sees every line, and the facts derived
/// once every line was read.
struct Table {
    rules: &'static [Rule],
    finders: &'static [Finder<'static>],
    on_line: Option<fn(&mut Parse, &Line<'_>, usize)>,
    finish: fn(&mut Parse),
}

impl Table {
    /// The table of `engine`'s log lines; `None` for an engine this crate has no table
    /// for yet (a test holds every engine of [`Engine::ALL`] to having one).
    fn of(engine: Engine) -> Option<Table> {
        static FINDERS: OnceLock<[Vec<Finder<'static>>; 3]> = OnceLock::new();
        let build = |rules: &'static [Rule]| rules.iter().map(|r| Finder::new(r.anchor)).collect();
        let finders = FINDERS.get_or_init(|| {
            [
                build(vllm::RULES),
                build(sglang::RULES),
                build(trtllm::RULES),
            ]
        });
        Some(match engine {
            Engine::Vllm => Table {
                rules: vllm::RULES,
                finders: &finders[0],
                on_line: None,
                finish: vllm::finish,
            },
            Engine::Sglang => Table {
                rules: sglang::RULES,
                finders: &finders[1],
                on_line: Some(sglang::on_line),
                finish: sglang::finish,
            },
            Engine::Trtllm => Table {
                rules: trtllm::RULES,
                finders: &finders[2],
                on_line: Some(trtllm::on_line),
                finish: trtllm::finish,
            },
            _ => return None,
        })
    }

    /// No line shapes at all: the log of an engine without a table gives what every log
    /// does (its clock, its ready line, its compile lines) and no fact read through
    /// another engine's shapes; the checks that need the rest say they cannot tell.
    fn none() -> Table {
        Table {
            rules: &[],
            finders: &[],
            on_line: None,
            finish: |_| {},
        }
    }
}

/// The facts being filled, plus what the engine tables remember between lines.
#[derive(Debug, Default)]
pub(crate) struct Parse {
    pub facts: BootFacts,
    /// vLLM: a `Loading drafter model` line was seen; later backend choices are the
    /// draft model's.
    pub in_drafter: bool,
    /// vLLM: a CUDA graph pool line was seen.
    pub saw_cudagraph_pool: bool,
    /// SGLang: the backend it chose when none was asked for.
    pub default_backend: Option<String>,
    /// TensorRT-LLM: INFO lines are in the log, so pauses would be logged.
    pub info_lines: bool,
    /// SGLang and TensorRT-LLM: answered HTTP requests.
    pub served: u64,
    /// TensorRT-LLM: `request ID n -> pause` lines.
    pub pauses: u64,
}

impl Parse {
    fn new(engine: Option<Engine>) -> Parse {
        Parse {
            facts: BootFacts {
                engine,
                ..BootFacts::default()
            },
            ..Parse::default()
        }
    }

    pub fn unparsed(&mut self, field: &str, lineno: usize, body: &str) {
        self.facts.unparsed.push(UnparsedLine {
            field: field.to_owned(),
            lineno,
            text: scan::truncate(body, MAX_LINE_CHARS),
        });
    }

    /// Sets a fact; a different earlier value is kept in `conflicts`. The last one wins.
    pub fn set<T: FactValue>(
        &mut self,
        field: &'static str,
        slot: fn(&mut BootFacts) -> &mut Option<T>,
        value: T,
    ) {
        let current = slot(&mut self.facts);
        let previous = match current.as_ref() {
            Some(old) if *old != value => Some(old.text()),
            _ => None,
        };
        let new_text = previous.is_some().then(|| value.text());
        *current = Some(value);
        if let (Some(old), Some(new)) = (previous, new_text) {
            let values = self
                .facts
                .conflicts
                .entry(field.to_owned())
                .or_insert_with(|| vec![old]);
            if !values.contains(&new) {
                values.push(new);
            }
        }
    }
}

/// A fact's value as text for `conflicts`, the way Python would print it.
pub(crate) trait FactValue: PartialEq {
    fn text(&self) -> String;
}

impl FactValue for u64 {
    fn text(&self) -> String {
        self.to_string()
    }
}

impl FactValue for f64 {
    fn text(&self) -> String {
        fmt::py_float(*self)
    }
}

impl FactValue for String {
    fn text(&self) -> String {
        self.clone()
    }
}

impl FactValue for bool {
    fn text(&self) -> String {
        if *self { "True" } else { "False" }.to_owned()
    }
}

impl FactValue for (String, String) {
    fn text(&self) -> String {
        format!("{} -> {}", self.0, self.1)
    }
}

impl FactValue for Settings {
    fn text(&self) -> String {
        PyValue::Dict(self.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).canonical()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Engine` may grow (it is `#[non_exhaustive]`): a new engine must come with its own
    /// table of log lines, never be read without one.
    #[test]
    fn every_engine_has_a_table_of_its_lines() {
        for engine in Engine::ALL {
            let table = Table::of(engine);
            assert!(
                table.is_some_and(|t| !t.rules.is_empty() && t.rules.len() == t.finders.len()),
                "{engine}"
            );
        }
    }
}
