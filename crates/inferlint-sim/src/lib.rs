//! A simulated inference server: scheduler models of vLLM, SGLang and TensorRT-LLM, the
//! run folders they would leave behind, an HTTP server that speaks each engine's formats,
//! and a load generator.
//!
//! The key design decision: the scheduler models ([`sched`]) are pure and step-based.
//! Time is the sum of modelled step durations, never the wall clock, so a run folder made
//! from a fixed seed is identical byte for byte on every machine, and the calibration
//! tests compare the model with recorded runs exactly. The HTTP server paces the same
//! steps in real time, scaled by a speed factor.

#![deny(missing_docs)]

pub mod bootlog;
pub mod cases;
pub mod expo;
pub mod gpu;
pub mod load;
pub mod prefix;
pub mod prometheus;
pub mod runfolder;
pub mod sched;
pub mod server;
pub mod sweep;
