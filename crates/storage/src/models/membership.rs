//! The `memberships` table: which users are members of which workspaces.

use crate::schema::memberships;
use diesel::prelude::*;

/// A user's membership of a workspace; only members may call the workspace's operations.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = memberships, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct MembershipRow {
    /// The workspace.
    pub workspace_id: i64,
    /// The member.
    pub user_id: i64,
}
