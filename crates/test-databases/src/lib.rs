//! The tests' PostgreSQL databases, defined once for every crate's tests and for CI: what
//! they are called ([`PREFIX`], [`name`]), how they leave the server ([`Reaper`]: off the
//! tests' path, and swept after a process that was killed), and how CI sees that none is
//! left behind ([`left`], run as `wpds-test-databases left URL` after each pass).
//!
//! Rules:
//! - A test database is named `wpds_test_<owner>_<unique>`, where `<owner>` is the backend
//!   pid of the session its process keeps open while it runs (see [`reaper`]). Nothing else
//!   on the server may be named so: the sweep drops such a database once its owner's session
//!   is gone.
//! - A test makes its database through [`Reaper::name`] and hands it to [`Reaper::bury`] when
//!   it ends, never dropping it on its own path.
//! - Only the tests and CI use this crate; the server never depends on it.

pub mod reaper;

pub use reaper::Reaper;

use diesel::{PgConnection, QueryableByName, RunQueryDsl};

/// What every test database's name starts with.
pub const PREFIX: &str = "wpds_test_";

/// A test database's name: owned by the session of backend pid `owner`, `unique` among its.
pub fn name(owner: i32, unique: &str) -> String {
    format!("{PREFIX}{owner}_{unique}")
}

/// A POSIX regular expression whose first group is the owner's pid, for PostgreSQL's
/// `substring(datname FROM …)`: it matches every name [`name`] makes, and no other.
pub const OWNER_PATTERN: &str = "^wpds_test_([0-9]{1,9})_";

/// The PostgreSQL server the tests name, itself and never a pooler:
/// `TEST_DATABASE_DIRECT_URL` if set, else `TEST_DATABASE_URL`; `None` if neither names one.
pub fn server_from_env() -> Option<String> {
    std::env::var("TEST_DATABASE_DIRECT_URL")
        .or_else(|_| std::env::var("TEST_DATABASE_URL"))
        .ok()
        .filter(|url| url.starts_with("postgres"))
}

/// The test databases on the server of `session` whose owner's session is gone, by name:
/// those a test process that has ended left behind, which the next process's sweep drops
/// (a database whose process still runs, as in a pass running beside, is its own).
pub fn left(session: &mut PgConnection) -> diesel::QueryResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Database {
        #[diesel(sql_type = diesel::sql_types::Text)]
        datname: String,
    }
    diesel::sql_query(
        // A name of another form gives NULL, which NOT IN leaves out.
        "SELECT datname FROM pg_database \
         WHERE substring(datname FROM $1)::int NOT IN (SELECT pid FROM pg_stat_activity) ORDER BY datname",
    )
    .bind::<diesel::sql_types::Text, _>(OWNER_PATTERN)
    .load::<Database>(session)
    .map(|found| found.into_iter().map(|database| database.datname).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_pattern_agrees_with_the_names_made() {
        let made = name(4242, "0123abcd");
        assert!(made.starts_with(PREFIX));
        assert_eq!(OWNER_PATTERN, format!("^{PREFIX}([0-9]{{1,9}})_"));
        assert!(made.starts_with(&format!("{PREFIX}4242_")));
    }
}
