//! `sslmode=require`: the store's connections are encrypted, and with a
//! root certificate the server is checked too.
//!
//! Needs a server with TLS on (the development server's is, with its
//! self-signed certificate for `localhost`); the tests read the
//! certificate's path from the server itself.

use std::path::PathBuf;

use crate::common::{database_url, fresh_schema, test_config, DropSchema};
use spool_core::Store;
use spool_postgres::{PgConfig, PgStore};
use tokio_postgres::NoTls;

async fn admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot use PostgreSQL at {}: {e}", database_url()));
    tokio::spawn(connection);
    client
}

/// `DATABASE_URL` with more parameters, and `host` replaced when given.
fn url_with(params: &str, host: Option<&str>) -> String {
    let mut url = database_url();
    if let Some(host) = host {
        url = url.replace("127.0.0.1", host);
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{params}")
}

/// The server's certificate, as it says, and that TLS is on.
async fn server_certificate(admin: &tokio_postgres::Client) -> PathBuf {
    let ssl: String = admin.query_one("SHOW ssl", &[]).await.unwrap().get(0);
    assert_eq!(ssl, "on", "these tests need a PostgreSQL with ssl = on");
    let file: String = admin
        .query_one("SHOW ssl_cert_file", &[])
        .await
        .unwrap()
        .get(0);
    PathBuf::from(file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_require_encrypts_every_connection() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let admin = admin().await;
    server_certificate(&admin).await;
    let app = format!("spool_tls_{:08x}", rand::random::<u32>());
    let url = url_with(&format!("sslmode=require&application_name={app}"), None);
    let store = PgStore::connect(&url, test_config(&schema))
        .await
        .expect("a store over TLS");
    store.now().await.unwrap();
    // The LISTEN connection opens in the background: wait for it.
    let mut rows = Vec::new();
    for _ in 0..100 {
        rows = admin
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = $1",
                &[&app],
            )
            .await
            .unwrap();
        if rows.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        rows.len() >= 2,
        "the pool and the LISTEN connection are open within 10 s"
    );
    assert!(
        rows.iter().all(|r| r.get::<_, bool>(0)),
        "every connection of the store is encrypted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_certificate_authenticates_the_server() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let admin = admin().await;
    let own = server_certificate(&admin).await;
    let config = |root: PathBuf| PgConfig {
        tls_root_cert: Some(root),
        ..test_config(&schema)
    };

    // The server's own certificate, for the name it was issued to.
    let url = url_with("sslmode=require", Some("localhost"));
    let store = PgStore::connect(&url, config(own.clone()))
        .await
        .expect("the server's certificate is trusted");
    store.now().await.unwrap();

    // Any other authority: refused before anything is sent.
    let other = std::env::temp_dir().join(format!("spool_tls_{:08x}.pem", rand::random::<u32>()));
    std::fs::write(&other, OTHER_CA).unwrap();
    let refused = PgStore::connect(&url, config(other.clone())).await;
    std::fs::remove_file(&other).unwrap();
    let err = refused.expect_err("a server certificate from another authority");
    assert_eq!(err.code(), "connect", "{err}");

    // A file without a certificate is a configuration error.
    let refused = PgStore::connect(&url, config(PathBuf::from("/nonexistent.pem"))).await;
    assert_eq!(refused.expect_err("no such file").code(), "config");
}

/// ISRG Root X1 (Let's Encrypt), which did not sign the test server's
/// certificate.
const OTHER_CA: &str = "-----BEGIN CERTIFICATE-----
MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAwDQYJKoZIhvcNAQELBQAw
TzELMAkGA1UEBhMCVVMxKTAnBgNVBAoTIEludGVybmV0IFNlY3VyaXR5IFJlc2Vh
cmNoIEdyb3VwMRUwEwYDVQQDEwxJU1JHIFJvb3QgWDEwHhcNMTUwNjA0MTEwNDM4
WhcNMzUwNjA0MTEwNDM4WjBPMQswCQYDVQQGEwJVUzEpMCcGA1UEChMgSW50ZXJu
ZXQgU2VjdXJpdHkgUmVzZWFyY2ggR3JvdXAxFTATBgNVBAMTDElTUkcgUm9vdCBY
MTCCAiIwDQYJKoZIhvcNAQEBBQADggIPADCCAgoCggIBAK3oJHP0FDfzm54rVygc
h77ct984kIxuPOZXoHj3dcKi/vVqbvYATyjb3miGbESTtrFj/RQSa78f0uoxmyF+
0TM8ukj13Xnfs7j/EvEhmkvBioZxaUpmZmyPfjxwv60pIgbz5MDmgK7iS4+3mX6U
A5/TR5d8mUgjU+g4rk8Kb4Mu0UlXjIB0ttov0DiNewNwIRt18jA8+o+u3dpjq+sW
T8KOEUt+zwvo/7V3LvSye0rgTBIlDHCNAymg4VMk7BPZ7hm/ELNKjD+Jo2FR3qyH
B5T0Y3HsLuJvW5iB4YlcNHlsdu87kGJ55tukmi8mxdAQ4Q7e2RCOFvu396j3x+UC
B5iPNgiV5+I3lg02dZ77DnKxHZu8A/lJBdiB3QW0KtZB6awBdpUKD9jf1b0SHzUv
KBds0pjBqAlkd25HN7rOrFleaJ1/ctaJxQZBKT5ZPt0m9STJEadao0xAH0ahmbWn
OlFuhjuefXKnEgV4We0+UXgVCwOPjdAvBbI+e0ocS3MFEvzG6uBQE3xDk3SzynTn
jh8BCNAw1FtxNrQHusEwMFxIt4I7mKZ9YIqioymCzLq9gwQbooMDQaHWBfEbwrbw
qHyGO0aoSCqI3Haadr8faqU9GY/rOPNk3sgrDQoo//fb4hVC1CLQJ13hef4Y53CI
rU7m2Ys6xt0nUW7/vGT1M0NPAgMBAAGjQjBAMA4GA1UdDwEB/wQEAwIBBjAPBgNV
HRMBAf8EBTADAQH/MB0GA1UdDgQWBBR5tFnme7bl5AFzgAiIyBpY9umbbjANBgkq
hkiG9w0BAQsFAAOCAgEAVR9YqbyyqFDQDLHYGmkgJykIrGF1XIpu+ILlaS/V9lZL
ubhzEFnTIZd+50xx+7LSYK05qAvqFyFWhfFQDlnrzuBZ6brJFe+GnY+EgPbk6ZGQ
3BebYhtF8GaV0nxvwuo77x/Py9auJ/GpsMiu/X1+mvoiBOv/2X/qkSsisRcOj/KK
NFtY2PwByVS5uCbMiogziUwthDyC3+6WVwW6LLv3xLfHTjuCvjHIInNzktHCgKQ5
ORAzI4JMPJ+GslWYHb4phowim57iaztXOoJwTdwJx4nLCgdNbOhdjsnvzqvHu7Ur
TkXWStAmzOVyyghqpZXjFaH3pO3JLF+l+/+sKAIuvtd7u+Nxe5AW0wdeRlN8NwdC
jNPElpzVmbUq4JUagEiuTDkHzsxHpFKVK7q4+63SM1N95R1NbdWhscdCb+ZAJzVc
oyi3B43njTOQ5yOf+1CceWxG1bQVs5ZufpsMljq4Ui0/1lvh+wjChP4kqKOJ2qxq
4RgqsahDYVvTH9w7jXbyLeiNdd8XM2w9U/t7y0Ff/9yi0GE44Za4rF2LN9d11TPA
mRGunUHBcnWEvgJBQl9nJEiU0Zsnvgc/ubhPgXRR4Xq37Z0j4r7g1SgEEzwxA57d
emyPxgcYxn/eR44/KJ4EBs+lVDR3veyJm+kXQ99b21/+jh5Xos1AnX5iItreGCc=
-----END CERTIFICATE-----
";
