//! From a frame's arguments to a typed, validated [`Command`].
//!
//! Every check the HTTP API makes on the same input is made here too, with
//! the same messages where the rule is the same, so a command that reaches
//! the store is well formed (docs/spec.md §7.1: out-of-range values are refused,
//! never clamped). Times are Unix milliseconds, durations milliseconds.

use std::time::Duration;

use bytes::Bytes;
use spool_core::outcome::is_null;
use spool_core::store::{validate_batch, MAX_BATCH, MAX_CLAIM, MAX_WAIT, MAX_WORKER_ID};
use spool_core::store::{validate_lease_wait, MAX_LEASE_WAIT};
use spool_core::task::RunAt;
use spool_core::{
    Ack, Kind, NewTask, Parent, ParentFailure, QueueName, StoreError, TaskGroup, TaskId, TaskKey,
    TaskPatch, TaskRef, TaskResult, Timestamp,
};

use super::args::{payload, payload_as, Args};
use super::manage::{self, Manage};
use crate::wire;

/// A command a connection can run.
#[derive(Debug)]
pub(super) enum Command {
    Ping(Option<Bytes>),
    Echo(Bytes),
    /// `HELLO [protover [AUTH user pass] [SETNAME name]]`.
    Hello {
        proto: Option<u8>,
        auth: Option<Bytes>,
        name: Option<Bytes>,
    },
    Auth(Bytes),
    Quit,
    /// `CLIENT SETNAME name`: names the connection (the default worker).
    SetName(Bytes),
    /// Accepted and ignored: `CLIENT SETINFO`, `SELECT 0`.
    Ignored,
    /// Answered with an empty array: `COMMAND ...`, `CONFIG GET ...`.
    Empty,
    /// `INFO [section ...]`: what a client's ready check reads.
    Info,
    Enqueue(QueueName, NewTask),
    EnqueueMany(QueueName, Vec<NewTask>),
    Claim(ClaimArgs),
    Ack {
        id: TaskId,
        token: Bytes,
        ack: Ack,
    },
    AckMany(Vec<(TaskId, Bytes)>),
    /// `LEASEWAIT wait_ms id token [id token ...]`: the lost leases.
    LeaseWait {
        wait: Duration,
        leases: Vec<(TaskId, Bytes)>,
    },
    Fail {
        id: TaskId,
        token: Bytes,
        message: String,
        retry_at: Option<Timestamp>,
        discard: bool,
        /// `FULL`: answer the whole task instead of its state.
        full: bool,
    },
    Extend {
        id: TaskId,
        token: Bytes,
        lease: Duration,
        /// `FULL`: answer the whole task instead of the new expiry.
        full: bool,
    },
    Release {
        id: TaskId,
        token: Bytes,
    },
    Snooze {
        id: TaskId,
        token: Bytes,
        run_at: Timestamp,
    },
    Get(TaskRef),
    Cancel(TaskRef),
    Update(TaskRef, TaskPatch),
    Retry(TaskId),
    RetryDead(QueueName),
    Queues,
    Pause(QueueName, bool),
    /// Listing, queue settings, the clock and schedules.
    Manage(Manage),
}

/// `CLAIM`'s options; the worker defaults to the connection's name.
#[derive(Debug)]
pub(super) struct ClaimArgs {
    pub queue: QueueName,
    pub max: u32,
    pub wait: Duration,
    pub lease: Option<Duration>,
    pub worker: Option<String>,
    /// `FULL`: each task with every field, as `GET` shows it, plus its token.
    pub full: bool,
}

impl Command {
    /// Commands a connection may send before `AUTH` when a token is set.
    pub(super) fn is_open(&self) -> bool {
        matches!(
            self,
            Command::Ping(_) | Command::Hello { .. } | Command::Auth(_) | Command::Quit
        )
    }
}

type Parsed = Result<Command, StoreError>;

/// Parses `args` (the command name first; never empty).
pub(super) fn parse(args: &[Bytes]) -> Parsed {
    let (name, rest) = args
        .split_first()
        .ok_or_else(|| StoreError::bad_request("empty command"))?;
    let name = std::str::from_utf8(name)
        .unwrap_or("?")
        .to_ascii_uppercase();
    let mut a = Args::new(&name, rest);
    let cmd = match name.as_str() {
        "PING" => Command::Ping(a.optional()),
        "ECHO" => Command::Echo(a.bytes()?),
        "HELLO" => hello(&mut a)?,
        "AUTH" => {
            // `AUTH token` or `AUTH user token`: the user name is not checked.
            let first = a.bytes()?;
            Command::Auth(a.optional().unwrap_or(first))
        }
        "QUIT" => Command::Quit,
        "CLIENT" => client(&mut a)?,
        "SELECT" => {
            if a.bytes()?.as_ref() != b"0" {
                return Err(StoreError::bad_request("Spool has one database: SELECT 0"));
            }
            Command::Ignored
        }
        "COMMAND" | "CONFIG" => {
            a.skip_rest();
            Command::Empty
        }
        "INFO" => {
            a.skip_rest();
            Command::Info
        }
        "ENQUEUE" => enqueue(&mut a)?,
        "ENQUEUEBATCH" => enqueue_batch(&mut a)?,
        "ENQUEUEMANY" => {
            let queue = a.queue()?;
            let mut tasks = Vec::new();
            while let Some(p) = a.optional() {
                tasks.push(NewTask::new(payload(p)));
            }
            validate_batch(&tasks)?;
            Command::EnqueueMany(queue, tasks)
        }
        "CLAIM" => claim(&mut a)?,
        "ACK" => {
            let (id, token) = (a.id()?, a.bytes()?);
            let ack = match a.optional() {
                None => Ack::Done,
                Some(opt) if opt.eq_ignore_ascii_case(b"RESCHEDULE") => {
                    Ack::Reschedule(a.unix_ms("RESCHEDULE")?)
                }
                Some(opt) if opt.eq_ignore_ascii_case(b"RESULT") => {
                    // `null` is no result, as `"result": null` is over HTTP.
                    match a.string("RESULT")? {
                        json if is_null(&json) => Ack::Done,
                        json => Ack::Result(TaskResult::from_json(&json)?),
                    }
                }
                Some(opt) => return Err(a.unknown_option(&opt)),
            };
            Command::Ack { id, token, ack }
        }
        "ACKMANY" => {
            let mut acks = Vec::new();
            while a.more() {
                acks.push((a.id()?, a.bytes()?));
            }
            if acks.is_empty() || acks.len() > MAX_BATCH {
                return Err(StoreError::bad_request(format!(
                    "ACKMANY takes 1 to {MAX_BATCH} id token pairs"
                )));
            }
            Command::AckMany(acks)
        }
        "LEASEWAIT" => lease_wait(&mut a)?,
        "FAIL" => fail(&mut a)?,
        "EXTEND" => {
            let (id, token) = (a.id()?, a.bytes()?);
            let lease = wire::non_zero_ms("lease_ms", a.number("ms")?)?;
            let full = a.flag("FULL")?;
            Command::Extend {
                id,
                token,
                lease,
                full,
            }
        }
        "RELEASE" => Command::Release {
            id: a.id()?,
            token: a.bytes()?,
        },
        "SNOOZE" => Command::Snooze {
            id: a.id()?,
            token: a.bytes()?,
            run_at: a.unix_ms("run_at")?,
        },
        "GET" => Command::Get(a.task_ref()?),
        "CANCEL" => Command::Cancel(a.task_ref()?),
        "UPDATE" => update(&mut a)?,
        "RETRY" => Command::Retry(a.id()?),
        "RETRYDEAD" => Command::RetryDead(a.queue()?),
        "QUEUES" => Command::Queues,
        "PAUSE" => Command::Pause(a.queue()?, true),
        "RESUME" => Command::Pause(a.queue()?, false),
        "LIST" | "QUEUE" | "GROUPS" | "TIME" | "SCHEDULE" => {
            Command::Manage(manage::parse(&name, &mut a)?)
        }
        _ => {
            return Err(StoreError::bad_request(format!(
                "unknown command '{}'",
                name.chars().take(64).collect::<String>()
            )))
        }
    };
    a.finish()?;
    Ok(cmd)
}

fn hello(a: &mut Args<'_>) -> Parsed {
    let proto = match a.optional() {
        None => None,
        Some(v) => match v.as_ref() {
            b"2" => Some(2),
            b"3" => Some(3),
            _ => {
                return Err(StoreError::bad_request(
                    "NOPROTO unsupported protocol version: Spool speaks 2 and 3",
                ))
            }
        },
    };
    let (mut auth, mut name) = (None, None);
    while let Some(opt) = a.optional() {
        if opt.eq_ignore_ascii_case(b"AUTH") {
            a.bytes()?;
            auth = Some(a.bytes()?);
        } else if opt.eq_ignore_ascii_case(b"SETNAME") {
            name = Some(a.bytes()?);
        } else {
            return Err(a.unknown_option(&opt));
        }
    }
    Ok(Command::Hello { proto, auth, name })
}

fn client(a: &mut Args<'_>) -> Parsed {
    let sub = a.bytes()?;
    if sub.eq_ignore_ascii_case(b"SETNAME") {
        return Ok(Command::SetName(a.bytes()?));
    }
    if sub.eq_ignore_ascii_case(b"SETINFO") {
        a.bytes()?;
        a.bytes()?;
        return Ok(Command::Ignored);
    }
    Err(StoreError::bad_request(
        "CLIENT takes SETNAME or SETINFO here",
    ))
}

fn enqueue(a: &mut Args<'_>) -> Parsed {
    let queue = a.queue()?;
    let task = task(a, false)?;
    Ok(Command::Enqueue(queue, task))
}

/// `ENQUEUEBATCH queue TASK payload [options] [TASK payload [options] ...]`:
/// `ENQUEUE`'s options per task, created all or none.
fn enqueue_batch(a: &mut Args<'_>) -> Parsed {
    let queue = a.queue()?;
    let mut tasks = Vec::new();
    while let Some(word) = a.optional() {
        a.expect_option(&word, "TASK")?;
        // Stops parsing at once rather than building a list to refuse.
        if tasks.len() == MAX_BATCH {
            return Err(StoreError::bad_request(format!(
                "ENQUEUEBATCH takes 1 to {MAX_BATCH} tasks"
            )));
        }
        tasks.push(task(a, true)?);
    }
    validate_batch(&tasks)?;
    Ok(Command::EnqueueMany(queue, tasks))
}

/// A payload and `ENQUEUE`'s options. In a batch, the word `TASK` in an
/// option's place ends this task.
fn task(a: &mut Args<'_>, in_batch: bool) -> Result<NewTask, StoreError> {
    let raw = a.bytes()?;
    let mut task = NewTask::default();
    let (mut delay, mut at, mut binary) = (None, None, false);
    while let Some(opt) = a.optional() {
        let upper = opt.to_ascii_uppercase();
        match upper.as_slice() {
            b"TASK" if in_batch => {
                a.put_back();
                break;
            }
            b"KEY" => task.key = Some(TaskKey::new(a.string("KEY")?)?),
            b"DELAY" => delay = Some(wire::duration_ms("delay_ms", a.number("DELAY")?)?),
            b"AT" => at = Some(a.unix_ms("AT")?),
            b"PRIORITY" => task.priority = a.priority()?,
            b"MAXATTEMPTS" => {
                let n = u32::try_from(a.number("MAXATTEMPTS")?)
                    .map_err(|_| StoreError::bad_request("max_attempts is too large"))?;
                task.max_attempts = Some(n);
            }
            b"KIND" => task.kind = Some(Kind::new(a.string("KIND")?)?),
            b"LEASE" => {
                let ms = a.number("LEASE")?;
                wire::duration_ms("lease_ms", ms)?;
                task.lease_ms = Some(ms);
            }
            b"BINARY" => binary = true,
            b"TRACEPARENT" => task.traceparent = Some(a.string("TRACEPARENT")?),
            b"GROUP" => task.group = Some(TaskGroup::new(a.string("GROUP")?)?),
            b"AFTER" => task.after.push(Parent::Task(a.id()?)),
            // Pipelined ENQUEUEs may be run as one store batch: a position
            // would then name another command's task, so only a batch the
            // caller wrote out takes positions.
            b"AFTERBATCH" if in_batch => {
                let at = u32::try_from(a.number("AFTERBATCH")?)
                    .map_err(|_| StoreError::bad_request("AFTERBATCH is past the batch"))?;
                task.after.push(Parent::InBatch(at));
            }
            b"AFTERBATCH" => {
                return Err(StoreError::bad_request(
                    "AFTERBATCH names a task of the same ENQUEUEBATCH; ENQUEUE takes AFTER id",
                ))
            }
            b"IFPARENTFAILS" => {
                task.if_parent_fails = a
                    .string("IFPARENTFAILS")?
                    .to_ascii_lowercase()
                    .parse::<ParentFailure>()
                    .map_err(StoreError::bad_request)?
            }
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    task.payload = payload_as(raw, binary);
    task.run_at = match (delay, at) {
        (Some(_), Some(_)) => {
            return Err(StoreError::bad_request(
                "DELAY and AT are exclusive: give one",
            ))
        }
        (Some(d), None) => RunAt::After(d),
        (None, Some(t)) => RunAt::At(t),
        (None, None) => RunAt::Now,
    };
    task.validate()?;
    Ok(task)
}

/// `UPDATE id|KEY queue key [PAYLOAD p [BINARY]] [RUNAT unix_ms] [PRIORITY p]`.
fn update(a: &mut Args<'_>) -> Parsed {
    let target = a.task_ref()?;
    let mut patch = TaskPatch::default();
    let (mut raw, mut binary) = (None, false);
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"PAYLOAD" => raw = Some(a.bytes()?),
            b"BINARY" => binary = true,
            b"RUNAT" => patch.run_at = Some(a.unix_ms("RUNAT")?),
            b"PRIORITY" => patch.priority = Some(a.priority()?),
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    patch.payload = match raw {
        Some(raw) => Some(payload_as(raw, binary)),
        None if binary => return Err(StoreError::bad_request("BINARY needs PAYLOAD")),
        None => None,
    };
    Ok(Command::Update(target, patch))
}

fn claim(a: &mut Args<'_>) -> Parsed {
    let mut c = ClaimArgs {
        queue: a.queue()?,
        max: 1,
        wait: Duration::ZERO,
        lease: None,
        worker: None,
        full: false,
    };
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"MAX" => {
                c.max = u32::try_from(a.number("MAX")?)
                    .ok()
                    .filter(|m| (1..=MAX_CLAIM).contains(m))
                    .ok_or_else(|| {
                        StoreError::bad_request(format!("max must be between 1 and {MAX_CLAIM}"))
                    })?
            }
            b"WAIT" => {
                c.wait = Duration::from_millis(a.number("WAIT")?);
                if c.wait > MAX_WAIT {
                    return Err(StoreError::bad_request(format!(
                        "wait_ms must be between 0 and {}",
                        MAX_WAIT.as_millis()
                    )));
                }
            }
            b"LEASE" => c.lease = Some(wire::non_zero_ms("lease_ms", a.number("LEASE")?)?),
            b"WORKER" => {
                let w = a.string("WORKER")?;
                if w.is_empty() || w.len() > MAX_WORKER_ID {
                    return Err(StoreError::bad_request(format!(
                        "worker must be 1 to {MAX_WORKER_ID} bytes"
                    )));
                }
                c.worker = Some(w);
            }
            b"FULL" => c.full = true,
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    Ok(Command::Claim(c))
}

/// `LEASEWAIT wait_ms id token [id token ...]`: the checks of
/// `POST /v1/leases/wait`.
fn lease_wait(a: &mut Args<'_>) -> Parsed {
    let wait = Duration::from_millis(a.number("wait_ms")?);
    let mut leases = Vec::new();
    while a.more() {
        // Stops parsing at once rather than building a list to refuse.
        if leases.len() == MAX_LEASE_WAIT {
            break;
        }
        leases.push((a.id()?, a.bytes()?));
    }
    validate_lease_wait(leases.len() + usize::from(a.more()), wait)?;
    Ok(Command::LeaseWait { wait, leases })
}

fn fail(a: &mut Args<'_>) -> Parsed {
    let (id, token) = (a.id()?, a.bytes()?);
    let message = a.string("message")?;
    let (mut retry_at, mut discard, mut full) = (None, false, false);
    while let Some(opt) = a.optional() {
        match opt.to_ascii_uppercase().as_slice() {
            b"RETRYAT" => retry_at = Some(a.unix_ms("RETRYAT")?),
            b"DISCARD" => discard = true,
            b"FULL" => full = true,
            _ => return Err(a.unknown_option(&opt)),
        }
    }
    if discard && retry_at.is_some() {
        return Err(StoreError::bad_request(
            "RETRYAT and DISCARD are exclusive: give one",
        ));
    }
    Ok(Command::Fail {
        id,
        token,
        message,
        retry_at,
        discard,
        full,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use spool_core::Payload;

    fn cmd(words: &[&str]) -> Parsed {
        let args: Vec<Bytes> = words
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        parse(&args)
    }

    #[test]
    fn enqueue_options() {
        let Ok(Command::Enqueue(q, t)) = cmd(&[
            "enqueue",
            "mail",
            "{}",
            "KEY",
            "k1",
            "delay",
            "500",
            "PRIORITY",
            "-3",
            "MAXATTEMPTS",
            "2",
            "KIND",
            "send",
            "LEASE",
            "100",
            "group",
            "customer 42",
        ]) else {
            panic!("not an enqueue")
        };
        assert_eq!(t.group.unwrap().as_str(), "customer 42");
        assert_eq!(q.as_str(), "mail");
        assert_eq!(t.payload, Payload::json(&b"{}"[..]));
        assert_eq!(t.key.unwrap().as_str(), "k1");
        assert_eq!(t.run_at, RunAt::After(Duration::from_millis(500)));
        assert_eq!(
            (t.priority, t.max_attempts, t.lease_ms),
            (-3, Some(2), Some(100))
        );
    }

    #[test]
    fn a_batch_gives_each_task_its_own_options() {
        let Ok(Command::EnqueueMany(_, tasks)) = cmd(&[
            "ENQUEUEBATCH",
            "q",
            "TASK",
            "{}",
            "BINARY",
            "KEY",
            "TASK",
            "TASK",
            "TASK",
            "PRIORITY",
            "2",
        ]) else {
            panic!("not a batch")
        };
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].payload, Payload::binary(&b"{}"[..]));
        assert_eq!(tasks[0].key.as_ref().unwrap().as_str(), "TASK");
        assert_eq!(tasks[1].payload, Payload::binary(&b"TASK"[..]));
        assert_eq!(tasks[1].priority, 2);
    }

    #[test]
    fn tasks_name_parents_by_id_or_by_position_in_the_batch() {
        let Ok(Command::EnqueueMany(_, tasks)) = cmd(&[
            "ENQUEUEBATCH",
            "q",
            "TASK",
            "a",
            "AFTER",
            "7",
            "TASK",
            "b",
            "afterbatch",
            "0",
            "AFTER",
            "3",
            "IFPARENTFAILS",
            "RUN",
        ]) else {
            panic!("not a batch")
        };
        assert_eq!(tasks[0].after, [Parent::Task(TaskId(7))]);
        assert_eq!(tasks[0].if_parent_fails, ParentFailure::Cancel);
        assert_eq!(
            tasks[1].after,
            [Parent::InBatch(0), Parent::Task(TaskId(3))]
        );
        assert_eq!(tasks[1].if_parent_fails, ParentFailure::Run);
    }

    #[test]
    fn tasks_are_addressed_by_id_or_by_key() {
        let Ok(Command::Get(TaskRef::Key(q, k))) = cmd(&["GET", "KEY", "mail", "k1"]) else {
            panic!("not a get by key")
        };
        assert_eq!((q.as_str(), k.as_str()), ("mail", "k1"));
        assert!(matches!(
            cmd(&["CANCEL", "7"]),
            Ok(Command::Cancel(TaskRef::Id(TaskId(7))))
        ));
    }

    #[test]
    fn bad_arguments_are_refused_with_bad_request() {
        for words in [
            &["ENQUEUE", "q"][..],
            &["ENQUEUE", "q", "x", "DELAY", "1", "AT", "1"],
            &["ENQUEUE", "q", "x", "PRIORITY", "40000"],
            &["ENQUEUE", "q", "x", "MAXATTEMPTS", "0"],
            &["ENQUEUE", "q", "x", "COLOR", "red"],
            &["ENQUEUE", "q", "x", "GROUP", ""],
            &["ENQUEUE", "q", "x", "GROUP", ".."],
            &["ENQUEUE", "q", "x", "AFTER", "one"],
            &["ENQUEUE", "q", "x", "AFTER"],
            &["ENQUEUE", "q", "x", "AFTERBATCH", "0"],
            &["ENQUEUE", "q", "x", "IFPARENTFAILS", "maybe"],
            &["ENQUEUEBATCH", "q", "TASK", "x", "AFTERBATCH", "0"],
            &["ENQUEUEBATCH", "q", "TASK", "x", "AFTERBATCH", "4294967296"],
            &[
                "ENQUEUEBATCH",
                "q",
                "TASK",
                "x",
                "TASK",
                "y",
                "AFTERBATCH",
                "1",
            ],
            &["GROUPS", "q", "LIMIT", "0"],
            &["GROUPS", "q", "LIMIT", "1001"],
            &["QUEUE", "SET", "q", "GROUPCONCURRENCY", "many"],
            &["ENQUEUE", "bad name!", "x"],
            &["CLAIM", "q", "MAX", "0"],
            &["CLAIM", "q", "WAIT", "30001"],
            &["ACK", "-1", "t"],
            &["ACK", "1", "t", "extra"],
            &["ACKMANY", "1"],
            &["LEASEWAIT", "0"],
            &["LEASEWAIT", "30001", "1", "t"],
            &["LEASEWAIT", "0", "1"],
            &["FAIL", "1", "t", "m", "RETRYAT", "1", "DISCARD"],
            &["EXTEND", "1", "t", "0"],
            &["SELECT", "1"],
            &["ENQUEUEBATCH", "q"],
            &["ENQUEUEBATCH", "q", "x"],
            &["ENQUEUEBATCH", "q", "TASK", "x", "COLOR", "red"],
            &["GET", "KEY", "q"],
            &["UPDATE", "1", "BINARY"],
            &["LIST", "q", "ORDER", "random"],
            &["QUEUE", "SET", "q", "PAUSED", "yes"],
            &[
                "SCHEDULE",
                "SET",
                "s",
                "q",
                "{}",
                "EVERY",
                "1000",
                "CRON",
                "* * * * *",
            ],
            &["NOPE"],
        ] {
            let e = cmd(words).unwrap_err();
            assert_eq!(e.code(), "bad_request", "{words:?}");
        }
    }

    #[test]
    fn payloads_that_are_json_stay_json() {
        assert_eq!(
            payload(Bytes::from_static(b" [1, 2] ")).format,
            spool_core::PayloadFormat::Json
        );
        for not_json in [&b""[..], b"hello", b"{", b"\xff"] {
            let p = payload(Bytes::copy_from_slice(not_json));
            assert_eq!(p.format, spool_core::PayloadFormat::Binary);
        }
    }
}
