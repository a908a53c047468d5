//! What the simulated server sends besides its answers, over real sockets on 127.0.0.1:
//! streamed chunks of several tokens, the load's ids, and the KV event stream (a ZeroMQ
//! subscriber and a replay request of the tests' own). Every server stops when its
//! handle drops; every wait is bounded.

use std::time::Duration;

use bytes::Bytes;
use inferlint_core::Engine;
use inferlint_engines::kv_frames::{self, KvBatch, Replayed};
use inferlint_sim::kvpub::KvConfig;
use inferlint_sim::kvwire::Encoding;
use inferlint_sim::load::{self, LoadConfig};
use inferlint_sim::server::{self, ServerConfig, ServerHandle};
use zeromq::{DealerSocket, Socket, SocketRecv, SocketSend, SubSocket, ZmqMessage};

const TIMEOUT: Duration = Duration::from_secs(20);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `--stream-interval 4`: a 10-token answer comes as its first token, then 4 and 4, then
/// the last 1 when it finishes: 4 chunks, 3 gaps. A load that counts chunks says 4 tokens;
/// one that reads the usage says 10.
#[test]
fn a_stream_interval_sends_the_first_token_then_n_a_chunk() {
    let mut config = ServerConfig::new(Engine::Vllm);
    config.speed = 200.0;
    config.stream_interval = 4;
    let server = server::spawn(config).unwrap();
    let base = LoadConfig {
        requests: 3,
        concurrency: 3,
        prompt_tokens: 8,
        output_tokens: 10,
        save_detailed: true,
        no_test_request: true,
        ..LoadConfig::default()
    };
    let result = load::run(&server.base_url, base.clone()).unwrap();
    for r in &result.requests {
        assert!(r.ok, "{r:?}");
        assert_eq!((r.chunks(), r.itls().len(), r.output_tokens), (4, 3, 10));
    }
    let counted = load::run(
        &server.base_url,
        LoadConfig {
            count_chunks: true,
            ..base
        },
    )
    .unwrap();
    assert!(counted.requests.iter().all(|r| r.output_tokens == 4));
    assert_eq!(counted.total_output_tokens(), 12);
}

/// The load's result keeps vllm bench serve's per-request lists, one entry per request in
/// sending order: each request's gaps between chunks (one fewer than its tokens, at one
/// token a chunk), its wait in the client after it was due, and its send time.
#[test]
fn the_load_keeps_each_request_s_lists() {
    let mut config = ServerConfig::new(Engine::Vllm);
    config.speed = 200.0;
    let server = server::spawn(config).unwrap();
    let result = load::run(
        &server.base_url,
        LoadConfig {
            requests: 4,
            concurrency: 2,
            prompt_tokens: 8,
            output_tokens: 6,
            save_detailed: true,
            request_id_prefix: Some("t-".into()),
            ..LoadConfig::default()
        },
    )
    .unwrap();
    let json = result.to_json();
    let list = |key: &str| json.get(key).unwrap().as_array().unwrap().clone();
    for key in [
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "latencies",
        "start_times",
        "queue_times",
        "errors",
    ] {
        assert_eq!(list(key).len(), 4, "{key}");
    }
    assert!(list("itls")
        .iter()
        .all(|gaps| gaps.as_array().unwrap().len() == 5));
    // At rate inf every request is due at the start: its wait is its send's distance
    // from it, and the sends are in order.
    let queue: Vec<f64> = list("queue_times")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    let starts: Vec<f64> = list("start_times")
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for i in 1..4 {
        let between = starts[i] - starts[0];
        assert!(
            (queue[i] - queue[0] - between).abs() < 0.005,
            "{queue:?} {starts:?}"
        );
    }
    // The prefix is in the tool's settings line, as vllm bench serve prints it.
    assert!(
        result.log.contains("request_id_prefix='t-'"),
        "{}",
        result.log
    );
}

/// A subscriber of the tests' own, on its own runtime.
struct Subscriber {
    runtime: tokio::runtime::Runtime,
    socket: SubSocket,
}

impl Subscriber {
    fn connect(endpoint: &str) -> Subscriber {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let socket = runtime.block_on(async {
            let mut socket = SubSocket::new();
            socket.subscribe("").await.unwrap();
            socket.connect(endpoint).await.unwrap();
            socket
        });
        Subscriber { runtime, socket }
    }

    /// The next batch, with its sequence number.
    fn next(&mut self) -> (u64, KvBatch) {
        let socket = &mut self.socket;
        let message = self
            .runtime
            .block_on(async { tokio::time::timeout(TIMEOUT, socket.recv()).await })
            .expect("a batch in time")
            .unwrap();
        let frames: Vec<Bytes> = message.into_vec();
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_ref()).collect();
        let (seq, payload) = kv_frames::published_frame(&refs).unwrap();
        (seq, kv_frames::decode_batch(payload).unwrap())
    }
}

fn kv_server(pub_port: u16, replay_port: u16) -> ServerHandle {
    let mut config = ServerConfig::new(Engine::Vllm);
    config.speed = 100.0;
    let json = format!(
        r#"{{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:{pub_port}", "replay_endpoint": "tcp://*:{replay_port}"}}"#
    );
    config.traces.kv_events = KvConfig::parse(&json, Encoding::VllmMaps).unwrap();
    server::spawn(config).unwrap()
}

fn one_request(server: &ServerHandle, prompt_words: usize, max_tokens: u64) {
    let body = format!(
        r#"{{"prompt": "{}", "max_tokens": {max_tokens}}}"#,
        vec!["w"; prompt_words].join(" ")
    );
    let reply = load::fetch(
        "POST",
        &format!("{}/v1/completions", server.base_url),
        Some(&body),
        TIMEOUT,
    )
    .unwrap();
    assert_eq!(reply.status, 200, "{}", reply.body);
}

/// The stream of one server, batch by batch: a request of 32 prompt tokens stores its 2
/// full blocks of 16 at its prefill (one batch, numbered 0) and, with 20 output tokens,
/// one more when its 48th token is computed (51 computed in all, its last never); the
/// same prompt again is served from the cache and stores nothing of its prompt. A reset
/// of the idle cache goes out first in the next batch, and the same prompt is stored
/// again. The replay sends every batch it holds from the number asked, then its end.
#[test]
fn the_kv_stream_follows_the_blocks_and_replays_them() {
    let (pub_port, replay_port) = (free_port(), free_port());
    let server = kv_server(pub_port, replay_port);
    let mut sub = Subscriber::connect(&format!("tcp://127.0.0.1:{pub_port}"));
    // `connect` returns once the handshake, which carries the subscription, is written:
    // a request made after it is published to this subscriber.
    one_request(&server, 32, 20);
    let (seq, first) = sub.next();
    assert_eq!(seq, 0);
    assert_eq!((first.stored_blocks, first.stored_tokens), (2, 32));
    assert_eq!(first.dp_rank, Some(0));
    assert_eq!(first.encodings.maps, first.events);
    let (seq, second) = sub.next();
    assert_eq!((seq, second.stored_blocks), (1, 1));
    // The same prompt: the cache serves its 2 prompt blocks; its third block holds the
    // same tokens as the first request's, already cached.
    one_request(&server, 32, 20);
    let reset = load::fetch(
        "POST",
        &format!("{}/reset_prefix_cache", server.base_url),
        None,
        TIMEOUT,
    )
    .unwrap();
    assert!(reset.body.contains("true"), "{}", reset.body);
    one_request(&server, 32, 20);
    let (seq, cleared) = sub.next();
    assert_eq!(seq, 2, "the second request stored nothing");
    assert_eq!(cleared.cleared, 1);
    assert_eq!(cleared.stored_blocks, 2, "stored again after the clear");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let replayed = runtime.block_on(async {
        let mut dealer = DealerSocket::new();
        dealer
            .connect(&format!("tcp://127.0.0.1:{replay_port}"))
            .await
            .unwrap();
        let ask = vec![Bytes::new(), Bytes::copy_from_slice(&1u64.to_be_bytes())];
        dealer
            .send(ZmqMessage::try_from(ask).unwrap())
            .await
            .unwrap();
        let mut seqs = Vec::new();
        loop {
            let m = tokio::time::timeout(TIMEOUT, dealer.recv())
                .await
                .expect("the replay answers")
                .unwrap();
            let frames = m.into_vec();
            let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_ref()).collect();
            match kv_frames::replayed_frame(&refs).unwrap() {
                Replayed::Batch { seq, .. } => seqs.push(seq),
                Replayed::End => return seqs,
            }
        }
    });
    assert_eq!(replayed, vec![1, 2, 3]);
    drop(server);
}
