//! `wpds`: the Workspace Project-Data Service command line.

use clap::{Parser, Subcommand};
use std::net::TcpListener;
use std::process::ExitCode;
use wpds::config::ServeConfig;

/// Workspace Project-Data Service.
#[derive(Debug, Parser)]
#[command(name = "wpds", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server (Swagger UI at /docs/).
    Serve(ServeConfig),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(config) => serve(config),
    }
}

fn serve(config: ServeConfig) -> ExitCode {
    env_logger::Builder::new().parse_filters(&config.log).format_timestamp_millis().init();
    let listener = match TcpListener::bind(config.bind) {
        Ok(listener) => listener,
        Err(e) => {
            log::error!("cannot listen on {}: {e}", config.bind);
            return ExitCode::FAILURE;
        }
    };
    let address = listener.local_addr().map(|a| a.to_string()).unwrap_or_default();
    let outcome = actix_web::rt::System::new().block_on(async move {
        let server = wpds::server::start(&config, listener)?;
        log::info!("listening on http://{address} (Swagger UI at http://{address}/docs/)");
        server.await
    });
    match outcome {
        Ok(()) => {
            log::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            log::error!("server failed: {e}");
            ExitCode::FAILURE
        }
    }
}
