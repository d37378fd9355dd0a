//! PostgreSQL's batcher (`crates/storage/src/engine/pg_batcher.rs`), through
//! `Database::write` and `Database::read` as the server calls them: the writes waiting on a
//! thread at the same moment share one statement, a write alone is sent at once, and two
//! writes of one cell never share a statement, so they apply in the order they came; the
//! token and membership lookups waiting together share one statement too, a key asked twice
//! among them, and each is answered as it would be alone. Runs when
//! `TEST_DATABASE_URL` names a PostgreSQL server; the demo fixture is the data (user 5 is a
//! member of workspace 1, which has project 7).

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Cleanup, require_postgres, scratch_postgres};
use wpds_contract::types::SetTimeLogCellRequest;
use wpds_storage::engine::BatchReport;
use wpds_storage::repos::auth::{self, Caller, TokenLifetimes};
use wpds_storage::repos::time_log::{CellChange, set_cell};
use wpds_storage::{Budget, Database, DbConfig, Read, StoreError};

const DEMO: &str = include_str!("../../../fixtures/demo.json");

/// A seeded database whose single statements run on shared connections, and the batches it
/// commits.
fn seeded() -> (Arc<Database>, Arc<Mutex<Vec<BatchReport>>>, Cleanup) {
    let (url, cleanup) = scratch_postgres(&require_postgres());
    let config = DbConfig { url, pool_size: 2, timeout: Duration::from_secs(5), ..DbConfig::default() };
    let mut db = Database::open(&config).expect("PostgreSQL is reachable");
    wpds_storage::seed::load(&db, DEMO).expect("the demo loads");
    db.share_statements(2).expect("tokio-postgres reads this URL");
    let batches = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&batches);
    db.observe_batches(Box::new(move |report| heard.lock().unwrap().push(report)));
    (Arc::new(db), batches, cleanup)
}

/// The sizes of the batches of writes among `batches`, in order.
fn writes(batches: &Mutex<Vec<BatchReport>>) -> Vec<usize> {
    batches.lock().unwrap().iter().filter(|b| b.writes > 0).map(|b| b.writes).collect()
}

/// The sizes of the batches of reads among `batches`, in order.
fn reads(batches: &Mutex<Vec<BatchReport>>) -> Vec<usize> {
    batches.lock().unwrap().iter().filter(|b| b.reads > 0).map(|b| b.reads).collect()
}

/// User 5's write of the cell of project 7 on `date`.
fn change(date: &str, note: &str, expected_version: i64) -> CellChange {
    let body: SetTimeLogCellRequest = serde_json::from_value(serde_json::json!({
        "projectId": "7", "date": date, "hours": "1.5", "note": note, "expectedVersion": expected_version
    }))
    .unwrap();
    CellChange::requested(1, 5, body)
}

/// `change`'s write through the database, as the server runs it.
async fn write(db: &Arc<Database>, change: CellChange) -> Result<i64, StoreError> {
    db.write(&Budget::new(Duration::from_secs(5)), set_cell(change)).await.map(|entry| entry.version)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

/// The writes of `changes` at once on this thread (each a task, queued in order): their
/// answers, in order.
async fn at_once(db: &Arc<Database>, changes: Vec<CellChange>) -> Vec<Result<i64, StoreError>> {
    let tasks: Vec<_> = changes
        .into_iter()
        .map(|change| {
            let db = Arc::clone(db);
            tokio::spawn(async move { write(&db, change).await })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.expect("a write's task"));
    }
    answers
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn writes_waiting_together_share_one_statement_and_a_write_alone_is_sent_at_once() {
    // Arrange: 20 cells written once (version 2), one at a time: each its own batch.
    let (db, batches, _cleanup) = seeded();
    let dates: Vec<String> = (1..=20).map(|day| format!("2025-04-{day:02}")).collect();
    let rt = runtime();
    for date in &dates {
        assert_eq!(rt.block_on(write(&db, change(date, "first", 1))).unwrap(), 2);
    }
    batches.lock().unwrap().clear();

    // Act: a write alone, then 20 current writes at once on this thread.
    let alone = rt.block_on(write(&db, change(&dates[0], "alone", 2)));
    let changes =
        dates.iter().map(|date| change(date, "together", if *date == dates[0] { 3 } else { 2 })).collect();
    let together = rt.block_on(at_once(&db, changes));

    // Assert: the lone write was a batch of one; the 20 went out in fewer statements than
    // writes, each answered from its own row.
    assert_eq!(alone.unwrap(), 3);
    let versions: Vec<i64> = together.into_iter().map(Result::unwrap).collect();
    assert_eq!(versions[0], 4);
    assert!(versions[1..].iter().all(|v| *v == 3), "{versions:?}");
    let batches = writes(&batches);
    assert_eq!(batches[0], 1, "the lone write: {batches:?}");
    assert_eq!(batches[1..].iter().sum::<usize>(), 20, "{batches:?}");
    assert!(batches.len() - 1 < 20, "the 20 writes shared statements: {batches:?}");
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn two_writes_of_one_cell_queued_together_apply_in_the_order_they_came() {
    // Arrange: one cell at version 2.
    let (db, batches, _cleanup) = seeded();
    let rt = runtime();
    assert_eq!(rt.block_on(write(&db, change("2025-05-01", "first", 1))).unwrap(), 2);
    batches.lock().unwrap().clear();

    // Act: three writes of the cell queued at once, each expecting the version the one
    // before it makes; in one statement all but one would miss their version.
    let changes =
        (2..5).map(|expected| change("2025-05-01", &format!("after {expected}"), expected)).collect();
    let versions = rt.block_on(at_once(&db, changes));

    // Assert: each applied, in order, each in a batch of its own.
    let versions: Vec<i64> = versions.into_iter().map(Result::unwrap).collect();
    assert_eq!(versions, [3, 4, 5]);
    assert_eq!(writes(&batches), [1, 1, 1]);
}

/// `read` through the database, as the server runs it.
async fn read<T: Send + 'static>(db: &Arc<Database>, read: Read<T>) -> Result<T, StoreError> {
    db.read(&Budget::new(Duration::from_secs(5)), read).await
}

/// The lookups of `tokens` and of `memberships` at once on this thread (each a task, queued
/// in order): their answers, in order.
async fn lookups_at_once(
    db: &Arc<Database>,
    tokens: &[String],
    memberships: &[(i64, i64)],
) -> (Vec<Option<Caller>>, Vec<bool>) {
    let callers: Vec<_> = tokens
        .iter()
        .map(|token| {
            let (db, token) = (Arc::clone(db), token.clone());
            tokio::spawn(async move { read(&db, auth::authenticate(token)).await })
        })
        .collect();
    let members: Vec<_> = memberships
        .iter()
        .map(|&(workspace, user)| {
            let db = Arc::clone(db);
            tokio::spawn(async move { read(&db, auth::is_member(workspace, user)).await })
        })
        .collect();
    let mut answers = (Vec::new(), Vec::new());
    for caller in callers {
        answers.0.push(caller.await.expect("a lookup's task").unwrap());
    }
    for member in members {
        answers.1.push(member.await.expect("a lookup's task").unwrap());
    }
    answers
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn lookups_waiting_together_share_one_statement_and_each_is_answered_as_it_is_alone() {
    // Arrange: tokens of users 5, 6, 7 and the administrator 9; an expired one; one whose
    // login was revoked (its refresh token spent twice); one nobody issued. Demo
    // memberships: users 5, 6, 9 in workspace 1, user 7 in workspace 2.
    let (db, batches, _cleanup) = seeded();
    let lifetimes = TokenLifetimes { access: Duration::from_secs(600), refresh: Duration::from_secs(600) };
    let issue = |user, lifetimes| db.write_now(auth::issue(user, lifetimes)).unwrap();
    let mut tokens: Vec<String> =
        [5, 6, 7, 9].into_iter().map(|user| issue(user, lifetimes).access_token).collect();
    tokens.push(issue(5, TokenLifetimes { access: Duration::ZERO, ..lifetimes }).access_token);
    let revoked = issue(6, lifetimes);
    db.write_now(auth::refresh(revoked.refresh_token.clone(), lifetimes)).unwrap().unwrap();
    assert!(db.write_now(auth::refresh(revoked.refresh_token, lifetimes)).unwrap().is_err());
    tokens.push(revoked.access_token);
    tokens.push("at_nobody_issued_this".to_owned());
    tokens.push(tokens[0].clone());
    let memberships: Vec<(i64, i64)> = vec![(1, 5), (1, 6), (1, 7), (2, 7), (1, 9), (2, 5), (3, 5), (1, 5)];
    let rt = runtime();
    let alone: (Vec<Option<Caller>>, Vec<bool>) = (
        tokens
            .iter()
            .map(|token| rt.block_on(read(&db, auth::authenticate(token.clone()))).unwrap())
            .collect(),
        memberships.iter().map(|&(w, u)| rt.block_on(read(&db, auth::is_member(w, u))).unwrap()).collect(),
    );
    batches.lock().unwrap().clear();

    // Act: every lookup at once on this thread.
    let together = rt.block_on(lookups_at_once(&db, &tokens, &memberships));

    // Assert: the answers alone are the right ones; together, the same, in fewer statements
    // than lookups.
    let users: Vec<Option<i64>> = alone.0.iter().map(|caller| caller.as_ref().map(|c| c.user_id)).collect();
    assert_eq!(users, [Some(5), Some(6), Some(7), Some(9), None, None, None, Some(5)]);
    assert!(
        alone.0[3].as_ref().unwrap().is_platform_admin && !alone.0[0].as_ref().unwrap().is_platform_admin
    );
    assert_eq!(alone.1, [true, true, false, true, true, false, false, true]);
    assert_eq!(together, alone);
    let reads = reads(&batches);
    assert_eq!(reads.iter().sum::<usize>(), tokens.len() + memberships.len(), "{reads:?}");
    assert!(reads.len() < tokens.len() + memberships.len(), "the lookups shared statements: {reads:?}");
    assert!(writes(&batches).is_empty());
}
