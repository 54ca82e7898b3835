//! What every handler shares: the store and the settings of the router, and
//! the one place that bounds how long a store call may take.
//!
//! A store call that outlasts the store timeout answers 503 `unavailable`
//! instead of hanging the request (SPEC §7.1, "Store down"). The outcome of
//! the latest store call is remembered so `/healthz` can report a store that
//! answers but cannot write.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use spool_core::{Store, StoreError};

use crate::admin::Monitor;
use crate::config::ServerConfig;
use crate::error::ApiError;

/// The router's state: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    store: Arc<dyn Store>,
    config: Arc<ServerConfig>,
    /// Set when the latest store call failed with `unavailable` or timed out;
    /// cleared by the next call that succeeds.
    store_down: Arc<AtomicBool>,
    /// What the admin page's rates are made of.
    monitor: Arc<Monitor>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// A state with the default [`ServerConfig`].
    pub fn new(store: Arc<dyn Store>) -> Self {
        AppState {
            store,
            config: Arc::new(ServerConfig::default()),
            store_down: Arc::new(AtomicBool::new(false)),
            monitor: Arc::new(Monitor::default()),
        }
    }

    /// The same store with these settings.
    pub fn with_config(mut self, config: &ServerConfig) -> Self {
        self.config = Arc::new(config.clone());
        self
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The store, for a background task that must not keep it open.
    pub(crate) fn store_weak(&self) -> Weak<dyn Store> {
        Arc::downgrade(&self.store)
    }

    /// Counters and samples of the admin page.
    pub(crate) fn monitor(&self) -> &Monitor {
        &self.monitor
    }

    pub(crate) fn monitor_weak(&self) -> Weak<Monitor> {
        Arc::downgrade(&self.monitor)
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
        let limit = self.config.store_timeout.saturating_add(extra);
        match tokio::time::timeout(limit, fut).await {
            Ok(Ok(v)) => {
                self.store_down.store(false, Ordering::Relaxed);
                Ok(v)
            }
            Ok(Err(e)) => {
                if matches!(e, StoreError::Unavailable(_)) {
                    self.store_down.store(true, Ordering::Relaxed);
                }
                Err(ApiError::Store(e))
            }
            Err(_) => {
                self.store_down.store(true, Ordering::Relaxed);
                Err(ApiError::StoreTimeout(limit))
            }
        }
    }

    /// Whether the latest store call found the store down.
    pub fn store_seems_down(&self) -> bool {
        self.store_down.load(Ordering::Relaxed)
    }
}
