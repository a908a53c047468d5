//! Parsed Prometheus samples and the lookups the checks make on them.

use std::collections::HashMap;

/// One sample line: a metric name, its labels (sorted by name) and a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The metric's name (`vllm:num_requests_running`).
    pub name: String,
    /// Sorted by label name, so two samples compare equal whatever order the text used.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: f64,
    /// The optional timestamp in milliseconds; kept, but no check uses it.
    pub timestamp_ms: Option<i64>,
}

impl Sample {
    /// The value of label `name`, if the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn has_labels(&self, subset: &[(&str, &str)]) -> bool {
        subset.iter().all(|(k, v)| self.label(k) == Some(v))
    }
}

/// The error of a lookup that expects exactly one series and finds several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeveralSeries {
    /// The metric.
    pub name: String,
    /// How many series it has.
    pub count: usize,
}

impl std::fmt::Display for SeveralSeries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} has {} series where one was expected",
            self.name, self.count
        )
    }
}

/// The suffixes a metric's samples carry: a gauge none, a counter `_total` and
/// `_created`, a histogram `_bucket`, `_sum`, `_count` and `_created`.
const SAMPLE_SUFFIXES: &[&str] = &["", "_total", "_created", "_bucket", "_sum", "_count"];

/// Every sample of one scrape, indexed by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricSet {
    samples: Vec<Sample>,
    by_name: HashMap<String, Vec<usize>>,
}

impl MetricSet {
    /// A set of the samples of one scrape.
    pub fn new(samples: Vec<Sample>) -> MetricSet {
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, s) in samples.iter().enumerate() {
            by_name.entry(s.name.clone()).or_default().push(i);
        }
        MetricSet { samples, by_name }
    }

    /// Makes the samples of metric `old` (named without the suffixes Prometheus adds, as
    /// `current` is) answer under `current` too, where the set has no sample of
    /// `current`: a scrape that serves both names keeps the current one's own. Which
    /// metrics a release renamed is the engine tables' to say (`renamed_metrics`).
    pub fn answer_renamed(&mut self, old: &str, current: &str) {
        for suffix in SAMPLE_SUFFIXES {
            let current = format!("{current}{suffix}");
            if self.by_name.contains_key(&current) {
                continue;
            }
            if let Some(rows) = self.by_name.get(&format!("{old}{suffix}")) {
                let rows = rows.clone();
                self.by_name.insert(current, rows);
            }
        }
    }

    /// Makes every metric named with `escaped` (an engine's prefix with its colon made an
    /// underscore: `sglang_`) answer under `prefix` (`sglang:`) too, where the set has no
    /// sample of that name: a set that holds both keeps the engine's own.
    pub fn answer_escaped(&mut self, escaped: &str, prefix: &str) {
        let moved: Vec<(String, Vec<usize>)> = self
            .by_name
            .iter()
            .filter_map(|(name, rows)| {
                let own = format!("{prefix}{}", name.strip_prefix(escaped)?);
                (!self.by_name.contains_key(&own)).then(|| (own, rows.clone()))
            })
            .collect();
        self.by_name.extend(moved);
    }

    /// Every sample, in the order read.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// Every sample, in the order read, taken out of the set.
    pub fn into_samples(self) -> Vec<Sample> {
        self.samples
    }

    /// The value of every sample, in the order read, to change in place: a reader that
    /// meets the same series at every step of a range keeps one set and changes only
    /// its values, where a set made anew would copy every name and label again.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut f64> + '_ {
        self.samples.iter_mut().map(|s| &mut s.value)
    }

    /// The value and timestamp of every sample, in the order read, to change in place: a
    /// recorder that reads the same series from a server at every scrape keeps one set
    /// and changes only these.
    pub fn readings_mut(&mut self) -> impl Iterator<Item = (&mut f64, &mut Option<i64>)> + '_ {
        self.samples
            .iter_mut()
            .map(|s| (&mut s.value, &mut s.timestamp_ms))
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Whether any sample has this name.
    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Every sample of one name.
    pub fn series<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.by_name
            .get(name)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(move |&i| &self.samples[i])
    }

    /// The sum over every series of `name`; `None` when there is none (never 0).
    pub fn total(&self, name: &str) -> Option<f64> {
        self.total_matching(name, &[])
    }

    /// The sum over the series of `name` whose labels include `subset`.
    pub fn total_matching(&self, name: &str, subset: &[(&str, &str)]) -> Option<f64> {
        let mut found = false;
        let mut sum = 0.0;
        for s in self.series(name).filter(|s| s.has_labels(subset)) {
            found = true;
            sum += s.value;
        }
        found.then_some(sum)
    }

    /// The value of the one series of `name`; an error when there are several.
    pub fn single(&self, name: &str) -> Result<Option<f64>, SeveralSeries> {
        let mut it = self.series(name);
        match (it.next(), it.next()) {
            (None, _) => Ok(None),
            (Some(s), None) => Ok(Some(s.value)),
            (Some(_), Some(_)) => Err(SeveralSeries {
                name: name.to_owned(),
                count: self.series(name).count(),
            }),
        }
    }

    /// The labels of the first series of an info metric.
    pub fn info(&self, name: &str) -> Option<&[(String, String)]> {
        self.series(name).next().map(|s| s.labels.as_slice())
    }

    /// Distinct metric names, in first-seen order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut seen = std::collections::HashSet::new();
        self.samples
            .iter()
            .map(|s| s.name.as_str())
            .filter(move |n| seen.insert(*n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
            timestamp_ms: None,
        }
    }

    #[test]
    fn total_sums_label_sets_and_absent_is_none() {
        let m = MetricSet::new(vec![
            s("a", &[("engine", "0")], 1.0),
            s("a", &[("engine", "1")], 2.0),
        ]);
        assert_eq!(m.total("a"), Some(3.0));
        assert_eq!(m.total_matching("a", &[("engine", "1")]), Some(2.0));
        assert_eq!(m.total("b"), None);
        assert!(m.single("a").is_err());
    }

    #[test]
    fn a_renamed_metric_answers_under_its_current_name() {
        let mut old = MetricSet::new(vec![s("old_total", &[], 10.0), s("old_sum", &[], 2.0)]);
        old.answer_renamed("old", "new");
        assert_eq!(old.total("new_total"), Some(10.0));
        assert_eq!(old.total("new_sum"), Some(2.0));
        assert_eq!(old.names().count(), 2, "no sample is added");
        // A set that serves both names keeps the current one's own.
        let mut both = MetricSet::new(vec![s("old", &[], 0.4), s("new", &[], 0.5)]);
        both.answer_renamed("old", "new");
        assert_eq!(both.total("new"), Some(0.5));
        // Without the call, no name answers for another.
        assert_eq!(MetricSet::new(vec![s("old", &[], 1.0)]).total("new"), None);
    }

    /// `sglang_num_running_reqs` (a colon escaped on the way) answers as
    /// `sglang:num_running_reqs`; a set that holds both keeps the engine's own; a name
    /// without the escaped prefix answers for nothing.
    #[test]
    fn an_escaped_prefix_answers_under_the_engines_own() {
        let mut m = MetricSet::new(vec![
            s("sglang_num_running_reqs", &[], 3.0),
            s("sglang_generation_tokens_total", &[], 40.0),
            s("process_start_time_seconds", &[], 1.0),
        ]);
        m.answer_escaped("sglang_", "sglang:");
        assert_eq!(m.total("sglang:num_running_reqs"), Some(3.0));
        assert_eq!(m.total("sglang:generation_tokens_total"), Some(40.0));
        assert_eq!(m.total("sglang:process_start_time_seconds"), None);
        let mut both = MetricSet::new(vec![
            s("sglang_token_usage", &[], 0.1),
            s("sglang:token_usage", &[], 0.2),
        ]);
        both.answer_escaped("sglang_", "sglang:");
        assert_eq!(both.total("sglang:token_usage"), Some(0.2));
    }

    /// Values changed in place are the ones every lookup reads, under a renamed name
    /// too: the set is the one a new set of the same series with those values would be.
    #[test]
    fn values_changed_in_place_are_what_lookups_read() {
        let mut m = MetricSet::new(vec![
            s("a", &[("engine", "0")], 1.0),
            s("a", &[("engine", "1")], 2.0),
            s("old", &[], 0.5),
        ]);
        m.answer_renamed("old", "new");
        for (value, new) in m.values_mut().zip([10.0, 20.0, 0.25]) {
            *value = new;
        }
        assert_eq!(m.total("a"), Some(30.0));
        assert_eq!(m.total_matching("a", &[("engine", "1")]), Some(20.0));
        assert_eq!(m.total("new"), Some(0.25));
        let mut fresh = MetricSet::new(vec![
            s("a", &[("engine", "0")], 10.0),
            s("a", &[("engine", "1")], 20.0),
            s("old", &[], 0.25),
        ]);
        fresh.answer_renamed("old", "new");
        assert_eq!(m, fresh);
    }
}
