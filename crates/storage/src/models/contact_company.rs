//! The `contact_companies` table.

use crate::schema::contact_companies;
use diesel::prelude::*;

/// A contact company of a workspace: a party of company links.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = contact_companies, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ContactCompanyRow {
    /// The company's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The company's name.
    pub name: String,
    /// Tags, a JSON list of strings.
    pub tags: String,
    /// Status (`preferred`, …).
    pub status: String,
    /// The default contact when a link names no person, if any.
    pub primary_person_id: Option<i64>,
}
