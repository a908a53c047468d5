//! The self-contained HTML report of a checked run (feature `report`).

use inferlint_engines::files;
use inferlint_report::{Timeline, TimelineBuilder, TimelineSetup};

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

    /// The recording folded for drawing, with the address it was made from: from the
    /// checks' pass over the file where it folded the charts and can vouch for them, else
    /// read again.
    fn timeline(
        &self,
        usable_blocks: Option<u64>,
    ) -> Result<Option<(Timeline, Option<String>)>, Error> {
        let Some(stats) = self.inner.series.as_ref() else {
            return Ok(None);
        };
        let path = match &self.series_source {
            SeriesSource::None => return Ok(None),
            SeriesSource::Folded(path, charts) => {
                if let Some(mut timeline) =
                    charts.fold.finish(stats, self.inner.engine, usable_blocks)
                {
                    timeline.setup.interval_s = charts.header.interval_s;
                    return Ok(Some((timeline, charts.header.url.clone())));
                }
                path
            }
            SeriesSource::File(path) => path,
            SeriesSource::Samples(samples) => {
                let Some(setup) = TimelineSetup::new(stats, self.inner.engine, usable_blocks, None)
                else {
                    return Ok(None);
                };
                let mut builder = TimelineBuilder::new(setup);
                for sample in samples {
                    builder.push(sample);
                }
                return Ok(Some((builder.finish(), None)));
            }
        };
        let Some(setup) = TimelineSetup::new(stats, self.inner.engine, usable_blocks, None) else {
            return Ok(None);
        };
        let mut builder = TimelineBuilder::new(setup);
        let summary = files::read_series(path, |sample| builder.push(sample))
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot read {e}")).with_path(path))?;
        let mut timeline = builder.finish();
        let header = summary.header.unwrap_or_default();
        timeline.setup.interval_s = header.interval_s;
        Ok(Some((timeline, header.url)))
    }
}
