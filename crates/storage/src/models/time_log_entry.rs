//! The `time_log_entries` table: the written cells of users' time logs.
//!
//! Two shapes: [`TimeLogEntryRow`] is the whole row (the seed loader writes it);
//! [`TimeLogCellRow`] is what a cell write reads back, the columns the API shows, because
//! the write is the service's hottest statement (`setOwnTimeLogCell`, measured by
//! `scripts/bench`): its `RETURNING` lists exactly these columns, in this order.

use crate::schema::time_log_entries;
use diesel::prelude::*;

/// A written time-log cell, as its table holds it. A cell is (user, project, date,
/// phase); a cell never written has no row.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = time_log_entries, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct TimeLogEntryRow {
    /// The entry's id.
    pub id: i64,
    /// The workspace it belongs to.
    pub workspace_id: i64,
    /// Whose time log the cell belongs to.
    pub user_id: i64,
    /// The project, in the workspace.
    pub project_id: i64,
    /// The calendar date `YYYY-MM-DD`.
    pub entry_date: String,
    /// The phase's wire value (`general`, …).
    pub phase: String,
    /// The hours, in hundredths (at most 2400).
    pub hours_centi: i64,
    /// A note.
    pub note: String,
    /// Whether the hours are billable.
    pub billable: bool,
    /// Optimistic-concurrency counter: at least 2 for a written cell (a cell never
    /// written is at version 1).
    pub version: i64,
    /// When it last changed (ms since the epoch).
    pub updated_at: i64,
}

/// A cell as a write reads it back and the API shows it: [`TimeLogEntryRow`] without the
/// workspace, the user and the change time.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = time_log_entries, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct TimeLogCellRow {
    /// The entry's id.
    pub id: i64,
    /// The project.
    pub project_id: i64,
    /// The calendar date `YYYY-MM-DD`.
    pub entry_date: String,
    /// The phase's wire value.
    pub phase: String,
    /// The hours, in hundredths.
    pub hours_centi: i64,
    /// A note.
    pub note: String,
    /// Whether the hours are billable.
    pub billable: bool,
    /// The cell's version.
    pub version: i64,
}
