//! Running a transaction of the store's own again when PostgreSQL refused
//! it for a reason that is not the request's: a deadlock it broke
//! (40P01), or a row the rotation moved under a statement (40001). The
//! transaction changed nothing then, so running it again is safe.

use std::future::Future;

use spool_core::StoreError;

use crate::db::{moved_under_it, ATTEMPTS};
use crate::error::db;

/// Why a step of a transaction failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// PostgreSQL rolled the transaction back for its own reasons: run it
    /// again.
    Again(tokio_postgres::Error),
    /// The answer to the request, or an error running it again will not
    /// cure.
    Refused(StoreError),
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        Failure::Refused(e)
    }
}

impl Failure {
    /// The error the caller sees.
    pub(crate) fn into_store(self) -> StoreError {
        match self {
            Failure::Again(e) => db(e),
            Failure::Refused(e) => e,
        }
    }
}

/// A statement's error, sorted.
pub(crate) fn pg(e: tokio_postgres::Error) -> Failure {
    let deadlock = e.code() == Some(&tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED);
    if deadlock || moved_under_it(&e) {
        Failure::Again(e)
    } else {
        Failure::Refused(db(e))
    }
}

/// Runs `attempt` (a whole transaction) up to [`ATTEMPTS`] times while it
/// fails with [`Failure::Again`].
pub(crate) async fn retried<T, F, Fut>(mut attempt: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let mut tries = 1;
    loop {
        match attempt().await {
            Ok(v) => return Ok(v),
            Err(Failure::Again(_)) if tries < ATTEMPTS => tries += 1,
            Err(f) => return Err(f.into_store()),
        }
    }
}
