//! `/queues/{queue}`: a queue's tasks by state, most attempts first, a page
//! at a time (the store's cursor); and its actions: pause, resume, retry
//! every dead task. It also shows the queue's claim limits and their use
//! (tasks leased of its max_leased), and its busiest groups with their
//! tasks waiting and leased (of its group_concurrency).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;
use spool_core::{
    GroupStats, ListOrder, ListRequest, QueueName, QueueSettings, QueueStats, RateLimit,
    StoreError, Task, TaskState, Timestamp,
};

use super::error::PageError;
use super::layout::{self, time_ago, time_since, Nav, Page};
use super::viewer::{Checked, Viewer};
use super::{links, text};
use crate::error::ApiError;
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// Tasks per page.
pub(super) const PAGE_SIZE: usize = 50;
/// Longest cursor accepted (the store's are far shorter).
const MAX_CURSOR: usize = 512;
/// Longest error message shown in the list (the task page shows it whole).
const ERROR_PREVIEW: usize = 140;
/// Groups shown, the busiest first.
pub(super) const GROUPS_SHOWN: usize = 20;

/// The query of a queue's page.
#[derive(Debug, Deserialize)]
pub(super) struct QueueQuery {
    state: Option<String>,
    cursor: Option<String>,
    /// What the action before this page did.
    done: Option<String>,
    n: Option<u64>,
}

type PathIn = Result<ApiPath<QueueName>, ApiError>;

/// The queue's claim limits, and how much of each is in use: tasks leased
/// of max_leased, tokens left of the rate limit's burst.
fn limits(s: &QueueSettings, q: &QueueStats) -> Markup {
    html! {
        @if s.rate_limit.is_some() || s.max_leased.is_some() || s.group_concurrency.is_some()
            || s.group_rate_limit.is_some() {
            p.limits {
                @if let Some(r) = &s.rate_limit {
                    "Rate limit: " (rate(r))
                    @if let Some(left) = q.rate_tokens {
                        "; " (text::count(u64::from(left))) " of "
                        (text::count(u64::from(r.burst))) " left now"
                    }
                    ". "
                }
                @if let Some(max) = s.max_leased {
                    "Leased: " (text::count(q.counts.leased)) " of at most "
                    (text::count(u64::from(max))) ". "
                }
                @if let Some(max) = s.group_concurrency {
                    "Per group: at most " (text::count(u64::from(max))) " leased. "
                }
                @if let Some(r) = &s.group_rate_limit {
                    "Rate limit of each group: " (rate(r)) "."
                }
            }
        }
    }
}

/// "100 per 1 s, in bursts of at most 10".
fn rate(r: &RateLimit) -> Markup {
    html! {
        (text::count(u64::from(r.limit))) " per " (text::duration(r.period))
        ", in bursts of at most " (text::count(u64::from(r.burst)))
    }
}

/// The queue's busiest groups: tasks waiting, leased (of at most
/// `per_group`), and, under a group_rate_limit, the tokens left in each
/// one's bucket (of its burst). A store that cannot say is noted, not an
/// error: the rest of the page is still worth showing.
fn groups_section(groups: &Result<Vec<GroupStats>, ApiError>, limits: &QueueSettings) -> Markup {
    html! {
        @match groups {
            Ok(groups) if groups.is_empty() => {}
            Ok(groups) => {
                section aria-labelledby="groups-heading" {
                    h2 #groups-heading { "Groups" }
                    @if groups.len() == GROUPS_SHOWN {
                        p.muted { "The " (GROUPS_SHOWN) " busiest groups." }
                    }
                    (groups_table(groups, limits))
                }
            }
            Err(_) => p.muted { "This queue's groups could not be read." },
        }
    }
}

fn groups_table(groups: &[GroupStats], limits: &QueueSettings) -> Markup {
    let burst = limits.group_rate_limit.map(|r| r.burst);
    html! {
        div.scroll {
            table.data.groups {
                caption.visually-hidden { "Groups, most waiting first" }
                thead {
                    tr {
                        th scope="col" { "Group" }
                        th.num scope="col" { "Waiting" }
                        th.num scope="col" { "Leased" }
                        @if burst.is_some() {
                            th.num scope="col" { "Tokens left" }
                        }
                    }
                }
                tbody {
                    @for g in groups {
                        tr {
                            th scope="row" { (g.group.as_str()) }
                            td.num { (text::count(g.waiting)) }
                            td.num {
                                (text::count(g.leased))
                                @if let Some(max) = limits.group_concurrency {
                                    " of " (text::count(u64::from(max)))
                                }
                            }
                            @if let Some(burst) = burst {
                                td.num {
                                    @if let Some(left) = g.rate_tokens {
                                        (text::count(u64::from(left)))
                                        " of " (text::count(u64::from(burst)))
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

pub(super) async fn page(
    State(st): State<AppState>,
    viewer: Viewer,
    path: PathIn,
    query: Result<ApiQuery<QueueQuery>, ApiError>,
) -> Result<Response, PageError> {
    let ApiPath(name) = path?;
    let ApiQuery(q) = query?;
    let state = match q.state.as_deref() {
        None | Some("" | "all") => None,
        Some(s) => Some(s.parse::<TaskState>().map_err(PageError::bad_request)?),
    };
    let cursor = q.cursor.filter(|c| !c.is_empty());
    if cursor.as_ref().is_some_and(|c| c.len() > MAX_CURSOR) {
        return Err(PageError::bad_request("invalid cursor"));
    }
    let stats = st.call(st.store().stats()).await?;
    let queue = stats
        .into_iter()
        .find(|s| s.name == name)
        .ok_or_else(|| StoreError::QueueNotFound(name.clone()))?;
    let req = ListRequest {
        queue: name.clone(),
        state,
        order: ListOrder::AttemptsDesc,
        limit: PAGE_SIZE,
        cursor: cursor.clone(),
    };
    let tasks = st.call(st.store().list(req)).await?;
    let settings = st.call(st.store().get_queue(&name)).await?;
    let groups = st.call(st.store().groups(&name, GROUPS_SHOWN)).await;
    let now = st.call(st.store().now()).await?;
    let flash = match q.done.as_deref() {
        Some("paused") => {
            Some("Paused: workers get no tasks from this queue until it is resumed.".to_string())
        }
        Some("resumed") => Some("Resumed: workers get tasks from this queue again.".to_string()),
        Some("retried") => Some(format!(
            "Retried {}: ready to run again.",
            text::plural(q.n.unwrap_or(0), "dead task", "dead tasks")
        )),
        Some("deleted") => Some("Deleted the task.".to_string()),
        Some("cancelled") => Some(match q.n {
            Some(id) => format!("Cancelled task {id}."),
            None => "Cancelled the task.".to_string(),
        }),
        _ => None,
    };
    let body = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href=(links::overview()) { "Queues" } " / "
            span aria-current="page" { (name.as_str()) }
        }
        div.title-row {
            h1 { (name.as_str()) @if queue.paused { " " span.badge.paused { "paused" } } }
            (pause_form(&viewer, &queue))
        }
        (layout::flash(flash))
        @if queue.paused {
            p.notice { "This queue is paused: claims get nothing; enqueues still work." }
        }
        (limits(&settings, &queue))
        (tabs(&queue, state))
        @if state == Some(TaskState::Dead) && queue.counts.dead > 0 {
            form.inline method="post" action=(links::queue_action(&name, "retry")) {
                (viewer.csrf_field())
                button.btn type="submit" {
                    @if queue.counts.dead == 1 { "Retry 1 dead task" }
                    @else { "Retry all " (text::count(queue.counts.dead)) " dead tasks" }
                }
            }
        }
        @if tasks.tasks.is_empty() {
            p.empty { @if cursor.is_some() { "No more tasks." } @else { "No tasks here." } }
        } @else {
            (task_table(&viewer, &tasks.tasks, state, now))
        }
        nav.pager aria-label="Pages" {
            @if cursor.is_some() {
                a href=(links::queue_page(&name, state, None)) { "First page" }
            }
            @if let Some(next) = &tasks.next_cursor {
                a href=(links::queue_page(&name, state, Some(next))) { "Next page" }
            }
        }
        (groups_section(&groups, &settings))
        @if queue.kinds.len() > 1 {
            section aria-labelledby="kinds-heading" {
                h2 #kinds-heading { "By kind" }
                (kinds_table(&queue))
            }
        }
    };
    let page = Page {
        title: name.as_str(),
        nav: Nav::Queues,
        refresh: true,
    };
    Ok(layout::respond(
        StatusCode::OK,
        layout::render(&page, viewer.logout_csrf(), body),
    ))
}

fn pause_form(viewer: &Viewer, q: &QueueStats) -> Markup {
    let (action, label) = if q.paused {
        ("resume", "Resume queue")
    } else {
        ("pause", "Pause queue")
    };
    html! {
        form.inline method="post" action=(links::queue_action(&q.name, action)) {
            (viewer.csrf_field())
            button.btn type="submit" { (label) }
        }
    }
}

fn tabs(q: &QueueStats, current: Option<TaskState>) -> Markup {
    let tab = |state: Option<TaskState>, label: &str, n: u64| {
        html! {
            li {
                a href=(links::queue_page(&q.name, state, None))
                    aria-current=[(state == current).then_some("page")] {
                    (label) " " span.count { (text::count(n)) }
                }
            }
        }
    };
    html! {
        nav.tabs aria-label="Task states" {
            ul {
                (tab(None, "All", q.counts.total()))
                @for s in TaskState::ALL {
                    (tab(Some(s), s.as_str(), q.counts.get(s)))
                }
            }
        }
    }
}

fn task_table(viewer: &Viewer, tasks: &[Task], state: Option<TaskState>, now: Timestamp) -> Markup {
    let actions = state == Some(TaskState::Dead);
    html! {
        div.scroll {
            table.data.tasks {
                caption.visually-hidden { "Tasks, most attempts first" }
                thead {
                    tr {
                        th scope="col" { "Task" }
                        th scope="col" { "Kind" }
                        th scope="col" { "State" }
                        th.num scope="col" { "Attempts" }
                        th scope="col" { "When" }
                        th scope="col" { "Last error" }
                        @if actions { th scope="col" { span.visually-hidden { "Actions" } } }
                    }
                }
                tbody {
                    @for t in tasks {
                        tr {
                            th scope="row" { a href=(links::task(t.id)) { (t.id) } }
                            td { (t.kind.as_str()) }
                            td { (layout::state_badge(t.state)) }
                            td.num { (t.attempt) " / " (t.max_attempts) }
                            td.when { (when(t, now)) }
                            td.error { (last_error(t)) }
                            @if actions {
                                td {
                                    form.inline method="post" action=(links::task_action(t.id, "retry")) {
                                        (viewer.csrf_field())
                                        button.btn.btn-small type="submit" aria-label={ "Retry task " (t.id) } { "Retry" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The time that matters for the task's state.
pub(super) fn when(t: &Task, now: Timestamp) -> Markup {
    html! {
        @match (t.state, &t.lease) {
            (TaskState::Scheduled, _) => { "runs " (time_ago(t.run_at, now)) }
            (TaskState::Ready, _) => { "waiting " (time_since(t.run_at, now)) }
            (TaskState::Leased, Some(lease)) => {
                "lease ends " (time_ago(lease.expires_at, now))
                br; span.muted { (lease.owner) }
            }
            (TaskState::Leased, None) => { "leased" }
            (TaskState::Dead, _) => { "dead for " (time_since(t.updated_at, now)) }
            (TaskState::Pending, _) => { "waits since " (time_since(t.created_at, now)) }
        }
    }
}

fn last_error(t: &Task) -> Markup {
    html! {
        @match t.errors.last() {
            Some(e) => {
                @let preview: String = e.message.chars().take(ERROR_PREVIEW).collect();
                (preview)
                @if e.message.chars().count() > ERROR_PREVIEW { "…" }
            }
            None => span.muted { "—" },
        }
    }
}

fn kinds_table(q: &QueueStats) -> Markup {
    html! {
        div.scroll {
            table.data {
                thead {
                    tr {
                        th scope="col" { "Kind" }
                        @for s in TaskState::ALL { th.num scope="col" { (s.as_str()) } }
                    }
                }
                tbody {
                    @for (kind, c) in &q.kinds {
                        tr {
                            th scope="row" { (kind.as_str()) }
                            @for s in TaskState::ALL { td.num { (text::count(c.get(s))) } }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /queues/{queue}/pause`.
pub(super) async fn pause(
    State(st): State<AppState>,
    path: PathIn,
    _: Checked,
) -> Result<Response, PageError> {
    set_paused(st, path, true).await
}

/// `POST /queues/{queue}/resume`.
pub(super) async fn resume(
    State(st): State<AppState>,
    path: PathIn,
    _: Checked,
) -> Result<Response, PageError> {
    set_paused(st, path, false).await
}

async fn set_paused(st: AppState, path: PathIn, paused: bool) -> Result<Response, PageError> {
    let ApiPath(name) = path?;
    st.call(st.store().set_paused(&name, paused)).await?;
    let done = if paused { "paused" } else { "resumed" };
    Ok(layout::redirect(&format!(
        "{}?done={done}",
        links::queue(&name)
    )))
}

/// `POST /queues/{queue}/retry`: every dead task becomes ready.
pub(super) async fn retry_dead(
    State(st): State<AppState>,
    path: PathIn,
    _: Checked,
) -> Result<Response, PageError> {
    let ApiPath(name) = path?;
    let n = st.call(st.store().retry_dead(&name)).await?;
    Ok(layout::redirect(&format!(
        "{}&done=retried&n={n}",
        links::queue_page(&name, Some(TaskState::Dead), None)
    )))
}
