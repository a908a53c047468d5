//! Integration tests of the `inferlint` command, run as a user runs it.
#![expect(
    clippy::unwrap_used,
    reason = "a test that cannot read its own inputs should stop there"
)]

/// Damaged, empty, foreign and garbage input: a clear error or Can't tell, never a panic.
mod bad_input;
/// Every input and every wait bounded.
mod bounds;
/// What the command line promises: a folder of runs refused, --slo gating, the help and
/// the flags each command honours, one-line usage errors.
mod cli_promises;
/// Help, version, unknown commands, exit codes, broken pipes, engine naming.
mod cli_surface;
/// Running the binary, finding the recordings, comparing results.
mod common;
/// compare, sweep and the --baseline gate.
mod compare;
/// The demo run (fixtures/sim/vllm-hybrid), and the README's block of its output.
mod demo;
/// The engines' drained endpoints and own files through the command line: refusals, and
/// watch --drain beside a recording.
mod drains;
/// One test per case in the established tool's expected verdicts (spec/expected).
mod expected;
/// Fleets: report --prometheus, watch of several servers, report of a fleet folder.
mod fleet;
/// The kinds of case an adversary broke: outputs that replaced what was not asked,
/// refusals that came late or not at all.
mod hostile;
/// Inputs that are not what they claim, and values that would make work unbounded.
mod hostile_input;
/// Servers that answer badly or with hostile text.
mod hostile_server;
/// Which result file is the run's: another run's, model's or server's set aside; one
/// chosen among several by what each holds, or a refusal naming them.
mod identity;
/// The load tools' real runs: T15, T18 and T20, and edits that make T18 and T20 fire.
mod ledger;
/// The library reads every run folder as `report` does: the same verdicts, the same refusals.
mod library;
/// `report --llmd-br`: the run as llm-d's Benchmark Report, held to its schema and read
/// back.
mod llmd_br;
/// Missing, empty and wrong-kind input: not-checked lists, refusals, not a benchmark.
mod missing_input;
/// Minimal edits of real recordings that make each check fire.
mod mutations;
/// One account of each run: a figure said twice in one output has one value.
mod one_account;
/// One figure, one value across the terminal text, --json, the page and the account.
mod one_figure;
/// The report's charts from the checks' pass: the page reading the recording again gives.
mod one_pass;
/// --junit, schema, completions and colour.
mod pipelines;
/// The real vLLM CPU build's recordings (fixtures/real), and xray driving the real engine.
mod real_vllm;
/// --slo: percentiles counting every request, goodput, a sweep's capacity, the goodput
/// gate.
mod slo;
/// report on a run folder with the engine's steps: the step lane on the page and in the trace.
mod steps_report;
/// report --trace: Chrome trace event JSON, to the format and the run's counts.
mod trace;
/// T16, T17, T19 and T21: silent on every real run without their trap, firing on edits
/// of real recordings that give it.
mod traps;
/// The format variants of the recordings in fixtures/variants, each with its verdicts.
mod variants;
/// whatif: the replay of a run's load, proved on the real engine's changed runs.
mod whatif;
/// Writers never replace an input or an earlier result.
mod writers;
/// xray --steps: its refusals, and the server's environment and flag.
mod xray_steps;

/// inferlint demo from an empty folder.
mod demo_command;
/// inferlint gpu-inspect and teardown against real process trees.
mod gpu;
/// Recording a live server.
mod live;
/// A real Prometheus scraping simulated servers: report --prometheus equals watch.
mod prometheus_e2e;
/// report.html: well-formed, self-contained, escaped.
mod report_html;
/// xray end to end against the simulated server.
mod xray;
/// The server's spans and KV events beside the run: xray --otlp --kv-events and watch on
/// the simulated vLLM, and T23 to T26 made on purpose.
mod xray_traces;
/// Each new trap made by the simulated server or load, caught by xray and live by watch.
mod xray_traps;
/// xray and the server's whole process tree: daemons, SIGTERM ignored, kill -9 of xray.
mod xray_tree;
