//! The files a run leaves: snapshots (`inferlint.snapshot/1`), series
//! (`inferlint.series/1`), the KV-cache event stream a subscriber received
//! (`inferlint.kv-events/1`), the boot log, the load tool's result file and its console log,
//! the server's OpenTelemetry spans (`inferlint.otlp/1`, or a Collector's file), and the
//! run folder that holds them.
//!
//! Formats are shared with the established Python tool in both directions: the same
//! schema strings and field names, so either tool reads the other's recordings.
//!
//! Each kind of file has its own module; every one opens its input through
//! [`crate::input`], and the names are re-exported here, where callers find them.

mod boot_log;
mod kv_events;
mod load_tool;
mod run_folder;
mod series;
mod series_line;
mod server_requests;
mod snapshot;
mod spans;
mod step_requests;
mod steps;

pub use boot_log::{read_boot_log, BootLogFile};
pub use kv_events::{
    kv_bad_frame_json, kv_batch_json, kv_bound_json, kv_connected_json, kv_drained_batch_json,
    kv_end_json, kv_gap_json, kv_header_json, kv_note_json, kv_rank_gap_json, kv_restart_json,
    kv_subscribed_json, parse_kv_line, read_kv_events, read_kv_events_from, KvBatchLine, KvHeader,
    KvLine, KvTotals, KV_EVENTS_SCHEMA, MAX_KV_LINE_BYTES, MAX_KV_SECONDS, UNRECORDED_HOLE,
};
pub use load_tool::{
    parse_bench_result, read_bench_result, read_bench_result_kept, untimed_requests,
    untimed_requests_in,
};
pub use run_folder::{
    discover_run, RunFiles, KV_EVENTS_FILE, REQUEST_METRICS_DIR, SERVER_REQUESTS_FILE, SPANS_FILE,
    STEPS_FILE,
};
pub use series::{
    fold_series, fold_series_in, read_series, read_series_from, read_series_stats,
    read_series_stats_from, read_series_stats_with, series_ends, SeriesSummary,
};
pub use series_line::{
    parse_series_bytes, parse_series_line, series_header_json, series_sample_json,
    write_series_sample_json, SeriesLine, GPU_OTHER_MIB, GPU_OTHER_UTIL, GPU_SM_MAX_MHZ,
    GPU_SM_MHZ, GPU_THROTTLE, GPU_UTIL, PREFIX_HITS, PREFIX_QUERIES, SERIES_SCHEMA,
};
pub use snapshot::{
    parse_snapshot, parse_snapshot_noted, read_snapshot, read_snapshot_noted, snapshot_json,
    SNAPSHOT_SCHEMA,
};

pub use server_requests::{
    failed_drain_json, read_server_requests, read_server_requests_from, server_record_json,
    server_requests_end_json, server_requests_header_json, server_requests_note_json, DrainTotals,
    ServerRequestsHeader, MAX_RECORD_LINE_BYTES, SERVER_REQUESTS_SCHEMA,
};
pub use spans::{otlp_header_json, read_spans, read_spans_from, OtlpHeader, OTLP_SCHEMA};
pub use step_requests::{
    read_finished_requests, read_finished_requests_from, FinishedRequests, MAX_FINISHED_REQUESTS,
};
pub use steps::{read_steps, read_steps_from, MAX_STEP_LINE_BYTES, STEPS_SCHEMA};

// The input rules every reader keeps, where callers have always found them.
pub use crate::input::{
    for_each_log_line, open_input, size_text, FileError, MAX_LOG_LINE_BYTES, MAX_RESULT_BYTES,
    MAX_SERIES_LINE_BYTES, MAX_SNAPSHOT_BYTES, MAX_SPAN_LINE_BYTES,
};
