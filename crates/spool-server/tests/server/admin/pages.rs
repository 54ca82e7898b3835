//! Every page renders what it should, as text, with the admin headers.

use std::time::Duration;

use spool_core::{
    Ack, Cadence, ClaimRequest, Kind, NewTask, Payload, QueueChange, QueueName, RateLimit,
    ScheduleSpec, TaskGroup,
};

use crate::admin::support::Admin;

#[tokio::test]
async fn the_overview_shows_counts_per_state_and_per_kind() {
    let s = Admin::open().await;
    let empty = s.get("/").await;
    empty.assert_page(200);
    assert!(empty.text.contains("No queues yet"));

    for _ in 0..3 {
        s.enqueue("emails", Some("welcome"), Payload::default())
            .await;
    }
    s.enqueue("emails", Some("digest"), Payload::default())
        .await;
    s.failed("billing", 1, true, "card declined").await;
    let page = s.get("/").await;
    page.assert_page(200);
    for text in [
        "emails",
        "welcome",
        "digest",
        "billing",
        "Enqueued",
        "Completed",
    ] {
        assert!(page.text.contains(text), "{text} missing");
    }
    assert!(page.links().contains(&"/queues/emails".to_string()));
    // The emails row: 0 scheduled, 4 ready, 0 leased, 0 dead, 0 pending,
    // as text.
    assert_eq!(count_cells(&page.text, "emails"), ["0", "4", "0", "0", "0"]);
    assert!(page.text.contains("<svg") || page.text.contains("Collecting samples"));
}

/// The overview's counts of `queue`, one per state, as the cells read.
fn count_cells<'a>(overview: &'a str, queue: &str) -> Vec<&'a str> {
    let row = overview
        .split(&format!("href=\"/queues/{queue}\""))
        .nth(1)
        .unwrap();
    row.split("<td")
        .skip(1)
        .take(spool_core::TaskState::ALL.len())
        .map(|c| c.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect()
}

#[tokio::test]
async fn pages_carry_the_admin_headers_and_refresh_themselves() {
    let s = Admin::open().await;
    let id = s.enqueue("q", None, Payload::default()).await;
    for path in ["/", "/queues/q", &format!("/tasks/{id}"), "/schedules"] {
        let page = s.get(path).await;
        page.assert_page(200);
        let csp = page.header("content-security-policy");
        assert!(
            csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{path}"
        );
        assert_eq!(page.header("x-frame-options"), "DENY");
        assert_eq!(page.header("cache-control"), "no-store");
        assert!(page.text.contains("data-refresh=\"5\""), "{path}");
        assert!(
            page.text.contains("<noscript><meta http-equiv=\"refresh\""),
            "{path}"
        );
        assert!(page.text.contains("<html lang=\"en\">"), "{path}");
        assert!(page.text.contains("name=\"viewport\""), "{path}");
    }
}

#[tokio::test]
async fn a_queue_lists_its_tasks_by_attempts_descending() {
    let s = Admin::open().await;
    let none = s.failed("work", 0, false, "x").await;
    let two = s.failed("work", 2, false, "timeout").await;
    let five = s.failed("work", 5, false, "boom").await;
    let dead = s.failed("work", 3, true, "poison").await;
    let page = s.get("/queues/work").await;
    page.assert_page(200);
    assert_eq!(
        page.task_ids(),
        vec![five.0, dead.0, two.0, none.0],
        "most attempts first"
    );
    assert!(page.text.contains("5 / 20"), "attempts as text");
    assert!(page.text.contains("boom #5"), "the last error");
    assert!(page.text.contains("Pause queue"));

    let dead_only = s.get("/queues/work?state=dead").await;
    dead_only.assert_page(200);
    assert_eq!(dead_only.task_ids(), vec![dead.0]);
    assert!(dead_only.text.contains("Retry 1 dead task"));
    let ready_only = s.get("/queues/work?state=ready").await;
    assert_eq!(ready_only.task_ids().len(), 3);
}

#[tokio::test]
async fn a_queue_shows_its_limits_and_their_use() {
    let s = Admin::open().await;
    let q = QueueName::new("metered").unwrap();
    let change = QueueChange {
        rate_limit: Some(Some(RateLimit {
            limit: 100,
            period: Duration::from_secs(1),
            burst: 20,
        })),
        max_leased: Some(Some(5)),
        ..QueueChange::default()
    };
    s.store.put_queue(&q, change).await.unwrap();
    for _ in 0..3 {
        s.enqueue("metered", None, Payload::json(&b"1"[..])).await;
    }
    s.enqueue("other", None, Payload::json(&b"1"[..])).await;
    let claimed = s
        .store
        .claim(ClaimRequest::new(q, "w").max(2))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 2);
    let page = s.get("/queues/metered").await;
    page.assert_page(200);
    let (_, rest) = page
        .text
        .split_once("Rate limit: 100 per 1 s, in bursts of at most 20; ")
        .unwrap_or_else(|| panic!("no rate limit line: {}", page.text));
    let (left, _) = rest
        .split_once(" of 20 left now.")
        .unwrap_or_else(|| panic!("no tokens left: {rest}"));
    // 18 after the claim, refilling at 100/s while the page is read.
    let left: u32 = left.parse().unwrap();
    assert!((18..=20).contains(&left), "{left} tokens left");
    assert!(
        page.text.contains("Leased: 2 of at most 5."),
        "{}",
        page.text
    );
    let plain = s.get("/queues/other").await;
    assert!(!plain.text.contains("Rate limit"));
}

#[tokio::test]
async fn a_queue_shows_its_busiest_groups_escaped() {
    let s = Admin::open().await;
    let q = QueueName::new("fair").unwrap();
    let change = QueueChange {
        group_concurrency: Some(Some(2)),
        group_rate_limit: Some(Some(RateLimit {
            limit: 10,
            period: Duration::from_secs(1),
            burst: 5,
        })),
        ..QueueChange::default()
    };
    s.store.put_queue(&q, change).await.unwrap();
    let task = |group: &str| NewTask::new(Payload::default()).group(TaskGroup::new(group).unwrap());
    s.store.enqueue(&q, vec![task("leasy")]).await.unwrap();
    let claimed = s
        .store
        .claim(ClaimRequest::new(q.clone(), "w"))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    let hostile = "<b>acme & \"co\"</b> ü";
    s.store
        .enqueue(&q, vec![task(hostile), task(hostile), task("small")])
        .await
        .unwrap();
    let page = s.get("/queues/fair").await;
    page.assert_page(200);
    assert!(
        page.text.contains("Per group: at most 2 leased."),
        "{}",
        page.text
    );
    assert!(
        page.text
            .contains("Rate limit of each group: 10 per 1 s, in bursts of at most 5."),
        "{}",
        page.text
    );
    let groups = page
        .text
        .split("id=\"groups-heading\"")
        .nth(1)
        .unwrap_or_else(|| panic!("no groups section: {}", page.text));
    assert!(!groups.contains("<b>acme"), "unescaped: {groups}");
    let rows: Vec<&str> = groups.split("<tr>").skip(2).collect();
    assert_eq!(rows.len(), 3, "{groups}");
    assert!(
        rows[0].contains("&lt;b&gt;acme &amp; &quot;co&quot;&lt;/b&gt; ü")
            && rows[0].contains(">2<"),
        "most waiting first: {}",
        rows[0]
    );
    assert!(rows[1].contains(">small<"), "{}", rows[1]);
    assert!(
        rows[2].contains(">leasy<") && rows[2].contains("1 of 2"),
        "{}",
        rows[2]
    );
    assert!(groups.contains(">Tokens left<"), "{groups}");
    for row in &rows {
        assert!(row.contains(" of 5</td>"), "tokens of the burst: {row}");
    }
}

#[tokio::test]
async fn a_queue_pages_with_the_store_cursor() {
    let s = Admin::open().await;
    let queue = QueueName::new("many").unwrap();
    let tasks = (0..120)
        .map(|_| spool_core::NewTask::new(Payload::default()))
        .collect();
    s.store.enqueue(&queue, tasks).await.unwrap();
    let mut seen = Vec::new();
    let mut path = "/queues/many".to_string();
    for expected in [50, 50, 20] {
        let page = s.get(&path).await;
        page.assert_page(200);
        let ids = page.task_ids();
        assert_eq!(ids.len(), expected, "{path}");
        seen.extend(ids);
        let next = page.links().into_iter().find(|l| l.contains("cursor="));
        if expected == 20 {
            assert!(next.is_none(), "the last page has no next");
        } else {
            assert!(page.text.contains("Next page"));
            path = next.expect("a next page");
        }
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 120, "every task once");
}

#[tokio::test]
async fn a_task_shows_its_payload_errors_and_lease() {
    let s = Admin::open().await;
    let json = s
        .enqueue(
            "q",
            Some("welcome"),
            Payload::json(&br#"{"to":"a@example.com","n":12345678901234567890}"#[..]),
        )
        .await;
    let page = s.get(&format!("/tasks/{json}")).await;
    page.assert_page(200);
    assert!(page.text.contains("Task 1"));
    assert!(page.text.contains("welcome"));
    assert!(
        page.text.contains("{\n  &quot;to&quot;: &quot;a@example.com&quot;,\n  &quot;n&quot;: 12345678901234567890\n}"),
        "indented, exact JSON: {}",
        page.text
    );
    assert!(page.text.contains("No failures recorded"));

    let binary = s
        .enqueue("q", None, Payload::binary(&b"\x00\x01\xfe\xff"[..]))
        .await;
    let page = s.get(&format!("/tasks/{binary}")).await;
    assert!(page.text.contains("bytes, base64"));
    assert!(page.text.contains("AAH+/w=="));

    let failing = s.failed("q", 2, false, "timed out").await;
    let leased = s.claim_until("q", failing).await;
    let page = s.get(&format!("/tasks/{failing}")).await;
    page.assert_page(200);
    assert!(page.text.contains("timed out #1") && page.text.contains("timed out #2"));
    assert!(page.text.contains("Attempt 2"));
    assert!(page.text.contains("3 of 20"), "attempts as text");
    assert!(page.text.contains("Leased by") && page.text.contains("tester"));
    assert!(page.text.contains("lease ends <time") && page.text.contains(">in "));
    assert!(
        !page.text.contains(&leased.lease.unwrap().token.to_string()),
        "no lease token"
    );
    assert!(
        !page.text.contains("Delete…"),
        "only dead tasks can be deleted"
    );
}

#[tokio::test]
async fn schedules_show_their_last_and_next_fire() {
    let s = Admin::open().await;
    let empty = s.get("/schedules").await;
    empty.assert_page(200);
    assert!(empty.text.contains("No schedules"));

    let name = Kind::new("heartbeat").unwrap();
    s.store
        .put_schedule(ScheduleSpec {
            name: name.clone(),
            queue: QueueName::new("health").unwrap(),
            kind: None,
            payload: Payload::default(),
            cadence: Cadence::Every(Duration::from_secs(1)),
            deadline: None,
        })
        .await
        .unwrap();
    s.store
        .put_schedule(ScheduleSpec {
            name: Kind::new("nightly").unwrap(),
            queue: QueueName::new("reports").unwrap(),
            kind: Some(Kind::new("build").unwrap()),
            payload: Payload::default(),
            cadence: Cadence::Cron {
                expr: "0 0 2 * * *".into(),
                tz: Some("Europe/Paris".into()),
            },
            deadline: Some(Duration::from_secs(60)),
        })
        .await
        .unwrap();
    let row = |page: &str| -> String {
        let row = page.split(">heartbeat<").nth(1).unwrap();
        row.split("</tr>").next().unwrap().to_string()
    };
    let page = s.get("/schedules").await;
    page.assert_page(200);
    for text in [
        "every 1 s",
        "nightly",
        "0 0 2 * * *",
        "Europe/Paris",
        ">build<",
        ">health<",
        "1 min",
        "in ",
    ] {
        assert!(page.text.contains(text), "{text} missing: {}", page.text);
    }
    assert!(row(&page.text).contains("never"), "not fired yet");

    // Fire the first tick once it is due, as a scheduler would.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let now = s.store.now().await.unwrap();
    let schedules = s.store.list_schedules().await.unwrap();
    let heartbeat = schedules.iter().find(|x| x.spec.name == name).unwrap();
    let tick = heartbeat.due(now).unwrap();
    s.store.fire_schedule(&name, tick).await.unwrap().unwrap();
    let page = s.get("/schedules").await;
    let fired = row(&page.text);
    assert!(!fired.contains("never"), "fired: {fired}");
    assert_eq!(
        fired.matches("<time").count(),
        2,
        "last and next fire: {fired}"
    );
}

#[tokio::test]
async fn assets_are_served_from_the_binary() {
    let s = Admin::open().await;
    let page = s.get("/").await;
    let css = page
        .links()
        .into_iter()
        .find(|l| l.starts_with("/assets/admin.css"))
        .unwrap();
    let a = s.get(&css).await;
    assert_eq!(a.status, 200);
    assert!(a.header("content-type").starts_with("text/css"));
    assert!(a.text.contains("prefers-color-scheme"));
    let js = s.get("/assets/admin.js").await;
    assert!(js.header("content-type").starts_with("text/javascript"));
    s.get("/assets/nope.css").await.assert_page(404);
    s.get("/assets/..%2Fsecret").await.assert_page(404);
}

#[tokio::test]
async fn a_pending_task_shows_what_it_waits_for_and_counts_as_pending() {
    use spool_core::{Parent, ParentFailure};

    let s = Admin::open().await;
    let first = s.enqueue("etl", None, Payload::default()).await;
    let second = s.enqueue("etl", None, Payload::default()).await;
    let child = NewTask::new(Payload::default())
        .after(Parent::Task(first))
        .after(Parent::Task(second))
        .if_parent_fails(ParentFailure::Run);
    let q = QueueName::new("etl").unwrap();
    let child = s.store.enqueue(&q, vec![child]).await.unwrap()[0].id;
    let leased = s.claim_until("etl", first).await;
    s.store
        .ack(first, leased.lease.unwrap().token, Ack::Done)
        .await
        .unwrap();

    let page = s.get(&format!("/tasks/{child}")).await;
    page.assert_page(200);
    assert!(page.text.contains("state-pending"), "{}", page.text);
    assert!(page.text.contains("Waits for"));
    assert!(page.text.contains("1 of 2 tasks"), "{}", page.text);
    assert!(page.text.contains("run it anyway"));
    let links = page.links();
    for parent in [first, second] {
        assert!(links.contains(&format!("/tasks/{parent}")), "{links:?}");
    }
    let plain = s.get(&format!("/tasks/{second}")).await;
    assert!(
        !plain.text.contains("Waits for"),
        "only a task with parents"
    );

    // The overview's etl row: scheduled, ready, leased, dead, pending.
    let overview = s.get("/").await;
    assert_eq!(
        count_cells(&overview.text, "etl"),
        ["0", "1", "0", "0", "1"]
    );
    let pending = s.get("/queues/etl?state=pending").await;
    pending.assert_page(200);
    assert_eq!(pending.task_ids(), [child.0]);
}

#[tokio::test]
async fn a_dependent_shows_its_parents_results_escaped_and_cut() {
    use spool_core::{Parent, TaskResult};

    let s = Admin::open().await;
    let hostile = s.enqueue("flow", None, Payload::default()).await;
    let long = s.enqueue("flow", None, Payload::default()).await;
    let plain = s.enqueue("flow", None, Payload::default()).await;
    let child = NewTask::new(Payload::default())
        .after(Parent::Task(hostile))
        .after(Parent::Task(long))
        .after(Parent::Task(plain));
    let q = QueueName::new("flow").unwrap();
    let child = s.store.enqueue(&q, vec![child]).await.unwrap()[0].id;
    let results = [
        (
            hostile,
            Some(r#"{ "note": "<script>alert(1)</script> & \"q\"" }"#.to_string()),
        ),
        (long, Some(format!(r#"["{}","tail"]"#, "z".repeat(300)))),
        (plain, None),
    ];
    for (id, result) in results {
        let leased = s.claim_until("flow", id).await;
        let ack = match result {
            Some(json) => Ack::Result(TaskResult::from_json(&json).unwrap()),
            None => Ack::Done,
        };
        let token = leased.lease.unwrap().token;
        s.store.ack(id, token, ack).await.unwrap();
    }

    let page = s.get(&format!("/tasks/{child}")).await;
    page.assert_page(200);
    assert!(page.text.contains("Waits for"));
    // Compact, and escaped: the result's markup is text on the page.
    assert!(!page.text.contains("<script>alert"), "{}", page.text);
    let escaped = "{&quot;note&quot;:&quot;&lt;script&gt;alert(1)&lt;/script&gt; \
                   &amp; \\&quot;q\\&quot;&quot;}";
    assert!(page.text.contains(escaped), "{}", page.text);
    // A long one is cut on the page, whole in its tooltip.
    let cut = format!("[&quot;{}…", "z".repeat(78));
    assert!(page.text.contains(&cut), "{}", page.text);
    assert!(page.text.contains("tail&quot;]"), "whole in the title");
    // The quoted word, not "tail" alone: the page's <details> has it too.
    assert_eq!(
        page.text.matches("&quot;tail&quot;").count(),
        1,
        "only in the title"
    );
    // A parent acked without a result shows none.
    assert_eq!(page.text.matches(", result ").count(), 2, "{}", page.text);
}
