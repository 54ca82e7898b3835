//! HTTPS with rustls (ring provider) when `tls_cert`/`tls_key` are given.
//!
//! The certificate chain and key are read once at start; a bad file stops
//! the server from starting rather than serving plain HTTP by surprise.
//! ALPN offers HTTP/2 and HTTP/1.1.

use std::sync::Arc;

use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read the certificate chain {path}: {reason}")]
    Cert { path: String, reason: String },
    #[error("cannot read the private key {path}: {reason}")]
    Key { path: String, reason: String },
    #[error("the certificate file {0} holds no certificate")]
    NoCert(String),
    #[error("TLS setup failed: {0}")]
    Rustls(#[from] tokio_rustls::rustls::Error),
}

/// An acceptor for the configured certificate and key.
pub(crate) fn acceptor(cfg: &TlsConfig) -> Result<TlsAcceptor, TlsError> {
    let cert_path = cfg.cert.display().to_string();
    let certs = CertificateDer::pem_file_iter(&cfg.cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| TlsError::Cert {
            path: cert_path.clone(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCert(cert_path));
    }
    let key = PrivateKeyDer::from_pem_file(&cfg.key).map_err(|e| TlsError::Key {
        path: cfg.key.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut config = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
