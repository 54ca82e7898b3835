//! `POST /v1/queues/{queue}/tasks`: enqueue one task or an atomic batch.
//!
//! The body is one task object or `{"tasks": [...]}` (at most 10,000). The
//! answer is 201 when at least one task was created, 200 when every item was
//! a duplicate; per-item results come in request order.
//!
//! A task's trace context is its `traceparent` field; a single task without
//! one takes the request's `traceparent` header, so a producer whose HTTP
//! client propagates W3C trace context passes it on without a word. A batch
//! takes only the fields: its tasks may come from many traces.
//!
//! A task names the tasks it waits for (docs/spec.md §3.2) by id in
//! `after`, and by position in this request's batch in `after_batch`; both
//! become its `NewTask::after`, the ids first.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use spool_core::task::RunAt;
use spool_core::{
    Kind, NewTask, Parent, ParentFailure, Payload, QueueName, StoreError, TaskGroup, TaskId,
    TaskKey,
};
use utoipa::openapi::schema::{OneOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiPath, JsonBody};
use crate::metrics::{queue_label, ENQUEUED};
use crate::state::AppState;
use crate::wire::{self, PayloadIn};

/// One task to create. `payload` and `payload_base64` are exclusive, as are
/// `run_at` and `delay_ms`. Without a payload the task carries JSON `null`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EnqueueItem<'a> {
    /// Handler name; defaults to the queue's name.
    #[schema(value_type = Option<String>)]
    kind: Option<Kind>,
    /// Any JSON value, kept exactly.
    #[serde(default, borrow, deserialize_with = "wire::present_raw")]
    #[schema(value_type = Option<Value>)]
    payload: Option<&'a RawValue>,
    /// Bytes, standard base64 with padding.
    payload_base64: Option<String>,
    /// Lower runs first; default 0.
    #[schema(minimum = -32768, maximum = 32767)]
    priority: Option<i16>,
    /// Not claimable before this time (RFC 3339).
    #[schema(format = DateTime)]
    run_at: Option<String>,
    /// Not claimable before this many ms from now.
    delay_ms: Option<u64>,
    /// Idempotency key, unique per queue.
    #[schema(value_type = Option<String>)]
    key: Option<TaskKey>,
    /// Defaults to the queue's `max_attempts`.
    #[schema(minimum = 1)]
    max_attempts: Option<u32>,
    /// The task's own lease (time-to-run).
    #[schema(minimum = 1)]
    lease_ms: Option<u64>,
    /// The producer's W3C trace context, which every run of the task joins;
    /// ids not all zeros. A single task without it takes the request's
    /// `traceparent` header.
    #[schema(pattern = "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")]
    traceparent: Option<String>,
    /// The task's group in its queue (a customer, an API host): 1-128
    /// bytes of UTF-8, not `.` or `..`. Claims take from a queue's groups
    /// in turn, and its `group_concurrency` bounds each group's leases.
    #[schema(min_length = 1, max_length = 128)]
    group: Option<String>,
    /// Ids of tasks, in any queue, this one waits for: it is `pending`
    /// until each has ended (completed, dead or cancelled). At most 10,000
    /// with `after_batch`; an id never assigned is refused.
    #[schema(max_items = 10000)]
    after: Option<Vec<u64>>,
    /// Positions in this request's `tasks` of tasks this one waits for,
    /// each before its own: a workflow created in one atomic enqueue.
    #[schema(max_items = 10000)]
    after_batch: Option<Vec<u32>>,
    /// What a parent ending dead or cancelled does: `cancel` (the default)
    /// cancels this task too; `run` counts it in `parents_failed` and runs
    /// the task once every parent has ended.
    if_parent_fails: Option<ParentFailure>,
}

/// `{"tasks": [...]}`: an atomic batch of at most 10,000 tasks.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EnqueueBatch<'a> {
    #[serde(borrow, deserialize_with = "wire::at_most_max_batch")]
    tasks: Vec<EnqueueItem<'a>>,
}

/// Finds out which of the two shapes a body is, without parsing it twice
/// over: only the presence of `tasks` is looked at.
#[derive(Deserialize)]
#[serde(rename = "EnqueueRequest")]
struct Shape<'a> {
    #[serde(borrow)]
    tasks: Option<&'a RawValue>,
}

/// The request body: one task or a batch (documentation only; parsing is
/// done by [`parse`] so payloads stay raw).
pub(super) struct EnqueueRequest;

impl PartialSchema for EnqueueRequest {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(Ref::from_schema_name("EnqueueItem"))
            .item(Ref::from_schema_name("EnqueueBatch"))
            .into()
    }
}

impl ToSchema for EnqueueRequest {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push(("EnqueueItem".into(), EnqueueItem::schema()));
        schemas.push(("EnqueueBatch".into(), EnqueueBatch::schema()));
        EnqueueItem::schemas(schemas);
    }
}

/// The outcome of one item.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct EnqueuedJson {
    pub id: u64,
    /// True when the key matched a live or recently completed task: nothing
    /// was created and `id` is that task's.
    pub duplicate: bool,
}

/// Per-item outcomes, in request order.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct EnqueueResponse {
    pub tasks: Vec<EnqueuedJson>,
}

/// Reads either shape into new tasks, checking every field; a single
/// task without a `traceparent` takes the `traceparent` header's.
fn parse(body: &JsonBody, headers: &HeaderMap) -> Result<Vec<NewTask>, ApiError> {
    let shape: Shape<'_> = body.parse()?;
    let items = match shape.tasks {
        Some(_) => body.parse::<EnqueueBatch<'_>>()?.tasks,
        None => {
            let mut item = body.parse::<EnqueueItem<'_>>()?;
            if item.traceparent.is_none() {
                item.traceparent = traceparent_header(headers)?;
            }
            vec![item]
        }
    };
    if shape.tasks.is_none()
        && items
            .iter()
            .any(|i| i.after_batch.as_ref().is_some_and(|p| !p.is_empty()))
    {
        return Err(ApiError::bad_request(
            "after_batch names tasks of the same {\"tasks\": [...]} batch; \
             a single task has none before it: name its parents in after",
        ));
    }
    Ok(tasks_of(items)?)
}

/// Why [`batch_tasks`] refused a body.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    /// Not JSON of the batch body's shape (a field unknown, a type wrong).
    #[error(transparent)]
    Shape(#[from] serde_json::Error),
    /// A task of it cannot be enqueued as given (named by its position when
    /// the batch has several), or a position is not before its task's own.
    #[error(transparent)]
    Task(#[from] StoreError),
}

/// The tasks of a batch body, `{"tasks": [...]}`, read exactly as this
/// endpoint reads one: for clients that take such a body from elsewhere
/// (`spool enqueue --batch FILE`) and must take what the API takes.
pub fn batch_tasks(json: &[u8]) -> Result<Vec<NewTask>, BatchError> {
    let batch: EnqueueBatch<'_> = serde_json::from_slice(json)?;
    Ok(tasks_of(batch.tasks)?)
}

/// Every item's task, or the first item's error, named by its place when
/// there are several: a batch is refused whole.
fn tasks_of(items: Vec<EnqueueItem<'_>>) -> Result<Vec<NewTask>, StoreError> {
    let many = items.len() > 1;
    let tasks = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            new_task(item).map_err(|e| match e {
                StoreError::BadRequest(m) if many => {
                    StoreError::BadRequest(format!("tasks[{i}]: {m}"))
                }
                other => other,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Every store checks this too; checked here as well so that no
    // position past the batch reaches one.
    spool_core::deps::validate_in_batch(&tasks)?;
    Ok(tasks)
}

fn new_task(item: EnqueueItem<'_>) -> Result<NewTask, StoreError> {
    let payload = wire::payload_in(PayloadIn {
        json: item.payload,
        base64: item.payload_base64,
    })?
    .unwrap_or_else(|| Payload::json(&b"null"[..]));
    let run_at = match (item.run_at, item.delay_ms) {
        (Some(_), Some(_)) => {
            return Err(StoreError::bad_request(
                "run_at and delay_ms are exclusive: give one",
            ))
        }
        (Some(at), None) => RunAt::At(wire::timestamp("run_at", &at)?),
        (None, Some(ms)) => RunAt::After(wire::duration_ms("delay_ms", ms)?),
        (None, None) => RunAt::Now,
    };
    let task = NewTask {
        kind: item.kind,
        payload,
        priority: item.priority.unwrap_or(0),
        run_at,
        key: item.key,
        max_attempts: item.max_attempts,
        lease_ms: item.lease_ms,
        traceparent: item.traceparent,
        group: item.group.map(TaskGroup::new).transpose()?,
        after: parents(item.after, item.after_batch),
        if_parent_fails: item.if_parent_fails.unwrap_or_default(),
    };
    task.validate()?;
    if let Some(ms) = task.lease_ms {
        wire::duration_ms("lease_ms", ms)?;
    }
    Ok(task)
}

/// The parents named by id, then those named by position in the batch.
fn parents(ids: Option<Vec<u64>>, positions: Option<Vec<u32>>) -> Vec<Parent> {
    let ids = ids.into_iter().flatten().map(|id| Parent::Task(TaskId(id)));
    let positions = positions.into_iter().flatten().map(Parent::InBatch);
    ids.chain(positions).collect()
}

/// The request's `traceparent` header, if it has one; one that is not
/// text is refused like a malformed one.
fn traceparent_header(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    headers
        .get("traceparent")
        .map(|v| {
            v.to_str()
                .map(str::to_string)
                .map_err(|_| ApiError::bad_request("the traceparent header must be visible ASCII"))
        })
        .transpose()
}

/// Enqueue one task or a batch.
#[utoipa::path(
    post,
    path = "/v1/queues/{queue}/tasks",
    tag = "tasks",
    params(
        ("queue" = String, Path, description = "Queue name"),
        ("traceparent" = Option<String>, Header,
            description = "W3C trace context for a single task whose body has no \
                           `traceparent`; ignored for a batch",
            pattern = "^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"),
    ),
    request_body(content = EnqueueRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "At least one task was created", body = EnqueueResponse),
        (status = 200, description = "Every item was a duplicate", body = EnqueueResponse),
        (status = 413, description = "A payload exceeds the queue's max_payload", body = ErrorBody),
    )
)]
pub(super) async fn enqueue(
    State(st): State<AppState>,
    ApiPath(queue): ApiPath<QueueName>,
    headers: HeaderMap,
    body: JsonBody,
) -> Result<(StatusCode, Json<EnqueueResponse>), ApiError> {
    let tasks = parse(&body, &headers)?;
    if tasks.is_empty() {
        return Ok((StatusCode::OK, Json(EnqueueResponse { tasks: Vec::new() })));
    }
    let outcomes = st.call(st.store().enqueue(&queue, tasks)).await?;
    let created = outcomes.iter().filter(|o| !o.duplicate).count();
    if created > 0 {
        metrics::counter!(ENQUEUED, "queue" => queue_label(queue.as_str(), true))
            .increment(created as u64);
        st.monitor().count_enqueued(created as u64);
    }
    let status = if created > 0 {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let tasks = outcomes
        .into_iter()
        .map(|o| EnqueuedJson {
            id: o.id.0,
            duplicate: o.duplicate,
        })
        .collect();
    Ok((status, Json(EnqueueResponse { tasks })))
}
