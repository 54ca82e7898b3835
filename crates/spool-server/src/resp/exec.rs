//! Running the commands a connection has read, in order, against the store.
//!
//! A round is every complete command the connection had buffered (a
//! pipeline, or one command). Answers are written in command order. Runs of
//! consecutive `ENQUEUE`s to one queue become one store batch, and runs of
//! consecutive `ACK`s one `ack_many`, so the commands of a pipeline share a
//! group commit; the answers are the ones each command would have had alone:
//! a batch the store refuses as a whole for one item's fault (a payload over
//! the queue's limit) is retried item by item, which is safe because a
//! refused batch changed nothing.

use bytes::{Bytes, BytesMut};
use spool_core::store::MAX_BATCH;
use spool_core::{
    Ack, ClaimRequest, EnqueueOutcome, FailRequest, NewTask, QueueName, StoreError, TaskId, TaskRef,
};

use super::command::{self, ClaimArgs, Command};
use super::reply::{Proto, Reply};
use super::{manage, shape};
use crate::api::{lease_wait, token};
use crate::auth;
use crate::error::ApiError;
use crate::metrics::{CLAIMED, COMPLETED, ENQUEUED};
use crate::state::AppState;

/// What a connection remembers between commands.
#[derive(Debug)]
pub(super) struct Session {
    pub proto: Proto,
    pub authed: bool,
    /// The default worker name of `CLAIM`: `CLIENT SETNAME`, else the peer.
    pub worker: String,
    pub id: u64,
    /// Set by `QUIT`: answer, then close.
    pub quit: bool,
}

/// Runs `frames` in order and writes their answers to `out`. Stops after
/// `QUIT`.
pub(super) async fn round(
    st: &AppState,
    s: &mut Session,
    frames: Vec<Vec<Bytes>>,
    out: &mut BytesMut,
) {
    let parsed: Vec<_> = frames.iter().map(|args| command::parse(args)).collect();
    let mut cmds = parsed.into_iter().peekable();
    while let Some(parsed) = cmds.next() {
        let cmd = match parsed {
            Ok(cmd) => cmd,
            Err(e) => {
                Reply::from(ApiError::Store(e)).encode(s.proto, out);
                continue;
            }
        };
        if !s.authed && !cmd.is_open() {
            unauthorized().encode(s.proto, out);
            continue;
        }
        // Only `AUTH` and `HELLO` change `authed`, so the commands batched
        // with this one are as authorised as it is.
        match cmd {
            Command::Enqueue(queue, task) if next_enqueues_to(cmds.peek(), &queue) => {
                let mut tasks = vec![task];
                while tasks.len() < MAX_BATCH && next_enqueues_to(cmds.peek(), &queue) {
                    if let Some(Ok(Command::Enqueue(_, t))) = cmds.next() {
                        tasks.push(t);
                    }
                }
                for r in enqueue_each(st, &queue, tasks, s.proto).await {
                    r.encode(s.proto, out);
                }
            }
            Command::Ack {
                id,
                token,
                ack: Ack::Done,
            } if next_is_plain_ack(cmds.peek()) => {
                let mut items = vec![(id, token)];
                while items.len() < MAX_BATCH && next_is_plain_ack(cmds.peek()) {
                    if let Some(Ok(Command::Ack { id, token, .. })) = cmds.next() {
                        items.push((id, token));
                    }
                }
                let n = items.len();
                match ack_items(st, items).await {
                    Ok(results) => results.iter().for_each(|r| r.encode(s.proto, out)),
                    Err(e) => vec![Reply::from(e); n]
                        .iter()
                        .for_each(|r| r.encode(s.proto, out)),
                }
            }
            cmd => {
                let reply = one(st, s, cmd).await.unwrap_or_else(Reply::from);
                reply.encode(s.proto, out);
                if s.quit {
                    return;
                }
            }
        }
    }
}

fn next_enqueues_to(next: Option<&Result<Command, StoreError>>, queue: &QueueName) -> bool {
    matches!(next, Some(Ok(Command::Enqueue(q, _))) if q == queue)
}

fn next_is_plain_ack(next: Option<&Result<Command, StoreError>>) -> bool {
    matches!(next, Some(Ok(Command::Ack { ack: Ack::Done, .. })))
}

/// One answer per task, as if each had been enqueued on its own.
async fn enqueue_each(
    st: &AppState,
    queue: &QueueName,
    tasks: Vec<NewTask>,
    proto: Proto,
) -> Vec<Reply> {
    let n = tasks.len();
    let retry = (n > 1).then(|| tasks.clone());
    match (enqueue(st, queue, tasks).await, retry) {
        (Ok(outcomes), _) => outcomes
            .into_iter()
            .map(|o| shape::enqueued(o, proto))
            .collect(),
        (
            Err(ApiError::Store(StoreError::PayloadTooLarge { .. } | StoreError::BadRequest(_))),
            Some(retry),
        ) => {
            let mut each = Vec::with_capacity(n);
            for task in retry {
                each.extend(Box::pin(enqueue_each(st, queue, vec![task], proto)).await);
            }
            each
        }
        // The same failure for every command (logged once, by `Reply::from`).
        (Err(e), _) => vec![Reply::from(e); n],
    }
}

async fn enqueue(
    st: &AppState,
    queue: &QueueName,
    tasks: Vec<NewTask>,
) -> Result<Vec<EnqueueOutcome>, ApiError> {
    let n = tasks.len();
    let outcomes = st.call(st.store().enqueue(queue, tasks)).await?;
    if outcomes.len() != n {
        return Err(ApiError::Store(StoreError::Internal(format!(
            "enqueue answered {} outcomes for {n} tasks",
            outcomes.len()
        ))));
    }
    let created = outcomes.iter().filter(|o| !o.duplicate).count() as u64;
    if created > 0 {
        metrics::counter!(ENQUEUED, "queue" => queue.to_string()).increment(created);
        st.monitor().count_enqueued(created);
    }
    Ok(outcomes)
}

/// Acks `items`, each on its own merits, in one store call.
async fn ack_items(st: &AppState, items: Vec<(TaskId, Bytes)>) -> Result<Vec<Reply>, ApiError> {
    let n = items.len();
    let mut replies: Vec<Option<Reply>> = vec![None; n];
    let mut to_store = Vec::with_capacity(n);
    let mut positions = Vec::with_capacity(n);
    for (i, (id, raw)) in items.into_iter().enumerate() {
        match std::str::from_utf8(&raw).ok().and_then(token::parse) {
            Some(t) => {
                to_store.push((id, t));
                positions.push(i);
            }
            // A token the store never issues: answered as a single ACK is.
            None => replies[i] = Some(Reply::from(wrong_token(st, id).await)),
        }
    }
    if !to_store.is_empty() {
        let outcomes = st.call(st.store().ack_many(to_store)).await?;
        if outcomes.len() != positions.len() {
            let e = StoreError::Internal(format!(
                "ack_many answered {} results for {} items",
                outcomes.len(),
                positions.len()
            ));
            return Err(ApiError::Store(e));
        }
        let done = outcomes.iter().filter(|o| o.is_ok()).count() as u64;
        metrics::counter!(COMPLETED).increment(done);
        st.monitor().count_completed(done);
        for (i, outcome) in positions.into_iter().zip(outcomes) {
            replies[i] = Some(match outcome {
                Ok(()) => Reply::OK,
                Err(e) => Reply::from(ApiError::Store(e)),
            });
        }
    }
    Ok(replies
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Reply::error("internal", "no answer")))
        .collect())
}

/// What a token that cannot be the task's gets: `lease_lost`, or
/// `not_found` when there is no such task.
async fn wrong_token(st: &AppState, id: TaskId) -> ApiError {
    match st.call(st.store().get(TaskRef::Id(id))).await {
        Ok(_) => ApiError::Store(StoreError::LeaseLost),
        Err(e) => e,
    }
}

async fn lease_token(
    st: &AppState,
    id: TaskId,
    raw: &Bytes,
) -> Result<spool_core::LeaseToken, ApiError> {
    match std::str::from_utf8(raw) {
        Ok(t) => token::resolve(st, id, t).await,
        Err(_) => Err(wrong_token(st, id).await),
    }
}

/// Runs a command that does not batch.
async fn one(st: &AppState, s: &mut Session, cmd: Command) -> Result<Reply, ApiError> {
    Ok(match cmd {
        Command::Ping(None) => Reply::Simple("PONG"),
        Command::Ping(Some(msg)) | Command::Echo(msg) => Reply::Bulk(msg),
        Command::Hello { proto, auth, name } => {
            if let Some(given) = auth {
                if let Err(refused) = check_token(st, s, &given) {
                    return Ok(refused);
                }
            } else if !s.authed {
                return Ok(unauthorized());
            }
            if let Some(name) = name {
                s.worker = String::from_utf8_lossy(&name).into_owned();
            }
            if proto == Some(3) {
                s.proto = Proto::Resp3;
            } else if proto == Some(2) {
                s.proto = Proto::Resp2;
            }
            hello(s)
        }
        Command::Auth(given) => match check_token(st, s, &given) {
            Ok(()) => Reply::OK,
            Err(refused) => refused,
        },
        Command::Quit => {
            s.quit = true;
            Reply::OK
        }
        Command::SetName(name) => {
            s.worker = String::from_utf8_lossy(&name).into_owned();
            Reply::OK
        }
        Command::Ignored => Reply::OK,
        Command::Empty => Reply::Array(Vec::new()),
        Command::Info => info(),
        Command::Enqueue(queue, task) => {
            let mut outcomes = enqueue(st, &queue, vec![task]).await?;
            outcomes
                .pop()
                .map_or(Reply::Null, |o| shape::enqueued(o, s.proto))
        }
        Command::EnqueueMany(queue, tasks) => {
            let outcomes = enqueue(st, &queue, tasks).await?;
            Reply::Array(
                outcomes
                    .into_iter()
                    .map(|o| shape::enqueued(o, s.proto))
                    .collect(),
            )
        }
        Command::Claim(args) => claim(st, s, args).await?,
        Command::Ack { id, token, ack } => {
            let token = lease_token(st, id, &token).await?;
            st.call(st.store().ack(id, token, ack)).await?;
            metrics::counter!(COMPLETED).increment(1);
            st.monitor().count_completed(1);
            Reply::OK
        }
        Command::AckMany(items) => Reply::Array(ack_items(st, items).await?),
        Command::LeaseWait { wait, leases } => {
            let leases = leases
                .into_iter()
                .map(|(id, raw)| (id, std::str::from_utf8(&raw).ok().and_then(token::parse)))
                .collect();
            let lost = lease_wait::lost_leases(st, leases, wait).await?;
            Reply::Array(lost.into_iter().map(|id| Reply::Int(id.0 as i64)).collect())
        }
        Command::Fail {
            id,
            token,
            message,
            retry_at,
            discard,
            full,
        } => {
            let token = lease_token(st, id, &token).await?;
            let req = FailRequest {
                message,
                retry_at,
                discard,
            };
            let task = st.call(st.store().fail(id, token, req)).await?;
            if full {
                shape::task(&task, false)
            } else {
                Reply::Simple(task.state.as_str())
            }
        }
        Command::Extend {
            id,
            token,
            lease,
            full,
        } => {
            let token = lease_token(st, id, &token).await?;
            let task = st.call(st.store().extend(id, token, lease)).await?;
            if full {
                shape::task(&task, false)
            } else {
                Reply::Int(task.lease.map_or(0, |l| l.expires_at.0))
            }
        }
        Command::Release { id, token } => {
            let token = lease_token(st, id, &token).await?;
            st.call(st.store().release(id, token)).await?;
            Reply::OK
        }
        Command::Snooze { id, token, run_at } => {
            let token = lease_token(st, id, &token).await?;
            shape::task(&st.call(st.store().snooze(id, token, run_at)).await?, false)
        }
        Command::Get(target) => shape::task(&st.call(st.store().get(target)).await?, false),
        Command::Cancel(target) => {
            st.call(st.store().cancel(target)).await?;
            Reply::OK
        }
        Command::Update(target, patch) => {
            shape::task(&st.call(st.store().update(target, patch)).await?, false)
        }
        Command::Retry(id) => shape::task(&st.call(st.store().retry(id)).await?, false),
        Command::RetryDead(queue) => shape::count(st.call(st.store().retry_dead(&queue)).await?),
        Command::Queues => Reply::Array(
            st.call(st.store().stats())
                .await?
                .iter()
                .map(shape::queue_stats)
                .collect(),
        ),
        Command::Pause(queue, paused) => {
            st.call(st.store().set_paused(&queue, paused)).await?;
            Reply::OK
        }
        Command::Manage(m) => manage::run(st, s.proto, m).await?,
    })
}

/// `AUTH` and `HELLO ... AUTH`: the server's token, compared in constant
/// time. Without a token there is nothing to authenticate against.
fn check_token(st: &AppState, s: &mut Session, given: &[u8]) -> Result<(), Reply> {
    let Some(expected) = st.config().token.as_deref() else {
        return Err(Reply::bad_request(
            "AUTH: this server has no token configured",
        ));
    };
    if auth::same(given, expected.as_bytes()) {
        s.authed = true;
        Ok(())
    } else {
        Err(Reply::error("unauthorized", "invalid token"))
    }
}

/// What a command that needs a token gets before `AUTH`.
pub(super) fn unauthorized() -> Reply {
    Reply::error(
        "unauthorized",
        "authentication required: send AUTH <token> (or HELLO 3 AUTH default <token>)",
    )
}

fn hello(s: &Session) -> Reply {
    Reply::Map(vec![
        ("server", Reply::text("spool")),
        ("version", Reply::text(env!("CARGO_PKG_VERSION"))),
        (
            "proto",
            Reply::Int(if s.proto == Proto::Resp3 { 3 } else { 2 }),
        ),
        ("id", Reply::Int(s.id as i64)),
        ("mode", Reply::text("standalone")),
        ("role", Reply::text("master")),
        ("modules", Reply::Array(Vec::new())),
    ])
}

/// The sections every section list is answered with. Clients read
/// `loading` before their first command (ioredis waits while it is not 0)
/// and some gate features on `redis_version`: Spool answers as the Redis 7
/// whose protocol it speaks.
fn info() -> Reply {
    Reply::Bulk(Bytes::from(concat!(
        "# Server\r\n",
        "redis_version:7.0.0\r\n",
        "spool_version:",
        env!("CARGO_PKG_VERSION"),
        "\r\n",
        "redis_mode:standalone\r\n",
        "\r\n",
        "# Persistence\r\n",
        "loading:0\r\n",
        "\r\n",
        "# Replication\r\n",
        "role:master\r\n",
    )))
}

async fn claim(st: &AppState, s: &Session, a: ClaimArgs) -> Result<Reply, ApiError> {
    let mut req = ClaimRequest::new(a.queue, a.worker.unwrap_or_else(|| s.worker.clone()))
        .max(a.max)
        .wait(a.wait);
    if let Some(lease) = a.lease {
        req = req.lease(lease);
    }
    req.validate()?;
    let queue = req.queue.to_string();
    let tasks = st.call_with(a.wait, st.store().claim(req)).await?;
    if !tasks.is_empty() {
        metrics::counter!(CLAIMED, "queue" => queue).increment(tasks.len() as u64);
    }
    if a.full {
        return Ok(Reply::Array(
            tasks.iter().map(|t| shape::task(t, true)).collect(),
        ));
    }
    Ok(Reply::Array(
        tasks
            .iter()
            .map(|t| {
                let mut fields = vec![
                    ("id", Reply::Int(t.id.0 as i64)),
                    (
                        "token",
                        Reply::text(
                            t.lease
                                .as_ref()
                                .map_or(String::new(), |l| l.token.to_string()),
                        ),
                    ),
                    ("attempt", Reply::Int(i64::from(t.attempt))),
                    ("kind", Reply::text(t.kind.to_string())),
                    ("payload", Reply::Bulk(t.payload.bytes.clone())),
                    ("run_at", Reply::Int(t.run_at.0)),
                ];
                // Only when there is one: most tasks carry none, and this
                // short form is what a busy worker reads.
                if let Some(tp) = &t.traceparent {
                    fields.push(("traceparent", Reply::text(tp.clone())));
                }
                if let Some(g) = &t.group {
                    fields.push(("group", Reply::text(g.to_string())));
                }
                Reply::Map(fields)
            })
            .collect(),
    ))
}
