//! Schema creation and migration: concurrent starters, versions, refusals.

use std::time::Duration;

use crate::common::{
    admin as client, connect, database_url, fresh_schema, side_rows, test_config, DropSchema,
};
use spool_postgres::{PgConfig, PgStore};

/// (version, times applied) for every recorded migration.
async fn versions(schema: &str) -> Vec<(i32, i64)> {
    let sql = format!(
        "SELECT version, count(*) FROM \"{schema}\".migrations GROUP BY version ORDER BY version"
    );
    client()
        .await
        .query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_starters_migrate_once() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let starters: Vec<_> = (0..8)
        .map(|_| {
            let config = PgConfig {
                pool_size: 1,
                ..test_config(&schema)
            };
            tokio::spawn(connect(config))
        })
        .collect();
    // Versions 1 to 13, each applied once.
    let every_version_once: Vec<(i32, i64)> = (1..=14).map(|v| (v, 1)).collect();
    let mut stores = Vec::new();
    for s in starters {
        stores.push(s.await.expect("every starter connects"));
    }
    assert_eq!(versions(&schema).await, every_version_once);

    // Every starter sees a working schema.
    for store in &stores {
        spool_core::Store::now(store).await.unwrap();
    }
    // A later start finds nothing to do.
    drop(stores);
    connect(test_config(&schema)).await;
    assert_eq!(versions(&schema).await, every_version_once);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_from_a_newer_build_is_refused() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    drop(connect(test_config(&schema)).await);
    let sql = format!("INSERT INTO \"{schema}\".migrations (version, name) VALUES (999, 'future')");
    client().await.batch_execute(&sql).await.unwrap();
    let err = PgStore::connect(&database_url(), test_config(&schema))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "schema_too_new", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_schema_names_are_refused_before_connecting() {
    for bad in ["", "Spool", "a-b", "x\"; DROP TABLE y; --"] {
        let config = PgConfig {
            schema: bad.to_string(),
            ..PgConfig::default()
        };
        let err = PgStore::connect("postgres://nobody@127.0.0.1:1/none", config)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "config", "{bad:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_a_connect_error() {
    let config = PgConfig {
        connect_timeout: Duration::from_secs(2),
        ..test_config(&fresh_schema())
    };
    let err = PgStore::connect("postgres://postgres@127.0.0.1:1/test", config)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "connect", "{err}");
}

/// Migrations 1 to 12, as shipped.
const UP_TO_12: [&str; 12] = [
    include_str!("../../migrations/0001_tasks.sql"),
    include_str!("../../migrations/0002_schedules.sql"),
    include_str!("../../migrations/0003_vacuum_truncate.sql"),
    include_str!("../../migrations/0004_scheduled_in_claim_order.sql"),
    include_str!("../../migrations/0005_stats_cache_and_retried.sql"),
    include_str!("../../migrations/0006_generations.sql"),
    include_str!("../../migrations/0007_traceparent.sql"),
    include_str!("../../migrations/0008_claim_limits.sql"),
    include_str!("../../migrations/0009_groups.sql"),
    include_str!("../../migrations/0010_parked_only_indexes.sql"),
    include_str!("../../migrations/0011_dependencies.sql"),
    include_str!("../../migrations/0012_parent_results.sql"),
];

/// The schema as a build of version `version` (at most 12) left it:
/// migrations 1 to `version` applied and recorded, as `src/migrate.rs`
/// does.
async fn schema_at_version(schema: &str, version: usize) {
    let s = format!("\"{schema}\"");
    let mut sql = format!(
        "CREATE SCHEMA {s}; \
         CREATE TABLE {s}.migrations (version integer PRIMARY KEY, name text NOT NULL, \
             applied_at timestamptz NOT NULL DEFAULT now());"
    );
    for (version, migration) in UP_TO_12[..version].iter().enumerate() {
        sql.push_str(&migration.replace("{schema}", &s));
        sql.push_str(&format!(
            ";\nINSERT INTO {s}.migrations (version, name) VALUES ({}, 'old');",
            version + 1
        ));
    }
    client().await.batch_execute(&sql).await.unwrap();
}

/// The queue `flow` (id 1) as an older build created it.
fn flow_queue(s: &str) -> String {
    format!(
        "INSERT INTO {s}.queues (name, lease_ms, max_attempts, backoff_base_ms, \
             backoff_max_ms, dedup_window_ms, max_payload, paused) \
         VALUES ('flow', 30000, 3, 1000, 3600000, 60000, 1048576, false)"
    )
}

/// The columns of [`workflow_row`].
const WORKFLOW_COLUMNS: &str = "id, run_at, lease_expires_at, lease_token, created_at, \
    updated_at, queue_id, attempt, max_attempts, priority, payload_json, state, kind, \
    lease_owner, payload, after_ids, waiting_on, parents_failed, if_parent_fails, \
    has_dependents";

/// One task of queue 1 as a build of version 11 or 12 wrote it, as a
/// VALUES tuple of [`WORKFLOW_COLUMNS`]: `state` leased (token 7, for an
/// hour), ready or pending; `deps` its `after_ids`, `waiting_on`,
/// `parents_failed` and `if_parent_fails` as SQL; `marked` whether tasks
/// wait for it (`has_dependents`).
fn workflow_row(id: i64, state: &str, deps: Option<[&str; 4]>, marked: bool) -> String {
    let (lease, attempt, owner) = if state == "leased" {
        ("now() + interval '1 hour', 7", 1, "'w'")
    } else {
        ("NULL, NULL", 0, "NULL")
    };
    let [after, waiting, failed, policy] = deps.unwrap_or(["NULL"; 4]);
    let marked = if marked { "true" } else { "NULL" };
    format!(
        "({id}, now(), {lease}, now(), now(), 1, {attempt}, 3, 0, true, '{state}', 'job', \
         {owner}, '\\x7b7d', {after}, {waiting}, {failed}, {policy}, {marked})"
    )
}

/// Tasks queued on a version-5 schema (one task table, before the ring of
/// generations) are all kept by migration 6: the ready ones are claimed
/// after it, in claim order; the scheduled, leased and dead ones keep their
/// state; an idempotency key still names its task. After migration 11
/// they have no dependencies, and a new task may wait for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_queued_on_version_5_are_kept_by_migration_6() {
    use spool_core::{
        ClaimRequest, NewTask, Parent, ParentFailure, Payload, QueueName, Store, TaskId, TaskKey,
        TaskState,
    };
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    schema_at_version(&schema, 5).await;
    assert_eq!(versions(&schema).await.last(), Some(&(5, 1)));
    // What a version-5 store wrote: 20 ready tasks over three priorities
    // (ids 1-20), one scheduled for tomorrow (21), one leased (22), one
    // dead (23), and the key of task 1.
    let s = format!("\"{schema}\"");
    client()
        .await
        .batch_execute(&format!(
            "INSERT INTO {s}.queues (name, lease_ms, max_attempts, backoff_base_ms, \
                 backoff_max_ms, dedup_window_ms, max_payload, paused) \
             VALUES ('kept', 30000, 3, 1000, 3600000, 60000, 1048576, false); \
             INSERT INTO {s}.tasks (id, run_at, lease_expires_at, lease_token, created_at, \
                 updated_at, queue_id, attempt, max_attempts, priority, payload_json, state, \
                 kind, key, lease_owner, payload) \
             SELECT i, now() - interval '1 second' * (30 - i), \
                    CASE WHEN i = 22 THEN now() + interval '1 hour' END, \
                    CASE WHEN i = 22 THEN 7 END, now(), now(), 1, \
                    CASE WHEN i IN (22, 23) THEN 1 ELSE 0 END, 3, (i % 3)::smallint, false, \
                    CASE WHEN i <= 20 THEN 'ready' WHEN i = 21 THEN 'scheduled' \
                         WHEN i = 22 THEN 'leased' ELSE 'dead' END, \
                    'job', CASE WHEN i = 1 THEN 'k1' END, CASE WHEN i = 22 THEN 'w' END, \
                    '\\x01' \
             FROM generate_series(1, 23) i; \
             UPDATE {s}.tasks SET run_at = now() + interval '1 day' WHERE id = 21; \
             INSERT INTO {s}.keys (queue_id, key, task_id) VALUES (1, 'k1', 1); \
             SELECT setval('{s}.task_ids', 23);"
        ))
        .await
        .unwrap();

    let new = connect(test_config(&schema)).await;
    assert_eq!(versions(&schema).await.last(), Some(&(14, 1)));
    let q = QueueName::new("kept").unwrap();
    // Migrations 8, 9 and 14 keep the queue's settings, and give it no
    // limits and no bound on its groups.
    let kept = spool_core::QueueSettings {
        lease: std::time::Duration::from_secs(30),
        max_attempts: 3,
        backoff_base: std::time::Duration::from_secs(1),
        backoff_max: std::time::Duration::from_secs(3600),
        dedup_window: std::time::Duration::from_secs(60),
        max_payload: 1024 * 1024,
        paused: false,
        rate_limit: None,
        max_leased: None,
        group_concurrency: None,
        group_rate_limit: None,
    };
    assert_eq!(new.get_queue(&q).await.unwrap(), kept);
    let again = new
        .enqueue(
            &q,
            vec![NewTask::new(Payload::binary(vec![2])).key(TaskKey::new("k1").unwrap())],
        )
        .await
        .unwrap();
    assert_eq!(
        (again[0].id, again[0].duplicate),
        (TaskId(1), true),
        "the key still names its task"
    );
    let claimed = new.claim(ClaimRequest::new(q, "w").max(100)).await.unwrap();
    let got: Vec<u64> = claimed.iter().map(|t| t.id.0).collect();
    let mut want: Vec<u64> = (1..=20).collect();
    want.sort_by_key(|i| (i % 3, *i));
    assert_eq!(got, want, "every ready task is claimed, in claim order");
    assert!(
        claimed.iter().all(|t| t.group.is_none()),
        "tasks from before migration 9 have no group"
    );
    for (id, state) in [
        (21, TaskState::Scheduled),
        (22, TaskState::Leased),
        (23, TaskState::Dead),
    ] {
        let task = new.get(TaskId(id).into()).await.unwrap();
        assert_eq!(task.state, state, "task {id}");
    }
    // The dead task is parked, and listed from the parked-only index of
    // migration 10.
    let dead = new
        .list(spool_core::ListRequest {
            state: Some(TaskState::Dead),
            ..spool_core::ListRequest::new(QueueName::new("kept").unwrap())
        })
        .await
        .unwrap();
    let dead: Vec<u64> = dead.tasks.iter().map(|t| t.id.0).collect();
    assert_eq!(dead, [23]);

    // Migration 11: tasks from before it name no parents, and a new task
    // waits for the leased one and counts the dead one failed; the leased
    // one's cancel releases it.
    assert!(claimed.iter().all(|t| t.deps.is_none()));
    let waits = NewTask::new(Payload::binary(vec![3]))
        .after(Parent::Task(TaskId(22)))
        .after(Parent::Task(TaskId(23)))
        .if_parent_fails(ParentFailure::Run);
    let kept_q = QueueName::new("kept").unwrap();
    let child = new.enqueue(&kept_q, vec![waits]).await.unwrap()[0].id;
    let pending = new.get(child.into()).await.unwrap();
    assert_eq!(pending.state, TaskState::Pending);
    let deps = pending.deps.unwrap();
    assert_eq!((deps.waiting_on, deps.failed), (vec![TaskId(22)], 1));
    new.cancel(TaskId(22).into()).await.unwrap();
    let released = new.get(child.into()).await.unwrap();
    assert_eq!(released.state, TaskState::Ready);
    assert_eq!(released.deps.unwrap().failed, 2);
}

/// A workflow pending on a version-11 schema (before results): after
/// migration 12 its parents' acks hand it their results, added to the
/// nothing it held, and it reads them when claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_pending_on_version_11_receives_results_after_migration_12() {
    use serde_json::json;
    use spool_core::{Ack, ClaimRequest, LeaseToken, QueueName, Store, TaskId, TaskResult};
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    schema_at_version(&schema, 11).await;
    assert_eq!(versions(&schema).await.last(), Some(&(11, 1)));
    // What a version-11 store wrote: parent 1 leased (token 7), parent 2
    // ready, task 3 pending on both (policy `run`), the two edges, and
    // the parents' marks.
    let s = format!("\"{schema}\"");
    client()
        .await
        .batch_execute(&format!(
            "{}; INSERT INTO {s}.tasks ({WORKFLOW_COLUMNS}) VALUES {}, {}, {}; \
             INSERT INTO {s}.task_deps (parent, child) VALUES (1, 3), (2, 3); \
             SELECT setval('{s}.task_ids', 3);",
            flow_queue(&s),
            workflow_row(1, "leased", None, true),
            workflow_row(2, "ready", None, true),
            workflow_row(
                3,
                "pending",
                Some(["'{1,2}'", "'{1,2}'", "0", "'run'"]),
                false
            ),
        ))
        .await
        .unwrap();

    let new = connect(test_config(&schema)).await;
    assert_eq!(versions(&schema).await.last(), Some(&(14, 1)));
    let q = QueueName::new("flow").unwrap();
    let result = |v: serde_json::Value| Ack::Result(TaskResult::new(&v).unwrap());
    let pending = new.get(TaskId(3).into()).await.unwrap();
    assert!(pending.deps.unwrap().results.is_empty(), "none before");

    new.ack(TaskId(1), LeaseToken(7), result(json!({"first": true})))
        .await
        .unwrap();
    let waiting = new.get(TaskId(3).into()).await.unwrap();
    assert_eq!(waiting.state, spool_core::TaskState::Pending);
    let held: Vec<_> = waiting.deps.unwrap().results;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(
        (held[0].0, held[0].1.value()),
        (TaskId(1), json!({"first": true}))
    );

    let second = new.claim(ClaimRequest::new(q.clone(), "w")).await.unwrap();
    assert_eq!(second.iter().map(|t| t.id).collect::<Vec<_>>(), [TaskId(2)]);
    let token = second[0].lease.as_ref().unwrap().token;
    new.ack(TaskId(2), token, result(json!(2))).await.unwrap();

    let child = new.claim(ClaimRequest::new(q, "w")).await.unwrap();
    assert_eq!(child.iter().map(|t| t.id).collect::<Vec<_>>(), [TaskId(3)]);
    let results: Vec<(TaskId, serde_json::Value)> = child[0]
        .deps
        .as_ref()
        .unwrap()
        .results
        .iter()
        .map(|(p, r)| (*p, r.value()))
        .collect();
    assert_eq!(
        results,
        [(TaskId(1), json!({"first": true})), (TaskId(2), json!(2))]
    );
}

/// A workflow pending on a version-12 schema, its arrays and results on
/// its row: migration 13 carries them beside it. Task 9, acked before the
/// migration, left its result to task 3, which still waits for 1 and 2,
/// and to task 4, released and ready. After the migration task 3 shows
/// what it showed before, the remaining parents' acks hand it their
/// results, it is claimed with all three, exactly, and acking it and task
/// 4 leaves no row beside them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_pending_on_version_12_keeps_its_results_after_migration_13() {
    use serde_json::json;
    use spool_core::{
        Ack, ClaimRequest, LeaseToken, QueueName, Store, TaskId, TaskResult, TaskState,
    };
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    schema_at_version(&schema, 12).await;
    assert_eq!(versions(&schema).await.last(), Some(&(12, 1)));
    let s = format!("\"{schema}\"");
    // Text jsonb would rewrite, kept as a jsonb string by version 12.
    let nine = r#"{"z": 1e3, "a": [1,2]}"#;
    client()
        .await
        .batch_execute(&format!(
            "{}; INSERT INTO {s}.tasks ({WORKFLOW_COLUMNS}) VALUES {}, {}, {}, {}; \
             INSERT INTO {s}.task_deps (parent, child) VALUES (1, 3), (2, 3); \
             UPDATE {s}.tasks SET parent_results = jsonb_build_object('9', $${nine}$$::text) \
             WHERE id = 3; \
             UPDATE {s}.tasks SET parent_results = jsonb_build_object('9', '\"x\"'::text) \
             WHERE id = 4; \
             SELECT setval('{s}.task_ids', 9);",
            flow_queue(&s),
            workflow_row(1, "leased", None, true),
            workflow_row(2, "ready", None, true),
            workflow_row(
                3,
                "pending",
                Some(["'{9,1,2}'", "'{1,2}'", "0", "'run'"]),
                false
            ),
            workflow_row(4, "ready", Some(["'{9}'", "'{}'", "0", "'cancel'"]), false),
        ))
        .await
        .unwrap();

    let new = connect(test_config(&schema)).await;
    assert_eq!(versions(&schema).await.last(), Some(&(14, 1)));
    let texts = |t: &spool_core::Task| -> Vec<(TaskId, String)> {
        let deps = t.deps.as_ref().unwrap();
        deps.results
            .iter()
            .map(|(p, r)| (*p, r.as_str().to_string()))
            .collect()
    };
    let pending = new.get(TaskId(3).into()).await.unwrap();
    assert_eq!(pending.state, TaskState::Pending);
    let deps = pending.deps.as_ref().unwrap();
    assert_eq!(deps.after, [TaskId(9), TaskId(1), TaskId(2)]);
    assert_eq!(
        (deps.waiting_on.clone(), deps.failed),
        (vec![TaskId(1), TaskId(2)], 0)
    );
    assert_eq!(texts(&pending), [(TaskId(9), nine.to_string())]);

    let result = |v: serde_json::Value| Ack::Result(TaskResult::new(&v).unwrap());
    new.ack(TaskId(1), LeaseToken(7), result(json!({"first": true})))
        .await
        .unwrap();
    let q = QueueName::new("flow").unwrap();
    let ready = new
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    assert_eq!(
        ready.iter().map(|t| t.id).collect::<Vec<_>>(),
        [TaskId(2), TaskId(4)]
    );
    assert_eq!(texts(&ready[1]), [(TaskId(9), "\"x\"".to_string())]);
    for t in &ready {
        let token = t.lease.as_ref().unwrap().token;
        let ack = if t.id == TaskId(2) {
            result(json!(2))
        } else {
            Ack::Done
        };
        new.ack(t.id, token, ack).await.unwrap();
    }

    let child = new.claim(ClaimRequest::new(q, "w")).await.unwrap();
    assert_eq!(child.iter().map(|t| t.id).collect::<Vec<_>>(), [TaskId(3)]);
    assert_eq!(
        texts(&child[0]),
        [
            (TaskId(1), r#"{"first":true}"#.to_string()),
            (TaskId(2), "2".to_string()),
            (TaskId(9), nine.to_string()),
        ]
    );
    let deps = child[0].deps.as_ref().unwrap();
    assert!(deps.waiting_on.is_empty());
    assert_eq!((deps.completed(), deps.failed), (3, 0));
    let token = child[0].lease.as_ref().unwrap().token;
    new.ack(TaskId(3), token, Ack::Done).await.unwrap();
    assert_eq!(
        side_rows(&schema).await,
        (0, 0),
        "nothing left beside the rows"
    );
}
