//! `createCrossProjectReportExport`: creating cross-project report exports, idempotent per `requestId`.

use crate::support::{MEMBER, OUTSIDER, TestApp, TestResponse, spawn_app};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const EXPORTS: &str = "/v1/workspaces/1/cross-project-reports/exports";
const KEY: &str = "7f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";

fn configuration() -> Value {
    json!({
        "version": 1,
        "projectScope": {"mode": "fixed", "projectIds": ["7", "12"]},
        "filters": {
            "search": "chair",
            "categoryIds": ["3"],
            "attributes": [{"fieldKey": "finish", "values": ["oak", "walnut"]}]
        },
        "groupBy": ["project", "category"],
        "columns": ["project", "category", "product", "quantity", "extendedCost"],
        "attributeColumns": ["finish"],
        "metrics": ["count", "extendedCost"],
        "sort": {"key": "extendedCost", "direction": "desc"}
    })
}

fn export(request_id: &str) -> Value {
    json!({"requestId": request_id, "name": "Q4 cost review", "configuration": configuration()})
}

fn with_scope(request_id: &str, scope: Value) -> Value {
    let mut body = export(request_id);
    body["configuration"]["projectScope"] = scope;
    body
}

fn create(app: &TestApp, body: &Value) -> TestResponse {
    app.send_json("POST", EXPORTS, body)
}

fn replayed(response: &TestResponse) -> Option<&str> {
    response.header("idempotent-replayed")
}

/// The records stored, read from the database itself.
fn stored_exports(app: &TestApp) -> i64 {
    use diesel::prelude::*;
    use wpds_storage::schema::report_exports;
    let conn = &mut app.db.conn().expect("a connection");
    wpds_storage::db_run!(conn => report_exports::table.count().get_result::<i64>(conn)).expect("a count")
}

fn assert_rule(response: &TestResponse, code: &str, errors: &[(&str, &str)]) {
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(response.json()["code"], code);
    let expected: Vec<(String, String, String)> =
        errors.iter().map(|(p, k)| ("body".to_owned(), (*p).to_owned(), (*k).to_owned())).collect();
    assert_eq!(response.problem_errors(), expected);
}

#[test]
fn a_new_request_creates_a_queued_export_with_the_full_record() {
    let app = spawn_app();
    let mixed_case = "7F1B2C3D-4e5f-4A6B-8c7d-9E0F1A2B3C4D";
    let before = OffsetDateTime::now_utc();
    let response = create(&app, &export(mixed_case));
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(replayed(&response), None, "a first answer is not a replay");
    let record = response.json();
    let id = record["id"].as_str().expect("an id");
    assert!(wpds_storage::ids::parse(id).is_some(), "a canonical id: {id}");
    assert_eq!(record["requestId"], mixed_case, "the key as sent");
    assert_eq!(record["name"], "Q4 cost review");
    assert_eq!(record["status"], "queued");
    assert_eq!(record["configuration"], configuration(), "the configuration as sent");
    assert_eq!(record["createdBy"], "9", "the caller");
    assert_eq!(record["createdAt"], record["updatedAt"]);
    let created_at = record["createdAt"].as_str().expect("a timestamp");
    assert_eq!((created_at.len(), created_at.ends_with('Z')), (24, true), "RFC 3339 with ms: {created_at}");
    let at = OffsetDateTime::parse(created_at, &Rfc3339).expect("RFC 3339");
    assert!(at >= before - time::Duration::seconds(1) && at <= OffsetDateTime::now_utc(), "{created_at}");
    assert_eq!(record.as_object().map(|r| r.len()), Some(8), "exactly the record's fields: {record}");
    assert_eq!(stored_exports(&app), 1);
}

#[test]
fn the_same_request_again_replays_the_stored_answer_and_creates_nothing() {
    let app = spawn_app();
    let first = create(&app, &export(KEY));
    assert_eq!(first.status, 201);
    for _ in 0..2 {
        let again = create(&app, &export(KEY));
        assert_eq!(again.status, 201);
        assert_eq!(replayed(&again), Some("true"));
        assert_eq!(again.body, first.body, "the stored body, byte for byte");
    }
    assert_eq!(stored_exports(&app), 1, "replays create nothing");

    let other = create(&app, &export("00000000-0000-0000-0000-000000000000"));
    assert_eq!((other.status, replayed(&other)), (201, None));
    assert_ne!(other.json()["id"], first.json()["id"], "a new key is a new export");
    assert_eq!(stored_exports(&app), 2);
    let replay_of_first = create(&app, &export(KEY));
    assert_eq!(replay_of_first.body, first.body, "the first export is still answered");
}

#[test]
fn a_request_id_differing_only_in_case_is_the_same_key() {
    let app = spawn_app();
    let first = create(&app, &export(KEY));
    let upper = create(&app, &export(&KEY.to_uppercase()));
    assert_eq!((upper.status, replayed(&upper)), (201, Some("true")));
    assert_eq!(upper.body, first.body, "the record keeps the key as first sent");
    assert_eq!(upper.json()["requestId"], KEY);

    let mut other_name = export(&KEY.to_uppercase());
    other_name["name"] = json!("Q1 cost review");
    assert_rule(
        &create(&app, &other_name),
        "idempotency_key_reused",
        &[("/requestId", "idempotency_key_reused")],
    );
    assert_eq!(stored_exports(&app), 1);
}

#[test]
fn the_same_key_with_another_body_is_422_idempotency_key_reused() {
    let app = spawn_app();
    assert_eq!(create(&app, &export(KEY)).status, 201);
    let mut renamed = export(KEY);
    renamed["name"] = json!("Q1 cost review");
    let mut resorted = export(KEY);
    resorted["configuration"]["sort"] = json!({"key": "extendedCost"});
    let mut fewer_projects = export(KEY);
    fewer_projects["configuration"]["projectScope"]["projectIds"] = json!(["7"]);
    for body in [renamed, resorted, fewer_projects] {
        let response = create(&app, &body);
        assert_rule(&response, "idempotency_key_reused", &[("/requestId", "idempotency_key_reused")]);
        assert_eq!(
            response.json()["detail"],
            format!("requestId {KEY} was used for another request."),
            "{body}"
        );
    }
    assert_eq!(stored_exports(&app), 1);
}

#[test]
fn key_reuse_is_checked_before_the_scope_and_project_rules() {
    let app = spawn_app();
    assert_eq!(create(&app, &export(KEY)).status, 201);
    let bad_scope = with_scope(KEY, json!({"mode": "all", "projectIds": ["20"]}));
    assert_rule(
        &create(&app, &bad_scope),
        "idempotency_key_reused",
        &[("/requestId", "idempotency_key_reused")],
    );
    let unknown = with_scope(KEY, json!({"mode": "fixed", "projectIds": ["20"]}));
    assert_rule(
        &create(&app, &unknown),
        "idempotency_key_reused",
        &[("/requestId", "idempotency_key_reused")],
    );
}

#[test]
fn the_order_of_keys_in_the_body_does_not_make_it_another_body() {
    let app = spawn_app();
    let first = create(&app, &export(KEY));
    let reordered = format!(
        r#"{{"configuration": {{"sort": {{"direction": "desc", "key": "extendedCost"}},
            "metrics": ["count", "extendedCost"], "attributeColumns": ["finish"],
            "columns": ["project", "category", "product", "quantity", "extendedCost"],
            "groupBy": ["project", "category"],
            "filters": {{"attributes": [{{"values": ["oak", "walnut"], "fieldKey": "finish"}}],
                         "categoryIds": ["3"], "search": "chair"}},
            "projectScope": {{"projectIds": ["7", "12"], "mode": "fixed"}}, "version": 1}},
          "name": "Q4 cost review", "requestId": "{KEY}"}}"#
    );
    let again = app
        .request("POST", EXPORTS)
        .header("content-type", "application/json")
        .raw(reordered.into_bytes())
        .send();
    assert_eq!((again.status, replayed(&again)), (201, Some("true")), "{}", again.text());
    assert_eq!(again.body, first.body);

    let mut reversed_ids = export(KEY);
    reversed_ids["configuration"]["projectScope"]["projectIds"] = json!(["12", "7"]);
    assert_eq!(create(&app, &reversed_ids).status, 422, "the order of list items does matter");
}

#[test]
fn concurrent_identical_requests_create_exactly_one_export() {
    let app = &spawn_app();
    let body = export(KEY);
    let start = std::sync::Barrier::new(16);
    let responses: Vec<TestResponse> = std::thread::scope(|scope| {
        let senders: Vec<_> = (0..16)
            .map(|_| {
                let (body, start) = (&body, &start);
                scope.spawn(move || {
                    start.wait(); // all 16 leave together
                    create(app, body)
                })
            })
            .collect();
        senders.into_iter().map(|s| s.join().expect("a sender thread")).collect()
    });
    let statuses: Vec<u16> = responses.iter().map(|r| r.status).collect();
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    let originals = responses.iter().filter(|r| replayed(r).is_none()).count();
    assert_eq!(originals, 1, "exactly one answer is not a replay");
    assert!(responses.iter().all(|r| replayed(r).is_none_or(|v| v == "true")));
    let first = &responses[0].body;
    assert!(responses.iter().all(|r| &r.body == first), "every answer is the one record, byte for byte");
    let record = responses[0].json();
    assert_eq!((record["requestId"].as_str(), record["status"].as_str()), (Some(KEY), Some("queued")));
    assert_eq!(stored_exports(app), 1, "exactly one record is stored");
}

#[test]
fn a_fixed_scope_needs_project_ids_and_an_all_scope_takes_none() {
    let app = spawn_app();
    let cases = [
        (json!({"mode": "fixed"}), "/configuration/projectScope"),
        (json!({"mode": "fixed", "projectIds": []}), "/configuration/projectScope/projectIds"),
        (json!({"mode": "all", "projectIds": ["7"]}), "/configuration/projectScope/projectIds"),
        (json!({"mode": "all", "projectIds": ["20"]}), "/configuration/projectScope/projectIds"),
    ];
    for (scope, pointer) in cases {
        let response = create(&app, &with_scope(KEY, scope.clone()));
        assert_rule(&response, "unprocessable", &[(pointer, "invalid_scope")]);
        assert_eq!(replayed(&response), None, "{scope}");
    }
    assert_eq!(stored_exports(&app), 0);
}

#[test]
fn an_all_scope_without_project_ids_is_accepted() {
    let app = spawn_app();
    let response = create(&app, &with_scope(KEY, json!({"mode": "all"})));
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(response.json()["configuration"]["projectScope"], json!({"mode": "all"}));
    let empty_list = create(
        &app,
        &with_scope("1f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", json!({"mode": "all", "projectIds": []})),
    );
    assert_eq!(empty_list.status, 201, "an empty list names no project: {}", empty_list.text());

    let minimal = json!({
        "requestId": "0f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "name": "All of it",
        "configuration": {"version": 1, "projectScope": {"mode": "all"}}
    });
    let response = create(&app, &minimal);
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(response.json()["configuration"], minimal["configuration"], "nothing is added");
}

#[test]
fn every_project_outside_the_workspace_is_422_unknown_project() {
    let app = spawn_app();
    let scope = json!({"mode": "fixed", "projectIds": ["7", "20", "99999999999999999999", "12", "0"]});
    let response = create(&app, &with_scope(KEY, scope));
    assert_rule(
        &response,
        "unprocessable",
        &[
            ("/configuration/projectScope/projectIds/1", "unknown_project"),
            ("/configuration/projectScope/projectIds/2", "unknown_project"),
            ("/configuration/projectScope/projectIds/4", "unknown_project"),
        ],
    );
    assert_eq!(stored_exports(&app), 0);
}

#[test]
fn a_refused_request_stores_nothing_so_a_corrected_retry_with_its_key_is_created() {
    let app = spawn_app();
    let refused = create(&app, &with_scope(KEY, json!({"mode": "fixed", "projectIds": ["20"]})));
    assert_eq!(refused.status, 422);
    let invalid = create(&app, &with_scope(KEY, json!({"mode": "fixed"})));
    assert_eq!(invalid.status, 422);
    let corrected = create(&app, &export(KEY));
    assert_eq!((corrected.status, replayed(&corrected)), (201, None), "{}", corrected.text());
    assert_eq!(corrected.json()["configuration"], configuration());
    assert_eq!(stored_exports(&app), 1);
}

#[test]
fn keys_are_per_workspace() {
    let app = spawn_app();
    let here = create(&app, &export(KEY));
    let outsider = app.tokens_for(OUTSIDER).access_token;
    let body = with_scope(KEY, json!({"mode": "fixed", "projectIds": ["20"]}));
    let there = app
        .request("POST", "/v1/workspaces/2/cross-project-reports/exports")
        .bearer(&outsider)
        .json(&body)
        .send();
    assert_eq!((there.status, replayed(&there)), (201, None), "{}", there.text());
    assert_ne!(there.json()["id"], here.json()["id"]);
    assert_eq!(there.json()["createdBy"], OUTSIDER.to_string());
}

#[test]
fn the_name_is_1_to_160_characters() {
    let app = spawn_app();
    let mut longest = export("00000000-0000-0000-0000-000000000000");
    longest["name"] = json!("é".repeat(160));
    let response = create(&app, &longest);
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(response.json()["name"], "é".repeat(160));

    let mut too_long = export(KEY);
    too_long["name"] = json!("x".repeat(161));
    let response = create(&app, &too_long);
    assert_eq!(response.status, 400);
    assert_eq!(response.problem_errors(), [("body".into(), "/name".into(), "maxLength".into())]);
    assert_eq!(stored_exports(&app), 1);
}

#[test]
fn the_nil_and_max_uuids_are_keys_but_a_version_0_uuid_is_400() {
    let app = spawn_app();
    for key in ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"] {
        let response = create(&app, &export(key));
        assert_eq!((response.status, replayed(&response)), (201, None), "{key}: {}", response.text());
        assert_eq!(response.json()["requestId"], key);
    }
    let max_upper = create(&app, &export("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"));
    assert_eq!((max_upper.status, replayed(&max_upper)), (201, Some("true")));

    let response = create(&app, &export("7f1b2c3d-4e5f-0a6b-8c7d-9e0f1a2b3c4d"));
    assert_eq!(response.status, 400);
    assert_eq!(response.problem_errors(), [("body".into(), "/requestId".into(), "pattern".into())]);
    let mut version_2 = export(KEY);
    version_2["configuration"]["version"] = json!(2);
    let response = create(&app, &version_2);
    assert_eq!(response.problem_errors(), [("body".into(), "/configuration/version".into(), "const".into())]);
    assert_eq!(stored_exports(&app), 2);
}

#[test]
fn an_anonymous_caller_is_401_and_a_non_member_is_403() {
    let app = spawn_app();
    let anonymous = app.request("POST", EXPORTS).anonymous().json(&export(KEY)).send();
    assert_eq!(anonymous.status, 401);
    assert_eq!(anonymous.header("www-authenticate"), Some("Bearer"));

    let outsider = app.tokens_for(OUTSIDER).access_token;
    let forbidden = app.request("POST", EXPORTS).bearer(&outsider).json(&export(KEY)).send();
    assert_eq!((forbidden.status, forbidden.json()["code"].as_str()), (403, Some("forbidden")));
    assert_eq!(stored_exports(&app), 0);

    let member = app.tokens_for(MEMBER).access_token;
    let created = app.request("POST", EXPORTS).bearer(&member).json(&export(KEY)).send();
    assert_eq!((created.status, created.json()["createdBy"].as_str()), (201, Some("5")));
}
