//! Boot logs in each engine's real line shapes: the lines inferlint's parsers read, the
//! ready line, and what the engine logs while serving (access lines, SGLang's retraction
//! warnings, TensorRT-LLM's pause lines).

use crate::sched::{EngineModel, Event};
use inferlint_core::story::fmt::thousands;

/// The first line of every simulated log.
pub const SIMULATED_LINE: &str =
    "# simulated by inferlint-sim: not a real server; written from a scheduler model";

/// A UTC calendar time from Unix seconds: (year, month, day, hour, minute, second).
pub fn civil(unix: f64) -> (i64, u32, u32, u32, u32, u32) {
    let (year, month, day, hour, minute, second) =
        inferlint_core::model::civil::utc_parts(unix.floor() as i64);
    // Each part but the year is within 0..=59.
    let small = |n: i64| u32::try_from(n).unwrap_or(0);
    (
        year,
        small(month),
        small(day),
        small(hour),
        small(minute),
        small(second),
    )
}

/// What a boot log needs to know besides the scheduler model.
#[derive(Debug, Clone)]
pub struct BootInfo {
    /// Where the model was loaded from.
    pub model_path: String,
    /// The name completions accept.
    pub served_model_name: String,
    /// The process id the log names.
    pub pid: u32,
    /// The port the log says the server listens on.
    pub port: u16,
    /// Unix seconds the server process started.
    pub start_wall: f64,
    /// Seconds from start to the ready line.
    pub ready_after_s: f64,
    /// The longest context, in tokens.
    pub max_model_len: u64,
}

impl BootInfo {
    /// Unix seconds of the ready line.
    pub fn ready_wall(&self) -> f64 {
        self.start_wall + self.ready_after_s
    }
}

/// One line of the log, with the Unix time it was written.
pub type Line = (f64, String);

fn vllm_stamp(t: f64) -> String {
    let (_, mo, d, h, mi, s) = civil(t);
    format!("{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

fn sglang_stamp(t: f64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("[{y}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}]")
}

fn trt_stamp(t: f64) -> String {
    let (y, mo, d, h, mi, s) = civil(t);
    format!("[{mo:02}/{d:02}/{y}-{h:02}:{mi:02}:{s:02}]")
}

/// The log up to and including the ready line.
pub fn boot_lines(model: &EngineModel, info: &BootInfo) -> Vec<Line> {
    let t0 = info.start_wall;
    let at = |f: f64| t0 + info.ready_after_s * f;
    let mut lines: Vec<Line> = Vec::new();
    match model {
        EngineModel::Vllm(c) => {
            let api = |t: f64, file: &str, text: &str| {
                (
                    t,
                    format!(
                        "(APIServer pid={}) INFO {} [{file}] {text}",
                        info.pid,
                        vllm_stamp(t)
                    ),
                )
            };
            let core = |t: f64, file: &str, text: &str| {
                (
                    t,
                    format!(
                        "(EngineCore pid={}) INFO {} [{file}] {text}",
                        info.pid + 79,
                        vllm_stamp(t)
                    ),
                )
            };
            let mut args = format!(
                "{{'model_tag': '{m}', 'host': '127.0.0.1', 'port': {p}, 'model': '{m}', 'max_model_len': {len}, 'served_model_name': ['{name}'], 'max_num_seqs': {seqs}",
                m = info.model_path,
                p = info.port,
                len = info.max_model_len,
                name = info.served_model_name,
                seqs = c.max_num_seqs
            );
            if let Some(l) = c.max_num_queued_reqs {
                args.push_str(&format!(", 'max_num_queued_reqs': {l}"));
            }
            args.push('}');
            let usable = c.num_gpu_blocks - 1;
            let per_request_blocks = c.kv_groups + c.state_blocks_per_request;
            let pool_tokens = usable * c.block_size * c.kv_groups / per_request_blocks.max(1);
            let concurrency = pool_tokens as f64 / info.max_model_len as f64;
            lines.push(api(
                at(0.0),
                "api_server.py:1898",
                "vLLM API server version 0.28.0",
            ));
            lines.push(api(
                at(0.01),
                "api_utils.py:272",
                &format!("non-default args: {args}"),
            ));
            lines.push(core(
                at(0.1),
                "core.py:122",
                &format!(
                    "Initializing a V1 LLM engine (v0.28.0) with config: model='{m}', speculative_config=None, tokenizer='{m}', dtype=torch.bfloat16, max_seq_len={len}, enforce_eager=False",
                    m = info.model_path,
                    len = info.max_model_len
                ),
            ));
            lines.push(core(
                at(0.15),
                "cuda.py:486",
                "Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION'].",
            ));
            lines.push(core(
                at(0.6),
                "gpu_model_runner.py:5515",
                "Model loading took 17.71 GiB memory and 79.414045 seconds",
            ));
            if c.block_size != 16 {
                lines.push(core(
                    at(0.6),
                    "interface.py:911",
                    &format!("Setting attention block size to {} tokens to ensure that attention page size is >= mamba page size.", c.block_size),
                ));
                lines.push(core(
                    at(0.6),
                    "interface.py:935",
                    "Padding mamba page size by 0.13% to ensure that mamba page size and attention page size are exactly equal.",
                ));
            }
            lines.push(core(
                at(0.7),
                "gpu_model_runner.py:6941",
                "Estimated CUDA graph memory: 0.20 GiB total",
            ));
            lines.push(core(
                at(0.7),
                "gpu_worker.py:578",
                "Available KV cache memory: 2.09 GiB",
            ));
            lines.push(core(
                at(0.7),
                "kv_cache_utils.py:1869",
                &format!(
                    "GPU KV cache size: {} tokens, Maximum concurrency for {} tokens per request: {:.2}x",
                    thousands(pool_tokens as i64),
                    thousands(info.max_model_len as i64),
                    concurrency
                ),
            ));
            lines.push(core(
                at(0.8),
                "gpu_worker.py:741",
                "CUDA graph pool memory: 0.18 GiB (actual), 0.2 GiB (estimated), difference: 0.02 GiB (12.0%).",
            ));
            // vLLM's start-up memory line, as the recording this model is calibrated on
            // printed it (a 23.99 GiB card with 22.45 GiB free): the weights, activations
            // and graphs leave the card no more room than the cache already has.
            lines.push(core(
                at(0.8),
                "gpu_worker.py:804",
                "Free memory on device (22.45/23.99 GiB) on startup. Desired GPU memory utilization is (0.9, 21.59 GiB). Actual usage is 18.16 GiB for consumed memory (weights + non-torch), 2.06 GiB for peak activation, and 0.18 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=1894246216` (1.76 GiB) to fit into requested memory, or `--kv-cache-memory=2045183488` (1.9 GiB) to fully utilize gpu memory. Current kv cache memory in use is 2.09 GiB.",
            ));
            lines.push(api(
                at(0.98),
                "api_server.py:657",
                &format!("Starting vLLM server on http://127.0.0.1:{}", info.port),
            ));
            let t = info.ready_wall();
            let p = info.pid;
            lines.push((
                t,
                format!("(APIServer pid={p}) INFO:     Started server process [{p}]"),
            ));
            lines.push((
                t,
                format!("(APIServer pid={p}) INFO:     Waiting for application startup."),
            ));
            lines.push((
                t,
                format!("(APIServer pid={p}) INFO:     Application startup complete."),
            ));
        }
        EngineModel::Sglang(c) => {
            let l = |t: f64, text: &str| (t, format!("{} {text}", sglang_stamp(t)));
            lines.push(l(
                at(0.0),
                "Attention backend not specified. Use flashinfer backend by default.",
            ));
            lines.push(l(
                at(0.01),
                &format!(
                    "server_args={{'model_path': '{m}', 'tokenizer_path': '{m}', 'served_model_name': '{name}', 'host': '127.0.0.1', 'port': {port}, 'context_length': {len}, 'page_size': {page}, 'max_running_requests': {run}, 'mem_fraction_static': 0.88, 'attention_backend': None, 'speculative_algorithm': None, 'disable_cuda_graph': False, 'disable_radix_cache': True, 'enable_metrics': True, 'random_seed': 1234}}",
                    m = info.model_path,
                    name = info.served_model_name,
                    port = info.port,
                    len = info.max_model_len,
                    page = c.page_size,
                    run = c.max_running_requests
                ),
            ));
            lines.push(l(
                at(0.5),
                "Load weight end. elapsed=74.16 s, type=Qwen3ForCausalLM, quant=None, avail mem=4.72 GB, mem usage=17.65 GB.",
            ));
            let kv_gb = c.max_total_num_tokens as f64 * 0.000_030_5;
            lines.push(l(
                at(0.52),
                &format!(
                    "KV Cache is allocated. dtype: torch.bfloat16, #tokens: {}, K size: {kv_gb:.2} GB, V size: {kv_gb:.2} GB",
                    c.max_total_num_tokens
                ),
            ));
            if let Some(slots) = c.mamba_slots.filter(|m| *m < c.max_running_requests) {
                lines.push(l(
                    at(0.53),
                    &format!("max_running_requests is capped to {slots} by the mamba state cache (max_mamba_cache_size={slots}, 1 state slots per request). To raise it: increase --mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16."),
                ));
            }
            lines.push(l(at(0.9), "Capture cuda graph end. Time elapsed: 12.30 s. mem usage=0.87 GB. avail mem=0.58 GB."));
            lines.push(l(
                at(0.92),
                &format!(
                    "max_total_num_tokens={}, chunked_prefill_size=4096, max_prefill_tokens=16384, max_running_requests={}, context_len={}, available_gpu_mem=0.58 GB",
                    c.max_total_num_tokens,
                    c.running_cap(),
                    info.max_model_len
                ),
            ));
            let t = info.ready_wall();
            lines.push(l(
                t,
                &format!("INFO:     Started server process [{}]", info.pid),
            ));
            lines.push(l(t, "INFO:     Waiting for application startup."));
            lines.push(l(t, "INFO:     Application startup complete."));
            lines.push(l(
                t,
                &format!(
                    "INFO:     Uvicorn running on http://127.0.0.1:{} (Press CTRL+C to quit)",
                    info.port
                ),
            ));
            lines.push(l(t, "The server is fired up and ready to roll!"));
        }
        EngineModel::Trtllm(c) => {
            let i = |t: f64, text: &str| (t, format!("{} [TRT-LLM] [I] {text}", trt_stamp(t)));
            lines.push((
                at(0.0),
                "[TensorRT-LLM] TensorRT LLM version: 1.3.0rc29".to_owned(),
            ));
            lines.push(i(at(0.01), "[llmapi] Using LLM with PyTorch backend"));
            lines.push(i(
                at(0.4),
                "[_torch] Memory used at after loading weights (inside torch) in memory usage profiling: 15.31 GiB",
            ));
            lines.push((
                at(0.5),
                format!(
                    "[TRT-LLM] [I] [batchmgr][RANK 0] Max KV cache blocks per sequence: {} [window size={len}], tokens per block={}, primary blocks={}, secondary blocks=0, max sequence length={len}",
                    info.max_model_len / c.tokens_per_block,
                    c.tokens_per_block,
                    c.blocks,
                    len = info.max_model_len
                ),
            ));
            lines.push((
                at(0.5),
                format!(
                    "[TRT-LLM] [I] [batchmgr][RANK 0] [MemUsageChange] Allocated {:.2} GiB for max tokens in paged KV cache ({}).",
                    (c.blocks * c.tokens_per_block) as f64 * 0.000_137_5,
                    c.blocks * c.tokens_per_block
                ),
            ));
            lines.push(i(
                at(0.52),
                &format!(
                    "[_torch] max_seq_len={}, max_num_requests={}, max_num_tokens=8192, max_batch_size={}",
                    info.max_model_len, c.max_num_requests, c.max_num_requests
                ),
            ));
            lines.push(i(at(0.9), "[_torch] LLM Args:"));
            let policy = c.policy.name();
            lines.push((
                at(0.9),
                format!(
                    "model='{m}' tokenizer=None tensor_parallel_size=1 dtype='auto' kv_cache_config=KvCacheConfig(enable_block_reuse=True, free_gpu_memory_fraction=0.9, tokens_per_block={tpb}, dtype='auto') enable_chunked_prefill=False scheduler_config=SchedulerConfig(capacity_scheduler_policy=<CapacitySchedulerPolicy.{policy}: '{policy}'>, context_chunking_policy=None) speculative_config=None max_batch_size={mb} max_seq_len={len} max_num_tokens=8192 attn_backend='TRTLLM' backend='pytorch' return_perf_metrics=True enable_iter_perf_stats=True",
                    m = info.model_path,
                    tpb = c.tokens_per_block,
                    mb = c.max_num_requests,
                    len = info.max_model_len
                ),
            ));
            let t = info.ready_wall();
            lines.push((
                t,
                format!("INFO:     Started server process [{}]", info.pid),
            ));
            lines.push((t, "INFO:     Waiting for application startup.".to_owned()));
            lines.push((t, "INFO:     Application startup complete.".to_owned()));
            lines.push((
                t,
                format!(
                    "INFO:     Uvicorn running on http://127.0.0.1:{} (Press CTRL+C to quit)",
                    info.port
                ),
            ));
        }
    }
    lines
}

/// What the server logs while serving: one line per event, at `load_start_wall` plus the
/// event's simulated time. `client_port` numbers the access lines.
pub fn serving_lines(
    model: &EngineModel,
    info: &BootInfo,
    events: &[(f64, Event)],
    load_start_wall: f64,
) -> Vec<Line> {
    let mut lines = Vec::new();
    for (k, (t, event)) in events.iter().enumerate() {
        let wall = load_start_wall + t;
        let access = format!(
            "INFO:     127.0.0.1:{} - \"POST /v1/completions HTTP/1.1\" 200 OK",
            35_000 + (k * 7) % 20_000
        );
        let text = match (model, event) {
            (EngineModel::Vllm(_), Event::Finished { .. }) => {
                format!("(APIServer pid={}) {access}", info.pid)
            }
            (EngineModel::Vllm(_), Event::Rejected { .. }) => format!(
                "(APIServer pid={}) INFO:     127.0.0.1:{} - \"POST /v1/completions HTTP/1.1\" 503 Service Unavailable",
                info.pid,
                35_000 + (k * 7) % 20_000
            ),
            (EngineModel::Sglang(_), Event::Finished { .. }) => {
                format!("{} {access}", sglang_stamp(wall))
            }
            (EngineModel::Sglang(_), Event::Retracted { count, ratio_from, ratio_to }) => format!(
                "{} KV cache pool is full. Retract requests. #retracted_reqs: {count}, #new_token_ratio: {ratio_from:.4} -> {ratio_to:.4}",
                sglang_stamp(wall)
            ),
            (EngineModel::Trtllm(_), Event::Finished { .. }) => access,
            (EngineModel::Trtllm(_), Event::Paused { request_id }) => format!(
                "{} [TRT-LLM] [I] MaxUtilizationScheduler: request ID {} -> pause",
                trt_stamp(wall),
                request_id + 1
            ),
            _ => continue,
        };
        lines.push((wall, text));
    }
    lines
}

/// What the HTTP server (uvicorn) prints when it is stopped with SIGINT or SIGTERM, at
/// Unix time `wall`, in each engine's line shape.
pub fn shutdown_lines(model: &EngineModel, info: &BootInfo, wall: f64) -> Vec<Line> {
    [
        "INFO:     Shutting down".to_owned(),
        "INFO:     Waiting for application shutdown.".to_owned(),
        "INFO:     Application shutdown complete.".to_owned(),
        format!("INFO:     Finished server process [{}]", info.pid),
    ]
    .into_iter()
    .map(|text| {
        let line = match model {
            EngineModel::Vllm(_) => format!("(APIServer pid={}) {text}", info.pid),
            EngineModel::Sglang(_) => format!("{} {text}", sglang_stamp(wall)),
            EngineModel::Trtllm(_) => text,
        };
        (wall, line)
    })
    .collect()
}

/// The line an engine writes when it compiles a kernel or captures a CUDA graph while it
/// serves, at Unix time `wall`: vLLM's kernel JIT monitor, SGLang's graph capture,
/// TensorRT-LLM's warm-up pass.
pub fn compile_line(model: &EngineModel, info: &BootInfo, wall: f64) -> String {
    match model {
        EngineModel::Vllm(_) => format!(
            "(EngineCore pid={}) WARNING {} [jit_monitor.py:141] Triton kernel JIT compilation during inference: _topk_topp_kernel. This causes a latency spike; consider extending warmup to cover this shape/config.",
            info.pid + 79,
            vllm_stamp(wall)
        ),
        EngineModel::Sglang(_) => format!(
            "{} Capture cuda graph begin. This can take up to several minutes. avail mem=20.00 GB",
            sglang_stamp(wall)
        ),
        EngineModel::Trtllm(_) => format!(
            "{} [TRT-LLM] [I] [_torch] [warmup][pid={}][rank=0][purpose=final_executor][pass=2] cuda_graph_capture: start",
            trt_stamp(wall),
            info.pid
        ),
    }
}

/// One uvicorn access line as the engine's HTTP server prints it (vLLM prefixes its API
/// server's process, SGLang its time stamp, TensorRT-LLM nothing), written at Unix time
/// `wall` for a request from `client`.
pub fn access_line(
    model: &EngineModel,
    info: &BootInfo,
    wall: f64,
    client: std::net::SocketAddr,
    request: &str,
    status: u16,
) -> String {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    };
    let access = format!("INFO:     {client} - \"{request} HTTP/1.1\" {status} {reason}");
    match model {
        EngineModel::Vllm(_) => format!("(APIServer pid={}) {access}", info.pid),
        EngineModel::Sglang(_) => format!("{} {access}", sglang_stamp(wall)),
        EngineModel::Trtllm(_) => access,
    }
}
