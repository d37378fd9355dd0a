//! Cross-origin calls from browser pages: origins on `WPDS_CORS_ORIGINS` get a preflight
//! answer before authentication and CORS headers on every answer (exposing the headers a
//! client reads); any other origin gets none, and its request is served as if it came
//! without an `Origin` (the browser, not the server, keeps the answer from the page). The
//! browser itself is tried in scripts/check-swagger-ui.

use crate::support::{TestApp, spawn_app, spawn_app_with};

const ALLOWED: &str = "http://127.0.0.1:9999";
const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";
const CELLS: &str = "/v1/workspaces/1/time-log/cells";

fn app_allowing(origin: &str) -> TestApp {
    spawn_app_with(|config| config.cors_origins = vec![origin.to_owned()])
}

fn preflight(app: &TestApp, origin: &str) -> crate::support::TestResponse {
    app.request("OPTIONS", CELLS)
        .anonymous()
        .header("origin", origin)
        .header("access-control-request-method", "PUT")
        .header("access-control-request-headers", "authorization, content-type")
        .send()
}

#[test]
fn an_allowed_origin_gets_its_preflight_answered_before_authentication() {
    let app = app_allowing(ALLOWED);
    let response = preflight(&app, ALLOWED);
    assert!((200..300).contains(&response.status), "{} {}", response.status, response.text());
    assert_eq!(response.header("access-control-allow-origin"), Some(ALLOWED));
    let methods = response.header("access-control-allow-methods").unwrap_or_default().to_ascii_uppercase();
    assert!(methods.contains("PUT"), "{methods}");
    let headers = response.header("access-control-allow-headers").unwrap_or_default().to_ascii_lowercase();
    assert!(headers.contains("authorization") && headers.contains("content-type"), "{headers}");
    assert!(response.header("x-request-id").is_some(), "the preflight passes the edge too");
}

#[test]
fn an_allowed_origin_may_read_the_answer_and_the_headers_a_client_needs() {
    let app = app_allowing(ALLOWED);
    let response = app.request("GET", RECEIPTS).header("origin", ALLOWED).send();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("access-control-allow-origin"), Some(ALLOWED));
    let exposed = response.header("access-control-expose-headers").unwrap_or_default().to_ascii_lowercase();
    for name in
        ["x-request-id", "retry-after", "idempotent-replayed", "location", "ratelimit-policy", "ratelimit"]
    {
        assert!(exposed.contains(name), "{name} in {exposed}");
    }
    // A refusal carries the headers too, so a page can read the problem.
    let refused = app.request("GET", RECEIPTS).anonymous().header("origin", ALLOWED).send();
    assert_eq!(refused.status, 401);
    assert_eq!(refused.header("access-control-allow-origin"), Some(ALLOWED));
}

#[test]
fn another_origin_gets_no_cors_headers_and_its_request_is_served_as_usual() {
    let app = app_allowing(ALLOWED);
    let response = preflight(&app, "http://127.0.0.1:8888");
    assert_eq!(response.header("access-control-allow-origin"), None);
    let response = app.request("GET", RECEIPTS).header("origin", "http://127.0.0.1:8888").send();
    assert_eq!(response.status, 200, "a non-browser client sending Origin is not broken");
    assert_eq!(response.header("access-control-allow-origin"), None);
}

#[test]
fn without_allowed_origins_no_page_elsewhere_may_call() {
    let app = spawn_app();
    let response = preflight(&app, ALLOWED);
    assert_eq!(response.status, 405, "OPTIONS is not an operation");
    assert_eq!(response.header("access-control-allow-origin"), None);
    let response = app.request("GET", RECEIPTS).header("origin", ALLOWED).send();
    assert_eq!(response.header("access-control-allow-origin"), None);
}
