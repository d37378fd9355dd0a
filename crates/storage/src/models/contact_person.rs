//! The `contact_persons` table.

use crate::schema::contact_persons;
use diesel::prelude::*;

/// A contact person of a contact company.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = contact_persons, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ContactPersonRow {
    /// The person's id.
    pub id: i64,
    /// The company the person belongs to.
    pub company_id: i64,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// E-mail address.
    pub email: String,
}
