//! [`RemoteStore`]: every `Store` operation as one HTTP call to a Spool
//! server.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use serde_json::json;
use spool_core::groups::validate_limit;
use spool_core::store::validate_lease_wait;
use spool_core::{
    Ack, ClaimRequest, EnqueueOutcome, FailRequest, GroupStats, Kind, LeaseToken, ListOrder,
    ListRequest, NewTask, QueueChange, QueueName, QueueSettings, QueueStats, Schedule,
    ScheduleSpec, Store, StoreError, Task, TaskId, TaskPage, TaskPatch, TaskRef, Timestamp,
};

use crate::http::{self, segment, Http, Target};
use crate::wire::{self, EnqueueItem};

/// A [`Store`] that is a Spool server somewhere else.
///
/// Cheap to clone: clones share one connection pool. Built with
/// [`RemoteStore::new`] or [`RemoteStore::builder`].
#[derive(Clone, Debug)]
pub struct RemoteStore {
    pub(crate) http: Http,
}

fn task_path(id: TaskId, action: &str) -> String {
    format!("/v1/tasks/{}{action}", id.0)
}

fn queue_path(queue: &QueueName, action: &str) -> String {
    format!("/v1/queues/{}{action}", segment(queue.as_str()))
}

/// The path of a task by id or by key. Keys `.` and `..` cannot be put in
/// a URL: every URL library resolves them (even percent-encoded) as dot
/// segments, so the request would reach another path.
fn ref_path(task: &TaskRef) -> Result<String, StoreError> {
    match task {
        TaskRef::Id(id) => Ok(task_path(*id, "")),
        TaskRef::Key(_, k) if matches!(k.as_str(), "." | "..") => Err(StoreError::bad_request(
            "keys \".\" and \"..\" cannot be addressed over HTTP; use the task id",
        )),
        TaskRef::Key(q, k) => Ok(format!(
            "/v1/queues/{}/keys/{}",
            segment(q.as_str()),
            segment(k.as_str())
        )),
    }
}

fn id_count_mismatch(got: usize, sent: usize) -> StoreError {
    StoreError::Internal(format!(
        "the server answered {got} results for {sent} items"
    ))
}

impl RemoteStore {
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
        target: Target<'_>,
    ) -> Result<bytes::Bytes, StoreError> {
        let mut req = self.http.request(method, path, Duration::ZERO);
        if let Some(body) = body {
            req = req.json(&body);
        }
        self.http.send(req, target).await
    }

    async fn task_call(
        &self,
        method: Method,
        path: &str,
        body: Option<serde_json::Value>,
        token: Option<LeaseToken>,
    ) -> Result<Task, StoreError> {
        let bytes = self.call(method, path, body, Target::Task).await?;
        http::parse::<wire::TaskIn<'_>>(&bytes)?.into_task(token)
    }
}

#[async_trait]
impl Store for RemoteStore {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        if tasks.is_empty() {
            return Ok(Vec::new());
        }
        let items = tasks
            .iter()
            .map(EnqueueItem::new)
            .collect::<Result<Vec<_>, _>>()?;
        let req = self
            .http
            .request(Method::POST, &queue_path(queue, "/tasks"), Duration::ZERO)
            .json(&wire::EnqueueBatch { tasks: items });
        let bytes = self.http.send(req, Target::Queue(queue)).await?;
        let answer: wire::EnqueuedList = http::parse(&bytes)?;
        if answer.tasks.len() != tasks.len() {
            return Err(id_count_mismatch(answer.tasks.len(), tasks.len()));
        }
        Ok(answer
            .tasks
            .into_iter()
            .map(|t| EnqueueOutcome {
                id: TaskId(t.id),
                duplicate: t.duplicate,
            })
            .collect())
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        req.validate()?;
        let mut body = json!({
            "worker": req.worker,
            "max": req.max,
            "wait_ms": wire::ms(req.wait),
        });
        if let Some(lease) = req.lease {
            body["lease_ms"] = json!(wire::ms(lease));
        }
        // The HTTP timeout must outlast the long poll.
        let http_req = self
            .http
            .request(Method::POST, &queue_path(&req.queue, "/claim"), req.wait)
            .json(&body);
        let bytes = self.http.send(http_req, Target::Queue(&req.queue)).await?;
        let answer: wire::TasksIn<'_> = http::parse(&bytes)?;
        answer
            .tasks
            .into_iter()
            .map(|t| t.into_task(None))
            .collect()
    }

    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError> {
        let mut body = json!({ "token": token.to_string() });
        match ack {
            Ack::Done => {}
            Ack::Result(r) => body["result"] = r.value(),
            Ack::Reschedule(at) => {
                body["reschedule_at"] = json!(wire::time_out("reschedule_at", at)?);
            }
        }
        self.call(
            Method::POST,
            &task_path(id, "/ack"),
            Some(body),
            Target::Task,
        )
        .await
        .map(drop)
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        if acks.is_empty() {
            return Ok(Vec::new());
        }
        let items: Vec<_> = acks
            .iter()
            .map(|(id, token)| json!({ "id": id.0, "token": token.to_string() }))
            .collect();
        let bytes = self
            .call(
                Method::POST,
                "/v1/ack",
                Some(json!({ "acks": items })),
                Target::Task,
            )
            .await?;
        let answer: wire::AckResultsIn = http::parse(&bytes)?;
        if answer.results.len() != acks.len() {
            return Err(id_count_mismatch(answer.results.len(), acks.len()));
        }
        Ok(answer
            .results
            .into_iter()
            .map(|r| match (r.status, r.error) {
                (200..=299, _) => Ok(()),
                (_, Some(e)) => Err(http::from_code(&e.code, e.message, Target::Task)),
                (status, None) => Err(StoreError::Internal(format!(
                    "batch ack item answered {status} without an error"
                ))),
            })
            .collect())
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        let mut body = json!({
            "token": token.to_string(),
            "message": req.message,
            "discard": req.discard,
        });
        if let Some(at) = req.retry_at {
            body["retry_at"] = json!(wire::time_out("retry_at", at)?);
        }
        self.task_call(
            Method::POST,
            &task_path(id, "/fail"),
            Some(body),
            Some(token),
        )
        .await
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        let body = json!({ "token": token.to_string() });
        self.call(
            Method::POST,
            &task_path(id, "/release"),
            Some(body),
            Target::Task,
        )
        .await
        .map(drop)
    }

    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError> {
        let body = json!({
            "token": token.to_string(),
            "run_at": wire::time_out("run_at", run_at)?,
        });
        self.task_call(
            Method::POST,
            &task_path(id, "/snooze"),
            Some(body),
            Some(token),
        )
        .await
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        let body = json!({ "token": token.to_string(), "lease_ms": wire::ms(lease) });
        self.task_call(
            Method::POST,
            &task_path(id, "/extend"),
            Some(body),
            Some(token),
        )
        .await
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        let payload = match &patch.payload {
            Some(p) => wire::payload_out(p)?,
            None => wire::PayloadOut::default(),
        };
        let run_at = match patch.run_at {
            Some(at) => Some(wire::time_out("run_at", at)?),
            None => None,
        };
        let body = wire::PatchOut {
            payload: payload.payload,
            payload_base64: payload.payload_base64,
            run_at,
            priority: patch.priority,
        };
        // Serialized straight to bytes: a detour through `serde_json::Value`
        // would re-parse a raw JSON payload and could change its numbers.
        let req = self
            .http
            .request(Method::PATCH, &ref_path(&task)?, Duration::ZERO)
            .json(&body);
        let bytes = self.http.send(req, Target::Task).await?;
        http::parse::<wire::TaskIn<'_>>(&bytes)?.into_task(None)
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.call(Method::DELETE, &ref_path(&task)?, None, Target::Task)
            .await
            .map(drop)
    }

    async fn wait_leases_lost(
        &self,
        leases: &[(TaskId, LeaseToken)],
        wait: Duration,
    ) -> Result<Vec<TaskId>, StoreError> {
        validate_lease_wait(leases.len(), wait)?;
        let items: Vec<_> = leases
            .iter()
            .map(|(id, token)| json!({ "id": id.0, "token": token.to_string() }))
            .collect();
        let body = json!({ "leases": items, "wait_ms": wire::ms(wait) });
        // The HTTP timeout must outlast the long poll.
        let req = self
            .http
            .request(Method::POST, "/v1/leases/wait", wait)
            .json(&body);
        let bytes = self.http.send(req, Target::Task).await?;
        let answer: wire::LostIn = http::parse(&bytes)?;
        Ok(answer.lost.into_iter().map(TaskId).collect())
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        self.task_call(Method::GET, &ref_path(&task)?, None, None)
            .await
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.task_call(Method::POST, &task_path(id, "/retry"), None, None)
            .await
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        let bytes = self
            .call(
                Method::POST,
                &queue_path(queue, "/retry"),
                None,
                Target::Queue(queue),
            )
            .await?;
        Ok(http::parse::<wire::RetriedIn>(&bytes)?.retried)
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        req.validate()?;
        let mut query: Vec<(&str, String)> = vec![("limit", req.limit.to_string())];
        if let Some(state) = req.state {
            query.push(("state", state.as_str().to_string()));
        }
        if req.order == ListOrder::AttemptsDesc {
            query.push(("order", "attempts_desc".to_string()));
        }
        if let Some(cursor) = &req.cursor {
            query.push(("cursor", cursor.clone()));
        }
        let http_req = self
            .http
            .request(
                Method::GET,
                &queue_path(&req.queue, "/tasks"),
                Duration::ZERO,
            )
            .query(&query);
        let bytes = self.http.send(http_req, Target::Queue(&req.queue)).await?;
        let page: wire::PageIn<'_> = http::parse(&bytes)?;
        Ok(TaskPage {
            tasks: page
                .tasks
                .into_iter()
                .map(|t| t.into_task(None))
                .collect::<Result<_, _>>()?,
            next_cursor: page.next_cursor,
        })
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        let bytes = self
            .call(Method::GET, "/v1/queues", None, Target::Task)
            .await?;
        let answer: wire::QueuesIn = http::parse(&bytes)?;
        answer
            .queues
            .into_iter()
            .map(wire::QueueIn::into_stats)
            .collect()
    }

    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        validate_limit(limit)?;
        let http_req = self
            .http
            .request(Method::GET, &queue_path(queue, "/groups"), Duration::ZERO)
            .query(&[("limit", limit)]);
        let bytes = self.http.send(http_req, Target::Queue(queue)).await?;
        http::parse::<wire::GroupsIn>(&bytes)?.into_stats()
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        // Only the fields given: the server applies them to the settings in
        // force, and the store makes that atomic (docs/spec.md §4).
        let http_req = self
            .http
            .request(Method::PUT, &queue_path(queue, ""), Duration::ZERO)
            .json(&wire::SettingsBody::from(change));
        let bytes = self.http.send(http_req, Target::Queue(queue)).await?;
        Ok(http::parse::<wire::SettingsJson>(&bytes)?.into())
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        let bytes = self
            .call(
                Method::GET,
                &queue_path(queue, ""),
                None,
                Target::Queue(queue),
            )
            .await?;
        Ok(http::parse::<wire::SettingsJson>(&bytes)?.into())
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        let action = if paused { "/pause" } else { "/resume" };
        self.call(
            Method::POST,
            &queue_path(queue, action),
            None,
            Target::Queue(queue),
        )
        .await
        .map(drop)
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        let bytes = self
            .call(Method::GET, "/v1/time", None, Target::Task)
            .await?;
        http::parse::<wire::TimeIn>(&bytes)?.into_timestamp()
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.put_schedule_http(spec).await
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.list_schedules_http().await
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        self.delete_schedule_http(name).await
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.fire_schedule_http(name, tick).await
    }
}
