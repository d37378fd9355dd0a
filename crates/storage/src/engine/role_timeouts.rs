//! The role's timeouts, behind a transaction pooler.
//!
//! There the server sets nothing for a session (a `SET` would stay on a server connection
//! that another client gets next), so what bounds a statement outside a unit of work is
//! PostgreSQL's `statement_timeout` and `lock_timeout` as the role and database set them
//! (`ALTER ROLE … IN DATABASE … SET`). They are read back when the database is reached
//! ([`shortfall`]). Behind a pooler that keeps prepared statements
//! ([`crate::engine::Pooler::TransactionPrepared`]), where single statements pipeline on
//! shared connections, they are required: unset (0, no bound at all) or looser than the
//! server's timeout, the server refuses to start and says what to run. Behind one that
//! keeps none ([`crate::engine::Pooler::Transaction`]) they are optional: when they bound
//! statements, a unit of work that is one statement runs as it is; else it is a
//! transaction that sets its own ([`crate::engine::db`]).

use crate::engine::conn::DbConn;
use crate::engine::shared_pg::LOCK_WAIT;
use crate::error::StoreError;
use diesel::sql_types::{BigInt, Text};
use diesel::{QueryableByName, RunQueryDsl};
use std::time::Duration;

/// What a new session of the server's role gets, as PostgreSQL reports it.
#[derive(Debug, QueryableByName)]
struct RoleSettings {
    /// Milliseconds; 0 is none.
    #[diesel(sql_type = BigInt)]
    statement_timeout: i64,
    /// Milliseconds; 0 is none.
    #[diesel(sql_type = BigInt)]
    lock_timeout: i64,
    #[diesel(sql_type = Text)]
    role: String,
    #[diesel(sql_type = Text)]
    database: String,
}

/// `pg_settings` gives both timeouts in milliseconds, whatever unit they were set in.
const READ: &str = "SELECT \
     (SELECT setting::bigint FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout, \
     (SELECT setting::bigint FROM pg_settings WHERE name = 'lock_timeout') AS lock_timeout, \
     current_user::text AS role, current_database()::text AS database";

/// What is wrong with the timeouts a session of `conn`'s role gets, and the commands that
/// set them, when either is unset or above `timeout`; `None` when they bound statements
/// within it (and on SQLite).
pub(crate) fn shortfall(conn: &mut DbConn, timeout: Duration) -> Result<Option<String>, StoreError> {
    let DbConn::Postgres(pg) = conn else { return Ok(None) };
    let settings = diesel::sql_query(READ).get_result::<RoleSettings>(&mut **pg)?;
    Ok(refusal(&settings, timeout))
}

/// Why `settings` do not bound statements within `timeout`, and what to run; `None` when
/// they do.
fn refusal(settings: &RoleSettings, timeout: Duration) -> Option<String> {
    let most = i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX);
    let loose = |ms: i64| ms <= 0 || ms > most;
    if !loose(settings.statement_timeout) && !loose(settings.lock_timeout) {
        return None;
    }
    let shown = |ms: i64| if ms <= 0 { "0 (none)".to_owned() } else { format!("{ms} ms") };
    let lock = timeout.min(LOCK_WAIT).as_millis().max(1);
    let (role, database) = (identifier(&settings.role), identifier(&settings.database));
    Some(format!(
        "role {role} in database {database} has statement_timeout {} and lock_timeout {}, and \
         neither may be unset or above WPDS_DB_TIMEOUT_MS ({most} ms). Run, as a superuser: \
         ALTER ROLE {role} IN DATABASE {database} SET statement_timeout = '{most}ms'; \
         ALTER ROLE {role} IN DATABASE {database} SET lock_timeout = '{lock}ms'; \
         then have the pooler open new server connections (PgBouncer: RECONNECT on its admin \
         console)",
        shown(settings.statement_timeout),
        shown(settings.lock_timeout),
    ))
}

/// `name` quoted as an SQL identifier.
fn identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(statement_timeout: i64, lock_timeout: i64) -> RoleSettings {
        RoleSettings {
            statement_timeout,
            lock_timeout,
            role: "wp\"ds".to_owned(),
            database: "wpds".to_owned(),
        }
    }

    #[test]
    fn timeouts_within_the_servers_pass() {
        let timeout = Duration::from_millis(5000);
        assert!(refusal(&settings(5000, 50), timeout).is_none());
        assert!(refusal(&settings(1, 5000), timeout).is_none());
    }

    #[test]
    fn an_unset_or_looser_timeout_is_refused_with_the_commands_to_run() {
        let timeout = Duration::from_millis(5000);
        for (statement, lock) in [(0, 50), (5000, 0), (5001, 50), (5000, 5001)] {
            let why = refusal(&settings(statement, lock), timeout).expect("refused");
            assert!(
                why.contains(
                    "ALTER ROLE \"wp\"\"ds\" IN DATABASE \"wpds\" SET statement_timeout = '5000ms'; \
                     ALTER ROLE \"wp\"\"ds\" IN DATABASE \"wpds\" SET lock_timeout = '50ms';"
                ),
                "{why}"
            );
        }
        let why = refusal(&settings(0, 50), timeout).expect("refused");
        assert!(why.contains("statement_timeout 0 (none) and lock_timeout 50 ms"), "{why}");
    }
}
