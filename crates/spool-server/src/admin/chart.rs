//! Small inline SVG line charts: no script, no image requests, and the
//! numbers they show are also written as text next to them.

use std::fmt::Write as _;
use std::time::Duration;

use maud::{html, Markup};

use crate::monitor::Point;

const WIDTH: f64 = 300.0;
const HEIGHT: f64 = 80.0;

/// One line of a chart.
#[derive(Debug)]
pub(super) struct Line<'a> {
    pub name: &'a str,
    /// The CSS class that colours it (and its legend swatch).
    pub class: &'a str,
    pub points: &'a [Point],
}

/// A chart of `lines` over the last `window`, newest at the right edge.
/// `summary` is what a screen reader hears instead of the picture; `unit`
/// labels the top of the scale.
pub(super) fn chart(
    title: &str,
    summary: &str,
    unit: &str,
    window: Duration,
    lines: &[Line<'_>],
) -> Markup {
    let top = nice_max(
        lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max),
    );
    let has_data = lines.iter().any(|l| l.points.len() > 1);
    html! {
        figure.chart {
            figcaption {
                span.chart-title { (title) }
                span.legend {
                    @for line in lines {
                        span.key { span class={ "swatch " (line.class) } aria-hidden="true" {} (line.name) }
                    }
                }
            }
            @if has_data {
                div.plot {
                    span.scale-top aria-hidden="true" { (format_top(top)) " " (unit) }
                    svg viewBox={ "0 0 " (WIDTH) " " (HEIGHT) } preserveAspectRatio="none"
                        role="img" aria-label=(summary) {
                        title { (summary) }
                        line.grid x1="0" y1="0.5" x2=(WIDTH) y2="0.5" vector-effect="non-scaling-stroke" {}
                        line.grid x1="0" y1=(HEIGHT / 2.0) x2=(WIDTH) y2=(HEIGHT / 2.0) vector-effect="non-scaling-stroke" {}
                        line.axis x1="0" y1=(HEIGHT - 0.5) x2=(WIDTH) y2=(HEIGHT - 0.5) vector-effect="non-scaling-stroke" {}
                        @for line in lines {
                            polyline class={ "series " (line.class) } fill="none"
                                vector-effect="non-scaling-stroke"
                                points=(points(line.points, window, top)) {}
                        }
                    }
                    span.scale-x aria-hidden="true" {
                        span { (super::text::duration(window)) " ago" }
                        span { "now" }
                    }
                }
            } @else {
                p.muted.chart-empty { "Collecting samples: the chart fills in over the next minutes." }
            }
        }
    }
}

/// The SVG `points` of a line: age 0 at the right, `window` at the left.
fn points(points: &[Point], window: Duration, top: f64) -> String {
    let span = window.as_secs_f64().max(1.0);
    let mut out = String::new();
    for &(ago, value) in points {
        let x = WIDTH * (1.0 - (ago.as_secs_f64() / span).min(1.0));
        let y = HEIGHT - HEIGHT * (value / top).clamp(0.0, 1.0);
        // Writing to a String cannot fail.
        let _ = write!(out, "{x:.1},{y:.1} ");
    }
    out.trim_end().to_string()
}

/// A round number at or above `max`, so the scale reads well (1, 2, 5 × 10ⁿ).
fn nice_max(max: f64) -> f64 {
    if !max.is_finite() || max <= 1.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|&v| v >= max)
        .unwrap_or(10.0 * magnitude)
}

fn format_top(top: f64) -> String {
    if top >= 10_000.0 {
        format!("{:.0}k", top / 1000.0)
    } else {
        format!("{top:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_round() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(3.2), 5.0);
        assert_eq!(nice_max(12.0), 20.0);
        assert_eq!(nice_max(700.0), 1000.0);
        assert_eq!(nice_max(f64::INFINITY), 1.0);
    }

    #[test]
    fn newest_points_sit_at_the_right() {
        let p = [(Duration::from_secs(600), 0.0), (Duration::ZERO, 10.0)];
        assert_eq!(
            points(&p, Duration::from_secs(600), 10.0),
            "0.0,80.0 300.0,0.0"
        );
    }

    #[test]
    fn no_data_says_so_instead_of_drawing() {
        let html = chart("T", "S", "/s", Duration::from_secs(600), &[]).into_string();
        assert!(html.contains("Collecting samples"));
        assert!(!html.contains("<svg"));
    }
}
