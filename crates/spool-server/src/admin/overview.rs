//! `GET /`: every queue with its counts per state and per kind, the oldest
//! ready age, and this server's recent enqueue and completion rates.
//!
//! The one admin route in the OpenAPI document: it is where a browser
//! pointed at the server lands.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use spool_core::{QueueStats, StateCounts, TaskState};
use tokio::time::Instant;

use super::chart::{self, Line};
use super::error::PageError;
use super::layout::{self, Nav, Page};
use super::viewer::Viewer;
use super::{links, text};
use crate::monitor::{self, Rates, KEEP, SAMPLE_EVERY};
use crate::state::AppState;

/// The shortest span a chart shows.
const MIN_WINDOW: Duration = Duration::from_secs(30);

/// The admin page's overview (HTML).
#[utoipa::path(
    get,
    path = "/",
    // The name it had as an API handler, which clients may key on.
    operation_id = "index",
    tag = "system",
    responses((status = 200, description = "HTML", content_type = "text/html", body = String))
)]
pub(super) async fn page(
    State(st): State<AppState>,
    viewer: Viewer,
) -> Result<Response, PageError> {
    let stats = st.call(st.store().stats()).await?;
    let now = Instant::now();
    let rates = st.monitor().rates(now);
    let samples = st.monitor().samples();
    let mut totals = StateCounts::default();
    for q in &stats {
        for s in TaskState::ALL {
            *totals.slot(s) += q.counts.get(s);
        }
    }
    // The charts span the samples there are (ten minutes once the ring is
    // full), so a fresh server's first minute is not a sliver at the edge.
    let window = samples
        .first()
        .map_or(MIN_WINDOW, |s| now.saturating_duration_since(s.at))
        .clamp(MIN_WINDOW, SAMPLE_EVERY * KEEP as u32);
    let (enqueued, completed) = monitor::rate_series(&samples, now);
    let (ready, leased) = monitor::backlog_series(&samples, now);
    let body = html! {
        h1 { "Queues" }
        section.summary aria-label="Activity" {
            div.cards {
                (card("Enqueued", &rate_text(rates, |r| r.enqueued), &rate_span(rates), false))
                (card("Completed", &rate_text(rates, |r| r.completed), &rate_span(rates), false))
                (card("Ready", &text::count(totals.ready), "tasks waiting for a worker", false))
                (card("Dead", &text::count(totals.dead), "tasks that gave up", totals.dead > 0))
            }
            div.charts {
                (chart::chart(
                    "Throughput",
                    &throughput_summary(rates),
                    "/s",
                    window,
                    &[
                        Line { name: "enqueued", class: "s-enqueued", points: &enqueued },
                        Line { name: "completed", class: "s-completed", points: &completed },
                    ],
                ))
                (chart::chart(
                    "Backlog",
                    &format!("{} ready and {} leased now", text::count(totals.ready), text::count(totals.leased)),
                    "tasks",
                    window,
                    &[
                        Line { name: "ready", class: "s-ready", points: &ready },
                        Line { name: "leased", class: "s-leased", points: &leased },
                    ],
                ))
            }
            p.muted.note { "Rates count what went through this server since it started." }
        }
        section aria-labelledby="queues-heading" {
            h2 #queues-heading { "All queues" }
            @if stats.is_empty() {
                p.empty { "No queues yet. A queue appears with its first task ("
                    code { "POST /v1/queues/{queue}/tasks" } ")." }
            } @else {
                (queues_table(&stats))
            }
        }
    };
    let page = Page {
        title: "Queues",
        nav: Nav::Queues,
        refresh: true,
    };
    Ok(layout::respond(
        StatusCode::OK,
        layout::render(&page, viewer.logout_csrf(), body),
    ))
}

fn card(label: &str, value: &str, sub: &str, alarm: bool) -> Markup {
    html! {
        div.card.alarm[alarm] {
            span.card-label { (label) }
            span.card-value { (value) }
            span.card-sub { (sub) }
        }
    }
}

fn rate_text(rates: Option<Rates>, pick: impl Fn(&Rates) -> f64) -> String {
    rates.map_or_else(|| "—".to_string(), |r| text::rate(pick(&r)))
}

fn rate_span(rates: Option<Rates>) -> String {
    match rates {
        Some(r) => format!("per second, last {}", text::duration(whole_secs(r.over))),
        None => "per second, once sampled".to_string(),
    }
}

fn whole_secs(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs())
}

fn throughput_summary(rates: Option<Rates>) -> String {
    match rates {
        Some(r) => format!(
            "{} enqueued and {} completed on average over the last {}",
            text::rate(r.enqueued),
            text::rate(r.completed),
            text::duration(whole_secs(r.over))
        ),
        None => "Not enough samples yet".to_string(),
    }
}

fn queues_table(stats: &[QueueStats]) -> Markup {
    html! {
        div.scroll {
            table.data {
                caption.visually-hidden { "Tasks per queue and state; kinds under their queue" }
                thead {
                    tr {
                        th scope="col" { "Queue" }
                        @for s in TaskState::ALL {
                            th.num scope="col" { (s.as_str()) }
                        }
                        th.num scope="col" { "Oldest ready" }
                    }
                }
                @for q in stats {
                    tbody {
                        tr.queue {
                            th scope="row" {
                                a href=(links::queue(&q.name)) { (q.name.as_str()) }
                                @if q.paused { " " span.badge.paused { "paused" } }
                            }
                            (count_cells(&q.counts))
                            td.num {
                                @match q.oldest_ready_age {
                                    Some(age) => (text::duration(age)),
                                    None => span.muted { "—" },
                                }
                            }
                        }
                        @if show_kinds(q) {
                            @for (kind, counts) in &q.kinds {
                                tr.kind {
                                    th scope="row" { span.visually-hidden { "kind " } (kind.as_str()) }
                                    (count_cells(counts))
                                    td {}
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Kinds are worth a row each unless the queue's only kind is its own name
/// (the default).
fn show_kinds(q: &QueueStats) -> bool {
    q.kinds.len() > 1 || q.kinds.keys().any(|k| k.as_str() != q.name.as_str())
}

fn count_cells(c: &StateCounts) -> Markup {
    html! {
        @for s in TaskState::ALL {
            @let n = c.get(s);
            td.num.zero[n == 0].alarm[s == TaskState::Dead && n > 0] { (text::count(n)) }
        }
    }
}
