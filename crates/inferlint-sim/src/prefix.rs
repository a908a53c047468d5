//! The engines' prefix cache, as far as a benchmark sees it: a prompt that starts like an
//! earlier one finds the KV of that start in the cache, in whole blocks (vLLM's and
//! TensorRT-LLM's blocks, SGLang's pages), and at most all but its last token (the engine
//! computes at least one token to sample from).
//!
//! Prompts are words (the server counts a word as a token). The cache keeps a hash of
//! every block-aligned prefix it has seen; a prompt is served its longest such prefix.

use std::collections::HashSet;

/// Prefixes kept before the cache is emptied (an engine evicts cached blocks as it needs
/// them; a bound is all a simulation needs).
const MAX_PREFIXES: usize = 1 << 20;

/// The block-aligned prompt prefixes the cache holds.
#[derive(Debug, Clone)]
pub struct PrefixCache {
    /// Tokens per block.
    unit: u64,
    seen: HashSet<u64>,
}

impl PrefixCache {
    /// An empty cache of blocks of `unit` tokens (at least 1).
    pub fn new(unit: u64) -> PrefixCache {
        PrefixCache {
            unit: unit.max(1),
            seen: HashSet::new(),
        }
    }

    /// The prompt tokens the cache serves for `prompt`, which it then holds too.
    pub fn serve(&mut self, prompt: &str) -> u64 {
        let words: Vec<&str> = prompt.split_whitespace().collect();
        let usable = (words.len() as u64).saturating_sub(1);
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let mut served = 0;
        let mut prefixes = Vec::new();
        for (i, word) in words.iter().enumerate() {
            // FNV-1a over the words and a separator.
            for byte in word.bytes().chain(std::iter::once(b' ')) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            let tokens = i as u64 + 1;
            if tokens % self.unit == 0 {
                if tokens <= usable && self.seen.contains(&hash) {
                    served = tokens;
                }
                prefixes.push(hash);
            }
        }
        if self.seen.len() + prefixes.len() > MAX_PREFIXES {
            self.seen.clear();
        }
        self.seen.extend(prefixes);
        served
    }

    /// A new server process starts with an empty cache.
    pub fn clear(&mut self) {
        self.seen.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_prompt_is_served_in_whole_blocks_but_its_last_token() {
        let mut cache = PrefixCache::new(16);
        let prompt = "w ".repeat(40);
        assert_eq!(cache.serve(&prompt), 0);
        assert_eq!(cache.serve(&prompt), 32);
        // 32 words: whole, but one token must be computed, so one block less.
        let mut exact = PrefixCache::new(16);
        let p32 = "x ".repeat(32);
        exact.serve(&p32);
        assert_eq!(exact.serve(&p32), 16);
        // A prompt that differs from its first word finds nothing.
        assert_eq!(cache.serve(&format!("other {prompt}")), 0);
    }
}
