//! The evidence keys each check writes, with what each holds: [`KEYS`].
//!
//! A result's evidence ([`crate::status::Evidence`]) is a JSON object in the order the
//! check computed it: the `evidence` of each `--json` entry. Read a value with
//! [`crate::CheckResult::evidence_as`] (`r.evidence_as::<u64>("requested")`). A key is
//! present only when the check had the value; a number the run did not give is absent or
//! `null`, never 0. New keys may be added; a key listed here keeps its meaning.
//!
//! xtask's `every_evidence_key_is_documented` test fails when a check writes a key that
//! [`KEYS`] does not list.

use crate::status::Tripwire;

/// One evidence key: its name, the tripwires whose results may carry it, and what it
/// holds.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The key as the evidence object spells it.
    pub name: &'static str,
    /// The tripwires whose results may carry it (empty: any, such as a restart's keys).
    pub tripwires: &'static [Tripwire],
    /// What it holds, and its unit.
    pub meaning: &'static str,
}

const fn key(name: &'static str, tripwires: &'static [Tripwire], meaning: &'static str) -> Key {
    Key {
        name,
        tripwires,
        meaning,
    }
}

use Tripwire as T;

/// Every evidence key a check writes, grouped by the checks that write it.
pub static KEYS: &[Key] = &[
    // Any check on two readings.
    key("restarted", &[], "true when the server restarted between the two readings (its counters went back or were created anew); the check then says Can't tell"),
    key("counter", &[], "the counter a restart or a rate was read from, or T1's preemption counter"),
    key("before", &[], "the counter's value in the before reading"),
    key("after", &[], "the counter's value in the after reading"),
    key("created_changed", &[], "the counters whose `_created` time moved between the readings (a restart)"),
    key("example", &[], "one counter that shows a restart, by name"),
    key("swapped", &[T::T1, T::T10, T::T15], "true when the before and the after reading are in the wrong order"),
    key("refused_line", &[T::T1, T::T8, T::T9, T::T14], "the first line of the recording that holds a reading that cannot be"),
    key("refused_lines", &[T::T8, T::T9, T::T14], "how many lines of the recording were refused"),
    key("needs", &[], "on a not-checked result: the inputs it needs (`boot_log`, `before`, `after`, `series`, `bench_result`, `requested`, `load`)"),
    key("not_of_this_run", &[], "on a Can't tell whose inputs were set aside as another run's: each as `{input, name, why}` (`input` as `needs` names it, `name` as the user gave it, `why` what placed it outside this run)"),
    key("not_a_benchmark", &[], "on a not-checked result: why the run was not a benchmark"),
    key("contradiction", &[], "why a cross-check made the verdict Can't tell: the two facts of the run that disagree"),
    // Boot log: T12, T5, T6, T4, T11.
    key("kind", &[T::T12, T::T7], "the failure's class as the classifier names it"),
    key("line", &[T::T12, T::T13], "the log line that shows the failure (T12), or the line that owns the port (T13)"),
    key("lineno", &[T::T12], "that line's number in the log"),
    key("lines", &[T::T12], "the lines the log holds, when it ends before the server said it was ready"),
    key("unparsed", &[T::T12], "the lines the parser recognised but could not read"),
    key("phase", &[T::T12, T::T7], "when the failure came: during the boot or after the server was ready (T7)"),
    key("block_size", &[T::T5], "the attention block size the server used, in tokens"),
    key("requested", &[T::T5, T::T6, T::T8, T::T9, T::T17], "T5: the block size asked for; T6: the attention backend asked for; T8, T9, T17: the concurrency the load asked for"),
    key("pool_blocks", &[T::T5], "the KV pool in blocks of that size"),
    key("page_size", &[T::T5], "the page size the hybrid allocator chose, in tokens"),
    key("mamba_page_padding_pct", &[T::T5], "the share of each page padded to fit the state blocks, in percent"),
    key("target", &[T::T6], "the attention backends the server chose for the model"),
    key("drafter", &[T::T6], "the attention backends chosen for the draft model"),
    key("speculative", &[T::T6], "whether the server ran speculative decoding"),
    key("levels", &[T::T4, T::T11], "the distinct KV pools in tokens (T4) or memory budgets (T11) across the starts, lowest first"),
    key("pools", &[T::T4], "each start's KV pool in tokens, labelled by log"),
    key("not_compared", &[T::T4, T::T11], "the logs left out of the comparison, and why"),
    key("consumed_gib", &[T::T11], "memory the server took before its KV cache, per start, in GiB"),
    key("available_kv_cache_gib", &[T::T11], "memory left for the KV cache, per start, in GiB"),
    key("peak_activation_gib", &[T::T11], "the activation peak the profiling run measured, per start, in GiB"),
    key("cudagraph_actual_gib", &[T::T11], "memory the CUDA graphs took, per start, in GiB"),
    key("compiled_fresh", &[T::T11], "whether each start compiled afresh rather than from the cache"),
    // Snapshots: T1, T10, T15.
    key("preemptions", &[T::T1], "preemptions (retractions) between the readings"),
    key("engine", &[T::T1, T::T9, T::T14], "the engine whose counters or gauges were read, where it changes the reading"),
    key("series", &[T::T1], "the metric T1 read: the preemption counter, or TensorRT-LLM's paused-requests gauge"),
    key("retractions_in_log", &[T::T1], "SGLang: retractions the log printed during the run"),
    key("paused_readings", &[T::T1], "TensorRT-LLM: readings of the recording with a paused request"),
    key("pause_fragments", &[T::T1], "TensorRT-LLM: pause lines of the log cut into fragments"),
    key("paused_in_log", &[T::T1], "TensorRT-LLM: requests the log says were paused"),
    key("paused_outside_run", &[T::T1], "TensorRT-LLM: pauses the log places outside the run"),
    key("paused_unplaced", &[T::T1], "TensorRT-LLM: pauses whose time the log does not give"),
    key("served_in_log", &[T::T1], "TensorRT-LLM: requests the log says were served"),
    key("served_outside_run", &[T::T1], "TensorRT-LLM: requests served outside the run"),
    key("finished_by_after", &[T::T1], "TensorRT-LLM: requests finished by the after reading"),
    key("log_clock_offset_s", &[T::T1], "TensorRT-LLM: the log's clock against the readings', in seconds"),
    key("tokens", &[T::T10], "output tokens the server generated between the readings"),
    key("span_s", &[T::T10], "seconds between the readings"),
    key("span_uncertainty_s", &[T::T10], "how far the span may be off, from each reading's latency, in seconds"),
    key("wall_step_s", &[T::T10], "seconds the wall clock stepped (negative: back) while one server process on this host answered both readings; the span is the monotonic clock's"),
    key("rate_per_s", &[T::T10], "output tokens per second over the span"),
    key("integer_second_span_s", &[T::T10], "the span as a whole-second timer would give it"),
    key("integer_second_rate_per_s", &[T::T10], "the rate over that span"),
    key("integer_second_error", &[T::T10], "the whole-second rate's error against the true one, as a fraction"),
    key("run_output_throughput", &[T::T10], "the run's throughput, output tokens per second: the load tool's own figure over the requests it timed where it measured one, else this rate (see run_output_throughput_from)"),
    key("run_output_throughput_from", &[T::T10], "where run_output_throughput came from: result_file (the load tool's) or readings (T10's rate over the readings' window)"),
    key("readings", &[T::T1, T::T2], "T1 (TensorRT-LLM): readings of the recording; T2: each reading of the GPUs"),
    key("result_file", &[T::T15, T::T18, T::T20], "the load tool's result file, as messages name it"),
    key("client_completed", &[T::T15], "requests the load tool counts as completed"),
    key("client_failed", &[T::T15, T::T18], "requests the load tool counts as failed"),
    key("client_output_tokens", &[T::T15], "output tokens the load tool counts"),
    key("server_finished", &[T::T15, T::T18], "requests the server finished between the readings"),
    key("server_output_tokens", &[T::T15], "output tokens the server generated between the readings"),
    key("expected_extra_requests", &[T::T15], "untimed requests the load tool announced (test, warm-up)"),
    key("untimed_request_by_shape", &[T::T15], "the one request beyond the load tool's count was taken as its default test request by its size, no console output saying so"),
    key("console_missing", &[T::T15], "the load tool's console output that would say whether it sent its test request (load.log)"),
    key("extra_requests", &[T::T15], "requests the server finished beyond the client's count"),
    key("extra_output_tokens", &[T::T15], "output tokens the server generated beyond the client's count"),
    key("other_requests", &[T::T15], "requests of other traffic: those the server finished beyond the client's count and any untimed request it announced"),
    key("other_traffic", &[T::T15], "the other traffic described: requests, records (the server's records of them, where its spans say), prompt_tokens and output_tokens (their mean per request), from (server_records or counters: the server's counters less the load tool's own counts), example_id"),
    key("includes_other_requests", &[T::T1, T::T10, T::T16, T::T18, T::T20], "requests of other traffic (T15) the server's counters hold beside the load's: the figures of this verdict include them (T20: left out of its comparison)"),
    key("server_left_out", &[T::T20], "why T20 compared the load's own counts without the server's: its counters hold other traffic (source, because)"),
    // Ledger: T18, T20.
    key("tool", &[T::T18, T::T20, T::T23, T::T24, T::T25], "the load tool's key (`vllm-bench`, `guidellm`, `harness`, ...)"),
    key("tool_version", &[T::T18, T::T20], "the load tool's version, when its file says"),
    key("sent", &[T::T18, T::T17], "requests the timed run sent"),
    key("completed", &[T::T18], "requests that came back whole"),
    key("client_incomplete", &[T::T18], "requests still open or cancelled when the tool stopped"),
    key("client_unaccounted", &[T::T18], "requests sent that the tool counts neither as completed nor as failed"),
    key("client_empty", &[T::T18], "completed requests with no output token"),
    key("client_contradiction", &[T::T18], "how the result file's own counts contradict each other (more ended than sent, more records of an outcome than its count)"),
    key("failure_reasons", &[T::T18], "the failed requests by the error the tool recorded"),
    key("failures_counted", &[T::T18], "how the tool counts failures: `counted`, `per_request_only`, `not_counted`"),
    key("server_aborted", &[T::T18], "requests the server counted as aborted"),
    key("server_errored", &[T::T18], "requests the server counted as ended in an error"),
    key("server_short", &[T::T18], "requests the server finished short of the output asked for"),
    key("untimed_requests", &[T::T18], "untimed requests allowed for"),
    key("last_token_s", &[T::T18], "when the recording last saw a token generated, in seconds from its start"),
    key("completed_after_last_token", &[T::T18], "requests the tool says completed after the server stopped generating"),
    key("accounts", &[T::T18], "each part of a result file summed into the account (benchmarks, stages)"),
    key("comparisons", &[T::T20], "each length compared: the side, the figure, the server's and the client's"),
    key("server_source", &[T::T20], "where the server's lengths came from: counters or per-request usage"),
    key("client_prompt_per_request", &[T::T20], "prompt tokens per request as the client counted them"),
    key("client_output_per_request", &[T::T20], "output tokens per request as the client counted them"),
    key("asked_prompt_per_request", &[T::T20], "prompt tokens per request the load asked for"),
    key("asked_output_per_request", &[T::T20], "output tokens per request the load asked for"),
    key("advertised_prefix_tokens", &[T::T20], "the shared prefix the load tool put before each prompt, counted in the prompt asked for"),
    key("advertised_range_ratio", &[T::T20], "the range ratio the load tool was given (lengths drawn around the asked ones)"),
    key("ignore_eos", &[T::T20], "whether the load asked for the whole output length"),
    key("requests_differing", &[T::T20], "requests whose own lengths differ from the asked ones"),
    key("worst_side", &[T::T20], "the side (prompt or output) furthest from the asked length"),
    key("worst_against", &[T::T20], "what it was compared against"),
    key("worst_ratio", &[T::T20], "its ratio to the asked length"),
    // Recording: T14, T9, T8.
    key("reported_num_gpu_blocks", &[T::T14], "the KV blocks `cache_config_info` reports"),
    key("inferred_usable_blocks", &[T::T14], "the usable blocks the usage gauge's readings imply"),
    key("tested_against_snapshot", &[T::T14], "true when the readings were too few to infer the count blind and were tested against the two counts the after snapshot names instead"),
    key("distinct_readings", &[T::T14], "distinct usage readings the inference used"),
    key("engines", &[T::T14], "data-parallel engines summed over"),
    key("reading_grid", &[T::T14], "the grid every usage reading sat on (1/n), when coarser than the block count"),
    key("ceiling_min", &[T::T9], "the fewest requests that would have filled the cache, over the run"),
    key("ceiling_max", &[T::T9], "the most requests that would have filled the cache"),
    key("ceiling_at_fullest", &[T::T9], "the ceiling when the cache was fullest"),
    key("share_min", &[T::T9], "the smallest share of the cache one request held"),
    key("share_max", &[T::T9], "the largest share of the cache one request held"),
    key("samples", &[T::T9], "readings the ceiling was computed from"),
    key("full_samples", &[T::T9], "busy samples with the cache at least 90% used, the ones a ceiling is judged on"),
    key("busy_samples", &[T::T9], "samples with requests running and KV cache in use"),
    key("usage_max", &[T::T9], "the most of the cache in use on a busy sample"),
    key("basis", &[T::T9, T::T22], "T9: what the ceiling was computed from (the usage gauge, the token pool); T22: `counters` where the replicas' finished counters judged it, the recordings being too thin"),
    key("running_on_full_samples", &[T::T9], "the requests the server ran on every saturated sample, when that number never moved"),
    key("usable_blocks", &[T::T9], "the usable blocks T14 inferred, when it passed"),
    key("blocks_per_request_min", &[T::T9], "the fewest blocks one request held"),
    key("blocks_per_request_max", &[T::T9], "the most blocks one request held"),
    key("gauges_lag", &[T::T8, T::T9], "true for an engine that updates its gauges only when a request completes"),
    key("peak_running", &[T::T8], "the most requests the server ran at once"),
    key("peak_in_flight", &[T::T8, T::T17], "the most requests running or waiting at once"),
    key("boot_line_max_concurrency", &[T::T8], "the concurrency the boot log says the cache holds"),
    key("boot_line_request_len", &[T::T8], "the request length that figure assumes, in tokens"),
    key("max_num_queued_reqs", &[T::T8], "TensorRT-LLM's cap on queued requests, when set"),
    key("max_num_queued_tokens", &[T::T8], "TensorRT-LLM's cap on queued tokens, when set"),
    key("running_cap", &[T::T8], "the server's cap on running requests (`--max-num-seqs` and its kin)"),
    // The GPU and the processes: T2, T3.
    key("gpus", &[T::T2], "each GPU: its index, name, memory used and total, and the processes that hold it"),
    key("max_used_mib", &[T::T2], "the most memory a GPU may use and count as clear, in MiB"),
    key("consecutive", &[T::T2], "clear readings in a row needed"),
    key("timeout_s", &[T::T2], "seconds the check waited for a clear card"),
    key("signalled", &[T::T3], "the server processes signalled, each with its pid, name and command line"),
    key("killed", &[T::T3], "those that had to be killed after the grace period"),
    key("pid", &[T::T3, T::T13], "a process id: a server process (T3), the owner of the port (T13)"),
    key("name", &[T::T3], "a process's name"),
    key("command_line", &[T::T3], "a process's command line"),
    key("parent", &[T::T3], "a process's parent pid"),
    key("why", &[T::T3], "why a process counts as a server's"),
    key("pattern", &[T::T3], "a `pkill -f` pattern tried against the process table"),
    key("would_miss", &[T::T3], "server processes that pattern would miss"),
    key("would_wrongly_hit", &[T::T3], "processes that pattern would wrongly kill (the caller's own shell)"),
    // The prefix cache: T16.
    key("hit_counter", &[T::T16], "the engine's counter of prompt tokens the prefix cache served, when the counters could not be read"),
    key("queried_counter", &[T::T16], "the engine's counter of prompt tokens looked up in the prefix cache, when the counters could not be read"),
    key("hit_tokens", &[T::T16], "prompt tokens the prefix cache served during the run"),
    key("queried_tokens", &[T::T16], "prompt tokens looked up in the prefix cache during the run"),
    key("source", &[T::T16], "where the counters were read: `snapshots` (before and after) or `series`"),
    key("warn_share", &[T::T16], "the share of the prompt tokens served from the cache above which T16 warns, 0 to 1"),
    key("cache_hits_expected", &[T::T16], "true when the user said the run is meant to use the cache (`--expect-cache-hits`): a high share then passes"),
    // The client's shortfall: T17.
    key("request_rate", &[T::T17], "the rate the load was paced at, requests per second: the concurrency is then a limit, not a number to hold"),
    key("client_most_open", &[T::T17], "the most requests the load tool's records show open at once"),
    key("client_short_share", &[T::T17], "the share of the load's sending window with fewer open than asked for, 0 to 1"),
    key("sending_window_s", &[T::T17], "that window, seconds: from when the load first had the number asked for open to its last send"),
    key("samples_with_room", &[T::T17], "samples with fewer in flight than asked for while the server had room (nothing waiting, KV not full, below its running cap)"),
    key("failed", &[T::T17], "requests that failed: each left the server at once, so the recording cannot show how many the client kept open"),
    // The cold engine: T19.
    key("compiles_in_run", &[T::T19], "compile or graph-capture lines the boot log stamped inside the run's window"),
    key("compiles_unplaced", &[T::T19], "such lines after the ready line that could not be placed against the run"),
    key("compiles_outside_run", &[T::T19], "such lines after the ready line placed before or after the run"),
    key("warmed_by", &[T::T19], "what warmed the engine before the timed requests (requests answered before, an untimed request, a warm-up period); `null` when nothing did"),
    key("first_wave", &[T::T19], "requests in the first wave of the load tool's records"),
    key("first_wave_ttft_s", &[T::T19], "the first wave's median time to first token, seconds"),
    key("rest_ttft_s", &[T::T19], "the later requests' median time to first token, seconds"),
    key("first_wave_prefill_bound_s", &[T::T19], "the most the first wave's time to first token could be from prefilling its own prompts at the later requests' rate, seconds"),
    key("first_line", &[T::T19], "the line number of the first compile or graph-capture line in the run (or of the first not placed)"),
    // The GPU shared or throttled: T21.
    key("gpu_readings", &[T::T21], "samples of the recording with a GPU reading"),
    key("busy_readings", &[T::T21], "those taken while requests ran"),
    key("other_mib_max", &[T::T21], "the most memory other processes held on the server's GPUs in a busy reading, MiB"),
    key("other_util_max", &[T::T21], "the highest SM use of another process on the server's GPUs in a busy reading, percent"),
    key("slowdown_readings", &[T::T21], "busy readings with a slowdown reason (heat, hardware)"),
    key("power_capped_readings", &[T::T21], "busy readings with the SM clock below 90% of its maximum under the software power cap"),
    key("reasons_seen", &[T::T21], "every clock-event (throttle) reason NVML gave in a busy reading, by name"),
    key("lowest_clock_share", &[T::T21], "the lowest SM clock over its maximum in a busy reading, 0 to 1"),
    // Live: T7, T13.
    key("model", &[T::T7], "the model the probe asked for"),
    key("first", &[T::T7], "the first request's answer: its status and time"),
    key("burst", &[T::T7], "the burst of requests at once: each one's answer"),
    key("alive_after", &[T::T7], "whether the server still answered after the burst"),
    key("port", &[T::T13], "the port the server is to listen on"),
    // T22, on the fleet; `replica` on every result of one replica in a fleet's --json.
    key("replica", &[], "in a fleet's report, the replica (its pod, instance or address) a result belongs to"),
    key("replicas", &[T::T22], "the replicas' names, in the fleet's order"),
    key("shared_slots", &[T::T22], "moments of the fleet's schedule at which two or more replicas were read"),
    key("room_usage_below", &[T::T22], "a replica with nothing waiting had room when its KV cache was less full than this (0 to 1)"),
    key("busy_replica", &[T::T22], "the replica that queued or preempted while another had room, most often"),
    key("idle_replica", &[T::T22], "the replica that had room at those moments"),
    key("busy_moments", &[T::T22], "the busy replica's moments with requests waiting or preempted (and another replica read)"),
    key("moments_with_room_elsewhere", &[T::T22], "of those, the moments at which the idle replica had room"),
    key("busy_moments_not_compared", &[T::T22], "the busy replica's moments under pressure at which no other replica was read (its recorder missed the slot)"),
    key("share", &[T::T16, T::T22], "T16: the share of the run's prompt tokens the prefix cache served; T22: moments_with_room_elsewhere over busy_moments; 0 to 1"),
    key("load_s", &[T::T8, T::T17], "the load's span the recording was held against, seconds (the load tool's records, else the readings around it)"),
    key("covered_s", &[T::T8, T::T17], "the part of the load's span between the recording's first and last sample, seconds"),
    key("samples_in_load", &[T::T8, T::T17], "about how many samples fell inside the load's span, at the recording's spacing"),
    key("busy_finished", &[T::T22], "requests the busy replica's own counter says it finished between its readings"),
    key("idle_finished", &[T::T22], "requests the idle replica's own counter says it finished between its readings (none)"),
    key("interval_s", &[T::T22], "seconds between the moments of the fleet's schedule"),
    key("off_setting", &[T::T16], "the boot log's setting that turned the prefix cache off (`enable_prefix_caching`, `disable_radix_cache`)"),
    // T23: the client's own wait.
    key("loop", &[T::T23], "how the load paced its requests: `open` (a request rate: each due at its place in the schedule) or `closed` (a concurrency limit: each due when a slot freed)"),
    key("requests", &[T::T23, T::T24, T::T25], "the load tool's requests with a send time"),
    key("waited", &[T::T23], "requests that waited in the client beyond 50 ms and a tenth of their own latency before they were sent"),
    key("wait_p50_s", &[T::T23], "the median of each request's wait in the client before its send, seconds"),
    key("wait_p99_s", &[T::T23], "the 99th percentile (nearest rank) of that wait, seconds"),
    key("latency_p50_s", &[T::T23], "the median latency from send to last token of the completed requests, seconds, as the load tool counts it"),
    key("latency_with_wait_p50_s", &[T::T23], "the same median counted from when each request was due, seconds"),
    key("concurrency", &[T::T23], "the concurrency limit of a closed loop (the load tool's, else --requested)"),
    // T24 and T25: the load tool's rows joined with the server's own records.
    key("joined", &[T::T24, T::T25], "requests joined with the server's own record of them (by id, or by send time and length) that carry what the check compares"),
    key("client_ttft_p50_s", &[T::T24], "the load tool's median time to first token over the joined requests, seconds, from its send"),
    key("server_ttft_p50_s", &[T::T24], "the server's median time to first token over the same requests, seconds, from its receipt"),
    key("difference_p50_s", &[T::T24], "the median of each joined request's load-tool TTFT minus the server's, seconds"),
    key("tolerance_s", &[T::T24], "how far the medians may differ before the two TTFTs count as different figures: 25 ms or 10% of the server's, whichever is larger"),
    key("server_ttft_from_scheduling_p50_s", &[T::T24], "the server's median TTFT counted from each request's first scheduling (per-request metrics), seconds"),
    key("tool_counted_tokens", &[T::T25], "output tokens the load tool counted for the joined requests"),
    key("server_generated_tokens", &[T::T25], "output tokens the server generated for the same requests, by its own records"),
    key("chunks", &[T::T25], "streamed chunks that carried text to the load tool, over the joined requests"),
    key("tokens_per_chunk", &[T::T25], "the server's generated tokens over the load tool's chunks"),
    // T26: the KV event stream.
    key("batches", &[T::T26], "KV event batches received, replayed ones included"),
    key("replayed", &[T::T26], "batches received through the engine's replay endpoint after a hole"),
    key("missed", &[T::T26], "batches lost: holes in the sequence numbers the replay did not fill"),
    key("stored_blocks", &[T::T26], "blocks the received events stored"),
    key("removed_blocks", &[T::T26], "blocks the received events removed"),
    key("first_seq", &[T::T26], "the first sequence number received"),
    key("last_seq", &[T::T26], "the last sequence number received"),
    key("restarts", &[T::T26], "times the engine's KV event publisher started again while the subscriber ran (its sequence went back); T26 then says Can't tell"),
    key("drained", &[T::T26], "the events were drained from an endpoint that forgets what it returns (TensorRT-LLM's /kv_cache_events), numbered per event"),    // T29, T30, T31: each engine step (steps.jsonl).
    key("steps", &[T::T29, T::T30, T::T31], "step lines the step file holds"),
    key("queued_steps", &[T::T29], "steps that saw requests waiting or deferred"),
    key("threshold_s", &[T::T29], "the longest wait without progress that passes: the larger of 2 s and 20 times the slowest 1% of step times, seconds"),
    key("dropped_steps", &[T::T29, T::T31], "steps the plugin dropped (its gap lines), over the file (T29) or between the readings (T31)"),
    key("stalls", &[T::T29], "stretches of waiting without a step that admitted or generated, at or over the threshold"),
    key("longest_stall_s", &[T::T29], "the longest such stretch, seconds"),
    key("stall_from_wall", &[T::T29], "when it began, Unix seconds"),
    key("waiting", &[T::T29], "the most requests waiting (not deferred) during it"),
    key("deferred", &[T::T29], "the most requests deferred during it"),
    key("idle_steps", &[T::T29], "steps that ran during it and processed no token"),
    key("decode_steps", &[T::T30], "steps that decoded (dr > 0) and gave their time"),
    key("prefill_beside_decode_steps", &[T::T30], "of them, steps that carried prefill tokens too (pt > 0)"),
    key("decode_only_steps", &[T::T30], "of them, steps without a prefill"),
    key("slowdown", &[T::T30], "the prefill-carrying steps' time over that of decode-only steps of the same decode batch (by size up to 16, then 10% buckets); null where none compares"),
    key("p99_step_ms", &[T::T30], "the decode steps' 99th percentile step time, milliseconds (2% bins)"),
    key("tail_steps", &[T::T30], "decode steps at or above it"),
    key("tail_with_prefill", &[T::T30], "of them, steps that carried a prefill"),
    key("preempted", &[T::T31], "requests the steps preempted, between the readings (the whole file without them)"),
    key("preempting_steps", &[T::T31], "steps that preempted"),
    key("counter_moved", &[T::T31], "the server's preemption counter's move between the readings"),
    key("bursts", &[T::T31], "preemptions within 250 ms of the first of a run of them (one move of the 4 Hz recording's counter): preempted, from_step, to_step, t_wall, span_ms; the first 64"),
    key("preempted_at", &[T::T31], "each preempting step: its ordinal in the file, its iteration index, its wall clock and its preemptions; the first 64"),
];

/// The entry for one key, if a check writes it.
pub fn get(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_listed_once() {
        let mut names: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a key is listed twice");
        assert!(get("preemptions").is_some_and(|k| k.tripwires == [T::T1]));
    }
}
