//! The whole-run checks as the registry calls them: each reads what it needs from the
//! [`Run`] and hands it to its check. The registry has already made sure the run has
//! what the check's declaration needs (see [`super::registry`]).

use crate::judging::checks::client_wait::{self, ClientWaitInputs};
use crate::judging::checks::cold_start::{self, ColdStartInputs};
use crate::judging::checks::kv_stream::{self, KvStreamInputs};
use crate::judging::checks::ledger::{self, LedgerInputs};
use crate::judging::checks::series::{self, SeriesStats};
use crate::judging::checks::server_view::{self, ServerViewInputs};
use crate::judging::checks::shortfall::{self, ShortfallInputs};
use crate::judging::checks::{contention, prefix_cache, snapshots};
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::Snapshot;
use crate::run::model::{input, Run, RunOptions};

fn readings(run: &Run) -> (&Snapshot, &Snapshot) {
    match (&run.before, &run.after) {
        (Some(before), Some(after)) => (before, after),
        _ => unreachable!("declared: both readings"),
    }
}

fn series_of(run: &Run) -> &SeriesStats {
    run.series.as_ref().expect("declared: a recording")
}

/// A recording holding a reading that cannot be: no check of it may pass.
fn refused(run: &Run, tripwire: Tripwire) -> Option<CheckResult> {
    let refused = series_of(run).refused.as_ref()?;
    Some(
        CheckResult::new(tripwire, Status::Unknown, refused.message())
            .with("refused_line", refused.line)
            .with("refused_lines", refused.count),
    )
}

/// T15: the load tool's count against the server's.
pub fn client_server(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let (before, after) = readings(run);
    let (name, bench) = run.bench.as_ref()?;
    Some(snapshots::client_server(
        run.engine,
        before,
        after,
        bench,
        name,
        run.expected_extra_requests,
    ))
}

/// T18: the load tool's account against the server's counters and the recording.
pub fn dropped_failures(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let (name, account) = run.bench.as_ref()?;
    let server = run.server_outcomes();
    let stopped = match (run.series.as_ref(), run.request_timeline()) {
        (Some(series), Some(Ok(timeline))) => ledger::stopped_generating(series, &timeline),
        _ => None,
    };
    Some(ledger::dropped_failures(&LedgerInputs {
        engine: run.engine,
        account,
        result_file: name,
        server: server.as_ref(),
        stopped,
        untimed: run.expected_extra_requests,
    }))
}

/// T20: the lengths the load tool reports against the server's, where they compare.
pub fn lengths(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let (name, bench) = run.bench.as_ref()?;
    let server = run.server_outcomes();
    let server_ok = server.as_ref().and_then(|s| s.as_ref().ok());
    if ledger::lengths_comparable(bench, server_ok) {
        return Some(ledger::length_mismatch(bench, name, server_ok));
    }
    let needs = match &server {
        Some(Err(why)) => format!(
            "needs the server's counters, which cannot be compared here ({why}), or a result file that keeps each answer's usage"
        ),
        _ => "needs the before and after readings, or a result file that keeps each answer's usage".to_owned(),
    };
    Some(CheckResult::not_checked(
        Tripwire::T20,
        needs,
        &[input::BEFORE, input::AFTER],
    ))
}

/// T1: preemptions between the readings.
pub fn preemption(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let (before, after) = readings(run);
    Some(snapshots::preemption(
        run.engine,
        before,
        after,
        run.series.as_ref(),
        run.last_boot(),
    ))
}

/// T10: the rate between the readings, and how finely their clocks time it.
pub fn rate(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let (before, after) = readings(run);
    Some(snapshots::run_rate(run.engine, before, after))
}

/// T16: the share of the prompt the prefix cache served, from the readings or the
/// recording.
pub fn prefix_cache(run: &Run, options: RunOptions) -> Option<CheckResult> {
    let result = prefix_cache::prefix_cache(
        run.engine,
        run.before.as_ref(),
        run.after.as_ref(),
        run.series.as_ref(),
        options.expect_cache_hits,
    )?;
    let result = prefix_cache::off_at_start(run.engine, run.last_boot(), result);
    Some(prefix_cache::with_tiers(
        run.engine,
        run.before.as_ref(),
        run.after.as_ref(),
        run.last_boot(),
        result,
    ))
}

/// T28: the boot log's declaration of disaggregated serving against the KV the instance
/// counted as received.
pub fn disaggregation(run: &Run, _: RunOptions) -> Option<CheckResult> {
    Some(crate::judging::checks::disaggregation::disaggregation(
        run.engine,
        run.last_boot(),
        run.before.as_ref(),
        run.after.as_ref(),
    ))
}

/// T14: the recording's blocks against the after reading's block count.
pub fn null_block(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let after = run.after.as_ref().expect("declared: the after reading");
    if run.series.as_ref().is_some_and(|s| s.refused.is_some()) {
        return refused(run, Tripwire::T14);
    }
    Some(series::null_block(run.engine, series_of(run), after).0)
}

/// T9: the ceiling on a full cache, in blocks where T14 passed on the after reading.
pub fn falling_ceiling(run: &Run, _: RunOptions) -> Option<CheckResult> {
    if let Some(refused) = refused(run, Tripwire::T9) {
        return Some(refused);
    }
    let stats = series_of(run);
    let usable_blocks = match (&run.after, run.engine.cache_info) {
        (Some(after), Some(_)) => match series::null_block(run.engine, stats, after) {
            (t14, blocks) if t14.status == Status::Pass => blocks,
            _ => None,
        },
        _ => None,
    };
    Some(series::falling_ceiling(run.engine, stats, usable_blocks))
}

/// T8: the concurrency the server reached against the one asked for.
pub fn concurrency(run: &Run, _: RunOptions) -> Option<CheckResult> {
    if let Some(refused) = refused(run, Tripwire::T8) {
        return Some(refused);
    }
    let requested = run.requested?;
    if requested == 0 {
        return Some(
            CheckResult::new(
                Tripwire::T8,
                Status::Unknown,
                "the concurrency asked for is 0; a load keeps at least 1 request open",
            )
            .with("requested", 0),
        );
    }
    let stats = series_of(run);
    // A load paced by a rate keeps open only what its arrivals bring: its concurrency
    // figure is a cap, not a number it was to reach (T17 says the same). Unless requests
    // waited at the server (the recording's in-flight count above its running count),
    // the server ran at its running limit (a request arriving then waited, seen or not
    // between two samples) or the recording saw too little of the load to say, there is
    // no shortfall to judge.
    let rate = run
        .bench
        .as_ref()
        .and_then(|(_, account)| account.request_rate)
        .filter(|r| r.is_finite() && *r > 0.0);
    if let (Some(rate), Some(peak)) = (rate, stats.peak_running) {
        let queued = stats.peak_in_flight.is_some_and(|f| f > peak)
            || run
                .last_boot()
                .and_then(|b| b.running_cap)
                .is_some_and(|cap| peak >= cap as f64);
        // "None waited" rests on samples that saw the load: a recording that saw too
        // little of it is judged as any other (Can't tell, naming the coverage).
        let seen = load_coverage(run).is_none_or(|c| !c.thin());
        if peak < requested as f64 && !queued && seen {
            return Some(
                CheckResult::new(
                    Tripwire::T8,
                    Status::NotApplicable,
                    format!(
                        "the load was paced at {} requests/s: {requested} is the most it may keep open, not a concurrency to reach; its arrivals kept at most {} running, below the server's limit, and none waited at the server",
                        crate::story::fmt::g(rate),
                        crate::story::fmt::g(peak)
                    ),
                )
                .with("requested", requested)
                .with("request_rate", rate)
                .with("peak_running", peak),
            );
        }
    }
    let result = series::concurrency(run.engine, stats, requested, run.last_boot());
    let result = stats.waiting_split.annotate(result);
    Some(series::judged_on_coverage(result, load_coverage(run)))
}

/// How much of the load's span the recording covered: the span the load tool's records
/// give, on the wall clock, else the readings' that bracket the load.
fn load_coverage(run: &Run) -> Option<series::Coverage> {
    let client = run.bench.as_ref().and_then(|(_, account)| {
        let offset = match account.clock? {
            crate::model::client::RequestClock::Unix => 0.0,
            crate::model::client::RequestClock::Monotonic => run.mono_to_wall()?,
        };
        Some((account.span.start_s? + offset, account.span.end_s? + offset))
    });
    let (from, to) =
        client.or_else(|| Some((run.before.as_ref()?.t_wall?, run.after.as_ref()?.t_wall?)))?;
    series::coverage(series_of(run), from, to)
}

/// T17: the client kept fewer requests in flight than asked while the server had room.
pub fn client_shortfall(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let timeline = run.request_timeline().and_then(Result::ok);
    let result = shortfall::client_shortfall(&ShortfallInputs {
        engine: run.engine,
        stats: series_of(run),
        requested: run.requested?,
        boot: run.last_boot(),
        client: run.bench.as_ref().map(|(_, account)| account),
        timeline: timeline.as_ref(),
    });
    let result = series_of(run).waiting_split.annotate(result);
    Some(series::judged_on_coverage(result, load_coverage(run)))
}

/// T19: compile lines inside the run, a slow first wave, no warm-up.
pub fn cold_start(run: &Run, options: RunOptions) -> Option<CheckResult> {
    cold_start::cold_start(&ColdStartInputs {
        engine: run.engine,
        boot: run.last_boot(),
        before: run.before.as_ref(),
        after: run.after.as_ref(),
        client: run.bench.as_ref().map(|(_, account)| account),
        untimed: run.expected_extra_requests,
        requested: run.requested,
        live_log: options.live_log,
    })
}

/// T21: other processes and held-back clocks on the server's GPUs, from the recording's
/// GPU readings.
pub fn gpu_contention(run: &Run, _: RunOptions) -> Option<CheckResult> {
    contention::gpu_contention(series_of(run))
}

/// T23: requests that waited in the client before it sent them.
pub fn client_wait(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let (name, account) = run.bench.as_ref()?;
    Some(client_wait::client_wait(&ClientWaitInputs {
        account,
        result_file: name,
        requested: run.requested,
    }))
}

/// The load tool's rows and the server's records, joined, for T24 and T25.
fn server_view(run: &Run, check: fn(&ServerViewInputs) -> CheckResult) -> Option<CheckResult> {
    let (name, account) = run.bench.as_ref()?;
    let server = run.server_requests.as_ref()?;
    let lives = run.lives()?;
    Some(check(&ServerViewInputs {
        account,
        result_file: name,
        server,
        lives: &lives,
    }))
}

/// T24: the load tool's TTFT against the server's own.
pub fn ttft_definitions(run: &Run, _: RunOptions) -> Option<CheckResult> {
    server_view(run, server_view::ttft_definitions)
}

/// T25: the load tool's output count and chunks against the tokens the server generated.
pub fn chunks_as_tokens(run: &Run, _: RunOptions) -> Option<CheckResult> {
    server_view(run, server_view::chunks_as_tokens)
}

/// T26: the KV event stream, whole or not.
pub fn kv_events(run: &Run, _: RunOptions) -> Option<CheckResult> {
    let events = run.kv_events.as_ref()?;
    let server_finished = run
        .server_outcomes()
        .and_then(Result::ok)
        .map(|o| o.finished);
    // The longest request: by the server's own records, else the load tool's rows.
    let by_server = run
        .server_requests
        .iter()
        .flat_map(|s| &s.requests)
        .filter_map(|r| Some(r.prompt_tokens? + r.output_tokens?))
        .max()
        .map(|t| (t, "by the server's own records"));
    let by_client = || {
        let (_, account) = run.bench.as_ref()?;
        account
            .requests
            .iter()
            .filter(|r| r.completed())
            .filter_map(|r| {
                let prompt = r.server_prompt_tokens.get().or(r.prompt_tokens.get())?;
                let output = r.server_output_tokens.get().or(r.output_tokens.get())?;
                Some(prompt + output)
            })
            .max()
            .map(|t| (t, "by the load tool's records"))
    };
    Some(kv_stream::kv_events(&KvStreamInputs {
        events,
        server_finished,
        block_size: crate::model::facts::block_size(run).map(|(b, _)| b),
        largest_request: by_server.or_else(by_client),
        cache_off: run
            .last_boot()
            .and_then(|boot| prefix_cache::turned_off(run.engine, boot))
            .map(|(name, off)| format!("{name} {}", if off { "True" } else { "False" })),
        drain_needs: run.engine.kv_events_drain.map(|d| d.needs),
    }))
}

/// T27: speculative decoding's acceptance over the run, and what it was measured on.
pub fn speculative_decoding(run: &Run, _: RunOptions) -> Option<CheckResult> {
    crate::judging::checks::spec_decode::speculative_decoding(
        &crate::judging::checks::spec_decode::SpecInputs {
            engine: run.engine,
            before: run.before.as_ref(),
            after: run.after.as_ref(),
            boot: run.last_boot(),
            load: run.bench.as_ref().map(|(_, account)| account),
        },
    )
}

/// T29: requests waited while the scheduler ran no step that admitted or generated.
pub fn scheduler_stall(run: &Run, _: RunOptions) -> Option<CheckResult> {
    Some(crate::judging::checks::steps::scheduler_stall(
        run.steps.as_ref()?,
    ))
}

/// T30: prefills scheduled beside decodes, and how much they slowed those steps.
pub fn prefill_stalls_decode(run: &Run, _: RunOptions) -> Option<CheckResult> {
    Some(crate::judging::checks::steps::prefill_stalls_decode(
        run.steps.as_ref()?,
    ))
}

/// T31: each preemption at its step, against the server's counter.
pub fn preemption_located(run: &Run, _: RunOptions) -> Option<CheckResult> {
    Some(crate::judging::checks::steps::preemption_located(
        run.steps.as_ref()?,
        run.engine,
        run.before.as_ref().zip(run.after.as_ref()),
    ))
}
