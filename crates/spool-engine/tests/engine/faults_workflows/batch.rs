//! A batch with a callback, its members ended in a seeded order across
//! failed writes and crashes: the callback runs once, with its counts.

use super::*;

/// What a round does with one claimed member.
enum MemberOp {
    Dies(TaskId, LeaseToken),
    WithResult(TaskId, LeaseToken),
    Done(Vec<(TaskId, LeaseToken)>),
}

impl MemberOp {
    fn ids(&self) -> Vec<u64> {
        match self {
            MemberOp::Dies(id, _) | MemberOp::WithResult(id, _) => vec![id.0],
            MemberOp::Done(acks) => acks.iter().map(|(id, _)| id.0).collect(),
        }
    }

    async fn run(&self, engine: &Engine) -> Result<(), StoreError> {
        match self {
            MemberOp::Dies(id, t) => engine.fail(*id, *t, discard()).await.map(|_| ()),
            MemberOp::WithResult(id, t) => engine.ack(*id, *t, Ack::Result(result_of(id.0))).await,
            MemberOp::Done(acks) => engine.ack_many(acks.clone()).await?.into_iter().collect(),
        }
    }
}

/// The members' endings in a seeded order: the dead and those with a
/// result one by one, the rest in `ack_many`s of 1 to 6.
fn plan(claimed: &[Task], rng: &mut StdRng) -> Vec<MemberOp> {
    let mut ops = Vec::new();
    let mut done = Vec::new();
    for t in claimed {
        match fate(t.id.0) {
            Fate::Dies => ops.push(MemberOp::Dies(t.id, token(t))),
            Fate::LeavesResult => ops.push(MemberOp::WithResult(t.id, token(t))),
            Fate::Done => done.push((t.id, token(t))),
        }
    }
    done.shuffle(rng);
    while !done.is_empty() {
        let n = rng.gen_range(1..=6).min(done.len());
        ops.push(MemberOp::Done(done.drain(..n).collect()));
    }
    ops.shuffle(rng);
    ops
}

/// A batch with a callback (docs/spec.md §3.2, "Batches": a task waiting
/// for every member with `run`), and a second callback of the same members
/// in another queue. Rounds end the members in a seeded order, fail a
/// write or sync at a seeded point among the acks, sometimes after a
/// checkpoint, and crash; after each, both callbacks agree with the
/// members as they stand. Once every member has ended, each callback runs
/// once, with the batch's counts and every result, and not again. Six
/// batches of 40 to 200 members, each with its own seed.
#[tokio::test]
async fn a_batch_callback_runs_once_with_its_counts_across_crashes_in_the_members_acks() {
    let mut faults = 0;
    for (seed, members) in [
        (31, 80),
        (32, 40),
        (33, 120),
        (34, 200),
        (35, 60),
        (36, 100),
    ] {
        faults += batch_across_crashes(seed, members).await;
    }
    assert!(faults >= 18, "only {faults} rounds met a fault");
}

/// One batch of `members_n` members through the rounds described above;
/// answers how many rounds met a fault.
async fn batch_across_crashes(seed: u64, members_n: usize) -> usize {
    const FAULTY_ROUNDS: usize = 8;
    let fs = FaultyFs::new(seed);
    let clock = Arc::new(ManualClock::new(START));
    // Checkpoints only where the test takes them, so each fault meets the
    // ack it was aimed at.
    let cfg = config(&fs, &clock, u64::MAX);
    let (batch_q, audit_q) = (queue("batch"), queue("audit"));
    let both = [batch_q.clone(), audit_q.clone()];
    let mut rng = StdRng::seed_from_u64(seed);
    let mut engine = Engine::open(cfg.clone()).unwrap();

    let mut batch: Vec<NewTask> = (0..members_n)
        .map(|_| task(PARENT).max_attempts(100))
        .collect();
    let callback = (0..members_n as u32).fold(task(CALLBACK), |t, i| t.after(Parent::InBatch(i)));
    batch.push(callback.if_parent_fails(ParentFailure::Run));
    let made = engine.enqueue(&batch_q, batch).await.unwrap();
    let members: Vec<TaskId> = made[..members_n].iter().map(|o| o.id).collect();
    let callback = made[members_n].id;
    // Enqueued before any member ends, so it receives every result too.
    let audit = members
        .iter()
        .fold(task(CALLBACK), |t, &m| t.after(Parent::Task(m)))
        .if_parent_fails(ParentFailure::Run);
    let audit = engine.enqueue(&audit_q, vec![audit]).await.unwrap()[0].id;

    let mut tried: HashSet<u64> = HashSet::new();
    let mut acked: HashSet<u64> = HashSet::new();
    let mut killed: HashSet<u64> = HashSet::new();
    let mut faults = 0;
    let mut round = 0;
    let run = loop {
        let claimed = engine
            .claim(ClaimRequest::new(batch_q.clone(), "members").max(1000))
            .await
            .unwrap();
        if claimed.iter().any(|t| t.id == callback) {
            break claimed;
        }
        assert!(
            !claimed.is_empty(),
            "seed {seed}, round {round}: nothing to claim, yet the callback waits"
        );
        assert!(round < 40, "the batch never finished");
        let mut held: HashMap<u64, LeaseToken> =
            claimed.iter().map(|t| (t.id.0, token(t))).collect();
        let ops = plan(&claimed, &mut rng);
        let fault_at = (round < FAULTY_ROUNDS).then(|| rng.gen_range(0..ops.len()));
        let checkpoint_at = rng.gen_range(0..=ops.len());
        let mut failed_at = None;
        for (i, op) in ops.iter().enumerate() {
            if i == checkpoint_at {
                engine.checkpoint().await.unwrap();
            }
            if fault_at == Some(i) {
                if round % 2 == 0 {
                    fs.fail_sync_after(0);
                } else {
                    fs.fail_write_after(0);
                }
            }
            for id in op.ids() {
                held.remove(&id);
                tried.insert(id);
            }
            match op.run(&engine).await {
                Ok(()) => match op {
                    MemberOp::Dies(id, _) => {
                        killed.insert(id.0);
                    }
                    _ => acked.extend(op.ids()),
                },
                Err(e) => {
                    assert_eq!(e.code(), "unavailable", "seed {seed}, round {round}: {e}");
                    failed_at = Some(i);
                    break;
                }
            }
        }
        assert_eq!(
            failed_at, fault_at,
            "seed {seed}, round {round}: where an ack failed"
        );
        if fault_at.is_some() {
            faults += 1;
        }
        let mode = MODES[round % MODES.len()];
        drop(engine);
        fs.crash_with(mode);
        let ctx = format!("seed {seed}, round {round} ({mode:?})");
        engine = Engine::open(cfg.clone()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        let tasks = all_tasks(&engine, &both).await;
        for m in &members {
            match tasks.get(&m.0) {
                None => assert!(tried.contains(&m.0) && !dies(m.0), "{ctx}: member {m} lost"),
                Some(t) => {
                    let dead = t.state == TaskState::Dead;
                    assert!(!acked.contains(&m.0), "{ctx}: acked member {m} came back");
                    assert!(
                        dead || !killed.contains(&m.0),
                        "{ctx}: discarded member {m}"
                    );
                    assert!(
                        !dead || (dies(m.0) && tried.contains(&m.0)),
                        "{ctx}: member {m} is dead, yet nobody failed it"
                    );
                }
            }
        }
        for (id, tok) in &held {
            let t = tasks
                .get(id)
                .unwrap_or_else(|| panic!("{ctx}: member {id}, claimed and not ended, is gone"));
            assert_eq!(t.state, TaskState::Leased, "{ctx}: claimed member {id}");
            assert_eq!(token(t), *tok, "{ctx}: member {id}'s lease");
        }
        for id in [callback, audit] {
            let t = tasks
                .get(&id.0)
                .unwrap_or_else(|| panic!("{ctx}: callback {id} gone before it ran"));
            assert_eq!(
                t.deps.as_ref().map(|d| &d.after),
                Some(&members),
                "{ctx}: callback {id}'s members"
            );
            check_waits(t, &tasks, leaves_result, &ctx);
        }
        assert_eq!(
            tasks[&callback.0].deps, tasks[&audit.0].deps,
            "{ctx}: two callbacks of the same members disagree"
        );
        clock.advance(PAST_LEASES);
        round += 1;
    };

    assert_eq!(
        ids(&run),
        vec![callback],
        "seed {seed}: the callback alone, once"
    );
    let audit_run = engine
        .claim(ClaimRequest::new(audit_q.clone(), "audit").max(10))
        .await
        .unwrap();
    assert_eq!(
        ids(&audit_run),
        vec![audit],
        "seed {seed}: the second callback, once"
    );
    let dead = members.iter().filter(|m| dies(m.0)).count() as u32;
    for t in run.iter().chain(&audit_run) {
        check_released(t, dies, leaves_result, &format!("seed {seed}: the end"));
        let deps = t.deps.as_ref().unwrap();
        assert_eq!(
            (deps.completed(), deps.failed),
            (members_n as u32 - dead, dead),
            "seed {seed}: callback {}'s counts",
            t.id
        );
    }
    for t in run.iter().chain(&audit_run) {
        engine.ack(t.id, token(t), Ack::Done).await.unwrap();
    }
    eprintln!(
        "seed {seed}: {members_n} members, {round} rounds, {faults} failed writes among \
         the acks; {} results each",
        run[0].deps.as_ref().unwrap().results.len()
    );
    drop(engine);

    // Run once means once: not again after another power loss, nor once
    // every lease could have run out.
    fs.crash_with(CrashMode::Random);
    clock.advance(PAST_LEASES);
    let engine = Engine::open(cfg).unwrap();
    for q in &both {
        let again = engine
            .claim(ClaimRequest::new(q.clone(), "again").max(10))
            .await
            .unwrap();
        assert!(again.is_empty(), "seed {seed}: {:?} ran again", ids(&again));
    }
    let mut left: Vec<u64> = all_tasks(&engine, &both).await.into_keys().collect();
    left.sort_unstable();
    let expected: Vec<u64> = members.iter().map(|m| m.0).filter(|&m| dies(m)).collect();
    assert_eq!(
        left, expected,
        "seed {seed}: only the dead members are left"
    );
    faults
}
