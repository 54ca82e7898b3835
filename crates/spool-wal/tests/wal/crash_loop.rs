//! Random faults and crashes, many times over: strict recovery must always
//! start, and every acknowledged record must always come back, in order.

use std::sync::mpsc;

use spool_wal::WalConfig;

use crate::common::*;

const SEEDS: u64 = 40;
const ROUNDS: usize = 6;

/// Tiny segments, so that rollovers (and faults inside them) are common.
fn tiny(dir: &std::path::Path) -> WalConfig {
    WalConfig {
        segment_size: 4096,
        ..config(dir)
    }
}

#[test]
fn acknowledged_records_survive_random_faults_and_crashes() {
    for seed in 0..SEEDS {
        let (disk, fs) = faulty(seed);
        let dir = data_dir();
        // What must survive: everything acknowledged, plus what an earlier
        // recovery already read back (that is on disk for good).
        let mut durable: Vec<Rec> = Vec::new();
        let mut rng = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move |n: u64| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
            (rng >> 33) % n
        };
        for round in 0..ROUNDS {
            let (mut log, _) = Log::start(&fs, tiny(&dir));
            assert!(
                log.acked.starts_with(&durable),
                "seed {seed} round {round}: lost acknowledged records"
            );
            for pair in log.acked.windows(2) {
                assert_eq!(pair[1].0, pair[0].0 + 1, "seed {seed}: lsn gap");
            }
            durable = log.acked.clone();

            match next(3) {
                0 => disk.fail_sync_after(next(6)),
                1 => disk.fail_write_after(next(6)),
                _ => {}
            }
            // Submit without waiting, like the engine: outcomes arrive later.
            let (tx, rx) = mpsc::channel();
            let mut pending = Vec::new();
            for _ in 0..1 + next(8) {
                let lens: Vec<usize> = (0..1 + next(5)).map(|_| next(900) as usize).collect();
                let (batch, recs) = make_batch(log.next_lsn, 0, &lens);
                log.next_lsn += recs.len() as u64;
                let tx = tx.clone();
                log.writer
                    .submit(batch, Box::new(move |r| tx.send(r.is_ok()).unwrap()));
                pending.push(recs);
            }
            for recs in pending {
                if rx.recv().unwrap() {
                    durable.extend(recs);
                }
            }
            drop(log);
            disk.crash();
        }
        let (log, _) = Log::start(&fs, tiny(&dir));
        assert!(log.acked.starts_with(&durable), "seed {seed}: lost records");
        log.writer.shutdown().unwrap();
    }
}
