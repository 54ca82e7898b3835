//! Model-based test of the engine: random sequences of operations and clock
//! advances, with restarts (reopen from disk) and checkpoints at random
//! points, against a small reference model of docs/spec.md §3. Every reply is
//! compared, and after every restart the whole state is.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use spool_core::{
    ClaimRequest, FailRequest, LeaseToken, ListRequest, ManualClock, NewTask, Payload, QueueName,
    QueueSettings, Store, StoreError, TaskId, TaskKey, TaskRef, TaskState, Timestamp,
};
use spool_engine::{Engine, EngineConfig};

const MAX_ATTEMPTS: u32 = 3;
const DEDUP_MS: i64 = 2_000;
const BACKOFF_MS: i64 = 100;

#[derive(Debug, Clone)]
enum Action {
    Enqueue {
        queue: u8,
        count: u8,
        priority: i8,
        delay_ms: Option<u16>,
        key: Option<u8>,
    },
    Claim {
        queue: u8,
        max: u8,
        lease_ms: u16,
    },
    Ack {
        pick: u8,
        reschedule_ms: Option<u16>,
    },
    Fail {
        pick: u8,
        retry_ms: Option<u16>,
        discard: bool,
    },
    Release {
        pick: u8,
    },
    Extend {
        pick: u8,
        lease_ms: u16,
    },
    StaleToken {
        pick: u8,
    },
    Cancel {
        pick: u8,
    },
    RetryDead {
        queue: u8,
    },
    Advance {
        ms: u16,
    },
    Restart,
    Checkpoint,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (0..2u8, 1..5u8, -2..3i8, prop::option::of(0..1500u16), prop::option::of(0..6u8))
            .prop_map(|(queue, count, priority, delay_ms, key)| Action::Enqueue { queue, count, priority, delay_ms, key }),
        4 => (0..2u8, 1..4u8, 50..1500u16).prop_map(|(queue, max, lease_ms)| Action::Claim { queue, max, lease_ms }),
        2 => (any::<u8>(), prop::option::weighted(0.2, 0..1000u16)).prop_map(|(pick, reschedule_ms)| Action::Ack { pick, reschedule_ms }),
        2 => (any::<u8>(), prop::option::of(0..800u16), prop::bool::weighted(0.2))
            .prop_map(|(pick, retry_ms, discard)| Action::Fail { pick, retry_ms, discard }),
        1 => any::<u8>().prop_map(|pick| Action::Release { pick }),
        1 => (any::<u8>(), 50..1500u16).prop_map(|(pick, lease_ms)| Action::Extend { pick, lease_ms }),
        1 => any::<u8>().prop_map(|pick| Action::StaleToken { pick }),
        1 => any::<u8>().prop_map(|pick| Action::Cancel { pick }),
        1 => (0..2u8).prop_map(|queue| Action::RetryDead { queue }),
        3 => (1..1200u16).prop_map(|ms| Action::Advance { ms }),
        1 => Just(Action::Restart),
        1 => Just(Action::Checkpoint),
    ]
}

#[derive(Debug, Clone, PartialEq)]
enum MState {
    Waiting,
    Leased { token: LeaseToken, expires: i64 },
    Dead,
}

#[derive(Debug, Clone)]
struct MTask {
    queue: u8,
    priority: i16,
    run_at: i64,
    attempt: u32,
    state: MState,
    key: Option<String>,
    errors: usize,
}

/// The reference: docs/spec.md §3 written as plainly as possible.
#[derive(Debug, Default)]
struct Model {
    now: i64,
    next_id: u64,
    tasks: BTreeMap<u64, MTask>,
    /// (queue, key) → (id, expiry; i64::MAX while the task lives).
    keys: HashMap<(u8, String), (u64, i64)>,
    old_tokens: Vec<(u64, LeaseToken)>,
}

impl Model {
    fn state_of(&self, t: &MTask) -> TaskState {
        match t.state {
            MState::Waiting if t.run_at <= self.now => TaskState::Ready,
            MState::Waiting => TaskState::Scheduled,
            MState::Leased { .. } => TaskState::Leased,
            MState::Dead => TaskState::Dead,
        }
    }

    fn tick(&mut self) {
        let now = self.now;
        for t in self.tasks.values_mut() {
            if let MState::Leased { expires, .. } = t.state {
                if expires <= now {
                    t.errors = (t.errors + 1).min(5);
                    if t.attempt >= MAX_ATTEMPTS {
                        t.state = MState::Dead;
                    } else {
                        t.state = MState::Waiting;
                        t.run_at = expires;
                    }
                }
            }
        }
    }

    fn ready(&self, queue: u8) -> Vec<u64> {
        let mut r: Vec<(i16, i64, u64)> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.queue == queue && self.state_of(t) == TaskState::Ready)
            .map(|(&id, t)| (t.priority, t.run_at, id))
            .collect();
        r.sort();
        r.into_iter().map(|x| x.2).collect()
    }

    fn leased(&self) -> Vec<u64> {
        self.tasks
            .iter()
            .filter(|(_, t)| matches!(t.state, MState::Leased { .. }))
            .map(|(&id, _)| id)
            .collect()
    }

    fn delete(&mut self, id: u64) {
        if let Some(t) = self.tasks.remove(&id) {
            if let Some(k) = t.key {
                self.keys.insert((t.queue, k), (id, self.now + DEDUP_MS));
            }
        }
    }

    fn token(&self, id: u64) -> LeaseToken {
        match self.tasks[&id].state {
            MState::Leased { token, .. } => token,
            _ => unreachable!("picked from leased tasks"),
        }
    }
}

fn queue(i: u8) -> QueueName {
    QueueName::new(format!("q{i}")).unwrap()
}

fn pick<T: Copy>(v: &[T], p: u8) -> Option<T> {
    (!v.is_empty()).then(|| v[p as usize % v.len()])
}

struct Harness {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    engine: Option<Engine>,
}

impl Harness {
    fn open(&mut self) {
        let mut cfg = EngineConfig::new(self.dir.path());
        cfg.clock = self.clock.clone();
        cfg.segment_size = 256 * 1024;
        self.engine = Some(Engine::open(cfg).expect("reopen"));
    }

    fn e(&self) -> &Engine {
        self.engine.as_ref().unwrap()
    }
}

async fn compare_all(h: &Harness, m: &Model) {
    let mut seen = BTreeMap::new();
    for q in 0..2u8 {
        let mut req = ListRequest::new(queue(q));
        req.limit = 7;
        loop {
            let page = h.e().list(req.clone()).await.unwrap();
            for t in page.tasks {
                assert!(seen.insert(t.id.0, t).is_none(), "listed twice");
            }
            match page.next_cursor {
                Some(c) => req.cursor = Some(c),
                None => break,
            }
        }
    }
    let ids: Vec<u64> = m.tasks.keys().copied().collect();
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        ids,
        "task ids differ"
    );
    for (id, mt) in &m.tasks {
        let t = &seen[id];
        assert_eq!(
            t.state,
            m.state_of(mt),
            "state of {id}: {t:?} {mt:?} model now {}",
            m.now
        );
        assert_eq!(t.attempt, mt.attempt, "attempt of {id}");
        assert_eq!(t.priority, mt.priority, "priority of {id}");
        assert_eq!(t.errors.len(), mt.errors, "errors of {id}");
        assert_eq!(t.queue, queue(mt.queue));
        if let MState::Waiting = mt.state {
            assert_eq!(t.run_at, Timestamp(mt.run_at), "run_at of {id}");
        }
        if let MState::Leased { token, expires } = mt.state {
            let lease = t.lease.as_ref().expect("leased task has a lease");
            assert_eq!(lease.token, token);
            assert_eq!(lease.expires_at, Timestamp(expires));
        }
    }
    let stats = h.e().stats().await.unwrap();
    for s in stats {
        let q: u8 = s.name.as_str()[1..].parse().unwrap();
        for st in TaskState::ALL {
            let n = m
                .tasks
                .values()
                .filter(|t| t.queue == q && m.state_of(t) == st)
                .count() as u64;
            assert_eq!(s.counts.get(st), n, "{st} count in {}", s.name);
        }
    }
}

async fn run(actions: Vec<Action>) {
    let mut h = Harness {
        dir: tempfile::tempdir().unwrap(),
        clock: Arc::new(ManualClock::new(Timestamp(1_700_000_000_000))),
        engine: None,
    };
    h.open();
    let mut m = Model {
        now: h.clock.now().as_millis(),
        next_id: 1,
        ..Model::default()
    };
    let settings = QueueSettings {
        max_attempts: MAX_ATTEMPTS,
        dedup_window: Duration::from_millis(DEDUP_MS as u64),
        backoff_base: Duration::from_millis(BACKOFF_MS as u64),
        backoff_max: Duration::from_millis(10 * BACKOFF_MS as u64),
        ..QueueSettings::default()
    };
    for q in 0..2 {
        h.e()
            .put_queue(&queue(q), settings.clone().into())
            .await
            .unwrap();
    }
    for a in actions {
        apply(&mut h, &mut m, a).await;
    }
    compare_all(&h, &m).await;
}

use spool_core::Clock;

async fn apply(h: &mut Harness, m: &mut Model, a: Action) {
    match a {
        Action::Enqueue {
            queue: q,
            count,
            priority,
            delay_ms,
            key,
        } => {
            let tasks: Vec<NewTask> = (0..count)
                .map(|i| {
                    let mut t = NewTask::new(Payload::binary(vec![i; 3])).priority(priority as i16);
                    if let Some(d) = delay_ms {
                        t = t.delay(Duration::from_millis(d as u64));
                    }
                    if let Some(k) = key {
                        t = t.key(TaskKey::new(format!("k{}", k + i % 2)).unwrap());
                    }
                    t
                })
                .collect();
            let got = h.e().enqueue(&queue(q), tasks.clone()).await.unwrap();
            for (t, out) in tasks.iter().zip(got) {
                let k = t.key.as_ref().map(|k| (q, k.as_str().to_string()));
                let existing = k
                    .as_ref()
                    .and_then(|k| m.keys.get(k))
                    .filter(|(_, exp)| *exp > m.now)
                    .map(|(id, _)| *id);
                match existing {
                    Some(id) => {
                        assert!(out.duplicate, "expected a duplicate of {id}");
                        assert_eq!(out.id, TaskId(id));
                    }
                    None => {
                        assert!(!out.duplicate);
                        assert_eq!(out.id, TaskId(m.next_id));
                        let id = m.next_id;
                        m.next_id += 1;
                        if let Some(k) = k {
                            m.keys.insert(k, (id, i64::MAX));
                        }
                        m.tasks.insert(
                            id,
                            MTask {
                                queue: q,
                                priority: priority as i16,
                                run_at: m.now + delay_ms.map_or(0, i64::from),
                                attempt: 0,
                                state: MState::Waiting,
                                key: t.key.as_ref().map(|k| k.as_str().to_string()),
                                errors: 0,
                            },
                        );
                    }
                }
            }
        }
        Action::Claim {
            queue: q,
            max,
            lease_ms,
        } => {
            let req = ClaimRequest::new(queue(q), "w")
                .max(max as u32)
                .lease(Duration::from_millis(lease_ms as u64));
            let got = h.e().claim(req).await.unwrap();
            let expect: Vec<u64> = m.ready(q).into_iter().take(max as usize).collect();
            assert_eq!(
                got.iter().map(|t| t.id.0).collect::<Vec<_>>(),
                expect,
                "claim order"
            );
            for t in got {
                let token = t.lease.as_ref().unwrap().token;
                let mt = m.tasks.get_mut(&t.id.0).unwrap();
                mt.attempt += 1;
                assert_eq!(t.attempt, mt.attempt);
                mt.state = MState::Leased {
                    token,
                    expires: m.now + lease_ms as i64,
                };
                m.old_tokens.push((t.id.0, token));
            }
        }
        Action::Ack {
            pick: p,
            reschedule_ms,
        } => {
            let Some(id) = pick(&m.leased(), p) else {
                return;
            };
            let at = reschedule_ms.map(|ms| Timestamp(m.now + ms as i64));
            h.e().ack(TaskId(id), m.token(id), at).await.unwrap();
            match at {
                Some(at) => {
                    let t = m.tasks.get_mut(&id).unwrap();
                    t.state = MState::Waiting;
                    t.attempt = 0;
                    t.run_at = at.as_millis();
                }
                None => m.delete(id),
            }
        }
        Action::Fail {
            pick: p,
            retry_ms,
            discard,
        } => {
            let Some(id) = pick(&m.leased(), p) else {
                return;
            };
            let req = FailRequest {
                message: "boom".into(),
                retry_at: retry_ms.map(|ms| Timestamp(m.now + ms as i64)),
                discard,
            };
            let got = h.e().fail(TaskId(id), m.token(id), req).await.unwrap();
            let now = m.now;
            let t = m.tasks.get_mut(&id).unwrap();
            t.errors = (t.errors + 1).min(5);
            if discard || t.attempt >= MAX_ATTEMPTS {
                t.state = MState::Dead;
                assert_eq!(got.state, TaskState::Dead);
            } else {
                t.state = MState::Waiting;
                t.run_at = match retry_ms {
                    Some(ms) => now + ms as i64,
                    None => {
                        let base = BACKOFF_MS << (t.attempt - 1);
                        let at = got.run_at.as_millis() - now;
                        assert!(
                            at >= base * 9 / 10 - 1 && at <= base * 11 / 10 + 1,
                            "backoff {at} for base {base}"
                        );
                        got.run_at.as_millis()
                    }
                };
            }
        }
        Action::Release { pick: p } => {
            let Some(id) = pick(&m.leased(), p) else {
                return;
            };
            h.e().release(TaskId(id), m.token(id)).await.unwrap();
            let now = m.now;
            let t = m.tasks.get_mut(&id).unwrap();
            t.attempt -= 1;
            t.state = MState::Waiting;
            t.run_at = now;
        }
        Action::Extend { pick: p, lease_ms } => {
            let Some(id) = pick(&m.leased(), p) else {
                return;
            };
            h.e()
                .extend(
                    TaskId(id),
                    m.token(id),
                    Duration::from_millis(lease_ms as u64),
                )
                .await
                .unwrap();
            let now = m.now;
            if let MState::Leased { expires, .. } = &mut m.tasks.get_mut(&id).unwrap().state {
                *expires = now + lease_ms as i64;
            }
        }
        Action::StaleToken { pick: p } => {
            let Some((id, token)) = pick(&m.old_tokens, p) else {
                return;
            };
            let current = m.tasks.get(&id).map(|t| t.state.clone());
            if matches!(current, Some(MState::Leased { token: t, .. }) if t == token) {
                return;
            }
            let err = h.e().ack(TaskId(id), token, None).await.unwrap_err();
            let expect = if current.is_some() {
                StoreError::LeaseLost
            } else {
                StoreError::NotFound
            };
            assert_eq!(err, expect);
        }
        Action::Cancel { pick: p } => {
            let ids: Vec<u64> = m.tasks.keys().copied().collect();
            let Some(id) = pick(&ids, p) else { return };
            h.e().cancel(TaskRef::Id(TaskId(id))).await.unwrap();
            m.delete(id);
            assert_eq!(
                h.e().get(TaskRef::Id(TaskId(id))).await.unwrap_err(),
                StoreError::NotFound
            );
        }
        Action::RetryDead { queue: q } => {
            let n = h.e().retry_dead(&queue(q)).await.unwrap();
            let now = m.now;
            let mut expect = 0;
            for t in m
                .tasks
                .values_mut()
                .filter(|t| t.queue == q && t.state == MState::Dead)
            {
                t.state = MState::Waiting;
                t.attempt = 0;
                t.run_at = now;
                expect += 1;
            }
            assert_eq!(n, expect);
        }
        Action::Advance { ms } => {
            h.clock.advance(Duration::from_millis(ms as u64));
            m.now = h.clock.now().as_millis();
            m.tick();
        }
        Action::Restart => {
            h.engine = None;
            h.open();
            compare_all(h, m).await;
        }
        Action::Checkpoint => {
            h.e().checkpoint().await.unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 200, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_the_model(actions in prop::collection::vec(action(), 1..60)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run(actions));
    }
}
