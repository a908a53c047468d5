//! Lines an engine writes when it compiles kernels or captures CUDA graphs. At start-up
//! they are expected; after the ready line they are start-up work done while requests
//! were served, which T19 places inside or outside the run by their time stamps.
//!
//! Each engine's shapes are data in its table (`EngineDescriptor::compile_lines`), from
//! its own source and logs:
//! - vLLM: `Triton kernel JIT compilation during inference: NAME` (its kernel JIT monitor,
//!   `jit_monitor.py`, logs one line per compile it sees after start-up), the CUDA graph
//!   capture (`Capturing CUDA graphs`, `Graph capturing finished`) and torch.compile
//!   (`Compiling a graph for`, `torch.compile took`, `torch.compile takes`);
//! - SGLang: its CUDA graph capture (`Capture cuda graph begin`, and from 0.5
//!   `Capture target decode CUDA graph begin`, `... end`);
//! - TensorRT-LLM: its warm-up passes' graph capture and autotuner
//!   (`cuda_graph_capture: start`, `autotuner: start`) and `Capturing CUDA graph`.

use inferlint_core::engine::Engine;

/// Whether a line's text (without its prefix) is one of the engine's compile lines
/// ([`EngineDescriptor::compile_lines`](inferlint_core::engine::EngineDescriptor::compile_lines):
/// data in the engine's table, so that a new engine cannot come without them).
pub(crate) fn is_compile_line(engine: Engine, body: &str) -> bool {
    engine
        .descriptor()
        .compile_lines
        .iter()
        .any(|a| body.contains(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_lines_are_recognised() {
        assert!(is_compile_line(
            Engine::Vllm,
            "Triton kernel JIT compilation during inference: _topk_topp_kernel. This causes a latency spike; consider extending warmup to cover this shape/config."
        ));
        assert!(is_compile_line(
            Engine::Vllm,
            "Capturing CUDA graphs (decode, FULL):  29%|██▊       | 2/7"
        ));
        assert!(!is_compile_line(
            Engine::Vllm,
            "Profiling CUDA graph memory: PIECEWISE=11"
        ));
        assert!(is_compile_line(
            Engine::Sglang,
            "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1"
        ));
        assert!(is_compile_line(
            Engine::Trtllm,
            "[warmup][pid=1896][rank=0][purpose=final_executor][pass=2] cuda_graph_capture: start"
        ));
        assert!(!is_compile_line(
            Engine::Trtllm,
            "Run warmup with 32 tokens"
        ));
    }
}
