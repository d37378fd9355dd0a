//! The load itself: one write transaction that (when it replaces) deletes every record,
//! checks the file's references against the database, inserts every row with
//! `ON CONFLICT DO NOTHING` and, on PostgreSQL, moves each identity sequence past the ids
//! the file brought.

use super::plan::{Known, Labelled, Plan};
use super::{SeedError, SeedProblem, SeedReport};
use crate::db_write;
use crate::engine::DbConn;
use crate::schema::*;
use diesel::pg::PgConnection;
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;

/// Ids per lookup query (SQLite binds each one as a parameter).
const LOOKUP_CHUNK: usize = 500;

/// The tables whose `id` is an identity column and which the loader fills.
const SEQUENCED_TABLES: [&str; 18] = [
    "users",
    "workspaces",
    "projects",
    "project_areas",
    "document_types",
    "documents",
    "catalog_families",
    "project_items",
    "assistant_imports",
    "global_companies",
    "categories",
    "product_types",
    "item_columns",
    "contact_companies",
    "contact_persons",
    "company_links",
    "commercial_receipts",
    "time_log_entries",
];

/// After rows with explicit ids went in, the next generated id must be larger than all
/// of them. SQLite picks `max(rowid) + 1` by itself; PostgreSQL identity sequences do not
/// notice explicit ids.
trait ResetSequences {
    fn reset_sequences(&mut self) -> QueryResult<()>;
}

impl ResetSequences for SqliteConnection {
    fn reset_sequences(&mut self) -> QueryResult<()> {
        Ok(())
    }
}

impl ResetSequences for PgConnection {
    /// Sets each sequence so that its next value is one above both the largest id in the
    /// table and the last value it handed out (never moving it backwards).
    fn reset_sequences(&mut self) -> QueryResult<()> {
        for table in SEQUENCED_TABLES {
            diesel::sql_query(format!(
                "SELECT setval(s.seq, GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), \
                 COALESCE(pg_sequence_last_value(s.seq::regclass), 0)) + 1, false) \
                 FROM (SELECT pg_get_serial_sequence('{table}', 'id') AS seq) AS s"
            ))
            .execute(self)?;
        }
        Ok(())
    }
}

/// Runs `$query` (which reads the ids in `$chunk`) over `$ids` in chunks, collecting rows.
macro_rules! lookup {
    ($conn:ident, $ids:expr, |$chunk:ident| $query:expr) => {{
        let mut found = Vec::new();
        for $chunk in $ids.chunks(LOOKUP_CHUNK) {
            let mut rows = $query.load($conn)?;
            found.append(&mut rows);
        }
        found
    }};
}

/// Inserts `$rows` into `$table`, counting what went in and what was there already; a row
/// the database refuses fails the whole load, naming its record.
macro_rules! insert_rows {
    ($conn:ident, $report:ident, $kind:expr, $table:expr, $rows:expr) => {{
        let rows: &[Labelled<_>] = &$rows;
        for row in rows {
            let inserted = diesel::insert_into($table)
                .values(&row.value)
                .on_conflict_do_nothing()
                .execute($conn)
                .map_err(|e| SeedError::record(&row.label, e))?;
            $report.count($kind, inserted);
        }
    }};
}

/// Empties every table of records, children before parents: everything but the server's
/// secrets, the rate-limit counters and the migrations.
macro_rules! delete_records {
    ($conn:ident) => {{
        diesel::delete(tokens::table).execute($conn)?;
        diesel::delete(logins::table).execute($conn)?;
        diesel::delete(audit_log::table).execute($conn)?;
        diesel::delete(credit_resets::table).execute($conn)?;
        diesel::delete(credit_allowances::table).execute($conn)?;
        diesel::delete(commercial_receipts::table).execute($conn)?;
        diesel::delete(time_log_entries::table).execute($conn)?;
        diesel::delete(company_links::table).execute($conn)?;
        diesel::delete(contact_persons::table).execute($conn)?;
        diesel::delete(contact_companies::table).execute($conn)?;
        diesel::delete(product_type_columns::table).execute($conn)?;
        diesel::delete(item_columns::table).execute($conn)?;
        diesel::delete(product_types::table).execute($conn)?;
        diesel::delete(categories::table).execute($conn)?;
        diesel::delete(global_companies::table).execute($conn)?;
        diesel::delete(report_exports::table).execute($conn)?;
        diesel::delete(assistant_imports::table).execute($conn)?;
        diesel::delete(documents::table).execute($conn)?;
        diesel::delete(document_types::table).execute($conn)?;
        diesel::delete(project_items::table).execute($conn)?;
        diesel::delete(catalog_families::table).execute($conn)?;
        diesel::delete(project_areas::table).execute($conn)?;
        diesel::delete(projects::table).execute($conn)?;
        diesel::delete(memberships::table).execute($conn)?;
        diesel::delete(workspaces::table).execute($conn)?;
        diesel::delete(users::table).execute($conn)?;
    }};
}

/// What a load does with the records already in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Keeps them: the file's records are added where missing.
    Add,
    /// Replaces them all with the file's, provided every workspace and user in the
    /// database is one the file has (so real data is never erased).
    Replace,
}

/// The workspaces and users in the database that the file does not have, as problems.
macro_rules! foreign_records {
    ($conn:ident, $plan:expr) => {{
        let not_in =
            |ids: Vec<i64>, file: &[i64]| ids.into_iter().filter(|id| !file.contains(id)).collect::<Vec<_>>();
        let file_workspaces: Vec<i64> = $plan.workspaces.iter().map(|w| w.value.id).collect();
        let file_users: Vec<i64> = $plan.users.iter().map(|u| u.value.id).collect();
        let workspaces = not_in(workspaces::table.select(workspaces::id).load($conn)?, &file_workspaces);
        let users = not_in(users::table.select(users::id).load($conn)?, &file_users);
        let mut problems = Vec::new();
        for (kind, ids) in [("workspace", workspaces), ("user", users)] {
            if let Some(first) = ids.first() {
                problems.push(SeedProblem {
                    record: "database".to_owned(),
                    pointer: String::new(),
                    message: format!(
                        "holds {} {kind}(s) the file does not have ({kind} {first} among them): it is not replaced",
                        ids.len()
                    ),
                });
            }
        }
        problems
    }};
}

/// Checks references against the database and inserts everything, in one transaction; with
/// [`Mode::Replace`], every record in the database is deleted first.
pub(super) fn run(conn: &mut DbConn, plan: &mut Plan, mode: Mode) -> Result<SeedReport, SeedError> {
    db_write!(conn => {
        if mode == Mode::Replace {
            let foreign = foreign_records!(conn, plan);
            if !foreign.is_empty() {
                return Err(SeedError::Invalid(foreign));
            }
            delete_records!(conn);
        }
        let wanted = plan.wanted();
        let mut db = Known::default();
        let users: Vec<i64> =
            lookup!(conn, wanted.users, |ids| users::table.filter(users::id.eq_any(ids)).select(users::id));
        db.users.extend(users);
        let workspaces: Vec<i64> = lookup!(conn, wanted.workspaces, |ids| workspaces::table
            .filter(workspaces::id.eq_any(ids))
            .select(workspaces::id));
        db.workspaces.extend(workspaces);
        let projects: Vec<(i64, i64)> = lookup!(conn, wanted.projects, |ids| projects::table
            .filter(projects::id.eq_any(ids))
            .select((projects::id, projects::workspace_id)));
        db.projects.extend(projects);
        let types: Vec<(i64, i64, String)> = lookup!(conn, wanted.document_types, |ids| document_types::table
            .filter(document_types::id.eq_any(ids))
            .select((document_types::id, document_types::workspace_id, document_types::scope)));
        db.document_types.extend(types.into_iter().map(|(id, workspace, scope)| (id, (workspace, scope))));
        let families: Vec<(i64, i64)> = lookup!(conn, wanted.families, |ids| catalog_families::table
            .filter(catalog_families::id.eq_any(ids))
            .select((catalog_families::id, catalog_families::workspace_id)));
        db.families.extend(families);
        let product_types: Vec<(i64, i64)> = lookup!(conn, wanted.product_types, |ids| product_types::table
            .filter(product_types::id.eq_any(ids))
            .select((product_types::id, product_types::workspace_id)));
        db.product_types.extend(product_types);
        let columns: Vec<(i64, i64)> = lookup!(conn, wanted.item_columns, |ids| item_columns::table
            .filter(item_columns::id.eq_any(ids))
            .select((item_columns::id, item_columns::workspace_id)));
        db.item_columns.extend(columns);
        let companies: Vec<(i64, i64)> = lookup!(conn, wanted.companies, |ids| contact_companies::table
            .filter(contact_companies::id.eq_any(ids))
            .select((contact_companies::id, contact_companies::workspace_id)));
        db.companies.extend(companies);
        let persons: Vec<(i64, i64)> = lookup!(conn, wanted.persons, |ids| contact_persons::table
            .filter(contact_persons::id.eq_any(ids))
            .select((contact_persons::id, contact_persons::company_id)));
        db.persons.extend(persons);
        let areas: Vec<(i64, i64)> = lookup!(conn, wanted.area_projects, |ids| project_areas::table
            .filter(project_areas::project_id.eq_any(ids))
            .select((project_areas::project_id, project_areas::id)));
        for (project, area) in areas {
            db.areas.entry(project).or_default().insert(area.to_string());
        }

        let known = plan.known_with(db);
        let problems = plan.check(&known);
        if !problems.is_empty() {
            return Err(SeedError::Invalid(problems));
        }
        plan.count_issues(&known);

        let mut report = SeedReport::new();
        insert_rows!(conn, report, "users", users::table, plan.users);
        insert_rows!(conn, report, "workspaces", workspaces::table, plan.workspaces);
        insert_rows!(conn, report, "memberships", memberships::table, plan.memberships);
        insert_rows!(conn, report, "projects", projects::table, plan.projects);
        insert_rows!(conn, report, "projectAreas", project_areas::table, plan.project_areas);
        insert_rows!(conn, report, "documentTypes", document_types::table, plan.document_types);
        insert_rows!(conn, report, "catalogFamilies", catalog_families::table, plan.catalog_families);
        insert_rows!(conn, report, "projectItems", project_items::table, plan.project_items);
        insert_rows!(conn, report, "documents", documents::table, plan.documents);
        insert_rows!(conn, report, "assistantImports", assistant_imports::table, plan.assistant_imports);
        insert_rows!(conn, report, "globalCompanies", global_companies::table, plan.global_companies);
        insert_rows!(conn, report, "categories", categories::table, plan.categories);
        insert_rows!(conn, report, "productTypes", product_types::table, plan.product_types);
        insert_rows!(conn, report, "itemColumns", item_columns::table, plan.item_columns);
        insert_rows!(conn, report, "productTypeColumns", product_type_columns::table, plan.product_type_columns);
        insert_rows!(conn, report, "contactCompanies", contact_companies::table, plan.contact_companies);
        insert_rows!(conn, report, "contactPersons", contact_persons::table, plan.contact_persons);
        insert_rows!(conn, report, "companyLinks", company_links::table, plan.company_links);
        insert_rows!(conn, report, "commercialReceipts", commercial_receipts::table, plan.commercial_receipts);
        insert_rows!(conn, report, "creditAllowances", credit_allowances::table, plan.credit_allowances);
        insert_rows!(conn, report, "timeLogEntries", time_log_entries::table, plan.time_log_entries);
        ResetSequences::reset_sequences(conn)?;
        Ok(report)
    })
}
