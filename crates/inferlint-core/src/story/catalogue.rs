//! The catalogue of the tripwires: code, slug, name, what each catches, why it matters,
//! how the engines differ, the command that checks it and what its verdicts mean.
//!
//! This table is the single source of every tripwire's prose: `inferlint explain` renders
//! it with [`render_explain`], the report shows the "why" beside a finding, and
//! `docs/tripwires.md` is generated from it by [`tripwires_markdown`] (`cargo xtask docs`),
//! so the terminal, the report and the docs cannot drift apart.

use serde_json::Value;

use crate::engine::Engine;
use crate::judging::status::{CheckResult, Status, Tripwire};
use crate::story::fmt;

/// One tripwire as a user meets it.
#[derive(Debug)]
pub struct TripwireInfo {
    /// The tripwire.
    pub tripwire: Tripwire,
    /// The name accepted by `explain` besides the code: `silent-preemption`.
    pub slug: &'static str,
    /// The short title: `Silent preemption`.
    pub name: &'static str,
    /// What goes wrong, and what the check looks at.
    pub what: &'static str,
    /// Why it changes the numbers a benchmark reports.
    pub why: &'static str,
    /// How an engine differs for this tripwire; SGLang and TensorRT-LLM only, since the
    /// tripwires were first found on vLLM and `what` describes that engine.
    pub engine_notes: &'static [(Engine, &'static str)],
    /// The command that checks it.
    pub command: &'static str,
    /// What each verdict this tripwire can give means for it (in the order a reader meets
    /// them: fail, warn, can't tell, pass, does not apply). Empty for T3, which has no
    /// verdict of its own.
    pub verdicts: &'static [(Status, &'static str)],
}

/// The tripwires' ids, each beside the number its catalogue entry has, and the ways to
/// build one from a number or a name.
impl Tripwire {
    /// T1: Silent preemption.
    pub const T1: Tripwire = Tripwire::declare(1);
    /// T2: Orphaned engine process.
    pub const T2: Tripwire = Tripwire::declare(2);
    /// T3: Cleanup kills its own shell.
    pub const T3: Tripwire = Tripwire::declare(3);
    /// T4: KV pool size jumps between starts.
    pub const T4: Tripwire = Tripwire::declare(4);
    /// T5: Large KV block size.
    pub const T5: Tripwire = Tripwire::declare(5);
    /// T6: Requested attention backend ignored.
    pub const T6: Tripwire = Tripwire::declare(6);
    /// T7: Crash after ready.
    pub const T7: Tripwire = Tripwire::declare(7);
    /// T8: Concurrency not reached.
    pub const T8: Tripwire = Tripwire::declare(8);
    /// T9: Concurrency ceiling falls as sequences grow.
    pub const T9: Tripwire = Tripwire::declare(9);
    /// T10: Integer-second timing.
    pub const T10: Tripwire = Tripwire::declare(10);
    /// T11: KV memory budget drifts between starts.
    pub const T11: Tripwire = Tripwire::declare(11);
    /// T12: Start-up failure without a cause.
    pub const T12: Tripwire = Tripwire::declare(12);
    /// T13: Stale waiter adopts the next server.
    pub const T13: Tripwire = Tripwire::declare(13);
    /// T14: Reserved null block.
    pub const T14: Tripwire = Tripwire::declare(14);
    /// T15: Client and server counts disagree.
    pub const T15: Tripwire = Tripwire::declare(15);
    /// T16: Prefix cache served the run.
    pub const T16: Tripwire = Tripwire::declare(16);
    /// T17: Client kept fewer in flight than asked.
    pub const T17: Tripwire = Tripwire::declare(17);
    /// T18: Failures left out.
    pub const T18: Tripwire = Tripwire::declare(18);
    /// T19: Cold engine.
    pub const T19: Tripwire = Tripwire::declare(19);
    /// T20: Request lengths as advertised.
    pub const T20: Tripwire = Tripwire::declare(20);
    /// T21: GPU shared or throttled.
    pub const T21: Tripwire = Tripwire::declare(21);
    /// T22: Replicas unevenly loaded.
    pub const T22: Tripwire = Tripwire::declare(22);
    /// T23: The client's own wait left out.
    pub const T23: Tripwire = Tripwire::declare(23);
    /// T24: TTFT that means different things.
    pub const T24: Tripwire = Tripwire::declare(24);
    /// T25: Streamed chunks counted as tokens.
    pub const T25: Tripwire = Tripwire::declare(25);
    /// T26: KV events lost or never sent.
    pub const T26: Tripwire = Tripwire::declare(26);
    /// T27: Speculative decoding measured on the wrong content.
    pub const T27: Tripwire = Tripwire::declare(27);
    /// T28: Disaggregation that never disaggregated.
    pub const T28: Tripwire = Tripwire::declare(28);
    /// T29: the scheduler stalled while requests waited.
    pub const T29: Tripwire = Tripwire::declare(29);
    /// T30: prefills scheduled beside decodes slowed them.
    pub const T30: Tripwire = Tripwire::declare(30);
    /// T31: each preemption located at its engine step.
    pub const T31: Tripwire = Tripwire::declare(31);

    /// Builds an id from its number; `None` when the catalogue has no such tripwire.
    pub fn new(number: u8) -> Option<Tripwire> {
        all()
            .iter()
            .map(|info| info.tripwire)
            .find(|t| t.number() == number)
    }

    /// Parses `T9`, `t9` or `9`.
    pub fn parse(text: &str) -> Option<Tripwire> {
        let text = text.trim();
        let digits = text
            .strip_prefix('T')
            .or_else(|| text.strip_prefix('t'))
            .unwrap_or(text);
        digits.parse::<u8>().ok().and_then(Tripwire::new)
    }

    /// Every tripwire the catalogue has, in number order.
    pub fn all() -> impl Iterator<Item = Tripwire> {
        all().iter().map(|info| info.tripwire)
    }

    /// The ids as a reader names them: runs of consecutive numbers as ranges
    /// (`T1-T26`; `T1-T15, T18, T20` for a catalogue without T16, T17, T19 and T21 to T26).
    pub fn all_named() -> String {
        let numbers: Vec<u8> = Tripwire::all().map(Tripwire::number).collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < numbers.len() {
            let mut j = i;
            while j + 1 < numbers.len() && numbers[j + 1] == numbers[j] + 1 {
                j += 1;
            }
            parts.push(if j > i {
                format!("T{}-T{}", numbers[i], numbers[j])
            } else {
                format!("T{}", numbers[i])
            });
            i = j + 1;
        }
        parts.join(", ")
    }
}

/// Every tripwire, in number order.
pub fn all() -> &'static [TripwireInfo] {
    CATALOGUE
}

/// The entry for one tripwire. Every [`Tripwire`] has one: an id is only ever built from
/// this table or from a constant that a test holds to it.
pub fn get(tripwire: Tripwire) -> &'static TripwireInfo {
    CATALOGUE
        .iter()
        .find(|info| info.tripwire == tripwire)
        .expect("every tripwire id has a catalogue entry")
}

/// Finds an entry by code (`T9`, `t9`, `9`) or slug (`falling-ceiling`, any case).
pub fn find(id_or_slug: &str) -> Option<&'static TripwireInfo> {
    let wanted = id_or_slug.trim();
    if let Some(tripwire) = Tripwire::parse(wanted) {
        return Some(get(tripwire));
    }
    CATALOGUE
        .iter()
        .find(|info| info.slug.eq_ignore_ascii_case(wanted))
}

/// When in a test each tripwire applies, in the order a test meets them: the stages of
/// the check registry ([`crate::judging::checks::registry::stages`]), which the docs and the report
/// group the catalogue by.
pub fn stages() -> Vec<(&'static str, Vec<Tripwire>)> {
    crate::judging::checks::registry::stages()
}

/// The `explain` text for one tripwire: a header line, then the "what" paragraph, the "why"
/// paragraph and the engine notes (only `only_engine`'s when given), each wrapped to
/// `width` columns under a four-space indent, then the command.
///
/// A word longer than the line stays whole, and so does the command: breaking it would
/// make it impossible to paste. When the command does not fit after `Check:` it moves to a
/// line of its own.
pub fn render_explain(info: &TripwireInfo, only_engine: Option<Engine>, width: usize) -> String {
    const INDENT: &str = "    ";
    let mut out = format!("{}  {}  ({})\n", info.tripwire, info.name, info.slug);
    let mut paragraph = |text: &str| {
        for line in wrap(text, INDENT, width) {
            out.push_str(&line);
            out.push('\n');
        }
    };
    paragraph(info.what);
    paragraph(&format!("Why it matters: {}", info.why));
    for (engine, note) in info.engine_notes {
        if only_engine.is_none_or(|wanted| wanted == *engine) {
            paragraph(&format!("On {}: {}", engine.name(), note));
        }
    }
    let check_line = format!("{INDENT}Check: {}", info.command);
    if check_line.chars().count() <= width {
        out.push_str(&check_line);
        out.push('\n');
    } else {
        out.push_str(&format!("{INDENT}Check:\n{INDENT}  {}\n", info.command));
    }
    out
}

/// "Why it matters" for one result, in the run's own numbers. The catalogue's `why` is
/// written for every run, and some of it uses the recorded runs' numbers as examples
/// ("if the server never ran more than 10 of 32"); beside a finding those would read as
/// this run's. So where a finding's evidence holds the numbers they are used, and where it
/// does not the text speaks of no number at all.
pub fn why_in_run(result: &CheckResult) -> String {
    let number = |key: &str| result.evidence.get(key).and_then(Value::as_f64);
    let failed = result.status == Status::Fail;
    match result.tripwire.number() {
        1 => match number("preemptions").filter(|k| failed && *k > 0.0) {
            Some(k) => format!(
                "Each of the {} evictions repeated prefill work and stalled the evicted request, so throughput, time per output token and tail latency were measured on a server that spent part of the run redoing work. Such a run shows the memory pressure of its setup rather than the engine's steady speed, and is not comparable with a run that did not preempt.",
                fmt::thousands_f(k)
            ),
            None => get(result.tripwire).why.to_owned(),
        },
        5 => {
            let block = number("block_size").map_or_else(
                || "block size".to_owned(),
                |b| format!("{}-token block size", fmt::thousands_f(b)),
            );
            format!(
                "KV memory is handed out in whole blocks, so a request holds a multiple of the {block}. Fewer requests fit than the pool size divided by the request length suggests, capacity falls in large steps as answers grow (T9), and a pool quoted in tokens overstates what the load can use."
            )
        }
        8 => match (number("requested"), number("peak_running")) {
            (Some(n), Some(peak)) if failed => {
                let (n, peak) = (fmt::g(n), fmt::g(peak));
                format!(
                    "Results are reported and compared by concurrency. The server never ran more than {peak} of {n}, so this run measured concurrency {peak} behind a queue: time to first token includes the wait in the queue, the speed per request is that of a batch of {peak}, and a curve of throughput against concurrency flattens for a reason that has nothing to do with the engine's batching."
                )
            }
            _ => "Results are reported and compared by concurrency. If the server runs fewer requests at once than the load keeps open, the run measures that lower concurrency behind a queue: time to first token includes the wait in the queue, the speed per request is that of the smaller batch, and a curve of throughput against concurrency flattens for a reason that has nothing to do with the engine's batching.".to_owned(),
        },
        9 => match (number("ceiling_min"), number("ceiling_max")) {
            (Some(lo), Some(hi)) if lo < hi => format!(
                "A single maximum-concurrency figure describes one moment of the run: here between {} and {} requests fit as answers grew, so more ran early and fewer late, and the mix of the two set throughput and latency. Runs with different output lengths are not comparable at the same nominal concurrency.",
                fmt::g(lo),
                fmt::g(hi)
            ),
            _ => get(result.tripwire).why.to_owned(),
        },
        10 => match (
            number("span_s"),
            number("integer_second_span_s"),
            number("integer_second_error"),
        ) {
            (Some(span), Some(whole), Some(error)) => format!(
                "On a short run a truncated second is a large error: this run's {span:.2} s read as {} s would change the rate by {}, and on a 10-second run the error can reach 10%. Differences between versions or settings smaller than that are noise.",
                fmt::g(whole),
                fmt::signed_percent(error, 2)
            ),
            _ => "On a short run a truncated second is a large error: on a 10-second run it can reach 10%. Differences between versions or settings smaller than that are noise.".to_owned(),
        },
        14 => {
            let usable = number("inferred_usable_blocks");
            let reported = number("reported_num_gpu_blocks");
            let example = match (usable, reported) {
                (Some(u), Some(r)) if result.status == Status::Pass => {
                    format!(": here {} usable, not {}", fmt::thousands_f(u), fmt::thousands_f(r))
                }
                _ => String::new(),
            };
            format!(
                "Capacity worked out from the block count in the boot log is one block too high{example}, and with large blocks on a small pool one block is a large share. The check also guards the meaning of the usage gauge that T9 and the report rely on: a different denominator means the gauge changed in this version or the recording came from another start."
            )
        }
        _ => get(result.tripwire).why.to_owned(),
    }
}

/// Greedy word wrap: every line starts with `indent` and stays within `width` characters,
/// except a line holding a single word that is longer than that on its own.
fn wrap(text: &str, indent: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::from(indent);
    let mut line_len = indent.chars().count();
    let mut empty = true;
    for word in text.split_whitespace() {
        let word_len = word.chars().count();
        if !empty && line_len + 1 + word_len > width {
            lines.push(std::mem::replace(&mut line, String::from(indent)));
            line_len = indent.chars().count();
            empty = true;
        }
        if !empty {
            line.push(' ');
            line_len += 1;
        }
        line.push_str(word);
        line_len += word_len;
        empty = false;
    }
    if !empty {
        lines.push(line);
    }
    lines
}

/// The user guide `docs/tripwires.md`, generated from the catalogue so that it never says
/// something the terminal does not. `cargo xtask docs` writes it; a test compares.
pub fn tripwires_markdown() -> String {
    let mut md = String::new();
    md.push_str("<!-- generated by `cargo xtask docs`, do not edit -->\n");
    md.push_str(&format!("# The {} tripwires\n\n", all().len()));
    md.push_str(
        "Each tripwire is a way an inference benchmark can produce numbers that do not mean \
         what they seem to, although the server answered every request. For each one this \
         page says what goes wrong, why it changes the numbers, how SGLang and \
         TensorRT-LLM differ from vLLM, the command that checks it and what each verdict \
         means. `inferlint explain T9` (or `inferlint explain falling-ceiling`) prints the \
         same text in the terminal; `--engine` keeps only one engine's notes.\n\n",
    );

    md.push_str("## Verdicts\n\n");
    md.push_str("| Verdict | Terminal | Meaning |\n|---|---|---|\n");
    for (status, meaning) in [
        (
            Status::Fail,
            "The tripwire caught its problem in this run. For T7 and T12 the server itself \
             failed; for the others the server worked, but a number from the run does not \
             mean what it seems.",
        ),
        (
            Status::Warn,
            "Nothing is wrong on its own, but a setting or an effect changes how the numbers \
             should be read. `--strict` turns it into a failure.",
        ),
        (
            Status::Unknown,
            "A counter, log line or file the check needs was missing. Never a pass.",
        ),
        (
            Status::Pass,
            "The check looked for its problem in this run and did not find it.",
        ),
        (
            Status::NotApplicable,
            "The tripwire is about a behaviour this engine does not have. Does not change \
             the exit status.",
        ),
        (
            Status::NotChecked,
            "No verdict: the tripwire applies to the run, but a file or number it needs was \
             not given, and the line says which. Never a pass; does not change the exit \
             status on its own.",
        ),
    ] {
        md.push_str(&format!(
            "| {} | `{}` | {} |\n",
            status.human(),
            status.terminal_label(),
            meaning
        ));
    }
    md.push('\n');

    md.push_str("## When each applies\n\n");
    md.push_str("| When | Tripwires |\n|---|---|\n");
    for (stage, tripwires) in stages() {
        let links: Vec<String> = tripwires
            .iter()
            .map(|t| format!("[{t}](#{})", anchor(get(*t))))
            .collect();
        md.push_str(&format!("| {stage} | {} |\n", links.join(", ")));
    }
    md.push('\n');

    md.push_str("| Code | Name | Explain by name |\n|---|---|---|\n");
    for info in all() {
        md.push_str(&format!(
            "| [{}](#{}) | {} | `{}` |\n",
            info.tripwire,
            anchor(info),
            info.name,
            info.slug
        ));
    }

    for info in all() {
        md.push('\n');
        md.push_str(&format!(
            "## {} {} (`{}`)\n\n",
            info.tripwire, info.name, info.slug
        ));
        md.push_str(&format!("**What goes wrong.** {}\n\n", info.what));
        md.push_str(&format!("**Why it changes the numbers.** {}\n\n", info.why));
        for (engine, note) in info.engine_notes {
            md.push_str(&format!("**On {}:** {}\n\n", engine.name(), note));
        }
        md.push_str(&format!(
            "**When:** {}.\n\n",
            crate::judging::checks::registry::get(info.tripwire).when()
        ));
        md.push_str(&format!("**Check:** `{}`\n", info.command));
        if info.verdicts.is_empty() {
            md.push_str(
                "\nIt has no verdict line of its own: `teardown` prints how a plain `pkill -f` \
                 would have differed, and reports the state of the card as T2.\n",
            );
        } else {
            md.push_str("\n**What the verdicts mean:**\n\n");
            for (status, meaning) in info.verdicts {
                md.push_str(&format!("- **{}:** {}\n", status.human(), meaning));
            }
        }
    }
    md
}

/// The heading anchor GitHub gives `## T1 Silent preemption (`silent-preemption`)`:
/// lower case, punctuation other than `-` dropped, spaces to hyphens.
fn anchor(info: &TripwireInfo) -> String {
    format!("{} {} {}", info.tripwire, info.name, info.slug)
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

static CATALOGUE: &[TripwireInfo] = &[
    TripwireInfo {
        tripwire: Tripwire::T1,
        slug: "silent-preemption",
        name: "Silent preemption",
        what: "When the KV cache runs out during a run, the scheduler evicts running requests: \
               it frees their KV blocks, puts them back in the queue and later recomputes \
               their prompt and every token they had generated. vLLM writes no log line \
               for this at its default level; the only trace is the counter \
               `vllm:num_preemptions_total`. T1 compares the engine's preemption counter \
               in the snapshots taken before and after the run and fails when it moved. A \
               server restart between the two snapshots also fails, because the counters \
               then cannot be compared. Where the engine also keeps a histogram of each \
               finished request's preemptions (vLLM 0.32's `vllm:request_num_preemptions`), \
               the failure says how they fell on the requests that finished: a few requests \
               preempted over and over, or many once.",
        why: "Every preemption repeats prefill work and stalls the evicted request, so \
              throughput, time per output token and tail latency were measured on a server \
              that spent part of the run redoing work. Such a run shows the memory pressure \
              of its setup rather than the engine's steady speed, and is not comparable with \
              a run that did not preempt.",
        engine_notes: &[
            (
                Engine::Sglang,
                "Called a retraction. When its KV pool is full, SGLang retracts running \
                 requests, logs a warning (`KV cache pool is full. Retract \
                 requests.`) and counts them in `sglang:num_retracted_requests_total`. That \
                 counter is written only after the first retraction, and releases from \
                 mid-2025 served the gauge `sglang:num_retracted_reqs` before the counter \
                 existed: a snapshot without the counter reads as zero only when the gauge \
                 is there and the server log, covering the run's answers, shows no \
                 retraction; otherwise T1 says Can't tell.",
            ),
            (
                Engine::Trtllm,
                "Called a pause, and never counted: TensorRT-LLM pauses requests for \
                 recompute and logs each pause at INFO level (`request ID N -> pause`), \
                 so T1 counts them from the server log saved until after the run: pass it \
                 with `--boot-log boot.log`. The executor and the HTTP server write that \
                 log through their own buffers, so a pause line's place among the access \
                 lines says nothing: a pause is left out of the run only when the cache \
                 arithmetic, its request id or its time stamp proves it outside; otherwise \
                 it counts or T1 says Can't tell. \
                 Without that log T1 falls back to the gauge `trtllm_num_paused_requests` \
                 in the recording, which can show that pauses happened but not how many.",
            ),
        ],
        command: "inferlint preemption before.json after.json",
        verdicts: &[
            (
                Status::Fail,
                "the preemption counter rose during the run (or, on TensorRT-LLM, the log or \
                 the paused gauge shows pauses), or the server restarted between the \
                 snapshots.",
            ),
            (
                Status::Unknown,
                "the counter is missing from a snapshot, or on TensorRT-LLM there is neither \
                 a server log covering the run nor a recording that rules pauses out, or \
                 the log shows pauses that cannot be placed inside or outside the run, or \
                 two facts of the run contradict each other (a cache too small for the \
                 load and no pause found, a log of another start of the server).",
            ),
            (
                Status::Pass,
                "the counter did not move, or the TensorRT-LLM log shows no pause across the \
                 requests it served.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T2,
        slug: "orphaned-engine",
        name: "Orphaned engine process",
        what: "Stopping a server through its front end (`kill -9` on the API server, `pkill \
               -f \"vllm serve\"`, a job runner that signals only the main process) can \
               leave its engine process alive. \
               vLLM's engine core renames itself `VLLM::EngineCore`, so it no longer matches \
               the command that started it, and it keeps its GPU memory. T2 looks in /proc \
               for server processes of all three engines and reads the GPU's memory use; \
               the card counts as clear only after two readings in a row with no server \
               process and at most 800 MiB used.",
        why: "The next server started on that card gets only the memory the orphan left \
              free: its KV pool is smaller, or it fails to start, and every number from that \
              run reflects a smaller cache than the setup would have on a clean card. Two \
              servers on one GPU also share its compute.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's scheduler and detokenizer processes rename themselves \
                 (`sglang::scheduler`, `sglang::detokenizer`), so a pattern on `sglang \
                 serve` or `sglang.launch_server` misses them. teardown recognises the \
                 `sglang::` prefix.",
            ),
            (
                Engine::Trtllm,
                "trtllm-serve starts MPI workers (`prte`, `python -m \
                 mpi4py.futures.server`) that hold GPU memory but whose command lines name \
                 no server. teardown stops every descendant of a server process, and \
                 recognises the server when it was started as `python -m \
                 tensorrt_llm.commands.serve` too.",
            ),
        ],
        command: "inferlint teardown  |  inferlint gpu-inspect",
        verdicts: &[
            (
                Status::Fail,
                "the card was not clear before the timeout: a server process was still alive \
                 or more than the allowed memory was in use. xray then starts no server.",
            ),
            (
                Status::Unknown,
                "the machine has no /proc (Windows, macOS), so server processes cannot be \
                 found; run it where the server runs.",
            ),
            (
                Status::Pass,
                "two consecutive readings showed no server process and the memory in use \
                 within the limit.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T3,
        slug: "cleanup-self-kill",
        name: "Cleanup kills its own shell",
        what: "A clean-up step such as `pkill -f \"vllm serve\"` matches every process whose \
               command line contains that text: the script or `bash -c` shell running the \
               step, a `tail -f` on a log named after the server, an editor. The script \
               kills itself or its parent, and the steps after it (the last readings, the \
               report, the next configuration of a sweep) never run, often without an \
               error. The same pattern misses the renamed engine processes of T2. \
               `inferlint teardown` matches servers by their program and arguments or by \
               the engines' renamed process names, never by a substring, never signals \
               itself or any of its ancestors, and prints how a plain `pkill -f` would have \
               differed.",
        why: "A sweep that dies halfway leaves results missing or partial, and usually \
              leaves a server running that spoils the next run (T2). When the kill is silent, \
              nobody notices that the results come from fewer runs than intended.",
        engine_notes: &[],
        command: "inferlint teardown",
        verdicts: &[],
    },
    TripwireInfo {
        tripwire: Tripwire::T4,
        slug: "pool-size-jump",
        name: "KV pool size jumps between starts",
        what: "Starting the same model with the same flags twice does not promise the same \
               KV cache. The pool is what is left after the weights, the CUDA graphs and a \
               profiled activation peak, and those measurements move with other processes \
               on the card, compile caches and memory fragmentation. T4 groups boot logs \
               that reached ready with identical settings, compares the KV pool size in \
               tokens each one printed, and warns on any difference.",
        why: "The pool size decides how many requests fit at once and when preemption \
              starts, so two runs of one configuration with different pools are not repeats \
              of one experiment. Averaging them mixes two capacities, and a gain or \
              regression between versions can be nothing but a pool difference.",
        engine_notes: &[
            (
                Engine::Sglang,
                "The settings compared are SGLang's `server_args` without `random_seed`, \
                 which SGLang draws anew at each start unless it is set. The pool is the \
                 token count of its `KV Cache is allocated` line.",
            ),
            (
                Engine::Trtllm,
                "The settings compared are the `LLM Args` line. TensorRT-LLM prints an \
                 `Allocated ... paged KV cache` line twice, once for a dry run and once for \
                 the real pool; the last one counts.",
            ),
        ],
        command: "inferlint check-log boot1.log boot2.log",
        verdicts: &[
            (
                Status::Warn,
                "starts with the same settings got different pools; compare results only \
                 within one pool.",
            ),
            (Status::Unknown, "a log in the group has no KV pool line."),
            (
                Status::Pass,
                "every start with the same settings got the same pool. Logs whose settings \
                 match no other log are not compared and give no verdict.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T5,
        slug: "large-kv-blocks",
        name: "Large KV block size",
        what: "For hybrid models that mix attention layers with Mamba-style state layers, \
               vLLM makes one attention block large enough to share a page with a layer's \
               state and raises the block size from the usual 16 tokens to hundreds (784 \
               for the 27B model of the recorded runs), printing `Setting attention block \
               size to N tokens`. T5 reads the boot log and warns when the block size is \
               larger than the one asked for (16 unless `--block-size` was given).",
        why: "KV memory is handed out in whole blocks, so a request holds a multiple of the \
              block size: with 784-token blocks a 900-token request occupies 1,568 tokens. \
              Fewer requests fit than the pool size divided by the request length suggests, \
              capacity falls in large steps as answers grow (T9), and a pool quoted in \
              tokens overstates what the load can use.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang allocates KV in pages of `--page-size` tokens (1 by default) and \
                 keeps a hybrid model's Mamba state in a separate pool, whose size can \
                 lower the running limit instead (T8). T5 reports the page size as set; the \
                 enlarged blocks are vLLM's.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM pages its KV cache in blocks of `tokens_per_block` tokens, \
                 printed as `tokens per block=N` (32 in the recorded runs). T5 reports that \
                 page size as set; the enlarged blocks are vLLM's.",
            ),
        ],
        command: "inferlint check-log boot.log",
        verdicts: &[
            (
                Status::Warn,
                "the engine forced a larger block than asked for; each request's KV is \
                 allocated in units of that size.",
            ),
            (
                Status::Unknown,
                "the start-up ended before the engine sized its blocks.",
            ),
            (
                Status::Pass,
                "the block or page size is the one asked for, or no override was printed.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T6,
        slug: "backend-ignored",
        name: "Requested attention backend ignored",
        what: "An attention backend asked for with `--attention-backend` is a request, not a \
               promise. When it does not support the model, the data type or speculative \
               decoding, the engine can pick another one and mention it only in passing, \
               and a draft model for speculative decoding can choose its own backend \
               whatever the main model uses. T6 compares the backend requested with those \
               the boot log says were selected for the main model and for any draft model, \
               and fails on a mismatch.",
        why: "Attention kernels differ in speed, memory use and features (CUDA graph \
              support, FP8 KV cache), so a run labelled with one backend that ran on another \
              measures something else, and a comparison between backends may compare one \
              fallback with itself.",
        engine_notes: &[(
            Engine::Trtllm,
            "The backend is set with `attn_backend` in the `--config` YAML. The `LLM Args` \
             line shows the backend in use but prints a default exactly like a request, so \
             the log cannot show a request being ignored.",
        )],
        command: "inferlint check-log boot.log",
        verdicts: &[
            (
                Status::Fail,
                "the main model, or the draft model, used another backend than the one \
                 requested.",
            ),
            (
                Status::Unknown,
                "the log has no arguments line, or no line saying which backend was selected.",
            ),
            (
                Status::Pass,
                "the requested backend was used, or none was requested, so none could be \
                 ignored.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T7,
        slug: "crash-after-ready",
        name: "Crash after ready",
        what: "`Application startup complete` and a healthy `/health` mean the server \
               loaded, not that it can serve. Some settings fail only at the first real \
               request or the first batch of several: a kernel compiled just in time meets \
               a mismatched toolchain, a CUDA graph is captured for a new shape, memory \
               runs short. T7 fails when the boot log records a failure after the ready \
               line that the server did not recover from, and `probe` fails when one \
               request, or 8 sent at once, get no answer, or the server is gone afterwards.",
        why: "A benchmark against such a server measures errors: failed requests return at \
              once, so throughput and latency can even look better, or the load tool waits \
              until its timeouts. A readiness check alone lets it through.",
        engine_notes: &[(
            Engine::Sglang,
            "SGLang's `/health` answers 503 for a while after its ready line, until it can \
             serve; a readiness wait needs both the log line and a 200.",
        )],
        command: "inferlint probe URL",
        verdicts: &[
            (
                Status::Fail,
                "the server failed after it said it was ready: the log shows the error \
                 (its kind and line), or a probe request failed, or the server died.",
            ),
            (
                Status::Pass,
                "the probe's single request and its burst were all answered and the server \
                 was still alive afterwards.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T8,
        slug: "concurrency-not-reached",
        name: "Concurrency not reached",
        what: "A load tool's `--max-concurrency 32` keeps 32 requests open on the client; \
               it does not make the server run 32. The server admits as many as its KV \
               cache, its running limit (`--max-num-seqs`, `--max-running-requests`) and \
               its token budget allow, and queues the rest. T8 takes the peak of the \
               engine's running-requests gauge over the recording and fails when it stays \
               below the concurrency asked for; with the boot log it names the limit that \
               applied.",
        why: "Results are reported and compared by concurrency. If the server never ran \
              more than 10 of 32, the run measured concurrency 10 behind a long queue: time \
              to first token includes the wait in the queue, the speed per request is that \
              of a batch of 10, and a curve of throughput against concurrency flattens for a \
              reason that has nothing to do with the engine's batching.",
        engine_notes: &[
            (
                Engine::Vllm,
                "vLLM splits its waiting gauge by reason \
                 (`vllm:num_requests_waiting_by_reason`, seen on 0.28 to 0.32 and not on \
                 0.16: docs/engine-versions.md): `capacity`, a request waiting for \
                 room in the batch or the KV cache, and `deferred`, one held by a KV \
                 transfer, a structured-output grammar still compiling or another \
                 transient block. Where the recording has the split, a \
                 failure says which held the waiting (the most of each at once, and the \
                 deferred share); its advice then points at the running limit and the cache \
                 for capacity, and away from them for deferred requests, which neither \
                 starts.",
            ),
            (
                Engine::Sglang,
                "SGLang can lower its running limit below `--max-running-requests` for \
                 hybrid models, because its Mamba state cache has room for fewer \
                 requests, and says so once in its log (`max_running_requests is capped \
                 to N by the mamba state cache`) while `/get_server_info` still reports \
                 the value asked for. \
                 Given the boot log, T8 names that limit as the cause.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM updates `trtllm_num_requests_running` only when a request \
                 completes, so a recording can miss the peak: a shortfall is Can't tell, \
                 never a failure. The running, waiting and KV gauges exist only with \
                 `enable_iter_perf_stats: true` in the `--config` YAML.",
            ),
        ],
        command: "inferlint series run.series.jsonl --snapshot after.json --requested N",
        verdicts: &[
            (
                Status::Fail,
                "the server never ran as many requests at once as the load asked for.",
            ),
            (
                Status::Unknown,
                "the recording has no running-requests gauge, or on TensorRT-LLM the \
                 recorded peak is below the request and the lagging gauge may have missed \
                 more, or the recording saw too little of the load to say what the server \
                 never ran (fewer than 4 samples inside the load's span, or less than half \
                 of it covered; the message names the coverage).",
            ),
            (
                Status::Pass,
                "the server reached the concurrency asked for at least once.",
            ),
            (
                Status::NotApplicable,
                "the load tool paced the load by a request rate, so its concurrency \
                 figure was a cap rather than a number to reach, and no request waited at \
                 the server (where some did, the shortfall is judged as above).",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T9,
        slug: "falling-ceiling",
        name: "Concurrency ceiling falls as sequences grow",
        what: "How many requests fit at once is not a constant: a running request's KV \
               grows with every token it generates, so a cache that holds 10 requests at \
               their prompts holds fewer as the answers lengthen, and the engine then \
               preempts or stops admitting. From each recorded sample T9 works out how much \
               of the cache one request holds (usage divided by requests running) and the \
               ceiling that implies. It judges only the samples where the cache was full \
               (at least 90% used), since below that the quotient is room left, not a \
               ceiling: it passes when the ceiling is the same on every full sample and \
               warns when it moved. A move is whole requests: when the server ran the same \
               number on every full sample, quotients that differ by the cache's unused \
               sliver are no move, and the ceiling is read at the fullest sample. A cache that never filled held no request back, and \
               passes without a ceiling; a single full sample is too few to tell.",
        why: "A single maximum-concurrency figure, from the engine's start-up line or from a \
              sweep, then describes one moment of the run: more requests run early and fewer \
              late, and the mix of the two sets throughput and latency. Runs with different \
              output lengths are not comparable at the same nominal concurrency.",
        engine_notes: &[
            (
                Engine::Sglang,
                "`sglang:token_usage` is the use of the fullest memory pool, which for a \
                 hybrid model may be its request-state slots rather than the KV cache, \
                 rounded to two decimals. The share per request is therefore coarse, and \
                 the ceiling may be set by state slots rather than by KV memory.",
            ),
            (
                Engine::Trtllm,
                "`trtllm_kv_cache_utilization` moves only when a request completes, so T9 \
                 can rest on very few readings (one to three in the recorded runs); the \
                 message says how many.",
            ),
        ],
        command: "inferlint series run.series.jsonl --snapshot after.json --requested N",
        verdicts: &[
            (
                Status::Warn,
                "the ceiling moved during the run; concurrency was not a constant of it.",
            ),
            (
                Status::Unknown,
                "no recorded sample had requests running and KV cache in use, or fewer than \
                 two had the cache full (the message says how many).",
            ),
            (
                Status::Pass,
                "one request held the same share of the cache on every full sample, so the \
                 ceiling stayed put; or the cache was never full, so no ceiling held the run \
                 back.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T10,
        slug: "integer-second-timer",
        name: "Integer-second timing",
        what: "Harnesses that time a run with whole-second timestamps (`date +%s`, \
               `int(time.time())`) can be off by up to a second either way, and a wall clock \
               can also step during a run. T10 measures the output-token rate between the \
               two snapshots on a monotonic clock, read on both sides of each scrape, and \
               shows what an integer-second timer would have reported for the same tokens. \
               It is a measurement: it passes whenever the counter and the clocks can be \
               read.",
        why: "On a short run a truncated second is a large error: 93.72 s read as 93 s \
              raises the rate by 0.77%, and on a 10-second run the error can reach 10%. \
              Differences between versions or settings smaller than that are noise.",
        engine_notes: &[
            (
                Engine::Sglang,
                "The generation-token counter grows only when a request finishes, so the \
                 rate is exact only when no request is in flight at either snapshot.",
            ),
            (
                Engine::Trtllm,
                "The generation-token counter grows only when a request finishes, so the \
                 rate is exact only when no request is in flight at either snapshot.",
            ),
        ],
        command: "inferlint rate before.json after.json",
        verdicts: &[
            (
                Status::Unknown,
                "the counter is missing, the server restarted, the snapshots carry no clock \
                 (bare Prometheus text), the clocks disagree with nothing to show one boot, \
                 or the scrapes took as long as the span between them.",
            ),
            (
                Status::Pass,
                "the rate was measured; the terminal line adds what an integer-second timer \
                 would have said.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T11,
        slug: "kv-memory-drift",
        name: "KV memory budget drifts between starts",
        what: "The engine sizes its KV cache from what remains of its memory budget after \
               the weights, non-torch memory and a profiled activation peak. With identical \
               flags these still vary between starts: compile caches, memory held by other \
               processes, CUDA graph capture. T11 compares the GiB each start set aside for \
               the KV cache across boot logs with identical settings, warns on any \
               difference, and names what moved with it: weights and non-torch memory, the \
               activation peak, or whether the model was compiled from scratch.",
        why: "It explains a pool difference (T4) before it turns into a performance \
              difference: the memory reserved, not the scheduler, decided the capacity. The \
              cause tells whether to set the KV size explicitly or to warm the compile cache \
              before measuring.",
        engine_notes: &[
            (
                Engine::Sglang,
                "The figure is the K plus V size of SGLang's `KV Cache is allocated` line.",
            ),
            (
                Engine::Trtllm,
                "The figure is the GiB of the last `Allocated ... GiB for max tokens in paged \
                 KV cache` line; the first one belongs to a dry run.",
            ),
        ],
        command: "inferlint check-log boot1.log boot2.log",
        verdicts: &[
            (
                Status::Warn,
                "starts with the same settings set aside different amounts of memory for \
                 the KV cache.",
            ),
            (
                Status::Unknown,
                "a log in the group does not say how much memory went to the KV cache.",
            ),
            (
                Status::Pass,
                "every start with the same settings set aside the same amount.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T12,
        slug: "unexplained-failure",
        name: "Start-up failure without a cause",
        what: "A server that fails to start often ends its log with a generic line (an \
               `EngineDeadError`, a failed engine start, a non-zero exit) far below the real \
               cause: running out of GPU memory, a KV cache too small for the maximum model \
               length, a just-in-time compile toolchain that does not match (CUDA headers, \
               ptxas, a missing libcudart), a CUDA error or an assertion. T12 classifies the \
               failure in the boot log by the most specific cause it finds and reports its \
               kind, the phase and the line.",
        why: "A sweep that records only \"failed to start\" gets retried or dropped blindly. \
              Configurations that failed for a fixable reason of the environment (a \
              toolchain, memory held by an orphan from T2) look like configurations the \
              engine cannot run, and the results that remain are a biased sample.",
        engine_notes: &[],
        command: "inferlint check-log boot.log",
        verdicts: &[
            (
                Status::Fail,
                "the server failed before it was ready; the message gives the kind of \
                 failure and the log line.",
            ),
            (
                Status::Unknown,
                "the log has lines inferlint recognised but could not read, so a fact may \
                 be missing; the evidence lists them.",
            ),
            (Status::Pass, "the log shows no failure."),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T13,
        slug: "stale-waiter",
        name: "Stale waiter adopts the next server",
        what: "A script that waits for a server by polling its URL cannot tell which server \
               answered. If an earlier server still listens on the port, the wait succeeds \
               at once and the load runs against the old server, with its model and \
               settings, while the new one fails to bind or is still loading; a waiter left \
               from an aborted run can likewise see the next run's server come up and send \
               its load there. `inferlint xray` checks both ends: before it starts a server \
               it fails if anything already answers at the URL, and once the server is \
               ready the listening socket must belong to a process in the started server's \
               process tree.",
        why: "Every number then belongs to another server than the one the configuration \
              describes, and nothing in the results says so: the load tool sees healthy \
              answers. Two loads on one server also take throughput from each other.",
        engine_notes: &[],
        command: "inferlint xray -o run/ --serve \"…\" -- LOAD",
        verdicts: &[
            (
                Status::Fail,
                "something already answered at the URL before the server was started, or \
                 the port is held by a process outside the started server's process tree.",
            ),
            (
                Status::Unknown,
                "the process holding the listening socket could not be found.",
            ),
            (
                Status::Pass,
                "the URL was free before the start, and the socket belongs to the server \
                 xray started.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T14,
        slug: "null-block",
        name: "Reserved null block",
        what: "vLLM keeps one KV block as a null block, a placeholder standing in for \
               blocks a request no longer needs (those outside a sliding window, for \
               example), and never gives it to a request. The usable pool is \
               `num_gpu_blocks` minus one, and the gauge `vllm:kv_cache_usage_perc` is a \
               fraction of that. T14 infers the gauge's denominator from the distinct usage \
               readings in the recording, each a whole number of blocks over the same \
               count, and compares it with `num_gpu_blocks` from `vllm:cache_config_info` \
               in the after snapshot; it passes when they differ by exactly the one null \
               block.",
        why: "Capacity worked out from the block count in the boot log is one block too \
              high, and with 784-token blocks on a small pool one block is a large share (42 \
              usable, not 43). The check also guards the meaning of the usage gauge that T9 \
              and the report rely on: a different denominator means the gauge changed in \
              this version or the recording came from another start.",
        engine_notes: &[
            (
                Engine::Sglang,
                "Does not apply: SGLang exports no block count to compare with, and its \
                 usage gauge, rounded to two decimals, is too coarse to infer one.",
            ),
            (
                Engine::Trtllm,
                "Does not apply: TensorRT-LLM exports no block count to compare with, and \
                 its KV gauge moves only when a request completes.",
            ),
        ],
        command: "inferlint series run.series.jsonl --snapshot after.json --requested N",
        verdicts: &[
            (
                Status::Fail,
                "the gauge's denominator is not `num_gpu_blocks - 1`: the gauge means \
                 something else in this version, or the recording and the snapshot come from \
                 different starts.",
            ),
            (
                Status::Unknown,
                "`vllm:cache_config_info` has no block count, or the recording has too few \
                 distinct readings (fewer than 5) to infer the denominator safely.",
            ),
            (
                Status::Pass,
                "the denominator is `num_gpu_blocks - 1`; the usable block count feeds T9.",
            ),
            (Status::NotApplicable, "SGLang and TensorRT-LLM."),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T15,
        slug: "client-server-mismatch",
        name: "Client and server counts disagree",
        what: "The load tool and the server count the same run independently: the tool its \
               completed requests and output tokens, the server its finished requests and \
               generated tokens. T15 compares the load tool's result file with the change \
               in the server's counters between the snapshots, allowing for the untimed test \
               and warm-up requests the tool announces in its output (save it as load.log \
               beside the result file). Without that output, one request more is taken as \
               the tool's own test request where the tool sends one by default and the \
               request has the size of one of the load's (`vllm bench serve` sends its \
               first prompt once before the timed ones). More requests on the \
               server mean other traffic shared it; fewer mean the tool counted requests the \
               server did not finish. Equal requests with different token counts warn. \
               Other traffic is named here once: T15 says how many requests and of what \
               lengths (from the server's records of the requests no row of the load \
               joined, else its counters less the tool's own counts); T20 then compares the \
               load's own lengths, the server's counts left out, and T1, T10, T16 and T18 \
               say that their figures include the other traffic.",
        why: "If another client (a second benchmark, a stale waiter from T13) used the \
              server during the run, the tool's latencies and the server's counters both \
              describe a mixed load. If the token counts differ, the tool's tokens per second \
              rest on its own count, not on what the server generated.",
        engine_notes: &[
            (
                Engine::Sglang,
                "Token and request counters move only when a request finishes, so take the \
                 after snapshot once the load tool has ended. SGLang's client announces its \
                 warm-up requests, which are allowed for.",
            ),
            (
                Engine::Trtllm,
                "Token and request counters move only when a request finishes, so take the \
                 after snapshot once the load tool has ended.",
            ),
        ],
        command: "inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "the server finished more requests than the load tool sent (other traffic), \
                 or fewer than it counted.",
            ),
            (
                Status::Warn,
                "the requests agree but the output-token counts do not.",
            ),
            (
                Status::Unknown,
                "a server counter is missing from a snapshot, the server restarted, the \
                 result file has no completed or output-token count, or the server finished \
                 one request more that the tool's test request may be but whose size does \
                 not say so, with no load.log to tell.",
            ),
            (
                Status::Pass,
                "both sides counted the same requests and output tokens.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T16,
        slug: "prefix-cache-hits",
        name: "Prefix cache served the run",
        what: "Every engine keeps the KV blocks of earlier prompts and reuses them for a \
               prompt that starts the same way. A benchmark meant to measure fresh prompts \
               can hit that cache: the same seed run twice against one server, a warm-up that \
               sends the run's own prompts, a dataset whose prompts share a long system \
               prompt. Repeating a random benchmark against a server with prefix caching on \
               has inflated throughput by up to 86%. vLLM counts the prompt tokens new \
               requests looked up in its prefix cache (`vllm:prefix_cache_queries_total`) and \
               those the cache served (`vllm:prefix_cache_hits_total`). T16 takes the share \
               the cache served over the run, from the counters between the snapshots (or \
               the recording), and warns above 10% unless told the run is meant to reuse \
               prefixes (`--expect-cache-hits`). vLLM 0.32 also says which tier served each \
               cached token (`vllm:prompt_tokens_cached_by_source_total`: device, host, \
               disk, p2p, external_unspecified) and how many were prefilled \
               (`vllm:prompt_tokens_by_source_total{source=\"local_compute\"}`): T16 gives \
               that split, and warns when the server was started with an offload tier \
               (`--kv-offloading-size`, an offloading connector in `--kv-transfer-config`) \
               that served none of the run's prompt tokens: the commonest reason KV offload \
               \"does not help\" is that the run never reached it. LMCache's hits reach \
               that split as `external_unspecified`; its own counters \
               (`lmcache:num_hit_tokens_total` of `lmcache:num_requested_tokens_total`, one \
               series per worker, each counting its shard of the same tokens) go in the \
               evidence as one worker counted them.",
        why: "A prompt served from the cache is not prefilled: its time to first token is \
              a lookup, and the prefill throughput counts tokens the GPU never computed. A \
              run with a warm cache measures the cache, and its numbers cannot be compared \
              with a run on fresh prompts, or repeated on a freshly started server.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's radix cache counts the prompt tokens it served in \
                 `sglang:cached_tokens_total`, beside `sglang:prompt_tokens_total`, when a \
                 request finishes; it writes the cached counter only once a request had a \
                 hit. Without it, the prompt tokens the cache did not serve \
                 (`sglang:uncached_prompt_tokens_histogram_sum`, in recent releases) give \
                 the served ones, and a snapshot with neither (and with the prompt counter) \
                 reads as none served. The gauge `sglang:cache_hit_rate` covers recent batches only and is \
                 not used. `--disable-radix-cache` turns the cache off.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM counts the prompt tokens served from reused KV blocks in \
                 `trtllm_prompt_cached_tokens_total` beside `trtllm_prompt_tokens_total`, \
                 when a request finishes. Block reuse is on by default in the PyTorch \
                 backend; `kv_cache_config.enable_block_reuse: false` in the `--config` YAML \
                 turns it off. Its tier split (`trtllm_prompt_cache_hit_tokens_total` by \
                 `cache_tier`) is filled only by the V2 KV cache manager: the default V1 \
                 manager puts every hit in the gpu tier, so T16 reads the split only where \
                 the boot log shows `use_kv_cache_manager_v2=True`, and otherwise cannot \
                 tell whether host offload served anything.",
            ),
        ],
        command: "inferlint report run/ [--expect-cache-hits]",
        verdicts: &[
            (
                Status::Warn,
                "the cache served more than 10% of the run's prompt tokens, and the run was \
                 not said to reuse prefixes; or an offload tier was configured and served \
                 none of them.",
            ),
            (
                Status::Unknown,
                "a counter is missing or the server restarted between the readings, or no \
                 prompt token was counted, or an offload tier was configured and the only \
                 split by tier comes from a KV manager known to misattribute it.",
            ),
            (
                Status::Pass,
                "the cache served at most 10% of the prompt tokens, or the run is meant to \
                 reuse prefixes, or the boot log shows the cache turned off.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T17,
        slug: "client-shortfall",
        name: "Client kept fewer in flight than asked",
        what: "T8 says the server never ran the concurrency asked for; it cannot tell a \
               server that would not run more from a client that did not send more. Load \
               tools fall short on their own side: GuideLLM has reported 128 concurrent \
               requests while the server never saw more than 100 per worker, and \
               inference-perf's observed concurrency has drifted from 45 to 74.5. A request \
               the client sent is either running or waiting on the server, so running plus \
               waiting is what the client had open. T17 fails when that stayed below the \
               concurrency asked for while the server had room for more: nothing waited, \
               the KV cache had room for another request (counted in blocks where the pool \
               is paged: 93% of 42 blocks of 784 tokens is full), and fewer ran than the \
               server's cap. Where the load tool keeps one record per request, those say how \
               many it had open while it was still sending.",
        why: "A run labelled with a concurrency it never had is compared with runs that had \
              it. When the client, not the server, kept the load low, the server's speed at \
              the labelled concurrency was never measured, and tuning the server (more \
              memory, a higher running limit) changes nothing.",
        engine_notes: &[
            (
                Engine::Vllm,
                "Where the recording has vLLM's waiting split by reason (0.32 on: \
                 `vllm:num_requests_waiting_by_reason`), a failure or warning says how much \
                 of the waiting was for room (`capacity`) and how much was deferred by a KV \
                 transfer, a grammar still compiling or another transient block \
                 (`deferred`).",
            ),
            (
                Engine::Sglang,
                "SGLang's `sglang:num_queue_reqs` counts requests waiting in its scheduler; \
                 its token pool (`sglang:token_usage`) is counted in tokens, so room for one \
                 more is the share one running request holds.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM updates its running and waiting gauges only when a request \
                 completes, so the recording can miss the requests in flight: without the \
                 load tool's records a shortfall is Can't tell, never a failure.",
            ),
        ],
        command: "inferlint report run/ --requested N",
        verdicts: &[
            (
                Status::Fail,
                "fewer requests than asked for were in flight while the server had room, or \
                 the load sent fewer requests in all than it was to keep open.",
            ),
            (
                Status::Warn,
                "fewer were in flight, but the server was full whenever they were (a queue, \
                 a full cache, its running cap): it would not have run more.",
            ),
            (
                Status::Unknown,
                "the recording has no running or waiting readings, the gauges lag \
                 (TensorRT-LLM), failed requests hide how many the client kept open, or \
                 the recording saw too little of the load (as for T8).",
            ),
            (
                Status::Pass,
                "the load kept the concurrency asked for in flight, or it was paced at a \
                 request rate and the concurrency was only its cap.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T18,
        slug: "dropped-failures",
        name: "Failures left out",
        what: "Load tools report throughput and latency over the requests that succeeded. A \
               request that errored, was aborted, timed out or came back empty is left out of \
               those figures, and some tools leave it out of their counts as well: SGLang's \
               bench_serving writes only how many completed, LLMPerf drops the requests still \
               in flight when it stops, and a tool can print its usual tables and say the \
               benchmark completed with every request failed. T18 balances three accounts of \
               the run: the load tool's (requests sent, completed, failed or left \
               incomplete, and each request's record where the file keeps them), the \
               server's counters between the snapshots (vLLM counts every finished request \
               in `vllm:request_success_total` by `finished_reason`: `stop`, `length`, and \
               `abort` or `error` for one that did not finish) and the recording (whether \
               the engine was still generating while the tool counted successes). It fails \
               whenever the run's figures leave failures out, naming how many and which \
               account shows them.",
        why: "A failed request is cheap to serve: an error takes milliseconds and no cache, \
              so every failure left out of the figures lowers the latency and makes the \
              throughput of the rest look sustainable while the server was turning load \
              away. A run with failures measured a different load than the one it names, and \
              a run whose every request failed measured nothing at all.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang counts every request it finished in `sglang:num_requests_total`, \
                 without a reason, and the ones it aborted (a client that went away, a \
                 timeout) in `sglang:num_aborted_requests_total`. A request refused before it \
                 reached the scheduler (a wrong model name, a prompt too long) is in neither. \
                 Its `bench_serving` keeps failed requests only with `--output-details`.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM counts finished requests in `trtllm_request_success_total` by \
                 `finished_reason` (`cancelled` and `timeout` for one that did not finish on \
                 its own) and, in recent releases, requests answered with an HTTP error in \
                 `trtllm_request_error_total` by status code. Its counters move only when a \
                 request ends.",
            ),
        ],
        command: "inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "the run's figures leave failures out: the load tool's file, the server's \
                 counters or the recording show requests that errored, were aborted, came \
                 back empty or were never answered, or every request failed.",
            ),
            (
                Status::Unknown,
                "the load tool's file does not count failures and keeps no per-request \
                 record, and the server's counters cannot show them either; or the accounts \
                 cannot be lined up (the server restarted between the snapshots, or the \
                 result file's own counts contradict each other).",
            ),
            (
                Status::Pass,
                "every request the load tool sent completed with output, and the server \
                 counted no abort or error during the run.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T19,
        slug: "cold-start",
        name: "Cold engine",
        what: "An engine compiles kernels and captures CUDA graphs at start-up, but not for \
               every shape: the first requests of a new size can trigger a just-in-time \
               compile, a lazily captured graph or an autotuner run, and a load that times \
               its first requests pays for it. First-wave times to first token of 40 to 57 \
               s against 1 s afterwards have been reported. vLLM's kernel JIT monitor logs \
               `Triton kernel JIT compilation during inference` for each such compile. T19 \
               fails when compile or graph-capture lines were logged inside the run's \
               window (placed by their time stamps against the snapshots' clocks; a line \
               that cannot be placed is Can't tell), or when the load tool's records show \
               the first wave of requests far slower than the rest beyond what prefilling \
               their own prompts explains, and warns when nothing warmed the engine before \
               the timed requests (no request answered before the run, no untimed \
               request).",
        why: "Compile time inside the measured window lands on the first requests' time to \
              first token and on the run's throughput: the tail latency and the averages \
              describe start-up, and a second run of the same setup on the warm server \
              gives other numbers.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang captures its CUDA graphs (`Capture cuda graph begin`, `... end`) \
                 before the server is ready and sends itself a warm-up request; lines of \
                 that kind after the ready line are placed against the run.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM runs its autotuner and captures CUDA graphs in warm-up passes \
                 before the server is ready (`[warmup] ... cuda_graph_capture: start`); lines \
                 of that kind after the ready line are placed against the run.",
            ),
        ],
        command: "inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "compile or graph-capture lines were logged during the run, or the first \
                 wave waited far longer for its first token than the rest.",
            ),
            (
                Status::Warn,
                "nothing warmed the engine: the server had answered no request before the \
                 run and the load sent no untimed request.",
            ),
            (
                Status::Unknown,
                "a compile line after the ready line cannot be placed inside or outside the \
                 run (no time stamp, or the log's time zone cannot be found).",
            ),
            (
                Status::Pass,
                "the engine was warm (requests answered before the run, or an untimed \
                 request), no compile line fell inside the run, and the first wave was no \
                 slower than the rest.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T20,
        slug: "length-mismatch",
        name: "Request lengths as advertised",
        what: "A benchmark is named by its request lengths, such as 1,000 tokens in and 1,000 \
               out. What the server processed can differ: the load tool's tokenizer is not \
               the server's (another model's, or one that adds or drops special tokens), a \
               chat endpoint wraps each prompt in a chat template, a range ratio draws \
               lengths below the one named, and a request stops early at an end-of-sequence \
               token unless told to ignore it. T20 compares the prompt and output tokens the \
               server counted per request (its counters between the snapshots, and the \
               usage each answer carried where the load tool kept it) with what the load \
               tool says it sent and asked for (its own counts, each request's `max_tokens` \
               and the lengths it advertised). It warns when they differ by more than 5% \
               and fails beyond 25%, with the per-request numbers.",
        why: "Throughput and latency depend on the lengths: prefill time grows with the \
              prompt, decode time with the output, and the KV cache holds both. A run \
              published at lengths it did not have is compared with runs of another \
              workload, and a tokenizer that counts three times the tokens triples the \
              reported input throughput without the server doing any more work.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's token and request counters move when a request finishes, so a \
                 request still running at the after snapshot is in neither; its \
                 `bench_serving` reports the server's output tokens and, beside them, its \
                 own count of the text (`total_output_tokens_retokenized`).",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM's token and request counters move when a request finishes, so \
                 a request still running at the after snapshot is in neither.",
            ),
        ],
        command: "inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "the server's prompt or output tokens per request differ from what the load \
                 tool counted, sent or asked for by more than 25%.",
            ),
            (
                Status::Warn,
                "they differ by more than 5% (and more than 2 tokens a request).",
            ),
            (
                Status::Unknown,
                "no request completed, or neither the server's counters nor the usage the \
                 answers carried give the server's side.",
            ),
            (
                Status::Pass,
                "the server and the load tool agree within 5% on both lengths.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T21,
        slug: "gpu-contention",
        name: "GPU shared or throttled",
        what: "T2 checks that the card is free before a server starts; nothing stops \
               another job from starting on it during the run, or the GPU from lowering its \
               clocks for power or heat. `watch` and `xray` read NVML beside every sample \
               and store the memory and compute share of processes that are not the \
               server's on the server's GPUs, NVML's clock-event (throttle) reasons and the \
               SM clock against its maximum. T21 judges the samples taken while requests \
               ran: it fails when another process computed on the server's GPU or a \
               thermal or hardware slowdown was active, and warns when another process \
               only held memory or the power cap held the SM clock below 90% of its maximum \
               in more than a tenth of the samples.",
        why: "A GPU shared with another job, or running at a lowered clock, serves fewer \
              tokens per second than the same GPU alone at full clock: the run measured the \
              machine's other load or its cooling, not the engine, and does not repeat.",
        engine_notes: &[
            (
                Engine::Sglang,
                "Nothing differs: the readings are NVML's, whatever the engine. SGLang's \
                 scheduler processes (`sglang::scheduler`) belong to the server.",
            ),
            (
                Engine::Trtllm,
                "Nothing differs: the readings are NVML's, whatever the engine. \
                 TensorRT-LLM's MPI workers belong to the server.",
            ),
        ],
        command: "inferlint watch URL -o run.series.jsonl  |  inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "another process used the server's GPU while requests ran, or a thermal or \
                 hardware slowdown held its clocks back.",
            ),
            (
                Status::Warn,
                "another process held memory on the server's GPU, or the power cap held the \
                 SM clock below 90% of its maximum in more than a tenth of the readings.",
            ),
            (
                Status::Unknown,
                "not sampled: the server was on another machine than the recorder; or the \
                 recorder was to read the GPUs but no reading was taken while requests ran, \
                 or the server's processes could not be told from others.",
            ),
            (
                Status::Pass,
                "no other process on the server's GPUs and no slowdown while requests ran.",
            ),
            (
                Status::NotApplicable,
                "the recorder found no NVIDIA GPU on the server's machine, or was told the \
                 server uses none.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T22,
        slug: "replica-imbalance",
        name: "Replicas unevenly loaded",
        what: "A benchmark against a fleet sends its load to a router (llm-d, KServe, a plain \
               load balancer) that spreads requests over several replicas. When the router \
               keeps sending to a replica that is full (sticky sessions, a prefix-affinity \
               rule, a replica that joined late, a health check that lags), that replica \
               queues and preempts while another sits idle. T22 reads every replica's \
               recording on one schedule and, for each moment a replica had requests \
               waiting or preempted one, asks whether another replica had room at the same \
               moment: nothing waiting, nothing preempted and its KV cache less than half \
               full. It warns when that held in 20% of a replica's busy moments and fails at \
               50% (with three such moments or more). Where the recordings are too thin \
               to compare moment by moment, the replicas' own counters judge it: a replica \
               that queued and finished requests while another finished none between its \
               readings and never queued was sent the load while the other had room.",
        why: "The fleet's throughput and latency are then those of its busiest replica: \
              requests wait in one queue while capacity idles elsewhere, so tail latency \
              and time to first token measure the router's choices rather than the \
              engines, and adding replicas seems to help less than it does. A single \
              replica's verdicts hide it: the busy replica looks saturated and the idle one \
              looks healthy, and only the two together show the trap.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's retractions count as preemptions and its token usage as the KV \
                 cache; its router (`sglang_router`) balances by cache affinity, which \
                 under a skewed prefix mix sends most requests to one worker.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM counts no preemptions; a replica is busy when requests wait. \
                 Its gauges move when requests finish, so a short imbalance can be missed.",
            ),
        ],
        command:
            "inferlint report FLEET_DIR  |  inferlint report --prometheus URL --start T --end T",
        verdicts: &[
            (
                Status::Fail,
                "in half or more of a replica's moments with requests waiting or preempted, \
                 another replica had room (at least three such moments); or, the \
                 recordings too thin to tell, a replica queued and finished requests while \
                 another finished none and never queued.",
            ),
            (
                Status::Warn,
                "that held in 20% to 50% of a replica's busy moments.",
            ),
            (
                Status::Unknown,
                "fewer than two replicas were recorded, a replica has no waiting-requests \
                 gauge, a replica's KV cache was never read while another queued (its room \
                 cannot be told), or the recordings do not overlap in time.",
            ),
            (
                Status::Pass,
                "no replica queued, or replicas queued only while the others were busy too.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T23,
        slug: "client-wait",
        name: "The client's own wait left out",
        what: "A load tool times each request from the moment it sends it. A request can be \
               due earlier: in an open loop (a request rate) at its place in the schedule, \
               held back by a concurrency limit or a client that fell behind; in a closed \
               loop (N requests kept open) the moment one of the N before it ended and freed \
               its slot, which the requests' own sends and ends give whatever the tool. T23 \
               sets each request's send against when it was due (the tool's schedule, \
               `vllm bench serve`'s `queue_times`, GuideLLM's `scheduled_at`, AIPerf's \
               `credit_issued_ns`, or the slot that freed) and counts the requests that \
               waited in the client longer than 50 ms and a tenth of their own latency. It \
               fails when a tenth of the requests or more did, and warns when any did.",
        why: "The tool's TTFT and end-to-end latency start at the send, so the time a request \
              spent queued in the client is in no figure: an open loop whose server could \
              not keep up reports the latency of the requests it managed to send, not of \
              the rate asked, and a closed loop whose client fell behind measures the \
              client's pace as the server's throughput.",
        engine_notes: &[
            (
                Engine::Sglang,
                "Nothing differs: the wait is the client's. SGLang's `bench_serving` keeps \
                 no schedule in its file; a rate-paced run of it is judged only where its \
                 records carry one.",
            ),
            (
                Engine::Trtllm,
                "Nothing differs: the wait is the client's, whatever serves the requests.",
            ),
        ],
        command: "inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "a tenth of the requests or more waited in the client beyond 50 ms and a \
                 tenth of their own latency before they were sent.",
            ),
            (Status::Warn, "fewer did, but some did."),
            (
                Status::Unknown,
                "the load tool keeps no send times, or ran at a rate and keeps no schedule, \
                 or states neither a rate nor a concurrency limit.",
            ),
            (
                Status::Pass,
                "every request was sent within 50 ms (or a tenth of its latency) of when it \
                 was due.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T24,
        slug: "ttft-definitions",
        name: "TTFT that means different things",
        what: "Time to first token has three definitions in one run: the load tool's, from \
               the moment it sent the request; the server's, from the moment its API server \
               received it (vLLM's span attribute `gen_ai.latency.time_to_first_token` and \
               its `time_to_first_token_seconds` histogram); and, where the server times \
               from scheduling (vLLM's per-request metrics in responses), from the moment \
               its scheduler first ran the request, which leaves out the server's queue. \
               T24 joins each request's row in the load tool's file with the server's own \
               record of it (by id where both carry one, else by send time and length) and \
               compares the medians. It warns when the load tool's TTFT exceeds the \
               server's by more than 25 ms and 10% (transport, the front end and the \
               server's queue are in one figure and not in the other) and fails when the \
               load tool's is shorter than the server's by as much: the tool starts its \
               clock after the request reached the server, or stops it before the first \
               token.",
        why: "A TTFT quoted from the load tool, from the server's histogram and from a \
              scheduling-based per-request metric are three different numbers for the same \
              requests; comparing one run's client figure with another's server figure, or \
              tuning the server on a figure that leaves out its queue, moves numbers that \
              were never the same thing.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's request spans (`--enable-trace`) and its per-request metrics \
                 file time from the tokenizer manager's receipt of the request.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM's `/perf_metrics` gives each request's arrival, first \
                 scheduling and first token: its TTFT from arrival is first token minus \
                 arrival.",
            ),
        ],
        command: "inferlint xray --otlp ...  |  inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "the load tool's median TTFT is shorter than the server's own by more than \
                 25 ms and 10%.",
            ),
            (
                Status::Warn,
                "it is longer by more than that, or the server's TTFT counted from \
                 scheduling leaves out more than that of its queue: the figures count \
                 different parts of each request's life, and the message says how much is \
                 whose.",
            ),
            (
                Status::Unknown,
                "too few requests could be joined with the server's records, or neither \
                 side keeps a TTFT for them.",
            ),
            (
                Status::Pass,
                "the load tool's and the server's TTFT agree within 25 ms or 10%.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T25,
        slug: "chunks-as-tokens",
        name: "Streamed chunks counted as tokens",
        what: "A streamed answer arrives in chunks, and a chunk can carry several tokens: \
               speculative decoding accepts several at once, a server that streams at an \
               interval (vLLM's `--stream-interval`) bundles them, reasoning and tool-call \
               parsers hold some back and release them together. T25 joins each request's \
               row in the load tool's file with the server's own record of it and sets the \
               tool's output count and its chunk count against the tokens the server \
               generated. It fails when the tool's count is its chunk count and the server \
               generated more than 5% more tokens (the tool counted chunks as tokens), and \
               warns when the count is right but chunks carried more than one token on \
               average (the tool's inter-token latency is then a gap between chunks).",
        why: "Output tokens per second, time per output token and inter-token latency all \
              divide by the token count: a tool that counts chunks undercounts tokens by the \
              chunk size and overstates each token's time by as much, and a per-chunk gap \
              reported as inter-token latency is several tokens' time.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang streams every `--stream-interval` tokens (1 by default); its \
                 speculative decoding sends accepted tokens together.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM streams each iteration's tokens: with speculative decoding \
                 (Medusa, EAGLE, MTP) an iteration can accept several.",
            ),
        ],
        command: "inferlint xray --otlp ...  |  inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "the load tool counted its chunks as tokens while the server generated more \
                 than 5% more tokens.",
            ),
            (
                Status::Warn,
                "the count is right, but chunks carried more than one token on average: the \
                 tool's inter-token latency measures chunks.",
            ),
            (
                Status::Unknown,
                "too few requests could be joined with the server's records, or the tool \
                 keeps no per-request output count.",
            ),
            (
                Status::Pass,
                "the tool's output count is the server's, one token a chunk (or no chunk \
                 count kept and the counts agree).",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T26,
        slug: "kv-events-lost",
        name: "KV events lost or never sent",
        what: "An engine asked to publish its KV-cache events (`--kv-events-config`: vLLM and \
               SGLang publish each block stored and removed over ZeroMQ, each batch with a \
               sequence number) feeds routers, caches and timelines that trust the stream \
               to be whole. PUB/SUB drops what a slow subscriber cannot take, a subscriber \
               that joins late misses the start, and an engine that stores no block (vLLM \
               without prefix caching) sends nothing at all. An engine publishes only the \
               full blocks it stores: a request of T tokens fills (T - 1) / block size of \
               them. T26 reads the stream a recorder received: it fails when the engine's \
               publisher never connected, when nothing came while the server ran \
               requests that filled blocks, or when batches were lost and not recovered \
               through the engine's replay; it passes when every batch from the first to \
               the last arrived, or when no request filled a block and none was due.",
        why: "A KV-aware router or a timeline built on a stream with holes believes blocks \
              are cached that were evicted, or never learns of them: its routing and its \
              picture of the cache are wrong exactly when the cache is under pressure, and \
              nothing says so.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang publishes the same format (`--kv-events-config`) from its radix \
                 cache.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM serves its KV events at `POST /kv_cache_events`, which \
                 drains them: a second reader takes the first one's events.",
            ),
        ],
        command: "inferlint xray --kv-events ...  |  inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "the publisher never connected, no event arrived while the server ran \
                 requests that filled blocks, or batches were lost and not recovered.",
            ),
            (
                Status::Unknown,
                "the stream's file is cut off, the publisher started again while the \
                 subscriber ran (what it sent before it stopped cannot be numbered), or \
                 the server's work during it cannot be told.",
            ),
            (
                Status::Pass,
                "every batch from the first to the last arrived (replayed ones included), \
                 or no request filled a block and none was due.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T27,
        slug: "spec-decode-content",
        name: "Speculative decoding measured on the wrong content",
        what: "Speculative decoding (a draft model, EAGLE or MTP heads, n-gram lookup) \
               proposes several tokens a step and keeps those the target model agrees \
               with; how many it keeps depends on the text. Random prompts, a trace \
               replay's synthetic prompts and answers forced past their end (`ignore_eos`) \
               are text no drafter serves: acceptance collapses on them, or rises on \
               degenerate repetition, and draft lengths longer than the answers are never \
               reached. T27 takes the acceptance rate (accepted / draft tokens) and the mean \
               accepted length (1 + accepted / drafts), by position where the engine \
               counts it, from the draft counters' deltas over the run, and warns when they \
               were measured on a random or synthetic dataset, with `ignore_eos`, with \
               answers shorter than a draft, or when one in twenty of the load tool's \
               inter-token gaps is under 0.1 ms (accepted drafts arriving as bursts, which \
               its ITL percentiles then describe).",
        why: "The speed-up of speculative decoding is its acceptance, and acceptance is a \
              property of the content: a candidate approved on synthetic text can be \
              rejected by the real one (11% accepted on prose against 98% on verbatim text \
              moved one run from 89 to 876 tokens per second). Throughput and latency \
              measured so say nothing of the deployment.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's acceptance figures are gauges over its last logging window, not \
                 counters over a run: T27 cannot take a run's acceptance from them.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM 1.3 serves no Prometheus counter of drafts that could be \
                 established: T27 cannot take a run's acceptance.",
            ),
        ],
        command: "inferlint report run/",
        verdicts: &[
            (
                Status::Warn,
                "acceptance was measured on random or synthetic prompts, with ignore_eos, \
                 with answers shorter than a draft, or the tool's inter-token gaps are \
                 bursts.",
            ),
            (
                Status::Unknown,
                "speculation is on but its counters are missing from a reading, did not \
                 move, or the load tool's file does not say what it sent.",
            ),
            (
                Status::NotApplicable,
                "the server did no speculative decoding.",
            ),
            (
                Status::Pass,
                "acceptance was measured on a named dataset of real text, without \
                 ignore_eos, with answers longer than a draft.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T28,
        slug: "disaggregation-never-happened",
        name: "Disaggregation that never disaggregated",
        what: "Disaggregated serving prefills on one instance and decodes on another, a \
               connector (NIXL, Mooncake) moving the prompt's KV between them. Which way a \
               request goes is the router's choice: on vLLM a request reaches the decode \
               instance with `kv_transfer_params` from the proxy, and one without them is \
               prefilled where it lands and counts no transfer. A load pointed straight at \
               the decode instance, or through a proxy that drops the parameters, measures \
               ordinary serving under a disaggregated configuration. T28 reads the boot log \
               for the declaration (`--kv-transfer-config` naming a connector that moves KV \
               between instances, and the instance's `kv_role`) and the decode instance's \
               counters between the readings: the prompt tokens whose KV came by transfer \
               (`vllm:prompt_tokens_by_source_total{source=\"external_kv_transfer\"}`) \
               against those it prefilled (`local_compute`). It fails when nothing came by \
               transfer, warns when less than 90% of the prompt tokens not in the \
               instance's own cache did, and passes above. NIXL's own figures (transfers, \
               bytes, failures) go in the evidence: they pool every tensor-parallel worker \
               of the instance and name no request.",
        why: "A disaggregated run's time to first token holds the prefill queue, the remote \
              prefill, the KV transfer and the first decode step, and no engine read here \
              times them apart: a run that never transferred looks like a fast one, and \
              one that did hides its transfer in the first token (a TTFT median of 31 s \
              against 2.3 s has been reported with no way to tell which part grew). \
              Without knowing whether KV moved at all, the run's numbers cannot be called \
              disaggregated.",
        engine_notes: &[
            (
                Engine::Sglang,
                "SGLang's disaggregation (`--disaggregation-mode`) was not examined: T28 \
                 shows nothing on SGLang.",
            ),
            (
                Engine::Trtllm,
                "TensorRT-LLM's disaggregated serving (`trtllm-serve disaggregated`) and its \
                 per-request `kv_cache_transfer_start` and `kv_cache_transfer_end` times \
                 were not established from a recording: T28 shows nothing on TensorRT-LLM.",
            ),
        ],
        command: "inferlint report run/   (the decode instance's run)",
        verdicts: &[
            (
                Status::Fail,
                "the boot log declares disaggregation, the instance decoded, and no prompt \
                 token's KV came by transfer.",
            ),
            (
                Status::Warn,
                "some KV came by transfer, but less than 90% of the prompt tokens not in \
                 the instance's own cache.",
            ),
            (
                Status::Unknown,
                "declared, but the readings or the transfer counter are missing, the \
                 instance is (or may be) the prefill side, which counts nothing it sends, \
                 or its own prefix cache served every prompt token.",
            ),
            (
                Status::Pass,
                "at least 90% of the prompt tokens not in the instance's own cache came by \
                 transfer.",
            ),
            (
                Status::NotApplicable,
                "the boot log declares no connector that moves KV between instances.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T29,
        slug: "scheduler-stalled",
        name: "Scheduler stalled while requests waited",
        what: "The 4 Hz recording shows requests waiting and the server's counters still; \
               it cannot tell a scheduler that stopped admitting from steps too long to \
               sample. Each engine step, recorded inside the server (`steps.jsonl`, \
               docs/steps.md), can: a scheduler with requests waiting (`w`) or deferred \
               (`d`) admits or generates in every step it runs, so a stretch of waiting \
               with no step, or with steps that process no token, is the engine stopped \
               while `/health` may still answer 200. T29 fails when such a stretch lasts \
               longer than the larger of 2 s (eight of the recording's samples) and 20 \
               times the slowest 1% of the run's step times (an engine whose own steps are \
               long pauses longer between them); it passes when every stretch of waiting \
               ended within that in a step that admitted or generated.",
        why: "A stall is time the load tool counts as the server's latency and the \
              server spent doing nothing: TTFT and throughput then measure the stall \
              (a blocked tokenizer, a stuck worker, a full queue of the plugin's host), \
              not the engine.",
        engine_notes: &[(
            Engine::Vllm,
            "The step plugin (integrations/vllm) writes the file; xray --steps turns it on.",
        )],
        command: "inferlint xray --steps ...  |  inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "requests waited longer than the threshold while no step ran or the steps \
                 that ran processed no token: the message gives the longest stretch, when, \
                 and how many waited.",
            ),
            (Status::Unknown, "the step file holds no step."),
            (
                Status::Pass,
                "no request waited, or every stretch of waiting ended within the threshold \
                 in a step that admitted or generated.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T30,
        slug: "prefill-stalls-decode",
        name: "Prefills scheduled beside decodes slowed them",
        what: "A step that runs a prompt's prefill beside the running requests' decodes \
               takes as long as the prefill's tokens need, and every decode in it waits \
               that long for its token: the inter-token latency's tail is then the \
               prefills, not the decodes. Only each step's batch shows it. T30 compares \
               the decode steps that carried prefill tokens (`pt` > 0 and `dr` > 0) with \
               decode-only steps of a similar decode batch, and counts how many of the \
               slowest decode steps (at or above the 99th percentile step time) carried a \
               prefill. It warns when most of that tail carried a prefill and those steps \
               ran 1.5 times as long or more (each decode in them waited half as long \
               again for its token); it passes otherwise.",
        why: "An inter-token latency tail made by prefills says nothing of the decode \
              speed: it moves with the prompt mix and the chunk size \
              (`--max-num-batched-tokens`), and a comparison of two runs with other \
              prompts compares their prefills.",
        engine_notes: &[(
            Engine::Vllm,
            "The batch composition is recorded only with \
             `--enable-logging-iteration-details`, which xray --steps adds.",
        )],
        command: "inferlint xray --steps ...  |  inferlint report run/",
        verdicts: &[
            (
                Status::Warn,
                "most of the slowest decode steps carried a prefill, and steps with a \
                 prefill beside decodes ran 1.5 times as long or more as decode-only steps \
                 of a similar batch.",
            ),
            (
                Status::Unknown,
                "the steps give no batch composition (the server ran without iteration \
                 details), no step decoded, or most of the tail carried a prefill and no \
                 decode-only step of a similar batch compares.",
            ),
            (
                Status::Pass,
                "no prefill ran beside decodes, or the slowest decode steps were not mostly \
                 those, or they were not markedly slower.",
            ),
        ],
    },
    TripwireInfo {
        tripwire: Tripwire::T31,
        slug: "preemption-located",
        name: "Preemptions located at their steps",
        what: "T1 says the server's preemption counter moved; the 4 Hz recording places \
               its moves a quarter second apart. Each engine step's `pre` says which step \
               preempted and when, so bursts (several preemptions within a few steps, one \
               move of the counter) can be told from a steady trickle. T31 sums the steps' \
               preemptions between the readings against the counter's move (equal, or the \
               difference), names the first and last step and the bursts within 250 ms. It \
               fails when a request was preempted and passes when none was; a step file \
               with gap lines (steps the plugin dropped) between the readings cannot \
               locate every preemption.",
        why: "A preempted request is recomputed: its latency counts the work twice. \
              Located, the preemptions say whether the cache ran out once (a burst at one \
              moment of the load) or all along.",
        engine_notes: &[(
            Engine::Vllm,
            "vLLM counts them in `vllm:num_preemptions_total`; the step plugin reads each \
             step's from its iteration stats.",
        )],
        command: "inferlint xray --steps ...  |  inferlint report run/",
        verdicts: &[
            (
                Status::Fail,
                "requests were preempted: the message gives how many, at which steps and \
                 when, the bursts, and the counter's move beside them.",
            ),
            (
                Status::Unknown,
                "the steps give no preemption count, or the plugin dropped steps between \
                 the readings.",
            ),
            (
                Status::Pass,
                "no step preempted a request, and the counter did not move.",
            ),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Beside a finding, "why it matters" speaks of this run's numbers, never of the
    /// recorded runs' examples.
    #[test]
    fn why_in_run_uses_the_runs_own_numbers() {
        let capped = CheckResult::new(
            Tripwire::T8,
            Status::Fail,
            "requested 32 concurrent, server never ran more than 1",
        )
        .with("requested", 32)
        .with("peak_running", 1.0);
        let why = why_in_run(&capped);
        assert!(why.contains("never ran more than 1 of 32"), "{why}");
        assert!(!why.contains("10 of 32"), "{why}");
        let unknown = CheckResult::new(Tripwire::T8, Status::Unknown, "lagging gauge")
            .with("requested", 64)
            .with("peak_running", 32.0);
        let why = why_in_run(&unknown);
        assert!(!why.chars().any(|c| c.is_ascii_digit()), "{why}");
        let t10 = CheckResult::new(Tripwire::T10, Status::Pass, "rate")
            .with("span_s", 119.554)
            .with("integer_second_span_s", 119)
            .with("integer_second_error", 0.0046);
        assert!(why_in_run(&t10)
            .contains("this run's 119.55 s read as 119 s would change the rate by +0.46%"));
        let t14 = CheckResult::new(Tripwire::T14, Status::Pass, "gauge")
            .with("reported_num_gpu_blocks", 48)
            .with("inferred_usable_blocks", 47);
        assert!(why_in_run(&t14).contains("here 47 usable, not 48"));
        // Generic text holds no example number where the evidence has none.
        for t in [5, 8, 10, 14] {
            let bare = CheckResult::new(Tripwire::new(t).unwrap(), Status::Unknown, "");
            let why = why_in_run(&bare);
            assert!(
                !why.contains("93")
                    && !why.contains("784")
                    && !why.contains(" 42 ")
                    && !why.contains("10 of 32"),
                "T{t}: {why}"
            );
        }
    }

    #[test]
    fn entries_in_number_order_with_unique_slugs() {
        let numbers: Vec<u8> = all().iter().map(|info| info.tripwire.number()).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        for (info, tripwire) in all().iter().zip(Tripwire::all()) {
            assert_eq!(info.tripwire, tripwire);
            assert!(std::ptr::eq(get(tripwire), info));
        }
        let mut slugs: Vec<&str> = all().iter().map(|info| info.slug).collect();
        slugs.sort_unstable();
        slugs.dedup();
        assert_eq!(slugs.len(), all().len());
        // Every named constant has its entry.
        for tripwire in [
            Tripwire::T1,
            Tripwire::T2,
            Tripwire::T3,
            Tripwire::T4,
            Tripwire::T5,
            Tripwire::T6,
            Tripwire::T7,
            Tripwire::T8,
            Tripwire::T9,
            Tripwire::T10,
            Tripwire::T11,
            Tripwire::T12,
            Tripwire::T13,
            Tripwire::T14,
            Tripwire::T15,
            Tripwire::T16,
            Tripwire::T17,
            Tripwire::T18,
            Tripwire::T19,
            Tripwire::T20,
            Tripwire::T21,
            Tripwire::T22,
            Tripwire::T23,
            Tripwire::T24,
            Tripwire::T25,
            Tripwire::T26,
            Tripwire::T27,
            Tripwire::T28,
        ] {
            assert_eq!(get(tripwire).tripwire, tripwire);
        }
        // Every tripwire is in a stage of the guide.
        for info in all() {
            assert!(
                stages().iter().any(|(_, ts)| ts.contains(&info.tripwire)),
                "{} is in no stage",
                info.tripwire
            );
        }
    }

    #[test]
    fn codes_slugs_names_and_commands_are_the_contract() {
        assert_eq!(get(Tripwire::T1).slug, "silent-preemption");
        assert_eq!(get(Tripwire::T1).name, "Silent preemption");
        assert_eq!(
            get(Tripwire::T2).command,
            "inferlint teardown  |  inferlint gpu-inspect"
        );
        assert_eq!(get(Tripwire::T9).slug, "falling-ceiling");
        assert_eq!(
            get(Tripwire::T13).name,
            "Stale waiter adopts the next server"
        );
        assert_eq!(get(Tripwire::T15).slug, "client-server-mismatch");
    }

    #[test]
    fn find_by_code_slug_and_any_case() {
        let t9 = Some(Tripwire::T9);
        for text in [
            "T9",
            "t9",
            "9",
            " falling-ceiling ",
            "FALLING-CEILING",
            "Falling-Ceiling",
        ] {
            assert_eq!(find(text).map(|info| info.tripwire), t9, "{text}");
        }
        assert_eq!(find("t15").map(|i| i.tripwire), Some(Tripwire::T15));
        assert!(find("T200").is_none());
        assert_eq!(find("cold-start").map(|i| i.tripwire), Some(Tripwire::T19));
        assert_eq!(find("T16").map(|i| i.slug), Some("prefix-cache-hits"));
        assert_eq!(
            find("client-shortfall").map(|i| i.tripwire),
            Some(Tripwire::T17)
        );
        assert_eq!(
            find("gpu-contention").map(|i| i.tripwire),
            Some(Tripwire::T21)
        );
        assert_eq!(
            find("dropped-failures").map(|i| i.tripwire),
            Some(Tripwire::T18)
        );
        assert_eq!(find("T20").map(|i| i.slug), Some("length-mismatch"));
        assert!(find("falling").is_none());
        assert!(find("").is_none());
    }

    #[test]
    fn the_required_engine_notes_exist() {
        for tripwire in [
            Tripwire::T1,
            Tripwire::T2,
            Tripwire::T5,
            Tripwire::T8,
            Tripwire::T9,
            Tripwire::T14,
            Tripwire::T16,
            Tripwire::T17,
            Tripwire::T18,
            Tripwire::T19,
            Tripwire::T20,
            Tripwire::T21,
            Tripwire::T22,
        ] {
            for engine in [Engine::Sglang, Engine::Trtllm] {
                assert!(
                    get(tripwire).engine_notes.iter().any(|(e, _)| *e == engine),
                    "{tripwire} lacks a note for {engine}"
                );
            }
        }
    }

    #[test]
    fn explain_has_header_paragraphs_and_command() {
        let text = render_explain(get(Tripwire::T1), None, 88);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "T1  Silent preemption  (silent-preemption)");
        assert!(lines[1].starts_with("    When the KV cache"));
        assert!(lines.iter().any(|l| l.starts_with("    Why it matters: ")));
        assert!(lines.iter().any(|l| l.starts_with("    On SGLang: ")));
        assert!(lines.iter().any(|l| l.starts_with("    On TensorRT-LLM: ")));
        assert_eq!(
            lines.last().copied(),
            Some("    Check: inferlint preemption before.json after.json")
        );
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn explain_filters_engine_notes() {
        let info = get(Tripwire::T8);
        let sglang = render_explain(info, Some(Engine::Sglang), 88);
        assert!(sglang.contains("On SGLang: "));
        assert!(!sglang.contains("On TensorRT-LLM: "));
        let trtllm = render_explain(info, Some(Engine::Trtllm), 88);
        assert!(trtllm.contains("On TensorRT-LLM: "));
        assert!(!trtllm.contains("On SGLang: "));
        let vllm = render_explain(info, Some(Engine::Vllm), 88);
        assert!(!vllm.contains("On SGLang: ") && !vllm.contains("On TensorRT-LLM: "));
    }

    #[test]
    fn wrapping_stays_within_the_width() {
        for width in [20, 40, 60, 72, 80, 88, 120] {
            for info in all() {
                let text = render_explain(info, None, width);
                for line in text.lines().skip(1) {
                    let body = line.trim_start();
                    let is_command = body == info.command || body.ends_with(info.command);
                    let single_word = !body.contains(' ');
                    assert!(
                        line.chars().count() <= width || single_word || is_command,
                        "{} at width {width}: {line:?}",
                        info.tripwire
                    );
                    assert!(line.starts_with("    "), "{line:?}");
                }
            }
        }
    }

    #[test]
    fn wrapping_keeps_every_word_in_order() {
        let info = get(Tripwire::T9);
        let text = render_explain(info, None, 30);
        let words: Vec<&str> = text
            .lines()
            .skip(1)
            .flat_map(str::split_whitespace)
            .collect();
        let expected: Vec<&str> = info
            .what
            .split_whitespace()
            .chain("Why it matters:".split_whitespace())
            .chain(info.why.split_whitespace())
            .collect();
        assert_eq!(&words[..expected.len()], &expected[..]);
    }

    #[test]
    fn a_long_command_moves_to_its_own_line() {
        let text = render_explain(get(Tripwire::T8), None, 60);
        let command = "inferlint series run.series.jsonl --snapshot after.json --requested N";
        assert!(text.ends_with(&format!("    Check:\n      {command}\n")));
    }

    #[test]
    fn markdown_has_every_tripwire_and_engine_note() {
        let md = tripwires_markdown();
        assert!(md.starts_with("<!-- generated by `cargo xtask docs`, do not edit -->\n"));
        for info in all() {
            assert!(md.contains(&format!(
                "## {} {} (`{}`)",
                info.tripwire, info.name, info.slug
            )));
            assert!(md.contains(&format!("**Check:** `{}`", info.command)));
            for (engine, note) in info.engine_notes {
                let line = format!("**On {}:** {}", engine.name(), note);
                assert!(md.lines().any(|l| l == line), "{line}");
            }
        }
    }

    #[test]
    fn anchors_match_github_headings() {
        assert_eq!(
            anchor(get(Tripwire::T1)),
            "t1-silent-preemption-silent-preemption"
        );
        assert_eq!(
            anchor(get(Tripwire::T9)),
            "t9-concurrency-ceiling-falls-as-sequences-grow-falling-ceiling"
        );
    }
}
