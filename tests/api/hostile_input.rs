//! What a hostile or careless client can send, and what it gets back: answers that never
//! grow with the request, text every engine can store, integers read exactly, encoded
//! bodies refused, stalled bodies cut at their deadline, and the security headers.

use crate::support::{spawn_app, spawn_app_with};
use serde_json::{Map, Value, json};
use std::time::Duration;

const CELLS: &str = "/v1/workspaces/1/time-log/cells";
const REFRESH: &str = "/v1/auth/refresh";
const RETIRE: &str = "/admin/api/global-companies/204/retire";
const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";
/// The largest answer any bad request may get.
const ANSWER_LIMIT: usize = 64 * 1024;

fn cell(date: &str, expected_version: &str) -> Vec<u8> {
    format!(r#"{{"projectId": "7", "date": "{date}", "hours": "1", "expectedVersion": {expected_version}}}"#)
        .into_bytes()
}

#[test]
fn an_answer_lists_at_most_100_errors_and_states_how_many_there_were() {
    // Arrange: a refresh body of 85 000 unknown keys (about 1 MB), as a flood would send.
    let app = spawn_app();
    let mut body = Map::new();
    body.insert("refreshToken".to_owned(), json!("x"));
    for i in 0..85_000 {
        body.insert(format!("k{i}"), json!(1));
    }

    // Act
    let response = app.request("POST", REFRESH).anonymous().json(&Value::Object(body)).send();

    // Assert
    assert_eq!(response.status, 400);
    assert_eq!(response.problem_errors().len(), 100);
    let detail = response.json()["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.contains("85000 errors; the first 100 are listed"), "{detail}");
    assert!(response.body.len() < ANSWER_LIMIT, "{} bytes", response.body.len());
}

#[test]
fn a_pointer_or_message_is_cut_to_one_kibibyte() {
    let app = spawn_app();
    let long_key = "k".repeat(10_000);
    let body = json!({"refreshToken": "x", long_key: 1});
    let response = app.request("POST", REFRESH).anonymous().json(&body).send();
    assert_eq!(response.status, 400);
    let errors = response.json()["errors"].clone();
    let pointer = errors[0]["pointer"].as_str().unwrap_or_default();
    assert!(pointer.len() <= 1024 && pointer.ends_with('…'), "{} bytes: {pointer:.40}", pointer.len());
    for error in errors.as_array().into_iter().flatten() {
        assert!(error["message"].as_str().unwrap_or_default().len() <= 1024);
    }
}

#[test]
fn a_query_string_of_unknown_parameters_gets_a_bounded_answer() {
    let app = spawn_app();
    let query: Vec<String> = (0..5_000).map(|i| format!("p{i}=1")).collect();
    let response = app.get(&format!("{RECEIPTS}?{}", query.join("&")));
    assert_eq!(response.status, 400);
    assert_eq!(response.problem_errors().len(), 100);
    assert!(response.body.len() < ANSWER_LIMIT, "{} bytes", response.body.len());
}

#[test]
fn text_holding_u0000_is_refused_with_422_and_nothing_is_stored() {
    // Arrange
    let app = spawn_app();
    let cell = json!({"projectId": "7", "date": "2026-11-20", "hours": "1", "note": "a\u{0}b", "expectedVersion": 1});

    // Act
    let response = app.send_json("PUT", CELLS, &cell);

    // Assert: named like a schema violation; the cell is still unwritten (version 1).
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(response.json()["code"], "unprocessable");
    assert_eq!(
        response.problem_errors(),
        [("body".to_owned(), "/note".to_owned(), "nul_character".to_owned())]
    );
    let clean =
        json!({"projectId": "7", "date": "2026-11-20", "hours": "1", "note": "ab", "expectedVersion": 1});
    assert_eq!(app.send_json("PUT", CELLS, &clean).status, 200, "nothing was stored before");

    // The administrative reason (stored in the audit log) too.
    let response = app.send_json("POST", RETIRE, &json!({"reason": "merged\u{0}"}));
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(
        response.problem_errors(),
        [("body".to_owned(), "/reason".to_owned(), "nul_character".to_owned())]
    );
    assert_eq!(app.send_json("POST", RETIRE, &json!({"reason": "merged"})).status, 201);
}

#[test]
fn a_fraction_however_small_is_not_an_integer() {
    let app = spawn_app();
    let send =
        |body: Vec<u8>| app.request("PUT", CELLS).header("content-type", "application/json").raw(body).send();
    let response = send(cell("2026-11-20", "1.0000000000000000000001"));
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.problem_errors(),
        [("body".to_owned(), "/expectedVersion".to_owned(), "type".to_owned())]
    );
    assert_eq!(send(cell("2026-11-20", "1.5")).status, 400);
}

#[test]
fn integers_spelled_with_a_fraction_or_an_exponent_are_integers() {
    let app = spawn_app();
    let send =
        |body: Vec<u8>| app.request("PUT", CELLS).header("content-type", "application/json").raw(body).send();
    for (date, one) in
        [("2026-11-16", "1.0"), ("2026-11-17", "1e0"), ("2026-11-18", "10e-1"), ("2026-11-19", "0.1e1")]
    {
        let response = send(cell(date, one));
        assert_eq!(response.status, 200, "expectedVersion {one}: {}", response.text());
        assert_eq!(response.json()["entry"]["version"], 2, "expectedVersion {one}");
    }
}

#[test]
fn a_body_with_a_content_encoding_is_a_415_problem() {
    let app = spawn_app();
    for encoding in ["gzip", "br", "deflate, identity"] {
        let response = app
            .request("PUT", CELLS)
            .header("content-encoding", encoding)
            .raw(cell("2026-11-20", "1"))
            .header("content-type", "application/json")
            .send();
        assert_eq!(response.status, 415, "Content-Encoding: {encoding}");
        assert_eq!(response.json()["code"], "unsupported_media_type");
    }
    let response = app
        .request("PUT", CELLS)
        .header("content-encoding", "identity")
        .header("content-type", "application/json")
        .raw(cell("2026-11-20", "1"))
        .send();
    assert_eq!(response.status, 200, "identity is no encoding: {}", response.text());
}

#[test]
fn a_body_that_stalls_is_answered_408_and_its_connection_closes() {
    // Arrange: a short body timeout; every operation that takes a body.
    let app = spawn_app_with(|config| config.body_timeout_ms = 300);
    let operations = [
        ("PUT", "/v1/workspaces/1/projects/7/documents/12/type"),
        ("POST", REFRESH),
        ("PATCH", "/v1/workspaces/1/catalog-families/bulk-edit"),
        ("POST", "/v1/workspaces/1/cross-project-reports/exports"),
        ("PUT", "/v1/workspaces/1/assistant/imports/88/takeoff"),
        ("POST", RETIRE),
        ("PATCH", "/v1/workspaces/1/categories/3/settings"),
        ("POST", "/v1/workspaces/1/contacts/company-links"),
        ("PUT", CELLS),
        ("POST", "/admin/api/assistant/workspaces/1/credit-resets"),
    ];
    for (method, path) in operations {
        // Act: announce 100 bytes, send 10, then nothing.
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: 100",
            app.token
        );
        let started = std::time::Instant::now();
        let (response, closed) = app.send_raw(&head, br#"{"a": "b""#);

        // Assert
        assert_eq!(response.status, 408, "{method} {path}: {}", response.text());
        assert_eq!(response.json()["code"], "request_timeout");
        assert!(closed, "{method} {path}: the connection is closed after the 408");
        assert!(started.elapsed() < Duration::from_secs(5), "{method} {path}: {:?}", started.elapsed());
    }
}

#[test]
fn every_response_carries_the_security_headers() {
    let app = spawn_app();
    let cell = json!({"projectId": "7", "date": "2026-11-20", "hours": "1", "expectedVersion": 1});
    for response in
        [app.get("/healthz"), app.send_json("PUT", CELLS, &cell), app.get("/nowhere"), app.get("/docs/")]
    {
        assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(response.header("x-frame-options"), Some("DENY"));
        assert_eq!(response.header("referrer-policy"), Some("no-referrer"));
        let policy = response.header("content-security-policy").unwrap_or_default();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
    }
    let docs_policy = app.get("/docs/").header("content-security-policy").unwrap_or_default().to_owned();
    assert!(
        docs_policy.contains("script-src 'self'") && docs_policy.contains("connect-src 'self'"),
        "{docs_policy}"
    );
    assert!(
        !docs_policy.contains("unsafe-eval") && !docs_policy.contains("script-src 'self' 'unsafe-inline'")
    );
}

#[test]
fn swagger_ui_keeps_a_pasted_token_out_of_browser_storage() {
    let app = spawn_app();
    let initializer = app.get("/docs/swagger-initializer.js").text();
    assert!(initializer.contains(r#""persistAuthorization": false"#), "{initializer}");
}

#[test]
fn a_file_swagger_ui_does_not_have_is_a_404_problem() {
    let app = spawn_app();
    let response = app.get("/docs/no-such-file.js");
    assert_eq!(response.status, 404);
    assert_eq!(response.header("content-type"), Some("application/problem+json"));
    assert_eq!(response.json()["code"], "not_found");
}
