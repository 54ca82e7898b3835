//! `GET /assets/{file}`: the compiled-in assets ([`super::assets`]) with
//! the admin headers and a week's caching (their links carry a content
//! hash); an unknown name is the admin's "not found" page.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use spool_core::StoreError;

use super::assets::ALL;
use super::error::PageError;
use super::layout;
use crate::extract::ApiPath;

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
