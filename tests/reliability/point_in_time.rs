//! Issue 67, point 3: a restore to a point in time on PostgreSQL, as `docs/operations.md`
//! tells operators to take and restore one. The test's own primary archives its WAL
//! (`archive_mode`, `archive_command`); while four writers write new cells through the
//! server, a base backup is taken (`pg_basebackup`), then a moment is chosen (the primary's
//! `clock_timestamp()`), the writers go on, and the primary is lost. A server restored from
//! the base backup and the archive to that moment (`restore_command`,
//! `recovery_target_time`, promoted at the target), with `wpds serve` started on it:
//! - holds every write acknowledged before the moment, and none of those sent after it;
//! - takes the access token and the refresh token issued before the backup, and reads the
//!   receipts cursor handed out before it as the server before did.
//!
//! It needs PostgreSQL's server binaries (`postgres_nodes.rs`), not `TEST_DATABASE_URL`.

use crate::harness::{Server, agent, free_port, issue_pair, seed, wait_until};
use crate::new_cells::{Writes, stored_dates, write_until};
use crate::postgres_nodes::{Node, append, directory, path, pg, servers_dir};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The note of the writers' cells.
const NOTE: &str = "point-in-time";
/// The writes that must be answered before the moment and sent after it, at least, for the
/// test to judge anything.
const WRITES: usize = 20;
const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";

/// The test's servers and files, stopped and removed when dropped.
struct Site {
    dir: PathBuf,
    nodes: Vec<Node>,
}

impl Drop for Site {
    fn drop(&mut self) {
        for node in &self.nodes {
            node.stop_if_running();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `GET` of `path` on `base` with `token`: the status and the body.
fn get(base: &str, path: &str, token: &str) -> (u16, Value) {
    let mut answer = agent()
        .get(format!("{base}{path}"))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .unwrap();
    (answer.status().as_u16(), answer.body_mut().read_json().unwrap_or(Value::Null))
}

#[test]
#[ignore = "needs PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup): run with --include-ignored"]
fn a_base_backup_and_the_archived_wal_restore_every_write_acknowledged_before_the_chosen_moment_and_none_after()
 {
    // Arrange: a primary archiving its WAL, the demo data, a server on it; what it handed
    // out (a login's tokens, a cursor and the page it reads); writers writing.
    let mut site = Site { dir: directory("wpds-point-in-time"), nodes: Vec::new() };
    let archive = site.dir.join("archive");
    let base_backup = site.dir.join("base");
    servers_dir(&archive);
    let archiving = format!("archive_mode = on\narchive_command = 'cp %p {}/%f'\n", path(&archive));
    site.nodes.push(Node::initdb(&site.dir, "primary", &archiving));
    let primary = &site.nodes[0];
    primary.psql("CREATE DATABASE wpds");
    let url = primary.url("wpds");
    let token = seed(&url);
    let (access, refresh) = issue_pair(&url);
    let server = Server::start(&url);
    let (status, first) = get(&server.base, &format!("{RECEIPTS}?limit=5"), &access);
    assert_eq!(status, 200, "{first}");
    let cursor = first["nextCursor"].as_str().expect("a cursor").to_owned();
    let (_, page) = get(&server.base, &format!("{RECEIPTS}?limit=5&cursor={cursor}"), &access);
    let writing = write_until(&server, &token, NOTE);
    std::thread::sleep(Duration::from_millis(500));

    // Act: the base backup while they write; a second later (and WRITES answers more, however
    // busy the machine) the moment to restore to; as long again of writes; then the primary's
    // last WAL archived and the primary lost.
    let from = primary.port.to_string();
    pg(
        "pg_basebackup",
        &["-h", "127.0.0.1", "-p", &from, "-U", "postgres", "-D", path(&base_backup), "-c", "fast"],
    );
    let backed_up = writing.answered();
    std::thread::sleep(Duration::from_secs(1));
    writing.wait_for(backed_up, WRITES, Duration::from_secs(30));
    let before_moment = Instant::now();
    let moment = primary.psql("SELECT clock_timestamp()").trim().to_owned();
    let after_moment = Instant::now();
    let chosen = writing.answered();
    std::thread::sleep(Duration::from_secs(1));
    // The writes in flight at the moment answer first: four writers, so four more.
    writing.wait_for(chosen, WRITES + 4, Duration::from_secs(30));
    let writes: Vec<Writes> = writing.stop();
    primary.psql("SELECT pg_switch_wal()");
    primary.stop("fast"); // a clean stop archives every finished segment first
    drop(server);
    // The restore: the base backup's data directory, the archive, the moment.
    let restored = Node { data: base_backup, port: free_port() };
    let recovery = format!(
        "port = {}\narchive_mode = off\nrestore_command = 'cp {}/%f %p'\nrecovery_target_time = '{moment}'\n\
         recovery_target_action = 'promote'\n",
        restored.port,
        path(&archive)
    );
    append(&restored.data.join("postgresql.conf"), &recovery);
    std::fs::write(restored.data.join("recovery.signal"), "").unwrap();
    restored.start();
    site.nodes.push(restored);
    let restored = &site.nodes[1];
    wait_until("the restore reaches its moment and is promoted", Duration::from_secs(60), || {
        restored.psql("SELECT pg_is_in_recovery()").trim() == "f"
    });
    let on_restored = Server::start(&restored.url("wpds"));

    // Assert: what was acknowledged before the moment is there, what was sent after is not ...
    let stored = stored_dates(&restored.url("wpds"), NOTE);
    let answers: Vec<_> = writes.iter().flat_map(|w| &w.answers).collect();
    let before: Vec<&String> =
        answers.iter().filter(|a| a.status == 200 && a.answered < before_moment).map(|a| &a.day).collect();
    let after: Vec<&String> = answers.iter().filter(|a| a.sent > after_moment).map(|a| &a.day).collect();
    assert!(
        before.len() >= WRITES && after.len() >= WRITES,
        "writes before {} and after {}",
        before.len(),
        after.len()
    );
    let missing: Vec<_> = before.iter().filter(|day| !stored.contains(**day)).collect();
    assert!(missing.is_empty(), "{} acknowledged before the moment, missing: {missing:?}", before.len());
    let beyond: Vec<_> = after.iter().filter(|day| stored.contains(**day)).collect();
    assert!(beyond.is_empty(), "{} sent after the moment, restored all the same: {beyond:?}", after.len());
    // ... and what the server handed out before the backup works on the restored one.
    let (status, again) = get(&on_restored.base, &format!("{RECEIPTS}?limit=5&cursor={cursor}"), &access);
    assert_eq!((status, &again), (200, &page), "the cursor issued before reads the same page");
    let refreshed = agent()
        .post(format!("{}/v1/auth/refresh", on_restored.base))
        .send_json(json!({ "refreshToken": refresh }))
        .unwrap();
    assert_eq!(refreshed.status().as_u16(), 200, "the refresh token issued before refreshes");
    eprintln!(
        "point in time: {} acknowledged before the moment, all restored; {} sent after it, none restored",
        before.len(),
        after.len()
    );
}
