//! `watch URL URL …`: every replica of a fleet recorded on one absolute schedule, each
//! into its own series, and the fleet's sum slot by slot.
//!
//! Each replica runs the single-server sampler ([`crate::watch::watch`]) in a task of
//! its own, all from the same start on the monotonic clock (the moment every replica has
//! answered its first scrape, asked of all at once), so slot `k` of every replica is due
//! at the same instant and a slow replica delays only its own samples. The tasks
//! hand each sample to the caller's task, which adds up a slot once every replica has
//! answered for it (or has moved two slots past it): a slot some replica missed is a gap
//! record in the sum, never a total that leaves a replica out.

use std::collections::BTreeMap;
use std::io::{self, Write};

use inferlint_core::model::{SeriesHeader, SeriesSample};
use inferlint_core::Engine;
use inferlint_engines::{files, fleet};

use crate::scrape::{Scrape, Scraper};
use crate::stop::Stop;
use crate::watch::{self, Event, Pages, Progress, WatchOptions, PAGE_CHOICE_AT_MOST};

/// How many slots behind the quickest replica a slot is summed whatever the others.
const SETTLE_SLOTS: u64 = 8;

/// One replica to record: its scraper, the scrape that found its engine, and where its
/// series goes.
#[derive(Debug)]
pub struct Member<W> {
    /// Its scraper (of the recorder that will run the recording).
    pub scraper: Scraper,
    /// The scrape that found its engine: its slot 0.
    pub first: Scrape,
    /// Where its series goes.
    pub out: W,
}

/// What the fleet's recording holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetProgress {
    /// Each replica's, in the order given.
    pub replicas: Vec<Progress>,
    /// Slots written to the sum.
    pub summed: u64,
    /// Slots the sum has a gap record for (some replica had no sample there).
    pub sum_gaps: u64,
}

/// Records every member on one schedule until the duration ends or `stop` is called;
/// `sum_out` gets the header and the fleet's sum. Returns each member's progress and its
/// writer (to be synced), in the order given. Call inside a tokio runtime.
pub async fn watch_fleet<W: Write + Send + 'static>(
    members: Vec<Member<W>>,
    engine: Engine,
    options: &WatchOptions,
    sum_out: &mut impl Write,
    stop: &Stop,
) -> io::Result<(FleetProgress, Vec<W>)> {
    let count = members.len();
    if members.is_empty() {
        return Ok((FleetProgress::default(), Vec::new()));
    }
    // How each replica's samples ask for its page is chosen for all at once, before the
    // one schedule starts: a choice's requests then take no replica's slot.
    let mut members = match options.pages {
        Pages::AskForLess => choose_pages(members, engine).await,
        Pages::Whole => members,
    };
    // Each first page, whole, holds what its samples do not need (a real vLLM page: about
    // a thousand samples where a sample reads twenty): narrowed now, the whole page is set
    // free before the schedule starts, not in slot 1 or 2 (128 of them cost a slot about
    // 10 ms). Slot 0's sample and the restart check against slot 1 read what is kept.
    for member in &mut members {
        member.scraper.narrow_snapshot(&mut member.first.snapshot);
    }
    // Slot 0 is now, once every replica has answered its first scrape: not the earliest
    // first request, which would put every replica that answered sooner behind a
    // schedule that started while the slowest first scrape still ran.
    let start_ns = crate::clock::monotonic_ns();
    let interval_ns = i64::try_from(options.interval.as_nanos()).unwrap_or(i64::MAX);
    let header = SeriesHeader {
        url: Some(format!("the sum of {count} replicas")),
        interval_s: Some(options.interval.as_secs_f64()),
        engine: Some(engine),
        unknown_engine: None,
        // A fleet's recording reads no GPU: the header says nothing of it.
        gpu: None,
        pages: None,
    };
    put(sum_out, &files::series_header_json(&header))?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, SeriesSample)>();
    let mut tasks = Vec::with_capacity(count);
    for (index, mut member) in members.into_iter().enumerate() {
        // Every replica's slot 0 is the recording's start: one schedule for all.
        member.first.requested_ns = start_ns;
        let tx = tx.clone();
        let options = options.clone();
        let stopped = stop.stopped();
        tasks.push(tokio::spawn(async move {
            let mut scraper = member.scraper;
            let mut out = member.out;
            let progress = watch::watch(
                &mut scraper,
                member.first,
                engine,
                &options,
                &mut out,
                stopped,
                |event, _| {
                    if let Event::Sample(sample) = event {
                        let _ = tx.send((index, *sample));
                    }
                },
            )
            .await;
            progress.map(|p| (p, out))
        }));
    }
    drop(tx);

    // Samples by slot until every replica has answered for it. A replica's first sample
    // is its slot 0 whenever it was taken: it is the scrape that found the engine, made
    // before the page choices, which for a large fleet can take more than half an
    // interval, so its time alone would place it before the schedule and leave the
    // sum's slot 0 short of replicas that did answer. Every later sample was scraped for
    // a slot from 1 on, placed by its time.
    let mut seen_first = vec![false; count];
    let mut slot_of = |index: usize, sample: &SeriesSample| -> Option<u64> {
        if !std::mem::replace(&mut seen_first[index], true) {
            return Some(0);
        }
        let mono = sample.t_mono_ns?;
        let k = ((mono - start_ns) as f64 / interval_ns as f64).round();
        (k >= 1.0).then_some(k as u64)
    };
    let mut pending: BTreeMap<u64, Vec<Option<SeriesSample>>> = BTreeMap::new();
    let mut latest = vec![0u64; count];
    let mut progress = FleetProgress::default();
    let flush = |pending: &mut BTreeMap<u64, Vec<Option<SeriesSample>>>,
                 up_to: Option<u64>,
                 out: &mut dyn Write,
                 progress: &mut FleetProgress|
     -> io::Result<()> {
        while let Some((&slot, readings)) = pending.first_key_value() {
            let complete = readings.iter().all(Option::is_some);
            if !complete && up_to.is_some_and(|u| slot >= u) {
                break;
            }
            let readings = pending.remove(&slot).unwrap_or_default();
            let read: Vec<SeriesSample> = readings.iter().flatten().copied().collect();
            let due_ns = start_ns + slot as i64 * interval_ns;
            let t_wall = read.iter().map(|s| s.t_wall).sum::<f64>() / read.len().max(1) as f64;
            if read.len() == count {
                if let Some(mut sum) = fleet::sum_of(t_wall, &read) {
                    sum.t_mono_ns = Some(due_ns);
                    put(out, &files::series_sample_json(engine, &sum))?;
                    progress.summed += 1;
                }
            } else {
                let line = watch::gap_json(
                    &format!("{} of {count} replicas read in this slot", read.len()),
                    t_wall,
                    due_ns,
                );
                put(out, &line)?;
                progress.sum_gaps += 1;
            }
        }
        Ok(())
    };
    while let Some((index, sample)) = rx.recv().await {
        let Some(slot) = slot_of(index, &sample) else {
            continue;
        };
        latest[index] = latest[index].max(slot);
        pending.entry(slot).or_insert_with(|| vec![None; count])[index] = Some(sample);
        // A slot behind every replica's latest gets no more samples; one far behind the
        // quickest replica is settled too, so a replica that stopped answering holds
        // back (and holds in memory) only a few slots.
        let slowest = latest.iter().min().copied().unwrap_or(0);
        let quickest = latest.iter().max().copied().unwrap_or(0);
        let settled = slowest.max(quickest.saturating_sub(SETTLE_SLOTS));
        flush(&mut pending, Some(settled), sum_out, &mut progress)?;
    }
    flush(&mut pending, None, sum_out, &mut progress)?;

    let mut writers = Vec::with_capacity(count);
    for task in tasks {
        let (replica, out) = task
            .await
            .map_err(|e| io::Error::other(format!("a replica's recorder ended: {e}")))??;
        progress.replicas.push(replica);
        writers.push(out);
    }
    Ok((progress, writers))
}

fn put(out: &mut (impl Write + ?Sized), line: &str) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    out.write_all(&bytes)?;
    out.flush()
}
/// Every member's page choice ([`Scraper::ask_for_less`]), asked of all at once, each
/// within [`PAGE_CHOICE_AT_MOST`]; a member whose choice takes longer reads its whole
/// page, as its header then says. Returns the members in the order given.
async fn choose_pages<W: Write + Send + 'static>(
    members: Vec<Member<W>>,
    engine: Engine,
) -> Vec<Member<W>> {
    let mut tasks = tokio::task::JoinSet::new();
    let count = members.len();
    for (index, mut member) in members.into_iter().enumerate() {
        tasks.spawn(async move {
            let _ = tokio::time::timeout(
                PAGE_CHOICE_AT_MOST,
                member.scraper.ask_for_less(engine, &member.first.snapshot),
            )
            .await;
            (index, member)
        });
    }
    let mut chosen: Vec<Option<Member<W>>> = (0..count).map(|_| None).collect();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, member)) => chosen[index] = Some(member),
            // A replica is never dropped silently: a choice that panicked is a bug, and
            // it goes on as one.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => {}
        }
    }
    chosen.into_iter().flatten().collect()
}
