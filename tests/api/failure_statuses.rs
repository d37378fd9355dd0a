//! The statuses every operation documents but no business rule produces: 429 beyond the
//! caller's rate limit (per user; per client address without a token), 500 when storage fails unexpectedly (revealing nothing), and 503
//! when the database cannot be reached in time. Each operation is driven with the request
//! example the document itself publishes (the demo data matches the examples).
//!
//! Nothing here names an operation's tables: a failure is provoked for every table at
//! once, after the pipeline's own look-ups (the caller's token and membership) have been
//! answered and cached for the whole test, so what fails is the operation's own work (each
//! test checks that).

use crate::support::{ADMIN, Raw, TestApp, lock_every_table, raw_connection, spawn_app, spawn_app_with};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const RECEIPTS: &str = "/v1/workspaces/1/projects/7/sync-updates/commercial-receipts";
use wpds::rate_limit::WINDOW_SECS;
use wpds_document::operations::{OperationInfo, collect};

/// How long the authentication cache keeps the caller's look-ups where a test breaks or
/// locks every table: longer than the test, so that none expires between the request that
/// caches it and the one that relies on it.
const CACHED_FOR_THE_TEST_MS: u64 = 600_000;

/// One operation's example request.
struct Example {
    op: OperationInfo,
    path: String,
    body: Option<Value>,
}

/// Every operation with the path filled from its parameters' examples and the first body
/// example of its request.
fn examples() -> Vec<Example> {
    let doc = wpds_contract::document::parsed();
    collect(doc)
        .into_iter()
        .map(|op| {
            let mut path = op.path.clone();
            for param in &op.path_params {
                let raw = doc.pointer(&format!("/paths/{}/{}/parameters", escape(&op.path), op.method.to_lowercase()));
                let example = raw
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|p| wpds_document::deref(doc, p))
                    .find(|p| p["name"] == param.name.as_str())
                    .and_then(|p| p["example"].as_str())
                    .unwrap_or_else(|| panic!("{}: no example for {}", op.id, param.name));
                path = path.replace(&format!("{{{}}}", param.name), example);
            }
            let body = op.body_type.as_ref().map(|_| {
                let media =
                    &doc["paths"][&op.path][op.method.to_lowercase()]["requestBody"]["content"]["application/json"];
                let first = media["examples"].as_object().and_then(|e| e.values().next()).expect("a body example");
                wpds_document::deref(doc, first)["value"].clone()
            });
            Example { op, path, body }
        })
        .collect()
}

/// Every `operationId` under the document's paths, read without the operation model (so an
/// operation the model left out would show).
fn operation_ids(doc: &Value) -> BTreeSet<String> {
    let items = doc["paths"].as_object().into_iter().flat_map(|paths| paths.values());
    let ops = items.filter_map(Value::as_object).flat_map(|item| item.values());
    ops.filter_map(|op| op.get("operationId")?.as_str().map(str::to_owned)).collect()
}

fn escape(path: &str) -> String {
    path.replace('~', "~0").replace('/', "~1")
}

fn send(app: &TestApp, example: &Example, token: &str) -> crate::support::TestResponse {
    with_example_body(app.request(&example.op.method, &example.path).bearer(token), &example.body).send()
}

/// What the example of `example`'s operation answers once on the demo data: its first
/// success, with no problem code; the refresh token of `refreshToken`'s example is no token
/// a server issued, so it answers 401 `invalid_grant`.
fn example_answer(example: &Example) -> (u16, Option<String>) {
    match example.op.id.as_str() {
        "refreshToken" => (401, Some("invalid_grant".to_owned())),
        _ => (example.op.successes[0].status, None),
    }
}

/// An answer's status and problem code (`None` for a body that is no problem).
fn answer(response: &crate::support::TestResponse) -> (u16, Option<String>) {
    let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    (response.status, body["code"].as_str().map(str::to_owned))
}

/// Sends `example` asking for a media type no operation answers in: the pipeline
/// authenticates and authorises the caller (and caches both answers, for seconds) and
/// answers 406 before the operation's own work starts.
fn stop_before_the_work(app: &TestApp, example: &Example, token: &str) -> u16 {
    let request = app.request(&example.op.method, &example.path).bearer(token).header("accept", "text/csv");
    with_example_body(request, &example.body).send().status
}

/// Renames every one of `tables` to `…_gone`, or back.
fn rename(conn: &mut Raw, tables: &[String], gone: bool) {
    for table in tables {
        let renamed = format!("{table}_gone");
        let (from, to) = if gone { (table, &renamed) } else { (&renamed, table) };
        conn.batch_execute(&format!("ALTER TABLE {from} RENAME TO {to}")).unwrap();
    }
}

#[test]
fn the_examples_are_one_per_operation_of_the_document() {
    let ids: Vec<String> = examples().into_iter().map(|e| e.op.id).collect();
    assert!(!ids.is_empty(), "the document has operations");
    let distinct: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(distinct.len(), ids.len(), "each operation once: {ids:?}");
    assert_eq!(distinct, operation_ids(wpds_contract::document::parsed()), "every operation of the document");
}

/// Returns once at least 15 s are left of the rate limiter's current window (fixed windows
/// of [`WINDOW_SECS`], from the epoch), so the few requests a test sends next are counted in
/// one window. On a loaded machine a minute's boundary fell between a burst's third request
/// and its fourth: the count started again and the fourth was not 429.
fn within_one_window() {
    let window = WINDOW_SECS as f64;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after the epoch");
    let into = now.as_secs_f64() % window;
    if into > window - 15.0 {
        std::thread::sleep(Duration::from_secs_f64(window - into + 0.1));
    }
}

#[test]
fn every_operation_answers_429_beyond_its_callers_limit_and_refreshing_does_not_reset_it() {
    let examples = examples();
    for example in &examples {
        // Arrange: a limit of 2 per minute, on a fresh server (each operation its own count).
        let app = spawn_app_with(|config| config.rate_limit_per_minute = 2);
        let token = app.tokens_for(ADMIN).access_token;
        within_one_window();

        // Act and assert: two within the limit, each answered as it would be without one
        // (the example as the demo data answers it once, then a request the pipeline refuses
        // with 406 after counting it) and telling the standing; the third 429.
        for remaining in [1, 0] {
            let response = if remaining == 1 {
                let response = send(&app, example, &token);
                assert_eq!(
                    answer(&response),
                    example_answer(example),
                    "{}: within the limit: {}",
                    example.op.id,
                    response.text()
                );
                response
            } else {
                let request = app
                    .request(&example.op.method, &example.path)
                    .bearer(&token)
                    .header("accept", "text/csv");
                let response = with_example_body(request, &example.body).send();
                assert_eq!(
                    answer(&response),
                    (406, Some("not_acceptable".to_owned())),
                    "{}: within the limit",
                    example.op.id
                );
                response
            };
            let policy = if example.op.secured() { "per-user" } else { "per-address" };
            assert_eq!(response.header("ratelimit-policy"), Some(format!("\"{policy}\";q=2;w=60").as_str()));
            let standing = response.header("ratelimit").unwrap_or_default();
            assert!(
                standing.starts_with(&format!("\"{policy}\";r={remaining};t=")),
                "{}: {standing}",
                example.op.id
            );
        }
        let limited = send(&app, example, &token);
        assert_eq!(limited.status, 429, "{}", example.op.id);
        assert_eq!(limited.json()["code"], "rate_limited");
        let wait: u32 = limited.header("retry-after").expect("Retry-After").parse().expect("seconds");
        assert!((1..=60).contains(&wait), "{}: Retry-After {wait}", example.op.id);
        if example.op.secured() {
            // A new login of the same user (as a refresh would give) shares the count.
            let fresh = app.tokens_for(ADMIN).access_token;
            assert_eq!(send(&app, example, &fresh).status, 429, "{}: per user, not per token", example.op.id);
        }
    }
}

#[test]
fn requests_without_a_usable_token_count_per_client_address() {
    let app = spawn_app_with(|config| config.rate_limit_per_minute = 2);
    within_one_window();
    let statuses: Vec<u16> = (0..3).map(|_| app.request("GET", RECEIPTS).anonymous().send().status).collect();
    assert_eq!(statuses, [401, 401, 429], "guessing tokens is limited too");
    let member = app.tokens_for(crate::support::MEMBER).access_token;
    assert_eq!(
        app.request("GET", RECEIPTS).bearer(&member).send().status,
        200,
        "a user has a count of its own"
    );
}

#[test]
fn probes_and_documents_are_never_limited() {
    let app = spawn_app_with(|config| config.rate_limit_per_minute = 1);
    for path in
        ["/healthz", "/readyz", "/openapi.json", "/openapi.yaml", "/docs/", "/healthz", "/openapi.json"]
    {
        let response = app.get(path);
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.header("ratelimit"), None, "{path}");
    }
}

#[test]
#[ignore = "needs PostgreSQL: run with TEST_DATABASE_URL=postgres://… and --include-ignored"]
fn the_limiter_lets_requests_through_when_its_shared_counters_cannot_be_reached() {
    // SQLite counts in memory: there is no shared store to lose.
    crate::database::require_postgres();
    let app = spawn_app_with(|config| config.rate_limit_per_minute = 1);
    raw_connection(&app)
        .batch_execute("ALTER TABLE rate_limit_windows RENAME TO rate_limit_windows_gone")
        .unwrap();
    for _ in 0..3 {
        assert_eq!(app.get(RECEIPTS).status, 200, "fails open, never 429 or 5xx");
    }
}

#[test]
fn an_unexpected_storage_failure_is_a_500_that_reveals_nothing() {
    let app = spawn_app_with(|config| config.auth_cache_ttl_ms = CACHED_FOR_THE_TEST_MS);
    let token = app.token.clone();
    let conn = &mut raw_connection(&app);
    let tables = conn.tables();
    for example in &examples() {
        let id = &example.op.id;
        assert_eq!(stop_before_the_work(&app, example, &token), 406, "{id}: the caller's look-ups, cached");
        rename(conn, &tables, true);
        assert_eq!(stop_before_the_work(&app, example, &token), 406, "{id}: the pipeline needs no table now");
        let response = send(&app, example, &token);
        rename(conn, &tables, false);
        assert_eq!(response.status, 500, "{id}: {}", response.text());
        let problem = response.json();
        assert_eq!(problem["code"], "internal");
        assert_eq!(problem["detail"], "An unexpected error occurred; quote the traceId when reporting it.");
        let body = response.text().to_lowercase();
        for leak in ["no such table", "relation", "does not exist", "sql", "diesel", "_gone"] {
            assert!(!body.contains(leak), "{id}: `{leak}` leaked: {body}");
        }
    }
}

#[test]
fn every_operation_answers_503_with_retry_after_when_the_database_is_locked_past_the_timeout() {
    let app = spawn_app_with(|config| {
        config.database.db_timeout_ms = 300;
        config.auth_cache_ttl_ms = CACHED_FOR_THE_TEST_MS;
    });
    let token = app.token.clone();
    let sqlite = !app.database_url.starts_with("postgres");
    for example in examples() {
        let id = &example.op.id;
        let conn = &mut raw_connection(&app);
        assert_eq!(stop_before_the_work(&app, &example, &token), 406, "{id}: the caller's look-ups, cached");
        lock_every_table(conn);
        let pipeline = stop_before_the_work(&app, &example, &token);
        assert_eq!(pipeline, 406, "{id}: the pipeline waits for no lock, so what waits is the work");
        let started = Instant::now();
        let response = send(&app, &example, &token);
        let waited = started.elapsed();
        conn.batch_execute("ROLLBACK").unwrap();
        if sqlite && example.op.method == "GET" {
            // SQLite's WAL: a reader sees the last commit and never waits for the writer, so
            // the lock this test can take does not reach a read (on PostgreSQL an ACCESS
            // EXCLUSIVE table lock does, and the union of both engines' runs covers its 503).
            assert_eq!(response.status, 200, "{id}: a read is served while the write lock is held");
            continue;
        }
        assert_eq!(response.status, 503, "{id}: {}", response.text());
        assert_eq!(response.json()["code"], "unavailable");
        assert_eq!(response.header("retry-after"), Some("1"));
        assert!(waited < Duration::from_secs(2), "{id}: answered after {waited:?}");
        // Recovers once the lock is gone, without a restart: the statement given up may
        // still hold its connection for a moment, and the connection it leaves is closed and
        // replaced, so the first request after the lock may itself find no connection within
        // its 300 ms (seen on a loaded 2-core CI machine); within a few budgets it is served.
        let healed = Instant::now();
        let status = loop {
            let status = send(&app, &example, &token).status;
            if status != 503 || healed.elapsed() > Duration::from_secs(3) {
                break status;
            }
        };
        // Its write may have committed once the lock was gone (the statement given up kept
        // waiting in the database), so a write's example then meets that write: the
        // contract's answer to a repeat (409), or its success.
        let repeat = example.op.statuses.contains(&409).then_some(409);
        assert!(
            status == example_answer(&example).0 || Some(status) == repeat,
            "{id}: recovers within 3 s once the lock is gone: {status}"
        );
    }
}

#[test]
fn every_operation_answers_the_pipelines_statuses_as_documented() {
    let app = spawn_app();
    let outsider = app.tokens_for(crate::support::OUTSIDER).access_token;
    let member = app.tokens_for(crate::support::MEMBER).access_token;
    for example in examples() {
        let id = &example.op.id;
        let request = || app.request(&example.op.method, &example.path);
        let with_body = |r| with_example_body(r, &example.body);
        let status = |response: crate::support::TestResponse| response.status;
        if example.op.secured() {
            assert_eq!(status(with_body(request().anonymous()).send()), 401, "{id}");
            let not_allowed = if example.path.starts_with("/admin/api/") { &member } else { &outsider };
            assert_eq!(status(with_body(request().bearer(not_allowed)).send()), 403, "{id}");
        }
        assert_eq!(status(with_body(request().header("accept", "text/csv")).send()), 406, "{id}");
        if example.op.body_type.is_some() {
            let huge = vec![b' '; 1024 * 1024 + 1];
            let too_large = request().header("content-type", "application/json").raw(huge).send();
            assert_eq!(too_large.status, 413, "{id}");
            let form =
                request().header("content-type", "application/x-www-form-urlencoded").raw(b"a=1".to_vec());
            assert_eq!(status(form.send()), 415, "{id}");
            assert_eq!(status(request().json(&serde_json::json!({"unexpected": true})).send()), 400, "{id}");
        } else {
            let path = format!("{}?unexpected=1", example.path);
            assert_eq!(status(app.request(&example.op.method, &path).send()), 400, "{id}");
        }
    }
}

fn with_example_body<'a>(
    request: crate::support::RequestBuilder<'a>,
    body: &Option<Value>,
) -> crate::support::RequestBuilder<'a> {
    match body {
        Some(body) => request.json(body),
        None => request,
    }
}
