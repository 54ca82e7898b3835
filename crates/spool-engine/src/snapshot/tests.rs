//! Tasks through a snapshot and back, and snapshots written before a
//! field existed still loading.

#![allow(clippy::unwrap_used)]

use spool_core::{TaskGroup, Timestamp};

use super::*;
use crate::state::{Extra, State};

const ID: u64 = 1;

/// A snapshot of one task that has failed `failures` times and holds
/// the last two of them, and where the task's item starts in it.
fn snapshot(failures: u64) -> (Vec<u8>, usize) {
    traced_snapshot(failures, None, None)
}

/// [`snapshot`] of a task enqueued with `traceparent` and `group`.
fn traced_snapshot(
    failures: u64,
    traceparent: Option<&str>,
    group: Option<&str>,
) -> (Vec<u8>, usize) {
    let mut state = enqueued(traceparent, group);
    let x = state.tasks.extra_mut(ID).unwrap();
    for attempt in [1, 2] {
        spool_core::transition::push_error(&mut x.errors, attempt, Timestamp(2), "boom");
    }
    x.failures = failures;
    let mut buf = Vec::new();
    let mut encoder = SnapshotEncoder::default();
    encoder.header(&state, Timestamp(2), &mut buf);
    let task = buf.len();
    encode_task(&state, &mut buf);
    (buf, task)
}

/// A state holding task `ID`, enqueued with `traceparent` and `group`.
fn enqueued(traceparent: Option<&str>, group: Option<&str>) -> State {
    State::with_one_task(ID, Timestamp(1), traceparent, group)
}

/// The snapshot item of task `ID` as a checkpoint writes it.
fn encode_task(state: &State, buf: &mut Vec<u8>) {
    let (e, x) = (state.tasks.get(ID).unwrap(), state.tasks.extra(ID));
    SnapshotEncoder::entry(ID, e, x, state.group_of(ID), buf);
}

fn load_state(buf: &[u8]) -> State {
    let mut state = State::new();
    load_chunk(&mut state, buf, &mut Timestamp(0)).unwrap();
    state
}

fn load(buf: &[u8]) -> Extra {
    load_state(buf).tasks.extra(ID).unwrap().clone()
}

#[test]
fn a_task_keeps_its_count_of_failures() {
    let x = load(&snapshot(9).0);
    assert_eq!((x.errors.len(), x.failures), (2, 9));
}

/// Where the extra tag of the task item at `task` is: after the item's
/// tag, id, queue, kind, priority, state, format, attempt,
/// max_attempts, run_at, created_at, payload segment and offset.
fn extra_tag(task: usize) -> usize {
    task + 1 + 8 + 4 + 4 + 2 + 1 + 1 + 4 + 4 + 8 + 8 + 8 + 8
}

#[test]
fn a_task_keeps_its_traceparent_and_one_without_is_written_as_before() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (buf, task) = traced_snapshot(9, Some(tp), None);
    assert_eq!(buf[extra_tag(task)], EXTRA_TRACED);
    let x = load(&buf);
    assert_eq!((x.traceparent.as_deref(), x.failures), (Some(tp), 9));

    let (buf, task) = snapshot(9);
    assert_eq!(buf[extra_tag(task)], EXTRA);
    assert_eq!(load(&buf).traceparent, None);
}

#[test]
fn a_task_keeps_its_group_with_or_without_a_traceparent() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    for traceparent in [None, Some(tp)] {
        let (buf, task) = traced_snapshot(9, traceparent, Some("tenant ü"));
        assert_eq!(buf[extra_tag(task)], EXTRA_TAILED);
        let state = load_state(&buf);
        let task = state.view(ID).unwrap().task;
        assert_eq!(task.traceparent.as_deref(), traceparent);
        assert_eq!(task.group.as_ref().map(TaskGroup::as_str), Some("tenant ü"));
        assert_eq!(task.errors.len(), 2);
    }
}

#[test]
fn a_grouped_task_without_extra_fields_loads_without_them() {
    let state = enqueued(None, Some("tenant 7"));
    assert!(
        state.tasks.extra(ID).is_none(),
        "a group needs no extra fields"
    );
    let mut buf = Vec::new();
    SnapshotEncoder::default().header(&state, Timestamp(2), &mut buf);
    let task = buf.len();
    encode_task(&state, &mut buf);
    assert_eq!(
        buf[extra_tag(task)],
        EXTRA_TAILED,
        "as an older engine reads it"
    );
    let loaded = load_state(&buf);
    assert!(loaded.tasks.extra(ID).is_none());
    let view = loaded.view(ID).unwrap().task;
    assert_eq!(view.group.as_ref().map(TaskGroup::as_str), Some("tenant 7"));
    assert_eq!(view.updated_at, view.created_at);
}

#[test]
fn a_task_from_before_failures_were_counted_still_loads() {
    // As Spool wrote the task before: extra tag 1, no count at the end.
    let (mut buf, task) = snapshot(9);
    let extra_tag = extra_tag(task);
    assert_eq!(buf[extra_tag], EXTRA);
    buf[extra_tag] = EXTRA_UNNUMBERED;
    buf.truncate(buf.len() - 8);
    let x = load(&buf);
    assert_eq!((x.errors.len(), x.failures), (2, 2));
}
