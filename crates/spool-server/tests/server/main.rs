//! Black-box tests of the server, one test binary: a real server on port 0
//! in front of the real engine in a temporary directory, reached the way
//! its clients reach it. `api` drives the HTTP API with a real HTTP
//! client, `resp` the RESP listener over TCP, `admin` the admin page like
//! a browser without JavaScript; each has its own `support`.

// Test code: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod api;
mod resp;
