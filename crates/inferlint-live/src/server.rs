//! What a server says about itself: whether it is healthy, and its version.

use std::time::Duration;

use inferlint_core::EngineDescriptor;
use serde_json::Value;

use crate::http::{BaseUrl, HttpClient};

/// How long `/health` and a version endpoint may take to answer.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// How often [`healthy_within`] asks its caller whether to stop waiting.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Whether `GET /health` answers 200.
pub async fn healthy(client: &HttpClient, base: &BaseUrl) -> bool {
    healthy_within(client, base, ASK_TIMEOUT, &|| false).await
}

/// Whether `GET /health` answers 200 within `within` (and [`ASK_TIMEOUT`] at most);
/// `false` as soon as `stop` says so (asked every 20 ms). A caller waiting for a server
/// to get ready waits no longer than the time it has left, and a caller told to stop is
/// not held until a server that never answers times out.
pub async fn healthy_within(
    client: &HttpClient,
    base: &BaseUrl,
    within: Duration,
    stop: &dyn Fn() -> bool,
) -> bool {
    let url = base.join("/health");
    let ask = client.get(&url, within.min(ASK_TIMEOUT));
    tokio::pin!(ask);
    loop {
        if stop() {
            return false;
        }
        tokio::select! {
            answer = &mut ask => return answer.is_ok_and(|a| a.status.as_u16() == 200),
            () = tokio::time::sleep(STOP_POLL) => {}
        }
    }
}

/// The version the server reports about itself: the first of the engine's version
/// endpoints ([`EngineDescriptor::version_endpoints`]) that answers 200 with a JSON
/// object holding a `version` string; `None` when none does.
pub async fn version(
    client: &HttpClient,
    base: &BaseUrl,
    engine: &EngineDescriptor,
) -> Option<String> {
    for path in engine.version_endpoints {
        let Ok(answer) = client.get(&base.join(path), ASK_TIMEOUT).await else {
            continue;
        };
        if answer.status.as_u16() != 200 {
            continue;
        }
        let version = serde_json::from_slice::<Value>(&answer.body)
            .ok()
            .and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_owned));
        if version.is_some() {
            return version;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// A server that takes the connection and never answers: before, `/health` held its
    /// caller the whole [`ASK_TIMEOUT`] (5 s) whatever time it had left, and a signal was
    /// acted on only when the request timed out. The bounds here are far below 5 s and far
    /// above what each wait should take (0.2 s, and one 20-ms poll).
    #[tokio::test]
    async fn a_silent_server_holds_the_caller_no_longer_than_it_has_or_is_told() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = tokio::spawn(async move {
            let mut kept = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                kept.push(socket);
            }
        });
        let client = HttpClient::new();
        let base = BaseUrl::parse(&addr.to_string()).unwrap();

        let begun = Instant::now();
        assert!(!healthy_within(&client, &base, Duration::from_millis(200), &|| false).await);
        let took = begun.elapsed();
        assert!(took < Duration::from_secs(3), "waited {took:?} for 0.2 s");

        let begun = Instant::now();
        let told = begun + Duration::from_millis(100);
        assert!(!healthy_within(&client, &base, ASK_TIMEOUT, &|| Instant::now() >= told).await);
        let took = begun.elapsed();
        assert!(
            took < Duration::from_secs(3),
            "stopped after {took:?}, told at 0.1 s"
        );
        held.abort();
    }
}
