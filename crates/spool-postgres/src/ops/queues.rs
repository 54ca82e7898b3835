//! Queue settings (docs/spec.md §4): create, change, read, pause; and the clock.
//!
//! Invariant: a change of settings reads the row it changes under a row
//! lock, so every other change of the queue (a pause on another node
//! included) lands wholly before or wholly after it.

use spool_core::{QueueChange, QueueName, QueueSettings, RateLimit, StoreError, Timestamp};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::Db;
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::values::{duration, millis, timestamp};

/// A queue row's values, in the column order of `put_queue.sql` and
/// `create_queue.sql`.
pub(crate) struct SettingsParams {
    name: String,
    lease_ms: i64,
    max_attempts: i32,
    backoff_base_ms: i64,
    backoff_max_ms: i64,
    dedup_window_ms: i64,
    max_payload: i64,
    paused: bool,
    rate_limit: Option<i32>,
    rate_period_ms: Option<i64>,
    rate_burst: Option<i32>,
    max_leased: Option<i32>,
    group_concurrency: Option<i32>,
    group_rate: RateColumns,
}

/// A rate limit as its three columns, all `None` for no limit.
struct RateColumns {
    limit: Option<i32>,
    period_ms: Option<i64>,
    burst: Option<i32>,
}

impl RateColumns {
    /// `r` as column values; `field` names the setting in errors.
    fn of(field: &str, r: Option<RateLimit>) -> Result<RateColumns, StoreError> {
        Ok(RateColumns {
            limit: r
                .map(|r| int(&format!("{field}.limit"), r.limit))
                .transpose()?,
            period_ms: r
                .map(|r| millis(&format!("{field}.period_ms"), r.period))
                .transpose()?,
            burst: r
                .map(|r| int(&format!("{field}.burst"), r.burst))
                .transpose()?,
        })
    }
}

impl SettingsParams {
    pub(crate) fn max_attempts(&self) -> i32 {
        self.max_attempts
    }

    pub(crate) fn max_payload(&self) -> i64 {
        self.max_payload
    }

    pub(crate) fn as_params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.name,
            &self.lease_ms,
            &self.max_attempts,
            &self.backoff_base_ms,
            &self.backoff_max_ms,
            &self.dedup_window_ms,
            &self.max_payload,
            &self.paused,
        ]
    }

    /// The limits, in the order of `put_queue.sql`'s last parameters
    /// (the claim limits, then the bound on each group's leases and each
    /// group's rate limit).
    fn limit_params(&self) -> [&(dyn ToSql + Sync); 8] {
        [
            &self.rate_limit,
            &self.rate_period_ms,
            &self.rate_burst,
            &self.max_leased,
            &self.group_concurrency,
            &self.group_rate.limit,
            &self.group_rate.period_ms,
            &self.group_rate.burst,
        ]
    }
}

/// A count from the settings as a column value.
fn int(what: &str, n: u32) -> Result<i32, StoreError> {
    i32::try_from(n).map_err(|_| StoreError::bad_request(format!("{what} is too large")))
}

/// Validates `s` and lays it out as column values.
pub(crate) fn settings_params(
    queue: &QueueName,
    s: &QueueSettings,
) -> Result<SettingsParams, StoreError> {
    s.validate()?;
    let rate = RateColumns::of("rate_limit", s.rate_limit)?;
    Ok(SettingsParams {
        name: queue.as_str().to_string(),
        lease_ms: millis("lease_ms", s.lease)?,
        max_attempts: i32::try_from(s.max_attempts)
            .map_err(|_| StoreError::bad_request("max_attempts is too large"))?,
        backoff_base_ms: millis("backoff_base_ms", s.backoff_base)?,
        backoff_max_ms: millis("backoff_max_ms", s.backoff_max)?,
        dedup_window_ms: millis("dedup_window_ms", s.dedup_window)?,
        max_payload: i64::try_from(s.max_payload)
            .map_err(|_| StoreError::bad_request("max_payload is too large"))?,
        paused: s.paused,
        rate_limit: rate.limit,
        rate_period_ms: rate.period_ms,
        rate_burst: rate.burst,
        max_leased: s.max_leased.map(|n| int("max_leased", n)).transpose()?,
        group_concurrency: s
            .group_concurrency
            .map(|n| int("group_concurrency", n))
            .transpose()?,
        group_rate: RateColumns::of("group_rate_limit", s.group_rate_limit)?,
    })
}

/// A count read back from a column: never negative (the table's checks).
fn count(row: &Row, column: &str) -> Result<Option<u32>, StoreError> {
    row.try_get::<_, Option<i32>>(column)
        .map_err(corrupt)?
        .map(|n| u32::try_from(n).map_err(corrupt))
        .transpose()
}

fn settings_from(row: &Row) -> Result<QueueSettings, StoreError> {
    let ms = |c: &str| row.try_get::<_, i64>(c).map(duration).map_err(corrupt);
    Ok(QueueSettings {
        lease: ms("lease_ms")?,
        max_attempts: u32::try_from(row.try_get::<_, i32>("max_attempts").map_err(corrupt)?)
            .map_err(corrupt)?,
        backoff_base: ms("backoff_base_ms")?,
        backoff_max: ms("backoff_max_ms")?,
        dedup_window: ms("dedup_window_ms")?,
        max_payload: u64::try_from(row.try_get::<_, i64>("max_payload").map_err(corrupt)?)
            .map_err(corrupt)?,
        paused: row.try_get("paused").map_err(corrupt)?,
        rate_limit: rate_from(row, "rate_limit", "rate_period_ms", "rate_burst")?,
        max_leased: count(row, "max_leased")?,
        group_concurrency: count(row, "group_concurrency")?,
        group_rate_limit: rate_from(
            row,
            "group_rate_limit",
            "group_rate_period_ms",
            "group_rate_burst",
        )?,
    })
}

/// A rate limit read back from its three columns.
fn rate_from(
    row: &Row,
    limit: &str,
    period_ms: &str,
    burst: &str,
) -> Result<Option<RateLimit>, StoreError> {
    Ok(match (count(row, limit)?, count(row, burst)?) {
        (Some(limit), Some(burst)) => Some(RateLimit {
            limit,
            period: duration(row.try_get::<_, i64>(period_ms).map_err(corrupt)?),
            burst,
        }),
        _ => None,
    })
}

/// Queue `queue`'s settings, its row locked until `tx` ends; `None` if it
/// does not exist.
async fn lock_queue(
    tx: &(impl Db + ?Sized),
    sql: &str,
    queue: &QueueName,
) -> Result<Option<QueueSettings>, StoreError> {
    let rows = tx.query(sql, &[&queue.as_str()]).await.map_err(db)?;
    rows.first().map(settings_from).transpose()
}

impl Backend {
    /// One transaction: lock the queue's row (creating it with the defaults
    /// if need be), apply the change to what it holds, write the result.
    /// `set_paused` updates the same row, so it waits for this transaction
    /// or this one for it. One `INSERT ... ON CONFLICT DO UPDATE` merging
    /// with `COALESCE` would save round trips, but would have to check the
    /// merged settings in SQL, a second copy of `QueueSettings::validate`;
    /// settings change rarely, so the checks stay in one place instead.
    pub(crate) async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let current = match lock_queue(&tx, &self.sql.lock_queue, queue).await? {
            Some(current) => current,
            None => {
                let defaults = settings_params(queue, &QueueSettings::default())?;
                tx.query(&self.sql.create_queue, &defaults.as_params())
                    .await
                    .map_err(db)?;
                // Created here, or by a racing transaction that committed
                // first (the insert waited for it): either way it is there.
                lock_queue(&tx, &self.sql.lock_queue, queue)
                    .await?
                    .ok_or_else(|| {
                        corrupt(format!("queue {queue} vanished after it was created"))
                    })?
            }
        };
        let settings = change.apply(current)?;
        let p = settings_params(queue, &settings)?;
        let params: Vec<&(dyn ToSql + Sync)> =
            p.as_params().into_iter().chain(p.limit_params()).collect();
        tx.query(&self.sql.put_queue, &params).await.map_err(db)?;
        tx.commit().await.map_err(db)?;
        drop(client);
        if !settings.paused {
            // It may have been paused until now, with waiters and work.
            self.notify(queue.as_str(), Ready::Anywhere);
        }
        Ok(settings)
    }

    /// The queue's id and settings.
    pub(crate) async fn get_queue(
        &self,
        queue: &QueueName,
    ) -> Result<(i32, QueueSettings), StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.get_queue, &[&queue.as_str()])
            .await
            .map_err(db)?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::QueueNotFound(queue.clone()))?;
        Ok((row.try_get("id").map_err(corrupt)?, settings_from(row)?))
    }

    pub(crate) async fn set_paused(
        &self,
        queue: &QueueName,
        paused: bool,
    ) -> Result<(), StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.set_paused, &[&queue.as_str(), &paused])
            .await
            .map_err(db)?;
        drop(client);
        if rows.is_empty() {
            return Err(StoreError::QueueNotFound(queue.clone()));
        }
        if !paused {
            self.notify(queue.as_str(), Ready::Anywhere);
        }
        Ok(())
    }

    pub(crate) async fn now(&self) -> Result<Timestamp, StoreError> {
        let client = self.client().await?;
        let rows = client.query(&self.sql.clock, &[]).await.map_err(db)?;
        let row = rows.first().ok_or_else(|| corrupt("no clock"))?;
        Ok(timestamp(row.try_get(0).map_err(corrupt)?))
    }
}
