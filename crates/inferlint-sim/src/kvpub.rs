//! The simulated server's KV event publisher (`--kv-events-config JSON`), as vLLM's
//! `ZmqEventPublisher` runs it: a ZeroMQ PUB socket that sends one message per batch,
//! `[topic, seq, payload]`, numbered from 0 when the publisher starts, and a ROUTER at
//! the replay endpoint that sends a DEALER's `["", start_seq]` every batch it still
//! holds from `start_seq` on (the last `buffer_steps`), then the end marker.
//!
//! - **Where.** An endpoint with a wildcard (`*`, `::`) is bound; any other is connected
//!   to (vLLM's `_is_bind_endpoint`), so a subscriber that binds first, as xray's does,
//!   receives the stream. The simulator binds a wildcard on 127.0.0.1 only. The replay
//!   endpoint is always bound, on 127.0.0.1 for a wildcard.
//! - **Configuration.** vLLM's keys: `enable_kv_cache_events` (vLLM publishes only when
//!   it is true), `publisher` (`zmq`; `null` publishes nothing), `endpoint` (default
//!   `tcp://*:5557`), `replay_endpoint`, `buffer_steps` (10,000), `topic` (empty).
//!   SGLang takes the same JSON and publishes without the enable key.
//! - **Faults, for tests.** [`KvFaults::drop_seqs`]: batches numbered so are kept for the
//!   replay but never sent on the PUB socket (a hole a subscriber sees);
//!   [`KvFaults::replay_silent`]: the ROUTER reads each request and answers nothing.
//! - A batch published before a connecting PUB socket has reached its subscriber is
//!   dropped, as ZeroMQ drops it, and stays in the replay's buffer.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use zeromq::{PubSocket, RouterSocket, Socket, SocketRecv, SocketSend, ZmqMessage};

use crate::kvwire::{self, Encoding};

/// The publisher's configuration, from the engine's `--kv-events-config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvConfig {
    /// The PUB endpoint, as given.
    pub endpoint: String,
    /// The replay endpoint, as given, if any.
    pub replay_endpoint: Option<String>,
    /// Batches the replay holds.
    pub buffer_steps: usize,
    /// The topic frame of every message.
    pub topic: String,
    /// How the batches are encoded (the engine's own form).
    pub encoding: Encoding,
}

impl KvConfig {
    /// Reads `--kv-events-config`; `Ok(None)` when it asks for no publishing (vLLM without
    /// `"enable_kv_cache_events": true`, or the `null` publisher).
    pub fn parse(json: &str, encoding: Encoding) -> Result<Option<KvConfig>, String> {
        let value: Value = serde_json::from_str(json)
            .map_err(|e| format!("--kv-events-config is not JSON: {e}"))?;
        let Value::Object(o) = value else {
            return Err("--kv-events-config is not a JSON object".into());
        };
        let text = |key: &str| o.get(key).and_then(Value::as_str).map(str::to_owned);
        if encoding == Encoding::VllmMaps
            && o.get("enable_kv_cache_events").and_then(Value::as_bool) != Some(true)
        {
            return Ok(None);
        }
        match text("publisher").as_deref() {
            None | Some("zmq") => {}
            Some("null") => return Ok(None),
            Some(other) => {
                return Err(format!(
                    "--kv-events-config: publisher {other:?}: the simulator publishes over zmq"
                ))
            }
        }
        let endpoint = text("endpoint").unwrap_or_else(|| "tcp://*:5557".to_owned());
        let replay_endpoint = text("replay_endpoint").filter(|e| !e.is_empty());
        for e in std::iter::once(&endpoint).chain(&replay_endpoint) {
            tcp_address(e)?;
        }
        let buffer_steps = match o.get("buffer_steps") {
            None | Some(Value::Null) => 10_000,
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| format!("--kv-events-config: buffer_steps {v} is not a count"))?,
        };
        Ok(Some(KvConfig {
            endpoint,
            replay_endpoint,
            buffer_steps,
            topic: text("topic").unwrap_or_default(),
            encoding,
        }))
    }
}

/// Whether vLLM binds `endpoint` rather than connecting to it: a wildcard host.
pub fn is_bind_endpoint(endpoint: &str) -> bool {
    endpoint.contains('*') || endpoint.contains("::")
}

/// `tcp://HOST:PORT` as the simulator uses it: a wildcard host is 127.0.0.1.
fn tcp_address(endpoint: &str) -> Result<String, String> {
    let rest = endpoint
        .strip_prefix("tcp://")
        .ok_or_else(|| format!("{endpoint}: the simulator publishes on tcp:// only"))?;
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("{endpoint}: no port"))?;
    port.parse::<u16>()
        .map_err(|_| format!("{endpoint}: {port:?} is not a port"))?;
    let host = match host {
        "*" | "0.0.0.0" | "[::]" | "::" | "" => "127.0.0.1",
        other => other,
    };
    Ok(format!("tcp://{host}:{port}"))
}

/// Faults of the stream, on request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvFaults {
    /// Sequence numbers kept for the replay but never sent.
    pub drop_seqs: BTreeSet<u64>,
    /// The replay endpoint reads requests and never answers.
    pub replay_silent: bool,
}

/// What the publisher did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KvStats {
    /// Batches numbered.
    pub batches: u64,
    /// Of them, sent on the PUB socket.
    pub sent: u64,
    /// Batches sent again through the replay.
    pub replayed: u64,
}

/// One message to the publisher's task.
#[derive(Debug)]
enum Command {
    /// A batch's payload.
    Batch(Vec<u8>),
    /// The engine started again: the sequence and the replay's buffer start over.
    Restart,
}

/// A handle on the running publisher: batches go in without waiting.
#[derive(Debug, Clone)]
pub struct KvPublisher {
    tx: mpsc::UnboundedSender<Command>,
    stats: Arc<Mutex<KvStats>>,
    encoding: Encoding,
}

type Buffer = Arc<Mutex<VecDeque<(u64, Vec<u8>)>>>;

impl KvPublisher {
    /// Starts the publisher's tasks on the current tokio runtime: binds the replay
    /// endpoint (and a wildcard PUB endpoint) before it returns, and connects a PUB
    /// endpoint in the background.
    pub async fn start(config: KvConfig, faults: KvFaults) -> std::io::Result<KvPublisher> {
        let io = |e: String| std::io::Error::other(e);
        let buffer: Buffer = Arc::default();
        let stats: Arc<Mutex<KvStats>> = Arc::default();
        if let Some(replay) = &config.replay_endpoint {
            let mut router = RouterSocket::new();
            router
                .bind(&tcp_address(replay).map_err(io)?)
                .await
                .map_err(|e| io(format!("cannot bind the replay endpoint {replay}: {e}")))?;
            tokio::spawn(serve_replay(
                router,
                Arc::clone(&buffer),
                Arc::clone(&stats),
                config.encoding,
                faults.replay_silent,
            ));
        }
        let mut socket = PubSocket::new();
        let address = tcp_address(&config.endpoint).map_err(io)?;
        let bound = is_bind_endpoint(&config.endpoint);
        if bound {
            socket
                .bind(&address)
                .await
                .map_err(|e| io(format!("cannot bind {}: {e}", config.endpoint)))?;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let encoding = config.encoding;
        tokio::spawn(publish(
            socket,
            (!bound).then_some(address),
            rx,
            buffer,
            Arc::clone(&stats),
            config,
            faults,
        ));
        Ok(KvPublisher {
            tx,
            stats,
            encoding,
        })
    }

    /// Publishes one batch made at `ts` (the engine's wall clock).
    pub fn publish(&self, ts: f64, events: &[crate::kvblocks::KvEvent]) {
        let _ = self
            .tx
            .send(Command::Batch(kvwire::batch(ts, events, self.encoding)));
    }

    /// The engine started again: numbering restarts at 0.
    pub fn restart(&self) {
        let _ = self.tx.send(Command::Restart);
    }

    /// What it did so far.
    pub fn stats(&self) -> KvStats {
        *self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The encoding it was started with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

fn frames(parts: Vec<Vec<u8>>) -> Option<ZmqMessage> {
    ZmqMessage::try_from(parts.into_iter().map(Bytes::from).collect::<Vec<_>>()).ok()
}

async fn publish(
    mut socket: PubSocket,
    connect: Option<String>,
    mut rx: mpsc::UnboundedReceiver<Command>,
    buffer: Buffer,
    stats: Arc<Mutex<KvStats>>,
    config: KvConfig,
    faults: KvFaults,
) {
    let mut next: u64 = 0;
    let hold = |command: Command, next: &mut u64| -> Option<(u64, Vec<u8>)> {
        let mut held = buffer.lock().unwrap_or_else(PoisonError::into_inner);
        match command {
            Command::Restart => {
                *next = 0;
                held.clear();
                None
            }
            Command::Batch(payload) => {
                let seq = *next;
                *next += 1;
                held.push_back((seq, payload.clone()));
                while held.len() > config.buffer_steps {
                    held.pop_front();
                }
                stats.lock().unwrap_or_else(PoisonError::into_inner).batches += 1;
                Some((seq, payload))
            }
        }
    };
    if let Some(address) = connect {
        // Until the subscriber is reached, what is published is dropped (and held).
        let connecting = socket.connect(&address);
        tokio::pin!(connecting);
        loop {
            tokio::select! {
                result = &mut connecting => {
                    if result.is_err() {
                        // Nothing to publish to: keep numbering and holding.
                        while let Some(command) = rx.recv().await {
                            hold(command, &mut next);
                        }
                        return;
                    }
                    break;
                }
                command = rx.recv() => match command {
                    Some(command) => { hold(command, &mut next); }
                    None => return,
                },
            }
        }
    }
    while let Some(command) = rx.recv().await {
        let Some((seq, payload)) = hold(command, &mut next) else {
            continue;
        };
        if faults.drop_seqs.contains(&seq) {
            continue;
        }
        let mut message = kvwire::published(seq, payload);
        message[0] = config.topic.as_bytes().to_vec();
        let Some(message) = frames(message) else {
            continue;
        };
        if socket.send(message).await.is_ok() {
            stats.lock().unwrap_or_else(PoisonError::into_inner).sent += 1;
        }
    }
}

async fn serve_replay(
    mut router: RouterSocket,
    buffer: Buffer,
    stats: Arc<Mutex<KvStats>>,
    encoding: Encoding,
    silent: bool,
) {
    while let Ok(request) = router.recv().await {
        let parts = request.into_vec();
        // [identity, "", start_seq]
        let (Some(identity), Some(start)) = (parts.first(), parts.get(2)) else {
            continue;
        };
        if silent {
            continue;
        }
        let Ok(start) = <[u8; 8]>::try_from(start.as_ref()).map(u64::from_be_bytes) else {
            continue;
        };
        let held: Vec<(u64, Vec<u8>)> = buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(seq, _)| *seq >= start)
            .cloned()
            .collect();
        let mut replies: Vec<Vec<Vec<u8>>> = held
            .into_iter()
            .map(|(seq, payload)| kvwire::replayed(seq, payload, encoding))
            .collect();
        let count = replies.len() as u64;
        replies.push(kvwire::end_of_replay(encoding));
        for reply in replies {
            let mut parts = vec![identity.to_vec()];
            parts.extend(reply);
            let Some(message) = frames(parts) else {
                continue;
            };
            if router.send(message).await.is_err() {
                break;
            }
        }
        stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replayed += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_is_read_as_each_engine_reads_it() {
        let vllm = r#"{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://127.0.0.1:5557", "replay_endpoint": "tcp://127.0.0.1:5558"}"#;
        let c = KvConfig::parse(vllm, Encoding::VllmMaps).unwrap().unwrap();
        assert_eq!(c.replay_endpoint.as_deref(), Some("tcp://127.0.0.1:5558"));
        assert_eq!(c.buffer_steps, 10_000);
        // vLLM publishes only when told to; SGLang's configuration has no such key.
        let sglang = r#"{"publisher": "zmq", "endpoint": "tcp://*:5557"}"#;
        assert_eq!(KvConfig::parse(sglang, Encoding::VllmMaps).unwrap(), None);
        assert!(KvConfig::parse(sglang, Encoding::SglangArrays)
            .unwrap()
            .is_some());
        assert!(KvConfig::parse("[]", Encoding::SglangArrays).is_err());
        assert!(KvConfig::parse(
            r#"{"enable_kv_cache_events": true, "endpoint": "ipc:///tmp/kv"}"#,
            Encoding::VllmMaps
        )
        .is_err());
        // A wildcard is bound (on the loopback here), anything else connected to.
        assert!(is_bind_endpoint("tcp://*:5557"));
        assert!(!is_bind_endpoint("tcp://127.0.0.1:5557"));
        assert_eq!(tcp_address("tcp://*:5557").unwrap(), "tcp://127.0.0.1:5557");
    }
}
