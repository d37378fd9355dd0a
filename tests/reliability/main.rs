//! Fault tests against real `wpds serve` processes: lost updates across processes, the
//! time-log write's batches under load and under faults, crash
//! durability after SIGKILL, a database outage, graceful shutdown on SIGTERM, the bound on
//! how long a revoked login keeps working in another process (the auth cache), and the
//! SQLite writer's recovery from a file it cannot write.
//!
//! Rules of this target: every test starts the binary Cargo built for it
//! (`CARGO_BIN_EXE_wpds`) on its own fresh database (`TEST_DATABASE_URL` chooses the engine
//! exactly as for `tests/api`), seeded with `wpds seed fixtures/demo.json`, and talks HTTP to
//! it. Every spawned process is killed when its handle drops, also when a test panics.
//! Nothing waits a fixed time to let something happen: tests wait for an observable
//! condition, with a deadline that fails the test. Every request has a client-side timeout,
//! so a hanging server fails a test instead of stalling the suite.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod batched_reads;
mod batches;
mod black_hole;
mod crash;
#[path = "../common/database.rs"]
mod database;
mod database_away;
mod failover;
mod flood;
mod harness;
mod lost_updates;
mod new_cells;
mod outage;
mod point_in_time;
mod pooler;
mod postgres_nodes;
mod proxy;
mod rate_limits;
mod read_only;
mod revocation;
mod rolling;
mod shutdown;
mod storage_faults;
