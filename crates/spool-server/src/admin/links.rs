//! The URLs of the admin pages, built in one place so every link encodes
//! its parts the same way, and the check that keeps a login's `next` on this
//! server.

use std::fmt::Write as _;

use spool_core::{QueueName, TaskId, TaskState};

/// Percent-encodes everything but RFC 3986's unreserved characters, so a
/// value is safe in a path segment or a query.
pub(super) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

pub(super) fn overview() -> String {
    "/".to_string()
}

pub(super) fn schedules() -> String {
    "/schedules".to_string()
}

pub(super) fn queue(q: &QueueName) -> String {
    format!("/queues/{}", encode(q.as_str()))
}

/// A queue's page showing `state` (all states when `None`), from `cursor`.
pub(super) fn queue_page(q: &QueueName, state: Option<TaskState>, cursor: Option<&str>) -> String {
    let mut url = queue(q);
    let mut sep = '?';
    if let Some(s) = state {
        let _ = write!(url, "{sep}state={}", s.as_str());
        sep = '&';
    }
    if let Some(c) = cursor {
        let _ = write!(url, "{sep}cursor={}", encode(c));
    }
    url
}

/// A queue's action (`pause`, `resume`, `retry`).
pub(super) fn queue_action(q: &QueueName, action: &str) -> String {
    format!("{}/{action}", queue(q))
}

pub(super) fn task(id: TaskId) -> String {
    format!("/tasks/{id}")
}

/// A task's action (`retry`, `delete`).
pub(super) fn task_action(id: TaskId, action: &str) -> String {
    format!("/tasks/{id}/{action}")
}

pub(super) fn login(next: &str) -> String {
    if next == "/" {
        "/login".to_string()
    } else {
        format!("/login?next={}", encode(next))
    }
}

/// Where to go after logging in: a path on this server, or the overview.
/// Refuses what a browser would read as another host (`//evil`, `/\evil`)
/// and anything with control characters.
pub(super) fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n.starts_with("/\\")
                && n.len() <= 2048
                && !n.chars().any(char::is_control) =>
        {
            n
        }
        _ => "/",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_everything_but_unreserved() {
        assert_eq!(encode("a-b_c.d~e"), "a-b_c.d~e");
        assert_eq!(encode("a b/c?d&e=f%"), "a%20b%2Fc%3Fd%26e%3Df%25");
        assert_eq!(encode("é"), "%C3%A9");
    }

    #[test]
    fn next_stays_on_this_server() {
        assert_eq!(
            safe_next(Some("/queues/q?state=dead")),
            "/queues/q?state=dead"
        );
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "https://evil.example",
            "evil",
            "/a\r\nSet-Cookie: x",
            "",
        ] {
            assert_eq!(safe_next(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/");
    }
}
