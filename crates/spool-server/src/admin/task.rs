//! `/tasks/{id}`: one task — its payload, errors, lease and the tasks it
//! waits for — and its actions: when it is dead, retry and delete; while it
//! lives (scheduled, ready, pending or leased), cancel. Delete and cancel
//! are the same store call and both sit behind a confirmation; they are two
//! actions because each refuses the other's state, so that a task that
//! died or came back to life since the page was shown is left alone.

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
        } @else {
            (live_actions(&viewer, &task))
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
            (confirm(viewer, t.id, "delete", "Delete", html! {
                "Delete task " (t.id) " for good? Its payload and errors are lost."
            }))
        }
    }
}

fn live_actions(viewer: &Viewer, t: &Task) -> Markup {
    html! {
        div.actions {
            (confirm(viewer, t.id, "cancel", "Cancel", html! {
                "Cancel task " (t.id) "? It is deleted and will not run"
                @if t.state == TaskState::Leased {
                    "; the worker running it is told to stop, and its result is refused"
                }
                ". Tasks waiting for it follow their policy, as for a failed task."
            }))
        }
    }
}

/// An action behind a second, deliberate step: its button is only shown
/// once this is opened (and the auto-refresh holds off meanwhile).
fn confirm(viewer: &Viewer, id: TaskId, action: &str, verb: &str, question: Markup) -> Markup {
    html! {
        details.confirm {
            summary.btn.btn-danger-outline { (verb) "…" }
            div.confirm-body {
                p { (question) }
                form method="post" action=(links::task_action(id, action)) {
                    (viewer.csrf_field())
                    button.btn.btn-danger type="submit" { (verb) " task " (id) }
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
    end(st, path, Ending::Delete).await
}

/// `POST /tasks/{id}/cancel`: cancels a task that is not dead, a leased one
/// included (its worker hears of it within 100 ms, docs/spec.md §6). Not a
/// dead one: deleting that is the other action, and a task that died since
/// the page was shown is not what the operator chose to cancel.
pub(super) async fn cancel(
    State(st): State<AppState>,
    path: PathIn,
    _: Checked,
) -> Result<Response, PageError> {
    end(st, path, Ending::Cancel).await
}

/// The two actions that end a task with the store's `cancel`, each for the
/// states the other does not take.
#[derive(Clone, Copy)]
enum Ending {
    /// A dead task, deleted.
    Delete,
    /// A live task (scheduled, ready, pending or leased), cancelled.
    Cancel,
}

/// Ends the task if its state is still one `ending` takes, else refuses
/// with the reason; redirects to where the operator goes on from.
async fn end(st: AppState, path: PathIn, ending: Ending) -> Result<Response, PageError> {
    let ApiPath(id) = path?;
    let task = st.call(st.store().get(TaskRef::Id(id))).await?;
    let dead = task.state == TaskState::Dead;
    let refusal = match ending {
        Ending::Delete if !dead => Some(format!(
            "task {id} is {} now, not dead: only dead tasks are deleted here",
            task.state
        )),
        Ending::Cancel if dead => Some(format!(
            "task {id} is dead now: delete it from its page instead"
        )),
        _ => None,
    };
    if let Some(reason) = refusal {
        return Err(PageError::Api(ApiError::Store(StoreError::bad_request(
            reason,
        ))));
    }
    st.call(st.store().cancel(TaskRef::Id(id))).await?;
    let to = match ending {
        Ending::Delete => format!(
            "{}&done=deleted",
            links::queue_page(&task.queue, Some(TaskState::Dead), None)
        ),
        Ending::Cancel => format!("{}?done=cancelled&n={id}", links::queue(&task.queue)),
    };
    Ok(layout::redirect(&to))
}
