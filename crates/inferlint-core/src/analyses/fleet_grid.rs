//! The grid a fleet's replicas are read on, for T22 and the fleet's chart: from the
//! earliest sample of any replica to the latest, at the manifest's interval, else at the
//! widest spacing of any one replica's own samples.

use crate::judging::checks::fleet::FleetBalance;
use crate::judging::checks::series::SeriesStats;

/// A fleet's common grid of time slots. More fields may come (it is `#[non_exhaustive]`);
/// it is made by [`FleetGrid::of`].
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct FleetGrid {
    /// The earliest sample of any replica (wall clock, Unix seconds); infinite when no
    /// replica recorded a sample.
    pub first_t_wall: f64,
    /// The latest sample of any replica; negative infinity when none.
    pub last_t_wall: f64,
    /// Seconds between slots; 0 when nothing says (the balance then uses 1 s).
    pub interval_s: f64,
}

impl FleetGrid {
    /// The grid of the replicas' recordings (`None` for a replica without one), at the
    /// manifest's `interval_s` when it gives one.
    pub fn of<'a>(
        series: impl IntoIterator<Item = Option<&'a SeriesStats>>,
        interval_s: Option<f64>,
    ) -> FleetGrid {
        let series: Vec<&SeriesStats> = series.into_iter().flatten().collect();
        let first_t_wall = series
            .iter()
            .filter_map(|s| s.first_t_wall)
            .fold(f64::INFINITY, f64::min);
        let last_t_wall = series
            .iter()
            .filter_map(|s| s.last_t_wall)
            .fold(f64::NEG_INFINITY, f64::max);
        let interval_s = interval_s.unwrap_or_else(|| {
            series
                .iter()
                .filter_map(|s| {
                    let span = s.last_t_wall? - s.first_t_wall?;
                    (s.samples > 1).then(|| span / (s.samples - 1) as f64)
                })
                .fold(0.0, f64::max)
        });
        FleetGrid {
            first_t_wall,
            last_t_wall,
            interval_s,
        }
    }

    /// Whether any replica recorded a sample.
    pub fn has_samples(&self) -> bool {
        self.first_t_wall.is_finite()
    }

    /// Seconds from the first sample to the last.
    pub fn span_s(&self) -> f64 {
        self.last_t_wall - self.first_t_wall
    }

    /// T22's fold of the replicas named (in the grid's order) on this grid.
    pub fn balance(&self, names: &[String]) -> FleetBalance {
        FleetBalance::new(self.interval_s, self.first_t_wall, names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SeriesSample;

    fn series(times: &[f64]) -> SeriesStats {
        let mut s = SeriesStats::new();
        for &t in times {
            s.push(&SeriesSample {
                t_wall: t,
                ..SeriesSample::default()
            });
        }
        s
    }

    #[test]
    fn the_grid_spans_every_replica_at_the_widest_spacing() {
        let (a, b) = (series(&[10.0, 11.0, 12.0]), series(&[11.0, 13.0, 15.0]));
        let grid = FleetGrid::of([Some(&a), None, Some(&b)], None);
        assert_eq!(grid.first_t_wall, 10.0);
        assert_eq!(grid.last_t_wall, 15.0);
        assert_eq!(grid.interval_s, 2.0);
        assert!(grid.has_samples());
        assert_eq!(FleetGrid::of([Some(&a)], Some(0.5)).interval_s, 0.5);
        assert!(!FleetGrid::of([None], None).has_samples());
    }
}
