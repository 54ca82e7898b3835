//! The hot statements read a batch, not the table, whatever the task
//! table's statistics said when they were planned.
//!
//! A queue table is often empty when VACUUM or ANALYZE looks at it, and
//! full minutes later. With `reltuples = 0` the planner takes any scan of
//! the table for free: joining `tasks` on id to the batch, it once chose to
//! walk all of `tasks_pkey` and filter the batch against each row — 105 s
//! for one claim of 1,000 at 170,000 rows. And a connection plans each
//! statement once (a generic plan, kept until something invalidates it,
//! such as a turn of the ring): planned while a partition was small, an
//! ack once read the partition whole on every call as it grew. The
//! statements now reach their rows by ctid (README.md, "Plans that do not
//! trust statistics"); these tests recreate both situations and count the
//! rows each statement reads, through PostgreSQL's counters of the current
//! transaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, Statement};

use crate::config::Schema;
use crate::migrate;
use crate::sql::Sql;
use crate::test_db::{in_fresh_schema, session};

/// Tasks in the table when the statements run: far more than any batch.
const TASKS: i64 = 20_000;
/// The batch each statement handles.
const BATCH: i64 = 100;
/// Most rows a statement may read: its batch, with room for the rows it
/// passes over, and nothing like the table.
const MOST_READ: i64 = 10 * BATCH;
/// When the expired leases of [`fill`] ended, as SQL and as Unix seconds.
const EXPIRED_AT: &str = "2026-01-01 00:00:00+00";
const EXPIRED_AT_UNIX: u64 = 1_767_225_600;

/// Inserts `TASKS` tasks numbered from `first`: every tenth leased for an
/// hour (token = id), every tenth leased with its lease ended at
/// `EXPIRED_AT` (token = id), every tenth scheduled and due, the rest ready;
/// every hundredth of the ready ones on its third to fifth attempt.
fn fill(s: &str, first: i64) -> String {
    format!(
        "INSERT INTO {s}.tasks (id, run_at, lease_expires_at, lease_token, created_at, \
             updated_at, queue_id, attempt, max_attempts, priority, payload_json, state, kind, \
             lease_owner, payload) \
         SELECT i, now() - interval '1 minute', \
                CASE i % 10 WHEN 1 THEN now() + interval '1 hour' \
                            WHEN 4 THEN '{EXPIRED_AT}'::timestamptz END, \
                CASE WHEN i % 10 IN (1, 4) THEN i END, now(), now(), 1, \
                CASE WHEN i % 10 IN (1, 4) THEN 1 \
                     WHEN i % 100 = 7 THEN 2 + i / 100 % 3 ELSE 0 END, 5, 0, false, \
                CASE i % 10 WHEN 1 THEN 'leased' WHEN 4 THEN 'leased' \
                            WHEN 2 THEN 'scheduled' ELSE 'ready' END, \
                'job', CASE WHEN i % 10 IN (1, 4) THEN 'w' END, '\\x00' \
         FROM generate_series({first}, {first} + {TASKS} - 1) i"
    )
}

/// Rows of `tasks` (all its partitions) read by sequential and index
/// scans, as counted by this session and not yet flushed to the cumulative
/// statistics.
async fn rows_read(client: &impl GenericClient, schema: &str) -> i64 {
    client
        .query_one(
            "SELECT sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::bigint \
             FROM pg_stat_xact_user_tables WHERE schemaname = $1 AND relname LIKE 'tasks\\_%'",
            &[&schema],
        )
        .await
        .unwrap()
        .get(0)
}

/// Runs `sql` in a transaction that is rolled back, and answers how many
/// rows of `tasks` it read and how many rows it answered.
async fn measure(
    client: &mut Client,
    schema: &str,
    statement: &Statement,
    params: &[&(dyn ToSql + Sync)],
) -> (i64, usize) {
    let tx = client.transaction().await.unwrap();
    // The counters hold what earlier transactions did too, until
    // PostgreSQL flushes them: only the difference is this statement's.
    let before = rows_read(&tx, schema).await;
    let answered = tx.query(statement, params).await.unwrap().len();
    let read = rows_read(&tx, schema).await - before;
    tx.rollback().await.unwrap();
    (read, answered)
}

/// The hot statements, prepared on one connection: each keeps the plan
/// of its first execution, as on the store's connections.
struct Hot {
    claim: Statement,
    ack_many: Statement,
    /// The ack reading the current generation alone (`Sql::ack_in`).
    ack_in_g0: Statement,
    expire: Statement,
    promote_due: Statement,
    list_by_attempts: Statement,
}

impl Hot {
    async fn prepare(client: &Client, sql: &Sql) -> Hot {
        let prepare = |text: &str| {
            let text = text.to_string();
            async move { client.prepare(&text).await.unwrap() }
        };
        Hot {
            claim: prepare(&sql.claim).await,
            ack_many: prepare(&sql.ack_many).await,
            ack_in_g0: prepare(&sql.ack_in[0]).await,
            expire: prepare(&sql.expire).await,
            promote_due: prepare(&sql.promote_due).await,
            list_by_attempts: prepare(sql.list_by_attempts(None)).await,
        }
    }
}

/// A session as the store's connections run: one generic plan, no JIT,
/// no sorts where a merge of indexes will do, no sequential scans where a
/// TID or index scan will; `schema` migrated and
/// holding queue `q`, its current generation (tasks_g0) kept from
/// autovacuum so that no ANALYZE corrects what a test sets up.
async fn store_session(schema: &Schema) -> Client {
    let mut client = session().await;
    let s = schema.ident();
    migrate::run(&mut client, schema).await.unwrap();
    for step in [
        "SET plan_cache_mode = force_generic_plan; SET jit = off; SET enable_sort = off; SET enable_seqscan = off"
            .to_string(),
        format!("ALTER TABLE {s}.tasks_g0 SET (autovacuum_enabled = false)"),
        format!(
            "INSERT INTO {s}.queues (name, lease_ms, max_attempts, backoff_base_ms, \
                 backoff_max_ms, dedup_window_ms, max_payload, paused) \
             VALUES ('q', 30000, 3, 1000, 3600000, 0, 1048576, false)"
        ),
    ] {
        client.batch_execute(&step).await.unwrap();
    }
    client
}

#[tokio::test]
async fn hot_statements_read_a_batch_when_statistics_say_the_table_is_empty() {
    in_fresh_schema("plans", |name| async move {
        let schema = Schema::new(&name).unwrap();
        let mut client = store_session(&schema).await;
        let s = schema.ident();
        // Filled, emptied and vacuumed (which writes down reltuples = 0 and
        // keeps the pages), then filled again: what the statistics say when
        // VACUUM found a drained queue.
        for step in [
            fill(&s, 1),
            format!("DELETE FROM {s}.tasks"),
            format!("VACUUM (TRUNCATE false) {s}.tasks"),
            fill(&s, TASKS + 1),
        ] {
            client.batch_execute(&step).await.unwrap();
        }
        let stats = client
            .query_one(
                "SELECT reltuples, relpages FROM pg_class WHERE oid = $1::text::regclass",
                &[&format!("{s}.tasks_g0")],
            )
            .await
            .unwrap();
        let (reltuples, relpages): (f32, i32) = (stats.get(0), stats.get(1));
        assert_eq!(reltuples, 0.0, "the statistics say the table is empty");
        assert!(relpages > 0, "while its pages are still there");
        let hot = Hot::prepare(&client, &Sql::new(&schema)).await;
        read_batches(&mut client, &name, &hot, TASKS + 1).await;
    })
    .await;
}

#[tokio::test]
async fn hot_statements_planned_on_an_empty_partition_read_a_batch_once_it_fills() {
    in_fresh_schema("plans_grown", |name| async move {
        let schema = Schema::new(&name).unwrap();
        let mut client = store_session(&schema).await;
        // Planned on partitions just created (or just truncated by a turn
        // of the ring): each taken for ten pages, too small for an index
        // or TID scan to look cheaper than reading it whole.
        let hot = Hot::prepare(&client, &Sql::new(&schema)).await;
        read_batches(&mut client, &name, &hot, 1).await;
        client
            .batch_execute(&fill(&schema.ident(), 1))
            .await
            .unwrap();
        read_batches(&mut client, &name, &hot, 1).await;
    })
    .await;
}

/// Runs each hot statement on a batch of `fill`'s tasks numbered from
/// `first` (none if the table is empty) and asserts that it read about
/// its batch, and, once the table holds them, that it found it.
async fn read_batches(client: &mut Client, name: &str, hot: &Hot, first: i64) {
    let filled = client
        .query_one(&format!("SELECT count(*) FROM \"{name}\".tasks"), &[])
        .await
        .unwrap()
        .get::<_, i64>(0)
        > 0;
    let tokens: Vec<i64> = (0..BATCH).collect();
    let claim = measure(
        client,
        name,
        &hot.claim,
        &[
            &"q",
            &"w",
            &BATCH,
            &None::<i64>,
            &tokens,
            &crate::floor::front().0,
            &crate::floor::front().1,
        ],
    )
    .await;
    // Leased tasks numbered 1 mod 10, their tokens equal to their ids.
    let leased: Vec<i64> = (0..BATCH).map(|i| first + 10 * i).collect();
    let ack = measure(client, name, &hot.ack_many, &[&leased, &leased]).await;
    let ack_in = measure(client, name, &hot.ack_in_g0, &[&leased, &leased]).await;
    for statement in [&hot.ack_many, &hot.ack_in_g0] {
        let tx = client.transaction().await.unwrap();
        let rows = tx.query(statement, &[&leased, &leased]).await.unwrap();
        tx.rollback().await.unwrap();
        let acked = rows
            .iter()
            .filter(|r| r.get::<_, &str>(0) == "done")
            .count();
        if filled {
            assert_eq!(acked, leased.len(), "every ack found its task");
        }
    }
    // Expired leases numbered 4 mod 10, their tokens equal to their ids.
    let expired: Vec<i64> = (0..BATCH).map(|i| first + 3 + 10 * i).collect();
    let dead = vec![false; expired.len()];
    let ended = std::time::UNIX_EPOCH + std::time::Duration::from_secs(EXPIRED_AT_UNIX);
    let at = vec![ended; expired.len()];
    let errors = vec![serde_json::json!([]); expired.len()];
    let expire = measure(
        client,
        name,
        &hot.expire,
        &[&expired, &expired, &dead, &at, &errors, &false],
    )
    .await;
    let promote = measure(client, name, &hot.promote_due, &[&BATCH]).await;
    // The first page of the admin's list by attempts, 50 and one more.
    let first_page = i64::from(i32::MAX) + 1;
    let list = measure(
        client,
        name,
        &hot.list_by_attempts,
        &[&"q", &1i32, &first_page, &0i64, &51i64],
    )
    .await;

    for (what, (read, answered)) in [
        ("claim", claim),
        ("ack_many", ack),
        ("ack_in", ack_in),
        ("expire", expire),
        ("promote_due", promote),
        ("list_by_attempts", list),
    ] {
        assert!(!filled || answered > 0, "{what} answered nothing");
        assert!(
            read <= MOST_READ,
            "{what} read {read} rows of a {TASKS}-row table for a batch of {BATCH}"
        );
    }
}
