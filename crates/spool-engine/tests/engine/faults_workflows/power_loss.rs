//! Power loss, torn every way `FaultyFs` knows, under concurrent
//! workflows: after each crash every dependent agrees with its parents.

use super::*;

/// One acknowledged workflow: its parents as named, its callback (`run`)
/// and its strict follower (`cancel`).
struct Flow {
    parents: Vec<TaskId>,
    callback: u64,
    strict: u64,
}

/// What the workers were told, and what they only tried.
#[derive(Default)]
struct Ledger {
    flows: Vec<Flow>,
    /// Parents a later workflow may name: acknowledged, and leaving no
    /// result (one gone before its dependent was enqueued leaves none).
    shareable: Vec<u64>,
    /// Tasks an ack or a discard was attempted for, whatever came of it.
    tried: HashSet<u64>,
    /// Acks acknowledged: gone for good.
    acked: HashSet<u64>,
    /// Discards acknowledged: dead for good.
    killed: HashSet<u64>,
    /// Claims acknowledged this round and not ended since: still leased
    /// under the same token after the crash.
    held: HashMap<u64, LeaseToken>,
    /// The round each task was last handed out in.
    claimed_in: HashMap<u64, usize>,
    callbacks_run: usize,
    stricts_run: usize,
}

impl Ledger {
    fn attempt(&mut self, id: u64) {
        self.held.remove(&id);
        self.tried.insert(id);
    }
}

/// Notes a claim's tasks, and checks each dependent in it was released
/// once and reads its parents' endings.
fn note_claims(ledger: &Mutex<Ledger>, claimed: &[Task], round: usize) {
    let mut l = ledger.lock().unwrap();
    for t in claimed {
        let id = t.id.0;
        let ctx = format!("round {round}, claim of {id}");
        assert_ne!(
            l.claimed_in.insert(id, round),
            Some(round),
            "{ctx}: handed out twice while its lease held"
        );
        l.held.insert(id, token(t));
        match role(t) {
            CALLBACK => {
                check_released(t, dies, leaves_result, &ctx);
                l.callbacks_run += 1;
            }
            STRICT => {
                let after = t.deps.as_ref().map(|d| d.after.clone()).unwrap_or_default();
                let doomed: Vec<&TaskId> = after.iter().filter(|p| dies(p.0)).collect();
                assert!(doomed.is_empty(), "{ctx}: ran, though {doomed:?} die");
                check_released(t, dies, leaves_result, &ctx);
                l.stricts_run += 1;
            }
            _ => {}
        }
    }
}

/// Ends every claimed task as its role and fate say: parents by their
/// fate, dependents acked. Each attempt is noted before it is made and
/// each acknowledgement after; false once the engine refuses.
async fn end_all(engine: &Engine, claimed: &[Task], ledger: &Mutex<Ledger>) -> bool {
    let mut done = Vec::new();
    for t in claimed {
        let (id, token) = (t.id, token(t));
        let how = if role(t) == PARENT {
            fate(id.0)
        } else {
            Fate::Done
        };
        if how == Fate::Done {
            done.push((id, token));
            continue;
        }
        ledger.lock().unwrap().attempt(id.0);
        let answer = match how {
            Fate::Dies => engine.fail(id, token, discard()).await.map(|_| ()),
            _ => engine.ack(id, token, Ack::Result(result_of(id.0))).await,
        };
        if let Err(e) = answer {
            return refused(&e, &format!("ending {id}"));
        }
        let mut l = ledger.lock().unwrap();
        if how == Fate::Dies {
            l.killed.insert(id.0);
        } else {
            l.acked.insert(id.0);
        }
    }
    if done.is_empty() {
        return true;
    }
    {
        let mut l = ledger.lock().unwrap();
        for (id, _) in &done {
            l.attempt(id.0);
        }
    }
    let replies = match engine.ack_many(done.clone()).await {
        Ok(r) => r,
        Err(e) => return refused(&e, "ack_many"),
    };
    let mut l = ledger.lock().unwrap();
    for ((id, _), reply) in done.iter().zip(replies) {
        if let Err(e) = reply {
            panic!("the ack of {id} under a fresh lease was refused: {e}");
        }
        l.acked.insert(id.0);
    }
    true
}

/// A worker: enqueues a workflow (a few parents, sometimes one parent of
/// an earlier workflow, a callback and a strict follower of them all),
/// claims what is ready and ends it, until the engine refuses.
async fn run_flows(engine: Arc<Engine>, ledger: Arc<Mutex<Ledger>>, round: usize, seed: u64) {
    let q = queue("flows");
    let mut rng = StdRng::seed_from_u64(seed);
    loop {
        let parents = rng.gen_range(1..=5u32);
        let shared = {
            let l = ledger.lock().unwrap();
            let n = l.shareable.len();
            (n > 0 && rng.gen_bool(0.3))
                .then(|| l.shareable[rng.gen_range(n.saturating_sub(50)..n)])
        };
        let mut after: Vec<Parent> = (0..parents).map(Parent::InBatch).collect();
        after.extend(shared.map(|p| Parent::Task(TaskId(p))));
        let waits_for_all = |t: NewTask| after.iter().fold(t, |t, &p| t.after(p));
        let mut batch: Vec<NewTask> = (0..parents).map(|_| task(PARENT)).collect();
        batch.push(waits_for_all(task(CALLBACK)).if_parent_fails(ParentFailure::Run));
        batch.push(waits_for_all(task(STRICT)).if_parent_fails(ParentFailure::Cancel));
        let made = match engine.enqueue(&q, batch).await {
            Ok(made) => made,
            Err(e) => {
                refused(&e, "enqueue");
                return;
            }
        };
        {
            let made: Vec<u64> = made.iter().map(|o| o.id.0).collect();
            let (named, dependents) = made.split_at(parents as usize);
            let mut l = ledger.lock().unwrap();
            l.shareable
                .extend(named.iter().filter(|&&p| !leaves_result(p)));
            let mut parents: Vec<TaskId> = named.iter().map(|&p| TaskId(p)).collect();
            parents.extend(shared.map(TaskId));
            l.flows.push(Flow {
                parents,
                callback: dependents[0],
                strict: dependents[1],
            });
        }
        let req = ClaimRequest::new(q.clone(), "worker").max(rng.gen_range(1..=12));
        let claimed = match engine.claim(req).await {
            Ok(claimed) => claimed,
            Err(e) => {
                refused(&e, "claim");
                return;
            }
        };
        note_claims(&ledger, &claimed, round);
        if !end_all(&engine, &claimed, &ledger).await {
            return;
        }
    }
}

/// What must hold after a crash, given what the workers were told.
fn check_after_crash(tasks: &HashMap<u64, Task>, l: &Ledger, ctx: &str) {
    for t in tasks.values() {
        if role(t) == PARENT {
            assert!(
                t.state != TaskState::Dead || dies(t.id.0),
                "{ctx}: parent {} is dead, yet nobody failed it",
                t.id
            );
        } else {
            check_waits(t, tasks, leaves_result, ctx);
        }
    }
    let dead = |p: &TaskId| tasks.get(&p.0).is_some_and(|t| t.state == TaskState::Dead);
    for f in &l.flows {
        for p in &f.parents {
            if !tasks.contains_key(&p.0) {
                assert!(
                    l.tried.contains(&p.0) && !dies(p.0),
                    "{ctx}: acknowledged parent {p} lost"
                );
            }
        }
        let cancelled_by_a_parent = f.parents.iter().any(dead);
        for (id, may_be_cancelled) in [(f.callback, false), (f.strict, cancelled_by_a_parent)] {
            match tasks.get(&id) {
                Some(t) => assert_eq!(
                    t.deps.as_ref().map(|d| &d.after),
                    Some(&f.parents),
                    "{ctx}: task {id}'s parents"
                ),
                None => assert!(
                    l.tried.contains(&id) || may_be_cancelled,
                    "{ctx}: acknowledged dependent {id} lost"
                ),
            }
        }
    }
    for id in &l.acked {
        assert!(!tasks.contains_key(id), "{ctx}: acked task {id} came back");
    }
    for id in &l.killed {
        assert_eq!(
            tasks.get(id).map(|t| t.state),
            Some(TaskState::Dead),
            "{ctx}: discarded parent {id}"
        );
    }
    for (id, held) in &l.held {
        let t = tasks
            .get(id)
            .unwrap_or_else(|| panic!("{ctx}: task {id}, claimed and not ended, is gone"));
        assert_eq!(t.state, TaskState::Leased, "{ctx}: claimed task {id}");
        assert_eq!(token(t), *held, "{ctx}: task {id}'s lease");
    }
}

/// After the drain only dead parents are left, so every dependent is
/// gone: it ran (an ack was tried, maybe before a crash that kept it), or
/// a dead parent cancelled it.
fn check_drained(tasks: &HashMap<u64, Task>, l: &Ledger) {
    for t in tasks.values() {
        assert!(
            role(t) == PARENT && t.state == TaskState::Dead,
            "task {} is left {:?} after the drain",
            t.id,
            t.state
        );
    }
    for f in &l.flows {
        assert!(
            l.tried.contains(&f.callback),
            "callback {} never ran",
            f.callback
        );
        let cancelled = f.parents.iter().any(|p| tasks.contains_key(&p.0));
        assert_eq!(
            l.tried.contains(&f.strict),
            !cancelled,
            "strict follower {}: ran, or was cancelled by a dead parent",
            f.strict
        );
    }
    eprintln!(
        "{} workflows, {} callbacks run, {} strict followers run, {} tasks dead",
        l.flows.len(),
        l.callbacks_run,
        l.stricts_run,
        tasks.len()
    );
    assert!(l.flows.len() > 500, "only {} workflows", l.flows.len());
}

/// Power loss under a workflow load, on a small-segment engine that
/// checkpoints every 64 KiB of log, torn every way the fault layer knows;
/// then, with no more faults, every workflow runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn power_loss_under_a_workflow_load_keeps_every_dependent_consistent() {
    let fs = FaultyFs::new(2026);
    let clock = Arc::new(ManualClock::new(START));
    let cfg = config(&fs, &clock, 64 * 1024);
    let q = queue("flows");
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let rounds = 2 * MODES.len();
    let mut engine = Arc::new(Engine::open(cfg.clone()).unwrap());
    for (round, mode) in MODES.into_iter().cycle().take(rounds).enumerate() {
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let seed = (round * 10 + w) as u64;
                tokio::spawn(run_flows(engine.clone(), ledger.clone(), round, seed))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(50 + 13 * round as u64)).await;
        fs.crash_with(mode);
        for w in workers {
            w.await.unwrap();
        }
        drop(engine);
        let ctx = format!("round {round} ({mode:?})");
        let reopened = Engine::open(cfg.clone()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let tasks = all_tasks(&reopened, std::slice::from_ref(&q)).await;
        check_after_crash(&tasks, &ledger.lock().unwrap(), &ctx);
        ledger.lock().unwrap().held.clear();
        clock.advance(PAST_LEASES);
        engine = Arc::new(reopened);
    }

    // No more faults: what the crashes left leased comes back, and every
    // workflow finishes.
    for _ in 0..100_000 {
        let req = ClaimRequest::new(q.clone(), "drain").max(100);
        let claimed = engine.claim(req).await.unwrap();
        if claimed.is_empty() {
            break;
        }
        note_claims(&ledger, &claimed, rounds);
        assert!(end_all(&engine, &claimed, &ledger).await);
    }
    let tasks = all_tasks(&engine, std::slice::from_ref(&q)).await;
    check_drained(&tasks, &ledger.lock().unwrap());
    drop(engine);

    // The end of it survives one more power loss: nothing runs again.
    fs.crash_with(CrashMode::Random);
    let engine = Engine::open(cfg).unwrap();
    let after = all_tasks(&engine, std::slice::from_ref(&q)).await;
    let mut left: Vec<u64> = after.keys().copied().collect();
    let mut before: Vec<u64> = tasks.keys().copied().collect();
    left.sort_unstable();
    before.sort_unstable();
    assert_eq!(left, before, "the tasks left after the drain");
    let again = engine.claim(ClaimRequest::new(q, "again")).await.unwrap();
    assert!(again.is_empty(), "{:?} ran again", ids(&again));
    // Checkpoints ran under the load: they let the first segments go.
    let segments = fs.list(Path::new("/data/wal")).unwrap();
    assert!(
        !segments.contains(&"00000000000000000001.wal".to_string()),
        "no checkpoint let the first segment go: {segments:?}"
    );
}
