//! Issue 6, test 2: crash durability. Writers load the server; it is killed with SIGKILL
//! mid-load and restarted on the same database; every write answered 200 is there.
//!
//! The check goes through the API of the restarted server: a write expecting a version no
//! cell reaches answers 409 with the cell's current version and entry.

use crate::harness::{Seeded, Server, agent, cell, put_cell, read_cell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const WRITERS: usize = 8;
/// Writes per cell before a writer moves to its next cell (so the load mixes first writes,
/// which insert, and later ones, which update).
const WRITES_PER_CELL: i64 = 4;
/// Acknowledged writes (all writers together) before the kill.
const KILL_AFTER: usize = 150;

/// What one writer knows about one of its cells when the server dies.
#[derive(Debug, Clone)]
struct Ledger {
    date: String,
    /// The last write answered 200: its version and note (version 1, no note: none).
    acked_version: i64,
    acked_note: Option<String>,
    /// A write sent but never answered: it may or may not have committed.
    unanswered_note: Option<String>,
}

/// Writes its own cells (month `writer + 1`, one day after another) until the server stops
/// answering; returns what it knows of each cell it touched.
fn writer(writer: usize, base: &str, token: &str, acked: &AtomicUsize) -> Vec<Ledger> {
    let agent = agent();
    let mut ledgers: Vec<Ledger> = Vec::new();
    for day in 1..=28 {
        let date = format!("2024-{:02}-{day:02}", writer + 1);
        let mut ledger =
            Ledger { date: date.clone(), acked_version: 1, acked_note: None, unanswered_note: None };
        for write in 0..WRITES_PER_CELL {
            let note = format!("writer {writer} day {day} write {write}");
            let hours = format!("{}.{:02}", day % 24, write);
            match put_cell(&agent, base, token, &cell(&date, &hours, &note, ledger.acked_version)) {
                Ok(answer) => {
                    assert_eq!(answer.status, 200, "writer {writer}: {}", answer.body);
                    ledger.acked_version = answer.body["entry"]["version"].as_i64().expect("a version");
                    ledger.acked_note = Some(note);
                    acked.fetch_add(1, Ordering::SeqCst);
                }
                Err(_) => {
                    ledger.unanswered_note = Some(note);
                    ledgers.push(ledger);
                    return ledgers;
                }
            }
        }
        ledgers.push(ledger);
    }
    panic!("writer {writer} ran out of cells before the server was killed")
}

#[test]
fn every_write_answered_200_survives_a_sigkill_of_the_server() {
    // Arrange
    let seeded = Seeded::new();
    let mut server = Server::start(&seeded.database.url);
    let acked = AtomicUsize::new(0);
    let base = server.base.clone();

    // Act: kill the server while the writers are busy.
    let ledgers: Vec<Ledger> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (base, token, acked) = (&base, &seeded.token, &acked);
                scope.spawn(move || writer(w, base, token, acked))
            })
            .collect();
        crate::harness::wait_until("writes are being acknowledged", Duration::from_secs(120), || {
            acked.load(Ordering::SeqCst) >= KILL_AFTER
        });
        server.kill();
        writers.into_iter().flat_map(|w| w.join().expect("a writer thread")).collect()
    });
    let restarted = Server::start(&seeded.database.url);

    // Assert: each cell is at its last acknowledged write, or at the one unanswered write
    // that followed it (a commit whose answer the kill cut off).
    let agent = agent();
    assert!(acked.load(Ordering::SeqCst) >= KILL_AFTER);
    for ledger in &ledgers {
        let stored = read_cell(&agent, &restarted.base, &seeded.token, &ledger.date);
        let note = stored.entry["note"].as_str().map(str::to_owned);
        if stored.version == ledger.acked_version + 1 && ledger.unanswered_note.is_some() {
            assert_eq!(note, ledger.unanswered_note, "{}: the in-flight write committed", ledger.date);
        } else {
            assert_eq!(stored.version, ledger.acked_version, "{}: the acknowledged version", ledger.date);
            assert_eq!(note, ledger.acked_note, "{}: the acknowledged write", ledger.date);
        }
    }
}
