//! Test support: `spawn_app()` and an HTTP client whose every response is checked against
//! the contract.
//!
//! Each test gets the application `wpds serve` runs, built by the same function
//! ([`Application::build`]) with the server's defaults but the settings a test changes
//! ([`spawn_app_with`]) and a longer database wait ([`TEST_DB_TIMEOUT`]), on its own
//! database holding the demo fixture: a fresh SQLite file by default, or a fresh PostgreSQL
//! database (dropped afterwards) when `TEST_DATABASE_URL` names a PostgreSQL server.

use crate::database::TestDatabase;
use diesel::Connection;
use diesel::connection::SimpleConnection;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use wpds::app::Application;
use wpds::config::ServeConfig;
use wpds_contract::responses::ResponseChecker;
use wpds_storage::repos::auth::{IssuedPair, TokenLifetimes};
use wpds_storage::{Database, StoreError};

/// The demo fixture every test database starts from.
pub const FIXTURE: &str = include_str!("../../fixtures/demo.json");
/// A member of workspace 1 (the demo's Dana Reyes).
pub const MEMBER: i64 = 5;
/// A platform administrator, also a member of workspace 1.
pub const ADMIN: i64 = 9;
/// A member of workspace 2 only.
pub const OUTSIDER: i64 = 7;

/// How long a test server's requests may wait for the database: 5 s, where the server's
/// default is 1.5 s, because the test binaries share two cores and a loaded machine is not
/// the defect a test looks for. A test of that wait sets its own
/// (`config.database.db_timeout_ms`). Every other setting is the server's default.
pub const TEST_DB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A running server, its database and a client for it.
pub struct TestApp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The database URL the server uses.
    pub database_url: String,
    /// The database the server uses.
    pub db: Arc<Database>,
    /// The token lifetimes the server issues with.
    pub lifetimes: TokenLifetimes,
    /// The administrator's access token, sent by default.
    pub token: String,
    agent: ureq::Agent,
    handle: actix_web::dev::ServerHandle,
    /// Dropped last: removes the database once the server has been told to stop.
    _database: TestDatabase,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

/// Starts the application as `wpds serve` does ([`Application::build`]) on a random port, in
/// its own thread and actix system, on a fresh database holding the demo fixture, with the
/// server's default settings (but [`TEST_DB_TIMEOUT`]).
pub fn spawn_app() -> TestApp {
    spawn_app_with(|_| {})
}

/// [`spawn_app`] with the settings `configure` changes (`|config| config.compression =
/// false`); the others keep the server's defaults.
pub fn spawn_app_with(configure: impl FnOnce(&mut ServeConfig)) -> TestApp {
    let database = TestDatabase::demo();
    let mut config =
        ServeConfig { bind: "127.0.0.1:0".parse().expect("a loopback address"), ..ServeConfig::default() };
    config.database.db_timeout_ms = millis(TEST_DB_TIMEOUT);
    configure(&mut config);
    config.database.database_url = database.url.clone();
    config.database.pg_pooler = crate::database::pooler();
    let db_timeout = std::time::Duration::from_millis(config.database.db_timeout_ms);
    if db_timeout < crate::database::ROLE_STATEMENT_TIMEOUT {
        database.bound_statements(db_timeout);
    }
    let (ready, started) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let app = Application::build(&config).await.expect("the application starts");
            let state = app.state();
            let handles = app.handles();
            ready
                .send((app.address(), handles[0].clone(), Arc::clone(&state.db), state.lifetimes))
                .expect("the test is waiting");
            app.run_until_stopped().await
        })
    });
    let (address, handle, db, lifetimes) = started.recv().expect("the server thread started");
    // On PostgreSQL (but behind a pooler that keeps no prepared statement) single statements
    // and the batched write run on the shared connections: the server only warns when it
    // cannot have them, so a run on the blocking pool alone would otherwise go unnoticed.
    if db.engine() == wpds_storage::Engine::Postgres
        && crate::database::pooler() != wpds_storage::Pooler::Transaction
    {
        assert!(db.shares_statements(), "the server runs single statements on the blocking pool alone");
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .allow_non_standard_methods(true)
        .max_redirects(0)
        .build()
        .into();
    let mut app = TestApp {
        base: format!("http://{address}"),
        database_url: database.url.clone(),
        db,
        lifetimes,
        token: String::new(),
        agent,
        handle,
        _database: database,
    };
    app.wait_until_ready();
    app.token = app.tokens_for(ADMIN).access_token;
    app
}

/// `duration` in whole milliseconds, as the settings take it.
fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn checker() -> &'static ResponseChecker {
    static CHECKER: OnceLock<ResponseChecker> = OnceLock::new();
    CHECKER.get_or_init(|| ResponseChecker::load().expect("the document's response schemas compile"))
}

/// A response, already checked against the contract.
#[derive(Debug)]
pub struct TestResponse {
    /// HTTP status.
    pub status: u16,
    /// Response headers, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The body, decoded when it came with a `Content-Encoding` (as a client does).
    pub body: Vec<u8>,
    /// The length of the body as it was sent, before decoding.
    pub wire_length: usize,
}

impl TestResponse {
    /// A response whose body `wire` is decoded as its `Content-Encoding` says (gzip or
    /// brotli), as every HTTP client does before reading it.
    fn decoded(status: u16, headers: Vec<(String, String)>, wire: Vec<u8>) -> Self {
        use std::io::Read;
        let encoding = headers.iter().find(|(n, _)| n == "content-encoding").map(|(_, v)| v.clone());
        let wire_length = wire.len();
        let body = match encoding.as_deref() {
            None | Some("identity") => wire,
            Some("gzip") => {
                let mut body = Vec::new();
                flate2::read::GzDecoder::new(&wire[..]).read_to_end(&mut body).expect("a gzip body");
                body
            }
            Some("br") => {
                let mut body = Vec::new();
                brotli::Decompressor::new(&wire[..], 4096).read_to_end(&mut body).expect("a brotli body");
                body
            }
            Some(other) => panic!("an encoding this client did not ask for: {other}"),
        };
        TestResponse { status, headers, body, wire_length }
    }

    /// The value of header `name` (lower-case), if present.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `errors[]` of a problem body as `(in, pointer, keyword)`.
    pub fn problem_errors(&self) -> Vec<(String, String, String)> {
        self.json()["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .map(|e| {
                        let s = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
                        (s("in"), s("pointer"), s("keyword"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A request being built.
pub struct RequestBuilder<'a> {
    app: &'a TestApp,
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<Vec<u8>>,
    bearer: Option<String>,
}

impl<'a> RequestBuilder<'a> {
    /// Sends `token` as the bearer token instead of the administrator's.
    pub fn bearer(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_owned());
        self
    }

    /// Sends no `Authorization` header.
    pub fn anonymous(mut self) -> Self {
        self.bearer = None;
        self
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends `body` as `application/json`.
    pub fn json(self, body: &Value) -> Self {
        self.header("content-type", "application/json").raw(serde_json::to_vec(body).expect("JSON"))
    }

    /// Sends `body` as it is (set the content type yourself).
    pub fn raw(mut self, body: Vec<u8>) -> Self {
        self.body = Some(body);
        self
    }

    /// Sends the request and checks the response against the contract.
    pub fn send(self) -> TestResponse {
        let mut request = ureq::http::Request::builder()
            .method(self.method.as_str())
            .uri(format!("{}{}", self.app.base, self.path));
        if let Some(token) = &self.bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let request = request.body(self.body.unwrap_or_default()).expect("a well-formed request");
        let mut response = self.app.agent.run(request).expect("the server answers");
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        let wire =
            response.body_mut().with_config().limit(16 * 1024 * 1024).read_to_vec().expect("a readable body");
        let response = TestResponse::decoded(status, headers, wire);
        check_contract(&self.method, &self.path, &response);
        response
    }
}

/// Checks a response of the contract's routes against the document, and the problem
/// conventions (`traceId` is the `X-Request-Id`, `instance` the path, `type` the code's
/// page, `status` the HTTP status) for every problem.
fn check_contract(method: &str, path: &str, response: &TestResponse) {
    let request_id =
        response.header("x-request-id").unwrap_or_else(|| panic!("{method} {path}: no X-Request-Id"));
    let content_type = response.header("content-type");
    let is_problem = content_type.is_some_and(|c| c.starts_with("application/problem+json"));
    if is_problem {
        let problem = response.json();
        let path_only = path.split('?').next().unwrap_or_default();
        assert_eq!(problem["traceId"], request_id, "{method} {path}: traceId is the X-Request-Id");
        assert_eq!(problem["instance"], path_only, "{method} {path}: instance is the path");
        assert_eq!(problem["status"], response.status, "{method} {path}: status matches");
        assert_eq!(
            problem["type"].as_str(),
            Some(format!("/problems/{}", problem["code"].as_str().unwrap_or_default()).as_str()),
            "{method} {path}: type is the code's page",
        );
    }
    record_status(method, path, response.status);
    if checker().operation(method, path).is_none() && !is_problem {
        return; // operational endpoints (probes, docs) are outside the contract
    }
    if let Err(e) = checker().check(method, path, response.status, content_type, &response.body) {
        panic!("the response breaks the contract: {e}\nbody: {}", response.text());
    }
    if let Err(e) = checker().check_headers(method, path, response.status, |name| response.header(name)) {
        panic!("the response's headers break the contract: {e}\nheaders: {:?}", response.headers);
    }
}

/// With `WPDS_STATUS_LOG=FILE`, appends `operationId status` for every response of a
/// contract operation, so `scripts/check-status-coverage` can show that every documented
/// status of every operation is produced by some test.
fn record_status(method: &str, path: &str, status: u16) {
    use std::io::Write;
    let (Ok(log), Some(op)) = (std::env::var("WPDS_STATUS_LOG"), checker().operation(method, path)) else {
        return;
    };
    let line = format!("{} {status}\n", op.id);
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
        let _ = file.write_all(line.as_bytes());
    }
}

impl TestApp {
    /// Waits (at most 30 s) for `/readyz` to answer 200, as a load balancer does before it
    /// sends an instance traffic: on PostgreSQL the server serves at once and reaches the
    /// database in the background (`WPDS_DB_WAIT_SECONDS`), answering 503 until then.
    fn wait_until_ready(&self) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let ready = || {
            self.agent.get(format!("{}/readyz", self.base)).call().is_ok_and(|answer| answer.status() == 200)
        };
        while !ready() {
            assert!(std::time::Instant::now() < deadline, "the server was not ready within 30 s");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The server's database on the PostgreSQL server itself, never through a pooler (its
    /// URL, for SQLite): for tools such as `pg_dump` that need a session of their own.
    pub fn direct_database_url(&self) -> String {
        self._database.direct_url()
    }

    /// Starts a request.
    pub fn request(&self, method: &str, path: &str) -> RequestBuilder<'_> {
        RequestBuilder {
            app: self,
            method: method.to_owned(),
            path: path.to_owned(),
            headers: Vec::new(),
            body: None,
            bearer: Some(self.token.clone()),
        }
    }

    /// Starts a login for `user_id` with the server's token lifetimes, as `wpds token
    /// issue` does.
    pub fn tokens_for(&self, user_id: i64) -> IssuedPair {
        self.tokens_with(user_id, self.lifetimes)
    }

    /// Starts a login for `user_id` with the given lifetimes.
    pub fn tokens_with(&self, user_id: i64, lifetimes: TokenLifetimes) -> IssuedPair {
        self.settled("issuing a login", |db| {
            db.write_now(wpds_storage::repos::auth::issue(user_id, lifetimes))
        })
    }

    /// Runs `work`, the test's own look at its database beside the server (arranging a
    /// login, reading what a request left), again while the database refuses it as
    /// unavailable, at most five times. On a loaded machine one statement may outlive the
    /// database's `statement_timeout` (1 s, [`crate::database::ROLE_STATEMENT_TIMEOUT`],
    /// behind a pooler that keeps prepared statements), and a test's arrangement is not
    /// what it tests; the server's own answers are never retried. Any other failure, or a
    /// fifth refusal, fails the test naming `what`.
    pub fn settled<T>(&self, what: &str, work: impl Fn(&Database) -> Result<T, StoreError>) -> T {
        let mut attempt = 1;
        loop {
            match work(&self.db) {
                Ok(value) => return value,
                Err(StoreError::Unavailable(why)) if attempt < 5 => {
                    eprintln!("{what}: the database was unavailable ({why}); again");
                    std::thread::sleep(std::time::Duration::from_millis(100 * attempt));
                    attempt += 1;
                }
                Err(error) => panic!("{what}: {error:?}"),
            }
        }
    }

    /// Sends `head` (a request line and headers, without the blank line that ends them)
    /// and then `body` over a plain TCP connection, and reads the answer until the server
    /// closes the connection (at most 30 s). The answer is checked against the contract
    /// like every other; the flag says whether the server closed the connection after it.
    pub fn send_raw(&self, head: &str, body: &[u8]) -> (TestResponse, bool) {
        self.send_raw_within(head, body, std::time::Duration::from_secs(30)).expect("a complete answer head")
    }

    /// [`TestApp::send_raw`], waiting for the answer at most `wait`: `None` when no complete
    /// answer head came by then (the request is still being served).
    pub fn send_raw_within(
        &self,
        head: &str,
        body: &[u8],
        wait: std::time::Duration,
    ) -> Option<(TestResponse, bool)> {
        use std::io::{Read, Write};
        let address = self.base.trim_start_matches("http://");
        let mut stream = std::net::TcpStream::connect(address).expect("connect to the server");
        stream.set_read_timeout(Some(wait)).expect("a read timeout");
        stream.write_all(format!("{head}\r\n\r\n").as_bytes()).expect("the head is sent");
        stream.write_all(body).expect("the body is sent");
        let mut raw = Vec::new();
        let closed = match stream.read_to_end(&mut raw) {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
            Err(_) => false,
        };
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head_text = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head_text.split("\r\n");
        let status =
            lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("a status");
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let response = TestResponse::decoded(status, headers, raw[split + 4..].to_vec());
        let method = head.split(' ').next().unwrap_or_default();
        let path = head.split(' ').nth(1).unwrap_or_default();
        check_contract(method, path, &response);
        Some((response, closed))
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> TestResponse {
        self.request("GET", path).send()
    }

    /// `method path` with a JSON body.
    pub fn send_json(&self, method: &str, path: &str, body: &Value) -> TestResponse {
        self.request(method, path).json(body).send()
    }
}

/// A connection of the test's own to the server's database, to break or lock it under the
/// running server (a 500 or a 503 on demand).
pub enum Raw {
    /// To the server's SQLite file.
    Sqlite(diesel::SqliteConnection),
    /// To the server's PostgreSQL database.
    Postgres(diesel::PgConnection),
}

impl Raw {
    /// Runs `sql` (one or more statements).
    pub fn batch_execute(&mut self, sql: &str) -> diesel::QueryResult<()> {
        match self {
            Raw::Sqlite(c) => c.batch_execute(sql),
            Raw::Postgres(c) => c.batch_execute(sql),
        }
    }

    /// The names of the database's own tables (the engine's catalogue left out).
    pub fn tables(&mut self) -> Vec<String> {
        use diesel::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Table {
            #[diesel(sql_type = diesel::sql_types::Text)]
            name: String,
        }
        let tables: Vec<Table> = match self {
            Raw::Sqlite(c) => diesel::sql_query(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'",
            )
            .load(c),
            Raw::Postgres(c) => diesel::sql_query(
                "SELECT tablename::text AS name FROM pg_tables WHERE schemaname = current_schema()",
            )
            .load(c),
        }
        .expect("the tables are listed");
        tables.into_iter().map(|t| t.name).collect()
    }
}

/// Opens a [`Raw`] connection to `app`'s database.
pub fn raw_connection(app: &TestApp) -> Raw {
    match app.database_url.strip_prefix("sqlite://") {
        Some(path) => {
            let mut conn = diesel::SqliteConnection::establish(path).unwrap();
            conn.batch_execute("PRAGMA busy_timeout = 5000").unwrap();
            Raw::Sqlite(conn)
        }
        None => Raw::Postgres(diesel::PgConnection::establish(&app.database_url).unwrap()),
    }
}

/// Holds a lock that keeps the operation's work from proceeding: SQLite's writer lock, or
/// an exclusive lock on `table` (or on each of several, separated by commas) on PostgreSQL.
pub fn lock(conn: &mut Raw, table: &str) {
    match conn {
        Raw::Sqlite(c) => c.batch_execute("BEGIN IMMEDIATE").unwrap(),
        Raw::Postgres(c) => {
            c.batch_execute(&format!("BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")).unwrap()
        }
    }
}

/// Holds a lock that keeps any work on the database from proceeding, whatever it touches:
/// SQLite's writer lock (reads still proceed, from the last commit), or an exclusive lock on
/// every table on PostgreSQL (reads wait too).
pub fn lock_every_table(conn: &mut Raw) {
    let tables = conn.tables().join(", ");
    lock(conn, &tables);
}
