//! `wpds`: the Workspace Project-Data Service command line.
//!
//! `serve` runs the HTTP server; `migrate`, `seed`, `backup`, `token issue` and `token revoke` are
//! the operator's tools; `healthcheck` asks a running server whether it is ready (a container's
//! `HEALTHCHECK`, with no shell or curl in the image). Every setting comes from a flag or its environment variable (`--help` lists
//! both and the defaults).

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::process::ExitCode;
use std::sync::Arc;
use wpds::app::Application;
use wpds::config::{DatabaseArgs, ServeConfig, TokenArgs};
use wpds::demo;
use wpds_storage::{Database, repos::auth, seed};

/// mimalloc instead of the system allocator: every request allocates (JSON values, the
/// validated input, the reply) on one thread and frees on another often enough that glibc's
/// malloc and its arena locks were ~13 % of the server's samples under write load.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    Serve(Box<ServeConfig>),
    /// Apply pending database migrations (or, with --check, list them).
    Migrate {
        /// Apply nothing: list the migrations the database lacks and exit 1 if there is one
        /// (a deployment's gate before instances that run with WPDS_MIGRATE=false).
        #[arg(long)]
        check: bool,
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
    /// Copy a SQLite database to a new file while servers keep serving it: a consistent
    /// snapshot, committed writes in its WAL included (PostgreSQL: use pg_dump). Restore by
    /// stopping the servers and putting the copy in the database's place.
    Backup {
        /// The new file (it must not exist).
        #[arg(long)]
        to: std::path::PathBuf,
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
    /// Revoke a login (the one a token belongs to) or every login of a user: none of their
    /// tokens authenticates or refreshes again. Prints what it revoked as JSON. Servers that
    /// cache authentication stop taking a revoked access token within WPDS_AUTH_CACHE_TTL_MS.
    #[command(group = clap::ArgGroup::new("which").required(true))]
    Revoke {
        /// A token of the login (access or refresh, spent or not, e.g. a leaked one); `-`
        /// reads it from standard input, so it stays out of the shell's history.
        #[arg(long, group = "which")]
        token: Option<String>,
        /// Revoke every login of this user.
        #[arg(long, group = "which")]
        user: Option<String>,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

fn main() -> ExitCode {
    // Secrets mounted as files (`DATABASE_URL_FILE`, …) become their variables before the
    // command line is read, so clap and the OpenTelemetry SDK read them as any setting.
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    match wpds::config::secrets_from_files(|name| std::env::var(name).ok(), &args) {
        // SAFETY: nothing else runs yet: no thread has been started, so none reads the
        // environment while it is written.
        Ok(found) => found.into_iter().for_each(|(name, value)| unsafe { std::env::set_var(name, value) }),
        Err(message) => {
            eprintln!("wpds: {message}");
            return ExitCode::FAILURE;
        }
    }
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
            serve(*config, &settings)
        }
        Command::Healthcheck(args) => return healthcheck(&args),
        Command::Migrate { check: false, database } => migrate(&database),
        Command::Migrate { check: true, database } => check_migrations(&database),
        Command::Seed { file, database } => load_fixture(&file, &database),
        Command::Backup { to, database } => back_up(&to, &database),
        Command::Token { command: TokenCommand::Issue { user, database, tokens } } => {
            issue_token(&user, &database, &tokens)
        }
        Command::Token { command: TokenCommand::Revoke { token, user, database } } => {
            revoke_logins(token, user, &database)
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

/// `wpds migrate --check`: the pending migrations, one a line, and `Err` while there is
/// one; a schema newer than this build is said, and is no failure.
fn check_migrations(database: &DatabaseArgs) -> Result<(), String> {
    let db = Database::connect(&one_shot(database).db_config()).map_err(|e| e.to_string())?;
    let status = db.migration_status().map_err(|e| e.to_string())?;
    for version in &status.unknown {
        println!("applied, unknown to this build (the schema is newer): {version}");
    }
    if status.pending.is_empty() {
        println!("the database is up to date");
        return Ok(());
    }
    for name in &status.pending {
        println!("pending: {name}");
    }
    Err(format!("{} migration(s) pending: run `wpds migrate`", status.pending.len()))
}

fn load_fixture(file: &std::path::Path, database: &DatabaseArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let db = open(&one_shot(database))?;
    let report = seed::load(&db, &text).map_err(|e| format!("{}: {e}", file.display()))?;
    println!("{report}");
    Ok(())
}

/// `wpds backup --to FILE`: the copy, flushed to disk, and a line saying what it holds.
fn back_up(to: &std::path::Path, database: &DatabaseArgs) -> Result<(), String> {
    if to.exists() {
        return Err(format!("{} exists: a backup goes to a new file", to.display()));
    }
    let config = one_shot(database).db_config();
    if config.engine() == wpds_storage::Engine::Postgres {
        return Err(
            "a PostgreSQL database is backed up with pg_dump (docs/operations.md, \"Backup and restore\")"
                .to_owned(),
        );
    }
    if !std::path::Path::new(config.sqlite_path()).is_file() {
        return Err(format!("no SQLite database at {}", config.sqlite_path()));
    }
    // Connected, never migrated: the copy is of the database as it is.
    let db = Database::connect(&config).map_err(|e| e.to_string())?;
    let started = std::time::Instant::now();
    db.back_up_into(to).map_err(|e| format!("the backup to {} failed: {e}", to.display()))?;
    let file =
        std::fs::File::open(to).map_err(|e| format!("cannot open the backup {}: {e}", to.display()))?;
    file.sync_all().map_err(|e| format!("cannot flush the backup {} to disk: {e}", to.display()))?;
    let bytes = file.metadata().map_err(|e| e.to_string())?.len();
    println!("backed up to {} ({bytes} bytes, {:.1} s)", to.display(), started.elapsed().as_secs_f64());
    Ok(())
}

fn issue_token(user: &str, database: &DatabaseArgs, tokens: &TokenArgs) -> Result<(), String> {
    let user_id = wpds_storage::ids::parse(user).ok_or_else(|| format!("no user {user}"))?;
    let db = open(&one_shot(database))?;
    let pair = match db.write_now(auth::issue(user_id, tokens.lifetimes())) {
        Ok(pair) => pair,
        Err(wpds_storage::StoreError::NotFound(what)) => {
            let empty =
                db.read_now(wpds_storage::repos::workspaces::count()).map_err(|e| e.to_string())? == 0;
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

/// `wpds token revoke`: ends the logins named, prints them as JSON (`{"revoked": […]}`),
/// and logs what it did (target `wpds::token`, at warn: shown at the commands' default
/// level).
fn revoke_logins(token: Option<String>, user: Option<String>, database: &DatabaseArgs) -> Result<(), String> {
    let what = match (token, user) {
        (Some(token), _) => {
            let token = if token == "-" {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                    .map_err(|e| format!("cannot read the token from standard input: {e}"))?;
                text.trim().to_owned()
            } else {
                token
            };
            auth::Revoke::LoginOf(token)
        }
        (None, Some(user)) => {
            auth::Revoke::User(wpds_storage::ids::parse(&user).ok_or_else(|| format!("no user {user}"))?)
        }
        (None, None) => return Err("name a login with --token or a user with --user".to_owned()),
    };
    let db = open(&one_shot(database))?;
    let revoked = match db.write_now(auth::revoke(what.clone())) {
        Ok(revoked) => revoked,
        Err(wpds_storage::StoreError::NotFound(what)) => return Err(format!("not found: {what}")),
        Err(e) => return Err(e.to_string()),
    };
    let whose = match &what {
        auth::Revoke::LoginOf(_) => "the login of the token given".to_owned(),
        auth::Revoke::User(user) => format!("every login of user {user}"),
    };
    let ids: Vec<String> = revoked.iter().map(|l| l.login_id.to_string()).collect();
    log::warn!(
        target: "wpds::token",
        "revoked {} login(s), {whose}{}",
        revoked.len(),
        if ids.is_empty() { " (none was live)".to_owned() } else { format!(": {}", ids.join(", ")) }
    );
    let json = serde_json::json!({ "revoked": revoked });
    println!("{}", serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?);
    Ok(())
}

fn serve(config: ServeConfig, settings: &[String]) -> Result<(), String> {
    let engine = match config.database.db_config().engine() {
        wpds_storage::Engine::Sqlite => "sqlite",
        wpds_storage::Engine::Postgres => "postgres",
    };
    log::info!(
        "wpds {} (contract {}) on {engine}; settings not at their default: {}",
        env!("CARGO_PKG_VERSION"),
        wpds_contract::document::parsed()["info"]["version"].as_str().unwrap_or("?"),
        if settings.is_empty() { "none".to_owned() } else { settings.join(" ") }
    );
    // Before the application is built: the spans of its first requests need the provider.
    if wpds::telemetry::init(config.otlp_endpoint.as_deref(), engine)? {
        log::info!("tracing: exporting spans with OTLP/HTTP");
    }
    let outcome = actix_web::rt::System::new().block_on(async move {
        let app = Application::build(&config).await?;
        let address = browser_address(app.address());
        if let Some(loaded) = app.demo() {
            let banner = Banner { json: config.log_format == wpds::logging::LogFormat::Json };
            let tokens = demo::tokens::Tokens::issue(app.state())
                .await
                .map_err(|e| format!("cannot issue the demo's tokens: {e:?}"))?;
            demo_banner(loaded, &tokens, &address, &banner);
        }
        if let Some(at) = app.metrics_address() {
            log::info!("metrics at http://{at}/metrics");
        }
        let drain = std::time::Duration::from_secs(config.drain_seconds);
        actix_web::rt::spawn(wpds::server::stop_on_signal(
            app.handles(),
            Arc::clone(&app.state().draining),
            drain,
        ));
        log::info!("listening on {} (Swagger UI at http://{address}/docs/)", app.address());
        app.run_until_stopped().await
    });
    wpds::telemetry::shutdown();
    outcome?;
    log::info!("stopped");
    Ok(())
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

/// Prints what `--demo` did and tokens to try it with: an access token of a member and of
/// an administrator, and a refresh token of a login of its own, so that trying
/// `refreshToken` (twice: the second answers 401 and revokes its login) never revokes the
/// pasted tokens.
fn demo_banner(loaded: &demo::Loaded, tokens: &demo::tokens::Tokens, address: &str, banner: &Banner) {
    match loaded {
        demo::Loaded::Loaded(report) => banner.say(
            &format!("Loaded the demo workspace: {report}"),
            "loaded the demo workspace",
            &[("inserted", report.inserted().into())],
        ),
        demo::Loaded::Reloaded(report) => banner.say(
            &format!("Reloaded the demo workspace (--reset): {report}"),
            "reloaded the demo workspace (--reset)",
            &[("inserted", report.inserted().into())],
        ),
        demo::Loaded::Kept => banner.say(
            "The database is not empty: the demo workspace was not loaded again (`--demo --reset` reloads it).",
            "the database is not empty: the demo workspace was not loaded again (--demo --reset reloads it)",
            &[],
        ),
    }
    let docs = format!("http://{address}/docs/");
    let member_id = demo::MEMBER.to_string();
    let admin_id = demo::ADMIN.to_string();
    banner.say(
        &format!("\nSwagger UI: {docs}  (click Authorize and paste a token)"),
        "Swagger UI",
        &[("url", docs.as_str().into())],
    );
    banner.say(
        &format!("Access token of user {member_id} (member of workspace 1): {}", tokens.member_token),
        "access token of a member of workspace 1",
        &[("userId", member_id.as_str().into()), ("accessToken", tokens.member_token.as_str().into())],
    );
    banner.say(
        &format!("Access token of user {admin_id} (platform administrator): {}", tokens.admin_token),
        "access token of a platform administrator",
        &[("userId", admin_id.as_str().into()), ("accessToken", tokens.admin_token.as_str().into())],
    );
    banner.say(
        &format!("Refresh token of user {member_id}: {}", tokens.refresh_token),
        "refresh token of a login of its own (spending it twice revokes only that login)",
        &[("userId", member_id.as_str().into()), ("refreshToken", tokens.refresh_token.as_str().into())],
    );
    let fresh = format!("http://{address}/demo/tokens");
    banner.say(
        &format!(
            "  (a login of its own: spending it twice revokes only that login, never the access tokens above)\n\
             Demo access tokens, printed and refreshed alike, live {} s (24 hours; 15 minutes outside the demo);\n\
             POST /v1/auth/refresh with the refresh token for a new pair; `serve --demo --reset` starts the demo afresh;\n\
             POST {fresh} answers a fresh set as JSON (for CI).\n",
            tokens.expires_in
        ),
        "demo access tokens live 24 hours; POST /v1/auth/refresh with the refresh token for a new pair; \
         POST /demo/tokens answers a fresh set as JSON",
        &[("expiresIn", tokens.expires_in.into()), ("tokensUrl", fresh.as_str().into())],
    );
}
