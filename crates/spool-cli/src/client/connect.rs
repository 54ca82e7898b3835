//! Reaching the server: the `--url` and `--token` options every client
//! command shares, and the messages a failed call becomes.

use std::future::Future;

use clap::Args;
use spool_client::RemoteStore;
use spool_core::StoreError;

/// Where the server is and how to authenticate.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServerArgs {
    /// The Spool server to talk to.
    #[arg(
        long,
        value_name = "URL",
        env = "SPOOL_URL",
        default_value = "http://127.0.0.1:7700"
    )]
    pub url: String,

    /// Bearer token, when the server requires one (`spool serve --token`).
    #[arg(long, env = "SPOOL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// A server to call, and its URL for messages.
#[derive(Debug)]
pub(crate) struct Server {
    pub store: RemoteStore,
    url: String,
}

impl ServerArgs {
    /// Builds the client; nothing is sent until the first call.
    pub(crate) fn connect(&self) -> anyhow::Result<Server> {
        let store = RemoteStore::new(self.url.clone(), self.token.clone())?;
        Ok(Server {
            store,
            url: self.url.clone(),
        })
    }
}

/// What `spool_client` puts before a transport failure's message.
const TRANSPORT_PREFIX: &str = "cannot reach the server: ";
/// What `spool_client` puts before a 401's message.
const UNAUTHORIZED_PREFIX: &str = "unauthorized: ";

impl Server {
    /// Awaits a call and turns its error into one a person can act on.
    pub(crate) async fn call<T>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> anyhow::Result<T> {
        fut.await.map_err(|e| self.explain(e))
    }

    /// [`Server::call`] for a call on one named thing, so that `not_found`
    /// says which (the store's own message only says "task not found").
    pub(crate) async fn call_on<T>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> anyhow::Result<T> {
        match fut.await {
            Err(StoreError::NotFound) => Err(anyhow::anyhow!("not_found: {what} does not exist")),
            other => other.map_err(|e| self.explain(e)),
        }
    }

    fn explain(&self, e: StoreError) -> anyhow::Error {
        // `spool_client` folds transport failures and 401s into
        // `Unavailable` (a worker backs off on both); a person needs to
        // know which, so the prefixes it writes are told apart here.
        if let StoreError::Unavailable(message) = &e {
            if let Some(cause) = message.strip_prefix(TRANSPORT_PREFIX) {
                return anyhow::anyhow!(
                    "cannot reach the Spool server at {}: {cause} (is `spool serve` running there? \
                     set --url or SPOOL_URL)",
                    self.url
                );
            }
            if let Some(cause) = message.strip_prefix(UNAUTHORIZED_PREFIX) {
                return anyhow::anyhow!(
                    "unauthorized: {cause} (set --token or SPOOL_TOKEN to the server's token)"
                );
            }
        }
        anyhow::anyhow!("{}: {e}", e.code())
    }
}
