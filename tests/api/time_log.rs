//! `setOwnTimeLogCell`: the caller's own time-log cells, with optimistic concurrency.

use crate::support::{MEMBER, spawn_app};
use serde_json::{Value, json};

const CELLS: &str = "/v1/workspaces/1/time-log/cells";

fn cell(hours: &str, expected_version: i64) -> Value {
    json!({"projectId": "7", "date": "2024-02-29", "hours": hours, "expectedVersion": expected_version})
}

#[test]
fn the_first_write_of_a_cell_expects_version_1_and_creates_version_2() {
    let app = spawn_app();
    let response = app.send_json("PUT", CELLS, &cell("7.5", 1));
    assert_eq!(response.status, 200);
    let entry = &response.json()["entry"];
    assert_eq!(entry["version"], 2);
    assert_eq!(entry["hours"], "7.50");
    assert_eq!(entry["phase"], "general");
    assert_eq!((entry["note"].as_str(), entry["billable"].as_bool()), (Some(""), Some(true)));
    assert_eq!(entry["date"], "2024-02-29");
    let again = app.send_json("PUT", CELLS, &cell("8", 2)).json();
    assert_eq!(
        (again["entry"]["version"].as_i64(), again["entry"]["hours"].as_str()),
        (Some(3), Some("8.00"))
    );
    assert_eq!(again["entry"]["id"], entry["id"], "the same cell");
}

#[test]
fn a_stale_version_is_a_409_carrying_the_current_cell() {
    let app = spawn_app();
    let never_written = app.send_json("PUT", CELLS, &cell("1", 2));
    assert_eq!(never_written.status, 409);
    let problem = never_written.json();
    assert_eq!(
        (problem["code"].as_str(), problem["currentVersion"].as_i64()),
        (Some("version_conflict"), Some(1))
    );
    assert_eq!(problem["current"], Value::Null);
    assert!(problem.as_object().unwrap().contains_key("current"), "current is present, and null");

    app.send_json("PUT", CELLS, &cell("7.5", 1));
    let stale = app.send_json("PUT", CELLS, &cell("9", 1)).json();
    assert_eq!(stale["currentVersion"], 2);
    assert_eq!(stale["current"]["entry"]["hours"], "7.50", "nothing changed");
}

#[test]
fn concurrent_writers_with_the_same_expected_version_have_exactly_one_winner() {
    let app = &spawn_app();
    for expected in [1, 2, 3] {
        let statuses: Vec<u16> = std::thread::scope(|scope| {
            let writers: Vec<_> = (0..8)
                .map(|i| {
                    scope.spawn(move || app.send_json("PUT", CELLS, &cell(&format!("{i}"), expected)).status)
                })
                .collect();
            writers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "version {expected}: {statuses:?}");
        assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 7, "version {expected}: {statuses:?}");
    }
    let last = app.send_json("PUT", CELLS, &cell("1", 4));
    assert_eq!(last.json()["entry"]["version"], 5);
}

#[test]
fn cells_are_per_user_project_date_and_phase() {
    let app = spawn_app();
    let member = app.tokens_for(MEMBER).access_token;
    assert_eq!(app.send_json("PUT", CELLS, &cell("1", 1)).status, 200);
    let as_member = app.request("PUT", CELLS).bearer(&member).json(&cell("2", 1)).send();
    assert_eq!(as_member.status, 200, "another user's cell is another cell");
    let mut design = cell("3", 1);
    design["phase"] = json!("design_development");
    assert_eq!(app.send_json("PUT", CELLS, &design).json()["entry"]["phase"], "design_development");
}

#[test]
fn unknown_projects_and_more_than_24_hours_are_422() {
    let app = spawn_app();
    for project in ["20", "999", "99999999999999999999", "abc"] {
        let mut body = cell("1", 1);
        body["projectId"] = json!(project);
        let response = app.send_json("PUT", CELLS, &body);
        assert_eq!(response.status, 422, "{project}");
        assert_eq!(
            response.problem_errors(),
            [("body".into(), "/projectId".into(), "unknown_project".into())]
        );
    }
    let response = app.send_json("PUT", CELLS, &cell("24.01", 1));
    assert_eq!(response.problem_errors(), [("body".into(), "/hours".into(), "hours_out_of_range".into())]);
    assert_eq!(app.send_json("PUT", CELLS, &cell("24", 1)).status, 200);
}
