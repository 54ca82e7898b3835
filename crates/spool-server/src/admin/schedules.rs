//! `GET /schedules`: every schedule with its cadence and its last and next
//! fire.

use std::collections::BTreeSet;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use spool_core::{Cadence, QueueName, Schedule, Timestamp};

use super::error::PageError;
use super::layout::{self, time_ago, Nav, Page};
use super::viewer::Viewer;
use super::{links, text};
use crate::state::AppState;

pub(super) async fn page(
    State(st): State<AppState>,
    viewer: Viewer,
) -> Result<Response, PageError> {
    let schedules = st.call(st.store().list_schedules()).await?;
    let now = st.call(st.store().now()).await?;
    // A schedule's queue exists once something was enqueued in it: link
    // only to pages that are there.
    let queues: BTreeSet<QueueName> = st
        .call(st.store().stats())
        .await?
        .into_iter()
        .map(|q| q.name)
        .collect();
    let body = html! {
        h1 { "Schedules" }
        @if schedules.is_empty() {
            p.empty { "No schedules. Create one with " code { "PUT /v1/schedules/{name}" } "." }
        } @else {
            div.scroll {
                table.data {
                    caption.visually-hidden { "Schedules with their last and next fire" }
                    thead {
                        tr {
                            th scope="col" { "Name" }
                            th scope="col" { "Queue" }
                            th scope="col" { "Kind" }
                            th scope="col" { "Cadence" }
                            th scope="col" { "Deadline" }
                            th scope="col" { "Last fire" }
                            th scope="col" { "Next fire" }
                        }
                    }
                    tbody {
                        @for s in &schedules { (row(s, now, &queues)) }
                    }
                }
            }
        }
    };
    let page = Page {
        title: "Schedules",
        nav: Nav::Schedules,
        refresh: true,
    };
    Ok(layout::respond(
        StatusCode::OK,
        layout::render(&page, viewer.logout_csrf(), body),
    ))
}

fn row(s: &Schedule, now: Timestamp, queues: &BTreeSet<QueueName>) -> Markup {
    let spec = &s.spec;
    let next = s.next_fire_at();
    html! {
        tr {
            th scope="row" { (spec.name.as_str()) }
            td {
                @if queues.contains(&spec.queue) {
                    a href=(links::queue(&spec.queue)) { (spec.queue.as_str()) }
                } @else {
                    (spec.queue.as_str())
                }
            }
            td { (spec.kind.as_ref().map_or(spec.queue.as_str(), |k| k.as_str())) }
            td { (cadence(&spec.cadence)) }
            td {
                (text::duration(spec.deadline_at(next.unwrap_or(now))))
                @if spec.deadline.is_none() { " " span.muted { "(the period)" } }
            }
            td { @match s.last_fire_at { Some(t) => (time_ago(t, now)), None => span.muted { "never" } } }
            td {
                @match next {
                    // Nothing fired it yet: say so rather than "next: 4 s ago".
                    Some(t) if t <= now => { "due " (time_ago(t, now)) }
                    Some(t) => (time_ago(t, now)),
                    None => span.muted { "never" },
                }
            }
        }
    }
}

fn cadence(c: &Cadence) -> Markup {
    html! {
        @match c {
            Cadence::Every(d) => { "every " (text::duration(*d)) }
            Cadence::Cron { expr, tz } => {
                code { (expr) } " " span.muted { (tz.as_deref().unwrap_or("UTC")) }
            }
        }
    }
}
