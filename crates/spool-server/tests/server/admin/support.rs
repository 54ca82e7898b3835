//! A server under test, a browser-like client, and ways to put tasks in
//! each state.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use spool_core::{ClaimRequest, FailRequest, Kind, NewTask, Payload, QueueName, Store, TaskId};
use spool_server::ServerConfig;
use spool_testkit::server::Server;

/// What a browser asks for when it navigates.
pub(crate) const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,*/*;q=0.8";

/// A running server and a browser-like client; stops when dropped.
pub(crate) struct Admin {
    pub base: String,
    pub store: Arc<dyn Store>,
    client: reqwest::Client,
    _server: Server,
}

impl Admin {
    /// No token: pages are open.
    pub(crate) async fn open() -> Self {
        Self::start(None).await
    }

    pub(crate) async fn with_token(token: &str) -> Self {
        Self::start(Some(token.to_string())).await
    }

    async fn start(token: Option<String>) -> Self {
        Self::with_config(ServerConfig {
            token,
            ..ServerConfig::default()
        })
        .await
    }

    pub(crate) async fn with_config(config: ServerConfig) -> Self {
        let server = Server::builder().config(config).start().await;
        Admin {
            base: server.base.clone(),
            store: server.store.clone(),
            // Redirects are checked by hand, like the cookies.
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            _server: server,
        }
    }

    /// Sends a request with these extra headers and an optional form body.
    pub(crate) async fn send(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        form: Option<&[(&str, &str)]>,
    ) -> Page {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(fields) = form {
            req = req.form(fields);
        }
        Page::from(req.send().await.unwrap()).await
    }

    /// A browser's GET.
    pub(crate) async fn get(&self, path: &str) -> Page {
        self.send(Method::GET, path, &[("accept", BROWSER_ACCEPT)], None)
            .await
    }

    /// A browser's GET with a session cookie.
    pub(crate) async fn get_as(&self, path: &str, cookie: &str) -> Page {
        self.send(
            Method::GET,
            path,
            &[("accept", BROWSER_ACCEPT), ("cookie", cookie)],
            None,
        )
        .await
    }

    /// A browser's form POST.
    pub(crate) async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.send(Method::POST, path, &[], Some(fields)).await
    }

    /// Submits one of `page`'s forms: a POST to `path` with the page's
    /// CSRF token, as a browser sends it.
    pub(crate) async fn submit(&self, page: &Page, path: &str) -> Page {
        let csrf = page.csrf().expect("a form with a CSRF field");
        self.post(path, &[("csrf", &csrf)]).await
    }

    pub(crate) async fn post_as(&self, path: &str, cookie: &str, fields: &[(&str, &str)]) -> Page {
        self.send(Method::POST, path, &[("cookie", cookie)], Some(fields))
            .await
    }

    /// Logs in and returns the `Cookie` header value of the session.
    pub(crate) async fn login(&self, token: &str) -> String {
        let page = self
            .post("/login", &[("token", token), ("next", "/")])
            .await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.text);
        page.session_cookie().expect("a session cookie")
    }

    /// The CSRF token of the forms of the page at `path` (open server).
    pub(crate) async fn csrf(&self, path: &str) -> String {
        let page = self.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        page.csrf().expect("a form with a CSRF field")
    }

    /// Enqueues one task of `kind` (the queue's name when `None`).
    pub(crate) async fn enqueue(
        &self,
        queue: &str,
        kind: Option<&str>,
        payload: Payload,
    ) -> TaskId {
        let mut t = NewTask::new(payload);
        if let Some(k) = kind {
            t = t.kind(Kind::new(k).unwrap());
        }
        self.store
            .enqueue(&QueueName::new(queue).unwrap(), vec![t])
            .await
            .unwrap()[0]
            .id
    }

    /// Enqueues a task and fails it `attempts` times (retrying at once);
    /// with `dead`, the last failure discards it.
    pub(crate) async fn failed(
        &self,
        queue: &str,
        attempts: u32,
        dead: bool,
        message: &str,
    ) -> TaskId {
        let id = self.enqueue(queue, None, Payload::json(&b"{}"[..])).await;
        for i in 1..=attempts {
            let claimed = self.claim_until(queue, id).await;
            let req = FailRequest {
                message: format!("{message} #{i}"),
                retry_at: Some(spool_core::Timestamp(0)),
                discard: dead && i == attempts,
            };
            self.store
                .fail(id, claimed.lease.unwrap().token, req)
                .await
                .unwrap();
        }
        id
    }

    /// Every queue's pause flag and counts (not the oldest ready age,
    /// which grows by itself), for before/after comparisons.
    pub(crate) async fn counts(&self) -> Vec<(String, bool, spool_core::StateCounts)> {
        self.store
            .stats()
            .await
            .unwrap()
            .into_iter()
            .map(|q| (q.name.to_string(), q.paused, q.counts))
            .collect()
    }

    /// Claims until task `id` is the one claimed (others go back).
    pub(crate) async fn claim_until(&self, queue: &str, id: TaskId) -> spool_core::Task {
        let q = QueueName::new(queue).unwrap();
        let claimed = self
            .store
            .claim(ClaimRequest::new(q, "tester").max(1000))
            .await
            .unwrap();
        let mut found = None;
        for t in claimed {
            if t.id == id {
                found = Some(t);
            } else {
                let token = t.lease.as_ref().unwrap().token;
                self.store.release(t.id, token).await.unwrap();
            }
        }
        found.expect("the task was claimable")
    }
}

/// An answer, read whole.
#[derive(Debug)]
pub(crate) struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Page {
    async fn from(res: reqwest::Response) -> Self {
        Page {
            status: res.status(),
            headers: res.headers().clone(),
            text: res.text().await.unwrap(),
        }
    }

    pub(crate) fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    pub(crate) fn location(&self) -> &str {
        self.header("location")
    }

    pub(crate) fn is_html(&self) -> bool {
        self.header("content-type").starts_with("text/html")
    }

    /// `spool_session=…` from `Set-Cookie`, ready for a `Cookie` header.
    pub(crate) fn session_cookie(&self) -> Option<String> {
        let set = self.header("set-cookie");
        let pair = set.split(';').next()?.trim();
        (pair.starts_with("spool_session=") && pair.len() > "spool_session=".len())
            .then(|| pair.to_string())
    }

    /// The value of the first `name="csrf"` field.
    pub(crate) fn csrf(&self) -> Option<String> {
        let at = self.text.find("name=\"csrf\" value=\"")?;
        let rest = &self.text[at + "name=\"csrf\" value=\"".len()..];
        Some(rest[..rest.find('"')?].to_string())
    }

    /// Every `href` on the page, with `&amp;` decoded.
    pub(crate) fn links(&self) -> Vec<String> {
        self.text
            .split("href=\"")
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .map(|s| s.replace("&amp;", "&"))
            .collect()
    }

    /// Task ids linked from the page, in order.
    pub(crate) fn task_ids(&self) -> Vec<u64> {
        self.links()
            .iter()
            .filter_map(|l| l.strip_prefix("/tasks/")?.parse().ok())
            .collect()
    }

    /// Asserts an HTML page with this status.
    pub(crate) fn assert_page(&self, status: u16) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        assert!(
            self.is_html(),
            "content-type {}",
            self.header("content-type")
        );
    }
}
