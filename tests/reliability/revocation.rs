//! The auth cache's bound: a login revoked by one server process stops working in another
//! process on the same database within `WPDS_AUTH_CACHE_TTL_MS`, and at once in the process
//! that revoked it.

use crate::harness::{Seeded, Server, agent, cell, issue_pair, put_cell, wait_until};
use serde_json::json;
use std::time::{Duration, Instant};

const TTL_MS: u64 = 1000;

/// `POST /v1/auth/refresh` with `refresh_token`; the status.
fn refresh(agent: &ureq::Agent, base: &str, refresh_token: &str) -> u16 {
    agent
        .post(format!("{base}/v1/auth/refresh"))
        .send_json(json!({ "refreshToken": refresh_token }))
        .expect("an answer")
        .status()
        .as_u16()
}

#[test]
fn a_login_revoked_in_one_process_stops_working_in_another_within_the_cache_ttl() {
    // Arrange: two processes on one database; B has just served the access token, so B's
    // cache holds it.
    let seeded = Seeded::new();
    let settings = [("WPDS_AUTH_CACHE_TTL_MS", "1000")];
    let a = Server::start_with(&seeded.database.url, &settings);
    let b = Server::start_with(&seeded.database.url, &settings);
    let (access, refresh_token) = issue_pair(&seeded.database.url);
    let agent = agent();
    let write = |server: &Server, expected: i64| {
        put_cell(&agent, &server.base, &access, &cell("2024-03-01", "1", "revocation", expected))
            .expect("an answer")
            .status
    };
    assert_eq!(write(&b, 1), 200, "the fresh login works on B");

    // Act: spending the refresh token twice on A revokes the whole login (reuse detection).
    assert_eq!(refresh(&agent, &a.base, &refresh_token), 200);
    assert_eq!(refresh(&agent, &a.base, &refresh_token), 401);
    let revoked = Instant::now();

    // Assert: A refuses the access token at once; B within the TTL (plus polling slack).
    assert_eq!(write(&a, 2), 401, "the revoking process never serves the revoked login");
    wait_until("B refuses the revoked login", Duration::from_millis(TTL_MS + 500), || write(&b, 2) == 401);
    eprintln!("B refused the revoked login after {:?} (TTL {TTL_MS} ms)", revoked.elapsed());
}
