//! What every handler shares: the store and the settings of the router, and
//! the one place that bounds how long a store call may take.
//!
//! A store call that outlasts the store timeout answers 503 `unavailable`
//! instead of hanging the request (docs/spec.md §7.1, "Store down"). The outcome of
//! the latest store call is remembered so `/healthz` can report a store that
//! answers but cannot write.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use spool_core::{Store, StoreError};

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::monitor::Monitor;

/// The router's state: one `Arc`, cloned by every request's extractors.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

struct Shared {
    store: Arc<dyn Store>,
    config: ServerConfig,
    /// Set when the latest store call failed with `unavailable` or timed out;
    /// cleared by the next call that succeeds.
    store_down: AtomicBool,
    /// What this server enqueued and acked, sampled for the admin page.
    monitor: Arc<Monitor>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.0.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// A state with the default [`ServerConfig`].
    pub fn new(store: Arc<dyn Store>) -> Self {
        AppState(Arc::new(Shared {
            store,
            config: ServerConfig::default(),
            store_down: AtomicBool::new(false),
            monitor: Arc::new(Monitor::default()),
        }))
    }

    /// The same store with these settings.
    pub fn with_config(self, config: &ServerConfig) -> Self {
        AppState(Arc::new(Shared {
            store: self.0.store.clone(),
            config: config.clone(),
            store_down: AtomicBool::new(self.store_seems_down()),
            monitor: self.0.monitor.clone(),
        }))
    }

    /// The settings every handler shares: token, limits, store timeout.
    pub fn config(&self) -> &ServerConfig {
        &self.0.config
    }

    /// The store behind the API; handlers reach it through
    /// [`AppState::call`], which bounds how long it may take.
    pub fn store(&self) -> &dyn Store {
        self.0.store.as_ref()
    }

    /// The store, for a background task that must not keep it open.
    pub(crate) fn store_weak(&self) -> Weak<dyn Store> {
        Arc::downgrade(&self.0.store)
    }

    /// Counters and samples of this server's activity.
    pub(crate) fn monitor(&self) -> &Monitor {
        &self.0.monitor
    }

    pub(crate) fn monitor_weak(&self) -> Weak<Monitor> {
        Arc::downgrade(&self.0.monitor)
    }

    /// Runs a store call under the store timeout.
    pub async fn call<T>(
        &self,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, ApiError> {
        self.call_with(Duration::ZERO, fut).await
    }

    /// Runs a store call that may legitimately take `extra` longer (a long
    /// poll) under the store timeout plus `extra`.
    pub async fn call_with<T>(
        &self,
        extra: Duration,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, ApiError> {
        let limit = self.0.config.store_timeout.saturating_add(extra);
        let down = &self.0.store_down;
        match tokio::time::timeout(limit, fut).await {
            Ok(Ok(v)) => {
                // Read first: a write from every request on every thread
                // would bounce the flag's cache line between cores.
                if down.load(Ordering::Relaxed) {
                    down.store(false, Ordering::Relaxed);
                }
                Ok(v)
            }
            Ok(Err(e)) => {
                if matches!(e, StoreError::Unavailable(_)) {
                    down.store(true, Ordering::Relaxed);
                }
                Err(ApiError::Store(e))
            }
            Err(_) => {
                down.store(true, Ordering::Relaxed);
                Err(ApiError::StoreTimeout(limit))
            }
        }
    }

    /// Whether the latest store call found the store down.
    pub fn store_seems_down(&self) -> bool {
        self.0.store_down.load(Ordering::Relaxed)
    }
}
