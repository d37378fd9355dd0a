//! Authentication and authorisation: bearer tokens, memberships, administrators, and
//! refresh-token rotation with reuse detection.

use crate::support::{ADMIN, MEMBER, OUTSIDER, TestApp, TestResponse, spawn_app};
use serde_json::json;
use std::time::Duration;
use wpds_storage::repos::auth::TokenLifetimes;

const CELLS: &str = "/v1/workspaces/1/time-log/cells";
const RETIRE: &str = "/admin/api/global-companies/204/retire";

fn cell() -> serde_json::Value {
    json!({"projectId": "7", "date": "2026-11-20", "hours": "7.5", "expectedVersion": 1})
}

/// `refreshToken` with `token`, as a client sends it (no bearer token).
fn refresh(app: &TestApp, token: &str) -> TestResponse {
    app.request("POST", "/v1/auth/refresh").anonymous().json(&json!({"refreshToken": token})).send()
}

#[test]
fn a_request_without_a_token_is_401_with_a_bearer_challenge() {
    let app = spawn_app();
    let response = app.request("PUT", CELLS).anonymous().json(&cell()).send();
    assert_eq!(response.status, 401);
    assert_eq!(response.json()["code"], "unauthenticated");
    assert_eq!(response.header("www-authenticate"), Some("Bearer"));
}

#[test]
fn an_unknown_or_malformed_token_is_401_invalid_token() {
    let app = spawn_app();
    for header in ["Bearer at_not-a-real-token", "Basic dXNlcjpwYXNz", "Bearer", "Bearer a b"] {
        let response =
            app.request("PUT", CELLS).anonymous().header("authorization", header).json(&cell()).send();
        assert_eq!(response.status, 401, "{header}");
        assert_eq!(response.header("www-authenticate"), Some("Bearer error=\"invalid_token\""), "{header}");
    }
}

#[test]
fn an_expired_access_token_is_401() {
    let app = spawn_app();
    let pair =
        app.tokens_with(MEMBER, TokenLifetimes { access: Duration::ZERO, refresh: Duration::from_secs(60) });
    let response = app.request("PUT", CELLS).bearer(&pair.access_token).json(&cell()).send();
    assert_eq!(response.status, 401);
}

#[test]
fn a_token_precedes_every_other_check() {
    let app = spawn_app();
    let response =
        app.request("PUT", CELLS).anonymous().header("content-type", "text/plain").raw(b"x".to_vec()).send();
    assert_eq!(response.status, 401, "401 before 415");
    let response = app.request("PUT", CELLS).anonymous().json(&json!({"hours": "100"})).send();
    assert_eq!(response.status, 401, "401 before 400");
}

#[test]
fn a_member_of_another_workspace_is_forbidden() {
    let app = spawn_app();
    let outsider = app.tokens_for(OUTSIDER).access_token;
    let response = app.request("PUT", CELLS).bearer(&outsider).json(&json!({"hours": "100"})).send();
    assert_eq!(response.status, 403, "403 before 400");
    assert_eq!(response.json()["code"], "forbidden");
    let member = app.tokens_for(MEMBER).access_token;
    for workspace in ["2", "999", "99999999999999999999", "abc"] {
        let path = format!("/v1/workspaces/{workspace}/time-log/cells");
        assert_eq!(app.request("PUT", &path).bearer(&member).json(&cell()).send().status, 403, "{workspace}");
    }
}

#[test]
fn a_non_administrator_is_refused_on_the_admin_api() {
    let app = spawn_app();
    let member = app.tokens_for(MEMBER).access_token;
    let response = app.request("POST", RETIRE).bearer(&member).json(&json!({"reason": "dup"})).send();
    assert_eq!(response.status, 403);
    let path = "/admin/api/assistant/workspaces/1/credit-resets";
    let body = json!({"userId": "5", "cycle": "current", "reason": "x"});
    assert_eq!(app.request("POST", path).bearer(&member).json(&body).send().status, 403);
    // ... and the same call of an administrator is the operation's own: company 204 retired.
    let admin = app.tokens_for(ADMIN).access_token;
    let retired = app.request("POST", RETIRE).bearer(&admin).json(&json!({"reason": "dup"})).send();
    assert_eq!(retired.status, 201, "{}", retired.text());
    assert!(retired.json()["retiredAt"].is_string(), "{}", retired.text());
}

#[test]
fn refresh_rotates_the_pair_and_the_new_access_token_works() {
    let app = spawn_app();
    let first = app.tokens_for(MEMBER);
    let response = refresh(&app, &first.refresh_token);
    assert_eq!(response.status, 200);
    let pair = response.json();
    assert_eq!(pair["tokenType"], "Bearer");
    assert_eq!((pair["expiresIn"].as_i64(), pair["refreshExpiresIn"].as_i64()), (Some(900), Some(2_592_000)));
    let access = pair["accessToken"].as_str().unwrap();
    assert_ne!(access, first.access_token);
    assert_ne!(pair["refreshToken"], first.refresh_token.as_str());
    assert_eq!(app.request("PUT", CELLS).bearer(access).json(&cell()).send().status, 200);
}

#[test]
fn an_answer_carrying_tokens_may_not_be_stored_by_any_cache() {
    // Arrange: a fresh login's refresh token.
    let app = spawn_app();
    let first = app.tokens_for(MEMBER);

    // Act: refresh it.
    let response = refresh(&app, &first.refresh_token);

    // Assert: RFC 6749 section 5.1's fields, as the document declares them.
    assert_eq!(response.status, 200);
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(response.header("pragma"), Some("no-cache"));
}

#[test]
fn a_spent_refresh_token_revokes_every_token_of_its_login() {
    let app = spawn_app();
    let first = app.tokens_for(MEMBER);
    let second = refresh(&app, &first.refresh_token).json();
    let (access, next_refresh) =
        (second["accessToken"].as_str().unwrap(), second["refreshToken"].as_str().unwrap());
    assert_eq!(app.request("PUT", CELLS).bearer(access).json(&cell()).send().status, 200);

    let reuse = refresh(&app, &first.refresh_token);
    assert_eq!(reuse.status, 401);
    assert_eq!(reuse.json()["code"], "invalid_grant");
    assert_eq!(reuse.header("www-authenticate"), Some("Bearer error=\"invalid_token\""));

    assert_eq!(
        app.request("PUT", CELLS).bearer(access).json(&cell()).send().status,
        401,
        "the login's access token is revoked"
    );
    assert_eq!(refresh(&app, next_refresh).status, 401, "the login's newest refresh token is revoked");
    let other_login = app.tokens_for(MEMBER);
    assert_eq!(refresh(&app, &other_login.refresh_token).status, 200, "other logins are untouched");
}

#[test]
fn unknown_and_expired_refresh_tokens_are_the_same_invalid_grant() {
    let app = spawn_app();
    let expired =
        app.tokens_with(MEMBER, TokenLifetimes { access: Duration::from_secs(60), refresh: Duration::ZERO });
    for token in ["rt_unknown", expired.refresh_token.as_str(), expired.access_token.as_str()] {
        let response = refresh(&app, token);
        assert_eq!(response.status, 401, "{token}");
        assert_eq!(response.json()["code"], "invalid_grant");
        assert_eq!(response.json()["detail"], "The refresh token is not valid.");
    }
}
