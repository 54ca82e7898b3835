//! Dead and retried tasks wherever they sit (migration 10).
//!
//! The index of dead tasks (`tasks_dead`) exists on `tasks_parked` alone.
//! A task that died since the last turn of the ring is still in its
//! generation until the rotation parks it, and a live task on a later
//! attempt stays in the ring. Lists of dead tasks (by id and by attempts),
//! the attempts order over every state, stats and retry-all must find
//! both kinds of row, in the ring and parked alike.

use std::time::Duration;

use crate::common::{connect, database_url, fresh_schema, test_config, DropSchema};
use spool_core::{
    ClaimRequest, FailRequest, ListOrder, ListRequest, NewTask, Payload, QueueName, Store, Task,
    TaskId, TaskState,
};
use spool_postgres::PgStore;
use tokio_postgres::NoTls;

/// Claims every ready task of `q`; answers them by id.
async fn claim_all(store: &PgStore, q: &QueueName) -> Vec<Task> {
    let mut tasks = store
        .claim(ClaimRequest::new(q.clone(), "w").max(100))
        .await
        .unwrap();
    tasks.sort_by_key(|t| t.id);
    tasks
}

/// Fails `task`: dead when `discard`, else ready again at once.
async fn fail(store: &PgStore, task: &Task, discard: bool) {
    let now = store.now().await.unwrap();
    let req = FailRequest {
        retry_at: Some(now),
        discard,
        ..FailRequest::new("failed")
    };
    let token = task.lease.as_ref().unwrap().token;
    store.fail(task.id, token, req).await.unwrap();
}

/// Every page of `req`, followed to the end one task at a time: the ids.
async fn pages(store: &PgStore, mut req: ListRequest) -> Vec<u64> {
    req.limit = 1;
    let mut ids = Vec::new();
    loop {
        let page = store.list(req.clone()).await.unwrap();
        ids.extend(page.tasks.iter().map(|t| t.id.0));
        match page.next_cursor {
            Some(c) => req.cursor = Some(c),
            None => return ids,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_and_retried_tasks_are_found_in_the_ring_and_parked() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let mut config = test_config(&schema);
    // The ring does not turn by itself here: the test parks rows the way
    // the rotation does, by moving them to generation 3.
    config.rotate_interval = Duration::from_secs(3600);
    config.rotate_size = u64::MAX;
    let store = connect(config).await;
    let q = QueueName::new("parked").unwrap();
    let ids: Vec<u64> = store
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![1])); 5])
        .await
        .unwrap()
        .iter()
        .map(|e| e.id.0)
        .collect();
    let [a, b, c, d, e] = ids[..] else {
        panic!("five ids: {ids:?}")
    };

    // a and b die on their first attempt; c, d and e fail and run again,
    // then c and d die on their second, and e waits for a third.
    let first = claim_all(&store, &q).await;
    for t in &first {
        fail(&store, t, t.id.0 == a || t.id.0 == b).await;
    }
    let second = claim_all(&store, &q).await;
    let second_ids: Vec<u64> = second.iter().map(|t| t.id.0).collect();
    assert_eq!(second_ids, [c, d, e]);
    for t in &second {
        fail(&store, t, t.id.0 != e).await;
    }
    // f: a fresh task, attempt 0.
    let f = store
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![2]))])
        .await
        .unwrap()[0]
        .id
        .0;

    // a and c are parked, b and d still sit in the ring.
    let (admin, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let s = format!("\"{schema}\"");
    let to_park = [a, c].map(|id| i64::try_from(id).unwrap());
    admin
        .execute(
            &format!("UPDATE {s}.tasks SET gen = 3 WHERE id = ANY($1)"),
            &[&&to_park[..]],
        )
        .await
        .unwrap();
    let parked: Vec<i64> = admin
        .query(
            &format!("SELECT id FROM {s}.tasks WHERE gen = 3 ORDER BY id"),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(parked, to_park);

    // A ring partition's TRUNCATE rebuilds seven indexes (five, and the
    // two partial ones of grouped tasks, migration 9; and the TOAST
    // table's); the parked partition has tasks_dead as well.
    for (partition, want) in [("tasks_g0", 7), ("tasks_g2", 7), ("tasks_parked", 8)] {
        let n: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = $2",
                &[&schema, &partition],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, want, "indexes of {partition}");
    }

    let dead = |order| ListRequest {
        state: Some(TaskState::Dead),
        order,
        ..ListRequest::new(q.clone())
    };
    assert_eq!(pages(&store, dead(ListOrder::Id)).await, [a, b, c, d]);
    // Attempts 2, 2, then 1, 1; ids ascending within a count.
    assert_eq!(
        pages(&store, dead(ListOrder::AttemptsDesc)).await,
        [c, d, a, b]
    );
    let every = ListRequest {
        order: ListOrder::AttemptsDesc,
        ..ListRequest::new(q.clone())
    };
    assert_eq!(pages(&store, every).await, [c, d, e, a, b, f]);

    let stats = store.stats().await.unwrap();
    let counts = stats.iter().find(|s| s.name == q).unwrap().counts;
    assert_eq!((counts.dead, counts.ready), (4, 2));

    assert_eq!(store.retry_dead(&q).await.unwrap(), 4);
    let revived: Vec<u64> = claim_all(&store, &q).await.iter().map(|t| t.id.0).collect();
    assert_eq!(revived, [a, b, c, d, e, f], "every task is claimable again");
    for id in [a, c] {
        let task = store.get(TaskId(id).into()).await.unwrap();
        assert_eq!(task.state, TaskState::Leased, "parked task {id}");
    }
}
