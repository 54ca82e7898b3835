//! A task's dependencies on its page (`/tasks/{id}`, docs/spec.md §3.2):
//! the tasks it waits for, each linked, which of them have not ended yet,
//! how the others ended, and what a failure among them does to it.

use maud::{html, Markup};
use spool_core::{Dependencies, ParentFailure};

use super::{links, text};

/// Most parents listed by id: a batch's callback may wait for 10,000, and
/// the counts above the list already say how they stand.
const LISTED: usize = 100;

/// The section, for a task that waits for others.
pub(super) fn section(d: &Dependencies) -> Markup {
    let named = d.after.len() as u64;
    let more = d.after.len().saturating_sub(LISTED);
    html! {
        section aria-labelledby="deps-heading" {
            h2 #deps-heading { "Waits for" }
            dl.facts {
                div { dt { "Waiting on" } dd { (text::count(d.waiting_on.len() as u64)) " of " (text::plural(named, "task", "tasks")) } }
                div { dt { "Completed" } dd { (text::count(u64::from(d.completed()))) } }
                div { dt { "Failed" } dd { (text::count(u64::from(d.failed))) } }
                div { dt { "If one fails" } dd { (policy(d.if_parent_fails)) } }
            }
            ul.parents {
                @for id in d.after.iter().take(LISTED) {
                    li {
                        a href=(links::task(*id)) { "Task " (id) }
                        // Ended parents are often gone (completed tasks are
                        // deleted): the link may find nothing.
                        @if d.waiting_on.binary_search(id).is_ok() { " waiting" }
                        @else { span.muted { " ended" } }
                    }
                }
            }
            @if more > 0 {
                p.muted { "and " (text::count(more as u64)) " more" }
            }
        }
    }
}

fn policy(p: ParentFailure) -> &'static str {
    match p {
        ParentFailure::Cancel => "cancel this task",
        ParentFailure::Run => "run it anyway",
    }
}
