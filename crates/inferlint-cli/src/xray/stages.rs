//! The stage machine: each stage of the routine in order (the server's start or the
//! attach, the engine, the boot log, the probe, the snapshots around the load), and the
//! end that runs on every path: the checks from the run folder, the stop, the report.

use super::*;
use inferlint_core::judging::checks;
use inferlint_core::judging::checks::registry::{self, Phase};

/// The run folder read and checked: the run, its results, its files, and the timeline
/// the checks' pass folded for the report's charts.
type Assembled = (
    inferlint_core::judging::identity::Admitted,
    run::Checked,
    files::RunFiles,
    Option<loading::Folded<inferlint_report::TimelinePass>>,
);

impl Xray<'_> {
    pub(super) fn stage(&self, text: &str) {
        if self.terminal {
            say(&format!(
                "== {text}  ({:.1} s)",
                self.started.elapsed().as_secs_f64()
            ));
        } else {
            say(&format!("== {text}"));
        }
    }

    pub(super) fn record(&mut self, result: CheckResult) {
        say_results(std::slice::from_ref(&result));
        self.results.push(result);
    }

    pub(super) fn check_interrupt(&self) -> Result<(), Stop> {
        if self.shared.interrupted() {
            Err(Stop::Interrupted)
        } else {
            Ok(())
        }
    }

    pub(super) fn boot_log_path(&self) -> Option<PathBuf> {
        if self.args.serve.is_some() {
            Some(self.dir.join("boot.log"))
        } else {
            self.args.boot_log.clone()
        }
    }

    /// Everything up to and including the load. Returns why it stopped early, if it did.
    pub(super) fn stages(
        &mut self,
        choice: &mut EngineChoice,
        serve_words: Option<&[String]>,
    ) -> Result<(), Stop> {
        let recorder =
            Recorder::new().map_err(|e| problem(format!("cannot start the HTTP client: {e}")))?;
        // A signal ends the wait for `/health` at once, not when the request times out.
        let shared = Arc::clone(&self.shared);
        let health = |base: &BaseUrl, within: Duration| {
            recorder.healthy_within(base, within, &|| shared.interrupted())
        };
        if let Some(words) = serve_words {
            let words = self.start_receivers(words)?;
            self.start_server(&words, &health)?;
        } else {
            self.start_drain(false)?;
            if !health(&self.base, inferlint_live::server::ASK_TIMEOUT) {
                return Err(problem(format!(
                    "no server answers at {}",
                    self.base.join("/health")
                )));
            }
            self.record(owner::not_started(&self.base.to_string()));
        }
        self.check_interrupt()?;
        self.identify(choice, &recorder)?;
        self.boot_stage(choice)?;
        self.check_interrupt()?;
        if !self.args.no_probe {
            self.stage("probe: one request, then 8 at once");
            let report = recorder.probe(&self.base, &probe_options(self.args.ready_timeout));
            // T7 judges what the probe saw with what the supervisor saw of the server.
            let exited = self.server_exited();
            self.record(checks::probe::judge(&report, exited.as_deref()));
            self.check_interrupt()?;
            if let Some(message) = exited {
                return Err(problem(format!("{message} during the probe")));
            }
        } else {
            self.record(checks::probe::left_out(
                "needs the probe, which --no-probe left out",
            ));
        }
        self.snapshot(&recorder, "before.snapshot.json")?;
        self.load()
    }
}

impl Xray<'_> {
    /// The first scrape: the server's metrics, and the engine they belong to.
    pub(super) fn identify(
        &mut self,
        choice: &EngineChoice,
        recorder: &Recorder,
    ) -> Result<(), Stop> {
        let mut scraper = recorder.scraper(self.base.clone());
        let (_, engine) = recorder
            .first_scrape(&mut scraper)
            .map_err(|e| problem(e.message(self.engine)))?;
        // An engine named (--engine, INFERLINT_ENGINE) refuses the server in the words
        // every command uses for an input of another engine.
        choice
            .check(Source::Server(self.base.to_string()), engine)
            .map_err(|e| Stop::Problem(e.to_string(), ExitCode::Undecided))?;
        match self.engine {
            Some(expected) if expected != engine => {
                return Err(Stop::Problem(
                    format!(
                        "the --serve command starts {}, but the server at {} runs {}; check the command and the address",
                        expected.name(),
                        self.base,
                        engine.name()
                    ),
                    ExitCode::Undecided,
                ))
            }
            Some(_) => {}
            None => say(&format!("== engine: {} (from its metrics)", engine.name())),
        }
        self.engine = Some(engine);
        Ok(())
    }

    pub(super) fn boot_stage(&mut self, choice: &mut EngineChoice) -> Result<(), Stop> {
        let Some(path) = self.boot_log_path() else {
            return Ok(());
        };
        self.stage("boot log");
        self.boot_checked = true;
        let mut facts = match noted(choice, |c| loading::load_boot(c, &path)) {
            Ok(facts) => facts,
            // A server that never came up can leave an empty log, or one with a line of
            // its shell's; the cause is then what xray saw, not what the log says.
            Err(e) => match self.start_failure.clone() {
                Some(cause) => {
                    let last = last_line(&path);
                    let mut result = inferlint_core::judging::checks::boot::start_failure(&cause);
                    if let Some(line) = last {
                        result = result.with("line", line);
                    }
                    self.record(result);
                    return Ok(());
                }
                None => return Err(Stop::Problem(e.message().to_owned(), e.code())),
            },
        };
        if facts.version.is_none() && self.start_failure.is_none() {
            self.server_version = self.server_version(facts.engine);
            facts.version.clone_from(&self.server_version);
            noted(choice, |c| {
                c.note_version(&facts);
                Ok(())
            })
            .map_err(|e| Stop::Problem(e.message().to_owned(), e.code()))?;
        }
        self.boot_facts = Some(facts.clone());
        let exited = self.start_failure.as_deref();
        let last = exited.and_then(|_| last_line(&path));
        for r in run::check_start(facts, exited, last) {
            self.record(r);
        }
        Ok(())
    }

    pub(super) fn snapshot(
        &mut self,
        recorder: &Recorder,
        name: &str,
    ) -> Result<inferlint_core::Snapshot, Stop> {
        let path = self.dir.join(name);
        let mut scraper = recorder.scraper(self.base.clone());
        let (scrape, _) = recorder
            .first_scrape(&mut scraper)
            .map_err(|e| problem(format!("cannot take {name}: {}", e.message(self.engine))))?;
        inferlint_engines::output::write_file(
            &path,
            files::snapshot_json(&scrape.snapshot).as_bytes(),
            &Rule::NEW,
        )
        .map_err(|e| problem(e.to_string()))?;
        Ok(scrape.snapshot)
    }
}

impl Xray<'_> {
    /// The checks, the stop, the report and results.json: on every path.
    pub(super) fn finish(
        &mut self,
        choice: &mut EngineChoice,
        outcome: Result<(), Stop>,
    ) -> Result<ExitCode, CliError> {
        let mut stop_code = None;
        match &outcome {
            Ok(()) => {}
            Err(Stop::Problem(message, code)) => {
                say(&format!("stopped early: {message}"));
                stop_code = Some(*code);
            }
            Err(Stop::Interrupted) => say("stopped early: interrupted"),
        }
        // A server that exited or timed out before it was ready still gets its boot log
        // checked, so that the failure is classified.
        if !self.boot_checked && self.boot_log_path().is_some_and(|p| p.is_file()) {
            if let Err(Stop::Problem(message, _)) = self.boot_stage(choice) {
                eprint_line!("inferlint: {message}");
            }
        }
        let assembled = self.assemble(choice);
        let checks: Vec<CheckResult> = match &assembled {
            Ok(Some((_, checked, _, _))) => {
                let results = &checked.results;
                let mut checks = registry::xray_order(results);
                // What the run could not check and xray has not said yet (the boot
                // checks of an attached server given no --boot-log).
                let said: Vec<Tripwire> = self
                    .results
                    .iter()
                    .chain(&checks)
                    .map(|r| r.tripwire)
                    .collect();
                checks.extend(
                    results
                        .iter()
                        .filter(|r| r.status == Status::NotChecked && !said.contains(&r.tripwire))
                        .cloned(),
                );
                checks
            }
            _ => Vec::new(),
        };
        if let Ok(Some((run, _, _, _))) = &assembled {
            let set_aside = run
                .rejected
                .iter()
                .find(|r| r.input == inferlint_core::run::input::BENCH_RESULT);
            match (&run.bench, set_aside) {
                (Some((name, account)), _) => say(&format!(
                    "load tool: {}, its result in {name}",
                    account.tool_label()
                )),
                (None, Some(rejected)) => say(&format!(
                    "load tool: {}, but its result {}",
                    self.load_plan.tool.map_or("", |t| t.name()),
                    rejected.sentence()
                )),
                (None, None) if self.load_plan.tool.is_some() => say(&format!(
                    "load tool: {}, but no result of it was found",
                    self.load_plan.tool.map_or("", |t| t.name())
                )),
                (None, None) => {}
            }
        }
        if !checks.is_empty() {
            self.stage("checks");
            for r in checks {
                self.record(r);
            }
        }
        if lock(&self.shared.server).is_some() {
            self.stage("stop the server");
            let (survivors, cgroup) = match stop_server(&self.shared) {
                Some(stopped) => {
                    say(&stopped.text);
                    (stopped.survivors, stopped.cgroup)
                }
                None => (Vec::new(), None),
            };
            if !self.args.no_gpu {
                match clear_card_after_stop(&survivors, cgroup.as_deref()) {
                    Ok(r) => self.record(r),
                    Err(e) => eprint_line!("inferlint: {}", e.message()),
                }
            }
        }
        let mut report_path = None;
        if let Ok(Some((run, checked, paths, charts))) = &assembled {
            let (run_results, limits) = (&checked.results, &checked.insights);
            if !limits.is_empty() {
                self.stage("what limited this run");
                for insight in limits {
                    say(&format!("- {}. {}", insight.title, insight.text));
                }
            }
            let mut shown_results = run_results.clone();
            // xray's own verdicts: those before the server starts, while it serves and
            // when it stops, in that order, as the registry declares them.
            let own = registry::DECLARATIONS.iter().filter(|d| {
                matches!(
                    d.phase,
                    Phase::BeforeStart | Phase::Serving | Phase::Cleanup
                )
            });
            for tripwire in own.map(|d| d.tripwire) {
                if let Some(last) = self.results.iter().rev().find(|r| r.tripwire == tripwire) {
                    shown_results.push(last.clone());
                }
            }
            let destination = crate::report_html::Destination::Asked(self.dir.join("report.html"));
            let inputs = crate::report_html::Inputs {
                run,
                results: &shown_results,
                account: &checked.account,
                insights: limits,
                series: paths.series.as_deref(),
                charts: charts.as_ref(),
                made_from: crate::report_html::made_from(
                    &paths.boot_logs,
                    [
                        paths.before.as_deref(),
                        paths.after.as_deref(),
                        paths.series.as_deref(),
                        paths.chosen_bench(run),
                    ],
                ),
                title: self.args.title.as_deref(),
            };
            let reads = paths.inputs();
            let overwrite = crate::report_html::Overwrite {
                force: false,
                reads: &reads,
            };
            match crate::report_html::write(&destination, &inputs, &overwrite) {
                Ok(path) => report_path = path,
                Err(e) => eprint_line!("inferlint: {}", e.message()),
            }
        }
        if let Err(e) = &assembled {
            eprint_line!("inferlint: cannot check the run folder: {}", e.message());
        }
        let results_path = self.dir.join("results.json");
        let results_json = output::json_safe(contract::results_json(&self.results));
        if let Err(e) = inferlint_engines::output::write_file(
            &results_path,
            results_json.as_bytes(),
            &Rule::NEW,
        ) {
            eprint_line!("inferlint: {e}");
        }
        say(&count_line(&self.results));
        if let Some(path) = report_path {
            say(&format!("report: {}", shown(&path)));
        }
        say(&format!("files:  {}", shown(&self.dir)));
        let code = if self.shared.interrupted() {
            ExitCode::Interrupted
        } else if let Some(code) = stop_code {
            code
        } else {
            match &assembled {
                Ok(Some((run, _, _, _))) => run_exit(run, &self.results, self.strict),
                // A failed load with no run to check is still not a benchmark.
                _ if self.load_failure.is_some() => ExitCode::of(
                    inferlint_core::judging::outcome::of_results(&self.results, true, self.strict),
                ),
                _ => ExitCode::for_results(&self.results, self.strict),
            }
        };
        Ok(code)
    }

    /// The run as `report DIR` reads it from the folder; `None` when the folder holds no
    /// boot log and not both snapshots.
    pub(super) fn assemble(
        &self,
        choice: &mut EngineChoice,
    ) -> Result<Option<Assembled>, CliError> {
        let mut found = files::discover_run(&self.dir)?;
        if let Some(path) = &self.args.boot_log {
            if self.args.serve.is_none() {
                found.boot_logs = vec![path.clone()];
            }
        }
        if let Some(bench) = self.bench_path() {
            // The file this load wrote: nothing to choose among.
            found.bench = Some(bench);
            found.bench_candidates.clear();
        }
        if found.boot_logs.is_empty() && (found.before.is_none() || found.after.is_none()) {
            return Ok(None);
        }
        // The one path, with what xray knows of the run: the concurrency it asked for,
        // the engine it asked the server for, how the load ended and the server's version.
        let known = loading::Known {
            requested: self.args.requested.or(self.load_plan.max_concurrency),
            engine: self.engine,
            load_failure: self.load_failure.clone(),
            server_version: self.server_version.clone(),
            for_replay: false,
        };
        let options = run::CheckOptions {
            run: run::RunOptions {
                expect_cache_hits: self.args.expect_cache_hits,
                // The server xray started is still running and writing its log.
                live_log: self.args.serve.is_some() && lock(&self.shared.server).is_some(),
            },
            after_missing: None,
        };
        // The report's charts are folded in the checks' pass over the recording.
        let (run, checked, charts) = match noted(choice, |c| {
            loading::check_files(c, &found, &known, &options, |ends| {
                inferlint_report::TimelinePass::new(ends.first, ends.last, ends.after)
            })
        }) {
            Ok(loaded) => loaded,
            // A server that never came up can leave a log that is no server log; T12
            // already says why, and there is no run to check.
            Err(_) if self.start_failure.is_some() => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some((run, checked, found, charts)))
    }
}
