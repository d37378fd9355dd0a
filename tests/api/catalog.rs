//! `bulkEditCatalogFamilies`: catalog bulk edits — rules in order, all-or-nothing version checks.
//!
//! Demo data (fixtures/demo.json), workspace 1: family 90 (version 1, no parent, no primary
//! records, finish "", lead time "6 weeks", no project items); 101 (version 3, parent 90,
//! primary item 5001@2, primary family source 7001@1, finish "Oak", items in projects 7 and
//! 12); 102 (version 1, parent 90, primary item 5002@1, primary item source 7102@3, finish
//! "Walnut", items in projects 7 and 12). Workspace 2: family 201 (version 2, project 20).

use crate::support::{OUTSIDER, TestResponse, spawn_app};
use serde_json::{Value, json};

const BULK_EDIT: &str = "/v1/workspaces/1/catalog-families/bulk-edit";

fn edit(targets: Value, field_key: &str, value: &str) -> Value {
    json!({"targets": targets, "fieldKey": field_key, "value": value})
}

fn result(updated: i64, families: &[&str], parents: &[&str], projects: &[&str]) -> Value {
    json!({
        "updatedCount": updated,
        "familyIds": families,
        "affectedParentFamilyIds": parents,
        "affectedProjectIds": projects,
    })
}

fn errors(pointers_and_keywords: &[(&str, &str)]) -> Vec<(String, String, String)> {
    pointers_and_keywords.iter().map(|(p, k)| ("body".to_owned(), p.to_string(), k.to_string())).collect()
}

fn assert_unprocessable(response: &TestResponse, expected: &[(&str, &str)]) {
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(response.json()["code"], "unprocessable");
    assert_eq!(response.problem_errors(), errors(expected), "{}", response.text());
}

/// The `conflicts[]` of a 409 `version_conflict`.
fn conflicts(response: &TestResponse) -> Value {
    assert_eq!(response.status, 409, "{}", response.text());
    let problem = response.json();
    assert_eq!(problem["code"], "version_conflict");
    problem["conflicts"].clone()
}

#[test]
fn editing_two_families_sets_the_field_and_reports_every_affected_record() {
    let app = spawn_app();
    let targets = json!([
        {"familyId": "101", "familyVersion": 3, "primaryItemId": "5001", "primaryItemVersion": 2},
        {"familyId": "102", "familyVersion": 1},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(targets, "finish", "Brushed stainless steel"));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json(), result(2, &["101", "102"], &["90"], &["7", "12"]));

    let again = json!([
        {"familyId": "102", "familyVersion": 2},
        {"familyId": "101", "familyVersion": 4, "primaryItemId": "5001", "primaryItemVersion": 2},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(again, "finish", "Brushed stainless steel"));
    assert_eq!(
        response.json(),
        result(0, &["101", "102"], &["90"], &["7", "12"]),
        "the new versions are accepted and the value was stored: nothing differs now"
    );
}

#[test]
fn ids_are_sorted_numerically_and_only_changed_values_are_counted() {
    let app = spawn_app();
    let targets = json!([
        {"familyId": "102", "familyVersion": 1},
        {"familyId": "101", "familyVersion": 3},
        {"familyId": "90", "familyVersion": 1},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(targets, "leadTime", "6 weeks"));
    assert_eq!(
        response.json(),
        result(1, &["90", "101", "102"], &["90"], &["7", "12"]),
        "only 102 (4 weeks) changes; 90 and 101 already say 6 weeks"
    );
}

#[test]
fn every_accepted_write_raises_the_version_even_when_the_value_is_unchanged() {
    let app = spawn_app();
    let family_90 = |version: i64| json!([{"familyId": "90", "familyVersion": version}]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(family_90(1), "name", "Task seating"));
    assert_eq!(response.json(), result(0, &["90"], &[], &[]), "no parent, no project items");

    let stale = app.send_json("PATCH", BULK_EDIT, &edit(family_90(1), "name", "Task seating"));
    assert_eq!(
        conflicts(&stale),
        json!([{"familyId": "90", "pointer": "/targets/0/familyVersion", "currentVersion": 2}])
    );
    let response = app.send_json("PATCH", BULK_EDIT, &edit(family_90(2), "name", ""));
    assert_eq!(response.json(), result(1, &["90"], &[], &[]), "an empty value is a value");
}

#[test]
fn stale_family_versions_are_all_listed_and_nothing_changes() {
    let app = spawn_app();
    let stale = json!([
        {"familyId": "101", "familyVersion": 2},
        {"familyId": "102", "familyVersion": 1},
        {"familyId": "90", "familyVersion": 5},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(stale, "material", "Steel"));
    assert_eq!(
        conflicts(&response),
        json!([
            {"familyId": "101", "pointer": "/targets/0/familyVersion", "currentVersion": 3},
            {"familyId": "90", "pointer": "/targets/2/familyVersion", "currentVersion": 1},
        ])
    );

    let current = json!([
        {"familyId": "101", "familyVersion": 3},
        {"familyId": "102", "familyVersion": 1},
        {"familyId": "90", "familyVersion": 1},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(current, "material", "Steel"));
    assert_eq!(
        response.json(),
        result(3, &["90", "101", "102"], &["90"], &["7", "12"]),
        "every version and every value is still as before the 409, 102's included"
    );
}

#[test]
fn stale_or_wrong_primary_records_are_conflicts_pointing_at_the_stale_field() {
    let app = spawn_app();
    let stale = json!([
        {
            "familyId": "101", "familyVersion": 2,
            "primaryItemId": "5001", "primaryItemVersion": 1,
            "primaryFamilySourceId": "7001", "primaryFamilySourceVersion": 1,
        },
        {
            "familyId": "102", "familyVersion": 1,
            "primaryItemId": "5001", "primaryItemVersion": 1,
            "primaryItemSourceId": "7102", "primaryItemSourceVersion": 2,
        },
        {
            "familyId": "90", "familyVersion": 1,
            "primaryFamilySourceId": "7001", "primaryFamilySourceVersion": 1,
            "primaryItemSourceId": "99999999999999999999", "primaryItemSourceVersion": 1,
        },
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(stale, "brand", "Initech"));
    assert_eq!(
        conflicts(&response),
        json!([
            {"familyId": "101", "pointer": "/targets/0/familyVersion", "currentVersion": 3},
            {"familyId": "101", "pointer": "/targets/0/primaryItemVersion", "currentVersion": 2},
            {"familyId": "102", "pointer": "/targets/1/primaryItemId", "currentVersion": 1},
            {"familyId": "102", "pointer": "/targets/1/primaryItemSourceVersion", "currentVersion": 3},
            {"familyId": "90", "pointer": "/targets/2/primaryFamilySourceId", "currentVersion": 0},
            {"familyId": "90", "pointer": "/targets/2/primaryItemSourceId", "currentVersion": 0},
        ])
    );

    let current = json!([
        {
            "familyId": "101", "familyVersion": 3,
            "primaryItemId": "5001", "primaryItemVersion": 2,
            "primaryFamilySourceId": "7001", "primaryFamilySourceVersion": 1,
        },
        {
            "familyId": "102", "familyVersion": 1,
            "primaryItemId": "5002", "primaryItemVersion": 1,
            "primaryItemSourceId": "7102", "primaryItemSourceVersion": 3,
        },
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(current, "brand", "Initech"));
    assert_eq!(response.json(), result(2, &["101", "102"], &["90"], &["7", "12"]));
}

#[test]
fn each_half_of_each_pair_needs_the_other() {
    let app = spawn_app();
    let halves = [
        ("primaryItemId", json!("5001"), "primaryItemVersion"),
        ("primaryItemVersion", json!(2), "primaryItemId"),
        ("primaryFamilySourceId", json!("7001"), "primaryFamilySourceVersion"),
        ("primaryFamilySourceVersion", json!(1), "primaryFamilySourceId"),
        ("primaryItemSourceId", json!("7102"), "primaryItemSourceVersion"),
        ("primaryItemSourceVersion", json!(3), "primaryItemSourceId"),
    ];
    for (given, value, missing) in halves {
        let mut target = json!({"familyId": "101", "familyVersion": 3});
        target[given] = value;
        let response = app.send_json("PATCH", BULK_EDIT, &edit(json!([target]), "notes", "x"));
        assert_unprocessable(&response, &[(&format!("/targets/0/{missing}"), "incomplete_pair")]);
    }
}

#[test]
fn incomplete_pairs_come_first_and_are_all_listed() {
    let app = spawn_app();
    let targets = json!([
        {"familyId": "101", "familyVersion": 1, "primaryItemId": "5001"},
        {"familyId": "101", "familyVersion": 1},
        {"familyId": "201", "familyVersion": 2, "primaryFamilySourceVersion": 1, "primaryItemSourceId": "7"},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(targets, "notes", "x"));
    assert_unprocessable(
        &response,
        &[
            ("/targets/0/primaryItemVersion", "incomplete_pair"),
            ("/targets/2/primaryFamilySourceId", "incomplete_pair"),
            ("/targets/2/primaryItemSourceVersion", "incomplete_pair"),
        ],
    );
}

#[test]
fn every_repeated_family_is_a_duplicate_target_before_unknown_families() {
    let app = spawn_app();
    let targets = json!([
        {"familyId": "101", "familyVersion": 3},
        {"familyId": "102", "familyVersion": 1},
        {"familyId": "101", "familyVersion": 3},
        {"familyId": "999", "familyVersion": 1},
        {"familyId": "101", "familyVersion": 3},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(targets, "notes", "x"));
    assert_unprocessable(
        &response,
        &[("/targets/2/familyId", "duplicate_target"), ("/targets/4/familyId", "duplicate_target")],
    );
}

#[test]
fn families_outside_the_workspace_or_naming_no_record_are_unknown_before_versions() {
    let app = spawn_app();
    let targets = json!([
        {"familyId": "101", "familyVersion": 1},
        {"familyId": "201", "familyVersion": 2},
        {"familyId": "99999999999999999999", "familyVersion": 1},
        {"familyId": "0101", "familyVersion": 3},
        {"familyId": "abc", "familyVersion": 1},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(targets, "notes", "x"));
    assert_unprocessable(
        &response,
        &[
            ("/targets/1/familyId", "unknown_family"),
            ("/targets/2/familyId", "unknown_family"),
            ("/targets/3/familyId", "unknown_family"),
            ("/targets/4/familyId", "unknown_family"),
        ],
    );
}

#[test]
fn an_empty_family_id_is_quoted_in_its_message_so_the_message_shows_it() {
    let app = spawn_app();
    let targets = json!([{"familyId": "", "familyVersion": 1}, {"familyId": "abc", "familyVersion": 1}]);

    let response = app.send_json("PATCH", BULK_EDIT, &edit(targets, "notes", "x"));

    assert_unprocessable(
        &response,
        &[("/targets/0/familyId", "unknown_family"), ("/targets/1/familyId", "unknown_family")],
    );
    let errors = &response.json()["errors"];
    assert_eq!(errors[0]["message"], r#"no family "" in this workspace"#);
    assert_eq!(errors[1]["message"], "no family abc in this workspace");
}

#[test]
fn five_hundred_targets_pass_the_schema_and_are_each_checked() {
    let app = spawn_app();
    let real = [("90", 1), ("101", 3), ("102", 1)];
    let mut targets: Vec<Value> =
        real.iter().map(|(id, version)| json!({"familyId": id, "familyVersion": version})).collect();
    targets.extend((3..500).map(|i| json!({"familyId": (1000 + i).to_string(), "familyVersion": 1})));
    let response = app.send_json("PATCH", BULK_EDIT, &edit(Value::Array(targets.clone()), "notes", "x"));
    // Every target is checked; the answer lists the first 100 violations and counts all.
    let expected: Vec<(String, &str)> =
        (3..103).map(|i| (format!("/targets/{i}/familyId"), "unknown_family")).collect();
    let expected: Vec<(&str, &str)> = expected.iter().map(|(p, k)| (p.as_str(), *k)).collect();
    assert_unprocessable(&response, &expected);
    let detail = response.json()["detail"].as_str().unwrap_or_default().to_owned();
    assert!(detail.ends_with("(497 errors; the first 100 are listed)"), "{detail}");

    targets.push(json!({"familyId": "1500", "familyVersion": 1}));
    let response = app.send_json("PATCH", BULK_EDIT, &edit(Value::Array(targets), "notes", "x"));
    assert_eq!(response.status, 400);
    assert_eq!(response.problem_errors(), errors(&[("/targets", "maxItems")]));
    nothing_changed(&app);
}

/// The demo families are still at their demo versions with their demo notes.
fn nothing_changed(app: &crate::support::TestApp) {
    let demo = json!([
        {"familyId": "90", "familyVersion": 1},
        {"familyId": "101", "familyVersion": 3},
        {"familyId": "102", "familyVersion": 1},
    ]);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(demo, "notes", ""));
    assert_eq!(response.json(), result(0, &["90", "101", "102"], &["90"], &["7", "12"]));
}

#[test]
fn the_value_holds_up_to_2000_characters() {
    let app = spawn_app();
    let target = |version: i64| json!([{"familyId": "102", "familyVersion": version}]);
    let longest = "é".repeat(2000);
    let response = app.send_json("PATCH", BULK_EDIT, &edit(target(1), "description", &longest));
    assert_eq!(response.json(), result(1, &["102"], &["90"], &["7", "12"]));
    let same = app.send_json("PATCH", BULK_EDIT, &edit(target(2), "description", &longest));
    assert_eq!(same.json()["updatedCount"], 0, "all 2000 characters were stored");

    let too_long = app.send_json("PATCH", BULK_EDIT, &edit(target(3), "description", &"é".repeat(2001)));
    assert_eq!(too_long.status, 400);
    assert_eq!(too_long.problem_errors(), errors(&[("/value", "maxLength")]));
}

#[test]
fn every_field_key_names_its_own_column() {
    let app = spawn_app();
    let keys = ["name", "description", "brand", "modelNumber", "finish", "material", "leadTime", "notes"];
    for (i, key) in keys.iter().enumerate() {
        let version = 1 + 2 * i as i64;
        let targets = json!([{"familyId": "102", "familyVersion": version}]);
        let first = app.send_json("PATCH", BULK_EDIT, &edit(targets, key, "Bulk value"));
        assert_eq!(
            first.json()["updatedCount"],
            1,
            "{key} differs from the demo value and other keys' edits"
        );
        let targets = json!([{"familyId": "102", "familyVersion": version + 1}]);
        let second = app.send_json("PATCH", BULK_EDIT, &edit(targets, key, "Bulk value"));
        assert_eq!(second.json()["updatedCount"], 0, "{key} now holds the value");
    }
}

#[test]
fn concurrent_identical_edits_have_exactly_one_winner() {
    let app = &spawn_app();
    let body = |v101: i64, v102: i64| {
        edit(
            json!([
                {"familyId": "101", "familyVersion": v101, "primaryItemId": "5001", "primaryItemVersion": 2},
                {"familyId": "102", "familyVersion": v102},
            ]),
            "finish",
            "Chrome",
        )
    };
    for round in 0..3 {
        let statuses: Vec<u16> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8)
                .map(|_| {
                    scope.spawn(move || app.send_json("PATCH", BULK_EDIT, &body(3 + round, 1 + round)).status)
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "round {round}: {statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 7, "round {round}: {statuses:?}");
    }
    let response = app.send_json("PATCH", BULK_EDIT, &body(6, 4));
    assert_eq!(response.json(), result(0, &["101", "102"], &["90"], &["7", "12"]), "each round wrote once");
}

#[test]
fn callers_need_a_token_and_membership_of_the_workspace() {
    let app = spawn_app();
    let body = edit(json!([{"familyId": "201", "familyVersion": 2}]), "finish", "Matte black");
    let anonymous = app.request("PATCH", BULK_EDIT).anonymous().json(&body).send();
    assert_eq!((anonymous.status, anonymous.json()["code"].as_str()), (401, Some("unauthenticated")));

    let outsider = app.tokens_for(OUTSIDER).access_token;
    let forbidden = app.request("PATCH", BULK_EDIT).bearer(&outsider).json(&body).send();
    assert_eq!((forbidden.status, forbidden.json()["code"].as_str()), (403, Some("forbidden")));

    let own = app
        .request("PATCH", "/v1/workspaces/2/catalog-families/bulk-edit")
        .bearer(&outsider)
        .json(&body)
        .send();
    assert_eq!(own.json(), result(1, &["201"], &[], &["20"]), "in their own workspace they may");
    nothing_changed(&app);
}
