//! Routing, content negotiation, body limits and request ids: every failure is
//! problem+json with the documented status.

use crate::support::spawn_app;
use serde_json::json;

const CELLS: &str = "/v1/workspaces/1/time-log/cells";

#[test]
fn an_unknown_route_is_a_404_problem() {
    let app = spawn_app();
    let response = app.get("/v2/nothing-here");
    assert_eq!(response.status, 404);
    assert_eq!(response.json()["code"], "not_found");
}

#[test]
fn a_method_a_path_lacks_is_a_405_problem_with_allow() {
    let app = spawn_app();
    let response = app.request("DELETE", CELLS).send();
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("PUT"));
    assert_eq!(response.json()["code"], "method_not_allowed");
    let response = app.request("GET", "/v1/auth/refresh").send();
    assert_eq!((response.status, response.header("allow")), (405, Some("POST")));
}

#[test]
fn an_accept_header_excluding_json_is_a_406_problem() {
    let app = spawn_app();
    let body = json!({"refreshToken": "x"});
    let response = app.request("POST", "/v1/auth/refresh").header("accept", "text/html").json(&body).send();
    assert_eq!(response.status, 406);
    assert_eq!(response.json()["code"], "not_acceptable");
    for accept in ["application/json", "*/*", "application/*", "text/html, application/json;q=0.5"] {
        let response = app.request("POST", "/v1/auth/refresh").header("accept", accept).json(&body).send();
        // Past negotiation, to the operation's own answer: `x` is no refresh token.
        assert_eq!(
            (response.status, response.json()["code"].as_str()),
            (401, Some("invalid_grant")),
            "Accept: {accept}: {}",
            response.text()
        );
    }
    let response =
        app.request("POST", "/v1/auth/refresh").header("accept", "application/json;q=0").json(&body).send();
    assert_eq!(response.status, 406);
}

#[test]
fn a_body_over_one_mebibyte_is_a_413_problem() {
    let app = spawn_app();
    let note = "x".repeat(1024 * 1024);
    let body =
        json!({"projectId": "7", "date": "2026-11-20", "hours": "1", "expectedVersion": 1, "note": note});
    let response = app.send_json("PUT", CELLS, &body);
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["code"], "payload_too_large");
}

#[test]
fn a_body_that_is_not_json_is_a_415_problem() {
    let app = spawn_app();
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "application/xml"] {
        let response =
            app.request("PUT", CELLS).header("content-type", content_type).raw(b"hours=1".to_vec()).send();
        assert_eq!(response.status, 415, "{content_type}");
        assert_eq!(response.json()["code"], "unsupported_media_type");
    }
    let response = app.request("PUT", CELLS).raw(b"{}".to_vec()).send();
    assert_eq!(response.status, 415, "a body without a content type");
    let response = app
        .request("PUT", CELLS)
        .header("content-type", "application/json; charset=utf-8")
        .raw(b"{}".to_vec())
        .send();
    assert_eq!(response.status, 400, "JSON with a charset is JSON");
}

#[test]
fn a_well_formed_request_id_is_echoed_and_any_other_is_replaced() {
    let app = spawn_app();
    let response = app.request("GET", "/healthz").header("x-request-id", "trace-42.a:b_c").send();
    assert_eq!(response.header("x-request-id"), Some("trace-42.a:b_c"));
    let response = app.request("GET", "/nowhere").header("x-request-id", "bad id with spaces").send();
    let minted = response.header("x-request-id").expect("an id").to_owned();
    assert_ne!(minted, "bad id with spaces");
    assert!(uuid::Uuid::parse_str(&minted).is_ok(), "a minted id is a UUID: {minted}");
    assert_eq!(response.json()["traceId"], minted);
    let too_long = "a".repeat(129);
    let response = app.request("GET", "/healthz").header("x-request-id", &too_long).send();
    assert_ne!(response.header("x-request-id"), Some(too_long.as_str()));
}

#[test]
fn health_and_readiness_answer_200() {
    let app = spawn_app();
    assert_eq!(app.get("/healthz").status, 200);
    let ready = app.get("/readyz");
    assert_eq!(ready.status, 200);
    assert_eq!(ready.json()["status"], "ready");
}

/// Every `GET` route off the API (probes, documents, Swagger UI, problem pages).
const OFF_API_ROUTES: &[&str] = &[
    "/healthz",
    "/readyz",
    "/openapi.yaml",
    "/openapi.json",
    "/openapi-3.0.json",
    "/",
    "/docs",
    "/docs/",
    "/docs/openapi.json",
    "/docs/swagger-initializer.js",
    "/problems/version_conflict",
];

#[test]
fn head_off_the_api_answers_as_get_without_a_body() {
    let app = spawn_app();
    for path in OFF_API_ROUTES {
        // Identity, so that both answers' lengths are the body's own.
        let get = app.request("GET", path).header("accept-encoding", "identity").send();
        let head = app.request("HEAD", path).header("accept-encoding", "identity").send();
        assert!(matches!(get.status, 200 | 308), "{path}: GET {}", get.status);
        assert_eq!(head.status, get.status, "{path}");
        assert_eq!(head.wire_length, 0, "{path}: a HEAD answer has no body");
        for header in
            ["content-type", "content-length", "location", "cache-control", "content-security-policy"]
        {
            assert_eq!(head.header(header), get.header(header), "{path}: {header}");
        }
    }
}

#[test]
fn another_method_off_the_api_is_a_405_problem_allowing_get_and_head() {
    let app = spawn_app();
    for path in OFF_API_ROUTES {
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let response = app.request(method, path).send();
            assert_eq!(response.status, 405, "{method} {path}");
            assert_eq!(response.header("allow"), Some("GET, HEAD"), "{method} {path}");
            assert_eq!(response.json()["code"], "method_not_allowed", "{method} {path}");
        }
    }
}

#[test]
fn an_unknown_file_of_swagger_ui_is_a_404_problem() {
    let app = spawn_app();
    let response = app.get("/docs/no-such-file.js");
    assert_eq!(response.status, 404);
    assert_eq!(response.json()["code"], "not_found");
}
