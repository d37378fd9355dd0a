//! Server settings, from command-line flags or environment variables (flags win).

use std::net::SocketAddr;
use std::time::Duration;

/// Settings of `wpds serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    /// Address and port to listen on.
    #[arg(long, env = "WPDS_BIND", default_value = "127.0.0.1:8080")]
    pub bind: SocketAddr,

    /// Database URL: `sqlite://PATH` (the embedded default) or `postgres://…`.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://wpds.sqlite3")]
    pub database_url: String,

    /// Log filter in env_logger syntax (`info`, `debug`, `wpds=debug,actix_web=info`).
    #[arg(long, env = "WPDS_LOG", default_value = "info")]
    pub log: String,

    /// HTTP worker threads; 0 means one per CPU core.
    #[arg(long, env = "WPDS_WORKERS", default_value_t = 0)]
    pub workers: usize,

    /// Seconds in-flight requests get to finish after SIGTERM or SIGINT.
    #[arg(long, env = "WPDS_SHUTDOWN_TIMEOUT", default_value_t = 30)]
    pub shutdown_timeout: u64,
}

impl ServeConfig {
    /// Settings for tests and tools: every default, listening on `bind`.
    pub fn for_address(bind: SocketAddr) -> Self {
        ServeConfig {
            bind,
            database_url: "sqlite://wpds.sqlite3".to_owned(),
            log: "info".to_owned(),
            workers: 2,
            shutdown_timeout: 30,
        }
    }

    /// The graceful-shutdown grace period.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_timeout)
    }
}
