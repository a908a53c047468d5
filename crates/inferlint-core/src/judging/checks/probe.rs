//! The probe's verdict (T7): what the probe saw of a live server (one completion, then a
//! burst of them at once, then `/health`), judged. The live crate sends the requests and
//! hands over what came back; xray and `probe` print this verdict.

use serde_json::{json, Value};

use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::run::input;

/// How one completion went.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// Seconds from sending to the whole answer (or the failure).
    pub seconds: f64,
    /// `usage.completion_tokens`, when the answer says.
    pub tokens: Option<u64>,
    /// Why it is not a good reply; `None` when it is.
    pub error: Option<String>,
}

impl Reply {
    /// Whether it is a good reply (HTTP 200 with tokens).
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// The reply as evidence: whether it is good, its status, seconds, tokens, error.
    pub fn evidence(&self) -> Value {
        json!({
            "ok": self.ok(),
            "status": self.status,
            "seconds": (self.seconds * 1e3).round() / 1e3,
            "tokens": self.tokens,
            "error": self.error,
        })
    }
}

/// Everything the probe saw, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum ProbeReport {
    /// `/v1/models` gave no model.
    NoModel {
        /// Why: the answer, or the failure.
        error: String,
    },
    /// The first request was not a good reply; the burst was not sent.
    FirstFailed {
        /// The model asked for.
        model: String,
        /// The first request's reply.
        first: Reply,
        /// Whether `/health` still answered afterwards.
        alive_after: bool,
    },
    /// The first request and the burst were sent.
    Done {
        /// The model asked for.
        model: String,
        /// The first request's reply.
        first: Reply,
        /// The burst's replies, in sending order.
        burst: Vec<Reply>,
        /// Whether `/health` still answered afterwards.
        alive_after: bool,
    },
}

/// Judges a reply: HTTP 200 with tokens (`usage.completion_tokens` > 0, or text in
/// `choices[0].text`).
pub fn judge_reply(status: u16, body: &[u8], seconds: f64) -> Reply {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let tokens = parsed
        .as_ref()
        .and_then(|v| v.pointer("/usage/completion_tokens"))
        .and_then(Value::as_u64);
    let has_text = parsed
        .as_ref()
        .and_then(|v| v.pointer("/choices/0/text"))
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty());
    let error = if status != 200 {
        let detail = String::from_utf8_lossy(body);
        let detail: String = detail.trim().chars().take(200).collect();
        Some(if detail.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {detail}")
        })
    } else if parsed.is_none() {
        Some("the answer is not JSON".to_owned())
    } else if tokens.is_some_and(|n| n > 0) || has_text {
        None
    } else {
        Some("empty completion".to_owned())
    };
    Reply {
        status: Some(status),
        seconds,
        tokens,
        error,
    }
}

/// The T7 verdict of what the probe saw.
pub fn verdict(report: &ProbeReport) -> CheckResult {
    match report {
        ProbeReport::NoModel { error } => CheckResult::new(
            Tripwire::T7,
            Status::Fail,
            format!("cannot list models: {error}"),
        ),
        ProbeReport::FirstFailed {
            model,
            first,
            alive_after,
        } => CheckResult::new(
            Tripwire::T7,
            Status::Fail,
            format!(
                "first request failed: {}",
                first.error.as_deref().unwrap_or("no reply")
            ),
        )
        .with("model", model.as_str())
        .with("first", first.evidence())
        .with("alive_after", *alive_after),
        ProbeReport::Done {
            model,
            first,
            burst,
            alive_after,
        } => {
            let failed = burst.iter().filter(|r| !r.ok()).count();
            let c = burst.len();
            let max_seconds = burst.iter().map(|r| r.seconds).fold(0.0, f64::max);
            // The message is the established tool's, word for word (scripts match it);
            // what failed is added on the terminal line and listed in the evidence.
            let (status, message, suffix) = if failed > 0 {
                let first_error = burst
                    .iter()
                    .find_map(|r| r.error.as_deref())
                    .unwrap_or_default();
                let dead = if *alive_after {
                    ""
                } else {
                    ", and the server is dead after it"
                };
                (
                    Status::Fail,
                    format!("{failed}/{c} burst requests failed"),
                    Some(format!(" (e.g. {first_error}){dead}")),
                )
            } else if !alive_after {
                (
                    Status::Fail,
                    "server died after burst".to_owned(),
                    Some(" (/health does not answer 200)".to_owned()),
                )
            } else {
                (
                    Status::Pass,
                    format!("1 + {c} concurrent requests served, server alive"),
                    None,
                )
            };
            let errors: Vec<&str> = burst.iter().filter_map(|r| r.error.as_deref()).collect();
            let mut result = CheckResult::new(Tripwire::T7, status, message)
                .with("model", model.as_str())
                .with("first", first.evidence())
                .with(
                    "burst",
                    json!({
                        "concurrency": c,
                        "failed": failed,
                        "max_seconds": (max_seconds * 1e3).round() / 1e3,
                        "errors": errors,
                    }),
                )
                .with("alive_after", *alive_after);
            result.terminal_suffix = suffix;
            result
        }
    }
}

/// T7 of a probe of a server whose process its caller watched (xray's supervisor):
/// what the probe saw, and `ended`, how the server's process ended during the probe
/// (`the server exited with code 1`), if it did. A server whose process ended did not
/// survive the probe, whatever answered `/health` afterwards (another process may have
/// taken the port): T7 fails, naming the end. A probe that failed already keeps its
/// message, with the end in its evidence.
pub fn judge(report: &ProbeReport, ended: Option<&str>) -> CheckResult {
    let result = verdict(report);
    let Some(ended) = ended else {
        return result;
    };
    if result.status == Status::Fail {
        return result.with("process_ended", ended);
    }
    let mut failed = CheckResult::new(
        Tripwire::T7,
        Status::Fail,
        format!("{ended} during the probe"),
    )
    .with_evidence(result.evidence)
    .with("process_ended", ended);
    failed.terminal_suffix = None;
    failed
}

/// T7 when the probe was left out (`--no-probe`): not checked, naming the probe as the
/// input it needs.
pub fn left_out(why: &str) -> CheckResult {
    CheckResult::not_checked(Tripwire::T7, why, &[input::PROBE])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(alive_after: bool) -> ProbeReport {
        ProbeReport::Done {
            model: "m".to_owned(),
            first: good(),
            burst: vec![good(); 8],
            alive_after,
        }
    }

    /// A server the supervisor saw end during the probe did not survive it, even though
    /// every request was served and something still answered /health afterwards (the
    /// port is anyone's once the server is gone): T7 fails, naming the end.
    #[test]
    fn a_server_gone_during_the_probe_fails_t7() {
        let r = judge(&served(true), Some("the server exited with code 1"));
        assert_eq!(r.status, Status::Fail);
        assert_eq!(r.message, "the server exited with code 1 during the probe");
        assert_eq!(r.evidence["process_ended"], "the server exited with code 1");
        assert_eq!(r.evidence["burst"]["failed"], 0);
    }

    /// A probe that already failed (the server dead after the burst) keeps the probe's
    /// own message, the established tool's; the end is added as evidence.
    #[test]
    fn a_failed_probe_keeps_its_message_when_the_server_ended() {
        let r = judge(&served(false), Some("the server was killed by a signal"));
        assert_eq!(
            (r.status, r.message.as_str()),
            (Status::Fail, "server died after burst")
        );
        assert_eq!(
            r.evidence["process_ended"],
            "the server was killed by a signal"
        );
    }

    /// A server whose process lived through the probe and served every request passes:
    /// the supervisor's watch adds nothing.
    #[test]
    fn a_server_alive_through_the_probe_passes() {
        let r = judge(&served(true), None);
        assert_eq!(r.status, Status::Pass);
        assert!(r.evidence.get("process_ended").is_none());
    }

    /// `--no-probe` leaves T7 unchecked, naming the probe as what it needs, never passed.
    #[test]
    fn a_probe_left_out_is_not_checked() {
        let r = left_out("needs the probe, which --no-probe left out");
        assert_eq!(r.status, Status::NotChecked);
        assert_eq!(r.evidence["needs"], serde_json::json!(["probe"]));
    }

    fn good() -> Reply {
        judge_reply(
            200,
            br#"{"choices":[{"text":" It is sunny."}],"usage":{"completion_tokens":5}}"#,
            0.1,
        )
    }

    #[test]
    fn replies() {
        assert!(good().ok());
        assert_eq!(good().tokens, Some(5));
        let empty = judge_reply(
            200,
            br#"{"choices":[{"text":""}],"usage":{"completion_tokens":0}}"#,
            0.1,
        );
        assert_eq!(empty.error.as_deref(), Some("empty completion"));
        let text_only = judge_reply(200, br#"{"choices":[{"text":"hi"}]}"#, 0.1);
        assert!(text_only.ok());
        let bad = judge_reply(500, b"Internal Server Error", 0.1);
        assert_eq!(
            bad.error.as_deref(),
            Some("HTTP 500: Internal Server Error")
        );
    }

    #[test]
    fn verdicts() {
        let model = "m".to_owned();
        let pass = verdict(&ProbeReport::Done {
            model: model.clone(),
            first: good(),
            burst: vec![good(); 8],
            alive_after: true,
        });
        assert_eq!(pass.status, Status::Pass);
        assert_eq!(
            pass.message,
            "1 + 8 concurrent requests served, server alive"
        );
        let died = verdict(&ProbeReport::Done {
            model: model.clone(),
            first: good(),
            burst: vec![good(); 8],
            alive_after: false,
        });
        assert_eq!(
            (died.status, died.message.as_str()),
            (Status::Fail, "server died after burst")
        );
        let mut burst = vec![good(); 8];
        burst[2].error = Some("connection closed".into());
        burst[5].error = Some("connection closed".into());
        let some = verdict(&ProbeReport::Done {
            model: model.clone(),
            first: good(),
            burst,
            alive_after: false,
        });
        assert_eq!(some.status, Status::Fail);
        assert_eq!(some.message, "2/8 burst requests failed");
        assert!(some.terminal_line().ends_with(
            "2/8 burst requests failed (e.g. connection closed), and the server is dead after it"
        ));
        let first = verdict(&ProbeReport::FirstFailed {
            model,
            first: Reply {
                status: None,
                seconds: 0.0,
                tokens: None,
                error: Some("connection refused".into()),
            },
            alive_after: false,
        });
        assert_eq!(first.message, "first request failed: connection refused");
        assert_eq!(first.evidence["alive_after"], false);
        let none = verdict(&ProbeReport::NoModel {
            error: "connection refused".into(),
        });
        assert_eq!(none.message, "cannot list models: connection refused");
    }
}
