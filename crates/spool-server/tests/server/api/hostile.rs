//! Malformed and hostile requests: each gets a 4xx with the JSON error
//! shape, and none changes anything (counts are compared before and after).

use reqwest::StatusCode;

use crate::api::support::{raw, TestServer};

/// One hostile request: what is sent and what must come back.
struct Case {
    what: &'static str,
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
}

fn case(
    what: &'static str,
    method: &'static str,
    path: &str,
    body: &str,
    status: u16,
    code: &'static str,
) -> Case {
    Case {
        what,
        method,
        path: path.to_string(),
        content_type: Some("application/json"),
        body: body.as_bytes().to_vec(),
        status,
        code,
    }
}

fn enqueue(what: &'static str, body: &str) -> Case {
    case(
        what,
        "POST",
        "/v1/queues/victim/tasks",
        body,
        400,
        "bad_request",
    )
}

fn claim(what: &'static str, body: &str) -> Case {
    case(
        what,
        "POST",
        "/v1/queues/victim/claim",
        body,
        400,
        "bad_request",
    )
}

fn cases(task: u64) -> Vec<Case> {
    let deep = format!("{{\"kind\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
    let too_many: String = {
        let items = vec!["{}"; 10_001].join(",");
        format!("{{\"tasks\":[{items}]}}")
    };
    let too_many_acks: String = {
        let items = vec![r#"{"id":1,"token":"x"}"#; 10_001].join(",");
        format!("{{\"acks\":[{items}]}}")
    };
    let ack = format!("/v1/tasks/{task}/ack");
    let mut v = vec![
        enqueue("invalid JSON", "{"),
        enqueue("trailing garbage", "{} x"),
        enqueue("empty body", ""),
        enqueue("array body", "[]"),
        enqueue("null body", "null"),
        enqueue("string priority", r#"{"priority":"high"}"#),
        enqueue("priority above i16", r#"{"priority":40000}"#),
        enqueue("priority below i16", r#"{"priority":-40000}"#),
        enqueue("fractional priority", r#"{"priority":1.5}"#),
        enqueue("negative max_attempts", r#"{"max_attempts":-1}"#),
        enqueue("zero max_attempts", r#"{"max_attempts":0}"#),
        enqueue("max_attempts above u32", r#"{"max_attempts":4294967296}"#),
        enqueue("negative delay", r#"{"delay_ms":-5}"#),
        enqueue("huge delay", r#"{"delay_ms":99999999999999999999999}"#),
        enqueue("delay as float exponent", r#"{"delay_ms":1e20}"#),
        enqueue(
            "delay past year 9999",
            r#"{"delay_ms":18446744073709551615}"#,
        ),
        enqueue("zero lease_ms", r#"{"lease_ms":0}"#),
        enqueue(
            "payload and payload_base64",
            r#"{"payload":1,"payload_base64":"AA=="}"#,
        ),
        enqueue(
            "null payload and payload_base64",
            r#"{"payload":null,"payload_base64":"AA=="}"#,
        ),
        enqueue(
            "run_at and delay_ms",
            r#"{"run_at":"2030-01-01T00:00:00Z","delay_ms":5}"#,
        ),
        enqueue("bad base64", r#"{"payload_base64":"!!!!"}"#),
        enqueue("unpadded base64", r#"{"payload_base64":"AAA"}"#),
        enqueue("url-safe base64", r#"{"payload_base64":"-_-_"}"#),
        enqueue("base64 as number", r#"{"payload_base64":12}"#),
        enqueue("run_at not a time", r#"{"run_at":"tomorrow"}"#),
        enqueue("run_at as number", r#"{"run_at":1700000000000}"#),
        enqueue("run_at without zone", r#"{"run_at":"2030-01-01T00:00:00"}"#),
        enqueue("run_at month 13", r#"{"run_at":"2030-13-01T00:00:00Z"}"#),
        enqueue("unknown field", r#"{"payloda":1}"#),
        enqueue("duplicate field", r#"{"priority":1,"priority":2}"#),
        enqueue("tasks not an array", r#"{"tasks":"x"}"#),
        enqueue(
            "tasks with a bad kind",
            r#"{"tasks":[{"kind":"bad kind"}]}"#,
        ),
        enqueue("tasks mixed with fields", r#"{"tasks":[],"kind":"x"}"#),
        enqueue("batch of 10001", &too_many),
        enqueue("kind with non-ascii", r#"{"kind":"é"}"#),
        enqueue("empty kind", r#"{"kind":""}"#),
        enqueue(
            "kind of 129 chars",
            &format!(r#"{{"kind":"{}"}}"#, "k".repeat(129)),
        ),
        enqueue(
            "key of 257 bytes",
            &format!(r#"{{"key":"{}"}}"#, "k".repeat(257)),
        ),
        enqueue("empty key", r#"{"key":""}"#),
        enqueue("deep nesting", &deep),
        Case {
            body: b"{\"kind\":\"\xff\xfe\"}".to_vec(),
            ..enqueue("invalid UTF-8", "")
        },
        case(
            "queue with a space",
            "POST",
            "/v1/queues/a%20b/tasks",
            "{}",
            400,
            "bad_request",
        ),
        case(
            "queue ..",
            "POST",
            "/v1/queues/../tasks",
            "{}",
            400,
            "bad_request",
        ),
        case(
            "queue . ",
            "POST",
            "/v1/queues/./tasks",
            "{}",
            400,
            "bad_request",
        ),
        case(
            "queue %2E%2E",
            "POST",
            "/v1/queues/%2E%2E/tasks",
            "{}",
            400,
            "bad_request",
        ),
        case(
            "queue of 129 chars",
            "POST",
            &format!("/v1/queues/{}/tasks", "q".repeat(129)),
            "{}",
            400,
            "bad_request",
        ),
        case(
            "queue with a slash",
            "GET",
            "/v1/queues/a%2Fb",
            "",
            400,
            "bad_request",
        ),
        Case {
            content_type: Some("text/plain"),
            ..case(
                "text/plain body",
                "POST",
                "/v1/queues/victim/tasks",
                "{}",
                415,
                "unsupported_media_type",
            )
        },
        Case {
            content_type: None,
            ..case(
                "no content type",
                "POST",
                "/v1/queues/victim/tasks",
                "{}",
                415,
                "unsupported_media_type",
            )
        },
        Case {
            content_type: Some("application/x-www-form-urlencoded"),
            ..case(
                "form body",
                "POST",
                "/v1/queues/victim/claim",
                "worker=w",
                415,
                "unsupported_media_type",
            )
        },
        Case {
            content_type: Some("application/jsonp"),
            ..case(
                "near-JSON type",
                "POST",
                "/v1/ack",
                "{}",
                415,
                "unsupported_media_type",
            )
        },
        claim("max 0", r#"{"worker":"w","max":0}"#),
        claim("max 1001", r#"{"worker":"w","max":1001}"#),
        claim("max as string", r#"{"worker":"w","max":"5"}"#),
        claim("max fractional", r#"{"worker":"w","max":1.5}"#),
        claim("wait_ms 30001", r#"{"worker":"w","wait_ms":30001}"#),
        claim("negative wait", r#"{"worker":"w","wait_ms":-1}"#),
        claim("negative lease", r#"{"worker":"w","lease_ms":-1}"#),
        claim("zero lease", r#"{"worker":"w","lease_ms":0}"#),
        claim("missing worker", r#"{"max":1}"#),
        claim("empty worker", r#"{"worker":""}"#),
        claim(
            "worker of 257 bytes",
            &format!(r#"{{"worker":"{}"}}"#, "w".repeat(257)),
        ),
        case("ack without token", "POST", &ack, "{}", 400, "bad_request"),
        case(
            "ack with a numeric token",
            "POST",
            &ack,
            r#"{"token":12}"#,
            400,
            "bad_request",
        ),
        case(
            "ack with a bad reschedule_at",
            "POST",
            &ack,
            r#"{"token":"0000000000000001","reschedule_at":"soon"}"#,
            400,
            "bad_request",
        ),
        case(
            "ack id not a number",
            "POST",
            "/v1/tasks/abc/ack",
            r#"{"token":"x"}"#,
            400,
            "bad_request",
        ),
        case(
            "ack id negative",
            "POST",
            "/v1/tasks/-1/ack",
            r#"{"token":"x"}"#,
            400,
            "bad_request",
        ),
        case(
            "ack id over u64",
            "POST",
            "/v1/tasks/18446744073709551616/ack",
            r#"{"token":"x"}"#,
            400,
            "bad_request",
        ),
        case(
            "fail without message",
            "POST",
            &format!("/v1/tasks/{task}/fail"),
            r#"{"token":"x"}"#,
            400,
            "bad_request",
        ),
        case(
            "fail with discard as string",
            "POST",
            &format!("/v1/tasks/{task}/fail"),
            r#"{"token":"x","message":"m","discard":"yes"}"#,
            400,
            "bad_request",
        ),
        case(
            "extend with zero lease",
            "POST",
            &format!("/v1/tasks/{task}/extend"),
            r#"{"token":"x","lease_ms":0}"#,
            400,
            "bad_request",
        ),
        case(
            "extend with a lease of 1000 years",
            "POST",
            &format!("/v1/tasks/{task}/extend"),
            r#"{"token":"x","lease_ms":31536000000000}"#,
            400,
            "bad_request",
        ),
        case(
            "batch ack not an array",
            "POST",
            "/v1/ack",
            r#"{"acks":{}}"#,
            400,
            "bad_request",
        ),
        case(
            "batch ack of 10001",
            "POST",
            "/v1/ack",
            &too_many_acks,
            400,
            "bad_request",
        ),
        case(
            "patch with both payloads",
            "PATCH",
            &format!("/v1/tasks/{task}"),
            r#"{"payload":1,"payload_base64":""}"#,
            400,
            "bad_request",
        ),
        case(
            "patch priority out of range",
            "PATCH",
            &format!("/v1/tasks/{task}"),
            r#"{"priority":99999}"#,
            400,
            "bad_request",
        ),
        case(
            "patch unknown field",
            "PATCH",
            &format!("/v1/tasks/{task}"),
            r#"{"state":"dead"}"#,
            400,
            "bad_request",
        ),
        case(
            "list limit 0",
            "GET",
            "/v1/queues/victim/tasks?limit=0",
            "",
            400,
            "bad_request",
        ),
        case(
            "list limit 1001",
            "GET",
            "/v1/queues/victim/tasks?limit=1001",
            "",
            400,
            "bad_request",
        ),
        case(
            "list limit negative",
            "GET",
            "/v1/queues/victim/tasks?limit=-1",
            "",
            400,
            "bad_request",
        ),
        case(
            "list unknown state",
            "GET",
            "/v1/queues/victim/tasks?state=done",
            "",
            400,
            "bad_request",
        ),
        case(
            "list unknown order",
            "GET",
            "/v1/queues/victim/tasks?order=random",
            "",
            400,
            "bad_request",
        ),
        case(
            "list unknown parameter",
            "GET",
            "/v1/queues/victim/tasks?stat=dead",
            "",
            400,
            "bad_request",
        ),
        case(
            "list bad cursor",
            "GET",
            "/v1/queues/victim-target/tasks?cursor=%00%FFnot-a-cursor",
            "",
            400,
            "bad_request",
        ),
        case(
            "settings max_payload over 64 MiB",
            "PUT",
            "/v1/queues/victim",
            r#"{"max_payload":1099511627776}"#,
            400,
            "bad_request",
        ),
        case(
            "settings max_attempts 0",
            "PUT",
            "/v1/queues/victim",
            r#"{"max_attempts":0}"#,
            400,
            "bad_request",
        ),
        case(
            "settings backoff base over max",
            "PUT",
            "/v1/queues/victim",
            r#"{"backoff_base_ms":10,"backoff_max_ms":1}"#,
            400,
            "bad_request",
        ),
        case(
            "settings lease 0",
            "PUT",
            "/v1/queues/victim",
            r#"{"lease_ms":0}"#,
            400,
            "bad_request",
        ),
        case(
            "settings paused as number",
            "PUT",
            "/v1/queues/victim",
            r#"{"paused":1}"#,
            400,
            "bad_request",
        ),
        case(
            "unknown route",
            "GET",
            "/v2/everything",
            "",
            404,
            "not_found",
        ),
        case(
            "unknown route under v1",
            "GET",
            "/v1/tasks",
            "",
            404,
            "not_found",
        ),
        case(
            "path traversal",
            "GET",
            "/v1/../../etc/passwd",
            "",
            404,
            "not_found",
        ),
        case(
            "wrong method on queues",
            "DELETE",
            "/v1/queues",
            "",
            405,
            "method_not_allowed",
        ),
        case(
            "wrong method on ack",
            "PUT",
            &ack,
            "{}",
            405,
            "method_not_allowed",
        ),
        case(
            "GET on batch ack",
            "GET",
            "/v1/ack",
            "",
            405,
            "method_not_allowed",
        ),
        case(
            "made-up method",
            "FROB",
            "/v1/queues",
            "",
            405,
            "method_not_allowed",
        ),
    ];
    v.push(case(
        "payload over the queue's max_payload",
        "POST",
        "/v1/queues/tiny/tasks",
        r#"{"tasks":[{"payload":1},{"payload":"far too long"}]}"#,
        413,
        "payload_too_large",
    ));
    // A body whose declared length is over the 16 MiB limit: refused
    // before it is read.
    v.push(Case {
        what: "declared body over 16 MiB",
        method: "POST",
        path: "/v1/queues/victim/tasks".into(),
        content_type: Some("application/json"),
        body: Vec::new(),
        status: 413,
        code: "payload_too_large",
    });
    v
}

#[tokio::test]
async fn hostile_requests_get_json_4xx_and_change_nothing() {
    let s = TestServer::start().await;
    // Something to aim at: a live, leased task and another queue's counts.
    s.enqueue("bystander", r#"{"payload":1}"#).await;
    let task = s.enqueue("victim-target", "{}").await;
    s.claim_one("victim-target").await;
    let tiny = s
        .send(
            reqwest::Method::PUT,
            "/v1/queues/tiny",
            Some(r#"{"max_payload":4}"#),
        )
        .await;
    assert_eq!(tiny.status, StatusCode::OK);
    let before = s.counts().await;

    let all = cases(task);
    assert!(all.len() >= 40, "only {} cases", all.len());
    for c in &all {
        let mut head = format!("{} {} HTTP/1.1", c.method, c.path);
        if let Some(ct) = c.content_type {
            head.push_str(&format!("\r\nContent-Type: {ct}"));
        }
        if c.what == "declared body over 16 MiB" {
            head.push_str(&format!("\r\nContent-Length: {}", 16 * 1024 * 1024 + 1));
        } else {
            head.push_str(&format!("\r\nContent-Length: {}", c.body.len()));
        }
        let a = raw(&s.addr(), &head, &c.body).await;
        assert_eq!(a.status.as_u16(), c.status, "{}: {}", c.what, a.text);
        assert_eq!(a.json["error"]["code"], c.code, "{}: {}", c.what, a.text);
        assert!(
            a.json["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{}: {}",
            c.what,
            a.text
        );
        let ct = a
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert!(ct.starts_with("application/json"), "{}: {ct}", c.what);
    }

    let health = s.get("/healthz").await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(s.counts().await, before, "a hostile request changed state");
    s.get("/v1/queues/victim")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn an_oversize_body_that_is_really_sent_gets_413() {
    let s = TestServer::start().await;
    let before = s.counts().await;
    let big = format!(r#"{{"payload":"{}"}}"#, "x".repeat(16 * 1024 * 1024));
    let res = s
        .client
        .post(s.url("/v1/queues/victim/tasks"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await;
    // The server answers as soon as it sees the length; a client still
    // sending may see the connection close instead of the answer.
    if let Ok(res) = res {
        crate::api::support::Answer::from(res)
            .await
            .assert_error(413, "payload_too_large");
    }
    assert_eq!(s.counts().await, before);
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_gets_413() {
    let s = TestServer::with_config(spool_server::ServerConfig {
        max_body: 1024,
        ..spool_server::ServerConfig::default()
    })
    .await;
    let payload = "y".repeat(2000);
    let json = format!(r#"{{"payload":"{payload}"}}"#);
    let body = format!("{:x}\r\n{json}\r\n0\r\n\r\n", json.len());
    let a = raw(
        &s.addr(),
        "POST /v1/queues/victim/tasks HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked",
        body.as_bytes(),
    )
    .await;
    a.assert_error(413, "payload_too_large");
    assert_eq!(s.counts().await["queues"], serde_json::json!([]));
}

#[tokio::test]
async fn too_many_or_too_large_headers_get_431() {
    let s = TestServer::start().await;
    let many: String = (0..150).map(|i| format!("\r\nX-H{i}: v")).collect();
    let a = raw(&s.addr(), &format!("GET /v1/queues HTTP/1.1{many}"), b"").await;
    a.assert_error(431, "headers_too_large");

    let big = format!(
        "GET /v1/queues HTTP/1.1\r\nX-Big: {}",
        "b".repeat(100 * 1024)
    );
    let a = raw(&s.addr(), &big, b"").await;
    a.assert_error(431, "headers_too_large");

    // Far past the limits hyper itself refuses the head (no JSON possible).
    let huge = format!(
        "GET /v1/queues HTTP/1.1\r\nX-Huge: {}",
        "h".repeat(1024 * 1024)
    );
    let a = raw(&s.addr(), &huge, b"").await;
    assert_eq!(a.status.as_u16(), 431);

    assert_eq!(s.get("/healthz").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_batch_of_millions_of_tiny_items_is_refused_at_the_limit_not_after_parsing_all() {
    let s = TestServer::start().await;
    let before = s.counts().await;
    // Just under the 16 MiB body limit: about 5.6 million `{}` items, each
    // of which was parsed (and ~200 bytes in memory) before the batch
    // limit was checked. Parsing now stops at item 10,001, so the answer
    // cannot know, nor say, how many items there were.
    let n = (16 * 1024 * 1024 - 20) / 3;
    let tasks = format!(r#"{{"tasks":[{}{{}}]}}"#, "{},".repeat(n - 1));
    let acks = format!(
        r#"{{"acks":[{}{{"id":1,"token":"x"}}]}}"#,
        r#"{"id":1,"token":"x"},"#.repeat(700_000)
    );
    for (path, body, items) in [
        ("/v1/queues/victim/tasks", tasks, n),
        ("/v1/ack", acks, 700_001),
    ] {
        let a = s.post(path, &body).await;
        a.assert_error(400, "bad_request");
        let message = a.json["error"]["message"].as_str().unwrap();
        assert!(message.contains("at most 10000"), "{path}: {message}");
        assert!(!message.contains(&items.to_string()), "{path}: {message}");
    }
    assert_eq!(s.counts().await, before);
}
