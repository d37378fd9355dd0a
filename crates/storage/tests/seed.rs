//! The fixture loader (`wpds seed`) against a fresh SQLite file per test and, when
//! `TEST_DATABASE_URL` names a PostgreSQL server, against a fresh PostgreSQL database too.

#![allow(clippy::unwrap_used, reason = "in a test, a panic is the failure report")]

mod support;

use diesel::prelude::*;
use diesel::sql_types::BigInt;
use serde_json::{Value, json};
use std::time::Duration;
use wpds_storage::repos::auth::{self, TokenLifetimes};
use wpds_storage::schema::{assistant_imports, company_links, documents, users};
use wpds_storage::seed::{self, FIXTURE_SCHEMA, SeedError};
use wpds_storage::{Database, DbConfig, DbConn, Engine, db_run};

const DEMO: &str = include_str!("../../../fixtures/demo.json");

/// Every table of the schema, for row counts.
const TABLES: [&str; 26] = [
    "users",
    "workspaces",
    "memberships",
    "projects",
    "project_areas",
    "document_types",
    "documents",
    "catalog_families",
    "project_items",
    "assistant_imports",
    "report_exports",
    "global_companies",
    "categories",
    "product_types",
    "item_columns",
    "product_type_columns",
    "contact_companies",
    "contact_persons",
    "company_links",
    "time_log_entries",
    "commercial_receipts",
    "credit_allowances",
    "credit_resets",
    "logins",
    "tokens",
    "audit_log",
];

/// A database that disappears with the test.
struct TestDb {
    db: Database,
    _cleanup: support::Cleanup,
}

fn config(url: String) -> DbConfig {
    DbConfig { url, pool_size: 2, timeout: Duration::from_secs(5), ..DbConfig::default() }
}

fn sqlite() -> TestDb {
    let path = std::env::temp_dir().join(format!("wpds-seed-test-{:016x}.db", rand::random::<u64>()));
    let cleanup = support::Cleanup::SqliteFile(path.clone());
    let db = Database::open(&config(format!("sqlite://{}", path.display()))).expect("open SQLite");
    TestDb { db, _cleanup: cleanup }
}

fn postgres(admin_url: &str) -> TestDb {
    let (url, cleanup) = support::scratch_postgres(admin_url);
    let db = Database::open(&config(url)).expect("open PostgreSQL");
    TestDb { db, _cleanup: cleanup }
}

/// Runs `check` on `db` (a closure passed here gets its argument's type).
fn check_on(db: &TestDb, check: impl Fn(&Database)) {
    check(&db.db)
}

/// Two tests of `check`, in a module named `$name`: `sqlite_only` on a fresh SQLite
/// database, and `postgres` on a fresh PostgreSQL one (ignored unless asked for, see
/// `support::require_postgres`).
macro_rules! on_each_engine {
    ($name:ident, $check:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn sqlite_only() {
                check_on(&sqlite(), $check);
            }

            #[test]
            #[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
            fn postgres() {
                check_on(&super::postgres(&support::require_postgres()), $check);
            }
        }
    };
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The row count of every table.
fn row_counts(db: &Database) -> Vec<(&'static str, i64)> {
    let conn = &mut db.conn().expect("a connection");
    TABLES
        .iter()
        .map(|&table| {
            let query = format!("SELECT COUNT(*) AS n FROM {table}");
            let count: Count =
                db_run!(conn => diesel::sql_query(&query).get_result(conn)).expect("count rows");
            (table, count.n)
        })
        .collect()
}

fn count_of(db: &Database, table: &str) -> i64 {
    row_counts(db).into_iter().find(|(name, _)| *name == table).map(|(_, n)| n).unwrap_or(-1)
}

fn load(db: &Database, fixture: &str) -> Result<seed::SeedReport, SeedError> {
    seed::load(db, fixture)
}

/// The demo file with `edit` applied.
fn demo_with(edit: impl FnOnce(&mut Value)) -> String {
    let mut file: Value = serde_json::from_str(DEMO).expect("demo.json is JSON");
    edit(&mut file);
    file.to_string()
}

fn demo_len(list: &str) -> i64 {
    let file: Value = serde_json::from_str(DEMO).expect("demo.json is JSON");
    file[list].as_array().map_or(0, |records| records.len() as i64)
}

on_each_engine!(the_demo_fixture_loads_every_record_it_holds, |db| {
    let report = load(db, DEMO).unwrap_or_else(|e| panic!("the demo fixture loads: {e}"));
    assert_eq!(report.present(), 0, "{report}");
    for (kind, table) in [
        ("users", "users"),
        ("workspaces", "workspaces"),
        ("projects", "projects"),
        ("documentTypes", "document_types"),
        ("documents", "documents"),
        ("catalogFamilies", "catalog_families"),
        ("projectItems", "project_items"),
        ("assistantImports", "assistant_imports"),
        ("globalCompanies", "global_companies"),
        ("categories", "categories"),
        ("itemColumns", "item_columns"),
        ("productTypeColumns", "product_type_columns"),
        ("contactCompanies", "contact_companies"),
        ("companyLinks", "company_links"),
        ("commercialReceipts", "commercial_receipts"),
        ("creditAllowances", "credit_allowances"),
        ("timeLogEntries", "time_log_entries"),
    ] {
        let inserted = report.get(kind).map(|count| count.inserted as i64);
        assert_eq!(inserted, Some(demo_len(kind)), "{kind}");
        assert_eq!(count_of(db, table), demo_len(kind), "{table}");
    }
    assert_eq!(count_of(db, "memberships"), 4);
    assert_eq!(count_of(db, "project_areas"), 6);
    assert_eq!(count_of(db, "contact_persons"), 6);
    assert_eq!(count_of(db, "product_types"), 4);
    assert_eq!(count_of(db, "commercial_receipts"), 33);

    // Issue counts are computed from the takeoff and the target project's areas.
    let conn = &mut db.conn().expect("a connection");
    let issues: Vec<(i64, i64, i64, bool)> = db_run!(conn => assistant_imports::table
            .select((
                assistant_imports::id,
                assistant_imports::blocking_issues,
                assistant_imports::warning_issues,
                assistant_imports::publishable,
            ))
            .order(assistant_imports::id)
            .load(conn))
    .expect("read imports");
    assert_eq!(
        issues,
        [(88, 0, 2, true), (89, 0, 0, true), (90, 0, 0, true), (91, 0, 1, true), (92, 1, 0, false)]
    );

    // Values are stored as the API shows them: ids as integers, JSON as text, ms timestamps.
    let (version, type_id, item_ids, updated_at): (i64, Option<i64>, String, i64) =
        db_run!(conn => documents::table
            .filter(documents::id.eq(12))
            .select((documents::version, documents::type_id, documents::item_ids, documents::updated_at))
            .first(conn))
        .expect("document 12");
    assert_eq!((version, type_id, item_ids.as_str()), (4, Some(31), r#"["4410"]"#));
    assert_eq!(wpds_storage::clock::format_millis(updated_at), "2026-11-21T15:31:52.437Z");
});

on_each_engine!(loading_the_demo_fixture_twice_inserts_nothing_the_second_time, |db| {
    let first = load(db, DEMO).expect("first load");
    let after_first = row_counts(db);

    // A record changed through the API since is not overwritten.
    let conn = &mut db.conn().expect("a connection");
    db_run!(conn => diesel::update(documents::table.filter(documents::id.eq(12)))
            .set((documents::version.eq(5), documents::type_id.eq(None::<i64>)))
            .execute(conn))
    .expect("change document 12");

    let second = load(db, DEMO).expect("second load");
    assert_eq!(second.inserted(), 0, "{second}");
    assert_eq!(second.present(), first.inserted(), "{second}");
    assert_eq!(row_counts(db), after_first);
    let (version, type_id): (i64, Option<i64>) = db_run!(conn => documents::table
            .filter(documents::id.eq(12))
            .select((documents::version, documents::type_id))
            .first(conn))
    .expect("document 12");
    assert_eq!((version, type_id), (5, None));
});

on_each_engine!(a_bad_enum_value_is_rejected_naming_the_record_and_field_and_nothing_is_loaded, |db| {
    let file = demo_with(|file| {
        file["documents"][3]["scope"] = json!("memo");
        file["documents"][3]["id"] = json!("12");
        file["companyLinks"][0]["status"] = json!("paused");
    });
    let error = load(db, &file).expect_err("a bad enum value is rejected");
    let text = error.to_string();
    assert!(
            text.contains(
                r#"documents[3] (id "12"): /documents/3/scope: "memo" is not one of "project", "project_item" or "contact_company""#
            ),
            "{text}"
        );
    // Every violation is listed, not only the first.
    assert!(
        text.contains(r#"companyLinks[0] (id "8"): /companyLinks/0/status: "paused" is not one of"#),
        "{text}"
    );
    assert_eq!(error.problems().len(), 2, "{text}");
    assert!(row_counts(db).iter().all(|(_, n)| *n == 0), "{:?}", row_counts(db));
});

on_each_engine!(a_document_naming_a_missing_project_is_rejected_naming_the_record_and_field, |db| {
    let file = demo_with(|file| {
        file["documents"][3]["projectId"] = json!("99");
    });
    let error = load(db, &file).expect_err("a missing project is rejected");
    let text = error.to_string();
    assert_eq!(text, r#"documents[3] (id "15"): /documents/3/projectId: project 99 does not exist"#);
    assert!(row_counts(db).iter().all(|(_, n)| *n == 0));
});

on_each_engine!(references_to_records_already_in_the_database_are_accepted_and_checked_there, |db| {
    load(db, DEMO).expect("the demo fixture loads");
    // A second file that only adds a document to project 7 and a family under 90.
    let extra = json!({
        "documents": [{
            "id": "30", "workspaceId": "1", "projectId": "7", "companyId": null, "scope": "project",
            "typeId": "32", "source": "file", "status": "ready", "name": "Level 3 floor plan", "notes": "",
            "isConfidential": false, "phases": [], "itemIds": [], "externalUrl": null,
            "originalFilename": "level-3.pdf", "mimeType": "application/pdf", "sizeBytes": 1000,
            "createdBy": "5", "createdAt": "2026-11-22T08:00:00Z", "updatedAt": "2026-11-22T08:00:00Z",
            "version": 1
        }],
        "catalogFamilies": [{
            "id": "103", "workspaceId": "1", "parentFamilyId": "90", "name": "Loop stool",
            "description": "", "brand": "", "modelNumber": "", "finish": "", "material": "",
            "leadTime": "", "notes": "", "version": 1, "primaryItem": null,
            "primaryFamilySource": null, "primaryItemSource": null
        }]
    });
    let report = load(db, &extra.to_string()).expect("references into the database are accepted");
    assert_eq!(report.inserted(), 2, "{report}");

    // A type of another scope (33 is for project items) is refused before anything is written.
    let mut wrong = extra.clone();
    wrong["documents"][0]["id"] = json!("31");
    wrong["documents"][0]["typeId"] = json!("33");
    wrong["catalogFamilies"][0]["id"] = json!("104");
    wrong["catalogFamilies"][0]["parentFamilyId"] = json!("201");
    let error = load(db, &wrong.to_string()).expect_err("a wrong type is refused");
    let text = error.to_string();
    assert!(
            text.contains(
                r#"documents[0] (id "31"): /documents/0/typeId: document type 33 applies to scope project_item, not to scope project"#
            ),
            "{text}"
        );
    assert!(
            text.contains(
                r#"catalogFamilies[0] (id "104"): /catalogFamilies/0/parentFamilyId: catalog family 201 is in workspace 2, not in workspace 1"#
            ),
            "{text}"
        );
});

on_each_engine!(a_record_the_database_refuses_is_named_and_the_whole_load_rolls_back, |db| {
    let conn = &mut db.conn().expect("a connection");
    let refuse = match db.engine() {
        Engine::Sqlite => vec![
            "CREATE TRIGGER refuse_13 BEFORE INSERT ON documents WHEN NEW.id = 13 \
                 BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
                .to_owned(),
        ],
        Engine::Postgres => vec![
            "CREATE FUNCTION refuse_13() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
                 IF NEW.id = 13 THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$"
                .to_owned(),
            "CREATE TRIGGER refuse_13 BEFORE INSERT ON documents FOR EACH ROW EXECUTE FUNCTION refuse_13()"
                .to_owned(),
        ],
    };
    for statement in refuse {
        db_run!(conn => diesel::sql_query(&statement).execute(conn)).expect("install the trigger");
    }
    let error = load(db, DEMO).expect_err("the refused record fails the load");
    assert!(matches!(error, SeedError::Record { .. }), "{error:?}");
    let text = error.to_string();
    assert!(
        text.starts_with(r#"documents[1] (id "13"): "#) && text.contains("refused by the test"),
        "{text}"
    );
    assert!(row_counts(db).iter().all(|(_, n)| *n == 0), "{:?}", row_counts(db));
});

#[test]
fn the_fixture_schema_is_a_valid_2020_12_schema_and_the_demo_file_validates_against_it() {
    let schema: Value = serde_json::from_str(FIXTURE_SCHEMA).expect("the schema is JSON");
    jsonschema::draft202012::meta::validate(&schema).expect("a valid draft 2020-12 schema");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
    let on_disk =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/fixture.schema.json"))
            .expect("openapi/fixture.schema.json");
    assert_eq!(on_disk, FIXTURE_SCHEMA);

    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema compiles");
    let demo: Value = serde_json::from_str(DEMO).expect("demo.json is JSON");
    let errors: Vec<String> =
        validator.iter_errors(&demo).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    seed::validate(DEMO).expect("the demo file passes the loader's own checks");

    // Every object of the schema is closed, except the free-form ones.
    fn closed(node: &Value, at: &str, open: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                if map.get("type") == Some(&json!("object"))
                    && map.get("additionalProperties") != Some(&json!(false))
                    && map.contains_key("properties")
                {
                    open.push(at.to_owned());
                }
                for (key, value) in map {
                    closed(value, &format!("{at}/{key}"), open);
                }
            }
            Value::Array(items) => {
                for (i, value) in items.iter().enumerate() {
                    closed(value, &format!("{at}/{i}"), open);
                }
            }
            _ => {}
        }
    }
    let mut open = Vec::new();
    closed(&schema, "", &mut open);
    assert!(open.is_empty(), "objects with properties but not closed: {open:?}");
}

#[test]
fn the_loader_rejects_values_the_schema_cannot_rule_out() {
    let file = demo_with(|file| {
        file["users"][1]["id"] = json!("9999999999999999999");
        file["timeLogEntries"][0]["hours"] = json!("24.5");
        file["documents"][1]["id"] = json!("12");
    });
    let error = seed::validate(&file).expect_err("rejected");
    let text = error.to_string();
    assert!(text.contains(r#"users[1] (id "9999999999999999999"): /users/1/id: "9999999999999999999" is not an id within the 64-bit range"#), "{text}");
    assert!(
        text.contains(
            r#"timeLogEntries[0] (id "505"): /timeLogEntries/0/hours: "24.5" is more than 24 hours"#
        ),
        "{text}"
    );
    assert!(text.contains(r#"documents[1] (id "12"): /documents/1/id: document 12 is already used by documents[0] (id "12")"#), "{text}");
}

#[test]
fn a_file_that_is_not_json_or_has_unknown_fields_is_rejected() {
    assert!(matches!(seed::validate("{"), Err(SeedError::Json(_))));
    let error = seed::validate(r#"{"users": [], "projectz": []}"#).expect_err("unknown top-level list");
    assert!(error.to_string().starts_with("file: "), "{error}");
    let error = seed::validate(
        r#"{"users": [{"id": "5", "email": "a@b.example", "displayName": "A", "role": "x"}]}"#,
    )
    .expect_err("unknown field");
    assert!(error.to_string().starts_with(r#"users[0] (id "5"): /users/0: "#), "{error}");
}

on_each_engine!(after_a_seed_new_rows_without_an_id_get_fresh_ids, |db| {
    load(db, DEMO).expect("the demo fixture loads");
    // A table the seed does not fill.
    let lifetimes = TokenLifetimes { access: Duration::from_secs(60), refresh: Duration::from_secs(60) };
    db.write_now(auth::issue(5, lifetimes)).expect("a new login for user 5");
    let conn: &mut DbConn = &mut db.conn().expect("a connection");
    // Tables the seed filled with explicit ids continue after them.
    let user: i64 = db_run!(conn => diesel::insert_into(users::table)
            .values((users::email.eq("new@northwind.example"), users::display_name.eq("New"), users::is_platform_admin.eq(false)))
            .returning(users::id)
            .get_result(conn))
        .expect("a new user");
    assert_eq!(user, 10);
    let link: i64 = db_run!(conn => diesel::insert_into(company_links::table)
            .values((
                company_links::workspace_id.eq(1),
                company_links::main_company_id.eq(61),
                company_links::rep_company_id.eq(62),
                company_links::main_person_id.eq(610),
                company_links::rep_person_id.eq(621),
                company_links::status.eq("active"),
                company_links::created_at.eq(0),
            ))
            .returning(company_links::id)
            .get_result(conn))
    .expect("a new link");
    assert_eq!(link, 9, "the API document's example link id");
    // A second seed does not move the sequences backwards.
    load(db, DEMO).expect("the second load");
    let next: i64 = db_run!(conn => diesel::insert_into(users::table)
            .values((users::email.eq("next@northwind.example"), users::display_name.eq("Next"), users::is_platform_admin.eq(false)))
            .returning(users::id)
            .get_result(conn))
        .expect("another user");
    assert_eq!(next, 11);
});

#[test]
fn formats_are_checked_timestamps_dates_and_emails() {
    let file = demo_with(|file| {
        file["documents"][0]["createdAt"] = json!("2026-11-20 09:12");
        file["timeLogEntries"][0]["date"] = json!("2026-02-29");
        file["users"][0]["email"] = json!("dana at northwind");
    });
    let error = seed::validate(&file).expect_err("rejected");
    let pointers: Vec<&str> = error.problems().iter().map(|problem| problem.pointer.as_str()).collect();
    assert_eq!(pointers, ["/documents/0/createdAt", "/timeLogEntries/0/date", "/users/0/email"], "{error}");
}
