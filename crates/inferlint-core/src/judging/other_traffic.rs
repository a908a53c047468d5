//! Someone else's traffic, named once.
//!
//! When the server finished more requests between the readings than the load tool sent
//! (T15's `other_requests`: a shared server, a health checker, a second benchmark), every
//! counter the server keeps holds that traffic too. T15 names the cause; the verdicts
//! that read those counters must not give the same surplus a second cause (T20 calling
//! the other client's longer prompts "a chat template"), nor present the mixture as the
//! load's. Here, after the checks:
//!
//! - T15 describes the other requests: how many, and their lengths, from the server's
//!   own records of each request where the load's rows all joined one (the records left
//!   over inside the load's span are the other client's, [`Lives::others`]), else from
//!   the server's counters less the load tool's own counts;
//! - T20, where the server's lengths came from its counters, is judged on the load's own
//!   counts against what it asked for, the server's side left out and said why (or Can't
//!   tell when nothing of the load's own is left to compare); lengths from each answer's
//!   usage are the load's own and stand;
//! - T1, T10, T16 and T18, which read the server's counters or its recording and have no
//!   per-request account of the load to read instead, keep their verdict and say their
//!   figures include the other traffic, naming T15;
//! - the account ([`crate::story::account`]) takes the load's per-request lengths and finished
//!   count from the result file, not the counters.
//!
//! A verdict that says Can't tell or Does not apply is left as it is.
//!
//! [`Lives::others`]: crate::model::lives::Lives::others

use serde::Serialize;
use serde_json::json;

use crate::judging::checks::counters::counter_summary;
use crate::judging::checks::ledger::{self, per_request};
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::run::model::Run;
use crate::story::fmt;

/// Where the other requests' lengths were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DescribedFrom {
    /// The server's record of each request (its spans), those the load's rows did not
    /// join.
    ServerRecords,
    /// The server's counters less the load tool's own counts.
    Counters,
}

/// The requests the server finished beside the load's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherTraffic {
    /// How many more requests the server finished than the load sent (T15's count).
    pub requests: u64,
    /// How many of the server's records are the other client's, where its records say.
    pub records: Option<usize>,
    /// Their mean prompt tokens per request.
    pub prompt_tokens: Option<f64>,
    /// Their mean output tokens per request.
    pub output_tokens: Option<f64>,
    /// Where the lengths were read.
    pub from: Option<DescribedFrom>,
    /// One of their ids as the server knew it, where it carries one.
    pub example_id: Option<String>,
}

/// The other traffic T15 found, if it found any.
pub fn requests(results: &[CheckResult]) -> Option<u64> {
    results
        .iter()
        .find(|r| r.tripwire == Tripwire::T15 && r.status == Status::Fail)
        .and_then(|r| r.evidence_as::<u64>("other_requests"))
        .filter(|n| *n > 0)
}

/// The other traffic of a checked run, described as far as its files allow.
pub fn of(run: &Run, results: &[CheckResult]) -> Option<OtherTraffic> {
    let requests = requests(results)?;
    Some(from_records(run, requests).unwrap_or_else(|| from_counters(run, requests)))
}

/// From the server's records left over once every row of the load joined one.
fn from_records(run: &Run, requests: u64) -> Option<OtherTraffic> {
    let server = run.server_requests.as_ref()?;
    let lives = run.lives()?;
    let others: Vec<_> = lives
        .others()
        .iter()
        .filter_map(|i| server.requests.get(*i))
        .collect();
    if others.is_empty() {
        return None;
    }
    let mean = |values: Vec<u64>| {
        (!values.is_empty()).then(|| values.iter().sum::<u64>() as f64 / values.len() as f64)
    };
    Some(OtherTraffic {
        requests,
        records: Some(others.len()),
        prompt_tokens: mean(others.iter().filter_map(|r| r.prompt_tokens).collect()),
        output_tokens: mean(others.iter().filter_map(|r| r.output_tokens).collect()),
        from: Some(DescribedFrom::ServerRecords),
        example_id: others.iter().find_map(|r| r.id.clone()),
    })
}

/// From the counters: what the server counted less what the load tool counted, over the
/// other requests; a side the tool did not count, or that leaves less than a token a
/// request (a request has a prompt and a finished one an output; less says the tool's
/// totals hold requests its completed count does not, or the two tokenizers disagree by
/// more than the other traffic), says nothing.
fn from_counters(run: &Run, requests: u64) -> OtherTraffic {
    let summary = match (&run.before, &run.after) {
        (Some(b), Some(a)) => counter_summary(run.engine, b, a),
        _ => None,
    };
    let bench = run.bench.as_ref().map(|(_, b)| b);
    let per_other = |server: Option<f64>, client: Option<i64>| {
        let each = (server? - client? as f64) / requests as f64;
        (each >= 1.0).then_some(each)
    };
    let prompt_tokens = per_other(
        summary.as_ref().and_then(|s| s.prompt_tokens),
        bench.and_then(|b| b.total_input_tokens),
    );
    let output_tokens = per_other(
        summary.as_ref().and_then(|s| s.output_tokens),
        bench.and_then(|b| b.total_output_tokens),
    );
    OtherTraffic {
        requests,
        records: None,
        from: (prompt_tokens.is_some() || output_tokens.is_some())
            .then_some(DescribedFrom::Counters),
        prompt_tokens,
        output_tokens,
        example_id: None,
    }
}

impl OtherTraffic {
    /// `6 requests besides the load's, 160 prompt and 8 output tokens each on average
    /// (the server's records of them, ids like other-client-0)`.
    pub fn words(&self) -> Option<String> {
        let lengths = match (self.prompt_tokens, self.output_tokens) {
            (Some(p), Some(o)) => format!(
                "{} prompt and {} output tokens each on average",
                per_request(p),
                per_request(o)
            ),
            (Some(p), None) => format!("{} prompt tokens each on average", per_request(p)),
            (None, Some(o)) => format!("{} output tokens each on average", per_request(o)),
            (None, None) => return None,
        };
        let (count, from) = match self.from? {
            DescribedFrom::ServerRecords => (
                self.records.unwrap_or(0) as u64,
                match &self.example_id {
                    Some(id) => format!("the server's records of them, ids like {id}"),
                    None => "the server's records of them".to_owned(),
                },
            ),
            DescribedFrom::Counters => (
                self.requests,
                "the server's counters less the load tool's own counts".to_owned(),
            ),
        };
        Some(format!(
            "{count} request{} besides the load's, {lengths} ({from})",
            fmt::plural(count as f64)
        ))
    }
}

/// The verdicts that read the server's counters or its recording and keep their verdict,
/// saying the figures include the other traffic.
const INCLUDING: [Tripwire; 4] = [Tripwire::T1, Tripwire::T10, Tripwire::T16, Tripwire::T18];

/// Names the other traffic once, in T15, and tells every verdict that reads the server's
/// counters (see the module documentation).
pub fn apply(run: &Run, results: &mut [CheckResult]) {
    let Some(other) = of(run, results) else {
        return;
    };
    let n = other.requests;
    let clause = format!(
        "the server's figures include {n} request{} of other traffic (T15)",
        fmt::plural(n as f64)
    );
    for r in results.iter_mut() {
        let judged = matches!(r.status, Status::Pass | Status::Warn | Status::Fail);
        match r.tripwire {
            Tripwire::T15 if r.status == Status::Fail => {
                if let Some(words) = other.words() {
                    r.message.push_str(&format!(": {words}"));
                }
                r.evidence.insert("other_traffic".into(), json!(other));
            }
            Tripwire::T20 if judged && r.evidence_str("server_source") == Some("counters") => {
                *r = lengths_without_the_server(run, n, r);
            }
            t if judged && INCLUDING.contains(&t) => {
                r.message.push_str(&format!("; {clause}"));
                r.evidence
                    .insert("includes_other_requests".into(), json!(n));
            }
            _ => {}
        }
    }
}

/// T20 judged on the load tool's own counts against what the run asked for, the server's
/// counters left out because they hold the other requests too.
fn lengths_without_the_server(run: &Run, n: u64, was: &CheckResult) -> CheckResult {
    let Some((file, account)) = run.bench.as_ref() else {
        return was.clone();
    };
    let other = format!(
        "{n} request{} of other traffic (T15)",
        fmt::plural(n as f64)
    );
    let mut judged = if ledger::lengths_comparable(account, None) {
        let r = ledger::length_mismatch(account, file, None);
        let message = format!(
            "{}; the server's counts are left out: they include {other}",
            r.message
        );
        CheckResult { message, ..r }
    } else {
        CheckResult::new(
            Tripwire::T20,
            Status::Unknown,
            format!(
                "the server's counts include {other}, so they give no length per request of this load, and {} kept no lengths of its own to compare with what was asked",
                account.tool_label()
            ),
        )
        .with("result_file", file.as_str())
    };
    judged
        .evidence
        .insert("includes_other_requests".into(), json!(n));
    judged.evidence.insert(
        "server_left_out".into(),
        json!({"source": "counters", "because": "other traffic"}),
    );
    judged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::model::client::{ClientAccount, LoadTool};
    use crate::run::checking::check_run;
    use crate::testing::{empty_run, sample, snapshot};

    /// The readings of a vLLM server that finished `finished` requests of `prompt` prompt
    /// and `output` output tokens in all between t = 100 s and t = 110 s.
    fn readings(finished: f64, prompt: f64, output: f64) -> Run {
        let at = |t: f64, scale: f64| {
            snapshot(
                Some(1_700_000_000.0 + t),
                vec![
                    sample(
                        VLLM.request_success,
                        &[("finished_reason", "length")],
                        finished * scale,
                    ),
                    sample(VLLM.prompt_tokens, &[], prompt * scale),
                    sample(VLLM.generation_tokens, &[], output * scale),
                    sample(VLLM.preemption_counter.unwrap_or_default(), &[], 0.0),
                ],
            )
        };
        Run {
            before: Some(at(100.0, 0.0)),
            after: Some(at(110.0, 1.0)),
            ..empty_run(&VLLM)
        }
    }

    /// `vllm bench serve`'s account of 32 requests of 32 prompt and 32 output tokens,
    /// asked for as 32 and 32.
    fn load() -> ClientAccount {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.sent = Some(32);
        account.completed = Some(32);
        account.failed = Some(0);
        account.total_input_tokens = Some(32 * 32);
        account.total_output_tokens = Some(32 * 32);
        account.advertised.input_tokens = Some(32.0);
        account.advertised.output_tokens = Some(32.0);
        account.advertised.ignore_eos = Some(true);
        account
    }

    fn get(results: &[CheckResult], t: Tripwire) -> &CheckResult {
        results.iter().find(|r| r.tripwire == t).unwrap()
    }

    /// The load's 32 requests of 32 + 32 and a second client's 6 of 160 + 8 in one
    /// server's counters: 38 finished, 32 * 32 + 6 * 160 = 1,984 prompt and
    /// 32 * 32 + 6 * 8 = 1,072 output tokens. T15 names the 6 and their lengths
    /// ((1,984 - 1,024) / 6 = 160 and (1,072 - 1,024) / 6 = 8); T20 does not blame a chat
    /// template for the counters' 52.2 prompt tokens a request, but compares the load's
    /// own 32 with the 32 asked for, and says why the server is left out; T1 says its
    /// figures hold the other traffic; the account's lengths per request are the load's.
    #[test]
    fn a_second_clients_requests_are_one_story_told_by_t15() {
        let run = Run {
            bench: Some(("bench.json".into(), load())),
            ..readings(38.0, 1984.0, 1072.0)
        };
        let results = check_run(&run);
        let t15 = get(&results, Tripwire::T15);
        assert_eq!(t15.status, Status::Fail, "{}", t15.message);
        assert!(
            t15.message.contains(
                "6 requests besides the load's, 160 prompt and 8 output tokens each on average (the server's counters less the load tool's own counts)"
            ),
            "{}",
            t15.message
        );
        let t20 = get(&results, Tripwire::T20);
        assert_eq!(t20.status, Status::Pass, "{}", t20.message);
        assert!(!t20.message.contains("chat template"), "{}", t20.message);
        assert!(
            t20.message.contains(
                "the server's counts are left out: they include 6 requests of other traffic (T15)"
            ),
            "{}",
            t20.message
        );
        let t1 = get(&results, Tripwire::T1);
        assert!(
            t1.message
                .contains("the server's figures include 6 requests of other traffic (T15)"),
            "{}",
            t1.message
        );
        let account =
            crate::story::account::of(&crate::judging::identity::admitted(&run), &results);
        let prompt = account.load.prompt_tokens.unwrap();
        assert_eq!(
            (prompt.value, prompt.from),
            (32.0, crate::story::account::Source::ResultFile)
        );
        assert_eq!(account.load.finished.unwrap().value, 32.0);
        assert_eq!(account.other_traffic.unwrap().requests, 6);
        // The load against the cache is the load's 32 + 32, not the mixture's
        // (1,984 + 1,072) / 38 = 80.4 tokens a request.
        assert_eq!(
            crate::story::advice::tokens_per_request(&run, true),
            Some((32.0, 64.0))
        );
    }

    /// The same server without the second client: nothing is told, and T20 compares the
    /// server's counts (32 + 32 a request) as before.
    #[test]
    fn a_load_alone_keeps_the_servers_counts() {
        let run = Run {
            bench: Some(("bench.json".into(), load())),
            ..readings(32.0, 1024.0, 1024.0)
        };
        let results = check_run(&run);
        assert_eq!(get(&results, Tripwire::T15).status, Status::Pass);
        let t20 = get(&results, Tripwire::T20);
        assert_eq!(t20.status, Status::Pass);
        assert_eq!(t20.evidence_str("server_source"), Some("counters"));
        assert!(!t20.message.contains("left out"), "{}", t20.message);
        assert!(!get(&results, Tripwire::T1)
            .message
            .contains("other traffic"));
        assert_eq!(
            crate::story::account::of(&crate::judging::identity::admitted(&run), &results)
                .other_traffic,
            None
        );
    }

    /// A result file whose completed count says 30 while its totals hold all 32 of the
    /// server's requests: the 2 "other" requests leave no token between the counters and
    /// the tool's totals, so they are counted but not described (never "0 prompt tokens
    /// each").
    #[test]
    fn others_that_leave_no_tokens_are_counted_not_described() {
        let mut account = load();
        account.completed = Some(30);
        let run = Run {
            bench: Some(("bench.json".into(), account)),
            ..readings(32.0, 1024.0, 1024.0)
        };
        let results = check_run(&run);
        let t15 = get(&results, Tripwire::T15);
        assert_eq!(t15.status, Status::Fail, "{}", t15.message);
        assert!(
            t15.message
                .ends_with("other traffic shared the server during the run"),
            "{}",
            t15.message
        );
        let other = of(&run, &results).unwrap();
        assert_eq!(
            (other.requests, other.prompt_tokens, other.output_tokens),
            (2, None, None)
        );
    }

    /// The other traffic with a tool that named no lengths it asked for (and counted no
    /// prompt tokens): T20 has nothing of the load's own left to compare, and says so,
    /// naming T15, rather than comparing the mixture. T15 describes the others by what
    /// the tool did count: (1,072 - 1,024) / 6 = 8 output tokens each.
    #[test]
    fn without_the_loads_own_lengths_t20_cannot_tell() {
        let mut account = load();
        account.total_input_tokens = None;
        account.advertised = Default::default();
        let run = Run {
            bench: Some(("bench.json".into(), account)),
            ..readings(38.0, 1984.0, 1072.0)
        };
        let results = check_run(&run);
        let t20 = get(&results, Tripwire::T20);
        assert_eq!(t20.status, Status::Unknown, "{}", t20.message);
        assert!(
            t20.message.contains("6 requests of other traffic (T15)"),
            "{}",
            t20.message
        );
        let t15 = get(&results, Tripwire::T15);
        assert!(
            t15.message
                .contains("6 requests besides the load's, 8 output tokens each on average"),
            "{}",
            t15.message
        );
    }
}
