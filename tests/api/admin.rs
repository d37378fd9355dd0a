//! Administrative operations: retiring a global company (`retireGlobalCompany`) and
//! resetting a user's assistant credit allowance (`resetAssistantCreditAllowance`). Both are
//! for platform administrators and write the audit log, checked here through the database.

use crate::support::{ADMIN, MEMBER, TestApp, TestResponse, spawn_app};
use serde_json::{Value, json};
use wpds_storage::clock::current_month;
use wpds_storage::repos::{companies, credits};

fn retire_path(company: &str) -> String {
    format!("/admin/api/global-companies/{company}/retire")
}

fn resets_path(workspace: &str) -> String {
    format!("/admin/api/assistant/workspaces/{workspace}/credit-resets")
}

fn reset(user: &str, cycle: &str, reason: &str) -> Value {
    json!({"userId": user, "cycle": cycle, "reason": reason})
}

fn assert_problem(response: &TestResponse, status: u16, code: &str) {
    assert_eq!(
        (response.status, response.json()["code"].as_str()),
        (status, Some(code)),
        "{}",
        response.text()
    );
}

fn audit_entries(app: &TestApp, target: &str) -> Vec<companies::AuditRecord> {
    app.settled("reading the audit entries", |db| {
        db.read_now(companies::audit_entries_for(target.to_owned()))
    })
}

fn used_credits(app: &TestApp, workspace: i64, user: i64, cycle: &str) -> Option<i64> {
    app.settled("reading the used credits", |db| {
        db.read_now(credits::used_credits(workspace, user, cycle.to_owned()))
    })
}

fn resets(app: &TestApp, workspace: i64, user: i64) -> Vec<credits::ResetRecord> {
    app.settled("reading the resets", |db| db.read_now(credits::resets_for(workspace, user)))
}

#[test]
fn retiring_a_company_sets_retired_at_once_and_writes_the_audit_log() {
    let app = spawn_app();
    let reason = "Duplicate of company 118 after the 2026 merger.";
    let response = app.send_json("POST", &retire_path("204"), &json!({"reason": reason}));
    assert_eq!(response.status, 201, "{}", response.text());
    let company = response.json();
    let retired_at = company["retiredAt"].as_str().expect("a timestamp").to_owned();
    assert!(retired_at.as_str() > "2026-01-01", "retiredAt is now: {retired_at}");
    assert_eq!(
        company,
        json!({
            "id": "204",
            "name": "Acme Seating",
            "primaryType": "brand",
            "legalName": "Acme Seating GmbH",
            "country": "DE",
            "aliases": ["Acme"],
            "domains": ["acme-seating.example"],
            "retiredAt": retired_at,
        })
    );

    let entries = audit_entries(&app, "global_company:204");
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(
        (entry.actor_user_id, entry.action.as_str(), entry.reason.as_str()),
        (ADMIN, "retire_global_company", reason)
    );
    assert_eq!(entry.detail, json!({"retiredAt": retired_at}));

    let again = app.send_json("POST", &retire_path("204"), &json!({"reason": "again"}));
    assert_problem(&again, 409, "already_retired");
    assert_eq!(again.json()["current"], company, "current is the company as the 201 showed it");
    let entries = audit_entries(&app, "global_company:204");
    assert_eq!(entries.len(), 2, "a refused retire is audited too");
    assert_eq!(
        (entries[1].reason.as_str(), &entries[1].detail),
        ("again", &json!({"refused": "already_retired"}))
    );
}

#[test]
fn a_company_retired_before_is_409_already_retired_with_its_retirement_unchanged() {
    let app = spawn_app();
    let response = app.send_json("POST", &retire_path("205"), &json!({"reason": "cleanup"}));
    assert_problem(&response, 409, "already_retired");
    let current = &response.json()["current"];
    assert_eq!(
        (current["id"].as_str(), current["retiredAt"].as_str()),
        (Some("205"), Some("2026-06-30T12:00:00.000Z"))
    );
    assert_eq!(current["aliases"], json!(["Globex"]));
    let entries = audit_entries(&app, "global_company:205");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].actor_user_id, &entries[0].detail),
        (ADMIN, &json!({"refused": "already_retired"}))
    );
}

#[test]
fn concurrent_retires_give_one_201_and_409s() {
    let app = &spawn_app();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let callers: Vec<_> = (0..6)
            .map(|i| {
                scope.spawn(move || {
                    app.send_json("POST", &retire_path("206"), &json!({"reason": format!("caller {i}")}))
                        .status
                })
            })
            .collect();
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 5, "{statuses:?}");
    let entries = audit_entries(app, "global_company:206");
    assert_eq!(entries.len(), 6, "every call is audited");
    assert_eq!(entries.iter().filter(|e| e.detail.get("refused").is_none()).count(), 1, "one retirement");
}

#[test]
fn unknown_companies_are_404_and_ids_beyond_19_digits_are_400() {
    let app = spawn_app();
    let body = json!({"reason": "duplicate"});
    for company in ["999", "9999999999999999999", "9223372036854775808"] {
        assert_problem(&app.send_json("POST", &retire_path(company), &body), 404, "not_found");
    }
    let response = app.send_json("POST", &retire_path("12345678901234567890"), &body);
    assert_problem(&response, 400, "validation_failed");
    assert_eq!(response.problem_errors(), [("path".into(), "companyId".into(), "pattern".into())]);
}

#[test]
fn a_retire_reason_of_2000_characters_is_kept_and_2001_is_400() {
    let app = spawn_app();
    let too_long = app.send_json("POST", &retire_path("204"), &json!({"reason": "r".repeat(2001)}));
    assert_problem(&too_long, 400, "validation_failed");
    assert_eq!(too_long.problem_errors(), [("body".into(), "/reason".into(), "maxLength".into())]);

    let reason = "r".repeat(2000);
    let response = app.send_json("POST", &retire_path("204"), &json!({"reason": reason}));
    assert_eq!(response.status, 201, "{}", response.text());
    assert_eq!(audit_entries(&app, "global_company:204")[0].reason, reason);
}

#[test]
fn only_platform_administrators_may_retire_companies() {
    let app = spawn_app();
    let member = app.tokens_for(MEMBER).access_token;
    let response =
        app.request("POST", &retire_path("204")).bearer(&member).json(&json!({"reason": "x"})).send();
    assert_problem(&response, 403, "forbidden");
    let response = app.request("POST", &retire_path("204")).anonymous().json(&json!({"reason": "x"})).send();
    assert_problem(&response, 401, "unauthenticated");
    assert!(audit_entries(&app, "global_company:204").is_empty());
    assert_eq!(
        app.send_json("POST", &retire_path("204"), &json!({"reason": "x"})).status,
        201,
        "still active"
    );
}

#[test]
fn resetting_a_given_month_sets_used_credits_to_0_and_records_the_reset() {
    let app = spawn_app();
    assert_eq!(used_credits(&app, 1, 5, "2026-10"), Some(120));
    let response =
        app.send_json("POST", &resets_path("1"), &reset("5", "2026-10", "Goodwill after the outage."));
    assert_eq!(response.status, 200, "{}", response.text());
    assert_eq!(response.json(), json!({}));
    assert_eq!(used_credits(&app, 1, 5, "2026-10"), Some(0));
    assert_eq!(used_credits(&app, 1, 5, "2026-11"), Some(45), "other cycles are untouched");
    assert_eq!(used_credits(&app, 1, 6, "2026-11"), Some(12), "other users are untouched");

    let recorded = resets(&app, 1, 5);
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        (recorded[0].cycle.as_str(), recorded[0].reason.as_str(), recorded[0].reset_by),
        ("2026-10", "Goodwill after the outage.", ADMIN)
    );
    let entries = audit_entries(&app, "workspace:1/user:5/cycle:2026-10");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].actor_user_id, entries[0].action.as_str(), entries[0].reason.as_str()),
        (ADMIN, "reset_assistant_credit_allowance", "Goodwill after the outage.")
    );
}

#[test]
fn current_means_the_present_utc_month_and_a_repeated_reset_is_recorded_again() {
    let app = spawn_app();
    let month = current_month();
    for reason in ["first", "second"] {
        let response = app.send_json("POST", &resets_path("1"), &reset("6", "current", reason));
        assert_eq!((response.status, response.json()), (200, json!({})), "{reason}");
    }
    assert_eq!(used_credits(&app, 1, 6, &month), Some(0));
    let recorded: Vec<(String, String)> =
        resets(&app, 1, 6).into_iter().map(|r| (r.cycle, r.reason)).collect();
    assert_eq!(recorded, [(month.clone(), "first".to_owned()), (month.clone(), "second".to_owned())]);
    assert_eq!(audit_entries(&app, &format!("workspace:1/user:6/cycle:{month}")).len(), 2);
}

#[test]
fn a_user_who_is_not_a_member_of_the_workspace_is_422_unknown_user() {
    let app = spawn_app();
    // 7 is a member of workspace 2 only; 999 does not exist; the others name no user.
    for user in ["7", "999", "abc", "05", "99999999999999999999"] {
        let response = app.send_json("POST", &resets_path("1"), &reset(user, "2026-10", "goodwill"));
        assert_problem(&response, 422, "unprocessable");
        assert_eq!(
            response.problem_errors(),
            [("body".into(), "/userId".into(), "unknown_user".into())],
            "{user}"
        );
    }
    assert!(resets(&app, 1, 7).is_empty());
    assert_eq!(used_credits(&app, 1, 5, "2026-10"), Some(120));
    let response = app.send_json("POST", &resets_path("2"), &reset("7", "2026-10", "goodwill"));
    assert_eq!(response.status, 200, "7 is a member of workspace 2");
}

#[test]
fn an_unknown_workspace_is_404_before_the_user_is_checked() {
    let app = spawn_app();
    for workspace in ["999", "abc", "99999999999999999999"] {
        let response =
            app.send_json("POST", &resets_path(workspace), &reset("nobody", "current", "goodwill"));
        assert_problem(&response, 404, "not_found");
    }
}

#[test]
fn only_platform_administrators_may_reset_allowances() {
    let app = spawn_app();
    let member = app.tokens_for(MEMBER).access_token;
    let response =
        app.request("POST", &resets_path("1")).bearer(&member).json(&reset("5", "2026-10", "please")).send();
    assert_problem(&response, 403, "forbidden");
    assert_eq!(used_credits(&app, 1, 5, "2026-10"), Some(120));
    assert!(resets(&app, 1, 5).is_empty());
}

#[test]
fn refused_administrative_calls_are_audited_with_their_outcome() {
    let app = spawn_app();
    let missing = app.send_json("POST", &retire_path("999"), &json!({"reason": "cleanup"}));
    assert_problem(&missing, 404, "not_found");
    let entries = audit_entries(&app, "global_company:999");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].action.as_str(), &entries[0].detail),
        ("retire_global_company", &json!({"refused": "not_found"}))
    );

    let path = "/admin/api/assistant/workspaces/1/credit-resets";
    let refused =
        app.send_json("POST", path, &json!({"userId": "7", "cycle": "2026-10", "reason": "goodwill"}));
    assert_problem(&refused, 422, "unprocessable");
    let entries = audit_entries(&app, "workspace:1/user:7/cycle:2026-10");
    assert_eq!(entries.len(), 1);
    assert_eq!(
        (entries[0].reason.as_str(), &entries[0].detail),
        ("goodwill", &json!({"refused": "unknown_user"}))
    );
}
