//! The `users` table: people who can hold tokens.

use crate::schema::users;
use diesel::prelude::*;

/// A person who can hold tokens.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = users, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct UserRow {
    /// The user's id.
    pub id: i64,
    /// The e-mail address.
    pub email: String,
    /// The name shown for the user.
    pub display_name: String,
    /// Whether the user may call the `/admin/api` operations.
    pub is_platform_admin: bool,
}
