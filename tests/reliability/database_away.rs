//! Issue 35, point 4: start, and stay quiet, while PostgreSQL is away. `wpds serve` started
//! while its database cannot be reached serves anyway (`/healthz` 200, `/readyz` and
//! operations 503), tries again with backoff and migrates once it is reached; if it is not
//! reached within `WPDS_DB_WAIT_SECONDS` it exits 1 with one log line saying why. The
//! errors of an outage are logged at most once every 5 s per source, with the count of
//! those left out. `wpds migrate` and `serve --demo` still fail at once. The database is
//! made unreachable by a [`Proxy`] in front of it that refuses every connection.

use crate::database::TestDatabase;
use crate::harness::{Seeded, Server, WPDS, agent, cell, put_cell, readyz, wait_until};
use crate::proxy::{Proxy, through_proxy};
use diesel::{Connection, RunQueryDsl};
use std::process::Command;
use std::time::{Duration, Instant};

/// A fresh PostgreSQL database (neither migrated nor seeded) behind a proxy that refuses
/// every connection: the database, the proxy, and the URL through it.
fn away() -> (TestDatabase, Proxy, String) {
    let database = TestDatabase::postgres();
    let proxy = Proxy::to(through_proxy(&database.url, 0).0);
    proxy.cut();
    let url = through_proxy(&database.url, proxy.port).1;
    (database, proxy, url)
}

/// The log lines of the database's outage (target `wpds::database`).
fn outage_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|line| line.contains("wpds::database")).collect()
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn started_while_postgresql_is_away_the_server_is_live_not_ready_and_migrates_once_it_is_reached() {
    // Arrange: the database is away; the server starts anyway.
    let (database, proxy, url) = away();
    let server = Server::start_live(&url, &[("WPDS_LOG", "info"), ("WPDS_LOG_FORMAT", "json")]);
    let agent = agent();

    // Assert: live, not ready, and an operation answers 503 with Retry-After.
    let live = agent.get(format!("{}/healthz", server.base)).call().expect("an answer").status();
    assert_eq!(live, 200);
    assert_eq!(readyz(&agent, &server.base).ok(), Some(503));
    let refused =
        put_cell(&agent, &server.base, "some-token", &cell("2024-07-01", "1", "x", 1)).expect("an answer");
    assert_eq!(
        (refused.status, refused.body["code"].as_str()),
        (503, Some("unavailable")),
        "{}",
        refused.body
    );
    assert!(refused.retry_after.is_some(), "503 without Retry-After");

    // Act: the outage goes on until a line has counted errors left out (more than one 5 s
    // interval), then the database comes back.
    let started = Instant::now();
    wait_until("a line counting the errors left out", Duration::from_secs(20), || {
        server.log_text().contains("not logged")
    });
    let outage = started.elapsed();
    let quiet = server.log_text();
    proxy.restore();
    let back = Instant::now();
    wait_until("/readyz answers 200", Duration::from_secs(10), || {
        readyz(&agent, &server.base).ok() == Some(200)
    });
    let ready_after = back.elapsed();

    // Assert: the outage was logged a few times, each on one line, with a count of what
    // was left out; the database is migrated; and, once loaded, it serves a write.
    // Three sources (the pool, the start-up's attempts, the requests answered 503), each at
    // most one line per 5 s.
    let lines = outage_lines(&quiet);
    let most = 3 * (outage.as_secs() / 5 + 2);
    assert!(lines.len() as u64 <= most, "{} outage lines in {outage:?}: {lines:#?}", lines.len());
    for line in quiet.lines() {
        serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
    assert!(
        server.log_text().contains("the database is reached; migrations applied: "),
        "{}",
        server.log_text()
    );
    let mut direct = diesel::PgConnection::establish(&database.url).expect("the test connects");
    let migrations = diesel::sql_query("SELECT 1 FROM __diesel_schema_migrations").execute(&mut direct);
    assert!(migrations.is_ok_and(|n| n >= 3), "the server migrated the database");
    let seeded = Seeded::on(database);
    let written = put_cell(&agent, &server.base, &seeded.token, &cell("2024-07-01", "1", "after", 1))
        .expect("an answer");
    assert_eq!(written.status, 200, "{}", written.body);
    eprintln!(
        "database away: ready {ready_after:?} after it came back; {} outage lines in {outage:?}",
        lines.len()
    );
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn a_server_whose_database_stays_away_exits_1_after_the_wait_with_one_json_line_saying_why() {
    // Arrange: the database is away for good; a wait of 2 s.
    let (_database, _proxy, url) = away();
    let started = Instant::now();
    let mut server = Server::start_live(
        &url,
        &[("WPDS_DB_WAIT_SECONDS", "2"), ("WPDS_LOG", "info"), ("WPDS_LOG_FORMAT", "json")],
    );

    // Act
    let status = server.wait_for_exit(Duration::from_secs(15));
    let took = started.elapsed();

    // Assert: exit 1 after the wait, one JSON line saying why (the workers' own lines may
    // come after it, from their threads), every line JSON.
    let log = server.log_text();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(10), "exited after {took:?}");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    let why: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|line| {
            line["message"].as_str().is_some_and(|m| m.contains("not ready within 2 s of start-up"))
        })
        .collect();
    assert_eq!(why.len(), 1, "one line says why: {log}");
    assert_eq!(
        (why[0]["level"].as_str(), why[0]["target"].as_str()),
        (Some("ERROR"), Some("wpds")),
        "{}",
        why[0]
    );
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn migrate_and_the_demo_fail_at_once_while_postgresql_is_away() {
    let (_database, _proxy, url) = away();
    for args in [&["migrate"][..], &["serve", "--demo", "--bind", "127.0.0.1:0"][..]] {
        // Act
        let started = Instant::now();
        let output = Command::new(WPDS).args(args).env("DATABASE_URL", &url).output().expect("wpds runs");
        let took = started.elapsed();

        // Assert
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "wpds {args:?}: {stderr}");
        assert!(took < Duration::from_secs(5), "wpds {args:?} took {took:?}");
        assert!(stderr.contains("cannot connect to PostgreSQL"), "wpds {args:?}: {stderr}");
    }
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn while_postgresql_is_away_under_a_balancers_checks_the_log_gets_a_few_lines_not_a_flood() {
    // Arrange: a running server reaching its database through a proxy, ready.
    let seeded = Seeded::postgres();
    let proxy = Proxy::to(through_proxy(&seeded.database.url, 0).0);
    let url = through_proxy(&seeded.database.url, proxy.port).1;
    let server = Server::start_with(&url, &[("WPDS_LOG", "info"), ("WPDS_LOG_FORMAT", "json")]);
    let agent = agent();
    assert_eq!(readyz(&agent, &server.base).ok(), Some(200));

    // Act: the database goes away for 6 s while a balancer checks /readyz every 100 ms and
    // a client writes every 100 ms (each failure discards connections, which the pool
    // then tries to open again in the background).
    proxy.cut();
    let started = Instant::now();
    let mut answers = Vec::new();
    while started.elapsed() < Duration::from_secs(6) {
        answers.push(readyz(&agent, &server.base).ok());
        let written = put_cell(&agent, &server.base, &seeded.token, &cell("2024-08-01", "1", "x", 1));
        answers.push(written.ok().map(|a| a.status));
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = server.log_text();

    // Assert: every answer 503; the outage's lines few (three sources, each at most one
    // per 5 s), each on one line, one of them counting what it left out.
    assert!(answers.iter().all(|a| *a == Some(503)), "{answers:?}");
    let lines = outage_lines(&log);
    assert!(!lines.is_empty() && lines.len() <= 9, "{} outage lines in 6 s: {lines:#?}", lines.len());
    assert!(lines.iter().any(|l| l.contains("not logged")), "a count of what was left out: {lines:#?}");
    eprintln!("database away while running: {} requests, {} outage lines in 6 s", answers.len(), lines.len());
}
