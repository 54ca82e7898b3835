//! The jobs of the workflow tests (`deps`, `batch`): members that leave a
//! result, and the callback that waits for them, all in queue `batch`.

use serde::{Deserialize, Serialize};
use spool_runtime::Job;

#[derive(Serialize, Deserialize)]
pub(crate) struct Member {
    /// Whether the member succeeds; one that does not goes dead.
    pub(crate) ok: bool,
    /// What the member leaves as its result.
    pub(crate) n: u32,
}

impl Job for Member {
    const KIND: &'static str = "member";
    const QUEUE: &'static str = "batch";
}

#[derive(Serialize, Deserialize)]
pub(crate) struct Callback;

impl Job for Callback {
    const KIND: &'static str = "callback";
    const QUEUE: &'static str = "batch";
}
