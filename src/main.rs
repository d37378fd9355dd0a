//! `wpds`: the Workspace Project-Data Service command line.
//!
//! `serve` runs the HTTP server; `migrate`, `seed` and `token issue` are the operator's
//! tools; `healthcheck` asks a running server whether it is ready (a container's
//! `HEALTHCHECK`, with no shell or curl in the image). Every setting comes from a flag or its environment variable (`--help` lists
//! both and the defaults).

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::Arc;
use wpds::auth_cache::AuthCache;
use wpds::config::{DatabaseArgs, ServeConfig, TokenArgs};
use wpds::rate_limit::RateLimiter;
use wpds::state::AppState;
use wpds_storage::{Database, auth, seed};

/// mimalloc instead of the system allocator: every request allocates (JSON values, the
/// validated input, the reply) on one thread and frees on another often enough that glibc's
/// malloc and its arena locks were ~13 % of the server's samples under write load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The bundled demo workspace loaded by `serve --demo`.
const DEMO_FIXTURE: &str = include_str!("../fixtures/demo.json");
/// Demo users whose tokens `serve --demo` prints: a workspace member and an administrator.
const DEMO_MEMBER: i64 = 5;
const DEMO_ADMIN: i64 = 9;

/// Workspace Project-Data Service.
#[derive(Debug, Parser)]
#[command(name = "wpds", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server (migrates the database first; Swagger UI at /docs/).
    Serve(ServeConfig),
    /// Apply pending database migrations.
    Migrate {
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Load records from a fixture file (format: openapi/fixture.schema.json), in one
    /// transaction; loading the same file twice changes nothing.
    Seed {
        /// The fixture file.
        file: std::path::PathBuf,
        #[command(flatten)]
        database: DatabaseArgs,
    },
    /// Token operations.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Exit 0 if the server at WPDS_BIND answers `/readyz` (or `/healthz` with --live)
    /// with 200 within 3 s, else 1: a container's HEALTHCHECK.
    Healthcheck(HealthcheckArgs),
}

#[derive(Debug, clap::Args)]
struct HealthcheckArgs {
    /// The server's address: its WPDS_BIND (an unspecified address such as 0.0.0.0 is
    /// asked on loopback).
    #[arg(long, env = "WPDS_BIND", default_value = "127.0.0.1:8080")]
    bind: std::net::SocketAddr,
    /// Ask `/healthz` (the process serves HTTP) instead of `/readyz` (it can answer
    /// operations).
    #[arg(long)]
    live: bool,
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Start a login for a user and print its access and refresh tokens as JSON.
    Issue {
        /// The user's id.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        database: DatabaseArgs,
        #[command(flatten)]
        tokens: TokenArgs,
    },
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let (log, format) = match &cli.command {
        Command::Serve(config) => (config.log.clone(), config.log_format),
        _ => (std::env::var("WPDS_LOG").unwrap_or_else(|_| "warn".to_owned()), Default::default()),
    };
    wpds::logging::init(&log, format);
    let json = format == wpds::logging::LogFormat::Json;
    let outcome = match cli.command {
        Command::Serve(config) => {
            let command = Cli::command();
            let serve_command = command.find_subcommand("serve").expect("serve is a subcommand");
            let serve_matches = matches.subcommand_matches("serve").expect("serve was given");
            let settings = wpds::config::non_default_settings(serve_command, serve_matches);
            serve(config, &settings)
        }
        Command::Healthcheck(args) => return healthcheck(&args),
        Command::Migrate { database } => migrate(&database),
        Command::Seed { file, database } => load_fixture(&file, &database),
        Command::Token { command: TokenCommand::Issue { user, database, tokens } } => {
            issue_token(&user, &database, &tokens)
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            if json {
                eprintln!("{}", wpds::logging::line_of(log::Level::Error, "wpds", &message, &[]));
            } else {
                eprintln!("wpds: {message}");
            }
            ExitCode::FAILURE
        }
    }
}

fn open(database: &DatabaseArgs) -> Result<Database, String> {
    Database::open(&database.db_config()).map_err(|e| e.to_string())
}

/// The settings of a one-shot command (`migrate`, `seed`, `token issue`): a pool of one.
/// A larger pool keeps opening connections on r2d2's background threads; a command that
/// exits meanwhile tears libpq down under them, which crashed `token issue` on PostgreSQL
/// with SIGSEGV (about one run in ten) after it had printed the tokens.
fn one_shot(database: &DatabaseArgs) -> DatabaseArgs {
    DatabaseArgs { db_pool_size: 1, ..database.clone() }
}

fn migrate(database: &DatabaseArgs) -> Result<(), String> {
    let db = Database::connect(&one_shot(database).db_config()).map_err(|e| e.to_string())?;
    let applied = db.migrate().map_err(|e| e.to_string())?;
    if applied.is_empty() {
        println!("the database is up to date");
    } else {
        println!("applied {} migration(s): {}", applied.len(), applied.join(", "));
    }
    Ok(())
}

fn load_fixture(file: &std::path::Path, database: &DatabaseArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let db = open(&one_shot(database))?;
    let conn = &mut db.conn().map_err(|e| e.to_string())?;
    let report = seed::load(conn, &text).map_err(|e| format!("{}: {e}", file.display()))?;
    println!("{report}");
    Ok(())
}

fn issue_token(user: &str, database: &DatabaseArgs, tokens: &TokenArgs) -> Result<(), String> {
    let user_id = wpds_storage::ids::parse(user).ok_or_else(|| format!("no user {user}"))?;
    let db = open(&one_shot(database))?;
    let conn = &mut db.conn().map_err(|e| e.to_string())?;
    let pair = match auth::issue(conn, user_id, tokens.lifetimes()) {
        Ok(pair) => pair,
        Err(wpds_storage::StoreError::NotFound(what)) => {
            let empty = wpds_storage::workspaces::count(conn).map_err(|e| e.to_string())? == 0;
            return Err(if empty {
                format!(
                    "not found: {what}: the database holds no records yet; load them with `wpds seed FILE.json` \
                     (format: openapi/fixture.schema.json), or run `wpds serve --demo` to load the demo \
                     workspace (users 5, 6, 7 and 9)"
                )
            } else {
                format!("not found: {what}")
            });
        }
        Err(e) => return Err(e.to_string()),
    };
    println!("{}", serde_json::to_string_pretty(&pair).map_err(|e| e.to_string())?);
    Ok(())
}

/// Access-token lifetime of `serve --demo`, seconds: a person exploring is not cut off
/// after the production default of 15 minutes.
const DEMO_ACCESS_TTL: u64 = 24 * 60 * 60;

fn serve(mut config: ServeConfig, settings: &[String]) -> Result<(), String> {
    if config.demo {
        config.tokens.access_token_ttl = DEMO_ACCESS_TTL;
    }
    let db_config = config.database.db_config();
    let wait = std::time::Duration::from_secs(config.db_wait_seconds);
    let waits = db_config.engine() == wpds_storage::Engine::Postgres && !config.demo && !wait.is_zero();
    let mut db =
        if waits { Database::build(&db_config).map_err(|e| e.to_string())? } else { open(&config.database)? };
    // On PostgreSQL single statements pipeline on shared connections, the pool's size
    // spread over the workers (each worker drives its own).
    let workers = wpds::server::worker_count(&config);
    let pool_size = config.database.db_config().pool_size as usize;
    if let Err(why) = db.share_statements(pool_size.div_ceil(workers)) {
        log::warn!("single statements run on the blocking pool: {why}");
    }
    log::info!(
        "wpds {} (contract {}) on {}; settings not at their default: {}",
        env!("CARGO_PKG_VERSION"),
        wpds_contract::document::parsed()["info"]["version"].as_str().unwrap_or("?"),
        match db.engine() {
            wpds_storage::Engine::Sqlite => "sqlite",
            wpds_storage::Engine::Postgres => "postgres",
        },
        if settings.is_empty() { "none".to_owned() } else { settings.join(" ") }
    );
    let listener =
        TcpListener::bind(config.bind).map_err(|e| format!("cannot listen on {}: {e}", config.bind))?;
    let bound = listener.local_addr().map_err(|e| format!("cannot listen on {}: {e}", config.bind))?;
    let address = browser_address(bound);
    if config.demo {
        let banner = Banner { json: config.log_format == wpds::logging::LogFormat::Json };
        demo(&db, &config.tokens, &address, config.reset, &banner)?;
    }
    let shared_counters = db.engine() == wpds_storage::Engine::Postgres;
    let mut state = AppState {
        db: Arc::new(db),
        lifetimes: config.tokens.lifetimes(),
        limiter: Arc::new(RateLimiter::new(
            config.rate_limit_per_minute,
            shared_counters,
            config.trusted_proxies.clone(),
        )),
        auth_cache: Arc::new(AuthCache::new(config.auth_cache_ttl())),
        draining: Default::default(),
        metrics: None,
    };
    let metrics_listener = match config.metrics_bind {
        Some(bind) => {
            let listener =
                TcpListener::bind(bind).map_err(|e| format!("cannot listen for metrics on {bind}: {e}"))?;
            let operations: Vec<(&'static str, &'static [u16])> =
                wpds::operations::OPERATIONS.iter().map(|op| (op.id, op.statuses)).collect();
            let metrics = Arc::new(wpds::metrics::Metrics::new(Arc::clone(&state.db), &operations));
            let waits = Arc::clone(&metrics);
            state.db.observe_pool_waits(Box::new(move |wait| waits.pool_wait.observe(wait.as_secs_f64())));
            state.metrics = Some(Arc::clone(&metrics));
            Some((metrics, listener))
        }
        None => None,
    };
    let engine = match state.db.engine() {
        wpds_storage::Engine::Sqlite => "sqlite",
        wpds_storage::Engine::Postgres => "postgres",
    };
    if wpds::telemetry::init(config.otlp_endpoint.as_deref(), engine)? {
        log::info!("tracing: exporting spans with OTLP/HTTP");
    }
    observe_writer(&state);
    let draining = Arc::clone(&state.draining);
    let drain = std::time::Duration::from_secs(config.drain_seconds);
    let reaching = if waits { Some(reach_in_background(Arc::clone(&state.db), wait)?) } else { None };
    let failed = |e: std::io::Error| format!("server failed: {e}");
    let outcome = actix_web::rt::System::new().block_on(async move {
        let server = wpds::server::start(&config, state, listener).map_err(failed)?;
        let api = server.handle();
        let mut handles = vec![server.handle()];
        if let Some((metrics, listener)) = metrics_listener {
            let at = listener.local_addr().map_err(failed)?;
            let metrics_server = wpds::server::start_metrics(metrics, listener).map_err(failed)?;
            handles.push(metrics_server.handle());
            actix_web::rt::spawn(metrics_server);
            log::info!("metrics at http://{at}/metrics");
        }
        actix_web::rt::spawn(wpds::server::stop_on_signal(handles, draining, drain));
        log::info!("listening on {bound} (Swagger UI at http://{address}/docs/)");
        let Some(reaching) = reaching else { return server.await.map_err(failed) };
        let (why, server) = match futures_util::future::select(server, reaching).await {
            futures_util::future::Either::Left((served, _)) => return served.map_err(failed),
            futures_util::future::Either::Right((Ok(Ok(())), server)) => return server.await.map_err(failed),
            futures_util::future::Either::Right((Ok(Err(why)), server)) => (why, server),
            futures_util::future::Either::Right((Err(_), server)) => {
                ("the thread that reaches the database ended without reaching it".to_owned(), server)
            }
        };
        // The server's future runs its stop: dropped, the stop would never complete.
        let stopped = api.stop(false);
        let _ = server.await;
        stopped.await;
        Err(why)
    });
    wpds::telemetry::shutdown();
    outcome?;
    log::info!("stopped");
    Ok(())
}

/// Reaches PostgreSQL on a thread of its own, trying again for at most `wait`
/// ([`Database::reach_within`]) while the server answers `/readyz` 503. The receiver gets
/// `Ok` once the database was reached and migrated, else why the server must stop; a
/// thread that ends without a word (it panicked) stops the server too.
fn reach_in_background(
    db: Arc<Database>,
    wait: std::time::Duration,
) -> Result<tokio::sync::oneshot::Receiver<Result<(), String>>, String> {
    let (reached, receiver) = tokio::sync::oneshot::channel();
    let reaching = move || {
        let outcome = match db.reach_within(wait) {
            Ok(applied) => {
                log::info!("the database is reached; migrations applied: {}", applied.len());
                Ok(())
            }
            Err(e) => Err(format!(
                "the database was not reached within {} s of start-up (WPDS_DB_WAIT_SECONDS): {e}",
                wait.as_secs()
            )),
        };
        let _ = reached.send(outcome);
    };
    std::thread::Builder::new()
        .name("wpds-db-start".to_owned())
        .spawn(reaching)
        .map_err(|e| format!("cannot start the thread that reaches the database: {e}"))?;
    Ok(receiver)
}

/// `wpds healthcheck`: one `GET` over a plain TCP connection (the image has no curl),
/// within 3 s; exit 0 on a 200.
fn healthcheck(args: &HealthcheckArgs) -> ExitCode {
    use std::io::{Read, Write};
    let mut address = args.bind;
    if address.ip().is_unspecified() {
        address.set_ip(match address {
            std::net::SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let path = if args.live { "/healthz" } else { "/readyz" };
    let limit = std::time::Duration::from_secs(3);
    let answer = (|| -> std::io::Result<String> {
        let mut stream = std::net::TcpStream::connect_timeout(&address, limit)?;
        stream.set_read_timeout(Some(limit))?;
        stream.set_write_timeout(Some(limit))?;
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head)?;
        Ok(String::from_utf8_lossy(&head).into_owned())
    })();
    match answer {
        Ok(head) if head.starts_with("HTTP/1.1 200") => ExitCode::SUCCESS,
        Ok(head) => {
            eprintln!("wpds healthcheck: {path} at {address} answered {}", head.get(9..12).unwrap_or("?"));
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("wpds healthcheck: {path} at {address}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Has the SQLite writer report its committed batches to the metrics (their sizes) and to
/// tracing (a span linking to the requests each batch carried), where those are on.
fn observe_writer(state: &AppState) {
    let Some(writer) = state.db.writer() else { return };
    let metrics = state.metrics.clone();
    if metrics.is_none() && !wpds::telemetry::enabled() {
        return;
    }
    writer.observe_batches(Box::new(move |batch| {
        if let Some(metrics) = &metrics {
            metrics.batch_committed(batch.writes);
        }
        wpds::telemetry::record_batch(batch);
    }));
}

/// How a person reaches `bound` from a browser on this machine: a loopback address is shown
/// as `localhost`, the origin of the document's default server, so Swagger UI's "Try it
/// out" stays same-origin.
fn browser_address(bound: std::net::SocketAddr) -> String {
    if bound.ip().is_loopback() { format!("localhost:{}", bound.port()) } else { bound.to_string() }
}

/// Where the demo's banner goes: printed for a person, or, with JSON logs, as JSON lines in
/// the log's format (target `wpds::demo`, the tokens as fields), so that a process with JSON
/// logs writes nothing but JSON. Either way on standard output and whatever the log filter:
/// the demo exists to hand the tokens out.
struct Banner {
    json: bool,
}

impl Banner {
    /// Writes `text` for a person, or `message` with `fields` as a JSON line.
    /// A closed standard output (a reader that went away) is no reason to stop serving:
    /// a failed write is ignored.
    fn say(&self, text: &str, message: &str, fields: &[(&str, log::kv::Value<'_>)]) {
        use std::io::Write;
        let line = if self.json {
            wpds::logging::line_of(log::Level::Info, "wpds::demo", message, fields)
        } else {
            text.to_owned()
        };
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

/// Loads the demo workspace into an empty database (with `reset`, replaces whatever the
/// demo left in it) and prints tokens to try it with: an access token of a member and of an
/// administrator, and a refresh token of a login of its own, so that trying `refreshToken`
/// (twice: the second answers 401 and revokes its login) never revokes the pasted tokens.
fn demo(
    db: &Database,
    tokens: &TokenArgs,
    address: &str,
    reset: bool,
    banner: &Banner,
) -> Result<(), String> {
    let conn = &mut db.conn().map_err(|e| e.to_string())?;
    let empty = wpds_storage::workspaces::count(conn).map_err(|e| e.to_string())? == 0;
    if reset || empty {
        let report = if reset { seed::reload(conn, DEMO_FIXTURE) } else { seed::load(conn, DEMO_FIXTURE) }
            .map_err(|e| format!("demo fixture: {e}"))?;
        let (text, message) = if reset {
            ("Reloaded the demo workspace (--reset)", "reloaded the demo workspace (--reset)")
        } else {
            ("Loaded the demo workspace", "loaded the demo workspace")
        };
        banner.say(&format!("{text}: {report}"), message, &[("inserted", report.inserted().into())]);
    } else {
        banner.say(
            "The database is not empty: the demo workspace was not loaded again (`--demo --reset` reloads it).",
            "the database is not empty: the demo workspace was not loaded again (--demo --reset reloads it)",
            &[],
        );
    }
    let member = auth::issue(conn, DEMO_MEMBER, tokens.lifetimes()).map_err(|e| e.to_string())?;
    let admin = auth::issue(conn, DEMO_ADMIN, tokens.lifetimes()).map_err(|e| e.to_string())?;
    let refresh = auth::issue(conn, DEMO_MEMBER, tokens.lifetimes()).map_err(|e| e.to_string())?;
    let docs = format!("http://{address}/docs/");
    let member_id = DEMO_MEMBER.to_string();
    let admin_id = DEMO_ADMIN.to_string();
    banner.say(
        &format!("\nSwagger UI: {docs}  (click Authorize and paste a token)"),
        "Swagger UI",
        &[("url", docs.as_str().into())],
    );
    banner.say(
        &format!("Access token of user {DEMO_MEMBER} (member of workspace 1): {}", member.access_token),
        "access token of a member of workspace 1",
        &[("userId", member_id.as_str().into()), ("accessToken", member.access_token.as_str().into())],
    );
    banner.say(
        &format!("Access token of user {DEMO_ADMIN} (platform administrator): {}", admin.access_token),
        "access token of a platform administrator",
        &[("userId", admin_id.as_str().into()), ("accessToken", admin.access_token.as_str().into())],
    );
    banner.say(
        &format!("Refresh token of user {DEMO_MEMBER}: {}", refresh.refresh_token),
        "refresh token of a login of its own (spending it twice revokes only that login)",
        &[("userId", member_id.as_str().into()), ("refreshToken", refresh.refresh_token.as_str().into())],
    );
    banner.say(
        &format!(
            "  (a login of its own: spending it twice revokes only that login, never the access tokens above)\n\
             Demo access tokens, printed and refreshed alike, live {} s (24 hours; 15 minutes outside the demo);\n\
             POST /v1/auth/refresh with the refresh token for a new pair; `serve --demo --reset` starts the demo afresh.\n",
            member.expires_in
        ),
        "demo access tokens live 24 hours; POST /v1/auth/refresh with the refresh token for a new pair",
        &[("expiresIn", member.expires_in.into())],
    );
    Ok(())
}
