//! Early lock release: a claim that holds a lock the other claims of its
//! queue wait for lets go of it before its commit is flushed, and answers
//! only once it is.
//!
//! Why: the limited and grouped claims of a queue take turns on its row
//! (`sql/lock_limited_queue.sql`), and under the global acquire lock
//! (`sql/claim_global.sql`) all claims of a queue take turns on its
//! advisory lock, so their drain is bounded by how long each one holds
//! it, and a synchronous COMMIT holds every lock until its
//! WAL is on disk: measured during a grouped drain, 1.15 ms of a 6.67-ms
//! hold on average (docs/BENCHMARKS.md, "The claim bound before the
//! lock"), while the next claim waited with nothing to do.
//!
//! How: such a claim's transaction sets `synchronous_commit = off`, so its
//! COMMIT writes the commit record and releases its locks without waiting
//! for the flush; then, on the same connection and before the claim is
//! answered, [`FLUSH`] runs a transaction of its own that writes one WAL
//! record (a transactional logical decoding message, which no table
//! keeps) and commits synchronously. PostgreSQL flushes WAL in order, so
//! that commit's flush is the claim's too; with synchronous standbys it
//! waits for them as well, as the connection's `synchronous_commit = on`
//! says.
//!
//! Invariants:
//! - a claim answers its tasks only once its commit is durable (docs/spec.md
//!   §3), as with a synchronous COMMIT;
//! - what another transaction sees of a claim before its flush, it can act
//!   on only through a commit of its own, later in the WAL and so flushed
//!   after it: the next claim of the queue counts the leases and tokens of
//!   the one before, and if that one is lost in a crash, so is every claim
//!   built on it. A claim lost this way was answered to nobody; its tasks
//!   are as they were before it. Only reads (a task's view, stats) may
//!   show such a lease for the moment before it is flushed;
//! - a claim under the global acquire lock that took nothing wrote
//!   nothing, and needs no flush; a limited claim flushes always, since
//!   its flush goes out with its statements and even an empty one may
//!   have spent the bucket or made due tasks ready;
//! - on a server where [`FLUSH`] may not run (its function revoked), the
//!   store finds out at connect ([`probe`]) and such claims commit
//!   synchronously, as every other transaction does.

use tokio_postgres::GenericClient;

/// Makes the transaction it runs in commit without waiting for its flush.
pub(crate) const ASYNC_COMMIT: &str = "SET LOCAL synchronous_commit = off";

/// `BEGIN`, then [`ASYNC_COMMIT`], in one message.
pub(crate) const BEGIN_ASYNC: &str = "BEGIN; SET LOCAL synchronous_commit = off";

/// A transaction whose synchronous commit flushes the WAL written before
/// it, the commit records of this connection's earlier transactions among
/// it: one record (no table row, nothing for VACUUM) and an XID, without
/// which a commit does not wait for a flush.
pub(crate) const FLUSH: &str = "SELECT pg_logical_emit_message(true, 'spool', 'flush')";

/// Whether claims may release their queue's lock before their flush:
/// whether [`FLUSH`] runs on this server for this role.
pub(crate) async fn probe(client: &impl GenericClient) -> bool {
    match client.simple_query(FLUSH).await {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(
                error = %e,
                "pg_logical_emit_message may not run here; claims that take a queue's lock \
                 hold it until their commit is flushed"
            );
            false
        }
    }
}
