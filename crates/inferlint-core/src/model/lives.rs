//! Each request's life, joined across what the load tool and the server recorded of it:
//! the load tool's row (when it meant to send the request, when it sent it, its first
//! token and end as the client saw them) and the server's own record (when the server
//! received it, how long it queued, its prefill and decode, the tokens it generated).
//!
//! How a row and a record are joined:
//! - **by id**, where both carry one: `vllm bench serve` sends its request `i` with
//!   `X-Request-Id: PREFIX{i}` (`--request-id-prefix`, printed in its settings line) and
//!   vLLM names the request `cmpl-PREFIX{i}-0` in its span, so the digits after the
//!   prefix in the server's id give the row;
//! - **by time and length**, where not: each row, in send order, takes the earliest
//!   record not yet taken that the server received within [`JOIN_WINDOW_S`] of the send
//!   (and no earlier than the clocks' slack before it) whose prompt and output lengths
//!   agree with the row's where both sides count them (a count, never a tool's chunks
//!   taken for tokens: any output is a multiple of some chunking, so that would let
//!   another client's requests of the same send times and prompts in).
//!
//! Where the client sent ids and the server's records carry them, the ids alone join:
//! a record without the client's id is then no request of this load (another client's,
//! named by its own ids), whatever its time and lengths.
//!
//! A server record received outside the load's own span (by more than
//! [`OUTSIDE_SLACK_S`]) is another run's and joins nothing: it is counted, and a file of
//! which most records are outside is another run's (see [`Lives::foreign`]).

use crate::model::client::{ClientAccount, ClientRequest, RequestClock};
use crate::model::traces::{ServerRequest, ServerRequests};

/// How long after a row's send the server may stamp its arrival and still be taken for
/// its record when no id joins them: the API server's parsing and tokenizing come first.
pub const JOIN_WINDOW_S: f64 = 2.0;
/// How much earlier than the send the server's stamp may be: the two clocks are read by
/// two programs, and a host's wall and monotonic clocks are paired through a reading.
const CLOCK_SLACK_S: f64 = 0.05;
/// How far outside the load's first send and last end a server record may lie and still
/// be of this run.
pub const OUTSIDE_SLACK_S: f64 = 5.0;

/// The start of the `X-Request-Id` inferlint's own probe gives each request it sends
/// (`inferlint-probe-{start}-{n}`): an engine that names its requests by that header (vLLM:
/// `cmpl-inferlint-probe-...-0`) shows in its records which requests were the probe's,
/// sent by the tool itself before the load, never another run's.
pub const PROBE_REQUEST_ID: &str = "inferlint-probe-";

/// Whether a server record is one of inferlint's own probe requests, by its id.
pub fn is_probe_request(record: &ServerRequest) -> bool {
    record
        .id
        .as_deref()
        .is_some_and(|id| id.contains(PROBE_REQUEST_ID))
}

/// How a row and a record were joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinedBy {
    /// The server's id names the row.
    Id,
    /// Send time and lengths.
    TimeAndLength,
}

/// One request seen from both sides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    /// The row in the load tool's account.
    pub client: usize,
    /// The record in the server's.
    pub server: usize,
    /// How they were joined.
    pub by: JoinedBy,
}

/// The joined requests of a run and what could not be joined.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lives {
    /// Each request seen from both sides, in the load tool's order.
    pub pairs: Vec<Pair>,
    /// The load tool's rows with a send time.
    pub client_rows: usize,
    /// The server's records.
    pub server_records: usize,
    /// Server records received outside the load's span: another run's.
    pub outside: usize,
    /// Server records of inferlint's own probe requests ([`PROBE_REQUEST_ID`]): neither
    /// this load's nor another run's, left out of both.
    pub own_probes: usize,
    /// The offset that puts the load tool's times on the server's wall clock, seconds
    /// (`wall = tool's time + offset`), where known.
    pub to_wall: Option<f64>,
    /// The server's records inside the load's span (or with no arrival stamp) that joined
    /// no row and are not the probe's, by index: another client's where every row joined
    /// ([`Lives::others`]).
    pub unjoined: Vec<usize>,
}

impl Lives {
    /// Pairs joined by id.
    pub fn by_id(&self) -> usize {
        self.pairs.iter().filter(|p| p.by == JoinedBy::Id).count()
    }

    /// Pairs joined by time and length.
    pub fn by_time(&self) -> usize {
        self.pairs.len() - self.by_id()
    }

    /// Why the server's records cannot be this run's, when most of them were received
    /// outside the load's span.
    pub fn foreign(&self, file: &str) -> Option<String> {
        let records = self.server_records - self.own_probes;
        (records > 0 && self.outside * 2 > records).then(|| {
            format!(
                "{} of the {} requests in {file} reached the server outside this load's span: the file is another run's",
                self.outside, records
            )
        })
    }

    /// The server's records of another client: those inside the load's span that joined
    /// no row, when every row of the load joined one (a row left over could be any of
    /// them, so then none is named another's). Empty when the records cannot say.
    pub fn others(&self) -> &[usize] {
        if self.client_rows > 0 && self.pairs.len() == self.client_rows {
            &self.unjoined
        } else {
            &[]
        }
    }

    /// How the join went, in a few words: `30 of 32 requests joined with the server's
    /// records (30 by id)`.
    pub fn summary(&self) -> String {
        let mut words = format!(
            "{} of {} requests joined with the server's records",
            self.pairs.len(),
            self.client_rows
        );
        match (self.by_id(), self.by_time()) {
            (0, _) => words.push_str(" (by send time and length)"),
            (_, 0) => words.push_str(" (by id)"),
            (id, time) => words.push_str(&format!(" ({id} by id, {time} by send time and length)")),
        }
        if self.outside > 0 {
            words.push_str(&format!(
                "; {} of the server's records lie outside the load's span",
                self.outside
            ));
        }
        words
    }
}

/// Joins the load tool's rows with the server's records. `mono_to_wall` puts a
/// monotonic-clock tool's times on the wall clock (`wall = mono + offset`), from a
/// reading or recording that carries both clocks; without it, such a tool's rows join
/// by id only.
pub fn join(account: &ClientAccount, server: &ServerRequests, mono_to_wall: Option<f64>) -> Lives {
    let to_wall = match account.clock {
        Some(RequestClock::Unix) => Some(0.0),
        Some(RequestClock::Monotonic) => mono_to_wall,
        None => None,
    };
    let rows = &account.requests;
    let mut lives = Lives {
        client_rows: rows.iter().filter(|r| r.sent_s.is_some()).count(),
        server_records: server.requests.len(),
        to_wall,
        ..Lives::default()
    };
    let mut taken_server = vec![false; server.requests.len()];
    let mut taken_client = vec![false; rows.len()];
    for (i, record) in server.requests.iter().enumerate() {
        if is_probe_request(record) {
            taken_server[i] = true;
            lives.own_probes += 1;
        }
    }

    // The load's span on the wall clock, to tell another run's records.
    let span = to_wall.and_then(|offset| {
        let first = rows
            .iter()
            .filter_map(|r| r.sent_s.get())
            .reduce(f64::min)?;
        let last = rows
            .iter()
            .filter_map(|r| r.end_at().or(r.sent_s.get()))
            .reduce(f64::max)?;
        Some((
            first + offset - OUTSIDE_SLACK_S,
            last + offset + OUTSIDE_SLACK_S,
        ))
    });
    if let Some((from, to)) = span {
        for (i, record) in server.requests.iter().enumerate() {
            if taken_server[i] {
                continue;
            }
            if record.arrival.is_some_and(|a| a < from || a > to) {
                taken_server[i] = true;
                lives.outside += 1;
            }
        }
    }

    // By id: the digits after the tool's prefix in the server's id name the row, when
    // the account holds one file's rows in the tool's order.
    if let Some(prefix) = account
        .request_id_prefix
        .as_deref()
        .filter(|_| account.parts <= 1)
    {
        for (s, record) in server.requests.iter().enumerate() {
            if taken_server[s] {
                continue;
            }
            let Some(row) = record.id.as_deref().and_then(|id| row_of(id, prefix)) else {
                continue;
            };
            if row < rows.len() && !taken_client[row] && rows[row].sent_s.is_some() {
                taken_server[s] = true;
                taken_client[row] = true;
                lives.pairs.push(Pair {
                    client: row,
                    server: s,
                    by: JoinedBy::Id,
                });
            }
        }
    }

    // By time and length, for what is left, where both are on one clock, unless the
    // server names requests by the client's ids: then a record without one is another
    // client's.
    let named_by_the_clients_ids = account.request_id_prefix.as_deref().is_some_and(|prefix| {
        account.parts <= 1
            && server
                .requests
                .iter()
                .any(|r| r.id.as_deref().is_some_and(|id| id.contains(prefix)))
    });
    if let Some(offset) = to_wall.filter(|_| !named_by_the_clients_ids) {
        let mut waiting: Vec<(f64, usize)> = server
            .requests
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken_server[*i])
            .filter_map(|(i, r)| Some((r.arrival?, i)))
            .collect();
        waiting.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut order: Vec<(f64, usize)> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken_client[*i])
            .filter_map(|(i, r)| Some((r.sent_s.get()? + offset, i)))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut first_open = 0;
        for (sent, row) in order {
            while first_open < waiting.len()
                && (taken_server[waiting[first_open].1]
                    || waiting[first_open].0 < sent - CLOCK_SLACK_S)
            {
                first_open += 1;
            }
            let found = waiting[first_open..]
                .iter()
                .take_while(|(arrival, _)| *arrival <= sent + JOIN_WINDOW_S)
                .find(|(arrival, s)| {
                    !taken_server[*s]
                        && *arrival >= sent - CLOCK_SLACK_S
                        && lengths_agree(&rows[row], &server.requests[*s])
                });
            if let Some(&(_, s)) = found {
                taken_server[s] = true;
                taken_client[row] = true;
                lives.pairs.push(Pair {
                    client: row,
                    server: s,
                    by: JoinedBy::TimeAndLength,
                });
            }
        }
    }
    lives.pairs.sort_by_key(|p| p.client);
    lives.unjoined = (0..server.requests.len())
        .filter(|s| !taken_server[*s])
        .collect();
    lives
}

/// The row a server id names: the digits right after the tool's prefix.
fn row_of(id: &str, prefix: &str) -> Option<usize> {
    let at = id.find(prefix)? + prefix.len();
    let digits: &str = {
        let rest = &id[at..];
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        &rest[..end]
    };
    digits.parse().ok()
}

/// Whether a row's lengths can be the record's: equal where both sides count them (the
/// prompt within a token or 2% for a chat template's framing; the output within 5% or a
/// token), and anything where one does not. A tool that counted its chunks as tokens
/// (the server streaming several tokens a chunk) joins only by id: that a record's
/// output is some multiple of a row's chunks says nothing of whose request it was.
fn lengths_agree(row: &ClientRequest, record: &ServerRequest) -> bool {
    let close = |a: Option<u64>, b: Option<u64>, share: f64, floor: f64| match (a, b) {
        (Some(a), Some(b)) => (a as f64 - b as f64).abs() <= floor.max(share * a.max(b) as f64),
        _ => true,
    };
    let prompt = row.server_prompt_tokens.get().or(row.prompt_tokens.get());
    let output = row.server_output_tokens.get().or(row.output_tokens.get());
    close(prompt, record.prompt_tokens, 0.02, 1.0) && close(output, record.output_tokens, 0.05, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::client::{LoadTool, RequestOutcome};
    use crate::model::traces::RequestSource;

    fn row(sent: f64, prompt: u64, output: u64) -> ClientRequest {
        ClientRequest {
            outcome: Some(RequestOutcome::Completed),
            sent_s: Some(sent).into(),
            latency_s: Some(1.0).into(),
            prompt_tokens: Some(prompt).into(),
            output_tokens: Some(output).into(),
            ..ClientRequest::default()
        }
    }

    fn record(id: Option<&str>, arrival: f64, prompt: u64, output: u64) -> ServerRequest {
        ServerRequest {
            id: id.map(str::to_owned),
            arrival: Some(arrival),
            prompt_tokens: Some(prompt),
            output_tokens: Some(output),
            ..ServerRequest::default()
        }
    }

    fn records(requests: Vec<ServerRequest>) -> ServerRequests {
        ServerRequests {
            requests,
            ..ServerRequests::new(RequestSource::OtlpSpan, "spans.otlp.jsonl")
        }
    }

    /// vLLM names `vllm bench serve`'s request `i` `cmpl-PREFIX{i}-0`: the id joins it to
    /// row `i` whatever the order the spans came in, and whatever the clocks.
    #[test]
    fn ids_join_rows_whatever_the_order() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(RequestClock::Monotonic);
        account.request_id_prefix = Some("bench-5f9676fc-".into());
        account.requests = (0..12).map(|i| row(100.0 + i as f64, 32, 32)).collect();
        let server = records(
            (0..12)
                .rev()
                .map(|i| {
                    record(
                        Some(&format!("cmpl-bench-5f9676fc-{i}-0")),
                        1.7e9 + i as f64,
                        32,
                        32,
                    )
                })
                .collect(),
        );
        let lives = join(&account, &server, None);
        assert_eq!(lives.pairs.len(), 12);
        assert_eq!(lives.by_id(), 12);
        // Row 10 is "...-10-0", not row 1 of "...-1" followed by "0".
        let ten = lives.pairs.iter().find(|p| p.client == 10).unwrap();
        assert_eq!(
            server.requests[ten.server].id.as_deref(),
            Some("cmpl-bench-5f9676fc-10-0")
        );
    }

    /// Without ids, each row takes the first record the server received at or after its
    /// send (within the window) whose lengths agree: two requests sent at once with
    /// different lengths join the right way round.
    #[test]
    fn time_and_length_join_what_ids_do_not() {
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        account.clock = Some(RequestClock::Unix);
        account.requests = vec![
            row(1000.0, 64, 10),
            row(1000.0, 32, 10),
            row(1003.0, 64, 10),
        ];
        let server = records(vec![
            record(None, 1000.004, 32, 10),
            record(None, 1000.006, 64, 10),
            record(None, 1003.010, 64, 10),
        ]);
        let lives = join(&account, &server, None);
        assert_eq!(lives.by_time(), 3);
        let of = |client: usize| {
            lives
                .pairs
                .iter()
                .find(|p| p.client == client)
                .unwrap()
                .server
        };
        assert_eq!((of(0), of(1), of(2)), (1, 0, 2));
    }

    /// Another client's requests in the server's records: sent at the load's own times
    /// with its prompts, four times its output, and ids of their own. Where the client
    /// sent ids, and the server names requests by them, a record without the load's id
    /// joins nothing whatever its time; without ids, four times the tokens a row counted
    /// is not the row's request, even where the row counted its chunks.
    #[test]
    fn another_clients_requests_are_not_joined_by_time() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(RequestClock::Unix);
        account.request_id_prefix = Some("bench-5f9676fc-".into());
        account.requests = (0..8)
            .map(|i| {
                let mut r = row(1000.0 + i as f64, 32, 32);
                r.set_chunks(32);
                r
            })
            .collect();
        let mut theirs: Vec<ServerRequest> = (0..8)
            .map(|i| {
                record(
                    Some(&format!("cmpl-other-{i}-0")),
                    1000.004 + i as f64,
                    32,
                    128,
                )
            })
            .collect();
        theirs.push(record(Some("cmpl-bench-5f9676fc-0-0"), 1000.001, 32, 32));
        let lives = join(&account, &records(theirs.clone()), None);
        assert_eq!((lives.by_id(), lives.by_time()), (1, 0));
        // No ids at all: the lengths alone keep them apart.
        account.request_id_prefix = None;
        theirs.pop();
        let lives = join(&account, &records(theirs), None);
        assert_eq!(lives.pairs.len(), 0);
    }

    /// Records of another run (a day earlier) join nothing and are counted; a file that
    /// is mostly another run's says so.
    #[test]
    fn another_runs_records_are_outside() {
        let mut account = ClientAccount::new(LoadTool::GuideLlm);
        account.clock = Some(RequestClock::Unix);
        account.requests = (0..4)
            .map(|i| row(1_700_086_400.0 + i as f64, 8, 8))
            .collect();
        let server = records(
            (0..4)
                .map(|i| record(None, 1_700_000_000.0 + i as f64, 8, 8))
                .collect(),
        );
        let lives = join(&account, &server, None);
        assert!(lives.pairs.is_empty());
        assert_eq!(lives.outside, 4);
        assert!(lives.foreign("spans.otlp.jsonl").is_some());
    }

    /// A traced xray run: the probe sent 9 requests (one, then 8 at once) 9 s before a
    /// load of 5, and vLLM named each `cmpl-{X-Request-Id}-0`. The probe's are the tool's
    /// own: not another run's, and the load's 5 join.
    #[test]
    fn the_probes_own_requests_are_neither_this_loads_nor_another_runs() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(RequestClock::Unix);
        account.request_id_prefix = Some("bench-9d6d16ec-".into());
        account.requests = (0..5)
            .map(|i| row(1_796_404_305.0 + i as f64, 224, 32))
            .collect();
        let probe = (0..9).map(|i| {
            record(
                Some(&format!("cmpl-{PROBE_REQUEST_ID}1796404296-{i}-0")),
                1_796_404_296.3,
                6,
                16,
            )
        });
        let load = (0..5).map(|i| {
            record(
                Some(&format!("cmpl-bench-9d6d16ec-{i}-0")),
                1_796_404_305.0 + i as f64,
                224,
                32,
            )
        });
        let lives = join(&account, &records(probe.chain(load).collect()), None);
        assert_eq!(lives.own_probes, 9);
        assert_eq!(lives.outside, 0);
        assert_eq!(lives.pairs.len(), 5);
        assert_eq!(lives.foreign("spans.otlp.jsonl"), None);
    }

    /// TensorRT-LLM's `/perf_metrics` records name each request by the executor's own
    /// integer id (not the `X-Request-Id` the bench sent) and count no tokens: they join
    /// by time alone, each row taking the first record the server received after its
    /// send. Requests `bench-a-0` to `bench-a-3` sent 0.25 s apart, received 3 ms after
    /// each send, with executor ids 32 to 35 (ids start at `max_batch_size`): every row
    /// joins its own record, none by id.
    #[test]
    fn trtllm_records_join_by_time_alone() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(RequestClock::Monotonic);
        account.request_id_prefix = Some("bench-a-".into());
        account.requests = (0..4)
            .map(|i| row(100.0 + 0.25 * i as f64, 64, 16))
            .collect();
        let server = ServerRequests {
            requests: (0..4)
                .map(|i| ServerRequest {
                    id: Some(format!("{}", 32 + i)),
                    arrival: Some(1_700_000_100.003 + 0.25 * i as f64),
                    ..ServerRequest::default()
                })
                .collect(),
            ..ServerRequests::new(RequestSource::TrtllmPerfMetrics, "server-requests.jsonl")
        };
        // The recording's first sample pairs the clocks: wall = mono + 1.7e9.
        let lives = join(&account, &server, Some(1_700_000_000.0));
        assert_eq!(lives.by_id(), 0);
        assert_eq!(lives.by_time(), 4);
        assert!(lives.pairs.iter().all(|p| p.client == p.server));
        // Without the pairing nothing joins: the ids name no row.
        assert!(join(&account, &server, None).pairs.is_empty());
    }

    /// A monotonic-clock tool without a pairing of its clock with the wall clock joins by
    /// id only; a record arriving before the send (beyond the slack) or two seconds after
    /// it is not the row's.
    #[test]
    fn time_joins_need_one_clock_and_the_window() {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.clock = Some(RequestClock::Monotonic);
        account.requests = vec![row(50.0, 8, 8)];
        let server = records(vec![record(None, 1_000.02, 8, 8)]);
        assert!(join(&account, &server, None).pairs.is_empty());
        assert_eq!(join(&account, &server, Some(950.0)).pairs.len(), 1);
        let late = records(vec![record(None, 1_002.5, 8, 8)]);
        assert!(join(&account, &late, Some(950.0)).pairs.is_empty());
        let early = records(vec![record(None, 999.5, 8, 8)]);
        assert!(join(&account, &early, Some(950.0)).pairs.is_empty());
    }
}
