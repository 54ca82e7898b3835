//! [`Op::decode`]: a log record's body back into its op, for recovery and
//! for reading a checkpoint's tail of the log.

use std::sync::Arc;

use spool_core::{Kind, QueueName, TaskPatch, Timestamp};
use spool_wal::LogPos;

use crate::codec::{DecodeError, Reader};

use super::fields::{
    read_follow, read_name, read_new_entry, read_opt, read_opt_u64, read_results,
    read_task_payload, ts, NEW_ENTRY_MIN_LEN,
};
use super::settings::{read_schedule_spec, read_settings};
use super::{
    kind, Claimed, Failure, Moved, Next, Op, Settlement, Span, ERROR_NUMBERED, ERROR_UNNUMBERED,
};

impl Op {
    /// payloads are not copied (their bytes come back empty): `spans` gets
    /// where they lie in `body`.
    pub(crate) fn decode(kind: u8, body: &[u8], spans: &mut Vec<Span>) -> Result<Op, DecodeError> {
        let mut r = Reader::new(body);
        let op = match kind {
            kind::ENQUEUE => {
                let now = ts(&mut r, "now")?;
                let queue = read_name(&mut r, "queue", QueueName::new)?;
                let n = r.count("tasks", NEW_ENTRY_MIN_LEN)?;
                let mut tasks = Vec::with_capacity(n);
                for _ in 0..n {
                    tasks.push(read_new_entry(&mut r, spans)?);
                }
                Op::Enqueue { now, queue, tasks }
            }
            kind::CLAIM => {
                let now = ts(&mut r, "now")?;
                let owner: Arc<str> = Arc::from(r.str("owner")?);
                let n = r.count("claimed", 28)?;
                let mut tasks = Vec::with_capacity(n);
                for _ in 0..n {
                    tasks.push(Claimed {
                        id: r.u64("id")?,
                        attempt: r.u32("attempt")?,
                        token: r.u64("token")?,
                        expires_at: ts(&mut r, "expires_at")?,
                    });
                }
                Op::Claim { now, owner, tasks }
            }
            kind::SETTLE => {
                let now = ts(&mut r, "now")?;
                let n = r.count("settled", 14)?;
                let mut tasks = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = r.u64("id")?;
                    let attempt = r.u32("attempt")?;
                    let at = r.position();
                    let next = match r.u8("next")? {
                        0 => Next::Waiting(ts(&mut r, "run_at")?),
                        1 => Next::Dead,
                        _ => return Err(DecodeError { what: "next", at }),
                    };
                    let at = r.position();
                    let error = match r.u8("error")? {
                        0 => None,
                        tag @ (ERROR_UNNUMBERED | ERROR_NUMBERED) => {
                            let attempt = r.u32("error attempt")?;
                            let number = match tag {
                                ERROR_NUMBERED => Some(r.u64("error number")?),
                                _ => None,
                            };
                            Some(Failure {
                                attempt,
                                number,
                                message: r.str("message")?.to_string(),
                            })
                        }
                        _ => return Err(DecodeError { what: "error", at }),
                    };
                    tasks.push(Settlement {
                        id,
                        attempt,
                        next,
                        error,
                    });
                }
                let follow = read_follow(&mut r)?;
                Op::Settle { now, tasks, follow }
            }
            kind::EXTEND => Op::Extend {
                now: ts(&mut r, "now")?,
                id: r.u64("id")?,
                expires_at: ts(&mut r, "expires_at")?,
            },
            kind::UPDATE => {
                let now = ts(&mut r, "now")?;
                let id = r.u64("id")?;
                let payload = read_opt(&mut r, "has payload", |r| read_task_payload(r, spans))?;
                let run_at = read_opt_u64(&mut r, "run_at")?.map(|v| Timestamp(v as i64));
                let priority = read_opt_u64(&mut r, "priority")?.map(|v| v as u16 as i16);
                Op::Update {
                    now,
                    id,
                    patch: TaskPatch {
                        payload,
                        run_at,
                        priority,
                    },
                }
            }
            kind::DELETE => {
                let now = ts(&mut r, "now")?;
                let n = r.count("ids", 8)?;
                let mut ids = Vec::with_capacity(n);
                for _ in 0..n {
                    ids.push(r.u64("id")?);
                }
                let follow = read_follow(&mut r)?;
                let results = if r.is_empty() {
                    Vec::new()
                } else {
                    read_results(&mut r)?
                };
                Op::Delete {
                    now,
                    ids,
                    follow,
                    results,
                }
            }
            kind::PUT_QUEUE => Op::PutQueue {
                queue: read_name(&mut r, "queue", QueueName::new)?,
                settings: read_settings(&mut r)?,
            },
            kind::PUT_SCHEDULE => Op::PutSchedule {
                now: ts(&mut r, "now")?,
                spec: read_schedule_spec(&mut r)?,
            },
            kind::DELETE_SCHEDULE => Op::DeleteSchedule {
                name: read_name(&mut r, "schedule", Kind::new)?,
            },
            kind::MOVE => {
                let n = r.count("moves", 29)?;
                let mut moves = Vec::with_capacity(n);
                for _ in 0..n {
                    let id = r.u64("id")?;
                    let from = LogPos {
                        seq: r.u64("from segment")?,
                        offset: r.u64("from offset")?,
                    };
                    let payload = read_task_payload(&mut r, spans)?;
                    moves.push(Moved { id, from, payload });
                }
                Op::Move { moves }
            }
            kind::FIRE => {
                let now = ts(&mut r, "now")?;
                let name = read_name(&mut r, "schedule", Kind::new)?;
                let tick = ts(&mut r, "tick")?;
                let queue = read_name(&mut r, "queue", QueueName::new)?;
                let task = read_opt(&mut r, "has task", |r| read_new_entry(r, spans))?;
                Op::Fire {
                    now,
                    name,
                    tick,
                    queue,
                    task,
                }
            }
            _ => {
                return Err(DecodeError {
                    what: "record kind",
                    at: 0,
                })
            }
        };
        if !r.is_empty() {
            return Err(DecodeError {
                what: "trailing bytes",
                at: r.position(),
            });
        }
        Ok(op)
    }
}
