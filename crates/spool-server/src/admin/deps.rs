//! A task's dependencies on its page (`/tasks/{id}`, docs/spec.md §3.2):
//! the tasks it waits for, each linked, which of them have not ended yet,
//! how the others ended, what a failure among them does to it, and the
//! result each completed parent left, if any.

use maud::{html, Markup};
use spool_core::{Dependencies, ParentFailure, TaskId, TaskResult};

use super::{links, payload, text};

/// Most parents listed by id: a batch's callback may wait for 10,000, and
/// the counts above the list already say how they stand.
const LISTED: usize = 100;
/// Most characters of a parent's result shown in the list; the whole
/// result (at most 4 KiB) is in the element's tooltip.
const RESULT_SHOWN: usize = 80;

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
                        @if let Some(r) = result_of(d, *id) {
                            @let (whole, shown) = result_text(r);
                            span.muted { ", result " }
                            code.result title=(whole) { (shown) }
                        }
                    }
                }
            }
            @if more > 0 {
                p.muted { "and " (text::count(more as u64)) " more" }
            }
        }
    }
}

fn result_of(d: &Dependencies, id: TaskId) -> Option<&TaskResult> {
    let at = d.results.binary_search_by_key(&id, |(p, _)| *p).ok()?;
    Some(&d.results[at].1)
}

/// A result as compact JSON: whole, and as shown, cut after
/// [`RESULT_SHOWN`] characters with an ellipsis.
fn result_text(r: &TaskResult) -> (String, String) {
    let whole = payload::compact(r.as_str());
    let shown = match whole.char_indices().nth(RESULT_SHOWN) {
        Some((cut, _)) => format!("{}…", &whole[..cut]),
        None => whole.clone(),
    };
    (whole, shown)
}

fn policy(p: ParentFailure) -> &'static str {
    match p {
        ParentFailure::Cancel => "cancel this task",
        ParentFailure::Run => "run it anyway",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_result_shows_compact_and_cut() {
        let r = TaskResult::from_json(r#"{ "rows" : 3 }"#).unwrap();
        let (whole, shown) = result_text(&r);
        assert_eq!(
            (whole.as_str(), shown.as_str()),
            (r#"{"rows":3}"#, r#"{"rows":3}"#)
        );
        let long = format!("\"{}\"", "é".repeat(200));
        let (whole, shown) = result_text(&TaskResult::from_json(&long).unwrap());
        assert_eq!(whole, long);
        assert_eq!(shown.chars().count(), RESULT_SHOWN + 1);
        assert!(shown.ends_with("é…"), "{shown}");
    }
}
