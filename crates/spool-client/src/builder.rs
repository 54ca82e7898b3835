//! Building a [`RemoteStore`]: base URL, token, timeouts, extra trusted
//! certificates, and the one pooled keep-alive HTTP client all its clones
//! share.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};

use crate::http::{ClientError, Http};
use crate::remote::RemoteStore;

/// How long a call may take, beyond a claim's long-poll wait (both
/// transports).
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings of a [`RemoteStore`].
#[derive(Debug)]
pub struct RemoteStoreBuilder {
    base: String,
    token: Option<String>,
    timeout: Duration,
    root_certificates: Vec<Vec<u8>>,
}

impl RemoteStoreBuilder {
    /// The bearer token the server requires.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How long a call may take (a claim adds its wait). Default 30 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Trusts this PEM certificate (a self-signed server) besides the
    /// public roots.
    pub fn root_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.root_certificates.push(pem.into());
        self
    }

    /// The store, with the one pooled client its clones share; connections
    /// open on first use, so an unreachable server fails the first call.
    pub fn build(self) -> Result<RemoteStore, ClientError> {
        let base = self.base.trim_end_matches('/').to_string();
        let url = reqwest::Url::parse(&base).map_err(|e| ClientError::BadUrl {
            url: base.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError::BadUrl {
                url: base,
                reason: "the scheme must be http or https".into(),
            });
        }
        let mut headers = HeaderMap::new();
        if let Some(token) = &self.token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|e| ClientError::BadToken(e.to_string()))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let mut client = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(50));
        for pem in &self.root_certificates {
            let cert = reqwest::Certificate::from_pem(pem)
                .map_err(|e| ClientError::BadCertificate(e.to_string()))?;
            client = client.add_root_certificate(cert);
        }
        let client = client
            .build()
            .map_err(|e| ClientError::Http(e.to_string()))?;
        Ok(RemoteStore {
            http: Http::new(client, base, self.timeout),
        })
    }
}

impl RemoteStore {
    /// A store at `base_url` (e.g. `http://127.0.0.1:7700`).
    pub fn builder(base_url: impl Into<String>) -> RemoteStoreBuilder {
        RemoteStoreBuilder {
            base: base_url.into(),
            token: None,
            timeout: DEFAULT_TIMEOUT,
            root_certificates: Vec::new(),
        }
    }

    /// A store at `base_url` with an optional bearer token.
    pub fn new(base_url: impl Into<String>, token: Option<String>) -> Result<Self, ClientError> {
        let b = Self::builder(base_url);
        match token {
            Some(t) => b.token(t).build(),
            None => b.build(),
        }
    }
}
