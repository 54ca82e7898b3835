//! A failed write or `fdatasync` of a parent's ending leaves all of it
//! (the ending, its result, what it did to its dependents) or none.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Step {
    /// The ack, with a result, of a parent that is not the last.
    FirstWithResult,
    /// The ack, with a result, of the last parent.
    LastWithResult,
    /// The discard of the last parent: dead.
    LastDies,
    /// One `ack_many` of the last two parents.
    LastTwoAtOnce,
}

#[derive(Clone, Copy, Debug)]
enum Inject {
    Sync,
    Write,
}

/// The workflow of [`ending_under_a_failed_write`]: three parents, a
/// callback (`run`) and a strict follower (`cancel`) of all three.
struct Workflow {
    first: TaskId,
    second: TaskId,
    last: TaskId,
    callback: TaskId,
    strict: TaskId,
    tokens: HashMap<TaskId, LeaseToken>,
}

/// Sends `step`'s ending as a client would, under the parents' leases.
async fn take_step(engine: &Engine, step: Step, w: &Workflow) -> Result<(), StoreError> {
    let (b, d) = (w.second, w.last);
    match step {
        Step::FirstWithResult => {
            engine
                .ack(b, w.tokens[&b], Ack::Result(result_of(b.0)))
                .await
        }
        Step::LastWithResult => {
            engine
                .ack(d, w.tokens[&d], Ack::Result(result_of(d.0)))
                .await
        }
        Step::LastDies => engine.fail(d, w.tokens[&d], discard()).await.map(|_| ()),
        Step::LastTwoAtOnce => engine
            .ack_many(vec![(b, w.tokens[&b]), (d, w.tokens[&d])])
            .await?
            .into_iter()
            .collect(),
    }
}

/// Runs `step` with the next write or sync failing, crashes with `mode`,
/// checks that the step happened whole or not at all, retries it as a
/// client would and finishes the workflow. Answers whether it happened.
async fn ending_under_a_failed_write(step: Step, inject: Inject, mode: CrashMode, n: u64) -> bool {
    let ctx = format!("{step:?}, a failed {inject:?}, then {mode:?}");
    let fs = FaultyFs::new(n);
    let clock = Arc::new(ManualClock::new(START));
    // No checkpoint of its own accord: the injected fault must meet the step.
    let cfg = config(&fs, &clock, u64::MAX);
    let q = queue("endings");
    let engine = Engine::open(cfg.clone()).unwrap();
    let all_three = |t: NewTask| (0..3).fold(t, |t, i| t.after(Parent::InBatch(i)));
    let made = engine
        .enqueue(
            &q,
            vec![
                task(PARENT),
                task(PARENT),
                task(PARENT),
                all_three(task(CALLBACK)).if_parent_fails(ParentFailure::Run),
                all_three(task(STRICT)),
            ],
        )
        .await
        .unwrap();
    let claimed = engine
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    let w = Workflow {
        first: made[0].id,
        second: made[1].id,
        last: made[2].id,
        callback: made[3].id,
        strict: made[4].id,
        tokens: claimed.iter().map(|t| (t.id, token(t))).collect(),
    };
    assert_eq!(
        ids(&claimed),
        vec![w.first, w.second, w.last],
        "{ctx}: the parents"
    );
    engine
        .ack(
            w.first,
            w.tokens[&w.first],
            Ack::Result(result_of(w.first.0)),
        )
        .await
        .unwrap();
    if matches!(step, Step::LastWithResult | Step::LastDies) {
        engine
            .ack(w.second, w.tokens[&w.second], Ack::Done)
            .await
            .unwrap();
    }
    if n % 2 == 1 {
        // Half the cases recover from a checkpoint that holds the callback
        // and its first result, then replay the rest over it.
        engine.checkpoint().await.unwrap();
    }
    match inject {
        Inject::Sync => fs.fail_sync_after(0),
        Inject::Write => fs.fail_write_after(0),
    }
    let err = take_step(&engine, step, &w).await.unwrap_err();
    assert_eq!(err.code(), "unavailable", "{ctx}: {err}");
    assert!(engine.is_poisoned(), "{ctx}");
    drop(engine);

    fs.crash_with(mode);
    let engine = Engine::open(cfg.clone()).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let tasks = all_tasks(&engine, std::slice::from_ref(&q)).await;
    let struck = match step {
        Step::FirstWithResult => vec![w.second],
        Step::LastWithResult | Step::LastDies => vec![w.last],
        Step::LastTwoAtOnce => vec![w.second, w.last],
    };
    let ended = |p: &TaskId| match step {
        Step::LastDies => tasks.get(&p.0).is_some_and(|t| t.state == TaskState::Dead),
        _ => !tasks.contains_key(&p.0),
    };
    let happened = ended(&struck[0]);
    for p in &struck {
        assert_eq!(
            ended(p),
            happened,
            "{ctx}: one record ended some of {struck:?}"
        );
        if !happened {
            let t = tasks
                .get(&p.0)
                .unwrap_or_else(|| panic!("{ctx}: parent {p} is gone, yet not ended"));
            assert_eq!(t.state, TaskState::Leased, "{ctx}: parent {p}");
            assert_eq!(token(t), w.tokens[p], "{ctx}: parent {p}'s lease");
        }
    }
    let with_result = |p: u64| {
        p == w.first.0
            || (p == w.second.0 && step == Step::FirstWithResult)
            || (p == w.last.0 && step == Step::LastWithResult)
    };
    let callback = tasks
        .get(&w.callback.0)
        .unwrap_or_else(|| panic!("{ctx}: the callback is gone"));
    check_waits(callback, &tasks, with_result, &ctx);
    let released = happened && step != Step::FirstWithResult;
    assert_eq!(
        callback.state != TaskState::Pending,
        released,
        "{ctx}: the callback is released with the last parent's ending, and only then"
    );
    match tasks.get(&w.strict.0) {
        Some(t) => check_waits(t, &tasks, with_result, &ctx),
        None => assert!(
            step == Step::LastDies && happened,
            "{ctx}: the strict follower is gone, yet no parent died"
        ),
    }

    // A client retries what it was not told had happened, under the same
    // lease: the step happens exactly once.
    let retry = take_step(&engine, step, &w).await;
    assert_eq!(
        retry.is_ok(),
        !happened,
        "{ctx}: the retry answered {retry:?}"
    );
    if step == Step::FirstWithResult {
        engine
            .ack(w.last, w.tokens[&w.last], Ack::Done)
            .await
            .unwrap();
    }
    let died = step == Step::LastDies;
    let run = engine
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    let expected = if died {
        vec![w.callback]
    } else {
        vec![w.callback, w.strict]
    };
    assert_eq!(ids(&run), expected, "{ctx}: the dependents, released once");
    for t in &run {
        check_released(t, |p| died && p == w.last.0, with_result, &ctx);
    }
    let acks = run.iter().map(|t| (t.id, token(t))).collect();
    for r in engine.ack_many(acks).await.unwrap() {
        r.unwrap();
    }
    drop(engine);
    fs.crash_with(mode);
    let engine = Engine::open(cfg).unwrap_or_else(|e| panic!("{ctx}: {e}"));
    let mut left: Vec<u64> = all_tasks(&engine, std::slice::from_ref(&q))
        .await
        .into_keys()
        .collect();
    left.sort_unstable();
    let expected: Vec<u64> = if died { vec![w.last.0] } else { Vec::new() };
    assert_eq!(left, expected, "{ctx}: the tasks left once it all ran");
    let again = engine
        .claim(ClaimRequest::new(q, "w").max(10))
        .await
        .unwrap();
    assert!(again.is_empty(), "{ctx}: {:?} ran again", ids(&again));
    happened
}

/// A failed write or `fdatasync` of a parent's ending (an ack with a
/// result, the last parent's ack or discard, an `ack_many` of the last
/// two) poisons the engine; after power loss the ending and everything it
/// did to the callback and the strict follower are there whole, or not at
/// all, and a client's retry under the same lease finishes the workflow.
#[tokio::test]
async fn a_failed_write_of_a_parents_ending_leaves_all_of_it_or_none() {
    let steps = [
        Step::FirstWithResult,
        Step::LastWithResult,
        Step::LastDies,
        Step::LastTwoAtOnce,
    ];
    let modes = [
        CrashMode::DropUnsynced,
        CrashMode::KeepUnsynced,
        CrashMode::KeepPrefix(40),
        CrashMode::RandomPrefix,
        CrashMode::RandomSectors,
    ];
    let mut seen = HashSet::new();
    let mut n = 0;
    for step in steps {
        for inject in [Inject::Sync, Inject::Write] {
            for mode in modes {
                seen.insert((
                    step,
                    ending_under_a_failed_write(step, inject, mode, n).await,
                ));
                n += 1;
            }
        }
    }
    // Both sides of each step were seen: the test proves something.
    for step in steps {
        for happened in [true, false] {
            assert!(
                seen.contains(&(step, happened)),
                "{step:?} never {}",
                if happened { "survived" } else { "was lost" }
            );
        }
    }
}
