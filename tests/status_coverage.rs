//! Run by `scripts/check-status-coverage` after the suite: every status the document
//! declares for every operation was answered to some test. A target of its own that
//! `cargo test` leaves out (`test = false` in `Cargo.toml`): it reads what the whole suite
//! wrote, so it runs only when asked for (`cargo test --test status_coverage`).

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use std::collections::BTreeSet;

#[test]
fn every_documented_status_of_every_operation_was_produced_by_some_test() {
    let log = std::env::var("WPDS_STATUS_LOG").expect("WPDS_STATUS_LOG names the suite's status log");
    let seen: BTreeSet<(String, u16)> = std::fs::read_to_string(&log)
        .expect("the status log exists")
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter_map(|(op, status)| Some((op.to_owned(), status.parse().ok()?)))
        .collect();
    let mut missing = Vec::new();
    for op in wpds_document::operations::collect(wpds_contract::document::parsed()) {
        for status in &op.statuses {
            if !seen.contains(&(op.id.clone(), *status)) {
                missing.push(format!("{} {status}", op.id));
            }
        }
    }
    let undocumented: Vec<_> = seen
        .iter()
        .filter(|(op, status)| {
            wpds_document::operations::collect(wpds_contract::document::parsed())
                .iter()
                .any(|o| &o.id == op && !o.statuses.contains(status))
        })
        .collect();
    assert!(undocumented.is_empty(), "statuses answered but not documented: {undocumented:?}");
    assert!(missing.is_empty(), "documented statuses no test produced:\n{}", missing.join("\n"));
}
