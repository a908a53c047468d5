//! T28: a run declared disaggregated that never moved KV, or moved only part of it.
//!
//! Disaggregated serving puts prefill and decode on separate instances: a prefill
//! instance computes the prompt's KV, a connector (NIXL, Mooncake) moves it to a decode
//! instance, which generates. Whether a request goes that way is the router's choice, not
//! the server's: on vLLM a request reaches the decode instance with `kv_transfer_params`
//! from the proxy, and one without them is prefilled where it lands, locally, and counts
//! no transfer. A benchmark pointed straight at the decode instance, or through a proxy
//! that dropped the parameters, measures ordinary serving under a disaggregated
//! configuration. The decode instance says which it was: it counts the prompt tokens whose
//! KV it received (vLLM's `prompt_tokens_by_source{source="external_kv_transfer"}`) beside
//! those it prefilled itself.
//!
//! T28 reads the boot log for the declaration (a KV connector that moves KV between
//! instances, and the instance's role), then the counters between the two readings. The
//! transfer library's own figures (NIXL's transfers, bytes, failures) go in the evidence
//! with their scope: they pool every worker of the instance and name no request. No engine
//! read here times a request's transfer apart from its prefill: its time to first token
//! holds the prefill queue, the remote prefill, the transfer and the first decode step
//! together, and the evidence says so.

use crate::engine::{Disaggregation, EngineDescriptor, LabelledCounter};
use crate::judging::checks::counters::restart_between;
use crate::judging::checks::prefix_cache::connector_printed;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::model::{BootFacts, Snapshot};
use crate::story::fmt;

/// The share of the prompt tokens not served by the decode instance's own cache that
/// must have come by transfer for T28 to pass. vLLM counts a request's tokens when it
/// admits it: every prompt token the decode instance's own cache did not serve is to be
/// loaded, but for the trailing tokens a Mamba or multi-token-prediction model
/// recomputes (`_prefill_backoff`, a few a prompt), which count as computed. Nine in ten
/// leaves room for those on prompts of a few dozen tokens or more.
pub const TRANSFERRED_SHARE: f64 = 0.9;

fn t28(status: Status, message: impl Into<String>) -> CheckResult {
    CheckResult::new(Tripwire::T28, status, message)
}

/// What the boot log declares of the instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// The connector that moves KV between instances.
    pub connector: &'static str,
    /// The instance's role, as printed (`kv_producer`, `kv_consumer`, `kv_both`).
    pub role: Option<String>,
}

/// The declaration the boot log shows, or why the run was not declared disaggregated.
pub fn declared(table: &Disaggregation, boot: &BootFacts) -> Result<Declared, String> {
    let setting = table.connector.setting;
    let Some(printed) = connector_printed(boot, &table.connector) else {
        return Err(format!(
            "the boot log shows no KV connector ({setting}): the run was not declared disaggregated"
        ));
    };
    let Some(connector) = table.connector.names_one_of(&printed, table.connectors) else {
        let named = crate::engine::printed_field(&printed, table.connector.connector_field)
            .unwrap_or("one");
        return Err(format!(
            "the boot log's {setting} names {named}, no connector that moves KV between a prefill and a decode instance: the run was not declared disaggregated"
        ));
    };
    Ok(Declared {
        connector,
        role: table.connector.role(&printed).map(str::to_owned),
    })
}

/// A counter's series with one label value, in one reading.
fn read(snapshot: &Snapshot, counter: &LabelledCounter) -> Option<f64> {
    snapshot
        .metrics
        .total_matching(counter.metric, &[(counter.label, counter.value)])
}

fn counter_name(counter: &LabelledCounter) -> String {
    format!(
        "{}{{{}=\"{}\"}}",
        counter.metric, counter.label, counter.value
    )
}

/// T28 on one instance's run: the boot log's declaration, then the decode side's counters
/// between the two readings.
pub fn disaggregation(
    engine: &EngineDescriptor,
    boot: Option<&BootFacts>,
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
) -> CheckResult {
    let Some(table) = engine.disaggregation else {
        return t28(
            Status::NotApplicable,
            format!(
                "{} has no disaggregated serving inferlint reads",
                engine.name
            ),
        );
    };
    let Some(boot) = boot else {
        return t28(
            Status::Unknown,
            "no boot log: whether the run was declared disaggregated cannot be told",
        );
    };
    let declared = match declared(&table, boot) {
        Ok(d) => d,
        Err(why) => return t28(Status::NotApplicable, why),
    };
    let role = declared.role.as_deref().unwrap_or("no role");
    let how = format!("{}, {role}", declared.connector);
    let base = |status: Status, message: String| {
        t28(status, message)
            .with("connector", declared.connector)
            .with("role", role)
            .with(
                "first_token_split",
                "not recorded: the engine times no request's KV transfer apart from its prefill, so its time to first token holds the prefill queue, the remote prefill, the transfer and the first decode step together",
            )
    };
    if declared.role.as_deref() == Some(table.producer_role) {
        return base(
            Status::Unknown,
            format!(
                "declared the prefill side ({how}): a prefill instance counts no KV it sends, so whether the run moved any is the decode instance's recording to say"
            ),
        );
    }
    let (Some(before), Some(after)) = (before, after) else {
        return base(
            Status::Unknown,
            format!(
                "declared disaggregated ({how}), but without the before and after readings the KV that came by transfer cannot be counted"
            ),
        );
    };
    if let Some(restart) = restart_between(before, after) {
        return base(Status::Unknown, restart.message);
    }
    let delta = |counter: &LabelledCounter| -> Result<f64, String> {
        match (read(before, counter), read(after, counter)) {
            (Some(b), Some(a)) if a.is_finite() && b.is_finite() && a >= b => Ok(a - b),
            (Some(_), Some(_)) => Err(format!(
                "{} went down or cannot be read",
                counter_name(counter)
            )),
            _ => Err(format!(
                "{} is missing from a reading: this release counts no KV that came by transfer",
                counter_name(counter)
            )),
        }
    };
    let counted = [table.transferred, table.computed, table.cached].map(|c| delta(&c));
    let [transferred, computed, cached] = match counted {
        [Ok(t), Ok(c), Ok(l)] => [t, c, l],
        [t, c, l] => {
            let why = [t, c, l]
                .into_iter()
                .find_map(Result::err)
                .unwrap_or_default();
            return base(
                Status::Unknown,
                format!("declared disaggregated ({how}), but {why}"),
            );
        }
    };
    let mut result = with_transfer_counters(
        &table,
        before,
        after,
        base(Status::Unknown, String::new())
            .with("transferred_tokens", transferred)
            .with("computed_tokens", computed)
            .with("own_cache_tokens", cached)
            .with("transferred_share_to_pass", TRANSFERRED_SHARE),
    );
    if let Some(deferred) = read(after, &table.deferred_waiting) {
        result = result.with("deferred_waiting_at_end", deferred);
    }
    let prompt = transferred + computed + cached;
    let counts = format!(
        "{} by transfer, {} prefilled here, {} from its own prefix cache",
        fmt::thousands_f(transferred),
        fmt::thousands_f(computed),
        fmt::thousands_f(cached)
    );
    if prompt == 0.0 {
        result.message = format!(
            "declared disaggregated ({how}), but the instance counted no prompt token over the run"
        );
        return result;
    }
    if transferred == 0.0 && computed == 0.0 {
        // A decode instance loads only what its own cache lacks: nothing was left to move.
        result.message = format!(
            "declared disaggregated ({how}), but the instance's own prefix cache served every prompt token ({counts}): nothing was left to transfer, so whether the run disaggregated cannot be told"
        );
        return result;
    }
    if transferred == 0.0 && computed == 0.0 {
        // A decode instance loads only what its own cache lacks: nothing was left to move.
        result.message = format!(
            "declared disaggregated ({how}), but the instance's own prefix cache served every prompt token ({counts}): nothing was left to transfer, so whether the run disaggregated cannot be told"
        );
        return result;
    }
    if transferred == 0.0 {
        // On `kv_both` the instance may be the prefill side, which counts nothing it
        // sends: a prefill instance answers the proxy's requests with one token each.
        let one_token_each = match (
            counter_delta(before, after, engine.generation_tokens),
            counter_delta(before, after, engine.request_success),
        ) {
            (Some(generated), Some(requests)) => Some(requests > 0.0 && generated <= requests),
            _ => None,
        };
        if declared.role.as_deref() != Some(table.consumer_role) && one_token_each != Some(false) {
            result.message = format!(
                "declared disaggregated ({how}) and no prompt token came by transfer ({counts}), but the instance {}: it may be the prefill side, which counts no KV it sends, so the decode instance's recording must say",
                if one_token_each == Some(true) {
                    "generated one token a request, as a prefill instance does for the proxy"
                } else {
                    "does not say how many tokens it generated a request"
                }
            );
            return result;
        }
        result.status = Status::Fail;
        result.message = format!(
            "declared disaggregated ({how}) but no prompt token's KV came by transfer: all {} were prefilled here or served from its own cache ({counts}); requests that reach the decode instance without the router's transfer parameters are prefilled where they land",
            fmt::thousands_f(prompt)
        );
        return result;
    }
    let share = transferred / (transferred + computed);
    result = result.with("transferred_share", share);
    let said = format!(
        "{} of the prompt tokens not in the instance's own cache came by transfer ({counts})",
        fmt::percent(share, 1)
    );
    if share >= TRANSFERRED_SHARE {
        result.status = Status::Pass;
        result.message = format!("disaggregated as declared ({how}): {said}");
    } else {
        result.status = Status::Warn;
        result.message = format!(
            "declared disaggregated ({how}), but only {said}: the rest were prefilled here, as a request without the router's transfer parameters is"
        );
    }
    result
}

fn counter_delta(before: &Snapshot, after: &Snapshot, name: &str) -> Option<f64> {
    let (b, a) = (before.metrics.total(name)?, after.metrics.total(name)?);
    (a.is_finite() && b.is_finite() && a >= b).then_some(a - b)
}

/// The transfer library's own figures between the readings, where it keeps them, with
/// what they pool.
fn with_transfer_counters(
    table: &Disaggregation,
    before: &Snapshot,
    after: &Snapshot,
    mut result: CheckResult,
) -> CheckResult {
    let Some(counters) = table.transfers else {
        return result;
    };
    let mut any = false;
    for (key, name) in [
        ("transfers", counters.count),
        ("transferred_bytes", counters.bytes),
        ("failed_transfers", counters.failed),
    ] {
        if let Some(delta) = counter_delta(before, after, name) {
            result = result.with(key, delta);
            any = true;
        }
    }
    if any {
        result = result.with("transfer_scope", counters.scope);
    }
    result
}

/// What to change when T28 fails or warns: send the load the way the router sends it.
pub fn advice(result: &CheckResult) -> Vec<String> {
    match result.status {
        Status::Fail | Status::Warn => vec![
            "send the load through the disaggregation router or proxy, never straight at the decode instance: each request must reach the decode instance with the transfer parameters of the prefill that made its KV (vLLM's kv_transfer_params); check the proxy forwards them".to_owned(),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{SGLANG, VLLM};
    use crate::model::PyValue;
    use crate::testing::{sample, snapshot};

    /// vLLM 0.32 prints `--kv-transfer-config` among its non-default args as the
    /// `KVTransferConfig` dataclass's repr.
    fn boot(connector: &str, role: &str) -> BootFacts {
        BootFacts {
            non_default_args: Some(
                [(
                    "kv_transfer_config".to_owned(),
                    PyValue::Raw(format!(
                        "KVTransferConfig(kv_connector='{connector}', engine_id='e0', kv_buffer_device='cuda', kv_role='{role}', kv_port=14579, kv_connector_extra_config={{}}, kv_connector_module_path=None, enable_permute_local_kv=False, kv_load_failure_policy='fail')"
                    )),
                )]
                .into_iter()
                .collect(),
            ),
            ..BootFacts::default()
        }
    }

    /// A decode instance's reading: the prompt tokens by source, the requests it
    /// finished and the tokens it generated.
    fn reading(
        transferred: f64,
        computed: f64,
        cached: f64,
        requests: f64,
        generated: f64,
    ) -> Snapshot {
        let by_source = |source: &str, v: f64| {
            sample(
                "vllm:prompt_tokens_by_source_total",
                &[("source", source)],
                v,
            )
        };
        snapshot(
            None,
            vec![
                by_source("external_kv_transfer", transferred),
                by_source("local_compute", computed),
                by_source("local_cache_hit", cached),
                sample(
                    "vllm:request_success_total",
                    &[("finished_reason", "length")],
                    requests,
                ),
                sample("vllm:generation_tokens_total", &[], generated),
                sample(
                    "vllm:num_requests_waiting_by_reason",
                    &[("reason", "deferred")],
                    0.0,
                ),
            ],
        )
    }

    fn zero() -> Snapshot {
        reading(0.0, 0.0, 0.0, 0.0, 0.0)
    }

    /// 32 requests of 288 prompt tokens (9,216) reached a decode instance started with
    /// NIXL as `kv_consumer` without transfer parameters: every token was prefilled here,
    /// none came by transfer. T28 fails.
    #[test]
    fn a_decode_instance_that_received_no_kv_fails() {
        let after = reading(0.0, 9_216.0, 0.0, 32.0, 1_024.0);
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_consumer")),
            Some(&zero()),
            Some(&after),
        );
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        assert!(
            r.message.starts_with(
                "declared disaggregated (NixlConnector, kv_consumer) but no prompt token's KV came by transfer: all 9,216 were prefilled here"
            ),
            "{}",
            r.message
        );
        assert_eq!(r.evidence_f64("transferred_tokens"), Some(0.0));
    }

    /// The same 32 requests with their KV moved: at admission the decoder counts every
    /// prompt token as to be loaded (a dense model has no backoff; the last token it
    /// recomputes after the load is not counted again), 9,216 by transfer and none here,
    /// 100%. NIXL's histogram counts 64 transfers (two workers' reads pooled) and 1 GiB.
    #[test]
    fn a_decode_instance_that_received_the_prompts_passes() {
        let mut after = reading(9_216.0, 0.0, 0.0, 32.0, 1_024.0);
        let mut before = zero();
        for (s, transfers, bytes) in [(&mut after, 64.0, 1_073_741_824.0), (&mut before, 0.0, 0.0)]
        {
            let mut samples = s.metrics.samples().to_vec();
            samples.push(sample("vllm:nixl_xfer_time_seconds_count", &[], transfers));
            samples.push(sample("vllm:nixl_bytes_transferred_sum", &[], bytes));
            samples.push(sample("vllm:nixl_num_failed_transfers_total", &[], 0.0));
            *s = snapshot(None, samples);
        }
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_both")),
            Some(&before),
            Some(&after),
        );
        assert_eq!(r.status, Status::Pass, "{}", r.message);
        assert_eq!(
            r.message,
            "disaggregated as declared (NixlConnector, kv_both): 100.0% of the prompt tokens not in the instance's own cache came by transfer (9,216 by transfer, 0 prefilled here, 0 from its own prefix cache)"
        );
        assert_eq!(r.evidence_f64("transfers"), Some(64.0));
        assert_eq!(r.evidence_f64("transferred_bytes"), Some(1_073_741_824.0));
        assert!(r.evidence["transfer_scope"]
            .as_str()
            .unwrap()
            .contains("tensor-parallel"));
        // Half the requests went around the router: 16 x 288 by transfer, 16 x 288
        // prefilled here, 50% by transfer: a warning.
        let half = reading(4_608.0, 4_608.0, 0.0, 32.0, 1_024.0);
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_both")),
            Some(&zero()),
            Some(&half),
        );
        assert_eq!(r.status, Status::Warn, "{}", r.message);
    }

    /// No connector, an offload connector, another engine: not declared, does not apply.
    /// A prefill instance (`kv_producer`), or a `kv_both` one that answered one token a
    /// request as the proxy's prefill requests ask, counts nothing it sends: Can't tell.
    /// Declared, but no readings or a release without the counter: Can't tell.
    #[test]
    fn undeclared_does_not_apply_and_the_prefill_side_cannot_tell() {
        let none = BootFacts::default();
        let after = reading(0.0, 9_216.0, 0.0, 32.0, 1_024.0);
        let r = disaggregation(&VLLM, Some(&none), Some(&zero()), Some(&after));
        assert_eq!(r.status, Status::NotApplicable, "{}", r.message);
        let r = disaggregation(
            &VLLM,
            Some(&boot("OffloadingConnector", "kv_both")),
            Some(&zero()),
            Some(&after),
        );
        assert_eq!(r.status, Status::NotApplicable, "{}", r.message);
        assert!(
            r.message.contains("names OffloadingConnector"),
            "{}",
            r.message
        );
        assert_eq!(
            disaggregation(&SGLANG, Some(&none), None, None).status,
            Status::NotApplicable
        );

        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_producer")),
            Some(&zero()),
            Some(&after),
        );
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        let prefill = reading(0.0, 9_216.0, 0.0, 32.0, 32.0);
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_both")),
            Some(&zero()),
            Some(&prefill),
        );
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        // kv_both that decoded (1,024 tokens for 32 requests) and received nothing fails.
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_both")),
            Some(&zero()),
            Some(&after),
        );
        assert_eq!(r.status, Status::Fail, "{}", r.message);
        // Its own cache served every prompt: nothing was left to transfer.
        let all_cached = reading(0.0, 0.0, 9_216.0, 32.0, 1_024.0);
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_consumer")),
            Some(&zero()),
            Some(&all_cached),
        );
        assert_eq!(r.status, Status::Unknown, "{}", r.message);

        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_consumer")),
            None,
            None,
        );
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        let old = snapshot(None, vec![sample("vllm:generation_tokens_total", &[], 0.0)]);
        let r = disaggregation(
            &VLLM,
            Some(&boot("NixlConnector", "kv_consumer")),
            Some(&old),
            Some(&old),
        );
        assert_eq!(r.status, Status::Unknown, "{}", r.message);
        assert!(
            r.message.contains("is missing from a reading"),
            "{}",
            r.message
        );
    }
}
