//! Server processes, a seeded database and a small HTTP client for the fault tests.

// Shared with tests/operability, which uses part of it (an expectation would fail there).
#![allow(dead_code, reason = "tests/operability uses part of this module")]

use crate::database::TestDatabase;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server binary Cargo built for this test target.
/// The `wpds` binary Cargo built for the tests.
pub const WPDS: &str = env!("CARGO_BIN_EXE_wpds");
/// The demo fixture: user 5 is a member of workspace 1, which has project 7.
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/demo.json");
/// The demo member whose own time-log cells the tests write.
const MEMBER: &str = "5";
/// The time-log cells of workspace 1.
pub const CELLS: &str = "/v1/workspaces/1/time-log/cells";

/// Runs a `wpds` command on `database_url` and returns its standard output.
fn wpds(database_url: &str, args: &[&str]) -> String {
    let output = Command::new(WPDS)
        .args(args)
        .env("DATABASE_URL", database_url)
        .env("WPDS_LOG", "warn")
        .output()
        .expect("wpds runs");
    assert!(
        output.status.success(),
        "wpds {args:?}: {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// Starts a login of the demo member with `wpds token issue`: (access, refresh) token.
pub fn issue_pair(database_url: &str) -> (String, String) {
    issue_pair_of(database_url, MEMBER)
}

/// An access token of `user` (a login of its own), from `wpds token issue`.
pub fn issue_token(database_url: &str, user: &str) -> String {
    issue_pair_of(database_url, user).0
}

/// Starts a login of `user` with `wpds token issue`: (access, refresh) token.
fn issue_pair_of(database_url: &str, user: &str) -> (String, String) {
    let issued: Value = serde_json::from_str(&wpds(database_url, &["token", "issue", "--user", user]))
        .expect("token issue prints JSON");
    let token = |name: &str| issued[name].as_str().unwrap_or_else(|| panic!("no {name}")).to_owned();
    (token("accessToken"), token("refreshToken"))
}

/// Loads the demo fixture into the database at `database_url` with `wpds seed` (migrating
/// it) and returns an access token of the demo member (user 5), as an operator would.
pub fn seed(database_url: &str) -> String {
    wpds(database_url, &["seed", FIXTURE]);
    issue_pair(database_url).0
}

/// A fresh database loaded with the demo fixture, and an access token of user 5.
pub struct Seeded {
    /// The database; dropped (removed) with this value.
    pub database: TestDatabase,
    /// An access token of the demo member (user 5).
    pub token: String,
}

impl Seeded {
    /// Creates the database, loads the fixture with `wpds seed` and issues a token with
    /// `wpds token issue`, as an operator would.
    pub fn new() -> Self {
        Self::on(TestDatabase::fresh())
    }

    /// As [`Seeded::new`], on PostgreSQL: for a test ignored unless run with
    /// `--include-ignored` ([`TestDatabase::postgres`]).
    pub fn postgres() -> Self {
        Self::on(TestDatabase::postgres())
    }

    /// As [`Seeded::new`], on SQLite whatever the run's engine: for a test of SQLite alone,
    /// or of no database, named `…sqlite_only` (see `tests/common/database.rs`).
    pub fn sqlite() -> Self {
        Self::on(TestDatabase::sqlite())
    }

    /// Loads the demo fixture into `database` (migrating it, as `wpds seed` does) and
    /// issues a token.
    pub fn on(database: TestDatabase) -> Self {
        let token = seed(&database.url);
        Seeded { database, token }
    }

    /// Whether the database is PostgreSQL (else SQLite).
    pub fn is_postgres(&self) -> bool {
        self.database.url.starts_with("postgres")
    }
}

/// A running `wpds serve` process; killed (SIGKILL) and reaped when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The port it listens on.
    pub port: u16,
    log: PathBuf,
}

impl Server {
    /// Starts `wpds serve` on `database_url` with default settings.
    pub fn start(database_url: &str) -> Self {
        Self::start_with(database_url, &[])
    }

    /// Starts `wpds serve` on `database_url` with extra environment settings, on a free
    /// loopback port, and waits until `/readyz` answers 200 (on PostgreSQL the server
    /// listens before it has reached and migrated its database).
    pub fn start_with(database_url: &str, settings: &[(&str, &str)]) -> Self {
        Self::start_as(database_url, settings, &[], None).ready()
    }

    /// [`Server::start_with`], returning once `/healthz` answers, ready or not (for a
    /// database that is away at start-up).
    pub fn start_live(database_url: &str, settings: &[(&str, &str)]) -> Self {
        Self::start_as(database_url, settings, &[], None)
    }

    /// Waits (30 s at most) until `/readyz` answers 200.
    fn ready(self) -> Self {
        let agent = agent();
        wait_until("/readyz answers 200 after start-up", Duration::from_secs(30), || {
            readyz(&agent, &self.base).ok() == Some(200)
        });
        self
    }

    /// [`Server::start_with`], with the process's descriptor limit (`RLIMIT_NOFILE`, soft
    /// and hard, as `ulimit -n` sets it) lowered to `open_files` when given.
    pub fn start_limited(database_url: &str, settings: &[(&str, &str)], open_files: Option<u64>) -> Self {
        Self::start_as(database_url, settings, &[], open_files).ready()
    }

    /// [`Server::start_with`], run through `wrapper` (a command that ends by executing its
    /// arguments in its own process, such as `setpriv … --`; empty: none), so that the
    /// process id is still the server's.
    pub fn start_wrapped(database_url: &str, settings: &[(&str, &str)], wrapper: &[&str]) -> Self {
        Self::start_as(database_url, settings, wrapper, None).ready()
    }

    /// Starts `wpds serve` through `wrapper`, with the descriptor limit `open_files`.
    fn start_as(
        database_url: &str,
        settings: &[(&str, &str)],
        wrapper: &[&str],
        open_files: Option<u64>,
    ) -> Self {
        for _ in 0..5 {
            let port = free_port();
            let log =
                std::env::temp_dir().join(format!("wpds-reliability-{}.log", uuid::Uuid::new_v4().simple()));
            let log_file = std::fs::File::create(&log).expect("a log file");
            let mut command = match wrapper.split_first() {
                Some((program, args)) => {
                    let mut command = Command::new(program);
                    command.args(args).arg(WPDS);
                    command
                }
                None => Command::new(WPDS),
            };
            if let Some(limit) = open_files {
                use std::os::unix::process::CommandExt;
                let limit = libc::rlimit { rlim_cur: limit, rlim_max: limit };
                // SAFETY: setrlimit is async-signal-safe and touches only this struct.
                unsafe {
                    command.pre_exec(move || match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                        0 => Ok(()),
                        _ => Err(std::io::Error::last_os_error()),
                    });
                }
            }
            let child = command
                .arg("serve")
                .env("DATABASE_URL", database_url)
                .env("WPDS_BIND", format!("127.0.0.1:{port}"))
                .env("WPDS_LOG", "warn")
                .env("WPDS_WORKERS", "2")
                .envs(settings.iter().copied())
                .stdin(Stdio::null())
                .stdout(log_file.try_clone().expect("a log handle"))
                .stderr(log_file)
                .spawn()
                .expect("wpds serve starts");
            let mut server = Server { child, base: format!("http://127.0.0.1:{port}"), port, log };
            if server.wait_until_healthy() {
                server.assert_shared_statements(database_url);
                return server;
            }
            if !server.log_text().contains("cannot listen") {
                panic!("wpds serve did not become healthy; its log:\n{}", server.log_text());
            }
            // Another process took the port between our probe and the server's bind: retry.
        }
        panic!("no free port for wpds serve after 5 attempts")
    }

    /// On PostgreSQL (but behind a pooler that keeps no prepared statement), that single
    /// statements and the batched write run on the shared connections: the server only
    /// warns, at start-up, when it cannot have them, so a run on the blocking pool alone
    /// would otherwise go unnoticed.
    fn assert_shared_statements(&self, database_url: &str) {
        let pooled = crate::database::pooler() == wpds_storage::Pooler::Transaction;
        if database_url.starts_with("postgres") && !pooled {
            let log = self.log_text();
            assert!(!log.contains("run on the blocking pool"), "no shared connections: {log}");
        }
    }

    /// Polls `/healthz` until it answers 200 (true) or the process exits (false).
    fn wait_until_healthy(&mut self) -> bool {
        let agent = agent();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.child.try_wait().expect("a child status").is_some() {
                return false;
            }
            if agent.get(format!("{}/healthz", self.base)).call().is_ok_and(|r| r.status() == 200) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("wpds serve was not healthy within 30 s; its log:\n{}", self.log_text())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A line of the process's `/proc/PID/status` in KiB (`VmRSS`, `VmHWM`).
    pub fn memory_kib(&self, field: &str) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("the process status");
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or_else(|| panic!("no {field} in /proc/{}/status", self.pid()))
    }

    /// Everything the server wrote to stdout and stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, and reap the process.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL is delivered");
        self.child.wait().expect("the killed server is reaped");
    }

    /// Sends SIGTERM (graceful shutdown).
    pub fn terminate(&self) {
        let status =
            Command::new("kill").args(["-TERM", &self.pid().to_string()]).status().expect("kill runs");
        assert!(status.success(), "kill -TERM {}", self.pid());
    }

    /// Waits up to `limit` for the process to exit and returns its exit status.
    pub fn wait_for_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("a child status") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {limit:?}; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A port nobody listens on right now.
/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a random port");
    listener.local_addr().expect("a bound address").port()
}

/// An HTTP client that returns every status as a response and gives up after 15 s, so a
/// hanging server fails the test.
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(15)))
        .build()
        .into()
}

/// `GET /readyz`: its status; `Err` when no HTTP answer came.
pub fn readyz(agent: &ureq::Agent, base: &str) -> Result<u16, ureq::Error> {
    Ok(agent.get(format!("{base}/readyz")).call()?.status().as_u16())
}

/// An answer: status, `Retry-After`, body as JSON (`Null` when not JSON).
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// The `Retry-After` header.
    pub retry_after: Option<String>,
    /// The body.
    pub body: Value,
}

/// A write of the demo member's cell of project 7 on `date`.
pub fn cell(date: &str, hours: &str, note: &str, expected_version: i64) -> Value {
    json!({"projectId": "7", "date": date, "hours": hours, "note": note, "expectedVersion": expected_version})
}

/// `PUT` the time-log cell; `Err` when no HTTP answer came (connection refused or reset,
/// or the client timeout).
pub fn put_cell(agent: &ureq::Agent, base: &str, token: &str, body: &Value) -> Result<Answer, ureq::Error> {
    let mut response = agent
        .put(format!("{base}{CELLS}"))
        .header("authorization", format!("Bearer {token}"))
        .send_json(body)?;
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = response.body_mut().read_json().unwrap_or(Value::Null);
    Ok(Answer { status, retry_after, body })
}

/// `PUT`s the demo member's cell of project 7 on `date` (hours 1, `note`), and returns the
/// answer and how long it took; fails the test when no HTTP answer came.
pub fn timed_put_cell(
    base: &str,
    token: &str,
    date: &str,
    note: &str,
    expected_version: i64,
) -> (Answer, Duration) {
    let started = Instant::now();
    let answer = put_cell(&agent(), base, token, &cell(date, "1", note, expected_version))
        .unwrap_or_else(|e| panic!("no HTTP answer to a write ({note}): {e}"));
    (answer, started.elapsed())
}

/// A cell as stored: version and entry (`Null` for a never-written cell).
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The current version (1 for a never-written cell).
    pub version: i64,
    /// `current.entry` of the 409, or `Null`.
    pub entry: Value,
}

/// Reads a cell through the API without changing it: a write expecting a version no cell
/// ever reaches answers 409 `version_conflict` with the current version and entry.
pub fn read_cell(agent: &ureq::Agent, base: &str, token: &str, date: &str) -> Stored {
    let answer = put_cell(agent, base, token, &cell(date, "0", "probe", 1_000_000_000)).expect("an answer");
    assert_eq!(answer.status, 409, "a stale write is refused: {}", answer.body);
    assert_eq!(answer.body["code"], "version_conflict");
    Stored {
        version: answer.body["currentVersion"].as_i64().expect("currentVersion"),
        entry: answer.body["current"]["entry"].clone(),
    }
}

/// Held by the tests that load the machine to its limit (a flood of bodies, many clients
/// racing for seconds), so that no two of them run at once, in this process or in another
/// pass of the suite beside it (CI runs the passes on PostgreSQL and behind both PgBouncers
/// together): on two cores either would starve the other's probes and clients of time, and
/// fail it for the machine's sake, not the server's. (A probe of the flood test answered 408
/// once while the 64 clients of `batches.rs` ran beside it; 32 clients racing on one cell
/// met a 1.5 s lock wait while the pooled pass raced its own.)
pub struct MachineToItself {
    /// Locked with `flock`, which the kernel lets go when the file is closed: when this is
    /// dropped, or the process dies. Each call opens the file anew, and `flock` sets two
    /// opens of one file against each other whether they are in one process or two, so the
    /// lock serves the test threads of this process as well.
    _lock: std::fs::File,
}

/// Waits until no other test that loads the machine runs, here or in another process of
/// this user's, and holds it so until the guard is dropped.
pub fn machine_to_itself() -> MachineToItself {
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join("wpds-tests-machine-to-itself.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    loop {
        // SAFETY: flock reads the descriptor, which `lock` keeps open.
        match unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } {
            0 => break,
            _ if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => continue,
            _ => panic!("flock {}: {}", path.display(), std::io::Error::last_os_error()),
        }
    }
    MachineToItself { _lock: lock }
}

/// Runs `clients` client threads at once, client `id` talking to `servers[id % servers.len()]`
/// with `token` and starting when all of them are ready (the barrier it is given): what each
/// returned, in client order.
pub fn race<T: Send>(
    clients: usize,
    servers: &[Server],
    token: &str,
    client: impl Fn(usize, &str, &str, &std::sync::Barrier) -> Vec<T> + Sync,
) -> Vec<T> {
    let start = std::sync::Barrier::new(clients);
    let (start, client) = (&start, &client);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..clients)
            .map(|id| {
                let base = &servers[id % servers.len()].base;
                scope.spawn(move || client(id, base, token, start))
            })
            .collect();
        threads.into_iter().flat_map(|c| c.join().expect("a client thread")).collect()
    })
}

/// Polls `condition` every 10 ms until it holds; fails the test after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !condition() {
        assert!(Instant::now() < deadline, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
