//! The contract's precedence where it was revised on 2026-11-23: a path parameter that
//! breaks its schema is 400 before 403 (a workspace `01` names nothing, so saying so
//! reveals nothing), for members and administrators alike.

use crate::support::{MEMBER, OUTSIDER, spawn_app};
use serde_json::json;

fn takeoff(workspace: &str) -> String {
    format!("/v1/workspaces/{workspace}/assistant/imports/88/takeoff")
}

fn mappings() -> serde_json::Value {
    json!({"projectId": "7", "mappings": [], "expectedVersion": 1})
}

#[test]
fn a_malformed_workspace_id_is_400_before_403_for_a_non_member() {
    // Arrange: a user who is a member of workspace 2 only.
    let app = spawn_app();
    let outsider = app.tokens_for(OUTSIDER).access_token;

    // Act
    let response = app.request("PUT", &takeoff("01")).bearer(&outsider).json(&mappings()).send();

    // Assert: the path's schema answers first; a well-formed foreign workspace is still 403.
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.problem_errors(),
        [("path".to_owned(), "workspaceId".to_owned(), "pattern".to_owned())]
    );
    let response = app.request("PUT", &takeoff("1")).bearer(&outsider).json(&mappings()).send();
    assert_eq!(response.status, 403, "{}", response.text());
}

#[test]
fn a_malformed_company_id_is_400_before_403_for_a_non_administrator() {
    let app = spawn_app();
    let member = app.tokens_for(MEMBER).access_token;
    let body = json!({"reason": "merged"});
    let response =
        app.request("POST", "/admin/api/global-companies/0123/retire").bearer(&member).json(&body).send();
    assert_eq!(response.status, 400, "{}", response.text());
    assert_eq!(
        response.problem_errors(),
        [("path".to_owned(), "companyId".to_owned(), "pattern".to_owned())]
    );
    let response =
        app.request("POST", "/admin/api/global-companies/204/retire").bearer(&member).json(&body).send();
    assert_eq!(response.status, 403, "{}", response.text());
}

#[test]
fn without_a_token_401_still_comes_first() {
    let app = spawn_app();
    let response = app.request("PUT", &takeoff("01")).anonymous().json(&mappings()).send();
    assert_eq!(response.status, 401);
}
