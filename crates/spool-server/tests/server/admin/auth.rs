//! With a token configured: a login form trades it for a session cookie;
//! every page and action needs the cookie or the bearer token; actions need
//! the session's own CSRF token. Without a token, pages are open.

use reqwest::Method;
use spool_core::{QueueName, TaskRef, TaskState};

use crate::admin::support::{Admin, BROWSER_ACCEPT};

const TOKEN: &str = "s3cret-admin-token";

#[tokio::test]
async fn a_browser_without_a_session_is_sent_to_the_login_form() {
    let s = Admin::with_token(TOKEN).await;
    for (path, next) in [
        ("/", "/login"),
        (
            "/queues/q?state=dead",
            "/login?next=%2Fqueues%2Fq%3Fstate%3Ddead",
        ),
        ("/tasks/1", "/login?next=%2Ftasks%2F1"),
        ("/schedules", "/login?next=%2Fschedules"),
    ] {
        let res = s.get(path).await;
        assert_eq!(res.status, 303, "{path}");
        assert_eq!(res.location(), next, "{path}");
    }
    let login = s.get("/login?next=%2Fschedules").await;
    login.assert_page(200);
    assert!(login.text.contains("<label for=\"token\">"));
    assert!(login.text.contains("type=\"password\""));
    assert!(login.text.contains("name=\"next\" value=\"/schedules\""));
    // The assets the login form needs are open; the API is not.
    assert_eq!(s.get("/assets/admin.css").await.status, 200);
    let api = s.send(Method::GET, "/v1/queues", &[], None).await;
    assert_eq!(api.status, 401);
}

#[tokio::test]
async fn clients_that_do_not_ask_for_html_get_the_api_401() {
    let s = Admin::with_token(TOKEN).await;
    for path in ["/", "/queues/q", "/tasks/1", "/schedules"] {
        let res = s
            .send(Method::GET, path, &[("accept", "application/json")], None)
            .await;
        assert_eq!(res.status, 401, "{path}");
        assert_eq!(res.header("www-authenticate"), "Bearer");
        assert!(res.header("content-type").starts_with("application/json"));
    }
    let res = s.post("/queues/q/pause", &[("csrf", "x")]).await;
    assert_eq!(res.status, 401);
}

#[tokio::test]
async fn logging_in_sets_a_strict_http_only_cookie_without_the_token() {
    let s = Admin::with_token(TOKEN).await;
    let wrong = s.post("/login", &[("token", "guess"), ("next", "/")]).await;
    wrong.assert_page(401);
    assert!(wrong.text.contains("not right"));
    assert!(wrong.session_cookie().is_none());
    let empty = s.post("/login", &[("token", ""), ("next", "/")]).await;
    empty.assert_page(401);

    let res = s
        .post("/login", &[("token", TOKEN), ("next", "/queues/q")])
        .await;
    assert_eq!(res.status, 303);
    assert_eq!(res.location(), "/queues/q");
    let set = res.header("set-cookie");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age="] {
        assert!(set.contains(attr), "{attr} in {set}");
    }
    assert!(!set.contains(TOKEN), "the cookie is not the token");
    let cookie = res.session_cookie().unwrap();
    for path in ["/", "/schedules"] {
        s.get_as(path, &cookie).await.assert_page(200);
    }
    // Logged in already: the form goes straight on.
    let again = s.get_as("/login?next=%2Fschedules", &cookie).await;
    assert_eq!(
        (again.status.as_u16(), again.location()),
        (303, "/schedules")
    );
}

#[tokio::test]
async fn the_session_cookie_does_not_open_the_api() {
    let s = Admin::with_token(TOKEN).await;
    let cookie = s.login(TOKEN).await;
    for path in ["/v1/queues", "/metrics", "/openapi.json"] {
        let res = s
            .send(Method::GET, path, &[("cookie", &cookie)], None)
            .await;
        assert_eq!(res.status, 401, "{path}");
    }
}

#[tokio::test]
async fn forged_or_foreign_cookies_are_refused() {
    let s = Admin::with_token(TOKEN).await;
    let other = Admin::with_token("another-token").await;
    let foreign = other.login("another-token").await;
    let mine = s.login(TOKEN).await;
    let (name, value) = mine.split_once('=').unwrap();
    let tampered = format!("{name}={}", value.replacen('.', ".1", 1));
    for cookie in [
        foreign.as_str(),
        tampered.as_str(),
        "spool_session=",
        "spool_session=1.2.3",
        &format!("spool_session={TOKEN}"),
    ] {
        let res = s.get_as("/", cookie).await;
        assert_eq!(res.status, 303, "{cookie}");
        assert_eq!(res.location(), "/login");
    }
}

#[tokio::test]
async fn a_bearer_header_works_for_pages() {
    let s = Admin::with_token(TOKEN).await;
    let auth = format!("Bearer {TOKEN}");
    let res = s
        .send(
            Method::GET,
            "/",
            &[("accept", BROWSER_ACCEPT), ("authorization", &auth)],
            None,
        )
        .await;
    res.assert_page(200);
    assert!(!res.text.contains("Log out"), "nothing to log out of");
}

#[tokio::test]
async fn actions_need_the_sessions_own_csrf_token() {
    let s = Admin::with_token(TOKEN).await;
    let id = s.failed("q", 1, true, "poison").await;
    let alice = s.login(TOKEN).await;
    let bob = s.login(TOKEN).await;
    assert_ne!(alice, bob, "each login is its own session");
    let page = s.get_as(&format!("/tasks/{id}"), &alice).await;
    page.assert_page(200);
    let alice_csrf = page.csrf().unwrap();
    let bob_csrf = s.get_as("/", &bob).await.csrf().unwrap();
    assert_ne!(alice_csrf, bob_csrf);

    let path = format!("/tasks/{id}/retry");
    for (cookie, csrf) in [(&bob, &alice_csrf), (&alice, &bob_csrf)] {
        s.post_as(&path, cookie, &[("csrf", csrf)])
            .await
            .assert_page(403);
    }
    s.post_as(&path, &alice, &[]).await.assert_page(403);
    let no_cookie = s.post(&path, &[("csrf", &alice_csrf)]).await;
    assert_eq!(no_cookie.status, 401);
    assert_eq!(
        s.store.get(TaskRef::Id(id)).await.unwrap().state,
        TaskState::Dead
    );

    let res = s.post_as(&path, &alice, &[("csrf", &alice_csrf)]).await;
    assert_eq!(res.status, 303, "{}", res.text);
    assert_eq!(
        s.store.get(TaskRef::Id(id)).await.unwrap().state,
        TaskState::Ready
    );
    let res = s
        .post_as("/queues/q/pause", &bob, &[("csrf", &bob_csrf)])
        .await;
    assert_eq!(res.status, 303);
    assert!(
        s.store
            .get_queue(&QueueName::new("q").unwrap())
            .await
            .unwrap()
            .paused
    );
}

#[tokio::test]
async fn logging_out_clears_the_cookie() {
    let s = Admin::with_token(TOKEN).await;
    let cookie = s.login(TOKEN).await;
    let page = s.get_as("/", &cookie).await;
    assert!(page.text.contains("Log out"));
    let csrf = page.csrf().unwrap();
    s.post_as("/logout", &cookie, &[]).await.assert_page(403);
    let res = s.post_as("/logout", &cookie, &[("csrf", &csrf)]).await;
    assert_eq!(res.status, 303);
    assert_eq!(res.location(), "/login");
    let set = res.header("set-cookie");
    assert!(
        set.starts_with("spool_session=;") && set.contains("Max-Age=0"),
        "{set}"
    );
}

#[tokio::test]
async fn login_never_redirects_off_the_server() {
    let s = Admin::with_token(TOKEN).await;
    for next in [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "javascript:alert(1)",
    ] {
        let res = s.post("/login", &[("token", TOKEN), ("next", next)]).await;
        assert_eq!(res.status, 303);
        assert_eq!(res.location(), "/", "{next}");
        let form = s
            .get(&format!("/login?next={}", next.replace('/', "%2F")))
            .await;
        assert!(form.text.contains("name=\"next\" value=\"/\""), "{next}");
    }
}

#[tokio::test]
async fn without_a_token_pages_are_open_and_login_is_moot() {
    let s = Admin::open().await;
    s.get("/").await.assert_page(200);
    s.get("/schedules").await.assert_page(200);
    let res = s.get("/login").await;
    assert_eq!((res.status.as_u16(), res.location()), (303, "/"));
    let res = s.post("/login", &[("token", "anything")]).await;
    assert_eq!((res.status.as_u16(), res.location()), (303, "/"));
    assert!(res.session_cookie().is_none());
    assert!(!s.get("/").await.text.contains("Log out"));
}

#[tokio::test]
async fn guessing_the_token_at_the_login_form_is_throttled() {
    let s = Admin::with_token(TOKEN).await;
    for i in 0..10 {
        let wrong = s.post("/login", &[("token", "guess"), ("next", "/")]).await;
        assert_eq!(wrong.status, 401, "try {i}");
    }
    let more = s.post("/login", &[("token", "guess"), ("next", "/")]).await;
    more.assert_page(429);
    assert!(more.header("retry-after").parse::<u64>().unwrap() >= 1);
    assert!(more.text.contains("Too many wrong tokens"));
    // No token is checked meanwhile; the API's bearer header still works.
    let right = s.post("/login", &[("token", TOKEN), ("next", "/")]).await;
    assert_eq!(right.status, 429);
    let api = s
        .send(
            Method::GET,
            "/v1/queues",
            &[("authorization", &format!("Bearer {TOKEN}"))],
            None,
        )
        .await;
    assert_eq!(api.status, 200);
}

#[tokio::test]
async fn the_session_cookie_can_be_secure_behind_a_tls_proxy() {
    let plain = Admin::with_token(TOKEN).await;
    let res = plain
        .post("/login", &[("token", TOKEN), ("next", "/")])
        .await;
    assert!(!res.header("set-cookie").contains("Secure"));
    let proxied = Admin::with_config(spool_server::ServerConfig {
        token: Some(TOKEN.into()),
        secure_cookies: true,
        ..spool_server::ServerConfig::default()
    })
    .await;
    let res = proxied
        .post("/login", &[("token", TOKEN), ("next", "/")])
        .await;
    assert_eq!(res.status, 303);
    assert!(
        res.header("set-cookie").contains("; Secure"),
        "{}",
        res.header("set-cookie")
    );
}
