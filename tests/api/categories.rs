//! Operation 4.7: patching category settings.

use crate::support::{OUTSIDER, TestApp, spawn_app};
use serde_json::{Value, json};

const SEATING: &str = "/v1/workspaces/1/categories/3/settings";

fn patch(app: &TestApp, body: Value) -> crate::support::TestResponse {
    app.send_json("PATCH", SEATING, &body)
}

fn activations(app: &TestApp, product_type: i64) -> Vec<(i64, bool)> {
    wpds_storage::categories::column_activations(&mut app.db.conn().unwrap(), product_type).unwrap()
}

#[test]
fn all_three_lists_apply_in_one_revision_bump() {
    let app = spawn_app();
    let response = patch(
        &app,
        json!({
            "expectedRevision": 7,
            "ops": [{"productTypeId": "21", "itemColumnId": "8", "isActive": true},
                    {"productTypeId": "22", "itemColumnId": "9", "isActive": false}],
            "productTypeCodeOps": [{"productTypeId": "21", "code": "CH-TASK"}],
            "categoryCodeOps": [{"categoryId": "3", "code": "SEATING"}]
        }),
    );
    assert_eq!(response.status, 200);
    assert_eq!(response.json(), json!({"revision": 8}));
    assert_eq!(activations(&app, 21), [(8, true), (9, true)]);
    assert_eq!(activations(&app, 22), [(8, true), (9, false)]);
    // The new codes are taken now, the old ones free.
    let taken = patch(
        &app,
        json!({"expectedRevision": 8, "categoryCodeOps": [{"categoryId": "4", "code": "CH-TASK"}]}),
    );
    assert_eq!(taken.json()["code"], "code_taken");
    let freed = patch(
        &app,
        json!({"expectedRevision": 8, "productTypeCodeOps": [{"productTypeId": "22", "code": "TASK"}]}),
    );
    assert_eq!(freed.json(), json!({"revision": 9}));
}

#[test]
fn lists_apply_in_order_so_a_later_op_sees_an_earlier_one() {
    let app = spawn_app();
    let response = patch(
        &app,
        json!({
            "expectedRevision": 7,
            "productTypeCodeOps": [{"productTypeId": "21", "code": "X1"}, {"productTypeId": "22", "code": "TASK"}]
        }),
    );
    assert_eq!(response.json(), json!({"revision": 8}), "TASK was freed by the first op");
    let clash = patch(
        &app,
        json!({"expectedRevision": 8, "productTypeCodeOps": [{"productTypeId": "21", "code": "Y"}], "categoryCodeOps": [{"categoryId": "4", "code": "Y"}]}),
    );
    assert_eq!(clash.status, 409);
    assert_eq!(
        clash.problem_errors(),
        [("body".into(), "/categoryCodeOps/0/code".into(), "code_taken".into())]
    );
}

#[test]
fn a_code_taken_by_another_record_is_409_and_rolls_back_every_list() {
    let app = spawn_app();
    let response = patch(
        &app,
        json!({
            "expectedRevision": 7,
            "ops": [{"productTypeId": "21", "itemColumnId": "8", "isActive": true}],
            "productTypeCodeOps": [{"productTypeId": "21", "code": "DESK"}]
        }),
    );
    assert_eq!(response.status, 409);
    assert_eq!(response.json()["code"], "code_taken");
    assert_eq!(
        response.problem_errors(),
        [("body".into(), "/productTypeCodeOps/0/code".into(), "code_taken".into())]
    );
    assert_eq!(activations(&app, 21), [(8, false), (9, true)], "the activation was rolled back");
    assert_eq!(patch(&app, json!({"expectedRevision": 7})).json(), json!({"revision": 7}));
    let own = patch(
        &app,
        json!({"expectedRevision": 7, "productTypeCodeOps": [{"productTypeId": "21", "code": "TASK"}]}),
    );
    assert_eq!(own.status, 200, "keeping one's own code is not a clash");
}

#[test]
fn unknown_references_are_422_listing_each() {
    let app = spawn_app();
    let response = patch(
        &app,
        json!({
            "expectedRevision": 1,
            "ops": [{"productTypeId": "24", "itemColumnId": "99", "isActive": true}],
            "productTypeCodeOps": [{"productTypeId": "abc", "code": "Z"}],
            "categoryCodeOps": [{"categoryId": "5", "code": "Z"}]
        }),
    );
    assert_eq!(response.status, 422, "before the stale revision");
    let pointers: Vec<String> =
        response.problem_errors().into_iter().map(|(_, p, k)| format!("{p} {k}")).collect();
    assert_eq!(
        pointers,
        [
            "/ops/0/productTypeId unknown_reference",
            "/ops/0/itemColumnId unknown_reference",
            "/productTypeCodeOps/0/productTypeId unknown_reference",
            "/categoryCodeOps/0/categoryId unknown_reference",
        ]
    );
}

#[test]
fn a_stale_revision_is_409_with_the_current_revision_even_for_an_empty_patch() {
    let app = spawn_app();
    for body in [json!({"expectedRevision": 6}), json!({"expectedRevision": 8, "ops": []})] {
        let response = patch(&app, body);
        assert_eq!(response.status, 409);
        let problem = response.json();
        assert_eq!(
            (problem["code"].clone(), problem["currentRevision"].clone()),
            (json!("version_conflict"), json!(7))
        );
        assert_eq!(problem["current"], json!({"revision": 7}));
    }
    let stale = patch(
        &app,
        json!({"expectedRevision": 6, "ops": [{"productTypeId": "21", "itemColumnId": "8", "isActive": true}]}),
    );
    assert_eq!(stale.status, 409);
    assert_eq!(activations(&app, 21), [(8, false), (9, true)], "nothing changed");
}

#[test]
fn an_empty_patch_leaves_the_revision_alone() {
    let app = spawn_app();
    for body in
        [json!({"expectedRevision": 7}), json!({"expectedRevision": 7, "ops": [], "categoryCodeOps": []})]
    {
        assert_eq!(patch(&app, body).json(), json!({"revision": 7}));
    }
}

#[test]
fn categories_outside_the_workspace_are_404_and_outsiders_403() {
    let app = spawn_app();
    for category in ["5", "999", "99999999999999999999", "x"] {
        let path = format!("/v1/workspaces/1/categories/{category}/settings");
        assert_eq!(app.send_json("PATCH", &path, &json!({"expectedRevision": 1})).status, 404, "{category}");
    }
    let outsider = app.tokens_for(OUTSIDER).access_token;
    assert_eq!(
        app.request("PATCH", SEATING).bearer(&outsider).json(&json!({"expectedRevision": 7})).send().status,
        403
    );
    assert_eq!(
        app.request("PATCH", SEATING).anonymous().json(&json!({"expectedRevision": 7})).send().status,
        401
    );
}

#[test]
fn concurrent_patches_of_different_categories_never_both_take_one_code() {
    let app = &spawn_app();
    for round in 0..3 {
        let code = format!("SHARED-{round}");
        let statuses: Vec<u16> = std::thread::scope(|scope| {
            let patches: Vec<_> = [("3", 7 + round), ("4", 2 + round)]
                .into_iter()
                .map(|(category, revision)| {
                    let code = code.clone();
                    scope.spawn(move || {
                        let path = format!("/v1/workspaces/1/categories/{category}/settings");
                        let body = json!({"expectedRevision": revision, "categoryCodeOps": [{"categoryId": category, "code": code}]});
                        app.send_json("PATCH", &path, &body).status
                    })
                })
                .collect();
            patches.into_iter().map(|p| p.join().unwrap()).collect()
        });
        let mut sorted = statuses.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [200, 409], "round {round}: {statuses:?}");
        // Put both categories one revision further so the next round's expectations hold.
        for (category, revision) in [("3", 7 + round), ("4", 2 + round)] {
            let path = format!("/v1/workspaces/1/categories/{category}/settings");
            let current = app.send_json("PATCH", &path, &json!({"expectedRevision": revision})).status;
            if current == 409 {
                continue; // this one won the round and is already one further
            }
            let ops = json!({"expectedRevision": revision, "ops": [{"productTypeId": "21", "itemColumnId": "8", "isActive": true}]});
            assert_eq!(app.send_json("PATCH", &path, &ops).status, 200);
        }
    }
}
