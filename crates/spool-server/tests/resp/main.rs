//! The RESP listener, black box over TCP: commands, pipelines, auth,
//! limits, and payloads shared with the HTTP API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod auth;
mod commands;
mod frame_props;
mod limits;
mod payloads;
mod pipeline;
mod support;
