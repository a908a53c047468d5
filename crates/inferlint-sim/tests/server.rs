//! The simulated server over real HTTP on 127.0.0.1, and the load generator against it.
//! Every server is stopped by its handle's `Drop`, on every path; every wait is bounded.

use std::time::Duration;

use inferlint_core::{Engine, MetricSet};
use inferlint_engines::{bootlog, detect, files, prom};
use inferlint_sim::load::{self, LoadConfig, LoadError};
use inferlint_sim::server::{self, Faults, ServerConfig, ServerHandle};
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(20);

/// A fast server: a thousand simulated seconds per real second.
fn start(engine: Engine, faults: Faults) -> ServerHandle {
    let mut config = ServerConfig::new(engine);
    config.speed = 1000.0;
    config.faults = faults;
    server::spawn(config).unwrap()
}

fn get(handle: &ServerHandle, path: &str) -> load::HttpReply {
    load::get(&format!("{}{path}", handle.base_url), TIMEOUT).unwrap()
}

fn post(handle: &ServerHandle, path: &str, body: &str) -> Result<load::HttpReply, LoadError> {
    load::fetch(
        "POST",
        &format!("{}{path}", handle.base_url),
        Some(body),
        TIMEOUT,
    )
}

fn scrape(handle: &ServerHandle, engine: Engine) -> MetricSet {
    let reply = get(handle, engine.descriptor().metrics_path);
    assert_eq!(reply.status, 200, "{}", reply.body);
    prom::parse(&reply.body).unwrap()
}

/// The events of a streamed answer, which must end with `[DONE]`.
fn sse_events(body: &str) -> Vec<Value> {
    let data: Vec<&str> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

fn small_load() -> LoadConfig {
    LoadConfig {
        model: None,
        requests: 8,
        concurrency: 8,
        prompt_tokens: 24,
        output_tokens: 20,
        timeout_s: 30.0,
        ..LoadConfig::default()
    }
}

#[test]
fn each_engine_serves_its_metrics_under_its_own_names() {
    for engine in Engine::ALL {
        let handle = start(engine, Faults::default());
        let metrics = scrape(&handle, engine);
        assert_eq!(
            detect::engine_from_metric_names(metrics.names()),
            Some(engine)
        );
        let d = engine.descriptor();
        for name in [d.running, d.waiting, d.kv_usage, d.request_success] {
            assert!(metrics.has(name), "{engine}: no {name}");
        }
        let text = get(&handle, d.metrics_path).body;
        assert!(text.starts_with("# simulated by inferlint-sim"), "{engine}");
        if engine == Engine::Vllm {
            let info = metrics.info("vllm:cache_config_info").unwrap();
            assert!(info
                .iter()
                .any(|(k, v)| k == "num_gpu_blocks" && v == "129"));
            assert!(metrics.has("vllm:request_success_created"));
        }
    }
}

#[test]
fn tensorrt_llm_answers_json_at_metrics_and_text_at_prometheus_metrics() {
    let handle = start(Engine::Trtllm, Faults::default());
    let json = get(&handle, "/metrics");
    assert!(json.body.trim_start().starts_with('['), "{}", json.body);
    serde_json::from_str::<Vec<Value>>(&json.body).unwrap();
    let text = get(&handle, "/prometheus/metrics");
    assert!(!text.body.trim_start().starts_with(['[', '{']));
    prom::parse(&text.body).unwrap();
    // After a request, the JSON holds the iterations it took.
    post(
        &handle,
        "/v1/completions",
        r#"{"prompt": "a b c", "max_tokens": 4}"#,
    )
    .unwrap();
    let stats: Vec<Value> = serde_json::from_str(&get(&handle, "/metrics").body).unwrap();
    assert!(!stats.is_empty());
    assert!(stats[0].pointer("/kvCacheStats/maxNumBlocks").is_some());
}

#[test]
fn models_health_and_both_completion_endpoints_answer_like_openai() {
    for engine in Engine::ALL {
        let handle = start(engine, Faults::default());
        assert_eq!(get(&handle, "/health").status, 200);
        let models: Value = serde_json::from_str(&get(&handle, "/v1/models").body).unwrap();
        assert_eq!(models["object"], "list");
        assert_eq!(models["data"][0]["id"], "sim-model");
        assert_eq!(models["data"][0]["object"], "model");

        let reply = post(
            &handle,
            "/v1/completions",
            r#"{"model": "sim-model", "prompt": "Write one sentence about the weather.", "max_tokens": 16, "temperature": 0.0}"#,
        )
        .unwrap();
        assert_eq!(reply.status, 200, "{}", reply.body);
        let v: Value = serde_json::from_str(&reply.body).unwrap();
        assert!(!v["choices"][0]["text"].as_str().unwrap().is_empty());
        assert_eq!(v["usage"]["completion_tokens"], 16);
        assert_eq!(v["usage"]["prompt_tokens"], 6);

        let reply = post(
            &handle,
            "/v1/chat/completions",
            r#"{"messages": [{"role": "user", "content": "hello there"}], "max_tokens": 5}"#,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&reply.body).unwrap();
        assert!(!v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .is_empty());
        assert_eq!(v["usage"]["completion_tokens"], 5);

        let reply = post(
            &handle,
            "/v1/chat/completions",
            r#"{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": true}"#,
        )
        .unwrap();
        let content: String = sse_events(&reply.body)
            .into_iter()
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(content.split_whitespace().count(), 3, "{content:?}");

        let wrong = post(
            &handle,
            "/v1/completions",
            r#"{"model": "other", "prompt": "x", "max_tokens": 1}"#,
        )
        .unwrap();
        assert_eq!(wrong.status, 404);
        let too_long = post(
            &handle,
            "/v1/completions",
            r#"{"prompt": "x", "max_tokens": 100000}"#,
        )
        .unwrap();
        assert_eq!(too_long.status, 400);
    }
}

#[test]
fn a_load_is_counted_by_the_server_with_its_test_request() {
    for engine in Engine::ALL {
        let handle = start(engine, Faults::default());
        let d = engine.descriptor();
        let before = scrape(&handle, engine);
        let result = load::run(&handle.base_url, small_load()).unwrap();
        let after = scrape(&handle, engine);
        assert_eq!(result.completed(), 8, "{engine}: {:?}", result.requests);
        assert!(result.log.contains("Initial test run completed."));
        let finished =
            after.total(d.request_success).unwrap() - before.total(d.request_success).unwrap();
        assert_eq!(finished, 8.0 + 1.0, "{engine}");
        let generated =
            after.total(d.generation_tokens).unwrap() - before.total(d.generation_tokens).unwrap();
        assert_eq!(generated, 9.0 * 20.0, "{engine}");

        let json = serde_json::to_string_pretty(&result.to_json()).unwrap();
        let bench = files::parse_bench_result(&json).unwrap();
        assert_eq!(bench.completed, Some(8));
        assert_eq!(bench.failed, Some(0));
        assert_eq!(bench.sent, Some(8));
        assert_eq!(bench.max_concurrency, Some(8));
        assert_eq!(bench.total_input_tokens, Some(8 * 24));
        assert_eq!(bench.total_output_tokens, Some(8 * 20));
        assert_eq!(bench.backend.as_deref(), Some("openai"));
        for field in [
            bench.duration,
            bench.output_throughput,
            bench.mean_ttft_ms,
            bench.median_ttft_ms,
            bench.p99_ttft_ms,
            bench.mean_tpot_ms,
        ] {
            assert!(field.is_some_and(f64::is_finite), "{engine}: {json}");
        }
    }
}

#[test]
fn the_boot_log_reads_completely_and_reaches_ready() {
    for engine in Engine::ALL {
        let handle = start(engine, Faults::default());
        load::run(&handle.base_url, small_load()).unwrap();
        get(&handle, engine.descriptor().metrics_path);
        let log = handle.boot_log();
        assert!(log.starts_with("# simulated by inferlint-sim"));
        assert_eq!(detect::engine_from_log(&log), Some(engine), "{log}");
        let facts = bootlog::parse_boot_log(&log, Some(engine));
        assert!(facts.unparsed.is_empty(), "{engine}: {:?}", facts.unparsed);
        assert!(facts.ready_lineno.is_some(), "{engine}: no ready line");
        assert!(facts.kv_pool_tokens.is_some(), "{engine}: no pool");
        assert!(
            log.contains(r#""POST /v1/completions HTTP/1.1" 200 OK"#),
            "{log}"
        );
        if engine == Engine::Trtllm {
            assert_eq!(facts.served_in_log, Some(9), "{log}");
        }
    }
}

/// An overload: the pool holds far less than the requests need, so the engines evict,
/// and what they log about it still reads.
#[test]
fn an_overloaded_server_evicts_and_its_log_still_reads() {
    let overload = LoadConfig {
        requests: 16,
        concurrency: 16,
        prompt_tokens: 100,
        output_tokens: 200,
        ..small_load()
    };
    let handle = start(Engine::Vllm, Faults::default());
    let result = load::run(&handle.base_url, overload.clone()).unwrap();
    assert_eq!(result.completed(), 16);
    let metrics = scrape(&handle, Engine::Vllm);
    assert!(metrics.total("vllm:num_preemptions_total").unwrap() > 0.0);

    let mut config = ServerConfig::new(Engine::Trtllm);
    config.speed = 1000.0;
    if let inferlint_sim::sched::EngineModel::Trtllm(c) = &mut config.case.model {
        c.policy = inferlint_sim::sched::CapacityPolicy::MaxUtilization;
    }
    for handle in [
        start(Engine::Sglang, Faults::default()),
        server::spawn(config).unwrap(),
    ] {
        let result = load::run(&handle.base_url, overload.clone()).unwrap();
        assert_eq!(result.completed(), 16);
        let facts = bootlog::parse_boot_log(&handle.boot_log(), None);
        assert!(facts.unparsed.is_empty(), "{:?}", facts.unparsed);
    }
}

#[test]
fn a_server_that_dies_on_the_second_request_stops_answering() {
    let faults = Faults {
        die_on_request: Some(2),
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let body = r#"{"prompt": "one two", "max_tokens": 2}"#;
    assert_eq!(post(&handle, "/v1/completions", body).unwrap().status, 200);
    assert!(!handle.is_dead());
    let second = post(&handle, "/v1/completions", body);
    assert!(second.is_err(), "{second:?}");
    assert!(handle.is_dead());
    // The listener is closed: later requests cannot even connect.
    for path in ["/health", "/metrics"] {
        let later = load::get(&format!("{}{path}", handle.base_url), TIMEOUT);
        let message = later.unwrap_err().to_string();
        assert!(message.contains("connect"), "{message}");
    }
    // The load tool reports the failure instead of waiting.
    let err = load::run(&handle.base_url, small_load()).unwrap_err();
    assert!(matches!(err, LoadError::Models { .. }), "{err}");
}

#[test]
fn without_metrics_the_metrics_path_answers_404() {
    let faults = Faults {
        no_metrics: true,
        ..Faults::default()
    };
    let handle = start(Engine::Sglang, faults);
    assert_eq!(get(&handle, "/metrics").status, 404);
    assert_eq!(get(&handle, "/health").status, 200);
}

#[test]
fn slow_metrics_miss_a_short_timeout_and_arrive_within_a_long_one() {
    let faults = Faults {
        slow_metrics_ms: Some(1000),
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let url = format!("{}/metrics", handle.base_url);
    let short = load::get(&url, Duration::from_millis(50));
    assert!(short.is_err(), "{short:?}");
    assert_eq!(load::get(&url, TIMEOUT).unwrap().status, 200);
    // Only the metrics are slow.
    assert_eq!(
        load::get(
            &format!("{}/health", handle.base_url),
            Duration::from_millis(500)
        )
        .unwrap()
        .status,
        200
    );
}

#[test]
fn a_restart_resets_the_counters_and_moves_the_created_stamps() {
    let faults = Faults {
        restart_after_requests: Some(2),
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let created = |m: &MetricSet| m.total("vllm:request_success_created").unwrap();
    let body = r#"{"prompt": "one two", "max_tokens": 3}"#;
    post(&handle, "/v1/completions", body).unwrap();
    let before = scrape(&handle, Engine::Vllm);
    assert_eq!(before.total("vllm:request_success_total"), Some(1.0));
    post(&handle, "/v1/completions", body).unwrap();
    let after = scrape(&handle, Engine::Vllm);
    assert_eq!(after.total("vllm:request_success_total"), Some(0.0));
    assert_eq!(after.total("vllm:generation_tokens_total"), Some(0.0));
    assert!(created(&after) > created(&before));
    // The new process printed its boot lines again.
    assert_eq!(
        handle
            .boot_log()
            .matches("Application startup complete.")
            .count(),
        2
    );
    // And it serves on.
    post(&handle, "/v1/completions", body).unwrap();
    let later = scrape(&handle, Engine::Vllm);
    assert_eq!(later.total("vllm:request_success_total"), Some(1.0));
}

#[test]
fn empty_completions_fail_the_load_tools_test_request() {
    let faults = Faults {
        empty_completions: true,
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let reply = post(
        &handle,
        "/v1/completions",
        r#"{"prompt": "Write one sentence about the weather.", "max_tokens": 16}"#,
    )
    .unwrap();
    assert_eq!(reply.status, 200);
    let v: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(v["choices"][0]["text"], "");
    assert_eq!(v["usage"]["completion_tokens"], 0);
    let err = load::run(&handle.base_url, small_load()).unwrap_err();
    assert!(err.to_string().contains("empty completion"), "{err}");
}

#[test]
fn a_hung_server_accepts_but_never_answers() {
    let faults = Faults {
        hang: true,
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let reply = load::get(
        &format!("{}/health", handle.base_url),
        Duration::from_millis(200),
    );
    let message = reply.unwrap_err().to_string();
    assert!(message.contains("no answer within"), "{message}");
    // Dropping the handle still stops it.
    handle.shutdown();
}

#[test]
fn a_load_against_nothing_fails_quickly() {
    // A port that was free a moment ago: nothing listens there now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = load::run(&format!("http://127.0.0.1:{port}"), small_load()).unwrap_err();
    assert!(matches!(err, LoadError::Models { .. }), "{err}");
    assert!(load::run("https://127.0.0.1:1", small_load()).is_err());
}

#[test]
fn an_answer_has_one_word_per_generated_token() {
    // Load tools that count an answer's tokens themselves split it into words (or use a
    // word-level tokenizer); a token without a space before it would merge two words.
    let handle = start(Engine::Vllm, Faults::default());
    for max_tokens in [1, 11, 12, 30] {
        let reply = post(
            &handle,
            "/v1/completions",
            &format!(r#"{{"prompt": "a b c", "max_tokens": {max_tokens}}}"#),
        )
        .unwrap();
        let v: Value = serde_json::from_str(&reply.body).unwrap();
        let text = v["choices"][0]["text"].as_str().unwrap();
        assert_eq!(v["usage"]["completion_tokens"], max_tokens);
        assert_eq!(
            text.split_whitespace().count() as u64,
            max_tokens,
            "{text:?}"
        );
    }
}

#[test]
fn the_served_model_name_is_the_one_model_accepted() {
    let mut config = ServerConfig::new(Engine::Sglang);
    config.speed = 1000.0;
    config.case.boot.served_model_name = "/tmp/tok/word-level".to_owned();
    let handle = server::spawn(config).unwrap();
    let models: Value = serde_json::from_str(&get(&handle, "/v1/models").body).unwrap();
    assert_eq!(models["data"][0]["id"], "/tmp/tok/word-level");
    let ok = post(
        &handle,
        "/v1/chat/completions",
        r#"{"model": "/tmp/tok/word-level", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}"#,
    )
    .unwrap();
    assert_eq!(ok.status, 200, "{}", ok.body);
    let v: Value = serde_json::from_str(&ok.body).unwrap();
    assert_eq!(v["model"], "/tmp/tok/word-level");
    let wrong = post(
        &handle,
        "/v1/completions",
        r#"{"model": "sim-model", "prompt": "x", "max_tokens": 1}"#,
    )
    .unwrap();
    assert_eq!(wrong.status, 404, "{}", wrong.body);
    let v: Value = serde_json::from_str(&wrong.body).unwrap();
    assert_eq!(v["message"], "The model `sim-model` does not exist.");
}

#[test]
fn error_every_fails_every_nth_completion_and_no_engine_counter_sees_it() {
    for engine in Engine::ALL {
        let faults = Faults {
            error_every: Some(3),
            ..Faults::default()
        };
        let handle = start(engine, faults);
        let d = engine.descriptor();
        let before = scrape(&handle, engine);
        let mut statuses = Vec::new();
        for stream in [false, true, false, false, true, false, false] {
            let reply = post(
                &handle,
                "/v1/completions",
                &format!(r#"{{"prompt": "a b c d", "max_tokens": 4, "stream": {stream}}}"#),
            )
            .unwrap();
            if reply.status == 500 {
                let v: Value = serde_json::from_str(&reply.body).unwrap();
                assert_eq!(v["type"], "InternalServerError", "{engine}");
                assert_eq!(v["code"], 500, "{engine}");
            }
            statuses.push(reply.status);
        }
        assert_eq!(statuses, [200, 200, 500, 200, 200, 500, 200], "{engine}");
        let after = scrape(&handle, engine);
        let finished =
            after.total(d.request_success).unwrap() - before.total(d.request_success).unwrap();
        assert_eq!(finished, 5.0, "{engine}");
        let prompt = after.total(d.prompt_tokens).unwrap() - before.total(d.prompt_tokens).unwrap();
        assert_eq!(prompt, 5.0 * 4.0, "{engine}");
    }
}

#[test]
fn sglang_answers_its_native_generate_and_server_info() {
    let handle = start(Engine::Sglang, Faults::default());
    let reply = post(
        &handle,
        "/generate",
        r#"{"text": "one two three", "sampling_params": {"max_new_tokens": 5, "ignore_eos": true}}"#,
    )
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
    let v: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(v["text"].as_str().unwrap().split_whitespace().count(), 5);
    assert_eq!(v["meta_info"]["prompt_tokens"], 3);
    assert_eq!(v["meta_info"]["completion_tokens"], 5);
    assert_eq!(v["meta_info"]["finish_reason"]["type"], "length");

    // Streamed: each chunk holds the whole text so far and the count so far; the last
    // token's chunk says why it finished, then [DONE].
    let reply = post(
        &handle,
        "/generate",
        r#"{"input_ids": [5, 6, 7, 8], "sampling_params": {"max_new_tokens": 4}, "stream": true}"#,
    )
    .unwrap();
    let chunks = sse_events(&reply.body);
    assert_eq!(chunks.len(), 4);
    for (k, c) in chunks.iter().enumerate() {
        let n = k as u64 + 1;
        assert_eq!(c["meta_info"]["completion_tokens"], n);
        assert_eq!(c["meta_info"]["prompt_tokens"], 4);
        assert_eq!(
            c["text"].as_str().unwrap().split_whitespace().count() as u64,
            n
        );
        assert_eq!(c["meta_info"]["finish_reason"].is_null(), n < 4, "{c}");
    }

    let info: Value = serde_json::from_str(&get(&handle, "/server_info").body).unwrap();
    assert_eq!(info["max_total_num_tokens"], 2048);
    // Only SGLang has the native API.
    let vllm = start(Engine::Vllm, Faults::default());
    let reply = post(&vllm, "/generate", r#"{"text": "x"}"#).unwrap();
    assert_eq!(reply.status, 404);
}

#[test]
fn error_from_fails_every_completion_from_the_nth_on() {
    let faults = Faults {
        error_from: Some(3),
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let statuses: Vec<u16> = (0..5)
        .map(|_| {
            post(
                &handle,
                "/v1/completions",
                r#"{"prompt": "a b", "max_tokens": 2}"#,
            )
            .unwrap()
            .status
        })
        .collect();
    assert_eq!(statuses, [200, 200, 500, 500, 500]);
    // The server itself still answers.
    assert_eq!(get(&handle, "/health").status, 200);
    let metrics = scrape(&handle, Engine::Vllm);
    assert_eq!(metrics.total("vllm:request_success_total"), Some(2.0));
}

/// Each engine counts what its prefix cache served the way the real one does: a load
/// that repeats its prompt is served all but the first one's blocks; one whose prompts
/// differ from their first word is served nothing.
#[test]
fn the_prefix_cache_serves_repeated_prompts_only() {
    for engine in Engine::ALL {
        let cache = engine.descriptor().prefix_cache.unwrap();
        for repeat in [false, true] {
            let handle = start(engine, Faults::default());
            let config = LoadConfig {
                repeat_prompt: repeat,
                ..small_load()
            };
            let result = load::run(&handle.base_url, config).unwrap();
            assert_eq!(result.completed(), 8);
            let m = scrape(&handle, engine);
            let hits = cache.hits_in(&m).unwrap();
            let queried = cache.queries_in(&m).unwrap();
            // 9 prompts of 24 words (the test request and 8 timed).
            assert_eq!(queried, 9.0 * 24.0, "{engine}");
            if repeat {
                let block = match engine {
                    Engine::Vllm => 16.0,
                    Engine::Sglang => 1.0,
                    Engine::Trtllm => 32.0,
                    other => panic!("no block size known for {other}"),
                };
                // All but the last token, in whole blocks: 16, 23 or none of a 24-word
                // prompt.
                let each = ((24.0_f64 - 1.0) / block).floor() * block;
                assert_eq!(hits, 8.0 * each, "{engine}");
            } else {
                assert_eq!(hits, 0.0, "{engine}");
            }
        }
    }
}

/// A load asked for 8 that keeps at most 2 open: the server never sees more, and the
/// result file still says 8.
#[test]
fn a_load_can_keep_fewer_open_than_it_says() {
    let handle = start(Engine::Vllm, Faults::default());
    let config = LoadConfig {
        open_limit: Some(2),
        save_detailed: true,
        ..small_load()
    };
    let result = load::run(&handle.base_url, config).unwrap();
    let json = result.to_json();
    assert_eq!(json["max_concurrency"], 8);
    assert_eq!(json["ttfts"].as_array().unwrap().len(), 8);
    // From its own records: never more than 2 open at once.
    let starts = json["start_times"].as_array().unwrap();
    let latencies = json["latencies"].as_array().unwrap();
    let spans: Vec<(f64, f64)> = starts
        .iter()
        .zip(latencies)
        .map(|(s, l)| {
            let s = s.as_f64().unwrap();
            (s, s + l.as_f64().unwrap())
        })
        .collect();
    for &(at, _) in &spans {
        let open = spans.iter().filter(|(s, e)| *s <= at && at < *e).count();
        assert!(open <= 2, "{open} open at {at}: {spans:?}");
    }
    let log = handle.boot_log();
    let facts = bootlog::parse_boot_log(&log, Some(Engine::Vllm));
    assert!(facts.unparsed.is_empty(), "{:?}", facts.unparsed);
}

/// A cold engine logs its compile line once, when it first has work; a GPU file shows the
/// server's process and, from the Nth request, a tenant; idle again after the stop.
#[test]
fn a_cold_start_and_a_gpu_tenant_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let readings = tmp.path().join("gpu.json");
    let faults = Faults {
        cold_start_ms: Some(200),
        gpu_readings: Some(readings.clone()),
        gpu_tenant_at_request: Some(3),
        ..Faults::default()
    };
    let handle = start(Engine::Vllm, faults);
    let first: Value = serde_json::from_str(&std::fs::read_to_string(&readings).unwrap()).unwrap();
    assert_eq!(
        first["devices"][0]["compute_processes"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    load::run(&handle.base_url, small_load()).unwrap();
    let log = handle.boot_log();
    let compiles = log
        .lines()
        .filter(|l| l.contains("JIT compilation during inference"))
        .count();
    assert_eq!(compiles, 1, "{log}");
    let facts = bootlog::parse_boot_log(&log, Some(Engine::Vllm));
    assert_eq!(facts.serving_compiles.len(), 1);
    let during: Value = serde_json::from_str(&std::fs::read_to_string(&readings).unwrap()).unwrap();
    assert_eq!(
        during["devices"][0]["compute_processes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    handle.shutdown();
    let after: Value = serde_json::from_str(&std::fs::read_to_string(&readings).unwrap()).unwrap();
    assert!(after["devices"][0]["compute_processes"]
        .as_array()
        .unwrap()
        .is_empty());
}
