//! The commands of one RESP pipeline share group commits: a thousand
//! ENQUEUEs sent before reading take a handful of the log's fdatasyncs
//! (counted by the server's own `/metrics`), not one each.

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{TestResult, TestServer};

const PIPELINE: usize = 1000;

/// The log's fdatasyncs so far: the count of its sync-time histogram.
async fn syncs(base: &str) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let text = reqwest::get(format!("{base}/metrics"))
        .await?
        .text()
        .await?;
    let line = text
        .lines()
        .find(|l| l.starts_with("spool_wal_write_sync_seconds_count"))
        .ok_or("no spool_wal_write_sync_seconds_count in /metrics")?;
    Ok(line.rsplit(' ').next().ok_or("no value")?.parse()?)
}

#[tokio::test]
async fn a_pipeline_of_enqueues_shares_its_fdatasyncs() -> TestResult {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("data");
    let (server, resp) = tokio::task::spawn_blocking(move || {
        let data = data.to_str().unwrap_or_default().to_owned();
        TestServer::start_resp(&["--data", &data, "--no-scheduler"])
    })
    .await??;
    let mut conn = TcpStream::connect(&resp).await?;
    // A first command, so the counter exists before the pipeline.
    conn.write_all(b"*3\r\n$7\r\nENQUEUE\r\n$1\r\nq\r\n$5\r\nfirst\r\n")
        .await?;
    let mut answers = Vec::new();
    read_answers(&mut conn, &mut answers, 1).await?;
    let before = syncs(&server.base).await?;

    let mut pipeline = Vec::new();
    for i in 0..PIPELINE {
        let payload = format!("{{\"n\":{i}}}");
        pipeline.extend(
            format!(
                "*3\r\n$7\r\nENQUEUE\r\n$1\r\nq\r\n${}\r\n{payload}\r\n",
                payload.len()
            )
            .into_bytes(),
        );
    }
    conn.write_all(&pipeline).await?;
    answers.clear();
    read_answers(&mut conn, &mut answers, PIPELINE).await?;
    let ids: Vec<u64> = answers
        .iter()
        .map(|a| a.trim_start_matches(':').parse())
        .collect::<Result<_, _>>()?;
    assert!(ids.windows(2).all(|w| w[1] == w[0] + 1), "ids in order");

    let used = syncs(&server.base).await? - before;
    // The server reads the pipeline in chunks and runs up to 1,024 commands
    // a round, each run of ENQUEUEs as one batch: a few rounds, a sync each.
    assert!(
        used <= 20,
        "{PIPELINE} pipelined ENQUEUEs took {used} fdatasyncs"
    );
    drop(server);
    Ok(())
}

/// Reads until `n` integer answers (`:N\r\n`) came.
async fn read_answers(conn: &mut TcpStream, answers: &mut Vec<String>, n: usize) -> TestResult {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while answers.len() < n {
        let got = tokio::time::timeout(std::time::Duration::from_secs(10), conn.read(&mut chunk))
            .await??;
        if got == 0 {
            return Err("the server closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..got]);
        while let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8(buf.drain(..end + 2).collect())?;
            let line = line.trim_end().to_owned();
            if !line.starts_with(':') {
                return Err(format!("unexpected answer {line}").into());
            }
            answers.push(line);
        }
    }
    Ok(())
}
