//! The self-contained HTML report of a checked run (feature `report`).

use inferlint_engines::files;
use inferlint_report::{charts_timeline, PassCharts, Timeline, TimelineBuilder};

use crate::error::{Error, ErrorKind};
use crate::report::Report;
use crate::run::{Run, SeriesSource};

impl Run {
    /// The HTML page `inferlint report` writes for this run and its `report` (from
    /// [`Run::check`]): one file with every style and script inline that loads nothing
    /// from anywhere. `title` replaces the default (`vLLM 0.11.0 run`).
    ///
    /// A run read from a folder draws its charts from the pass that read its recording
    /// for the checks. Where that pass cannot vouch for them (a sample without its
    /// monotonic clock between two that have one, a preemption counter with fractions)
    /// the recording is read again, so that file must still be there: an error names it
    /// when it is not.
    ///
    /// # Blocking
    ///
    /// Renders on the calling thread, and may read the run's recording file again (above):
    /// from async code, call it inside `tokio::task::spawn_blocking`.
    pub fn html(&self, report: &Report, title: Option<&str>) -> Result<String, Error> {
        let results = report.all();
        let usable_blocks = inferlint_report::usable_blocks(&results);
        let folded = self.timeline(usable_blocks)?;
        let generator = format!("inferlint {}", env!("CARGO_PKG_VERSION"));
        let page = inferlint_report::Report {
            run: &self.inner,
            results: &results,
            account: report.account(),
            insights: report.insights(),
            timeline: folded.as_ref().map(|(t, _)| t),
            series_url: folded.as_ref().and_then(|(_, u)| u.as_deref()),
            title,
            made_from: &[],
            generator: &generator,
        };
        Ok(inferlint_report::render(&page))
    }

    /// The recording folded for drawing, with the address it was made from (one rule for
    /// every page: [`inferlint_report::charts_timeline`]).
    fn timeline(
        &self,
        usable_blocks: Option<u64>,
    ) -> Result<Option<(Timeline, Option<String>)>, Error> {
        let Some(stats) = self.inner.series.as_ref() else {
            return Ok(None);
        };
        let engine = self.inner.engine;
        let read = |path: &std::path::Path, builder: &mut TimelineBuilder| {
            let summary = files::read_series(path, |sample| builder.push(sample)).map_err(|e| {
                Error::new(ErrorKind::Io, format!("cannot read {e}")).with_path(path)
            })?;
            let header = summary.header.unwrap_or_default();
            Ok((header.interval_s, header.url))
        };
        match &self.series_source {
            SeriesSource::None => Ok(None),
            SeriesSource::Folded(path, charts) => {
                let pass = PassCharts {
                    pass: &charts.fold,
                    interval_s: charts.header.interval_s,
                    url: charts.header.url.as_deref(),
                };
                charts_timeline(stats, engine, usable_blocks, Some(pass), |b| read(path, b))
            }
            SeriesSource::File(path) => {
                charts_timeline(stats, engine, usable_blocks, None, |b| read(path, b))
            }
            SeriesSource::Samples(samples) => {
                charts_timeline(stats, engine, usable_blocks, None, |builder| {
                    samples.iter().for_each(|sample| builder.push(sample));
                    Ok((None, None))
                })
            }
        }
    }
}
