//! The JSON Schemas (draft 2020-12) of what `--json` prints, as `inferlint schema` prints
//! them: the results array of every checking command (contract version 2, see
//! [`crate::story::contract`]), `compare --json` ([`crate::analyses::compare::Comparison`]) and
//! `sweep --json` ([`crate::analyses::sweep::Sweep`]). Written by hand next to the types, and held
//! to real output by the command's tests on every recording and fixture.

use serde_json::{json, Value};

use crate::analyses::compare::COMPARE_SCHEMA;
use crate::analyses::sweep::SWEEP_SCHEMA;
use crate::story::contract::JSON_CONTRACT_VERSION;

const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The documents `inferlint schema` knows, by the name it takes.
pub const NAMES: &[&str] = &["results", "compare", "sweep"];

/// The schema of one output, by name.
pub fn by_name(name: &str) -> Option<Value> {
    match name {
        "results" => Some(results()),
        "compare" => Some(compare()),
        "sweep" => Some(sweep()),
        _ => None,
    }
}

fn statuses() -> Value {
    json!([
        "pass",
        "warn",
        "fail",
        "unknown",
        "not_applicable",
        "not_checked"
    ])
}

/// The `--json` results array.
pub fn results() -> Value {
    json!({
        "$schema": DIALECT,
        "$id": format!("urn:inferlint:results:{JSON_CONTRACT_VERSION}"),
        "title": format!("inferlint --json results, contract version {JSON_CONTRACT_VERSION}"),
        "description": "One entry per tripwire result, verdicts first, then the tripwires not checked (status not_checked, with evidence.needs).",
        "type": "array",
        "items": {
            "type": "object",
            "required": ["tripwire", "status", "message", "evidence", "advice"],
            "additionalProperties": false,
            "properties": {
                "tripwire": {"type": "string", "pattern": "^T[0-9]+$"},
                "status": {"enum": statuses()},
                "message": {"type": "string"},
                "evidence": {"type": "object"},
                "advice": {"type": "array", "items": {"type": "string"}}
            }
        }
    })
}

fn nullable(kind: &str) -> Value {
    json!({"type": [kind, "null"]})
}

fn item() -> Value {
    json!({
        "type": "object",
        "required": ["key", "group", "words", "state", "values", "effect"],
        "additionalProperties": false,
        "properties": {
            "key": {"type": "string"},
            "group": {"enum": ["setup", "load", "run"]},
            "words": {"type": "string"},
            "state": {"enum": ["same", "differs", "one_sided", "not_recorded"]},
            "values": {"type": "array", "items": nullable("string")},
            "effect": nullable("string")
        }
    })
}

fn verdict() -> Value {
    json!({"enum": ["comparable", "not_comparable", "cannot_tell"]})
}

/// `compare --json`.
pub fn compare() -> Value {
    json!({
        "$schema": DIALECT,
        "$id": format!("urn:inferlint:{COMPARE_SCHEMA}"),
        "title": "inferlint compare --json",
        "type": "object",
        "required": ["schema", "verdict", "reasons", "reservations", "sides", "items", "runs", "moved", "gate"],
        "additionalProperties": false,
        "properties": {
            "schema": {"const": COMPARE_SCHEMA},
            "verdict": verdict(),
            "reasons": {"type": "array", "items": {"type": "string"}},
            "reservations": {"type": "array", "items": {"type": "string"}},
            "sides": {"type": "array", "minItems": 2, "items": {
                "type": "object",
                "required": ["label", "runs"],
                "additionalProperties": false,
                "properties": {
                    "label": {"type": "string"},
                    "runs": {"type": "array", "minItems": 1, "items": {"type": "string"}}
                }
            }},
            "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
            "runs": {"type": "array", "items": {"$ref": "#/$defs/item"}},
            "moved": {"type": "array", "items": {
                "type": "object",
                "required": ["key", "words", "unit", "better", "source", "sides"],
                "additionalProperties": false,
                "properties": {
                    "key": {"type": "string"},
                    "words": {"type": "string"},
                    "unit": {"type": "string"},
                    "better": {"enum": ["higher", "lower"]},
                    "source": {"type": "string"},
                    "sides": {"type": "array", "items": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/side_figure"}]}}
                }
            }},
            "gate": {"anyOf": [{"type": "null"}, {
                "type": "object",
                "required": ["max_regression", "verdict", "regressions", "figures", "noise", "warnings", "reason"],
                "additionalProperties": false,
                "properties": {
                    "max_regression": {"type": "number", "minimum": 0},
                    "verdict": {"enum": ["passed", "regressed", "inconclusive", "cannot_gate"]},
                    "regressions": {"type": "array", "items": {"type": "string"}},
                    "figures": {"type": "array", "items": gated_figure()},
                    "noise": nullable("number"),
                    "warnings": {"type": "array", "items": {"type": "string"}},
                    "reason": nullable("string")
                }
            }]},
            "service_level": compare_slo()
        },
        "$defs": {
            "item": item(),
            "side_figure": {
                "type": "object",
                "required": ["mean", "min", "max", "runs", "noise", "change", "worse", "within_noise"],
                "additionalProperties": false,
                "properties": {
                    "mean": {"type": "number"},
                    "min": {"type": "number"},
                    "max": {"type": "number"},
                    "runs": {"type": "integer", "minimum": 1},
                    "noise": nullable("number"),
                    "change": nullable("number"),
                    "worse": nullable("boolean"),
                    "within_noise": nullable("boolean")
                }
            }
        }
    })
}

/// One figure the regression gate held to its margin, with its noise and answer.
fn gated_figure() -> Value {
    json!({
        "type": "object",
        "required": ["key", "side", "worse_by", "noise", "verdict", "words"],
        "additionalProperties": false,
        "properties": {
            "key": {"type": "string"},
            "side": {"type": "string"},
            "worse_by": {"type": "number"},
            "noise": nullable("number"),
            "verdict": {"enum": ["passed", "regressed", "inconclusive"]},
            "words": {"type": "string"}
        }
    })
}

/// `sweep --json`.
pub fn sweep() -> Value {
    json!({
        "$schema": DIALECT,
        "$id": format!("urn:inferlint:{SWEEP_SCHEMA}"),
        "title": "inferlint sweep --json",
        "type": "object",
        "required": ["schema", "axis", "points", "setup", "one_setup", "reasons", "stops_following", "stops_reaching", "preemption_starts", "knee", "findings", "outcome"],
        "additionalProperties": false,
        "properties": {
            "schema": {"const": SWEEP_SCHEMA},
            "axis": {"enum": ["concurrency", "rate", null]},
            "points": {"type": "array", "items": sweep_point()},
            "setup": {"type": "array", "items": item()},
            "one_setup": verdict(),
            "reasons": {"type": "array", "items": {"type": "string"}},
            "stops_following": nullable("string"),
            "stops_reaching": nullable("string"),
            "preemption_starts": nullable("string"),
            "knee": nullable("string"),
            "findings": {"type": "array", "items": {"type": "string"}},
            "outcome": {"enum": ["found", "not_one_setup", "cannot_tell"]},
            "service_level": sweep_slo()
        }
    })
}

/// A service level held to one run (`crate::analyses::slo::RunSlo`).
pub fn run_slo() -> Value {
    let verdict = json!({"enum": ["met", "not_met", "cannot_tell"]});
    json!({
        "type": "object",
        "required": ["label", "service_level", "tool", "counted", "bounds", "goodput", "verdict", "margin", "infinite", "cannot_correct", "notes"],
        "additionalProperties": false,
        "properties": {
            "label": {"type": "string"},
            "service_level": {"type": "string"},
            "tool": nullable("string"),
            "counted": {
                "type": "object",
                "required": ["requests", "completed", "failed", "incomplete", "unaccounted", "records"],
                "additionalProperties": false,
                "properties": {
                    "requests": {"type": "integer", "minimum": 0},
                    "completed": {"type": "integer", "minimum": 0},
                    "failed": {"type": "integer", "minimum": 0},
                    "incomplete": {"type": "integer", "minimum": 0},
                    "unaccounted": {"type": "integer", "minimum": 0},
                    "records": {"type": "integer", "minimum": 0}
                }
            },
            "bounds": {"type": "array", "items": {
                "type": "object",
                "required": ["bound", "metric", "limit_ms", "value_ms", "infinite", "rank", "counted", "misses", "completed_only_ms", "tool_ms", "thin", "verdict", "margin", "why"],
                "additionalProperties": false,
                "properties": {
                    "bound": {"type": "string"},
                    "metric": {"enum": ["ttft", "tpot", "e2e"]},
                    "limit_ms": {"type": "number"},
                    "value_ms": nullable("number"),
                    "infinite": {"type": "boolean"},
                    "rank": {"type": "integer", "minimum": 0},
                    "counted": {"type": "integer", "minimum": 0},
                    "misses": {"type": "integer", "minimum": 0},
                    "completed_only_ms": nullable("number"),
                    "tool_ms": nullable("number"),
                    "thin": nullable("string"),
                    "verdict": verdict,
                    "margin": nullable("number"),
                    "why": nullable("string")
                }
            }},
            "goodput": {"type": ["object", "null"],
                "required": ["good_requests", "good_output_tokens", "duration_s", "requests_per_s", "output_tokens_per_s"],
                "additionalProperties": false,
                "properties": {
                    "good_requests": {"type": "integer", "minimum": 0},
                    "good_output_tokens": {"type": "integer", "minimum": 0},
                    "duration_s": {"type": "number"},
                    "requests_per_s": {"type": "number"},
                    "output_tokens_per_s": {"type": "number"}
                }
            },
            "verdict": verdict,
            "margin": nullable("number"),
            "infinite": {"type": "boolean"},
            "cannot_correct": {"type": "array", "items": {"type": "string"}},
            "notes": {"type": "array", "items": {"type": "string"}}
        }
    })
}

fn price() -> Value {
    json!({
        "type": "object",
        "required": ["usd_per_gpu_hour", "gpus"],
        "additionalProperties": false,
        "properties": {
            "usd_per_gpu_hour": {"type": "number"},
            "gpus": {"type": "integer", "minimum": 1}
        }
    })
}

/// `compare --slo`'s part of `compare --json` (`crate::analyses::compare::CompareSlo`).
fn compare_slo() -> Value {
    json!({
        "type": "object",
        "required": ["spec", "sides", "gates"],
        "additionalProperties": false,
        "properties": {
            "spec": {"type": "string"},
            "sides": {"type": "array", "items": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "array", "items": run_slo()}],
                "minItems": 2,
                "maxItems": 2
            }},
            "gates": {"type": "array", "items": {
                "type": "object",
                "required": ["side", "baseline_rps", "candidate_rps", "change", "noise", "allowed", "verdict", "words"],
                "additionalProperties": false,
                "properties": {
                    "side": {"type": "string"},
                    "baseline_rps": nullable("number"),
                    "candidate_rps": nullable("number"),
                    "change": nullable("number"),
                    "noise": nullable("number"),
                    "allowed": {"type": "number"},
                    "verdict": {"enum": ["passed", "regressed", "cannot_gate"]},
                    "words": {"type": "string"}
                }
            }}
        }
    })
}

/// `sweep --slo`'s part of `sweep --json` (`crate::analyses::sweep::SweepSlo`).
fn sweep_slo() -> Value {
    json!({
        "type": "object",
        "required": ["spec", "runs", "capacity"],
        "additionalProperties": false,
        "properties": {
            "spec": {"type": "string"},
            "runs": {"type": "array", "items": run_slo()},
            "capacity": {
                "type": "object",
                "required": ["service_level", "verdict", "ceiling", "interpolated", "meets_at", "fails_at", "measure_next", "cost", "cost_unknown", "words", "notes"],
                "additionalProperties": false,
                "properties": {
                    "service_level": {"type": "string"},
                    "verdict": {"enum": ["bracketed", "not_bracketed", "refused"]},
                    "ceiling": nullable("number"),
                    "interpolated": {"type": "boolean"},
                    "meets_at": nullable("string"),
                    "fails_at": nullable("string"),
                    "measure_next": nullable("number"),
                    "cost": {"type": ["object", "null"],
                        "required": ["at", "output_tokens_per_s", "price", "usd_per_mtok"],
                        "additionalProperties": false,
                        "properties": {
                            "at": {"type": "string"},
                            "output_tokens_per_s": {"type": "number"},
                            "price": price(),
                            "usd_per_mtok": {"type": "number"}
                        }
                    },
                    "cost_unknown": nullable("string"),
                    "words": {"type": "string"},
                    "notes": {"type": "array", "items": {"type": "string"}}
                }
            }
        }
    })
}

/// One point of `sweep --json` (apart: the whole document is past `json!`'s recursion).
fn sweep_point() -> Value {
    json!({
        "type": "object",
        "required": ["label", "asked", "peak_running", "mean_running", "saturated_running", "running_unknown", "request_throughput", "preemptions", "output_throughput", "throughput_source", "ttft_ms", "tpot_ms", "reached", "follows", "elasticity", "verdicts"],
        "additionalProperties": false,
        "properties": {
            "label": {"type": "string"},
            "asked": nullable("number"),
            "peak_running": nullable("number"),
            "mean_running": nullable("number"),
            "saturated_running": nullable("number"),
            "running_unknown": nullable("string"),
            "request_throughput": nullable("number"),
            "preemptions": nullable("number"),
            "output_throughput": nullable("number"),
            "throughput_source": nullable("string"),
            "ttft_ms": nullable("number"),
            "tpot_ms": nullable("number"),
            "reached": nullable("boolean"),
            "follows": nullable("boolean"),
            "elasticity": nullable("number"),
            "verdicts": {"type": "array", "items": {
                "type": "array",
                "prefixItems": [{"type": "string", "pattern": "^T[0-9]+$"}, {"enum": statuses()}],
                "minItems": 2,
                "maxItems": 2
            }}
        }
    })
}
