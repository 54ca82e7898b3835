//! `spool serve` SIGKILLed under enqueue load, again and again.
//!
//! Producers enqueue over HTTP and keep a ledger of every id the server
//! answered 201 for. The test SIGKILLs the server at a random moment,
//! restarts it on the same data directory and proves that every id it
//! acknowledged is still there: a 201 means durable, not "in a buffer".

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde_json::{json, Value};

use crate::support::{TestResult, TestServer};

const KILLS: usize = 6;
const PRODUCERS: usize = 8;
const QUEUE: &str = "ledger";

/// Enqueues small batches until the server stops answering; records the
/// ids of every 201.
async fn produce(
    client: reqwest::Client,
    base: String,
    ledger: Arc<Mutex<Vec<u64>>>,
) -> Result<(), String> {
    let url = format!("{base}/v1/queues/{QUEUE}/tasks");
    let mut n = 0u64;
    loop {
        let size = rand::thread_rng().gen_range(1..20);
        let tasks: Vec<Value> = (0..size)
            .map(|_| {
                n += 1;
                json!({"payload": {"n": n}})
            })
            .collect();
        // A transport error is the kill: that request was never answered.
        let Ok(resp) = client
            .post(&url)
            .json(&json!({ "tasks": tasks }))
            .send()
            .await
        else {
            return Ok(());
        };
        let status = resp.status();
        let Ok(body) = resp.json::<Value>().await else {
            // Killed between the status line and the body: the ids are
            // unknown, so nothing is claimed durable.
            return Ok(());
        };
        if status != reqwest::StatusCode::CREATED {
            return Err(format!("enqueue answered {status}: {body}"));
        }
        let ids = body["tasks"]
            .as_array()
            .ok_or_else(|| format!("no tasks in {body}"))?
            .iter()
            .map(|t| t["id"].as_u64().ok_or_else(|| format!("no id in {t}")))
            .collect::<Result<Vec<_>, _>>()?;
        if ids.len() != size {
            return Err(format!("{} ids for {size} tasks", ids.len()));
        }
        ledger.lock().map_err(|e| e.to_string())?.extend(ids);
    }
}

/// Every task id in the queue, page by page.
async fn all_ids(client: &reqwest::Client, base: &str) -> Result<HashSet<u64>, String> {
    let mut ids = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut req = client
            .get(format!("{base}/v1/queues/{QUEUE}/tasks"))
            .query(&[("limit", "1000")]);
        if let Some(c) = &cursor {
            req = req.query(&[("cursor", c)]);
        }
        let resp = req.send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let page: Value = resp.json().await.map_err(|e| e.to_string())?;
        if status != reqwest::StatusCode::OK {
            return Err(format!("list answered {status}: {page}"));
        }
        for t in page["tasks"].as_array().ok_or("no tasks in the page")? {
            ids.insert(t["id"].as_u64().ok_or("a task without id")?);
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return Ok(ids),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_enqueues_survive_kill9_of_the_server() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let data = tmp.path().join("data");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let mut acknowledged: HashSet<u64> = HashSet::new();
    for round in 0..KILLS {
        let mut server = TestServer::start(&data)?;
        // What the server kept must include everything acknowledged before.
        let present = all_ids(&client, &server.base).await?;
        let lost: Vec<_> = acknowledged.difference(&present).collect();
        assert!(
            lost.is_empty(),
            "round {round}: acknowledged ids lost: {lost:?}"
        );

        let ledger = Arc::new(Mutex::new(Vec::new()));
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| tokio::spawn(produce(client.clone(), server.base.clone(), ledger.clone())))
            .collect();
        let pause = rand::thread_rng().gen_range(200..900);
        tokio::time::sleep(Duration::from_millis(pause)).await;
        server.kill();
        for p in producers {
            p.await??;
        }
        let new = std::mem::take(&mut *ledger.lock().map_err(|e| e.to_string())?);
        assert!(
            !new.is_empty(),
            "round {round}: no enqueue was acknowledged"
        );
        for id in new {
            assert!(acknowledged.insert(id), "id {id} handed out twice");
        }
    }
    // The last kill's acknowledgements are checked by one more start.
    let server = TestServer::start(&data)?;
    let present = all_ids(&client, &server.base).await?;
    let lost: Vec<_> = acknowledged.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "acknowledged ids lost after the last kill: {lost:?}"
    );
    println!(
        "{} acknowledged ids survived {KILLS} kills",
        acknowledged.len()
    );
    Ok(())
}
