//! Every tripwire's check, declared once: when in a test it is judged, what it reads,
//! whether a recording still going can judge it, and the function that judges it.
//!
//! Everything that lists checks derives from [`DECLARATIONS`]: the whole-run checks and
//! their order ([`crate::run::check_run`], the report), the live checks
//! ([`crate::judging::live::mid_run`]), xray's `== checks` ([`xray_order`]), the "not
//! checked" results and their reasons ([`Declaration::missing`]), and what a report says of a
//! tripwire it has no verdict for ([`absent_reason`]). Adding a tripwire is its catalogue
//! entry, its check and its declaration here; a test below fails when the catalogue and
//! this table disagree.

use crate::engine::EngineDescriptor;
use crate::judging::checks::series;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::run::model::{input, Run, RunOptions};

/// When in a test a tripwire is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// From one boot log (`check-log`, xray once the server is ready).
    Boot,
    /// Across two or more boot logs of starts with the same flags.
    AcrossBoots,
    /// From the run's files once the load ended (`report`, xray's `== checks`).
    Run,
    /// While the server serves: only a live server shows it (xray, `probe`).
    Serving,
    /// When the server is stopped (xray's clean-up, `teardown`).
    Cleanup,
    /// Across the replicas of a fleet recorded on one schedule.
    Fleet,
    /// Before a server starts: a rule for the scripts that start servers, which no file
    /// of a run shows.
    BeforeStart,
}

impl Phase {
    /// The stage of a test it belongs to, as the docs and the report head it.
    pub fn stage(self) -> &'static str {
        match self {
            Phase::BeforeStart => "Before a server starts",
            Phase::Boot | Phase::AcrossBoots => "At start-up, from the boot log",
            Phase::Serving => "Before the load",
            Phase::Run => "During and after the load",
            Phase::Fleet => "Across a fleet of replicas",
            Phase::Cleanup => "Stopping the server",
        }
    }
}

/// What part of the run a whole-run check is about: xray prints the server's checks
/// first, then the load tool's account against the server's, then the whole run's; a
/// report leads with the load tool's account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The load tool's account against the server's (T15, T18, T20).
    LoadAccount,
    /// The server's counters and recording (T1, T10, T16, T14, T9, T8, T17).
    Server,
    /// What only the whole run shows (T19, T21).
    WholeRun,
}

/// An input a check reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// The server's boot log.
    BootLog,
    /// The reading before the load.
    Before,
    /// The reading after it.
    After,
    /// A recording of the run.
    Series,
    /// The load tool's result file.
    BenchResult,
    /// The concurrency the load asked for.
    Requested,
    /// NVML readings of the server's GPUs in the recording.
    GpuReadings,
    /// The server's own record of each request.
    ServerRequests,
    /// The KV-cache event stream.
    KvEvents,
    /// Each engine step, as the server's step plugin recorded it.
    Steps,
}

impl Input {
    /// The name `evidence.needs` gives it (see [`crate::run::input`]).
    pub fn key(self) -> &'static str {
        match self {
            Input::BootLog => input::BOOT_LOG,
            Input::Before => input::BEFORE,
            Input::After => input::AFTER,
            Input::Series => input::SERIES,
            Input::BenchResult => input::BENCH_RESULT,
            Input::Requested => input::REQUESTED,
            Input::GpuReadings => input::GPU_READINGS,
            Input::ServerRequests => input::SERVER_REQUESTS,
            Input::KvEvents => input::KV_EVENTS,
            Input::Steps => input::STEPS,
        }
    }

    /// Whether the run has it.
    pub fn given(self, run: &Run) -> bool {
        match self {
            Input::BootLog => !run.boots.is_empty(),
            Input::Before => run.before.is_some(),
            Input::After => run.after.is_some(),
            Input::Series => run.series.is_some(),
            Input::BenchResult => run.bench.is_some(),
            Input::Requested => run.requested.is_some(),
            Input::GpuReadings => run
                .series
                .as_ref()
                .is_some_and(|s| s.gpu_sampling.is_some() || s.gpu.readings > 0),
            Input::ServerRequests => run.server_requests.is_some(),
            Input::KvEvents => run.kv_events.is_some(),
            Input::Steps => run.steps.is_some(),
        }
    }

    /// How a report's list of the tripwires not here names it.
    fn short(self) -> &'static str {
        match self {
            Input::BootLog => "a boot log",
            Input::Before => "a before reading",
            Input::After => "an after reading",
            Input::Series => "a recording",
            Input::BenchResult => "the load tool's result file",
            Input::Requested => "the concurrency asked for",
            Input::GpuReadings => "GPU readings in the recording",
            Input::ServerRequests => "the server's per-request records",
            Input::KvEvents => "the KV event stream",
            Input::Steps => "the engine's steps",
        }
    }

    /// How a "needs …" line names it.
    fn phrase(self) -> &'static str {
        match self {
            Input::BootLog => "the server's boot log",
            Input::Before => "the before reading",
            Input::After => "the after reading",
            Input::Series => "a recording of the run",
            Input::BenchResult => "the load tool's result file",
            Input::Requested => {
                "the concurrency the load asked for (--requested N, or the load tool's result file)"
            }
            Input::GpuReadings => {
                "GPU readings in the recording: record with inferlint watch or xray on the server's machine"
            }
            Input::ServerRequests => {
                "the server's own record of each request: record its spans with inferlint watch or xray --otlp, drain TensorRT-LLM's with --drain, or have SGLang write its files with xray --request-metrics"
            }
            Input::KvEvents => {
                "the server's KV event stream: subscribe with inferlint watch or xray --kv-events, or drain TensorRT-LLM's with --drain"
            }
            Input::Steps => {
                "each engine step: install integrations/vllm into the server's environment and run xray --steps (docs/steps.md)"
            }
        }
    }
}

/// What a check must be given before it can judge.
#[derive(Debug, Clone, Copy)]
pub enum Needs {
    /// Every input of each step, the steps in order: a "not checked" names the missing
    /// inputs of the first step that has any (T15 first needs the result file, then both
    /// readings). A step may say in its own words what its inputs are for.
    All(&'static [Step]),
    /// At least one of several sets of inputs (T16: both readings, or a recording); the
    /// check itself may still find too little in what it was given, and then says this.
    Any(&'static [&'static [Input]], Option<&'static str>),
    /// Nothing a run's files give: said in words, of one tripwire and of several.
    Words(&'static str, &'static str),
}

/// Inputs needed together, and what a "not checked" says of them when some are missing
/// (by default: the missing ones, named).
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// The inputs.
    pub inputs: &'static [Input],
    /// Said instead of naming the missing inputs.
    pub says: Option<&'static str>,
}

const fn step(inputs: &'static [Input]) -> Step {
    Step { inputs, says: None }
}

/// The function that judges a whole-run check on a run that has what it needs. `None`
/// means it found too little in what it was given: the result is then "not checked",
/// saying what the declaration needs. A result may itself be "not checked", naming what
/// the check found missing.
pub type Judge = fn(&Run, RunOptions) -> Option<CheckResult>;

/// What a run of an engine a check does not apply to shows of it.
#[derive(Debug, Clone)]
pub enum Inapplicable {
    /// Nothing: the engine has none of what the check reads (T16 without prefix-cache
    /// counters).
    Nothing,
    /// This result: "does not apply", saying why (T14 on an engine without vLLM's null
    /// block).
    Says(CheckResult),
}

/// Whether a check applies to an engine: `None` where it does.
pub type NotFor = fn(&EngineDescriptor) -> Option<Inapplicable>;

/// One tripwire's check, as everything that lists checks reads it.
#[derive(Debug, Clone, Copy)]
pub struct Declaration {
    /// The tripwire.
    pub tripwire: Tripwire,
    /// When in a test it is judged.
    pub phase: Phase,
    /// For a whole-run check, the part of the run it is about.
    pub part: Option<Part>,
    /// What it must be given.
    pub needs: Needs,
    /// Whether a recording still going can judge it (`watch`, xray while the load runs).
    pub live: bool,
    /// Whether it is also checked before a server starts (T2: a card some process still
    /// holds is found before the next server, as after the last).
    pub before_start: bool,
    /// Whether it still judges a run that was not a benchmark (T18: a load whose
    /// requests all failed is its to judge).
    pub judges_a_failed_load: bool,
    /// The engines it does not apply to, and what a run of theirs shows of it.
    pub not_for: Option<NotFor>,
    /// The function, for a whole-run check.
    pub judge: Option<Judge>,
    /// Why a whole-run check has no sentence of its own under "What limited this run"
    /// (`insights.rs`); `None`: it has one, and a tidy test holds it to that.
    pub no_limit_sentence: Option<&'static str>,
    /// Why a whole-run check gives no advice (`advice.rs`); `None`: it gives some, and a
    /// tidy test holds it to that.
    pub no_advice: Option<&'static str>,
}

impl Declaration {
    const fn new(tripwire: Tripwire, phase: Phase, needs: Needs) -> Declaration {
        Declaration {
            tripwire,
            phase,
            part: None,
            needs,
            live: false,
            before_start: false,
            judges_a_failed_load: false,
            not_for: None,
            judge: None,
            no_limit_sentence: None,
            no_advice: None,
        }
    }

    const fn run(tripwire: Tripwire, part: Part, needs: &'static [Step], judge: Judge) -> Self {
        let mut d = Declaration::new(tripwire, Phase::Run, Needs::All(needs));
        d.part = Some(part);
        d.judge = Some(judge);
        d
    }

    const fn any(mut self, sets: &'static [&'static [Input]], says: Option<&'static str>) -> Self {
        self.needs = Needs::Any(sets, says);
        self
    }

    const fn live(mut self) -> Self {
        self.live = true;
        self
    }

    const fn not_for(mut self, f: NotFor) -> Self {
        self.not_for = Some(f);
        self
    }

    /// What the run lacks for this check, as a "not checked" result; `None` when it has
    /// everything the declaration needs.
    pub fn missing(&self, run: &Run) -> Option<CheckResult> {
        match self.needs {
            Needs::All(steps) => steps.iter().find_map(|s| {
                let missing: Vec<Input> =
                    s.inputs.iter().copied().filter(|i| !i.given(run)).collect();
                if missing.is_empty() {
                    return None;
                }
                let keys: Vec<&str> = missing.iter().map(|i| i.key()).collect();
                let says = match s.says {
                    Some(says) => says.to_owned(),
                    None => named(&missing, run),
                };
                Some(CheckResult::not_checked(
                    self.tripwire,
                    format!("needs {says}"),
                    &keys,
                ))
            }),
            Needs::Any(sets, _) => {
                let enough = sets.iter().any(|set| set.iter().all(|i| i.given(run)));
                (!enough).then(|| self.unchecked())
            }
            Needs::Words(..) => None,
        }
    }

    /// "Not checked", naming every input the declaration needs (a check that found too
    /// little in what it was given).
    fn unchecked(&self) -> CheckResult {
        let keys: Vec<&str> = self.inputs().iter().map(|i| i.key()).collect();
        CheckResult::not_checked(self.tripwire, format!("needs {}", self.said(true)), &keys)
    }

    /// What the declaration needs, every input named, in full or short.
    fn said(&self, full: bool) -> String {
        match self.needs {
            Needs::Words(one, _) => one.trim_start_matches("needs ").to_owned(),
            Needs::Any(_, Some(says)) => says.to_owned(),
            Needs::Any(sets, None) => sets
                .iter()
                .map(|set| named_all(set, full))
                .collect::<Vec<_>>()
                .join(", or "),
            Needs::All(steps) => {
                let all: Vec<Input> = steps.iter().flat_map(|s| s.inputs).copied().collect();
                named_all(&all, full)
            }
        }
    }

    /// Every input the declaration names, in its order.
    pub fn inputs(&self) -> Vec<Input> {
        let mut all: Vec<Input> = Vec::new();
        let mut add = |i: &Input| {
            if !all.contains(i) {
                all.push(*i);
            }
        };
        match self.needs {
            Needs::All(steps) => steps.iter().flat_map(|s| s.inputs).for_each(&mut add),
            Needs::Any(sets, _) => sets.iter().flat_map(|s| s.iter()).for_each(&mut add),
            Needs::Words(..) => {}
        }
        all
    }

    /// When it is judged and from what, for the docs: `during and after the load, also
    /// while the load runs; needs a recording and the concurrency asked for`.
    pub fn when(&self) -> String {
        let mut words = self.phase.stage().to_owned();
        if self.before_start {
            words = format!("{}, and {}", Phase::BeforeStart.stage(), lower(&words));
        }
        if self.live {
            words.push_str(", also while the load runs (`watch`, xray)");
        }
        let (needs, _) = self.needs_words();
        format!("{words}; {needs}")
    }

    /// What a verdict needs, said short of one tripwire and of several (`needs a
    /// recording`, `need a recording`), as a report lists the tripwires not here.
    pub fn needs_words(&self) -> (String, String) {
        if let Needs::Words(one, many) = self.needs {
            return (one.to_owned(), many.to_owned());
        }
        let says = self.said(false);
        (format!("needs {says}"), format!("need {says}"))
    }
}

fn lower(words: &str) -> String {
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The missing inputs named: both readings as one, one reading alone with "too" when the
/// other was given, a recording and its GPU readings as one.
fn named(missing: &[Input], run: &Run) -> String {
    let before = missing.contains(&Input::Before);
    let after = missing.contains(&Input::After);
    let series = missing.contains(&Input::Series);
    let mut words: Vec<String> = Vec::new();
    for i in missing {
        match i {
            Input::Series if missing.contains(&Input::GpuReadings) => words.push(
                "a recording with GPU readings (inferlint watch or xray on the server's machine)"
                    .to_owned(),
            ),
            Input::GpuReadings if series => {}
            Input::Before if after => words.push("the before and after readings".to_owned()),
            Input::After if before => {}
            Input::Before if Input::After.given(run) => {
                words.push("the before reading too".to_owned())
            }
            Input::After if Input::Before.given(run) => {
                words.push("the after reading too".to_owned())
            }
            other => words.push(other.phrase().to_owned()),
        }
    }
    words.join(" and ")
}

/// Every input of a list named, as when none is given: in full, as a "not checked" line
/// says it, or short, as a report's list of the tripwires not here says it.
fn named_all(inputs: &[Input], full: bool) -> String {
    let both = inputs.contains(&Input::Before) && inputs.contains(&Input::After);
    let gpu = inputs.contains(&Input::Series) && inputs.contains(&Input::GpuReadings);
    let mut words: Vec<&str> = Vec::new();
    for i in inputs {
        words.push(match (i, full) {
            (Input::Before, true) if both => "the before and after readings",
            (Input::Before, false) if both => "before and after readings",
            (Input::After, _) if both => continue,
            (Input::Series, true) if gpu => {
                "a recording with GPU readings (inferlint watch or xray on the server's machine)"
            }
            (Input::Series, false) if gpu => "GPU readings in the recording",
            (Input::GpuReadings, _) if gpu => continue,
            (other, true) => other.phrase(),
            (other, false) => other.short(),
        });
    }
    words.join(" and ")
}

use crate::judging::checks::judge;
use Input::{
    After, Before, BenchResult, BootLog, GpuReadings, KvEvents, Requested, Series, ServerRequests,
    Steps,
};

/// Every tripwire's declaration: the boot checks in the order a boot log is checked,
/// then the whole-run checks in report order, then those no run's files judge.
pub const DECLARATIONS: &[Declaration] = &[
    Declaration::new(Tripwire::T12, Phase::Boot, Needs::All(&[step(&[BootLog])])),
    Declaration::new(Tripwire::T5, Phase::Boot, Needs::All(&[step(&[BootLog])])),
    Declaration::new(Tripwire::T6, Phase::Boot, Needs::All(&[step(&[BootLog])])),
    Declaration::new(
        Tripwire::T4,
        Phase::AcrossBoots,
        Needs::Words("needs two or more boot logs", "need two or more boot logs"),
    ),
    Declaration::new(
        Tripwire::T11,
        Phase::AcrossBoots,
        Needs::Words("needs two or more boot logs", "need two or more boot logs"),
    ),
    Declaration::run(
        Tripwire::T15,
        Part::LoadAccount,
        &[step(&[BenchResult]), step(&[Before, After])],
        judge::client_server,
    )
    .no_advice(
        "which count is not the load's decides the cure (another client, a lost request, a probe), and the message says whose count is whose",
    ),
    Declaration::run(
        Tripwire::T18,
        Part::LoadAccount,
        &[step(&[BenchResult])],
        judge::dropped_failures,
    )
    .judges_a_failed_load(),
    Declaration::run(
        Tripwire::T20,
        Part::LoadAccount,
        &[step(&[BenchResult])],
        judge::lengths,
    ),
    Declaration::run(
        Tripwire::T23,
        Part::LoadAccount,
        &[step(&[BenchResult])],
        judge::client_wait,
    ),
    Declaration::run(
        Tripwire::T24,
        Part::LoadAccount,
        &[step(&[BenchResult]), step(&[ServerRequests])],
        judge::ttft_definitions,
    ),
    Declaration::run(
        Tripwire::T25,
        Part::LoadAccount,
        &[step(&[BenchResult]), step(&[ServerRequests])],
        judge::chunks_as_tokens,
    ),
    Declaration::run(
        Tripwire::T1,
        Part::Server,
        &[step(&[Before, After])],
        judge::preemption,
    )
    .live(),
    Declaration::run(
        Tripwire::T10,
        Part::Server,
        &[step(&[Before, After])],
        judge::rate,
    )
    .no_advice(
        "the message gives the figure a sub-second timer gives beside the whole-second one: no setting of the server or the load changes it",
    ),
    Declaration::run(Tripwire::T16, Part::Server, &[], judge::prefix_cache)
        .any(&[&[Before, After], &[Series]], None)
        .not_for(without_prefix_cache)
        .live(),
    Declaration::run(
        Tripwire::T14,
        Part::Server,
        &[
            step(&[Series]),
            Step {
                inputs: &[After],
                says: Some("the after reading, whose cache info holds the block count"),
            },
        ],
        judge::null_block,
    )
    .not_for(without_null_block)
    .live()
    .no_advice(
        "the null block is vLLM's own accounting: nothing to change, and the cache figures are read with it",
    ),
    Declaration::run(
        Tripwire::T9,
        Part::Server,
        &[step(&[Series])],
        judge::falling_ceiling,
    )
    .live()
    .no_limit_sentence(
        "a ceiling that moved says how to report the run's concurrency (its advice); what held the run is T1's or T8's sentence",
    ),
    Declaration::run(
        Tripwire::T8,
        Part::Server,
        &[step(&[Series, Requested])],
        judge::concurrency,
    )
    .live(),
    Declaration::run(
        Tripwire::T17,
        Part::Server,
        &[step(&[Series, Requested])],
        judge::client_shortfall,
    )
    .live(),
    Declaration::run(Tripwire::T19, Part::WholeRun, &[], judge::cold_start).any(
        &[&[BootLog], &[Before], &[BenchResult]],
        Some("the server's boot log, the before reading or the load tool's per-request records"),
    ),
    Declaration::run(
        Tripwire::T21,
        Part::WholeRun,
        &[step(&[Series, GpuReadings])],
        judge::gpu_contention,
    )
    .live()
    .no_advice(
        "the sentence names the other process or the slowdown's reason, which is what to change",
    ),
    Declaration::run(
        Tripwire::T26,
        Part::WholeRun,
        &[step(&[KvEvents])],
        judge::kv_events,
    ),
    Declaration::run(Tripwire::T27, Part::LoadAccount, &[], judge::speculative_decoding)
        .any(&[&[Before, After], &[BootLog]], None),
    // Said of a run whose boot log declares nothing too, where the report lists T28 as
    // not here beside its "does not apply".
    Declaration::run(Tripwire::T28, Part::Server, &[], judge::disaggregation).any(
        &[&[BootLog]],
        Some("a boot log that declares disaggregated serving"),
    )
    .not_for(without_disaggregation),
    Declaration::run(
        Tripwire::T29,
        Part::Server,
        &[step(&[Steps])],
        judge::scheduler_stall,
    )
    .not_for(steps_not_recorded),
    Declaration::run(
        Tripwire::T30,
        Part::Server,
        &[step(&[Steps])],
        judge::prefill_stalls_decode,
    )
    .not_for(steps_not_recorded),
    Declaration::run(
        Tripwire::T31,
        Part::Server,
        &[step(&[Steps])],
        judge::preemption_located,
    )
    .not_for(steps_not_recorded)
    .no_limit_sentence(
        "T1's sentence already says the run preempted; T31 says where, in its own message",
    )
    .no_advice("T1's advice (a larger cache, fewer requests at once) is what to change"),
    Declaration::new(
        Tripwire::T7,
        Phase::Serving,
        Needs::Words("needs a live server", "need a live server"),
    ),
    Declaration::new(
        Tripwire::T2,
        Phase::Cleanup,
        Needs::Words("runs at clean-up", "run at clean-up"),
    )
    .before_start(),
    Declaration::new(
        Tripwire::T3,
        Phase::Cleanup,
        Needs::Words("runs at clean-up", "run at clean-up"),
    ),
    Declaration::new(
        Tripwire::T22,
        Phase::Fleet,
        Needs::Words(
            "needs the recordings of two or more replicas on one schedule",
            "need the recordings of two or more replicas on one schedule",
        ),
    ),
    Declaration::new(
        Tripwire::T13,
        Phase::BeforeStart,
        Needs::Words("a rule for test scripts", "rules for test scripts"),
    ),
];

/// T16 has no counters to read on an engine without a prefix cache's: no result.
pub fn without_prefix_cache(engine: &EngineDescriptor) -> Option<Inapplicable> {
    engine
        .prefix_cache
        .is_none()
        .then_some(Inapplicable::Nothing)
}

/// T28 reads an engine's disaggregated serving: an engine whose table has none shows
/// nothing of it.
pub fn without_disaggregation(engine: &EngineDescriptor) -> Option<Inapplicable> {
    engine
        .disaggregation
        .is_none()
        .then_some(Inapplicable::Nothing)
}

/// The step checks (T29, T30, T31) read a file only vLLM's stat-logger plugin writes
/// (integrations/vllm): no result on another engine.
pub fn steps_not_recorded(engine: &EngineDescriptor) -> Option<Inapplicable> {
    engine
        .step_plugin
        .is_none()
        .then_some(Inapplicable::Nothing)
}

/// T14 is about vLLM's reserved block: it does not apply to an engine without one.
pub fn without_null_block(engine: &EngineDescriptor) -> Option<Inapplicable> {
    engine
        .cache_info
        .is_none()
        .then(|| Inapplicable::Says(series::not_applicable_t14(engine)))
}

impl Declaration {
    const fn before_start(mut self) -> Self {
        self.before_start = true;
        self
    }

    const fn judges_a_failed_load(mut self) -> Self {
        self.judges_a_failed_load = true;
        self
    }

    const fn no_limit_sentence(mut self, why: &'static str) -> Self {
        self.no_limit_sentence = Some(why);
        self
    }

    const fn no_advice(mut self, why: &'static str) -> Self {
        self.no_advice = Some(why);
        self
    }
}

/// The declaration of a tripwire. Every tripwire the catalogue has is declared (a test
/// holds the two tables to each other).
pub fn get(tripwire: Tripwire) -> &'static Declaration {
    DECLARATIONS
        .iter()
        .find(|d| d.tripwire == tripwire)
        .expect("every tripwire is declared")
}

/// When in a test each tripwire applies, in the order a test meets them, each stage's
/// tripwires in number order: what the docs and the report group the catalogue by. T2
/// stands twice, checked before a server starts and after it stops.
pub fn stages() -> Vec<(&'static str, Vec<Tripwire>)> {
    let order = [
        Phase::BeforeStart,
        Phase::Boot,
        Phase::AcrossBoots,
        Phase::Serving,
        Phase::Run,
        Phase::Fleet,
        Phase::Cleanup,
    ];
    let mut stages: Vec<(&'static str, Vec<Tripwire>)> = Vec::new();
    for phase in order {
        let mut tripwires: Vec<Tripwire> = of_phase(phase).map(|d| d.tripwire).collect();
        if phase == Phase::BeforeStart {
            tripwires.extend(
                DECLARATIONS
                    .iter()
                    .filter(|d| d.before_start)
                    .map(|d| d.tripwire),
            );
        }
        match stages.last_mut() {
            Some((stage, ts)) if *stage == phase.stage() => ts.extend(tripwires),
            _ => stages.push((phase.stage(), tripwires)),
        }
    }
    for (_, ts) in &mut stages {
        ts.sort();
    }
    stages
}

/// The declarations of one phase, in their order.
pub fn of_phase(phase: Phase) -> impl Iterator<Item = &'static Declaration> {
    DECLARATIONS.iter().filter(move |d| d.phase == phase)
}

/// The whole-run checks, in report order.
pub fn whole_run() -> impl Iterator<Item = &'static Declaration> {
    of_phase(Phase::Run)
}

/// The tripwires a recording still going can judge, in the order they are shown.
pub fn live() -> impl Iterator<Item = Tripwire> {
    DECLARATIONS.iter().filter(|d| d.live).map(|d| d.tripwire)
}

/// Where a whole-run tripwire stands in report order; `None` for the others.
pub fn report_place(tripwire: Tripwire) -> Option<usize> {
    whole_run().position(|d| d.tripwire == tripwire)
}

/// The results xray prints under `== checks`, in its order: the server's checks, then the
/// load tool's account against the server's, then the whole run's, each part in report
/// order. The boot checks were printed with the boot log; the clean-up's come after.
pub fn xray_order(results: &[CheckResult]) -> Vec<CheckResult> {
    let mut checks = Vec::new();
    for part in [Part::Server, Part::LoadAccount, Part::WholeRun] {
        for d in whole_run().filter(|d| d.part == Some(part)) {
            checks.extend(results.iter().filter(|r| r.tripwire == d.tripwire).cloned());
        }
    }
    checks
}

/// What a report says of a tripwire it has no verdict for and core did not list as not
/// checked: that it does not apply to the engine, else what a verdict needs (of one
/// tripwire and of several).
pub fn absent_reason(tripwire: Tripwire, engine: &EngineDescriptor) -> (String, String) {
    let d = get(tripwire);
    if let Some(Inapplicable::Says(r)) = d.not_for.and_then(|f| f(engine)) {
        if r.status == Status::NotApplicable {
            return (
                format!("does not apply to {}", engine.name),
                format!("do not apply to {}", engine.name),
            );
        }
    }
    d.needs_words()
}

/// The whole-run checks on a run already admitted: each declared check in report order,
/// "not a benchmark" for the load's checks when no load ran, "not checked" naming what a
/// check lacks. Returns the verdicts and the tripwires not checked, each in report order.
pub fn judge_run(run: &Run, options: RunOptions) -> (Vec<CheckResult>, Vec<CheckResult>) {
    let not_a_benchmark = crate::run::model::not_a_benchmark(run);
    let judged = whole_run().filter_map(|d| match &not_a_benchmark {
        Some(reason) if !(d.judges_a_failed_load && Input::BenchResult.given(run)) => {
            match d.not_for.and_then(|f| f(run.engine)) {
                Some(Inapplicable::Nothing) => None,
                Some(Inapplicable::Says(result)) => Some(result),
                None => Some(
                    CheckResult::not_checked(
                        d.tripwire,
                        format!("not a benchmark: {reason}"),
                        &[input::LOAD],
                    )
                    .with("not_a_benchmark", reason.as_str()),
                ),
            }
        }
        _ => d.judge(run, options),
    });
    judged.partition(|r| r.status != Status::NotChecked)
}

impl Declaration {
    /// This check on a run, whether or not a load ran: its result where it does not apply
    /// to the engine (or none), "not checked" naming what the run lacks, else its verdict.
    pub fn judge(&self, run: &Run, options: RunOptions) -> Option<CheckResult> {
        match self.not_for.and_then(|f| f(run.engine)) {
            Some(Inapplicable::Nothing) => return None,
            Some(Inapplicable::Says(result)) => return Some(result),
            None => {}
        }
        if let Some(not_checked) = self.missing(run) {
            return Some(not_checked);
        }
        let judge = self.judge?;
        Some(judge(run, options).unwrap_or_else(|| self.unchecked()))
    }
}

/// "Not checked" results for the boot checks of a run without a boot log.
pub fn boot_missing(run: &Run) -> Vec<CheckResult> {
    of_phase(Phase::Boot)
        .filter_map(|d| d.missing(run))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `source`, its tests left out, names `tripwire` (`Tripwire::T1`, not the
    /// start of `T10`).
    fn names(source: &str, tripwire: Tripwire) -> bool {
        let source = source.split("\n#[cfg(test)]").next().unwrap_or(source);
        let name = format!("Tripwire::{tripwire}");
        source.match_indices(&name).any(|(at, _)| {
            !source[at + name.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit())
        })
    }

    /// A whole-run check is one declaration: what it says under "What limited this run"
    /// (`insights.rs`) and its advice (`advice.rs`) are there, or its declaration says why
    /// it has none. T24 and T26 once had neither sentence nor declaration, and nothing
    /// said so; a reason given for a check those files do speak of is stale, and fails
    /// too.
    #[test]
    fn every_whole_run_check_says_what_limited_and_what_to_change_or_why_not() {
        let insights = include_str!("../../story/insights.rs");
        let advice = include_str!("../../story/advice.rs");
        let mut wrong = Vec::new();
        for d in whole_run() {
            for (file, source, why) in [
                ("insights.rs", insights, d.no_limit_sentence),
                ("advice.rs", advice, d.no_advice),
            ] {
                match why {
                    None if !names(source, d.tripwire) => wrong.push(format!(
                        "{}: {file} says nothing of it, and its declaration gives no reason",
                        d.tripwire
                    )),
                    Some(why) if why.trim().is_empty() || names(source, d.tripwire) => {
                        wrong.push(format!(
                            "{}: {file} speaks of it, but its declaration says: {why}",
                            d.tripwire
                        ))
                    }
                    _ => {}
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_catalogue_and_the_declarations_name_the_same_tripwires_once() {
        for tripwire in Tripwire::all() {
            let count = DECLARATIONS
                .iter()
                .filter(|d| d.tripwire == tripwire)
                .count();
            assert_eq!(count, 1, "{tripwire} is declared {count} times");
        }
        assert_eq!(DECLARATIONS.len(), Tripwire::all().count());
    }

    #[test]
    fn every_whole_run_check_has_a_function_and_a_part() {
        for d in DECLARATIONS {
            let run_phase = d.phase == Phase::Run;
            assert_eq!(d.judge.is_some(), run_phase, "{}", d.tripwire);
            assert_eq!(d.part.is_some(), run_phase, "{}", d.tripwire);
            // A live check is judged from the run's files too, by the same function.
            assert!(!d.live || run_phase, "{}", d.tripwire);
            assert!(
                matches!(d.needs, Needs::Words(..)) != (run_phase || d.phase == Phase::Boot),
                "{}: a check that reads a run's files names them",
                d.tripwire
            );
        }
    }

    #[test]
    fn the_needs_of_several_inputs_name_the_missing_ones() {
        let run = crate::testing::empty_run(&crate::engine::VLLM);
        let t8 = get(Tripwire::T8).missing(&run).unwrap();
        assert_eq!(
            t8.message,
            "needs a recording of the run and the concurrency the load asked for (--requested N, or the load tool's result file)"
        );
        let mut with_before = run.clone();
        with_before.before = Some(crate::testing::plain_snapshot(&[]));
        let t1 = get(Tripwire::T1).missing(&with_before).unwrap();
        assert_eq!(t1.message, "needs the after reading too");
        assert_eq!(t1.evidence["needs"], serde_json::json!(["after"]));
        let t1 = get(Tripwire::T1).missing(&run).unwrap();
        assert_eq!(t1.message, "needs the before and after readings");
        assert_eq!(t1.evidence["needs"], serde_json::json!(["before", "after"]));
        // T15 first needs the result file; the readings only once it has one.
        let t15 = get(Tripwire::T15).missing(&run).unwrap();
        assert_eq!(t15.message, "needs the load tool's result file");
        let (one, many) = get(Tripwire::T16).needs_words();
        assert_eq!(one, "needs before and after readings, or a recording");
        assert_eq!(many, "need before and after readings, or a recording");
        assert_eq!(
            get(Tripwire::T16).unchecked().message,
            "needs the before and after readings, or a recording of the run"
        );
    }

    #[test]
    fn xray_prints_the_servers_checks_first() {
        let results: Vec<CheckResult> = [21, 15, 20, 18, 12, 1, 10, 16, 14, 9, 8, 17, 19]
            .into_iter()
            .filter_map(Tripwire::new)
            .map(|t| CheckResult::new(t, Status::Pass, ""))
            .collect();
        let order: Vec<u8> = xray_order(&results)
            .iter()
            .map(|r| r.tripwire.number())
            .collect();
        // The tutorial's order: the server's counters and recording, then the load
        // tool's account, then what only the whole run shows; T12 was printed at boot.
        assert_eq!(order, [1, 10, 16, 14, 9, 8, 17, 15, 18, 20, 19, 21]);
    }
}
