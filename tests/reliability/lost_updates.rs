//! Issue 6, test 1: no lost updates. 32 clients each try 200 optimistic writes of one
//! time-log cell, re-reading the version from each 409; on PostgreSQL through two server
//! processes sharing the database, on SQLite through one.

use crate::harness::{Seeded, Server, agent, cell, machine_to_itself, put_cell, race, read_cell};
use std::sync::Barrier;

const CLIENTS: usize = 32;
const ATTEMPTS: usize = 200;
const DATE: &str = "2024-02-29";

/// A write the server acknowledged with 200.
#[derive(Debug, Clone)]
struct Ack {
    version: i64,
    hours: String,
    note: String,
}

/// One client: `ATTEMPTS` writes, each expecting the last version it saw (its own 200's
/// version, or the `currentVersion` of a 409).
fn client(id: usize, base: &str, token: &str, start: &Barrier) -> Vec<Ack> {
    let agent = agent();
    let mut expected = 1;
    let mut acks = Vec::new();
    start.wait();
    for attempt in 0..ATTEMPTS {
        let hours = format!("{}.{:02}", id % 24, attempt % 100);
        let note = format!("client {id} attempt {attempt}");
        let answer = put_cell(&agent, base, token, &cell(DATE, &hours, &note, expected))
            .unwrap_or_else(|e| panic!("client {id}: no answer: {e}"));
        match answer.status {
            200 => {
                let entry = &answer.body["entry"];
                let version = entry["version"].as_i64().expect("a version");
                assert_eq!(version, expected + 1, "a 200 advances the expected version by one");
                assert_eq!(entry["note"], note.as_str());
                acks.push(Ack { version, hours: entry["hours"].as_str().expect("hours").to_owned(), note });
                expected = version;
            }
            409 => {
                assert_eq!(answer.body["code"], "version_conflict");
                expected = answer.body["currentVersion"].as_i64().expect("currentVersion");
            }
            other => panic!("client {id}: unexpected {other}: {}", answer.body),
        }
    }
    acks
}

#[test]
fn no_acknowledged_write_is_lost_when_32_clients_race_on_one_cell() {
    let _machine = machine_to_itself();
    // Arrange: two processes on one PostgreSQL database, or one on SQLite.
    let seeded = Seeded::new();
    let processes = if seeded.is_postgres() { 2 } else { 1 };
    let servers: Vec<Server> = (0..processes).map(|_| Server::start(&seeded.database.url)).collect();

    // Act: client i talks to server i mod processes.
    let mut acks: Vec<Ack> = race(CLIENTS, &servers, &seeded.token, client);

    // Assert: every 200 made its own version, with no gap, and the cell holds the last one.
    assert!(!acks.is_empty(), "some writes succeeded");
    acks.sort_by_key(|a| a.version);
    let versions: Vec<i64> = acks.iter().map(|a| a.version).collect();
    let expected: Vec<i64> = (2..).take(acks.len()).collect();
    assert_eq!(versions, expected, "each acknowledged write has its own version, none skipped");
    let stored = read_cell(&agent(), &servers[0].base, &seeded.token, DATE);
    let last = acks.last().expect("a last write");
    assert_eq!(stored.version, 1 + acks.len() as i64, "final version = 1 + number of 200s");
    assert_eq!(stored.entry["hours"], last.hours.as_str(), "the hours of the last acknowledged write");
    assert_eq!(stored.entry["note"], last.note.as_str(), "the last acknowledged write's own note");
}
