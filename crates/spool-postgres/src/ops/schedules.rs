//! Schedules (docs/spec.md §5): stored definitions and the tick guard.
//!
//! Firing a tick is one transaction: the conditional UPDATE of the
//! schedule's `last_fire_at` (`fire_schedule.sql`), then the tick's enqueue
//! (key `sched:<name>:<tick>`, run_at the tick, lease the deadline). Any
//! number of processes may fire the same tick: the row lock orders them,
//! one UPDATE matches, the rest find the tick fired and enqueue nothing.
//! Which ticks exist is `spool_core::schedule`'s business; this file only
//! checks a tick against it. A put or delete is announced to schedulers in
//! every process ([`crate::wake::SCHEDULES`]).

use std::time::Duration;

use spool_core::schedule::tick_key;
use spool_core::task::RunAt;
use spool_core::{
    Cadence, EnqueueOutcome, Kind, NewTask, Payload, PayloadFormat, QueueName, QueueSettings,
    Schedule, ScheduleSpec, StoreError, Timestamp,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::Db;
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::ops::enqueue::enqueue_on;
use crate::ops::enqueue::general::NotifyIn;
use crate::values::{duration, millis, timestamp};
use crate::wake::SCHEDULES;

/// How far ahead of the store's clock a tick may be fired: schedulers in
/// other processes estimate the store's clock, and a little early is
/// harmless because the task's run_at is the tick itself. (The embedded
/// engine allows the same.)
const MAX_EARLY_FIRE: Duration = Duration::from_secs(1);

fn schedule_from(row: &Row) -> Result<Schedule, StoreError> {
    let get_s = |c: &str| row.try_get::<_, Option<String>>(c).map_err(corrupt);
    let cadence = match (
        row.try_get::<_, Option<i64>>("every_ms").map_err(corrupt)?,
        get_s("cron")?,
    ) {
        (Some(ms), None) => Cadence::Every(duration(ms)),
        (None, Some(expr)) => Cadence::Cron {
            expr,
            tz: get_s("tz")?,
        },
        _ => return Err(corrupt("a schedule needs exactly one of every_ms and cron")),
    };
    let bytes: Vec<u8> = row.try_get("payload").map_err(corrupt)?;
    let payload = if row.try_get::<_, bool>("payload_json").map_err(corrupt)? {
        Payload::json(bytes)
    } else {
        Payload::binary(bytes)
    };
    let name: String = row.try_get("name").map_err(corrupt)?;
    let queue: String = row.try_get("queue").map_err(corrupt)?;
    Ok(Schedule {
        spec: ScheduleSpec {
            name: Kind::new(name).map_err(corrupt)?,
            queue: QueueName::new(queue).map_err(corrupt)?,
            kind: get_s("kind")?.map(Kind::new).transpose().map_err(corrupt)?,
            payload,
            cadence,
            deadline: row
                .try_get::<_, Option<i64>>("deadline_ms")
                .map_err(corrupt)?
                .map(duration),
        },
        last_fire_at: row
            .try_get::<_, Option<std::time::SystemTime>>("last_fire_at")
            .map_err(corrupt)?
            .map(timestamp),
        created_at: timestamp(row.try_get("created_at").map_err(corrupt)?),
    })
}

impl Backend {
    pub(crate) async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        spec.validate()?;
        let settings = match self.get_queue(&spec.queue).await {
            Ok((_, s)) => s,
            // Enqueue will create the queue with defaults.
            Err(StoreError::QueueNotFound(_)) if !self.config.strict_queues => {
                QueueSettings::default()
            }
            Err(e) => return Err(e),
        };
        let size = spec.payload.len() as u64;
        if size > settings.max_payload {
            return Err(StoreError::PayloadTooLarge {
                size,
                max: settings.max_payload,
            });
        }
        let (every_ms, cron, tz) = match &spec.cadence {
            Cadence::Every(d) => (Some(millis("every_ms", *d)?), None, None),
            Cadence::Cron { expr, tz } => (None, Some(expr.as_str()), tz.as_deref()),
        };
        let deadline_ms = spec
            .deadline
            .map(|d| millis("deadline_ms", d))
            .transpose()?;
        let kind = spec.kind.as_ref().map(Kind::as_str);
        let payload_json = spec.payload.format == PayloadFormat::Json;
        let payload: &[u8] = &spec.payload.bytes;
        let params: [&(dyn ToSql + Sync); 9] = [
            &spec.name.as_str(),
            &spec.queue.as_str(),
            &kind,
            &payload_json,
            &payload,
            &every_ms,
            &cron,
            &tz,
            &deadline_ms,
        ];
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.put_schedule, &params)
            .await
            .map_err(db)?;
        let put = schedule_from(
            rows.first()
                .ok_or_else(|| corrupt("put answered nothing"))?,
        )?;
        self.notify(SCHEDULES, Ready::Anywhere);
        Ok(put)
    }

    pub(crate) async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.list_schedules, &[])
            .await
            .map_err(db)?;
        rows.iter().map(schedule_from).collect()
    }

    pub(crate) async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.delete_schedule, &[&name.as_str()])
            .await
            .map_err(db)?;
        if rows.is_empty() {
            return Err(StoreError::NotFound);
        }
        self.notify(SCHEDULES, Ready::Anywhere);
        Ok(())
    }

    pub(crate) async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        let tick_time = crate::values::time(tick)?;
        let mut client = self.client().await?;
        let rows = client
            .query(&self.sql.get_schedule, &[&name.as_str()])
            .await
            .map_err(db)?;
        let row = rows.first().ok_or(StoreError::NotFound)?;
        let schedule = schedule_from(row)?;
        let now = timestamp(row.try_get("db_now").map_err(corrupt)?);
        if schedule.last_fire_at.is_some_and(|last| last >= tick) {
            return Ok(None);
        }
        let spec = &schedule.spec;
        if tick > now.plus(MAX_EARLY_FIRE) {
            return Err(StoreError::bad_request("the tick is in the future"));
        }
        let on_cadence = spec
            .cadence
            .next_after(tick.minus(Duration::from_millis(1)))
            == Some(tick);
        if tick <= schedule.created_at || !on_cadence {
            return Err(StoreError::bad_request("not a tick of this schedule"));
        }
        let lease_ms = u64::try_from(spec.deadline_at(tick).as_millis()).unwrap_or(u64::MAX);
        let task = NewTask {
            kind: spec.kind.clone(),
            payload: spec.payload.clone(),
            priority: 0,
            run_at: RunAt::At(tick),
            key: Some(tick_key(name, tick)),
            max_attempts: None,
            lease_ms: Some(lease_ms),
            traceparent: None,
            after: Vec::new(),
            if_parent_fails: Default::default(),
            group: None,
        };

        let tx = client.transaction().await.map_err(db)?;
        let guard = tx
            .query(&self.sql.fire_schedule, &[&name.as_str(), &tick_time])
            .await
            .map_err(db)?;
        if guard.is_empty() {
            // Another process fired this tick, or a later one, meanwhile.
            return Ok(None);
        }
        let out = enqueue_on(
            &tx,
            &self.sql,
            &self.current_gen,
            self.config.strict_queues,
            &spec.queue,
            vec![task],
            NotifyIn::Later,
        )
        .await?;
        tx.commit().await.map_err(db)?;
        drop(client);
        self.notify(spec.queue.as_str(), Ready::Anywhere);
        out.outcomes
            .into_iter()
            .next()
            .map(Some)
            .ok_or_else(|| corrupt("the tick's enqueue answered nothing"))
    }
}
