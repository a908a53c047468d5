//! The clear-card rule (T2), as a pure function of readings: the card before a server
//! starts (the gate) and after the servers are stopped (teardown, xray's stop).
//!
//! A reading is clear only when no server process is alive **and** every GPU uses at most
//! `max_used_mib`. Both halves are needed, and the H200 recording shows why: 0.15 s after
//! SIGTERM NVML already read 0 MiB used while the engine process lived 2 s longer (memory
//! alone would call the card clear too early), and inside a container an engine of
//! another PID namespace holds 21 GiB while /proc shows no server at all (processes alone
//! would miss it). `consecutive` clear readings in a row make the card clear; any other
//! reading starts the count again. The GPU crate takes the readings; this judges them.

use serde_json::{json, Value};

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::story::fmt::g;

/// One mebibyte, the unit nvidia-smi and every line inferlint prints use.
pub const MIB: u64 = 1 << 20;

/// Bytes as whole MiB, rounded to the nearest as nvidia-smi does (the H200's 22,123,708,416
/// bytes in use print as 21,099 MiB there and here).
pub fn mib(bytes: u64) -> u64 {
    (bytes + MIB / 2) / MIB
}

/// The rule's settings (`--max-used-mib`, `--consecutive`, `--timeout`). More may come
/// (it is `#[non_exhaustive]`): start from [`ClearRule::gate`] or
/// [`ClearRule::teardown`] and set the fields to change.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ClearRule {
    /// The most memory a GPU may use and count as clear, in MiB.
    pub max_used_mib: u64,
    /// Clear readings in a row needed.
    pub consecutive: u32,
    /// Seconds to wait for a clear card; 0 takes exactly one reading.
    pub timeout_s: f64,
    /// Seconds between readings.
    pub interval_s: f64,
}

/// The seconds between readings.
pub const INTERVAL_S: f64 = 2.0;

impl ClearRule {
    /// teardown's defaults: 800 MiB, 2 in a row, 120 s.
    pub fn teardown() -> ClearRule {
        ClearRule {
            max_used_mib: 800,
            consecutive: 2,
            timeout_s: 120.0,
            interval_s: INTERVAL_S,
        }
    }

    /// gpu-inspect's defaults (the gate before a server starts): 800 MiB, 2 in a row, 10 s.
    pub fn gate() -> ClearRule {
        ClearRule {
            timeout_s: 10.0,
            ..ClearRule::teardown()
        }
    }

    /// Clear readings in a row needed. With no time to wait (`--timeout 0`) the one
    /// reading taken decides; a count that could never be reached would only turn
    /// `--timeout 0` into a certain failure.
    pub fn needed(&self) -> u32 {
        if self.timeout_s <= 0.0 {
            1
        } else {
            self.consecutive.max(1)
        }
    }
}

/// What one reading saw of the GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuState {
    /// The most memory any one GPU uses, in bytes.
    MaxUsed(u64),
    /// The GPUs were read but cannot count as clear: no GPU listed, a GPU whose memory
    /// could not be read, an NVML error.
    Unreadable(String),
    /// No NVIDIA driver on this machine: the memory can never be read here.
    NoDriver(String),
}

impl GpuState {
    /// Whole MiB, where known.
    pub fn max_used_mib(&self) -> Option<u64> {
        match self {
            GpuState::MaxUsed(bytes) => Some(mib(*bytes)),
            _ => None,
        }
    }
}

/// One look at the card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Milliseconds after the wait began.
    pub elapsed_ms: u64,
    /// What the GPUs showed.
    pub gpu: GpuState,
    /// Server processes of any engine alive at that moment.
    pub servers_alive: usize,
}

/// What a single reading says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadingVerdict {
    /// No server alive, and no GPU above the limit.
    Clear,
    /// A server alive, or a GPU above the limit (or unreadable).
    NotClear,
    /// No server process, but no driver to read the memory with.
    CannotTell,
}

impl ClearRule {
    /// What one reading says under this rule.
    pub fn judge(&self, reading: &Reading) -> ReadingVerdict {
        if reading.servers_alive > 0 {
            return ReadingVerdict::NotClear;
        }
        match &reading.gpu {
            GpuState::MaxUsed(bytes) if *bytes <= self.max_used_mib.saturating_mul(MIB) => {
                ReadingVerdict::Clear
            }
            GpuState::MaxUsed(_) | GpuState::Unreadable(_) => ReadingVerdict::NotClear,
            GpuState::NoDriver(_) => ReadingVerdict::CannotTell,
        }
    }
}

/// The card's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardVerdict {
    /// `readings` clear readings in a row.
    Clear {
        /// How many.
        readings: u32,
    },
    /// The time ran out; the last reading says why.
    NotClear {
        /// The last reading.
        last: Reading,
    },
    /// No server process is alive, but the memory cannot be read (no driver).
    CannotTell {
        /// Why, in words.
        why: String,
    },
}

/// Folds readings one at a time into the card's verdict.
#[derive(Debug, Clone)]
pub struct ClearCardWatch {
    rule: ClearRule,
    run: u32,
    readings: Vec<Reading>,
}

impl ClearCardWatch {
    /// A wait under `rule`, with no reading yet.
    pub fn new(rule: ClearRule) -> ClearCardWatch {
        ClearCardWatch {
            rule,
            run: 0,
            readings: Vec::new(),
        }
    }

    /// Takes one reading; `Some` once the card is decided: clear after enough clear
    /// readings in a row, Can't tell at once when there is no driver and no server, not
    /// clear when the reading was taken at or after the timeout.
    pub fn push(&mut self, reading: Reading) -> Option<CardVerdict> {
        self.readings.push(reading.clone());
        if let (0, GpuState::NoDriver(why)) = (reading.servers_alive, &reading.gpu) {
            // Waiting will not bring a driver: say so now rather than at the timeout.
            return Some(CardVerdict::CannotTell { why: why.clone() });
        }
        if self.rule.judge(&reading) == ReadingVerdict::Clear {
            self.run += 1;
            if self.run >= self.rule.needed() {
                return Some(CardVerdict::Clear { readings: self.run });
            }
        } else {
            self.run = 0;
        }
        let timeout_ms = (self.rule.timeout_s.max(0.0) * 1000.0).round() as u64;
        (reading.elapsed_ms >= timeout_ms).then_some(CardVerdict::NotClear { last: reading })
    }

    /// Every reading so far.
    pub fn readings(&self) -> &[Reading] {
        &self.readings
    }

    /// The rule.
    pub fn rule(&self) -> &ClearRule {
        &self.rule
    }
}

/// Who asks: the two commands word a failure differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// gpu-inspect, the gate before a server starts.
    Gate,
    /// teardown, the wait after the servers are stopped.
    Teardown,
}

fn servers_words(n: usize) -> String {
    if n == 1 {
        "1 server process alive".to_owned()
    } else {
        format!("{n} server processes alive")
    }
}

/// `not clear after 120s: last reading 21099 MiB used, 1 server process alive`.
pub fn not_clear_reason(rule: &ClearRule, last: &Reading) -> String {
    let used = match &last.gpu {
        GpuState::MaxUsed(bytes) => format!("{} MiB used", mib(*bytes)),
        GpuState::Unreadable(why) | GpuState::NoDriver(why) => format!("memory unknown ({why})"),
    };
    format!(
        "not clear after {}s: last reading {used}, {}",
        g(rule.timeout_s.max(0.0)),
        servers_words(last.servers_alive)
    )
}

/// The readings as evidence: `[elapsed s, max used MiB or null, servers alive]` each.
pub fn readings_evidence(readings: &[Reading]) -> Value {
    Value::Array(
        readings
            .iter()
            .map(|r| {
                json!([
                    (r.elapsed_ms as f64) / 1000.0,
                    r.gpu.max_used_mib(),
                    r.servers_alive
                ])
            })
            .collect(),
    )
}

/// The T2 result for a decided card.
pub fn card_result(asker: Asker, watch: &ClearCardWatch, verdict: &CardVerdict) -> CheckResult {
    let rule = watch.rule();
    let (status, message) = match verdict {
        CardVerdict::Clear { readings: 1 } => (Status::Pass, "1 clear reading".to_owned()),
        CardVerdict::Clear { readings } => (
            Status::Pass,
            format!("{readings} consecutive clear readings"),
        ),
        CardVerdict::NotClear { last } => {
            let reason = not_clear_reason(rule, last);
            let message = match asker {
                Asker::Gate => {
                    format!(
                        "card not clear, so a server started now would get less memory: {reason}"
                    )
                }
                Asker::Teardown => reason,
            };
            (Status::Fail, message)
        }
        CardVerdict::CannotTell { why } => (
            Status::Unknown,
            format!("{why}: no server process is alive, but the GPU memory cannot be read"),
        ),
    };
    CheckResult::new(Tripwire::T2, status, message)
        .with("readings", readings_evidence(watch.readings()))
        .with("max_used_mib", rule.max_used_mib)
        .with("consecutive", rule.needed())
        .with("timeout_s", rule.timeout_s)
}

/// T2 when the server uses no NVIDIA GPU on this machine (`--no-gpu`): there is no card
/// to check.
pub fn no_gpu() -> CheckResult {
    CheckResult::new(
        Tripwire::T2,
        Status::NotApplicable,
        "--no-gpu: the server uses no NVIDIA GPU on this machine, so there is no card to check",
    )
}

/// T2 when the processes could not be read: which server is alive cannot be told, so
/// neither can the card.
pub fn processes_unreadable(why: &str) -> CheckResult {
    CheckResult::new(Tripwire::T2, Status::Unknown, why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(elapsed_ms: u64, used_mib: u64, servers_alive: usize) -> Reading {
        Reading {
            elapsed_ms,
            gpu: GpuState::MaxUsed(used_mib * MIB),
            servers_alive,
        }
    }

    #[test]
    fn a_server_or_memory_resets_the_count() {
        // The established tool's case: clear only after the 5th reading.
        let mut watch = ClearCardWatch::new(ClearRule::teardown());
        let used = [18900, 300, 18500, 250, 240];
        let alive = [1, 0, 1, 0, 0];
        let mut verdicts = Vec::new();
        for i in 0..5 {
            verdicts.push(watch.push(reading(i as u64 * 2000, used[i], alive[i])));
        }
        assert_eq!(verdicts[..4], [None, None, None, None]);
        assert_eq!(verdicts[4], Some(CardVerdict::Clear { readings: 2 }));
    }

    #[test]
    fn the_limit_is_inclusive() {
        let rule = ClearRule::teardown();
        assert_eq!(rule.judge(&reading(0, 800, 0)), ReadingVerdict::Clear);
        let over = Reading {
            gpu: GpuState::MaxUsed(800 * MIB + 1),
            ..reading(0, 0, 0)
        };
        assert_eq!(rule.judge(&over), ReadingVerdict::NotClear);
    }

    #[test]
    fn the_timeout_ends_the_wait_with_the_last_reading() {
        let rule = ClearRule {
            timeout_s: 4.0,
            ..ClearRule::teardown()
        };
        let mut watch = ClearCardWatch::new(rule);
        assert_eq!(watch.push(reading(0, 21099, 1)), None);
        assert_eq!(watch.push(reading(2000, 0, 0)), None);
        let last = reading(4000, 900, 0);
        let verdict = watch.push(last.clone()).unwrap();
        assert_eq!(verdict, CardVerdict::NotClear { last });
        let r = card_result(Asker::Teardown, &watch, &verdict);
        assert_eq!(r.status, Status::Fail);
        assert_eq!(
            r.message,
            "not clear after 4s: last reading 900 MiB used, 0 server processes alive"
        );
        assert_eq!(
            r.evidence["readings"],
            json!([[0.0, 21099, 1], [2.0, 0, 0], [4.0, 900, 0]])
        );
    }

    #[test]
    fn timeout_zero_takes_one_reading() {
        let rule = ClearRule {
            timeout_s: 0.0,
            ..ClearRule::gate()
        };
        let mut watch = ClearCardWatch::new(rule);
        let verdict = watch.push(reading(3, 0, 0)).unwrap();
        assert_eq!(
            card_result(Asker::Gate, &watch, &verdict).message,
            "1 clear reading"
        );
        let mut watch = ClearCardWatch::new(rule);
        let verdict = watch.push(reading(3, 5000, 0)).unwrap();
        let r = card_result(Asker::Gate, &watch, &verdict);
        assert_eq!(r.status, Status::Fail);
        assert!(r.message.starts_with("card not clear"), "{}", r.message);
        assert!(r
            .message
            .ends_with("not clear after 0s: last reading 5000 MiB used, 0 server processes alive"));
    }

    #[test]
    fn no_driver_is_cannot_tell_once_no_server_is_alive() {
        let mut watch = ClearCardWatch::new(ClearRule::teardown());
        let no_driver = |servers_alive| Reading {
            elapsed_ms: 0,
            gpu: GpuState::NoDriver("no NVIDIA driver found (x)".into()),
            servers_alive,
        };
        assert_eq!(watch.push(no_driver(1)), None);
        let verdict = watch.push(no_driver(0)).unwrap();
        let r = card_result(Asker::Teardown, &watch, &verdict);
        assert_eq!(r.status, Status::Unknown);
        assert!(
            r.message.contains("no NVIDIA driver found"),
            "{}",
            r.message
        );
        assert_eq!(
            r.evidence["readings"],
            json!([[0.0, null, 1], [0.0, null, 0]])
        );
    }

    /// A server on no NVIDIA GPU has no card to hold: T2 does not apply, never passes.
    #[test]
    fn no_gpu_does_not_apply() {
        assert_eq!(no_gpu().status, Status::NotApplicable);
    }

    /// Without the process table no reading can say whether a server is alive, which
    /// half of the rule needs: the card is Can't tell, with the reason.
    #[test]
    fn unreadable_processes_cannot_tell() {
        let r = processes_unreadable("cannot read /proc: permission denied");
        assert_eq!(r.status, Status::Unknown);
        assert_eq!(r.message, "cannot read /proc: permission denied");
    }

    #[test]
    fn an_unreadable_gpu_is_not_clear() {
        let rule = ClearRule::teardown();
        let r = Reading {
            elapsed_ms: 0,
            gpu: GpuState::Unreadable("NVML lists no GPU".into()),
            servers_alive: 0,
        };
        assert_eq!(rule.judge(&r), ReadingVerdict::NotClear);
        assert!(not_clear_reason(&rule, &r).contains("memory unknown (NVML lists no GPU)"));
    }
}
