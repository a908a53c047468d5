//! T26: the KV-cache event stream a recorder received, whole or not.
//!
//! vLLM and SGLang number each batch they publish (`seq`, from 0 at the engine's start);
//! a hole in the numbers the recorder received is batches lost, unless the engine's
//! replay endpoint sent them again. An engine publishes a block when it stores it for
//! reuse, and it stores only full blocks: a request of T tokens (its prompt and what it
//! generated, the last token never written back) fills floor((T - 1) / block size) of
//! them. So an engine that ran requests that filled blocks and published nothing was not
//! publishing (vLLM stores blocks only with prefix caching on), or its stream never
//! reached the recorder; one whose requests filled no block had nothing to say.
//!
//! TensorRT-LLM serves its events from an endpoint that forgets what it returns
//! (`/kv_cache_events`), each event numbered (`event_id`, from 0 as the cache manager
//! starts, one counter for every kind of event): a recorder drains it, and a jump in the
//! numbers is events it never got (another reader took them, or the engine's buffer
//! dropped them when full). What the numbers count is said in every verdict.

use crate::engine::EngineDescriptor;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::traces::{KvEvents, KvNumbering};
use crate::story::fmt;

/// What T26 reads.
#[derive(Debug, Clone)]
pub struct KvStreamInputs<'a> {
    /// The stream as received.
    pub events: &'a KvEvents,
    /// Requests the server finished between the readings, where they tell.
    pub server_finished: Option<f64>,
    /// The KV cache's block size in tokens, where the run says.
    pub block_size: Option<u64>,
    /// The most tokens (prompt and output) one request of the run held, and what says so.
    pub largest_request: Option<(u64, &'static str)>,
    /// The boot log's setting that turned the prefix cache off, as it printed it
    /// (`enable_prefix_caching False`): a cache that stores no block publishes none.
    pub cache_off: Option<String>,
    /// What the engine must be started with for its drained endpoint to hold events
    /// (from its table), where the stream was drained.
    pub drain_needs: Option<&'static str>,
}

/// T26.
pub fn kv_events(inputs: &KvStreamInputs) -> CheckResult {
    let events = inputs.events;
    let file = &events.file;
    let mut result = CheckResult::new(Tripwire::T26, Status::Pass, String::new())
        .with("batches", events.batches)
        .with("replayed", events.replayed)
        .with("missed", events.missed_batches())
        .with("stored_blocks", events.stored_blocks())
        .with("removed_blocks", events.removed_blocks());
    if let Some((first, last)) = events.seq_range {
        result = result.with("first_seq", first).with("last_seq", last);
    }
    if events.drained {
        result = result.with("drained", true);
    }
    let units = events.numbered_by.units();
    if events.skipped > 0 {
        result.status = Status::Unknown;
        result.message = format!(
            "{} of the stream's records in {file} could not be read: whether batches were lost cannot be told",
            events.skipped
        );
        return result;
    }
    if events.end.is_none() {
        result.status = Status::Unknown;
        result.message = format!(
            "{file} stops without its closing record: the subscriber did not end cleanly, and what came after its last line cannot be told"
        );
        return result;
    }
    let missed = events.missed_batches();
    if missed > 0 {
        result.status = Status::Fail;
        let first = &events.gaps[0];
        result.message = format!(
            "{} of {} {units} were lost and not recovered ({} hole(s), the first seq {} to {}: {})",
            fmt::thousands(missed as i64),
            fmt::thousands((events.numbers_received + missed) as i64),
            events.gaps.len(),
            first.from_seq,
            first.to_seq,
            first.reason
        );
        return result;
    }
    if events.restarts > 0 {
        // A restart is a boundary: the old publisher's count ended with it. Batches it
        // published after the last one received, queued or in flight when it stopped,
        // are numbered by nothing that arrives afterwards (the new count starts again
        // at 0), so no hole shows them and none can be ruled out.
        result.status = Status::Unknown;
        result = result.with("restarts", events.restarts);
        result.message = format!(
            "the engine's KV event publisher started again {} while the subscriber ran (its sequence went back): {} {units} arrived, but what the old publisher sent after its last one received cannot be numbered, so whether any were lost cannot be told",
            match events.restarts {
                1 => "once".to_owned(),
                n => format!("{n} times"),
            },
            fmt::thousands(events.batches as i64),
        );
        return result;
    }
    if events.batches == 0 {
        if events.publisher_connected == Some(false) {
            result.status = Status::Fail;
            result.message = format!(
                "the engine's KV event publisher never connected to {}: it was not told where to publish, or could not reach it",
                events.endpoint.as_deref().unwrap_or("the subscriber")
            );
            return result;
        }
        let filled = match (inputs.largest_request, inputs.block_size) {
            (Some((tokens, from)), Some(block)) if block > 0 => {
                Some((tokens.saturating_sub(1) / block, tokens, block, from))
            }
            _ => None,
        };
        if let Some((0, tokens, block, from)) = filled {
            result.message = format!(
                "no KV event came, and none was due: no request filled a block (at most {tokens} tokens a request, {from}; blocks of {block}), and an engine publishes only the full blocks it stores{}",
                if events.publisher_connected == Some(true) {
                    "; its publisher connected"
                } else {
                    ""
                }
            );
            return result;
        }
        let worked = inputs.server_finished.filter(|f| *f > 0.0);
        let needs = match (events.drained, inputs.drain_needs) {
            (true, Some(needs)) => format!(
                "; the endpoint holds events only when the server is started for it: {needs}"
            ),
            _ => String::new(),
        };
        match worked {
            Some(finished) => {
                result.status = Status::Fail;
                let blocks = filled
                    .map(|(n, tokens, block, _)| {
                        format!(
                            ", requests of up to {tokens} tokens that filled {n} block(s) of {block} each"
                        )
                    })
                    .unwrap_or_default();
                let off = inputs
                    .cache_off
                    .as_deref()
                    .map(|setting| {
                        format!(
                            "; the boot log shows the prefix cache off ({setting}): it stores no block for reuse, so it publishes none"
                        )
                    })
                    .unwrap_or_default();
                result.message = format!(
                    "no KV event arrived {} {} while the server finished {} requests{blocks}{off}{needs}",
                    if events.drained { "from" } else { "at" },
                    events.endpoint.as_deref().unwrap_or("the subscriber"),
                    fmt::g(finished)
                );
            }
            None => {
                result.status = Status::Unknown;
                result.message = format!(
                    "no KV event arrived, and whether the server ran any request meanwhile cannot be told from the readings ({file})"
                );
            }
        }
        return result;
    }
    let replayed = if events.replayed > 0 {
        format!(
            ", {} of them through the engine's replay",
            fmt::thousands(events.replayed as i64)
        )
    } else {
        String::new()
    };
    result.message = match events.seq_range {
        Some((first, last)) if events.numbered_by == KvNumbering::Event => format!(
            "every KV event from id {first} to {last} reached the recorder ({} events in {} answer(s) of {}): {} blocks stored, {} removed",
            fmt::thousands(events.numbers_received as i64),
            fmt::thousands(events.batches as i64),
            events.endpoint.as_deref().unwrap_or("the endpoint"),
            fmt::thousands(events.stored_blocks() as i64),
            fmt::thousands(events.removed_blocks() as i64)
        ),
        Some((first, last)) => format!(
            "every KV event batch from seq {first} to {last} arrived ({}{replayed}): {} blocks stored, {} removed",
            fmt::thousands(events.batches as i64),
            fmt::thousands(events.stored_blocks() as i64),
            fmt::thousands(events.removed_blocks() as i64)
        ),
        None => format!(
            "{} KV event batches arrived{replayed}: {} blocks stored, {} removed",
            fmt::thousands(events.batches as i64),
            fmt::thousands(events.stored_blocks() as i64),
            fmt::thousands(events.removed_blocks() as i64)
        ),
    };
    result
}

/// What to change after T26 failed, for `engine`.
pub fn advice(result: &CheckResult, engine: &EngineDescriptor) -> Vec<String> {
    if result.status != Status::Fail {
        return Vec::new();
    }
    let drained = result.evidence_as::<bool>("drained") == Some(true);
    if let (true, Some(drain)) = (drained, engine.kv_events_drain) {
        if result.evidence_f64("batches") == Some(0.0) {
            return vec![format!(
                "start the server so that {} holds events: {}",
                drain.path, drain.needs
            )];
        }
        return vec![format!(
            "read {} more often, and let nothing else read it (what one reader takes, another loses); raise the buffer it keeps: {}",
            drain.path, drain.needs
        )];
    }
    if result.evidence_f64("batches") == Some(0.0) {
        return vec![
            "start the engine with --kv-events-config (enable_kv_cache_events true, a zmq publisher) and, on vLLM, prefix caching on: it publishes a block only when the block is cached for reuse".to_owned(),
        ];
    }
    vec![
        "give the engine a replay endpoint (replay_endpoint in --kv-events-config) so that a subscriber can fetch what it missed, raise the publisher's hwm, and subscribe before the load starts".to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::traces::{ClockAnchor, KvGap, KvSecond};

    fn stream(batches: u64, gaps: Vec<KvGap>) -> KvEvents {
        KvEvents {
            file: "kv-events.jsonl".into(),
            endpoint: Some("tcp://127.0.0.1:5557".into()),
            anchor: Some(ClockAnchor {
                t_wall: 1.7e9,
                t_mono_ns: 1,
            }),
            end: Some(ClockAnchor {
                t_wall: 1.7e9 + 60.0,
                t_mono_ns: 60_000_000_001,
            }),
            batches,
            numbers_received: batches,
            replayed: 0,
            seq_range: (batches > 0).then(|| (0, batches - 1 + gaps.len() as u64)),
            seconds: vec![KvSecond {
                second: 1_700_000_001,
                stored_blocks: 40,
                stored_tokens: 40 * 16,
                removed_blocks: 3,
                cleared: 0,
                batches,
            }],
            gaps,
            ..KvEvents::default()
        }
    }

    fn check(events: &KvEvents, finished: Option<f64>) -> CheckResult {
        kv_events(&KvStreamInputs {
            events,
            server_finished: finished,
            block_size: None,
            largest_request: None,
            cache_off: None,
            drain_needs: None,
        })
    }

    #[test]
    fn a_whole_stream_passes() {
        let r = check(&stream(12, Vec::new()), Some(32.0));
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert!(r
            .message
            .starts_with("every KV event batch from seq 0 to 11 arrived"));
    }

    /// Batches 4 to 6 never came and the replay did not send them: three lost.
    #[test]
    fn a_hole_the_replay_did_not_fill_fails() {
        let gap = KvGap {
            from_seq: 4,
            to_seq: 6,
            t_wall: None,
            reason: "the replay endpoint did not answer".into(),
        };
        let r = check(&stream(9, vec![gap]), Some(32.0));
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert_eq!(r.evidence_f64("missed"), Some(3.0));
        assert!(
            r.message.starts_with("3 of 12 KV event batches were lost"),
            "{}",
            r.message
        );
    }

    /// Nothing came while the server finished 32 requests: never sent.
    #[test]
    fn silence_while_the_server_worked_fails() {
        let mut events = stream(0, Vec::new());
        events.seconds.clear();
        let r = check(&events, Some(32.0));
        assert_eq!(r.status, Status::Fail);
        assert!(!advice(&r, &crate::engine::VLLM).is_empty());
        assert_eq!(check(&events, None).status, Status::Unknown);
    }

    /// Silence from requests of 64 tokens against blocks of 128: none filled a block, so
    /// none was stored and none published (vLLM 0.32's CPU build, 32 in and 32 out). With
    /// 256-token requests each fills one (255 / 128) and silence fails; a publisher that
    /// never connected to a bound subscriber fails whatever the requests.
    #[test]
    fn silence_is_judged_against_the_blocks_the_requests_filled() {
        let mut events = stream(0, Vec::new());
        events.seconds.clear();
        events.publisher_connected = Some(true);
        let judge = |events: &KvEvents, tokens: u64| {
            kv_events(&KvStreamInputs {
                events,
                server_finished: Some(32.0),
                block_size: Some(128),
                largest_request: Some((tokens, "by the server's spans")),
                cache_off: None,
                drain_needs: None,
            })
        };
        let none_due = judge(&events, 64);
        assert_eq!(none_due.status, Status::Pass, "{}", none_due.message);
        assert!(none_due.message.contains("no request filled a block"));
        assert_eq!(judge(&events, 256).status, Status::Fail);
        events.publisher_connected = Some(false);
        let never = judge(&events, 64);
        assert_eq!(never.status, Status::Fail);
        assert!(
            never.message.contains("never connected"),
            "{}",
            never.message
        );
    }

    /// Seq 0 to 5, then 0 to 5 again: the publisher started again (the reader counts a
    /// restart where the sequence goes back). What the first publisher sent after its
    /// seq 5 and before it stopped is numbered by nothing that came after, so the
    /// stream is not known whole: Can't tell, never "every batch from 0 to 5 arrived".
    #[test]
    fn a_publisher_restart_is_cant_tell() {
        let mut restarted = stream(12, Vec::new());
        restarted.seq_range = Some((0, 5));
        restarted.restarts = 1;
        let r = check(&restarted, Some(32.0));
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(r.message.contains("started again once"), "{}", r.message);
        // A hole the reader found is a loss whatever came after it.
        let gap = KvGap {
            from_seq: 2,
            to_seq: 2,
            t_wall: None,
            reason: "the replay endpoint did not answer".into(),
        };
        let mut holed = stream(11, vec![gap]);
        holed.restarts = 1;
        assert_eq!(check(&holed, Some(32.0)).status, Status::Fail);
    }

    /// A file without its closing record, or with unreadable records: Can't tell.
    #[test]
    fn a_cut_or_damaged_file_is_cant_tell() {
        let mut cut = stream(12, Vec::new());
        cut.end = None;
        assert_eq!(check(&cut, Some(1.0)).status, Status::Unknown);
        let mut damaged = stream(12, Vec::new());
        damaged.skipped = 2;
        assert_eq!(check(&damaged, Some(1.0)).status, Status::Unknown);
    }
}
