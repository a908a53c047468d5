//! The user's load: run beside the recorder, its output copied to the terminal and to
//! load.log, and its result file found afterwards (only one written during this load).

use super::*;

impl Xray<'_> {
    /// The recorder in the background, the load in the foreground, then the after
    /// snapshot whatever the load did.
    pub(super) fn load(&mut self) -> Result<(), Stop> {
        let engine = self.engine.unwrap_or(Engine::DEFAULT);
        let stop = inferlint_live::Stop::new();
        let live = Arc::new(Mutex::new(LiveLine::new()));
        let server_root = match lock(&self.shared.server).as_ref() {
            // The supervisor's tree: the server and whatever it started, daemons too.
            Some(server) => ServerRoot::Pid(server.server.root_pid()),
            None => ServerRoot::of_url(&self.base),
        };
        let recorder = start_watch(
            self.base.clone(),
            engine,
            Duration::from_secs_f64(self.args.interval),
            self.dir.join("run.series.jsonl"),
            stop.clone(),
            Arc::clone(&live),
            RecordingSetup {
                // A load paced by a rate has no concurrency to reach: T8 and T17 are
                // judged at the end, from the load tool's own account of its pace.
                requested: self
                    .args
                    .requested
                    .or(self.load_plan.max_concurrency)
                    .filter(|_| !self.load_plan.paced_by_rate),
                boot: self.boot_facts.clone(),
                expect_cache_hits: self.args.expect_cache_hits,
                events: self.args.json_events.clone(),
                no_gpu: self.args.no_gpu,
                whole_pages: self.args.whole_pages,
                server_root,
            },
        );
        self.stage(&format!("load: {}", self.load_plan.words.join(" ")));
        self.load_started = Some(SystemTime::now());
        let load = run_load(
            &self.load_plan.words,
            &self.dir.join("load.log"),
            &self.shared,
            &live,
        );
        lock(&live).clear();
        let after = Recorder::new()
            .map_err(|e| problem(format!("cannot start the HTTP client: {e}")))
            .and_then(|r| self.snapshot(&r, "after.snapshot.json"));
        stop.stop();
        match recorder.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprint_line!("inferlint: the recording of {} failed: {e}", self.base),
            Err(_) => eprint_line!("inferlint: the recording of {} failed", self.base),
        }
        // Every request the server finished since it started (the probe's too) has its
        // span, once the exporter has sent it.
        let finished = after
            .as_ref()
            .ok()
            .and_then(|s| s.metrics.total(engine.descriptor().request_success));
        self.stop_receivers(finished);
        let after = after.map(|_| ());
        self.load_failure = match load {
            Ok(0) => None,
            Ok(code) => Some(format!("the load command exited with code {code}")),
            Err(e) => Some(format!("the load command failed: {e}")),
        };
        if let Some(failure) = &self.load_failure {
            say(failure);
        }
        self.check_interrupt()?;
        after
    }

    /// The result file the load wrote, if any: only one written since the load started,
    /// so that a file an earlier run left is never read as this run's.
    pub(super) fn bench_path(&self) -> Option<PathBuf> {
        // Two seconds' grace: some file systems keep modification times in whole (or
        // even two) seconds.
        let started = self.load_started?;
        let since = started
            .checked_sub(Duration::from_secs(2))
            .unwrap_or(started);
        let written_by_this_load = |file: &PathBuf| {
            let fresh = fs::metadata(file)
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified >= since);
            if file.is_file() && !fresh {
                eprint_line!(
                    "note: {} is older than this run's load, so it is not read as its result",
                    shown(file)
                );
            }
            fresh
        };
        if let Some(file) = &self.args.bench_result {
            return Some(file.clone()).filter(written_by_this_load);
        }
        if let Some(file) = &self.load_plan.result_file {
            return Some(file.clone()).filter(written_by_this_load);
        }
        if let Some(dir) = &self.load_plan.result_dir_newest {
            return fs::read_dir(dir)
                .ok()?
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
                .filter(|(modified, _)| *modified >= since)
                .max()
                .map(|(_, path)| path);
        }
        // Another load tool writes into its own folder, which may hold earlier runs: the
        // result written during this load. The run folder itself is searched anyway.
        self.load_plan
            .result_dirs
            .iter()
            .filter(|dir| dir.is_dir())
            .find_map(|dir| {
                loadtools::find_result_written_since(dir, since)
                    .ok()
                    .flatten()
            })
    }
}

/// What xray's recording adds and judges besides the samples.
#[derive(Debug)]
pub(super) struct RecordingSetup {
    requested: Option<u64>,
    boot: Option<inferlint_core::model::BootFacts>,
    expect_cache_hits: bool,
    /// `--json-events FILE`.
    events: Option<PathBuf>,
    no_gpu: bool,
    whole_pages: bool,
    server_root: ServerRoot,
}

/// Records the server into `path` on its own thread until `stop` is called, with the
/// server's GPUs read beside each sample and the mid-run verdicts on the live line.
pub(super) fn start_watch(
    base: BaseUrl,
    engine: Engine,
    interval: Duration,
    path: PathBuf,
    stop: inferlint_live::Stop,
    live: Arc<Mutex<LiveLine>>,
    setup: RecordingSetup,
) -> JoinHandle<Result<(), String>> {
    thread::spawn(move || {
        // The live crate's blocking face: its own runtime and client on this thread.
        let recorder = Recorder::new().map_err(|e| e.to_string())?;
        let mut scraper = recorder.scraper(base);
        let mut file = inferlint_engines::output::create_stream(&path, &Rule::NEW)
            .map_err(|e| e.to_string())?;
        let events = setup
            .events
            .as_deref()
            .map(|p| inferlint_engines::output::create_stream(p, &Rule::NEW))
            .transpose()
            .map_err(|e| e.to_string())?;
        let options = WatchOptions {
            interval,
            duration: None,
            pages: crate::flags::pages(setup.whole_pages),
        };
        let (sampler, sampling, note) =
            crate::recorder::gpu_sampler(setup.no_gpu, setup.server_root);
        if let Some(note) = note {
            lock(&live).note(&format!("note: {note}"));
        }
        let shown_live = Arc::clone(&live);
        let mut observer = RecorderObserver::new(
            engine,
            (sampler, sampling),
            LiveSetup {
                requested: setup.requested,
                boot: setup.boot,
                expect_cache_hits: setup.expect_cache_hits,
                events,
            },
            Box::new(move |shown| match shown {
                Shown::Change(change) => {
                    lock(&shown_live).note(&crate::live::change_line(change));
                }
                Shown::Status(text) => lock(&shown_live).verdicts = text,
            }),
        );
        let (first, _) = recorder
            .first_scrape(&mut scraper)
            .map_err(|e| e.message(Some(engine)))?;
        recorder
            .watch_observed(
                &mut scraper,
                first,
                engine,
                &options,
                &mut file,
                stop.stopped(),
                |_, progress| lock(&live).progress = Some(progress.clone()),
                &mut observer,
            )
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        observer.finish()?;
        file.sync_all()
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    })
}

/// The load's stop, whether xray asks for it or the load ended leaving processes
/// behind (after [`supervise::LOAD_STRAYS_WAIT`]): SIGTERM, this grace, SIGKILL.
pub(super) const LOAD_STOP_TIMES: StopTimes = StopTimes {
    grace: LOAD_STOP_GRACE,
    kill_wait: Duration::from_secs(5),
    poll: supervise::STOP_POLL,
};

/// How long after the load's supervisor ended its output is still read.
pub(super) const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Copies one output stream of the load to the terminal and to load.log; says on `done`
/// when the stream ended.
pub(super) fn copy_output(
    mut from: impl Read + Send + 'static,
    log: Arc<Mutex<File>>,
    live: Arc<Mutex<LiveLine>>,
    to_stderr: bool,
    done: std::sync::mpsc::Sender<()>,
) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut buffer = [0u8; 8192];
        loop {
            let n = match from.read(&mut buffer) {
                Ok(0) | Err(_) => {
                    let _ = done.send(());
                    return;
                }
                Ok(n) => n,
            };
            let chunk = &buffer[..n];
            // Held while writing, so that the status line is never drawn mid-chunk.
            let mut live = lock(&live);
            live.clear();
            live.at_line_start = chunk.ends_with(b"\n");
            if to_stderr {
                let mut err = io::stderr().lock();
                let _ = err.write_all(chunk).and_then(|()| err.flush());
            } else {
                let mut out = io::stdout().lock();
                let _ = out.write_all(chunk).and_then(|()| out.flush());
            }
            let _ = lock(&log).write_all(chunk);
        }
    })
}

/// Runs the load command, its output shown and saved. Returns its exit code (128 + the
/// signal for a killed one) or why it could not run.
pub(super) fn run_load(
    words: &[String],
    log_path: &Path,
    shared: &Shared,
    live: &Arc<Mutex<LiveLine>>,
) -> Result<i32, String> {
    let program = loadcmd::program(words).ok_or("no command after --")?;
    let log = create_new(log_path).map_err(|e| e.to_string())?;
    let log = Arc::new(Mutex::new(log));
    // Under a supervisor of its own, a child subreaper, so that nothing the load starts
    // (a detached child included) outlives it or xray.
    let mut load = supervise::SupervisedLoad::start(
        &program.program,
        &program.args,
        &program.env,
        Stdio::null(),
        LOAD_STOP_TIMES,
    )
    .map_err(|e| format!("cannot start {}: {e}", program.program))?;
    *lock(&shared.load_pid) = Some(load.child.id());
    *lock(&shared.load_tree) = load.anchor();
    let (copied, copies) = std::sync::mpsc::channel();
    let mut copiers = 0;
    if let Some(out) = load.child.stdout.take() {
        copiers += 1;
        copy_output(
            out,
            Arc::clone(&log),
            Arc::clone(live),
            false,
            copied.clone(),
        );
    }
    if let Some(err) = load.child.stderr.take() {
        copiers += 1;
        copy_output(err, Arc::clone(&log), Arc::clone(live), true, copied);
    }
    let mut interrupted_at: Option<Instant> = None;
    let mut drawn = Instant::now();
    let status = loop {
        if drawn.elapsed() >= Duration::from_millis(500) {
            lock(live).draw();
            drawn = Instant::now();
        }
        match load.child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) => {}
            Err(e) => break Err(e.to_string()),
        }
        if shared.interrupted() {
            // The signal thread sends SIGTERM to a load it knows of; one started just
            // after the signal gets it here. The supervisor stops the load's tree in
            // its stop times; only a supervisor that overruns them is killed.
            let since = *interrupted_at.get_or_insert_with(|| {
                terminate(load.child.id());
                Instant::now()
            });
            if since.elapsed() >= LOAD_STOP_GRACE + LOAD_STOP_TIMES.kill_wait * 2 {
                let _ = load.child.kill();
            }
        }
        thread::sleep(Duration::from_millis(50));
    };
    *lock(&shared.load_tree) = None;
    *lock(&shared.load_pid) = None;
    load.release();
    // The supervisor ended once the load's tree was gone, so the output's pipes are
    // closed; whatever still holds one (a process outside the tree) is not waited for
    // beyond this bound.
    let deadline = Instant::now() + OUTPUT_DRAIN;
    for _ in 0..copiers {
        let left = deadline.saturating_duration_since(Instant::now());
        if copies.recv_timeout(left).is_err() {
            eprint_line!(
                "inferlint: the load's output is still held open {} s after its end; not waiting for it",
                OUTPUT_DRAIN.as_secs()
            );
            break;
        }
    }
    let status = status?;
    Ok(status.code().unwrap_or_else(|| {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            128 + status.signal().unwrap_or(0)
        }
        #[cfg(not(unix))]
        {
            1
        }
    }))
}
