//! [`Op::encode`]: an op into the body of its log record.

use crate::codec;

use super::fields::{
    put_follow, put_new_entry, put_opt_u64, put_results, put_task_payload, put_ts,
};
use super::settings::{put_schedule_spec, put_settings};
use super::{Next, Op, Span, ERROR_NUMBERED, ERROR_UNNUMBERED};

impl Op {
    /// Encodes the op's body; `spans` gets where each task payload went.
    pub(crate) fn encode(&self, buf: &mut Vec<u8>, spans: &mut Vec<Span>) {
        let base = buf.len();
        match self {
            Op::Enqueue { now, queue, tasks } => {
                put_ts(buf, *now);
                codec::put_str(buf, queue.as_str());
                codec::put_u32(buf, tasks.len() as u32);
                for t in tasks {
                    put_new_entry(buf, t, base, spans);
                }
            }
            Op::Claim { now, owner, tasks } => {
                put_ts(buf, *now);
                codec::put_str(buf, owner);
                codec::put_u32(buf, tasks.len() as u32);
                for t in tasks {
                    codec::put_u64(buf, t.id);
                    codec::put_u32(buf, t.attempt);
                    codec::put_u64(buf, t.token);
                    put_ts(buf, t.expires_at);
                }
            }
            Op::Settle { now, tasks, follow } => {
                put_ts(buf, *now);
                codec::put_u32(buf, tasks.len() as u32);
                for t in tasks {
                    codec::put_u64(buf, t.id);
                    codec::put_u32(buf, t.attempt);
                    match t.next {
                        Next::Waiting(at) => {
                            codec::put_u8(buf, 0);
                            put_ts(buf, at);
                        }
                        Next::Dead => codec::put_u8(buf, 1),
                    }
                    match &t.error {
                        Some(f) => {
                            match f.number {
                                Some(n) => {
                                    codec::put_u8(buf, ERROR_NUMBERED);
                                    codec::put_u32(buf, f.attempt);
                                    codec::put_u64(buf, n);
                                }
                                None => {
                                    codec::put_u8(buf, ERROR_UNNUMBERED);
                                    codec::put_u32(buf, f.attempt);
                                }
                            }
                            codec::put_str(buf, &f.message);
                        }
                        None => codec::put_u8(buf, 0),
                    }
                }
                put_follow(buf, follow);
            }
            Op::Extend {
                now,
                id,
                expires_at,
            } => {
                put_ts(buf, *now);
                codec::put_u64(buf, *id);
                put_ts(buf, *expires_at);
            }
            Op::Update { now, id, patch } => {
                put_ts(buf, *now);
                codec::put_u64(buf, *id);
                match &patch.payload {
                    Some(p) => {
                        codec::put_u8(buf, 1);
                        put_task_payload(buf, p, base, spans);
                    }
                    None => codec::put_u8(buf, 0),
                }
                put_opt_u64(buf, patch.run_at.map(|t| t.as_millis() as u64));
                put_opt_u64(buf, patch.priority.map(|p| p as u16 as u64));
            }
            Op::Delete {
                now,
                ids,
                follow,
                results,
            } => {
                put_ts(buf, *now);
                codec::put_u32(buf, ids.len() as u32);
                for id in ids {
                    codec::put_u64(buf, *id);
                }
                put_follow(buf, follow);
                if !follow.is_empty() && !results.is_empty() {
                    put_results(buf, results.iter().map(|(id, r)| (*id, r)));
                }
            }
            Op::PutQueue { queue, settings } => {
                codec::put_str(buf, queue.as_str());
                put_settings(buf, settings);
            }
            Op::PutSchedule { now, spec } => {
                put_ts(buf, *now);
                put_schedule_spec(buf, spec);
            }
            Op::DeleteSchedule { name } => codec::put_str(buf, name.as_str()),
            Op::Move { moves } => {
                codec::put_u32(buf, moves.len() as u32);
                for m in moves {
                    codec::put_u64(buf, m.id);
                    codec::put_u64(buf, m.from.seq);
                    codec::put_u64(buf, m.from.offset);
                    put_task_payload(buf, &m.payload, base, spans);
                }
            }
            Op::Fire {
                now,
                name,
                tick,
                queue,
                task,
            } => {
                put_ts(buf, *now);
                codec::put_str(buf, name.as_str());
                put_ts(buf, *tick);
                codec::put_str(buf, queue.as_str());
                match task {
                    Some(t) => {
                        codec::put_u8(buf, 1);
                        put_new_entry(buf, t, base, spans);
                    }
                    None => codec::put_u8(buf, 0),
                }
            }
        }
    }
}
