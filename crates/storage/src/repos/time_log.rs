//! The per-user time log (`setOwnTimeLogCell`).
//!
//! A cell is (user, project, date, phase). A cell never written is at version 1 with
//! hours `"0.00"`; the first write expects version 1 and creates version 2. Hours are
//! kept in hundredths and answered canonically with two decimals.
//!
//! A write is one `UPDATE … WHERE version = expected RETURNING …`; only when no row
//! matched and the client expects a never-written cell is an `INSERT … ON CONFLICT DO
//! NOTHING` tried. Either way the version check and the write are one statement, so two
//! writers can never both succeed with the same expected version.
//!
//! The common case, a current write of an existing cell, is that single `UPDATE` on its own
//! (its own implicit transaction; on PostgreSQL one call of `time_log_current_writes`, an
//! `UPDATE … FROM unnest(…)` in a function, carries the current writes of every request
//! waiting at the same moment, `CurrentWrites`): the row it matches is in the path's
//! workspace and was created only after its project was found there, so the project rule
//! has nothing to add. Everything else — an unknown project, hours over the limit (whose
//! order against the project rule matters), a first write, a conflict — takes the full
//! transaction, which checks the rules in the contract's order.

use crate::clock::now_millis;
use crate::defects::{self, Defect};
use crate::engine::{BatchedStatement, DbConn, StatementConn, StatementFuture, Write};
use crate::error::{StoreError, VersionConflict};
use crate::ids::{self, SentId};
use crate::models::TimeLogCellRow;
use crate::schema::{projects, time_log_entries as cells};
use crate::stored::enum_value;
use crate::{db_statement, db_write};
use diesel::backend::Backend;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{Array, BigInt, Bool, HasSqlType, Text};
use serde_json::{Value, json};
use wpds_contract::types::{SetTimeLogCellRequest, TimeLogEntry, TimeLogEntryPhase, TimeLogPhase};

/// The most hours one cell holds.
const MAX_HOURS_CENTI: i64 = 24_00;

/// One write of the caller's own cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellChange {
    /// The workspace of the path.
    pub workspace_id: i64,
    /// The caller.
    pub user_id: i64,
    /// The project.
    pub project_id: SentId,
    /// `YYYY-MM-DD`, already checked by the contract.
    pub date: String,
    /// The phase (`general` when the request has none), stored as its wire value.
    pub phase: TimeLogPhase,
    /// Hours as sent (`7.5`), already matching the contract's pattern.
    pub hours: String,
    /// The version the client saw.
    pub expected_version: i64,
    /// The note (`""` when the request has none).
    pub note: String,
    /// Billable (`true` when the request has none).
    pub billable: bool,
}

impl CellChange {
    /// The write a `setOwnTimeLogCell` request asks for: `user_id`'s cell in `workspace_id`,
    /// with the contract's defaults for what the body leaves out (phase `general`, note
    /// `""`, billable).
    pub fn requested(workspace_id: i64, user_id: i64, body: SetTimeLogCellRequest) -> Self {
        CellChange {
            workspace_id,
            user_id,
            project_id: SentId::parse(body.project_id),
            date: body.date,
            phase: body.phase.unwrap_or(TimeLogPhase::General),
            hours: body.hours,
            expected_version: body.expected_version,
            note: body.note.unwrap_or_default(),
            billable: body.billable.unwrap_or(true),
        }
    }
}

/// Reads `hours` (one or two digits, optionally a dot and one or two digits) in hundredths.
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) fn parse_hours(hours: &str) -> Option<i64> {
    let (whole, fraction) = hours.split_once('.').unwrap_or((hours, ""));
    if whole.is_empty()
        || whole.len() > 2
        || fraction.len() > 2
        || (hours.contains('.') && fraction.is_empty())
    {
        return None;
    }
    if !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let fraction: i64 = format!("{fraction:0<2}").parse().ok()?;
    Some(whole * 100 + fraction)
}

/// `750` → `"7.50"`.
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) fn format_hours(centi: i64) -> String {
    format!("{}.{:02}", centi / 100, centi % 100)
}

fn entry(row: TimeLogCellRow) -> Result<TimeLogEntry, StoreError> {
    let TimeLogCellRow {
        id,
        project_id,
        entry_date: date,
        phase,
        hours_centi: hours,
        note,
        billable,
        version,
    } = row;
    let phase = enum_value("time-log entry", id, "phase", &phase, TimeLogEntryPhase::from_wire)?;
    Ok(TimeLogEntry {
        id: ids::show(id),
        project_id: ids::show(project_id),
        phase,
        date,
        hours: format_hours(hours),
        note,
        billable,
        version,
    })
}

/// The one-statement write of the cell at the expected version; its row, if one matched.
///
/// Written as its own query type rather than `diesel::update(…)` for one reason: diesel
/// never keeps its `UPDATE` statements prepared (their SQL can vary with the changeset), so
/// every request paid for parsing and planning the hottest statement of the service. This
/// statement's text never varies, so it declares a static query id and both engines keep it
/// prepared per connection. The columns it returns are those of `models::TimeLogCellRow`, in
/// order: `id`, `project_id`, `entry_date`, `phase`, `hours_centi`, `note`, `billable`,
/// `version`.
///
/// Public with `test-support` so that `crates/bench`'s ceiling loop runs exactly this statement.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) struct CurrentWrite<'a> {
    write: &'a CellChange,
    project_id: i64,
    hours: i64,
    now: i64,
}

/// The static query id of [`CurrentWrite`].
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) struct CurrentWriteId;

impl QueryId for CurrentWrite<'_> {
    type QueryId = CurrentWriteId;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl Query for CurrentWrite<'_> {
    type SqlType = (BigInt, BigInt, Text, Text, BigInt, Text, Bool, BigInt);
}

impl<Conn> RunQueryDsl<Conn> for CurrentWrite<'_> {}

impl<DB> QueryFragment<DB> for CurrentWrite<'_>
where
    DB: Backend + HasSqlType<BigInt> + HasSqlType<Text> + HasSqlType<Bool>,
    i64: ToSql<BigInt, DB>,
    String: ToSql<Text, DB>,
    str: ToSql<Text, DB>,
    bool: ToSql<Bool, DB>,
{
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, DB>) -> QueryResult<()> {
        let w = self.write;
        out.push_sql("UPDATE time_log_entries SET hours_centi = ");
        out.push_bind_param::<BigInt, _>(&self.hours)?;
        out.push_sql(", note = ");
        out.push_bind_param::<Text, _>(&w.note)?;
        out.push_sql(", billable = ");
        out.push_bind_param::<Bool, _>(&w.billable)?;
        out.push_sql(", version = version + 1, updated_at = ");
        out.push_bind_param::<BigInt, _>(&self.now)?;
        out.push_sql(" WHERE workspace_id = ");
        out.push_bind_param::<BigInt, _>(&w.workspace_id)?;
        out.push_sql(" AND user_id = ");
        out.push_bind_param::<BigInt, _>(&w.user_id)?;
        out.push_sql(" AND project_id = ");
        out.push_bind_param::<BigInt, _>(&self.project_id)?;
        out.push_sql(" AND entry_date = ");
        out.push_bind_param::<Text, _>(&w.date)?;
        out.push_sql(" AND phase = ");
        out.push_bind_param::<Text, _>(w.phase.as_str())?;
        out.push_sql(if defects::on(Defect::LostUpdate) { " AND version >= " } else { " AND version = " });
        out.push_bind_param::<BigInt, _>(&w.expected_version)?;
        out.push_sql(" RETURNING id, project_id, entry_date, phase, hours_centi, note, billable, version");
        Ok(())
    }
}

impl<'a> CurrentWrite<'a> {
    /// The write of `write`'s cell (of project `project_id`) to `hours` hundredths, if the
    /// cell is at `write.expected_version`; stamped with the current time.
    pub fn new(write: &'a CellChange, project_id: i64, hours: i64) -> Self {
        CurrentWrite { write, project_id, hours, now: now_millis() }
    }
}

/// The batched form of [`CurrentWrite`], on PostgreSQL: the current writes of many cells,
/// each at its own expected version, as one statement over arrays, in autocommit (one
/// commit for all): a call of the function `time_log_current_writes`, whose `UPDATE … FROM
/// unnest(…)` is in the migration that made it
/// (`migrations/postgres/2026-11-29-000001_time_log_current_writes`). Its text never varies
/// with the number of writes, so it is prepared once per connection (a static query id, as
/// for [`CurrentWrite`]); behind a pooler that keeps no prepared statement the call is
/// parsed and planned once per batch, and the `UPDATE` inside once per server connection
/// (PL/pgSQL keeps its plan for the session; planning it for every batch was a third of the
/// database's work per batch there). Each write's row comes back with its place in the
/// arrays (`slot`, from 1); a write whose cell is not at its expected version (or does not
/// exist) matches no row. The statement checks the version and writes the row in one step,
/// as [`CurrentWrite`] does: two writes with one expected version can never both succeed,
/// in one batch or in two.
///
/// Public with `test-support` so that `scripts/bench` checks its pgbench ceiling against this statement's text
/// ([`CurrentWrites::SQL`]).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) struct CurrentWrites<'a> {
    now: i64,
    workspaces: Vec<i64>,
    users: Vec<i64>,
    projects: Vec<i64>,
    dates: Vec<&'a str>,
    phases: Vec<&'static str>,
    expected: Vec<i64>,
    hours: Vec<i64>,
    notes: Vec<&'a str>,
    billable: Vec<bool>,
}

/// The static query id of [`CurrentWrites`].
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "test-support", visibility::make(pub))]
pub(crate) struct CurrentWritesId;

impl QueryId for CurrentWrites<'_> {
    type QueryId = CurrentWritesId;
    const HAS_STATIC_QUERY_ID: bool = true;
}

impl Query for CurrentWrites<'_> {
    type SqlType = (BigInt, (BigInt, BigInt, Text, Text, BigInt, Text, Bool, BigInt));
}

impl<Conn> RunQueryDsl<Conn> for CurrentWrites<'_> {}

impl CurrentWrites<'_> {
    /// The statement, with its parameters in order: the time of the change, then one array
    /// per column of the writes.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    pub(crate) const SQL: &'static str = "SELECT slot, id, project_id, entry_date, phase, hours_centi, note, billable, version \
        FROM time_log_current_writes($1, $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], \
        $8::bigint[], $9::text[], $10::boolean[])";
}

impl QueryFragment<Pg> for CurrentWrites<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        // `SQL`, its parameters bound in place: `$n` is the n-th bind.
        let mut parts = Self::SQL.split('$');
        out.push_sql(parts.next().unwrap_or_default());
        for (n, part) in parts.enumerate() {
            let rest = part.trim_start_matches(|c: char| c.is_ascii_digit());
            match n {
                0 => out.push_bind_param::<BigInt, _>(&self.now)?,
                1 => out.push_bind_param::<Array<BigInt>, _>(&self.workspaces)?,
                2 => out.push_bind_param::<Array<BigInt>, _>(&self.users)?,
                3 => out.push_bind_param::<Array<BigInt>, _>(&self.projects)?,
                4 => out.push_bind_param::<Array<Text>, _>(&self.dates)?,
                5 => out.push_bind_param::<Array<Text>, _>(&self.phases)?,
                6 => out.push_bind_param::<Array<BigInt>, _>(&self.expected)?,
                7 => out.push_bind_param::<Array<BigInt>, _>(&self.hours)?,
                8 => out.push_bind_param::<Array<Text>, _>(&self.notes)?,
                9 => out.push_bind_param::<Array<Bool>, _>(&self.billable)?,
                _ => {
                    return Err(diesel::result::Error::QueryBuilderError(
                        "CurrentWrites::SQL has 10 parameters".into(),
                    ));
                }
            }
            out.push_sql(rest);
        }
        Ok(())
    }
}

impl<'a> CurrentWrites<'a> {
    /// The writes of `writes`, each a current write (`CurrentCellWrites::key` is `Some`),
    /// stamped with the current time.
    #[cfg_attr(feature = "test-support", visibility::make(pub))]
    fn new(writes: &'a [CellChange]) -> Result<Self, StoreError> {
        let mut batch = CurrentWrites {
            now: now_millis(),
            workspaces: Vec::with_capacity(writes.len()),
            users: Vec::with_capacity(writes.len()),
            projects: Vec::with_capacity(writes.len()),
            dates: Vec::with_capacity(writes.len()),
            phases: Vec::with_capacity(writes.len()),
            expected: Vec::with_capacity(writes.len()),
            hours: Vec::with_capacity(writes.len()),
            notes: Vec::with_capacity(writes.len()),
            billable: Vec::with_capacity(writes.len()),
        };
        for write in writes {
            let (project_id, hours) = current(write).ok_or_else(|| {
                StoreError::Internal(format!(
                    "a write of hours {:?} was batched as a current write",
                    write.hours
                ))
            })?;
            batch.workspaces.push(write.workspace_id);
            batch.users.push(write.user_id);
            batch.projects.push(project_id);
            batch.dates.push(&write.date);
            batch.phases.push(write.phase.as_str());
            batch.expected.push(write.expected_version);
            batch.hours.push(hours);
            batch.notes.push(&write.note);
            batch.billable.push(write.billable);
        }
        Ok(batch)
    }
}

/// The project and the hours (in hundredths) of a write that may be a current write: a
/// project id that names a record, and hours within the limit. `None` otherwise (then only
/// the whole transaction answers, in the contract's order of rules).
fn current(write: &CellChange) -> Option<(i64, i64)> {
    let hours = parse_hours(&write.hours).filter(|hours| *hours <= MAX_HOURS_CENTI)?;
    Some((write.project_id.record()?, hours))
}

/// Writes one cell of the caller's time log: the common case (`CurrentCellWrites`) as one
/// statement (on PostgreSQL, one statement for the writes waiting at the same moment), every
/// other case checking every rule in one transaction.
///
/// Rules, in order: 422 `unknown_project`, 422 `hours_out_of_range`, then
/// `version_conflict` (for a never-written cell: current version 1, current `null`).
pub fn set_cell(write: CellChange) -> Write<TimeLogEntry> {
    Write::batched::<CurrentCellWrites>("UPDATE time_log_entries", write, set_cell_on)
}

/// The common case of a write of the caller's cell, the current write of an existing cell
/// at the expected version, as a batched statement ([`crate::engine::BatchedStatement`]):
/// [`CurrentWrites`] on PostgreSQL, [`CurrentWrite`] for one write (SQLite's writer batches
/// its writes itself). A write it does not settle (an unknown project, hours over the
/// limit, a first write, a conflict) is answered by the whole of [`set_cell`].
#[derive(Debug)]
pub(crate) struct CurrentCellWrites;

impl BatchedStatement for CurrentCellWrites {
    const WRITES: bool = true;
    type Input = CellChange;
    /// The cell: user, project, date, phase.
    type Key = (i64, i64, String, &'static str);
    type Output = TimeLogEntry;

    fn key(write: &CellChange) -> Option<Self::Key> {
        if defects::on(Defect::LostUpdate) {
            // Seeded: every write meets the defect in `CurrentWrite`, none the batch's function.
            return None;
        }
        let (project_id, _) = current(write)?;
        Some((write.user_id, project_id, write.date.clone(), write.phase.as_str()))
    }

    fn many<'c>(
        conn: StatementConn<'c>,
        writes: &'c [CellChange],
    ) -> StatementFuture<'c, Vec<Option<TimeLogEntry>>> {
        Box::pin(async move {
            let query = CurrentWrites::new(writes)?;
            let rows: Vec<(i64, TimeLogCellRow)> = match conn {
                StatementConn::Postgres(conn) => RunQueryDsl::load(query, conn)?,
                StatementConn::Shared(conn) => diesel_async::RunQueryDsl::load(query, &mut &*conn).await?,
                StatementConn::Sqlite(_) => {
                    return Err(StoreError::Internal("the batched cell writes are PostgreSQL's".to_owned()));
                }
            };
            let mut answers: Vec<Option<TimeLogEntry>> = writes.iter().map(|_| None).collect();
            for (slot, row) in rows {
                let answer = usize::try_from(slot - 1).ok().and_then(|at| answers.get_mut(at));
                let Some(answer) = answer else {
                    return Err(StoreError::Internal(format!("a batched write came back in slot {slot}")));
                };
                *answer = Some(entry(row)?);
            }
            Ok(answers)
        })
    }

    fn one<'c>(conn: StatementConn<'c>, write: &'c CellChange) -> StatementFuture<'c, Option<TimeLogEntry>> {
        Box::pin(set_current_cell(conn, write))
    }
}

/// The common case of a write of the caller's cell, as one statement
/// ([`crate::engine::StatementConn`]): the current write of an existing cell at the expected version.
/// `None` when it does not apply (an unknown project, hours over the limit, a first write, a
/// conflict): then the whole of [`set_cell`] answers.
async fn set_current_cell(
    conn: StatementConn<'_>,
    write: &CellChange,
) -> Result<Option<TimeLogEntry>, StoreError> {
    let Some((project_id, hours)) = current(write) else { return Ok(None) };
    let row = db_statement!(conn, CurrentWrite::new(write, project_id, hours), get_result::<TimeLogCellRow>)
        .optional()?;
    row.map(entry).transpose()
}

/// [`set_cell`]'s every case, checking every rule in one transaction, on `conn`.
fn set_cell_on(conn: &mut DbConn, write: CellChange) -> Result<TimeLogEntry, StoreError> {
    let project_id = write.project_id.record();
    // The contract's pattern has already admitted `hours`; failing to read it is a defect.
    let hours = parse_hours(&write.hours).ok_or_else(|| {
        StoreError::Internal(format!("hours {:?} passed the contract but not the parser", write.hours))
    })?;
    db_write!(conn => {
        let known: i64 = match project_id {
            Some(id) => projects::table
                .filter(projects::id.eq(id))
                .filter(projects::workspace_id.eq(write.workspace_id))
                .count()
                .get_result(conn)?,
            None => 0,
        };
        let Some(project_id) = project_id.filter(|_| known > 0) else {
            return Err(StoreError::rule(
                "unknown_project",
                "/projectId",
                format!("project {} is not in this workspace", write.project_id),
            ));
        };
        if hours > MAX_HOURS_CENTI {
            return Err(StoreError::rule("hours_out_of_range", "/hours", "a cell holds at most 24 hours"));
        }
        let cell = cells::table
            .filter(cells::user_id.eq(write.user_id))
            .filter(cells::project_id.eq(project_id))
            .filter(cells::entry_date.eq(&write.date))
            .filter(cells::phase.eq(write.phase.as_str()));
        if let Some(row) = CurrentWrite::new(&write, project_id, hours).get_result::<TimeLogCellRow>(conn).optional()? {
            return entry(row);
        }
        if write.expected_version == 1 {
            let inserted: Option<TimeLogCellRow> = diesel::insert_into(cells::table)
                .values((
                    cells::workspace_id.eq(write.workspace_id),
                    cells::user_id.eq(write.user_id),
                    cells::project_id.eq(project_id),
                    cells::entry_date.eq(&write.date),
                    cells::phase.eq(write.phase.as_str()),
                    cells::hours_centi.eq(hours),
                    cells::note.eq(&write.note),
                    cells::billable.eq(write.billable),
                    cells::version.eq(2_i64),
                    cells::updated_at.eq(now_millis()),
                ))
                .on_conflict_do_nothing()
                .returning(TimeLogCellRow::as_returning())
                .get_result(conn)
                .optional()?;
            if let Some(row) = inserted {
                return entry(row);
            }
        }
        let current: Option<TimeLogCellRow> = cell.select(TimeLogCellRow::as_select()).first(conn).optional()?;
        let (current_version, current) = match current {
            Some(row) => {
                let entry = entry(row)?;
                (entry.version, json!({ "entry": entry }))
            }
            None => (1, Value::Null),
        };
        Err(StoreError::VersionConflict(Box::new(VersionConflict {
            detail: format!("The cell is at version {current_version}, not {}.", write.expected_version),
            current_version: Some(current_version + i64::from(defects::on(Defect::Wrong409Version))),
            current_revision: None,
            current: Some(current),
            conflicts: None,
        })))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hours_are_read_in_hundredths_and_shown_with_two_decimals() {
        for (text, centi, shown) in [
            ("7.5", 750, "7.50"),
            ("07.50", 750, "7.50"),
            ("24", 2400, "24.00"),
            ("0", 0, "0.00"),
            ("99.99", 9999, "99.99"),
            ("0.05", 5, "0.05"),
        ] {
            assert_eq!(parse_hours(text), Some(centi), "{text}");
            assert_eq!(format_hours(centi), shown);
        }
        for bad in ["", "7.", ".5", "100", "7.555", "a"] {
            assert_eq!(parse_hours(bad), None, "{bad}");
        }
    }
}
