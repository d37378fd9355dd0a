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
        assert_ne!(response.status, 406, "Accept: {accept}");
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
