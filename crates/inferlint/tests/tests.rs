//! Integration tests of the library as a harness uses it.

/// A run put together from raw `/metrics` text and a client's counts.
mod builder;
/// Inputs at the ends of their types: no panic, no wrap.
mod extremes;
/// Fleet folders, checked replica by replica and as a fleet; a side's repeats.
mod fleets;
/// Run folders: the same verdicts and refusals as the command line.
mod folders;
/// Another run's data mixed into this run's files.
mod foreign;
/// An older vLLM (0.16) read from its own files' forms.
mod older_vllm;
/// The step file's finished requests as the server's record of each, on the real vLLM.
mod real_finished;
/// Engine steps recorded inside the real vLLM, judged.
mod real_steps;
/// The recorder: started before the load, finished after it, never losing what it read.
#[cfg(all(feature = "live", feature = "sim"))]
mod recorder;
/// How preemptions fell on the requests: the histogram against the engine's own records.
mod spread;
/// Why requests waited at the server: vLLM's waiting split by reason on a real run.
mod waiting;
