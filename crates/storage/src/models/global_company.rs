//! The `global_companies` table: the platform-wide company directory (not bound to a workspace).

use crate::schema::global_companies;
use diesel::prelude::*;

/// A company of the platform-wide directory.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = global_companies, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct GlobalCompanyRow {
    /// The company's id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// Primary type (`brand`, …).
    pub primary_type: String,
    /// Legal name.
    pub legal_name: String,
    /// ISO 3166-1 alpha-2 code.
    pub country: String,
    /// Other names, a JSON list of strings.
    pub aliases: String,
    /// Web domains, a JSON list of strings.
    pub domains: String,
    /// When it was retired (ms since the epoch); `None` while it is not.
    pub retired_at: Option<i64>,
}
