//! The RESP listener, black box over TCP: commands, pipelines, auth,
//! limits, and payloads shared with the HTTP API.

mod auth;
mod commands;
mod frame_props;
mod groups;
mod limits;
mod payloads;
mod pipeline;
mod results;
mod support;
mod tls;
