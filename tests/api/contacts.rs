//! `createCompanyLink`: creating a link between two contact companies of the workspace.
//!
//! Demo data: companies 61 (primary person 610; persons 610, 611), 62 (primary 620;
//! persons 620, 621) and 63 (primary 630) in workspace 1, company 71 (person 710) in
//! workspace 2, and an active link 8 from 61 to 63.

use crate::support::{OUTSIDER, TestApp, spawn_app};
use diesel::prelude::*;
use serde_json::{Value, json};
use wpds_storage::schema::{company_links, contact_companies};

const LINKS: &str = "/v1/workspaces/1/contacts/company-links";

fn person(id: &str, first: &str, last: &str, email: &str) -> Value {
    json!({"id": id, "firstName": first, "lastName": last, "email": email})
}

fn ada() -> Value {
    person("610", "Ada", "Moss", "ada.moss@northwind.example")
}
fn ravi() -> Value {
    person("611", "Ravi", "Shah", "ravi.shah@northwind.example")
}
fn ben() -> Value {
    person("620", "Ben", "Ito", "ben.ito@contoso.example")
}
fn cy() -> Value {
    person("621", "Cy", "Lane", "cy.lane@contoso.example")
}

fn northwind() -> Value {
    json!({"id": "61", "name": "Northwind Interiors", "tags": ["dealer"], "status": "preferred", "primaryPerson": ada()})
}

fn contoso(primary: Value) -> Value {
    json!({"id": "62", "name": "Contoso Reps", "tags": [], "status": "preferred", "primaryPerson": primary})
}

/// The stored links between companies `a` and `b`, in either direction.
fn links_between(app: &TestApp, a: i64, b: i64) -> i64 {
    let conn = &mut app.db.conn().expect("a connection");
    wpds_storage::db_run!(conn => company_links::table
        .filter(
            company_links::main_company_id.eq(a).and(company_links::rep_company_id.eq(b))
                .or(company_links::main_company_id.eq(b).and(company_links::rep_company_id.eq(a))),
        )
        .count()
        .get_result::<i64>(conn))
    .expect("count links")
}

fn set_link_8_status(app: &TestApp, status: &str) {
    let conn = &mut app.db.conn().expect("a connection");
    let updated = wpds_storage::db_run!(conn => diesel::update(company_links::table.find(8_i64))
        .set(company_links::status.eq(status))
        .execute(conn))
    .expect("update link 8");
    assert_eq!(updated, 1);
}

fn remove_primary_person_of_62(app: &TestApp) {
    let conn = &mut app.db.conn().expect("a connection");
    let updated = wpds_storage::db_run!(conn => diesel::update(contact_companies::table.find(62_i64))
        .set(contact_companies::primary_person_id.eq(None::<i64>))
        .execute(conn))
    .expect("update company 62");
    assert_eq!(updated, 1);
}

fn errors(response: &crate::support::TestResponse) -> Vec<(String, String, String)> {
    response.problem_errors()
}

fn body_error(pointer: &str, keyword: &str) -> (String, String, String) {
    ("body".to_owned(), pointer.to_owned(), keyword.to_owned())
}

#[test]
fn persons_left_out_default_to_the_primary_persons_and_the_link_is_active() {
    let app = spawn_app();
    let before = wpds_storage::clock::now_millis();
    let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": "61", "repCompanyId": "62"}));
    assert_eq!(response.status, 201, "{}", response.text());
    let mut link = response.json();
    let created_at = wpds_storage::clock::parse_millis(link["createdAt"].as_str().unwrap()).unwrap();
    assert!(created_at >= before && created_at <= wpds_storage::clock::now_millis() + 1, "created now");
    assert!(
        link["createdAt"].as_str().unwrap().ends_with('Z') && link["createdAt"].as_str().unwrap().len() == 24
    );
    let id = link["id"].as_str().unwrap().to_owned();
    assert!(id != "8" && !id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit()), "a new id: {id}");
    link.as_object_mut().unwrap().retain(|k, _| k != "id" && k != "createdAt");
    assert_eq!(
        link,
        json!({
            "status": "active",
            "mainCompany": northwind(),
            "repCompany": contoso(ben()),
            "mainPerson": ada(),
            "repPerson": ben(),
        })
    );
    assert_eq!(links_between(&app, 61, 62), 1);
}

#[test]
fn named_persons_are_the_links_persons_and_the_summaries_keep_the_primary_persons() {
    let app = spawn_app();
    let body =
        json!({"mainCompanyId": "61", "repCompanyId": "62", "mainPersonId": "611", "repPersonId": "621"});
    let response = app.send_json("POST", LINKS, &body);
    assert_eq!(response.status, 201, "{}", response.text());
    let link = response.json();
    assert_eq!(link["mainPerson"], ravi());
    assert_eq!(link["repPerson"], cy());
    assert_eq!(link["mainCompany"], northwind());
    assert_eq!(link["repCompany"], contoso(ben()));
    assert_eq!(link["status"], "active");
}

#[test]
fn unknown_companies_and_persons_are_all_listed_together_as_422() {
    let app = spawn_app();
    // 71 and 710 are workspace 2's; 999 names nothing; 0042 and a 20-digit id cannot name a record.
    let body = json!({
        "mainCompanyId": "71",
        "repCompanyId": "999",
        "mainPersonId": "710",
        "repPersonId": "0042",
    });
    let response = app.send_json("POST", LINKS, &body);
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(response.json()["code"], "unprocessable");
    assert_eq!(
        errors(&response),
        vec![
            body_error("/mainCompanyId", "unknown_company"),
            body_error("/repCompanyId", "unknown_company"),
            body_error("/mainPersonId", "unknown_person"),
            body_error("/repPersonId", "unknown_person"),
        ]
    );

    let body = json!({"mainCompanyId": "61", "repCompanyId": "62", "repPersonId": "99999999999999999999"});
    let response = app.send_json("POST", LINKS, &body);
    assert_eq!(response.status, 422);
    assert_eq!(errors(&response), vec![body_error("/repPersonId", "unknown_person")]);
    assert_eq!(links_between(&app, 61, 62), 0, "nothing was created");
}

#[test]
fn a_company_without_a_primary_person_needs_a_named_person() {
    let app = spawn_app();
    remove_primary_person_of_62(&app);
    let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": "61", "repCompanyId": "62"}));
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(errors(&response), vec![body_error("/repPersonId", "unknown_person")]);

    let body = json!({"mainCompanyId": "61", "repCompanyId": "62", "repPersonId": "621"});
    let response = app.send_json("POST", LINKS, &body);
    assert_eq!(response.status, 201, "{}", response.text());
    let link = response.json();
    assert_eq!(link["repPerson"], cy());
    assert_eq!(link["repCompany"], contoso(cy()), "no primary person: the summary shows the link's person");
}

#[test]
fn a_person_of_another_company_is_422_person_not_in_company_after_the_unknown_checks() {
    let app = spawn_app();
    let swapped =
        json!({"mainCompanyId": "61", "repCompanyId": "62", "mainPersonId": "620", "repPersonId": "610"});
    let response = app.send_json("POST", LINKS, &swapped);
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(
        errors(&response),
        vec![
            body_error("/mainPersonId", "person_not_in_company"),
            body_error("/repPersonId", "person_not_in_company"),
        ]
    );

    let with_unknown = json!({"mainCompanyId": "61", "repCompanyId": "999", "mainPersonId": "620"});
    let response = app.send_json("POST", LINKS, &with_unknown);
    assert_eq!(errors(&response), vec![body_error("/repCompanyId", "unknown_company")], "unknown first");
}

#[test]
fn linking_a_company_to_itself_is_422_self_link_after_the_person_checks() {
    let app = spawn_app();
    let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": "62", "repCompanyId": "62"}));
    assert_eq!(response.status, 422, "{}", response.text());
    assert_eq!(errors(&response), vec![body_error("/repCompanyId", "self_link")]);

    let stranger = json!({"mainCompanyId": "62", "repCompanyId": "62", "repPersonId": "610"});
    let response = app.send_json("POST", LINKS, &stranger);
    assert_eq!(errors(&response), vec![body_error("/repPersonId", "person_not_in_company")]);
}

#[test]
fn a_live_link_between_the_same_companies_in_either_direction_is_409_link_exists() {
    let app = spawn_app();
    for (main, rep) in [("61", "63"), ("63", "61")] {
        let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": main, "repCompanyId": rep}));
        assert_eq!(response.status, 409, "{main}→{rep}: {}", response.text());
        let problem = response.json();
        assert_eq!(problem["code"], "link_exists");
        assert!(problem["detail"].as_str().unwrap().contains("link 8"), "{problem}");
    }
    assert_eq!(links_between(&app, 61, 63), 1, "nothing was created");

    let created = app.send_json("POST", LINKS, &json!({"mainCompanyId": "62", "repCompanyId": "61"}));
    assert_eq!(created.status, 201);
    let reverse = app.send_json("POST", LINKS, &json!({"mainCompanyId": "61", "repCompanyId": "62"}));
    assert_eq!((reverse.status, reverse.json()["code"].as_str()), (409, Some("link_exists")));
}

#[test]
fn a_pending_link_blocks_a_new_one_and_a_terminated_link_does_not() {
    let app = spawn_app();
    set_link_8_status(&app, "pending");
    let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": "61", "repCompanyId": "63"}));
    assert_eq!(response.status, 409);

    set_link_8_status(&app, "terminated");
    let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": "63", "repCompanyId": "61"}));
    assert_eq!(response.status, 201, "{}", response.text());
    let link = response.json();
    assert_eq!(
        (link["mainCompany"]["id"].as_str(), link["repCompany"]["id"].as_str()),
        (Some("63"), Some("61"))
    );
    assert_eq!(links_between(&app, 61, 63), 2);
}

#[test]
fn concurrent_creates_for_the_same_pair_in_either_direction_have_exactly_one_winner() {
    let app = &spawn_app();
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let creators: Vec<_> = (0..8)
            .map(|i| {
                let (main, rep) = if i % 2 == 0 { ("61", "62") } else { ("62", "61") };
                scope.spawn(move || {
                    app.send_json("POST", LINKS, &json!({"mainCompanyId": main, "repCompanyId": rep})).status
                })
            })
            .collect();
        creators.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 7, "{statuses:?}");
    assert_eq!(links_between(app, 61, 62), 1);
}

#[test]
fn concurrent_identical_creates_have_exactly_one_winner() {
    let app = &spawn_app();
    let body = json!({"mainCompanyId": "61", "repCompanyId": "62", "mainPersonId": "611"});
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let creators: Vec<_> =
            (0..8).map(|_| scope.spawn(|| app.send_json("POST", LINKS, &body).status)).collect();
        creators.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| **s == 201).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 7, "{statuses:?}");
    assert_eq!(links_between(app, 61, 62), 1);
}

#[test]
fn creating_a_link_needs_a_token_and_membership() {
    let app = spawn_app();
    let body = json!({"mainCompanyId": "61", "repCompanyId": "62"});
    let anonymous = app.request("POST", LINKS).anonymous().json(&body).send();
    assert_eq!(anonymous.status, 401);
    let outsider = app.tokens_for(OUTSIDER).access_token;
    let forbidden = app.request("POST", LINKS).bearer(&outsider).json(&body).send();
    assert_eq!((forbidden.status, forbidden.json()["code"].as_str()), (403, Some("forbidden")));
    assert_eq!(links_between(&app, 61, 62), 0);
}

#[test]
fn a_body_without_the_required_companies_is_400() {
    let app = spawn_app();
    let response = app.send_json("POST", LINKS, &json!({"mainCompanyId": "61", "mainPersonId": "610"}));
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["code"], "validation_failed");
}
