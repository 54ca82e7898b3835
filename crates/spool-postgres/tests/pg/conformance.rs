//! The Store conformance suite against PostgreSQL, on the database's clock,
//! each case in a schema of its own: once per claim strategy.

mod skip_locked {
    spool_testkit::conformance_suite!(crate::common::fresh);
}

// Claimers take turns here, so the contention case runs smaller: it checks
// exactly-once under the lock, not throughput.
mod global_lock {
    spool_testkit::conformance_suite!(crate::common::fresh_global_lock, contention: 20_000, 50);
}
