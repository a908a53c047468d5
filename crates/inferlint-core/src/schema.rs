//! The JSON Schemas (draft 2020-12) of what `--json` prints, as `inferlint schema` prints
//! them: the results array of every checking command (contract version 2, see
//! [`crate::contract`]), `compare --json` ([`crate::compare::Comparison`]) and
//! `sweep --json` ([`crate::sweep::Sweep`]). Written by hand next to the types, and held
//! to real output by the command's tests on every recording and fixture.

use serde_json::{json, Value};

use crate::compare::COMPARE_SCHEMA;
use crate::contract::JSON_CONTRACT_VERSION;
use crate::sweep::SWEEP_SCHEMA;

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
                "required": ["max_regression", "verdict", "regressions", "reason"],
                "additionalProperties": false,
                "properties": {
                    "max_regression": {"type": "number", "minimum": 0},
                    "verdict": {"enum": ["passed", "regressed", "cannot_gate"]},
                    "regressions": {"type": "array", "items": {"type": "string"}},
                    "reason": nullable("string")
                }
            }]}
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
            "points": {"type": "array", "items": {
                "type": "object",
                "required": ["label", "asked", "peak_running", "mean_running", "running_unknown", "request_throughput", "preemptions", "output_throughput", "throughput_source", "ttft_ms", "tpot_ms", "reached", "follows", "elasticity", "verdicts"],
                "additionalProperties": false,
                "properties": {
                    "label": {"type": "string"},
                    "asked": nullable("number"),
                    "peak_running": nullable("number"),
                    "mean_running": nullable("number"),
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
            }},
            "setup": {"type": "array", "items": item()},
            "one_setup": verdict(),
            "reasons": {"type": "array", "items": {"type": "string"}},
            "stops_following": nullable("string"),
            "stops_reaching": nullable("string"),
            "preemption_starts": nullable("string"),
            "knee": nullable("string"),
            "findings": {"type": "array", "items": {"type": "string"}},
            "outcome": {"enum": ["found", "not_one_setup", "cannot_tell"]}
        }
    })
}
