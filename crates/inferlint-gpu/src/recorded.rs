//! Recorded NVML readings, in the JSON the recording probe wrote (`nvml-*.json` in
//! `recorded/gpu-h200/`), and a [`GpuReader`] that replays them.
//!
//! A file holds one reading (a JSON object with `devices`), or one reading per line: either
//! such an object or `{"t_ms": …, "alive": …, "nvml": {…}}` as in the release timeline.
//! The binary replays such a file instead of asking NVML when `INFERLINT_NVML_READINGS`
//! names one (docs/gpu.md), so gpu-inspect and teardown can be shown and tested without a
//! GPU.

use std::path::Path;

use serde::Deserialize;

use crate::gpu::{GpuDevice, GpuError, GpuMemory, GpuProcess, GpuReader, GpuSnapshot};

/// One recorded reading, with the timeline's extras where the file has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedReading {
    /// Milliseconds since the recording's start (release timeline).
    pub t_ms: Option<u64>,
    /// Whether the engine process was alive at that moment (release timeline).
    pub alive: Option<bool>,
    /// The GPUs as NVML read them.
    pub snapshot: GpuSnapshot,
}

#[derive(Deserialize)]
struct ProbeReading {
    driver_version: Option<String>,
    devices: Vec<ProbeDevice>,
}

#[derive(Deserialize)]
struct ProbeDevice {
    index: u32,
    name: Option<String>,
    uuid: Option<String>,
    architecture: Option<String>,
    compute_capability: Option<String>,
    memory: Option<ProbeMemory>,
    compute_processes: Option<Vec<ProbeProcess>>,
}

#[derive(Deserialize)]
struct ProbeMemory {
    total: u64,
    used: u64,
    free: u64,
}

#[derive(Deserialize)]
struct ProbeProcess {
    pid: u32,
    used_gpu_memory: Option<u64>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct TimelineLine {
    t_ms: Option<u64>,
    alive: Option<bool>,
    nvml: ProbeReading,
}

impl From<ProbeReading> for GpuSnapshot {
    fn from(p: ProbeReading) -> GpuSnapshot {
        GpuSnapshot {
            driver_version: p.driver_version,
            devices: p
                .devices
                .into_iter()
                .map(|d| GpuDevice {
                    index: d.index,
                    name: d.name,
                    uuid: d.uuid,
                    architecture: d.architecture.filter(|a| a != "Unknown"),
                    compute_capability: d.compute_capability.as_deref().and_then(parse_cc),
                    memory: d.memory.map(|m| GpuMemory {
                        total: m.total,
                        used: m.used,
                        free: m.free,
                    }),
                    processes: d.compute_processes.map(|list| {
                        list.into_iter()
                            .map(|p| GpuProcess {
                                pid: p.pid,
                                used_bytes: p.used_gpu_memory,
                                nvml_name: p.name,
                            })
                            .collect()
                    }),
                })
                .collect(),
        }
    }
}

/// `9.0` -> (9, 0).
fn parse_cc(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Reads every reading in a file's text. `Err` names what is wrong and where.
pub fn parse_readings(text: &str) -> Result<Vec<RecordedReading>, String> {
    let whole = text.trim();
    if whole.is_empty() {
        return Err("the file is empty".to_owned());
    }
    // One pretty-printed object spans many lines; try the whole text first.
    if let Ok(reading) = parse_one(whole) {
        return Ok(vec![reading]);
    }
    let mut readings = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        readings.push(parse_one(line).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    Ok(readings)
}

fn parse_one(text: &str) -> Result<RecordedReading, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if value.get("nvml").is_some() {
        let line: TimelineLine = serde_json::from_value(value).map_err(|e| e.to_string())?;
        return Ok(RecordedReading {
            t_ms: line.t_ms,
            alive: line.alive,
            snapshot: line.nvml.into(),
        });
    }
    let probe: ProbeReading = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok(RecordedReading {
        t_ms: None,
        alive: None,
        snapshot: probe.into(),
    })
}

/// Replays recorded readings one per [`GpuReader::read`], repeating the last one.
#[derive(Debug, Clone)]
pub struct ReplayReader {
    readings: Vec<GpuSnapshot>,
    next: usize,
}

impl ReplayReader {
    /// A reader over readings already in memory; at least one.
    pub fn new(readings: Vec<GpuSnapshot>) -> Option<ReplayReader> {
        (!readings.is_empty()).then_some(ReplayReader { readings, next: 0 })
    }

    /// Reads a file of recorded readings.
    pub fn from_file(path: &Path) -> Result<ReplayReader, GpuError> {
        let error = |detail: String| GpuError::Recorded {
            path: path.display().to_string(),
            detail,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        let readings = parse_readings(&text).map_err(error)?;
        ReplayReader::new(readings.into_iter().map(|r| r.snapshot).collect())
            .ok_or_else(|| error("no reading in the file".to_owned()))
    }
}

impl GpuReader for ReplayReader {
    fn read(&mut self) -> Result<GpuSnapshot, GpuError> {
        let index = self.next.min(self.readings.len() - 1);
        self.next += 1;
        Ok(self.readings[index].clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_object_and_timeline_lines() {
        let one = r#"{"driver_version":"1.2","devices":[{"index":0,"name":"G","uuid":"GPU-x",
            "architecture":"Hopper","compute_capability":"9.0",
            "memory":{"total":10,"used":4,"free":6},
            "compute_processes":[{"pid":7,"used_gpu_memory":4}]}]}"#;
        let r = parse_readings(one).unwrap();
        assert_eq!(r.len(), 1);
        let d = &r[0].snapshot.devices[0];
        assert_eq!(d.compute_capability, Some((9, 0)));
        assert_eq!(d.processes.as_ref().unwrap()[0].pid, 7);

        let timeline = format!(
            "{{\"t_ms\": 4, \"alive\": true, \"nvml\": {}}}\n\n{{\"t_ms\": 9, \"alive\": false, \"nvml\": {}}}\n",
            one.replace('\n', ""),
            one.replace('\n', "")
        );
        let r = parse_readings(&timeline).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!((r[1].t_ms, r[1].alive), (Some(9), Some(false)));
    }

    #[test]
    fn garbage_names_its_line() {
        let err = parse_readings("{\"devices\": []}\nnot json\n").unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(parse_readings("  ").is_err());
    }

    #[test]
    fn replay_repeats_the_last_reading() {
        let snap = |v: &str| GpuSnapshot {
            driver_version: Some(v.to_owned()),
            devices: vec![],
        };
        let mut reader = ReplayReader::new(vec![snap("a"), snap("b")]).unwrap();
        let versions: Vec<_> = (0..4)
            .map(|_| reader.read().unwrap().driver_version.unwrap())
            .collect();
        assert_eq!(versions, ["a", "b", "b", "b"]);
        assert!(ReplayReader::new(vec![]).is_none());
    }
}
