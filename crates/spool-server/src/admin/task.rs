//! `/tasks/{id}`: one task — its payload, errors, lease and the tasks it
//! waits for — and, when it is dead, its two actions: retry, and delete
//! (behind a confirmation).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;
use spool_core::{StoreError, Task, TaskId, TaskRef, TaskState, Timestamp};

use super::error::PageError;
use super::layout::{self, time_ago, Nav, Page};
use super::payload;
use super::viewer::{Checked, Viewer};
use super::{links, text};
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// The query of a task's page.
#[derive(Debug, Deserialize)]
pub(super) struct TaskQuery {
    /// What the action before this page did.
    done: Option<String>,
}

type PathIn = Result<ApiPath<TaskId>, ApiError>;

pub(super) async fn page(
    State(st): State<AppState>,
    viewer: Viewer,
    path: PathIn,
    query: Result<ApiQuery<TaskQuery>, ApiError>,
) -> Result<Response, PageError> {
    let ApiPath(id) = path?;
    let ApiQuery(q) = query?;
    let task = st.call(st.store().get(TaskRef::Id(id))).await?;
    let now = st.call(st.store().now()).await?;
    let flash = match q.done.as_deref() {
        Some("retried") => {
            Some("Retried: the task is ready again, its attempts reset.".to_string())
        }
        _ => None,
    };
    let title = format!("Task {id}");
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href=(links::overview()) { "Queues" } " / "
            a href=(links::queue(&task.queue)) { (task.queue.as_str()) } " / "
            span aria-current="page" { (title) }
        }
        div.title-row {
            h1 { (title) " " (layout::state_badge(task.state)) }
        }
        (layout::flash(flash))
        @if task.state == TaskState::Dead {
            (dead_actions(&viewer, &task))
        }
        (facts(&task, now))
        @if let Some(d) = task.deps.as_deref() {
            (super::deps::section(d))
        }
        section aria-labelledby="payload-heading" {
            h2 #payload-heading { "Payload" }
            (payload_block(&task))
        }
        section aria-labelledby="errors-heading" {
            h2 #errors-heading { "Errors" }
            (errors(&task, now))
        }
    };
    let page = Page {
        title: &title,
        nav: Nav::Queues,
        refresh: true,
    };
    Ok(layout::respond(
        StatusCode::OK,
        layout::render(&page, viewer.logout_csrf(), body),
    ))
}

fn dead_actions(viewer: &Viewer, t: &Task) -> Markup {
    html! {
        div.actions {
            form.inline method="post" action=(links::task_action(t.id, "retry")) {
                (viewer.csrf_field())
                button.btn type="submit" { "Retry task" }
            }
            // A second, deliberate step: the button that deletes is only
            // shown once this is opened (and the auto-refresh holds off).
            details.confirm {
                summary.btn.btn-danger-outline { "Delete…" }
                div.confirm-body {
                    p { "Delete task " (t.id) " for good? Its payload and errors are lost." }
                    form method="post" action=(links::task_action(t.id, "delete")) {
                        (viewer.csrf_field())
                        button.btn.btn-danger type="submit" { "Delete task " (t.id) }
                    }
                }
            }
        }
    }
}

fn facts(t: &Task, now: Timestamp) -> Markup {
    html! {
        dl.facts {
            div { dt { "Queue" } dd { a href=(links::queue(&t.queue)) { (t.queue.as_str()) } } }
            div { dt { "Kind" } dd { (t.kind.as_str()) } }
            div { dt { "State" } dd { (t.state.as_str()) } }
            div { dt { "Attempts" } dd { (t.attempt) " of " (t.max_attempts) } }
            div { dt { "When" } dd { (super::queue::when(t, now)) } }
            div { dt { "Run at" } dd { (text::time(t.run_at)) } }
            div { dt { "Priority" } dd { (t.priority) } }
            div { dt { "Key" } dd { @match &t.key { Some(k) => code { (k.as_str()) }, None => span.muted { "none" } } } }
            div { dt { "Time to run" } dd {
                @match t.lease_ms { Some(ms) => (text::duration(std::time::Duration::from_millis(ms))), None => span.muted { "the queue's lease" } }
            } }
            @if let Some(lease) = &t.lease {
                div { dt { "Leased by" } dd { code { (lease.owner) } } }
                div { dt { "Lease ends" } dd { (time_ago(lease.expires_at, now)) " (" (text::time(lease.expires_at)) ")" } }
            }
            div { dt { "Created" } dd { (time_ago(t.created_at, now)) " (" (text::time(t.created_at)) ")" } }
            div { dt { "Updated" } dd { (time_ago(t.updated_at, now)) " (" (text::time(t.updated_at)) ")" } }
        }
    }
}

fn payload_block(t: &Task) -> Markup {
    let shown = payload::show(&t.payload);
    html! {
        p.muted {
            (shown.format) ", " (text::plural(t.payload.len() as u64, "byte", "bytes"))
            @if let Some(total) = shown.cut_from {
                "; showing the first " (text::count(payload::SHOWN as u64)) " of " (text::count(total as u64))
            }
        }
        @if t.payload.is_empty() {
            p.empty { "Empty." }
        } @else {
            pre.payload tabindex="0" aria-label="Payload" { code { (shown.text) } }
        }
    }
}

fn errors(t: &Task, now: Timestamp) -> Markup {
    html! {
        @if t.errors.is_empty() {
            p.empty { "No failures recorded." }
        } @else {
            @if t.errors.len() > 1 {
                p.muted { "The last " (t.errors.len()) ", newest first." }
            }
            ol.errors reversed {
                @for e in t.errors.iter().rev() {
                    li {
                        p.error-meta {
                            "Attempt " (e.attempt) ", " (time_ago(e.at, now)) " (" (text::time(e.at)) ")"
                        }
                        pre.error-text { (e.message) }
                    }
                }
            }
        }
    }
}

/// `POST /tasks/{id}/retry`: a dead task becomes ready.
pub(super) async fn retry(
    State(st): State<AppState>,
    path: PathIn,
    _: Checked,
) -> Result<Response, PageError> {
    let ApiPath(id) = path?;
    st.call(st.store().retry(id)).await?;
    Ok(layout::redirect(&format!(
        "{}?done=retried",
        links::task(id)
    )))
}

/// `POST /tasks/{id}/delete`: deletes a dead task. Only dead ones: the page
/// offers nothing else, and a task that came back to life since the page
/// was shown is not what the operator chose to delete.
pub(super) async fn delete(
    State(st): State<AppState>,
    path: PathIn,
    _: Checked,
) -> Result<Response, PageError> {
    let ApiPath(id) = path?;
    let task = st.call(st.store().get(TaskRef::Id(id))).await?;
    if task.state != TaskState::Dead {
        return Err(PageError::Api(ApiError::Store(StoreError::bad_request(
            format!(
                "task {id} is {} now, not dead: only dead tasks are deleted here",
                task.state
            ),
        ))));
    }
    st.call(st.store().cancel(TaskRef::Id(id))).await?;
    Ok(layout::redirect(&format!(
        "{}&done=deleted",
        links::queue_page(&task.queue, Some(TaskState::Dead), None)
    )))
}
