//! A range answer read into each replica's series samples, in one pass over the answer.
//!
//! The answer's series are put with their replica as they are read ([`RangeReader::read`]:
//! `pod`, else `instance`, among the replicas the snapshots found), each keeping its
//! points inside the piece asked; a point outside it is dropped and counted. Then each
//! replica's samples come out in time order ([`RangeReader::samples`]): at each step the
//! series that have a point there are one scrape, read through the engine's table
//! ([`crate::record::sample_from_metrics`]) as a recorder reads a scrape. The scrape is a
//! [`MetricSet`] made once for each set of series present, whose values alone change
//! from one step to the next: a series' name and labels are copied once per piece (and
//! again only where the set of series present changes), never once per point.

use inferlint_core::model::metrics::{MetricSet, Sample};
use inferlint_core::model::SeriesSample;
use inferlint_core::EngineDescriptor;

use super::answer::{read_answer, ApiError, RawSeries, SeriesSink};
use crate::record;

/// One series of a replica in the piece being read: its name and labels as a scrape's
/// sample, and its points inside the piece as (Unix ms, value).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Column {
    pub(super) sample: Sample,
    pub(super) points: Vec<(i64, f64)>,
}

/// What one piece's answer held beyond the replicas' points.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PieceRead {
    /// Points outside the piece asked (a Prometheus that answers beyond the window),
    /// dropped.
    pub outside: u64,
    /// Series of no replica the snapshots found (with neither `pod` nor `instance`, or
    /// another one), left out.
    pub unplaced: u64,
    /// Series read, placed or not.
    pub series: u64,
}

/// Reads the range answers of one window, a piece at a time, into each replica's
/// samples. Holds one piece: each [`RangeReader::read`] replaces the last.
#[derive(Debug)]
pub struct RangeReader {
    engine: &'static EngineDescriptor,
    replicas: Vec<String>,
    columns: Vec<Vec<Column>>,
}

impl RangeReader {
    /// A reader of the series of `replicas` (their names as [`super::replicas_of`] gives
    /// them) for `engine`.
    pub fn new(engine: &'static EngineDescriptor, replicas: &[String]) -> RangeReader {
        let mut replicas = replicas.to_vec();
        replicas.sort();
        replicas.dedup();
        RangeReader {
            engine,
            columns: vec![Vec::new(); replicas.len()],
            replicas,
        }
    }

    /// The replicas, in the order [`RangeReader::samples`] numbers them (sorted).
    pub fn replicas(&self) -> &[String] {
        &self.replicas
    }

    /// Reads the answer to the range query of the piece `[from_ms, to_ms]`, in place of
    /// the piece read before. On an error nothing of this answer is kept.
    pub fn read(&mut self, body: &[u8], from_ms: i64, to_ms: i64) -> Result<PieceRead, ApiError> {
        for columns in &mut self.columns {
            columns.clear();
        }
        let mut sorter = Sorter {
            replicas: &self.replicas,
            columns: &mut self.columns,
            from_ms,
            to_ms,
            read: PieceRead::default(),
        };
        let result = read_answer(body, &mut sorter);
        let read = sorter.read;
        if let Err(e) = result {
            for columns in &mut self.columns {
                columns.clear();
            }
            return Err(e);
        }
        Ok(read)
    }

    /// The samples of replica number `replica` in the piece read last, in time order,
    /// each handed to `emit`; the first error `emit` returns ends it. A step where the
    /// replica has no point at all is no sample (Prometheus had no reading within its
    /// look-back): a gap, never zeros.
    pub fn samples<E>(
        &mut self,
        replica: usize,
        emit: impl FnMut(&SeriesSample) -> Result<(), E>,
    ) -> Result<(), E> {
        match self.columns.get_mut(replica) {
            Some(columns) => assemble(self.engine, columns, emit),
            None => Ok(()),
        }
    }
}

struct Sorter<'r> {
    replicas: &'r [String],
    columns: &'r mut [Vec<Column>],
    from_ms: i64,
    to_ms: i64,
    read: PieceRead,
}

impl SeriesSink for Sorter<'_> {
    fn series(&mut self, s: RawSeries<'_>) {
        self.read.series += 1;
        let place = s
            .replica()
            .and_then(|r| self.replicas.binary_search_by(|n| n.as_str().cmp(r)).ok());
        let Some(place) = place else {
            self.read.unplaced += 1;
            return;
        };
        let mut points = Vec::with_capacity(s.points.len());
        for &(t, v) in s.points {
            let t_ms = (t * 1000.0).round() as i64;
            if (self.from_ms..=self.to_ms).contains(&t_ms) {
                points.push((t_ms, v));
            } else {
                self.read.outside += 1;
            }
        }
        self.columns[place].push(Column {
            sample: Sample {
                name: s.name.to_owned(),
                labels: s
                    .labels
                    .iter()
                    .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
                    .collect(),
                value: f64::NAN,
                timestamp_ms: None,
            },
            points,
        });
    }
}

/// One replica's samples in time order from its series: at each time some series has a
/// point, the series that have one there (each as often as it has one) are one scrape.
pub(super) fn assemble<E>(
    engine: &EngineDescriptor,
    columns: &mut [Column],
    mut emit: impl FnMut(&SeriesSample) -> Result<(), E>,
) -> Result<(), E> {
    for column in columns.iter_mut() {
        // Prometheus answers in time order; another order is read as if it had. The sort
        // is stable, so two points of one time keep the answer's order.
        if !column.points.is_sorted_by_key(|p| p.0) {
            column.points.sort_by_key(|p| p.0);
        }
    }
    let mut cursor = vec![0usize; columns.len()];
    // The series present at this step, one entry per point, and their values.
    let mut present: Vec<usize> = Vec::with_capacity(columns.len());
    let mut values: Vec<f64> = Vec::with_capacity(columns.len());
    // The scrape made for the set of series present at an earlier step.
    let mut made: Option<(Vec<usize>, MetricSet)> = None;
    loop {
        let next = columns
            .iter()
            .zip(&cursor)
            .filter_map(|(c, &i)| c.points.get(i).map(|p| p.0))
            .min();
        let Some(t_ms) = next else {
            return Ok(());
        };
        present.clear();
        values.clear();
        for (k, column) in columns.iter().enumerate() {
            while let Some(&(t, v)) = column.points.get(cursor[k]) {
                if t != t_ms {
                    break;
                }
                present.push(k);
                values.push(v);
                cursor[k] += 1;
            }
        }
        let metrics = match &mut made {
            Some((set, metrics)) if *set == present => metrics,
            _ => {
                let samples = present.iter().map(|&k| columns[k].sample.clone()).collect();
                let (_, metrics) = made.insert((present.clone(), engine.scrape_metrics(samples)));
                metrics
            }
        };
        for (slot, &value) in metrics.values_mut().zip(&values) {
            *slot = value;
        }
        emit(&record::sample_from_metrics(
            engine,
            metrics,
            t_ms as f64 / 1000.0,
            None,
        ))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferlint_core::Engine;

    /// A series of a test answer: its name, its `instance`, its points.
    type Series<'a> = (&'a str, &'a str, &'a [(f64, &'a str)]);

    fn matrix(series: &[Series<'_>]) -> Vec<u8> {
        let items: Vec<String> = series
            .iter()
            .map(|(name, instance, points)| {
                let points: Vec<String> = points
                    .iter()
                    .map(|(t, v)| format!("[{t},\"{v}\"]"))
                    .collect();
                format!(
                    r#"{{"metric":{{"__name__":"{name}","instance":"{instance}","job":"vllm"}},"values":[{}]}}"#,
                    points.join(",")
                )
            })
            .collect();
        format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{}]}}}}"#,
            items.join(",")
        )
        .into_bytes()
    }

    fn all(reader: &mut RangeReader, replica: usize) -> Vec<SeriesSample> {
        let mut out = Vec::new();
        reader
            .samples(replica, |s| {
                out.push(*s);
                Ok::<(), ()>(())
            })
            .expect("no error");
        out
    }

    /// Each replica gets the series of its own `instance`, a step where a series lacks a
    /// point reads that gauge as missing (never 0), a step with no point at all is no
    /// sample, and the set of series present may change from step to step.
    #[test]
    fn each_replica_gets_its_own_steps() {
        let d = Engine::Vllm.descriptor();
        let body = matrix(&[
            (d.running, "a:1", &[(1.0, "2"), (2.0, "3"), (4.0, "5")]),
            (d.waiting, "a:1", &[(1.0, "0"), (2.0, "1"), (3.0, "4")]),
            (d.running, "b:1", &[(1.0, "7")]),
            (d.running, "c:1", &[(1.0, "9")]),
        ]);
        let mut reader = RangeReader::new(d, &["b:1".to_owned(), "a:1".to_owned()]);
        let read = reader.read(&body, 1000, 4000).expect("reads");
        assert_eq!(
            read,
            PieceRead {
                outside: 0,
                unplaced: 1,
                series: 4
            },
            "c:1 is no replica of the fleet"
        );
        assert_eq!(reader.replicas(), ["a:1", "b:1"]);
        let a = all(&mut reader, 0);
        let seen: Vec<(f64, Option<f64>, Option<f64>)> =
            a.iter().map(|s| (s.t_wall, s.running, s.waiting)).collect();
        assert_eq!(
            seen,
            vec![
                (1.0, Some(2.0), Some(0.0)),
                (2.0, Some(3.0), Some(1.0)),
                (3.0, None, Some(4.0)),
                (4.0, Some(5.0), None),
            ]
        );
        let b = all(&mut reader, 1);
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].running, Some(7.0));
    }

    /// Points outside the piece asked are dropped and counted; the piece's own ends are
    /// kept. An answer that cannot be read keeps nothing of itself.
    #[test]
    fn points_outside_the_piece_are_dropped_and_counted() {
        let d = Engine::Vllm.descriptor();
        let far = 11.6 * 86_400.0;
        let body = matrix(&[(
            d.running,
            "a:1",
            &[
                (100.0 - far, "1"),
                (100.0, "2"),
                (110.0, "3"),
                (110.0 + far, "4"),
            ],
        )]);
        let mut reader = RangeReader::new(d, &["a:1".to_owned()]);
        let read = reader.read(&body, 100_000, 110_000).expect("reads");
        assert_eq!(read.outside, 2);
        let kept: Vec<Option<f64>> = all(&mut reader, 0).iter().map(|s| s.running).collect();
        assert_eq!(kept, vec![Some(2.0), Some(3.0)]);
        let cut = &body[..body.len() - 10];
        assert!(reader.read(cut, 100_000, 110_000).is_err());
        assert!(all(&mut reader, 0).is_empty());
    }

    /// Data-parallel vLLM serves one series per engine inside a replica: summed as in a
    /// scrape, KV usage weighted by each engine's usable blocks (10 and 30 of 11 and 31,
    /// one null block each: 5 of 10 and 7.5 of 30 is 12.5 of 40).
    #[test]
    fn engines_inside_a_replica_are_read_as_a_scrape_reads_them() {
        let d = Engine::Vllm.descriptor();
        let cache = d.cache_info.expect("vLLM has a cache info metric");
        let series = |name: &str, engine: &str, extra: &str, v: &str| {
            format!(
                r#"{{"metric":{{"__name__":"{name}","instance":"a:1","engine":"{engine}"{extra}}},"values":[[1,"{v}"],[2,"{v}"]]}}"#
            )
        };
        let blocks = |n: &str| format!(r#","{}":"{n}""#, cache.blocks_label);
        let items = [
            series(d.running, "0", "", "3"),
            series(d.running, "1", "", "5"),
            series(d.kv_usage, "0", "", "0.5"),
            series(d.kv_usage, "1", "", "0.25"),
            series(cache.metric, "0", &blocks("11"), "1"),
            series(cache.metric, "1", &blocks("31"), "1"),
        ];
        let body = format!(
            r#"{{"status":"success","data":{{"resultType":"matrix","result":[{}]}}}}"#,
            items.join(",")
        );
        let mut reader = RangeReader::new(d, &["a:1".to_owned()]);
        reader.read(body.as_bytes(), 0, 10_000).expect("reads");
        let samples = all(&mut reader, 0);
        assert_eq!(samples.len(), 2);
        for s in samples {
            assert_eq!(s.running, Some(8.0));
            assert_eq!(s.kv_usage, Some(12.5 / 40.0));
        }
    }

    /// NaN is read as the API writes it; the sample's gauge is then NaN, which a
    /// recording writes as no reading.
    #[test]
    fn nan_reaches_the_sample() {
        let d = Engine::Vllm.descriptor();
        let body = matrix(&[(d.kv_usage, "a:1", &[(1.0, "NaN"), (2.0, "0.5")])]);
        let mut reader = RangeReader::new(d, &["a:1".to_owned()]);
        reader.read(&body, 0, 10_000).expect("reads");
        let samples = all(&mut reader, 0);
        assert!(samples[0].kv_usage.is_some_and(f64::is_nan));
        assert_eq!(samples[1].kv_usage, Some(0.5));
    }
}
