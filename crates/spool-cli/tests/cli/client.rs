//! Black-box tests of the client commands (enqueue, stats, tasks, retry,
//! cancel, pause/resume, queue, groups, schedule) against a real `spool serve`
//! child process.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use spool_client::RemoteStore;
use spool_core::{Ack, ClaimRequest, FailRequest, QueueName, Store, StoreError, TaskId, TaskRef};

use crate::support::{TestResult, TestServer};

/// A `spool serve` (SIGKILLed on drop) and the temporary data directory it
/// lives in, removed after the server is gone.
struct CliServer {
    server: TestServer,
    _data: tempfile::TempDir,
}

impl CliServer {
    fn start() -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        let data = tempfile::tempdir()?;
        let server = TestServer::start(&data.path().join("d"))?;
        Ok(CliServer {
            server,
            _data: data,
        })
    }

    /// Runs `spool ARGS --url THIS_SERVER`.
    fn spool(&self, args: &[&str]) -> Output {
        run(args, &self.server.base)
    }

    /// Like [`CliServer::spool`], and the command must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.spool(args);
        assert!(
            out.status.success(),
            "spool {args:?} failed: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// Like [`CliServer::spool`], with `input` on the command's stdin.
    fn spool_stdin(&self, args: &[&str], input: &str) -> Output {
        let child = Command::new(env!("CARGO_BIN_EXE_spool"))
            .args(args)
            .env("SPOOL_URL", &self.server.base)
            .env_remove("SPOOL_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let out = child.and_then(|mut child| {
            // Dropped after the write: the command reads to end of file.
            if let Some(mut stdin) = child.stdin.take() {
                stdin.write_all(input.as_bytes())?;
            }
            child.wait_with_output()
        });
        match out {
            Ok(out) => out,
            Err(e) => panic!("cannot run spool {args:?}: {e}"),
        }
    }
}

fn run(args: &[&str], url: &str) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_spool"))
        .args(args)
        .env("SPOOL_URL", url)
        .env_remove("SPOOL_TOKEN")
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("cannot run spool {args:?}: {e}"),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The line of a table whose first column is `first`.
fn row<'a>(table: &'a str, first: &str) -> Option<Vec<&'a str>> {
    table
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cols| cols.first() == Some(&first))
}

#[test]
fn enqueue_stats_tasks_pause_resume() -> TestResult {
    let server = CliServer::start()?;
    let id = server.ok(&[
        "enqueue",
        "emails",
        "--kind",
        "send",
        "--payload",
        r#"{"to":"ada@example.com"}"#,
        "--key",
        "k1",
    ]);
    let id = id.trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "not an id: {id:?}");
    let again = server.ok(&["enqueue", "emails", "--key", "k1"]);
    assert_eq!(again.trim(), format!("{id} duplicate"));
    server.ok(&["enqueue", "emails", "--delay", "1h", "--priority", "-2"]);

    let stats = server.ok(&["stats"]);
    let emails = row(&stats, "emails").ok_or(stats.clone())?;
    // QUEUE SCHEDULED READY LEASED DEAD PENDING OLDEST_READY PAUSED
    assert_eq!(emails[1..6], ["1", "1", "0", "0", "0"], "{stats}");
    assert_eq!(emails[7], "no");

    let tasks = server.ok(&["tasks", "emails"]);
    let first = row(&tasks, &id).ok_or(tasks.clone())?;
    assert_eq!(first[1..4], ["send", "ready", "0/20"], "{tasks}");
    let json: serde_json::Value = serde_json::from_str(&server.ok(&["tasks", "emails", "--json"]))?;
    assert_eq!(json["tasks"][0]["payload"]["to"], "ada@example.com");
    assert_eq!(json["tasks"].as_array().map(Vec::len), Some(2));
    let dead = server.ok(&["tasks", "emails", "--state", "dead"]);
    assert!(dead.contains("no dead tasks"), "{dead}");

    assert!(server.ok(&["pause", "emails"]).contains("paused"));
    let stats: serde_json::Value = serde_json::from_str(&server.ok(&["stats", "--json"]))?;
    assert_eq!(stats["queues"][0]["paused"], true);
    server.ok(&["resume", "emails"]);
    let stats = server.ok(&["stats"]);
    assert_eq!(row(&stats, "emails").ok_or(stats.clone())?[7], "no");
    Ok(())
}

#[test]
fn a_task_enqueued_after_another_is_pending_until_it_ends() -> TestResult {
    let server = CliServer::start()?;
    let parent = server.ok(&["enqueue", "etl"]).trim().to_string();
    let child = server.ok(&[
        "enqueue",
        "etl",
        "--after",
        &parent,
        "--if-parent-fails",
        "run",
    ]);
    let child = child.trim();

    let stats = server.ok(&["stats"]);
    // QUEUE SCHEDULED READY LEASED DEAD PENDING ...
    assert_eq!(
        row(&stats, "etl").ok_or(stats.clone())?[1..6],
        ["0", "1", "0", "0", "1"]
    );
    let pending = server.ok(&["tasks", "etl", "--state", "pending"]);
    let line = row(&pending, child).ok_or(pending.clone())?;
    // ID KIND STATE ATTEMPT RUN_AT (two words) WAITING_ON LAST_ERROR
    assert_eq!(
        (line[2], line[6]),
        ("pending", parent.as_str()),
        "{pending}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&server.ok(&["tasks", "etl", "--state", "pending", "--json"]))?;
    let task = &json["tasks"][0];
    assert_eq!(
        task["waiting_on"],
        serde_json::json!([parent.parse::<u64>()?])
    );
    assert_eq!(task["if_parent_fails"], "run");
    let stats: serde_json::Value = serde_json::from_str(&server.ok(&["stats", "--json"]))?;
    assert_eq!(stats["queues"][0]["counts"]["pending"], 1, "{stats}");
    let shown = server.ok(&["get", child]);
    for line in [
        "state              pending".to_string(),
        format!("waiting_on         {parent}"),
        "if_parent_fails    run".to_string(),
    ] {
        assert!(shown.contains(&line), "{line:?} in {shown}");
    }
    let json: serde_json::Value = serde_json::from_str(&server.ok(&["get", child, "--json"]))?;
    assert_eq!(json["after"], serde_json::json!([parent.parse::<u64>()?]));
    assert!(!server.ok(&["get", &parent]).contains("waiting_on"));
    let gone = server.spool(&["get", "999999"]);
    assert!(
        text(&gone.stderr).contains("task 999999 does not exist"),
        "{}",
        text(&gone.stderr)
    );

    for bad in [
        &["enqueue", "etl", "--after", "x"][..],
        &["enqueue", "etl", "--after", "-1"],
        &["enqueue", "etl", "--if-parent-fails", "maybe"],
        &["enqueue", "etl", "--after", "999999"],
    ] {
        assert!(!server.spool(bad).status.success(), "{bad:?}");
    }
    Ok(())
}

#[test]
fn dead_tasks_are_listed_and_retried() -> TestResult {
    let server = CliServer::start()?;
    let id = server.ok(&["enqueue", "jobs", "--max-attempts", "1"]);
    let id = id.trim().to_string();
    // Claim and fail it as a worker would: with one attempt it is dead.
    let store = RemoteStore::builder(server.server.base.clone()).build()?;
    tokio::runtime::Runtime::new()?.block_on(async {
        let queue = QueueName::new("jobs")?;
        let claimed = store.claim(ClaimRequest::new(queue, "test")).await?;
        let task = claimed.first().ok_or("nothing claimed")?;
        let token = task.lease.as_ref().ok_or("no lease")?.token;
        store
            .fail(task.id, token, FailRequest::new("smtp said no"))
            .await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;

    let dead = server.ok(&["tasks", "jobs", "--state", "dead"]);
    let line = row(&dead, &id).ok_or(dead.clone())?;
    assert_eq!(line[2..4], ["dead", "1/1"], "{dead}");
    assert!(dead.contains("smtp said no"), "{dead}");

    let not_dead = server.spool(&["retry", "jobs", "999999"]);
    assert!(!not_dead.status.success());
    assert!(
        text(&not_dead.stderr).contains("task 999999 does not exist"),
        "{}",
        text(&not_dead.stderr)
    );
    let retried = server.ok(&["retry", "jobs", "--all"]);
    assert!(retried.contains("retried 1 dead task"), "{retried}");
    let ready = server.ok(&["tasks", "jobs"]);
    assert_eq!(
        row(&ready, &id).ok_or(ready.clone())?[2..4],
        ["ready", "0/1"]
    );
    let neither = server.spool(&["retry", "jobs"]);
    assert!(!neither.status.success(), "retry needs an id or --all");
    Ok(())
}

#[test]
fn tasks_are_cancelled_by_id_and_by_key_a_leased_one_too() -> TestResult {
    let server = CliServer::start()?;
    let ready = server.ok(&["enqueue", "emails"]).trim().to_string();
    assert_eq!(
        server.ok(&["cancel", &ready]),
        format!("cancelled task {ready}\n")
    );
    let gone = server.spool(&["get", &ready]);
    assert!(text(&gone.stderr).contains("does not exist"), "cancelled");

    // A task a worker holds: the cancel deletes it, and the worker's late
    // ack is refused as for a task that is gone.
    let leased = server.ok(&["enqueue", "emails", "--key", "welcome:ada"]);
    let store = RemoteStore::builder(server.server.base.clone()).build()?;
    let rt = tokio::runtime::Runtime::new()?;
    let (id, token) = rt.block_on(async {
        let claimed = store
            .claim(ClaimRequest::new(QueueName::new("emails")?, "test"))
            .await?;
        let task = claimed.first().ok_or("nothing claimed")?;
        let token = task.lease.as_ref().ok_or("no lease")?.token;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((task.id, token))
    })?;
    assert_eq!(id.to_string(), leased.trim());
    let by_key = server.ok(&["cancel", "--queue", "emails", "--key", "welcome:ada"]);
    assert_eq!(
        by_key,
        "cancelled a task with key welcome:ada in queue emails\n"
    );
    let late = rt.block_on(store.ack(id, token, Ack::Done));
    assert!(matches!(late, Err(StoreError::NotFound)), "{late:?}");

    let unknown = server.spool(&["cancel", "999999"]);
    assert!(!unknown.status.success());
    assert!(
        text(&unknown.stderr).contains("not_found: task 999999 does not exist"),
        "{}",
        text(&unknown.stderr)
    );
    let no_key = server.spool(&["cancel", "--queue", "emails", "--key", "welcome:ada"]);
    assert!(
        text(&no_key.stderr).contains("key welcome:ada in queue emails does not exist"),
        "{}",
        text(&no_key.stderr)
    );
    for bad in [
        &["cancel"][..],
        &["cancel", "--key", "k"],
        &["cancel", "--queue", "emails"],
        &["cancel", "1", "--queue", "emails", "--key", "k"],
    ] {
        assert!(!server.spool(bad).status.success(), "{bad:?}");
    }
    Ok(())
}

#[test]
fn schedules_are_set_listed_and_removed() -> TestResult {
    let server = CliServer::start()?;
    let set = server.ok(&["schedule", "set", "beat", "--queue", "ops", "--every", "1s"]);
    assert!(set.contains("every 1s"), "{set}");
    server.ok(&[
        "schedule",
        "set",
        "nightly",
        "--queue",
        "reports",
        "--cron",
        "0 */5 * * * *",
        "--tz",
        "Europe/Berlin",
        "--kind",
        "build",
        "--payload",
        r#"{"full":true}"#,
        "--deadline",
        "500ms",
    ]);
    let list = server.ok(&["schedule", "list"]);
    assert!(row(&list, "beat").is_some(), "{list}");
    assert!(list.contains("Europe/Berlin"), "{list}");
    let json: serde_json::Value =
        serde_json::from_str(&server.ok(&["schedule", "list", "--json"]))?;
    let nightly = &json["schedules"][1];
    assert_eq!(nightly["name"], "nightly");
    assert_eq!(nightly["deadline_ms"], 500);
    assert!(nightly["next_fire_at"].is_string(), "{json}");

    assert!(server.ok(&["schedule", "rm", "beat"]).contains("removed"));
    let list = server.ok(&["schedule", "list"]);
    assert!(row(&list, "beat").is_none(), "{list}");
    let gone = server.spool(&["schedule", "rm", "beat"]);
    assert!(!gone.status.success());
    assert!(text(&gone.stderr).contains("schedule beat does not exist"));

    let both = server.spool(&["schedule", "set", "x", "--queue", "q"]);
    assert!(!both.status.success(), "a cadence is required");
    let fast = server.spool(&["schedule", "set", "x", "--queue", "q", "--every", "10ms"]);
    assert!(!fast.status.success());
    assert!(
        text(&fast.stderr).contains("bad_request"),
        "{}",
        text(&fast.stderr)
    );
    Ok(())
}

#[test]
fn bad_input_is_refused_clearly() -> TestResult {
    let server = CliServer::start()?;
    let cases: [(&[&str], &str); 4] = [
        (&["enqueue", "q", "--payload", "{oops"], "not valid JSON"),
        (&["enqueue", "a b"], "queue name may contain only"),
        (
            &["enqueue", "q", "--delay", "5 parsecs"],
            "invalid duration",
        ),
        (&["tasks", "q", "--state", "done"], "unknown state"),
    ];
    for (args, message) in cases {
        let out = server.spool(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // Nothing reached the store.
    assert!(server.ok(&["stats"]).contains("no queues yet"));
    Ok(())
}

#[test]
fn an_unreachable_server_is_named() {
    // Port 1 on loopback: nothing listens there.
    let out = run(&["stats"], "http://127.0.0.1:1");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot reach the Spool server at http://127.0.0.1:1"),
        "{err}"
    );
}

#[test]
fn queue_limits_are_set_shown_and_removed() -> TestResult {
    let server = CliServer::start()?;
    server.ok(&["enqueue", "metered"]);
    let set = server.ok(&[
        "queue",
        "metered",
        "--rate-limit",
        "100/1s",
        "--burst",
        "20",
        "--max-leased",
        "5",
        "--group-concurrency",
        "2",
        "--group-rate-limit",
        "10/1s",
        "--group-burst",
        "3",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&set)?;
    assert_eq!(
        json["group_rate_limit"],
        serde_json::json!({"limit": 10, "period_ms": 1000, "burst": 3})
    );
    assert_eq!(
        json["rate_limit"],
        serde_json::json!({"limit": 100, "period_ms": 1000, "burst": 20})
    );
    assert_eq!(json["max_leased"], 5);
    assert_eq!(json["group_concurrency"], 2);
    let shown = server.ok(&["queue", "metered"]);
    assert!(shown.contains("rate limit 100/1000ms, burst 20"), "{shown}");
    assert!(shown.contains("max leased 5"), "{shown}");
    assert!(shown.contains("group concurrency 2"), "{shown}");
    assert!(
        shown.contains("group rate limit 10/1000ms, burst 3"),
        "{shown}"
    );
    let cleared = server.ok(&[
        "queue",
        "metered",
        "--no-rate-limit",
        "--no-group-concurrency",
        "--no-group-rate-limit",
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_str(&cleared)?;
    assert!(json.get("rate_limit").is_none(), "{cleared}");
    assert!(json.get("group_rate_limit").is_none(), "{cleared}");
    assert!(json.get("group_concurrency").is_none(), "{cleared}");
    assert_eq!(json["max_leased"], 5, "the other limit stays");
    let shown = server.ok(&["queue", "metered"]);
    assert!(shown.contains("group concurrency none"), "{shown}");
    let both = server.spool(&[
        "queue",
        "metered",
        "--group-concurrency",
        "2",
        "--no-group-concurrency",
    ]);
    assert!(!both.status.success());
    let bad = server.spool(&["queue", "metered", "--rate-limit", "fast"]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("LIMIT/PERIOD"),
        "{}",
        text(&bad.stderr)
    );
    Ok(())
}

#[test]
fn tasks_are_enqueued_in_groups_and_the_groups_listed() -> TestResult {
    let server = CliServer::start()?;
    assert!(server
        .ok(&["groups", "fetch"])
        .contains("no groups with tasks in queue fetch"));
    for group in ["api.example.com", "api.example.com", "cdn ü"] {
        server.ok(&["enqueue", "fetch", "--group", group]);
    }
    server.ok(&["enqueue", "fetch"]);
    let listed: serde_json::Value =
        serde_json::from_str(&server.ok(&["tasks", "fetch", "--json"]))?;
    let groups: Vec<&serde_json::Value> = listed["tasks"]
        .as_array()
        .map(|tasks| tasks.iter().map(|t| &t["group"]).collect())
        .unwrap_or_default();
    assert_eq!(
        groups,
        [
            &serde_json::json!("api.example.com"),
            &serde_json::json!("api.example.com"),
            &serde_json::json!("cdn ü"),
            &serde_json::Value::Null,
        ],
        "{listed}"
    );
    let table = server.ok(&["groups", "fetch"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(
        rows,
        [
            ["GROUP", "WAITING", "LEASED"],
            ["api.example.com", "2", "0"],
            ["cdn ü", "1", "0"],
        ],
        "{table}"
    );
    let top = server.ok(&["groups", "fetch", "--limit", "1", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&top)?;
    assert_eq!(
        json,
        serde_json::json!({"groups": [
            {"group": "api.example.com", "waiting": 2, "leased": 0, "rate_tokens": null}
        ]})
    );
    // Under a group rate limit each group shows its tokens left.
    server.ok(&[
        "queue",
        "fetch",
        "--group-rate-limit",
        "1/1m",
        "--group-burst",
        "3",
    ]);
    let table = server.ok(&["groups", "fetch"]);
    let heads: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(heads, ["GROUP", "WAITING", "LEASED", "TOKENS"], "{table}");
    assert!(
        table.lines().nth(1).is_some_and(|l| l.ends_with("  3")),
        "full: {table}"
    );
    for bad in [
        &["enqueue", "fetch", "--group", ""][..],
        &["enqueue", "fetch", "--group", ".."],
        &["groups", "fetch", "--limit", "0"],
        &["groups", "fetch", "--limit", "1001"],
    ] {
        assert!(!server.spool(bad).status.success(), "{bad:?}");
    }
    Ok(())
}

#[test]
fn every_client_command_explains_itself() {
    let commands: [&[&str]; 13] = [
        &["enqueue"],
        &["get"],
        &["cancel"],
        &["queue"],
        &["groups"],
        &["stats"],
        &["tasks"],
        &["retry"],
        &["pause"],
        &["resume"],
        &["schedule", "set"],
        &["schedule", "list"],
        &["schedule", "rm"],
    ];
    for command in commands {
        let out = run(&[command, &["--help"]].concat(), "http://127.0.0.1:1");
        assert!(out.status.success(), "{command:?} --help failed");
        let help = text(&out.stdout);
        assert!(help.contains("SPOOL_URL"), "{command:?}: {help}");
        assert!(help.contains("SPOOL_TOKEN"), "{command:?}: {help}");
    }
    let top = run(&["schedule", "--help"], "http://127.0.0.1:1");
    assert!(
        text(&top.stdout).contains("--cron"),
        "{}",
        text(&top.stdout)
    );
}

const TRACE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The ids a batch enqueue printed, one per line.
fn ids(out: &str) -> Result<Vec<u64>, std::num::ParseIntError> {
    out.lines().map(str::parse).collect()
}

#[test]
fn a_batch_callback_waits_for_its_members_by_position() -> TestResult {
    let server = CliServer::start()?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("thumbs.json");
    std::fs::write(
        &file,
        format!(
            r#"{{"tasks": [
                {{"kind": "resize", "payload": "a.png", "traceparent": "{TRACE}"}},
                {{"kind": "resize", "payload": "b.png"}},
                {{"kind": "zip", "after_batch": [0, 1], "if_parent_fails": "run"}}
            ]}}"#
        ),
    )?;
    let out = server.ok(&["enqueue", "thumbs", "--batch", file.to_str().ok_or("path")?]);
    let ids = ids(&out)?;
    let [a, b, callback] = ids[..] else {
        return Err(format!("not three ids: {out:?}").into());
    };
    let shown: serde_json::Value =
        serde_json::from_str(&server.ok(&["get", &callback.to_string(), "--json"]))?;
    assert_eq!(shown["state"], "pending", "{shown}");
    assert_eq!(shown["after"], serde_json::json!([a, b]), "{shown}");

    let store = RemoteStore::builder(server.server.base.clone()).build()?;
    let queue = QueueName::new("thumbs")?;
    let claim = || ClaimRequest::new(queue.clone(), "test").max(10);
    tokio::runtime::Runtime::new()?.block_on(async {
        let members = store.claim(claim()).await?;
        let claimed: Vec<u64> = members.iter().map(|t| t.id.0).collect();
        assert_eq!(claimed, [a, b], "only the members are claimable");
        assert_eq!(members[0].traceparent.as_deref(), Some(TRACE));
        assert!(store.claim(claim()).await?.is_empty(), "the callback waits");
        for t in &members {
            let token = t.lease.as_ref().ok_or("no lease")?.token;
            store.ack(t.id, token, Ack::Done).await?;
        }
        let last = store.claim(claim()).await?;
        assert_eq!(last.iter().map(|t| t.id.0).collect::<Vec<_>>(), [callback]);
        let deps = last[0].deps.as_deref().ok_or("no dependencies")?;
        assert_eq!((deps.completed(), deps.failed), (2, 0));
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    })?;
    Ok(())
}

#[test]
fn a_batch_is_read_from_stdin_and_answered_as_json() -> TestResult {
    let server = CliServer::start()?;
    let first = server.ok(&["enqueue", "emails", "--key", "welcome:ada"]);
    let out = server.spool_stdin(
        &["enqueue", "emails", "--batch", "-", "--json"],
        r#"{"tasks": [{"key": "welcome:ada"}, {"payload": {"to": "bob"}}]}"#,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let tasks = json["tasks"].as_array().ok_or(json.to_string())?;
    assert_eq!(tasks.len(), 2, "{json}");
    assert_eq!(tasks[0]["id"], first.trim().parse::<u64>()?, "{json}");
    assert_eq!(tasks[0]["duplicate"], true, "{json}");
    assert_eq!(tasks[1]["duplicate"], false, "{json}");
    // In text, a duplicate reads as it does for a single enqueue.
    let again = server.spool_stdin(
        &["enqueue", "emails", "--batch", "-"],
        r#"{"tasks": [{"key": "welcome:ada"}]}"#,
    );
    assert_eq!(text(&again.stdout), format!("{} duplicate\n", first.trim()));
    Ok(())
}

#[test]
fn a_malformed_batch_is_refused_and_enqueues_nothing() -> TestResult {
    let server = CliServer::start()?;
    let dir = tempfile::tempdir()?;
    let truncated = dir.path().join("truncated.json");
    std::fs::write(&truncated, r#"{"tasks": [{"payload": 1}"#)?;
    let truncated = truncated.to_str().ok_or("path")?;
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().ok_or("path")?;
    // (args, stdin, exit status, what stderr says)
    let cases: [(&[&str], &str, i32, &str); 7] = [
        (&["--batch", missing], "", 1, "cannot read the batch file"),
        (&["--batch", truncated], "", 1, "invalid batch file"),
        (
            &["--batch", "-"],
            r#"[{"payload": 1}]"#,
            1,
            "wrap it in {\"tasks\": ...}",
        ),
        (
            &["--batch", "-"],
            r#"{"tasks": [{"paylod": 1}]}"#,
            1,
            "unknown field `paylod`",
        ),
        (
            &["--batch", "-"],
            r#"{"tasks": [{}, {"after_batch": [1]}]}"#,
            1,
            "waits for task 1",
        ),
        // Sound here, refused by the server: an id it never assigned. The
        // first task is not created either.
        (
            &["--batch", "-"],
            r#"{"tasks": [{}, {"after": [999999]}]}"#,
            1,
            "bad_request: after names task 999999",
        ),
        (
            &["--batch", "-", "--payload", "1"],
            "{\"tasks\": []}",
            2,
            "cannot be used with",
        ),
    ];
    for (args, input, status, message) in cases {
        let out = server.spool_stdin(&[&["enqueue", "q"], args].concat(), input);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(server.ok(&["stats"]).contains("no queues yet"));
    Ok(())
}

#[test]
fn a_traceparent_given_on_the_command_line_is_kept() -> TestResult {
    let server = CliServer::start()?;
    let id: u64 = server
        .ok(&["enqueue", "traced", "--traceparent", TRACE])
        .trim()
        .parse()?;
    let store = RemoteStore::builder(server.server.base.clone()).build()?;
    let task = tokio::runtime::Runtime::new()?.block_on(store.get(TaskRef::Id(TaskId(id))))?;
    assert_eq!(task.traceparent.as_deref(), Some(TRACE));

    let zeros = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    for (args, message) in [
        (&["--traceparent", zeros][..], "must not be all zeros"),
        (&["--traceparent", "01-x"], "traceparent must be 00-"),
        (
            &["--traceparent", TRACE, "--batch", "-"],
            "cannot be used with",
        ),
    ] {
        let out = server.spool(&[&["enqueue", "traced"], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(message),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    Ok(())
}
