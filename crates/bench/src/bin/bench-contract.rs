//! `bench-contract`: what the contract costs a request, measured where it lives. It calls
//! the server's own request validation ([`wpds_contract::validation::Contract`]) and
//! problem rendering ([`wpds::http::problem::respond`]) directly, on the write request of
//! `scripts/bench`'s load (`PUT …/time-log/cells`, `scripts/lib/bench/write.lua`'s body),
//! and prints one JSON line of nanoseconds per call (the median of several timed batches):
//!
//! - `validateNs`: validating the accepted write request (path, headers, body), which every
//!   request of the load pays;
//! - `problem400Ns`: validating a request that breaks the schema (hours out of pattern) and
//!   rendering its 400 problem+json;
//! - `problem409Ns`: rendering the 409 `version_conflict` problem of a stale write, with
//!   the current cell.
//!
//! `scripts/bench` puts them beside the server's CPU per answer of the write load from the
//! same run. Usage: `bench-contract [ITERATIONS]` (default 100 000 per batch, 5 batches).

use std::hint::black_box;
use std::time::Instant;
use wpds::error::ApiError;
use wpds::http::problem;
use wpds_contract::validation::{Contract, RawRequest};
use wpds_storage::error::{StoreError, VersionConflict};

/// The operation the load drives.
const OPERATION: &str = "setOwnTimeLogCell";
/// Its path parameters, as the router matches them.
const PATH: &[(&str, &str)] = &[("workspaceId", "1")];
/// The request path.
const URI: &str = "/v1/workspaces/1/time-log/cells";
/// The load's body (write.lua).
const BODY: &[u8] = br#"{"projectId":"1","date":"2026-01-01","hours":"7.5","expectedVersion":2}"#;
/// The same with hours the schema refuses.
const BAD_BODY: &[u8] = br#"{"projectId":"1","date":"2026-01-01","hours":"7.555","expectedVersion":2}"#;
/// Timed batches; the median is printed.
const BATCHES: usize = 5;

fn main() {
    let iterations: u32 = match std::env::args().nth(1).map(|arg| arg.parse()) {
        None => 100_000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: bench-contract [ITERATIONS > 0]");
            std::process::exit(2);
        }
    };
    let contract = match Contract::load() {
        Ok(contract) => contract,
        Err(e) => {
            eprintln!("bench-contract: the document does not load: {e}");
            std::process::exit(1);
        }
    };
    let headers: &[(&str, &str)] = &[("content-type", "application/json"), ("authorization", "Bearer x")];
    let request =
        |body: &'static [u8]| RawRequest { path: PATH, query: "", headers: &headers, body: Some(body) };
    if let Err(e) = contract.validate(OPERATION, request(BODY)) {
        eprintln!("bench-contract: the load's request does not validate: {e:?}");
        std::process::exit(1);
    }
    let req = actix_web::test::TestRequest::put().uri(URI).to_http_request();

    let validate = median_ns(iterations, || {
        black_box(contract.validate(OPERATION, request(black_box(BODY))).is_ok());
    });
    let problem_400 = median_ns(iterations, || {
        let refused = contract.validate(OPERATION, request(black_box(BAD_BODY)));
        let Err(violations) = refused else { panic!("the bad body validated") };
        black_box(problem::respond(&req, ApiError::Validation(violations)));
    });
    let problem_409 = median_ns(iterations, || {
        black_box(problem::respond(&req, stale_write()));
    });
    println!(
        r#"{{"validateNs":{validate:.0},"problem400Ns":{problem_400:.0},"problem409Ns":{problem_409:.0}}}"#
    );
}

/// The error of a stale write of the load's cell, as storage reports it.
fn stale_write() -> ApiError {
    ApiError::from(StoreError::VersionConflict(Box::new(VersionConflict {
        detail: "The cell is at version 3, not 2.".to_owned(),
        current_version: Some(3),
        current_revision: None,
        current: Some(serde_json::json!({
            "projectId": "1", "date": "2026-01-01", "phase": "general", "hours": "7.50",
            "note": null, "version": 3, "updatedAt": "2026-11-27T10:00:00.000Z"
        })),
        conflicts: None,
    })))
}

/// Nanoseconds per call of `work`: the median of [`BATCHES`] batches of `iterations` calls.
fn median_ns(iterations: u32, mut work: impl FnMut()) -> f64 {
    for _ in 0..iterations.min(1_000) {
        work(); // warm-up
    }
    let mut batches: Vec<f64> = (0..BATCHES)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..iterations {
                work();
            }
            started.elapsed().as_nanos() as f64 / f64::from(iterations)
        })
        .collect();
    batches.sort_by(f64::total_cmp);
    batches[BATCHES / 2]
}
