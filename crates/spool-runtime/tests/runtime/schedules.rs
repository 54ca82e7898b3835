//! Schedules fired by `Scheduler`: a 1 s schedule for 20 s on the embedded
//! engine, on tokio's paused clock so it takes well under a second of real
//! time (one task per tick, jitter printed), two schedulers on one server
//! (one task per tick, and the survivor takes over), a stuck run that does
//! not hold the next tick back, and missed ticks that collapse into one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_core::{
    Cadence, Clock, Kind, Payload, ScheduleSpec, Store, SystemClock, TaskState, Timestamp,
};
use spool_runtime::{Client, Context, Job, PeriodicJob, QueueConfig, Scheduler, Worker};

use crate::paused::Paused;
use crate::support::{eventually, fast_queue, percentile, q, remote, tasks, Server};

#[derive(Serialize, Deserialize, Clone)]
struct Beat {
    note: String,
}

impl Job for Beat {
    const KIND: &'static str = "beat";
}

/// Per tick: how many runs, and each run's (created_at, started) times.
type Runs = Arc<Mutex<BTreeMap<i64, Vec<(Timestamp, Timestamp)>>>>;

/// Records each run, its start read on `clock`: the store's clock.
fn recorder(
    runs: &Runs,
    clock: Arc<dyn Clock>,
) -> impl Fn(Context, Beat) -> futures_ok::Ok + Clone + Send + Sync + 'static {
    let runs = runs.clone();
    move |ctx: Context, _beat: Beat| {
        let started = clock.now();
        if let Some(tick) = ctx.scheduled_tick() {
            runs.lock()
                .unwrap()
                .entry(tick.as_millis())
                .or_default()
                .push((ctx.task().created_at, started));
        }
        futures_ok::Ok
    }
}

mod futures_ok {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A handler future that succeeds at once.
    pub(super) struct Ok;

    impl Future for Ok {
        type Output = Result<(), spool_runtime::TaskError>;
        fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
            Poll::Ready(Result::Ok(()))
        }
    }
}

fn beat() -> Beat {
    Beat {
        note: "lub-dub".into(),
    }
}

/// Every tick ran once and ticks are `period` apart, except `gaps` jumps.
fn check_ticks(runs: &BTreeMap<i64, Vec<(Timestamp, Timestamp)>>, period: i64, gaps: usize) {
    assert!(
        runs.values().all(|r| r.len() == 1),
        "a tick ran twice: {runs:?}"
    );
    let ticks: Vec<i64> = runs.keys().copied().collect();
    assert!(
        ticks.iter().all(|t| t % period == 0),
        "ticks off the period: {ticks:?}"
    );
    let jumps = ticks.windows(2).filter(|w| w[1] - w[0] != period).count();
    assert_eq!(jumps, gaps, "ticks: {ticks:?}");
}

#[tokio::test(start_paused = true)]
async fn a_one_second_schedule_fires_once_per_tick_for_twenty_seconds() {
    let paused = Paused::new();
    let store: Arc<dyn Store> = paused.clone();
    let client = Client::new(store.clone());
    client
        .put_schedule(PeriodicJob::every(
            "heartbeat",
            Duration::from_secs(1),
            beat(),
        ))
        .await
        .unwrap();
    let runs: Runs = Arc::default();
    let worker = Worker::builder(store.clone())
        .register(recorder(&runs, paused.clock.clone()))
        .start()
        .unwrap();
    let scheduler = Scheduler::new(store).start().unwrap();
    tokio::time::sleep(Duration::from_secs(20)).await;
    scheduler.stop().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);

    let runs = runs.lock().unwrap().clone();
    assert!((19..=21).contains(&runs.len()), "{} ticks", runs.len());
    check_ticks(&runs, 1000, 0);
    let mut fired: Vec<i64> = runs.iter().map(|(t, r)| r[0].0.as_millis() - t).collect();
    let mut started: Vec<i64> = runs.iter().map(|(t, r)| r[0].1.as_millis() - t).collect();
    println!(
        "1 s schedule, {} ticks: firing jitter p50 {} ms, p99 {} ms; run start after the tick p50 {} ms, p99 {} ms",
        runs.len(),
        percentile(&mut fired, 50),
        percentile(&mut fired, 99),
        percentile(&mut started, 50),
        percentile(&mut started, 99),
    );
    assert!(percentile(&mut started, 99) < 250, "{started:?}");
}

#[tokio::test]
async fn two_schedulers_make_one_task_per_tick_and_either_suffices() {
    let server = Server::builder().start().await;
    let store = remote(&server);
    Client::new(store.clone())
        .put_schedule(PeriodicJob::every(
            "pulse",
            Duration::from_millis(200),
            beat(),
        ))
        .await
        .unwrap();
    let runs: Runs = Arc::default();
    let worker = Worker::builder(store.clone())
        .register(recorder(&runs, Arc::new(SystemClock)))
        .start()
        .unwrap();
    let refresh = Duration::from_millis(100);
    let a = Scheduler::new(remote(&server))
        .refresh_every(refresh)
        .start()
        .unwrap();
    let b = Scheduler::new(remote(&server))
        .refresh_every(refresh)
        .start()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // One dies: the other goes on alone.
    a.stop().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    b.stop().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
    let runs = runs.lock().unwrap().clone();
    assert!((14..=16).contains(&runs.len()), "{} ticks", runs.len());
    check_ticks(&runs, 200, 0);
}

#[derive(Serialize, Deserialize)]
struct Hang;

impl Job for Hang {
    const KIND: &'static str = "hang";
}

#[tokio::test]
async fn a_stuck_run_is_cut_off_and_the_next_tick_fires() {
    let e = crate::support::Embedded::open();
    // One attempt: a cut-off tick is dead, so each tick is one task.
    fast_queue(e.store.as_ref(), "hang", 1).await;
    Client::new(e.store.clone())
        .put_schedule(
            PeriodicJob::every("hang", Duration::from_millis(400), Hang)
                .deadline(Duration::from_millis(150)),
        )
        .await
        .unwrap();
    let started: Arc<Mutex<Vec<Timestamp>>> = Arc::default();
    let log = started.clone();
    // A single slot: the stuck run must give it back for the next tick.
    let worker = Worker::builder(e.store.clone())
        .queue("hang", QueueConfig::new().concurrency(1))
        .register(move |ctx: Context, _job: Hang| {
            let log = log.clone();
            async move {
                log.lock().unwrap().extend(ctx.scheduled_tick());
                std::future::pending::<()>().await;
                Ok(())
            }
        })
        .start()
        .unwrap();
    let scheduler = Scheduler::new(e.store.clone()).start().unwrap();
    eventually(Duration::from_secs(5), "three ticks ran", || async {
        started.lock().unwrap().len() >= 3
    })
    .await;
    scheduler.stop().await;
    let ticks = started.lock().unwrap().clone();
    assert!(
        ticks
            .windows(2)
            .all(|w| w[1].as_millis() - w[0].as_millis() == 400),
        "{ticks:?}"
    );
    eventually(Duration::from_secs(2), "the first two are dead", || async {
        tasks(e.store.as_ref(), "hang")
            .await
            .iter()
            .filter(|t| t.state == TaskState::Dead)
            .count()
            >= 2
    })
    .await;
    for t in tasks(e.store.as_ref(), "hang").await {
        if t.state == TaskState::Dead {
            assert_eq!(t.errors[0].message, "deadline exceeded");
            assert_eq!(t.lease_ms, Some(150), "the deadline is the tick's lease");
        }
    }
    worker.shutdown(Duration::from_millis(100)).await;
}

#[tokio::test]
async fn missed_ticks_collapse_into_one() {
    let e = crate::support::Embedded::open();
    let store: Arc<dyn Store> = e.store.clone();
    Client::new(store.clone())
        .put_schedule(PeriodicJob::every(
            "catch-up",
            Duration::from_millis(200),
            beat(),
        ))
        .await
        .unwrap();
    let runs: Runs = Arc::default();
    let worker = Worker::builder(store.clone())
        .register(recorder(&runs, Arc::new(SystemClock)))
        .start()
        .unwrap();
    let first = Scheduler::new(store.clone()).start().unwrap();
    tokio::time::sleep(Duration::from_millis(700)).await;
    first.stop().await;
    // Five ticks pass with no scheduler.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = Scheduler::new(store.clone()).start().unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    second.stop().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(worker.shutdown(Duration::from_secs(1)).await.finished);
    let runs = runs.lock().unwrap().clone();
    // One jump: the downtime's ticks collapsed into the one fired on restart.
    check_ticks(&runs, 200, 1);
    let ticks: Vec<i64> = runs.keys().copied().collect();
    let jump = ticks.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!((1000..=1400).contains(&jump), "{ticks:?}");
}

/// A schedule on its own queue, ticking every `every`.
fn spec(name: &str, every: Duration) -> ScheduleSpec {
    ScheduleSpec {
        name: Kind::new(name).unwrap(),
        queue: q(name),
        kind: None,
        payload: Payload::default(),
        cadence: Cadence::Every(every),
        deadline: None,
    }
}

/// How late (ms) the first task of `schedule`'s queue was made after `tick`.
async fn first_tick_late(store: &dyn Store, queue: &str, tick: Timestamp) -> i64 {
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(t) = tasks(store, queue).await.first() {
            return t.created_at.as_millis() - tick.as_millis();
        }
        assert!(
            tokio::time::Instant::now() < until,
            "{queue}: no tick fired"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_new_schedules_first_tick_is_as_prompt_as_the_others() {
    let e = crate::support::Embedded::open();
    let store = e.store.as_ref();
    let scheduler = Scheduler::new(e.store.clone()).start().unwrap();
    let mut late = Vec::new();
    for i in 0..8 {
        // Puts at different moments of the scheduler's refresh cycle.
        tokio::time::sleep(Duration::from_millis(137)).await;
        let name = format!("first-{i}");
        let put = store
            .put_schedule(spec(&name, Duration::from_millis(300)))
            .await
            .unwrap();
        let tick = put.next_fire_at().unwrap();
        late.push(first_tick_late(store, &name, tick).await);
        store
            .delete_schedule(&Kind::new(&name).unwrap())
            .await
            .unwrap();
    }
    scheduler.stop().await;
    println!(
        "first ticks of new schedules: p50 {} ms, max {} ms late",
        percentile(&mut late, 50),
        percentile(&mut late, 100)
    );
    assert!(late.iter().all(|&l| (0..250).contains(&l)), "{late:?}");
}

#[tokio::test]
async fn a_changed_schedule_is_noticed_without_waiting_for_a_refresh() {
    let e = crate::support::Embedded::open();
    let store = e.store.as_ref();
    let scheduler = Scheduler::new(e.store.clone())
        .refresh_every(Duration::from_secs(3600))
        .start()
        .unwrap();
    // Let the scheduler read the (empty) list, then put and change.
    tokio::time::sleep(Duration::from_millis(100)).await;
    store
        .put_schedule(spec("changed", Duration::from_secs(3600)))
        .await
        .unwrap();
    let put = store
        .put_schedule(spec("changed", Duration::from_millis(200)))
        .await
        .unwrap();
    let tick = put.next_fire_at().unwrap();
    let late = first_tick_late(store, "changed", tick).await;
    assert!((0..250).contains(&late), "{late} ms late");
    scheduler.stop().await;
}
