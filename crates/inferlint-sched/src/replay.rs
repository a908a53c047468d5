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
    /// Preemptions, retractions or pauses in all.
    pub evictions: u64,
    /// The most requests running after a step, as the engine's running gauge reads.
    pub peak_running: usize,
    /// Requests running, averaged over the time the server was busy.
    pub mean_running: f64,
    /// Engine steps in all.
    pub steps: u64,
}

/// A replay that never ends is cut here: more steps than this is a model that cannot
/// finish the load (it never happens for a load whose every request fits the pool).
const MAX_STEPS: u64 = 50_000_000;

/// Sends the workload through a fresh scheduler of `model`, each step costing `cost`.
pub fn replay(model: EngineModel, cost: StepCost, workload: &Workload) -> Replayed {
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
                let due = (next < n)
                    .then(|| workload.jobs[next].due_s)
                    .filter(|d| *d > now && matches!(workload.arrivals, Arrivals::Timed { .. }));
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
        evictions: s.state().evictions,
        peak_running: peak,
        mean_running: if busy_s > 0.0 {
            running_s / busy_s
        } else {
            0.0
        },
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::VllmConfig;

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
        assert_eq!(r.evictions, 0);
        assert_eq!(r.peak_running, 2);
        let ends: Vec<f64> = r.jobs.iter().map(|j| j.end_s.unwrap()).collect();
        for (end, want) in ends.iter().zip([0.1, 0.1, 0.2, 0.2]) {
            assert!((end - want).abs() < 1e-9, "{ends:?}");
        }
        assert!((r.jobs[2].sent_s - 0.1).abs() < 1e-9);
        assert!((r.mean_running - 2.0).abs() < 1e-9);
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
        assert!(crowded.evictions > 0);
        let capped = replay(vllm(10, 3), FLAT, &w);
        assert_eq!(capped.evictions, 0);
        assert_eq!(capped.peak_running, 3);
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
