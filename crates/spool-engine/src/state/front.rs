//! Reading a ready index against the task records: the tasks at its front
//! in claim order, and each lane's earliest run_at. Both skip the stale
//! FIFO ids a [`ReadyIndex`] leaves behind (see `super::ready`), and the
//! front drops those it meets at a lane's head.

use std::ops::Bound;

use spool_core::{TaskState, Timestamp};

use super::entry::flag;
use super::ready::ReadyIndex;
use super::table::TaskTable;

/// Whether `id` is really in the FIFO of lane `p` of a ready index of
/// queue `q`, rather than a stale copy of a task that left it.
fn live_in_fifo(tasks: &TaskTable, id: u64, q: u32, p: i16) -> bool {
    tasks.get(id).is_some_and(|e| {
        e.has(flag::IN_FIFO) && e.state == TaskState::Ready && e.queue() == q && e.priority == p
    })
}

/// Appends to `out` up to `max` ready tasks of `index` (queue `q`'s) in
/// claim order, without taking them. Allocates nothing but `out`'s growth:
/// a grouped claim reads one group's front per turn, a hundred a claim.
pub(crate) fn front_into(
    tasks: &TaskTable,
    index: &mut ReadyIndex,
    q: u32,
    max: usize,
    out: &mut Vec<u64>,
) {
    let end = out.len().saturating_add(max);
    // Lane by lane, lowest priority value first; the next lane is looked up
    // after this one, since dropping stale ids may remove it.
    let mut next = index.lanes.keys().next().copied();
    while let Some(p) = next {
        if out.len() >= end {
            break;
        }
        drop_stale(tasks, index, q, p);
        next = index
            .lanes
            .range((Bound::Excluded(p), Bound::Unbounded))
            .next()
            .map(|(&k, _)| k);
        let Some(lane) = index.lanes.get(&p) else {
            continue;
        };
        // Merge the FIFO (skipping stale ids) with the side set.
        let mut fifo = lane
            .fifo
            .iter()
            .filter(|&id| live_in_fifo(tasks, id, q, p))
            .filter_map(|id| Some((tasks.get(id)?.run_at, id)))
            .peekable();
        let mut side = lane.side.iter().copied().peekable();
        while out.len() < end {
            let next = match (fifo.peek(), side.peek()) {
                (Some(a), Some(b)) if b < a => side.next(),
                (Some(_), _) => fifo.next(),
                (None, _) => side.next(),
            };
            match next {
                Some((_, id)) => out.push(id),
                None => break,
            }
        }
    }
}

/// Up to `max` ready tasks of `index` (queue `q`'s) in claim order,
/// without taking them.
pub(crate) fn front(tasks: &TaskTable, index: &mut ReadyIndex, q: u32, max: usize) -> Vec<u64> {
    let mut out = Vec::new();
    front_into(tasks, index, q, max, &mut out);
    out
}

/// Pops stale ids off the front of lane `p`'s FIFO.
fn drop_stale(tasks: &TaskTable, index: &mut ReadyIndex, q: u32, p: i16) {
    let Some(lane) = index.lanes.get_mut(&p) else {
        return;
    };
    while let Some(id) = lane.fifo.front() {
        if live_in_fifo(tasks, id, q, p) {
            break;
        }
        lane.fifo.pop();
    }
    index.prune(p);
}

/// The earliest ready run_at of each lane of `index` (queue `q`'s).
pub(crate) fn heads<'a>(
    tasks: &'a TaskTable,
    index: &'a ReadyIndex,
    q: u32,
) -> impl Iterator<Item = Timestamp> + 'a {
    index.lanes.iter().filter_map(move |(&p, lane)| {
        let fifo = lane
            .fifo
            .iter()
            .find(|&id| live_in_fifo(tasks, id, q, p))
            .and_then(|id| Some(tasks.get(id)?.run_at));
        let side = lane.side.first().map(|&(at, _)| at);
        match (fifo, side) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    })
}
