//! `teardown`: list the server processes, SIGTERM them, SIGKILL what is left after a grace
//! period, then wait for a clear card (T2); and say what `pkill -f` would have done (T3).
//!
//! The dry run and the real run share [`plan`], so the real run signals exactly what the
//! dry run lists, each PID only while it still has the start time it was listed with.

use std::time::Duration;

use serde_json::json;

use inferlint_core::story::contract::JsonObject;
use inferlint_core::{story::contract, CheckResult, Engine, Status, Tripwire};

use crate::clear::{Asker, ClearRule};
use crate::inspect::mismatch_note;
use crate::pids::GpuHolder;
use crate::procs::{ProcessTable, SignalOutcome, StopSignal};
use crate::servers::{compare_with_pkill, discover, PkillComparison, Target};
use crate::system::{Clock, Machine, Processes};
use crate::wait::wait_for_clear_card;

/// How long servers get to exit after SIGTERM before SIGKILL.
pub const GRACE: Duration = Duration::from_secs(15);
/// How often the grace period looks whether they have.
pub const GRACE_POLL: Duration = Duration::from_millis(500);

/// What the user asked for.
#[derive(Debug, Clone)]
pub struct TeardownOptions {
    /// Stop only this engine's servers (the card still counts every engine's).
    pub engine: Option<Engine>,
    /// How the engine was named, for the "left alone" line: `--engine vllm`.
    pub named_as: Option<String>,
    /// Say what would be stopped; signal nothing.
    pub dry_run: bool,
    /// When the card counts as clear afterwards.
    pub rule: ClearRule,
    /// SIGTERM, then this long before SIGKILL.
    pub grace: Duration,
    /// How often to look during the grace period.
    pub grace_poll: Duration,
}

impl TeardownOptions {
    /// Options with teardown's grace period, under `rule`.
    pub fn new(rule: ClearRule) -> TeardownOptions {
        TeardownOptions {
            engine: None,
            named_as: None,
            dry_run: false,
            rule,
            grace: GRACE,
            grace_poll: GRACE_POLL,
        }
    }
}

/// What teardown will signal, and what it leaves alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The engine named, if any.
    pub engine: Option<Engine>,
    /// The processes to stop, in PID order.
    pub targets: Vec<Target>,
    /// Servers of other engines, with `--engine`.
    pub left_alone: Vec<Target>,
    /// The caller's ancestors that look like servers: never signalled.
    pub spared_ancestors: Vec<u32>,
    /// What `pkill -f` would have done instead.
    pub pkill: PkillComparison,
}

/// Finds the targets in one look at the process table.
pub fn plan(
    table: &ProcessTable,
    caller: u32,
    scope: crate::servers::Scope,
    engine: Option<Engine>,
) -> Plan {
    let found = discover(table, caller, scope);
    let (targets, left_alone): (Vec<Target>, Vec<Target>) = found
        .targets
        .into_iter()
        .partition(|t| engine.is_none_or(|e| t.engine == e));
    let pkill = compare_with_pkill(table, caller, scope, &targets, engine);
    Plan {
        engine,
        targets,
        left_alone,
        spared_ancestors: found.spared_ancestors,
        pkill,
    }
}

/// `A`, `A and B`, `A, B and C`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

impl Plan {
    /// The lines a person reads before anything is signalled.
    pub fn text(&self, named_as: Option<&str>) -> String {
        let mut text = String::new();
        for t in &self.targets {
            text.push_str(&format!("target  pid={:<8} {}\n", t.pid, t.name));
        }
        if self.targets.is_empty() {
            let engines = match self.engine {
                Some(e) => e.name().to_owned(),
                None => "vLLM, SGLang or TensorRT-LLM".to_owned(),
            };
            text.push_str(&format!("no server processes found ({engines})\n"));
        }
        if !self.left_alone.is_empty() {
            let mut engines: Vec<&str> = Vec::new();
            for t in &self.left_alone {
                if !engines.contains(&t.engine.name()) {
                    engines.push(t.engine.name());
                }
            }
            let n = self.left_alone.len();
            text.push_str(&format!(
                "left alone ({}): {n} process{} of {} servers\n",
                named_as.unwrap_or("--engine"),
                if n == 1 { "" } else { "es" },
                and_list(&engines)
            ));
        }
        for pid in &self.spared_ancestors {
            text.push_str(&format!(
                "spared  pid={pid:<8} looks like a server, but inferlint runs under it\n"
            ));
        }
        if self.pkill.differs() {
            text.push_str(&self.pkill.line());
            text.push('\n');
        }
        text
    }
}

/// What signalling did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stopping {
    /// Sent SIGTERM.
    pub terminated: Vec<u32>,
    /// Still alive after the grace period, sent SIGKILL.
    pub killed: Vec<u32>,
    /// Had exited before its signal.
    pub gone: Vec<u32>,
    /// Its PID had been reused by another process: left alone.
    pub reused: Vec<u32>,
    /// The kernel refused the signal.
    pub failed: Vec<(u32, String)>,
}

impl Stopping {
    fn record(&mut self, pid: u32, signal: StopSignal, outcome: SignalOutcome) {
        match outcome {
            SignalOutcome::Sent => match signal {
                StopSignal::Term => self.terminated.push(pid),
                StopSignal::Kill => self.killed.push(pid),
            },
            SignalOutcome::Gone => self.gone.push(pid),
            SignalOutcome::Reused => self.reused.push(pid),
            SignalOutcome::Failed(why) => {
                self.failed.push((pid, format!("{}: {why}", signal.name())))
            }
        }
    }

    /// Lines for what did not go as asked.
    pub fn text(&self, targets: &[Target], grace: Duration) -> String {
        let name = |pid: u32| {
            targets
                .iter()
                .find(|t| t.pid == pid)
                .map_or(String::new(), |t| t.name.clone())
        };
        let mut text = String::new();
        for &pid in &self.killed {
            text.push_str(&format!(
                "killed  pid={pid:<8} {} (still running {}s after SIGTERM)\n",
                name(pid),
                grace.as_secs_f64()
            ));
        }
        for &pid in &self.reused {
            text.push_str(&format!(
                "note: pid {pid} was not signalled: it now belongs to another process\n"
            ));
        }
        for (pid, why) in &self.failed {
            text.push_str(&format!("note: could not signal pid {pid} ({why})\n"));
        }
        text
    }
}

/// SIGTERM to every target, up to `grace` for them to exit (looking every `poll`), then
/// SIGKILL to those still alive. A PID is signalled only while it has the start time it
/// was listed with.
pub fn stop(
    targets: &[Target],
    processes: &mut dyn Processes,
    clock: &mut dyn Clock,
    grace: Duration,
    poll: Duration,
) -> Stopping {
    let mut stopping = Stopping::default();
    for t in targets {
        let outcome = processes.signal(t.pid, t.start_time, StopSignal::Term);
        stopping.record(t.pid, StopSignal::Term, outcome);
    }
    let waiting: Vec<&Target> = targets
        .iter()
        .filter(|t| stopping.terminated.contains(&t.pid))
        .collect();
    let deadline = clock.elapsed() + grace;
    let mut survivors: Vec<&Target> = waiting;
    // A process table that cannot be read ends the grace period early: the survivors
    // then get SIGKILL, each only if its start time still matches.
    while let Ok(table) = processes.table() {
        survivors.retain(|t| table.same_alive(t.pid, t.start_time).is_some());
        if survivors.is_empty() || clock.elapsed() >= deadline {
            break;
        }
        clock.sleep(poll.min(deadline.saturating_sub(clock.elapsed())));
    }
    for t in survivors {
        let outcome = processes.signal(t.pid, t.start_time, StopSignal::Kill);
        stopping.record(t.pid, StopSignal::Kill, outcome);
    }
    stopping
}

/// Everything one teardown did.
#[derive(Debug, Clone)]
pub struct TeardownOutcome {
    /// `None` when the process table could not be read at all (not Linux).
    pub plan: Option<Plan>,
    /// `None` for a dry run.
    pub stopping: Option<Stopping>,
    /// T2, except for a dry run, which decides nothing.
    pub results: Vec<CheckResult>,
}

fn target_json(t: &Target) -> JsonObject {
    JsonObject::from([
        ("pid", json!(t.pid)),
        ("engine", json!(t.engine.key())),
        ("name", json!(t.name)),
        ("why", json!(t.why)),
        ("parent", json!(t.parent)),
        ("command_line", json!(t.command_line)),
    ])
}

impl TeardownOutcome {
    /// `{"targets": […], "left_alone": […], "pkill": {…}, "results": […]}`, the results
    /// in the usual `--json` shape. Indented by one space like every JSON inferlint prints.
    pub fn json(&self) -> String {
        /// The shape, in its order (a struct keeps its fields' order).
        #[derive(serde::Serialize)]
        struct Shape {
            targets: Vec<JsonObject>,
            left_alone: Vec<JsonObject>,
            pkill: Option<JsonObject>,
            results: Vec<JsonObject>,
        }
        // The results in the contract's shape and order, read back keeping it.
        let results: Vec<JsonObject> =
            serde_json::from_str(&contract::results_json(&self.results)).unwrap_or_default();
        let shape = match &self.plan {
            Some(p) => Shape {
                targets: p.targets.iter().map(target_json).collect(),
                left_alone: p.left_alone.iter().map(target_json).collect(),
                pkill: Some(JsonObject::from([
                    ("pattern", json!(p.pkill.pattern)),
                    ("would_miss", json!(p.pkill.would_miss)),
                    ("would_wrongly_hit", json!(p.pkill.would_wrongly_hit)),
                ])),
                results,
            },
            None => Shape {
                targets: Vec::new(),
                left_alone: Vec::new(),
                pkill: None,
                results,
            },
        };
        let mut text = contract::to_indent1(&shape);
        text.push('\n');
        text
    }
}

/// Runs teardown. Lines go to `out` as soon as they are known (the list before anything
/// is signalled, the T2 line at the end is the caller's to print from the results).
pub fn teardown(
    machine: &mut Machine,
    options: &TeardownOptions,
    out: &mut dyn FnMut(&str),
) -> TeardownOutcome {
    let processes = match machine.processes.as_mut() {
        Ok(p) => p,
        Err(e) => {
            return TeardownOutcome {
                plan: None,
                stopping: None,
                results: vec![CheckResult::new(
                    Tripwire::T2,
                    Status::Unknown,
                    e.to_string(),
                )],
            }
        }
    };
    let table = match processes.table() {
        Ok(t) => t,
        Err(e) => {
            return TeardownOutcome {
                plan: None,
                stopping: None,
                results: vec![CheckResult::new(
                    Tripwire::T2,
                    Status::Unknown,
                    format!("could not {e}"),
                )],
            }
        }
    };
    let plan = plan(
        &table,
        processes.caller(),
        processes.scope(),
        options.engine,
    );
    out(&plan.text(options.named_as.as_deref()));
    if options.dry_run {
        return TeardownOutcome {
            plan: Some(plan),
            stopping: None,
            results: Vec::new(),
        };
    }
    let stopping = stop(
        &plan.targets,
        processes.as_mut(),
        machine.clock.as_mut(),
        options.grace,
        options.grace_poll,
    );
    out(&stopping.text(&plan.targets, options.grace));
    let waited = wait_for_clear_card(
        Asker::Teardown,
        options.rule,
        processes.as_mut(),
        machine.gpus.as_mut(),
        machine.clock.as_mut(),
    );
    if waited.result.status == Status::Fail && waited.holders.iter().any(GpuHolder::mismatched) {
        out(&mismatch_note());
    }
    let result = waited
        .result
        .with("signalled", stopping.terminated.clone())
        .with("killed", stopping.killed.clone());
    TeardownOutcome {
        plan: Some(plan),
        stopping: Some(stopping),
        results: vec![result],
    }
}
