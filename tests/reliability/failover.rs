//! Issue 35, point 2: a failover is a tested promise. Each test makes its own PostgreSQL
//! primary and streaming replica (`initdb`, then `pg_basebackup -R`, on free loopback
//! ports in a directory of its own, run as an unprivileged user when the tests run as
//! root), starts the server with a multi-host URL and `target_session_attrs=read-write`,
//! and writes continuously from four clients while the primary goes away and the replica
//! is promoted:
//! - (a) the primary stopped cleanly (`pg_ctl stop -m fast`), as for maintenance;
//! - (b) with synchronous replication (`synchronous_standby_names = '*'`), the primary
//!   killed (`pg_ctl stop -m immediate`), as in a crash.
//!
//! In both, every write acknowledged (200) is on the new primary, every answer in the
//! window is 200 or 503 `unavailable` with `Retry-After` (never a 500), and writes answer
//! 200 again within 5 s of the promotion, with no restart of the server. Each write is a
//! new cell, so a write whose answer was lost (a 503 while its commit may or may not have
//! happened) leaves nothing for the next one to trip on.
//!
//! These need PostgreSQL's server binaries (Debian's `postgresql-15`, in
//! `/usr/lib/postgresql/*/bin`), not `TEST_DATABASE_URL`.

use crate::harness::{Server, free_port, seed};
use crate::new_cells::{Writes, stored_dates, write_until};
use crate::postgres_nodes::{Node, append, directory, path, pg};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The note of the writers' cells.
const NOTE: &str = "failover";

/// A primary and its streaming replica, in a directory removed (after both are stopped)
/// when dropped.
struct Cluster {
    dir: PathBuf,
    primary: Node,
    replica: Node,
}

impl Cluster {
    /// `initdb` a primary, start it, and `pg_basebackup -R` a replica from it; with
    /// `synchronous`, a commit on the primary waits for the replica to have it.
    fn new(synchronous: bool) -> Self {
        let dir = directory("wpds-failover");
        let primary = Node::initdb(&dir, "primary", "");
        let replica = Node { data: dir.join("replica"), port: free_port() };
        let from = primary.port.to_string();
        let base_backup = [
            "-h",
            "127.0.0.1",
            "-p",
            &from,
            "-U",
            "postgres",
            "-D",
            path(&replica.data),
            "-R",
            "-X",
            "stream",
        ];
        pg("pg_basebackup", &base_backup);
        append(&replica.data.join("postgresql.conf"), &format!("port = {}\n", replica.port));
        replica.start();
        let cluster = Cluster { dir, primary, replica };
        // Made on the primary alone (after the base backup copied its configuration): the
        // promoted replica, with no standby of its own, must not wait for one.
        let state = if synchronous {
            cluster.primary.psql("ALTER SYSTEM SET synchronous_standby_names = '*'");
            cluster.primary.psql("SELECT pg_reload_conf()");
            "sync"
        } else {
            "async"
        };
        crate::harness::wait_until("the replica streams", Duration::from_secs(15), || {
            cluster.primary.psql("SELECT sync_state FROM pg_stat_replication").trim() == state
        });
        cluster
    }

    /// The URL the server uses: both nodes, the one taking writes chosen.
    fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/{database}?target_session_attrs=read-write",
            self.primary.port, self.replica.port
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Never a panic here (a test that failed is unwinding): each stop is best effort.
        for node in [&self.primary, &self.replica] {
            node.stop_if_running();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes through a failover: the primary is stopped in `mode` (`pg_ctl stop -m`), then
/// the replica is promoted; asserts the promise of the module's documentation.
fn fail_over(synchronous: bool, mode: &str) {
    // Arrange: the cluster, the demo data on it, a server on both nodes, writes flowing.
    let cluster = Cluster::new(synchronous);
    cluster.primary.psql("CREATE DATABASE wpds");
    let token = seed(&cluster.url("wpds"));
    let server = Server::start_with(&cluster.url("wpds"), &[("WPDS_LOG", "info")]);
    let writing = write_until(&server, &token, NOTE);
    std::thread::sleep(Duration::from_secs(1));

    // Act: the primary goes away; a second later the replica is promoted; writes go on
    // for 6 s more.
    cluster.primary.stop(mode);
    std::thread::sleep(Duration::from_secs(1));
    cluster.replica.promote();
    let promoted = Instant::now();
    std::thread::sleep(Duration::from_secs(6));
    let writes: Vec<Writes> = writing.stop();

    // Assert: only 200 or 503 `unavailable` (with Retry-After) ...
    let mut statuses = std::collections::BTreeMap::new();
    for answer in writes.iter().flat_map(|w| &w.answers) {
        *statuses.entry((answer.status, answer.detail.clone())).or_insert(0) += 1;
    }
    for (status, detail) in statuses.keys() {
        assert!(
            *status == 200 || (*status == 503 && detail == "unavailable"),
            "an answer other than 200 or 503 unavailable with Retry-After: {statuses:?}"
        );
    }
    // ... writes answered 200 again within 5 s of the promotion, and from then on ...
    let back = promoted + Duration::from_secs(5);
    for (i, w) in writes.iter().enumerate() {
        let late: Vec<_> = w.answers.iter().filter(|a| a.sent >= back).collect();
        assert!(!late.is_empty(), "writer {i} wrote after the 5 s");
        assert!(late.iter().all(|a| a.status == 200), "writer {i} after 5 s: {late:?}");
    }
    let first_200 = writes
        .iter()
        .flat_map(|w| &w.answers)
        .filter(|a| a.sent >= promoted && a.status == 200)
        .map(|a| a.answered.duration_since(promoted))
        .min()
        .expect("a write after the promotion");
    // ... and every acknowledged write is on the new primary.
    let stored = stored_dates(&cluster.replica.url("wpds"), NOTE);
    let acknowledged: Vec<&String> = writes.iter().flat_map(Writes::acknowledged).collect();
    let missing: Vec<&&String> = acknowledged.iter().filter(|d| !stored.contains(**d)).collect();
    assert!(missing.is_empty(), "acknowledged writes missing on the new primary: {missing:?}");
    eprintln!(
        "failover ({mode}, synchronous: {synchronous}): {} acknowledged, all on the new primary; \
         first 200 {first_200:?} after the promotion; answers {statuses:?}",
        acknowledged.len()
    );
}

#[test]
#[ignore = "needs PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup): run with --include-ignored"]
fn a_primary_stopped_and_its_replica_promoted_loses_no_acknowledged_write_and_writes_resume_within_5_s() {
    fail_over(false, "fast");
}

#[test]
#[ignore = "needs PostgreSQL's server binaries (initdb, pg_ctl, pg_basebackup): run with --include-ignored"]
fn with_synchronous_replication_a_primary_killed_and_its_replica_promoted_loses_no_acknowledged_write() {
    fail_over(true, "immediate");
}
