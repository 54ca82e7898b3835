//! Which of a worker's leases are lost (docs/spec.md §3, wait_leases_lost):
//! one statement per look. The waiting around it is
//! [`spool_core::lease_wait::wait_until_lost`], woken by cancels made by
//! any process on the schema ([`crate::wake::CANCELS`]).

use spool_core::{LeaseToken, StoreError, TaskId};

use crate::backend::Backend;
use crate::error::{corrupt, db};
use crate::values;

impl Backend {
    /// The ids of the leases among `leases` not held now, in input order.
    pub(crate) async fn leases_lost(
        &self,
        leases: &[(TaskId, LeaseToken)],
    ) -> Result<Vec<TaskId>, StoreError> {
        let (ids, tokens) = values::leases(leases);
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.leases_held, &[&ids, &tokens])
            .await
            .map_err(db)?;
        if rows.len() != leases.len() {
            return Err(corrupt(format!(
                "{} leases answered {} results",
                leases.len(),
                rows.len()
            )));
        }
        let mut lost = Vec::new();
        for (row, (id, _)) in rows.iter().zip(leases) {
            if !row.try_get::<_, bool>(0).map_err(corrupt)? {
                lost.push(*id);
            }
        }
        Ok(lost)
    }
}
