//! A task's dependencies as its JSON carries them (docs/spec.md §3.2,
//! §7.1): the fields a task has only when it names others in `after`.

use serde::{Deserialize, Serialize};

use crate::outcome::TaskResult;
use crate::task::{Dependencies, ParentFailure, TaskId};

/// What a task waits for and how those tasks ended so far. Present on a
/// task only when it was enqueued with `after`.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DepsJson {
    /// The ids named at enqueue, each once, in the order named.
    pub after: Vec<u64>,
    /// Those that have not ended yet, ascending; the task is `pending`
    /// while any is left.
    pub waiting_on: Vec<u64>,
    /// How many ended dead or cancelled.
    pub parents_failed: u32,
    /// How many ended completed: `after` less `waiting_on` less
    /// `parents_failed`, given so a batch callback need not work it out.
    pub parents_completed: u32,
    /// What a parent ending dead or cancelled does to the task.
    pub if_parent_fails: ParentFailure,
    /// The results the parents that completed with one left, by parent id
    /// ascending; absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parent_results: Vec<ParentResultJson>,
}

/// One parent's result.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParentResultJson {
    /// The parent's id.
    pub id: u64,
    /// What its ack gave as `result`: any JSON but `null`.
    pub result: serde_json::Value,
}

impl From<&Dependencies> for DepsJson {
    fn from(d: &Dependencies) -> Self {
        DepsJson {
            after: d.after.iter().map(|id| id.0).collect(),
            waiting_on: d.waiting_on.iter().map(|id| id.0).collect(),
            parents_failed: d.failed,
            parents_completed: d.completed(),
            if_parent_fails: d.if_parent_fails,
            parent_results: d
                .results
                .iter()
                .map(|(id, r)| ParentResultJson {
                    id: id.0,
                    result: r.value(),
                })
                .collect(),
        }
    }
}

impl TryFrom<DepsJson> for Dependencies {
    type Error = String;

    /// Refuses counts that do not add up, so that
    /// [`Dependencies::completed`] on what it gives cannot underflow.
    fn try_from(j: DepsJson) -> Result<Self, String> {
        let ended = j.after.len().checked_sub(j.waiting_on.len());
        let completed = ended.and_then(|e| e.checked_sub(j.parents_failed as usize));
        if completed != Some(j.parents_completed as usize) {
            return Err(format!(
                "dependencies that do not add up: {} named, {} waited on, {} failed, {} completed",
                j.after.len(),
                j.waiting_on.len(),
                j.parents_failed,
                j.parents_completed
            ));
        }
        let mut results = Vec::with_capacity(j.parent_results.len());
        for p in j.parent_results {
            let r = TaskResult::new(&p.result).map_err(|e| e.to_string())?;
            results.push((TaskId(p.id), r));
        }
        results.sort_by_key(|(id, _)| *id);
        Ok(Dependencies {
            after: j.after.into_iter().map(TaskId).collect(),
            waiting_on: j.waiting_on.into_iter().map(TaskId).collect(),
            failed: j.parents_failed,
            if_parent_fails: j.if_parent_fails,
            results,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_round_trip_with_their_completed_count() -> Result<(), String> {
        let d = Dependencies {
            after: vec![TaskId(4), TaskId(2), TaskId(9)],
            waiting_on: vec![TaskId(9)],
            failed: 1,
            if_parent_fails: ParentFailure::Run,
            results: vec![(
                TaskId(2),
                TaskResult::from_json(r#"{"n":1}"#).map_err(|e| e.to_string())?,
            )],
        };
        let j = DepsJson::from(&d);
        assert_eq!(j.parents_completed, 1);
        let text = serde_json::to_string(&j).map_err(|e| e.to_string())?;
        assert_eq!(
            text,
            r#"{"after":[4,2,9],"waiting_on":[9],"parents_failed":1,"parents_completed":1,"if_parent_fails":"run","parent_results":[{"id":2,"result":{"n":1}}]}"#
        );
        assert_eq!(Dependencies::try_from(j)?, d);
        Ok(())
    }

    #[test]
    fn counts_that_do_not_add_up_are_refused() {
        let j = DepsJson {
            after: vec![1],
            waiting_on: vec![],
            parents_failed: 2,
            parents_completed: 0,
            if_parent_fails: ParentFailure::Cancel,
            parent_results: Vec::new(),
        };
        assert!(Dependencies::try_from(j).is_err());
    }
}
