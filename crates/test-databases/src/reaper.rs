//! The tests' PostgreSQL databases dropped off the tests' path, and swept after a killed
//! process.
//!
//! PostgreSQL 15 forces an immediate checkpoint for every `DROP DATABASE` (so the
//! checkpointer forgets the dropped files before their OIDs can be reused): about 0.1 s on a
//! quiet server and over a second beside a build, which every test used to wait for as it
//! ended (`tests/api` makes two hundred databases). Here a test hands its database to the
//! [`Reaper`] and goes on; the reaper's threads drop what is handed to it, several at once,
//! so that their checkpoints are shared (a checkpoint requested while one runs is served by
//! the next, whoever asked).
//!
//! Nothing is left behind:
//! - When the test process exits (`atexit`), it waits for the drops still queued or running,
//!   at most [`DRAIN_LIMIT`].
//! - A process killed before it could drop its databases leaves them to the next one. Each
//!   process keeps one session open on the server for as long as it runs, and names its
//!   databases after that session's backend pid ([`crate::name`]). The first test database a
//!   process makes sweeps every one whose owner's session is gone from `pg_stat_activity`
//!   ([`crate::OWNER_PATTERN`]): its owner can no longer drop it.

use diesel::{Connection, PgConnection, RunQueryDsl};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an exiting test process waits for its databases to be dropped before leaving
/// the rest to the next process's sweep.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(60);

/// How many databases may be handed over and not yet dropped: a test that would hand over
/// one more waits. Also how many the reaper drops at once, each from a thread of its own.
///
/// The bound keeps the checkpoints short. A database waiting to be dropped keeps the pages
/// its copy dirtied (its 9 MB, through shared buffers), and every checkpoint writes them out:
/// unbounded, beside a build, checkpoints took 30–60 s and the backlog grew to 200.
pub const BACKLOG: usize = 8;

/// Drops the test databases of one PostgreSQL server in the background (see the module's
/// documentation).
pub struct Reaper {
    /// The server itself (never a pooler): `DROP DATABASE` over a direct session.
    server: String,
    /// The backend pid of `session`: the prefix of this process's database names.
    owner: i32,
    /// Kept open while the process runs: while it is on the server, this process's
    /// databases are its own to drop.
    _session: Mutex<PgConnection>,
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// The process's reaper, made on first use ([`Reaper::of`]).
static REAPER: OnceLock<Reaper> = OnceLock::new();

/// The databases handed over and not yet dropped.
struct Queue {
    waiting: Vec<String>,
    dropping: usize,
}

impl Reaper {
    /// The process's reaper for the server of `server` (its URL, direct): made on first use,
    /// when it also sweeps what dead processes left and registers the wait at exit.
    pub fn of(server: &str) -> &'static Reaper {
        let reaper = REAPER.get_or_init(|| {
            let mut session = PgConnection::establish(server).expect("the PostgreSQL server is reachable");
            let owner = diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>("pg_backend_pid()"))
                .get_result::<i32>(&mut session)
                .expect("the session's backend pid");
            let orphans = orphans(&mut session);
            let reaper = Reaper {
                server: server.to_owned(),
                owner,
                _session: Mutex::new(session),
                queue: Mutex::new(Queue { waiting: orphans, dropping: 0 }),
                changed: Condvar::new(),
            };
            for _ in 0..BACKLOG {
                std::thread::Builder::new()
                    .name("test-database-reaper".into())
                    .spawn(|| REAPER.wait().run())
                    .expect("the reaper's thread starts");
            }
            // SAFETY: registers a function of no arguments that does not unwind: its waits are
            // bounded, and it writes to stderr without panicking.
            let registered = unsafe { libc::atexit(drain_at_exit) };
            assert_eq!(registered, 0, "the wait for the drops is registered at exit");
            reaper
        });
        assert_eq!(reaper.server, server, "one PostgreSQL server per test process");
        reaper
    }

    /// A new database name of this process's.
    pub fn name(&self) -> String {
        crate::name(self.owner, &uuid::Uuid::new_v4().simple().to_string())
    }

    /// Hands the database `name` over to be dropped.
    /// Waits while [`BACKLOG`] databases are already waiting or being dropped.
    pub fn bury(&self, name: String) {
        let mut queue = self.queue.lock().expect("the reaper's queue");
        while queue.waiting.len() + queue.dropping >= BACKLOG {
            queue = self.changed.wait(queue).expect("the reaper's queue");
        }
        queue.waiting.push(name);
        drop(queue);
        self.changed.notify_all();
    }

    /// One of the reaper's [`BACKLOG`] threads: drops what is queued, one database at a time
    /// over its own connection. The threads do not wait for one another: a drop handed over
    /// while a checkpoint runs asks for the next one with every other drop that came
    /// meanwhile, so one checkpoint serves them all.
    fn run(&self) {
        let mut admin = None;
        loop {
            let name = {
                let mut queue = self.queue.lock().expect("the reaper's queue");
                loop {
                    if let Some(name) = queue.waiting.pop() {
                        queue.dropping += 1;
                        break name;
                    }
                    queue = self.changed.wait(queue).expect("the reaper's queue");
                }
            };
            if let Err(why) = self.drop_database(&mut admin, &name) {
                admin = None;
                // To stderr itself: eprintln! would write into the output the test harness
                // captured for the test that started the reaper, long since reported.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "test database {name} is not dropped ({why}): the next test process sweeps it"
                );
            }
            self.queue.lock().expect("the reaper's queue").dropping -= 1;
            self.changed.notify_all();
        }
    }

    /// Drops `name` over `admin` (connected first if need be), ending its sessions (a server
    /// the test left running, a pooler's).
    fn drop_database(&self, admin: &mut Option<PgConnection>, name: &str) -> Result<(), String> {
        let admin = match admin {
            Some(admin) => admin,
            None => admin.insert(PgConnection::establish(&self.server).map_err(|e| e.to_string())?),
        };
        diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(admin)
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// Waits until nothing is queued or being dropped, at most `limit`; how many databases
    /// were still left.
    pub fn drain(&self, limit: Duration) -> usize {
        // Never panics (it runs at exit, where a panic aborts): a poisoned queue is read as is.
        let deadline = Instant::now() + limit;
        let mut queue = self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while queue.waiting.len() + queue.dropping > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            queue = match self.changed.wait_timeout(queue, left) {
                Ok((queue, _)) => queue,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        queue.waiting.len() + queue.dropping
    }
}

/// The databases of this naming whose owner's session is gone from the server ([`crate::left`]).
fn orphans(session: &mut PgConnection) -> Vec<String> {
    crate::left(session).expect("the server's databases are listed")
}

/// At exit: waits for the reaper, if this process made one, to drop what it was handed.
extern "C" fn drain_at_exit() {
    let Some(reaper) = REAPER.get() else { return };
    let left = reaper.drain(DRAIN_LIMIT);
    if left > 0 {
        // Not eprintln!, which panics if stderr is gone: a panic here would abort.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "{left} test databases are not dropped yet: the next test process sweeps them"
        );
    }
}
