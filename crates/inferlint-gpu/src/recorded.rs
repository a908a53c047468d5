//! Recorded NVML readings, in the JSON the recording probe wrote (`nvml-*.json` in
//! `recorded/gpu-h200/`), and a [`GpuReader`] that replays them.
//!
//! A file holds one reading (a JSON object with `devices`), or one reading per line: either
//! such an object or `{"t_ms": …, "alive": …, "nvml": {…}}` as in the release timeline.
//! The binary replays such a file instead of asking NVML when `INFERLINT_NVML_READINGS`
//! names one (docs/gpu.md), so gpu-inspect and teardown can be shown and tested without a
//! GPU. A file rewritten while it is replayed is read again from its first reading: that
//! is how a simulated server changes the state of its card (another tenant arrives).
//!
//! Besides the probe's fields, a device may carry what T21 reads, in the words NVML uses:
//! `"utilization": {"gpu": PERCENT}` (the probe writes it), `"clocks": {"sm": MHZ,
//! "sm_max": MHZ}`, `"clocks_event_reasons": BITS` and `"process_utilization": [{"pid":
//! PID, "sm": PERCENT}]`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Deserialize;

use crate::gpu::{GpuActivity, GpuDevice, GpuError, GpuMemory, GpuProcess, GpuReader, GpuSnapshot};

/// One recorded reading, with the timeline's extras where the file has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedReading {
    /// Milliseconds since the recording's start (release timeline).
    pub t_ms: Option<u64>,
    /// Whether the engine process was alive at that moment (release timeline).
    pub alive: Option<bool>,
    /// The GPUs as NVML read them.
    pub snapshot: GpuSnapshot,
    /// What the devices were doing, where the reading says.
    pub activity: Vec<GpuActivity>,
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
    utilization: Option<ProbeUtilization>,
    clocks: Option<ProbeClocks>,
    clocks_event_reasons: Option<u64>,
    process_utilization: Option<Vec<ProbeProcessUtilization>>,
}

#[derive(Deserialize)]
struct ProbeUtilization {
    gpu: Option<u32>,
}

#[derive(Deserialize)]
struct ProbeClocks {
    sm: Option<u32>,
    sm_max: Option<u32>,
}

#[derive(Deserialize)]
struct ProbeProcessUtilization {
    pid: u32,
    sm: u32,
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

impl ProbeReading {
    fn activity(&self) -> Vec<GpuActivity> {
        self.devices
            .iter()
            .map(|d| GpuActivity {
                index: d.index,
                utilization_pct: d.utilization.as_ref().and_then(|u| u.gpu),
                sm_clock_mhz: d.clocks.as_ref().and_then(|c| c.sm),
                sm_clock_max_mhz: d.clocks.as_ref().and_then(|c| c.sm_max),
                clock_event_reasons: d.clocks_event_reasons,
                process_sm_pct: d
                    .process_utilization
                    .as_ref()
                    .map(|list| list.iter().map(|p| (p.pid, p.sm)).collect()),
            })
            .collect()
    }
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
pub fn parse_readings(text: &str) -> Result<Vec<RecordedReading>, BadReadings> {
    let whole = text.trim();
    if whole.is_empty() {
        return Err(BadReadings::Empty);
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
        readings.push(parse_one(line).map_err(|why| BadReadings::Line { line: n + 1, why })?);
    }
    Ok(readings)
}

/// Why a file of recorded readings cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReadings {
    /// The file holds nothing.
    #[error("the file is empty")]
    Empty,
    /// A line that is no reading.
    #[error("line {line}: {why}")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
}

fn parse_one(text: &str) -> Result<RecordedReading, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if value.get("nvml").is_some() {
        let line: TimelineLine = serde_json::from_value(value).map_err(|e| e.to_string())?;
        return Ok(RecordedReading {
            t_ms: line.t_ms,
            alive: line.alive,
            activity: line.nvml.activity(),
            snapshot: line.nvml.into(),
        });
    }
    let probe: ProbeReading = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok(RecordedReading {
        t_ms: None,
        alive: None,
        activity: probe.activity(),
        snapshot: probe.into(),
    })
}

/// Replays recorded readings one per [`GpuReader::read`], repeating the last one.
#[derive(Debug, Clone)]
pub struct ReplayReader {
    readings: Vec<GpuSnapshot>,
    activity: Vec<Vec<GpuActivity>>,
    next: usize,
    /// The file replayed, and what it looked like when read, to notice a rewrite.
    source: Option<(PathBuf, FileVersion)>,
}

/// What tells one version of a file from the next: its size, modification time and
/// inode (a file replaced by a rename has a new one).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileVersion {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileVersion {
    fn of(path: &Path) -> Option<FileVersion> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileVersion {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        })
    }
}

impl ReplayReader {
    /// A reader over readings already in memory; at least one.
    pub fn new(readings: Vec<GpuSnapshot>) -> Option<ReplayReader> {
        let activity = vec![Vec::new(); readings.len()];
        (!readings.is_empty()).then_some(ReplayReader {
            readings,
            activity,
            next: 0,
            source: None,
        })
    }

    /// A reader over recorded readings with what their devices were doing.
    pub fn with_activity(readings: Vec<RecordedReading>) -> Option<ReplayReader> {
        let activity = readings.iter().map(|r| r.activity.clone()).collect();
        let mut reader = ReplayReader::new(readings.into_iter().map(|r| r.snapshot).collect())?;
        reader.activity = activity;
        Some(reader)
    }

    /// Reads a file of recorded readings.
    pub fn from_file(path: &Path) -> Result<ReplayReader, GpuError> {
        let version = FileVersion::of(path);
        let mut reader =
            ReplayReader::with_activity(load(path)?).ok_or_else(|| GpuError::Recorded {
                path: path.display().to_string(),
                detail: "no reading in the file".to_owned(),
            })?;
        reader.source = version.map(|v| (path.to_owned(), v));
        Ok(reader)
    }

    /// Reads the file again when it was rewritten since, starting over at its first
    /// reading. A rewrite that cannot be read keeps the readings there were.
    fn follow(&mut self) {
        let Some((path, version)) = &self.source else {
            return;
        };
        let now = FileVersion::of(path);
        if now.as_ref() == Some(version) || now.is_none() {
            return;
        }
        if let Ok(readings) = load(path) {
            if let Some(fresh) = ReplayReader::with_activity(readings) {
                let path = path.clone();
                *self = fresh;
                self.source = now.map(|v| (path, v));
            }
        }
    }
}

/// The largest file of recorded readings read: a reading is a few hundred bytes, and a
/// recording of hours at one reading a second stays under a few megabytes.
pub const MAX_READINGS_BYTES: u64 = 64 << 20;

/// Reads a file of recorded readings by the input rules every input keeps: a regular
/// file (never a pipe or a device, which could block or never end) of at most
/// [`MAX_READINGS_BYTES`].
fn load(path: &Path) -> Result<Vec<RecordedReading>, GpuError> {
    use inferlint_engines::input::{read_bounded, FileError};
    let error = |detail: String| GpuError::Recorded {
        path: path.display().to_string(),
        detail,
    };
    let bytes =
        read_bounded(path, MAX_READINGS_BYTES, "a file of NVML readings").map_err(|e| match e {
            FileError::Io { source, .. } => error(source.to_string()),
            FileError::Invalid { message, .. } => error(message),
        })?;
    let text = String::from_utf8(bytes).map_err(|e| error(e.to_string()))?;
    parse_readings(&text).map_err(|e| error(e.to_string()))
}

impl GpuReader for ReplayReader {
    fn read(&mut self) -> Result<GpuSnapshot, GpuError> {
        self.follow();
        let index = self.next.min(self.readings.len() - 1);
        self.next += 1;
        Ok(self.readings[index].clone())
    }

    /// The activity of the reading [`GpuReader::read`] returned last.
    fn activity(&mut self) -> Result<Vec<GpuActivity>, GpuError> {
        let index = self.next.saturating_sub(1).min(self.activity.len() - 1);
        Ok(self.activity[index].clone())
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
        assert!(matches!(err, BadReadings::Line { line: 2, .. }), "{err}");
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
