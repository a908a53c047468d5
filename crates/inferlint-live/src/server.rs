//! What a server says about itself: whether it is healthy, and its version.

use std::time::Duration;

use inferlint_core::EngineDescriptor;
use serde_json::Value;

use crate::http::{BaseUrl, HttpClient};

/// How long `/health` and a version endpoint may take to answer.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `GET /health` answers 200.
pub async fn healthy(client: &HttpClient, base: &BaseUrl) -> bool {
    client
        .get(&base.join("/health"), ASK_TIMEOUT)
        .await
        .is_ok_and(|answer| answer.status.as_u16() == 200)
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
