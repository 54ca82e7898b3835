//! `spool-compare`: the same workloads against Spool (embedded, server,
//! PostgreSQL store) and the systems users would pick instead, one system
//! at a time, in one run. Writes every figure as JSON, a markdown table
//! beside it, and a PNG chart. `bench/run.sh` is the one command that
//! prepares the machine and runs it.

mod chart;
mod config;
mod figure;
mod hold;
mod payload;
mod report;
mod sink;
mod system;
mod systems;
mod workload;

use anyhow::Context;
use clap::Parser;

use crate::config::Config;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cfg = Config::parse();
    if cfg.render_only {
        let json = std::fs::read_to_string(&cfg.out)
            .with_context(|| format!("cannot read {}", cfg.out.display()))?;
        let figures: Vec<figure::Figure> = serde_json::from_str(&json)?;
        return write(&cfg, &figures);
    }
    let mut figures = Vec::new();
    let mut failed = Vec::new();
    for name in &cfg.systems {
        eprintln!("== {name}");
        let system = match systems::connect(name, &cfg).await {
            Ok(system) => system,
            Err(e) => {
                eprintln!("{name}: cannot start: {e:#}");
                failed.push(name.clone());
                continue;
            }
        };
        eprintln!("   {}", system.settings());
        for figure in workload::run_all(system.as_ref(), &cfg).await {
            eprintln!(
                "   {:<40} {:>12}/s  p50 {:>8} µs  p99 {:>8} µs  {}",
                figure.row_label(),
                report::thousands(figure.rate),
                figure.p50_us.unwrap_or(0),
                figure.p99_us.unwrap_or(0),
                figure.note
            );
            if figure.note.starts_with("failed") {
                failed.push(format!("{name}: {}", figure.row_label()));
            }
            figures.push(figure);
        }
        drop(system);
    }
    write(&cfg, &figures)?;
    anyhow::ensure!(failed.is_empty(), "some measurements failed: {failed:?}");
    Ok(())
}

/// The JSON, the markdown table and the chart, side by side.
fn write(cfg: &Config, figures: &[figure::Figure]) -> anyhow::Result<()> {
    if let Some(dir) = cfg.out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if !cfg.render_only {
        let json = serde_json::to_string_pretty(figures)?;
        std::fs::write(&cfg.out, json)
            .with_context(|| format!("cannot write {}", cfg.out.display()))?;
    }
    let table = cfg.out.with_extension("md");
    std::fs::write(&table, report::markdown(figures))?;
    let png = cfg.out.with_extension("png");
    chart::render(figures, &png)?;
    eprintln!(
        "wrote {}, {} and {}",
        cfg.out.display(),
        table.display(),
        png.display()
    );
    Ok(())
}
