//! Requests a browser was made to send: cross-site requests and DNS
//! rebinding (403 `forbidden`).
//!
//! A web page can make a visitor's browser POST to a server on loopback (a
//! form needs no preflight, and pause, resume and retry need no body), and
//! by DNS rebinding can even read the answers, under its own host name.
//! Browsers send `Origin` with every request that is not a GET or HEAD, so:
//! - a request that changes state and carries an `Origin` other than the
//!   server's own (the `Host` it was sent to) is refused; clients that are
//!   not browsers send no `Origin` and are not affected, and the admin
//!   page's own forms are same-origin;
//! - without a token, the `Host` must be an IP address or `localhost`: a
//!   rebound name (`attacker.example`) is refused, so the page cannot read
//!   the API or the admin page either. (With a token, a rebound page has no
//!   token to send, and the session cookie is not sent to its name.)

use axum::extract::Request;
use axum::http::header::{HOST, ORIGIN};
use axum::http::Method;

use crate::auth::OPEN_PATH;
use crate::error::ApiError;

/// Refuses `req` if a browser was made to send it (see the module docs).
pub(crate) fn check(req: &Request, token_set: bool) -> Result<(), ApiError> {
    let host = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_string()));
    // Probes may use any name; the answer shows nothing.
    let probe = req.uri().path() == OPEN_PATH;
    if !token_set && !probe && !host.as_deref().is_some_and(is_local) {
        return Err(ApiError::Forbidden(
            "without a token, only requests to an IP address or localhost are served \
             (start the server with a token to serve a host name)"
                .into(),
        ));
    }
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if safe {
        return Ok(());
    }
    let Some(origin) = req.headers().get(ORIGIN) else {
        return Ok(());
    };
    let same = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .zip(host.as_deref())
        .is_some_and(|((_, authority), host)| authority.eq_ignore_ascii_case(host));
    if same {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "cross-site requests that change state are refused".into(),
        ))
    }
}

/// Whether `host` (with an optional port) is an IP literal or localhost.
fn is_local(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        // [v6]:port
        Some(rest) => {
            return rest
                .split(']')
                .next()
                .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
        }
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hosts() {
        for h in [
            "127.0.0.1:8080",
            "localhost",
            "LOCALHOST:1",
            "[::1]:9",
            "10.0.0.2",
        ] {
            assert!(is_local(h), "{h}");
        }
        for h in [
            "attacker.example:8080",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "",
        ] {
            assert!(!is_local(h), "{h}");
        }
    }
}
