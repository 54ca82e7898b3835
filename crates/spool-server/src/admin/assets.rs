//! The stylesheet and the refresh script, compiled into the binary (no
//! build step, nothing to deploy beside it).
//!
//! Links carry a hash of the content (`?v=…`), so browsers may cache an
//! asset for a long time and still get the new one after an upgrade.

use std::sync::OnceLock;

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use ring::digest;
use spool_core::StoreError;

use super::error::PageError;
use super::layout;
use crate::extract::ApiPath;

/// A file served under `/assets/`.
#[derive(Debug)]
pub(super) struct Asset {
    pub name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

pub(super) const CSS: &Asset = &Asset {
    name: "admin.css",
    content_type: "text/css; charset=utf-8",
    body: include_str!("../../assets/admin.css"),
};

pub(super) const JS: &Asset = &Asset {
    name: "admin.js",
    content_type: "text/javascript; charset=utf-8",
    body: include_str!("../../assets/admin.js"),
};

const ALL: [&Asset; 2] = [CSS, JS];

/// The asset's URL, with its content hash.
pub(super) fn href(asset: &Asset) -> String {
    static HASHES: OnceLock<[String; 2]> = OnceLock::new();
    let hashes = HASHES.get_or_init(|| ALL.map(|a| short_hash(a.body)));
    let i = ALL.iter().position(|a| a.name == asset.name).unwrap_or(0);
    format!("/assets/{}?v={}", asset.name, hashes[i])
}

fn short_hash(body: &str) -> String {
    digest::digest(&digest::SHA256, body.as_bytes())
        .as_ref()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `GET /assets/{file}`.
pub(super) async fn serve(file: Result<ApiPath<String>, crate::error::ApiError>) -> Response {
    let name = match file {
        Ok(ApiPath(name)) => name,
        Err(e) => return PageError::Api(e).into_response(),
    };
    let Some(asset) = ALL.into_iter().find(|a| a.name == name) else {
        return PageError::from(StoreError::NotFound).into_response();
    };
    let mut res = (StatusCode::OK, asset.body).into_response();
    res.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    layout::secure(&mut res, "public, max-age=604800");
    res
}
