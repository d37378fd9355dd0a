//! The response check the black-box tests rely on catches drift from the document.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

use serde_json::json;
use wpds_contract::responses::ResponseChecker;

const CELLS: &str = "/v1/workspaces/1/time-log/cells";

fn entry() -> serde_json::Value {
    json!({"entry": {"id": "1", "projectId": "7", "phase": "general", "date": "2026-11-20",
                     "hours": "7.50", "note": "", "billable": true, "version": 2}})
}

fn check(status: u16, content_type: &str, body: &serde_json::Value) -> Result<(), String> {
    let checker = ResponseChecker::load().expect("compiles");
    checker.check("PUT", CELLS, status, Some(content_type), body.to_string().as_bytes())
}

#[test]
fn a_response_as_documented_passes() {
    assert_eq!(check(200, "application/json", &entry()), Ok(()));
}

#[test]
fn an_added_response_field_passes_because_responses_are_open() {
    let mut body = entry();
    body["entry"]["addedInAMinorVersion"] = json!(true);
    assert_eq!(check(200, "application/json", &body), Ok(()));
}

#[test]
fn a_missing_or_mistyped_field_is_caught() {
    let mut body = entry();
    body["entry"].as_object_mut().unwrap().remove("billable");
    assert!(check(200, "application/json", &body).unwrap_err().contains("billable"));
    let mut body = entry();
    body["entry"]["version"] = json!("2");
    assert!(check(200, "application/json", &body).is_err());
}

#[test]
fn an_undeclared_status_or_media_type_is_caught() {
    let problem = json!({"type": "/problems/not_found", "title": "Not found", "status": 404,
        "detail": "x", "instance": CELLS, "code": "not_found", "traceId": "t"});
    assert!(check(404, "application/problem+json", &problem).unwrap_err().contains("does not declare 404"));
    assert!(check(200, "application/problem+json", &entry()).unwrap_err().contains("Content-Type"));
}

#[test]
fn a_missing_required_header_or_a_header_breaking_its_schema_is_caught() {
    let checker = ResponseChecker::load().expect("compiles");
    let refresh = "/v1/auth/refresh";
    let headers = |cache: Option<&'static str>| {
        move |name: &str| match name {
            "cache-control" => cache,
            "pragma" => Some("no-cache"),
            _ => None,
        }
    };
    assert_eq!(checker.check_headers("POST", refresh, 200, headers(Some("no-store"))), Ok(()));
    let missing = checker.check_headers("POST", refresh, 200, headers(None)).unwrap_err();
    assert!(missing.contains("required header cache-control is missing"), "{missing}");
    let cacheable = checker.check_headers("POST", refresh, 200, headers(Some("max-age=60"))).unwrap_err();
    assert!(cacheable.contains("header cache-control"), "{cacheable}");
}

#[test]
fn an_integer_header_is_read_as_a_number() {
    let checker = ResponseChecker::load().expect("compiles");
    let retry = |value: &'static str| move |name: &str| (name == "retry-after").then_some(value);
    assert_eq!(checker.check_headers("PUT", CELLS, 503, retry("1")), Ok(()));
    assert!(checker.check_headers("PUT", CELLS, 503, retry("soon")).is_err());
}
