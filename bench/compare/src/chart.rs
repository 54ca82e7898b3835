//! The comparison as one PNG: throughput per workload, one bar per
//! system, on a log scale so that a broker at 5,000/s and an in-process
//! engine at 1,000,000/s both stay readable.

use std::path::Path;

use plotters::prelude::*;

use crate::figure::{workload, Figure};

const PALETTE: [RGBColor; 11] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(188, 189, 34),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(0, 0, 128),
];

pub fn render(figures: &[Figure], path: &Path) -> anyhow::Result<()> {
    // Throughput rows only, at the main payload size.
    let main_payload = figures.iter().map(|f| f.payload).min().unwrap_or(100);
    let shown: Vec<&Figure> = figures
        .iter()
        .filter(|f| {
            f.payload == main_payload
                && f.workload != workload::STEADY
                && !f.is_hold_phase()
                && f.rate > 0.0
        })
        .collect();
    let mut groups: Vec<String> = Vec::new();
    let mut systems: Vec<String> = Vec::new();
    for f in &shown {
        let label = f.row_label().replace(&format!(", {main_payload} B"), "");
        if !groups.contains(&label) {
            groups.push(label);
        }
        if !systems.contains(&f.system) {
            systems.push(f.system.clone());
        }
    }
    let root = BitMapBackend::new(path, (1400, 700)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = shown.iter().map(|f| f.rate).fold(10.0, f64::max) * 3.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Tasks per second, {main_payload}-byte payloads, durable settings (log scale)"),
            ("sans-serif", 24),
        )
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..groups.len() as f64, (10f64..top).log_scale())?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            let centre = (x - x.floor() - 0.5).abs() < 1e-6;
            match groups.get(i) {
                Some(g) if centre => g.clone(),
                _ => String::new(),
            }
        })
        .y_label_formatter(&|y| crate::report::thousands(*y))
        .y_desc("tasks/s")
        .draw()?;
    let width = 0.9 / systems.len().max(1) as f64;
    for (j, system) in systems.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        let bars = shown
            .iter()
            .filter(|f| &f.system == system)
            .filter_map(|f| {
                let label = f.row_label().replace(&format!(", {main_payload} B"), "");
                let i = groups.iter().position(|g| *g == label)? as f64;
                let x0 = i + 0.05 + j as f64 * width;
                Some(Rectangle::new(
                    [(x0, 10.0), (x0 + width * 0.9, f.rate)],
                    color.filled(),
                ))
            });
        chart
            .draw_series(bars)?
            .label(system.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
