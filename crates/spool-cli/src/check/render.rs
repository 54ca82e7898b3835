//! `spool check`'s output: a summary for a person on stdout, and the
//! verdict as the command's result (an error names the damaged file and
//! byte offset).

use std::io::Write;

use spool_engine::CheckReport;
use spool_wal::{FileCheck, FileStatus};

/// Prints totals, task counts per queue, then one line per file.
pub(crate) fn summary(full: &CheckReport, out: &mut impl Write) -> std::io::Result<()> {
    let report = &full.log;
    writeln!(out, "data directory {}", report.dir.display())?;
    match report.instance {
        Some(id) => writeln!(out, "  META         {} (instance {id:032x})", report.meta)?,
        None => writeln!(out, "  META         {}", report.meta)?,
    }
    let used: Vec<&FileCheck> = report
        .segments
        .iter()
        .filter(|s| s.status != FileStatus::Unused)
        .collect();
    let records: u64 = used.iter().map(|s| s.records).sum();
    let batches: u64 = used.iter().map(|s| s.batches).sum();
    let bytes: u64 = used.iter().map(|s| s.bytes).sum();
    let first = used.iter().find_map(|s| s.first_lsn);
    let last = used.iter().rev().find_map(|s| s.last_lsn);
    let lsns = match (first, last) {
        (Some(first), Some(last)) => format!("lsn {first}..={last}"),
        _ => "no records".to_string(),
    };
    writeln!(
        out,
        "  log          {} segments ({}), {records} records in {batches} group commits, {lsns}",
        used.len(),
        size(bytes)
    )?;
    let unused = report.segments.len() - used.len();
    if unused > 0 {
        writeln!(
            out,
            "               and {unused} preallocated, unused segments"
        )?;
    }
    match report.snapshots.last() {
        Some(newest) => writeln!(
            out,
            "  checkpoints  {} (newest covers the log up to lsn {})",
            report.snapshots.len(),
            newest.first_lsn.map_or(0, |lsn| lsn.saturating_sub(1))
        )?,
        None => writeln!(out, "  checkpoints  none")?,
    }
    match report.torn_tail() {
        Some(seg) => writeln!(out, "  torn tail    {}: {}", seg.file.display(), seg.status)?,
        None => writeln!(out, "  torn tail    none")?,
    }
    queues(full, out)?;
    writeln!(out, "files")?;
    for f in report.segments.iter().chain(&report.snapshots) {
        let lsns = match (f.first_lsn, f.last_lsn) {
            (Some(first), Some(last)) => format!("lsn {first}..={last}"),
            (Some(first), None) => format!("from lsn {first}"),
            _ => String::new(),
        };
        writeln!(
            out,
            "  {}  {:>10}  {:<24}  {}",
            f.file.display(),
            size(f.bytes),
            lsns,
            f.status
        )?;
    }
    let verdict = if report.has_corruption() {
        "DAMAGED: the engine refuses to start on this directory"
    } else if report.torn_tail().is_some() {
        "healthy, with a warning: the engine drops the torn tail on start"
    } else {
        "healthy"
    };
    writeln!(out, "verdict: {verdict}")
}

/// Task counts per queue and state, as the engine would rebuild them.
fn queues(report: &CheckReport, out: &mut impl Write) -> std::io::Result<()> {
    if report.has_corruption() {
        return writeln!(out, "queues       not counted: the log is damaged");
    }
    writeln!(
        out,
        "queues       {}, with {} live tasks",
        report.queues.len(),
        report.tasks
    )?;
    writeln!(
        out,
        "payloads     {} bytes live in {} bytes of log segments; {} unreadable",
        report.live_payload_bytes, report.log_bytes, report.bad_payloads
    )?;
    for e in &report.payload_errors {
        writeln!(out, "  {e}")?;
    }
    if report.queues.is_empty() {
        return Ok(());
    }
    let width = report
        .queues
        .iter()
        .map(|q| q.name.as_str().len())
        .max()
        .unwrap_or(0)
        .max("queue".len());
    writeln!(
        out,
        "  {:<width$}  {:>10} {:>10} {:>10} {:>10}",
        "queue", "scheduled", "ready", "leased", "dead"
    )?;
    for q in &report.queues {
        let c = &q.counts;
        writeln!(
            out,
            "  {:<width$}  {:>10} {:>10} {:>10} {:>10}{}",
            q.name.as_str(),
            c.scheduled,
            c.ready,
            c.leased,
            c.dead,
            if q.paused { "  (paused)" } else { "" }
        )?;
    }
    Ok(())
}

/// Ok when the engine would start, with a warning if it would first drop a
/// torn tail; otherwise an error naming the damage.
pub(crate) fn verdict(full: &CheckReport) -> anyhow::Result<Option<String>> {
    if let Some(first) = full.payload_errors.first() {
        anyhow::bail!(
            "{} live tasks' payloads are unreadable, the first: {first}",
            full.bad_payloads
        );
    }
    let report = &full.log;
    if report.meta != FileStatus::Ok && report.segments.is_empty() && report.snapshots.is_empty() {
        anyhow::bail!(
            "{} is not a Spool data directory ({})",
            report.dir.display(),
            report.meta
        );
    }
    let meta = report.dir.join("META");
    let damage: Vec<String> = std::iter::once((meta.as_path(), &report.meta))
        .chain(
            report
                .segments
                .iter()
                .chain(&report.snapshots)
                .map(|f| (f.file.as_path(), &f.status)),
        )
        .filter_map(|(file, status)| match status {
            FileStatus::Corrupt { offset, reason } => Some(format!(
                "corrupt data in {} at byte {offset}: {reason}",
                file.display()
            )),
            _ => None,
        })
        .collect();
    match damage.as_slice() {
        [] => Ok(report.torn_tail().map(|torn| {
            format!(
                "{}: {} (the engine drops it on start)",
                torn.file.display(),
                torn.status
            )
        })),
        [one] => anyhow::bail!("{one}"),
        [first, rest @ ..] => anyhow::bail!("{first} (and {} more damaged files)", rest.len()),
    }
}

/// Bytes in binary units, one decimal.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(64 * 1024 * 1024), "64.0 MiB");
    }
}
