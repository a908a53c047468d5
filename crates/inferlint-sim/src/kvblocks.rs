//! The blocks of a paged KV cache with prefix caching, as an engine's KV event stream
//! tells them (vLLM's `BlockPool`, SGLang's pages): which blocks each request holds, the
//! hash each full block is cached under, and the events a scheduler step makes.
//!
//! The scheduler models of [`crate::sched`] count blocks; this follows them block by
//! block, after each step, from what the step left in each request (the tokens whose KV
//! is computed, the units held, whether it finished):
//! - a request that holds more blocks than before takes them from the head of the free
//!   queue; a block taken that still held a cached prefix is evicted:
//!   [`KvEvent::BlockRemoved`];
//! - a block whose tokens are all computed is full, and is cached under a hash of its
//!   tokens and of the block before it: [`KvEvent::BlockStored`], one event for each run
//!   of blocks a request filled in one step. A block whose hash is cached already (a
//!   prefix the cache served, or a preempted request's own blocks when it is recomputed)
//!   is not stored again: the request takes the cached block, as vLLM's lookup at
//!   admission does, and its fresh one goes back to the free queue;
//! - a request that finishes or is preempted frees its blocks to the tail of the free
//!   queue, last block first (vLLM frees in reverse, so that a request's tail is evicted
//!   before its head); they keep their hashes until taken again;
//! - [`KvBlocks::reset`] (vLLM's `POST /reset_prefix_cache`) drops every hash when no
//!   block is in use: [`KvEvent::AllBlocksCleared`], sent with the next step's events.
//!
//! The last token of a request is never fed back to the model, so its KV is never
//! computed: a request of `p` prompt and `o` output tokens fills `(p + o - 1) / B`
//! blocks of `B` tokens (in each group of a hybrid model), less those the cache served.
//!
//! Deterministic and free of clocks: the server feeds it each step as it is applied and
//! publishes its events when the step is; the run folders feed it a whole load.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use crate::sched::{EngineModel, Scheduler};

/// One event of the stream, with the fields the engines fill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvEvent {
    /// Blocks a request filled, in order: each one's hash, the hash of the block before
    /// the first (`None` at the start of a prompt), their tokens, tokens per block.
    BlockStored {
        /// The hashes, one per block.
        block_hashes: Vec<u64>,
        /// The hash of the block before the first one.
        parent_block_hash: Option<u64>,
        /// The tokens of the blocks, in order.
        token_ids: Vec<u32>,
        /// Tokens per block.
        block_size: u64,
        /// The KV cache group (a hybrid model has several).
        group_idx: u32,
    },
    /// Cached blocks evicted for reuse.
    BlockRemoved {
        /// Their hashes.
        block_hashes: Vec<u64>,
        /// Their group.
        group_idx: u32,
    },
    /// The prefix cache was emptied.
    AllBlocksCleared,
}

/// How a model's requests hold blocks: blocks of `block_size` tokens in each of `groups`
/// groups, and `state_blocks` more that hold no tokens (a hybrid model's recurrent state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Tokens per block (SGLang: per page).
    pub block_size: u64,
    /// KV cache groups, each with its own blocks of the same tokens.
    pub groups: u64,
    /// Blocks a running request holds besides its tokens' blocks.
    pub state_blocks: u64,
}

impl Layout {
    /// The layout of an engine's model, as its scheduler counts units.
    pub fn of(model: &EngineModel) -> Layout {
        match model {
            EngineModel::Vllm(c) => Layout {
                block_size: c.block_size.max(1),
                groups: c.kv_groups.max(1),
                state_blocks: c.state_blocks_per_request,
            },
            EngineModel::Sglang(c) => Layout {
                block_size: c.page_size.max(1),
                groups: 1,
                state_blocks: 0,
            },
            EngineModel::Trtllm(c) => Layout {
                block_size: c.tokens_per_block.max(1),
                groups: 1,
                state_blocks: 0,
            },
        }
    }
}

/// One physical block.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The (group, hash) it is cached under.
    cached: Option<(u32, u64)>,
    /// Requests holding it.
    refs: u32,
}

/// What one request holds.
#[derive(Debug, Clone, Default)]
struct Held {
    /// Its blocks, per group, in token order.
    groups: Vec<Vec<usize>>,
    /// Its state blocks.
    state: Vec<usize>,
    /// The hashes of its full blocks, in order (the same in every group).
    chain: Vec<u64>,
    /// Its blocks that are full and accounted for (stored or taken from the cache).
    filled: usize,
}

/// The blocks of one engine's KV cache, followed step by step.
#[derive(Debug, Clone)]
pub struct KvBlocks {
    layout: Layout,
    slots: Vec<Slot>,
    /// Free blocks, the next one to take first.
    free: VecDeque<usize>,
    /// Blocks by (group, hash): every block cached under it.
    cached: HashMap<(u32, u64), Vec<usize>>,
    /// Requests holding blocks (or preempted, holding none), by index.
    held: BTreeMap<usize, Held>,
    /// Requests that arrived and hold nothing yet.
    pending: BTreeSet<usize>,
    /// Requests of the scheduler seen so far.
    seen: usize,
    /// Events waiting for the next step (a reset's clear).
    queued: Vec<KvEvent>,
    /// Blocks taken beyond the pool: the scheduler's count and this one's disagreed.
    overflow: u64,
}

impl KvBlocks {
    /// An empty cache of `model`'s usable blocks.
    pub fn new(model: &EngineModel) -> KvBlocks {
        let pool = usize::try_from(model.usable_units()).unwrap_or(usize::MAX >> 1);
        KvBlocks {
            layout: Layout::of(model),
            slots: vec![Slot::default(); pool],
            free: (0..pool).collect(),
            cached: HashMap::new(),
            held: BTreeMap::new(),
            pending: BTreeSet::new(),
            seen: 0,
            queued: Vec::new(),
            overflow: 0,
        }
    }

    /// Tokens per block.
    pub fn block_size(&self) -> u64 {
        self.layout.block_size
    }

    /// Blocks taken beyond the pool so far (0 unless the scheduler's count of units and
    /// this model's disagree).
    pub fn overflow(&self) -> u64 {
        self.overflow
    }

    /// Blocks cached under a hash now.
    pub fn cached_blocks(&self) -> usize {
        self.cached.values().map(Vec::len).sum()
    }

    /// Blocks some request holds now.
    pub fn blocks_in_use(&self) -> usize {
        self.slots.iter().filter(|s| s.refs > 0).count()
    }

    /// Drops every cached hash, as vLLM's `reset_prefix_cache` does, when no request
    /// holds a block; the clear goes out with the next step's events. Returns whether it
    /// was done (vLLM refuses while blocks are in use).
    pub fn reset(&mut self) -> bool {
        if self.slots.iter().any(|s| s.refs > 0) {
            return false;
        }
        for slot in &mut self.slots {
            slot.cached = None;
        }
        self.cached.clear();
        for held in self.held.values_mut() {
            held.chain.clear();
        }
        self.queued.push(KvEvent::AllBlocksCleared);
        true
    }

    /// The events of the step the scheduler just made, in order: each request's
    /// evictions and stores as its blocks grew and filled. `tokens(request, position)` is
    /// the token at that position of the request's prompt and output.
    pub fn step(
        &mut self,
        scheduler: &Scheduler,
        tokens: &dyn Fn(usize, u64) -> u32,
    ) -> Vec<KvEvent> {
        let mut events = std::mem::take(&mut self.queued);
        let requests = &scheduler.requests;
        for (i, r) in requests.iter().enumerate().skip(self.seen) {
            if !r.rejected {
                self.pending.insert(i);
            }
        }
        self.seen = requests.len();
        let started: Vec<usize> = self
            .pending
            .iter()
            .copied()
            .filter(|&i| requests[i].units > 0 || requests[i].finished_at.is_some())
            .collect();
        for i in started {
            self.pending.remove(&i);
            self.held.insert(i, Held::default());
        }
        // The tokens whose KV each request holds after the step: its computed tokens
        // while it runs (and in the step it finished), none once preempted.
        let holding = |i: usize| {
            let r = &requests[i];
            if r.units > 0 || r.finished_at.is_some() {
                r.computed
            } else {
                0
            }
        };
        let indices: Vec<usize> = self.held.keys().copied().collect();
        // The step's preemptions first: the scheduler made room before anything grew.
        for &i in &indices {
            if holding(i) == 0 {
                if let Some(held) = self.held.get_mut(&i) {
                    let mut held = std::mem::take(held);
                    self.release(&mut held);
                    held.filled = 0;
                    self.held.insert(i, held);
                }
            }
        }
        for i in indices {
            let tokens_held = holding(i);
            if tokens_held == 0 {
                continue;
            }
            let Some(mut held) = self.held.remove(&i) else {
                continue;
            };
            let bs = self.layout.block_size;
            self.grow(&mut held, tokens_held.div_ceil(bs), &mut events);
            self.fill(i, &mut held, tokens_held / bs, tokens, &mut events);
            if requests[i].finished_at.is_some() {
                self.release(&mut held);
            } else {
                self.held.insert(i, held);
            }
        }
        events
    }

    /// Takes the next free block, evicting what it cached.
    fn take(&mut self, events: &mut Vec<KvEvent>) -> usize {
        let Some(id) = self.free.pop_front() else {
            self.overflow += 1;
            self.slots.push(Slot {
                cached: None,
                refs: 1,
            });
            return self.slots.len() - 1;
        };
        if let Some((group, hash)) = self.slots[id].cached.take() {
            self.uncache(group, hash, id);
            events.push(KvEvent::BlockRemoved {
                block_hashes: vec![hash],
                group_idx: group,
            });
        }
        self.slots[id].refs = 1;
        id
    }

    fn uncache(&mut self, group: u32, hash: u64, id: usize) {
        if let Some(ids) = self.cached.get_mut(&(group, hash)) {
            ids.retain(|&b| b != id);
            if ids.is_empty() {
                self.cached.remove(&(group, hash));
            }
        }
    }

    /// Grows every group to `blocks` blocks (and takes the state blocks).
    fn grow(&mut self, held: &mut Held, blocks: u64, events: &mut Vec<KvEvent>) {
        let groups = usize::try_from(self.layout.groups).unwrap_or(1);
        let blocks = usize::try_from(blocks).unwrap_or(usize::MAX);
        held.groups.resize(groups, Vec::new());
        for g in 0..groups {
            while held.groups[g].len() < blocks {
                let id = self.take(events);
                held.groups[g].push(id);
            }
        }
        while (held.state.len() as u64) < self.layout.state_blocks {
            let id = self.take(events);
            held.state.push(id);
        }
    }

    /// Accounts for the request's blocks up to `full`: stores each new one, or takes the
    /// cached block of the same hash in its place.
    fn fill(
        &mut self,
        request: usize,
        held: &mut Held,
        full: u64,
        tokens: &dyn Fn(usize, u64) -> u32,
        events: &mut Vec<KvEvent>,
    ) {
        let bs = self.layout.block_size;
        let full = usize::try_from(full).unwrap_or(usize::MAX);
        if full <= held.filled {
            return;
        }
        let from = held.filled;
        while held.chain.len() < full {
            let j = held.chain.len() as u64;
            let parent = held.chain.last().copied();
            let block: Vec<u32> = (j * bs..(j + 1) * bs).map(|p| tokens(request, p)).collect();
            held.chain.push(block_hash(parent, &block));
        }
        for (g, blocks) in held.groups.iter_mut().enumerate() {
            let group = u32::try_from(g).unwrap_or(u32::MAX);
            let mut run: Vec<usize> = Vec::new();
            for (j, &hash) in held.chain.iter().enumerate().take(full).skip(from) {
                let mine = blocks[j];
                let other = self
                    .cached
                    .get(&(group, hash))
                    .and_then(|ids| ids.iter().copied().find(|&b| b != mine));
                match other {
                    Some(b) => {
                        // The cache holds this block already: take it, free the fresh one.
                        if self.slots[b].refs == 0 {
                            self.free.retain(|&f| f != b);
                        }
                        self.slots[b].refs += 1;
                        blocks[j] = b;
                        let slot = &mut self.slots[mine];
                        slot.refs = slot.refs.saturating_sub(1);
                        if slot.refs == 0 {
                            if let Some((g2, h2)) = slot.cached.take() {
                                self.uncache(g2, h2, mine);
                            }
                            self.free.push_front(mine);
                        }
                        flush_run(
                            &mut run,
                            held.chain.as_slice(),
                            group,
                            bs,
                            request,
                            tokens,
                            events,
                        );
                    }
                    None => {
                        if self.slots[mine].cached.is_none() {
                            self.slots[mine].cached = Some((group, hash));
                            self.cached.entry((group, hash)).or_default().push(mine);
                            run.push(j);
                        }
                    }
                }
            }
            flush_run(
                &mut run,
                held.chain.as_slice(),
                group,
                bs,
                request,
                tokens,
                events,
            );
        }
        held.filled = full;
    }

    /// Frees every block the request holds, last first, to the tail of the free queue.
    fn release(&mut self, held: &mut Held) {
        for blocks in held
            .groups
            .iter_mut()
            .chain(std::iter::once(&mut held.state))
        {
            for &id in blocks.iter().rev() {
                let slot = &mut self.slots[id];
                slot.refs = slot.refs.saturating_sub(1);
                if slot.refs == 0 {
                    self.free.push_back(id);
                }
            }
            blocks.clear();
        }
    }
}

/// One `BlockStored` event for a run of blocks `run` (positions in the request) of
/// `group`, if any.
fn flush_run(
    run: &mut Vec<usize>,
    chain: &[u64],
    group: u32,
    bs: u64,
    request: usize,
    tokens: &dyn Fn(usize, u64) -> u32,
    events: &mut Vec<KvEvent>,
) {
    let (Some(&first), Some(&last)) = (run.first(), run.last()) else {
        return;
    };
    let token_ids = (first as u64 * bs..(last as u64 + 1) * bs)
        .map(|p| tokens(request, p))
        .collect();
    events.push(KvEvent::BlockStored {
        block_hashes: run.iter().map(|&j| chain[j]).collect(),
        parent_block_hash: first.checked_sub(1).map(|p| chain[p]),
        token_ids,
        block_size: bs,
        group_idx: group,
    });
    run.clear();
}

/// A block's hash: FNV-1a over the parent's hash and the block's tokens (vLLM hashes
/// the same inputs with SHA-256 or xxHash; any stable 64-bit hash serves a simulation).
pub fn block_hash(parent: Option<u64>, tokens: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |byte: u8| {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for b in parent.unwrap_or(0).to_le_bytes() {
        eat(b);
    }
    eat(u8::from(parent.is_some()));
    for t in tokens {
        for b in t.to_le_bytes() {
            eat(b);
        }
    }
    h
}

/// What one step's events add up to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Events.
    pub events: u64,
    /// Blocks stored.
    pub stored_blocks: u64,
    /// Tokens in the blocks stored.
    pub stored_tokens: u64,
    /// Blocks removed.
    pub removed_blocks: u64,
    /// Caches cleared.
    pub cleared: u64,
}

impl Tally {
    /// The tally of `events`.
    pub fn of(events: &[KvEvent]) -> Tally {
        let mut t = Tally {
            events: events.len() as u64,
            ..Tally::default()
        };
        for e in events {
            match e {
                KvEvent::BlockStored {
                    block_hashes,
                    token_ids,
                    ..
                } => {
                    t.stored_blocks += block_hashes.len() as u64;
                    t.stored_tokens += token_ids.len() as u64;
                }
                KvEvent::BlockRemoved { block_hashes, .. } => {
                    t.removed_blocks += block_hashes.len() as u64;
                }
                KvEvent::AllBlocksCleared => t.cleared += 1,
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{StepCost, VllmConfig};

    fn vllm(block_size: u64, usable: u64, max_num_seqs: usize) -> EngineModel {
        EngineModel::Vllm(VllmConfig {
            block_size,
            num_gpu_blocks: usable + 1,
            kv_groups: 1,
            state_blocks_per_request: 0,
            max_num_seqs,
            max_num_queued_reqs: None,
            prefill_chunk_tokens: None,
        })
    }

    const COST: StepCost = StepCost {
        fixed_s: 0.01,
        per_running_s: 0.0,
        per_prefill_token_s: 0.0,
    };

    /// Request `i`'s token at `p`: its own first token, then shared words.
    fn tokens(i: usize, p: u64) -> u32 {
        if p == 0 {
            1000 + i as u32
        } else {
            (p % 50) as u32
        }
    }

    fn run(model: EngineModel, loads: &[(u64, u64, u64)]) -> (Vec<Tally>, KvBlocks) {
        let mut s = Scheduler::new(model.clone(), COST);
        let mut kv = KvBlocks::new(&model);
        for &(prompt, output, cached) in loads {
            s.submit_cached(prompt, output, cached);
        }
        let mut tallies = Vec::new();
        while s.step().is_some() {
            tallies.push(Tally::of(&kv.step(&s, &tokens)));
        }
        (tallies, kv)
    }

    /// Four requests of 32 + 16 tokens in blocks of 16: each fills (32 + 16 - 1) / 16 = 2
    /// blocks at its prefill and 0 more (the 47th token is the last computed), so 8 in all,
    /// in one batch; nothing is evicted from a pool of 64.
    #[test]
    fn each_request_stores_the_blocks_it_fills_and_never_its_last_token() {
        let (tallies, kv) = run(vllm(16, 64, 8), &[(32, 16, 0); 4]);
        let stored: u64 = tallies.iter().map(|t| t.stored_blocks).sum();
        assert_eq!(stored, 4 * 2);
        assert_eq!(
            tallies[0].stored_blocks, 8,
            "the prefill step stores the prompts"
        );
        assert_eq!(tallies.iter().map(|t| t.removed_blocks).sum::<u64>(), 0);
        assert_eq!(kv.overflow(), 0);
        assert_eq!(kv.blocks_in_use(), 0);
        assert_eq!(kv.cached_blocks(), 8);
        // 40 + 10 tokens: blocks full at 16, 32 (prefill) and 48 (the 9th output token).
        let (tallies, _) = run(vllm(16, 64, 8), &[(40, 10, 0)]);
        assert_eq!(tallies[0].stored_blocks, 2);
        assert_eq!(tallies.iter().map(|t| t.stored_blocks).sum::<u64>(), 3);
    }

    /// A pool of 4 blocks, requests of 4 blocks one after the other: the second takes the
    /// first's freed blocks, each of which held a cached block: 3 removed (its last block
    /// never filled, so never cached).
    #[test]
    fn a_cached_block_taken_again_is_removed() {
        let (tallies, kv) = run(vllm(16, 4, 1), &[(40, 20, 0), (40, 20, 0)]);
        // Each fills (40 + 20 - 1) / 16 = 3 blocks and holds 4.
        assert_eq!(tallies.iter().map(|t| t.stored_blocks).sum::<u64>(), 6);
        assert_eq!(tallies.iter().map(|t| t.removed_blocks).sum::<u64>(), 3);
        assert_eq!(kv.overflow(), 0);
    }

    /// A prompt the cache served (the scheduler's `cached`) is not stored again: its
    /// blocks are taken from the cache.
    #[test]
    fn a_served_prefix_is_not_stored_again() {
        let model = vllm(16, 64, 8);
        let mut s = Scheduler::new(model.clone(), COST);
        let mut kv = KvBlocks::new(&model);
        let same = |_: usize, p: u64| p as u32;
        s.submit(48, 4);
        let mut stored = 0;
        while s.step().is_some() {
            stored += Tally::of(&kv.step(&s, &same)).stored_blocks;
        }
        assert_eq!(stored, 3, "(48 + 4 - 1) / 16");
        // The same prompt again, its first 32 tokens served: block 3 (tokens 32..48) is
        // computed again, and it is cached already, as are blocks 1 and 2.
        s.submit_cached(48, 4, 32);
        let mut again = 0;
        while s.step().is_some() {
            again += Tally::of(&kv.step(&s, &same)).stored_blocks;
        }
        assert_eq!(again, 0);
        assert_eq!(kv.cached_blocks(), 3);
    }

    /// The cache is cleared only when no block is in use, and the clear goes out with the
    /// next step.
    #[test]
    fn reset_clears_only_an_idle_cache() {
        let model = vllm(16, 64, 8);
        let mut s = Scheduler::new(model.clone(), COST);
        let mut kv = KvBlocks::new(&model);
        s.submit(48, 8);
        s.step();
        kv.step(&s, &tokens);
        assert!(!kv.reset(), "a running request holds blocks");
        while s.step().is_some() {
            kv.step(&s, &tokens);
        }
        assert!(kv.reset());
        assert_eq!(kv.cached_blocks(), 0);
        s.submit(48, 8);
        s.step();
        let first = kv.step(&s, &tokens);
        assert_eq!(first[0], KvEvent::AllBlocksCleared);
        // The same prompt is stored again: nothing was cached any more.
        assert_eq!(Tally::of(&first).stored_blocks, 3);
    }

    /// Preempted requests free their blocks and, recomputed, take their cached blocks
    /// back rather than store them again; the model never takes more blocks than the pool.
    #[test]
    fn preemption_frees_and_recompute_takes_back() {
        // 12 usable blocks of 16; 4 requests of 16 + 64 tokens grow to 5 blocks each:
        // vLLM's model preempts.
        let (tallies, kv) = run(vllm(16, 12, 8), &[(16, 64, 0); 4]);
        assert_eq!(kv.overflow(), 0);
        let stored: u64 = tallies.iter().map(|t| t.stored_blocks).sum();
        // Each request fills (16 + 64 - 1) / 16 = 4 blocks of its own; a recomputed one
        // stores again only what was evicted meanwhile.
        assert!(stored >= 16, "{stored}");
        assert_eq!(kv.blocks_in_use(), 0);
    }
}
