//! `replaceTakeoffMappings`: replacing the takeoff mappings of an assistant import, with its rules in
//! order and optimistic concurrency on the import's version.

use crate::support::{OUTSIDER, TestApp, spawn_app};
use serde_json::{Value, json};

/// Import 88 of the demo: takeoff, in review, target project 7 (areas 301–303), version 5.
const TAKEOFF_88: &str = "/v1/workspaces/1/assistant/imports/88/takeoff";

fn takeoff_path(import: &str) -> String {
    format!("/v1/workspaces/1/assistant/imports/{import}/takeoff")
}

fn mapping(source_key: &str, area_id: &str, excluded: bool) -> Value {
    json!({"sourceKey": source_key, "areaId": area_id, "excluded": excluded})
}

fn request(project: &str, expected_version: i64, mappings: Vec<Value>) -> Value {
    json!({
        "projectId": project,
        "expectedVersion": expected_version,
        "groupingLevel": "total",
        "areaMappings": mappings,
    })
}

/// Asserts a problem's status and code.
fn assert_problem(response: &crate::support::TestResponse, status: u16, code: &str) {
    assert_eq!(
        (response.status, response.json()["code"].as_str()),
        (status, Some(code)),
        "{}",
        response.text()
    );
}

/// Import 88's takeoff succeeds at version 5 once nothing has changed it.
fn assert_still_at_version_5(app: &TestApp) {
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 5, vec![]));
    assert_eq!(response.status, 200, "nothing changed: {}", response.text());
    assert_eq!(response.json()["version"], 6);
}

#[test]
fn replacing_the_mappings_recomputes_issues_and_raises_the_version() {
    let app = spawn_app();
    let mappings = vec![
        mapping("Level 1/Lobby", "301", false),
        mapping("Level 1/Storage", "311", false), // an area of project 12: blocking
        mapping("Not analysed", "999", true),     // excluded: never blocking
    ];
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 5, mappings.clone()));
    assert_eq!(response.status, 200, "{}", response.text());
    let import = response.json();
    assert_eq!(import["version"], 6);
    assert_eq!(
        import["takeoff"],
        json!({
            "groupingLevel": "total",
            "sourceKeys": ["Level 1/Lobby", "Level 1/Storage", "Level 1/Office"],
            "areaMappings": mappings,
        })
    );
    // Level 1/Office is left unmapped: one warning.
    assert_eq!(import["counts"], json!({"blockingIssues": 1, "warningIssues": 1}));
    assert_eq!(import["issueSummary"], json!({"blocking": 1, "warning": 1}));
    assert_eq!(import["publishable"], false);
    assert!(
        import["updatedAt"].as_str().unwrap() > "2026-11-21T10:02:13.000Z",
        "updatedAt is now: {}",
        import["updatedAt"]
    );
    assert_eq!(
        (&import["id"], &import["target"], &import["status"], &import["kind"], &import["analysisRevision"]),
        (
            &json!("88"),
            &json!({"kind": "project", "projectId": "7"}),
            &json!("review"),
            &json!("takeoff"),
            &json!(2)
        )
    );
    assert_eq!(import["createdAt"], "2026-11-20T09:12:44.120Z");
    assert_eq!(import["conversation"], json!({"id": "301", "title": "Level 1 takeoff", "currentRun": null}));
    assert_eq!(import["document"]["id"], "77");
    assert_eq!(import["document"]["confirmedAt"], "");
    assert_eq!(import["progress"], json!({"phase": "analysis", "safeErrorCode": ""}));
    for empty in [
        "sourceSelection",
        "columnMappings",
        "valueMappings",
        "reviewDraft",
        "publishResult",
        "sourceSnapshot",
    ] {
        assert_eq!(import[empty], json!({}), "{empty}");
    }

    let fixed = vec![
        mapping("Level 1/Lobby", "301", false),
        mapping("Level 1/Storage", "302", false),
        mapping("Level 1/Office", "303", false),
    ];
    let clean = app.send_json("PUT", TAKEOFF_88, &request("7", 6, fixed)).json();
    assert_eq!(clean["version"], 7);
    assert_eq!(clean["counts"], json!({"blockingIssues": 0, "warningIssues": 0}));
    assert_eq!(clean["issueSummary"], json!({"blocking": 0, "warning": 0}));
    assert_eq!(clean["publishable"], true);
}

#[test]
fn a_blocking_mapping_can_be_fixed_and_the_import_becomes_publishable() {
    let app = spawn_app();
    let path = takeoff_path("92");
    // Import 92 (project 12, areas 311 and 312) maps Stacks/South to 399, which it lacks.
    let stale = app.send_json("PUT", &path, &request("12", 99, vec![]));
    assert_problem(&stale, 409, "version_conflict");
    let before = stale.json()["current"].clone();
    assert_eq!(
        (before["counts"]["blockingIssues"].as_i64(), before["publishable"].as_bool()),
        (Some(1), Some(false))
    );

    let mappings = vec![mapping("Stacks/North", "312", false), mapping("Stacks/South", "311", false)];
    let after = app.send_json("PUT", &path, &request("12", 1, mappings)).json();
    assert_eq!(after["version"], 2);
    assert_eq!(after["counts"], json!({"blockingIssues": 0, "warningIssues": 0}));
    assert_eq!(after["publishable"], true);
    assert_eq!(after["takeoff"]["groupingLevel"], "total");
    assert_eq!(after["takeoff"]["sourceKeys"], json!(["Stacks/North", "Stacks/South"]));
}

#[test]
fn a_stale_version_is_a_409_carrying_the_import_as_a_200_shows_it() {
    let app = spawn_app();
    let accepted =
        app.send_json("PUT", TAKEOFF_88, &request("7", 5, vec![mapping("Level 1/Lobby", "301", false)]));
    assert_eq!(accepted.status, 200);
    let stale =
        app.send_json("PUT", TAKEOFF_88, &request("7", 5, vec![mapping("Level 1/Lobby", "302", true)]));
    assert_problem(&stale, 409, "version_conflict");
    let problem = stale.json();
    assert_eq!(problem["currentVersion"], 6);
    assert_eq!(problem["current"], accepted.json(), "current is the import as it is, unchanged");
}

#[test]
fn any_expected_version_other_than_the_current_one_is_a_conflict() {
    let app = spawn_app();
    for expected in [0, -1, 4, 6, i64::MIN + 1, 9_007_199_254_740_991] {
        let response = app.send_json("PUT", TAKEOFF_88, &request("7", expected, vec![]));
        assert_problem(&response, 409, "version_conflict");
        let problem = response.json();
        assert_eq!(problem["currentVersion"], 5, "{expected}");
        assert_eq!(
            (problem["current"]["id"].as_str(), problem["current"]["version"].as_i64()),
            (Some("88"), Some(5))
        );
    }
    assert_still_at_version_5(&app);
}

#[test]
fn concurrent_replacements_with_the_same_version_have_exactly_one_winner() {
    let app = &spawn_app();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..6)
            .map(|i| {
                scope.spawn(move || {
                    let body = request("7", 5, vec![mapping(&format!("k{i}"), "301", false)]);
                    app.send_json("PUT", TAKEOFF_88, &body).status
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 5, "{statuses:?}");
}

#[test]
fn an_import_outside_the_workspace_or_unknown_is_404() {
    let app = spawn_app();
    for import in ["91", "999", "99999999999999999999"] {
        let response = app.send_json("PUT", &takeoff_path(import), &request("20", 1, vec![]));
        assert_problem(&response, 404, "not_found");
    }
}

#[test]
fn only_a_takeoff_import_in_review_is_editable_and_these_states_win_over_later_rules() {
    let app = spawn_app();
    let duplicated = vec![mapping("a", "301", false), mapping("a", "301", false)];
    // 89 is a project_items import; wrong project, duplicates and a stale version too.
    let kind = app.send_json("PUT", &takeoff_path("89"), &request("12", 1, duplicated.clone()));
    assert_problem(&kind, 409, "import_kind_mismatch");
    // 90 is published.
    let published = app.send_json("PUT", &takeoff_path("90"), &request("7", 1, duplicated));
    assert_problem(&published, 409, "import_not_editable");
    let current = app.send_json("PUT", &takeoff_path("90"), &request("12", 9, vec![]));
    assert_problem(&current, 409, "import_not_editable");
}

#[test]
fn another_project_than_the_target_is_422_project_mismatch_before_duplicates_and_versions() {
    let app = spawn_app();
    let duplicated = vec![mapping("a", "301", false), mapping("a", "302", false)];
    for project in ["12", "20", "999", "99999999999999999999"] {
        let response = app.send_json("PUT", TAKEOFF_88, &request(project, 4, duplicated.clone()));
        assert_problem(&response, 422, "unprocessable");
        assert_eq!(
            response.problem_errors(),
            [("body".into(), "/projectId".into(), "project_mismatch".into())]
        );
    }
    assert_still_at_version_5(&app);
}

#[test]
fn every_later_duplicate_source_key_is_422_before_the_version_check() {
    let app = spawn_app();
    let mappings = vec![
        mapping("Level 1/Lobby", "301", false),
        mapping("Level 1/Storage", "302", false),
        mapping("Level 1/Lobby", "303", true),
        mapping("level 1/lobby", "303", false), // keys are compared exactly
        mapping("Level 1/Storage", "301", false),
        mapping("Level 1/Lobby", "301", false),
    ];
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 4, mappings));
    assert_problem(&response, 422, "unprocessable");
    let duplicate = |i: usize| {
        ("body".to_owned(), format!("/areaMappings/{i}/sourceKey"), "duplicate_source_key".to_owned())
    };
    assert_eq!(response.problem_errors(), [duplicate(2), duplicate(4), duplicate(5)]);
    assert_still_at_version_5(&app);
}

#[test]
fn up_to_256_mappings_and_500_character_keys_are_accepted() {
    let app = spawn_app();
    let many: Vec<Value> = (0..256).map(|i| mapping(&format!("k{i}"), "301", false)).collect();
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 5, many.clone()));
    assert_eq!(response.status, 200, "{}", response.text());
    let import = response.json();
    assert_eq!(import["takeoff"]["areaMappings"].as_array().map(Vec::len), Some(256));
    assert_eq!(import["counts"], json!({"blockingIssues": 0, "warningIssues": 3}));

    let too_many: Vec<Value> = (0..257).map(|i| mapping(&format!("k{i}"), "301", false)).collect();
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 6, too_many));
    assert_problem(&response, 400, "validation_failed");
    assert_eq!(response.problem_errors(), [("body".into(), "/areaMappings".into(), "maxItems".into())]);

    let long_key = "x".repeat(500);
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 6, vec![mapping(&long_key, "302", false)]));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json()["takeoff"]["areaMappings"][0]["sourceKey"], long_key.as_str());

    let too_long = "x".repeat(501);
    let response = app.send_json("PUT", TAKEOFF_88, &request("7", 7, vec![mapping(&too_long, "302", false)]));
    assert_problem(&response, 400, "validation_failed");
    assert_eq!(
        response.problem_errors(),
        [("body".into(), "/areaMappings/0/sourceKey".into(), "maxLength".into())]
    );
}

#[test]
fn callers_must_be_members_of_the_workspace() {
    let app = spawn_app();
    let outsider = app.tokens_for(OUTSIDER).access_token;
    let response = app.request("PUT", TAKEOFF_88).bearer(&outsider).json(&request("7", 5, vec![])).send();
    assert_problem(&response, 403, "forbidden");
    let response = app.request("PUT", TAKEOFF_88).anonymous().json(&request("7", 5, vec![])).send();
    assert_problem(&response, 401, "unauthenticated");
    assert_still_at_version_5(&app);
}
