//! RESP over TLS with the certificate `--tls-cert/--tls-key` give the HTTP
//! listener: a client that trusts it runs commands; a plain-text client
//! and one that does not trust it get no answer.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use spool_server::{RespLimits, ServerConfig, TlsConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

use crate::resp::support::{encode, Servers};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

async fn tls_servers() -> Servers {
    let config = ServerConfig {
        tls: Some(TlsConfig {
            cert: fixture("cert.pem"),
            key: fixture("key.pem"),
        }),
        ..ServerConfig::default()
    };
    Servers::with(config, RespLimits::default()).await
}

fn connector(trusted: &[CertificateDer<'static>]) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for cert in trusted {
        roots.add(cert.clone()).unwrap();
    }
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

/// Reads until `want` bytes came or the server closed; what came.
async fn read_some<S: AsyncReadExt + Unpin>(io: &mut S, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 1024];
    while got.len() < want {
        match tokio::time::timeout(Duration::from_secs(5), io.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    got
}

#[tokio::test]
async fn resp_over_tls_answers_a_client_that_trusts_the_certificate() {
    let s = tls_servers().await;
    let cert = CertificateDer::from_pem_file(fixture("cert.pem")).unwrap();
    let tcp = TcpStream::connect(&s.resp).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector(&[cert]).connect(name, tcp).await.unwrap();
    let mut bytes = encode(&[b"PING"]);
    bytes.extend(encode(&[b"ENQUEUE", b"secure", b"over tls"]));
    tls.write_all(&bytes).await.unwrap();
    assert_eq!(read_some(&mut tls, 11).await, b"+PONG\r\n:1\r\n");
    assert_eq!(s.store.stats().await.unwrap()[0].counts.ready, 1);
}

#[tokio::test]
async fn resp_over_tls_gives_plain_text_and_untrusting_clients_nothing() {
    let s = tls_servers().await;
    let mut plain = TcpStream::connect(&s.resp).await.unwrap();
    plain.write_all(&encode(&[b"PING"])).await.unwrap();
    let answer = read_some(&mut plain, 7).await;
    assert!(!answer.starts_with(b"+PONG"), "{answer:?}");

    let tcp = TcpStream::connect(&s.resp).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    assert!(connector(&[]).connect(name, tcp).await.is_err());
    assert!(s.store.stats().await.unwrap().is_empty());
}
