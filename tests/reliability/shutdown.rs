//! Graceful shutdown. On SIGTERM a request already in flight is answered and new
//! connections are refused (the default, `WPDS_DRAIN_SECONDS=0`); with a drain period the
//! server first keeps serving for that long while `/readyz` answers 503, so a load
//! balancer takes it out before its listener closes.
//!
//! The request is held in flight deterministically: the test holds the write lock (SQLite:
//! `BEGIN IMMEDIATE`; PostgreSQL: the cell's row, `SELECT … FOR UPDATE`) so the server's
//! write waits for it, with a database timeout far above the test's duration. The test
//! waits until the server process has accepted the request's connection (its socket is
//! among the process's descriptors) and, on PostgreSQL, until the server's statement is
//! waiting for the row lock; only then does it send SIGTERM.

use crate::harness::{CELLS, Seeded, Server, agent, cell, put_cell, readyz, wait_until};
use diesel::connection::SimpleConnection;
use diesel::{Connection, RunQueryDsl};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const DATE: &str = "2024-02-29";

/// The test's own connection holding the lock the server's write needs.
enum Holder {
    Sqlite(diesel::SqliteConnection),
    Postgres(diesel::PgConnection),
}

impl Holder {
    fn take_lock(database_url: &str) -> Self {
        if database_url.starts_with("postgres") {
            let mut conn = diesel::PgConnection::establish(database_url).expect("the test connects");
            conn.batch_execute(&format!(
                "BEGIN; SELECT 1 FROM time_log_entries WHERE user_id = 5 AND entry_date = '{DATE}' FOR UPDATE"
            ))
            .expect("the row lock");
            Holder::Postgres(conn)
        } else {
            let path = database_url.trim_start_matches("sqlite://");
            let mut conn = diesel::SqliteConnection::establish(path).expect("the test opens the database");
            conn.batch_execute("PRAGMA busy_timeout = 10000; BEGIN IMMEDIATE").expect("the write lock");
            Holder::Sqlite(conn)
        }
    }

    /// Whether a server statement is waiting for a lock (PostgreSQL); SQLite cannot show it.
    fn server_is_waiting(&mut self) -> bool {
        #[derive(diesel::QueryableByName)]
        struct Waiting {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        match self {
            Holder::Sqlite(_) => true,
            Holder::Postgres(conn) => {
                diesel::sql_query(
                    "SELECT count(*) AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
                     WHERE NOT l.granted AND a.datname = current_database()",
                )
                .get_result::<Waiting>(conn)
                .expect("pg_locks")
                .n > 0
            }
        }
    }

    fn release(self) {
        match self {
            Holder::Sqlite(mut conn) => conn.batch_execute("ROLLBACK"),
            Holder::Postgres(mut conn) => conn.batch_execute("ROLLBACK"),
        }
        .expect("the lock is released");
    }
}

/// Whether process `pid` holds the server side of the loopback connection from `client`
/// to `server_port`: the socket's inode (from /proc/net/tcp) is one of its descriptors.
fn accepted_by(pid: u32, server_port: u16, client: SocketAddr) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    let local = format!("0100007F:{server_port:04X}");
    let remote = format!("0100007F:{:04X}", client.port());
    let Some(inode) = table.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.len() > 9 && fields[1] == local && fields[2] == remote).then(|| fields[9].to_owned())
    }) else {
        return false;
    };
    let socket = format!("socket:[{inode}]");
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t.to_string_lossy() == socket))
        })
        .unwrap_or(false)
}

#[test]
fn on_sigterm_an_in_flight_request_is_answered_and_new_connections_are_refused() {
    // Arrange: a written cell, its lock held by the test, a write to it in flight.
    let seeded = Seeded::new();
    let mut server =
        Server::start_with(&seeded.database.url, &[("WPDS_DB_TIMEOUT_MS", "60000"), ("WPDS_LOG", "info")]);
    let first =
        put_cell(&agent(), &server.base, &seeded.token, &cell(DATE, "1", "first", 1)).expect("an answer");
    assert_eq!(first.status, 200, "{}", first.body);
    let mut holder = Holder::take_lock(&seeded.database.url);
    let body = cell(DATE, "2", "in flight", 2).to_string();
    let mut in_flight = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
    in_flight.set_read_timeout(Some(Duration::from_secs(30))).expect("a read timeout");
    write!(
        in_flight,
        "PUT {CELLS} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        seeded.token,
        body.len()
    )
    .expect("the request is sent");
    let client = in_flight.local_addr().expect("a local address");
    wait_until("the server accepted the request", Duration::from_secs(10), || {
        accepted_by(server.pid(), server.port, client)
    });
    wait_until("the server's write waits for the lock", Duration::from_secs(10), || {
        holder.server_is_waiting()
    });

    // Act: SIGTERM while the request waits.
    server.terminate();

    // Assert: new connections are refused, while the in-flight request is still pending.
    wait_until("graceful shutdown began", Duration::from_secs(10), || {
        server.log_text().contains("starting graceful shutdown")
    });
    wait_until("new connections are refused", Duration::from_secs(5), || {
        TcpStream::connect(("127.0.0.1", server.port))
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
    });
    // Act: release the lock. Assert: the in-flight request is answered 200; the process exits 0.
    holder.release();
    let mut response = String::new();
    in_flight.read_to_string(&mut response).expect("the in-flight request is answered");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"note\":\"in flight\""), "{response}");
    let status = server.wait_for_exit(Duration::from_secs(30));
    assert!(status.success(), "exit status {status}; log:\n{}", server.log_text());
}

#[test]
fn with_a_drain_period_the_server_serves_on_while_readiness_says_503_then_stops() {
    // Arrange: a server with a 3 s drain and metrics, ready.
    let seeded = Seeded::new();
    let metrics = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let mut server = Server::start_with(
        &seeded.database.url,
        &[("WPDS_DRAIN_SECONDS", "3"), ("WPDS_LOG", "info"), ("WPDS_METRICS_BIND", &metrics.to_string())],
    );
    assert_eq!(readyz(&agent(), &server.base).ok(), Some(200));
    let draining = || {
        let text =
            agent().get(format!("http://{metrics}/metrics")).call().ok()?.body_mut().read_to_string().ok()?;
        text.lines().find_map(|l| l.strip_prefix("wpds_draining ")).map(str::to_owned)
    };
    assert_eq!(draining().as_deref(), Some("0"), "the gauge before the signal");

    // Act: SIGTERM.
    let signalled = Instant::now();
    server.terminate();

    // Assert: readiness turns 503 at once, while new connections are still accepted and
    // served (a fresh client each time, so nothing rides on a kept-alive connection).
    wait_until("readiness answers 503", Duration::from_secs(2), || {
        readyz(&agent(), &server.base).ok() == Some(503)
    });
    let during = put_cell(&agent(), &server.base, &seeded.token, &cell(DATE, "3", "during the drain", 1))
        .expect("an answer during the drain");
    assert_eq!(during.status, 200, "{}", during.body);
    assert_eq!(draining().as_deref(), Some("1"), "the gauge during the drain");
    assert!(signalled.elapsed() < Duration::from_secs(3), "the write came within the drain");
    // ... then the listener closes, not before the drain is over, and the process exits 0.
    wait_until("new connections are refused", Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", server.port))
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
    });
    let closed_after = signalled.elapsed();
    assert!(closed_after >= Duration::from_millis(2900), "closed after {closed_after:?}, within the drain");
    let status = server.wait_for_exit(Duration::from_secs(30));
    assert!(status.success(), "exit status {status}; log:\n{}", server.log_text());
    let log = server.log_text();
    assert!(log.contains("(contract 1.0.0) on "), "the start-up line: {log}");
    assert!(log.contains("settings not at their default: ") && log.contains("WPDS_DRAIN_SECONDS=3"), "{log}");
    assert!(log.contains("draining for 3 s"), "{log}");
    assert!(log.contains("starting graceful shutdown"), "{log}");
}
