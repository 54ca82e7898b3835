//! Model-based test of the engine: random sequences of operations and clock
//! advances, with restarts (reopen from disk) and checkpoints at random
//! points, against the reference model of docs/spec.md §3 that the
//! conformance suite is checked against (`spool_testkit::model`), on the
//! same clock. Every reply is compared, and after every restart the whole
//! state is.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use spool_core::{
    Ack, ClaimRequest, Clock, FailRequest, LeaseToken, ListRequest, ManualClock, NewTask, Parent,
    ParentFailure, Payload, QueueName, QueueSettings, Store, StoreError, Task, TaskGroup, TaskId,
    TaskKey, TaskRef, TaskResult, TaskState, Timestamp,
};
use spool_engine::{Engine, EngineConfig};
use spool_testkit::model::Model;

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
        group: Option<u8>,
        /// Each task waits for an earlier task (picked among every id so
        /// far, gone ones included), and for the one before it in the batch
        /// when `chain`; `run` makes failed parents count instead of cancel.
        after: Option<u8>,
        chain: bool,
        run: bool,
    },
    Claim {
        queue: u8,
        max: u8,
        lease_ms: u16,
    },
    Ack {
        pick: u8,
        reschedule_ms: Option<u16>,
        /// Acks with `{"n": result}` (when not rescheduled).
        result: Option<u16>,
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
        4 => (
            (0..2u8, 1..5u8, -2..3i8, prop::option::of(0..1500u16), prop::option::of(0..6u8), prop::option::of(0..3u8)),
            (prop::option::weighted(0.3, any::<u8>()), prop::bool::weighted(0.2), any::<bool>()),
        )
            .prop_map(|((queue, count, priority, delay_ms, key, group), (after, chain, run))| Action::Enqueue {
                queue, count, priority, delay_ms, key, group, after, chain, run,
            }),
        4 => (0..2u8, 1..4u8, 50..1500u16).prop_map(|(queue, max, lease_ms)| Action::Claim { queue, max, lease_ms }),
        2 => (any::<u8>(), prop::option::weighted(0.2, 0..1000u16), prop::option::weighted(0.5, any::<u16>()))
            .prop_map(|(pick, reschedule_ms, result)| Action::Ack { pick, reschedule_ms, result }),
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

fn queue(i: u8) -> QueueName {
    QueueName::new(format!("q{i}")).unwrap()
}

fn pick<T: Copy>(v: &[T], p: u8) -> Option<T> {
    (!v.is_empty()).then(|| v[p as usize % v.len()])
}

/// The engine, and the model it must match.
struct Harness {
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    engine: Option<Engine>,
    model: Model,
    /// Each store issues its own lease tokens: the engine's token for each
    /// of the model's.
    tokens: HashMap<LeaseToken, LeaseToken>,
    /// Every lease handed out, for stale tokens: (task, engine's token,
    /// model's token).
    old_tokens: Vec<(u64, LeaseToken, LeaseToken)>,
    /// The highest id assigned so far.
    last_id: u64,
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

    /// The model's tasks of both queues in `state` (every state: None), by
    /// id.
    async fn model_tasks(&self, state: Option<TaskState>) -> BTreeMap<u64, Task> {
        let mut all = BTreeMap::new();
        for q in 0..2u8 {
            let mut req = ListRequest::new(queue(q));
            req.state = state;
            req.limit = 1000;
            loop {
                let page = self.model.list(req.clone()).await.unwrap();
                all.extend(page.tasks.into_iter().map(|t| (t.id.0, t)));
                match page.next_cursor {
                    Some(c) => req.cursor = Some(c),
                    None => break,
                }
            }
        }
        all
    }

    /// The leased tasks, by id, with the engine's and the model's token.
    async fn leased(&self) -> Vec<(u64, LeaseToken, LeaseToken)> {
        self.model_tasks(Some(TaskState::Leased))
            .await
            .into_values()
            .map(|t| {
                let mine = t.lease.as_ref().expect("leased task has a lease").token;
                (t.id.0, self.tokens[&mine], mine)
            })
            .collect()
    }

    /// The engine's task `got` is the model's `want`, but for what each
    /// store decides on its own: lease tokens (mapped), `updated_at` and
    /// when each error was recorded.
    fn assert_same(&self, got: &Task, want: &Task) {
        let id = want.id;
        assert_eq!(got.id, want.id);
        assert_eq!(got.queue, want.queue, "queue of {id}");
        assert_eq!(got.kind, want.kind, "kind of {id}");
        assert_eq!(got.state, want.state, "state of {id}: {got:?} {want:?}");
        assert_eq!(got.attempt, want.attempt, "attempt of {id}");
        assert_eq!(got.priority, want.priority, "priority of {id}");
        assert_eq!(got.run_at, want.run_at, "run_at of {id}");
        assert_eq!(got.key, want.key, "key of {id}");
        assert_eq!(got.payload, want.payload, "payload of {id}");
        assert_eq!(got.max_attempts, want.max_attempts, "max_attempts of {id}");
        assert_eq!(got.lease_ms, want.lease_ms, "lease_ms of {id}");
        assert_eq!(got.created_at, want.created_at, "created_at of {id}");
        assert_eq!(got.group, want.group, "group of {id}");
        assert_eq!(got.deps, want.deps, "dependencies of {id}");
        let errors = |t: &Task| -> Vec<(u32, String)> {
            t.errors
                .iter()
                .map(|e| (e.attempt, e.message.clone()))
                .collect()
        };
        assert_eq!(errors(got), errors(want), "errors of {id}");
        match (&got.lease, &want.lease) {
            (None, None) => {}
            (Some(g), Some(w)) => {
                assert_eq!(g.token, self.tokens[&w.token], "lease token of {id}");
                assert_eq!(g.expires_at, w.expires_at, "lease expiry of {id}");
                assert_eq!(g.owner, w.owner, "lease owner of {id}");
            }
            (g, w) => panic!("lease of {id}: {g:?}, the model's {w:?}"),
        }
    }
}

async fn compare_all(h: &Harness) {
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
    let model = h.model_tasks(None).await;
    assert_eq!(
        seen.keys().copied().collect::<Vec<_>>(),
        model.keys().copied().collect::<Vec<_>>(),
        "task ids differ"
    );
    for (id, want) in &model {
        h.assert_same(&seen[id], want);
    }
    let counts = |stats: Vec<spool_core::QueueStats>| {
        stats
            .into_iter()
            .map(|s| {
                let per_state: Vec<u64> =
                    TaskState::ALL.iter().map(|&st| s.counts.get(st)).collect();
                (s.name, per_state)
            })
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(
        counts(h.e().stats().await.unwrap()),
        counts(h.model.stats().await.unwrap()),
        "counts per state"
    );
    for q in 0..2u8 {
        assert_eq!(
            h.e().groups(&queue(q), 10).await.unwrap(),
            h.model.groups(&queue(q), 10).await.unwrap(),
            "groups of q{q}"
        );
    }
}

async fn run(actions: Vec<Action>) {
    let clock = Arc::new(ManualClock::new(Timestamp(1_700_000_000_000)));
    let mut h = Harness {
        dir: tempfile::tempdir().unwrap(),
        clock: clock.clone(),
        engine: None,
        model: Model::new(clock),
        tokens: HashMap::new(),
        old_tokens: Vec::new(),
        last_id: 0,
    };
    h.open();
    let settings = QueueSettings {
        max_attempts: MAX_ATTEMPTS,
        dedup_window: Duration::from_millis(DEDUP_MS as u64),
        backoff_base: Duration::from_millis(BACKOFF_MS as u64),
        backoff_max: Duration::from_millis(10 * BACKOFF_MS as u64),
        ..QueueSettings::default()
    };
    for q in 0..2 {
        // q1 caps each group at two leased tasks; q0 only takes turns.
        let settings = QueueSettings {
            group_concurrency: (q == 1).then_some(2),
            ..settings.clone()
        };
        h.e()
            .put_queue(&queue(q), settings.clone().into())
            .await
            .unwrap();
        h.model
            .put_queue(&queue(q), settings.clone().into())
            .await
            .unwrap();
    }
    for a in actions {
        apply(&mut h, a).await;
    }
    compare_all(&h).await;
}

async fn apply(h: &mut Harness, a: Action) {
    match a {
        Action::Enqueue {
            queue: q,
            count,
            priority,
            delay_ms,
            key,
            group,
            after,
            chain,
            run,
        } => {
            let last_id = h.last_id;
            let tasks: Vec<NewTask> = (0..count)
                .map(|i| {
                    let mut t = NewTask::new(Payload::binary(vec![i; 3])).priority(priority as i16);
                    if let Some(d) = delay_ms {
                        t = t.delay(Duration::from_millis(d as u64));
                    }
                    if let Some(k) = key {
                        t = t.key(TaskKey::new(format!("k{}", k + i % 2)).unwrap());
                    }
                    if let Some(g) = group {
                        t = t.group(TaskGroup::new(format!("g{}", (g + i) % 3)).unwrap());
                    }
                    if let (Some(p), true) = (after, last_id > 0) {
                        let parent = 1 + (u64::from(p) + u64::from(i)) % last_id;
                        t = t.after(Parent::Task(TaskId(parent)));
                    }
                    if chain && i > 0 {
                        t = t.after(Parent::InBatch(u32::from(i) - 1));
                    }
                    if run {
                        t = t.if_parent_fails(ParentFailure::Run);
                    }
                    t
                })
                .collect();
            let got = h.e().enqueue(&queue(q), tasks.clone()).await.unwrap();
            let want = h.model.enqueue(&queue(q), tasks).await.unwrap();
            assert_eq!(got, want, "ids and duplicates");
            h.last_id = got.iter().map(|o| o.id.0).fold(h.last_id, u64::max);
        }
        Action::Claim {
            queue: q,
            max,
            lease_ms,
        } => {
            let req = ClaimRequest::new(queue(q), "w")
                .max(max as u32)
                .lease(Duration::from_millis(lease_ms as u64));
            let got = h.e().claim(req.clone()).await.unwrap();
            let want = h.model.claim(req).await.unwrap();
            assert_eq!(
                got.iter().map(|t| t.id.0).collect::<Vec<_>>(),
                want.iter().map(|t| t.id.0).collect::<Vec<_>>(),
                "claim order"
            );
            for (g, w) in got.iter().zip(&want) {
                let token = g.lease.as_ref().unwrap().token;
                let mine = w.lease.as_ref().unwrap().token;
                h.tokens.insert(mine, token);
                h.old_tokens.push((g.id.0, token, mine));
                h.assert_same(g, w);
            }
        }
        Action::Ack {
            pick: p,
            reschedule_ms,
            result,
        } => {
            let Some((id, token, mine)) = pick(&h.leased().await, p) else {
                return;
            };
            let now = h.clock.now();
            let ack = match (reschedule_ms, result) {
                (Some(ms), _) => Ack::Reschedule(now.plus(Duration::from_millis(ms as u64))),
                (None, Some(n)) => {
                    Ack::Result(TaskResult::from_json(&format!("{{\"n\":{n}}}")).unwrap())
                }
                (None, None) => Ack::Done,
            };
            h.e().ack(TaskId(id), token, ack.clone()).await.unwrap();
            h.model.ack(TaskId(id), mine, ack).await.unwrap();
        }
        Action::Fail {
            pick: p,
            retry_ms,
            discard,
        } => {
            let Some((id, token, mine)) = pick(&h.leased().await, p) else {
                return;
            };
            let now = h.clock.now();
            let mut req = FailRequest {
                message: "boom".into(),
                retry_at: retry_ms.map(|ms| now.plus(Duration::from_millis(ms as u64))),
                discard,
            };
            let got = h.e().fail(TaskId(id), token, req.clone()).await.unwrap();
            if req.retry_at.is_none() && got.state != TaskState::Dead {
                // Backoff with jitter: the engine's delay must be in the
                // band; the model, whose jitter is its own, takes it as given.
                let base = BACKOFF_MS << (got.attempt - 1);
                let at = got.run_at.as_millis() - now.as_millis();
                assert!(
                    at >= base * 9 / 10 - 1 && at <= base * 11 / 10 + 1,
                    "backoff {at} for base {base}"
                );
                req.retry_at = Some(got.run_at);
            }
            let want = h.model.fail(TaskId(id), mine, req).await.unwrap();
            h.assert_same(&got, &want);
        }
        Action::Release { pick: p } => {
            let Some((id, token, mine)) = pick(&h.leased().await, p) else {
                return;
            };
            h.e().release(TaskId(id), token).await.unwrap();
            h.model.release(TaskId(id), mine).await.unwrap();
        }
        Action::Extend { pick: p, lease_ms } => {
            let Some((id, token, mine)) = pick(&h.leased().await, p) else {
                return;
            };
            let lease = Duration::from_millis(lease_ms as u64);
            let got = h.e().extend(TaskId(id), token, lease).await.unwrap();
            let want = h.model.extend(TaskId(id), mine, lease).await.unwrap();
            h.assert_same(&got, &want);
        }
        Action::StaleToken { pick: p } => {
            let Some((id, token, mine)) = pick(&h.old_tokens, p) else {
                return;
            };
            let current = h.model.get(TaskRef::Id(TaskId(id))).await;
            if matches!(&current, Ok(t) if t.lease.as_ref().is_some_and(|l| l.token == mine)) {
                return;
            }
            let err = h.e().ack(TaskId(id), token, Ack::Done).await.unwrap_err();
            let expect = if current.is_ok() {
                StoreError::LeaseLost
            } else {
                StoreError::NotFound
            };
            assert_eq!(err, expect);
            let model = h.model.ack(TaskId(id), mine, Ack::Done).await.unwrap_err();
            assert_eq!(err, model, "the model's answer");
        }
        Action::Cancel { pick: p } => {
            let ids: Vec<u64> = h.model_tasks(None).await.into_keys().collect();
            let Some(id) = pick(&ids, p) else { return };
            h.e().cancel(TaskRef::Id(TaskId(id))).await.unwrap();
            h.model.cancel(TaskRef::Id(TaskId(id))).await.unwrap();
            assert_eq!(
                h.e().get(TaskRef::Id(TaskId(id))).await.unwrap_err(),
                StoreError::NotFound
            );
            assert_eq!(
                h.model.get(TaskRef::Id(TaskId(id))).await.unwrap_err(),
                StoreError::NotFound
            );
        }
        Action::RetryDead { queue: q } => {
            let n = h.e().retry_dead(&queue(q)).await.unwrap();
            let expect = h.model.retry_dead(&queue(q)).await.unwrap();
            assert_eq!(n, expect);
        }
        Action::Advance { ms } => {
            h.clock.advance(Duration::from_millis(ms as u64));
        }
        Action::Restart => {
            h.engine = None;
            h.open();
            h.model.restarted();
            compare_all(h).await;
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
