//! The `company_links` table.

use crate::schema::company_links;
use diesel::prelude::*;

/// A link between a main and a representing contact company of one workspace.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = company_links, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct CompanyLinkRow {
    /// The link's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// The main company.
    pub main_company_id: i64,
    /// The representing company.
    pub rep_company_id: i64,
    /// The main company's contact person.
    pub main_person_id: i64,
    /// The representing company's contact person.
    pub rep_person_id: i64,
    /// `active`, `pending` or `terminated`; a link that is not terminated blocks a new one between the same pair.
    pub status: String,
    /// When it was created (ms since the epoch).
    pub created_at: i64,
}
