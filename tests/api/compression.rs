//! Response compression: bodies over 1 KiB of a text or JSON type go out as the client's
//! `Accept-Encoding` allows (brotli preferred, then gzip), smaller ones as they are, and
//! every such response says `Vary: Accept-Encoding`; the documents and Swagger UI's assets
//! too. `WPDS_COMPRESSION=false` turns it off. (The test client decodes what it receives,
//! as every HTTP client does, so each answer is still checked against the contract.)

use crate::support::{TestApp, spawn_app, spawn_app_with};
use serde_json::json;

const CELLS: &str = "/v1/workspaces/1/time-log/cells";

fn get(app: &TestApp, path: &str, accept_encoding: &str) -> crate::support::TestResponse {
    app.request("GET", path).header("accept-encoding", accept_encoding).send()
}

fn varies_by_encoding(response: &crate::support::TestResponse) -> bool {
    response
        .headers
        .iter()
        .any(|(n, v)| n == "vary" && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("accept-encoding")))
}

#[test]
fn a_large_body_is_compressed_with_brotli_or_gzip_as_the_client_accepts() {
    let app = spawn_app();
    let plain = get(&app, "/openapi.json", "identity");
    assert_eq!(plain.header("content-encoding"), None);
    assert!(plain.body.len() > 100_000, "the document is large");
    for (accept, chosen) in
        [("gzip, deflate, br", "br"), ("gzip", "gzip"), ("br;q=0.5, gzip;q=0.9", "gzip"), ("*", "br")]
    {
        let response = get(&app, "/openapi.json", accept);
        assert_eq!(response.header("content-encoding"), Some(chosen), "{accept}");
        assert!(varies_by_encoding(&response), "{accept}");
        assert_eq!(response.body, plain.body, "{accept}: the same document once decoded");
        assert!(response.wire_length * 4 < plain.body.len(), "{accept}: {} bytes sent", response.wire_length);
    }
}

#[test]
fn a_small_answer_goes_as_it_is_and_still_says_it_varies() {
    let app = spawn_app();
    let body = json!({"projectId": "7", "date": "2026-11-20", "hours": "7.5", "expectedVersion": 1});
    let response = app.request("PUT", CELLS).header("accept-encoding", "br, gzip").json(&body).send();
    assert_eq!(response.status, 200, "{}", response.text());
    assert!(response.body.len() <= 1024, "{} bytes", response.body.len());
    assert_eq!(response.header("content-encoding"), None);
    assert!(varies_by_encoding(&response));
}

#[test]
fn a_large_problem_is_compressed_too() {
    let app = spawn_app();
    let unknown: serde_json::Map<String, serde_json::Value> =
        (0..200).map(|i| (format!("unknown{i}"), json!(i))).collect();
    let response = app
        .request("PUT", CELLS)
        .header("accept-encoding", "gzip")
        .json(&serde_json::Value::Object(unknown))
        .send();
    assert_eq!(response.status, 400);
    assert_eq!(response.header("content-encoding"), Some("gzip"));
    assert_eq!(response.json()["code"], "validation_failed");
}

#[test]
fn without_an_acceptable_encoding_the_answer_is_identity_never_406() {
    let app = spawn_app();
    for accept in ["identity", "identity;q=0, *;q=0", "compress", ""] {
        let response = get(&app, "/openapi.json", accept);
        assert_eq!(response.status, 200, "{accept:?}");
        assert_eq!(response.header("content-encoding"), None, "{accept:?}");
    }
}

#[test]
fn swagger_ui_and_the_documents_are_compressed() {
    let app = spawn_app();
    for path in ["/docs/swagger-ui-bundle.js", "/docs/openapi.json", "/openapi.yaml", "/openapi-3.0.json"] {
        let response = get(&app, path, "gzip");
        assert_eq!(response.status, 200, "{path}");
        assert_eq!(response.header("content-encoding"), Some("gzip"), "{path}");
    }
}

#[test]
fn compression_can_be_turned_off() {
    let app = spawn_app_with(|config| config.compression = false);
    let response = get(&app, "/openapi.json", "br, gzip");
    assert_eq!(response.header("content-encoding"), None);
    assert!(!varies_by_encoding(&response));
}
