//! Reading what a task with dependencies holds beside its row (migration
//! 13): the parents a pending task still waits for (its edges in
//! `task_deps`) and its parents' results (`task_results`), with one more
//! statement (`sql/deps_read.sql`) for the tasks of an answer that named
//! parents. A task that named none costs nothing more: no statement, no
//! join, so claims and acks of such tasks run as they did.
//!
//! The row and the side tables are read by two statements, so an ending
//! may commit between them. `waiting_count` tells: every ending a task
//! waits for lowers it in the same commit that takes its edge and adds its
//! result, and nothing raises it, so a count unchanged between the two
//! statements means they agree. Results of a task that waits for nothing
//! change only when it is deleted. A task that changed so is answered as
//! `None`; [`Backend::read_tasks`] then reads again in one snapshot.

use std::collections::HashMap;

use spool_core::{StoreError, Task, TaskId, TaskResult};

use crate::backend::Backend;
use crate::db::{Db, Params};
use crate::error::{corrupt, db};
use crate::row::StoredTask;
use crate::sql::Sql;
use crate::values;

/// What `sql/deps_read.sql` answered for one task.
struct Beside {
    waiting_count: Option<i32>,
    waiting_on: Vec<TaskId>,
    results: Vec<(TaskId, TaskResult)>,
}

fn beside(row: &tokio_postgres::Row) -> Result<(i64, Beside), StoreError> {
    let id: i64 = row.try_get("id").map_err(corrupt)?;
    let waiting_on: Option<Vec<i64>> = row.try_get("waiting_on").map_err(corrupt)?;
    let parents: Option<Vec<i64>> = row.try_get("result_parents").map_err(corrupt)?;
    let texts: Option<Vec<String>> = row.try_get("results").map_err(corrupt)?;
    let parents = values::task_ids(parents.unwrap_or_default())?;
    let texts = texts.unwrap_or_default();
    if parents.len() != texts.len() {
        return Err(corrupt("results without their parents"));
    }
    let results = parents
        .into_iter()
        .zip(texts)
        // Stored from a TaskResult, so valid; a text that is not is a row
        // changed behind the store's back.
        .map(|(parent, text)| Ok((parent, TaskResult::from_json(&text).map_err(corrupt)?)))
        .collect::<Result<Vec<_>, StoreError>>()?;
    Ok((
        id,
        Beside {
            waiting_count: row.try_get("waiting_count").map_err(corrupt)?,
            waiting_on: values::task_ids(waiting_on.unwrap_or_default())?,
            results,
        },
    ))
}

/// Whether a task of `stored` named parents: only then is there anything
/// to read beside the rows.
pub(crate) fn needed(stored: &[StoredTask]) -> bool {
    stored.iter().any(|s| s.deps.is_some())
}

/// The tasks `stored` shows, in order, each completed with what it holds
/// beside its row; `None` for one that an ending changed, or that was
/// deleted, since its row was read.
pub(crate) async fn complete(
    db_: &(impl Db + ?Sized),
    sql: &Sql,
    stored: Vec<StoredTask>,
) -> Result<Vec<Option<Task>>, StoreError> {
    let ids: Vec<i64> = stored
        .iter()
        .filter(|s| s.deps.is_some())
        .map(|s| values::id(s.id))
        .collect();
    let mut found: HashMap<i64, Beside> = HashMap::with_capacity(ids.len());
    if !ids.is_empty() {
        for row in &db_.query(&sql.deps_read, &[&ids]).await.map_err(db)? {
            let (id, b) = beside(row)?;
            found.insert(id, b);
        }
    }
    stored
        .into_iter()
        .map(|s| {
            let (id, read_count) = (values::id(s.id), s.waiting_count);
            let mut task = s.view()?;
            let Some(deps) = task.deps.as_deref_mut() else {
                return Ok(Some(task));
            };
            match found.remove(&id) {
                Some(b) if b.waiting_count == read_count => {
                    deps.waiting_on = b.waiting_on;
                    deps.results = b.results;
                    Ok(Some(task))
                }
                _ => Ok(None),
            }
        })
        .collect()
}

impl Backend {
    /// The tasks `stored` shows, as [`complete`] answers them, taking a
    /// connection only when one named parents.
    pub(crate) async fn completed(
        &self,
        stored: Vec<StoredTask>,
    ) -> Result<Vec<Option<Task>>, StoreError> {
        if !needed(&stored) {
            return stored.into_iter().map(|s| s.view().map(Some)).collect();
        }
        let client = self.client().await?;
        complete(&client, &self.sql, stored).await
    }

    /// The tasks statement `sql` answers (rows read by
    /// [`StoredTask::from_row`]), complete. When an ending came between
    /// the row and what lies beside it, both are read again in one
    /// REPEATABLE READ snapshot, where they agree.
    pub(crate) async fn read_tasks(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Task>, StoreError> {
        let mut client = self.client().await?;
        let stored = from_rows(&client.query(sql, params).await.map_err(db)?)?;
        if !needed(&stored) {
            return stored.into_iter().map(StoredTask::view).collect();
        }
        let first = complete(&client, &self.sql, stored).await?;
        if let Some(tasks) = first.into_iter().collect::<Option<Vec<Task>>>() {
            return Ok(tasks);
        }
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(db)?;
        let stored = from_rows(&tx.query(sql, params).await.map_err(db)?)?;
        let tasks = complete(&tx, &self.sql, stored)
            .await?
            .into_iter()
            .collect::<Option<Vec<Task>>>()
            .ok_or_else(|| corrupt("a task and its dependencies disagree in one snapshot"))?;
        tx.commit().await.map_err(db)?;
        Ok(tasks)
    }
}

/// The rows of a statement answering tasks.
fn from_rows(rows: &[tokio_postgres::Row]) -> Result<Vec<StoredTask>, StoreError> {
    rows.iter().map(StoredTask::from_row).collect()
}
