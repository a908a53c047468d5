//! A simulated inference server: scheduler models of vLLM, SGLang and TensorRT-LLM, the
//! run folders they would leave behind, an HTTP server that speaks each engine's formats,
//! and a load generator.
//!
//! The key design decision: the scheduler models ([`sched`], the `inferlint-sched` crate,
//! which the checks also use to replay a run's load) are pure and step-based.
//! Time is the sum of modelled step durations, never the wall clock, so a run folder made
//! from a fixed seed is identical byte for byte on every machine, and the calibration
//! tests compare the model with recorded runs exactly. The HTTP server paces the same
//! steps in real time, scaled by a speed factor.

#![deny(missing_docs)]

pub mod bootlog;
pub mod cases;
pub mod expo;
pub mod gpu;
pub mod kvblocks;
pub mod kvpub;
pub mod kvwire;
pub mod load;
pub mod otlp;
pub mod otlp_export;
pub mod pages;
pub mod prefix;
pub mod prometheus;
pub mod rng;
pub mod runfolder;
pub mod runtraces;
/// The scheduler models (the `inferlint-sched` crate), with the engine each one models.
pub mod sched {
    pub use inferlint_sched::model::*;

    use inferlint_core::Engine;

    /// The engine a scheduler model models: the one this crate's servers and run folders
    /// speak for.
    pub trait ModelEngine {
        /// The engine it models.
        fn engine(&self) -> Engine;
    }

    impl ModelEngine for EngineModel {
        fn engine(&self) -> Engine {
            match self {
                EngineModel::Vllm(_) => Engine::Vllm,
                EngineModel::Sglang(_) => Engine::Sglang,
                EngineModel::Trtllm(_) => Engine::Trtllm,
            }
        }
    }
}
pub mod server;
pub mod sweep;
