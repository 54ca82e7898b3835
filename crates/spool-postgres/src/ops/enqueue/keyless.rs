//! The one-statement enqueues: a batch in which no task has a key
//! (`sql/enqueue_keyless.sql`), and a single such task as a plain
//! `INSERT ... SELECT` (`sql/enqueue_one.sql`; a task without a group:
//! a grouped one takes the batch statement, which marks its queue as
//! having groups, README.md "Groups"). Both write nothing and
//! answer `None` when the queue does not exist, for the general path to
//! create it.

use spool_core::{EnqueueOutcome, NewTask, QueueName, StoreError, TaskId};

use super::general::{Enqueued, NotifyIn};
use super::rows::{Limits, Rows};
use super::slots::Slot;
use crate::db::Db;
use crate::error::{corrupt, db};
use crate::rotate::CurrentGen;
use crate::sql::Sql;

/// One task without a key, as a plain INSERT into the generation `current`
/// names (which the answer brings up to date); `None` (and nothing
/// written) if the queue does not exist or refuses the payload: the batch
/// statement then tells which.
pub(super) async fn enqueue_one(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    current: &CurrentGen,
    queue: &QueueName,
    task: &NewTask,
    slots: &[Slot<'_>],
) -> Result<Option<Enqueued>, StoreError> {
    let rows = Rows::build(
        std::slice::from_ref(task),
        slots,
        &Limits::IN_STATEMENT,
        queue.as_str(),
    )?;
    let answer = db_
        .query(
            &sql.enqueue_one[current.get()],
            &[
                &queue.as_str(),
                &rows.kind[0],
                &rows.priority[0],
                &rows.run_at[0],
                &rows.delay_ms[0],
                &rows.max_attempts[0],
                &rows.lease_ms[0],
                &rows.payload_json[0],
                &rows.payload[0],
                &rows.traceparent[0],
            ],
        )
        .await
        .map_err(db)?;
    answer
        .first()
        .map(|row| {
            current.saw(row.try_get("current").map_err(corrupt)?);
            Ok(Enqueued {
                outcomes: vec![created(row.try_get("id").map_err(corrupt)?)?],
                at: row.try_get("db_now").map_err(corrupt)?,
            })
        })
        .transpose()
}

/// A batch without keys in one statement; `None` (and nothing written) if
/// the queue does not exist.
pub(super) async fn enqueue_keyless(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    queue: &QueueName,
    tasks: &[NewTask],
    slots: &[Slot<'_>],
    notify: NotifyIn,
) -> Result<Option<Enqueued>, StoreError> {
    let rows = Rows::build(tasks, slots, &Limits::IN_STATEMENT, queue.as_str())?;
    let queue_name = queue.as_str();
    let notify_here = notify == NotifyIn::Statement;
    let answer = db_
        .query(
            &sql.enqueue_keyless,
            &[
                &queue_name,
                &notify_here,
                &rows.kind,
                &rows.priority,
                &rows.run_at,
                &rows.delay_ms,
                &rows.max_attempts,
                &rows.lease_ms,
                &rows.payload_json,
                &rows.payload,
                &rows.traceparent,
                &rows.group,
            ],
        )
        .await
        .map_err(db)?;
    let row = answer
        .first()
        .ok_or_else(|| corrupt("enqueue answered no row"))?;
    let Some(max) = row
        .try_get::<_, Option<i64>>("max_payload")
        .map_err(corrupt)?
    else {
        return Ok(None);
    };
    if let Some(size) = row
        .try_get::<_, Option<i32>>("too_large")
        .map_err(corrupt)?
    {
        return Err(StoreError::PayloadTooLarge {
            size: u64::try_from(size).map_err(corrupt)?,
            max: u64::try_from(max).map_err(corrupt)?,
        });
    }
    let ids: Vec<i64> = row.try_get("ids").map_err(corrupt)?;
    if ids.len() != tasks.len() {
        return Err(corrupt(format!(
            "{} tasks enqueued answered {} ids",
            tasks.len(),
            ids.len()
        )));
    }
    Ok(Some(Enqueued {
        outcomes: ids.into_iter().map(created).collect::<Result<_, _>>()?,
        at: row.try_get("db_now").map_err(corrupt)?,
    }))
}

/// The outcome of a task these statements inserted (never a duplicate:
/// they take no keys).
fn created(id: i64) -> Result<EnqueueOutcome, StoreError> {
    Ok(EnqueueOutcome {
        id: TaskId(u64::try_from(id).map_err(corrupt)?),
        duplicate: false,
    })
}
