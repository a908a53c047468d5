//! llm-d's Benchmark Report (0.2, 0.2.1), as JSON or YAML: the shared format of the
//! llm-d benchmark harness (`llmd-benchmark-report` 0.2.1, which converts every tool's
//! results into it) and of inference-perf itself, which writes one partial report per
//! load stage (`inference-perf.partial.stage_N.yaml`: `version`, `run`, `results`).
//!
//! A report counts its requests in `results.request_performance.aggregate.requests`
//! (`total` sent, `failures`, `incomplete`), describes their lengths as statistics
//! (`input_length`, `output_length`: the tool's counts over the requests that
//! succeeded), and gives `throughput` and `latency` statistics with their `units`. The
//! workload it names (`scenario.load.standardized`: `rate_qps`, `concurrency`, the
//! lengths asked for) and the stack (`scenario.stack[]`, the engines' model) are
//! optional; a partial has neither. It keeps no request's record ("individual traces
//! from single inference executions are not captured").
//!
//! Reports of one run share an id: `run.eid`, the experiment, is common to every stage's
//! report (inference-perf gives each stage its own `run.uid` and the invocation one
//! `eid`); a report without an `eid` is its own run, by its `uid`. Every report in a
//! folder is read with the one named, and joined as a tool's stages are: counts, tokens
//! and time summed, the latency statistics kept only for one report. Two reports with
//! one `uid` are one report (a partial and the harness's report made from it): read
//! once. Reports of different runs in one folder are refused, naming the run ids.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use inferlint_core::model::client::{ClientAccount, LoadTool};
use serde_json::{Map, Number, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;
use yaml_rust2::Yaml;

use super::stream::Source;
use super::{at, count, num, parse_json, shape, text};
use crate::input::FileError;

const TOOL: &str = "llm-d Benchmark Report";

/// The most bytes of YAML read (a report is kilobytes; YAML is read whole).
const MAX_YAML_BYTES: u64 = 64 * 1024 * 1024;

/// The most nodes a YAML document may make once its aliases are expanded: an alias is a
/// copy of what its anchor names, so a few lines can stand for billions of nodes.
const MAX_YAML_NODES: usize = 2_000_000;

/// Whether a file's first bytes are a Benchmark Report's: JSON with its `run.uid`,
/// `version` and `results`, or YAML whose top level holds `version:` and `run:` with a
/// `uid:` below (or, of the 0.1 line, `version:`, `scenario:` and `metrics:`).
pub(super) fn looks_like(text: &str) -> bool {
    let has = |needle: &str| text.contains(needle);
    if text.starts_with('{') {
        return has("\"version\"") && has("\"run\"") && has("\"uid\"") && has("\"results\"");
    }
    if text.starts_with('[') {
        return false;
    }
    let top = |key: &str| {
        text.lines().any(|l| {
            l.strip_prefix(key)
                .is_some_and(|r| r.trim_start().starts_with(':'))
        })
    };
    let uid = text.lines().any(|l| {
        l.starts_with([' ', '\t'])
            && l.trim_start()
                .strip_prefix("uid")
                .is_some_and(|r| r.trim_start().starts_with(':'))
    });
    // The 0.1 line (`version`, `scenario`, `metrics`) is told too, to be refused by name.
    top("version") && ((top("run") && uid) || (top("scenario") && top("metrics")))
}

/// One report, read.
struct Part {
    path: PathBuf,
    uid: String,
    eid: Option<String>,
    /// Whether it says what the workload was (a harness's whole report, not a partial).
    has_scenario: bool,
    account: ClientAccount,
}

impl Part {
    /// The id its run goes by: its experiment's, else its own.
    fn run_id(&self) -> (&'static str, &str) {
        match &self.eid {
            Some(e) => ("run.eid", e),
            None => ("run.uid", &self.uid),
        }
    }
}

/// Reads the report at `path` with every report beside it (`others`), joined into one
/// account when all are of one run.
pub(super) fn read(
    path: &Path,
    source: Source,
    others: &[PathBuf],
) -> Result<ClientAccount, FileError> {
    let mut parts = vec![read_one(path, source)?];
    for other in others.iter().filter(|p| p.as_path() != path) {
        parts.push(read_one(other, Source::File(other))?);
    }
    // One uid is one report: a harness's report made from a partial keeps its uid.
    let mut notes = Vec::new();
    parts.sort_by_key(|p| !p.has_scenario);
    let mut kept: Vec<Part> = Vec::new();
    for part in parts {
        match kept.iter().find(|k| k.uid == part.uid) {
            Some(k) => notes.push(format!(
                "{} is the report {} again (run.uid {}): read once",
                crate::input::shown(&part.path),
                crate::input::shown(&k.path),
                part.uid
            )),
            None => kept.push(part),
        }
    }
    let mut ids: Vec<String> = kept
        .iter()
        .map(|p| {
            let (field, id) = p.run_id();
            format!("{field} {id} ({})", crate::input::shown(&p.path))
        })
        .collect();
    let first = kept[0].run_id().1.to_owned();
    if kept.iter().any(|p| p.run_id().1 != first) {
        ids.sort();
        return Err(FileError::invalid(
            path,
            format!(
                "{TOOL}s of different runs in one folder: {}; keep one run's reports in a folder",
                ids.join(", ")
            ),
        ));
    }
    let mut account = if kept.len() == 1 {
        kept.pop()
            .map(|p| p.account)
            .unwrap_or_else(|| ClientAccount::new(LoadTool::LlmdBr))
    } else {
        join(&first, kept)
    };
    account.notes.extend(notes);
    Ok(account)
}

/// Several stages' reports of one run as one account: counts, tokens and durations
/// summed (a figure one report lacks is unknown for the whole), the output rate over the
/// summed time, the latency statistics left out (no statistic of the whole can be made
/// from the stages'), what the workload asked for kept where every stage asked the same.
fn join(run_id: &str, parts: Vec<Part>) -> ClientAccount {
    let n = parts.len();
    let accounts: Vec<ClientAccount> = parts.into_iter().map(|p| p.account).collect();
    let mut joined = ClientAccount::new(LoadTool::LlmdBr);
    let sum = |f: fn(&ClientAccount) -> Option<i64>| {
        accounts
            .iter()
            .map(f)
            .try_fold(0i64, |total, v| total.checked_add(v?))
    };
    joined.sent = sum(|a| a.sent);
    joined.completed = sum(|a| a.completed);
    joined.failed = sum(|a| a.failed);
    joined.incomplete = sum(|a| a.incomplete);
    joined.total_input_tokens = sum(|a| a.total_input_tokens);
    joined.total_output_tokens = sum(|a| a.total_output_tokens);
    joined.duration = accounts
        .iter()
        .map(|a| a.duration)
        .try_fold(0.0, |total, d| Some(total + d?));
    if let (Some(tokens), Some(d)) = (joined.total_output_tokens, joined.duration) {
        joined.output_throughput = (d > 0.0).then(|| tokens as f64 / d);
    }
    let same = |f: fn(&ClientAccount) -> Option<String>| {
        let values: Vec<Option<String>> = accounts.iter().map(f).collect();
        super::guidellm::same_text(&values)
    };
    joined.tool_version = same(|a| a.tool_version.clone());
    joined.identity.model = same(|a| a.identity.model.clone());
    let concurrency: Vec<Option<i64>> = accounts.iter().map(|a| a.max_concurrency).collect();
    joined.max_concurrency = super::guidellm::same(&concurrency);
    let rates: Vec<Option<f64>> = accounts.iter().map(|a| a.request_rate).collect();
    joined.request_rate = super::guidellm::same(&rates);
    joined.identity.start_unix_s = accounts
        .iter()
        .filter_map(|a| a.identity.start_unix_s)
        .reduce(f64::min);
    joined.identity.end_unix_s = accounts
        .iter()
        .filter_map(|a| a.identity.end_unix_s)
        .reduce(f64::max);
    joined.parts = n;
    joined.notes.push(format!(
        "{n} reports of run {run_id} (its stages) joined into one account; their latency statistics are left out"
    ));
    for a in accounts {
        joined.notes.extend(a.notes);
    }
    joined
}

/// The report's tree, from JSON or YAML.
fn tree(path: &Path, source: Source) -> Result<Value, FileError> {
    let head = super::head(path, source)?;
    let text = String::from_utf8_lossy(&head);
    if text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .starts_with('{')
    {
        return parse_json(path, source, TOOL);
    }
    let mut bytes = Vec::new();
    source
        .open(path)?
        .take(MAX_YAML_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(path, e))?;
    if bytes.len() as u64 > MAX_YAML_BYTES {
        return Err(FileError::invalid(
            path,
            format!("{TOOL} in YAML of more than 64 MiB: not read"),
        ));
    }
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| FileError::invalid(path, format!("{TOOL} in YAML that is not UTF-8")))?;
    yaml_value(text).map_err(|why| FileError::invalid(path, format!("{TOOL}: {why}")))
}

fn read_one(path: &Path, source: Source) -> Result<Part, FileError> {
    let root = tree(path, source)?;
    let version = match root.get("version") {
        Some(Value::String(v)) => Some(v.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let label = super::label(LoadTool::LlmdBr, version.as_deref());
    let Some(version) = version else {
        return Err(shape(path, &label, "no 'version'"));
    };
    if version != "0.2" && !version.starts_with("0.2.") {
        return Err(shape(
            path,
            &label,
            format!("version {version} (this reader reads 0.2 and 0.2.1)"),
        ));
    }
    let Some(uid) = text(at(&root, &["run", "uid"])) else {
        return Err(shape(path, &label, "no 'run.uid'"));
    };
    let aggregate = at(&root, &["results", "request_performance", "aggregate"]);
    let requests = aggregate.and_then(|a| a.get("requests"));
    let Some(total) = count(requests.and_then(|r| r.get("total"))) else {
        return Err(shape(
            path,
            &label,
            "no 'results.request_performance.aggregate.requests.total'",
        ));
    };
    let mut account = ClientAccount::new(LoadTool::LlmdBr);
    account.tool_version = Some(version);
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    account.sent = Some(n(total));
    let failures = count(requests.and_then(|r| r.get("failures")));
    let incomplete = count(requests.and_then(|r| r.get("incomplete")));
    account.failed = failures.map(n);
    account.incomplete = incomplete.map(n);
    // A request sent that neither failed nor was left incomplete came back; a report
    // that does not count its failures does not say how many did.
    account.completed = failures.and_then(|f| {
        total
            .checked_sub(f)?
            .checked_sub(incomplete.unwrap_or(0))
            .map(n)
    });
    // The lengths' mean is over the requests that succeeded: times their count, the
    // total, when that is a whole number of tokens.
    let tokens = |key: &str| {
        let stat = requests?.get(key)?;
        if stat.get("units").and_then(Value::as_str) != Some("count") {
            return None;
        }
        let total = num(stat.get("mean"))? * account.completed? as f64;
        let whole = total.round();
        ((total - whole).abs() <= 1e-6 * whole.max(1.0)).then_some(whole as i64)
    };
    account.total_input_tokens = tokens("input_length");
    account.total_output_tokens = tokens("output_length");
    let time = at(&root, &["run", "time"]);
    let when = |key: &str| {
        text(time.and_then(|t| t.get(key)))
            .and_then(|t| super::dates::iso(&t))
            .and_then(|t| t.unix_s())
    };
    account.identity.start_unix_s = when("start");
    account.identity.end_unix_s = when("end");
    account.duration = text(time.and_then(|t| t.get("duration")))
        .and_then(|d| iso_duration(&d))
        .or_else(|| Some(account.identity.end_unix_s? - account.identity.start_unix_s?))
        .filter(|d| *d >= 0.0);
    let stat = |group: &str, metric: &str, key: &str, units: &[(&str, f64)]| {
        let s = aggregate?.get(group)?.get(metric)?;
        let unit = s.get("units").and_then(Value::as_str)?;
        let scale = units.iter().find(|(u, _)| *u == unit)?.1;
        num(s.get(key)).map(|v| v * scale)
    };
    const MS: &[(&str, f64)] = &[("s", 1000.0), ("ms", 1.0)];
    const MS_PER_TOKEN: &[(&str, f64)] = &[("s/token", 1000.0), ("ms/token", 1.0)];
    account.output_throughput = stat(
        "throughput",
        "output_token_rate",
        "mean",
        &[("tokens/s", 1.0)],
    );
    account.mean_ttft_ms = stat("latency", "time_to_first_token", "mean", MS);
    account.median_ttft_ms = stat("latency", "time_to_first_token", "p50", MS);
    account.p99_ttft_ms = stat("latency", "time_to_first_token", "p99", MS);
    account.mean_tpot_ms = stat("latency", "time_per_output_token", "mean", MS_PER_TOKEN);
    let load = at(&root, &["scenario", "load", "standardized"]);
    if let Some(load) = load {
        // `concurrency: .inf` (YAML's infinity) is no limit: no number.
        account.max_concurrency = num(load.get("concurrency"))
            .filter(|c| *c >= 1.0 && c.fract() == 0.0)
            .map(|c| c as i64);
        account.request_rate = num(load.get("rate_qps")).filter(|r| *r > 0.0);
        // A length asked for is a number only when the distribution is fixed; with a
        // shared prefix, whether the prefix is in it is the tool's matter.
        let fixed = |key: &str| {
            let len = load.get(key)?;
            (len.get("distribution").and_then(Value::as_str) == Some("fixed"))
                .then(|| num(len.get("value")))?
        };
        if load.get("prefix").is_none_or(Value::is_null) {
            account.advertised.input_tokens = fixed("input_seq_len");
        }
        account.advertised.output_tokens = fixed("output_seq_len");
        if let Some(tool) = text(load.get("tool")) {
            let version = text(load.get("tool_version")).filter(|v| !v.is_empty());
            account.notes.push(match version {
                Some(v) => format!("measured by {tool} {v} (scenario.load.standardized)"),
                None => format!("measured by {tool} (scenario.load.standardized)"),
            });
        }
    }
    // The model the engines of the stack served, when they name one.
    let models: Vec<Option<String>> = at(&root, &["scenario", "stack"])
        .and_then(Value::as_array)
        .map(|stack| {
            stack
                .iter()
                .filter(|c| {
                    at(c, &["standardized", "kind"]).and_then(Value::as_str)
                        == Some("inference_engine")
                })
                .map(|c| text(at(c, &["standardized", "model", "name"])))
                .collect()
        })
        .unwrap_or_default();
    if !models.is_empty() {
        account.identity.model =
            super::guidellm::same_text(&models).filter(|m| !m.trim().is_empty());
    }
    Ok(Part {
        path: path.to_owned(),
        uid,
        eid: text(at(&root, &["run", "eid"])).filter(|e| !e.is_empty()),
        has_scenario: root.get("scenario").is_some_and(Value::is_object),
        account,
    })
}

/// An ISO-8601 duration in seconds: `PT49.97S`, `P1DT2H3M4.5S`, `PT4.007S`. Years and
/// months have no fixed length: `None`.
fn iso_duration(text: &str) -> Option<f64> {
    let rest = text.strip_prefix('P')?;
    let (date, time) = rest.split_once('T').unwrap_or((rest, ""));
    let mut total = 0.0;
    let mut any = false;
    for (part, units) in [
        (date, &[('W', 604_800.0), ('D', 86_400.0)][..]),
        (time, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)][..]),
    ] {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' || c == ',' {
                number.push(if c == ',' { '.' } else { c });
                continue;
            }
            let scale = units.iter().find(|(u, _)| *u == c)?.1;
            let value: f64 = number.parse().ok()?;
            total += value * scale;
            any = true;
            number.clear();
        }
        if !number.is_empty() {
            return None;
        }
    }
    (any && total.is_finite()).then_some(total)
}

/// A YAML document as a JSON value: plain scalars resolved as YAML 1.2's core schema
/// does (`.inf`, `.nan` and other numbers JSON cannot hold kept as their text), quoted
/// ones as strings, keys as their text, aliases expanded within [`MAX_YAML_NODES`].
pub(crate) fn yaml_value(text: &str) -> Result<Value, String> {
    let mut builder = Builder::default();
    let mut parser = Parser::new_from_str(text);
    loop {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => break,
            Ok((event, _)) => builder.on(event)?,
            Err(e) => {
                return Err(if e.info().contains("end of stream") || text.is_empty() {
                    format!("the YAML is cut off ({e})")
                } else {
                    format!("bad YAML ({e})")
                })
            }
        }
    }
    match builder.docs.len() {
        0 => Err("an empty YAML document".into()),
        1 => Ok(builder.docs.pop().unwrap_or(Value::Null)),
        n => Err(format!(
            "{n} YAML documents in one file, where a report is one"
        )),
    }
}

enum Frame {
    List(Vec<Value>, usize, usize),
    Map(Map<String, Value>, Option<String>, usize, usize),
}

#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    /// Each anchor's node and how many nodes it holds.
    anchors: HashMap<usize, (Value, usize)>,
    docs: Vec<Value>,
    nodes: usize,
}

impl Builder {
    fn on(&mut self, event: Event) -> Result<(), String> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                self.count(1)?;
                let plain =
                    style == TScalarStyle::Plain && tag.as_ref().is_none_or(|t| t.suffix != "str");
                let value = if plain {
                    scalar(&text)
                } else {
                    Value::String(text)
                };
                self.finish(value, anchor, 1)
            }
            Event::SequenceStart(anchor, _) => {
                self.count(1)?;
                self.stack.push(Frame::List(Vec::new(), anchor, self.nodes));
                Ok(())
            }
            Event::MappingStart(anchor, _) => {
                self.count(1)?;
                self.stack
                    .push(Frame::Map(Map::new(), None, anchor, self.nodes));
                Ok(())
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (value, anchor, from) = match self.stack.pop() {
                    Some(Frame::List(items, anchor, from)) => (Value::Array(items), anchor, from),
                    Some(Frame::Map(map, _, anchor, from)) => (Value::Object(map), anchor, from),
                    None => return Err("bad YAML (a collection ends that never began)".into()),
                };
                let size = self.nodes - from + 1;
                self.finish(value, anchor, size)
            }
            Event::Alias(id) => {
                let (value, size) = self
                    .anchors
                    .get(&id)
                    .cloned()
                    .ok_or("bad YAML (an alias to no anchor)")?;
                self.count(size)?;
                self.finish(value, 0, size)
            }
            _ => Ok(()),
        }
    }

    fn count(&mut self, n: usize) -> Result<(), String> {
        self.nodes = self.nodes.saturating_add(n);
        if self.nodes > MAX_YAML_NODES {
            return Err(format!(
                "its YAML's aliases expand to more than {MAX_YAML_NODES} nodes: not read"
            ));
        }
        Ok(())
    }

    fn finish(&mut self, value: Value, anchor: usize, size: usize) -> Result<(), String> {
        if anchor > 0 {
            self.anchors.insert(anchor, (value.clone(), size));
        }
        match self.stack.last_mut() {
            None => self.docs.push(value),
            Some(Frame::List(items, ..)) => items.push(value),
            Some(Frame::Map(map, key, ..)) => match key.take() {
                Some(k) => {
                    map.insert(k, value);
                }
                None => {
                    *key = Some(match value {
                        Value::String(s) => s,
                        Value::Null => "null".into(),
                        Value::Bool(_) | Value::Number(_) => value.to_string(),
                        _ => return Err("a YAML mapping key that is no scalar".into()),
                    })
                }
            },
        }
        Ok(())
    }
}

/// A plain scalar as YAML 1.2's core schema reads it.
fn scalar(text: &str) -> Value {
    match Yaml::from_str(text) {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Integer(i) => Value::Number(i.into()),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map_or_else(|| Value::String(text.to_owned()), Value::Number),
        _ => Value::String(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_reads_as_python_writes_it() {
        let v = yaml_value(
            "version: '0.2.1'\nrun:\n  uid: a\n  n: 3\n  r: 0.5\n  inf: .inf\n  t: 2025-11-05T18:00:42Z\n  q: \"7\"\n  list:\n  - 1\n  - {a: null}\n",
        )
        .unwrap();
        assert_eq!(v["version"], "0.2.1");
        assert_eq!(v["run"]["n"], 3);
        assert_eq!(v["run"]["r"], 0.5);
        assert_eq!(v["run"]["inf"], ".inf");
        assert_eq!(v["run"]["t"], "2025-11-05T18:00:42Z");
        assert_eq!(v["run"]["q"], "7");
        assert_eq!(v["run"]["list"][1]["a"], Value::Null);
    }

    #[test]
    fn aliases_expand_within_a_bound() {
        let mut laughs = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..9 {
            let prev = (b'a' + i) as char;
            let next = (b'a' + i + 1) as char;
            laughs.push_str(&format!(
                "{next}: &{next} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        let err = yaml_value(&laughs).unwrap_err();
        assert!(err.contains("aliases expand"), "{err}");
        let small = yaml_value("a: &x {b: 1}\nc: *x\n").unwrap();
        assert_eq!(small["c"]["b"], 1);
    }

    #[test]
    fn durations_are_iso_8601() {
        assert_eq!(iso_duration("PT49.5S"), Some(49.5));
        assert_eq!(iso_duration("P1DT1H1M1S"), Some(86_400.0 + 3661.0));
        assert_eq!(iso_duration("P1Y"), None);
        assert_eq!(iso_duration("PT"), None);
        assert_eq!(iso_duration("49.5"), None);
    }

    #[test]
    fn told_apart_by_their_fields() {
        assert!(looks_like("version: 0.2.1\nrun:\n  uid: x\nresults: {}\n"));
        assert!(looks_like(
            r#"{"version": "0.2.1", "run": {"uid": "x"}, "results": {}}"#
        ));
        // inference-perf's own config, beside its reports.
        assert!(!looks_like(
            "load:\n  type: constant\nserver:\n  type: vllm\n"
        ));
        assert!(!looks_like(r#"{"version": "0.2.1", "run": {"uid": "x"}}"#));
    }
}
