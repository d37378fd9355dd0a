//! The whole answer of every problem code (`ProblemCode`, from the document's `components.x-problem-codes`),
//! snapshotted with insta, as crates.io does: status, the headers that are part of that
//! code's contract, and the entire problem+json body. A change to any title, detail,
//! `errors[]` entry, `current` record or header shows up as a snapshot diff to review
//! (`tests/api/snapshots/`; README, "Test it"). The snapshots are the same on SQLite and
//! PostgreSQL: both engines run this module against the same files.
//!
//! Every code is provoked by a real request to the running server, `internal` and
//! `unavailable` included (a table renamed, a lock held past the database timeout, the
//! memory for bodies taken); `unavailable` has a snapshot for each of its two causes.
//!
//! Each request sends its own `X-Request-Id`, which the server echoes as `traceId`
//! (`http_errors.rs` checks that a minted one is a UUID), so `traceId` needs no redaction.
//! The only values redacted are those of the rate limiter, which depend on the wall clock
//! (see [`a_request_beyond_the_limit_answers_rate_limited`]).

use crate::support::{
    MEMBER, OUTSIDER, TestApp, TestResponse, lock, raw_connection, spawn_app, spawn_app_with,
};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The `X-Request-Id` every request here sends, and so every body's `traceId`.
const TRACE_ID: &str = "problem-snapshot";

const CELLS: &str = "/v1/workspaces/1/time-log/cells";
const REFRESH: &str = "/v1/auth/refresh";
const LINKS: &str = "/v1/workspaces/1/contacts/company-links";
const EXPORTS: &str = "/v1/workspaces/1/cross-project-reports/exports";
const SEATING: &str = "/v1/workspaces/1/categories/3/settings";

fn takeoff(import: &str) -> String {
    format!("/v1/workspaces/1/assistant/imports/{import}/takeoff")
}

fn takeoff_body(project: &str, expected_version: i64) -> Value {
    json!({"projectId": project, "expectedVersion": expected_version, "groupingLevel": "total", "areaMappings": []})
}

fn cell() -> Value {
    json!({"projectId": "7", "date": "2026-11-20", "hours": "7.5", "expectedVersion": 1})
}

/// What is snapshotted of an answer: its status, `headers` (plus `content-type`, part of
/// every problem's contract; a header the answer lacks is `null`) and its whole body.
fn answer(response: &TestResponse, headers: &[&str]) -> Value {
    assert_eq!(response.header("x-request-id"), Some(TRACE_ID), "{}", response.text());
    let named: Map<String, Value> = ["content-type"]
        .iter()
        .chain(headers)
        .map(|name| ((*name).to_owned(), response.header(name).map_or(Value::Null, |v| json!(v))))
        .collect();
    json!({"status": response.status, "headers": named, "body": response.json()})
}

/// The answer as pretty JSON, numbers as sent. (`assert_json_snapshot!` would show every
/// number as `{"$serde_json::private::Number": "409"}`: the workspace's serde_json reads
/// numbers losslessly, with `arbitrary_precision`, which insta's serializer does not know.)
fn pretty(answer: &Value) -> String {
    serde_json::to_string_pretty(answer).expect("JSON")
}

/// Sends a request with [`TRACE_ID`].
fn request<'a>(app: &'a TestApp, method: &str, path: &str) -> crate::support::RequestBuilder<'a> {
    app.request(method, path).header("x-request-id", TRACE_ID)
}

#[test]
fn a_body_breaking_the_schema_answers_validation_failed() {
    let app = spawn_app();
    let body = json!({"mainCompanyId": "061", "mainPersonId": "610", "note": "x"});
    let response = request(&app, "POST", LINKS).json(&body).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_request_without_a_token_answers_unauthenticated() {
    let app = spawn_app();
    let response = request(&app, "PUT", CELLS).anonymous().json(&cell()).send();
    insta::assert_snapshot!(pretty(&answer(&response, &["www-authenticate"])));
}

#[test]
fn an_unknown_refresh_token_answers_invalid_grant() {
    let app = spawn_app();
    let body = json!({"refreshToken": "rt_unknown"});
    let response = request(&app, "POST", REFRESH).anonymous().json(&body).send();
    insta::assert_snapshot!(pretty(&answer(&response, &["www-authenticate"])));
}

#[test]
fn a_member_of_another_workspace_answers_forbidden() {
    let app = spawn_app();
    let outsider = app.tokens_for(OUTSIDER).access_token;
    let response = request(&app, "PUT", CELLS).bearer(&outsider).json(&cell()).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn an_import_the_workspace_does_not_have_answers_not_found() {
    let app = spawn_app();
    let response = request(&app, "PUT", &takeoff("999")).json(&takeoff_body("7", 1)).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_method_the_path_lacks_answers_method_not_allowed() {
    let app = spawn_app();
    let response = request(&app, "DELETE", CELLS).send();
    insta::assert_snapshot!(pretty(&answer(&response, &["allow"])));
}

#[test]
fn an_accept_header_excluding_json_answers_not_acceptable() {
    let app = spawn_app();
    let response = request(&app, "PUT", CELLS).header("accept", "text/html").json(&cell()).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_body_that_stalls_answers_request_timeout() {
    // A body timeout of 300 ms; 100 bytes announced, 10 sent, then nothing.
    let app = spawn_app_with(|config| config.body_timeout_ms = 300);
    let head = format!(
        "PUT {CELLS} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nX-Request-Id: {TRACE_ID}\r\n\
         Content-Type: application/json\r\nContent-Length: 100",
        app.token
    );
    let (response, closed) = app.send_raw(&head, br#"{"a": "b""#);
    assert!(closed, "the connection is closed after the 408");
    insta::assert_snapshot!(pretty(&answer(&response, &["connection"])));
}

#[test]
fn a_body_over_one_mebibyte_answers_payload_too_large() {
    let app = spawn_app();
    let mut body = cell();
    body["note"] = json!("x".repeat(1024 * 1024));
    let response = request(&app, "PUT", CELLS).json(&body).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_body_that_is_not_json_answers_unsupported_media_type() {
    let app = spawn_app();
    let response =
        request(&app, "PUT", CELLS).header("content-type", "text/plain").raw(b"hours=7.5".to_vec()).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_stale_expected_version_answers_version_conflict() {
    // Import 88 is at version 5: `current` is the import as a 200 shows it.
    let app = spawn_app();
    let response = request(&app, "PUT", &takeoff("88")).json(&takeoff_body("7", 4)).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn retiring_a_retired_company_answers_already_retired() {
    // Company 205 was retired in the demo data.
    let app = spawn_app();
    let response = request(&app, "POST", "/admin/api/global-companies/205/retire")
        .json(&json!({"reason": "cleanup"}))
        .send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn editing_the_takeoff_of_another_kind_of_import_answers_import_kind_mismatch() {
    // Import 89 is a project_items import.
    let app = spawn_app();
    let response = request(&app, "PUT", &takeoff("89")).json(&takeoff_body("12", 1)).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn editing_a_published_import_answers_import_not_editable() {
    // Import 90 is a published takeoff import.
    let app = spawn_app();
    let response = request(&app, "PUT", &takeoff("90")).json(&takeoff_body("12", 1)).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_code_held_by_another_record_answers_code_taken() {
    // DESK is category 4's code.
    let app = spawn_app();
    let body =
        json!({"expectedRevision": 7, "productTypeCodeOps": [{"productTypeId": "21", "code": "DESK"}]});
    let response = request(&app, "PATCH", SEATING).json(&body).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_second_live_link_between_two_companies_answers_link_exists() {
    // Link 8 joins companies 61 and 63; asked the other way round.
    let app = spawn_app();
    let response =
        request(&app, "POST", LINKS).json(&json!({"mainCompanyId": "63", "repCompanyId": "61"})).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn a_request_id_reused_with_another_body_answers_idempotency_key_reused() {
    let app = spawn_app();
    let export = |name: &str| {
        json!({
            "requestId": "7f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
            "name": name,
            "configuration": {
                "version": 1,
                "projectScope": {"mode": "fixed", "projectIds": ["7", "12"]},
                "filters": {"search": "chair", "categoryIds": ["3"], "attributes": []},
                "groupBy": ["project", "category"],
                "columns": ["project", "category", "product", "quantity", "extendedCost"],
                "attributeColumns": [],
                "metrics": ["count", "extendedCost"],
                "sort": {"key": "extendedCost", "direction": "desc"},
            },
        })
    };
    assert_eq!(app.send_json("POST", EXPORTS, &export("Q4 cost review")).status, 201);
    let response = request(&app, "POST", EXPORTS).json(&export("Q1 cost review")).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

#[test]
fn unknown_companies_and_persons_answer_unprocessable() {
    // 71 and 710 are workspace 2's; 999 and 0042 name nothing.
    let app = spawn_app();
    let body =
        json!({"mainCompanyId": "71", "repCompanyId": "999", "mainPersonId": "710", "repPersonId": "0042"});
    let response = request(&app, "POST", LINKS).json(&body).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

/// The rate limiter counts in fixed one-minute windows of the wall clock, so the seconds
/// left in the window (`Retry-After`, the `t=` of `RateLimit` and the number in `detail`)
/// differ from run to run: each is checked to be the same number, in 1..=60, and then
/// redacted to `[seconds]`. Everything else is snapshotted as sent.
#[test]
fn a_request_beyond_the_limit_answers_rate_limited() {
    let app = spawn_app_with(|config| config.rate_limit_per_minute = 1);
    let token = app.tokens_for(MEMBER).access_token;
    // The first request is within the limit; the second is beyond it, unless a new window
    // began between the two (then the next one is).
    let limited = (0..3)
        .map(|_| request(&app, "PUT", CELLS).bearer(&token).json(&cell()).send())
        .find(|response| response.status == 429)
        .expect("a 429 within three requests");
    let mut snapshot = answer(&limited, &["retry-after", "ratelimit-policy", "ratelimit"]);

    let seconds = limited.header("retry-after").expect("Retry-After").to_owned();
    let wait: u32 = seconds.parse().expect("Retry-After in seconds");
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let redact = |value: &mut Value, expected: String, redacted: &str| {
        assert_eq!(value.as_str(), Some(expected.as_str()));
        *value = json!(redacted);
    };
    redact(&mut snapshot["headers"]["retry-after"], seconds.clone(), "[seconds]");
    redact(
        &mut snapshot["headers"]["ratelimit"],
        format!("\"per-user\";r=0;t={seconds}"),
        "\"per-user\";r=0;t=[seconds]",
    );
    redact(
        &mut snapshot["body"]["detail"],
        format!("Too many requests; retry after {seconds} s."),
        "Too many requests; retry after [seconds] s.",
    );
    insta::assert_snapshot!(pretty(&snapshot));
}

/// A storage failure the server does not expect: the table the operation works on is
/// renamed under the running server.
#[test]
fn a_storage_failure_answers_internal() {
    let app = spawn_app();
    raw_connection(&app)
        .batch_execute("ALTER TABLE time_log_entries RENAME TO time_log_entries_gone")
        .unwrap();
    let response = request(&app, "PUT", CELLS).json(&cell()).send();
    insta::assert_snapshot!(pretty(&answer(&response, &[])));
}

/// The database cannot be reached in time: a connection of the test's own holds a lock the
/// operation waits for, past a database timeout of 300 ms.
#[test]
fn a_database_locked_past_the_timeout_answers_unavailable() {
    let app = spawn_app_with(|config| config.database.db_timeout_ms = 300);
    let conn = &mut raw_connection(&app);
    lock(conn, "time_log_entries");
    let response = request(&app, "PUT", CELLS).json(&cell()).send();
    conn.batch_execute("ROLLBACK").unwrap();
    insta::assert_snapshot!(pretty(&answer(&response, &["retry-after"])));
}

/// The other cause of `unavailable`: the memory for request bodies is taken. With 1 MiB
/// for all bodies, two stalled 1 MiB bodies hold it all (the first its share of the
/// processing part, the second, waiting its turn, the whole waiting part), so a third body
/// is refused at once, unread, and its connection closes.
///
/// The order of arrival decides who holds what, and a loaded machine may reorder them: a
/// small body that arrives while only the first stalled body is in takes a sliver of the
/// waiting part and waits its turn, and the second stalled body, finding the waiting part
/// no longer whole, is the one refused. Each attempt therefore runs on a fresh server, and
/// a small body not answered within 2 s (it is waiting) starts the next attempt.
#[test]
fn a_body_while_the_memory_for_bodies_is_taken_answers_unavailable() {
    let refused = (0..5)
        .find_map(|_| refused_while_two_bodies_stall())
        .expect("a 503 while two bodies hold the memory (5 fresh servers tried)");
    let (response, closed) = refused;
    assert!(closed, "the connection is closed after the 503");
    insta::assert_snapshot!(pretty(&answer(&response, &["retry-after", "connection"])));
}

/// One attempt of the test above: `None` when a small body got in (it was answered, or it
/// waits) before both stalled bodies held the memory.
fn refused_while_two_bodies_stall() -> Option<(TestResponse, bool)> {
    use std::io::Write;
    let app = spawn_app_with(|config| {
        config.body_memory_mib = 1;
        // Long enough that the stalled bodies outlast the attempt on a loaded machine.
        config.body_timeout_ms = 30_000;
    });
    let head = |length: usize| {
        format!(
            "PUT {CELLS} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
             X-Request-Id: {TRACE_ID}\r\nContent-Type: application/json\r\nContent-Length: {length}",
            app.token
        )
    };
    let _stalled: Vec<std::net::TcpStream> = (0..2)
        .map(|_| {
            let mut stream = std::net::TcpStream::connect(app.base.trim_start_matches("http://")).unwrap();
            stream.write_all(format!("{}\r\n\r\n{{", head(1024 * 1024)).as_bytes()).unwrap();
            // In order: the first is read before the second arrives, on an idle machine.
            std::thread::sleep(Duration::from_millis(100));
            stream
        })
        .collect();
    // Give the server time to start reading both; then one small body tells.
    std::thread::sleep(Duration::from_millis(200));
    let (response, closed) = app.send_raw_within(&head(2), b"{}", Duration::from_secs(2))?;
    (response.status == 503).then_some((response, closed))
}

/// A code added to the catalogue needs a snapshot here too.
#[test]
fn every_catalogued_code_has_a_snapshot() {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/api/snapshots");
    let snapshots: Vec<String> = std::fs::read_dir(&folder)
        .expect("tests/api/snapshots")
        .map(|entry| entry.expect("a snapshot").path())
        .filter(|path| path.extension().is_some_and(|e| e == "snap"))
        .map(|path| std::fs::read_to_string(path).expect("a readable snapshot"))
        .collect();
    for kind in wpds_contract::problem::ProblemCode::ALL {
        let line = format!("\"code\": \"{kind}\",");
        assert!(snapshots.iter().any(|s| s.contains(&line)), "{kind}: no snapshot in tests/api/snapshots/");
    }
}
