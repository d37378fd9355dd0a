//! Writers of new time-log cells, each cell written once, keeping what they sent and were
//! told: for the tests that take the database away under writes (a failover, a restore to a
//! point in time) and then look for every acknowledged write where it must be. Each write
//! is a new cell, so a write whose answer was lost (a 503 while its commit may or may not
//! have happened) leaves nothing for the next one to trip on.

use crate::harness::{Server, cell, put_cell};
use crate::postgres_nodes::psql_on;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// One write and its answer.
#[derive(Debug)]
pub struct Answered {
    /// The cell's date.
    pub day: String,
    /// When the request was sent.
    pub sent: Instant,
    /// When its answer came (or the client gave up).
    pub answered: Instant,
    /// The status; 0 when no HTTP answer came.
    pub status: u16,
    /// The problem's `code`, "no Retry-After" for a 503 without it, or the client's error.
    pub detail: String,
}

/// What one writer saw, in sending order.
#[derive(Default)]
pub struct Writes {
    /// Every write and its answer.
    pub answers: Vec<Answered>,
}

impl Writes {
    /// The dates whose write was acknowledged (200).
    pub fn acknowledged(&self) -> impl Iterator<Item = &String> {
        self.answers.iter().filter(|a| a.status == 200).map(|a| &a.day)
    }
}

/// The date of a writer's `n`th cell: each writer has its own run of 20 000 days (a writer
/// makes a few thousand writes in a test).
fn date(writer: usize, n: usize) -> String {
    let first = time::Date::from_calendar_date(1990, time::Month::January, 1).expect("a date");
    (first + time::Duration::days((writer * 20_000 + n) as i64)).to_string()
}

/// Four writers writing new cells of the demo member, started by [`write_until`]: how many
/// answers they have had so far, and [`Writing::stop`] to end them.
pub struct Writing {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicUsize>,
    writers: Vec<std::thread::JoinHandle<Writes>>,
}

impl Writing {
    /// The answers the writers have had so far (any status, or none when the client gave up).
    pub fn answered(&self) -> usize {
        self.answered.load(Ordering::SeqCst)
    }

    /// Waits until the writers have had `more` answers beyond `seen` (a pace that follows the
    /// machine's load, not the clock), or `limit` has passed.
    pub fn wait_for(&self, seen: usize, more: usize, limit: Duration) {
        let until = Instant::now() + limit;
        while self.answered() < seen + more && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the writers and returns what each saw.
    pub fn stop(self) -> Vec<Writes> {
        self.stop.store(true, Ordering::SeqCst);
        self.writers.into_iter().map(|w| w.join().expect("a writer")).collect()
    }
}

/// Four writers writing new cells of the demo member with `note` until stopped.
pub fn write_until(server: &Server, token: &str, note: &'static str) -> Writing {
    let (stop, answered) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
    let writers = (0..4)
        .map(|writer| {
            let (base, token) = (server.base.clone(), token.to_owned());
            let (stop, answered) = (Arc::clone(&stop), Arc::clone(&answered));
            std::thread::spawn(move || {
                let agent = crate::harness::agent();
                let mut writes = Writes::default();
                for n in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let day = date(writer, n);
                    let sent = Instant::now();
                    let answer = put_cell(&agent, &base, &token, &cell(&day, "1", note, 1));
                    let (status, detail) = match answer {
                        Ok(a) => {
                            let retry = a.retry_after.is_some();
                            let code = a.body["code"].as_str().unwrap_or_default().to_owned();
                            (
                                a.status,
                                if a.status == 503 && !retry { "no Retry-After".to_owned() } else { code },
                            )
                        }
                        Err(e) => (0, e.to_string()),
                    };
                    if status != 200 {
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    writes.answers.push(Answered { day, sent, answered: Instant::now(), status, detail });
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                writes
            })
        })
        .collect();
    Writing { stop, answered, writers }
}

/// The dates of the demo member's cells with `note`, read from the database at `url`.
pub fn stored_dates(url: &str, note: &str) -> std::collections::HashSet<String> {
    let sql = format!("SELECT entry_date FROM time_log_entries WHERE user_id = 5 AND note = '{note}'");
    psql_on(url, &sql).lines().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect()
}
