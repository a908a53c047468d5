//! Scheduler models of vLLM, SGLang and TensorRT-LLM, and the replay of a finished run's
//! load through them.
//!
//! [`model`] holds the engines' admission, block allocation, eviction (vLLM's recompute
//! preemption, SGLang's retraction, TensorRT-LLM's pauses under MAX_UTILIZATION) and
//! running caps, one step at a time. [`replay`] sends a workload through a model: each
//! request at the time the load tool sent it (or, in a closed loop, when a slot freed),
//! with the lengths it was served. [`fit`] calibrates the per-step cost on a run's own
//! per-request timings, so that a replay speaks of that card and model.
//!
//! Everything here is pure and deterministic: no I/O, no wall clock, no randomness that
//! is not seeded. Time is the sum of modelled step durations.

#![deny(missing_docs)]

pub mod fit;
pub mod model;
pub mod replay;
pub mod stats;
