//! The hot statements read a batch, not the table, even when the task
//! table's statistics say it is empty.
//!
//! A queue table is often empty when VACUUM or ANALYZE looks at it, and
//! full minutes later. With `reltuples = 0` the planner takes any scan of
//! the table for free: joining `tasks` on id to the batch, it once chose to
//! walk all of `tasks_pkey` and filter the batch against each row — 105 s
//! for one claim of 1,000 at 170,000 rows. The statements now reach their
//! rows by ctid (README.md, "Plans that do not trust statistics"); this
//! test recreates those statistics and counts the rows each statement
//! reads, through PostgreSQL's counters of the current transaction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient};

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
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> (i64, usize) {
    let tx = client.transaction().await.unwrap();
    // The counters hold what earlier transactions did too, until
    // PostgreSQL flushes them: only the difference is this statement's.
    let before = rows_read(&tx, schema).await;
    let answered = tx.query(sql, params).await.unwrap().len();
    let read = rows_read(&tx, schema).await - before;
    tx.rollback().await.unwrap();
    (read, answered)
}

#[tokio::test]
async fn hot_statements_read_a_batch_when_statistics_say_the_table_is_empty() {
    in_fresh_schema("plans", |name| async move {
        check(Schema::new(&name).unwrap()).await;
    })
    .await;
}

async fn check(schema: Schema) {
    let mut client = session().await;
    let (name, s) = (schema.name().to_string(), schema.ident());
    migrate::run(&mut client, &schema).await.unwrap();
    // As the store's connections run: one generic plan, no JIT, no sorts
    // where a merge of indexes will do.
    client
        .batch_execute(
            "SET plan_cache_mode = force_generic_plan; SET jit = off; SET enable_sort = off",
        )
        .await
        .unwrap();
    // Filled, emptied and vacuumed (which writes down reltuples = 0 and
    // keeps the pages), then filled again: what the statistics say when
    // VACUUM found a drained queue. The tasks go to the current generation
    // (tasks_g0); autovacuum stays off it so that no ANALYZE corrects them
    // meanwhile.
    for step in [
        format!("ALTER TABLE {s}.tasks_g0 SET (autovacuum_enabled = false)"),
        format!(
            "INSERT INTO {s}.queues (name, lease_ms, max_attempts, backoff_base_ms, \
                 backoff_max_ms, dedup_window_ms, max_payload, paused) \
             VALUES ('q', 30000, 3, 1000, 3600000, 0, 1048576, false)"
        ),
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

    let sql = Sql::new(&schema);
    let tokens: Vec<i64> = (0..BATCH).collect();
    let claim = measure(
        &mut client,
        &name,
        &sql.claim,
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
    let leased: Vec<i64> = (0..BATCH).map(|i| TASKS + 1 + 10 * i).collect();
    let ack = measure(&mut client, &name, &sql.ack_many, &[&leased, &leased]).await;
    let acked = {
        let tx = client.transaction().await.unwrap();
        let rows = tx.query(&sql.ack_many, &[&leased, &leased]).await.unwrap();
        tx.rollback().await.unwrap();
        rows.iter()
            .filter(|r| r.get::<_, &str>(0) == "done")
            .count()
    };
    assert_eq!(acked, leased.len(), "every ack found its task");
    // Expired leases numbered 4 mod 10, their tokens equal to their ids.
    let expired: Vec<i64> = (0..BATCH).map(|i| TASKS + 4 + 10 * i).collect();
    let dead = vec![false; expired.len()];
    let ended = std::time::UNIX_EPOCH + std::time::Duration::from_secs(EXPIRED_AT_UNIX);
    let at = vec![ended; expired.len()];
    let errors = vec![serde_json::json!([]); expired.len()];
    let expire = measure(
        &mut client,
        &name,
        &sql.expire,
        &[&expired, &expired, &dead, &at, &errors, &false],
    )
    .await;
    let promote = measure(&mut client, &name, &sql.promote_due, &[&BATCH]).await;
    // The first page of the admin's list by attempts, 50 and one more.
    let first_page = i64::from(i32::MAX) + 1;
    let list = measure(
        &mut client,
        &name,
        sql.list_by_attempts(None),
        &[&"q", &1i32, &first_page, &0i64, &51i64],
    )
    .await;

    for (what, (read, answered)) in [
        ("claim", claim),
        ("ack_many", ack),
        ("expire", expire),
        ("promote_due", promote),
        ("list_by_attempts", list),
    ] {
        assert!(answered > 0, "{what} answered nothing");
        assert!(
            read <= MOST_READ,
            "{what} read {read} rows of a {TASKS}-row table for a batch of {BATCH}"
        );
    }
}
