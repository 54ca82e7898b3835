//! The remote store: a Spool server over HTTP (feature `remote`).
//!
//! Claims long-poll the server, so idle workers hear of new tasks at once;
//! the store's clock is the server's.

use std::sync::Arc;

pub use spool_client::{ClientError, RemoteStore, RemoteStoreBuilder};

/// A store at `url` (e.g. `http://127.0.0.1:7700`), with the bearer token
/// the server asks for, if any.
pub fn connect(url: &str, token: Option<String>) -> Result<Arc<RemoteStore>, ClientError> {
    RemoteStore::new(url, token).map(Arc::new)
}
