//! A finished run's load, sent again through a scheduler model.
//!
//! A [`Workload`] is the run's requests as the load tool sent them: when (seconds from the
//! first send) and how long (prompt and output tokens as served). [`replay`] sends each
//! one at its time, or in a closed loop the moment a slot frees, steps the model until
//! every request has ended, and returns each request's life on the model's clock.
//!
//! The client is modelled as the load tools behave: a request due while the tool's
//! concurrency limit is reached waits in the client and is sent when a request ends, and a
//! request longer than the server's context limit is refused at once (vLLM answers 400
//! before scheduling it). The server sees a request at the step boundary after its send.
//!
//! A replay holds only the requests in flight: [`replay_each`] hands each request's life
//! over as soon as it is known, and the scheduler reuses a finished request's place and
//! keeps no events, so a load of a million requests is replayed in the memory of the few
//! it runs at once. The steps in which nothing can happen but every running request's
//! next token are taken at once ([`crate::model::Scheduler::fast_forward`]), to the same
//! lives, bit for bit, as stepping them one by one.

use serde::Serialize;

use crate::model::{EngineModel, Scheduler, StepCost};

/// One request of the load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Job {
    /// When the tool sent it, seconds from the run's first send (a closed loop ignores
    /// it and sends in order).
    pub due_s: f64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens it was served (the replay generates exactly these).
    pub output: u64,
    /// Prompt tokens the prefix cache held when it arrived.
    pub cached: u64,
}

/// How the tool sent the requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Each request at its own time, with at most `max_outstanding` in flight: one due
    /// while that many are outstanding waits in the client until one ends.
    Timed {
        /// The tool's concurrency limit, if it had one.
        max_outstanding: Option<usize>,
    },
    /// A closed loop: `concurrency` requests outstanding, the next one sent when one ends.
    Closed {
        /// Requests kept outstanding.
        concurrency: usize,
    },
}

/// The requests and how they were sent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// Each request, in sending order.
    pub jobs: Vec<Job>,
    /// How they were sent.
    pub arrivals: Arrivals,
    /// The server's context limit: a request whose prompt and output exceed it is
    /// refused when it arrives.
    pub max_model_len: Option<u64>,
    /// Seconds from the client's send to the scheduler's seeing the request: the HTTP
    /// front end, tokenising, the hand-over to the engine core. Fitted on the run.
    pub front_s: f64,
}

/// One request's life in the replay, seconds on the model's clock (0 at the first send).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct JobLife {
    /// When the client sent it (later than its due time when it waited for a slot).
    pub sent_s: f64,
    /// When the server first scheduled it.
    pub scheduled_s: Option<f64>,
    /// When its first token came.
    pub first_token_s: Option<f64>,
    /// When it ended (refused requests end when sent).
    pub end_s: Option<f64>,
    /// Whether the server refused it.
    pub refused: bool,
    /// Times it was preempted, retracted or paused.
    pub evictions: u32,
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens.
    pub output: u64,
}

impl JobLife {
    /// Whether it came back whole.
    pub fn completed(&self) -> bool {
        !self.refused && self.end_s.is_some()
    }
}

/// What the replay did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Replayed {
    /// Each request, in the workload's order.
    pub jobs: Vec<JobLife>,
    /// What the replay did as a whole.
    pub totals: Totals,
}

/// A replay that never ends is cut here: more steps than this is a model that cannot
/// finish the load (it never happens for a load whose every request fits the pool).
const MAX_STEPS: u64 = 50_000_000;

/// What the replay did as a whole, beside each request's life.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Totals {
    /// Preemptions, retractions or pauses in all.
    pub evictions: u64,
    /// The most requests running after a step, as the engine's running gauge reads.
    pub peak_running: usize,
    /// Requests running, averaged over the time the server was busy.
    pub mean_running: f64,
    /// Engine steps in all.
    pub steps: u64,
}

/// Sends the workload through a fresh scheduler of `model`, each step costing `cost`.
pub fn replay(model: EngineModel, cost: StepCost, workload: &Workload) -> Replayed {
    let mut jobs: Vec<Option<JobLife>> = vec![None; workload.jobs.len()];
    let totals = replay_each(model, cost, workload, &mut |job, life| {
        jobs[job] = Some(*life)
    });
    Replayed {
        jobs: jobs
            .into_iter()
            .map(|life| life.expect("the replay gives every job its life"))
            .collect(),
        totals,
    }
}

/// [`replay`], handing `each` every job's life (with its index in the workload) as soon
/// as it is known, in no set order, rather than holding them all: a replay holds only the
/// requests in flight, whatever the load's length. Every job is handed over once.
pub fn replay_each(
    model: EngineModel,
    cost: StepCost,
    workload: &Workload,
    each: &mut dyn FnMut(usize, &JobLife),
) -> Totals {
    run(model, cost, workload, true, each).0
}

/// The replay, taking the steps that only decode at once ([`Scheduler::fast_forward`])
/// where `fast`, else one at a time; with the steps taken at once.
fn run(
    model: EngineModel,
    cost: StepCost,
    workload: &Workload,
    fast: bool,
    each: &mut dyn FnMut(usize, &JobLife),
) -> (Totals, u64) {
    let mut s = Scheduler::new(model, cost).without_events().reusing_slots();
    let jobs = &workload.jobs;
    let n = jobs.len();
    let front = workload.front_s.max(0.0);
    let life = |job: usize, sent_s: f64| JobLife {
        sent_s,
        scheduled_s: None,
        first_token_s: None,
        end_s: None,
        refused: false,
        evictions: 0,
        prompt: jobs[job].prompt,
        output: jobs[job].output.max(1),
    };
    // When the client sent the request the scheduler holds at each index.
    let mut sent_at: Vec<f64> = Vec::new();
    // A request's life as the scheduler leaves it, sent at `sent`.
    let lived = |sent: f64, r: &crate::model::Request| JobLife {
        scheduled_s: r.first_scheduled_at,
        first_token_s: r.first_token_at,
        end_s: r.finished_at,
        refused: r.rejected,
        evictions: r.evictions,
        ..life(r.id as usize, sent)
    };
    // Sent by the client, not yet at the server: (arrival time, job, send time), in
    // sending order, which is arrival order since every request takes the same `front`
    // to arrive.
    let mut in_transit: std::collections::VecDeque<(f64, usize, f64)> = Default::default();
    // Whether the next job waited in the client for a slot.
    let mut blocked = false;
    let mut next = 0usize;
    let mut outstanding = 0usize;
    let (mut peak, mut busy_s, mut running_s, mut steps) = (0usize, 0.0f64, 0.0f64, 0u64);
    let mut forwarded = 0;
    let limit = match workload.arrivals {
        Arrivals::Timed { max_outstanding } => max_outstanding,
        Arrivals::Closed { concurrency } => Some(concurrency),
    }
    .map(|l| l.max(1));
    loop {
        let now = s.now();
        // The client sends every request it would send by now.
        while next < n {
            let job = jobs[next];
            if matches!(workload.arrivals, Arrivals::Timed { .. }) && job.due_s > now {
                break;
            }
            if limit.is_some_and(|l| outstanding >= l) {
                blocked = true;
                break;
            }
            let sent = match workload.arrivals {
                Arrivals::Timed { .. } if !blocked => job.due_s,
                _ => now,
            };
            let too_long = workload
                .max_model_len
                .is_some_and(|len| job.prompt + job.output.max(1) > len);
            if too_long {
                let refused = JobLife {
                    refused: true,
                    end_s: Some(sent + front),
                    ..life(next, sent)
                };
                each(next, &refused);
            } else {
                in_transit.push_back((sent + front, next, sent));
                outstanding += 1;
            }
            next += 1;
            blocked = false;
        }
        // The server takes in every request that has reached it.
        while let Some(&(at, job, sent)) = in_transit.front() {
            if at > now {
                break;
            }
            in_transit.pop_front();
            let j = jobs[job];
            match s.submit_with_id(job as u64, j.prompt, j.output, j.cached) {
                Some(index) => {
                    if sent_at.len() <= index {
                        sent_at.resize(index + 1, 0.0);
                    }
                    sent_at[index] = sent;
                }
                None => {
                    let refused = JobLife {
                        refused: true,
                        end_s: Some(now),
                        ..life(job, sent)
                    };
                    each(job, &refused);
                    outstanding -= 1;
                }
            }
        }
        // Steps that only decode, where nothing reaches the server or leaves the client
        // before they start, are taken at once.
        if fast {
            let arriving = in_transit.front().map_or(f64::INFINITY, |(at, _, _)| *at);
            let sending = if next < n && limit.is_none_or(|l| outstanding < l) {
                match workload.arrivals {
                    Arrivals::Timed { .. } => jobs[next].due_s,
                    Arrivals::Closed { .. } => f64::NEG_INFINITY,
                }
            } else {
                f64::INFINITY
            };
            let scheduled = s.state().running as f64;
            let taken =
                s.fast_forward(MAX_STEPS - steps, arriving.min(sending), &mut |from, to| {
                    let dt = to - from;
                    busy_s += dt;
                    running_s += dt * scheduled;
                });
            if taken > 0 {
                steps += taken;
                forwarded += taken;
                peak = peak.max(s.state().running);
                if steps >= MAX_STEPS {
                    break;
                }
                continue;
            }
        }
        let before = s.state();
        match s.step() {
            Some(state) => {
                steps += 1;
                let dt = state.t - before.t;
                busy_s += dt;
                running_s += dt * state.scheduled as f64;
                peak = peak.max(state.running);
                outstanding -= (state.finished - before.finished) as usize;
                s.take_ended(|index, r| each(r.id as usize, &lived(sent_at[index], r)));
                if steps >= MAX_STEPS {
                    break;
                }
            }
            None => {
                // Idle until the next request reaches the server or is due to be sent.
                let arriving = in_transit.front().map(|(at, _, _)| *at);
                let due = (next < n)
                    .then(|| jobs[next].due_s)
                    .filter(|d| *d > now && matches!(workload.arrivals, Arrivals::Timed { .. }));
                match arriving.into_iter().chain(due).min_by(f64::total_cmp) {
                    Some(t) if t > now => s.advance_idle(t),
                    // Nothing more can happen: the load is over.
                    _ => break,
                }
            }
        }
    }
    // A replay cut short: the requests still at the server, on their way to it, or not
    // yet sent.
    for (index, r) in s.in_flight() {
        each(r.id as usize, &lived(sent_at[index], r));
    }
    for &(_, job, sent) in &in_transit {
        each(job, &life(job, sent));
    }
    for (job, j) in jobs.iter().enumerate().skip(next) {
        each(job, &life(job, j.due_s));
    }
    let totals = Totals {
        evictions: s.state().evictions,
        peak_running: peak,
        mean_running: if busy_s > 0.0 {
            running_s / busy_s
        } else {
            0.0
        },
        steps,
    };
    (totals, forwarded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::VllmConfig;
    use crate::stats::{replay_summary, Summary};

    fn vllm(blocks: u64, max_num_seqs: usize) -> EngineModel {
        EngineModel::Vllm(VllmConfig {
            block_size: 16,
            num_gpu_blocks: blocks,
            kv_groups: 1,
            state_blocks_per_request: 0,
            max_num_seqs,
            max_num_queued_reqs: None,
            prefill_chunk_tokens: None,
        })
    }

    const FLAT: StepCost = StepCost {
        fixed_s: 0.01,
        per_running_s: 0.0,
        per_prefill_token_s: 0.0,
    };

    fn jobs(n: usize, prompt: u64, output: u64) -> Vec<Job> {
        (0..n)
            .map(|_| Job {
                due_s: 0.0,
                prompt,
                output,
                cached: 0,
            })
            .collect()
    }

    /// The replay as it was written before it streamed its lives, kept its requests in
    /// slots and took decode-only steps at once: every request held, every step taken
    /// alone. The replay must give what it gives.
    fn stepped_one_by_one(model: EngineModel, cost: StepCost, workload: &Workload) -> Replayed {
        let mut s = Scheduler::new(model, cost);
        let n = workload.jobs.len();
        let front = workload.front_s.max(0.0);
        let mut lives: Vec<JobLife> = workload
            .jobs
            .iter()
            .map(|j| JobLife {
                sent_s: j.due_s,
                scheduled_s: None,
                first_token_s: None,
                end_s: None,
                refused: false,
                evictions: 0,
                prompt: j.prompt,
                output: j.output.max(1),
            })
            .collect();
        // The scheduler's index of each job it was handed.
        let mut sched_index: Vec<Option<usize>> = vec![None; n];
        // Sent by the client, not yet at the server: (arrival time, job), in sending order,
        // which is arrival order since every request takes the same `front` to arrive.
        let mut in_transit: std::collections::VecDeque<(f64, usize)> = Default::default();
        let mut blocked = vec![false; n];
        let mut next = 0usize;
        let mut outstanding = 0usize;
        let (mut peak, mut busy_s, mut running_s, mut steps) = (0usize, 0.0f64, 0.0f64, 0u64);
        loop {
            let now = s.now();
            // The client sends every request it would send by now.
            while next < n {
                let job = workload.jobs[next];
                let limit = match workload.arrivals {
                    Arrivals::Timed { max_outstanding } => {
                        if job.due_s > now {
                            break;
                        }
                        max_outstanding
                    }
                    Arrivals::Closed { concurrency } => Some(concurrency),
                }
                .map(|l| l.max(1));
                if limit.is_some_and(|l| outstanding >= l) {
                    blocked[next] = true;
                    break;
                }
                let sent = match workload.arrivals {
                    Arrivals::Timed { .. } if !blocked[next] => job.due_s,
                    _ => now,
                };
                lives[next].sent_s = sent;
                let too_long = workload
                    .max_model_len
                    .is_some_and(|len| job.prompt + job.output.max(1) > len);
                if too_long {
                    lives[next].refused = true;
                    lives[next].end_s = Some(sent + front);
                } else {
                    in_transit.push_back((sent + front, next));
                    outstanding += 1;
                }
                next += 1;
            }
            // The server takes in every request that has reached it.
            while let Some(&(at, job)) = in_transit.front() {
                if at > now {
                    break;
                }
                in_transit.pop_front();
                let j = workload.jobs[job];
                match s.submit_cached(j.prompt, j.output, j.cached) {
                    Some(index) => sched_index[job] = Some(index),
                    None => {
                        lives[job].refused = true;
                        lives[job].end_s = Some(now);
                        outstanding -= 1;
                    }
                }
            }
            let before = s.state();
            match s.step() {
                Some(state) => {
                    steps += 1;
                    let dt = state.t - before.t;
                    busy_s += dt;
                    running_s += dt * state.scheduled as f64;
                    peak = peak.max(state.running);
                    outstanding -= (state.finished - before.finished) as usize;
                    if steps >= MAX_STEPS {
                        break;
                    }
                }
                None => {
                    // Idle until the next request reaches the server or is due to be sent.
                    let arriving = in_transit.front().map(|(at, _)| *at);
                    let due = (next < n).then(|| workload.jobs[next].due_s).filter(|d| {
                        *d > now && matches!(workload.arrivals, Arrivals::Timed { .. })
                    });
                    match arriving.into_iter().chain(due).min_by(f64::total_cmp) {
                        Some(t) if t > now => s.advance_idle(t),
                        // Nothing more can happen: the load is over.
                        _ => break,
                    }
                }
            }
        }
        for (life, index) in lives.iter_mut().zip(&sched_index) {
            if let Some(r) = index.map(|i| &s.requests[i]) {
                life.scheduled_s = r.first_scheduled_at;
                life.first_token_s = r.first_token_at;
                life.end_s = r.finished_at;
                life.refused = r.rejected;
                life.evictions = r.evictions;
                if r.rejected {
                    life.end_s = Some(r.arrived_at);
                }
            }
        }
        Replayed {
            jobs: lives,
            totals: Totals {
                evictions: s.state().evictions,
                peak_running: peak,
                mean_running: if busy_s > 0.0 {
                    running_s / busy_s
                } else {
                    0.0
                },
                steps,
            },
        }
    }

    /// SplitMix64: loads drawn the same on every run.
    struct Draw(u64);

    impl Draw {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A model of each engine and policy, often with a pool small enough to preempt,
    /// retract or pause, and vLLM sometimes chunking its prefills.
    fn models(d: &mut Draw) -> Vec<EngineModel> {
        use crate::model::{CapacityPolicy, SglangConfig, TrtllmConfig};
        let mut models = vec![
            EngineModel::Vllm(VllmConfig {
                block_size: [1, 16, 128][d.below(3) as usize],
                num_gpu_blocks: 10 + d.below(150),
                kv_groups: 1 + d.below(2),
                state_blocks_per_request: d.below(2),
                max_num_seqs: 1 + d.below(24) as usize,
                max_num_queued_reqs: (d.below(4) == 0).then(|| 4 + d.below(20) as usize),
                prefill_chunk_tokens: (d.below(2) == 0).then(|| 8 + d.below(64)),
            }),
            EngineModel::Sglang(SglangConfig {
                max_total_num_tokens: 200 + d.below(2000),
                page_size: [1, 16][d.below(2) as usize],
                max_running_requests: 1 + d.below(24) as usize,
                mamba_slots: (d.below(3) == 0).then(|| 1 + d.below(16) as usize),
                new_token_ratio: [1.0, 0.4, 0.1][d.below(3) as usize],
            }),
        ];
        for policy in [
            CapacityPolicy::MaxUtilization,
            CapacityPolicy::GuaranteedNoEvict,
        ] {
            models.push(EngineModel::Trtllm(TrtllmConfig {
                tokens_per_block: [8, 32][d.below(2) as usize],
                blocks: 12 + d.below(100),
                max_num_requests: 1 + d.below(24) as usize,
                policy,
            }));
        }
        models
    }

    /// A load of varied lengths, sent in a closed loop or at its own times (in bursts and
    /// gaps, with or without a client limit), some past the context limit.
    fn workload(d: &mut Draw, closed: bool) -> Workload {
        let n = 1 + d.below(120) as usize;
        let mut t = 0.0;
        let jobs = (0..n)
            .map(|_| {
                if d.below(4) == 0 {
                    t += d.unit() * 0.5;
                }
                let long = d.below(5) == 0;
                let prompt = 1 + d.below(if long { 300 } else { 40 });
                let long = d.below(5) == 0;
                Job {
                    due_s: t,
                    prompt,
                    output: d.below(if long { 200 } else { 40 }),
                    cached: d.below(prompt + 1) * d.below(2),
                }
            })
            .collect();
        Workload {
            jobs,
            arrivals: if closed {
                Arrivals::Closed {
                    concurrency: d.below(20) as usize,
                }
            } else {
                Arrivals::Timed {
                    max_outstanding: (d.below(2) == 0).then(|| d.below(20) as usize),
                }
            },
            max_model_len: (d.below(3) == 0).then(|| 50 + d.below(300)),
            front_s: [0.0, 0.003, 0.05][d.below(3) as usize],
        }
    }

    fn cost(d: &mut Draw) -> StepCost {
        StepCost {
            fixed_s: 0.001 + d.unit() * 0.02,
            per_running_s: d.unit() * 0.001,
            per_prefill_token_s: d.unit() * 0.0001,
        }
    }

    /// The replay that takes decode-only steps at once gives every request the life,
    /// to the last bit, and the totals that stepping one step at a time gives, and both
    /// give what the replay gave before it streamed: on loads of every kind through
    /// every engine's model, preempting, retracting and pausing ones included.
    #[test]
    fn taking_decode_steps_at_once_gives_what_stepping_gives() {
        let mut d = Draw(7);
        let (mut cases, mut skipped, mut evicting) = (0, 0u64, 0);
        let mut all = 0;
        for _ in 0..60 {
            for closed in [true, false] {
                let w = workload(&mut d, closed);
                let c = cost(&mut d);
                for model in models(&mut d) {
                    let collect = |fast: bool| {
                        let mut lives = vec![None; w.jobs.len()];
                        let (totals, forwarded) =
                            run(model.clone(), c, &w, fast, &mut |job, life| {
                                assert!(lives[job].is_none(), "job {job} handed over twice");
                                lives[job] = Some(*life);
                            });
                        let lives: Vec<JobLife> = lives.into_iter().map(Option::unwrap).collect();
                        (lives, totals, forwarded)
                    };
                    let (fast, fast_totals, forwarded) = collect(true);
                    // The figures of lives gathered in the order they end are the list's.
                    assert_eq!(
                        replay_summary(model.clone(), c, &w),
                        Summary::of_replay(&stepped_one_by_one(model.clone(), c, &w)),
                        "{model:?} {w:?}"
                    );
                    let (stepped, stepped_totals, none) = collect(false);
                    assert_eq!(none, 0);
                    assert_eq!(fast, stepped, "{model:?} {w:?}");
                    assert_eq!(fast_totals, stepped_totals, "{model:?} {w:?}");
                    let before = stepped_one_by_one(model.clone(), c, &w);
                    assert_eq!(before.jobs, fast, "{model:?} {w:?}");
                    assert_eq!(
                        (
                            before.totals.evictions,
                            before.totals.peak_running,
                            before.totals.steps
                        ),
                        (
                            fast_totals.evictions,
                            fast_totals.peak_running,
                            fast_totals.steps
                        )
                    );
                    assert_eq!(
                        before.totals.mean_running.to_bits(),
                        fast_totals.mean_running.to_bits()
                    );
                    cases += 1;
                    all += fast_totals.steps;
                    evicting += usize::from(before.totals.evictions > 0);
                    skipped += forwarded;
                }
            }
        }
        // The draw reaches what it is meant to: loads that evict, and many steps.
        assert_eq!(cases, 480);
        assert!(evicting > 60, "{evicting} of {cases} evicted");
        assert!(skipped > all / 4, "{skipped} of {all} steps taken at once");
    }

    /// The scheduler's own promise, beside a replay's: from states drawn along loads of
    /// every engine, the steps taken at once leave every request and every counter as
    /// stepping them one by one does, and hand over each step's start and end.
    #[test]
    fn a_fast_forward_leaves_the_scheduler_as_its_steps_one_by_one() {
        let mut d = Draw(11);
        let mut forwarded = 0;
        for _ in 0..40 {
            let c = cost(&mut d);
            for model in models(&mut d) {
                let mut s = Scheduler::new(model, c);
                for _ in 0..400 {
                    if d.below(6) == 0 {
                        let prompt = 1 + d.below(60);
                        s.submit_cached(prompt, d.below(60), d.below(prompt));
                    }
                    let horizon = if d.below(3) == 0 {
                        s.now() + d.unit() * 0.2
                    } else {
                        f64::INFINITY
                    };
                    let mut fast = s.clone();
                    let mut times = Vec::new();
                    let taken =
                        fast.fast_forward(1 + d.below(50), horizon, &mut |a, b| times.push((a, b)));
                    assert_eq!(taken as usize, times.len());
                    let mut stepped_times = Vec::new();
                    for _ in 0..taken {
                        let before = s.now();
                        let state = s.step().expect("a step to take");
                        stepped_times.push((before, state.t));
                        assert!(!state.completed_in_step);
                    }
                    if taken > 0 {
                        assert_eq!(times, stepped_times);
                        assert!(times.iter().skip(1).all(|(a, _)| *a < horizon));
                        assert_eq!(fast.requests, s.requests);
                        assert_eq!(fast.state(), s.state());
                        assert_eq!(fast.events, s.events);
                        forwarded += taken;
                    }
                    s.step();
                }
            }
        }
        assert!(forwarded > 10_000, "{forwarded} steps taken at once");
    }

    #[test]
    fn a_closed_loop_keeps_its_concurrency_and_the_steps_add_up() {
        // 4 requests of 15 + 10 tokens, 2 at a time, a pool far larger than they need:
        // each pair takes 10 steps of 10 ms (one token a step, the first with the
        // prefill), so the second pair is sent at 0.1 s and ends at 0.2 s.
        let w = Workload {
            jobs: jobs(4, 15, 10),
            arrivals: Arrivals::Closed { concurrency: 2 },
            max_model_len: None,
            front_s: 0.0,
        };
        let r = replay(vllm(1000, 256), FLAT, &w);
        assert_eq!(r.totals.evictions, 0);
        assert_eq!(r.totals.peak_running, 2);
        let ends: Vec<f64> = r.jobs.iter().map(|j| j.end_s.unwrap()).collect();
        for (end, want) in ends.iter().zip([0.1, 0.1, 0.2, 0.2]) {
            assert!((end - want).abs() < 1e-9, "{ends:?}");
        }
        assert!((r.jobs[2].sent_s - 0.1).abs() < 1e-9);
        assert!((r.totals.mean_running - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_pool_too_small_preempts_and_a_lower_cap_stops_it() {
        // Blocks of 16 tokens; each request grows from 1 block (15 prompt + 1) to 3 (15 +
        // 33 = 48 tokens). 9 usable blocks hold 3 at full length: 8 admitted at once
        // must preempt, 3 at once never do.
        let w = Workload {
            jobs: jobs(8, 15, 33),
            arrivals: Arrivals::Closed { concurrency: 8 },
            max_model_len: None,
            front_s: 0.0,
        };
        let crowded = replay(vllm(10, 256), FLAT, &w);
        assert!(crowded.totals.evictions > 0);
        let capped = replay(vllm(10, 3), FLAT, &w);
        assert_eq!(capped.totals.evictions, 0);
        assert_eq!(capped.totals.peak_running, 3);
        assert!(capped.jobs.iter().all(JobLife::completed));
    }

    #[test]
    fn timed_arrivals_wait_for_their_time_and_for_the_clients_limit() {
        // Three requests due at 0, 0 and 1 s, at most one outstanding: the second waits
        // in the client for the first to end (10 steps, 0.1 s); the third is sent at its
        // own time, the server idle in between.
        let mut js = jobs(3, 15, 10);
        js[2].due_s = 1.0;
        let w = Workload {
            jobs: js,
            arrivals: Arrivals::Timed {
                max_outstanding: Some(1),
            },
            max_model_len: None,
            front_s: 0.0,
        };
        let r = replay(vllm(1000, 256), FLAT, &w);
        assert!((r.jobs[1].sent_s - 0.1).abs() < 1e-9);
        assert!((r.jobs[2].sent_s - 1.0).abs() < 1e-9);
        assert!((r.jobs[2].end_s.unwrap() - 1.1).abs() < 1e-9);
    }

    #[test]
    fn a_request_beyond_the_context_limit_is_refused_at_once() {
        let mut js = jobs(2, 15, 10);
        js[1].prompt = 100;
        let w = Workload {
            jobs: js,
            arrivals: Arrivals::Closed { concurrency: 2 },
            max_model_len: Some(64),
            front_s: 0.0,
        };
        let r = replay(vllm(1000, 256), FLAT, &w);
        assert!(r.jobs[0].completed());
        assert!(r.jobs[1].refused && !r.jobs[1].completed());
        assert_eq!(r.jobs[1].end_s, Some(0.0));
    }

    #[test]
    fn the_front_ends_delay_reaches_every_request_and_the_next_send_waits_for_the_end() {
        // 50 ms from send to the scheduler: the first pair arrives at 0.05, takes 10
        // steps of 10 ms (ends 0.15); the second pair is sent then and ends at 0.30.
        let w = Workload {
            jobs: jobs(4, 15, 10),
            arrivals: Arrivals::Closed { concurrency: 2 },
            max_model_len: None,
            front_s: 0.05,
        };
        let r = replay(vllm(1000, 256), FLAT, &w);
        let ends: Vec<f64> = r.jobs.iter().map(|j| j.end_s.unwrap()).collect();
        for (end, want) in ends.iter().zip([0.15, 0.15, 0.30, 0.30]) {
            assert!((end - want).abs() < 1e-9, "{ends:?}");
        }
        assert!((r.jobs[2].scheduled_s.unwrap() - 0.20).abs() < 1e-9);
        // TTFT from the send: the 50 ms in transit and the one prefill step.
        assert!((r.jobs[0].first_token_s.unwrap() - r.jobs[0].sent_s - 0.06).abs() < 1e-9);
    }
}
