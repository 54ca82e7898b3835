//! Where each task of a batch goes: a new row, or the row of an earlier
//! task of the batch with the same key (a key used twice within a batch is
//! a duplicate of its first use and never reaches the database).

use std::collections::HashMap;

use spool_core::{NewTask, TaskKey};

/// Where each task of the batch goes.
pub(crate) enum Slot<'a> {
    /// Inserted (unless its key is taken), as the n-th new row.
    New(usize, Option<&'a TaskKey>),
    /// A later use of a key already used at this index of the batch.
    SameKeyAs(usize),
}

/// Where each task of the batch goes, and whether any has a key.
pub(crate) fn slots(tasks: &[NewTask]) -> (Vec<Slot<'_>>, bool) {
    let mut first_use: HashMap<&TaskKey, usize> = HashMap::new();
    let mut slots = Vec::with_capacity(tasks.len());
    let mut new_rows = 0;
    for (i, t) in tasks.iter().enumerate() {
        match t.key.as_ref().map(|k| (k, first_use.get(k))) {
            Some((_, Some(&first))) => slots.push(Slot::SameKeyAs(first)),
            key => {
                if let Some((k, None)) = key {
                    first_use.insert(k, i);
                }
                slots.push(Slot::New(new_rows, t.key.as_ref()));
                new_rows += 1;
            }
        }
    }
    (slots, !first_use.is_empty())
}
