//! Workspace Project-Data Service: the HTTP JSON API server.
//!
//! The contract `openapi/openapi.yaml` is the single source of truth. The build generates
//! the operation table, one trait per tag of the document (`TimeLogApi`, …, all together
//! [`operations::Operations`]) and the actix-web routes from it; each module of
//! [`handlers`] implements its tag's trait; [`http`] holds the request pipeline every
//! operation runs through (request id, content negotiation, body limits, validation from the
//! document, problem+json errors) and the operational endpoints. [`app::Application::build`]
//! turns a configuration into the running server, for `wpds serve` and for the tests alike.
//!
//! Layers, each looking only down (`scripts/check-module-cycles` proves no module and no
//! top-level module refers back to one that refers to it):
//! [`app`] → [`server`] and [`demo`] → `operations` (generated) and [`handlers`] → [`http`]
//! → [`state`] → [`auth_cache`], [`rate_limit`], [`metrics`], [`telemetry`] → [`error`],
//! [`config`], [`logging`] → the storage and contract crates.
//!
//! What an operator sees is switched by settings and costs nothing when off: the access
//! log and JSON lines ([`logging`], [`http::access_log`]), Prometheus metrics on their own
//! listener ([`metrics`]), OpenTelemetry traces ([`telemetry`]); see `docs/operations.md`.
//!
//! Rules:
//! - Handlers stay thin: read the typed input, call one domain or storage function, map the
//!   result. Nothing about HTTP leaks below them.
//! - Errors travel as [`error::ApiError`] and are mapped to HTTP in exactly one place
//!   ([`http::problem`]); internal detail is logged under the trace id, never sent.
//! - Nothing the client sends can make the server panic or answer 500.
//! - One way into the database: a handler hands a repository's `Read` or `Write` to
//!   [`state::AppState::read`] or [`state::AppState::write`] with the request's budget
//!   ([`http::operation::RequestContext::budget`]). Storage decides which connection serves
//!   it (`wpds_storage::engine`); database work never runs on the async workers.

pub mod app;
pub mod auth_cache;
pub mod config;
pub mod demo;
pub mod error;
pub mod handlers;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod operations;
pub mod rate_limit;
pub mod server;
pub mod state;
pub mod telemetry;
