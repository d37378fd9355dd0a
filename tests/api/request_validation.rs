//! A request breaking any single constraint of a request schema in `openapi/openapi.yaml`
//! answers 400 `validation_failed` naming that field (and its keyword); the last valid
//! value at each boundary passes.

use crate::support::{TestApp, TestResponse, spawn_app};
use serde_json::{Value, json};

const ASSIGN_TYPE: &str = "/v1/workspaces/1/projects/7/documents/12/type";
const BULK_EDIT: &str = "/v1/workspaces/1/catalog-families/bulk-edit";
const EXPORTS: &str = "/v1/workspaces/1/cross-project-reports/exports";
const TAKEOFF: &str = "/v1/workspaces/1/assistant/imports/88/takeoff";
const RETIRE: &str = "/admin/api/global-companies/204/retire";
const SETTINGS: &str = "/v1/workspaces/1/categories/3/settings";
const LINKS: &str = "/v1/workspaces/1/contacts/company-links";
const CELLS: &str = "/v1/workspaces/1/time-log/cells";
const RESETS: &str = "/admin/api/assistant/workspaces/1/credit-resets";
const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";

/// `base` with the value at JSON pointer `pointer` replaced (or removed for `None`).
fn with(base: &Value, pointer: &str, value: Option<Value>) -> Value {
    let mut body = base.clone();
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let target = body.pointer_mut(parent).unwrap_or_else(|| panic!("no {parent} in the base body"));
    match (target, value) {
        (Value::Object(map), Some(v)) => {
            map.insert(key.to_owned(), v);
        }
        (Value::Object(map), None) => {
            map.remove(key);
        }
        (Value::Array(items), Some(v)) => items[key.parse::<usize>().expect("an index")] = v,
        _ => panic!("cannot set {pointer}"),
    }
    body
}

/// Asserts a 400 listing exactly one violation, at `pointer` with `keyword`.
fn assert_rejected(response: &TestResponse, location: &str, pointer: &str, keyword: &str) {
    assert_eq!(
        response.status,
        400,
        "expected 400 for {pointer}, got {}: {}",
        response.status,
        response.text()
    );
    let problem = response.json();
    assert_eq!(problem["code"], "validation_failed");
    assert_eq!(
        response.problem_errors(),
        vec![(location.to_owned(), pointer.to_owned(), keyword.to_owned())],
        "{}",
        response.text()
    );
}

/// A write that got past validation and met a version other than the one it expected.
const CONFLICT: (u16, &str) = (409, "version_conflict");

/// Asserts the request got past validation to the operation's own answer `expected`: its
/// status and its problem code (for a 422 `unprocessable`, the keyword of its first error,
/// the rule that refused it), or `""` for a success. Each valid case states the one answer
/// it gets, so a boundary value the server wrongly refused (a 400, a 422 of another rule,
/// a 500) fails it.
fn assert_accepted(response: &TestResponse, expected: (u16, &str), what: &str) {
    let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    let code = match body["code"].as_str() {
        Some("unprocessable") => body["errors"][0]["keyword"].as_str().unwrap_or("unprocessable"),
        Some(code) => code,
        None => "",
    };
    assert_eq!(
        (response.status, code),
        expected,
        "{what} must pass validation and get the operation's own answer: {}",
        response.text()
    );
}

fn body_case(
    app: &TestApp,
    method: &str,
    path: &str,
    base: &Value,
    pointer: &str,
    value: Option<Value>,
    keyword: &str,
) {
    let response = app.send_json(method, path, &with(base, pointer, value));
    assert_rejected(&response, "body", pointer, keyword);
}

fn valid_case(
    app: &TestApp,
    method: &str,
    path: &str,
    base: &Value,
    pointer: &str,
    value: Value,
    expected: (u16, &str),
) {
    let response = app.send_json(method, path, &with(base, pointer, Some(value.clone())));
    assert_accepted(&response, expected, &format!("{pointer} = {value}"));
}

fn long(n: usize) -> Value {
    Value::String("x".repeat(n))
}

#[test]
fn assign_document_type_checks_expected_version_bounds_and_closed_body() {
    let app = spawn_app();
    let base = json!({"typeId": "31", "expectedVersion": 1});
    valid_case(&app, "PUT", ASSIGN_TYPE, &base, "/expectedVersion", json!(9007199254740991_i64), CONFLICT);
    valid_case(&app, "PUT", ASSIGN_TYPE, &base, "/typeId", Value::Null, CONFLICT);
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/expectedVersion", Some(json!(0)), "minimum");
    body_case(
        &app,
        "PUT",
        ASSIGN_TYPE,
        &base,
        "/expectedVersion",
        Some(json!(9007199254740992_i64)),
        "maximum",
    );
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/expectedVersion", Some(json!("1")), "type");
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/expectedVersion", Some(json!(1.5)), "type");
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/typeId", Some(json!(31)), "type");
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/typeId", None, "required");
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/expectedVersion", None, "required");
    body_case(&app, "PUT", ASSIGN_TYPE, &base, "/name", Some(json!("x")), "additionalProperties");
}

#[test]
fn refresh_token_must_not_be_empty() {
    let app = spawn_app();
    let base = json!({"refreshToken": "x"});
    valid_case(&app, "POST", "/v1/auth/refresh", &base, "/refreshToken", json!("x"), (401, "invalid_grant"));
    body_case(&app, "POST", "/v1/auth/refresh", &base, "/refreshToken", Some(json!("")), "minLength");
    body_case(&app, "POST", "/v1/auth/refresh", &base, "/refreshToken", None, "required");
}

#[test]
fn bulk_edit_checks_target_count_field_key_and_value_length() {
    let app = spawn_app();
    let target = json!({"familyId": "101", "familyVersion": 1});
    let base = json!({"targets": [target], "fieldKey": "finish", "value": "Oak"});
    let targets = |n: usize| {
        Value::Array((0..n).map(|i| json!({"familyId": (i + 1).to_string(), "familyVersion": 1})).collect())
    };
    valid_case(&app, "PATCH", BULK_EDIT, &base, "/targets", targets(500), (422, "unknown_family"));
    valid_case(&app, "PATCH", BULK_EDIT, &base, "/value", long(2000), CONFLICT);
    valid_case(&app, "PATCH", BULK_EDIT, &base, "/value", json!(""), CONFLICT);
    body_case(&app, "PATCH", BULK_EDIT, &base, "/targets", Some(targets(501)), "maxItems");
    body_case(&app, "PATCH", BULK_EDIT, &base, "/targets", Some(json!([])), "minItems");
    body_case(&app, "PATCH", BULK_EDIT, &base, "/value", Some(long(2001)), "maxLength");
    body_case(&app, "PATCH", BULK_EDIT, &base, "/fieldKey", Some(json!("colour")), "enum");
    body_case(&app, "PATCH", BULK_EDIT, &base, "/targets/0/familyVersion", None, "required");
    body_case(&app, "PATCH", BULK_EDIT, &base, "/targets/0/primaryItemVersion", Some(json!("2")), "type");
}

#[test]
fn export_checks_request_id_form_name_length_and_configuration() {
    let app = spawn_app();
    let base = json!({
        "requestId": "7f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
        "name": "Q4",
        "configuration": {"version": 1, "projectScope": {"mode": "all"}}
    });
    for id in [
        "00000000-0000-0000-0000-000000000000",
        "ffffffff-ffff-ffff-ffff-ffffffffffff",
        "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF",
        "7F1B2C3D-4E5F-8A6B-BC7D-9E0F1A2B3C4D",
        "7f1b2c3d-4e5f-1a6b-9c7d-9e0f1a2b3c4d",
    ] {
        valid_case(&app, "POST", EXPORTS, &base, "/requestId", json!(id), (201, ""));
    }
    for id in [
        "7f1b2c3d-4e5f-0a6b-8c7d-9e0f1a2b3c4d",
        "7f1b2c3d-4e5f-9a6b-8c7d-9e0f1a2b3c4d",
        "7f1b2c3d-4e5f-4a6b-cc7d-9e0f1a2b3c4d",
        "7f1b2c3d4e5f4a6b8c7d9e0f1a2b3c4d",
        "{7f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d}",
        "7f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4g",
    ] {
        body_case(&app, "POST", EXPORTS, &base, "/requestId", Some(json!(id)), "pattern");
    }
    valid_case(&app, "POST", EXPORTS, &base, "/name", long(160), (201, ""));
    body_case(&app, "POST", EXPORTS, &base, "/name", Some(long(161)), "maxLength");
    body_case(&app, "POST", EXPORTS, &base, "/name", Some(json!("")), "minLength");
    body_case(&app, "POST", EXPORTS, &base, "/configuration/version", Some(json!(2)), "const");
    body_case(&app, "POST", EXPORTS, &base, "/configuration/projectScope", None, "required");
    body_case(&app, "POST", EXPORTS, &base, "/configuration/projectScope/mode", Some(json!("some")), "enum");
    let grouped = with(&base, "/configuration/groupBy", Some(json!(["project", "colour"])));
    assert_rejected(&app.send_json("POST", EXPORTS, &grouped), "body", "/configuration/groupBy/1", "enum");
    let sorted = with(&base, "/configuration/sort", Some(json!({"key": "colour", "direction": "asc"})));
    assert_rejected(&app.send_json("POST", EXPORTS, &sorted), "body", "/configuration/sort/key", "enum");
    body_case(&app, "POST", EXPORTS, &base, "/requestId", None, "required");
}

#[test]
fn takeoff_checks_digit_ids_version_maximum_and_mapping_limits() {
    let app = spawn_app();
    let mapping = json!({"sourceKey": "Level 1/Lobby", "areaId": "301", "excluded": false});
    let base =
        json!({"projectId": "7", "expectedVersion": 5, "groupingLevel": "total", "areaMappings": [mapping]});
    let mappings = |n: usize| {
        Value::Array(
            (0..n).map(|i| json!({"sourceKey": format!("k{i}"), "areaId": "1", "excluded": true})).collect(),
        )
    };
    valid_case(&app, "PUT", TAKEOFF, &base, "/areaMappings", mappings(256), (200, ""));
    valid_case(&app, "PUT", TAKEOFF, &base, "/expectedVersion", json!(-5), CONFLICT);
    valid_case(&app, "PUT", TAKEOFF, &base, "/expectedVersion", json!(9007199254740991_i64), CONFLICT);
    valid_case(&app, "PUT", TAKEOFF, &base, "/areaMappings/0/sourceKey", long(500), CONFLICT);
    body_case(&app, "PUT", TAKEOFF, &base, "/areaMappings", Some(mappings(257)), "maxItems");
    body_case(&app, "PUT", TAKEOFF, &base, "/expectedVersion", Some(json!(9007199254740992_i64)), "maximum");
    body_case(&app, "PUT", TAKEOFF, &base, "/areaMappings/0/sourceKey", Some(long(501)), "maxLength");
    body_case(&app, "PUT", TAKEOFF, &base, "/areaMappings/0/sourceKey", Some(json!("")), "minLength");
    body_case(&app, "PUT", TAKEOFF, &base, "/areaMappings/0/areaId", Some(json!("")), "minLength");
    body_case(&app, "PUT", TAKEOFF, &base, "/groupingLevel", Some(json!("each")), "enum");
    for bad in ["07", "-7", "+7", "7a", ""] {
        body_case(&app, "PUT", TAKEOFF, &base, "/projectId", Some(json!(bad)), "pattern");
    }
    for path in
        ["/v1/workspaces/1/assistant/imports/0/takeoff", "/v1/workspaces/1/assistant/imports/-88/takeoff"]
    {
        assert_rejected(&app.send_json("PUT", path, &base), "path", "importId", "pattern");
    }
    // The path's schema is checked before membership (400 precedes 403, decided on
    // 2026-11-23): "01" names nothing, so saying so reveals nothing.
    assert_rejected(
        &app.send_json("PUT", "/v1/workspaces/01/assistant/imports/88/takeoff", &base),
        "path",
        "workspaceId",
        "pattern",
    );
}

#[test]
fn retire_checks_company_id_digits_and_reason_length() {
    let app = spawn_app();
    let base = json!({"reason": "duplicate"});
    let path = |id: &str| format!("/admin/api/global-companies/{id}/retire");
    assert_accepted(
        &app.send_json("POST", &path("1234567890123456789"), &base),
        (404, "not_found"),
        "a 19-digit id",
    );
    for bad in ["12345678901234567890", "0", "0123", "12a"] {
        assert_rejected(&app.send_json("POST", &path(bad), &base), "path", "companyId", "pattern");
    }
    valid_case(&app, "POST", RETIRE, &base, "/reason", long(2000), (201, ""));
    body_case(&app, "POST", RETIRE, &base, "/reason", Some(long(2001)), "maxLength");
    body_case(&app, "POST", RETIRE, &base, "/reason", Some(json!("")), "minLength");
}

#[test]
fn category_settings_require_a_revision_and_closed_op_objects() {
    let app = spawn_app();
    let base = json!({"expectedRevision": 1, "ops": [{"productTypeId": "21", "itemColumnId": "8", "isActive": true}]});
    valid_case(&app, "PATCH", SETTINGS, &base, "/ops", json!([]), CONFLICT);
    body_case(&app, "PATCH", SETTINGS, &base, "/expectedRevision", None, "required");
    body_case(&app, "PATCH", SETTINGS, &base, "/expectedRevision", Some(json!("1")), "type");
    body_case(&app, "PATCH", SETTINGS, &base, "/ops/0/isActive", None, "required");
    body_case(&app, "PATCH", SETTINGS, &base, "/ops/0/code", Some(json!("X")), "additionalProperties");
    body_case(&app, "PATCH", SETTINGS, &base, "/categoryCodeOps", Some(json!({})), "type");
}

#[test]
fn integers_beyond_their_int64_format_are_validation_failures() {
    // Every integer of the document is `format: int64` (or `int32`): a number outside the
    // signed 64-bit range is not such a value, so it is a 400 naming `format`, never a
    // version conflict computed from a clamped value.
    let app = spawn_app();
    let send = |method: &str, path: &str, body: &str| {
        app.request(method, path)
            .header("content-type", "application/json")
            .raw(body.as_bytes().to_vec())
            .send()
    };
    let takeoff = |version: &str| {
        format!(
            r#"{{"projectId": "7", "expectedVersion": {version}, "groupingLevel": "total", "areaMappings": []}}"#
        )
    };
    let settings = |revision: &str| format!(r#"{{"expectedRevision": {revision}}}"#);
    for beyond in ["9223372036854775808", "18446744073709551616", "1e30"] {
        assert_rejected(&send("PATCH", SETTINGS, &settings(beyond)), "body", "/expectedRevision", "format");
    }
    for beyond in ["-9223372036854775809", "-1e30"] {
        assert_rejected(&send("PUT", TAKEOFF, &takeoff(beyond)), "body", "/expectedVersion", "format");
    }
    let bulk = r#"{"targets": [{"familyId": "101", "familyVersion": 3, "primaryItemId": "5001",
        "primaryItemVersion": 9223372036854775808}], "fieldKey": "finish", "value": "Oak"}"#;
    assert_rejected(&send("PATCH", BULK_EDIT, bulk), "body", "/targets/0/primaryItemVersion", "format");
    // The bounds themselves are int64 values: past validation, to the version check.
    for bound in ["9223372036854775807", "-9223372036854775808", "6e0"] {
        assert_eq!(send("PATCH", SETTINGS, &settings(bound)).json()["code"], "version_conflict", "{bound}");
    }
    assert_eq!(send("PUT", TAKEOFF, &takeoff("-9223372036854775808")).json()["code"], "version_conflict");
}

#[test]
fn company_link_requires_both_companies() {
    let app = spawn_app();
    let base = json!({"mainCompanyId": "61", "repCompanyId": "62"});
    valid_case(&app, "POST", LINKS, &base, "/mainPersonId", json!("610"), (201, ""));
    body_case(&app, "POST", LINKS, &base, "/repCompanyId", None, "required");
    body_case(&app, "POST", LINKS, &base, "/mainPersonId", Some(json!(610)), "type");
}

#[test]
fn time_log_cell_checks_calendar_dates_hours_and_version() {
    let app = spawn_app();
    let base = json!({"projectId": "7", "date": "2026-11-20", "hours": "7.5", "expectedVersion": 1});
    // Each date a cell of its own, written first: 200.
    for ok in ["2024-02-29", "2000-02-29", "2026-12-31"] {
        valid_case(&app, "PUT", CELLS, &base, "/date", json!(ok), (200, ""));
    }
    for bad in [
        "2023-02-29",
        "1900-02-29",
        "2026-13-01",
        "2026-04-31",
        "2026-1-01",
        "20261120",
        "2026-11-20T00:00:00Z",
    ] {
        body_case(&app, "PUT", CELLS, &base, "/date", Some(json!(bad)), "format");
    }
    // Hours the pattern admits: over 24 the rule refuses; the first within it writes the
    // cell; the others pass the hours rule and meet that write (the version conflict comes
    // after the hours rule in the contract's order).
    for (ok, expected) in [
        ("99.99", (422, "hours_out_of_range")),
        ("0", (200, "")),
        ("7", CONFLICT),
        ("24", CONFLICT),
        ("7.5", CONFLICT),
        ("07.50", CONFLICT),
    ] {
        valid_case(&app, "PUT", CELLS, &base, "/hours", json!(ok), expected);
    }
    for bad in ["100", "7.555", "7.", ".5", "-1", "7,5", " 7"] {
        body_case(&app, "PUT", CELLS, &base, "/hours", Some(json!(bad)), "pattern");
    }
    valid_case(&app, "PUT", CELLS, &base, "/expectedVersion", json!(9007199254740991_i64), CONFLICT);
    body_case(&app, "PUT", CELLS, &base, "/expectedVersion", Some(json!(0)), "minimum");
    body_case(&app, "PUT", CELLS, &base, "/expectedVersion", Some(json!(9007199254740992_i64)), "maximum");
    body_case(&app, "PUT", CELLS, &base, "/phase", Some(json!("design")), "enum");
    valid_case(&app, "PUT", CELLS, &base, "/phase", json!("installation"), (200, ""));
    body_case(&app, "PUT", CELLS, &base, "/hours", Some(json!(7.5)), "type");
}

#[test]
fn credit_reset_checks_cycle_form_and_reason_length() {
    let app = spawn_app();
    let base = json!({"userId": "5", "cycle": "current", "reason": "goodwill"});
    valid_case(&app, "POST", RESETS, &base, "/cycle", json!("2026-12"), (200, ""));
    valid_case(&app, "POST", RESETS, &base, "/reason", long(2000), (200, ""));
    for bad in ["2026-13", "2026-00", "2026-1", "Current", "last"] {
        body_case(&app, "POST", RESETS, &base, "/cycle", Some(json!(bad)), "pattern");
    }
    body_case(&app, "POST", RESETS, &base, "/reason", Some(long(2001)), "maxLength");
    body_case(&app, "POST", RESETS, &base, "/reason", Some(json!("")), "minLength");
    body_case(&app, "POST", RESETS, &base, "/userId", None, "required");
}

#[test]
fn receipts_check_limit_cursor_and_outcome_and_refuse_unknown_parameters() {
    let app = spawn_app();
    let get = |query: &str| app.get(&format!("{RECEIPTS}?{query}"));
    for ok in ["limit=1", "limit=100", "outcome=applied", "outcome=skipped_already_in_sync"] {
        assert_accepted(&get(ok), (200, ""), ok);
    }
    for (query, name, keyword) in [
        ("limit=0", "limit", "minimum"),
        ("limit=101", "limit", "maximum"),
        ("limit=ten", "limit", "type"),
        ("limit=1.5", "limit", "type"),
        ("limit=1&limit=2", "limit", "type"),
        ("cursor=", "cursor", "minLength"),
        ("outcome=failed", "outcome", "enum"),
        ("page=2", "page", "additionalProperties"),
    ] {
        assert_rejected(&get(query), "query", name, keyword);
    }
    let long_cursor = "a".repeat(201);
    assert_rejected(&get(&format!("cursor={long_cursor}")), "query", "cursor", "maxLength");
}

#[test]
fn every_violation_is_listed_not_just_the_first() {
    let app = spawn_app();
    let body =
        json!({"projectId": 7, "date": "2023-02-29", "hours": "100", "expectedVersion": 0, "extra": true});
    let response = app.send_json("PUT", CELLS, &body);
    assert_eq!(response.status, 400);
    let mut pointers: Vec<String> = response.problem_errors().into_iter().map(|(_, p, _)| p).collect();
    pointers.sort();
    assert_eq!(pointers, ["/date", "/expectedVersion", "/extra", "/hours", "/projectId"]);
}

#[test]
fn malformed_json_and_a_missing_body_are_validation_failures() {
    let app = spawn_app();
    let response = app
        .request("PUT", CELLS)
        .header("content-type", "application/json")
        .raw(b"{\"hours\":".to_vec())
        .send();
    assert_rejected(&response, "body", "", "json");
    let response = app
        .request("PUT", CELLS)
        .header("content-type", "application/json")
        .raw(vec![0xff, 0xfe, b'{'])
        .send();
    assert_rejected(&response, "body", "", "json");
    let response = app.request("PUT", CELLS).send();
    assert_rejected(&response, "body", "", "required");
    let response =
        app.request("PUT", CELLS).header("content-type", "application/json").raw(b"[]".to_vec()).send();
    assert_rejected(&response, "body", "", "type");
}

#[test]
fn a_body_with_a_duplicate_key_is_refused_rather_than_guessed() {
    let app = spawn_app();
    let body =
        br#"{"projectId": "7", "projectId": "8", "date": "2026-11-20", "hours": "1", "expectedVersion": 1}"#;
    let response =
        app.request("PUT", CELLS).header("content-type", "application/json").raw(body.to_vec()).send();
    assert_rejected(&response, "body", "", "json");
    assert!(response.text().contains("duplicate key"), "{}", response.text());
}

#[test]
fn hostile_bodies_are_clear_400s_and_the_server_keeps_serving() {
    // Deep nesting (beyond serde_json's recursion limit, and far beyond the stack if it
    // were followed) and invalid UTF-8 inside a string: each a 400 `validation_failed`,
    // never a 5xx or a dropped connection. A number literal of 100 000 digits is read
    // exactly, so it is refused where it stands, beyond `expectedVersion`'s range.
    let app = spawn_app();
    let send =
        |body: Vec<u8>| app.request("PUT", CELLS).header("content-type", "application/json").raw(body).send();
    let deep_array = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_object = format!(r#"{}1{}"#, r#"{"a":"#.repeat(200), "}".repeat(200));
    let prefix = r#"{"projectId": "7", "date": "2026-11-20", "hours": "1", "expectedVersion": "#;
    let huge_number = format!("{prefix}9{}}}", "9".repeat(100_000));
    let mut bad_utf8 = format!(r#"{prefix}1, "note": ""#).into_bytes();
    bad_utf8.extend_from_slice(&[0xc3, 0x28, b'"', b'}']);
    for body in [deep_array.into_bytes(), deep_object.into_bytes(), bad_utf8] {
        assert_rejected(&send(body), "body", "", "json");
    }
    let response = send(huge_number.into_bytes());
    assert_eq!(response.status, 400, "{}", response.text());
    assert!(
        response.problem_errors().iter().all(|(_, pointer, _)| pointer == "/expectedVersion"),
        "{}",
        response.text()
    );
    assert!(
        response.text().len() < 4096,
        "the answer does not echo the number: {} bytes",
        response.text().len()
    );
    let valid = json!({"projectId": "7", "date": "2026-11-20", "hours": "1", "expectedVersion": 1});
    assert_eq!(app.send_json("PUT", CELLS, &valid).status, 200, "the server still serves");
}
