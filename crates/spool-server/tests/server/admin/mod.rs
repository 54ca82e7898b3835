//! Black-box tests of the admin page: a real server on port 0 in front of
//! the real engine in a temporary directory, driven over HTTP like a
//! browser without JavaScript would (forms, cookies, redirects by hand).
//!
//! State is set up through the store directly, so each test says exactly
//! what it starts from; what the pages show and what their actions do is
//! checked over HTTP only.

mod actions;
mod auth;
mod hostile;
mod pages;
mod support;
