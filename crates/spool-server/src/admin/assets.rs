//! The stylesheet and the refresh script, compiled into the binary (no
//! build step, nothing to deploy beside it).
//!
//! Links carry a hash of the content (`?v=…`), so browsers may cache an
//! asset for a long time and still get the new one after an upgrade.

use std::sync::OnceLock;

use ring::digest;

/// A file served under `/assets/` ([`super::asset_route`]).
#[derive(Debug)]
pub(super) struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
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

/// Every asset, as `GET /assets/{file}` finds them.
pub(super) const ALL: [&Asset; 2] = [CSS, JS];

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
