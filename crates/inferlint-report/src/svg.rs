//! Drawing primitives for the charts: a plot frame with its scales, round axis steps and
//! SVG path data. Every chart is drawn here, in Rust, so that the report reads without
//! its script; the script only adds the read-out.

use std::fmt::Write;

use crate::timeline::{Range, Stretch};

/// The width of every chart's view box.
pub const WIDTH: f64 = 960.0;

/// A plot area inside a view box.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub height: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    /// The smallest x value (seconds for a time chart: where the drawn window starts).
    pub x_min: f64,
    /// The largest x value (seconds for a time chart).
    pub x_max: f64,
    pub y_max: f64,
}

impl Frame {
    pub fn time(height: f64, span_s: f64, y_max: f64) -> Frame {
        Frame {
            height,
            left: 56.0,
            right: 16.0,
            top: 18.0,
            bottom: 30.0,
            x_min: 0.0,
            x_max: if span_s > 0.0 { span_s } else { 1.0 },
            y_max: if y_max > 0.0 { y_max } else { 1.0 },
        }
    }

    /// A time chart drawn over `from` to `to` seconds of its recording (the load's span),
    /// not over the whole recording.
    pub fn time_window(height: f64, from: f64, to: f64, y_max: f64) -> Frame {
        let mut frame = Frame::time(height, to - from, y_max);
        if to > from {
            frame.x_min = from;
            frame.x_max = to;
        }
        frame
    }

    /// The seconds the x axis spans.
    pub fn x_span(&self) -> f64 {
        self.x_max - self.x_min
    }

    pub fn plot_width(&self) -> f64 {
        WIDTH - self.left - self.right
    }

    pub fn plot_height(&self) -> f64 {
        self.height - self.top - self.bottom
    }

    pub fn x(&self, value: f64) -> f64 {
        let span = self.x_max - self.x_min;
        let share = if span > 0.0 {
            (value - self.x_min) / span
        } else {
            0.0
        };
        self.left + share.clamp(0.0, 1.0) * self.plot_width()
    }

    pub fn y(&self, value: f64) -> f64 {
        self.top + (1.0 - (value / self.y_max).clamp(0.0, 1.0)) * self.plot_height()
    }

    pub fn baseline(&self) -> f64 {
        self.height - self.bottom
    }

    pub fn view_box(&self) -> String {
        format!("0 0 {WIDTH} {}", self.height)
    }
}

/// The smallest "round" number (1, 2, 2.5 or 5 times a power of ten) at or above `value`.
pub fn nice_ceiling(value: f64) -> f64 {
    if value.is_nan() || value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(value.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * power >= value * (1.0 - 1e-12) {
            return m * power;
        }
    }
    10.0 * power
}

/// Tick values from 0 to `max` on a round step, about `wanted` of them.
pub fn ticks(max: f64, wanted: usize) -> Vec<f64> {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return vec![0.0];
    }
    let step = nice_ceiling(max / wanted.max(1) as f64);
    let mut out = Vec::new();
    let mut v = 0.0;
    while v <= max * (1.0 + 1e-9) {
        out.push(v);
        v += step;
    }
    out
}

/// A y axis for values up to `top`: a top that is itself a round tick, and the ticks.
pub fn y_axis(top: f64) -> (f64, Vec<f64>) {
    let top = if top > 0.0 && top.is_finite() {
        top
    } else {
        1.0
    };
    let step = nice_ceiling(top / 4.0);
    let max = (top / step - 1e-9).ceil().max(1.0) * step;
    (max, ticks(max, (max / step).round() as usize))
}

/// Round time steps for a time axis over `from` to `to` seconds: the round steps of the
/// window's length, from the first at or after `from`.
pub fn window_ticks(from: f64, to: f64) -> Vec<f64> {
    let span = to - from;
    let Some(step) = time_ticks(span).get(1).map(|t| *t - 0.0) else {
        return vec![from];
    };
    let mut out = Vec::new();
    let mut t = (from / step).ceil() * step;
    while t <= to + 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

/// Round time steps for a time axis, in seconds.
pub fn time_ticks(span_s: f64) -> Vec<f64> {
    const STEPS: [f64; 18] = [
        1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
        10800.0, 21600.0, 43200.0, 86400.0,
    ];
    let wanted = span_s / 8.0;
    let step = STEPS
        .iter()
        .copied()
        .find(|s| *s >= wanted)
        .unwrap_or(86400.0);
    let mut out = Vec::new();
    let mut t = 0.0;
    while t <= span_s + 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

/// Path data for one gauge over the points: a step line through each sample when
/// nothing was downsampled, else a band from each stretch's lowest to its highest
/// reading. Gaps (stretches without the gauge) break the path.
pub fn gauge_path(
    frame: &Frame,
    points: &[Stretch],
    gauge: impl Fn(&Stretch) -> Option<Range>,
    band: bool,
) -> String {
    let mut d = String::new();
    if band {
        // One polygon per run of stretches that have the gauge.
        let mut run: Vec<(f64, Range)> = Vec::new();
        let flush = |run: &mut Vec<(f64, Range)>, d: &mut String| {
            if run.is_empty() {
                return;
            }
            for (i, (x, r)) in run.iter().enumerate() {
                let _ = write!(
                    d,
                    "{}{:.1},{:.1}",
                    if i == 0 { "M" } else { "L" },
                    x,
                    frame.y(r.max)
                );
            }
            for (x, r) in run.iter().rev() {
                let _ = write!(d, "L{:.1},{:.1}", x, frame.y(r.min));
            }
            d.push('Z');
            run.clear();
        };
        for p in points {
            match gauge(p) {
                Some(r) => run.push((frame.x(p.t_first), r)),
                None => flush(&mut run, &mut d),
            }
        }
        flush(&mut run, &mut d);
    } else {
        let mut open = false;
        for p in points {
            match gauge(p) {
                Some(r) => {
                    let (x, y) = (frame.x(p.t_first), frame.y(r.last));
                    if open {
                        let _ = write!(d, "H{x:.1}V{y:.1}");
                    } else {
                        let _ = write!(d, "M{x:.1},{y:.1}");
                        open = true;
                    }
                }
                None => open = false,
            }
        }
        if open {
            if let Some(last) = points.last() {
                let _ = write!(d, "H{:.1}", frame.x(last.t_last));
            }
        }
    }
    d
}

/// Path data for the area under a gauge's highest reading, down to zero.
pub fn area_path(
    frame: &Frame,
    points: &[Stretch],
    gauge: impl Fn(&Stretch) -> Option<Range>,
) -> String {
    let mut d = String::new();
    let base = frame.baseline();
    let mut open_x: Option<f64> = None;
    let mut last_x = 0.0;
    for p in points {
        match gauge(p) {
            Some(r) => {
                let (x, y) = (frame.x(p.t_first), frame.y(r.max));
                if open_x.is_none() {
                    let _ = write!(d, "M{x:.1},{base:.1}V{y:.1}");
                    open_x = Some(x);
                } else {
                    let _ = write!(d, "H{x:.1}V{y:.1}");
                }
                last_x = frame.x(p.t_last.max(p.t_first));
            }
            None => {
                if open_x.take().is_some() {
                    let _ = write!(d, "H{last_x:.1}V{base:.1}Z");
                }
            }
        }
    }
    if open_x.is_some() {
        let end = points.last().map_or(last_x, |p| frame.x(p.t_last));
        let _ = write!(d, "H{end:.1}V{base:.1}Z");
    }
    d
}

/// A small downward triangle with its tip at (x, y).
pub fn marker_path(x: f64, y: f64) -> String {
    format!("M{:.1},{:.1}l-5,-8h10z", x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_numbers() {
        assert_eq!(nice_ceiling(32.0), 50.0);
        assert_eq!(nice_ceiling(22.0), 25.0);
        assert_eq!(nice_ceiling(10.0), 10.0);
        assert_eq!(nice_ceiling(0.3), 0.5);
        assert_eq!(ticks(40.0, 4), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
        assert_eq!(time_ticks(93.7).len(), 7);
        assert_eq!(y_axis(33.6), (40.0, vec![0.0, 10.0, 20.0, 30.0, 40.0]));
        assert_eq!(y_axis(32.0).0, 40.0);
    }
}
