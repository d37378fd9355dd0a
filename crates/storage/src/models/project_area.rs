//! The `project_areas` table: the areas of each project, the targets of takeoff area mappings.

use crate::schema::project_areas;
use diesel::prelude::*;

/// An area of a project: what takeoff area mappings name.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = project_areas, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct ProjectAreaRow {
    /// The area's id (takeoff mappings name it as a decimal string).
    pub id: i64,
    /// The project it belongs to.
    pub project_id: i64,
    /// The area's name.
    pub name: String,
}
