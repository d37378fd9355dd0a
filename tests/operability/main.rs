//! What an operator sees of a running `wpds serve` process: its structured log lines, its
//! Prometheus metrics and its OpenTelemetry traces, each read with the tool an operator
//! would use (a log shipper's JSON parser, Prometheus, an OTLP receiver).
//!
//! Rules of this target: as in `tests/reliability` (whose harness it shares), every test
//! starts the binary Cargo built on its own fresh database, talks HTTP to it on loopback,
//! waits for observable conditions with deadlines, and kills what it started.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

#[path = "../common/database.rs"]
mod database;
#[path = "../reliability/harness.rs"]
mod harness;
mod logs;
mod metrics;
mod tracing;
