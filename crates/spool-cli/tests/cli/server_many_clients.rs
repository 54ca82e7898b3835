//! One `spool serve` against a thousand producers and a thousand
//! long-polling consumers at once.
//!
//! Every request must succeed (no refused connection, no 5xx, no 429), and
//! every task enqueued must be claimed and acked exactly once. The server's
//! resident memory before and after is printed, to spot a per-connection
//! leak by eye.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{TestResult, TestServer};

const PRODUCERS: usize = 1000;
const PER_PRODUCER: usize = 20;
const CONSUMERS: usize = 1000;
const TOTAL: usize = PRODUCERS * PER_PRODUCER;
const QUEUE: &str = "crowd";

/// A line of /proc/PID/status in KiB (`VmRSS`, `VmHWM`).
fn proc_kib(pid: u32, field: &str) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(line.trim().trim_end_matches("kB").trim().parse()?)
}

async fn post(
    client: &reqwest::Client,
    url: &str,
    body: Value,
) -> Result<(StatusCode, Value), String> {
    let resp = client
        .post(url)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = resp.status();
    if status == StatusCode::NO_CONTENT {
        return Ok((status, Value::Null));
    }
    let body = resp.json().await.map_err(|e| format!("POST {url}: {e}"))?;
    Ok((status, body))
}

async fn produce(client: reqwest::Client, base: String, p: usize) -> Result<Vec<u64>, String> {
    let url = format!("{base}/v1/queues/{QUEUE}/tasks");
    let mut ids = Vec::with_capacity(PER_PRODUCER);
    for i in 0..PER_PRODUCER {
        let (status, body) = post(&client, &url, json!({"payload": {"p": p, "i": i}})).await?;
        if status != StatusCode::CREATED {
            return Err(format!("enqueue answered {status}: {body}"));
        }
        ids.push(
            body["tasks"][0]["id"]
                .as_u64()
                .ok_or_else(|| format!("no id in {body}"))?,
        );
    }
    Ok(ids)
}

/// Claims one task at a time with a long poll and acks it, until every task
/// of the test was acked by someone.
async fn consume(
    client: reqwest::Client,
    base: String,
    worker: usize,
    acked: Arc<AtomicUsize>,
    seen: Arc<Mutex<HashMap<u64, usize>>>,
) -> Result<(), String> {
    let claim_url = format!("{base}/v1/queues/{QUEUE}/claim");
    // A lease longer than the test: a redelivery would then be a bug, not a
    // slow machine.
    let claim = json!({"worker": format!("w{worker}"), "wait_ms": 2000, "lease_ms": 300_000});
    while acked.load(Ordering::SeqCst) < TOTAL {
        let (status, body) = post(&client, &claim_url, claim.clone()).await?;
        if status != StatusCode::OK {
            return Err(format!("claim answered {status}: {body}"));
        }
        for task in body["tasks"]
            .as_array()
            .ok_or_else(|| format!("no tasks in {body}"))?
        {
            let id = task["id"]
                .as_u64()
                .ok_or_else(|| format!("no id in {task}"))?;
            let token = task["lease"]["token"].clone();
            *seen
                .lock()
                .map_err(|e| e.to_string())?
                .entry(id)
                .or_default() += 1;
            let ack_url = format!("{base}/v1/tasks/{id}/ack");
            let (status, body) = post(&client, &ack_url, json!({ "token": token })).await?;
            if status != StatusCode::NO_CONTENT {
                return Err(format!("ack of {id} answered {status}: {body}"));
            }
            acked.fetch_add(1, Ordering::SeqCst);
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_producers_and_a_thousand_consumers() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let server = TestServer::start(&tmp.path().join("data"))?;
    let rss_before = proc_kib(server.pid(), "VmRSS")?;
    // One pool for all: 2,000 requests in flight need 2,000 connections, and
    // reqwest opens as many as asked.
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let started = Instant::now();
    let acked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|w| {
            let (acked, seen) = (acked.clone(), seen.clone());
            tokio::spawn(consume(client.clone(), server.base.clone(), w, acked, seen))
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| tokio::spawn(produce(client.clone(), server.base.clone(), p)))
        .collect();
    let mut enqueued = Vec::with_capacity(TOTAL);
    for p in producers {
        enqueued.extend(p.await??);
    }
    for c in consumers {
        c.await??;
    }
    let elapsed = started.elapsed();
    let rss_after = proc_kib(server.pid(), "VmRSS")?;
    let rss_peak = proc_kib(server.pid(), "VmHWM")?;
    println!(
        "{TOTAL} tasks through {PRODUCERS} producers and {CONSUMERS} consumers in {elapsed:.1?}; \
         server RSS {rss_before} KiB before, {rss_after} KiB after, peak {rss_peak} KiB"
    );

    let seen = std::mem::take(&mut *seen.lock().map_err(|e| e.to_string())?);
    assert_eq!(enqueued.len(), TOTAL);
    for id in &enqueued {
        assert_eq!(
            seen.get(id),
            Some(&1),
            "task {id} claimed {:?} times",
            seen.get(id)
        );
    }
    assert_eq!(seen.len(), TOTAL, "claimed tasks that were never enqueued");
    Ok(())
}
