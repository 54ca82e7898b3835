//! The markdown tables of a run: every figure, and the ratio of Spool to
//! each peer, Spool's server against the brokers and Spool's PostgreSQL
//! store against the other PostgreSQL queues (like against like).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::figure::{workload, Figure};

/// Peers that keep their tasks in PostgreSQL: compared with Spool's
/// PostgreSQL store. Every other peer is compared with Spool's server,
/// over HTTP and over RESP.
const PG_PEERS: &[&str] = &[
    "pg-skip-locked",
    "graphile-worker",
    "apalis-postgres",
    "awa",
];

pub fn markdown(figures: &[Figure]) -> String {
    let systems = ordered(figures.iter().map(|f| f.system.as_str()));
    let rows = ordered(figures.iter().map(row_key));
    let by_cell: BTreeMap<(String, String), &Figure> = figures
        .iter()
        .map(|f| ((row_key(f), f.system.clone()), f))
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Throughput in tasks/s (steady state: rate achieved, p50 / p99 pickup).\n"
    );
    let _ = writeln!(out, "| workload | {} |", systems.join(" | "));
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(systems.len()));
    for row in &rows {
        let cells: Vec<String> = systems
            .iter()
            .map(|s| {
                by_cell
                    .get(&(row.clone(), s.clone()))
                    .map_or("–".into(), |f| cell(f))
            })
            .collect();
        let _ = writeln!(out, "| {row} | {} |", cells.join(" | "));
    }
    let _ = writeln!(
        out,
        "\nRatio of Spool to each peer (above 1: Spool ahead; latency rows compare p99 pickup).\n"
    );
    // Each peer beside every Spool variant of its kind that ran.
    let pairs: Vec<(&str, &String)> = systems
        .iter()
        .filter(|s| !s.starts_with("spool-"))
        .flat_map(|p| {
            spool_for(p)
                .iter()
                .filter(|s| systems.iter().any(|ran| ran == *s))
                .map(move |s| (*s, p))
        })
        .collect();
    let _ = writeln!(
        out,
        "| workload | {} |",
        pairs
            .iter()
            .map(|(s, p)| format!("{s} vs {p}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(pairs.len()));
    for row in &rows {
        let cells: Vec<String> = pairs
            .iter()
            .map(|(s, p)| {
                let spool = by_cell.get(&(row.clone(), s.to_string()));
                let peer = by_cell.get(&(row.clone(), (*p).clone()));
                match (spool, peer) {
                    (Some(s), Some(p)) => ratio(s, p).map_or("–".into(), |r| format!("{r:.2}×")),
                    _ => "–".into(),
                }
            })
            .collect();
        let _ = writeln!(out, "| {row} | {} |", cells.join(" | "));
    }
    if figures.iter().any(Figure::is_hold_phase) {
        out.push_str(&horizon(figures));
    }
    let notes: Vec<&Figure> = figures
        .iter()
        .filter(|f| !f.note.is_empty() && !f.note.starts_with("offered"))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\nNotes:\n");
        for f in notes {
            let _ = writeln!(out, "- {} — {}: {}", f.system, row_key(f), f.note);
        }
    }
    out
}

/// The steady state around a held horizon: per system, each phase's
/// rate, pickup, and the largest size and dead-tuple count sampled in it.
fn horizon(figures: &[Figure]) -> String {
    let mut out = String::from(
        "\nThe steady state around a held horizon (size: the system's tables with their \
         indexes; both the largest sampled in the phase).\n\n\
         | system | phase | tasks/s | pickup p50 / p99 | size | dead tuples |\n\
         | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for f in figures.iter().filter(|f| f.is_hold_phase()) {
        let phase = match f.workload.as_str() {
            workload::HOLD_BEFORE => "before",
            workload::HOLD_HELD => "held",
            _ => "after",
        };
        let _ = writeln!(
            out,
            "| {} | {phase} | {} | {} / {} | {:.2} MB | {} |",
            f.system,
            thousands(f.rate),
            micros(f.p50_us.unwrap_or(0)),
            micros(f.p99_us.unwrap_or(0)),
            f.size_bytes.unwrap_or(0) as f64 / 1e6,
            thousands(f.dead_tuples.unwrap_or(0) as f64)
        );
    }
    out
}

/// The Spool variants a peer is compared with.
pub fn spool_for(peer: &str) -> &'static [&'static str] {
    if PG_PEERS.contains(&peer) {
        &["spool-postgres"]
    } else {
        &["spool-server", "spool-resp"]
    }
}

fn row_key(f: &Figure) -> String {
    f.row_label()
}

fn cell(f: &Figure) -> String {
    if f.tasks == 0 && !f.note.is_empty() {
        return "failed".into();
    }
    let rate = thousands(f.rate);
    let cut = if f.note.starts_with("cut") {
        " (cut)"
    } else {
        ""
    };
    let steady = f.workload == workload::STEADY || f.is_hold_phase();
    match (steady, f.p50_us, f.p99_us) {
        (true, Some(p50), Some(p99)) => {
            format!("{rate} ({} / {})", micros(p50), micros(p99))
        }
        _ => format!("{rate}{cut}"),
    }
}

/// Spool's advantage: throughput ratio, or for the steady state the
/// inverse ratio of p99 pickup latency.
fn ratio(spool: &Figure, peer: &Figure) -> Option<f64> {
    if spool.workload == workload::STEADY || spool.is_hold_phase() {
        let (s, p) = (spool.p99_us? as f64, peer.p99_us? as f64);
        return (s > 0.0 && peer.tasks > 0).then(|| p / s);
    }
    (peer.rate > 0.0 && spool.rate > 0.0).then(|| spool.rate / peer.rate)
}

pub fn thousands(x: f64) -> String {
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn micros(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.1} s", us as f64 / 1e6)
    } else if us >= 10_000 {
        format!("{:.0} ms", us as f64 / 1000.0)
    } else if us >= 1000 {
        format!("{:.1} ms", us as f64 / 1000.0)
    } else {
        format!("{us} µs")
    }
}

/// Distinct values in first-seen order.
fn ordered<T: PartialEq + Into<String>>(items: impl Iterator<Item = T>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        let s: String = item.into();
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_compare_like_with_like() {
        let figures = vec![
            Figure::new("spool-server", workload::DRAIN, 16, 100).measured(200, 1.0),
            Figure::new("spool-postgres", workload::DRAIN, 16, 100).measured(100, 1.0),
            Figure::new("redis", workload::DRAIN, 16, 100).measured(100, 1.0),
            Figure::new("pg-skip-locked", workload::DRAIN, 16, 100).measured(50, 1.0),
        ];
        let md = markdown(&figures);
        assert!(md.contains("| drain, 100 B | 2.00× | 2.00× |"), "{md}");
        let with_resp = [
            figures.clone(),
            vec![Figure::new("spool-resp", workload::DRAIN, 16, 100).measured(400, 1.0)],
        ]
        .concat();
        let md = markdown(&with_resp);
        assert!(
            md.contains("| spool-server vs redis | spool-resp vs redis |"),
            "{md}"
        );
        assert!(
            md.contains("| drain, 100 B | 2.00× | 4.00× | 2.00× |"),
            "{md}"
        );
        assert_eq!(thousands(1234567.4), "1,234,567");
    }
}
