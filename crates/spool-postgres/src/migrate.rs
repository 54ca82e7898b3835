//! Versioned schema migrations, safe when several processes start at once.
//!
//! All pending migrations run in one transaction that first takes a
//! transaction-level advisory lock named after the schema: concurrent
//! starters queue on it, and the second finds the work done. DDL is
//! transactional in PostgreSQL, so a failed migration leaves the schema as
//! it was. `<schema>.migrations` records each applied version once.
//!
//! A schema migrated by a newer build (a version this one does not know) is
//! refused rather than used: its meaning may have changed.

use tokio_postgres::Client;

use crate::config::Schema;
use crate::error::PgError;
use crate::sql::render_migration;

struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, in order. Append; never edit one that has shipped.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "queues, tasks and idempotency keys",
        sql: include_str!("../migrations/0001_tasks.sql"),
    },
    Migration {
        version: 2,
        name: "schedules",
        sql: include_str!("../migrations/0002_schedules.sql"),
    },
    Migration {
        version: 3,
        name: "vacuum keeps the task table's pages",
        sql: include_str!("../migrations/0003_vacuum_truncate.sql"),
    },
    Migration {
        version: 4,
        name: "due scheduled tasks in claim order",
        sql: include_str!("../migrations/0004_scheduled_in_claim_order.sql"),
    },
    Migration {
        version: 5,
        name: "stats cache and the index of retried tasks",
        sql: include_str!("../migrations/0005_stats_cache_and_retried.sql"),
    },
    Migration {
        version: 6,
        name: "the task table as a ring of generations",
        sql: include_str!("../migrations/0006_generations.sql"),
    },
    Migration {
        version: 7,
        name: "trace context of tasks",
        sql: include_str!("../migrations/0007_traceparent.sql"),
    },
    Migration {
        version: 8,
        name: "claim limits of queues",
        sql: include_str!("../migrations/0008_claim_limits.sql"),
    },
    Migration {
        version: 9,
        name: "task groups",
        sql: include_str!("../migrations/0009_groups.sql"),
    },
    Migration {
        version: 10,
        name: "the index of dead tasks on parked tasks only",
        sql: include_str!("../migrations/0010_parked_only_indexes.sql"),
    },
    Migration {
        version: 11,
        name: "dependencies between tasks",
        sql: include_str!("../migrations/0011_dependencies.sql"),
    },
    Migration {
        version: 12,
        name: "results of parents",
        sql: include_str!("../migrations/0012_parent_results.sql"),
    },
    Migration {
        version: 13,
        name: "waiting parents and results beside the task row",
        sql: include_str!("../migrations/0013_dependency_side_tables.sql"),
    },
    Migration {
        version: 14,
        name: "a rate limit for each group",
        sql: include_str!("../migrations/0014_group_rate_limits.sql"),
    },
];

/// The latest version this build knows.
pub(crate) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Brings `schema` to the latest version; returns how many migrations ran.
pub(crate) async fn run(client: &mut Client, schema: &Schema) -> Result<usize, PgError> {
    let fail = |source| PgError::Migrate {
        schema: schema.name().to_string(),
        source,
    };
    let s = schema.ident();
    let tx = client.transaction().await.map_err(fail)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('spool.migrate'), hashtext($1))",
        &[&schema.name()],
    )
    .await
    .map_err(fail)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(fail)?;
    let current: i32 = tx
        .query_one(
            &format!("SELECT COALESCE(max(version), 0) FROM {s}.migrations"),
            &[],
        )
        .await
        .map_err(fail)?
        .try_get(0)
        .map_err(fail)?;
    if current > latest() {
        return Err(PgError::SchemaTooNew {
            schema: schema.name().to_string(),
            found: current,
            known: latest(),
        });
    }
    let mut ran = 0;
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.batch_execute(&render_migration(m.sql, schema))
            .await
            .map_err(fail)?;
        tx.execute(
            &format!("INSERT INTO {s}.migrations (version, name) VALUES ($1, $2)"),
            &[&m.version, &m.name],
        )
        .await
        .map_err(fail)?;
        tracing::info!(
            schema = schema.name(),
            version = m.version,
            name = m.name,
            "migrated"
        );
        ran += 1;
    }
    tx.commit().await.map_err(fail)?;
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Versions start at 1 and increase. A number may be missing while the
    /// migration that will have it lands separately (9, as of version 10);
    /// it must land before a build with a higher version migrates a
    /// database, since [`run`] applies only versions above the highest one
    /// recorded.
    #[test]
    fn versions_increase_from_one() {
        assert_eq!(MIGRATIONS.first().map(|m| m.version), Some(1));
        for pair in MIGRATIONS.windows(2) {
            assert!(pair[0].version < pair[1].version, "{}", pair[1].version);
        }
    }
}
