//! The server's listeners, started on port 0 and stopped on drop.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use spool_core::Store;
use spool_server::{AppState, RespLimits, ServerConfig};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Embedded;

/// A running server in front of one store. Dropping it stops the listeners,
/// then lets go of the store and of whatever it lives in.
pub struct Server {
    /// The HTTP listener's address.
    pub addr: SocketAddr,
    /// `http://ADDR` (`https://ADDR` when TLS is configured), no trailing
    /// slash.
    pub base: String,
    /// The RESP listener's address, when the builder asked for one.
    pub resp: Option<SocketAddr>,
    /// The store the listeners serve.
    pub store: Arc<dyn Store>,
    stop: watch::Sender<()>,
    listeners: Vec<JoinHandle<()>>,
    /// Dropped after `store`: the directory or engine the store lives in.
    _keep: Option<Box<dyn Any + Send + Sync>>,
}

/// What [`ServerBuilder::start`] starts: by default the HTTP API with the
/// default configuration over a fresh [`Embedded`] engine.
pub struct ServerBuilder {
    config: ServerConfig,
    store: Option<Arc<dyn Store>>,
    keep: Option<Box<dyn Any + Send + Sync>>,
    resp: Option<RespLimits>,
}

impl Server {
    /// A builder for a server over a fresh engine with the default
    /// configuration.
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            config: ServerConfig::default(),
            store: None,
            keep: None,
            resp: None,
        }
    }

    /// `base` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl ServerBuilder {
    /// Serves with this configuration (token, TLS, limits, ...).
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Serves `store` instead of a fresh engine, keeping `keep` (the
    /// engine's directory, say) until the server is dropped.
    pub fn store(mut self, store: Arc<dyn Store>, keep: impl Any + Send + Sync) -> Self {
        self.store = Some(store);
        self.keep = Some(Box::new(keep));
        self
    }

    /// Serves this engine, removing its directory when the server goes.
    pub fn embedded(self, engine: Embedded) -> Self {
        let store = engine.store.clone();
        self.store(store, engine)
    }

    /// Starts a RESP listener with these limits too, on the same state.
    pub fn resp(mut self, limits: RespLimits) -> Self {
        self.resp = Some(limits);
        self
    }

    /// Binds the listeners and spawns them on the current Tokio runtime.
    pub async fn start(self) -> Server {
        let (store, keep) = match self.store {
            Some(store) => (store, self.keep),
            None => {
                let engine = Embedded::open();
                let store = engine.store.clone();
                (store, Some(Box::new(engine) as Box<dyn Any + Send + Sync>))
            }
        };
        let (stop, stopped) = watch::channel(());
        let state = AppState::new(store.clone());
        let mut listeners = Vec::new();
        let resp = match self.resp {
            Some(limits) => {
                let listener = bind().await;
                let addr = local_addr(&listener);
                let (state, config) = (state.clone(), self.config.clone());
                let shutdown = until_stopped(&stopped);
                listeners.push(tokio::spawn(async move {
                    spool_server::run_resp(listener, state, config, limits, shutdown)
                        .await
                        .expect("the RESP listener of the test server failed");
                }));
                Some(addr)
            }
            None => None,
        };
        let listener = bind().await;
        let addr = local_addr(&listener);
        let scheme = if self.config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let shutdown = until_stopped(&stopped);
        let config = self.config;
        listeners.push(tokio::spawn(async move {
            spool_server::run(listener, state, config, shutdown)
                .await
                .expect("the HTTP listener of the test server failed");
        }));
        Server {
            addr,
            base: format!("{scheme}://{addr}"),
            resp,
            store,
            stop,
            listeners,
            _keep: keep,
        }
    }
}

async fn bind() -> TcpListener {
    TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port on 127.0.0.1")
}

fn local_addr(listener: &TcpListener) -> SocketAddr {
    listener
        .local_addr()
        .expect("a bound listener has an address")
}

/// Resolves once the server is told to stop (or its handle is gone).
fn until_stopped(stopped: &watch::Receiver<()>) -> impl Future<Output = ()> {
    let mut stopped = stopped.clone();
    async move {
        // An error means the sender is gone: stop all the same.
        let _ = stopped.changed().await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The signal starts a graceful stop; aborting ends it now, so no
        // listener outlives the store's directory.
        let _ = self.stop.send(());
        for listener in &self.listeners {
            listener.abort();
        }
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("base", &self.base)
            .field("resp", &self.resp)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("resp", &self.resp.is_some())
            .field("store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}
