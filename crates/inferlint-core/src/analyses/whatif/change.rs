//! A change to replay: one engine setting or one load setting and its new value, parsed
//! from `KEY=VALUE` in the engine's own setting names.

use serde::Serialize;

use crate::engine::Engine;
pub use crate::engine::Knob;

/// One change: the knob, its value, and the name it was given by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// What it sets.
    pub knob: Knob,
    /// The new value, as given.
    pub value: String,
    /// The setting's name as the engine writes it (`--max-num-seqs`).
    pub name: &'static str,
}

impl Change {
    /// The value as a whole number, at least 1: no setting the replay counts (requests at
    /// once, blocks, tokens, bytes) can be 0, and a 0 run as 1 would answer another
    /// question than the one asked.
    pub fn count(&self) -> Result<u64, String> {
        let n = self
            .value
            .trim()
            .replace('_', "")
            .parse::<u64>()
            .map_err(|_| format!("{} wants a whole number, not {:?}", self.name, self.value))?;
        if n == 0 {
            return Err(format!("{} must be at least 1, not 0", self.name));
        }
        Ok(n)
    }

    /// Whether the value is one the knob can take at all, checked when the change is
    /// read so that an impossible value is the command line's error before any run is
    /// read: a count is a whole number of at least 1, a rate a number above 0, a share of
    /// memory above 0 and at most 1. Names (a dtype, a policy) are checked where applied.
    fn check_value(&self) -> Result<(), String> {
        match self.knob {
            Knob::MaxRunning
            | Knob::Blocks
            | Knob::CacheBytes
            | Knob::PoolTokens
            | Knob::BlockSize
            | Knob::MaxModelLen
            | Knob::Concurrency => self.count().map(drop),
            Knob::Rate => self.number().map(drop),
            Knob::MemoryFraction => match self.number()? {
                share if share > 1.0 => Err(format!(
                    "{} is a share of memory, at most 1, not {}",
                    self.name, self.value
                )),
                _ => Ok(()),
            },
            Knob::KvDtype | Knob::Policy => Ok(()),
        }
    }

    /// The value as a number (a share, a rate; `inf` allowed).
    pub fn number(&self) -> Result<f64, String> {
        let v = self.value.trim();
        let n = if v.eq_ignore_ascii_case("inf") {
            f64::INFINITY
        } else {
            v.parse::<f64>()
                .map_err(|_| format!("{} wants a number, not {:?}", self.name, self.value))?
        };
        if n.is_nan() || n <= 0.0 {
            return Err(format!("{} must be above 0, not {}", self.name, self.value));
        }
        Ok(n)
    }
}

/// The load's own settings, the same for every engine.
const LOAD_NAMES: &[(Knob, &str)] = &[(Knob::Concurrency, "concurrency"), (Knob::Rate, "rate")];

/// A name with its dashes, underscores, case and YAML section left out, so that
/// `--max-num-seqs`, `max_num_seqs` and `MAX-NUM-SEQS` are one name, and TensorRT-LLM's
/// `free_gpu_memory_fraction` is found with or without `kv_cache_config.`.
fn plain(name: &str) -> String {
    let last = name.rsplit('.').next().unwrap_or(name);
    last.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Every name a run of `engine` accepts, for the error that lists them.
pub fn accepted(engine: Engine) -> Vec<&'static str> {
    engine
        .descriptor()
        .replay_settings
        .iter()
        .map(|(_, n)| *n)
        .chain(LOAD_NAMES.iter().map(|(_, n)| *n))
        .collect()
}

/// `KEY=VALUE` for a run of `engine`: the key is one of the engine's setting names (with
/// or without dashes, in either spelling) or a load setting. A key of another engine says
/// whose it is.
pub fn parse(engine: Engine, text: &str) -> Result<Change, String> {
    let (key, value) = text
        .split_once('=')
        .filter(|(k, v)| !k.trim().is_empty() && !v.trim().is_empty())
        .ok_or_else(|| format!("--set wants KEY=VALUE, not {text:?}"))?;
    let wanted = plain(key);
    let known = LOAD_NAMES
        .iter()
        .find(|(_, n)| plain(n) == wanted)
        .or_else(|| {
            engine
                .descriptor()
                .replay_settings
                .iter()
                .find(|(_, n)| plain(n) == wanted)
        });
    if let Some((knob, name)) = known {
        let change = Change {
            knob: *knob,
            value: value.trim().to_owned(),
            name,
        };
        change.check_value()?;
        return Ok(change);
    }
    let list = accepted(engine).join(", ");
    let elsewhere = Engine::ALL.iter().find_map(|other| {
        let d = other.descriptor();
        d.replay_settings
            .iter()
            .find(|(_, n)| plain(n) == wanted)
            .map(|(_, n)| (d.name, *n))
    });
    match elsewhere {
        Some((other, name)) => Err(format!(
            "{name} is {other}'s setting; this run is {}'s, whose settings are: {list}",
            engine.descriptor().name
        )),
        None => Err(format!(
            "{:?} is no setting the replay knows for {}; it knows: {list}",
            key.trim(),
            engine.descriptor().name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_found_in_either_spelling_and_the_load_for_every_engine() {
        let c = parse(Engine::Vllm, "max_num_seqs=5").unwrap();
        assert_eq!(
            (c.knob, c.name, c.count()),
            (Knob::MaxRunning, "--max-num-seqs", Ok(5))
        );
        let c = parse(Engine::Vllm, "--gpu-memory-utilization=0.95").unwrap();
        assert_eq!(c.knob, Knob::MemoryFraction);
        let c = parse(Engine::Trtllm, "free_gpu_memory_fraction=0.9").unwrap();
        assert_eq!(c.name, "kv_cache_config.free_gpu_memory_fraction");
        let c = parse(Engine::Sglang, "concurrency=4").unwrap();
        assert_eq!(c.knob, Knob::Concurrency);
        assert_eq!(
            parse(Engine::Vllm, "rate=inf").unwrap().number(),
            Ok(f64::INFINITY)
        );
    }

    #[test]
    fn another_engines_setting_and_garbage_are_refused_with_the_names_it_knows() {
        let e = parse(Engine::Vllm, "max-running-requests=5").unwrap_err();
        assert!(
            e.contains("SGLang's setting") && e.contains("--max-num-seqs"),
            "{e}"
        );
        let e = parse(Engine::Vllm, "tensor-parallel-size=2").unwrap_err();
        assert!(e.contains("no setting the replay knows"), "{e}");
        assert!(parse(Engine::Vllm, "max-num-seqs").is_err());
        assert!(parse(Engine::Vllm, "=5").is_err());
        assert!(parse(Engine::Vllm, "max-num-seqs=five").is_err());
        assert!(parse(Engine::Vllm, "rate=-1").is_err());
    }

    /// No engine runs 0 requests at once, and no load keeps 0 open: a 0 once ran as 1
    /// and answered another question. Every count is refused at 0 or below, a rate at 0,
    /// a share of memory above 1; the smallest real value is taken.
    #[test]
    fn a_value_no_server_or_load_can_have_is_refused_when_read() {
        for text in [
            "max-num-seqs=0",
            "concurrency=0",
            "concurrency=-1",
            "num-gpu-blocks-override=0",
            "kv-cache-memory-bytes=0",
            "block-size=0",
            "max-model-len=0",
            "rate=0",
            "gpu-memory-utilization=0",
            "gpu-memory-utilization=1.5",
        ] {
            let e = parse(Engine::Vllm, text).unwrap_err();
            assert!(e.contains(text.split('=').next().unwrap()), "{text}: {e}");
        }
        assert!(parse(Engine::Sglang, "max-total-tokens=0").is_err());
        for text in [
            "max-num-seqs=1",
            "concurrency=1",
            "gpu-memory-utilization=1",
            "rate=0.5",
        ] {
            assert!(parse(Engine::Vllm, text).is_ok(), "{text}");
        }
    }
}
