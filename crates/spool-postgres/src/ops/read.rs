//! Inspection (docs/spec.md §3, §7.1): get, list, stats.
//!
//! Views derive what a task shows from the stored row and the statement's
//! clock ([`crate::row`]). List and stats filter and count in SQL, so they
//! first write expired leases down (normally already done by the sweeper):
//! after that, stored `leased` means leased, and only run_at separates
//! ready from scheduled, which SQL can tell.

use std::time::Duration;

use serde::Deserialize;
use spool_core::{
    Kind, ListOrder, ListRequest, QueueName, QueueStats, StateCounts, StoreError, Task, TaskPage,
    TaskRef,
};
use tokio_postgres::types::ToSql;

use crate::backend::Backend;
use crate::db::Db;
use crate::error::{corrupt, db};

/// Where a list page resumes: the opaque cursor string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cursor {
    /// After this id (id order).
    Id(i64),
    /// After this (attempt, id) (attempts-descending order).
    Attempts(i32, i64),
}

impl Cursor {
    fn parse(s: &str) -> Result<Cursor, StoreError> {
        let bad = || StoreError::bad_request("invalid cursor");
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            ["i", id] => Ok(Cursor::Id(id.parse().map_err(|_| bad())?)),
            ["a", attempt, id] => Ok(Cursor::Attempts(
                attempt.parse().map_err(|_| bad())?,
                id.parse().map_err(|_| bad())?,
            )),
            _ => Err(bad()),
        }
    }

    fn render(self) -> String {
        match self {
            Cursor::Id(id) => format!("i:{id}"),
            Cursor::Attempts(a, id) => format!("a:{a}:{id}"),
        }
    }
}

impl Backend {
    pub(crate) async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        let id = self.resolve(&task).await?;
        self.read_tasks(&self.sql.get_task, &[&id])
            .await?
            .pop()
            .ok_or(StoreError::NotFound)
    }

    pub(crate) async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        req.validate()?;
        let cursor = req.cursor.as_deref().map(Cursor::parse).transpose()?;
        let queue_id = match self.get_queue(&req.queue).await {
            Ok((id, _)) => id,
            Err(StoreError::QueueNotFound(_)) => {
                return Ok(TaskPage {
                    tasks: Vec::new(),
                    next_cursor: None,
                })
            }
            Err(e) => return Err(e),
        };
        self.expire_leases(Some(queue_id)).await?;
        // One more than the page, to know whether another follows.
        let want = i64::try_from(req.limit + 1).map_err(corrupt)?;
        let name = req.queue.as_str();
        let mut tasks = match (req.order, cursor) {
            (ListOrder::Id, None | Some(Cursor::Id(_))) => {
                let after = match cursor {
                    Some(Cursor::Id(id)) => id,
                    _ => 0,
                };
                let params: [&(dyn ToSql + Sync); 4] = [&name, &queue_id, &after, &want];
                self.read_tasks(self.sql.list_by_id(req.state), &params)
                    .await?
            }
            (ListOrder::AttemptsDesc, None | Some(Cursor::Attempts(..))) => {
                // Before the first page: above any attempt count.
                let (attempt, after) = match cursor {
                    Some(Cursor::Attempts(a, id)) => (i64::from(a), id),
                    _ => (i64::from(i32::MAX) + 1, 0),
                };
                let params: [&(dyn ToSql + Sync); 5] = [&name, &queue_id, &attempt, &after, &want];
                self.read_tasks(self.sql.list_by_attempts(req.state), &params)
                    .await?
            }
            _ => return Err(StoreError::bad_request("cursor does not match the order")),
        };
        if req.order == ListOrder::AttemptsDesc {
            // The statement appends ordered parts (sql/list_by_attempts.sql).
            tasks.sort_by(|a, b| b.attempt.cmp(&a.attempt).then(a.id.cmp(&b.id)));
        }
        let next_cursor = if tasks.len() > req.limit {
            tasks.truncate(req.limit);
            tasks.last().map(|t| {
                let id = crate::values::id(t.id);
                match req.order {
                    ListOrder::Id => Cursor::Id(id).render(),
                    ListOrder::AttemptsDesc => {
                        Cursor::Attempts(i32::try_from(t.attempt).unwrap_or(i32::MAX), id).render()
                    }
                }
            })
        } else {
            None
        };
        Ok(TaskPage { tasks, next_cursor })
    }

    /// Counts per queue, kind and state: the count every node shares
    /// while it is younger than `stats_max_age`, else a fresh one, which
    /// is then shared. The rate limits' tokens are read fresh either way.
    pub(crate) async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        let mut stats = self.stats_counts().await?;
        let client = self.client().await?;
        for row in client.query(&self.sql.rate_tokens, &[]).await.map_err(db)? {
            let name: &str = row.try_get("name").map_err(corrupt)?;
            let tokens: i64 = row.try_get("tokens").map_err(corrupt)?;
            // A queue created since a cached count is not in it yet.
            if let Some(s) = stats.iter_mut().find(|s| s.name.as_str() == name) {
                s.rate_tokens = Some(crate::values::tokens(tokens));
            }
        }
        Ok(stats)
    }

    /// The counts alone, cached or fresh.
    async fn stats_counts(&self) -> Result<Vec<QueueStats>, StoreError> {
        let max_age = i64::try_from(self.config.stats_max_age.as_millis()).unwrap_or(i64::MAX);
        if max_age > 0 {
            let client = self.client().await?;
            let rows = client
                .query(&self.sql.stats_cached, &[&max_age])
                .await
                .map_err(db)?;
            if let Some(row) = rows.first() {
                return stats_from(row);
            }
        }
        self.expire_leases(None).await?;
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.stats_refresh, &[])
            .await
            .map_err(db)?;
        let row = rows
            .first()
            .ok_or_else(|| corrupt("no answer to the stats count"))?;
        stats_from(row)
    }
}

/// One group of a stats count (sql/stats_refresh.sql), as kept in JSON.
#[derive(Deserialize)]
struct Group {
    name: String,
    paused: bool,
    kind: Option<String>,
    scheduled: u64,
    ready: u64,
    leased: u64,
    dead: u64,
    /// Absent from counts kept before the store knew dependencies.
    #[serde(default)]
    pending: u64,
    oldest_ready_ms: Option<i64>,
}

/// The stats in a row of `groups` (JSON, ordered by queue then kind) and
/// `now_ms`, the clock ages are measured by.
fn stats_from(row: &tokio_postgres::Row) -> Result<Vec<QueueStats>, StoreError> {
    let groups: serde_json::Value = row.try_get("groups").map_err(corrupt)?;
    let groups: Vec<Group> = serde_json::from_value(groups).map_err(corrupt)?;
    let now_ms: i64 = row.try_get("now_ms").map_err(corrupt)?;
    let mut out: Vec<QueueStats> = Vec::new();
    for g in groups {
        if out.last().is_none_or(|s| s.name.as_str() != g.name) {
            out.push(QueueStats {
                name: QueueName::new(g.name.clone()).map_err(corrupt)?,
                paused: g.paused,
                counts: StateCounts::default(),
                kinds: Default::default(),
                oldest_ready_age: None,
                rate_tokens: None,
            });
        }
        let Some(stats) = out.last_mut() else {
            continue;
        };
        let Some(kind) = g.kind else {
            // A queue without tasks.
            continue;
        };
        let counts = StateCounts {
            scheduled: g.scheduled,
            ready: g.ready,
            leased: g.leased,
            dead: g.dead,
            pending: g.pending,
        };
        for s in spool_core::TaskState::ALL {
            *stats.counts.slot(s) += counts.get(s);
        }
        let age = g
            .oldest_ready_ms
            .map(|at| Duration::from_millis(u64::try_from(now_ms - at).unwrap_or(0)));
        stats.oldest_ready_age = stats.oldest_ready_age.max(age);
        stats
            .kinds
            .insert(Kind::new(kind).map_err(corrupt)?, counts);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        for c in [Cursor::Id(42), Cursor::Attempts(3, 7)] {
            assert_eq!(Cursor::parse(&c.render()).ok(), Some(c));
        }
        for bad in ["", "i:", "i:x", "a:1", "z:1", "i:1:2", "a:1:2:3"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }
}
