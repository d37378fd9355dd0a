//! Helpers of `scripts/bench`: ceiling programs, the data generator, the cursor walker and the
//! OTLP sink of the tracing rounds.
//!
//! Rules:
//! - Nothing here is part of the service: this crate exists to measure it. It is never a
//!   dependency of the server, and the server never runs its code.
//! - SQL outside `crates/storage` lives only here (data generation and the ceiling loop);
//!   statements the ceiling compares against are built with the storage crate's diesel
//!   schema, so they are the repository's own statement text.
//! - The bench data set is fixed by [`DataSet`]: every program derives the same cells
//!   from the same numbers, so the wrk Lua scripts, the SQL loop and the generator agree.
//! - Every program prints its result as one JSON line on stdout, for the script to read.

use std::collections::HashMap;
use wpds_storage::ids::SentId;
use wpds_storage::repos::time_log::CellChange;

/// The workspace every bench record belongs to.
pub const WORKSPACE_ID: i64 = 1;
/// The project every bench cell and receipt belongs to.
pub const PROJECT_ID: i64 = 1;
/// The version every cell is generated (and reset) at.
pub const CELL_START_VERSION: i64 = 2;
/// The first date of the cells; date `d` is this plus `d` days.
pub const FIRST_DATE: &str = "2026-01-01";

/// The shape of the generated data set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSet {
    /// Users `1..=users`, each a member of the workspace with its own token.
    pub users: i64,
    /// Dates per user: user `u` has one `general` cell on each of `dates` days.
    pub dates: i64,
}

impl DataSet {
    /// The days since [`FIRST_DATE`] as `YYYY-MM-DD`.
    pub fn date(day: i64) -> String {
        // 2026-01-01 is day 20454 since 1970-01-01; civil_from_days (H. Hinnant).
        let z = 20_454 + day + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!("{y:04}-{m:02}-{d:02}")
    }
}

/// What the repository's write `RETURNING` reads (its `TimeLogCell`, in field order).
pub type WrittenCell = (i64, i64, String, String, i64, String, bool, i64);

/// The cell write the server's write path makes for the bench's requests (hours `7.50`,
/// note `""`, billable, phase `general`): `user`'s cell on `date`, expected at `version`.
pub fn cell_write(user: i64, date: &str, version: i64) -> CellChange {
    CellChange {
        workspace_id: WORKSPACE_ID,
        user_id: user,
        project_id: SentId::Record(PROJECT_ID),
        date: date.to_owned(),
        phase: wpds_contract::types::TimeLogPhase::General,
        hours: "7.50".to_owned(),
        expected_version: version,
        note: String::new(),
        billable: true,
    }
}

/// `--name value` pairs of the command line.
#[derive(Debug, Clone, Default)]
pub struct Args {
    values: HashMap<String, String>,
}

impl Args {
    /// Reads the process's arguments; exits with a message on a malformed line.
    pub fn parse() -> Self {
        let mut values = HashMap::new();
        let mut args = std::env::args().skip(1);
        while let Some(name) = args.next() {
            let Some(name) = name.strip_prefix("--") else { fail(&format!("unexpected argument {name}")) };
            let value = args.next().unwrap_or_else(|| fail(&format!("--{name} needs a value")));
            values.insert(name.to_owned(), value);
        }
        Args { values }
    }

    /// The value of `--name`; exits if it is missing.
    pub fn text(&self, name: &str) -> String {
        self.values.get(name).cloned().unwrap_or_else(|| fail(&format!("--{name} is required")))
    }

    /// The value of `--name` as a number, or `default`.
    pub fn number(&self, name: &str, default: i64) -> i64 {
        match self.values.get(name) {
            None => default,
            Some(v) => v.parse().unwrap_or_else(|_| fail(&format!("--{name} must be a number, not {v}"))),
        }
    }

    /// The value of `--name`, if given.
    pub fn optional(&self, name: &str) -> Option<String> {
        self.values.get(name).cloned()
    }
}

/// Prints `message` and exits with status 2.
pub fn fail(message: &str) -> ! {
    eprintln!("{}: {message}", std::env::args().next().unwrap_or_default());
    std::process::exit(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_become_calendar_dates() {
        assert_eq!(DataSet::date(0), "2026-01-01");
        assert_eq!(DataSet::date(31), "2026-02-01");
        assert_eq!(DataSet::date(58), "2026-02-28");
        assert_eq!(DataSet::date(59), "2026-03-01");
        assert_eq!(DataSet::date(365), "2027-01-01");
        assert_eq!(DataSet::date(365 + 365 + 59), "2028-02-29");
    }
}
