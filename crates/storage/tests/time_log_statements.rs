//! The time-log write's rule — which cell a write changes, and at which version — is
//! written in two statements: `CurrentWrite`, the one-cell `UPDATE … WHERE … AND version =
//! expected` both engines run (alone, and inside the transaction that checks every rule),
//! and on PostgreSQL `CurrentWrites`, the batch's call of `time_log_current_writes` (its
//! `UPDATE … FROM unnest(…)` lives in a migration). Here every statement the engine has runs
//! against the same cases, each from the same cell, and must give the answers the table
//! gives: if one statement's rule drifted from the other's, their answers would differ.
//!
//! The demo fixture is the data: user 5 is a member of workspace 1, which has project 7.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use diesel::prelude::*;
use std::time::Duration;
use wpds_contract::types::SetTimeLogCellRequest;
use wpds_storage::engine::DbConn;
use wpds_storage::repos::time_log::{CellChange, CurrentWrite, CurrentWrites, set_cell};
use wpds_storage::{Database, DbConfig, db_run};

const DEMO: &str = include_str!("../../../fixtures/demo.json");

/// What a statement answers for one write: the cell's version, hours and note after it, or
/// `None` when it changed nothing.
type Answer = Option<(i64, i64, String)>;

/// The columns both statements return, as `models::TimeLogCellRow` orders them.
type Row = (i64, i64, String, String, i64, String, bool, i64);

/// A write of the cell (workspace, user, project 7, date, phase) as the server makes it.
fn change(workspace: i64, user: i64, date: &str, phase: &str, expected_version: i64) -> CellChange {
    let body: SetTimeLogCellRequest = serde_json::from_value(serde_json::json!({
        "projectId": "7", "date": date, "phase": phase, "hours": "2.25", "note": "case",
        "expectedVersion": expected_version
    }))
    .unwrap();
    CellChange::requested(workspace, user, body)
}

/// Each case: what it is, its write, what every statement must answer. The cell written
/// beforehand is user 5's of project 7 on 2026-03-02, phase `general`, at version 3.
fn cases() -> Vec<(&'static str, CellChange, Answer)> {
    let applied = Some((4, 225, "case".to_owned()));
    vec![
        ("the cell at its expected version", change(1, 5, "2026-03-02", "general", 3), applied),
        ("an expected version one behind", change(1, 5, "2026-03-02", "general", 2), None),
        ("an expected version far behind", change(1, 5, "2026-03-02", "general", 1), None),
        ("an expected version ahead", change(1, 5, "2026-03-02", "general", 4), None),
        ("another workspace's path", change(2, 5, "2026-03-02", "general", 3), None),
        ("another user", change(1, 6, "2026-03-02", "general", 3), None),
        ("another date", change(1, 5, "2026-03-03", "general", 3), None),
        ("another phase", change(1, 5, "2026-03-02", "programming", 3), None),
        ("a cell never written, expecting 1", change(1, 5, "2026-03-04", "general", 1), None),
    ]
}

fn answer(row: Row) -> Answer {
    let (_, _, _, _, hours, note, _, version) = row;
    Some((version, hours, note))
}

/// Runs `statement` inside a transaction rolled back after it, so every case starts from
/// the same cell.
fn rolled_back<C: Connection>(conn: &mut C, statement: impl FnOnce(&mut C) -> Answer) -> Answer {
    let mut seen = None;
    let _ = conn.transaction::<(), diesel::result::Error, _>(|conn| {
        seen = Some(statement(conn));
        Err(diesel::result::Error::RollbackTransaction)
    });
    seen.expect("the statement ran")
}

/// Every statement of `db`'s engine, by name, run on each case; the answers that differ
/// from the table.
fn disagreements(db: &Database) -> Vec<String> {
    let mut pooled = db.conn().unwrap();
    let mut found = Vec::new();
    for (what, write, expected) in cases() {
        let project = write.project_id.record().unwrap();
        let hours = 225;
        let mut answers: Vec<(&str, Answer)> = Vec::new();
        // Both engines: the one-cell statement (db_run! compiles it once per engine).
        let single = {
            let conn = &mut pooled;
            db_run!(conn => rolled_back(conn, |conn| {
                CurrentWrite::new(&write, project, hours).get_result::<Row>(conn).optional().unwrap().and_then(answer)
            }))
        };
        answers.push(("CurrentWrite", single));
        if let DbConn::Postgres(conn) = &mut pooled {
            let batch_of_one = rolled_back(&mut **conn, |conn| {
                let writes = [write.clone()];
                let rows: Vec<(i64, Row)> = CurrentWrites::new(&writes).unwrap().load(conn).unwrap();
                rows.into_iter().next().and_then(|(slot, row)| {
                    assert_eq!(slot, 1, "{what}: the only write's slot");
                    answer(row)
                })
            });
            answers.push(("CurrentWrites, the write alone", batch_of_one));
            // Beside a write of another cell, in the second slot: the batch answers each
            // write by its slot, the case's as it would alone.
            let beside = rolled_back(&mut **conn, |conn| {
                let writes = [change(1, 5, "2026-03-09", "general", 1), write.clone()];
                let rows: Vec<(i64, Row)> = CurrentWrites::new(&writes).unwrap().load(conn).unwrap();
                rows.into_iter().find(|(slot, _)| *slot == 2).and_then(|(_, row)| answer(row))
            });
            answers.push(("CurrentWrites, second of two", beside));
        }
        for (statement, answer) in answers {
            if answer != expected {
                found.push(format!("{what}: {statement} answered {answer:?}, the rule says {expected:?}"));
            }
        }
    }
    found
}

/// A database of `url` with the demo and the case's cell written to version 3.
fn seeded(url: String) -> Database {
    let config = DbConfig { url, pool_size: 2, timeout: Duration::from_secs(5), ..DbConfig::default() };
    let db = Database::open(&config).unwrap();
    wpds_storage::seed::load(&db, DEMO).unwrap();
    for expected in [1, 2] {
        db.write_now(set_cell(change(1, 5, "2026-03-02", "general", expected))).unwrap();
    }
    db
}

#[test]
fn every_time_log_statement_of_sqlite_answers_each_case_as_the_rule_says_sqlite_only() {
    let path =
        std::env::temp_dir().join(format!("wpds-time-log-statements-{:016x}.db", rand::random::<u64>()));
    let _cleanup = support::Cleanup::SqliteFile(path.clone());
    let db = seeded(format!("sqlite://{}", path.display()));

    let found = disagreements(&db);

    assert!(found.is_empty(), "{found:#?}");
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn every_time_log_statement_of_postgresql_answers_each_case_as_the_rule_says() {
    let (url, _cleanup) = support::scratch_postgres(&support::require_postgres());
    let db = seeded(url);

    let found = disagreements(&db);

    assert!(found.is_empty(), "{found:#?}");
}
