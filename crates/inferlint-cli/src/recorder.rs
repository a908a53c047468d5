//! What `watch` and xray's recording add beside the metrics (a reading of the server's
//! GPUs in every sample, for T21) and show while the run goes on (the mid-run verdicts and
//! what limits the run now, a log line when a verdict changes, and the changes as JSON
//! lines for other programs). The verdicts themselves come from inferlint-live and core.

use std::io::Write;
use std::path::PathBuf;

use inferlint_core::model::{BootFacts, GpuReading, GpuSampling, SeriesSample, Snapshot};
use inferlint_core::Engine;
use inferlint_engines::output::StreamFile;
use inferlint_gpu::contention::{process_tree, ServerGpuSampler};
use inferlint_gpu::recorded::ReplayReader;
use inferlint_gpu::{GpuError, GpuReader};
use inferlint_live::verdicts::{LiveVerdicts, VerdictChange};
use inferlint_live::watch::Observer;
use inferlint_live::BaseUrl;

/// The file of recorded NVML readings replayed instead of the driver (docs/gpu.md).
const READINGS_VAR: &str = "INFERLINT_NVML_READINGS";

/// Where the server's processes are, to tell its GPUs from others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerRoot {
    /// The process xray started.
    Pid(u32),
    /// The process listening on this port of this machine.
    Port(u16),
    /// On another machine: its GPUs cannot be read here.
    Elsewhere,
}

impl ServerRoot {
    /// The server at a URL: on this machine when its host is a loopback address.
    pub(crate) fn of_url(base: &BaseUrl) -> ServerRoot {
        let Some((host, port)) = base.host_port() else {
            return ServerRoot::Elsewhere;
        };
        let local = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if local {
            ServerRoot::Port(port)
        } else {
            ServerRoot::Elsewhere
        }
    }
}

/// The GPU reader of this machine: recorded readings when `INFERLINT_NVML_READINGS` names
/// a file, else NVML.
fn gpu_reader() -> Result<Box<dyn GpuReader>, GpuError> {
    match std::env::var_os(READINGS_VAR).filter(|v| !v.is_empty()) {
        Some(path) => Ok(Box::new(ReplayReader::from_file(&PathBuf::from(path))?)),
        None => Ok(Box::new(inferlint_gpu::nvml::NvmlReader::open()?)),
    }
}

/// The sampler of the server's GPUs and what the recording's header says: none when the
/// user said the server uses no GPU here, when the server is on another machine or when
/// this machine has no NVIDIA driver; every sample's reading otherwise (a reading NVML
/// cannot take is left out of its sample, and T21 says Can't tell).
pub(crate) fn gpu_sampler(
    no_gpu: bool,
    root: ServerRoot,
) -> (Option<ServerGpuSampler>, GpuSampling, Option<String>) {
    if no_gpu {
        return (None, GpuSampling::None, None);
    }
    if root == ServerRoot::Elsewhere {
        return (
            None,
            GpuSampling::Elsewhere,
            Some("the server is on another machine: its GPUs are not read (T21)".into()),
        );
    }
    let reader = match gpu_reader() {
        Ok(reader) => reader,
        Err(GpuError::NoDriver { detail }) => {
            return (
                None,
                GpuSampling::None,
                Some(format!(
                    "no NVIDIA driver found ({detail}): no GPU is read (T21)"
                )),
            )
        }
        Err(e) => {
            return (
                None,
                GpuSampling::Nvml,
                Some(format!(
                    "cannot {e}: the recording has no GPU readings (T21)"
                )),
            )
        }
    };
    let mut root_pid = match root {
        ServerRoot::Pid(pid) => Some(pid),
        _ => None,
    };
    let find = move || {
        if root_pid.is_none() {
            if let ServerRoot::Port(port) = root {
                root_pid = listener(port);
            }
        }
        process_tree(root_pid?)
    };
    (
        Some(ServerGpuSampler::new(reader, Box::new(find))),
        GpuSampling::Nvml,
        None,
    )
}

#[cfg(target_os = "linux")]
fn listener(port: u16) -> Option<u32> {
    inferlint_gpu::listen::port_listener(port)
}

#[cfg(not(target_os = "linux"))]
fn listener(_port: u16) -> Option<u32> {
    None
}

/// What the recorder shows as the run goes on.
#[derive(Debug)]
pub(crate) enum Shown<'a> {
    /// A verdict changed: one line in the log.
    Change(&'a VerdictChange),
    /// The verdicts and the limit now, for the status area.
    Status(String),
}

/// The observer `watch` and xray record with.
pub(crate) struct RecorderObserver<'a> {
    gpu: Option<ServerGpuSampler>,
    gpu_sampling: GpuSampling,
    verdicts: LiveVerdicts,
    events: Option<StreamFile>,
    /// Why the events file stopped being written, if it did.
    pub(crate) events_error: Option<String>,
    show: Box<dyn FnMut(Shown<'_>) + 'a>,
}

impl std::fmt::Debug for RecorderObserver<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecorderObserver")
            .field("gpu_sampling", &self.gpu_sampling)
            .finish_non_exhaustive()
    }
}

/// What the live verdicts are judged with.
#[derive(Debug, Default)]
pub(crate) struct LiveSetup {
    pub(crate) requested: Option<u64>,
    pub(crate) boot: Option<BootFacts>,
    pub(crate) expect_cache_hits: bool,
    pub(crate) events: Option<StreamFile>,
}

impl<'a> RecorderObserver<'a> {
    pub(crate) fn new(
        engine: Engine,
        gpu: (Option<ServerGpuSampler>, GpuSampling),
        setup: LiveSetup,
        show: Box<dyn FnMut(Shown<'_>) + 'a>,
    ) -> RecorderObserver<'a> {
        let mut verdicts =
            LiveVerdicts::new(engine, setup.requested, setup.boot, setup.expect_cache_hits);
        verdicts.set_gpu_sampling(Some(gpu.1));
        RecorderObserver {
            gpu: gpu.0,
            gpu_sampling: gpu.1,
            verdicts,
            events: setup.events,
            events_error: None,
            show,
        }
    }

    fn tell(&mut self, changes: &[VerdictChange]) {
        for change in changes {
            if let Some(file) = &mut self.events {
                let mut line = change.json_line();
                line.push('\n');
                if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
                    self.events_error =
                        Some(format!("cannot write {}: {e}", file.path().display()));
                    self.events = None;
                }
            }
            (self.show)(Shown::Change(change));
        }
    }

    /// Judges once more at the end of the recording and shows what changed; closes the
    /// events file.
    pub(crate) fn finish(&mut self) -> Result<(), String> {
        let changes = self.verdicts.finish();
        self.tell(&changes);
        if let Some(file) = self.events.take() {
            file.sync_all()
                .map_err(|e| format!("cannot write {}: {e}", file.path().display()))?;
        }
        match self.events_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The latest verdicts and limit, as the status area shows them.
    pub(crate) fn status_text(&self) -> String {
        self.verdicts.status_text()
    }
}

impl Observer for RecorderObserver<'_> {
    fn gpu_sampling(&self) -> Option<GpuSampling> {
        Some(self.gpu_sampling)
    }

    fn extra(&mut self) -> GpuReading {
        self.gpu
            .as_mut()
            .map(ServerGpuSampler::sample)
            .unwrap_or_default()
    }

    fn ended(&mut self, last: &Snapshot) {
        self.verdicts.last_scrape(last);
    }

    fn sampled(&mut self, sample: &SeriesSample, scrape: &Snapshot) {
        let changes = self.verdicts.push(sample, scrape);
        self.tell(&changes);
        let text = self.verdicts.status_text();
        (self.show)(Shown::Status(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_loopback_server_has_its_gpus_read_here() {
        let root =
            |url: &str| ServerRoot::of_url(&BaseUrl::parse(url).unwrap_or_else(|e| panic!("{e}")));
        assert_eq!(root("http://127.0.0.1:8000"), ServerRoot::Port(8000));
        assert_eq!(root("http://localhost:30000"), ServerRoot::Port(30000));
        assert_eq!(root("http://[::1]:8000"), ServerRoot::Port(8000));
        assert_eq!(root("http://10.0.0.7:8000"), ServerRoot::Elsewhere);
    }
}
