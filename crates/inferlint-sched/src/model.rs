//! The scheduler models: pure, deterministic, step-based. No wall clock is read here;
//! time is the sum of modelled step durations, so the same inputs give the same run.
//!
//! One [`Scheduler`] holds the requests, the KV pool and the counters. Each call to
//! [`Scheduler::step`] is one engine iteration: make room for the running requests (the
//! engine's eviction rule), admit waiting requests (the engine's admission rule), then
//! every running request generates one token. The engine differences are in
//! [`EngineModel`]; everything else is shared.

use std::collections::VecDeque;

/// vLLM's paged KV cache. A plain model has one KV cache group; a hybrid
/// attention/Mamba model has several attention groups plus fixed state blocks per request,
/// which is why the recorded 27B hybrid run held four 784-token blocks per short request.
#[derive(Debug, Clone, PartialEq)]
pub struct VllmConfig {
    /// Tokens per block.
    pub block_size: u64,
    /// As `vllm:cache_config_info` reports it; one block is the reserved null block.
    pub num_gpu_blocks: u64,
    /// Attention groups: each holds ceil(tokens / block_size) blocks per request.
    pub kv_groups: u64,
    /// Blocks a request holds whatever its length (Mamba state groups of hybrid models).
    pub state_blocks_per_request: u64,
    /// `--max-num-seqs`: the most requests running at once.
    pub max_num_seqs: usize,
    /// `--max-num-queued-reqs`: a request arriving when this many are in flight is rejected.
    pub max_num_queued_reqs: Option<usize>,
    /// The most tokens of one request prefilled in one step. A recomputed request then
    /// takes the blocks of its first chunk and asks for the rest a step later, when
    /// another request may have taken them, so it is preempted again. Calibrated (not
    /// read from vLLM) against the recorded hybrid run's preemption count.
    pub prefill_chunk_tokens: Option<u64>,
}

/// SGLang's token pool.
#[derive(Debug, Clone, PartialEq)]
pub struct SglangConfig {
    /// `--max-total-tokens`: the pool, in tokens.
    pub max_total_num_tokens: u64,
    /// Tokens per page.
    pub page_size: u64,
    /// `--max-running-requests`.
    pub max_running_requests: usize,
    /// Hybrid models: the Mamba state slots, which lower the running limit when fewer.
    pub mamba_slots: Option<usize>,
    /// The share of each request's remaining output reserved at admission. 1.0 reserves
    /// all of it (what the recorded live run shows: 5 of 10 allowed ran, the pool holds 5
    /// full answers); lower values admit more and lead to retractions.
    pub new_token_ratio: f64,
}

impl SglangConfig {
    /// The running limit after the hybrid lowering.
    pub fn running_cap(&self) -> usize {
        self.mamba_slots.map_or(self.max_running_requests, |m| {
            m.min(self.max_running_requests)
        })
    }
}

/// TensorRT-LLM's capacity scheduler policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityPolicy {
    /// Admit only what fits with its whole output; nothing is ever paused.
    GuaranteedNoEvict,
    /// Admit while the current tokens fit; pause (and later recompute) when full.
    MaxUtilization,
}

impl CapacityPolicy {
    /// The policy as the engine spells it.
    pub fn name(self) -> &'static str {
        match self {
            CapacityPolicy::GuaranteedNoEvict => "GUARANTEED_NO_EVICT",
            CapacityPolicy::MaxUtilization => "MAX_UTILIZATION",
        }
    }
}

/// TensorRT-LLM's paged KV pool.
#[derive(Debug, Clone, PartialEq)]
pub struct TrtllmConfig {
    /// Tokens per block.
    pub tokens_per_block: u64,
    /// Blocks in the pool.
    pub blocks: u64,
    /// `--max_batch_size`: the most requests running at once.
    pub max_num_requests: usize,
    /// The capacity scheduler policy.
    pub policy: CapacityPolicy,
}

/// One engine's scheduler model.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineModel {
    /// vLLM's paged blocks, with preemption.
    Vllm(VllmConfig),
    /// SGLang's token pool, with retraction.
    Sglang(SglangConfig),
    /// TensorRT-LLM's paged pool, with pauses under MAX_UTILIZATION.
    Trtllm(TrtllmConfig),
}

impl EngineModel {
    /// Pool units (blocks or tokens) that the KV usage gauge divides by.
    pub fn usable_units(&self) -> u64 {
        match self {
            EngineModel::Vllm(c) => c.num_gpu_blocks.saturating_sub(1),
            EngineModel::Sglang(c) => c.max_total_num_tokens,
            EngineModel::Trtllm(c) => c.blocks,
        }
    }

    /// Units a request holds with `tokens` tokens of KV.
    pub fn units_for(&self, tokens: u64) -> u64 {
        match self {
            EngineModel::Vllm(c) => {
                c.kv_groups * tokens.div_ceil(c.block_size) + c.state_blocks_per_request
            }
            EngineModel::Sglang(c) => tokens.div_ceil(c.page_size) * c.page_size,
            EngineModel::Trtllm(c) => tokens.div_ceil(c.tokens_per_block),
        }
    }

    /// The most requests the engine runs at once.
    pub fn running_cap(&self) -> usize {
        match self {
            EngineModel::Vllm(c) => c.max_num_seqs,
            EngineModel::Sglang(c) => c.running_cap(),
            EngineModel::Trtllm(c) => c.max_num_requests,
        }
    }
}

/// How long one iteration takes: a fixed cost, a cost per running request and a cost per
/// prefilled token (new prompts and recomputed requests).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StepCost {
    /// Seconds every step takes.
    pub fixed_s: f64,
    /// Seconds per running request.
    pub per_running_s: f64,
    /// Seconds per prefilled token.
    pub per_prefill_token_s: f64,
}

impl StepCost {
    /// Seconds one step takes with `running` requests and `prefill_tokens` to prefill.
    pub fn step_s(&self, running: usize, prefill_tokens: u64) -> f64 {
        self.fixed_s
            + self.per_running_s * running as f64
            + self.per_prefill_token_s * prefill_tokens as f64
    }
}

/// One request's life, in simulated seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its id, in arrival order.
    pub id: u64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Output tokens it asks for.
    pub output: u64,
    /// Output tokens generated so far.
    pub generated: u64,
    /// Tokens whose KV is computed (0 after an eviction: it is recomputed).
    pub computed: u64,
    /// Units held now.
    pub units: u64,
    /// When it arrived.
    pub arrived_at: f64,
    /// When it was first scheduled.
    pub first_scheduled_at: Option<f64>,
    /// When its first token came.
    pub first_token_at: Option<f64>,
    /// When it finished.
    pub finished_at: Option<f64>,
    /// Whether admission control refused it.
    pub rejected: bool,
    /// Times it was preempted, retracted or paused.
    pub evictions: u32,
    /// Prompt tokens the prefix cache held when it arrived: not computed at its first
    /// admission.
    pub cached: u64,
}

/// Something an engine writes to its log, with the step time it happened at.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// SGLang: `KV cache pool is full. Retract requests.`
    Retracted {
        /// Requests retracted.
        count: u32,
        /// The new-token ratio before.
        ratio_from: f64,
        /// The new-token ratio after.
        ratio_to: f64,
    },
    /// TensorRT-LLM: `MaxUtilizationScheduler: request ID N -> pause`.
    Paused {
        /// The request paused.
        request_id: u64,
    },
    /// A request finished (the access-log line).
    Finished {
        /// The request finished.
        request_id: u64,
    },
    /// A request was refused at arrival (admission control).
    Rejected {
        /// The request refused.
        request_id: u64,
    },
}

/// The gauges and counters after one step (or at the start).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct State {
    /// Simulated seconds.
    pub t: f64,
    /// Requests running.
    pub running: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// Units (blocks or tokens) in use.
    pub used_units: u64,
    /// Running requests during the step, before finished ones left.
    pub scheduled: usize,
    /// Units in use during the step, before finished requests left.
    pub used_units_scheduled: u64,
    /// Requests paused in this step (TensorRT-LLM's gauge).
    pub paused: usize,
    /// Whether a request finished in this step (TensorRT-LLM updates its gauges then).
    pub completed_in_step: bool,
    /// Preemptions, retractions or pauses so far.
    pub evictions: u64,
    /// Prompt tokens processed so far.
    pub prompt_tokens: u64,
    /// Output tokens generated so far.
    pub generated_tokens: u64,
    /// Requests finished so far.
    pub finished: u64,
    /// Output and prompt tokens of finished requests (engines that count at finish).
    pub finished_output_tokens: u64,
    /// See `finished_output_tokens`.
    pub finished_prompt_tokens: u64,
    /// Requests refused so far.
    pub rejected: u64,
    /// Prompt tokens the prefix cache served: counted at a request's first admission
    /// (vLLM) and at its finish (SGLang, TensorRT-LLM).
    pub prefix_hits: u64,
    /// Prompt tokens the prefix cache served, of finished requests only.
    pub finished_prefix_hits: u64,
}

impl State {
    /// TensorRT-LLM's gauges as a step that completed a request leaves them: they still
    /// count the requests scheduled in that step, the finished ones among them.
    pub fn gauges_at_completion(self) -> State {
        State {
            running: self.scheduled,
            used_units: self.used_units_scheduled,
            ..self
        }
    }
}

/// A step-based scheduler of one engine's model: time is the sum of modelled step durations.
#[derive(Debug, Clone)]
pub struct Scheduler {
    /// The engine's model.
    pub model: EngineModel,
    /// How long a step takes.
    pub cost: StepCost,
    /// Every request so far, by id.
    pub requests: Vec<Request>,
    waiting: VecDeque<usize>,
    running: Vec<usize>,
    used_units: u64,
    sglang_ratio: f64,
    state: State,
    /// What the engine would log, with its step time (nothing when made
    /// [`Scheduler::without_events`]).
    pub events: Vec<(f64, Event)>,
    record_events: bool,
    /// Whether a finished request's place in `requests` is given back for a later one
    /// ([`Scheduler::reusing_slots`]).
    reuse_slots: bool,
    /// Places given back, to be reused.
    free: Vec<usize>,
    /// Places of the requests finished since [`Scheduler::take_ended`] was last called.
    ended: Vec<usize>,
    /// Each running request's tokens in the step under way, and the requests still
    /// running after it: kept between steps so that a step allocates nothing.
    step_buf: Vec<u64>,
    still_buf: Vec<usize>,
}

impl Scheduler {
    /// An idle scheduler at time 0.
    pub fn new(model: EngineModel, cost: StepCost) -> Scheduler {
        let sglang_ratio = match &model {
            EngineModel::Sglang(c) => c.new_token_ratio,
            _ => 1.0,
        };
        Scheduler {
            model,
            cost,
            requests: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            used_units: 0,
            sglang_ratio,
            state: State::default(),
            events: Vec::new(),
            record_events: true,
            reuse_slots: false,
            free: Vec::new(),
            ended: Vec::new(),
            step_buf: Vec::new(),
            still_buf: Vec::new(),
        }
    }

    /// The same scheduler, keeping no [`Scheduler::events`]: a caller that reads only the
    /// requests' lives (a replay of a million requests) does not hold an event for each.
    pub fn without_events(mut self) -> Scheduler {
        self.record_events = false;
        self
    }

    /// The same scheduler, holding only the requests in flight: a request refused at
    /// arrival is not kept, and a finished one stays in `requests` only until the caller
    /// has taken it ([`Scheduler::take_ended`]), its place then given to a later request.
    /// An index into `requests` is then a place, not an arrival order; [`Request::id`]
    /// is the id the caller gave ([`Scheduler::submit_with_id`]).
    pub fn reusing_slots(mut self) -> Scheduler {
        self.reuse_slots = true;
        self
    }

    /// Hands `f` each request finished since the last call, with its index, in the
    /// order they finished, then gives their places back for later requests. Only a
    /// scheduler [`Scheduler::reusing_slots`] lists them; for another this does nothing.
    pub fn take_ended(&mut self, mut f: impl FnMut(usize, &Request)) {
        let mut ended = std::mem::take(&mut self.ended);
        for &index in &ended {
            f(index, &self.requests[index]);
            self.free.push(index);
        }
        ended.clear();
        self.ended = ended;
    }

    /// The requests running and waiting, with their indexes.
    pub fn in_flight(&self) -> impl Iterator<Item = (usize, &Request)> {
        self.running
            .iter()
            .chain(&self.waiting)
            .map(|&i| (i, &self.requests[i]))
    }

    /// Simulated seconds.
    pub fn now(&self) -> f64 {
        self.state.t
    }

    /// The gauges and counters now.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether nothing is running or waiting.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// Moves the clock forward while idle (time passes between requests).
    pub fn advance_idle(&mut self, to: f64) {
        if self.is_idle() && to > self.state.t {
            self.state.t = to;
        }
    }

    /// A request arrives. Returns its index, or `None` when admission control rejects it.
    pub fn submit(&mut self, prompt: u64, output: u64) -> Option<usize> {
        self.submit_cached(prompt, output, 0)
    }

    /// A request arrives whose first `cached` prompt tokens the prefix cache holds.
    pub fn submit_cached(&mut self, prompt: u64, output: u64, cached: u64) -> Option<usize> {
        self.submit_with_id(self.requests.len() as u64, prompt, output, cached)
    }

    /// [`Scheduler::submit_cached`] of a request that carries the caller's `id` (in its
    /// [`Request::id`] and its events) rather than its place in `requests`: what a
    /// scheduler [`Scheduler::reusing_slots`] needs, whose places are reused.
    pub fn submit_with_id(
        &mut self,
        id: u64,
        prompt: u64,
        output: u64,
        cached: u64,
    ) -> Option<usize> {
        let in_flight = self.running.len() + self.waiting.len();
        // A request that could never fit is refused, as the engines refuse one longer
        // than the pool; otherwise it would wait for ever.
        let never_fits = self.model.units_for(prompt + output.max(1)) > self.model.usable_units();
        let rejected = never_fits
            || match &self.model {
                EngineModel::Vllm(c) => c.max_num_queued_reqs.is_some_and(|l| in_flight >= l),
                _ => false,
            };
        let request = Request {
            id,
            prompt,
            output: output.max(1),
            generated: 0,
            computed: 0,
            units: 0,
            arrived_at: self.state.t,
            first_scheduled_at: None,
            first_token_at: None,
            finished_at: None,
            rejected,
            evictions: 0,
            cached: cached.min(prompt.saturating_sub(1)),
        };
        let index = if !self.reuse_slots {
            self.requests.push(request);
            self.requests.len() - 1
        } else if rejected {
            usize::MAX
        } else if let Some(free) = self.free.pop() {
            self.requests[free] = request;
            free
        } else {
            self.requests.push(request);
            self.requests.len() - 1
        };
        if rejected {
            self.state.rejected += 1;
            if self.record_events {
                self.events
                    .push((self.state.t, Event::Rejected { request_id: id }));
            }
            return None;
        }
        self.waiting.push_back(index);
        self.state.waiting = self.waiting.len();
        Some(index)
    }

    /// Tokens of KV this request computes in its next step: the rest of its prompt (and,
    /// after an eviction, of its output so far), in chunks where the engine chunks; else
    /// the one token sampled last.
    fn step_tokens(&self, index: usize) -> u64 {
        let r = &self.requests[index];
        let target = r.prompt + r.generated;
        let rest = target - r.computed;
        match &self.model {
            EngineModel::Vllm(VllmConfig {
                prefill_chunk_tokens: Some(chunk),
                ..
            }) => rest.min(*chunk),
            _ => rest,
        }
    }

    /// Tokens of KV this request holds after its next step.
    fn tokens_needed(&self, index: usize) -> u64 {
        self.requests[index].computed + self.step_tokens(index)
    }

    /// Keeps an event, unless the scheduler keeps none.
    fn record(&mut self, event: (f64, Event)) {
        if self.record_events {
            self.events.push(event);
        }
    }

    fn evict(&mut self, victim: usize) {
        self.running.retain(|&i| i != victim);
        self.used_units -= self.requests[victim].units;
        self.requests[victim].units = 0;
        self.requests[victim].computed = 0;
        self.requests[victim].evictions += 1;
        self.waiting.push_front(victim);
        self.state.evictions += 1;
    }

    /// Room for every running request's next token, by the engine's eviction rule.
    /// Returns how many were evicted.
    fn make_room(&mut self) -> u32 {
        let usable = self.model.usable_units();
        let mut evicted = 0u32;
        match self.model.clone() {
            EngineModel::Vllm(_) => {
                // Oldest first; without a free block the newest running request is
                // preempted, possibly the one asking.
                let mut i = 0;
                while i < self.running.len() {
                    let id = self.running[i];
                    let need = self.model.units_for(self.tokens_needed(id));
                    let mut self_preempted = false;
                    while need > self.requests[id].units + (usable - self.used_units) {
                        let victim = *self.running.last().expect("the asker is running");
                        self.evict(victim);
                        evicted += 1;
                        if victim == id {
                            self_preempted = true;
                            break;
                        }
                    }
                    if !self_preempted {
                        self.used_units += need - self.requests[id].units;
                        self.requests[id].units = need;
                        i += 1;
                    }
                }
            }
            EngineModel::Sglang(c) => {
                let growth = |s: &Scheduler| -> u64 {
                    s.running
                        .iter()
                        .map(|&i| s.model.units_for(s.tokens_needed(i)) - s.requests[i].units)
                        .sum()
                };
                while !self.running.is_empty() && growth(self) > usable - self.used_units {
                    // SGLang retracts the requests with the least output so far first.
                    let victim = *self
                        .running
                        .iter()
                        .rev()
                        .min_by_key(|&&i| self.requests[i].generated)
                        .expect("not empty");
                    self.evict(victim);
                    evicted += 1;
                }
                if evicted > 0 {
                    let from = self.sglang_ratio;
                    self.sglang_ratio = (from + 0.1).min(1.0).max(c.new_token_ratio);
                    self.record((
                        self.state.t,
                        Event::Retracted {
                            count: evicted,
                            ratio_from: from,
                            ratio_to: self.sglang_ratio,
                        },
                    ));
                }
                for i in self.running.clone() {
                    let need = self.model.units_for(self.tokens_needed(i));
                    self.used_units += need - self.requests[i].units;
                    self.requests[i].units = need;
                }
            }
            EngineModel::Trtllm(c) => {
                let mut i = 0;
                while i < self.running.len() {
                    let id = self.running[i];
                    let need = self.model.units_for(self.tokens_needed(id));
                    let mut self_paused = false;
                    if c.policy == CapacityPolicy::MaxUtilization {
                        while need > self.requests[id].units + (usable - self.used_units) {
                            let victim = *self.running.last().expect("the asker is running");
                            self.evict(victim);
                            evicted += 1;
                            self.record((
                                self.state.t,
                                Event::Paused {
                                    request_id: self.requests[victim].id,
                                },
                            ));
                            if victim == id {
                                self_paused = true;
                                break;
                            }
                        }
                    }
                    if !self_paused {
                        self.used_units += need - self.requests[id].units;
                        self.requests[id].units = need;
                        i += 1;
                    }
                }
            }
        }
        evicted
    }

    /// Units the running requests will still take (admission rules that reserve).
    fn reserved_growth(&self) -> u64 {
        match &self.model {
            EngineModel::Sglang(_) => self
                .running
                .iter()
                .map(|&i| {
                    let r = &self.requests[i];
                    ((r.output - r.generated) as f64 * self.sglang_ratio).ceil() as u64
                })
                .sum(),
            EngineModel::Trtllm(c) if c.policy == CapacityPolicy::GuaranteedNoEvict => self
                .running
                .iter()
                .map(|&i| {
                    let r = &self.requests[i];
                    self.model.units_for(r.prompt + r.output) - r.units
                })
                .sum(),
            _ => 0,
        }
    }

    /// Units a waiting request needs to be admitted (now plus any reservation).
    fn admission_need(&self, index: usize) -> u64 {
        let r = &self.requests[index];
        let now = self.model.units_for(self.tokens_needed(index));
        match &self.model {
            EngineModel::Sglang(_) => {
                now + ((r.output - r.generated) as f64 * self.sglang_ratio).ceil() as u64
            }
            EngineModel::Trtllm(c) if c.policy == CapacityPolicy::GuaranteedNoEvict => {
                self.model.units_for(r.prompt + r.output)
            }
            _ => now,
        }
    }

    /// One engine iteration. Returns the state after it, or `None` when there was nothing
    /// to do.
    pub fn step(&mut self) -> Option<State> {
        if self.is_idle() {
            return None;
        }
        let evicted = self.make_room();
        // vLLM admits nothing in a step that preempted; the others try again at once.
        let may_admit = !(evicted > 0 && matches!(self.model, EngineModel::Vllm(_)));
        let mut prefill_tokens = 0;
        if may_admit {
            let usable = self.model.usable_units();
            let cap = self.model.running_cap();
            while self.running.len() < cap {
                let Some(&id) = self.waiting.front() else {
                    break;
                };
                let reserved = self.reserved_growth();
                let free = usable - self.used_units;
                if self.admission_need(id) > free.saturating_sub(reserved) {
                    break;
                }
                self.waiting.pop_front();
                let units = self.model.units_for(self.tokens_needed(id));
                self.used_units += units;
                let now = self.state.t;
                let r = &mut self.requests[id];
                r.units = units;
                if r.first_scheduled_at.is_none() {
                    // The prompt counter counts a prompt once; recomputing an evicted
                    // request's KV is not new prompt. Its cached prefix is not computed.
                    r.first_scheduled_at = Some(now);
                    self.state.prompt_tokens += r.prompt;
                    self.state.prefix_hits += r.cached;
                    r.computed = r.cached;
                }
                self.running.push(id);
            }
        }
        let paused = match &self.model {
            EngineModel::Trtllm(_) => evicted as usize,
            _ => 0,
        };
        self.state.scheduled = self.running.len();
        self.state.used_units_scheduled = self.used_units;
        let mut step_tokens = std::mem::take(&mut self.step_buf);
        step_tokens.clear();
        step_tokens.extend(self.running.iter().map(|&i| self.step_tokens(i)));
        prefill_tokens += step_tokens.iter().filter(|&&n| n > 1).sum::<u64>();
        self.state.t += self.cost.step_s(self.running.len(), prefill_tokens);
        let now = self.state.t;
        let mut still = std::mem::take(&mut self.still_buf);
        still.clear();
        let mut completed = false;
        for (&id, &n) in self.running.iter().zip(&step_tokens) {
            let r = &mut self.requests[id];
            r.computed += n;
            if r.computed < r.prompt + r.generated {
                // A chunk of a longer prefill: no token sampled yet.
                still.push(id);
                continue;
            }
            r.generated += 1;
            self.state.generated_tokens += 1;
            r.first_token_at.get_or_insert(now);
            if r.generated >= r.output {
                r.finished_at = Some(now);
                self.used_units -= r.units;
                r.units = 0;
                self.state.finished += 1;
                self.state.finished_output_tokens += r.output;
                self.state.finished_prompt_tokens += r.prompt;
                self.state.finished_prefix_hits += r.cached;
                if self.record_events {
                    self.events
                        .push((now, Event::Finished { request_id: r.id }));
                }
                if self.reuse_slots {
                    self.ended.push(id);
                }
                completed = true;
            } else {
                still.push(id);
            }
        }
        self.step_buf = step_tokens;
        self.still_buf = std::mem::replace(&mut self.running, still);
        self.state.running = self.running.len();
        self.state.waiting = self.waiting.len();
        self.state.used_units = self.used_units;
        self.state.paused = paused;
        self.state.completed_in_step = completed;
        Some(self.state)
    }

    /// Takes at once the steps that can only decode: each leaves the scheduler exactly
    /// as [`Scheduler::step`] would, and `each` is handed the time before and after
    /// every one of them, in order. Returns how many were taken: none where the next
    /// step may do more than give every running request its next token.
    ///
    /// A step only decodes when nothing waits (no admission), every running request has
    /// its first token and computes one token (no prefill, no chunk of one, no
    /// recomputation), none reaches its last token (no finish), and the pool holds every
    /// running request at its length after the steps (no preemption, retraction or
    /// pause: each request's blocks only grow, so the last step is the fullest). Its
    /// time is the same each step: the fixed and per-running costs of the same count.
    ///
    /// Nothing arrives in between: the caller, which submits requests between steps,
    /// gives `horizon`, the earliest time at which it would submit one; a step is taken
    /// only when it starts before then (the first, which starts now, always). At most
    /// `max_steps` are taken.
    pub fn fast_forward(
        &mut self,
        max_steps: u64,
        horizon: f64,
        each: &mut dyn FnMut(f64, f64),
    ) -> u64 {
        if !self.waiting.is_empty() || self.running.is_empty() {
            return 0;
        }
        // The steps before the first in which a request takes its last token.
        let mut steps = max_steps;
        for &i in &self.running {
            let r = &self.requests[i];
            if r.generated == 0 || r.computed + 1 != r.prompt + r.generated {
                return 0;
            }
            steps = steps.min(r.output - r.generated - 1);
        }
        let usable = self.model.usable_units();
        let fits = |steps: u64| {
            self.running
                .iter()
                .map(|&i| self.model.units_for(self.requests[i].computed + steps))
                .sum::<u64>()
                <= usable
        };
        while steps > 0 && !fits(steps) {
            steps /= 2;
        }
        if steps == 0 {
            return 0;
        }
        let running = self.running.len();
        let step_s = self.cost.step_s(running, 0);
        let mut t = self.state.t;
        let mut taken = 0;
        while taken < steps {
            // A horizon that is no number is reached at once.
            if taken > 0 && (t >= horizon || horizon.is_nan()) {
                break;
            }
            let next = t + step_s;
            each(t, next);
            t = next;
            taken += 1;
        }
        let Scheduler {
            model,
            requests,
            running: in_running,
            used_units,
            state,
            ..
        } = &mut *self;
        for &i in in_running.iter() {
            let r = &mut requests[i];
            r.computed += taken;
            r.generated += taken;
            let units = model.units_for(r.computed);
            *used_units = *used_units - r.units + units;
            r.units = units;
        }
        state.t = t;
        state.generated_tokens += taken * running as u64;
        state.scheduled = running;
        state.used_units_scheduled = *used_units;
        state.running = running;
        state.waiting = 0;
        state.used_units = *used_units;
        state.paused = 0;
        state.completed_in_step = false;
        taken
    }
}

/// A closed-loop load: `requests` in all, at most `concurrency` outstanding, each with the
/// same prompt and output lengths (what `vllm bench serve --ignore-eos` sends).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Requests in all.
    pub requests: usize,
    /// The most outstanding at once.
    pub concurrency: usize,
    /// Prompt tokens per request.
    pub prompt: u64,
    /// Output tokens per request.
    pub output: u64,
    /// One untimed request first, as `vllm bench serve`'s initial test run.
    pub initial_test: bool,
}

/// What a whole load did: every state after each step, and the requests of the timed run.
#[derive(Debug, Clone)]
pub struct LoadRun {
    /// The state after each step.
    pub timeline: Vec<State>,
    /// The scheduler at the end.
    pub scheduler: Scheduler,
    /// Indexes into `scheduler.requests` of the timed run's requests, in sending order.
    pub timed: Vec<usize>,
    /// Simulated time the timed run started and ended.
    pub start_s: f64,
    /// See `start_s`.
    pub end_s: f64,
}

impl LoadRun {
    /// The most requests running at once.
    pub fn peak_running(&self) -> usize {
        self.timeline.iter().map(|s| s.running).max().unwrap_or(0)
    }

    /// Preemptions, retractions or pauses in all.
    pub fn evictions(&self) -> u64 {
        self.timeline.last().map_or(0, |s| s.evictions)
    }

    /// The state at simulated time `t` (after the last step that ended by then).
    pub fn state_at(&self, t: f64) -> State {
        let i = self.timeline.partition_point(|s| s.t <= t);
        self.timeline[i.saturating_sub(1)]
    }
}

/// Runs a load to the end on a fresh scheduler.
pub fn run_load(model: EngineModel, cost: StepCost, load: Load) -> LoadRun {
    run_load_observed(model, cost, load, &mut |_| {})
}

/// [`run_load`], handing `observe` the scheduler after each step (its requests as that
/// step left them), for what the timeline of states does not keep: each token's time, the
/// blocks each request holds.
pub fn run_load_observed(
    model: EngineModel,
    cost: StepCost,
    load: Load,
    observe: &mut dyn FnMut(&Scheduler),
) -> LoadRun {
    let mut s = Scheduler::new(model, cost);
    let mut timeline = vec![s.state()];
    let drain =
        |s: &mut Scheduler, timeline: &mut Vec<State>, observe: &mut dyn FnMut(&Scheduler)| {
            while let Some(state) = s.step() {
                timeline.push(state);
                observe(s);
            }
        };
    if load.initial_test {
        s.submit(load.prompt, load.output);
        drain(&mut s, &mut timeline, observe);
        // The client's pause between its test request and the timed run.
        let t = s.now() + 0.05;
        s.advance_idle(t);
        timeline.push(s.state());
    }
    let start_s = s.now();
    let mut timed = Vec::with_capacity(load.requests);
    let mut sent = 0;
    let mut outstanding = 0usize;
    loop {
        while sent < load.requests && outstanding < load.concurrency {
            let index = s.requests.len();
            timed.push(index);
            sent += 1;
            if s.submit(load.prompt, load.output).is_some() {
                outstanding += 1;
            }
        }
        let before = s.state().finished;
        match s.step() {
            Some(state) => {
                timeline.push(state);
                observe(&s);
                outstanding -= (state.finished - before) as usize;
            }
            None => break,
        }
    }
    let end_s = s.now();
    LoadRun {
        timeline,
        scheduler: s,
        timed,
        start_s,
        end_s,
    }
}
