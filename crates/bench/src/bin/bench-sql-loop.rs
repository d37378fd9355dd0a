//! `bench-sql-loop`: ceiling (b) of the write path — the repository's UPDATE in a plain loop.
//!
//! `bench-sql-loop --database-url URL --users N --dates D --threads T --seconds S` opens
//! `T` connections directly (no pool; SQLite gets the server's pragmas: WAL,
//! `busy_timeout`, foreign keys, and `synchronous = NORMAL`, the server's with
//! `WPDS_SQLITE_SYNCHRONOUS=normal`, its default before it became `full`; PostgreSQL its
//! `lock_timeout`).
//! Thread `t` owns the cells of users `u` with `(u - 1) % T == t` and updates them round
//! robin with the very statement `crates/storage/src/repos/time_log.rs` issues
//! (`wpds_storage::repos::time_log::CurrentWrite`: `UPDATE … WHERE workspace, user, project, date,
//! phase AND version = expected RETURNING …`, kept prepared per connection), each in
//! autocommit like the repository's common case, tracking each cell's version from
//! `RETURNING`.
//! Prints `{"ok":…,"stale":…,"seconds":…,"perSecond":…}`.
//!
//! `--print-pgbench-script 1` prints instead a `pgbench` script of the same statement
//! text (PostgreSQL rendering), for one cell per client (`user = client_id + 1`, the first
//! date), its version carried from one transaction to the next by `\gset`; run it with
//! `pgbench -M prepared -D version=<start version> -D date=<first date> -D phase=general`
//! (pgbench's `\set` takes numbers only, so the text binds come from `-D`; the empty
//! note, which `-D` cannot define, is written as the literal `''`).
//!
//! `--print-pgbench-script 2` prints a `pgbench` script of the batched statement
//! (`wpds_storage::repos::time_log::CurrentWrites::SQL`, PostgreSQL's one statement for many
//! writes), for the first `:batch` cells of one user per client (`user = client_id + 1`),
//! all at one version, carried from one transaction to the next by `\set`. Its text is the
//! repository's but for two arrays pgbench cannot give as variables, since they differ from
//! client to client or from one transaction to the next: the users
//! (`array_fill(:user::bigint, ARRAY[:batch::integer])`) and the expected versions
//! (`array_fill(:version::bigint, ARRAY[:batch::integer])`); the other arrays come from `-D` as
//! array literals (`-D dates={2026-01-01,…}`, and `workspaces`, `projects`, `phases`, `hours`,
//! `notes`, `billables`).

use diesel::connection::SimpleConnection;
use diesel::pg::{Pg, PgConnection};
use diesel::prelude::*;
use diesel::sqlite::SqliteConnection;
use std::time::{Duration, Instant};
use wpds_bench::{
    Args, CELL_START_VERSION, DataSet, PROJECT_ID, WORKSPACE_ID, WrittenCell, cell_write, fail,
};
use wpds_storage::repos::time_log::{CurrentWrite, CurrentWrites};
use wpds_storage::schema::time_log_entries as cells;

/// One cell a thread owns, with the version it last saw.
struct Cell {
    user: i64,
    date: String,
    version: i64,
}

/// A thread's tally.
#[derive(Default)]
struct Tally {
    ok: u64,
    stale: u64,
}

/// Updates `cells` round robin on `conn` until `deadline`; a stale version (another writer
/// got there) is re-read and counted.
macro_rules! drive {
    ($conn:ident, $cells:ident, $deadline:ident) => {{
        let mut owned = $cells;
        let mut tally = Tally::default();
        let mut i = 0_usize;
        loop {
            if i % 64 == 0 && Instant::now() >= $deadline {
                break tally;
            }
            let n = owned.len();
            let cell = &mut owned[i % n];
            i += 1;
            let write = cell_write(cell.user, &cell.date, cell.version);
            let updated: Option<WrittenCell> = CurrentWrite::new(&write, PROJECT_ID, 750)
                .get_result(&mut $conn)
                .optional()
                .unwrap_or_else(|e| fail(&format!("update: {e}")));
            match updated {
                Some(row) => {
                    cell.version = row.7;
                    tally.ok += 1;
                }
                None => {
                    tally.stale += 1;
                    cell.version = cells::table
                        .filter(cells::user_id.eq(cell.user))
                        .filter(cells::project_id.eq(PROJECT_ID))
                        .filter(cells::entry_date.eq(&cell.date))
                        .filter(cells::phase.eq("general"))
                        .select(cells::version)
                        .first(&mut $conn)
                        .unwrap_or_else(|e| fail(&format!("re-read: {e}")));
                }
            }
        }
    }};
}

fn main() {
    let args = Args::parse();
    match args.number("print-pgbench-script", 0) {
        0 => {}
        2 => return print_batched_pgbench_script(),
        _ => return print_pgbench_script(),
    }
    let url = args.text("database-url");
    let set = DataSet { users: args.number("users", 16), dates: args.number("dates", 256) };
    let threads = args.number("threads", 1).max(1);
    let seconds = args.number("seconds", 10).max(1) as u64;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let url = url.clone();
            let owned: Vec<Cell> = (1..=set.users)
                .filter(|u| (u - 1) % threads == t)
                .flat_map(|user| {
                    (0..set.dates).map(move |d| Cell {
                        user,
                        date: DataSet::date(d),
                        version: CELL_START_VERSION,
                    })
                })
                .collect();
            std::thread::spawn(move || {
                if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                    let mut conn = PgConnection::establish(&url).unwrap_or_else(|e| fail(&e.to_string()));
                    conn.batch_execute("SET lock_timeout = 2000").unwrap_or_else(|e| fail(&e.to_string()));
                    drive!(conn, owned, deadline)
                } else {
                    let path = url.strip_prefix("sqlite://").unwrap_or(&url);
                    let mut conn = SqliteConnection::establish(path).unwrap_or_else(|e| fail(&e.to_string()));
                    conn.batch_execute(
                        "PRAGMA busy_timeout = 2000; PRAGMA journal_mode = WAL; \
                         PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
                    )
                    .unwrap_or_else(|e| fail(&e.to_string()));
                    drive!(conn, owned, deadline)
                }
            })
        })
        .collect();
    let mut total = Tally::default();
    for worker in workers {
        let tally = worker.join().unwrap_or_else(|_| fail("a loop thread panicked"));
        total.ok += tally.ok;
        total.stale += tally.stale;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        r#"{{"ok":{},"stale":{},"threads":{threads},"seconds":{elapsed:.3},"perSecond":{:.1}}}"#,
        total.ok,
        total.stale,
        total.ok as f64 / elapsed
    );
}

/// The pgbench script: the statement's PostgreSQL text with its binds as pgbench variables.
fn print_pgbench_script() {
    let write = cell_write(0, "d", 0);
    let query = CurrentWrite::new(&write, PROJECT_ID, 750);
    let rendered = diesel::debug_query::<Pg, _>(&query).to_string();
    let sql = rendered.split(" -- binds:").next().unwrap_or(&rendered);
    // The binds in the order the statement numbers them: SET hours, note, billable,
    // updated_at; WHERE workspace, user, project, date, phase, version.
    // pgbench cannot define an empty variable, so the empty note is a literal.
    let variables = [
        ":hours",
        "''",
        ":billable",
        ":now",
        ":workspace",
        ":user",
        ":project",
        ":date",
        ":phase",
        ":version",
    ];
    let mut script = sql.to_owned();
    for (n, variable) in variables.iter().enumerate().rev() {
        script = script.replace(&format!("${}", n + 1), variable);
    }
    if script.contains('$') {
        fail(&format!("unexpected binds in {rendered}"));
    }
    println!("\\set hours 750");
    println!("\\set billable 1");
    println!("\\set now 1763700000000");
    println!("\\set workspace {WORKSPACE_ID}");
    println!("\\set user :client_id + 1");
    println!("\\set project {PROJECT_ID}");
    println!("{script} \\gset");
}

/// The pgbench script of the batched statement: [`CurrentWrites::SQL`] with its parameters
/// as pgbench variables (the users and the expected versions built by `array_fill`, see the
/// module documentation), then the next version.
fn print_batched_pgbench_script() {
    // The parameters in the order the statement numbers them.
    let variables = [
        ":now",
        ":workspaces",
        "array_fill(:user::bigint, ARRAY[:batch::integer])",
        ":projects",
        ":dates",
        ":phases",
        "array_fill(:version::bigint, ARRAY[:batch::integer])",
        ":hours",
        ":notes",
        ":billables",
    ];
    let mut script = CurrentWrites::SQL.to_owned();
    for (n, variable) in variables.iter().enumerate().rev() {
        script = script.replace(&format!("${}", n + 1), variable);
    }
    if script.contains('$') {
        fail(&format!("unexpected parameters in {}", CurrentWrites::SQL));
    }
    println!("\\set now 1763700000000");
    println!("\\set user :client_id + 1");
    println!("{script}");
    println!("\\set version :version + 1");
}
