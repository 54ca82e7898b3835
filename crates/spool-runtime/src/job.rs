//! Typed tasks: a payload type that knows its kind and its queue.
//!
//! Payloads are JSON (serde), stored as JSON so that the HTTP API, the CLI
//! and the admin page show them as they are.

use serde::de::DeserializeOwned;
use serde::Serialize;
use spool_core::{Kind, NameError, Payload, QueueName};

/// A task's payload type: the kind it is handled as and the queue it goes to.
///
/// ```
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize)]
/// struct SendEmail {
///     to: String,
/// }
///
/// impl spool_runtime::Job for SendEmail {
///     const KIND: &'static str = "send_email";
///     const QUEUE: &'static str = "emails";
/// }
/// ```
pub trait Job: Serialize + DeserializeOwned + Send + 'static {
    /// The handler name: 1–128 characters of `[A-Za-z0-9._:-]`.
    const KIND: &'static str;
    /// The queue its tasks go to; by default the kind.
    const QUEUE: &'static str = Self::KIND;
}

/// The queue and kind a job names, checked.
pub(crate) fn names<J: Job>() -> Result<(QueueName, Kind), NameError> {
    Ok((QueueName::new(J::QUEUE)?, Kind::new(J::KIND)?))
}

pub(crate) fn encode<J: Job>(job: &J) -> Result<Payload, serde_json::Error> {
    serde_json::to_vec(job).map(Payload::json)
}

pub(crate) fn decode<J: Job>(payload: &Payload) -> Result<J, serde_json::Error> {
    serde_json::from_slice(&payload.bytes)
}
