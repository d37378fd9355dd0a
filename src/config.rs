//! Settings, from command-line flags or environment variables (flags win).

use std::net::SocketAddr;
use std::time::Duration;
use wpds_storage::repos::auth::TokenLifetimes;
use wpds_storage::{DbConfig, Pooler, SqliteSynchronous};

/// How to reach the database (every command that touches it takes these).
#[derive(Debug, Clone, clap::Args)]
pub struct DatabaseArgs {
    /// Database URL: `sqlite://PATH` (the embedded default, created and migrated on first
    /// start) or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, env = "DATABASE_URL", default_value = DbConfig::DEFAULT_URL)]
    pub database_url: String,

    /// Connections in the pool; 0 picks the engine's default (SQLite 4, PostgreSQL 16). On
    /// SQLite the pool serves reads: writes run on the writer thread's own connection. On
    /// PostgreSQL as many again, spread over the workers, carry pipelined single statements.
    #[arg(long, env = "WPDS_DB_POOL_SIZE", default_value_t = 0)]
    pub db_pool_size: u32,

    /// Milliseconds a request may wait for the database in all (connections and locks)
    /// before answering 503; the default keeps a 503 within 2 s.
    #[arg(long, env = "WPDS_DB_TIMEOUT_MS", default_value_t = DbConfig::DEFAULT_TIMEOUT_MS)]
    pub db_timeout_ms: u64,

    /// How SQLite commits: `full` syncs every commit to disk, so an acknowledged write
    /// survives an OS crash or power loss; `normal` syncs only at checkpoints, so those can
    /// roll back the last acknowledged writes (a process crash loses nothing either way).
    #[arg(long, env = "WPDS_SQLITE_SYNCHRONOUS", value_enum, default_value_t = SqliteSynchronous::default())]
    pub sqlite_synchronous: SqliteSynchronous,

    /// What stands between the server and PostgreSQL: `none` (also a pooler in session
    /// mode); `transaction` for a pooler that lends a server connection per transaction
    /// (PgBouncer's `pool_mode = transaction`): then no statement stays prepared, timeouts
    /// are set per transaction, and single statements do not pipeline; or
    /// `transaction-prepared` for one that also keeps prepared statements (PgBouncer 1.21 or
    /// later with `max_prepared_statements`): statements stay prepared and pipeline, and the
    /// role's timeouts bound them (checked at start-up).
    #[arg(long, env = "WPDS_PG_POOLER", value_enum, default_value_t = Pooler::default())]
    pub pg_pooler: Pooler,
}

impl DatabaseArgs {
    /// The storage layer's settings.
    pub fn db_config(&self) -> DbConfig {
        DbConfig {
            url: self.database_url.clone(),
            pool_size: self.db_pool_size,
            timeout: Duration::from_millis(self.db_timeout_ms),
            sqlite_synchronous: self.sqlite_synchronous,
            pooler: self.pg_pooler,
            migrate: true,
        }
    }
}

/// Token lifetimes.
#[derive(Debug, Clone, clap::Args)]
pub struct TokenArgs {
    /// Access-token lifetime in seconds.
    #[arg(long, env = "WPDS_ACCESS_TOKEN_TTL", default_value_t = 900)]
    pub access_token_ttl: u64,

    /// Refresh-token lifetime in seconds.
    #[arg(long, env = "WPDS_REFRESH_TOKEN_TTL", default_value_t = 2_592_000)]
    pub refresh_token_ttl: u64,
}

impl TokenArgs {
    /// The lifetimes as the storage layer takes them.
    pub fn lifetimes(&self) -> TokenLifetimes {
        TokenLifetimes {
            access: Duration::from_secs(self.access_token_ttl),
            refresh: Duration::from_secs(self.refresh_token_ttl),
        }
    }
}

/// Settings of `wpds serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    /// Address and port to listen on.
    #[arg(long, env = "WPDS_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// How to reach the database.
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// Token lifetimes.
    #[command(flatten)]
    pub tokens: TokenArgs,

    /// Log filter in env_logger syntax (`info`, `debug`, `wpds=debug,actix_web=info`;
    /// `wpds::access=off` silences the access log).
    #[arg(long, env = "WPDS_LOG", default_value = "info")]
    pub log: String,

    /// How log lines are written: `text`, or `json` (one object per line, for log shippers).
    #[arg(long, env = "WPDS_LOG_FORMAT", value_enum, default_value_t = crate::logging::LogFormat::Text)]
    pub log_format: crate::logging::LogFormat,

    /// HTTP worker threads; 0 means one per CPU core.
    #[arg(long, env = "WPDS_WORKERS", default_value_t = 0)]
    pub workers: usize,

    /// Seconds in-flight requests get to finish after SIGTERM or SIGINT.
    #[arg(long, env = "WPDS_SHUTDOWN_TIMEOUT", default_value_t = 30)]
    pub shutdown_timeout: u64,

    /// Seconds the server keeps accepting and serving after SIGTERM or SIGINT, with
    /// `/readyz` answering 503 so a load balancer takes it out, before it closes its
    /// listener and lets in-flight requests finish; 0 stops accepting at once.
    #[arg(long, env = "WPDS_DRAIN_SECONDS", default_value_t = 0)]
    pub drain_seconds: u64,

    /// Seconds `serve` waits for PostgreSQL when it is unreachable at start-up: it serves
    /// meanwhile (`/healthz` 200, `/readyz` and operations 503), tries again with backoff,
    /// migrates once it is reached, and exits 1 if it is not reached in time; 0 exits at
    /// once. (SQLite, `--demo` and the other commands never wait.)
    #[arg(long, env = "WPDS_DB_WAIT_SECONDS", default_value_t = 60)]
    pub db_wait_seconds: u64,

    /// Requests per one-minute window each user may make (every token of the user counts
    /// together), and each client address for refreshes and requests without a usable
    /// token; 429 beyond. Counted in the database on PostgreSQL, so every instance shares
    /// the limit. 0 turns limiting off.
    #[arg(long, env = "WPDS_RATE_LIMIT_PER_MINUTE", default_value_t = 0)]
    pub rate_limit_per_minute: u32,

    /// Addresses of reverse proxies whose `X-Forwarded-For` names the client the rate limit
    /// counts (comma-separated); from any other peer the header is ignored.
    #[arg(long, env = "WPDS_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<std::net::IpAddr>,

    /// Milliseconds a request's head (its line and headers) may take to arrive, from when
    /// the connection opens or its previous request was answered; past it the answer is
    /// 408 and the connection closes. Large bodies are checked off the threads that read
    /// heads, so a flood of them does not hold a probe's head back.
    #[arg(long, env = "WPDS_REQUEST_HEAD_TIMEOUT_MS", default_value_t = 5_000)]
    pub request_head_timeout_ms: u64,

    /// Milliseconds a request body may take to arrive, from when the server starts reading
    /// it; past it the answer is 408 `request_timeout` and the connection closes.
    #[arg(long, env = "WPDS_BODY_TIMEOUT_MS", default_value_t = 10_000)]
    pub body_timeout_ms: u64,

    /// MiB every request body being read, processed or waiting may take together. Three
    /// quarters are for bodies being processed, each counted at 48× its length (its bytes,
    /// the parsed JSON and the checks' output; never more than that part); further readers
    /// wait for their share, and answer 503 if it does not come within the body timeout. A
    /// quarter is for the waiting readers' bodies already in the server's buffers (up to
    /// ~330 KiB each); past it a reader answers 503 at once and its connection closes.
    /// Bounds the server's memory under a flood of large bodies.
    #[arg(long, env = "WPDS_BODY_MEMORY_MIB", default_value_t = 64)]
    pub body_memory_mib: usize,

    /// Milliseconds a token's caller and a membership may be served from the in-process
    /// cache (0 turns it off). A login revoked by another process or by an operator stops
    /// working within this bound; one revoked by this process stops at once.
    #[arg(long, env = "WPDS_AUTH_CACHE_TTL_MS", default_value_t = 5000)]
    pub auth_cache_ttl_ms: u64,

    /// Compress response bodies over 1 KiB (brotli or gzip, as `Accept-Encoding` allows).
    #[arg(long, env = "WPDS_COMPRESSION", default_value_t = true, action = clap::ArgAction::Set)]
    pub compression: bool,

    /// Origins whose browser pages may call the API (comma-separated, e.g.
    /// `https://app.example.com`); none by default, so no cross-origin page can.
    #[arg(long, env = "WPDS_CORS_ORIGINS", value_delimiter = ',', value_parser = parse_origin)]
    pub cors_origins: Vec<String>,

    /// Address and port of a separate listener serving Prometheus metrics at `/metrics`
    /// (never the API's listener, so they are never exposed with the API); unset, no
    /// metrics are kept.
    #[arg(long, env = "WPDS_METRICS_BIND")]
    pub metrics_bind: Option<SocketAddr>,

    /// OpenTelemetry collector to export traces to with OTLP over HTTP (protobuf), e.g.
    /// `http://127.0.0.1:4318` or `https://collector:4318` (traces go to its `/v1/traces`);
    /// unset, tracing is off. The other standard `OTEL_*` variables apply (service name,
    /// headers, CA certificate, sampler, batching).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Whether start-up applies pending migrations. `false` leaves them to `wpds migrate`,
    /// run as a step of its own (a Kubernetes Job, a compose service the instances wait
    /// for): the server then refuses a schema that lacks a migration it needs, naming them
    /// (on PostgreSQL it waits for them within WPDS_DB_WAIT_SECONDS, `/readyz` answering
    /// 503 meanwhile).
    #[arg(long, env = "WPDS_MIGRATE", default_value_t = true, action = clap::ArgAction::Set)]
    pub migrate: bool,

    /// Load the bundled demo workspace into an empty database and print working tokens and
    /// the Swagger UI address; access tokens (printed and refreshed) then live 24 hours,
    /// and `POST /demo/tokens` hands out a fresh set as JSON (for a client team's CI, where
    /// the server is a service container). Never on a server that holds real data: anyone
    /// who reaches it gets an administrator's token.
    #[arg(long, env = "WPDS_DEMO")]
    pub demo: bool,

    /// With --demo: empty the database and load the demo workspace again, with fresh
    /// tokens (every example works again). Refused, changing nothing, when the database
    /// holds a workspace or user the demo does not have.
    #[arg(long, requires = "demo")]
    pub reset: bool,
}

/// The settings that hold a secret, with the flag that can also give one: each may be
/// read from the file `NAME_FILE` names instead ([`secrets_from_files`]).
const SECRET_SETTINGS: [(&str, Option<&str>); 3] = [
    ("DATABASE_URL", Some("--database-url")),
    ("OTEL_EXPORTER_OTLP_HEADERS", None),
    ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", None),
];

/// The secret settings given as files, as container platforms mount secrets
/// (`DATABASE_URL_FILE=/run/secrets/database-url`): each `(NAME, value)` to set in the
/// environment before the command line is read, the file's text without its final line
/// break. `env` reads a variable, `args` is the command line. A setting given both as a
/// file and as its variable or flag is an error, and so is a file that cannot be read or
/// is empty; the error names the variables and the file, never a value.
pub fn secrets_from_files(
    env: impl Fn(&str) -> Option<String>,
    args: &[String],
) -> Result<Vec<(&'static str, String)>, String> {
    let mut found = Vec::new();
    for (name, flag) in SECRET_SETTINGS {
        let file_setting = format!("{name}_FILE");
        let Some(path) = env(&file_setting) else { continue };
        if env(name).is_some() {
            return Err(format!("{name} and {file_setting} are both set: give the setting one way"));
        }
        if let Some(flag) = flag
            && args.iter().any(|arg| arg == flag || arg.starts_with(&format!("{flag}=")))
        {
            return Err(format!("{flag} and {file_setting} are both given: give the setting one way"));
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{file_setting}: cannot read {path}: {e}"))?;
        let value = text.strip_suffix('\n').map(|t| t.strip_suffix('\r').unwrap_or(t)).unwrap_or(&text);
        if value.trim().is_empty() {
            return Err(format!("{file_setting}: {path} is empty"));
        }
        found.push((name, value.to_owned()));
    }
    Ok(found)
}

/// `wpds serve`'s settings as a command line of their own, to read their defaults.
#[derive(Debug, clap::Parser)]
struct ServeCommand {
    #[command(flatten)]
    config: ServeConfig,
}

impl Default for ServeConfig {
    /// Every setting at the default its flag declares (the one place each default is
    /// stated), whatever the environment holds: what `wpds serve` runs with when given
    /// nothing, for tests and tools that start a server in process.
    fn default() -> Self {
        use clap::{CommandFactory, FromArgMatches};
        let command = ServeCommand::command().mut_args(|arg| arg.env(None));
        let matches = command.try_get_matches_from(["serve"]).expect("every setting has a default");
        ServeCommand::from_arg_matches(&matches).expect("the defaults parse").config
    }
}

impl ServeConfig {
    /// The storage layer's settings, migrating at start-up or not ([`ServeConfig::migrate`]).
    pub fn db_config(&self) -> DbConfig {
        DbConfig { migrate: self.migrate, ..self.database.db_config() }
    }

    /// How long the authentication cache may serve an answer.
    pub fn auth_cache_ttl(&self) -> Duration {
        Duration::from_millis(self.auth_cache_ttl_ms)
    }

    /// The graceful-shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_timeout)
    }
}

/// Every setting of `matches` (a parsed `serve` command line, `command` its definition)
/// that does not hold its default, as `NAME=value` (the environment variable's name, or the
/// flag's where it has none), in the definition's order, secrets redacted: for the
/// start-up line, so an operator sees at once how an instance was configured.
pub fn non_default_settings(command: &clap::Command, matches: &clap::ArgMatches) -> Vec<String> {
    command
        .get_arguments()
        .filter_map(|arg| {
            let id = arg.get_id().as_str();
            let source = matches.value_source(id)?;
            if source == clap::parser::ValueSource::DefaultValue {
                return None;
            }
            let name = arg
                .get_env()
                .map(|env| env.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("--{}", arg.get_long().unwrap_or(id)));
            let values: Vec<String> = matches
                .get_raw(id)
                .map(|raw| raw.map(|v| redact(&v.to_string_lossy())).collect())
                .unwrap_or_default();
            Some(if values.is_empty() { name } else { format!("{name}={}", values.join(",")) })
        })
        .collect()
}

/// `value` with any password a URL carries replaced by `***` (`postgres://u:secret@h/db`,
/// `…?password=secret`).
pub fn redact(value: &str) -> String {
    let mut out = value.to_owned();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..].find(['/', '?', '#']).map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            if let Some(colon) = userinfo.find(':') {
                out.replace_range(rest_start + colon + 1..rest_start + at, "***");
            }
        }
    }
    if let Some(query_start) = out.find('?') {
        let (head, query) = out.split_at(query_start + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

/// An origin as browsers send it: `http` or `https`, a host, an optional port, nothing
/// after (no path, no trailing slash), so it compares equal to the `Origin` header.
fn parse_origin(text: &str) -> Result<String, String> {
    let text = text.trim();
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or_else(|| format!("{text:?}: an origin starts with http:// or https://"))?;
    let well_formed = !rest.is_empty()
        && rest.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if !well_formed {
        return Err(format!(
            "{text:?}: an origin is scheme://host[:port], without a path or a trailing slash"
        ));
    }
    Ok(text.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The database settings as a command line of their own.
    #[derive(Debug, Parser)]
    struct Command {
        #[command(flatten)]
        database: DatabaseArgs,
    }

    #[test]
    fn sqlite_commits_are_full_unless_normal_is_asked_for() {
        let parse = |args: &[&str]| {
            Command::try_parse_from(std::iter::once("wpds").chain(args.iter().copied()))
                .map(|c| c.database.db_config().sqlite_synchronous)
        };
        assert_eq!(parse(&[]).unwrap(), SqliteSynchronous::Full);
        assert_eq!(parse(&["--sqlite-synchronous", "normal"]).unwrap(), SqliteSynchronous::Normal);
        assert_eq!(parse(&["--sqlite-synchronous", "full"]).unwrap(), SqliteSynchronous::Full);
        assert!(parse(&["--sqlite-synchronous", "off"]).is_err(), "OFF is not offered");
    }

    #[test]
    fn cors_origins_are_scheme_host_and_port_only() {
        assert_eq!(parse_origin("https://App.Example.com").unwrap(), "https://app.example.com");
        assert_eq!(parse_origin(" http://127.0.0.1:5173 ").unwrap(), "http://127.0.0.1:5173");
        for bad in
            ["app.example.com", "https://app.example.com/", "https://a.example/x", "*", "ftp://a", "https://"]
        {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_secret_setting_is_read_from_the_file_its_file_variable_names() {
        let dir = std::env::temp_dir().join(format!("wpds-secret-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("database-url");
        std::fs::write(&file, "postgres://app:s3cr3t@db/wpds\n").unwrap();
        let path = file.display().to_string();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            let path = path.clone();
            move |name: &str| {
                (name == "DATABASE_URL_FILE")
                    .then(|| path.clone())
                    .or_else(|| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()))
            }
        };
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();

        assert_eq!(
            secrets_from_files(env(&[]), &args(&["wpds", "serve"])).unwrap(),
            [("DATABASE_URL", "postgres://app:s3cr3t@db/wpds".to_owned())]
        );
        let both = secrets_from_files(env(&[("DATABASE_URL", "sqlite://x")]), &args(&["wpds", "serve"]));
        assert_eq!(
            both.unwrap_err(),
            "DATABASE_URL and DATABASE_URL_FILE are both set: give the setting one way"
        );
        for flag in [&["--database-url", "sqlite://x"][..], &["--database-url=sqlite://x"]] {
            let given = secrets_from_files(env(&[]), &args(&[&["wpds", "serve"], flag].concat()));
            assert!(given.unwrap_err().starts_with("--database-url and DATABASE_URL_FILE are both given"));
        }

        std::fs::write(&file, "\n").unwrap();
        let empty = secrets_from_files(env(&[]), &args(&["wpds"])).unwrap_err();
        assert!(empty.ends_with("is empty") && !empty.contains("s3cr3t"), "{empty}");
        std::fs::remove_file(&file).unwrap();
        let missing = secrets_from_files(env(&[]), &args(&["wpds"])).unwrap_err();
        assert!(missing.starts_with("DATABASE_URL_FILE: cannot read "), "{missing}");
        assert_eq!(secrets_from_files(|_| None, &args(&["wpds"])).unwrap(), []);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn passwords_in_urls_are_redacted() {
        assert_eq!(redact("postgres://app:s3cr3t@db:5432/wpds"), "postgres://app:***@db:5432/wpds");
        assert_eq!(
            redact("postgres://app@db/wpds?password=x&sslmode=require"),
            "postgres://app@db/wpds?password=***&sslmode=require"
        );
        assert_eq!(redact("sqlite://wpds.sqlite3"), "sqlite://wpds.sqlite3");
        assert_eq!(redact("0.0.0.0:8080"), "0.0.0.0:8080");
    }

    #[test]
    fn only_settings_that_differ_from_their_default_are_listed() {
        #[derive(Debug, Parser)]
        struct Serve {
            #[command(flatten)]
            config: ServeConfig,
        }
        let command = <Serve as clap::CommandFactory>::command();
        let matches = command
            .clone()
            .try_get_matches_from([
                "wpds",
                "--bind",
                "0.0.0.0:9000",
                "--database-url",
                "postgres://a:b@h/d",
                "--demo",
                "--reset",
            ])
            .unwrap();
        assert_eq!(
            non_default_settings(&command, &matches),
            ["WPDS_BIND=0.0.0.0:9000", "DATABASE_URL=postgres://a:***@h/d", "WPDS_DEMO=true", "--reset=true"]
        );
    }
}
