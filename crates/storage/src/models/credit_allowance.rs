//! The `credit_allowances` table, keyed by (workspace, user, cycle).

use crate::schema::credit_allowances;
use diesel::prelude::*;

/// The assistant credits a user has used in one monthly cycle of a workspace.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = credit_allowances, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct CreditAllowanceRow {
    /// The workspace.
    pub workspace_id: i64,
    /// The user.
    pub user_id: i64,
    /// The UTC month `YYYY-MM`.
    pub cycle: String,
    /// Credits used in the cycle.
    pub used_credits: i64,
}
