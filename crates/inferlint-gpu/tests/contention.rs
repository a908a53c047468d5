//! T21's readings through the [`GpuReader`] trait, fed the H200's recorded NVML readings
//! and edited copies of them: the engine holds 20 GiB (pid 438); a tenant is added, and
//! the fields the probe did not record (clocks, clock-event reasons, per-process SM use)
//! are added in NVML's own words.

use std::collections::BTreeSet;

use inferlint_gpu::contention::{reading, ServerGpuSampler};
use inferlint_gpu::recorded::ReplayReader;
use inferlint_gpu::GpuReader;
use serde_json::{json, Value};

use crate::common::{h200, recorded};

/// The recorded reading with the engine's process, as JSON to edit.
fn loaded(dir: &std::path::Path) -> Value {
    serde_json::from_str(&h200(dir, "nvml-loaded.json")).unwrap()
}

fn sample(reading_json: &Value, server: &[u32]) -> inferlint_core::model::GpuReading {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("readings.json");
    std::fs::write(&path, reading_json.to_string()).unwrap();
    let mut reader = ReplayReader::from_file(&path).unwrap();
    let snapshot = reader.read().unwrap();
    let activity = reader.activity().unwrap();
    let pids: BTreeSet<u32> = server.iter().copied().collect();
    reading(&snapshot, &activity, Some(&pids))
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_recorded_engine_alone_is_no_tenant() {
    let dir = recorded();
    let r = sample(&loaded(&dir), &[438]);
    assert_eq!(r.other_mib, Some(0.0));
    // The probe recorded the utilisation NVML gave (the card idled while it held memory).
    assert_eq!(r.util, Some(0.0));
    // It did not record clocks or per-process use: those say nothing, never 0.
    assert_eq!((r.sm_mhz, r.throttle, r.other_util), (None, None, None));
    // For a server whose processes hold nothing on any GPU (numbered otherwise, in a
    // container) the readings cannot tell its GPU from another: no tenant count.
    let r = sample(&loaded(&dir), &[999]);
    assert_eq!(r.other_mib, None);
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn an_edited_reading_with_a_tenant_and_a_held_back_clock() {
    let dir = recorded();
    let mut v = loaded(&dir);
    let device = &mut v["devices"][0];
    device["compute_processes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"pid": 901, "used_gpu_memory": 10_737_418_240u64}));
    device["utilization"] = json!({"gpu": 99, "memory": 40});
    device["clocks"] = json!({"sm": 1200, "sm_max": 1980});
    device["clocks_event_reasons"] = json!(0x4 | 0x40);
    device["process_utilization"] = json!([{"pid": 438, "sm": 60}, {"pid": 901, "sm": 38}]);
    let r = sample(&v, &[438]);
    assert_eq!(r.other_mib, Some(10_240.0));
    assert_eq!(r.other_util, Some(38.0));
    assert_eq!(r.util, Some(99.0));
    assert_eq!(r.throttle, Some(68.0));
    assert_eq!((r.sm_mhz, r.sm_max_mhz), (Some(1200.0), Some(1980.0)));
}

/// The sampler finds the server's processes itself and follows a readings file that is
/// rewritten while it reads (a simulated tenant arriving mid-run).
#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn the_sampler_follows_a_rewritten_file() {
    let dir = recorded();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("readings.json");
    std::fs::write(&path, loaded(&dir).to_string()).unwrap();
    let reader = ReplayReader::from_file(&path).unwrap();
    let mut sampler =
        ServerGpuSampler::new(Box::new(reader), Box::new(|| Some(BTreeSet::from([438]))));
    assert_eq!(sampler.sample().other_mib, Some(0.0));
    let mut v = loaded(&dir);
    v["devices"][0]["compute_processes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"pid": 901, "used_gpu_memory": 1_073_741_824u64}));
    // Written beside and renamed over, as the simulated server writes it.
    let beside = tmp.path().join("readings.json.new");
    std::fs::write(&beside, v.to_string()).unwrap();
    std::fs::rename(&beside, &path).unwrap();
    assert_eq!(sampler.sample().other_mib, Some(1_024.0));
}
