//! The rule that keeps a server from being opened to a network by accident
//! (docs/spec.md §7, Security): off loopback, a token or an explicit opt-out.

use std::net::SocketAddr;

pub(crate) fn check(
    listen: SocketAddr,
    token: Option<&str>,
    insecure_no_auth: bool,
) -> anyhow::Result<()> {
    if token.is_some_and(str::is_empty) {
        anyhow::bail!("the token is empty: give a non-empty --token or SPOOL_TOKEN");
    }
    if !listen.ip().is_loopback() && token.is_none() && !insecure_no_auth {
        anyhow::bail!(
            "refusing to listen on {listen} without a token: set --token (or SPOOL_TOKEN), \
             or pass --insecure-no-auth to serve without authentication"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        match s.parse() {
            Ok(a) => a,
            Err(e) => panic!("bad test address {s}: {e}"),
        }
    }

    #[test]
    fn loopback_needs_nothing_but_other_addresses_need_a_token_or_opt_out() {
        assert!(check(addr("127.0.0.1:7700"), None, false).is_ok());
        assert!(check(addr("[::1]:7700"), None, false).is_ok());
        assert!(check(addr("0.0.0.0:7700"), None, false).is_err());
        assert!(check(addr("0.0.0.0:7700"), Some("s3cret"), false).is_ok());
        assert!(check(addr("0.0.0.0:7700"), None, true).is_ok());
        assert!(check(addr("127.0.0.1:7700"), Some(""), false).is_err());
    }
}
