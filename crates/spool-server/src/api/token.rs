//! Reading a lease token from a request.
//!
//! Tokens are opaque strings to clients. One the store could never have
//! issued (not 16 hex digits) is still just a wrong token: 409 `lease_lost`
//! if the task exists, 404 `not_found` if it does not (docs/spec.md §7.1, Tokens).

use spool_core::{LeaseToken, StoreError, TaskId, TaskRef};

use crate::error::ApiError;
use crate::state::AppState;

/// The token as the store knows it, or the error a wrong token gets.
pub(crate) async fn resolve(
    st: &AppState,
    id: TaskId,
    token: &str,
) -> Result<LeaseToken, ApiError> {
    if let Some(t) = parse(token) {
        return Ok(t);
    }
    st.call(st.store().get(TaskRef::Id(id))).await?;
    Err(ApiError::Store(StoreError::LeaseLost))
}

/// Exactly 16 hex digits, as the store writes them.
pub(crate) fn parse(token: &str) -> Option<LeaseToken> {
    if token.len() != 16 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_store_shaped_tokens_parse() {
        assert_eq!(parse("00000000deadbeef"), Some(LeaseToken(0xdead_beef)));
        assert_eq!(parse("deadbeef"), None);
        assert_eq!(parse("+000000000000000"), None);
        assert_eq!(parse("zzzzzzzzzzzzzzzz"), None);
    }
}
