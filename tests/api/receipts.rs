//! `listCommercialReceipts`: a project's commercial receipts, newest first, in keyset pages with
//! opaque, tamper-evident cursors bound to the listing.
//!
//! Demo data: 30 receipts in project 7 (some sharing a `createdAt`: 8992/8991/8990 and
//! 8977/8976), 3 in project 12, project 20 in workspace 2.

use crate::support::{FIXTURE, OUTSIDER, TestApp, TestResponse, spawn_app};
use serde_json::Value;

fn receipts_path(project: &str) -> String {
    format!("/v1/workspaces/1/projects/{project}/sync-updates/commercial-receipts")
}

/// The fixture's receipts of `project` (with `outcome`, if any) as the API shows them,
/// newest first: `createdAt` descending, then id descending (numerically).
fn expected(project: &str, outcome: Option<&str>) -> Vec<Value> {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let mut receipts: Vec<Value> = fixture["commercialReceipts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["projectId"] == project && outcome.is_none_or(|o| r["outcome"] == o))
        .cloned()
        .map(|mut r| {
            r.as_object_mut().unwrap().remove("workspaceId");
            r
        })
        .collect();
    let key = |r: &Value| {
        let at = wpds_storage::clock::parse_millis(r["createdAt"].as_str().unwrap()).unwrap();
        (at, r["id"].as_str().unwrap().parse::<i64>().unwrap())
    };
    receipts.sort_by_key(|r| std::cmp::Reverse(key(r)));
    receipts
}

fn ids(items: &[Value]) -> Vec<String> {
    items.iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect()
}

/// GET a page; `query` is the query string without `?`.
fn page(app: &TestApp, project: &str, query: &str) -> TestResponse {
    let path = receipts_path(project);
    app.get(&if query.is_empty() { path } else { format!("{path}?{query}") })
}

fn ok_page(app: &TestApp, project: &str, query: &str) -> (Vec<Value>, String, bool) {
    let response = page(app, project, query);
    assert_eq!(response.status, 200, "{query}: {}", response.text());
    let body = response.json();
    let next = body["nextCursor"].as_str().unwrap().to_owned();
    let has_more = body["hasMore"].as_bool().unwrap();
    assert_eq!(next.is_empty(), !has_more, "nextCursor is \"\" exactly when hasMore is false");
    assert!(next.len() <= 200);
    (body["items"].as_array().unwrap().clone(), next, has_more)
}

fn assert_foreign_cursor(response: &TestResponse) {
    assert_eq!(response.status, 400, "{}", response.text());
    let problem = response.json();
    assert_eq!(problem["code"], "validation_failed");
    assert_eq!(
        response.problem_errors(),
        vec![("query".to_owned(), "cursor".to_owned(), "format".to_owned())]
    );
    assert_eq!(problem["errors"][0]["message"], "not a cursor this server issued for this listing");
}

#[test]
fn the_default_page_is_the_25_newest_and_its_cursor_leads_to_the_other_5() {
    let app = spawn_app();
    let all = expected("7", None);
    assert_eq!(all.len(), 30);
    let (first, next, has_more) = ok_page(&app, "7", "");
    assert_eq!(first.len(), 25);
    assert_eq!(first, all[..25], "newest first, every field as stored");
    assert!(has_more);
    // The page ends inside a createdAt tie (8977 and 8976): the id breaks it.
    assert_eq!(
        (ids(&first[24..]), first[24]["createdAt"].clone()),
        (vec!["8977".to_owned()], all[25]["createdAt"].clone())
    );

    let (rest, last_cursor, has_more) = ok_page(&app, "7", &format!("cursor={next}"));
    assert_eq!(rest, all[25..]);
    assert_eq!(ids(&rest), ["8976", "8975", "8974", "8973", "8972"]);
    assert!(!has_more);
    assert_eq!(last_cursor, "");
}

#[test]
fn walking_every_page_of_7_yields_each_receipt_once_in_order() {
    let app = spawn_app();
    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let (mut items, mut next, mut has_more) = ok_page(&app, "7", "limit=7");
    loop {
        sizes.push(items.len());
        seen.extend(items);
        if !has_more {
            break;
        }
        (items, next, has_more) = ok_page(&app, "7", &format!("limit=7&cursor={next}"));
    }
    assert_eq!(sizes, [7, 7, 7, 7, 2]);
    assert_eq!(seen, expected("7", None));
}

#[test]
fn the_limit_may_change_between_pages() {
    let app = spawn_app();
    let (_, next, _) = ok_page(&app, "7", "limit=10");
    let (items, _, has_more) = ok_page(&app, "7", &format!("cursor={next}&limit=2"));
    assert_eq!(ids(&items), ["8991", "8990"]);
    assert!(has_more);
}

#[test]
fn the_outcome_filter_pages_through_its_receipts_only_and_its_cursor_is_bound_to_it() {
    let app = spawn_app();
    let skipped = expected("7", Some("skipped_already_in_sync"));
    assert_eq!(skipped.len(), 7);
    let (first, next, _) = ok_page(&app, "7", "outcome=skipped_already_in_sync&limit=3");
    let (second, next2, _) =
        ok_page(&app, "7", &format!("outcome=skipped_already_in_sync&limit=3&cursor={next}"));
    let (third, last, has_more) =
        ok_page(&app, "7", &format!("outcome=skipped_already_in_sync&limit=3&cursor={next2}"));
    assert_eq!([first, second, third].concat(), skipped);
    assert_eq!((last.as_str(), has_more), ("", false));

    assert_foreign_cursor(&page(&app, "7", &format!("cursor={next}")));
    assert_foreign_cursor(&page(&app, "7", &format!("outcome=applied&cursor={next}")));
    let (_, unfiltered, _) = ok_page(&app, "7", "limit=3");
    assert_foreign_cursor(&page(&app, "7", &format!("outcome=skipped_already_in_sync&cursor={unfiltered}")));

    let (applied, _, _) = ok_page(&app, "7", "outcome=applied&limit=100");
    assert_eq!(applied, expected("7", Some("applied")));
    assert_eq!(applied.len(), 23);
}

#[test]
fn limits_1_and_100_are_accepted_and_0_and_101_are_400() {
    let app = spawn_app();
    let (one, next, has_more) = ok_page(&app, "7", "limit=1");
    assert_eq!((ids(&one), has_more), (vec!["9001".to_owned()], true));
    let (after, _, _) = ok_page(&app, "7", &format!("limit=1&cursor={next}"));
    assert_eq!(ids(&after), ["9000"]);

    let (hundred, next, has_more) = ok_page(&app, "7", "limit=100");
    assert_eq!(hundred, expected("7", None));
    assert_eq!((next.as_str(), has_more), ("", false));

    for limit in ["0", "101"] {
        let response = page(&app, "7", &format!("limit={limit}"));
        assert_eq!(response.status, 400, "limit={limit}");
        let keyword = if limit == "0" { "minimum" } else { "maximum" };
        assert_eq!(
            response.problem_errors(),
            vec![("query".to_owned(), "limit".to_owned(), keyword.to_owned())]
        );
    }
}

#[test]
fn a_cursor_with_one_character_changed_is_400_naming_the_cursor() {
    let app = spawn_app();
    let (_, cursor, _) = ok_page(&app, "7", "limit=5");
    for at in [0, cursor.len() / 2, cursor.len() - 1] {
        let mut bytes = cursor.clone().into_bytes();
        bytes[at] = if bytes[at] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(bytes).unwrap();
        assert_ne!(flipped, cursor);
        assert_foreign_cursor(&page(&app, "7", &format!("limit=5&cursor={flipped}")));
    }
    assert_foreign_cursor(&page(&app, "7", &format!("cursor={}", &cursor[..cursor.len() - 3])));
    assert_foreign_cursor(&page(&app, "7", "cursor=not-a-cursor"));
    assert_foreign_cursor(&page(&app, "7", "cursor=eyJ2IjoxfQ.c2lnbmF0dXJl"));
    let (items, _, _) = ok_page(&app, "7", &format!("limit=5&cursor={cursor}"));
    assert_eq!(items.len(), 5, "the unaltered cursor still works");
}

#[test]
fn a_cursor_of_project_7_is_refused_for_project_12() {
    let app = spawn_app();
    let (_, cursor, _) = ok_page(&app, "7", "limit=2");
    assert_foreign_cursor(&page(&app, "12", &format!("limit=2&cursor={cursor}")));
    let (items, next, has_more) = ok_page(&app, "12", "");
    assert_eq!(items, expected("12", None));
    assert_eq!(ids(&items), ["8903", "8902", "8901"]);
    assert_eq!((next.as_str(), has_more), ("", false));
}

#[test]
fn a_project_outside_the_workspace_is_404_before_the_cursor_is_read() {
    let app = spawn_app();
    for project in ["20", "999", "99999999999999999999"] {
        let response = page(&app, project, "");
        assert_eq!(response.status, 404, "project {project}");
        assert_eq!(response.json()["code"], "not_found");
    }
    assert_eq!(page(&app, "999", "cursor=garbage").status, 404);
}

#[test]
fn listing_receipts_needs_a_token_and_membership() {
    let app = spawn_app();
    let path = receipts_path("7");
    assert_eq!(app.request("GET", &path).anonymous().send().status, 401);
    let outsider = app.tokens_for(OUTSIDER).access_token;
    let forbidden = app.request("GET", &path).bearer(&outsider).send();
    assert_eq!((forbidden.status, forbidden.json()["code"].as_str()), (403, Some("forbidden")));
    let workspace_2 = app.get("/v1/workspaces/2/projects/20/sync-updates/commercial-receipts");
    assert_eq!(workspace_2.status, 403, "the administrator is not a member of workspace 2");
}
