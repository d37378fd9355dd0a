//! Errors that repeat while the database is away (the pool failing to open connections in
//! the background, start-up's attempts to reach it), logged at most once per
//! [`INTERVAL`] with a count of those left out, each on one line: an outage is seen at
//! once, and neither fills the log nor hides how long it lasted.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The shortest time between two lines of one [`ThrottledLog`].
pub const INTERVAL: Duration = Duration::from_secs(5);

/// One kind of repeated error, logged at most once per `INTERVAL` (target
/// `wpds::database`) at its level.
#[derive(Debug)]
pub struct ThrottledLog {
    level: log::Level,
    /// When the last line was written, and how many errors came since.
    state: Mutex<(Option<Instant>, u64)>,
}

impl Default for ThrottledLog {
    fn default() -> Self {
        Self::new(log::Level::Error)
    }
}

impl ThrottledLog {
    /// A log of lines at `level` (a `static` may hold one).
    pub const fn new(level: log::Level) -> Self {
        ThrottledLog { level, state: Mutex::new((None, 0)) }
    }

    /// Logs `what: cause` unless a line was written within `INTERVAL` (then counts it);
    /// a line written after some were left out says how many.
    pub fn log(&self, what: &str, cause: &dyn std::fmt::Display) {
        let suppressed = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let now = Instant::now();
            if state.0.is_some_and(|last| now.duration_since(last) < INTERVAL) {
                state.1 += 1;
                return;
            }
            state.0 = Some(now);
            std::mem::take(&mut state.1)
        };
        let cause = one_line(&cause.to_string());
        if suppressed == 0 {
            log::log!(target: "wpds::database", self.level, "{what}: {cause}");
        } else {
            log::log!(
                target: "wpds::database",
                self.level,
                "{what}: {cause} ({suppressed} more since the last such line, not logged)"
            );
        }
    }
}

/// A [`ThrottledLog`] shared by pools built one after the other (the SQLite writer
/// rebuilds its pool after a fault), so that they count together.
#[derive(Debug, Clone, Default)]
pub struct SharedLog(pub std::sync::Arc<ThrottledLog>);

/// `text` on one line: libpq's messages span several (`…failed: Connection refused\n\tIs
/// the server running…`).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// r2d2's error handler (its default logs every failure, 8 to 30 lines a second while the
/// database is away): through a [`ThrottledLog`].
impl<E: std::fmt::Display> diesel::r2d2::HandleError<E> for ThrottledLog {
    fn handle_error(&self, error: E) {
        self.log("cannot open a database connection", &error);
    }
}

impl<E: std::fmt::Display> diesel::r2d2::HandleError<E> for SharedLog {
    fn handle_error(&self, error: E) {
        self.0.handle_error(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_line_message_is_written_on_one_line() {
        let libpq = "connection to server at \"127.0.0.1\", port 1 failed: Connection refused\n\tIs the server running on that host?\n";
        assert_eq!(
            one_line(libpq),
            "connection to server at \"127.0.0.1\", port 1 failed: Connection refused Is the server running on that host?"
        );
    }

    #[test]
    fn within_the_interval_errors_are_counted_not_logged() {
        let log = ThrottledLog::default();
        log.log("x", &"first");
        log.log("x", &"second");
        log.log("x", &"third");
        let state = log.state.lock().expect("not poisoned");
        assert_eq!(state.1, 2, "two left out, to be counted on the next line");
    }
}
