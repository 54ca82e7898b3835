//! Hostile input: bad ids, queue names, cursors and forms get a 4xx page,
//! never a 5xx, and change nothing; text from tasks is escaped.

use reqwest::Method;
use spool_core::{ClaimRequest, FailRequest, Payload, QueueName, TaskRef};

use crate::admin::support::Admin;

#[tokio::test]
async fn bad_paths_and_queries_get_4xx_pages() {
    let s = Admin::open().await;
    s.enqueue("q", None, Payload::default()).await;
    let long_name = "a".repeat(129);
    let long_cursor = "c".repeat(10_000);
    let cases: Vec<(String, u16)> = vec![
        ("/tasks/abc".into(), 400),
        ("/tasks/-1".into(), 400),
        ("/tasks/1.5".into(), 400),
        ("/tasks/99999999999999999999999".into(), 400),
        ("/tasks/%00".into(), 400),
        ("/tasks/18446744073709551615".into(), 404),
        ("/tasks/12345".into(), 404),
        ("/queues/bad%20name".into(), 400),
        ("/queues/a*b".into(), 400),
        ("/queues/%3Cscript%3E".into(), 400),
        (format!("/queues/{long_name}"), 400),
        ("/queues/nope".into(), 404),
        ("/queues/q?state=done".into(), 400),
        ("/queues/q?state=%FF".into(), 400),
        ("/queues/q?cursor=garbage".into(), 400),
        ("/queues/q?cursor=a:b:c".into(), 400),
        ("/queues/q?cursor=%FF%FE".into(), 400),
        (format!("/queues/q?cursor={long_cursor}"), 400),
        ("/queues/q?n=abc".into(), 400),
        ("/assets/%2e%2e%2fCargo.toml".into(), 404),
    ];
    for (path, status) in cases {
        let page = s.get(&path).await;
        assert_eq!(page.status.as_u16(), status, "{path}: {}", page.text);
        if page.is_html() {
            assert!(!page.text.contains("internal"), "{path}");
        }
    }
    // Unknown query parameters are ignored, like a browser's leftovers.
    s.get("/queues/q?utm_source=x&done=bogus")
        .await
        .assert_page(200);
}

#[tokio::test]
async fn hostile_actions_get_4xx_and_change_nothing() {
    let s = Admin::open().await;
    let dead = s.failed("q", 1, true, "poison").await;
    let live = s.enqueue("q", None, Payload::default()).await;
    let csrf = s.csrf("/queues/q").await;
    let before = s.counts().await;
    let form = [("csrf", csrf.as_str())];
    for (path, status) in [
        ("/tasks/abc/retry".to_string(), 400),
        ("/tasks/999999/retry".to_string(), 404),
        ("/tasks/999999/delete".to_string(), 404),
        ("/tasks/999999/cancel".to_string(), 404),
        (format!("/tasks/{dead}/cancel"), 400),
        (format!("/tasks/{live}/retry"), 400),
        (format!("/tasks/{live}/delete"), 400),
        ("/queues/bad%20name/pause".to_string(), 400),
        ("/queues/nope/pause".to_string(), 404),
        ("/queues/nope/retry".to_string(), 404),
    ] {
        let res = s.post(&path, &form).await;
        assert_eq!(res.status.as_u16(), status, "{path}: {}", res.text);
        assert!(res.is_html(), "{path}");
    }
    let path = format!("/tasks/{dead}/retry");
    let json = s
        .send(
            Method::POST,
            &path,
            &[("content-type", "application/json")],
            None,
        )
        .await;
    assert_eq!(json.status, 415, "{}", json.text);
    let huge = "x".repeat(64 * 1024);
    let big = s.post(&path, &[("csrf", &csrf), ("pad", &huge)]).await;
    assert_eq!(big.status, 413, "{}", big.text);
    let big_login = s.post("/login", &[("token", &huge)]).await;
    assert!(big_login.status.is_client_error() || big_login.status == 303);
    assert_eq!(s.counts().await, before);
}

#[tokio::test]
async fn text_from_tasks_is_escaped() {
    let s = Admin::open().await;
    let evil = "<script>alert(1)</script>";
    let id = s
        .enqueue(
            "q",
            None,
            Payload::json(format!(r#"{{"x":"{evil}"}}"#).into_bytes()),
        )
        .await;
    let q = QueueName::new("q").unwrap();
    let claimed = s
        .store
        .claim(ClaimRequest::new(q, "<b onmouseover=alert(2)>w</b>"))
        .await
        .unwrap();
    let token = claimed[0].lease.as_ref().unwrap().token;
    s.store
        .fail(
            id,
            token,
            FailRequest {
                retry_at: Some(spool_core::Timestamp(0)),
                ..FailRequest::new(format!("failed: {evil}"))
            },
        )
        .await
        .unwrap();
    let claimed = s
        .store
        .claim(ClaimRequest::new(
            QueueName::new("q").unwrap(),
            "<b onmouseover=alert(2)>w</b>",
        ))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    for path in [format!("/tasks/{id}"), "/queues/q".to_string()] {
        let page = s.get(&path).await;
        page.assert_page(200);
        assert!(!page.text.contains("<script>alert"), "{path}");
        assert!(!page.text.contains("<b onmouseover"), "{path}");
        assert!(page.text.contains("&lt;script&gt;"), "{path}");
    }
    assert!(s.store.get(TaskRef::Id(id)).await.is_ok());
}
