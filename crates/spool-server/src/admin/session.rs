//! Signed values of the admin page: the session cookie and CSRF tokens.
//!
//! A session cookie is `<issued ms>.<random nonce>.<HMAC>`: it holds no
//! secret, only proof that this server issued it. The HMAC key is derived
//! from the configured token, so every server with the same token accepts
//! the cookie (several nodes behind a load balancer are one service),
//! changing the token signs everyone out, and the token itself never sits in
//! a browser. Sessions last [`SESSION_TTL`]; logging out clears the cookie
//! (a copied cookie would stay valid until it expires; it is HttpOnly, so
//! page scripts cannot copy it).
//!
//! A CSRF token is the HMAC of whoever asks (a session's id, "bearer", or
//! "open" when no token is configured), so each session has its own and the
//! server stores nothing. Without a token the key is random per process.

use std::sync::OnceLock;
use std::time::Duration;

use axum::http::header::COOKIE;
use axum::http::HeaderMap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use spool_core::{Clock, StoreError, SystemClock};

use crate::auth::Principal;
use crate::error::ApiError;

/// The cookie's name.
pub(super) const COOKIE_NAME: &str = "spool_session";
/// How long a login lasts.
pub(super) const SESSION_TTL: Duration = Duration::from_secs(12 * 60 * 60);
/// How far in the future an issue time may be (clocks of several nodes).
const CLOCK_SKEW_MS: i64 = 60_000;

/// What CSRF tokens are bound to; `None` for who may not act.
fn csrf_subject(who: &Principal) -> Option<&str> {
    match who {
        Principal::Open => Some("open"),
        Principal::Bearer => Some("bearer"),
        Principal::Session(id) => Some(id),
        Principal::Anonymous => None,
    }
}

/// The signing key: derived from the token, or random per process.
pub(super) fn key(token: Option<&str>) -> Result<hmac::Key, ApiError> {
    match token {
        Some(token) => {
            let root = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
            let derived = hmac::sign(&root, b"spool admin session key v1");
            Ok(hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()))
        }
        None => process_secret().map(|s| hmac::Key::new(hmac::HMAC_SHA256, s)),
    }
}

fn process_secret() -> Result<&'static [u8; 32], ApiError> {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    if let Some(s) = SECRET.get() {
        return Ok(s);
    }
    let fresh = random::<32>()?;
    Ok(SECRET.get_or_init(|| fresh))
}

fn random<const N: usize>() -> Result<[u8; N], ApiError> {
    let mut buf = [0u8; N];
    SystemRandom::new()
        .fill(&mut buf)
        .map_err(|_| ApiError::Store(StoreError::Internal("no randomness".into())))?;
    Ok(buf)
}

fn now_ms() -> i64 {
    SystemClock.now().as_millis()
}

fn session_tag(key: &hmac::Key, id: &str) -> hmac::Tag {
    hmac::sign(key, format!("session\0{id}").as_bytes())
}

/// A fresh session cookie value.
pub(super) fn new_session(key: &hmac::Key) -> Result<String, ApiError> {
    let nonce: String = random::<16>()?.iter().map(|b| format!("{b:02x}")).collect();
    let id = format!("{}.{nonce}", now_ms());
    let tag = URL_SAFE_NO_PAD.encode(session_tag(key, &id));
    Ok(format!("{id}.{tag}"))
}

/// The session id of a cookie value this server signed and that has not
/// expired.
fn verify_session(key: &hmac::Key, value: &str, now_ms: i64) -> Option<String> {
    let (id, tag) = value.rsplit_once('.')?;
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    hmac::verify(key, format!("session\0{id}").as_bytes(), &tag).ok()?;
    let issued: i64 = id.split_once('.')?.0.parse().ok()?;
    let age = now_ms.saturating_sub(issued);
    let ttl = i64::try_from(SESSION_TTL.as_millis()).unwrap_or(i64::MAX);
    (age > -CLOCK_SKEW_MS && age < ttl).then(|| id.to_string())
}

/// The id of the first valid session cookie among the request's cookies.
pub(super) fn session_of(key: &hmac::Key, headers: &HeaderMap) -> Option<String> {
    let now = now_ms();
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix(COOKIE_NAME)?.strip_prefix('='))
        .find_map(|value| verify_session(key, value, now))
}

/// The `Set-Cookie` value that starts a session. `Secure` when the server
/// speaks TLS itself.
pub(super) fn set_cookie(value: &str, secure: bool) -> String {
    let max_age = SESSION_TTL.as_secs();
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE_NAME}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}")
}

/// The `Set-Cookie` value that ends a session.
pub(super) fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}")
}

/// The CSRF token of `who`'s forms; `None` for who may not act.
pub(super) fn csrf_token(key: &hmac::Key, who: &Principal) -> Option<String> {
    let subject = csrf_subject(who)?;
    let tag = hmac::sign(key, format!("csrf\0{subject}").as_bytes());
    Some(URL_SAFE_NO_PAD.encode(tag))
}

/// Whether `given` is `who`'s CSRF token (compared in constant time).
pub(super) fn csrf_ok(key: &hmac::Key, who: &Principal, given: &str) -> bool {
    let Some(subject) = csrf_subject(who) else {
        return false;
    };
    let Ok(tag) = URL_SAFE_NO_PAD.decode(given) else {
        return false;
    };
    hmac::verify(key, format!("csrf\0{subject}").as_bytes(), &tag).is_ok()
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn token_key(token: &str) -> hmac::Key {
        key(Some(token)).expect("a token-derived key needs no randomness")
    }

    fn cookies(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(COOKIE, v);
        }
        h
    }

    #[test]
    fn sessions_verify_only_with_the_same_token() {
        let k = token_key("secret");
        let value = new_session(&k).expect("the OS has randomness");
        assert!(!value.contains("secret"));
        let h = cookies(&format!("other=1; {COOKIE_NAME}={value}"));
        assert!(session_of(&k, &h).is_some());
        assert!(session_of(&token_key("secret2"), &h).is_none());
        let tampered = value.replacen('.', ".0", 1);
        assert!(session_of(&k, &cookies(&format!("{COOKIE_NAME}={tampered}"))).is_none());
        assert!(session_of(&k, &cookies(&format!("{COOKIE_NAME}=garbage"))).is_none());
        assert!(session_of(&k, &HeaderMap::new()).is_none());
    }

    #[test]
    fn sessions_expire() {
        let k = token_key("secret");
        let id = "1000.abcd";
        let value = format!("{id}.{}", URL_SAFE_NO_PAD.encode(session_tag(&k, id)));
        let ttl = i64::try_from(SESSION_TTL.as_millis()).unwrap_or(i64::MAX);
        assert_eq!(verify_session(&k, &value, 2000).as_deref(), Some(id));
        assert!(verify_session(&k, &value, 1000 + ttl).is_none());
        assert!(verify_session(&k, &value, 1000 - CLOCK_SKEW_MS - 1).is_none());
    }

    #[test]
    fn csrf_tokens_are_per_subject() {
        let k = token_key("secret");
        let a = Principal::Session("1.aa".into());
        let b = Principal::Session("1.bb".into());
        let ta = csrf_token(&k, &a).expect("sessions have tokens");
        assert!(csrf_ok(&k, &a, &ta));
        assert!(!csrf_ok(&k, &b, &ta));
        assert!(!csrf_ok(&k, &Principal::Bearer, &ta));
        assert!(!csrf_ok(&k, &a, ""));
        assert!(!csrf_ok(&k, &a, "not base64!"));
        assert!(csrf_token(&k, &Principal::Anonymous).is_none());
        assert!(!csrf_ok(&k, &Principal::Anonymous, &ta));
    }
}
