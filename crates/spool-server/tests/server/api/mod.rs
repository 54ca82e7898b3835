//! Black-box tests of the HTTP API: a real server on port 0 in front of the
//! real engine in a temporary directory, driven by a real HTTP client.
//!
//! Each module covers one group of endpoints or one concern (auth,
//! limits, hostile input, TLS).

mod auth;
mod crosssite;
mod deps;
mod faulty;
mod groups;
mod hostile;
mod keepalive;
mod lease_wait;
mod leases;
mod limits;
mod queues;
mod results;
mod schedules;
mod support;
mod system;
mod tasks;
mod tls;
