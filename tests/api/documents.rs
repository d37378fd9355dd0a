//! `assignDocumentType`: assigning a document type.

use crate::support::{MEMBER, OUTSIDER, spawn_app};
use serde_json::{Value, json};

const DOCUMENT_12: &str = "/v1/workspaces/1/projects/7/documents/12/type";

#[test]
fn assigning_a_type_of_the_documents_scope_answers_the_document_with_its_new_version() {
    let app = spawn_app();
    let response = app.send_json("PUT", DOCUMENT_12, &json!({"typeId": "32", "expectedVersion": 4}));
    assert_eq!(response.status, 200);
    let document = response.json();
    assert_eq!(document["id"], "12");
    assert_eq!(document["projectId"], "7");
    assert_eq!(document["typeId"], "32");
    assert_eq!(document["version"], 5);
    assert_eq!(document["documentTypes"], json!(["31", "32"]), "the workspace's types of scope project");
    assert_eq!(document["scope"], "project");
    assert_ne!(document["updatedAt"], document["createdAt"]);
}

#[test]
fn a_null_type_clears_the_assignment_and_still_raises_the_version() {
    let app = spawn_app();
    let cleared = app.send_json("PUT", DOCUMENT_12, &json!({"typeId": null, "expectedVersion": 4})).json();
    assert_eq!((cleared["typeId"].clone(), cleared["version"].clone()), (Value::Null, json!(5)));
    let again = app.send_json("PUT", DOCUMENT_12, &json!({"typeId": null, "expectedVersion": 5})).json();
    assert_eq!(again["version"], 6, "a write of the same value is still a write");
}

#[test]
fn a_type_that_does_not_apply_to_the_document_is_422() {
    let app = spawn_app();
    for type_id in ["33", "34", "999", "99999999999999999999", "abc"] {
        let response = app.send_json("PUT", DOCUMENT_12, &json!({"typeId": type_id, "expectedVersion": 4}));
        assert_eq!(response.status, 422, "{type_id}");
        assert_eq!(
            response.problem_errors(),
            [("body".into(), "/typeId".into(), "type_not_applicable".into())]
        );
    }
}

#[test]
fn a_stale_version_is_409_with_the_current_document_and_changes_nothing() {
    let app = spawn_app();
    let response = app.send_json("PUT", DOCUMENT_12, &json!({"typeId": "32", "expectedVersion": 3}));
    assert_eq!(response.status, 409);
    let problem = response.json();
    assert_eq!(problem["code"], "version_conflict");
    assert_eq!(problem["currentVersion"], 4);
    assert_eq!(
        (problem["current"]["typeId"].clone(), problem["current"]["version"].clone()),
        (json!("31"), json!(4))
    );
    let still = app.send_json("PUT", DOCUMENT_12, &json!({"typeId": "31", "expectedVersion": 4}));
    assert_eq!(still.status, 200, "version 4 is still current");
}

#[test]
fn the_rules_answer_in_order_404_then_422_then_409() {
    let app = spawn_app();
    let stale_and_wrong = json!({"typeId": "33", "expectedVersion": 1});
    assert_eq!(
        app.send_json("PUT", "/v1/workspaces/1/projects/12/documents/12/type", &stale_and_wrong).status,
        404
    );
    assert_eq!(app.send_json("PUT", DOCUMENT_12, &stale_and_wrong).status, 422);
}

#[test]
fn documents_outside_the_path_project_or_workspace_are_404() {
    let app = spawn_app();
    let body = json!({"typeId": null, "expectedVersion": 1});
    for path in [
        "/v1/workspaces/1/projects/12/documents/12/type",
        "/v1/workspaces/1/projects/7/documents/21/type",
        "/v1/workspaces/1/projects/7/documents/999/type",
        "/v1/workspaces/1/projects/7/documents/99999999999999999999/type",
        "/v1/workspaces/1/projects/abc/documents/12/type",
    ] {
        let response = app.send_json("PUT", path, &body);
        assert_eq!(response.status, 404, "{path}");
        assert_eq!(response.json()["code"], "not_found");
    }
}

#[test]
fn concurrent_assignments_with_the_same_version_have_one_winner() {
    let app = &spawn_app();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let writers: Vec<_> = ["31", "32", "31", "32", "31", "32"]
            .into_iter()
            .map(|t| {
                scope.spawn(move || {
                    app.send_json("PUT", DOCUMENT_12, &json!({"typeId": t, "expectedVersion": 4})).status
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 5, "{statuses:?}");
}

#[test]
fn only_members_of_the_workspace_may_assign() {
    let app = spawn_app();
    let body = json!({"typeId": "32", "expectedVersion": 4});
    assert_eq!(app.request("PUT", DOCUMENT_12).anonymous().json(&body).send().status, 401);
    let outsider = app.tokens_for(OUTSIDER).access_token;
    assert_eq!(app.request("PUT", DOCUMENT_12).bearer(&outsider).json(&body).send().status, 403);
    let member = app.tokens_for(MEMBER).access_token;
    assert_eq!(app.request("PUT", DOCUMENT_12).bearer(&member).json(&body).send().status, 200);
}
