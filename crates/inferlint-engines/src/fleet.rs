//! A fleet folder: the runs of several replicas recorded together, one run folder per
//! replica, and `fleet.json` naming them.
//!
//! `watch URL URL …` and `report --prometheus … --save DIR` write one; `report DIR` reads
//! it. The layout:
//!
//! ```text
//! DIR/fleet.json                 which replicas, where from, on what schedule
//! DIR/REPLICA/run.series.jsonl   each replica's recording (and its snapshots, if any)
//! DIR/fleet.series.jsonl         the fleet's sum, slot by slot (watch)
//! ```
//!
//! Each replica's folder is an ordinary run folder, so `report DIR/REPLICA` checks one
//! replica alone.

use std::path::{Path, PathBuf};

use inferlint_core::model::{GpuReading, SeriesSample};
use inferlint_core::story::contract::JsonObject;
use inferlint_core::Engine;
use serde_json::Value;

use crate::input::FileError;

/// The manifest's name in a fleet folder.
pub const MANIFEST: &str = "fleet.json";
/// The fleet's summed recording in a fleet folder.
pub const SUM_SERIES: &str = "fleet.series.jsonl";
/// The manifest's `schema` value.
pub const SCHEMA: &str = "inferlint-fleet/1";
/// Written into a fleet folder before any other file of the fleet by a read that fills
/// it in one go (`report --prometheus --save`), and removed only once every file is
/// whole. A folder that still holds it is a read that stopped part way (the disk filled,
/// the server broke off, the command was killed): its manifest may name replicas whose
/// recordings were never written or were cut mid-line, so no report reads it.
pub const INCOMPLETE: &str = "fleet.incomplete";
/// The most replicas one fleet folder names: more is no fleet a benchmark records.
pub const MAX_REPLICAS: usize = 1024;

/// One replica of a fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replica {
    /// As its source names it: an address, an `instance` or a `pod`.
    pub name: String,
    /// Its run folder, relative to the fleet folder (one plain name).
    pub folder: String,
}

/// What `fleet.json` says.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// Where the runs came from: `watch`, or `prometheus URL SELECTOR`.
    pub source: String,
    /// The engine every replica runs, when known.
    pub engine: Option<Engine>,
    /// Seconds between the slots every replica was read on.
    pub interval_s: Option<f64>,
    /// The replicas, in the order their rows are shown.
    pub replicas: Vec<Replica>,
}

impl Manifest {
    /// The manifest of replicas `names`, each in a folder named after its hint (an
    /// address without its scheme, an `instance`, a `pod`; see [`folder_names`]).
    pub fn new(
        source: String,
        engine: Option<Engine>,
        interval_s: Option<f64>,
        names: &[String],
        folder_hints: &[String],
    ) -> Manifest {
        let replicas = names
            .iter()
            .zip(folder_names(folder_hints))
            .map(|(name, folder)| Replica {
                name: name.clone(),
                folder,
            })
            .collect();
        Manifest {
            source,
            engine,
            interval_s,
            replicas,
        }
    }

    /// The manifest as written (indent 1, trailing newline).
    pub fn to_json(&self) -> String {
        let mut object = JsonObject::new();
        object.insert("schema".into(), SCHEMA.into());
        object.insert("source".into(), self.source.clone().into());
        object.insert("engine".into(), self.engine.map(Engine::key).into());
        object.insert("interval_s".into(), self.interval_s.into());
        let replicas: Vec<Value> = self
            .replicas
            .iter()
            .map(|r| {
                let mut entry = serde_json::Map::new();
                entry.insert("name".into(), r.name.clone().into());
                entry.insert("folder".into(), r.folder.clone().into());
                Value::Object(entry)
            })
            .collect();
        object.insert("replicas".into(), replicas.into());
        let mut text = inferlint_core::story::contract::to_indent1(&object);
        text.push('\n');
        text
    }

    /// Reads a manifest; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest, FileError> {
        let invalid = |message: String| FileError::Invalid {
            path: path.to_owned(),
            message,
        };
        let value: Value =
            serde_json::from_str(text).map_err(|e| invalid(format!("not JSON ({e})")))?;
        if value.get("schema").and_then(Value::as_str) != Some(SCHEMA) {
            return Err(invalid(format!(
                "not a fleet manifest (no \"schema\": \"{SCHEMA}\")"
            )));
        }
        let engine = match value.get("engine") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(Engine::parse)
                    .ok_or_else(|| invalid(format!("\"engine\" {v} is not an engine")))?,
            ),
        };
        let interval_s = value
            .get("interval_s")
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite() && *s > 0.0);
        let items = value
            .get("replicas")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("no \"replicas\" list".into()))?;
        if items.len() > MAX_REPLICAS {
            return Err(invalid(format!(
                "{} replicas, more than the {MAX_REPLICAS} read",
                items.len()
            )));
        }
        let mut replicas = Vec::with_capacity(items.len());
        for item in items {
            let field = |key: &str| item.get(key).and_then(Value::as_str);
            let (Some(name), Some(folder)) = (field("name"), field("folder")) else {
                return Err(invalid("a replica without \"name\" and \"folder\"".into()));
            };
            // One plain name inside the fleet folder: never a path out of it.
            if folder.is_empty() || folder == "." || folder == ".." || folder.contains(['/', '\\'])
            {
                return Err(invalid(format!(
                    "replica folder {folder:?} is not a folder name inside the fleet folder"
                )));
            }
            replicas.push(Replica {
                name: name.to_owned(),
                folder: folder.to_owned(),
            });
        }
        Ok(Manifest {
            source: value
                .get("source")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            engine,
            interval_s,
            replicas,
        })
    }
}

/// The manifest of the fleet folder `dir`; `Ok(None)` when `dir` holds none (an
/// ordinary run folder).
///
/// A folder that holds [`INCOMPLETE`] is refused, whether or not its manifest was
/// written: the read that filled it did not finish.
pub fn read_manifest(dir: &Path) -> Result<Option<Manifest>, FileError> {
    let unfinished = dir.join(INCOMPLETE);
    if std::fs::symlink_metadata(&unfinished).is_ok() {
        return Err(FileError::invalid(
            &unfinished,
            "the read that wrote this fleet folder did not finish, so its recordings may be cut short and replicas missing; read the window again into a new folder",
        ));
    }
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        return Ok(None);
    }
    let (file, _) = crate::input::open_input(&path)?;
    let mut text = String::new();
    use std::io::Read;
    file.take(16 << 20)
        .read_to_string(&mut text)
        .map_err(|e| FileError::io(&path, e))?;
    Manifest::parse(&text, &path).map(Some)
}

/// Each replica's run folder.
pub fn replica_folders(dir: &Path, manifest: &Manifest) -> Vec<PathBuf> {
    manifest
        .replicas
        .iter()
        .map(|r| dir.join(&r.folder))
        .collect()
}

/// Distinct folder names for replicas, in order: [`crate::prometheus::folder_name`] of
/// each, with `-2`, `-3` … where two would be the same.
pub fn folder_names(names: &[String]) -> Vec<String> {
    let mut taken: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        let base = crate::prometheus::folder_name(name);
        let mut candidate = base.clone();
        let mut n = 2;
        while taken.iter().any(|t| t.eq_ignore_ascii_case(&candidate))
            || candidate.eq_ignore_ascii_case(MANIFEST)
            || candidate.eq_ignore_ascii_case(SUM_SERIES)
        {
            candidate = format!("{base}-{n}");
            n += 1;
        }
        taken.push(candidate);
    }
    taken
}

/// The one engine of a fleet, from what each replica (named as given) serves; `None`
/// when none says. Two replicas of different engines are refused with the message to
/// show: a fleet's replicas run one engine, or they are not one fleet.
pub fn one_engine<'a>(
    replicas: impl IntoIterator<Item = (&'a str, Engine)>,
) -> Result<Option<Engine>, TwoEngines> {
    let mut first: Option<(Engine, &str)> = None;
    for (name, engine) in replicas {
        match first {
            Some((one, one_name)) if one != engine => {
                return Err(TwoEngines {
                    first: (one_name.to_owned(), one),
                    other: (name.to_owned(), engine),
                })
            }
            Some(_) => {}
            None => first = Some((engine, name)),
        }
    }
    Ok(first.map(|(engine, _)| engine))
}

/// Two replicas of one fleet that run different engines: each named as given, with its
/// engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} runs {} but {} runs {}; a fleet runs one engine", first.0, first.1.name(), other.0, other.1.name())]
pub struct TwoEngines {
    /// The first replica read, and its engine.
    pub first: (String, Engine),
    /// The replica that disagrees, and its engine.
    pub other: (String, Engine),
}

/// The fleet's sum of one slot: counts and counters added up over the replicas read,
/// KV usage their mean (each replica's pool size is not known here). A value is `None`
/// when any replica read lacks it: a sum that leaves a replica out is no fleet total.
pub fn sum_of(t_wall: f64, samples: &[SeriesSample]) -> Option<SeriesSample> {
    if samples.is_empty() {
        return None;
    }
    let total = |get: fn(&SeriesSample) -> Option<f64>| -> Option<f64> {
        samples.iter().map(get).sum::<Option<f64>>()
    };
    Some(SeriesSample {
        t_wall,
        t_mono_ns: None,
        running: total(|s| s.running),
        waiting: total(|s| s.waiting),
        waiting_capacity: total(|s| s.waiting_capacity),
        waiting_deferred: total(|s| s.waiting_deferred),
        kv_usage: total(|s| s.kv_usage).map(|u| u / samples.len() as f64),
        preemptions: total(|s| s.preemptions),
        generation_tokens: total(|s| s.generation_tokens),
        prompt_tokens: total(|s| s.prompt_tokens),
        paused: total(|s| s.paused),
        prefix_hits: total(|s| s.prefix_hits),
        prefix_queries: total(|s| s.prefix_queries),
        // A fleet's recording reads no GPU.
        gpu: GpuReading::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_read_back() {
        let manifest = Manifest {
            source: "watch".into(),
            engine: Some(Engine::Sglang),
            interval_s: Some(0.25),
            replicas: vec![Replica {
                name: "http://127.0.0.1:30000".into(),
                folder: "127.0.0.1_30000".into(),
            }],
        };
        let text = manifest.to_json();
        let read = Manifest::parse(&text, Path::new("fleet.json")).expect("reads back");
        assert_eq!(read, manifest);
    }

    /// A manifest cannot send the reader outside the fleet folder.
    #[test]
    fn a_replica_folder_outside_the_fleet_is_refused() {
        for folder in ["..", "../x", "/etc", ""] {
            let text = format!(
                "{{\"schema\": \"{SCHEMA}\", \"replicas\": [{{\"name\": \"a\", \"folder\": {folder:?}}}]}}"
            );
            let e = Manifest::parse(&text, Path::new("d/fleet.json")).unwrap_err();
            assert!(e.to_string().contains("d/fleet.json"), "{e}");
        }
        assert!(Manifest::parse("{}", Path::new("f")).is_err());
    }

    #[test]
    fn folder_names_are_distinct() {
        let names: Vec<String> = ["a:1", "a_1", "fleet.json", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(folder_names(&names), ["a_1", "a_1-2", "fleet.json-2", "b"]);
    }

    #[test]
    fn a_fleet_runs_one_engine() {
        assert_eq!(one_engine([]), Ok(None));
        assert_eq!(
            one_engine([("a", Engine::Vllm), ("b", Engine::Vllm)]),
            Ok(Some(Engine::Vllm))
        );
        assert_eq!(
            one_engine([("a", Engine::Vllm), ("b", Engine::Sglang)]),
            Err(TwoEngines {
                first: ("a".to_owned(), Engine::Vllm),
                other: ("b".to_owned(), Engine::Sglang),
            })
        );
        assert_eq!(
            one_engine([("a", Engine::Vllm), ("b", Engine::Sglang)])
                .unwrap_err()
                .to_string(),
            "a runs vLLM but b runs SGLang; a fleet runs one engine"
        );
    }

    #[test]
    fn the_sum_adds_counts_and_averages_usage() {
        let s = |running, kv| SeriesSample {
            running: Some(running),
            waiting: Some(1.0),
            kv_usage: Some(kv),
            ..SeriesSample::default()
        };
        let sum = sum_of(5.0, &[s(2.0, 0.5), s(4.0, 0.25)]).expect("two readings");
        assert_eq!(sum.running, Some(6.0));
        assert_eq!(sum.waiting, Some(2.0));
        assert_eq!(sum.kv_usage, Some(0.375));
        assert_eq!(
            sum.preemptions, None,
            "a value one replica lacks is no total"
        );
        assert!(sum_of(1.0, &[]).is_none());
    }
}
