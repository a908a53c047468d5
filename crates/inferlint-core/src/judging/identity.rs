//! Which inputs belong to the run: each one tied to the run by what it holds, once,
//! before any check, advice or sentence uses it.
//!
//! A run's files are found by name and by shape; neither proves they were written by one
//! run. Another run's result file, the next run's recording, a before reading of another
//! server: each reads cleanly and each would put another run's numbers under a pass. So
//! every input is placed here against the others by what it carries itself:
//!
//! - the before and after readings by their clocks: the monotonic clock where both carry
//!   it and they come from one boot of the host, the wall clock otherwise. Readings of
//!   different boots (their monotonic and wall spans disagree while the server's start
//!   stamps moved, or cannot say) or whose after reading is not later than the before
//!   reading bracket no run: both are set aside. A wall clock that stepped between two
//!   readings of one server process is a note: the monotonic clock times the run.
//! - the recording by its samples' stamps against the readings (monotonic where they share
//!   a boot), and by what its reader refused (a second header, time going back): a
//!   recording taken wholly before the before reading or after the after reading, or two
//!   recordings in one file, is not this run's.
//! - the load tool's result file by its model (against the served model name and path in
//!   the boot log and the `model_name` labels of the readings), by the server it names
//!   (SGLang's `server_info`), and by its own times: absolute times where it has them, and
//!   the zoneless time it was saved at (`vllm bench serve`'s `date`), which must fall
//!   between the readings in some time zone that exists.
//!
//! An input that does not fit is moved to [`Run::rejected`]: no check, figure or sentence
//! reads it, and each check that needed it says Can't tell, naming why. When a folder
//! holds several result files of one tool, [`choose_result`] keeps the one that fits and
//! refuses when none or several do.

use std::fmt::Write as _;

use crate::judging::checks::counters::restart_between;
use crate::judging::checks::series::{SeriesStats, SeriesWindow};
use crate::model::client::ClientAccount;
use crate::model::{BootFacts, PyValue, Snapshot};
use crate::run::model::{input, Run};

/// Seconds two programs' readings of one wall clock may disagree by when they are placed
/// against each other: the load tool's time is taken by another process than the
/// recorder's, and the saved time is written to the second.
const WALL_TOLERANCE_S: f64 = 2.0;

/// Seconds a recording may lie outside the readings on the wall clock alone (no shared
/// monotonic clock), as the cross-checks have allowed.
const SERIES_WALL_TOLERANCE_S: f64 = 0.5;

/// Seconds the wall and monotonic clocks of one boot may drift apart between two
/// readings before they are taken for two boots (NTP slews far less than this).
const SAME_BOOT_S: f64 = 1.0;

/// The UTC offsets some time zone of the IANA database keeps at any of `instants` (Unix
/// seconds), in seconds east of UTC, each once, in order: about 40 of them (UTC-12:00 to
/// UTC+14:00, with a few :30 and :45 zones), never a quarter hour no zone has
/// (UTC-00:15). A time saved without a zone can only have been read off one of these.
pub fn zone_offsets(instants: &[f64]) -> Vec<i32> {
    use chrono::{Offset, TimeZone};
    let mut offsets: Vec<i32> = instants
        .iter()
        .filter(|t| t.is_finite())
        .filter_map(|t| chrono::DateTime::from_timestamp(t.floor() as i64, 0))
        .flat_map(|at| {
            chrono_tz::TZ_VARIANTS.iter().map(move |zone| {
                zone.offset_from_utc_datetime(&at.naive_utc())
                    .fix()
                    .local_minus_utc()
            })
        })
        .collect();
    offsets.sort_unstable();
    offsets.dedup();
    offsets
}

/// `UTC+02:00`, `UTC-09:30` for an offset in seconds east of UTC.
fn offset_words(offset_s: i32) -> String {
    let sign = if offset_s < 0 { '-' } else { '+' };
    let minutes = offset_s.unsigned_abs() / 60;
    format!("UTC{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

/// Whether a result saved at `saved` (a zoneless local time read as if it were UTC),
/// after a run of `duration` seconds, lies between the readings' `start` and `end` when
/// the clock that wrote it kept `offset_s`.
fn saved_fits(
    saved: f64,
    resolution: f64,
    duration: f64,
    (start, end): (f64, f64),
    offset_s: i32,
) -> bool {
    let saved_utc = saved - f64::from(offset_s);
    saved_utc - duration >= start - WALL_TOLERANCE_S - resolution
        && saved_utc <= end + WALL_TOLERANCE_S
}

pub use crate::run::model::Rejected;

/// How one result file fits the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Fit {
    /// Its model, server and times agree with the run's; the notes say what was placed.
    Fits,
    /// Nothing in it can be placed against the run (no time, no model), so nothing
    /// contradicts it either: the reason.
    Unplaced(String),
    /// It is another run's: the reason.
    DoesNotFit(String),
}

/// The result file the run keeps among several candidates, and what to tell the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Its index among the candidates.
    pub index: usize,
    /// What was set aside and why.
    pub notes: Vec<String>,
}

/// The names the server answers to: the model path and served names from the boot logs,
/// and the `model_name` labels of the readings; and whether the model's path is among
/// them.
///
/// A served name (`--served-model-name`, a `model_name` label) is an alias the server was
/// given for its model: a result file may name the model behind it instead (`vllm bench
/// serve --model /models/Qwen3-8B --served-model-name qwen3-8b` writes the path as its
/// `model_id`). Only the boot log says which model the alias stands for, so a name that
/// matches none can be called another model's only when the boot log gives the path.
struct ServedNames {
    names: Vec<String>,
    path_known: bool,
}

fn served_names(boots: &[(String, BootFacts)], readings: &[&Snapshot]) -> ServedNames {
    let mut names: Vec<String> = Vec::new();
    let mut add = |name: &str| {
        let name = name.trim().trim_matches('\'').trim_end_matches('/');
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
        !name.is_empty()
    };
    let mut path_known = false;
    for (_, boot) in boots {
        if let Some(model) = &boot.model {
            path_known |= add(model);
        }
        for key in ["served_model_name", "model", "model_path", "model_tag"] {
            let is_path = key != "served_model_name";
            match boot.setting(key) {
                Some(PyValue::Str(s)) => path_known |= add(s) && is_path,
                Some(PyValue::List(items)) => {
                    for item in items {
                        if let PyValue::Str(s) = item {
                            path_known |= add(s) && is_path;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    for reading in readings {
        for sample in reading.metrics.samples() {
            if let Some(name) = sample.label("model_name") {
                add(name);
            }
        }
    }
    ServedNames { names, path_known }
}

/// Whether a model name a load tool wrote is one of the server's: equal, or the same
/// last path part (the client and the server may see one model under two mount points).
fn same_model(asked: &str, names: &[String]) -> bool {
    let asked = asked.trim().trim_end_matches('/');
    let last = |s: &str| s.rsplit('/').next().unwrap_or(s).to_owned();
    names
        .iter()
        .any(|n| n == asked || (last(n) == last(asked) && !last(asked).is_empty()))
}

/// `2026-10-01 03:47:07` for Unix seconds (UTC), to the second; the number itself when it
/// is no date.
fn utc_words(unix_s: f64) -> String {
    crate::story::fmt::utc(unix_s)
        .map(|t| t.trim_end_matches(" UTC").to_owned())
        .unwrap_or_else(|| format!("{unix_s} s"))
}

pub use crate::model::window;

/// How a result file fits the run the readings bracket and the boot logs describe.
pub fn result_fit(
    account: &ClientAccount,
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
    boots: &[(String, BootFacts)],
) -> Fit {
    let id = &account.identity;
    let readings: Vec<&Snapshot> = before.into_iter().chain(after).collect();
    let ServedNames { names, path_known } = served_names(boots, &readings);
    let mut placed = false;
    // A load that asked this server for a model it does not serve got every request
    // refused (vLLM and SGLang answer 404 to an unknown name): a result that completed
    // none may be this run's all the same, and its failures are the finding (T18). One
    // that completed requests under another name was served by another server.
    let refused_all = account.completed == Some(0);
    for (what, model, refusable) in [
        ("names the model", id.model.as_deref(), true),
        (
            "names the server's model",
            id.server_model.as_deref(),
            false,
        ),
    ] {
        let Some(model) = model.filter(|m| !m.trim().is_empty()) else {
            continue;
        };
        if names.is_empty() {
            continue;
        }
        if same_model(model, &names) {
            placed = true;
        } else if path_known && !(refusable && refused_all) {
            return Fit::DoesNotFit(format!(
                "it {what} {model}, but this server serves {}",
                names.join(", ")
            ));
        }
        // Else only aliases are known, and the name may be the model behind one of them;
        // or nothing was served under it.
    }
    if let (Some(version), Some(boot)) = (&id.server_version, boots.last().map(|(_, b)| b)) {
        if let Some(served) = &boot.version {
            placed = true;
            if version.trim_start_matches('v') != served.trim_start_matches('v') {
                return Fit::DoesNotFit(format!(
                    "it names a server of version {version}, but the boot log's is {served}"
                ));
            }
        }
    }
    if let Some(port) = id.server_port {
        // The port a server names is the one it was started with (SGLang's `server_info`
        // is its launch settings), which its boot log prints too; the readings' address
        // may reach it through another (a container's mapped port, a proxy), so it says
        // the port only without a boot log that does.
        let launched = boots.last().and_then(|(_, b)| match b.setting("port") {
            Some(PyValue::Int(p)) => u16::try_from(*p).ok(),
            _ => None,
        });
        let url = readings.first().map(|r| r.url.as_str());
        match (launched, url.and_then(url_port)) {
            (Some(launched), _) => {
                placed = true;
                if launched != port {
                    return Fit::DoesNotFit(format!(
                        "it names a server on port {port}, but the boot log's server was started on port {launched}"
                    ));
                }
            }
            (None, Some(read)) => {
                placed = true;
                if read != port {
                    return Fit::DoesNotFit(format!(
                        "it names a server on port {port}, but the readings were taken from {}",
                        url.unwrap_or_default()
                    ));
                }
            }
            (None, None) => {}
        }
    }
    let Some((start, end)) = window(before, after) else {
        return if placed {
            Fit::Fits
        } else {
            Fit::Unplaced("the readings carry no wall clock to place it against".to_owned())
        };
    };
    let duration = account
        .duration
        .filter(|d| d.is_finite() && *d >= 0.0)
        .unwrap_or(0.0);
    let span = format!(
        "the readings' {} to {} UTC",
        utc_words(start),
        utc_words(end).split_once(' ').map_or("", |(_, t)| t)
    );
    let absolute = match (id.start_unix_s, id.end_unix_s) {
        (Some(s), Some(e)) => Some((s, e)),
        (Some(s), None) => Some((s, s + duration)),
        (None, Some(e)) => Some((e - duration, e)),
        (None, None) => unix_span(account),
    };
    if let Some((s, e)) = absolute.filter(|(s, e)| s.is_finite() && e.is_finite()) {
        placed = true;
        if s < start - WALL_TOLERANCE_S || e > end + WALL_TOLERANCE_S {
            return Fit::DoesNotFit(format!(
                "it ran from {} to {} UTC, outside {span}",
                utc_words(s),
                utc_words(e).split_once(' ').map_or("", |(_, t)| t)
            ));
        }
    }
    if let Some(saved) = id.saved_local_s.filter(|s| s.is_finite()) {
        placed = true;
        let resolution = id.saved_resolution_s.max(0.0);
        let fits_in = |offset: &i32| saved_fits(saved, resolution, duration, (start, end), *offset);
        if !zone_offsets(&[start, end]).iter().any(fits_in) {
            let mut why = format!(
                "it was saved at {} (a time of day without a zone)",
                utc_words(saved)
            );
            if duration > 0.0 {
                let _ = write!(why, " after a run of {duration:.1} s");
            }
            let _ = write!(why, ", which fits {span} in no time zone");
            return Fit::DoesNotFit(why);
        }
    }
    if placed {
        Fit::Fits
    } else {
        Fit::Unplaced("it carries no time and names no model".to_owned())
    }
}

/// The port of `http://host:port/...`, or the scheme's default.
fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split('/').next()?;
    let host_port = authority.rsplit('@').next()?;
    match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.contains('[') => port.parse().ok(),
        _ => match scheme {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        },
    }
}

/// The span of a result's per-request times when they are Unix times.
fn unix_span(account: &ClientAccount) -> Option<(f64, f64)> {
    if account.clock != Some(crate::model::client::RequestClock::Unix) {
        return None;
    }
    if let (Some(s), Some(e)) = (account.span.start_s, account.span.end_s) {
        return Some((s, e));
    }
    account.records_span()
}

/// Among several result files found for one run, the one that fits: the one file that
/// fits (or, when none can be placed either way, the only candidate). Refused, naming
/// each file, when none fits, or when several fit or cannot be told apart.
pub fn choose_result(
    candidates: &[(String, ClientAccount)],
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
    boots: &[(String, BootFacts)],
) -> Result<Chosen, String> {
    let fits: Vec<Fit> = candidates
        .iter()
        .map(|(_, account)| result_fit(account, before, after, boots))
        .collect();
    let fitting: Vec<usize> = (0..candidates.len())
        .filter(|i| fits[*i] == Fit::Fits)
        .collect();
    let unplaced: Vec<usize> = (0..candidates.len())
        .filter(|i| matches!(fits[*i], Fit::Unplaced(_)))
        .collect();
    let described = |i: usize| match &fits[i] {
        Fit::Fits => format!("{} fits", candidates[i].0),
        Fit::Unplaced(why) | Fit::DoesNotFit(why) => format!("{}: {why}", candidates[i].0),
    };
    let all = || {
        (0..candidates.len())
            .map(described)
            .collect::<Vec<_>>()
            .join("; ")
    };
    match (fitting.as_slice(), unplaced.as_slice()) {
        ([one], []) => Ok(Chosen {
            index: *one,
            notes: (0..candidates.len())
                .filter(|i| i != one)
                .map(|i| format!("left out {}", described(i)))
                .collect(),
        }),
        ([], [one]) if candidates.len() == 1 => Ok(Chosen {
            index: *one,
            notes: Vec::new(),
        }),
        ([], []) if candidates.len() == 1 => Ok(Chosen {
            index: 0,
            notes: Vec::new(),
        }),
        ([], []) => Err(format!(
            "no result file here is of this run ({}); name the run's with --bench-result",
            all()
        )),
        _ => Err(format!(
            "several result files could be this run's ({}); name the run's with --bench-result",
            all()
        )),
    }
}

/// The host's boot time as one reading's clocks put it: wall minus monotonic.
fn boot_offset(wall: Option<f64>, mono_ns: Option<i64>) -> Option<f64> {
    Some(wall? - mono_ns? as f64 / 1e9)
}

/// Why the two readings bracket no run, if they do not; a note when they do but a clock
/// stepped.
fn readings_fit(before: &Snapshot, after: &Snapshot) -> Result<Option<String>, String> {
    let same_boot = match (
        boot_offset(before.t_wall, before.t_mono_ns),
        boot_offset(after.t_wall, after.t_mono_ns),
    ) {
        (Some(a), Some(b)) => Some((a - b).abs() <= SAME_BOOT_S),
        _ => None,
    };
    let one_process = restart_between(before, after).is_none();
    if crate::judging::checks::counters::out_of_order(before, after).is_some() {
        // Swapped readings are of this run, given in the wrong order: the loader refuses
        // them and the checks say so by name.
        return Ok(None);
    }
    match (same_boot, before.t_mono_ns, after.t_mono_ns) {
        (Some(true), Some(b), Some(a)) if a == b => Err(
            "by the host's monotonic clock both readings were taken at the same moment, so no run lies between them".to_owned(),
        ),
        (Some(false), Some(b), Some(a)) => {
            let (w_b, w_a) = (before.t_wall.unwrap_or(0.0), after.t_wall.unwrap_or(0.0));
            let mono = (a - b) as f64 / 1e9;
            let wall = w_a - w_b;
            // The host's uptime at the after reading (its monotonic clock counts from the
            // host's boot). Had the host booted again after the before reading, that
            // uptime could not pass the time since the before reading, which is the wall
            // span less whatever the wall clock stepped; so an uptime longer than the
            // wall span by more than the step one boot implies (`wall - mono`) says the
            // host did not boot between them, even where no start stamp says so.
            let uptime_after = a as f64 / 1e9;
            let outlived = uptime_after > wall + (wall - mono).abs().max(SAME_BOOT_S);
            if one_process && mono > 0.0 && (has_start_stamps(before) || outlived) {
                // One server process, so one boot: the wall clock stepped between them.
                Ok(Some(format!(
                    "the wall clock stepped by {:.1} s between the readings (monotonic span {mono:.3} s, wall span {wall:.3} s); the run is timed on the monotonic clock",
                    wall - mono
                )))
            } else {
                Err(format!(
                    "the readings carry clocks of two boots of the host (monotonic span {mono:.3} s, wall span {wall:.3} s), so they bracket no one run"
                ))
            }
        }
        _ => Ok(None),
    }
}

/// Whether a reading carries the server's start stamps (`*_created`), by which two
/// readings can be shown to come from one process.
fn has_start_stamps(reading: &Snapshot) -> bool {
    reading
        .metrics
        .samples()
        .iter()
        .any(|s| s.name.ends_with("_created"))
}

/// Why the recording is not of the run the readings bracket, if it is not.
fn series_fit(
    series: &SeriesStats,
    before: Option<&Snapshot>,
    after: Option<&Snapshot>,
) -> Result<(), String> {
    if let Some(refused) = &series.refused {
        return Err(refused.message());
    }
    // Read against the readings' window, and none of it inside.
    if series.samples == 0 {
        match (series.outside_before, series.outside_after) {
            (0, 0) => {}
            (_, 0) => {
                return Err(
                    "its last sample came before the before reading, so it recorded another time"
                        .to_owned(),
                )
            }
            (0, _) => {
                return Err(
                    "its first sample came after the after reading, so it recorded another time"
                        .to_owned(),
                )
            }
            _ => {
                return Err(
                    "none of its samples lies between the readings, so it recorded another time"
                        .to_owned(),
                )
            }
        }
    }
    let (Some(before), Some(after)) = (before, after) else {
        return Ok(());
    };
    let half = |s: &Snapshot| {
        s.latency_s
            .filter(|l| l.is_finite() && *l >= 0.0)
            .unwrap_or(0.0)
            / 2.0
    };
    let mono = match (
        series.first_t_mono_ns,
        series.last_t_mono_ns,
        before.t_mono_ns,
        after.t_mono_ns,
    ) {
        (Some(f), Some(l), Some(b), Some(a)) if series.all_mono => {
            let one_boot = match (
                boot_offset(series.first_t_wall, Some(f)),
                boot_offset(before.t_wall, Some(b)),
            ) {
                (Some(x), Some(y)) => (x - y).abs() <= SAME_BOOT_S,
                _ => false,
            };
            one_boot.then_some((f, l, b, a))
        }
        _ => None,
    };
    let (gap_before, gap_after, clock) = if let Some((f, l, b, a)) = mono {
        // Both stamps are midpoints of their requests: half of each request's time
        // bounds where the reading really fell.
        let slack = half(before).max(half(after)) + 0.05;
        (
            (b - l) as f64 / 1e9 - slack,
            (f - a) as f64 / 1e9 - slack,
            "monotonic",
        )
    } else {
        let (Some(f), Some(l), Some(b), Some(a)) = (
            series.first_t_wall,
            series.last_t_wall,
            before.t_wall,
            after.t_wall,
        ) else {
            return Ok(());
        };
        (
            b - l - SERIES_WALL_TOLERANCE_S,
            f - a - SERIES_WALL_TOLERANCE_S,
            "wall",
        )
    };
    if gap_before > 0.0 {
        return Err(format!(
            "its last sample came before the before reading (by the {clock} clock), so it recorded another time"
        ));
    }
    if gap_after > 0.0 {
        return Err(format!(
            "its first sample came after the after reading (by the {clock} clock), so it recorded another time"
        ));
    }
    Ok(())
}

/// The window a recording of the run between `before` and `after` is read within
/// ([`SeriesWindow`]): the readings' span widened by half of each reading's latency and
/// the tolerance the gate allows a recorder's clock. `None` when the readings bracket no
/// span (no wall clock, or the after one not later).
pub fn series_window(before: &Snapshot, after: &Snapshot) -> Option<SeriesWindow> {
    let (b, a) = (before.t_wall?, after.t_wall?);
    if !(b.is_finite() && a.is_finite() && a > b) {
        return None;
    }
    let slack = |s: &Snapshot| {
        s.latency_s
            .filter(|l| l.is_finite() && *l >= 0.0)
            .unwrap_or(0.0)
            / 2.0
            + SERIES_WALL_TOLERANCE_S
    };
    let (early, late) = (slack(before), slack(after));
    let one_boot = match (
        boot_offset(before.t_wall, before.t_mono_ns),
        boot_offset(after.t_wall, after.t_mono_ns),
    ) {
        (Some(x), Some(y)) => (x - y).abs() <= SAME_BOOT_S,
        _ => false,
    };
    let mono_ns = match (before.t_mono_ns, after.t_mono_ns) {
        (Some(bm), Some(am)) if one_boot && am > bm => Some((
            bm.saturating_sub((early * 1e9) as i64),
            am.saturating_add((late * 1e9) as i64),
        )),
        _ => None,
    };
    Some(SeriesWindow {
        wall: (b - early, a + late),
        mono_ns,
        boot_wall: mono_ns.and_then(|_| boot_offset(before.t_wall, before.t_mono_ns)),
    })
}

/// What a reader should know of a recording's samples set aside by the readings'
/// window: how many, on which side.
fn samples_set_aside(series: &SeriesStats) -> Option<String> {
    let (early, late) = (series.outside_before, series.outside_after);
    if early + late == 0 || series.samples == 0 {
        return None;
    }
    let mut parts = Vec::new();
    if early > 0 {
        parts.push(format!("{early} taken before the before reading"));
    }
    if late > 0 {
        parts.push(format!("{late} after the after reading"));
    }
    Some(format!(
        "{} of the recording's samples lie outside the readings ({}: a recorder started before the run or left running after it), set aside: no check reads them",
        early + late,
        parts.join(", ")
    ))
}

/// Where each input of a run stands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placement {
    /// Inputs not of this run.
    pub rejected: Vec<Rejected>,
    /// What a reader should know about how the inputs were placed.
    pub notes: Vec<String>,
}

/// Places every input of the run against the others.
pub fn place(run: &Run) -> Placement {
    let mut placement = Placement::default();
    let (before, after) = (run.before.as_ref(), run.after.as_ref());
    let mut readings_ok = true;
    if let (Some(b), Some(a)) = (before, after) {
        match readings_fit(b, a) {
            Ok(note) => placement.notes.extend(note),
            Err(why) => {
                readings_ok = false;
                for (input, name) in [
                    (input::BEFORE, "the before reading"),
                    (input::AFTER, "the after reading"),
                ] {
                    placement.rejected.push(Rejected {
                        input,
                        name: name.to_owned(),
                        why: why.clone(),
                        untrusted: false,
                    });
                }
            }
        }
    }
    let (before, after) = if readings_ok {
        (before, after)
    } else {
        (None, None)
    };
    if let Some(series) = &run.series {
        placement.notes.extend(samples_set_aside(series));
        if let Err(why) = series_fit(series, before, after) {
            placement.rejected.push(Rejected {
                input: input::SERIES,
                name: "the recording".to_owned(),
                why,
                untrusted: series.refused.is_some(),
            });
        }
    }
    if let Some((name, account)) = &run.bench {
        match result_fit(account, before, after, &run.boots) {
            Fit::DoesNotFit(why) => placement.rejected.push(Rejected {
                input: input::BENCH_RESULT,
                name: name.clone(),
                why,
                untrusted: false,
            }),
            Fit::Fits => placement
                .notes
                .extend(saved_outside_the_hosts_zone(run, account, name)),
            Fit::Unplaced(_) => {}
        }
    }
    // The server's traces against the span the readings (else the recording) give.
    let span = match (before.and_then(|b| b.t_wall), after.and_then(|a| a.t_wall)) {
        (Some(b), Some(a)) if a > b => Some((b, a)),
        _ => run
            .series
            .as_ref()
            .filter(|_| placement.rejected.iter().all(|r| r.input != input::SERIES))
            .and_then(|s| Some((s.first_t_wall?, s.last_t_wall?))),
    };
    if let Some(span) = span {
        if let Some(why) = run
            .server_requests
            .as_ref()
            .and_then(|s| spans_fit(s, span))
        {
            placement.rejected.push(Rejected {
                input: input::SERVER_REQUESTS,
                name: run
                    .server_requests
                    .as_ref()
                    .map_or_else(String::new, |s| s.file.clone()),
                why,
                untrusted: false,
            });
        }
        if let Some(why) = run.kv_events.as_ref().and_then(|k| kv_fit(k, span)) {
            placement.rejected.push(Rejected {
                input: input::KV_EVENTS,
                name: run
                    .kv_events
                    .as_ref()
                    .map_or_else(String::new, |k| k.file.clone()),
                why,
                untrusted: false,
            });
        }
        if let Some(why) = run.steps.as_ref().and_then(|s| steps_fit(s, span)) {
            placement.rejected.push(Rejected {
                input: input::STEPS,
                name: run
                    .steps
                    .as_ref()
                    .map_or_else(String::new, |s| s.file.clone()),
                why,
                untrusted: false,
            });
        }
    }
    placement
}

/// Where the server's own zone is known (its boot log's zoneless stamps line up with the
/// readings' wall clock at one offset: [`crate::judging::checks::pauses::clock_fit`]) and the
/// result's zoneless saved time fits the readings only at other offsets, a note that
/// says so: a load tool on the server's host saves in the server's zone, so the match
/// needs the tool to have run on a host of another zone, or the file to be another
/// run's (an hourly repeat of one benchmark fits an hour off).
fn saved_outside_the_hosts_zone(run: &Run, account: &ClientAccount, name: &str) -> Option<String> {
    use crate::judging::checks::pauses::{clock_fit, ClockFit};
    let saved = account.identity.saved_local_s.filter(|s| s.is_finite())?;
    let (before, after) = (run.before.as_ref()?, run.after.as_ref()?);
    let span = window(Some(before), Some(after))?;
    let clock = run.last_boot()?.log_clock?;
    let ClockFit::Offset(host) = clock_fit(&clock, before, after) else {
        return None;
    };
    let host = i32::try_from(host).ok()?;
    let resolution = account.identity.saved_resolution_s.max(0.0);
    let duration = account
        .duration
        .filter(|d| d.is_finite() && *d >= 0.0)
        .unwrap_or(0.0);
    if saved_fits(saved, resolution, duration, span, host) {
        return None;
    }
    let fitting: Vec<String> = zone_offsets(&[span.0, span.1])
        .into_iter()
        .filter(|o| saved_fits(saved, resolution, duration, span, *o))
        .map(offset_words)
        .collect();
    Some(format!(
        "{name} was saved at {} (a time of day without a zone), which falls in the run only at {}, not in the server's own zone ({}, from its boot log's stamps against the readings): the load tool ran on a host of another zone, or the file is another run's",
        utc_words(saved),
        fitting.join(" or "),
        offset_words(host)
    ))
}

/// A Unix time as a reader reads it, or its seconds where it is no date.
fn utc_or_seconds(t: f64) -> String {
    crate::story::fmt::utc(t).unwrap_or_else(|| format!("{} s", crate::story::fmt::g(t)))
}

/// How far outside the run's span a server's trace may lie and still be of it: a
/// receiver starts before the load and stops after it, and a server's span of a request
/// ends after the request did.
const TRACE_SLACK_S: f64 = 5.0;

/// Why the server's records are another run's, when most of them were received outside
/// the run's span (Unix seconds, its readings' or its recording's).
fn spans_fit(
    server: &crate::model::traces::ServerRequests,
    (from, to): (f64, f64),
) -> Option<String> {
    let placed: Vec<f64> = server.requests.iter().filter_map(|r| r.arrival).collect();
    let outside = placed
        .iter()
        .filter(|a| **a < from - TRACE_SLACK_S || **a > to + TRACE_SLACK_S)
        .count();
    (!placed.is_empty() && outside * 2 > placed.len()).then(|| {
        format!(
            "{outside} of its {} requests reached the server outside the run's {} to {}",
            placed.len(),
            utc_or_seconds(from),
            utc_or_seconds(to)
        )
    })
}

/// Why a KV event stream is another run's: it was received wholly before or after the
/// run's span (by its subscriber's clock, else its events' seconds).
fn kv_fit(events: &crate::model::traces::KvEvents, (from, to): (f64, f64)) -> Option<String> {
    let first = events
        .anchor
        .map(|a| a.t_wall)
        .or_else(|| events.seconds.first().map(|s| s.second as f64))?;
    let last = events
        .end
        .map(|a| a.t_wall)
        .or_else(|| events.seconds.last().map(|s| s.second as f64 + 1.0))
        .unwrap_or(first);
    (last < from - TRACE_SLACK_S || first > to + TRACE_SLACK_S).then(|| {
        format!(
            "it was received from {} to {}, outside the run's {} to {}",
            utc_or_seconds(first),
            utc_or_seconds(last),
            utc_or_seconds(from),
            utc_or_seconds(to)
        )
    })
}

/// Why a step file is another run's: its steps ran wholly before or after the run's
/// span (by the wall clock its header anchors), as a KV event stream's would.
fn steps_fit(steps: &crate::model::steps::Steps, (from, to): (f64, f64)) -> Option<String> {
    let first = steps.wall(steps.first_t?);
    let last = steps.wall(steps.last_t.unwrap_or(0.0));
    (last < from - TRACE_SLACK_S || first > to + TRACE_SLACK_S).then(|| {
        format!(
            "its steps ran from {} to {}, outside the run's {} to {}",
            utc_or_seconds(first),
            utc_or_seconds(last),
            utc_or_seconds(from),
            utc_or_seconds(to)
        )
    })
}

/// A run the gate has admitted ([`admit`]): every input that is not of it moved to
/// [`Run::rejected`]. The checks, the account, the story and everything after them take
/// this type, so the gate runs once per run and nothing reads an input it set aside.
/// It reads as the [`Run`] it holds; what changes it after the gate is limited to what
/// the gate does not read ([`Admitted::set_requested`], [`Admitted::set_load_failure`]).
#[derive(Debug, Clone)]
pub struct Admitted(Run);

impl std::ops::Deref for Admitted {
    type Target = Run;
    fn deref(&self) -> &Run {
        &self.0
    }
}

impl Admitted {
    /// The run, no longer marked as admitted (to change it and admit it again).
    pub fn into_run(self) -> Run {
        self.0
    }

    /// The concurrency the load asked for, which the gate does not read.
    pub fn set_requested(&mut self, requested: Option<u64>) {
        self.0.requested = requested;
    }

    /// Why the load failed, which the gate does not read.
    pub fn set_load_failure(&mut self, failure: Option<String>) {
        self.0.load_failure = failure;
    }

    /// The result file's records kept for the replay, taken out of the run's account to
    /// be moved into the replay's baseline (`whatif`): the gate read the file already.
    pub fn take_replay_records(&mut self) -> Option<Vec<crate::model::client::ReplayRecord>> {
        self.0
            .bench
            .as_mut()
            .map(|(_, account)| std::mem::take(&mut account.replay.rows))
    }

    /// Notes a caller adds (what the placement noted is there already).
    pub fn notes_mut(&mut self) -> &mut Vec<String> {
        &mut self.0.notes
    }
}

/// The run with every input that is not of it moved to [`Run::rejected`], and the
/// placement's notes kept in [`Run::notes`]: the gate. Idempotent: a run admitted once
/// is admitted as it is.
pub fn admit(run: Run) -> Admitted {
    Admitted(admit_run(run))
}

fn admit_run(mut run: Run) -> Run {
    let placement = place(&run);
    for rejected in placement.rejected {
        match rejected.input {
            input::BEFORE => run.before = None,
            input::AFTER => run.after = None,
            input::SERIES => run.series = None,
            input::BENCH_RESULT => {
                run.bench = None;
                run.expected_extra_requests = 0;
            }
            input::SERVER_REQUESTS => run.server_requests = None,
            input::KV_EVENTS => run.kv_events = None,
            input::STEPS => run.steps = None,
            _ => {}
        }
        if !run.rejected.contains(&rejected) {
            run.rejected.push(rejected);
        }
    }
    for note in placement.notes {
        if !run.notes.contains(&note) {
            run.notes.push(note);
        }
    }
    run
}

/// A copy of a run that was not admitted, admitted: for a caller that built a [`Run`]
/// itself (a test, a benchmark). What loads a run admits it once ([`admit`]).
pub fn admitted(run: &Run) -> Admitted {
    admit(run.clone())
}

/// Makes each check that could not run because an input it needs was set aside say
/// Can't tell, naming the input and why, in place of "not checked": the input was
/// given, and it is not this run's. Verdicts keep their order, ahead of what is still
/// not checked.
pub fn name_rejected(run: &Run, results: &mut Vec<crate::judging::status::CheckResult>) {
    use crate::judging::status::Status;
    if run.rejected.is_empty() {
        return;
    }
    for result in results.iter_mut() {
        if result.status != Status::NotChecked {
            continue;
        }
        let needs: Vec<String> = result
            .evidence
            .get("needs")
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        // The concurrency asked for came from the result file when no flag gave it: a
        // check that needs it lost it with the file.
        let from_the_file = |need: &str| need == input::REQUESTED && run.requested.is_none();
        let why: Vec<&Rejected> = run
            .rejected
            .iter()
            .filter(|r| {
                needs
                    .iter()
                    .any(|n| n == r.input || (r.input == input::BENCH_RESULT && from_the_file(n)))
            })
            .collect();
        if why.is_empty() {
            continue;
        }
        result.status = Status::Unknown;
        result.message = why
            .iter()
            .map(|r| r.sentence())
            .collect::<Vec<_>>()
            .join("; ");
        result.evidence.insert(
            "not_of_this_run".into(),
            serde_json::Value::from(
                why.iter()
                    .map(|r| serde_json::json!({"input": r.input, "name": r.name, "why": r.why}))
                    .collect::<Vec<_>>(),
            ),
        );
    }
    // Each converted result goes back to its place in the report's order, ahead of what
    // is still not checked.
    let (converted, rest): (Vec<_>, Vec<_>) = std::mem::take(results)
        .into_iter()
        .partition(|r| r.status == Status::Unknown && r.evidence.contains_key("not_of_this_run"));
    let (verdicts, missing): (Vec<_>, Vec<_>) = rest
        .into_iter()
        .partition(|r| r.status != Status::NotChecked);
    let place = crate::judging::checks::registry::report_place;
    *results = verdicts;
    for result in converted {
        let at = place(result.tripwire).and_then(|mine| {
            results
                .iter()
                .position(|r| place(r.tripwire).is_some_and(|theirs| theirs > mine))
        });
        match at {
            Some(i) => results.insert(i, result),
            None => results.push(result),
        }
    }
    results.extend(missing);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::VLLM;
    use crate::judging::status::{CheckResult, Status, Tripwire};
    use crate::model::client::{ClientAccount, LoadTool};
    use crate::model::SeriesSample;
    use crate::testing::{sample, snapshot};

    /// 2026-10-01 03:47:07 UTC and 101.6 s later, the xray recording's readings; the
    /// host booted 1,790,826,246.68 s after 1970 (wall minus monotonic).
    const BEFORE: f64 = 1_790_826_427.68;
    const AFTER: f64 = 1_790_826_529.27;
    const BOOT: f64 = 1_790_826_246.68;

    fn reading(wall: f64, boot: f64, created: f64) -> Snapshot {
        let mut s = snapshot(
            Some(wall),
            vec![
                sample(
                    "vllm:request_success_total",
                    &[("model_name", "qwen38")],
                    1.0,
                ),
                sample(
                    "vllm:request_success_created",
                    &[("model_name", "qwen38")],
                    created,
                ),
            ],
        );
        s.t_mono_ns = Some(((wall - boot) * 1e9) as i64);
        s.latency_s = Some(0.008);
        s
    }

    fn boot_serving(model: &str) -> Vec<(String, BootFacts)> {
        vec![(
            "boot.log".into(),
            BootFacts {
                model: Some(model.into()),
                ..BootFacts::default()
            },
        )]
    }

    /// `vllm bench serve`'s `date` is `datetime.now()` in the client's zone, taken after
    /// the run: 20:48:49 on 30 September in UTC-7 is 03:48:49 UTC on 1 October, inside
    /// the readings; the same time a day earlier fits no zone.
    fn saved(date_local: f64, model: &str) -> ClientAccount {
        let mut a = ClientAccount::new(LoadTool::VllmBench);
        a.duration = Some(95.15);
        a.identity.saved_local_s = Some(date_local);
        a.identity.saved_resolution_s = 1.0;
        a.identity.model = Some(model.into());
        a
    }

    const SAVED_LOCAL: f64 = 1_790_801_329.0; // 2026-09-30 20:48:49, read as UTC

    /// The offsets in use are the IANA database's, not every quarter hour: India's
    /// UTC+05:30, Nepal's UTC+05:45, the Marquesas' UTC-09:30, Kiritimati's UTC+14:00
    /// and the date line's UTC-12:00 are there; no zone keeps UTC-00:15 or UTC-00:30,
    /// and of the 105 quarter hours from UTC-12 to UTC+14 fewer than half are used.
    #[test]
    fn only_offsets_some_zone_keeps_are_tried() {
        let offsets = zone_offsets(&[BEFORE]);
        for kept in [0, 3_600, 19_800, 20_700, -34_200, 50_400, -43_200] {
            assert!(offsets.contains(&kept), "{kept} in {offsets:?}");
        }
        for never in [-900, -1_800, 900, 4_500] {
            assert!(!offsets.contains(&never), "{never} in {offsets:?}");
        }
        assert!(offsets.len() < 52, "{} offsets", offsets.len());
        assert_eq!(offset_words(19_800), "UTC+05:30");
        assert_eq!(offset_words(-34_200), "UTC-09:30");
    }

    /// Two real runs of one host (`fixtures/real/vllm-0.32-cpu`): too-long-refused's
    /// result, saved at 2026-12-02 03:46:26 on a UTC host after a run of 1.57 s, and
    /// restart-mid-run's readings, 2026-12-02 04:01:13 to 04:03:57 UTC. The saved time
    /// falls between those readings only at offsets from UTC-00:17:33 to UTC-00:14:45,
    /// of which the quarter hours held only UTC-00:15, an offset no
    /// zone keeps: it is another run's file, where every quarter hour let it in.
    #[test]
    fn another_runs_result_a_quarter_hour_off_fits_no_zone() {
        let (b, a) = (
            reading(1_796_184_073.18, BOOT, 5.0),
            reading(1_796_184_237.80, BOOT, 5.0),
        );
        let mut other = saved(1_796_183_186.0, "/models/tiny");
        other.duration = Some(1.573_893_691);
        match result_fit(&other, Some(&b), Some(&a), &boot_serving("/models/tiny")) {
            Fit::DoesNotFit(why) => assert!(why.contains("in no time zone"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_result_saved_in_any_zone_inside_the_readings_fits_and_a_day_off_does_not() {
        let (b, a) = (reading(BEFORE, BOOT, 5.0), reading(AFTER, BOOT, 5.0));
        let boots = boot_serving("/models/Qwen3.8-27B-W4A16-AutoRound");
        let ours = saved(SAVED_LOCAL, "/models/Qwen3.8-27B-W4A16-AutoRound");
        assert_eq!(result_fit(&ours, Some(&b), Some(&a), &boots), Fit::Fits);
        let old = saved(
            SAVED_LOCAL - 86_400.0,
            "/models/Qwen3.8-27B-W4A16-AutoRound",
        );
        match result_fit(&old, Some(&b), Some(&a), &boots) {
            Fit::DoesNotFit(why) => assert!(why.contains("in no time zone"), "{why}"),
            other => panic!("{other:?}"),
        }
        // Five minutes earlier (another run of the same session) fits no zone either:
        // zones are whole quarter hours apart.
        let earlier = saved(SAVED_LOCAL - 300.0, "/models/Qwen3.8-27B-W4A16-AutoRound");
        assert!(matches!(
            result_fit(&earlier, Some(&b), Some(&a), &boots),
            Fit::DoesNotFit(_)
        ));
        // The served name, or the model under another mount point, is this server's.
        for name in ["qwen38", "/root/models/Qwen3.8-27B-W4A16-AutoRound"] {
            let named = saved(SAVED_LOCAL, name);
            assert_eq!(
                result_fit(&named, Some(&b), Some(&a), &boots),
                Fit::Fits,
                "{name}"
            );
        }
        let other = saved(SAVED_LOCAL, "/models/Llama-3.1-8B");
        match result_fit(&other, Some(&b), Some(&a), &boots) {
            Fit::DoesNotFit(why) => assert!(why.contains("Llama-3.1-8B"), "{why}"),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn of_two_results_the_one_that_fits_is_kept_and_two_that_fit_are_refused() {
        let (b, a) = (reading(BEFORE, BOOT, 5.0), reading(AFTER, BOOT, 5.0));
        let boots = boot_serving("qwen38");
        let candidates = vec![
            (
                "a-older.json".to_owned(),
                saved(SAVED_LOCAL - 86_400.0, "qwen38"),
            ),
            ("b-ours.json".to_owned(), saved(SAVED_LOCAL, "qwen38")),
        ];
        let chosen = choose_result(&candidates, Some(&b), Some(&a), &boots).unwrap();
        assert_eq!(chosen.index, 1);
        assert!(
            chosen.notes[0].starts_with("left out a-older.json: "),
            "{chosen:?}"
        );
        let twins = vec![
            ("x.json".to_owned(), saved(SAVED_LOCAL, "qwen38")),
            ("y.json".to_owned(), saved(SAVED_LOCAL, "qwen38")),
        ];
        let refused = choose_result(&twins, Some(&b), Some(&a), &boots).unwrap_err();
        assert!(
            refused.contains("x.json")
                && refused.contains("y.json")
                && refused.contains("--bench-result"),
            "{refused}"
        );
        let none = vec![candidates[0].clone(), candidates[0].clone()];
        assert!(choose_result(&none, Some(&b), Some(&a), &boots)
            .unwrap_err()
            .starts_with("no result file here is of this run"));
    }

    fn series(first_wall: f64, n: usize, boot: f64) -> SeriesStats {
        let mut stats = SeriesStats::new();
        for i in 0..n {
            let t = first_wall + i as f64 * 0.25;
            stats.push(&SeriesSample {
                t_wall: t,
                t_mono_ns: Some(((t - boot) * 1e9) as i64),
                running: Some(1.0),
                ..SeriesSample::default()
            });
        }
        stats
    }

    fn run_with(before: Snapshot, after: Snapshot, series: SeriesStats) -> Run {
        Run {
            engine: &VLLM,
            boots: Vec::new(),
            before: Some(before),
            after: Some(after),
            series: Some(series),
            bench: None,
            expected_extra_requests: 0,
            requested: Some(32),
            load_failure: None,
            rejected: Vec::new(),
            server_requests: None,
            kv_events: None,
            steps: None,
            notes: Vec::new(),
        }
    }

    /// The server's boot log stamps its lines in its own zone: its first line 100 s
    /// before the before reading and, after the server's shutdown, a line 5 s after the
    /// after reading, both read as UTC, so only UTC+00:00 puts them there. A result saved
    /// at 20:48:49 on 30 September fits the readings only in UTC-07:00: it is admitted
    /// (a load tool may run on a host of another zone), and a note says it needed
    /// another zone than the server's. Saved at 03:48:49 (the server's zone) no note.
    #[test]
    fn a_result_that_fits_only_outside_the_servers_zone_says_so() {
        let (b, a) = (reading(BEFORE, BOOT, 5.0), reading(AFTER, BOOT, 5.0));
        let mut run = run_with(b, a, series(BEFORE + 1.0, 40, BOOT));
        run.series = None;
        let mut boots = boot_serving("/models/Qwen3.8-27B-W4A16-AutoRound");
        boots[0].1.log_clock = Some(crate::model::LogClock {
            earliest: (BEFORE - 100.0) as i64,
            latest: (AFTER + 5.0) as i64,
            stamped_after_shutdown: true,
        });
        run.boots = boots;
        run.bench = Some((
            "bench.json".into(),
            saved(SAVED_LOCAL, "/models/Qwen3.8-27B-W4A16-AutoRound"),
        ));
        let placement = place(&run);
        assert!(placement.rejected.is_empty(), "{placement:?}");
        let note = placement
            .notes
            .iter()
            .find(|n| n.starts_with("bench.json was saved"))
            .unwrap_or_else(|| panic!("{:?}", placement.notes));
        assert!(note.contains("only at UTC-07:00"), "{note}");
        assert!(note.contains("server's own zone (UTC+00:00"), "{note}");
        run.bench = Some((
            "bench.json".into(),
            saved(
                SAVED_LOCAL + 7.0 * 3600.0,
                "/models/Qwen3.8-27B-W4A16-AutoRound",
            ),
        ));
        let placement = place(&run);
        assert!(placement.rejected.is_empty(), "{placement:?}");
        assert!(
            placement.notes.iter().all(|n| !n.contains("bench.json")),
            "{:?}",
            placement.notes
        );
    }

    /// Back-to-back runs: the next run's recording starts 0.45 s after this run's after
    /// reading. By the shared monotonic clock (one boot) none of it lies in this run.
    #[test]
    fn the_next_runs_recording_is_not_this_runs() {
        let (b, a) = (reading(BEFORE, BOOT, 5.0), reading(AFTER, BOOT, 5.0));
        let next = run_with(b.clone(), a.clone(), series(AFTER + 0.45, 40, BOOT));
        let placement = place(&next);
        assert_eq!(placement.rejected.len(), 1, "{placement:?}");
        assert_eq!(placement.rejected[0].input, input::SERIES);
        assert!(placement.rejected[0].why.contains("monotonic"));
        let ours = run_with(b, a, series(BEFORE + 0.02, 400, BOOT));
        assert!(place(&ours).rejected.is_empty());
    }

    /// A step file is the run's when its steps ran within the readings' span (by its
    /// header's wall clock plus `t`); one whose steps all ran an hour after the after
    /// reading (the next run's server wrote it) is set aside as another run's, and the
    /// run is read without it.
    #[test]
    fn a_step_file_of_another_hour_is_set_aside() {
        let (b, a) = (reading(BEFORE, BOOT, 5.0), reading(AFTER, BOOT, 5.0));
        let mut run = run_with(b, a, series(BEFORE + 0.02, 400, BOOT));
        let steps_at = |wall: f64| {
            let mut steps = crate::model::steps::Steps::new(
                "steps.jsonl".into(),
                crate::model::traces::ClockAnchor {
                    t_wall: wall,
                    t_mono_ns: 0,
                },
            );
            for k in 0..10 {
                steps.step(&crate::model::steps::StepLine {
                    t: 1.0 + k as f64,
                    r: Some(1),
                    ..crate::model::steps::StepLine::default()
                });
            }
            steps
        };
        run.steps = Some(steps_at(BEFORE));
        assert!(place(&run).rejected.is_empty());
        run.steps = Some(steps_at(AFTER + 3600.0));
        let admitted = admit(run);
        assert!(admitted.steps.is_none());
        assert_eq!(admitted.rejected[0].input, input::STEPS);
        assert!(admitted.rejected[0].why.contains("outside the run's"));
    }

    /// A wall clock stepped back between two readings of one server process (the start
    /// stamps did not move) is a note; readings of two boots with moved stamps bracket no
    /// run; equal monotonic stamps bracket none either.
    #[test]
    fn readings_of_one_boot_one_of_two_boots() {
        let stepped = readings_fit(
            &reading(BEFORE, BOOT, 5.0),
            &reading(AFTER - 30.0, BOOT - 30.0, 5.0),
        );
        assert!(stepped.unwrap().unwrap().contains("wall clock stepped"));
        let two_boots = readings_fit(
            &reading(BEFORE - 60.0 * 86_400.0, BOOT - 61.0 * 86_400.0, 1.0),
            &reading(AFTER, BOOT, 5.0),
        );
        assert!(two_boots.unwrap_err().contains("two boots"));
        let same = readings_fit(&reading(BEFORE, BOOT, 5.0), &reading(BEFORE, BOOT, 5.0));
        assert!(same.unwrap_err().contains("same moment"));
    }

    /// A page without start stamps (SGLang's, TensorRT-LLM's): the wall clock slewed
    /// 2 s over the run (chrony at 50 ppm does that in 11 hours) while the host had been
    /// up for three hours. The after reading's uptime (3 h 2 min) is longer than the
    /// whole wall span (102 s): the host did not boot between the readings, so one boot
    /// with a note, never two boots. A host up 80 s at the after reading, over a wall
    /// span of 100 s, may have booted between them: still set aside.
    #[test]
    fn a_step_without_start_stamps_is_one_boot_when_the_uptime_outlives_the_span() {
        let plain = |wall: f64, mono_s: f64| {
            let mut s = snapshot(
                Some(wall),
                vec![sample(
                    "sglang:num_requests_total",
                    &[("model_name", "m")],
                    1.0,
                )],
            );
            s.t_mono_ns = Some((mono_s * 1e9) as i64);
            s
        };
        let slewed = readings_fit(
            &plain(BEFORE, 3.0 * 3600.0),
            &plain(BEFORE + 102.0, 3.0 * 3600.0 + 100.0),
        );
        assert!(
            slewed
                .as_ref()
                .unwrap()
                .as_deref()
                .unwrap_or("")
                .contains("wall clock stepped by 2.0 s"),
            "{slewed:?}"
        );
        let maybe_rebooted = readings_fit(&plain(BEFORE, 30.0), &plain(BEFORE + 100.0, 80.0));
        assert!(maybe_rebooted.unwrap_err().contains("two boots"));
    }

    /// The concurrency asked for that only the set-aside result file said is lost with
    /// it: a check that needed it says why, not merely "needs --requested".
    #[test]
    fn the_concurrency_of_a_result_set_aside_goes_with_it() {
        let mut run = run_with(
            reading(BEFORE, BOOT, 5.0),
            reading(AFTER, BOOT, 5.0),
            SeriesStats::new(),
        );
        run.requested = None;
        run.rejected.push(Rejected {
            input: input::BENCH_RESULT,
            name: "bench.json".into(),
            why: "it names the model m".into(),
            untrusted: false,
        });
        let mut results = vec![CheckResult::not_checked(
            Tripwire::T17,
            "needs the concurrency",
            &[input::REQUESTED],
        )];
        name_rejected(&run, &mut results);
        assert_eq!(results[0].status, Status::Unknown);
        assert!(results[0]
            .message
            .starts_with("bench.json is not of this run"));
        // Given on the command line, it was not the file's to lose.
        run.requested = Some(8);
        let mut given = vec![CheckResult::not_checked(
            Tripwire::T17,
            "needs the concurrency",
            &[input::REQUESTED],
        )];
        name_rejected(&run, &mut given);
        assert_eq!(given[0].status, Status::NotChecked);
    }

    /// A check that needed an input set aside says Can't tell naming it, in its place
    /// in the report's order, not "not checked" at the end.
    #[test]
    fn a_check_without_its_input_set_aside_says_why_in_its_place() {
        let mut run = run_with(
            reading(BEFORE, BOOT, 5.0),
            reading(AFTER, BOOT, 5.0),
            SeriesStats::new(),
        );
        run.series = None;
        run.rejected.push(Rejected {
            input: input::SERIES,
            name: "the recording".into(),
            why: "its first sample came after the after reading".into(),
            untrusted: false,
        });
        let mut results = vec![
            CheckResult::new(Tripwire::T1, Status::Pass, "none"),
            CheckResult::new(Tripwire::T19, Status::Pass, "warm"),
            CheckResult::not_checked(Tripwire::T8, "needs a recording", &[input::SERIES]),
            CheckResult::not_checked(Tripwire::T18, "needs a result", &[input::BENCH_RESULT]),
        ];
        name_rejected(&run, &mut results);
        let order: Vec<(Tripwire, Status)> =
            results.iter().map(|r| (r.tripwire, r.status)).collect();
        assert_eq!(
            order,
            [
                (Tripwire::T1, Status::Pass),
                (Tripwire::T8, Status::Unknown),
                (Tripwire::T19, Status::Pass),
                (Tripwire::T18, Status::NotChecked),
            ]
        );
        assert_eq!(
            results[1].message,
            "the recording is not of this run: its first sample came after the after reading"
        );
    }
}

#[cfg(test)]
mod result_tests {
    use super::*;
    use crate::model::client::LoadTool;
    use crate::model::Settings;
    use crate::testing::{sample, snapshot};

    /// The readings of the vllm-0.28 xray recording: 2026-10-01 03:47:07 to 03:48:49 UTC.
    const BEFORE: f64 = 1_790_826_427.68;
    const AFTER: f64 = 1_790_826_529.27;
    /// Its result's `date`, 20260930-204849, read as if UTC: the client was at UTC-7.
    const SAVED: f64 = 1_790_801_329.0;
    const DURATION: f64 = 95.15;

    fn reading(t_wall: f64, url: &str, served: Option<&str>) -> Snapshot {
        let labels: Vec<(&str, &str)> = served.map(|s| ("model_name", s)).into_iter().collect();
        let mut s = snapshot(
            Some(t_wall),
            vec![sample("vllm:num_requests_running", &labels, 0.0)],
        );
        s.url = url.to_owned();
        s
    }

    fn readings(url: &str, served: Option<&str>) -> (Snapshot, Snapshot) {
        (reading(BEFORE, url, served), reading(AFTER, url, served))
    }

    fn boot(model: Option<&str>, settings: Vec<(&str, PyValue)>) -> Vec<(String, BootFacts)> {
        let settings: Settings = settings
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        vec![(
            "boot.log".to_owned(),
            BootFacts {
                model: model.map(str::to_owned),
                server_args: Some(settings),
                ..BootFacts::default()
            },
        )]
    }

    fn result(model: Option<&str>, saved: Option<f64>) -> ClientAccount {
        let mut account = ClientAccount::new(LoadTool::VllmBench);
        account.duration = Some(DURATION);
        account.identity.model = model.map(str::to_owned);
        account.identity.saved_local_s = saved;
        account.identity.saved_resolution_s = 1.0;
        account
    }

    fn fit(account: &ClientAccount, boots: &[(String, BootFacts)], served: Option<&str>) -> Fit {
        let (before, after) = readings("http://127.0.0.1:8000/metrics", served);
        result_fit(account, Some(&before), Some(&after), boots)
    }

    /// A time of day without a zone fits when some zone puts it after the run and before
    /// the after reading: the recording's own result fits at UTC-7, and a day earlier
    /// fits in no zone (zones span 26 hours, a day and a run do not fit in them).
    #[test]
    fn a_saved_time_of_day_fits_in_some_zone_or_in_none() {
        assert_eq!(fit(&result(None, Some(SAVED)), &[], None), Fit::Fits);
        let Fit::DoesNotFit(why) = fit(&result(None, Some(SAVED - 86_400.0)), &[], None) else {
            panic!("a day earlier fits");
        };
        assert!(
            why.contains("2026-09-29 20:48:49") && why.contains("in no time zone"),
            "{why}"
        );
    }

    /// With the boot log's model path known, a result naming another model is another
    /// run's; one naming the same model under another mount point is not.
    #[test]
    fn a_model_other_than_the_boot_logs_does_not_fit() {
        let boots = boot(
            Some("/models/Qwen3.8-27B-W4A16-AutoRound"),
            vec![(
                "served_model_name",
                PyValue::List(vec![PyValue::Str("qwen38".into())]),
            )],
        );
        let Fit::DoesNotFit(why) = fit(&result(Some("/root/models/Qwen3-8B"), None), &boots, None)
        else {
            panic!("another model fits");
        };
        assert!(
            why.contains("names the model /root/models/Qwen3-8B"),
            "{why}"
        );
        for same in ["/mnt/Qwen3.8-27B-W4A16-AutoRound", "qwen38"] {
            assert_eq!(
                fit(&result(Some(same), None), &boots, None),
                Fit::Fits,
                "{same}"
            );
        }
    }

    /// A load that named a model the server does not serve had every request refused:
    /// its result (GuideLLM's all-failed-404 fixture asked for `wrong-model`) completed
    /// none, and is still this run's, placed by its times; one that completed requests
    /// under that name was served elsewhere.
    #[test]
    fn a_wrong_model_name_refused_by_this_server_is_still_this_run() {
        let boots = boot(Some("/models/sim-model"), vec![]);
        let mut refused = result(Some("wrong-model"), Some(SAVED));
        refused.completed = Some(0);
        refused.failed = Some(32);
        assert_eq!(fit(&refused, &boots, None), Fit::Fits);
        let mut served = refused.clone();
        served.completed = Some(32);
        served.failed = Some(0);
        assert!(matches!(fit(&served, &boots, None), Fit::DoesNotFit(_)));
    }

    /// Without a boot log only the served names (the readings' `model_name` labels) are
    /// known: a result naming a path may name the model behind the alias (the recorded
    /// SGLang run's `model_id` is `/root/models/Qwen3-8B`, its label `qwen3-8b`), so the
    /// name places nothing either way.
    #[test]
    fn a_path_behind_an_alias_is_not_another_model() {
        let account = result(Some("/root/models/Qwen3-8B"), None);
        assert!(
            matches!(fit(&account, &[], Some("qwen3-8b")), Fit::Unplaced(_)),
            "{:?}",
            fit(&account, &[], Some("qwen3-8b"))
        );
        // Its time still places it.
        let timed = result(Some("/root/models/Qwen3-8B"), Some(SAVED - 86_400.0));
        assert!(matches!(
            fit(&timed, &[], Some("qwen3-8b")),
            Fit::DoesNotFit(_)
        ));
    }

    /// SGLang's `server_info.port` is the port the server was started with: placed
    /// against the boot log's `port`, which a container's mapped port does not change;
    /// against the readings' address only without one.
    #[test]
    fn the_port_a_result_names_is_the_servers_launch_port() {
        let (before, after) = readings("http://127.0.0.1:8080/metrics", None);
        let boots = boot(None, vec![("port", PyValue::Int(30000))]);
        let mut account = result(None, None);
        account.identity.server_port = Some(30000);
        let fit_with = |account: &ClientAccount, boots: &[(String, BootFacts)]| {
            result_fit(account, Some(&before), Some(&after), boots)
        };
        assert_eq!(fit_with(&account, &boots), Fit::Fits);
        let Fit::DoesNotFit(why) = fit_with(&account, &[]) else {
            panic!("another port fits");
        };
        assert!(
            why.contains("taken from http://127.0.0.1:8080/metrics"),
            "{why}"
        );
        account.identity.server_port = Some(30001);
        let Fit::DoesNotFit(why) = fit_with(&account, &boots) else {
            panic!("another port fits");
        };
        assert!(why.contains("started on port 30000"), "{why}");
    }

    /// Of two results of one tool, the one that fits is kept and the other named in a
    /// note; two that fit, or none, are refused naming each and `--bench-result`.
    #[test]
    fn several_candidates_keep_the_one_that_fits() {
        let (before, after) = readings("http://127.0.0.1:8000/metrics", None);
        let choose = |candidates: &[(String, ClientAccount)]| {
            choose_result(candidates, Some(&before), Some(&after), &[])
        };
        let earlier = ("a.json".to_owned(), result(None, Some(SAVED - 86_400.0)));
        let own = ("b.json".to_owned(), result(None, Some(SAVED)));
        let chosen = choose(&[earlier.clone(), own.clone()]).unwrap();
        assert_eq!(chosen.index, 1);
        assert_eq!(chosen.notes.len(), 1);
        assert!(
            chosen.notes[0].starts_with("left out a.json: it was saved"),
            "{:?}",
            chosen.notes
        );
        let both = choose(&[own.clone(), ("c.json".to_owned(), own.1.clone())]).unwrap_err();
        assert!(
            both.starts_with("several result files could be this run's")
                && both.contains("b.json fits")
                && both.contains("c.json fits")
                && both.ends_with("name the run's with --bench-result"),
            "{both}"
        );
        let none =
            choose(&[earlier.clone(), ("d.json".to_owned(), earlier.1.clone())]).unwrap_err();
        assert!(
            none.starts_with("no result file here is of this run")
                && none.contains("a.json: it was saved")
                && none.contains("d.json: it was saved"),
            "{none}"
        );
    }
}
