//! The simulated engine as an HTTP server: the scheduler model of [`crate::sched`] paced
//! in real time, behind the endpoints and formats of the real engine.
//!
//! One thread per server, with its own single-threaded tokio runtime, so a test or the
//! live recorder can start one without an async context. Three kinds of task share one
//! `Sim` behind a mutex that is never held across an `.await`:
//! - the **driver** steps the scheduler. It applies a step at once but *publishes* it only
//!   when the real clock reaches the step's end (simulated seconds divided by `speed`):
//!   `/metrics` and the waiting requests see published states only, so a scrape never
//!   shows the future;
//! - the **accept loop**, one task per connection (hyper's HTTP/1.1 connection, no
//!   framework);
//! - one task per streamed answer, turning published progress into SSE chunks.
//!
//! Times inside the exposition (histograms) are simulated seconds; time stamps
//! (`*_created`, log lines) are the real wall clock.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body, Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use inferlint_core::Engine;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch, Notify};

use crate::bootlog::{self, BootInfo, SIMULATED_LINE};
use crate::expo::{self, MetricsState};
use crate::kvblocks::{KvBlocks, KvEvent};
use crate::kvpub::{KvConfig, KvFaults, KvPublisher, KvStats};
use crate::kvwire::Encoding;
use crate::otlp::{self, Processes, RequestRecord};
use crate::otlp_export::{ExportStats, OtlpConfig, SpanQueue};
use crate::prefix::PrefixCache;
use crate::rng::Rng;
use crate::runfolder::Case;
use crate::sched::{
    CapacityPolicy, EngineModel, Event, Load, ModelEngine, Scheduler, SglangConfig, State,
    StepCost, TrtllmConfig, VllmConfig,
};

/// The served model name of [`ServerConfig::new`]'s cases.
pub const DEFAULT_MODEL_NAME: &str = "sim-model";

/// Answers `max_tokens` when a request does not say (vLLM's default for completions).
const DEFAULT_MAX_TOKENS: u64 = 16;

/// Answers `max_new_tokens` when a `/generate` request does not say (SGLang's default).
const SGLANG_DEFAULT_MAX_NEW_TOKENS: u64 = 128;

/// The largest request body read.
const MAX_BODY_BYTES: usize = 8 << 20;

/// What goes wrong on request, to test the tools that watch a server.
#[derive(Default, Clone, Debug)]
pub struct Faults {
    /// On the Nth completion request (counting from 1) the server stops answering: it
    /// closes its listener and every open connection, that request's included, as a
    /// process that died would. `ServerHandle::boot_log` still answers.
    pub die_on_request: Option<u32>,
    /// Once N completion requests have finished, the server restarts at its next idle
    /// moment (at once when none is in flight): the scheduler, every counter and the
    /// `*_created` stamps start again, and the boot lines are printed again. Once only.
    pub restart_after_requests: Option<u32>,
    /// Accept connections but never answer anything.
    pub hang: bool,
    /// Wait this long before answering the metrics paths.
    pub slow_metrics_ms: Option<u64>,
    /// The metrics paths answer 404 (SGLang started without `--enable-metrics`).
    pub no_metrics: bool,
    /// Completions answer 200 with no text and `completion_tokens` 0, at once.
    pub empty_completions: bool,
    /// Every Nth completion request (counting from 1: the Nth, the 2Nth, ...) answers 500
    /// at once, before it reaches the scheduler, as a request that fails in the API server
    /// does: no engine counter counts it. Load tools then have some failed requests.
    pub error_every: Option<u32>,
    /// Every completion request from the Nth on (counting from 1) answers 500 at once, as
    /// an API server whose engine died does while it still accepts connections.
    pub error_from: Option<u32>,
    /// Completions answer HTTP 500 with this body (a hostile server's escape sequences,
    /// say).
    pub completion_error_body: Option<String>,
    /// The metrics paths answer this status (500, say) with a short error body.
    pub metrics_status: Option<u16>,
    /// The metrics paths answer `302 Found` with this `Location`.
    pub metrics_redirect: Option<String>,
    /// The metrics page carries one extra sample line with a byte that is not UTF-8.
    pub metrics_bad_byte: bool,
    /// What the metrics path with a slash (`/metrics/`) does with `name[]`
    /// ([`crate::pages`]); the path itself ignores it.
    pub name_filter: crate::pages::NameFilter,
    /// The metrics page is padded with comment lines to at least this many bytes (a body
    /// too large to read).
    pub metrics_padding_bytes: Option<usize>,
    /// A cold engine: the first time the server has requests to run (from the Nth
    /// completion request on, with `cold_start_at_request`), it compiles for this many
    /// real milliseconds first (a kernel the engine did not build at start-up, for a shape
    /// it meets then) and logs the engine's compile line; every request running or
    /// waiting then waits that long more.
    pub cold_start_ms: Option<u64>,
    /// With `cold_start_ms`: the compile waits for the Nth completion request (counting
    /// from 1); from the first one without it.
    pub cold_start_at_request: Option<u32>,
    /// The server's GPU, as NVML readings in this file (see [`crate::gpu`]): written when
    /// the server starts, and idle again when it stops.
    pub gpu_readings: Option<std::path::PathBuf>,
    /// With `gpu_readings`: another process starts on the GPU when the Nth completion
    /// request arrives (counting from 1).
    pub gpu_tenant_at_request: Option<u32>,
    /// The KV event stream's faults: batches never sent, a replay that never answers.
    pub kv: KvFaults,
}

/// What the server sends besides its answers and its metrics, as the engine's flags ask.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Traces {
    /// vLLM's spans (`--otlp-traces-endpoint`): where and how they are exported. Only the
    /// vLLM server exports spans (SGLang's are not read by inferlint).
    pub otlp: Option<OtlpConfig>,
    /// The KV event publisher (`--kv-events-config`), vLLM's and SGLang's.
    pub kv_events: Option<KvConfig>,
}

/// What to simulate and how fast.
///
/// `case` supplies the scheduler model, the step cost and the boot facts
/// (`case.boot.served_model_name` is the model name served, `case.boot.max_model_len`
/// the longest prompt plus answer accepted); `case.load` and `case.seed` are not used.
/// The boot log's port, pid and times are the real ones.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The engine's scheduler model, its boot facts and its model name.
    pub case: Case,
    /// Simulated seconds per real second.
    pub speed: f64,
    /// Failures to serve on request.
    pub faults: Faults,
    /// 0 picks any free port.
    pub port: u16,
    /// Tokens per streamed chunk (`--stream-interval`): the first token goes out at once,
    /// then every N, and what is left when the request finishes.
    pub stream_interval: u64,
    /// Spans and KV events.
    pub traces: Traces,
}

impl ServerConfig {
    /// A small, fast server of `engine`: a pool of eight 256-token requests, a 2,048-token
    /// context, the model name `sim-model`, speed 50, no faults, any free port. Panics
    /// for an engine the simulator has no model of ([`small_case`]).
    pub fn new(engine: Engine) -> ServerConfig {
        ServerConfig {
            case: small_case(engine),
            speed: 50.0,
            faults: Faults::default(),
            port: 0,
            stream_interval: 1,
            traces: Traces::default(),
        }
    }
}

/// The case behind [`ServerConfig::new`].
///
/// # Panics
///
/// For an engine the simulator has no scheduler model of (each of [`Engine::ALL`] has
/// one: the tests spawn a server of each).
pub fn small_case(engine: Engine) -> Case {
    let model = match engine {
        // 128 usable 16-token blocks; plain attention (one group, no state blocks).
        Engine::Vllm => EngineModel::Vllm(VllmConfig {
            block_size: 16,
            num_gpu_blocks: 129,
            kv_groups: 1,
            state_blocks_per_request: 0,
            max_num_seqs: 256,
            max_num_queued_reqs: None,
            prefill_chunk_tokens: None,
        }),
        Engine::Sglang => EngineModel::Sglang(SglangConfig {
            max_total_num_tokens: 2048,
            page_size: 1,
            max_running_requests: 32,
            mamba_slots: None,
            new_token_ratio: 0.7,
        }),
        Engine::Trtllm => EngineModel::Trtllm(TrtllmConfig {
            tokens_per_block: 32,
            blocks: 64,
            max_num_requests: 32,
            policy: CapacityPolicy::GuaranteedNoEvict,
        }),
        _ => panic!("the simulator has no model of {engine}"),
    };
    Case {
        name: match &model {
            EngineModel::Vllm(_) => "serve-vllm",
            EngineModel::Sglang(_) => "serve-sglang",
            EngineModel::Trtllm(_) => "serve-trtllm",
        },
        model,
        cost: StepCost {
            fixed_s: 0.015,
            per_running_s: 0.0005,
            per_prefill_token_s: 0.000_02,
        },
        load: Load {
            requests: 8,
            concurrency: 8,
            prompt: 32,
            output: 32,
            initial_test: true,
        },
        seed: 0,
        boot: BootInfo {
            model_path: "/models/sim-model".to_owned(),
            served_model_name: DEFAULT_MODEL_NAME.to_owned(),
            pid: 0,
            port: 0,
            start_wall: 0.0,
            ready_after_s: 2.0,
            max_model_len: 2048,
        },
        save_detailed: false,
        traces: false,
    }
}

/// A running server. Dropping it (or [`ServerHandle::shutdown`]) stops the server and
/// waits for its thread.
pub struct ServerHandle {
    /// The address it listens on (127.0.0.1).
    pub addr: SocketAddr,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHandle")
            .field("addr", &self.addr)
            .field("engine", &self.shared.engine)
            .finish_non_exhaustive()
    }
}

impl ServerHandle {
    /// What the server printed so far: the simulated mark, the boot lines in the engine's
    /// shapes ending with its ready line, then access lines and the engine's serving lines
    /// (SGLang's retractions, TensorRT-LLM's pauses), one per line.
    pub fn boot_log(&self) -> String {
        let sim = self.shared.lock();
        let mut text = String::new();
        for line in &sim.log {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    /// Logs the HTTP server's shutdown, as a server stopped with SIGINT or SIGTERM does.
    pub fn log_shutdown(&self) {
        let lines = bootlog::shutdown_lines(&self.shared.model, &self.shared.boot, unix_now());
        self.shared
            .lock()
            .log
            .extend(lines.into_iter().map(|(_, l)| l));
    }

    /// What the span exporter sent so far; `None` when it exports no spans.
    pub fn span_stats(&self) -> Option<ExportStats> {
        self.shared.spans.as_ref().map(|q| q.exported())
    }

    /// What the KV event publisher did so far; `None` when it publishes nothing.
    pub fn kv_stats(&self) -> Option<KvStats> {
        self.shared
            .lock()
            .kv_publisher
            .as_ref()
            .map(KvPublisher::stats)
    }

    /// Whether the server stopped answering ([`Faults::die_on_request`]).
    pub fn is_dead(&self) -> bool {
        *self.shared.dead.borrow()
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The card is idle once the server is gone.
        if let Some(path) = &self.shared.faults.gpu_readings {
            let _ = crate::gpu::write(path, &crate::gpu::reading(None, false));
        }
    }
}

/// Starts a server on 127.0.0.1 on its own thread; returns once it listens.
pub fn spawn(config: ServerConfig) -> std::io::Result<ServerHandle> {
    if !(config.speed.is_finite() && config.speed > 0.0) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("speed must be a positive number, not {}", config.speed),
        ));
    }
    let std_listener =
        std::net::TcpListener::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, config.port))?;
    std_listener.set_nonblocking(true)?;
    let addr = std_listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let shared = Arc::new(Shared::new(config, addr.port()));
    if let Some(path) = &shared.faults.gpu_readings {
        crate::gpu::write(path, &crate::gpu::reading(Some(shared.boot.pid), false))?;
    }
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<std::io::Result<()>>();
    let task_shared = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name(format!("inferlint-sim-{}", addr.port()))
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(std_listener) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                if let Some(config) = task_shared.kv_config.clone() {
                    match KvPublisher::start(config, task_shared.faults.kv.clone()).await {
                        Ok(publisher) => task_shared.lock().kv_publisher = Some(publisher),
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    }
                }
                let (spans_stop, spans_stopped) = watch::channel(false);
                let exporter = task_shared.spans.clone().map(|queue| {
                    let boot = &task_shared.boot;
                    let batches = {
                        let mut sim = task_shared.lock();
                        otlp::boot_batches(
                            &task_shared.processes,
                            boot.start_wall,
                            boot.start_wall + boot.ready_after_s,
                            &mut sim.rng,
                        )
                    };
                    tokio::spawn(queue.run(task_shared.processes.clone(), batches, spans_stopped))
                });
                tokio::spawn(drive(Arc::clone(&task_shared)));
                tokio::spawn(accept_loop(listener, Arc::clone(&task_shared)));
                let _ = ready_tx.send(Ok(()));
                let _ = stop_rx.await;
                // A server stopped cleanly sends the spans it still holds, as the batch
                // span processor does at shutdown.
                let _ = spans_stop.send(true);
                if let Some(exporter) = exporter {
                    let _ = tokio::time::timeout(Duration::from_secs(5), exporter).await;
                }
            });
            // Dropping the runtime here cancels every task and closes every socket.
        })?;
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e);
        }
        Err(_) => {
            let _ = thread.join();
            return Err(std::io::Error::other(
                "the server thread ended before listening",
            ));
        }
    }
    Ok(ServerHandle {
        addr,
        base_url: format!("http://{addr}"),
        shared,
        stop: Some(stop_tx),
        thread: Some(thread),
    })
}

/// A request's progress as the driver publishes it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Progress {
    generated: u64,
    finished: bool,
}

/// The server's one piece of mutable state.
struct Sim {
    scheduler: Scheduler,
    /// The last state whose end the real clock has reached.
    published: State,
    /// TensorRT-LLM's gauges: the last published step in which a request completed.
    lagging_gauges: State,
    /// Real instant of simulated time 0 (moves on restart).
    origin: Instant,
    /// Unix seconds the counters were created (moves on restart).
    created: f64,
    waiters: HashMap<usize, watch::Sender<Progress>>,
    events_published: usize,
    completion_requests: u32,
    /// Indices of the requests whose finish has been published since the (re)start, in
    /// request order: a scrape's latency histograms read these rather than every request
    /// the server has seen, in the order a scan of all requests would meet them.
    finished: Vec<usize>,
    restarted: bool,
    /// TensorRT-LLM's iteration statistics since the last read of its JSON `/metrics`.
    iterations: Vec<Value>,
    iteration: u64,
    log: Vec<String>,
    next_id: u64,
    /// The prefix cache of the server process.
    prefix: PrefixCache,
    /// The cold start's compile has happened (or none was asked for).
    cold_done: bool,
    /// Each request's life on the wall clock, for its span (when spans are exported).
    lives: HashMap<usize, Life>,
    /// The KV cache block by block (when KV events are published).
    kv: Option<KvBlocks>,
    /// The publisher, once started.
    kv_publisher: Option<KvPublisher>,
    /// Each request's prompt as token ids, while its blocks may still fill.
    tokens: HashMap<usize, Vec<u32>>,
    /// Trace and span ids.
    rng: Rng,
}

/// One request's life as the API server and the engine stamp it, Unix seconds.
#[derive(Debug, Clone)]
struct Life {
    /// `gen_ai.request.id`.
    id: String,
    arrival: f64,
    scheduled: Option<f64>,
    first_token: Option<f64>,
    max_tokens: u64,
}

struct Shared {
    engine: Engine,
    model: EngineModel,
    cost: StepCost,
    boot: BootInfo,
    speed: f64,
    faults: Faults,
    sim: Mutex<Sim>,
    /// Wakes the driver when a request arrives.
    wake: Notify,
    /// Set once the server "dies".
    dead: watch::Sender<bool>,
    /// Tokens per streamed chunk.
    stream_interval: u64,
    /// The span exporter's queue, when spans are exported.
    spans: Option<Arc<SpanQueue>>,
    /// The processes the spans come from.
    processes: Processes,
    /// The KV event publisher's configuration, when asked for.
    kv_config: Option<KvConfig>,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Shared {
    fn new(config: ServerConfig, port: u16) -> Shared {
        let ServerConfig {
            case,
            speed,
            faults,
            stream_interval,
            traces,
            ..
        } = config;
        let mut rng = Rng::new(u64::from(std::process::id()) << 32 | u64::from(port));
        let processes = Processes::new(std::process::id(), &mut rng);
        // Only vLLM's spans are read: the other engines export none here.
        let spans = traces
            .otlp
            .filter(|_| case.model.engine() == Engine::Vllm)
            .map(|c| Arc::new(SpanQueue::new(c)));
        // Each engine publishes in its own encoding; TensorRT-LLM publishes no stream here.
        let kv_config = traces.kv_events.and_then(|mut c| {
            c.encoding = match &case.model {
                EngineModel::Vllm(_) => Encoding::VllmMaps,
                EngineModel::Sglang(_) => Encoding::SglangArrays,
                EngineModel::Trtllm(_) => return None,
            };
            Some(c)
        });
        let now = unix_now();
        let mut boot = case.boot.clone();
        boot.port = port;
        boot.pid = std::process::id();
        boot.start_wall = now - boot.ready_after_s;
        let mut log = vec![SIMULATED_LINE.to_owned()];
        log.extend(
            bootlog::boot_lines(&case.model, &boot)
                .into_iter()
                .map(|(_, l)| l),
        );
        Shared {
            engine: case.model.engine(),
            sim: Mutex::new(Sim {
                scheduler: Scheduler::new(case.model.clone(), case.cost),
                published: State::default(),
                lagging_gauges: State::default(),
                origin: Instant::now(),
                created: now,
                waiters: HashMap::new(),
                events_published: 0,
                completion_requests: 0,
                finished: Vec::new(),
                restarted: false,
                iterations: Vec::new(),
                iteration: 0,
                log,
                next_id: 0,
                prefix: PrefixCache::new(block_tokens(&case.model)),
                cold_done: false,
                lives: HashMap::new(),
                kv: kv_config.as_ref().map(|_| KvBlocks::new(&case.model)),
                kv_publisher: None,
                tokens: HashMap::new(),
                rng,
            }),
            model: case.model,
            cost: case.cost,
            boot,
            speed,
            faults,
            wake: Notify::new(),
            dead: watch::channel(false).0,
            stream_interval: stream_interval.max(1),
            spans,
            processes,
            kv_config,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Sim> {
        // A panic in one handler must not take the other requests down with it.
        self.sim.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn sim_now(&self, sim: &Sim) -> f64 {
        sim.origin.elapsed().as_secs_f64() * self.speed
    }

    async fn wait_dead(&self) {
        let mut rx = self.dead.subscribe();
        let _ = rx.wait_for(|dead| *dead).await;
    }

    fn die(&self) {
        self.dead.send_replace(true);
    }

    fn log_access(&self, client: SocketAddr, request: &str, status: StatusCode) {
        let line = bootlog::access_line(
            &self.model,
            &self.boot,
            unix_now(),
            client,
            request,
            status.as_u16(),
        );
        self.lock().log.push(line);
    }
}

/// Tokens per block of the engine's prefix cache.
fn block_tokens(model: &EngineModel) -> u64 {
    match model {
        EngineModel::Vllm(c) => c.block_size,
        EngineModel::Sglang(c) => c.page_size,
        EngineModel::Trtllm(c) => c.tokens_per_block,
    }
}

/// The cold start: the first time there is work, the engine compiles first. Simulated
/// time stands still meanwhile (every later step is due that much later).
async fn cold_start(shared: &Shared) {
    let Some(ms) = shared.faults.cold_start_ms else {
        return;
    };
    let due = {
        let mut sim = shared.lock();
        let at = shared.faults.cold_start_at_request.unwrap_or(1);
        let due = !sim.cold_done && !sim.scheduler.is_idle() && sim.completion_requests >= at;
        if due {
            sim.cold_done = true;
            let line = bootlog::compile_line(&shared.model, &shared.boot, unix_now());
            sim.log.push(line);
        }
        due
    };
    if due {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        shared.lock().origin += Duration::from_millis(ms);
    }
}

/// Steps the scheduler and publishes each step when the real clock reaches its end.
async fn drive(shared: Arc<Shared>) {
    loop {
        cold_start(&shared).await;
        let stepped = {
            let mut guard = shared.lock();
            let sim = &mut *guard;
            let began = sim.scheduler.now();
            sim.scheduler.step().map(|state| {
                let tokens = &sim.tokens;
                let events = match &mut sim.kv {
                    Some(kv) => kv.step(&sim.scheduler, &|i, p| token_at(tokens, i, p)),
                    None => Vec::new(),
                };
                (
                    Step {
                        state,
                        began,
                        kv_events: events,
                    },
                    sim.origin,
                )
            })
        };
        let Some((step, origin)) = stepped else {
            shared.wake.notified().await;
            continue;
        };
        let due = origin + Duration::from_secs_f64(step.state.t / shared.speed);
        tokio::time::sleep_until(due.into()).await;
        publish(&shared, step);
        // At high speeds many steps are already due; let the handlers run between them.
        tokio::task::yield_now().await;
    }
}

/// One step the driver applied, waiting for its end to be published.
struct Step {
    state: State,
    /// Simulated time it began.
    began: f64,
    /// What it did to the KV cache's blocks.
    kv_events: Vec<KvEvent>,
}

/// The token at `position` of request `index`: its prompt's, then the words generated.
fn token_at(tokens: &HashMap<usize, Vec<u32>>, index: usize, position: u64) -> u32 {
    let prompt = tokens.get(&index).map_or(&[][..], Vec::as_slice);
    let p = usize::try_from(position).unwrap_or(usize::MAX);
    match prompt.get(p) {
        Some(&t) => t,
        None => {
            let k = (p - prompt.len()) % WORDS.len();
            word_id(WORDS[k])
        }
    }
}

/// A word's token id: a stable number of the word, as a tokenizer's vocabulary gives.
fn word_id(word: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in word.trim().bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    1000 + h % 31_000
}

/// Makes a step visible: gauges, the engine's log lines, the requests' progress, their
/// spans, the step's KV events, and a pending restart.
fn publish(shared: &Shared, step: Step) {
    let Step {
        state,
        began,
        kv_events,
    } = step;
    let mut guard = shared.lock();
    let sim = &mut *guard;
    sim.published = state;
    if state.completed_in_step {
        sim.lagging_gauges = state.gauges_at_completion();
    }
    let wall = unix_now();
    let new_events: Vec<(f64, Event)> = sim.scheduler.events[sim.events_published..].to_vec();
    sim.events_published = sim.scheduler.events.len();
    for (_, event) in new_events {
        match event {
            Event::Retracted { .. } | Event::Paused { .. } => {
                let lines =
                    bootlog::serving_lines(&shared.model, &shared.boot, &[(0.0, event)], wall);
                sim.log.extend(lines.into_iter().map(|(_, l)| l));
            }
            Event::Finished { request_id } => {
                let index = request_id as usize;
                let at = sim.finished.partition_point(|&i| i < index);
                sim.finished.insert(at, index);
            }
            Event::Rejected { .. } => {}
        }
    }
    let requests = &sim.scheduler.requests;
    sim.waiters.retain(|&index, tx| {
        let r = &requests[index];
        let now = Progress {
            generated: r.generated,
            finished: r.finished_at.is_some(),
        };
        tx.send_if_modified(|p| {
            let changed = *p != now;
            *p = now;
            changed
        });
        !now.finished
    });
    // The step began this long before its end, on the real clock.
    let began_wall = wall - (state.t - began).max(0.0) / shared.speed;
    if let Some(queue) = &shared.spans {
        let mut done = Vec::new();
        for (&index, life) in &mut sim.lives {
            let r = &requests[index];
            if r.first_scheduled_at.is_some() && life.scheduled.is_none() {
                life.scheduled = Some(began_wall.max(life.arrival));
            }
            if r.first_token_at.is_some() && life.first_token.is_none() {
                life.first_token = Some(wall);
            }
            if r.finished_at.is_some() {
                done.push((index, r.prompt, r.generated));
            }
        }
        done.sort_unstable();
        for (index, prompt_tokens, completion_tokens) in done {
            let Some(life) = sim.lives.remove(&index) else {
                continue;
            };
            let scheduled = life.scheduled.unwrap_or(life.arrival);
            let first = life.first_token.unwrap_or(wall);
            let record = RequestRecord {
                id: life.id,
                arrival: life.arrival,
                end: unix_now(),
                queue_s: scheduled - life.arrival,
                ttft_s: first - life.arrival,
                prefill_s: first - scheduled,
                decode_s: wall - first,
                e2e_s: wall - life.arrival,
                prompt_tokens,
                completion_tokens,
                max_tokens: life.max_tokens,
            };
            queue.push(otlp::request_span(&record, &mut sim.rng));
        }
    }
    if sim.kv.is_some() {
        sim.tokens
            .retain(|&index, _| requests[index].finished_at.is_none());
        if !kv_events.is_empty() {
            if let Some(publisher) = &sim.kv_publisher {
                publisher.publish(wall, &kv_events);
            }
        }
    }
    if shared.engine == Engine::Trtllm {
        sim.iteration += 1;
        let usable = shared.model.usable_units();
        let EngineModel::Trtllm(c) = &shared.model else {
            unreachable!("the engine is TensorRT-LLM")
        };
        let stats = json!({
            "timestamp": format!("{wall:.3}"),
            "iter": sim.iteration,
            "iterLatencyMS": (shared.cost.step_s(state.scheduled, 0) * 1000.0),
            "numActiveRequests": state.scheduled,
            "numQueuedRequests": state.waiting,
            "numCompletedRequests": u64::from(state.completed_in_step),
            "maxNumActiveRequests": c.max_num_requests,
            "kvCacheStats": {
                "maxNumBlocks": usable,
                "freeNumBlocks": usable - state.used_units,
                "usedNumBlocks": state.used_units,
                "tokensPerBlock": c.tokens_per_block,
            },
        });
        sim.iterations.push(stats);
        // The real server keeps a bounded queue of iteration statistics.
        if sim.iterations.len() > 1000 {
            sim.iterations.remove(0);
        }
    }
    let restart_due = shared
        .faults
        .restart_after_requests
        .is_some_and(|n| sim.finished.len() as u64 >= u64::from(n));
    if restart_due && !sim.restarted && sim.scheduler.is_idle() {
        restart(shared, sim);
    }
}

/// A new server process in place of the old: fresh scheduler, counters and `*_created`,
/// and its boot lines again.
fn restart(shared: &Shared, sim: &mut Sim) {
    sim.restarted = true;
    sim.scheduler = Scheduler::new(shared.model.clone(), shared.cost);
    sim.published = State::default();
    sim.lagging_gauges = State::default();
    sim.origin = Instant::now();
    sim.events_published = 0;
    sim.finished.clear();
    sim.iterations.clear();
    sim.waiters.clear();
    sim.prefix.clear();
    sim.lives.clear();
    sim.tokens.clear();
    if sim.kv.is_some() {
        sim.kv = Some(KvBlocks::new(&shared.model));
        if let Some(publisher) = &sim.kv_publisher {
            publisher.restart();
        }
    }
    let now = unix_now();
    // Two stamps a few milliseconds apart must still differ.
    sim.created = now.max(sim.created + 0.001);
    let mut boot = shared.boot.clone();
    boot.start_wall = now;
    boot.ready_after_s = 0.0;
    sim.log.extend(
        bootlog::boot_lines(&shared.model, &boot)
            .into_iter()
            .map(|(_, l)| l),
    );
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shared.wait_dead() => break,
        };
        let Ok((stream, peer)) = accepted else {
            // Out of file descriptors, say: try again a little later.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            if shared.faults.hang {
                // Hold the connection open, read nothing, answer nothing.
                shared.wait_dead().await;
                drop(stream);
                return;
            }
            let service_shared = Arc::clone(&shared);
            let service = hyper::service::service_fn(move |request| {
                let shared = Arc::clone(&service_shared);
                async move { Ok::<_, Infallible>(handle(shared, peer, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                _ = connection => {}
                () = shared.wait_dead() => {}
            }
        });
    }
    // The listener is dropped here: later connections are refused.
}

/// A response body: all at once, or SSE chunks as a task sends them.
#[derive(Debug)]
pub enum SimBody {
    /// The whole body, or none.
    Full(Option<Bytes>),
    /// Server-sent event chunks as a task sends them.
    Channel(mpsc::Receiver<Bytes>),
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            SimBody::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            SimBody::Channel(rx) => rx.poll_recv(cx).map(|d| d.map(|d| Ok(Frame::data(d)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, SimBody::Full(None))
    }
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<SimBody> {
    let mut response = Response::new(SimBody::Full(Some(body.into())));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<SimBody> {
    respond(status, "application/json", value.to_string())
}

/// An error in the shape vLLM's OpenAI server answers.
fn openai_error(status: StatusCode, message: &str) -> Response<SimBody> {
    let kind = match status {
        StatusCode::NOT_FOUND => "NotFoundError",
        StatusCode::SERVICE_UNAVAILABLE => "ServiceUnavailableError",
        StatusCode::INTERNAL_SERVER_ERROR => "InternalServerError",
        _ => "BadRequestError",
    };
    json_response(
        status,
        &json!({"object": "error", "message": message, "type": kind, "param": null, "code": status.as_u16()}),
    )
}

fn not_found() -> Response<SimBody> {
    json_response(StatusCode::NOT_FOUND, &json!({"detail": "Not Found"}))
}

async fn handle(
    shared: Arc<Shared>,
    peer: SocketAddr,
    request: Request<Incoming>,
) -> Response<SimBody> {
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let line = format!(
        "{method} {}",
        request
            .uri()
            .path_and_query()
            .map_or(path.as_str(), |p| p.as_str())
    );
    let d = shared.engine.descriptor();
    let response = match (method.clone(), path.as_str()) {
        (Method::GET, "/health") => respond(StatusCode::OK, "application/json", Bytes::new()),
        (Method::GET, "/v1/models") => models(&shared),
        (Method::GET, "/version") if shared.engine == Engine::Vllm => {
            json_response(StatusCode::OK, &json!({"version": "0.28.0"}))
        }
        // `/server_info` is the newer name; SGLang's benchmark client asks it.
        (Method::GET, "/get_server_info" | "/server_info") if shared.engine == Engine::Sglang => {
            server_info(&shared)
        }
        (Method::GET, p) if p == d.metrics_path => metrics(&shared, None).await,
        // prometheus_client's own application, which honours `name[]` (crate::pages).
        (Method::GET, p) if p.strip_suffix('/') == Some(d.metrics_path) => {
            let asked = crate::pages::asked_names(request.uri().query().unwrap_or(""));
            metrics(&shared, Some(asked)).await
        }
        // TensorRT-LLM's `/metrics` answers its iteration statistics as JSON.
        (Method::GET, "/metrics") if shared.engine == Engine::Trtllm => {
            iteration_stats(&shared).await
        }
        (Method::POST, "/v1/completions") => complete(&shared, request, Api::Completions).await,
        (Method::POST, "/v1/chat/completions") => complete(&shared, request, Api::Chat).await,
        // SGLang's native API, the default of its own benchmark client.
        (Method::POST, "/generate") if shared.engine == Engine::Sglang => {
            complete(&shared, request, Api::Generate).await
        }
        // vLLM's (with VLLM_SERVER_DEV_MODE) and SGLang's way to empty the prefix cache.
        (Method::POST, "/reset_prefix_cache") if shared.engine == Engine::Vllm => {
            reset_prefix_cache(&shared)
        }
        (Method::POST | Method::GET, "/flush_cache") if shared.engine == Engine::Sglang => {
            reset_prefix_cache(&shared)
        }
        (_, "/health" | "/v1/models" | "/v1/completions" | "/v1/chat/completions") => {
            json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({"detail": "Method Not Allowed"}),
            )
        }
        _ => not_found(),
    };
    shared.log_access(peer, &line, response.status());
    response
}

/// Empties the prefix cache when no request holds a block, as the engines do (vLLM's
/// answers whether it could; the clear is a KV event with the next step's).
fn reset_prefix_cache(shared: &Shared) -> Response<SimBody> {
    let mut guard = shared.lock();
    let sim = &mut *guard;
    let idle = sim.scheduler.is_idle();
    let done = idle && sim.kv.as_mut().is_none_or(KvBlocks::reset);
    if done {
        sim.prefix.clear();
    }
    drop(guard);
    json_response(StatusCode::OK, &json!({"success": done}))
}

fn models(shared: &Shared) -> Response<SimBody> {
    let created = unix_now().floor() as u64;
    json_response(
        StatusCode::OK,
        &json!({
            "object": "list",
            "data": [{
                "id": shared.boot.served_model_name,
                "object": "model",
                "created": created,
                "owned_by": shared.engine.key(),
                "root": shared.boot.model_path,
                "parent": null,
                "max_model_len": shared.boot.max_model_len,
            }],
        }),
    )
}

fn server_info(shared: &Shared) -> Response<SimBody> {
    let EngineModel::Sglang(c) = &shared.model else {
        return not_found();
    };
    json_response(
        StatusCode::OK,
        &json!({
            "model_path": shared.boot.model_path,
            "served_model_name": shared.boot.served_model_name,
            "port": shared.boot.port,
            "max_total_num_tokens": c.max_total_num_tokens,
            "max_running_requests": c.running_cap(),
            "page_size": c.page_size,
            "context_length": shared.boot.max_model_len,
            "enable_metrics": !shared.faults.no_metrics,
            "version": "0.5.20",
        }),
    )
}

async fn slow_metrics(shared: &Shared) {
    if let Some(ms) = shared.faults.slow_metrics_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

async fn metrics(shared: &Shared, asked: Option<Vec<String>>) -> Response<SimBody> {
    slow_metrics(shared).await;
    if shared.faults.no_metrics {
        return not_found();
    }
    if let Some(code) = shared.faults.metrics_status {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return respond(status, "text/plain", "metrics are not available\n");
    }
    if let Some(location) = &shared.faults.metrics_redirect {
        let mut response = respond(StatusCode::FOUND, "text/plain", Bytes::new());
        if let Ok(value) = HeaderValue::from_str(location) {
            response
                .headers_mut()
                .insert(hyper::header::LOCATION, value);
        }
        return response;
    }
    let state = metrics_state(shared, &shared.lock());
    let mut text = expo::exposition(shared.engine, &state);
    if let Some(asked) = asked {
        text = shared.faults.name_filter.answer(&text, &asked);
    }
    let mut body = Vec::with_capacity(text.len());
    if shared.faults.metrics_bad_byte {
        // One sample line whose label value holds a byte no UTF-8 text can.
        body.extend_from_slice(b"sim_damaged_line{label=\"a\xffb\"} 1\n");
    }
    body.extend_from_slice(text.as_bytes());
    if let Some(bytes) = shared.faults.metrics_padding_bytes {
        let line = format!("# {}\n", "x".repeat(1021));
        while body.len() < bytes {
            body.extend_from_slice(line.as_bytes());
        }
    }
    respond(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        body,
    )
}

async fn iteration_stats(shared: &Shared) -> Response<SimBody> {
    slow_metrics(shared).await;
    if shared.faults.no_metrics {
        return not_found();
    }
    // The real endpoint hands out what it collected since the last read.
    let stats = std::mem::take(&mut shared.lock().iterations);
    json_response(StatusCode::OK, &Value::Array(stats))
}

/// The gauges and counters at the last published step.
fn metrics_state(shared: &Shared, sim: &Sim) -> MetricsState {
    let d = shared.engine.descriptor();
    let now = sim.published;
    let gauges = if d.gauges_lag {
        sim.lagging_gauges
    } else {
        now
    };
    let mut m = MetricsState::at(&shared.model, &shared.boot, sim.created, now, gauges);
    // A published finish is at or before `now.t`: it was stamped with the end of the
    // step whose publication recorded it.
    for &index in &sim.finished {
        m.observe(&sim.scheduler.requests[index]);
    }
    m
}

/// A rough token count: words, at least one.
pub fn rough_tokens(text: &str) -> u64 {
    (text.split_whitespace().count() as u64).max(1)
}

/// The API a completion request came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// OpenAI `/v1/completions`.
    Completions,
    /// OpenAI `/v1/chat/completions`.
    Chat,
    /// SGLang's native `/generate`: `text` or `input_ids`, `sampling_params`, and answers
    /// with `meta_info` (a streamed chunk carries the whole text so far).
    Generate,
}

/// The prompt of a request, as text.
fn prompt_text(body: &Value, api: Api) -> Option<String> {
    if api == Api::Generate {
        return match (body.get("text"), body.get("input_ids")) {
            (Some(Value::String(s)), _) => Some(s.clone()),
            // Token ids: one word per id.
            (_, Some(Value::Array(ids))) => Some("t ".repeat(ids.len())),
            _ => None,
        };
    }
    if api == Api::Chat {
        let messages = body.get("messages")?.as_array()?;
        let mut text = String::new();
        for m in messages {
            match m.get("content") {
                Some(Value::String(s)) => text.push_str(s),
                Some(Value::Array(parts)) => {
                    for p in parts {
                        if let Some(s) = p.get("text").and_then(Value::as_str) {
                            text.push_str(s);
                            text.push(' ');
                        }
                    }
                }
                _ => {}
            }
            text.push(' ');
        }
        Some(text)
    } else {
        match body.get("prompt")? {
            Value::String(s) => Some(s.clone()),
            Value::Array(items) => Some(
                items
                    .iter()
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        // A list of token ids: one word per id.
                        other => "t ".repeat(other.as_array().map_or(1, Vec::len)),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        }
    }
}

/// The generated tokens, in turn. Each is one whitespace-separated word, so a client that
/// counts the words of an answer (or tokenizes it with a word-level tokenizer split on
/// whitespace) counts the tokens the server generated.
const WORDS: [&str; 12] = [
    " the",
    " sky",
    " is",
    " clear",
    " and",
    " the",
    " wind",
    " is",
    " calm",
    " today",
    " simulated",
    " run",
];

/// The text of generated tokens `from..to`.
fn generated_text(from: u64, to: u64) -> String {
    (from..to)
        .map(|k| WORDS[(k % WORDS.len() as u64) as usize])
        .collect()
}

/// Everything a completion answer needs besides its text.
struct Answer {
    id: String,
    created: u64,
    model: String,
    api: Api,
    prompt_tokens: u64,
    include_usage: bool,
}

impl Answer {
    fn usage(&self, completion_tokens: u64) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        })
    }

    /// SGLang's `meta_info` of a `/generate` answer.
    fn meta_info(&self, completion_tokens: u64, finished: bool) -> Value {
        let finish = if !finished {
            Value::Null
        } else if completion_tokens == 0 {
            json!({"type": "stop", "matched": null})
        } else {
            json!({"type": "length", "length": completion_tokens})
        };
        json!({
            "id": self.id,
            "finish_reason": finish,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "cached_tokens": 0,
        })
    }

    /// A streamed `/generate` chunk: the whole text so far.
    fn generate_chunk(&self, text: &str, completion_tokens: u64, finished: bool) -> Bytes {
        self.event(&json!({"text": text, "meta_info": self.meta_info(completion_tokens, finished)}))
    }

    fn whole(&self, text: &str, completion_tokens: u64) -> Value {
        if self.api == Api::Generate {
            return json!({"text": text, "meta_info": self.meta_info(completion_tokens, true)});
        }
        let finish = if completion_tokens == 0 {
            "stop"
        } else {
            "length"
        };
        let chat = self.api == Api::Chat;
        let choice = if chat {
            json!({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": null, "finish_reason": finish, "stop_reason": null})
        } else {
            json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish, "stop_reason": null})
        };
        json!({
            "id": self.id,
            "object": if chat { "chat.completion" } else { "text_completion" },
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": self.usage(completion_tokens),
        })
    }

    fn chunk(&self, text: &str, finish_reason: Option<&str>) -> Bytes {
        let chat = self.api == Api::Chat;
        let choice = if chat {
            json!({"index": 0, "delta": {"content": text}, "logprobs": null, "finish_reason": finish_reason})
        } else {
            json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish_reason})
        };
        self.event(&json!({
            "id": self.id,
            "object": if chat { "chat.completion.chunk" } else { "text_completion" },
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }))
    }

    fn usage_chunk(&self, completion_tokens: u64) -> Bytes {
        self.event(&json!({
            "id": self.id,
            "object": if self.api == Api::Chat { "chat.completion.chunk" } else { "text_completion" },
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": self.usage(completion_tokens),
        }))
    }

    fn event(&self, value: &Value) -> Bytes {
        Bytes::from(format!("data: {value}\n\n"))
    }
}

fn sse_response(rx: mpsc::Receiver<Bytes>) -> Response<SimBody> {
    let mut response = Response::new(SimBody::Channel(rx));
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    response
}

async fn complete(shared: &Shared, request: Request<Incoming>, api: Api) -> Response<SimBody> {
    let ordinal = {
        let mut sim = shared.lock();
        sim.completion_requests += 1;
        sim.completion_requests
    };
    if let (Some(path), Some(n)) = (
        &shared.faults.gpu_readings,
        shared.faults.gpu_tenant_at_request,
    ) {
        if ordinal == n {
            let _ = crate::gpu::write(path, &crate::gpu::reading(Some(shared.boot.pid), true));
        }
    }
    if shared.faults.die_on_request == Some(ordinal) {
        // The process is gone: this request never gets an answer, and the connection
        // tasks drop their sockets.
        shared.die();
        std::future::pending::<()>().await;
    }
    // vLLM names a request after the client's `X-Request-Id`, else after its own id.
    let client_id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .map(str::to_owned);
    let bytes = match Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                &format!("could not read the request body: {e}"),
            )
        }
    };
    // The API server's arrival stamp.
    let arrival = unix_now();
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                "the request body is not a JSON object",
            )
        }
        Err(e) => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                &format!("the request body is not JSON: {e}"),
            )
        }
    };
    let served = &shared.boot.served_model_name;
    if let Some(model) = body.get("model").and_then(Value::as_str) {
        if model != served {
            return openai_error(
                StatusCode::NOT_FOUND,
                &format!("The model `{model}` does not exist."),
            );
        }
    }
    let every = shared
        .faults
        .error_every
        .is_some_and(|n| n > 0 && ordinal % n == 0);
    if every || shared.faults.error_from.is_some_and(|n| ordinal >= n) {
        return openai_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("simulated internal error (completion request {ordinal})"),
        );
    }
    let Some(prompt) = prompt_text(&body, api) else {
        let field = match api {
            Api::Completions => "prompt",
            Api::Chat => "messages",
            Api::Generate => "text or input_ids",
        };
        return openai_error(
            StatusCode::BAD_REQUEST,
            &format!("the request has no {field}"),
        );
    };
    let prompt_tokens = rough_tokens(&prompt);
    let max_tokens = if api == Api::Generate {
        body.pointer("/sampling_params/max_new_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(SGLANG_DEFAULT_MAX_NEW_TOKENS)
    } else {
        body.get("max_tokens")
            .or_else(|| body.get("max_completion_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_MAX_TOKENS)
    };
    let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let id = {
        let mut sim = shared.lock();
        sim.next_id += 1;
        sim.next_id
    };
    // vLLM's own id is a random UUID's 32 hex digits.
    let base = client_id.unwrap_or_else(|| format!("{:08x}{id:024x}", shared.boot.pid));
    let answer = Answer {
        id: match api {
            Api::Completions => format!("cmpl-{base}"),
            Api::Chat => format!("chatcmpl-{base}"),
            Api::Generate => format!("{id:032x}"),
        },
        created: unix_now().floor() as u64,
        model: served.clone(),
        api,
        prompt_tokens,
        include_usage,
    };
    if let Some(error) = &shared.faults.completion_error_body {
        return respond(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            error.clone(),
        );
    }
    if shared.faults.empty_completions {
        if !stream {
            return json_response(StatusCode::OK, &answer.whole("", 0));
        }
        let (tx, rx) = mpsc::channel::<Bytes>(4);
        let mut events = vec![if api == Api::Generate {
            answer.generate_chunk("", 0, true)
        } else {
            answer.chunk("", Some("stop"))
        }];
        if answer.include_usage {
            events.push(answer.usage_chunk(0));
        }
        events.push(Bytes::from_static(b"data: [DONE]\n\n"));
        tokio::spawn(async move {
            for event in events {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
        });
        return sse_response(rx);
    }
    if prompt_tokens + max_tokens > shared.boot.max_model_len {
        return openai_error(
            StatusCode::BAD_REQUEST,
            &format!(
                "This model's maximum context length is {} tokens. However, you requested {} tokens ({prompt_tokens} in the messages, {max_tokens} in the completion).",
                shared.boot.max_model_len,
                prompt_tokens + max_tokens
            ),
        );
    }
    let mut progress = {
        let mut guard = shared.lock();
        let sim = &mut *guard;
        if sim.scheduler.is_idle() {
            let now = shared.sim_now(sim);
            sim.scheduler.advance_idle(now);
        }
        let cached = sim.prefix.serve(&prompt);
        let Some(index) = sim
            .scheduler
            .submit_cached(prompt_tokens, max_tokens, cached)
        else {
            let fits = shared.model.units_for(prompt_tokens + max_tokens.max(1))
                <= shared.model.usable_units();
            return if fits {
                openai_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "the server is overloaded: too many queued requests",
                )
            } else {
                openai_error(
                    StatusCode::BAD_REQUEST,
                    "the request is longer than the whole KV cache",
                )
            };
        };
        let (tx, rx) = watch::channel(Progress::default());
        sim.waiters.insert(index, tx);
        if shared.spans.is_some() {
            // The engine's request id: a completion's choice index after it (vLLM 0.32).
            let id = match api {
                Api::Completions => format!("{}-0", answer.id),
                _ => answer.id.clone(),
            };
            sim.lives.insert(
                index,
                Life {
                    id,
                    arrival,
                    scheduled: None,
                    first_token: None,
                    max_tokens,
                },
            );
        }
        if sim.kv.is_some() {
            sim.tokens
                .insert(index, prompt.split_whitespace().map(word_id).collect());
        }
        rx
    };
    shared.wake.notify_one();
    if !stream {
        return match progress.wait_for(|p| p.finished).await {
            Ok(p) => {
                let p = *p;
                json_response(
                    StatusCode::OK,
                    &answer.whole(&generated_text(0, p.generated), p.generated),
                )
            }
            Err(_) => openai_error(StatusCode::INTERNAL_SERVER_ERROR, "the request was aborted"),
        };
    }
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let interval = shared.stream_interval;
    tokio::spawn(async move {
        if api == Api::Chat {
            let first = answer.event(&json!({
                "id": answer.id, "object": "chat.completion.chunk", "created": answer.created,
                "model": answer.model,
                "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}],
            }));
            if tx.send(first).await.is_err() {
                return;
            }
        }
        let mut sent = 0u64;
        let mut closed = false;
        loop {
            let p = *progress.borrow_and_update();
            while sent < p.generated {
                // The first token at once (for the time to first token), then every
                // `interval` tokens, and what is left when the request finishes, as
                // vLLM's and SGLang's `--stream-interval` send them.
                let ready = p.generated - sent;
                let take = if sent == 0 {
                    1
                } else if ready >= interval {
                    interval
                } else if p.finished {
                    ready
                } else {
                    break;
                };
                let to = sent + take;
                let event = if api == Api::Generate {
                    let last = p.finished && to == p.generated;
                    answer.generate_chunk(&generated_text(0, to), to, last)
                } else {
                    answer.chunk(&generated_text(sent, to), None)
                };
                if tx.send(event).await.is_err() {
                    return;
                }
                sent = to;
            }
            if p.finished && api == Api::Generate {
                let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
                return;
            }
            if p.finished {
                let _ = tx.send(answer.chunk("", Some("length"))).await;
                if answer.include_usage {
                    let _ = tx.send(answer.usage_chunk(sent)).await;
                }
                let _ = tx.send(Bytes::from_static(b"data: [DONE]\n\n")).await;
                return;
            }
            if closed {
                // Aborted (a restart): end the stream without [DONE].
                return;
            }
            if progress.changed().await.is_err() {
                closed = true;
            }
        }
    });
    sse_response(rx)
}
