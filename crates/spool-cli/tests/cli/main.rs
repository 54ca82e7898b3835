//! Black-box tests of the `spool` binary, one test binary (link once), one
//! module per claim: its commands, and `spool serve` started as a child
//! process (`support`), on its embedded store or on PostgreSQL.
//! `resident_memory` stays a binary of its own (it says why).

mod support;

mod cli;
mod client;
mod conformance;
mod conformance_resp;
mod conformance_resp_pg;
mod pg_cluster;
mod pg_settings_race;
mod resp_group_commit;
mod server_kill9;
mod server_many_clients;
mod server_payloads;
