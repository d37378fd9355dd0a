//! `WPDS_LOG_FORMAT=json`: one JSON object per line, the access line's fields (request,
//! trace and span ids, operation, method, route template, status, duration, client address, user), and never a
//! token or a body.

use crate::harness::{Seeded, Server, agent, cell, put_cell, wait_until};
use serde_json::Value;
use std::time::Duration;

#[test]
fn json_logs_carry_the_request_fields_and_never_a_token_or_a_body() {
    // Arrange: a server writing JSON lines.
    let seeded = Seeded::new();
    let server =
        Server::start_with(&seeded.database.url, &[("WPDS_LOG_FORMAT", "json"), ("WPDS_LOG", "info")]);

    // Act: a write with a note only the body holds, and a refused request.
    let note = "a-note-only-the-body-holds";
    let written = put_cell(&agent(), &server.base, &seeded.token, &cell("2026-11-02", "2", note, 1))
        .expect("an answer");
    assert_eq!(written.status, 200, "{}", written.body);
    let refused = agent()
        .get(format!(
            "{}/v1/workspaces/1/projects/7/sync-updates/commercial-receipts?limit=5&sig=a-signature-in-the-url&Access_Token=a-token-in-the-url&api%2Dkey=a-key-in-the-url",
            server.base
        ))
        .header("x-request-id", "id-for-the-log-test")
        .call()
        .expect("an answer");
    assert_eq!(refused.status(), 401);
    let caller = "0af7651916cd43dd8448eb211c80319c";
    let continued = agent()
        .get(format!("{}/v1/workspaces/1/projects/7/sync-updates/commercial-receipts", server.base))
        .header("traceparent", format!("00-{caller}-b7ad6b7169203331-01"))
        .call()
        .expect("an answer");
    assert_eq!(continued.status(), 401);
    wait_until("the access lines are written", Duration::from_secs(5), || {
        server.log_text().matches("\"target\":\"wpds::access\"").count() >= 4
    });

    // Assert: every line is a JSON object with the common fields.
    let log = server.log_text();
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    for line in &lines {
        for field in ["timestamp", "level", "target", "message"] {
            assert!(line.get(field).is_some(), "{field} missing: {line}");
        }
        // RFC 3339 in UTC with exactly three fraction digits: one width, so text order is
        // time order.
        let timestamp = line["timestamp"].as_str().expect("a string timestamp");
        assert!(
            timestamp.len() == 24 && timestamp.as_bytes()[19] == b'.' && timestamp.ends_with('Z'),
            "{timestamp}"
        );
    }
    let access: Vec<&Value> = lines.iter().filter(|l| l["target"] == "wpds::access").collect();
    let write = access.iter().find(|l| l["operationId"] == "setOwnTimeLogCell").expect("the write's line");
    assert_eq!(write["method"], "PUT");
    assert_eq!(write["route"], "/v1/workspaces/{workspaceId}/time-log/cells");
    assert_eq!(write["status"], 200);
    assert_eq!(write["userId"], "5", "ids are strings, as in the API");
    assert_eq!(write["clientAddress"], "127.0.0.1");
    assert!(write["durationMs"].as_f64().is_some_and(|ms| ms >= 0.0), "{write}");
    // Tracing is off and the write came with no traceparent: a minted request id, no trace.
    assert!(write["requestId"].as_str().is_some_and(|t| uuid::Uuid::parse_str(t).is_ok()), "{write}");
    assert!(write.get("traceId").is_none() && write.get("spanId").is_none(), "{write}");
    // A client's X-Request-Id is the request id; a traceparent's trace is the trace id
    // (and the request id, unless the client chose one), the server span none (tracing off).
    let refusal = access.iter().find(|l| l["requestId"] == "id-for-the-log-test").expect("the 401's line");
    let joined = access.iter().find(|l| l["traceId"] == caller).expect("the continued trace's line");
    assert_eq!(joined["requestId"], caller, "{joined}");
    assert!(joined.get("spanId").is_none(), "no server span while tracing is off: {joined}");
    assert_eq!(refusal["status"], 401);
    assert_eq!(
        refusal["route"],
        "/v1/workspaces/{workspaceId}/projects/{projectId}/sync-updates/commercial-receipts"
    );
    assert!(refusal.get("userId").is_none(), "no user is known: {refusal}");
    // Never a token or a body.
    assert!(!log.contains(&seeded.token), "the token leaked into the log");
    assert!(!log.contains(note), "the body leaked into the log");
    // Credentials in the URL are redacted, as in the server span's `url.query`.
    let message = refusal["message"].as_str().expect("the 401's message");
    assert!(message.contains("?limit=5&sig=REDACTED&Access_Token=REDACTED&api%2Dkey=REDACTED "), "{message}");
    for secret in ["a-signature-in-the-url", "a-token-in-the-url", "a-key-in-the-url"] {
        assert!(!log.contains(secret), "the URL's {secret} leaked into the log");
    }
}
