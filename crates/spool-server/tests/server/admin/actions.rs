//! The actions: plain forms that POST with the page's CSRF token, change one
//! thing, and redirect back; without the token they change nothing.

use std::time::Duration;

use reqwest::Method;
use spool_core::{Ack, NewTask, Parent, Payload, QueueName, StoreError, TaskRef, TaskState};

use crate::admin::support::Admin;

#[tokio::test]
async fn a_dead_task_is_retried() {
    let s = Admin::open().await;
    let id = s.failed("q", 2, true, "poison").await;
    let page = s.get(&format!("/tasks/{id}")).await;
    assert!(page.text.contains("Retry task"));
    let csrf = page.csrf().unwrap();
    let res = s
        .post(&format!("/tasks/{id}/retry"), &[("csrf", &csrf)])
        .await;
    assert_eq!(res.status, 303, "{}", res.text);
    assert_eq!(res.location(), format!("/tasks/{id}?done=retried"));
    let task = s.store.get(TaskRef::Id(id)).await.unwrap();
    assert_eq!((task.state, task.attempt), (TaskState::Ready, 0));
    let after = s.get(res.location()).await;
    after.assert_page(200);
    assert!(after.text.contains("Retried"));

    // From the list of dead tasks too.
    let id = s.failed("q", 1, true, "poison").await;
    let list = s.get("/queues/q?state=dead").await;
    assert!(list.text.contains(&format!("/tasks/{id}/retry")));
    let res = s
        .post(
            &format!("/tasks/{id}/retry"),
            &[("csrf", &list.csrf().unwrap())],
        )
        .await;
    assert_eq!(res.status, 303);
    assert_eq!(
        s.store.get(TaskRef::Id(id)).await.unwrap().state,
        TaskState::Ready
    );
}

#[tokio::test]
async fn a_dead_task_is_deleted_after_a_confirmation() {
    let s = Admin::open().await;
    let id = s.failed("q", 1, true, "poison").await;
    let page = s.get(&format!("/tasks/{id}")).await;
    // The delete button sits behind a <details> the operator must open.
    let confirm = page
        .text
        .split("<details class=\"confirm\">")
        .nth(1)
        .unwrap();
    assert!(confirm.contains(&format!("action=\"/tasks/{id}/delete\"")));
    assert!(confirm.contains("for good"));
    let res = s
        .post(
            &format!("/tasks/{id}/delete"),
            &[("csrf", &page.csrf().unwrap())],
        )
        .await;
    assert_eq!(res.status, 303, "{}", res.text);
    assert_eq!(res.location(), "/queues/q?state=dead&done=deleted");
    assert!(matches!(
        s.store.get(TaskRef::Id(id)).await,
        Err(StoreError::NotFound)
    ));
    s.get(&format!("/tasks/{id}")).await.assert_page(404);
}

#[tokio::test]
async fn a_live_task_is_cancelled_after_a_confirmation_a_leased_one_too() {
    let s = Admin::open().await;
    let q = QueueName::new("q").unwrap();
    let ready = s.enqueue("q", None, Payload::default()).await;
    let later = NewTask::new(Payload::default()).delay(Duration::from_secs(3600));
    let scheduled = s.store.enqueue(&q, vec![later]).await.unwrap()[0].id;
    let parent = s.enqueue("q", None, Payload::default()).await;
    let waits = NewTask::new(Payload::default()).after(Parent::Task(parent));
    let pending = s.store.enqueue(&q, vec![waits]).await.unwrap()[0].id;
    let leased = s.enqueue("q", None, Payload::default()).await;
    let token = s.claim_until("q", leased).await.lease.unwrap().token;

    for (id, state) in [
        (ready, TaskState::Ready),
        (scheduled, TaskState::Scheduled),
        (pending, TaskState::Pending),
        (leased, TaskState::Leased),
    ] {
        assert_eq!(s.store.get(TaskRef::Id(id)).await.unwrap().state, state);
        let page = s.get(&format!("/tasks/{id}")).await;
        // The cancel button sits behind a <details> the operator must open.
        let confirm = page
            .text
            .split("<details class=\"confirm\">")
            .nth(1)
            .unwrap_or_else(|| panic!("no confirmation on the {state} task's page"));
        assert!(confirm.contains(&format!("action=\"/tasks/{id}/cancel\"")));
        assert!(confirm.contains(&format!("Cancel task {id}")));
        assert_eq!(
            confirm.contains("told to stop"),
            state == TaskState::Leased,
            "a leased task's worker is cut off: {confirm}"
        );
        assert!(!page.text.contains(&format!("/tasks/{id}/delete")));
        let res = s.submit(&page, &format!("/tasks/{id}/cancel")).await;
        assert_eq!(res.status, 303, "{}", res.text);
        assert_eq!(res.location(), format!("/queues/q?done=cancelled&n={id}"));
        assert!(matches!(
            s.store.get(TaskRef::Id(id)).await,
            Err(StoreError::NotFound)
        ));
        let after = s.get(res.location()).await;
        after.assert_page(200);
        assert!(after.text.contains(&format!("Cancelled task {id}.")));
    }
    // The worker that held the lease finds its task gone.
    let late = s.store.ack(leased, token, Ack::Done).await;
    assert!(matches!(late, Err(StoreError::NotFound)), "{late:?}");
    // Only the parent is left: cancelling the others touched nothing else.
    assert_eq!(s.counts().await[0].2.total(), 1);
}

#[tokio::test]
async fn a_dead_task_is_not_cancelled_but_deleted() {
    let s = Admin::open().await;
    let id = s.failed("q", 1, true, "poison").await;
    let page = s.get(&format!("/tasks/{id}")).await;
    assert!(!page.text.contains(&format!("/tasks/{id}/cancel")));
    let res = s.submit(&page, &format!("/tasks/{id}/cancel")).await;
    res.assert_page(400);
    assert!(res.text.contains("delete it"), "{}", res.text);
    assert_eq!(
        s.store.get(TaskRef::Id(id)).await.unwrap().state,
        TaskState::Dead
    );
}

#[tokio::test]
async fn only_dead_tasks_are_deleted() {
    let s = Admin::open().await;
    let id = s.enqueue("q", None, Payload::default()).await;
    let csrf = s.csrf("/queues/q").await;
    let res = s
        .post(&format!("/tasks/{id}/delete"), &[("csrf", &csrf)])
        .await;
    res.assert_page(400);
    assert!(res.text.contains("only dead tasks"));
    assert!(s.store.get(TaskRef::Id(id)).await.is_ok());
    let res = s
        .post(&format!("/tasks/{id}/retry"), &[("csrf", &csrf)])
        .await;
    res.assert_page(400);
}

#[tokio::test]
async fn a_queue_is_paused_and_resumed() {
    let s = Admin::open().await;
    s.enqueue("q", None, Payload::default()).await;
    let queue = QueueName::new("q").unwrap();
    let page = s.get("/queues/q").await;
    assert!(page.text.contains("action=\"/queues/q/pause\""));
    let csrf = page.csrf().unwrap();
    let res = s.post("/queues/q/pause", &[("csrf", &csrf)]).await;
    assert_eq!(res.status, 303);
    assert_eq!(res.location(), "/queues/q?done=paused");
    assert!(s.store.get_queue(&queue).await.unwrap().paused);
    let page = s.get("/queues/q").await;
    assert!(page.text.contains("paused"));
    assert!(page.text.contains("action=\"/queues/q/resume\""));
    assert!(s.get("/").await.text.contains("paused"));

    let res = s.post("/queues/q/resume", &[("csrf", &csrf)]).await;
    assert_eq!(res.status, 303);
    assert!(!s.store.get_queue(&queue).await.unwrap().paused);
}

#[tokio::test]
async fn every_dead_task_of_a_queue_is_retried() {
    let s = Admin::open().await;
    for _ in 0..3 {
        s.failed("q", 1, true, "poison").await;
    }
    let page = s.get("/queues/q?state=dead").await;
    assert!(page.text.contains("Retry all 3 dead tasks"));
    let res = s
        .post("/queues/q/retry", &[("csrf", &page.csrf().unwrap())])
        .await;
    assert_eq!(res.status, 303);
    assert_eq!(res.location(), "/queues/q?state=dead&done=retried&n=3");
    let stats = s.store.stats().await.unwrap();
    assert_eq!((stats[0].counts.dead, stats[0].counts.ready), (0, 3));
    assert!(s
        .get(res.location())
        .await
        .text
        .contains("Retried 3 dead tasks"));
}

#[tokio::test]
async fn actions_without_the_csrf_token_change_nothing() {
    let s = Admin::open().await;
    let dead = s.failed("q", 1, true, "poison").await;
    let live = s.enqueue("q", None, Payload::default()).await;
    let before = s.counts().await;
    let forged = [
        vec![],
        vec![("csrf", "")],
        vec![("csrf", "AAAA")],
        vec![("csrf", "not base64 at all")],
    ];
    for fields in &forged {
        for path in [
            format!("/tasks/{dead}/retry"),
            format!("/tasks/{dead}/delete"),
            format!("/tasks/{live}/cancel"),
            "/queues/q/pause".to_string(),
            "/queues/q/retry".to_string(),
        ] {
            let res = s.post(&path, fields).await;
            res.assert_page(403);
            assert!(res.text.contains("expired"), "{path}");
        }
    }
    assert_eq!(s.counts().await, before);
}

#[tokio::test]
async fn actions_answer_post_only() {
    let s = Admin::open().await;
    let dead = s.failed("q", 1, true, "poison").await;
    for path in [
        format!("/tasks/{dead}/retry"),
        format!("/tasks/{dead}/delete"),
        format!("/tasks/{dead}/cancel"),
        "/queues/q/pause".to_string(),
    ] {
        let res = s.send(Method::GET, &path, &[], None).await;
        assert_eq!(res.status, 405, "{path}");
    }
    assert_eq!(
        s.store.get(TaskRef::Id(dead)).await.unwrap().state,
        TaskState::Dead
    );
}
