//! The report's charts from the checks' own pass over the recording: the page is the one
//! that reading the recording again gives, byte for byte, on every run folder of the
//! fixtures and of the recordings, whether the pass read the file in one stretch or cut
//! it into several, and `report` draws it from that one pass.

use std::path::{Path, PathBuf};

use inferlint_cli::report_html::{self, Inputs};
use inferlint_core::judging::checks::series::SeriesStats;
use inferlint_core::judging::identity::Admitted;
use inferlint_core::model::SampleFold;
use inferlint_core::run::{CheckOptions, Checked};
use inferlint_engines::files::{self, RunFiles};
use inferlint_engines::load::{self, EngineChoice, Folded, Known};
use inferlint_report::TimelinePass;

use crate::common::{fixtures, recorded};
use crate::pipelines::walk;

/// The run folder read and checked by the one path, its recording folded by the pass
/// (`charts`) or not; `None` for a folder that allows no check.
fn read(
    found: &RunFiles,
    charts: bool,
) -> Option<(Admitted, Checked, Option<Folded<TimelinePass>>)> {
    let (run, checked, folded) = load::check_files(
        &mut EngineChoice::new(None),
        found,
        &Known::default(),
        &CheckOptions::default(),
        |ends| {
            charts
                .then(|| TimelinePass::new(ends.first, ends.last, ends.after))
                .flatten()
        },
    )
    .ok()?;
    checked
        .nothing_checked(&load::given(found))
        .is_none()
        .then_some((run, checked, folded))
}

/// The run's page as `report` draws it: from the pass's fold where it can vouch for it,
/// else from the recording read again.
fn page(
    (run, checked): (&Admitted, &Checked),
    found: &RunFiles,
    charts: Option<&Folded<TimelinePass>>,
) -> Result<String, String> {
    report_html::render(&Inputs {
        run,
        results: &checked.results,
        account: &checked.account,
        insights: &checked.insights,
        series: found.series.as_deref(),
        charts,
        made_from: Vec::new(),
        title: None,
    })
    .map_err(|e| e.to_string())
}

/// The run folder's page the way it was made before the pass drew it: the recording
/// read again, after the checks, into a builder.
fn page_reading_again(found: &RunFiles, (run, checked): (&Admitted, &Checked)) -> String {
    page((run, checked), found, None).unwrap()
}

/// The page drawn from the pass over the recording cut into `stretches`, each folded on
/// its own, as the reader's threads fold a large file, and whether the pass vouched for
/// its timeline (else the page read the file again, and is compared all the same);
/// whether is `None` for a run whose recording the checks set aside (another run's),
/// which has no charts to draw.
///
/// `(run, checked)` is the folder as the one path read and checked it, once: the pass
/// over the recording is the test's subject, not the reading of the other files, which is
/// the same each time.
fn page_from_the_pass(
    found: &RunFiles,
    (run, checked): (&Admitted, &Checked),
    stretches: usize,
) -> Option<(String, Option<bool>)> {
    let series = found.series.as_deref()?;
    let (first, last) = files::series_ends(series).unwrap()?;
    let empty = TimelinePass::new(&first, &last, run.after.as_ref())?;
    let ((_, fold), summary) = files::fold_series_in(
        series,
        stretches,
        || (SeriesStats::new(), empty.clone()),
        |(stats, fold), s| {
            stats.push(s);
            fold.push(s);
        },
        |(a, x), (b, y)| (a.merge(b), x.merge(y)),
    )
    .unwrap();
    let charts = Folded {
        fold,
        header: summary.header.unwrap_or_default(),
    };
    let vouched = run.series.as_ref().map(|stats| {
        charts
            .fold
            .finish(
                stats,
                run.engine,
                inferlint_report::usable_blocks(&checked.results),
            )
            .is_some()
    });
    Some((page((run, checked), found, Some(&charts)).unwrap(), vouched))
}

/// Every run folder with a recording under `root`: the page from the pass, in one
/// stretch and in several, is the page from reading the recording again. Returns the
/// folders compared whose recording the checks kept, and those of them the pass drew
/// itself.
fn compare_pages(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut compared, mut drawn) = (Vec::new(), Vec::new());
    for dir in walk(root).0 {
        let Ok(found) = load::find_run(&dir) else {
            continue;
        };
        if found.series.is_none() {
            continue;
        }
        // The folder read and checked once; each page below is drawn from it.
        let Some((run, checked, _)) = read(&found, false) else {
            continue;
        };
        let reference = page_reading_again(&found, (&run, &checked));
        let mut kept = true;
        let mut vouched_every_time = true;
        for stretches in [1, 2, 3, 7] {
            let Some((page, vouched)) = page_from_the_pass(&found, (&run, &checked), stretches)
            else {
                vouched_every_time = false;
                continue;
            };
            kept &= vouched.is_some();
            vouched_every_time &= vouched == Some(true);
            assert!(
                page == reference,
                "{} in {stretches} stretches: the page differs from the one read again, at byte {}",
                dir.display(),
                page.bytes()
                    .zip(reference.bytes())
                    .position(|(a, b)| a != b)
                    .unwrap_or(page.len().min(reference.len()))
            );
        }
        if kept {
            compared.push(dir.clone());
        }
        if kept && vouched_every_time {
            drawn.push(dir);
        }
    }
    (compared, drawn)
}

/// A folder whose recording the pass cannot vouch for must have a reason the format
/// gives: a line the reader refused (it says so), or a first or last sample that the
/// file's ends do not show as the reader passes it on.
fn assert_declined_for_a_reason(dir: &Path) {
    let series = load::find_run(dir).unwrap().series.unwrap();
    let mut ends = None;
    let summary = files::read_series(&series, |s| {
        ends = Some(match ends {
            None => (*s, *s),
            Some((first, _)) => (first, *s),
        })
    })
    .unwrap();
    let mono_throughout = {
        let mut all = true;
        files::read_series(&series, |s| all &= s.t_mono_ns.is_some()).unwrap();
        all
    };
    let whole_counts = {
        let mut whole = true;
        files::read_series(&series, |s| {
            whole &= s.preemptions.is_none_or(|p| p.fract() == 0.0)
        })
        .unwrap();
        whole
    };
    let from_ends = files::series_ends(&series).unwrap();
    let ends_agree = from_ends == ends
        && from_ends.is_some_and(|(a, b)| {
            (a.t_mono_ns.is_some() && b.t_mono_ns.is_some()) == mono_throughout
        });
    assert!(
        summary.refused.is_some() || !ends_agree || !whole_counts,
        "{}: the pass gave no timeline, and nothing in the file says why",
        dir.display()
    );
}

#[test]
fn every_fixture_page_from_the_pass_is_the_page_read_again() {
    let (compared, drawn) = compare_pages(&fixtures());
    assert!(compared.len() > 40, "{compared:?}");
    for dir in compared.iter().filter(|d| !drawn.contains(d)) {
        assert_declined_for_a_reason(dir);
    }
    // The simulated runs are whole recordings: the pass draws every one.
    let sim: Vec<&PathBuf> = compared
        .iter()
        .filter(|d| d.starts_with(fixtures().join("sim")))
        .collect();
    assert!(!sim.is_empty());
    for dir in sim {
        assert!(drawn.contains(dir), "{}", dir.display());
    }
}

#[test]
#[cfg_attr(
    not(recorded),
    ignore = "needs INFERLINT_RECORDED (the recordings beside the checkout)"
)]
fn every_recorded_page_from_the_pass_is_the_page_read_again() {
    let recorded = recorded();
    let (compared, drawn) = compare_pages(&recorded);
    assert!(compared.len() >= 8, "{compared:?}");
    for dir in compared.iter().filter(|d| !drawn.contains(d)) {
        assert_declined_for_a_reason(dir);
    }
    assert!(
        drawn.len() * 2 > compared.len(),
        "the pass drew {drawn:?} of {compared:?}"
    );
}

/// Whether the folder's page is drawn from the pass that read it (as the library and
/// `report` read a folder): the pass folded the charts, and they are what a builder would
/// make. `None` when the pass folded none.
fn drawn_by_the_pass(dir: &Path) -> Option<bool> {
    let found = load::find_run(dir).unwrap();
    let (run, checked, folded) = read(&found, true)?;
    let folded = folded?;
    Some(
        folded
            .fold
            .finish(
                run.series.as_ref().unwrap(),
                run.engine,
                inferlint_report::usable_blocks(&checked.results),
            )
            .is_some(),
    )
}

/// Where the pass cannot vouch for its timeline, the page reads the recording again, as
/// before there was a pass: a sample in the middle without its monotonic clock (the
/// ends have one, so the pass laid the charts out on it, where the checks time the
/// recording by the wall clock), and a preemption counter with fractions (summed a
/// stretch at a time, fractions can round otherwise than summed in order). The page is
/// the one reading the file again makes.
#[test]
fn what_the_pass_cannot_vouch_for_draws_the_page_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = fixtures().join("sim/vllm-hybrid");
    let series = std::fs::read_to_string(demo.join("run.series.jsonl")).unwrap();
    let edited = |edit: &dyn Fn(usize, &mut serde_json::Value)| -> String {
        series
            .lines()
            .enumerate()
            .map(|(i, line)| {
                let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
                if i > 0 {
                    edit(i, &mut value);
                }
                value.to_string() + "\n"
            })
            .collect()
    };
    let cases = [
        (
            "a sample without t_mono_ns",
            edited(&|i, v| {
                if i == 200 {
                    v.as_object_mut().unwrap().remove("t_mono_ns");
                }
            }),
        ),
        (
            "preemptions with fractions",
            edited(&|_, v| {
                let p = v["preemptions"].as_f64().unwrap();
                v["preemptions"] = serde_json::json!(p * 1.5);
            }),
        ),
    ];
    for (name, text) in cases {
        let dir = tmp.path().join(name.replace(' ', "-"));
        crate::common::copy_tree(&demo, &dir);
        std::fs::write(dir.join("run.series.jsonl"), text).unwrap();
        let run = inferlint::Run::from_dir(&dir).unwrap();
        assert_eq!(
            drawn_by_the_pass(&dir),
            Some(false),
            "{name}: the pass folded the charts and cannot vouch for them"
        );
        let page = run.html(&run.check(), None).unwrap();
        assert!(
            page.contains("id=\"fig-requests\""),
            "{name}: the charts are drawn"
        );
        let found = load::find_run(&dir).unwrap();
        let (again, checked, _) = read(&found, false).unwrap();
        assert!(
            page == page_reading_again(&found, (&again, &checked)),
            "{name}: the page differs from the one read again"
        );
    }
}

/// The library draws a folder's page from the pass it read the folder with: the
/// recording removed once the folder is read, the page still draws it, where a run that
/// must read it again fails, naming the file.
#[test]
fn the_library_draws_a_folder_from_the_pass_it_read_it_with() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    crate::common::demo_copy(&dir);
    let run = inferlint::Run::from_dir(&dir).unwrap();
    assert_eq!(drawn_by_the_pass(&dir), Some(true));
    let found = load::find_run(&dir).unwrap();
    let (again, checked, _) = read(&found, false).unwrap();
    std::fs::remove_file(dir.join("run.series.jsonl")).unwrap();
    let page_of_the_library = run.html(&run.check(), None).unwrap();
    assert!(page_of_the_library.contains("id=\"fig-requests\""));
    let error = page((&again, &checked), &found, None).unwrap_err();
    assert!(error.contains("run.series.jsonl"), "{error}");
}
