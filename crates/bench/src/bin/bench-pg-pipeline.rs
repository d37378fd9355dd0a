//! `bench-pg-pipeline`: issue 14's driver-level option — the repository's write statement
//! (`wpds_storage::repos::time_log::CurrentWrite`, as `bench-sql-loop` runs it) on diesel-async's
//! `AsyncPgConnection`, many writes in flight at once, pipelined over a few shared
//! connections (`&AsyncPgConnection` lets concurrent futures share one connection; each
//! statement is its own autocommit transaction). It measures what the non-blocking,
//! pipelining driver could give a server, with no HTTP: compare it with `bench-sql-loop`
//! (one blocking connection per thread) and pgbench in the same run.
//!
//! `--database-url` (PostgreSQL; diesel-async connects without TLS, so run the others with
//! `sslmode=disable` beside it), `--connections` (2), `--in-flight` writes at once in all
//! (64, like wrk's connections), `--threads` of the tokio runtime (2), `--users` (16),
//! `--dates` (256), `--seconds` (10). Each in-flight writer owns its own cells (a user's
//! dates split among the writers), so writes never wait on each other's row locks; prints
//! one JSON line like `bench-sql-loop`'s.

use diesel::OptionalExtension;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wpds_bench::{Args, CELL_START_VERSION, DataSet, PROJECT_ID, WrittenCell, cell_write, fail};
use wpds_storage::repos::time_log::CurrentWrite;

fn main() {
    let args = Args::parse();
    let url = args.text("database-url");
    let set = DataSet { users: args.number("users", 16), dates: args.number("dates", 256) };
    let connections = args.number("connections", 2).max(1) as usize;
    let in_flight = args.number("in-flight", 64).max(1) as usize;
    let threads = args.number("threads", 2).max(1) as usize;
    let seconds = args.number("seconds", 10).max(1) as u64;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("tokio runtime: {e}")));
    let (ok, stale, elapsed) = runtime.block_on(async move {
        let mut shared = Vec::new();
        for _ in 0..connections {
            let conn = AsyncPgConnection::establish(&url).await.unwrap_or_else(|e| fail(&e.to_string()));
            shared.push(Arc::new(conn));
        }
        // Every cell, dealt round robin to the writers.
        let cells: Vec<(i64, String)> =
            (1..=set.users).flat_map(|user| (0..set.dates).map(move |d| (user, DataSet::date(d)))).collect();
        let started = Instant::now();
        let deadline = started + Duration::from_secs(seconds);
        let writers: Vec<_> = (0..in_flight)
            .map(|w| {
                let conn = Arc::clone(&shared[w % connections]);
                let mut owned: Vec<(i64, String, i64)> = cells
                    .iter()
                    .skip(w)
                    .step_by(in_flight)
                    .map(|(user, date)| (*user, date.clone(), CELL_START_VERSION))
                    .collect();
                tokio::spawn(async move {
                    let (mut ok, mut stale) = (0_u64, 0_u64);
                    if owned.is_empty() {
                        return (ok, stale);
                    }
                    let mut i = 0_usize;
                    while Instant::now() < deadline {
                        let n = owned.len();
                        let cell = &mut owned[i % n];
                        i += 1;
                        let write = cell_write(cell.0, &cell.1, cell.2);
                        let updated: Option<WrittenCell> = CurrentWrite::new(&write, PROJECT_ID, 750)
                            .get_result(&mut &*conn)
                            .await
                            .optional()
                            .unwrap_or_else(|e| fail(&format!("update: {e}")));
                        match updated {
                            Some(row) => {
                                cell.2 = row.7;
                                ok += 1;
                            }
                            None => stale += 1,
                        }
                    }
                    (ok, stale)
                })
            })
            .collect();
        let (mut ok, mut stale) = (0, 0);
        for writer in writers {
            let (o, s) = writer.await.unwrap_or_else(|e| fail(&format!("a writer failed: {e}")));
            ok += o;
            stale += s;
        }
        (ok, stale, started.elapsed().as_secs_f64())
    });
    println!(
        r#"{{"ok":{ok},"stale":{stale},"connections":{connections},"inFlight":{in_flight},"threads":{threads},"seconds":{elapsed:.3},"perSecond":{:.1}}}"#,
        ok as f64 / elapsed
    );
}
